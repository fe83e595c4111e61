"""Pure batched dynamics of the continual-learning family (``edgegym/ContinualLearning-v0``).

The :class:`~edgegym.core.dynamics.Dynamics` of Ekya's joint retraining and inference (DESIGN §6,
§8): immutable :class:`ContinualParams` (everything a scenario fixes, precomputed when an
environment is built), a :class:`ContinualState` of arrays with a leading batch axis ``N`` and
:class:`ContinualDynamics`, whose functions step ``N`` environments in lockstep numpy. The
single environment (:class:`edgegym.families.continual.env.ContinualLearningEnv`) is the batch of
one; the vector environment (:mod:`edgegym.families.continual.vector`) the batch of ``N``.

The rules are those of the event-exact engine (:mod:`tests.reference.engine`), batched over envs x
streams, and give its numbers bit for bit:

* A decision step applies an allocation (projected onto a feasible one, :meth:`project`) and
  runs it to the env's next decision epoch: a retraining completion or the end of the window,
  whichever comes first. Rates are constant in between, so the stretch is closed-form: its
  length is ``min(time left in the window, min over running jobs of work left / speed)``.
* A retraining job starts when its stream is given a configuration and a positive share; its
  configuration is then fixed until it finishes. A stream retrains at most once per window; a
  job that has not finished when its window ends is dropped. Retraining is incremental: the
  job's result is :meth:`~edgegym.workload.continual.ContinualProfile.window_post` of the
  deployed model it starts from, and a finished job's model replaces the deployed one at once
  where it is more accurate (:func:`~edgegym.workload.continual.swap_if_better`).
* At a window start the deployed accuracy drifts to ``max(floor, accuracy - drift)`` and the
  micro-profiler's estimates of the window are drawn (from the env's own generator, at the
  moment the window is entered, so the random stream is that of the engine-based env).
* The micro-profiler (scenario section ``profiler``, Ekya §4.3, §6.3, arXiv §5): its error
  is given as a median absolute error, from which the Gaussian deviation is derived
  (:func:`edgegym.workload.continual.error_std`); every ``prune_every`` windows it drops a
  fraction of each stream's configurations farthest below the Pareto frontier of its
  estimates (their estimates then read 0); its cost (``cost_s`` per stream for all
  configurations, the profiled ones' share of it) is held as a GPU share for the whole
  window, which the projection leaves out; no job starts in the first ``annotation_s``
  seconds of a window (the golden model's labelling), whose end is a decision epoch; a job is
  checkpointed every ``checkpoint_epochs`` epochs: a decision epoch where the checkpoint
  replaces the deployed model if more accurate and the job's estimate is refined
  (:func:`checkpoint_update`). Every mechanic is off at its default.

Energy follows :class:`edgegym.core.executor.SimulatedExecutor` (every GPU at the pooled
utilisation, DVFS power model); reward terms follow :mod:`edgegym.families.continual.reward`.

Executors: an env may carry an :class:`edgegym.core.executor.Executor` (``params.make_executor``,
the real backend's :class:`edgegym.real.executor.RealExecutor`). For such an env the step runs a
per-env path through the executor seam: ``start_window`` and ``deployed_accuracy`` at window
starts, ``retrain_speed`` and ``run`` for the stretch (which may measure energy and set the
finishing job's accuracy); the rules and the accounting stay the ones above. The simulator
(``make_executor=None``) computes the same stretch in closed form over the whole batch.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from edgegym.core.dynamics import Record
from edgegym.core.executor import Executor, SimulatedExecutor
from edgegym.core.metrics import Metrics
from edgegym.core.state import Allocation, ClusterState, TenantState
from edgegym.families.continual.params import (
    QUANTA_EPS,
    ContinualParams,
    ContinualSpec,
)
from edgegym.families.continual.reward import TERMS
from edgegym.hardware.mps import interfered, largest_remainder
from edgegym.workload.continual import (
    ContinualProfile,
    inference_accuracy,
    pareto_gap,
    profiler_estimates,
    progress_accuracy,
    prune,
    retrained_accuracy,
    sample_profile,
    swap_if_better,
)

#: Observation columns per stream before the per-configuration estimates, and globals.
N_STREAM_BASE = 9
N_GLOBAL = 6

_EPS = 1e-9  # the engine's tolerance on job completion


def sample_estimates(
    spec: ContinualSpec, rng: np.random.Generator
) -> tuple[ContinualProfile, np.ndarray]:
    """One episode's true profile and the micro-profiler's estimates of every window, drawn
    from ``rng`` in the order the dynamics draw them (the profile, then at each window start
    one shared and C own standard normals per stream); for measuring the estimator without
    running episodes (tests, the reproduction's calibration rows).

    Returns:
        The profile and the (V, K, C) estimates of its post-retraining accuracies.
    """
    v, k, c = spec.streams, spec.windows, len(spec.retrain_configs)
    prof = sample_profile(spec.scenario["drift"], spec.retrain_configs, v, k, rng)
    est = np.empty_like(prof.post_acc)
    for w in range(k):
        z = rng.standard_normal(v * (1 + c))
        est[:, w] = profiler_estimates(
            prof.post_acc[:, w],
            z[:v, None],
            z[v:].reshape(v, c),
            spec.profiler_noise,
            spec.profiler_noise_shared,
        )
    return prof, est


def simulated_executor(params: ContinualParams, profile: ContinualProfile) -> SimulatedExecutor:
    """The one-env simulator of an episode (the real executor wraps it; the reference engine
    runs on it): the episode's demand and the scenario's configurations, power and sharing."""
    spec = params.spec
    return SimulatedExecutor(
        profile.demand,
        spec.infer_share,
        spec.infer_factor,
        params.power_model,
        spec.share_alpha,
        spec.multi_gpu_efficiency,
        speed=spec.speed,
    )


@dataclass(eq=False)
class Episode:
    """One env's episode-long Python objects (a per-env element of :class:`ContinualState`)."""

    profile: ContinualProfile  # the episode's true profile
    # (K, V, 3 + 2C) the profile by window: floor, drift, demand, post_acc (C), gpu_seconds (C)
    by_window: np.ndarray
    rng: np.random.Generator  # the env's generator: estimates are drawn at window starts
    executor: Executor | None = None  # None: the simulator


def _by_window(prof: ContinualProfile) -> np.ndarray:
    """(K, V, 4 + 3C) one row per window and stream of everything a window start reads: floor,
    drift, demand, post-retraining accuracy (C), GPU-seconds (C), then the ceiling and the
    configurations' quality (C) that incremental retraining starts from (NaN and 0 for a
    table profile, whose post-retraining accuracy is fixed)."""
    cols = [prof.floor[:, :, None], prof.drift[:, :, None], prof.demand[:, :, None]]
    if prof.ceiling is None or prof.quality is None:
        ceiling = np.full(prof.floor.shape, np.nan)
        quality = np.zeros(prof.post_acc.shape)
    else:
        ceiling, quality = prof.ceiling, prof.quality
    rows = [*cols, prof.post_acc, prof.gpu_seconds, ceiling[:, :, None], quality]
    return np.concatenate(rows, axis=2).transpose(1, 0, 2)


@dataclass
class ContinualState:
    """N environments' state (leading axis N; V streams, K windows, C and L configurations)."""

    window: np.ndarray  # (N,) int64 current retraining window (K: the episode is over)
    time_s: np.ndarray  # (N,) simulated seconds since the episode started
    energy_j: np.ndarray  # (N,) joules used since the episode started
    # Streams (the engine's TenantState) and the allocation applied (its Allocation).
    model_acc: np.ndarray  # (N, V) accuracy of the deployed model on the window's data
    job_cfg: np.ndarray  # (N, V) int64 configuration of the job in flight, -1 = none
    job_left: np.ndarray  # (N, V) GPU-seconds (full GPU, top clock) of work still to do
    job_total: np.ndarray  # (N, V) GPU-seconds of the whole job
    job_target: np.ndarray  # (N, V) accuracy the model will have when the job finishes
    job_start_acc: np.ndarray  # (N, V) deployed accuracy when the job started
    job_est0: np.ndarray  # (N, V) the micro-profiler's estimate of job_target at the start
    job_est: np.ndarray  # (N, V) its estimate now (refined at each checkpoint)
    job_ckpt: np.ndarray  # (N, V) int64 checkpoints the job has passed
    retrained: np.ndarray  # (N, V) bool, a retraining job finished in this window
    retrain_cfg: np.ndarray  # (N, V) int64 applied retraining configuration, -1 = none
    infer_cfg: np.ndarray  # (N, V) int64 applied inference configuration
    share_retrain: np.ndarray  # (N, V) GPUs held by the retraining job
    share_infer: np.ndarray  # (N, V) GPUs held by the inference job
    # The current window: its demand, its true profile and the micro-profiler's estimates.
    infer_share: np.ndarray  # (N, V, L) share each inference configuration needs now
    post_acc: np.ndarray  # (N, V, C) true accuracy after retraining with each configuration
    gpu_seconds: np.ndarray  # (N, V, C) retraining cost at a full GPU (estimates are exact)
    est_post_acc: np.ndarray  # (N, V, C) micro-profiler estimate of post_acc
    profiled: np.ndarray  # (N, V, C) bool, configurations the micro-profiler still profiles
    prune_score: np.ndarray  # (N, V, C) Pareto gap of the estimates summed over the windows
    ready_s: np.ndarray  # (N,) time from which retraining jobs may start (labels exist)
    reserved_q: np.ndarray  # (N,) int64 quanta the micro-profiler holds in this window
    # (N, V, 2C) float32 the observation's per-configuration columns (the profiled estimates,
    # the cost), set at window starts: nothing else changes them within a window.
    obs_cfg: np.ndarray
    # Episode metrics (core.metrics.Metrics).
    acc_integral: np.ndarray  # (N, V, K) accuracy-seconds per stream and window
    window_energy_j: np.ndarray  # (N, K) joules per window
    retrain_gpu_s: np.ndarray  # (N, V) GPU-seconds spent retraining
    retrainings: np.ndarray  # (N, V) int64 jobs finished
    below_min_s: np.ndarray  # (N, V) seconds below a_MIN
    episode: list[Episode]  # (N,) profile, generator and executor of each env


def _rows(x: np.ndarray) -> np.ndarray:
    return np.arange(x.shape[0])


def _pick(table: np.ndarray, index: np.ndarray) -> np.ndarray:
    """(N, V) ``table[n, v, index[n, v]]`` of an (N, V, X) table (``take_along_axis``, with
    less overhead)."""
    m, v, x = table.shape
    flat = np.arange(0, m * v * x, x).reshape(m, v) + index
    return np.take(table.reshape(-1), flat)


def _ready(state: ContinualState) -> np.ndarray:
    """(N,) bool: the window's labels exist, retraining jobs may start."""
    return state.time_s >= state.ready_s - 1e-9


def checkpoint_work(
    job_total: np.ndarray, job_left: np.ndarray, job_ckpt: np.ndarray, step: np.ndarray
) -> np.ndarray:
    """GPU-seconds of work to each job's next checkpoint (``inf``: none before it finishes).

    A job is checkpointed every ``step`` of its progress (``checkpoint_epochs / epochs`` of
    its configuration); the last checkpoint before completion is the last one strictly
    before progress 1. Shared by the batched dynamics and the reference engine.

    Args:
        job_total: GPU-seconds of each job.
        job_left: GPU-seconds left.
        job_ckpt: Checkpoints each job has passed.
        step: Progress between two checkpoints of each job's configuration.
    """
    nxt = (job_ckpt + 1) * step
    has = nxt < 1.0 - 1e-9
    return np.where(has, np.where(has, nxt, 0.0) * job_total - (job_total - job_left), np.inf)


def checkpoint_update(
    model_acc: np.ndarray,
    start_acc: np.ndarray,
    target: np.ndarray,
    est0: np.ndarray,
    progress: np.ndarray,
    rate: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """What a checkpoint at ``progress`` does (Ekya arXiv §5, "Model checkpointing" and
    "Adapting estimates during retraining").

    The checkpointed model, of accuracy ``progress_accuracy(start_acc, target, progress,
    rate)`` on the window's data, replaces the deployed one when it is more accurate; the
    estimate of the job's final accuracy is refined from the accuracy reached so far: its
    error shrinks in proportion to the work left, ``target + (est0 - target) * (1 -
    progress)``. Shared by the batched dynamics and the reference engine.

    Returns:
        ``(deployed accuracy, refined estimate)``.
    """
    ckpt = progress_accuracy(start_acc, target, progress, rate)
    return np.maximum(model_acc, ckpt), target + (est0 - target) * (1.0 - progress)


def _needed(state: ContinualState) -> np.ndarray:
    """(N, V) share the applied inference configuration needs."""
    return _pick(state.infer_share, state.infer_cfg)


def co_located(
    share_infer: np.ndarray, share_retrain: np.ndarray, retrain_cfg: np.ndarray
) -> np.ndarray:
    """(..., 1) whether a retraining job holds a share beside inference (last axis: streams),
    the situation the scenario's ``mps`` interference applies to."""
    training = ((retrain_cfg >= 0) & (share_retrain > 0)).any(axis=-1, keepdims=True)
    return training & (share_infer > 0).any(axis=-1, keepdims=True)


def serving_share(
    spec: ContinualSpec,
    share_infer: np.ndarray,
    share_retrain: np.ndarray,
    retrain_cfg: np.ndarray,
) -> np.ndarray:
    """The inference shares as the frames they keep count them: ``share_infer``, less the
    scenario's ``mps.inference_slowdown`` of it where retraining runs beside (its
    :func:`co_located`; unchanged with interference off)."""
    if spec.mps_inference_slowdown <= 0:
        return share_infer
    shared = co_located(share_infer, share_retrain, retrain_cfg)
    return interfered(share_infer, shared, spec.mps_inference_slowdown)


class ContinualDynamics:
    """The continual family's :class:`~edgegym.core.dynamics.Dynamics` (pure batched functions).

    Public beyond the protocol, for its envs and the real executor: :meth:`project` (the
    allocation an action applies), :meth:`stream_accuracy`, :meth:`time_left`,
    :meth:`base_mask`, :meth:`episode_metrics` and :meth:`engine_views` (the executor seam's
    one-env objects). Everything else is private.
    """

    terms: tuple[str, ...] = TERMS
    #: :meth:`step` takes ``go``, the envs to step (the vector env's autoreset steps).
    steps_some: bool = True

    # ------------------------------------------------------------------ start
    def initial(
        self, params: ContinualParams, rngs: Sequence[np.random.Generator]
    ) -> ContinualState:
        """Fresh episodes: env ``i`` draws its profile, then (real backend) its executor's
        seed, then the window-0 estimates from ``rngs[i]``."""
        spec = params.spec
        m, v, k, c = len(rngs), spec.streams, spec.windows, len(spec.retrain_configs)
        l_inf = len(spec.inference_configs)
        state = ContinualState(
            window=np.zeros(m, dtype=np.int64),
            time_s=np.zeros(m),
            energy_j=np.zeros(m),
            model_acc=np.zeros((m, v)),
            job_cfg=np.full((m, v), -1, dtype=np.int64),
            job_left=np.zeros((m, v)),
            job_total=np.zeros((m, v)),
            job_target=np.zeros((m, v)),
            job_start_acc=np.zeros((m, v)),
            job_est0=np.zeros((m, v)),
            job_est=np.zeros((m, v)),
            job_ckpt=np.zeros((m, v), dtype=np.int64),
            retrained=np.zeros((m, v), dtype=bool),
            retrain_cfg=np.full((m, v), -1, dtype=np.int64),
            infer_cfg=np.zeros((m, v), dtype=np.int64),
            share_retrain=np.zeros((m, v)),
            share_infer=np.zeros((m, v)),
            infer_share=np.zeros((m, v, l_inf)),
            post_acc=np.zeros((m, v, c)),
            gpu_seconds=np.zeros((m, v, c)),
            est_post_acc=np.zeros((m, v, c)),
            profiled=np.ones((m, v, c), dtype=bool),
            prune_score=np.zeros((m, v, c)),
            ready_s=np.zeros(m),
            reserved_q=np.zeros(m, dtype=np.int64),
            obs_cfg=np.zeros((m, v, 2 * c), dtype=np.float32),
            acc_integral=np.zeros((m, v, k)),
            window_energy_j=np.zeros((m, k)),
            retrain_gpu_s=np.zeros((m, v)),
            retrainings=np.zeros((m, v), dtype=np.int64),
            below_min_s=np.zeros((m, v)),
            episode=[],
        )
        drift = spec.scenario["drift"]
        for j, rng in enumerate(rngs):
            prof = sample_profile(drift, spec.retrain_configs, v, k, rng)
            ep = Episode(prof, _by_window(prof), rng)
            state.episode.append(ep)
            state.model_acc[j] = prof.start_acc
            if params.make_executor is not None:
                ep.executor = params.make_executor(simulated_executor(params, prof), rng)
        self._enter_window(params, state, np.arange(m), np.zeros(m, dtype=np.int64))
        return state

    def _enter_window(
        self, params: ContinualParams, state: ContinualState, idx: np.ndarray, k: np.ndarray
    ) -> None:
        """Envs ``idx`` enter windows ``k``: drop unfinished jobs, drift, prune and draw the
        micro-profiler's estimates, hold its GPU share, start the labelling delay (the
        engine's ``start_window`` and the env's micro-profiler)."""
        spec = params.spec
        state.window[idx] = k
        live = k < spec.windows
        if not live.all():
            idx, k = idx[live], k[live]
        if idx.size == 0:
            return
        v, c = spec.streams, len(spec.retrain_configs)
        executors = params.make_executor is not None
        if executors:
            for i, kk in zip(idx, k, strict=True):
                ex = state.episode[i].executor
                if ex is not None:
                    ex.start_window(int(kk))
        # The window's profile, and the micro-profiler's error: a part shared by all
        # configurations of a stream (they are profiled on the same data subsample) and an
        # independent part per configuration, drawn from each env's generator in turn.
        n = idx.size
        table = np.empty((n, v, 4 + 3 * c))
        draws = np.empty((n, v * (1 + c)))
        for j, (i, kk) in enumerate(zip(idx.tolist(), k.tolist(), strict=True)):
            ep = state.episode[i]
            table[j] = ep.by_window[kk]
            # = normal(0, 1, size=(V, 1)) then normal(0, 1, size=(V, C)): one stream
            ep.rng.standard_normal(out=draws[j])
        draws += 0.0  # normal() returns 0.0 + 1.0 * z
        shared = draws[:, :v, None]
        own = draws[:, v:].reshape(n, v, c)
        floor, loss = table[:, :, 0], table[:, :, 1]
        post, cost = table[:, :, 3 : 3 + c], table[:, :, 3 + c : 3 + 2 * c]
        ceiling, quality = table[:, :, 3 + 2 * c], table[:, :, 4 + 2 * c :]
        state.infer_share[idx] = table[:, :, 2:3] * params.base_share
        later = k > 0
        if later.all():
            state.model_acc[idx] = np.maximum(floor, state.model_acc[idx] - loss)
        elif later.any():
            d = idx[later]
            state.model_acc[d] = np.maximum(floor[later], state.model_acc[d] - loss[later])
        state.job_cfg[idx] = -1
        state.job_left[idx] = 0.0
        state.job_total[idx] = 0.0
        state.job_target[idx] = 0.0
        state.job_start_acc[idx] = 0.0
        state.job_est0[idx] = 0.0
        state.job_est[idx] = 0.0
        state.job_ckpt[idx] = 0
        state.retrained[idx] = False
        state.retrain_cfg[idx] = -1
        state.infer_cfg[idx] = 0
        state.share_retrain[idx] = 0.0
        state.share_infer[idx] = 0.0
        if executors:  # drift as measured: the deployed models' accuracy on the new window
            for i in idx:
                ex = state.episode[i].executor
                if ex is not None:
                    state.model_acc[i] = ex.deployed_accuracy()
        # Retraining is incremental: what a job reaches depends on the deployed model it
        # starts from, which cannot change before the window's one job starts.
        grown = ~np.isnan(ceiling[:, 0])  # generated profiles (a table's is fixed)
        if grown.any():  # ContinualProfile.window_post for all of them at once
            start = state.model_acc[idx[grown]][:, :, None]
            post[grown] = retrained_accuracy(start, ceiling[grown][:, :, None], quality[grown])
        state.post_acc[idx] = post
        state.gpu_seconds[idx] = cost
        est = profiler_estimates(post, shared, own, spec.profiler_noise, spec.profiler_noise_shared)
        state.est_post_acc[idx] = est
        self._profile(params, state, idx, k, est, cost)
        state.ready_s[idx] = k * spec.window_s + spec.annotation_s
        # The observation's columns of the window (each computed in float64, then rounded).
        cols = np.empty((n, v, 2 * c), dtype=np.float32)
        cols[:, :, :c] = est * state.profiled[idx]  # 0 where no longer profiled
        cols[:, :, c:] = np.minimum(1.0, cost / (float(spec.gpus) * spec.window_s))  # >= 0
        state.obs_cfg[idx] = cols

    def _profile(
        self,
        params: ContinualParams,
        state: ContinualState,
        idx: np.ndarray,
        k: np.ndarray,
        est: np.ndarray,
        cost: np.ndarray,
    ) -> None:
        """The micro-profiler's bookkeeping as envs ``idx`` enter windows ``k`` (Ekya §4.3):
        every configuration is profiled in the first window; every ``prune_every`` windows a
        fixed fraction of each stream's worst ones (summed Pareto gap of their estimates) is
        dropped for the rest of the episode; the window's profiling cost, the profiled
        configurations' share of ``profile_cost_s`` per stream, is held as a GPU share for
        the whole window (charged against its GPU time: Eq. 1's first constraint)."""
        spec = params.spec
        first = k == 0
        if first.any():
            state.profiled[idx[first]] = True
            state.prune_score[idx[first]] = 0.0
        if spec.prune_every > 0 and spec.prune_fraction > 0:
            due = ~first & (k % spec.prune_every == 0)
            if due.any():
                d = idx[due]
                state.profiled[d] = prune(
                    state.profiled[d], state.prune_score[d], cost[due], spec.prune_fraction
                )
            profiled = state.profiled[idx]
            state.prune_score[idx] += pareto_gap(cost, est, profiled)
        if spec.profile_cost_s > 0:
            weight = (state.profiled[idx] * spec.profile_weight).sum(axis=(1, 2))
            share = spec.profile_cost_s * weight / spec.window_s
            quanta = np.ceil(share / spec.quantum - QUANTA_EPS).astype(np.int64)
            state.reserved_q[idx] = np.minimum(quanta, params.cap_quanta)

    # ------------------------------------------------------------------ decisions
    def project(
        self, params: ContinualParams, state: ContinualState, actions: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The feasible allocation of ``actions`` (N, 4 * max_streams): ``(retrain_cfg,
        infer_cfg, share_retrain, share_infer)``, each (N, V).

        Entries are clipped to their ranges; a stream with a job in flight keeps its
        configuration, one that already retrained gets none, nor does any stream before the
        window's labels exist (``ready_s``), a retraining share without a configuration is
        dropped, and shares over the GPUs the micro-profiler leaves (G minus its reserved
        quanta) are scaled down onto the delta grid
        (:func:`edgegym.hardware.mps.quantize_shares`'s rule, every env at once).
        """
        spec = params.spec
        v, m = spec.streams, state.window.shape[0]
        a = np.asarray(actions, dtype=np.int64).reshape(m, params.max_streams, 4)[:, :v]
        a = np.clip(a, 0, params.nvec - 1)
        retrain = np.where(state.job_cfg >= 0, state.job_cfg, a[:, :, 0] - 1)
        retrain = np.where(state.retrained | ~_ready(state)[:, None], -1, retrain)
        r_quanta = np.where(retrain >= 0, a[:, :, 2], 0)
        x = np.concatenate([r_quanta, a[:, :, 3]], axis=1) * spec.quantum  # (N, 2V) GPUs
        q = np.floor(x / spec.quantum + QUANTA_EPS).astype(np.int64)
        cap = params.cap_quanta - state.reserved_q
        over = np.flatnonzero(q.sum(axis=1) > cap)
        if over.size:
            q[over] = largest_remainder(q[over], cap[over])
        shares = q * spec.quantum
        return retrain, a[:, :, 1].copy(), shares[:, :v].copy(), shares[:, v:].copy()

    def _apply(
        self,
        params: ContinualParams,
        state: ContinualState,
        alloc: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray],
        go: np.ndarray | None = None,
    ) -> None:
        """Install a projected allocation: start the jobs it asks for (the engine's
        ``apply``); only in envs ``go`` where given."""
        retrain, infer, share_r, share_i = alloc
        running = state.job_cfg >= 0
        retrain = np.where(running, state.job_cfg, retrain)
        refused = state.retrained | (retrain < 0)
        retrain = np.where(refused, -1, retrain)
        share_r = np.where(refused, 0.0, share_r)
        start = ~running & (retrain >= 0) & (share_r > 0)
        if go is not None:
            start &= go[:, None]
        if start.any():
            e, s = np.nonzero(start)
            cfg = retrain[e, s]
            state.job_cfg[e, s] = cfg
            state.job_total[e, s] = state.gpu_seconds[e, s, cfg]
            state.job_left[e, s] = state.job_total[e, s]
            state.job_target[e, s] = state.post_acc[e, s, cfg]
            state.job_start_acc[e, s] = state.model_acc[e, s]
            state.job_est0[e, s] = state.job_est[e, s] = state.est_post_acc[e, s, cfg]
            state.job_ckpt[e, s] = 0
        # A configuration chosen with no share does not start a job: report it as none.
        retrain = np.where((state.job_cfg < 0) & (retrain >= 0), -1, retrain)
        if go is not None:
            keep = ~go[:, None]
            retrain = np.where(keep, state.retrain_cfg, retrain)
            infer = np.where(keep, state.infer_cfg, infer)
            share_r = np.where(keep, state.share_retrain, share_r)
            share_i = np.where(keep, state.share_infer, share_i)
        state.retrain_cfg = retrain
        state.infer_cfg = infer
        state.share_retrain = share_r
        state.share_infer = share_i

    # ------------------------------------------------------------------ helpers
    def stream_accuracy(self, params: ContinualParams, state: ContinualState) -> np.ndarray:
        """(N, V) instantaneous inference accuracy under the applied allocation."""
        factor = params.spec.infer_factor[state.infer_cfg]
        share = serving_share(
            params.spec, state.share_infer, state.share_retrain, state.retrain_cfg
        )
        return inference_accuracy(state.model_acc, factor, _needed(state), share)

    def engine_views(
        self, params: ContinualParams, state: ContinualState, i: int
    ) -> tuple[ClusterState, TenantState, Allocation]:
        """Env ``i``'s cluster, streams and allocation as the engine's types; the arrays are
        views, so an executor's writes (``job_target``) land in ``state``."""
        cluster = ClusterState(
            gpus=params.spec.gpus,
            clock_mhz=np.array(params.clock_mhz),
            time_s=float(state.time_s[i]),
            energy_j=float(state.energy_j[i]),
        )
        tenants = TenantState(
            model_acc=state.model_acc[i],
            job_cfg=state.job_cfg[i],
            job_left=state.job_left[i],
            job_total=state.job_total[i],
            job_target=state.job_target[i],
            retrained=state.retrained[i],
        )
        alloc = Allocation(
            retrain_cfg=state.retrain_cfg[i],
            infer_cfg=state.infer_cfg[i],
            share_retrain=state.share_retrain[i],
            share_infer=state.share_infer[i],
        )
        return cluster, tenants, alloc

    def _segment(
        self, params: ContinualParams, state: ContinualState, go: np.ndarray | None
    ) -> tuple[np.ndarray, dict[str, np.ndarray], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Run the envs ``go`` ((N,) bool, ``None``: all) to their next event (the engine's
        ``advance`` and the env's accounting of the stretch): a job finishing or reaching a
        checkpoint, the window's labels becoming ready, or the window's end. Returns the
        stretch's length (N,), its reward terms, its energy (N,), the (N, V) jobs that
        finished, the (N,) end of the window it ran in and the (N,) envs whose stretch ended
        at another decision epoch (a checkpoint, the labels); envs not in ``go`` get zeros and
        are left as they are."""
        retraining = state.retrain_cfg >= 0  # before this stretch's finished jobs leave
        speed, views = self._speeds(params, state, go, retraining)
        active = (state.job_cfg >= 0) & (speed > 0)
        rate = np.where(active, speed, 1.0)
        finish = np.where(active, state.job_left / rate, np.inf)
        step = params.spec.checkpoint_step[np.maximum(state.job_cfg, 0)]
        ck_work = checkpoint_work(state.job_total, state.job_left, state.job_ckpt, step)
        ck_time = np.where(active, ck_work / rate, np.inf)
        ws = params.spec.window_s
        window_end = state.window * ws + ws
        waiting = ~_ready(state)
        horizon = np.where(waiting, np.minimum(window_end, state.ready_s), window_end)
        first = np.minimum(finish.min(axis=1, initial=np.inf), ck_time.min(axis=1, initial=np.inf))
        dt = np.minimum(horizon - state.time_s, first)
        dt = np.maximum(0.0, dt) if go is None else np.where(go, np.maximum(0.0, dt), 0.0)
        acc_int, energy = self._run_stretch(params, state, retraining, speed, views, dt)
        done = (finish <= dt[:, None] + _EPS) | (
            state.job_left <= _EPS * np.maximum(state.job_total, 1)
        )
        done &= active
        if go is not None:
            done &= go[:, None]
        acc, every, pos = self._account(params, state, retraining, acc_int, energy, dt)
        ckpt = active & ~done & (ck_time <= dt[:, None] + _EPS)
        if go is not None:
            ckpt &= go[:, None]
        self._reach_checkpoints(params, state, ckpt, step)
        epoch = ckpt.any(axis=1) | (waiting & _ready(state))
        if done.any():
            _finish_jobs(state, done)
        terms = _stretch_terms(params, acc_int, acc, energy, dt)
        if not every:
            terms = {name: np.where(pos, value, 0.0) for name, value in terms.items()}
        return dt, terms, energy, done, window_end, epoch

    def _speeds(
        self,
        params: ContinualParams,
        state: ContinualState,
        go: np.ndarray | None,
        retraining: np.ndarray,
    ) -> tuple[np.ndarray, dict[int, Any]]:
        """Retraining work rates (N, V) (``hardware.mps.share_speedup`` at the clock's
        speed; a real executor's own where one runs), and the engine views of those envs."""
        spec = params.spec
        share = state.share_retrain
        speedup = np.minimum(share, 1.0) ** spec.share_alpha
        speedup += np.maximum(share - 1.0, 0.0) * spec.multi_gpu_efficiency
        speed = np.where(retraining, speedup * spec.speed, 0.0)
        if spec.mps_retrain_slowdown > 0:
            shared = co_located(state.share_infer, state.share_retrain, state.retrain_cfg)
            speed = interfered(speed, shared, spec.mps_retrain_slowdown)
        views = {}
        if params.make_executor is not None:
            for i, ep in enumerate(state.episode):
                if ep.executor is not None and (go is None or go[i]):
                    views[i] = self.engine_views(params, state, i)
                    speed[i] = ep.executor.retrain_speed(views[i][2])
        return speed, views

    def _run_stretch(
        self,
        params: ContinualParams,
        state: ContinualState,
        retraining: np.ndarray,
        speed: np.ndarray,
        views: dict[int, Any],
        dt: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Run ``dt`` (core.executor.SimulatedExecutor.run, batched; a real executor's run
        where one runs): the work done leaves the jobs; returns the (N, V) accuracy integral
        and the (N,) energy."""
        spec = params.spec
        dt2 = dt[:, None]
        needed = _needed(state)
        factor = spec.infer_factor[state.infer_cfg]
        share = serving_share(spec, state.share_infer, state.share_retrain, state.retrain_cfg)
        acc_int = inference_accuracy(state.model_acc, factor, needed, share) * dt2
        work = speed * dt2
        busy = np.minimum(state.share_infer, needed) + np.where(
            retraining, state.share_retrain, 0.0
        )
        util = np.minimum(1.0, busy.sum(axis=1) / spec.gpus)
        energy, _ = params.power_model.gpu_energy(params.clock_mhz, util, dt)
        for i, (cluster, tenants, alloc) in views.items():
            seg = state.episode[i].executor.run(cluster, tenants, alloc, float(dt[i]))
            work[i] = seg.work_done
            acc_int[i] = seg.acc_integral
            energy[i] = seg.energy_j
        state.job_left = np.maximum(0.0, state.job_left - work)
        return acc_int, energy

    def _account(
        self,
        params: ContinualParams,
        state: ContinualState,
        retraining: np.ndarray,
        acc_int: np.ndarray,
        energy: np.ndarray,
        dt: np.ndarray,
    ) -> tuple[np.ndarray, bool, np.ndarray]:
        """The stretch's metrics (as the reference engine records them) for the envs of
        positive length, and the clocks; returns the (N, V) mean accuracy, whether every env
        ran, and which did."""
        spec = params.spec
        dt2 = dt[:, None]
        pos = dt > 0
        every = bool(pos.all())
        acc = acc_int / (dt2 if every else np.where(pos, dt, 1.0)[:, None])
        below = np.where(acc < spec.a_min - 1e-9, dt2, 0.0)
        gpu_s = np.where(retraining, state.share_retrain, 0.0) * dt2
        if every:
            k = state.window
            state.acc_integral[_rows(k), :, k] += acc_int
            state.window_energy_j[_rows(k), k] += energy
            state.retrain_gpu_s += gpu_s
            state.below_min_s += below
        elif pos.any():
            sel = np.flatnonzero(pos)
            k = state.window[sel]
            state.acc_integral[sel, :, k] += acc_int[sel]
            state.window_energy_j[sel, k] += energy[sel]
            state.retrain_gpu_s[sel] += gpu_s[sel]
            state.below_min_s[sel] += below[sel]
        state.time_s = state.time_s + dt
        state.energy_j = state.energy_j + energy
        return acc, every, pos

    def _reach_checkpoints(
        self, params: ContinualParams, state: ContinualState, ckpt: np.ndarray, step: np.ndarray
    ) -> None:
        """Jobs ``ckpt`` (N, V) reached a checkpoint: the deployed model and the job's
        estimate are updated from it."""
        if not ckpt.any():
            return
        e, s = np.nonzero(ckpt)
        state.job_ckpt[e, s] += 1
        cfg = state.job_cfg[e, s]
        state.model_acc[e, s], state.job_est[e, s] = checkpoint_update(
            state.model_acc[e, s],
            state.job_start_acc[e, s],
            state.job_target[e, s],
            state.job_est0[e, s],
            state.job_ckpt[e, s] * step[e, s],
            params.curve_rate[cfg],
        )

    # ------------------------------------------------------------------ contract
    def base_mask(self, params: ContinualParams, m: int) -> np.ndarray:
        """(m, max_streams, C + 1 + L + 2 levels) bool: what every slot may always choose (no
        retraining, inference configuration 0, zero shares); the whole mask of an env whose
        episode has ended, or has not started."""
        return np.repeat(params.mask_idle[None], m, axis=0)

    def mask(self, params: ContinualParams, state: ContinualState) -> np.ndarray:
        """(N, max_streams * (C + 1 + L + 2 levels)) bool, per ``MultiDiscrete`` entry: no
        retraining, inference configuration 0 and zero shares are always allowed; in a live
        episode a free stream may pick any retraining configuration, a stream with a job in
        flight only its job's, every stream any inference configuration and inference share,
        and a retraining share where it runs or may start a job. No job may start before the
        window's labels exist (``ready_s``)."""
        spec = params.spec
        m, v = state.window.shape[0], spec.streams
        c1, l_inf, q, _ = (int(x) for x in params.nvec)
        live = state.window < spec.windows
        if not live.any():
            return self.base_mask(params, m).reshape(m, -1)
        rows = np.empty((m, *params.mask_live.shape), dtype=bool)
        rows[:] = params.mask_live
        if not live.all():
            rows[~live] = params.mask_idle
        running = (state.job_cfg >= 0) & live[:, None]
        free = ~(state.job_cfg >= 0) & ~state.retrained & (live & _ready(state))[:, None]
        streams = rows[:, :v]
        streams[:, :, 0] = ~running
        streams[:, :, 1:c1] = free[:, :, None]
        e, s = np.nonzero(running)
        streams[e, s, 1 + state.job_cfg[e, s]] = True
        streams[:, :, c1 + l_inf + 1 : c1 + l_inf + q] = (running | free)[:, :, None]
        return rows.reshape(m, -1)

    def step(
        self,
        params: ContinualParams,
        state: ContinualState,
        actions: np.ndarray,
        go: np.ndarray | None = None,
    ) -> tuple[ContinualState, Record]:
        """Apply every env's allocation and run it to the env's next decision epoch (a
        retraining completion or the end of the window; in place). Every env must be live.

        ``go`` ((N,) bool, :attr:`steps_some`): step only those envs and leave the others as
        they are (their actions are ignored, their rows of the Record are not meaningful),
        as stepping ``batch_take(state, go)`` and putting it back would, bit for bit, without
        the copies (the vector env's autoreset steps).

        ``Record.info`` holds the allocation actually applied: ``retrain_cfg``,
        ``infer_cfg``, ``share_retrain``, ``share_infer`` (each (N, V)).
        """
        spec = params.spec
        ended = state.window >= spec.windows
        if (ended if go is None else ended & go).any():
            raise RuntimeError("step() on an env whose episode has ended")
        self._apply(params, state, self.project(params, state, actions), go)
        applied = {
            "retrain_cfg": state.retrain_cfg.copy(),
            "infer_cfg": state.infer_cfg.copy(),
            "share_retrain": state.share_retrain.copy(),
            "share_infer": state.share_infer.copy(),
        }
        # One stretch per step: it ends at a completion, a checkpoint, the labels becoming
        # ready or the window's end. (The loop only guards the engine's rule for an env that
        # reached none of them.)
        duration = energy = None
        terms: dict[str, np.ndarray] = {}
        while True:
            dt, seg_terms, seg_energy, done, window_end, epoch = self._segment(params, state, go)
            if duration is None:  # the engine's sums start at 0.0 (0.0 + -0.0 is 0.0)
                duration, energy = dt + 0.0, seg_energy + 0.0
                terms = {name: value + 0.0 for name, value in seg_terms.items()}
            else:
                duration, energy = duration + dt, energy + seg_energy
                terms = {name: value + seg_terms[name] for name, value in terms.items()}
            enter = state.time_s >= window_end - 1e-9
            if go is not None:
                enter &= go
            if enter.any():
                idx = np.flatnonzero(enter)
                self._enter_window(params, state, idx, state.window[idx] + 1)
            go = ~enter & ~done.any(axis=1) & ~epoch & (True if go is None else go)
            if not go.any():
                break
        return state, Record(energy_j=energy, duration_s=duration, terms=terms, info=applied)

    def time_left(self, params: ContinualParams, state: ContinualState) -> np.ndarray:
        """(N,) seconds left in each env's current window (0 once the episode has ended)."""
        spec = params.spec
        left = state.window * spec.window_s + spec.window_s - state.time_s
        return np.where(left > 0.0, left, 0.0)

    def observation(self, params: ContinualParams, state: ContinualState) -> dict[str, np.ndarray]:
        """``streams`` (N, max_streams, 9 + 2C), ``stream_mask`` (N, max_streams) and
        ``globals`` (N, 6), float32 (the table in :mod:`edgegym.families.continual.observation`;
        each value is computed in float64, clipped to [0, 1] and rounded to float32)."""
        spec = params.spec
        m, v, c = state.window.shape[0], spec.streams, len(spec.retrain_configs)
        g = float(spec.gpus)
        running = state.job_cfg >= 0
        cfg = np.maximum(state.job_cfg, 0)
        total = state.job_total
        progress = np.where(total > 0, 1.0 - state.job_left / np.maximum(total, 1e-12), 0.0)
        curve = progress_accuracy(
            state.job_start_acc, state.job_est, progress, params.curve_rate[cfg]
        )
        base = np.stack(
            [
                np.ones((m, v)),
                state.model_acc,
                running,
                state.retrained,
                progress,
                np.where(running, curve, 0.0),
                # The largest share needed (demand x the widest configuration's base share).
                np.minimum(1.0, state.infer_share[:, :, params.widest] / g),
                state.share_retrain / g,
                state.share_infer / g,
            ],
            axis=2,
        )
        rows = np.zeros((m, params.max_streams, N_STREAM_BASE + 2 * c), dtype=np.float32)
        rows[:, :v, :N_STREAM_BASE] = np.clip(base, 0.0, 1.0)
        # The micro-profiler's estimates (0 for configurations it no longer profiles) and the
        # configurations' cost, min(1, gpu_seconds / (G * window_s)): set at the window's start.
        rows[:, :v, N_STREAM_BASE:] = state.obs_cfg
        mask = np.zeros((m, params.max_streams), dtype=np.float32)
        mask[:, :v] = 1.0
        held = state.reserved_q * spec.quantum  # the micro-profiler's share
        free = g - held - (state.share_retrain.sum(axis=1) + state.share_infer.sum(axis=1))
        glob = np.empty((m, N_GLOBAL))
        glob[:, 0] = self.time_left(params, state) / spec.window_s
        glob[:, 1] = np.minimum(state.window, spec.windows - 1) / max(spec.windows - 1, 1)
        glob[:, 2] = min(1.0, g / 64.0)
        glob[:, 3] = np.where(free > 0.0, free, 0.0) / g
        glob[:, 4] = spec.a_min
        glob[:, 5] = min(1.0, spec.quantum / g)
        return {
            "streams": rows,
            "stream_mask": mask,
            "globals": np.clip(glob.astype(np.float32), 0, 1),
        }

    def done(self, params: ContinualParams, state: ContinualState) -> np.ndarray:
        """(N,) bool: the last window has ended."""
        return state.window >= params.spec.windows

    def episode_metrics(self, params: ContinualParams, state: ContinualState, i: int) -> Metrics:
        """Env ``i``'s accumulated metrics as a :class:`~edgegym.core.metrics.Metrics` (its
        arrays are views of ``state``)."""
        spec = params.spec
        out = Metrics(spec.streams, spec.windows, spec.window_s)
        out.a_min = spec.a_min
        out.acc_integral = state.acc_integral[i]
        out.energy_j = state.window_energy_j[i]
        out.retrain_gpu_s = state.retrain_gpu_s[i]
        out.retrainings = state.retrainings[i]
        out.below_min_s = state.below_min_s[i]
        return out

    def metrics(self, params: ContinualParams, state: ContinualState, i: int) -> dict[str, float]:
        """Env ``i``'s whole-episode numbers (its ``info["episode_metrics"]``).

        Raises:
            FloatingPointError: A number is not finite (a bug: the evaluator would otherwise
                show it as ``-``); the message names it.
        """
        out = self.episode_metrics(params, state, i).summary()
        bad = [f"{k}={v}" for k, v in out.items() if not math.isfinite(v)]
        if bad:
            raise FloatingPointError(f"continual episode metrics not finite: {', '.join(bad)}")
        return out


def _finish_jobs(state: ContinualState, done: np.ndarray) -> None:
    """Jobs ``done`` (N, V) finished: their model replaces the deployed one if better."""
    swapped = swap_if_better(state.model_acc, state.job_target)
    state.model_acc = np.where(done, swapped, state.model_acc)
    state.job_cfg[done] = -1
    state.job_left[done] = 0.0
    state.job_total[done] = 0.0
    state.retrained |= done
    state.retrainings += done
    state.retrain_cfg[done] = -1


def _stretch_terms(
    params: ContinualParams,
    acc_int: np.ndarray,
    acc: np.ndarray,
    energy: np.ndarray,
    dt: np.ndarray,
) -> dict[str, np.ndarray]:
    """The stretch's reward terms (``families.continual.reward``)."""
    spec = params.spec
    n_ws = spec.streams * spec.window_s
    shortfall = np.maximum(0.0, spec.a_min - acc) * dt[:, None]
    return {
        "accuracy": acc_int.sum(axis=1) / n_ws,
        "a_min_shortfall": -shortfall.sum(axis=1) / n_ws,
        "energy": -energy / (params.full_power_w * spec.window_s),
    }


__all__ = [
    "N_GLOBAL",
    "N_STREAM_BASE",
    "ContinualDynamics",
    "ContinualState",
    "checkpoint_update",
    "checkpoint_work",
    "sample_estimates",
]

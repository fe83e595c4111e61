"""Ekya's schedulers (NSDI'22 §4.2, §6.1-6.2): thief, uniform, FixedRes, FixedConfig, no-
retrain.

The thief (Algorithm 1) starts from a fair allocation of every inference and retraining job
and lets each job steal Delta GPUs from every other job while the estimated window-averaged
accuracy improves. One deviation: a victim holding less than Delta gives up what it holds
(in Algorithm 1 the steal would go negative and stop, so with 20 jobs fairly sharing one GPU
at Delta = 0.1 no steal could ever happen; ``partial=False`` restores the literal rule).
Each candidate allocation is scored by PickConfigs (Algorithm 2): per stream, the most
accurate inference configuration that keeps up within its share (and whose accuracy is at
least a_MIN), and the retraining configuration that maximises the accuracy averaged over the
rest of the window (EstimateAccuracy; configurations that cannot finish in the window are
skipped). Estimates come from the micro-profiler (``oracle=True``: the truth).

Constraints (:func:`thief_floors`), in both variants: every job has a floor in quanta that
no steal may cross, and the fair start is raised to the floors. An inference job keeps the
share of its cheapest configuration (live video is always served) and, where the GPUs allow
it, the share of the cheapest configuration that reaches a_MIN (an allocation below it
leaves PickConfigs' pool empty: Algorithm 2 has no configuration to run, so it is
infeasible, not merely worse). A retraining job in flight keeps the share that finishes it
within the window (the first constraint of Eq. 1 holds for running jobs too); a job that
cannot finish even then is let go: it gets no share and is dropped at the window end.

EstimateAccuracy, as implemented here (the paper gives its inputs, not its formula): with
``d`` the time to finish the job at the retraining share and ``T`` the time left, ``(d *
acc_now * f(I) + (T - d) * acc_post * f(I + R)) / T``: after the job finishes its share goes
to the stream's inference (the thief re-runs at every completion and reallocates). GPU-time
is rescaled to the allocation with the same throughput curve the simulator uses.

Per-stream estimates depend only on that stream's two shares, so they are memoised by
``(stream, retraining quanta, inference quanta)``; a steal re-scores two streams, not V. The
same separability makes the objective's maximum over every split a knapsack over the quanta:
:func:`exact_schedule` (``thief:exact=true``) solves it exactly, a reference for what the
greedy steals leave, not the paper's scheduler.

The micro-profiler (scenario section ``profiler``): the thief chooses among the configurations
it still profiles (``snap.profiled``, after pruning; Ekya-FixedConfig profiles its own one),
allocates the GPUs it leaves (``snap.capacity``), starts no job before the window's labels
exist (``snap.retrain_wait_s``: until then every GPU goes to inference, and the thief runs
again when they exist) and reads a job's refined estimate at its checkpoints
(``snap.job_target_est``). The uniform baselines split ``snap.capacity`` too.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np

from edgegym.baselines.base import Policy
from edgegym.core.state import Allocation
from edgegym.families.continual.snapshot import ContinualSnapshot
from edgegym.hardware.mps import share_speedup
from edgegym.workload.continual import keep_up_config


def best_inference(
    model_acc: float | np.ndarray,
    needed: np.ndarray,
    factor: np.ndarray,
    share: float | np.ndarray,
    a_min: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """PickConfigs' inference rule, vectorised over streams.

    Among configurations that keep up within ``share`` and reach ``a_min``, the most accurate;
    if none qualifies, the one with the highest delivered accuracy (frames dropped).

    Args:
        model_acc: (V,) or scalar accuracy of the deployed model.
        needed: (V, L) share each configuration needs.
        factor: (L,) accuracy factor of each configuration.
        share: (V,) or scalar inference share.
        a_min: Accuracy floor.

    Returns:
        ``(config, delivered factor, qualified)``, each (V,); ``qualified`` is False where no
        configuration keeps up and reaches ``a_min`` (PickConfigs' pool is empty).
    """
    needed = np.atleast_2d(needed)
    share = np.broadcast_to(np.asarray(share, dtype=float), needed.shape[:1])[:, None]
    acc = np.broadcast_to(np.asarray(model_acc, dtype=float), needed.shape[:1])[:, None]
    return pick_inference(needed, factor, share, acc * factor[None, :] >= a_min)


def pick_inference(
    needed: np.ndarray, factor: np.ndarray, share: float | np.ndarray, reaches: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """PickConfigs' choice over the last axis (:func:`best_inference`'s rule): ``needed`` and
    ``factor`` (..., L), ``share`` broadcast against them, ``reaches`` (..., L) whether each
    configuration reaches a_MIN with the model that serves. Returns ``(config, delivered
    factor, qualified)`` over the leading axes of ``reaches``."""
    delivered = factor * np.minimum(1.0, share / np.maximum(needed, 1e-12))
    fits = (needed <= share + 1e-9) & reaches
    cfg = np.argmax(np.where(fits, factor + 2.0, delivered), axis=-1)  # qualifying ones first
    if delivered.ndim == 1:  # one stream: its factors serve every model in ``reaches``
        return cfg, delivered[cfg], fits.any(axis=-1)
    chosen = np.take_along_axis(delivered, cfg[..., None], axis=-1)[..., 0]
    return cfg, chosen, fits.any(axis=-1)


class StreamEstimator:
    """EstimateAccuracy + PickConfigs for one snapshot, memoised per stream and allocation."""

    def __init__(
        self,
        snap: ContinualSnapshot,
        oracle: bool = False,
        configs: Sequence[int] | None = None,
    ) -> None:
        self.s = snap
        self.post = snap.true_post_acc if oracle else snap.est_post_acc  # (V, C)
        cost = snap.true_gpu_seconds if oracle else snap.est_gpu_seconds  # (V, C)
        v, c = self.post.shape
        # The configurations to choose from: those given (Ekya-FixedConfig profiles only its
        # own), else the micro-profiler's list after pruning.
        if configs is not None:
            allowed = np.zeros((v, c), dtype=bool)
            allowed[:, list(configs)] = True
        elif snap.profiled is not None:
            allowed = np.asarray(snap.profiled, dtype=bool)
        else:
            allowed = np.ones((v, c), dtype=bool)
        # Work left per (stream, config): the job in flight is the only option for its stream;
        # none may start before the window's labels exist.
        work = np.where(allowed, cost, np.inf)
        if snap.retrain_wait_s > 0:
            work[:] = np.inf
        running = snap.job_cfg >= 0
        for v in np.flatnonzero(running):
            work[v] = np.inf
            work[v, snap.job_cfg[v]] = snap.job_left[v]
            target = snap.true_post_acc if oracle else self.post
            self.post = self.post.copy() if self.post is target else self.post
            self.post[v, snap.job_cfg[v]] = (
                target[v, snap.job_cfg[v]] if oracle else snap.job_target_est[v]
            )
        work[snap.retrained] = np.inf
        self.running = running  # (V,) a job is in flight (its configuration is fixed)
        self.work = work  # (V, C) GPU-seconds left; inf = not available
        self.can_train = np.isfinite(work).any(axis=1)  # (V,)
        self.cache: dict[tuple[int, int, int], tuple[float, int, int]] = {}
        # The parts of a score, each memoised on what it depends on (a search asks for many
        # splits that share an inference share, a retraining share or their sum).
        self._now: dict[tuple[int, int], tuple[int, float, bool]] = {}
        self._after: dict[tuple[int, float], np.ndarray] = {}
        self._jobs: dict[tuple[int, int], tuple[np.ndarray, np.ndarray, bool]] = {}
        self._posts: dict[int, np.ndarray] = {}
        self._reach: dict[tuple[int, bool], np.ndarray] = {}
        self.calls = 0  # scores asked for (the thief's work per decision, cached or not)

    def best(self, v: int, rq: int, iq: int) -> tuple[float, int, int]:
        """(estimated window accuracy, retraining config or -1, inference config)."""
        self.calls += 1
        key = (v, rq, iq)
        hit = self.cache.get(key)
        if hit is not None:
            return hit
        s = self.s
        share_i, share_r = iq * s.quantum, rq * s.quantum
        icfg, acc_now, ok_now = self._inference_now(v, iq)
        # An allocation whose inference cannot keep up at a_MIN is infeasible in PickConfigs;
        # it is scored with a penalty of 1 so that stealing moves away from it.
        penalty = 0.0 if ok_now else 1.0
        result = (acc_now - penalty, -1, icfg)
        t_left = s.time_left_s
        if rq > 0 and self.can_train[v] and t_left > 0:
            dur, ok, any_ok = self._job_row(v, rq)
            if any_ok:
                post = self._post(v)
                f_after = self._after_job(v, share_i + share_r)
                est = _window_accuracy(dur, ok, acc_now, post, f_after, t_left)
                c = int(np.argmax(est))
                # A job in flight is carried whenever it has a share (the engine keeps its
                # configuration; dropping it from the allocation would only stall it).
                if est[c] > acc_now or self.running[v]:
                    result = (float(est[c]) - penalty, c, icfg)
            elif self.running[v]:
                # It cannot finish at this share: it progresses, but gains nothing in the
                # window unless a later decision gives it more.
                result = (acc_now - penalty, int(s.job_cfg[v]), icfg)
        self.cache[key] = result
        return result

    def _inference_now(self, v: int, iq: int) -> tuple[int, float, bool]:
        """PickConfigs' inference configuration of stream ``v`` on ``iq`` quanta with the
        deployed model, the accuracy it delivers, and whether one qualifies."""
        hit = self._now.get((v, iq))
        if hit is None:
            cfg, f, ok = self._pick(v, iq * self.s.quantum, self._reaches_a_min(v, False))
            hit = self._now[v, iq] = (int(cfg), float(self.s.model_acc[v] * f), bool(ok))
        return hit

    def _job_row(self, v: int, rq: int) -> tuple[np.ndarray, np.ndarray, bool]:
        """:meth:`_job_time` of stream ``v`` at ``rq`` quanta, and whether any configuration
        finishes in time. One share at a time: an array of shares can round the share curve's
        power differently in the last bit."""
        hit = self._jobs.get((v, rq))
        if hit is None:
            dur, ok = self._job_time(v, rq)
            hit = self._jobs[v, rq] = (dur, ok, bool(ok.any()))
        return hit

    def _after_job(self, v: int, share: float) -> np.ndarray:
        """(C,) the delivered factor of stream ``v``'s inference on ``share`` GPUs after each
        configuration's job (PickConfigs with the model it leaves)."""
        hit = self._after.get((v, share))
        if hit is None:
            hit = self._after[v, share] = self._pick(v, share, self._reaches_a_min(v, True))[1]
        return hit

    def _pick(
        self, v: int, share: float, reaches: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:func:`best_inference` for stream ``v`` on ``share`` GPUs with one model (``reaches``
        (L,)) or one per retraining configuration ((C, L)): the share a configuration needs and
        what it delivers are the stream's whichever model serves, so they are computed once."""
        return pick_inference(self.s.infer_share[v], self.s.infer_factor, share, reaches)

    def _reaches_a_min(self, v: int, retrained: bool) -> np.ndarray:
        """Whether each inference configuration of stream ``v`` reaches a_MIN with the
        deployed model ((L,)) or with the model each configuration's job leaves ((C, L),
        :meth:`_post`)."""
        hit = self._reach.get((v, retrained))
        if hit is None:
            s = self.s
            acc = self._post(v)[:, None] if retrained else s.model_acc[v]
            hit = self._reach[v, retrained] = acc * s.infer_factor >= s.a_min
        return hit

    def _job_time(self, v: int, rq: int | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(C,) seconds each configuration's job of stream ``v`` takes at ``rq`` quanta (the
        time left where it cannot finish), and whether it finishes within the window (Eq. 1's
        first constraint); GPU-time rescaled to the share with the simulator's curve. With an
        array of ``rq``, one row per entry: (len(rq), C)."""
        s = self.s
        speed = share_speedup(np.asarray(rq) * s.quantum, s.share_alpha, s.multi_gpu_efficiency)
        dur = self.work[v] / (speed[..., None] if speed.ndim else float(speed))
        ok = dur <= s.time_left_s
        return np.where(ok, dur, s.time_left_s), ok

    def _post(self, v: int) -> np.ndarray:
        """(C,) stream ``v``'s accuracy after each configuration's job: the retrained model is
        served only where it beats the deployed one."""
        hit = self._posts.get(v)
        if hit is None:
            hit = self._posts[v] = np.maximum(self.post[v], self.s.model_acc[v])
        return hit

    def grid(self, v: int, n_quanta: int) -> np.ndarray:
        """:meth:`best`'s score of stream ``v`` for every split at once: ``out[rq, iq]`` for
        ``rq + iq <= n_quanta`` (``-inf`` elsewhere). The same rules (:meth:`_job_time`,
        :meth:`_post`, :func:`_window_accuracy`); the share after a job ends is taken as
        ``(rq + iq)`` quanta where :meth:`best` adds the two shares, so the two agree to
        rounding (``tests/baselines/test_ekya_exact.py``)."""
        s, q = self.s, self.s.quantum
        k = np.arange(n_quanta + 1)
        needed = np.broadcast_to(s.infer_share[v], (k.size, s.infer_share.shape[1]))
        _, f_now, ok_now = best_inference(s.model_acc[v], needed, s.infer_factor, k * q, s.a_min)
        acc_now = s.model_acc[v] * f_now
        penalty = np.where(ok_now, 0.0, 1.0)
        # Every split first scores its inference alone: the retraining share buys nothing
        # unless a job gains from it (rows rq, columns iq).
        idle = acc_now - penalty
        out = np.where(k[:, None] + k[None, :] <= n_quanta, idle[None, :], -np.inf)
        t_left = s.time_left_s
        post = self._post(v)  # (C,)
        if not (self.can_train[v] and t_left > 0):
            return out
        after = np.empty((post.shape[0], k.size))  # after[c, k]: delivered with k quanta
        for c, acc in enumerate(post):
            after[c] = best_inference(acc, needed, s.infer_factor, k * q, s.a_min)[1]
        dur, ok = self._job_time(v, k[1:])  # (n_quanta, C): row rq - 1
        for rq in np.flatnonzero(ok.any(axis=1)) + 1:  # shares at which some job ends in time
            n_i = n_quanta + 1 - rq
            c = np.flatnonzero(ok[rq - 1])  # the configurations that do
            now = acc_now[:n_i]
            d, f_after = dur[rq - 1, c, None], after[c, rq : rq + n_i]
            top = _window_accuracy(d, True, now, post[c, None], f_after, t_left).max(0)
            keep = np.ones(n_i, dtype=bool) if self.running[v] else top > now
            out[rq, :n_i] = np.where(keep, top - penalty[:n_i], idle[:n_i])
        return out


def _window_accuracy(
    dur: np.ndarray,
    ok: np.ndarray | bool,
    now: float | np.ndarray,
    post: np.ndarray,
    after: np.ndarray,
    t_left: float,
) -> np.ndarray:
    """EstimateAccuracy over the time left ``t_left``: accuracy ``now`` until the job ends after
    ``dur``, then ``post * after`` (the delivered factor with the job's share on inference);
    ``-inf`` for a configuration that does not finish (``ok`` false)."""
    return np.where(ok, (dur * now + (t_left - dur) * post * after) / t_left, -np.inf)


def fair_allocation(
    n_quanta: int,
    jobs: list[tuple[int, int]],
    floors: dict[tuple[int, int], int] | None = None,
) -> dict[tuple[int, int], int]:
    """Equal quanta per job, raised to each job's floor (water-filling).

    Every job gets ``max(floor, level)`` with the highest level that fits; the quanta left
    over go one each to the jobs at that level (inference jobs first, then by stream). With
    no floor above the equal share this is the plain equal split.

    Args:
        n_quanta: Quanta to hand out.
        jobs: ``(stream, kind)`` pairs, kind 0 = inference, 1 = retraining.
        floors: Minimum quanta per job (default 0); they must fit in ``n_quanta``.
    """
    lo = np.array([(floors or {}).get(j, 0) for j in jobs], dtype=np.int64)
    if lo.sum() > n_quanta:
        raise ValueError(f"floors need {int(lo.sum())} quanta, only {n_quanta} available")
    level = _water_level([int(x) for x in lo], int(n_quanta))
    quanta = np.maximum(lo, level)
    extra = n_quanta - int(quanta.sum())
    order = sorted(range(len(jobs)), key=lambda j: (jobs[j][1], jobs[j][0]))
    for j in [j for j in order if quanta[j] == level][:extra]:
        quanta[j] += 1
    return {job: int(q) for job, q in zip(jobs, quanta, strict=True)}


def _water_level(floors: list[int], n_quanta: int) -> int:
    """The water level of :func:`fair_allocation`: the largest ``level >= 0`` with
    ``sum(max(floor, level)) <= n_quanta`` (0 where even level 1 does not fit).

    The level is what raising it one quantum at a time from 0 reaches (the sum is
    nondecreasing in the level), found by bisection in ``O(jobs * log n_quanta)`` exact
    integer steps instead of ``n_quanta / jobs`` of them: a fine quantum on many GPUs makes
    ``n_quanta`` tens of millions.
    """

    def need(level: int) -> int:
        return sum(max(f, level) for f in floors)

    # Every job holds at least the level, so a level above n_quanta never fits (no jobs:
    # any level fits, and which one does not matter).
    low, high = 0, max(n_quanta, 0)
    while low < high:
        mid = (low + high + 1) // 2  # >= 1
        if need(mid) <= n_quanta:
            low = mid
        else:
            high = mid - 1
    return low


def _quanta(share: np.ndarray | float, quantum: float) -> np.ndarray:
    """Fewest quanta whose share covers ``share``."""
    return np.ceil(np.asarray(share, dtype=float) / quantum - 1e-9).astype(np.int64)


@dataclass(frozen=True)
class ThiefFloors:
    """Minimum quanta per job that the thief never steals below (see :func:`thief_floors`).

    Attributes:
        infer: (V,) floor of each inference job.
        train: (V,) floor of each retraining job (positive only for jobs in flight).
        a_min_met: (V,) the inference floor reaches a_MIN with some configuration.
        let_go: (V,) jobs in flight that cannot finish in the window: no share, no floor.
    """

    infer: np.ndarray
    train: np.ndarray
    a_min_met: np.ndarray
    let_go: np.ndarray


def thief_floors(snap: ContinualSnapshot, est: StreamEstimator, n_quanta: int) -> ThiefFloors:
    """The thief's per-job floors, in quanta, for one decision.

    In priority order, while the GPUs last:

    1. Every inference job keeps the share of its cheapest configuration (the live stream is
       always served; if even that does not fit, the quanta are split evenly).
    2. Inference jobs are raised to the share of their cheapest configuration whose accuracy
       with the deployed model reaches a_MIN, cheapest raise first (this maximises the
       streams that meet a_MIN when not all can; when all can, all do). A stream whose model
       is too poor for any configuration to reach a_MIN keeps the floor of rule 1.
    3. Each retraining job in flight keeps the fewest quanta that finish it within the
       window (Eq. 1's first constraint), smallest first. A job that cannot finish with the
       quanta left is let go: no floor, excluded from the thief's jobs, so it gets no share
       and is dropped when the window ends.

    Args:
        snap: The snapshot the thief decides on.
        est: Its estimator (the work left of each job in flight).
        n_quanta: Quanta of GPU in total.
    """
    n, q = snap.streams, snap.quantum
    needed = np.atleast_2d(snap.infer_share)  # (V, L)
    keep = np.maximum(1, _quanta(needed.min(axis=1), q))
    reach = snap.model_acc[:, None] * snap.infer_factor[None, :] >= snap.a_min
    need_min = np.where(reach, needed, np.inf).min(axis=1)
    reach_any = reach.any(axis=1)
    amin = np.where(reach_any, np.maximum(keep, _quanta(np.where(reach_any, need_min, 0), q)), -1)
    met = np.zeros(n, dtype=bool)
    if keep.sum() > n_quanta:
        infer = np.full(n, n_quanta // n, dtype=np.int64)
    else:
        infer = keep.copy()
        free = n_quanta - int(infer.sum())
        raise_by = np.where(reach_any, amin - keep, np.iinfo(np.int64).max)
        for v in np.argsort(raise_by, kind="stable"):
            if not reach_any[v] or raise_by[v] > free:
                break
            infer[v], free, met[v] = amin[v], free - int(raise_by[v]), True
    free = n_quanta - int(infer.sum())
    train = np.zeros(n, dtype=np.int64)
    let_go = np.zeros(n, dtype=bool)
    running = np.flatnonzero(est.running & ~snap.retrained)
    if running.size:
        if snap.time_left_s > 0 and free > 0:
            grid = np.arange(1, free + 1)
            speed = share_speedup(grid * q, snap.share_alpha, snap.multi_gpu_efficiency)
            work = est.work[running, snap.job_cfg[running]]  # (J,)
            fits = work[:, None] / speed[None, :] <= snap.time_left_s  # (J, free)
            need = np.where(fits.any(axis=1), fits.argmax(axis=1) + 1, free + 1)
        else:
            need = np.full(running.size, free + 1)
        for j in np.argsort(need, kind="stable"):
            v = running[j]
            if need[j] <= free:
                train[v], free = need[j], free - int(need[j])
            else:
                let_go[v] = True
    return ThiefFloors(infer=infer, train=train, a_min_met=met, let_go=let_go)


def thief_schedule(
    snap: ContinualSnapshot,
    delta: float = 0.1,
    oracle: bool = False,
    configs: Sequence[int] | None = None,
    partial: bool = True,
    work: list[int] | None = None,
) -> tuple[Allocation, float]:
    """Algorithm 1 (thief scheduler) on a snapshot.

    Args:
        snap: Structured state of a ``ContinualLearning`` environment.
        delta: Stealing increment Delta in GPUs (a multiple of the environment's quantum).
        oracle: Score with the true profiles instead of the micro-profiler's estimates.
        configs: Restrict the retraining configurations (Ekya-FixedConfig).
        partial: A victim holding less than Delta above its floor gives up what it holds
            above it (False: the literal Algorithm 1, which stops stealing from it).
        work: If given, the number of scores the decision asked for is appended (at most
            :func:`thief_work_bound`).

    Returns:
        The allocation (on the quantum grid) and its estimated mean accuracy.
    """
    # Checked against all the GPUs, as the policy checks Delta when it is made: the capacity
    # (less the micro-profiler's share) varies by window and must not refuse it mid-episode.
    step = _steal_steps(delta, snap.quantum, float(snap.gpus))
    est = StreamEstimator(snap, oracle, configs)
    n = snap.streams
    INF, TRAIN = 0, 1
    n_quanta = int(np.floor(snap.capacity / snap.quantum + 1e-9))
    fl = thief_floors(snap, est, n_quanta)
    trains = [(v, TRAIN) for v in range(n) if est.can_train[v] and not fl.let_go[v]]
    jobs = [(v, INF) for v in range(n)] + trains
    floor = {(v, INF): int(fl.infer[v]) for v in range(n)}
    floor.update({(v, TRAIN): int(fl.train[v]) for v, _ in trains})
    best_alloc = fair_allocation(n_quanta, jobs, floor)

    def stream_score(alloc: dict[tuple[int, int], int], v: int) -> float:
        return est.best(v, alloc.get((v, TRAIN), 0), alloc[(v, INF)])[0]

    scores = np.array([stream_score(best_alloc, v) for v in range(n)])
    best_total = float(scores.sum())
    for thief in jobs:
        for victim in jobs:
            if thief == victim:
                continue
            temp = dict(best_alloc)
            while True:
                # Steal Delta, or (partial=True) what the victim has above its floor when that
                # is less: taken literally, a victim holding less than Delta (e.g. 20 jobs
                # fairly sharing one GPU at Delta = 0.1) could never be robbed. A steal below
                # the floor is infeasible and ends the stealing, as a negative one does.
                spare = temp[victim] - floor[victim]
                take = min(step, spare) if partial else step
                if take <= 0 or spare < take:
                    break
                temp[victim] -= take
                temp[thief] += take
                touched = {thief[0], victim[0]}
                new = {v: stream_score(temp, v) for v in touched}
                total = best_total + sum(new[v] - scores[v] for v in touched)
                if total > best_total + 1e-12:
                    best_alloc = dict(temp)
                    best_total = total
                    for v, val in new.items():
                        scores[v] = val
                else:
                    break
    split = [(best_alloc.get((v, TRAIN), 0), best_alloc[(v, INF)]) for v in range(n)]
    if work is not None:
        work.append(est.calls)
    return _allocation(snap, est, split), best_total / n


def _allocation(
    snap: ContinualSnapshot, est: StreamEstimator, split: list[tuple[int, int]]
) -> Allocation:
    """The allocation of a split ``[(retraining quanta, inference quanta)]`` per stream, with
    PickConfigs' configurations; a retraining share that no configuration gains from is not
    handed out."""
    alloc = Allocation.idle(snap.streams)
    for v, (rq, iq) in enumerate(split):
        _, rcfg, icfg = est.best(v, rq, iq)
        alloc.retrain_cfg[v] = rcfg
        alloc.infer_cfg[v] = icfg
        alloc.share_retrain[v] = rq * snap.quantum if rcfg >= 0 else 0.0
        alloc.share_infer[v] = iq * snap.quantum
        if rcfg < 0 and snap.job_cfg[v] >= 0:
            # A job let go keeps its configuration at no share (what the environment does
            # with it anyway): "none" is outside the mask of a stream with a job in flight.
            alloc.retrain_cfg[v] = snap.job_cfg[v]
    return alloc


#: The exact search's largest problem, in quanta of GPU (8 GPUs at the bundled scenarios'
#: 0.01): its work grows with the square of the quanta per stream.
MAX_EXACT_QUANTA = 800


def _exact_quanta(gpus: float, quantum: float) -> int:
    """Quanta of GPU in ``gpus``, checked to be at most :data:`MAX_EXACT_QUANTA`."""
    n_quanta = int(np.floor(gpus / quantum + 1e-9))
    if n_quanta > MAX_EXACT_QUANTA:
        raise ValueError(
            f"the exact search takes at most {MAX_EXACT_QUANTA} quanta of GPU; {gpus:g} GPUs "
            f"in quanta of {quantum:g} are {n_quanta}: use a coarser hardware.share_quantum"
        )
    return n_quanta


def exact_schedule(
    snap: ContinualSnapshot,
    oracle: bool = False,
    configs: Sequence[int] | None = None,
) -> tuple[Allocation, float]:
    """The best split of the GPUs for Algorithm 1's own objective, searched exactly.

    The thief's estimated window accuracy is a sum over streams of a score that depends only
    on each stream's two shares (:meth:`StreamEstimator.best`), so its maximum over every
    split of the quanta that respects the thief's floors (:func:`thief_floors`) is a
    multiple-choice knapsack, solved here by dynamic programming over the quanta: per stream
    the best score at each total share (:meth:`StreamEstimator.grid`), then the streams one
    after another. The result is never below what :func:`thief_schedule` estimates for the
    same snapshot (the greedy steals search the same set). It is a reference: how much of
    its own objective the thief's search leaves, and (with ``oracle``) how much any split of
    a window can gain with the true profiles.

    Args:
        snap: Structured state of a ``ContinualLearning`` environment.
        oracle: Score with the true profiles instead of the micro-profiler's estimates.
        configs: Restrict the retraining configurations (an empty list: inference only).

    Returns:
        The allocation and its estimated mean accuracy.

    Raises:
        ValueError: The GPUs hold more than :data:`MAX_EXACT_QUANTA` quanta.
    """
    n_quanta = _exact_quanta(snap.capacity, snap.quantum)
    est = StreamEstimator(snap, oracle, configs)
    fl = thief_floors(snap, est, n_quanta)
    k = np.arange(n_quanta + 1)
    below = k[:, None] - k[None, :]  # [k, j]: k - j, the quanta left when j are taken
    best_at = np.full((snap.streams, n_quanta + 1), -np.inf)  # per stream and total share
    train_at = np.zeros((snap.streams, n_quanta + 1), dtype=np.int64)
    for v in range(snap.streams):
        scores = est.grid(v, n_quanta)
        top = 0 if fl.let_go[v] else n_quanta
        rq = np.arange(int(fl.train[v]), top + 1)
        if rq.size == 0:
            continue
        # by_total[r, t]: the score with rq[r] quanta retraining and t in all (-inf where the
        # inference share t - rq[r] is below its floor)
        iq = k[None, :] - rq[:, None]
        fits = iq >= int(fl.infer[v])
        by_total = np.where(fits, scores[rq[:, None], np.where(fits, iq, 0)], -np.inf)
        best_at[v] = by_total.max(axis=0)
        found = np.isfinite(best_at[v])  # the smaller retraining share wins ties (argmax)
        train_at[v] = np.where(found, rq[by_total.argmax(axis=0)], 0)
    # total[k]: the best sum over the streams so far with k quanta; pick[v, k]: stream v's
    total = np.full(n_quanta + 1, -np.inf)
    total[0] = 0.0
    pick = np.zeros((snap.streams, n_quanta + 1), dtype=np.int64)
    for v in range(snap.streams):
        # options[k, j]: stream v takes j of k quanta, the streams before it the rest
        options = np.where(below >= 0, total[np.maximum(below, 0)] + best_at[v][None, :], -np.inf)
        pick[v] = options.argmax(axis=1)
        total = options.max(axis=1)
    left = n_quanta if np.isfinite(total[n_quanta]) else int(np.argmax(total))
    value = float(total[left]) / snap.streams
    split = [(0, 0)] * snap.streams
    for v in range(snap.streams - 1, -1, -1):
        share = int(pick[v, left])
        split[v] = (int(train_at[v, share]), share - int(train_at[v, share]))
        left -= share
    return _allocation(snap, est, split), value


def _grid(share: np.ndarray, quantum: float) -> np.ndarray:
    return np.floor(np.asarray(share) / quantum + 1e-9) * quantum


def uniform_allocation(snap: ContinualSnapshot, config: int, infer_fraction: float) -> Allocation:
    """Uniform scheduler: equal GPUs per stream, a static split, a fixed configuration.

    Ekya §5: a fixed retraining configuration and a static retraining/inference allocation.
    A stream that is not retraining (already retrained this window, or its labels do not
    exist yet) gives its whole share to inference (the authors' simulator hands a finished
    job's GPUs back to the inference jobs, ``fair_reallocator`` in
    ``ekya/simulation/schedulers.py``). The inference configuration is the frame rate the
    share sustains at nominal demand (:func:`~edgegym.workload.continual.keep_up_config`,
    the authors' simulator's rule), blind to the window's demand, the model's accuracy and
    a_MIN, which only Ekya's PickConfigs weighs. The GPUs split are those the micro-profiler
    leaves.
    """
    n = snap.streams
    per_stream = snap.capacity / n
    training = (snap.job_cfg >= 0) | snap.can_retrain
    share_i = _grid(np.where(training, per_stream * infer_fraction, per_stream), snap.quantum)
    share_r = _grid(np.where(training, per_stream - share_i, 0.0), snap.quantum)
    icfg = keep_up_config(snap.nominal_infer_share, snap.infer_factor, share_i)
    return Allocation(
        retrain_cfg=np.where(training, np.where(snap.job_cfg >= 0, snap.job_cfg, config), -1),
        infer_cfg=icfg,
        share_retrain=share_r,
        share_infer=share_i,
    )


class _SnapshotPolicy(Policy):
    def act(self) -> np.ndarray:
        return self.unwrapped.encode_action(self.decide(self.unwrapped.sim_state()))

    def decide(self, snap: ContinualSnapshot) -> Allocation:
        raise NotImplementedError


#: How Ekya evaluates its baselines (§5-6): the uniform baselines and no-retraining use fixed
#: configurations, so they run no micro-profiler (no GPU share held for profiling) and load no
#: checkpoints (checkpointing is Ekya's, arXiv §5).
WITHOUT_PROFILER: dict[str, Any] = {"profiler.cost_s": 0.0, "profiler.checkpoint_epochs": 0}


class _WithoutProfiler(_SnapshotPolicy):
    @classmethod
    def paper_setup(cls, scenario: str, given: Mapping[str, Any], **params: Any) -> dict[str, Any]:
        """No micro-profiler and no checkpoints (:data:`WITHOUT_PROFILER`)."""
        return dict(WITHOUT_PROFILER)


#: Ekya's stealing increment Delta, in GPUs: "a tiny quantum ... in multiples of delta"
#: (§4.2); 0.1 GPUs here (one quantum of the bundled scenarios).
PAPER_DELTA = 0.1


#: At most this many Delta steps over the GPUs (the paper's finest: 16 GPUs at Delta 0.05 is
#: 320): the thief's work per decision grows with their number times the square of the jobs.
MAX_STEPS = 2000


def thief_work_bound(streams: int, n_quanta: int, step: int) -> int:
    """Scores the thief asks for in one decision, at most: every stream once, then for each of
    the at most ``J (J - 1)`` (thief, victim) pairs of the ``J <= 2 * streams`` jobs, two per
    steal and at most ``ceil(n_quanta / step) + 1`` steals (each moves Delta, or what is left
    above the victim's floor, and the loop stops at the first that does not improve), then
    every stream once more."""
    jobs = 2 * streams
    return 2 * streams + 2 * jobs * (jobs - 1) * (-(-n_quanta // step) + 1)


def steal_increment(env: gym.Env, delta: float | None) -> float:
    """The thief's Delta on ``env``: ``delta``, checked to be a positive multiple of the
    scenario's share quantum and at most its GPUs, or (``None``) the multiple nearest
    :data:`PAPER_DELTA`.

    Raises:
        ValueError: ``delta`` is not a positive multiple of the quantum, more than the GPUs, or
            so small that the GPUs hold more than :data:`MAX_STEPS` steps of it.
    """
    spec = env.unwrapped.spec_
    quantum = float(spec.quantum)
    if delta is None:
        return max(1, round(PAPER_DELTA / quantum)) * quantum
    _steal_steps(float(delta), quantum, float(spec.gpus))
    return float(delta)


def _steal_steps(delta: float, quantum: float, gpus: float) -> int:
    """Delta in quanta, checked: a positive multiple of the quantum, at most the GPUs (a steal
    never moves more than they hold), and at most :data:`MAX_STEPS` of it over the GPUs
    (refused before any work)."""
    if not (math.isfinite(delta) and delta > 0):  # before the division: no inf or NaN steps
        raise ValueError(f"delta={delta} must be a positive multiple of the quantum {quantum}")
    if delta > gpus + 1e-9:
        raise ValueError(
            f"delta={delta:g} is out of range (allowed: a multiple of the quantum {quantum:g} "
            f"in (0, {gpus:g}], the scenario's GPUs: a steal moves at most what they hold)"
        )
    step = int(round(delta / quantum))
    if step < 1 or abs(step * quantum - delta) > 1e-9:
        raise ValueError(f"delta={delta} must be a positive multiple of the quantum {quantum}")
    if gpus / delta > MAX_STEPS + 1e-9:
        raise ValueError(
            f"delta={delta:g} gives {gpus / delta:,.0f} steps over {gpus:g} GPUs; at most "
            f"{MAX_STEPS} (the thief's work grows with them): use delta >= {gpus / MAX_STEPS:g}"
        )
    return step


class ThiefPolicy(_SnapshotPolicy):
    """Ekya's thief scheduler, re-run at every decision epoch.

    Args:
        env: A ``ContinualLearning`` environment.
        delta: Stealing increment Delta in GPUs, a multiple of the scenario's share quantum
            and at most its GPUs (default: the multiple nearest :data:`PAPER_DELTA`, at least
            one quantum).
        oracle: Decide from the true profiles rather than the micro-profiler's estimates.
        partial: Let a victim holding less than Delta above its floor give up what it holds
            (default); False runs Algorithm 1 literally. Both keep the floors of
            :func:`thief_floors` (a_MIN, jobs in flight finish in their window).
        exact: Search Algorithm 1's objective exactly instead of by stealing
            (:func:`exact_schedule`, a reference; Delta and ``partial`` then do not apply).
        retrain: False: inference only (no retraining configuration to choose from), to see
            how much of the scheduler's accuracy is its split of inference.
    """

    name = "thief"

    def __init__(
        self,
        env: gym.Env,
        delta: float | None = None,
        oracle: bool = False,
        partial: bool = True,
        exact: bool = False,
        retrain: bool = True,
    ) -> None:
        super().__init__(env)
        self.delta = steal_increment(env, delta)
        self.oracle = bool(oracle)
        self.partial = bool(partial)
        self.exact = bool(exact)
        self.configs: list[int] | None = None if retrain else []
        if self.exact:  # refused before any episode runs
            _exact_quanta(float(env.unwrapped.spec_.gpus), float(env.unwrapped.spec_.quantum))

    def decide(self, snap: ContinualSnapshot) -> Allocation:
        """Run Algorithm 1 (or, with ``exact``, its exact search)."""
        if self.exact:
            return exact_schedule(snap, self.oracle, self.configs)[0]
        return thief_schedule(snap, self.delta, self.oracle, self.configs, self.partial)[0]


class FixedConfigPolicy(ThiefPolicy):
    """Ekya-FixedConfig: the thief's allocation with the uniform baseline's configuration."""

    name = "ekya-fixedconfig"

    @classmethod
    def paper_setup(cls, scenario: str, given: Mapping[str, Any], **params: Any) -> dict[str, Any]:
        """It profiles its one configuration only: the profiling cost is that configuration's
        share of the scenario's, with nothing to prune."""
        from edgegym.families.continual.params import ContinualSpec
        from edgegym.scenarios import load

        config = params.get("config", 1)
        if config not in (1, 2):  # the constructor says what is wrong
            return {}
        spec = ContinualSpec.from_scenario(load(scenario, **given))
        cfg = spec.uniform_configs[config - 1]
        return {
            "profiler.cost_s": spec.profile_cost_s * float(spec.profile_weight[cfg]),
            "profiler.prune_every": 0,
        }

    def __init__(
        self, env: gym.Env, delta: float | None = None, oracle: bool = False, config: int = 1
    ) -> None:
        super().__init__(env, delta, oracle)
        if config not in (1, 2):
            raise ValueError(
                f"config must be 1 or 2 (the uniform Config 1 / Config 2), got {config}"
            )
        self.config = config

    def decide(self, snap: ContinualSnapshot) -> Allocation:
        """Thief with the retraining configurations restricted to one."""
        cfg = snap.uniform_configs[self.config - 1]
        return thief_schedule(snap, self.delta, self.oracle, configs=[cfg], partial=self.partial)[0]


def _infer_fraction(infer: float) -> float:
    """The uniform split's inference fraction (``uniform`` and ``ekya-fixedres``), checked.

    Raises:
        ValueError: ``infer`` is not a fraction in [0, 1].
    """
    if not 0.0 <= infer <= 1.0:  # NaN fails too
        raise ValueError(f"infer must be a fraction in [0, 1], got {infer}")
    return float(infer)


class UniformPolicy(_WithoutProfiler):
    """Ekya's uniform baseline: Config 1 or 2, a fixed inference share (30/50/90%).

    Args:
        env: A ``ContinualLearning`` environment.
        config: 1 ("high", the more accurate Pareto point) or 2 ("low").
        infer: Fraction of each stream's GPUs given to inference while it retrains.
    """

    name = "uniform"

    def __init__(self, env: gym.Env, config: int = 1, infer: float = 0.5) -> None:
        super().__init__(env)
        if config not in (1, 2):
            raise ValueError(f"config must be 1 or 2, got {config}")
        self.config, self.infer = int(config), _infer_fraction(infer)

    def decide(self, snap: ContinualSnapshot) -> Allocation:
        """The fixed split."""
        return uniform_allocation(snap, snap.uniform_configs[self.config - 1], self.infer)


class FixedResPolicy(_SnapshotPolicy):
    """Ekya-FixedRes: the uniform baseline's resource split, configurations by PickConfigs.

    Args:
        env: A ``ContinualLearning`` environment.
        infer: Fraction in [0, 1] of each stream's GPUs given to inference while it retrains
            (as :class:`UniformPolicy`).
        oracle: Choose configurations from the true profiles rather than the estimates.
    """

    name = "ekya-fixedres"

    def __init__(self, env: gym.Env, infer: float = 0.5, oracle: bool = False) -> None:
        super().__init__(env)
        self.infer, self.oracle = _infer_fraction(infer), bool(oracle)

    def decide(self, snap: ContinualSnapshot) -> Allocation:
        """Uniform shares; PickConfigs chooses retraining and inference configurations."""
        alloc = uniform_allocation(snap, 0, self.infer)
        est = StreamEstimator(snap, self.oracle)
        for v in range(snap.streams):
            rq = int(round(alloc.share_retrain[v] / snap.quantum))
            iq = int(round(alloc.share_infer[v] / snap.quantum))
            _, rcfg, icfg = est.best(v, rq, iq)
            alloc.retrain_cfg[v] = rcfg
            alloc.infer_cfg[v] = icfg
            if rcfg < 0:
                alloc.share_retrain[v] = 0.0
        return alloc


class NoRetrainPolicy(_WithoutProfiler):
    """Never retrain; GPUs split evenly among the inference jobs."""

    name = "no-retrain"

    def decide(self, snap: ContinualSnapshot) -> Allocation:
        """Even inference shares, each at the frame rate its share sustains (as uniform)."""
        share = _grid(np.full(snap.streams, snap.capacity / snap.streams), snap.quantum)
        icfg = keep_up_config(snap.nominal_infer_share, snap.infer_factor, share)
        alloc = Allocation.idle(snap.streams)
        alloc.infer_cfg = icfg
        alloc.share_infer = share
        return alloc

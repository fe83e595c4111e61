"""Pure batched dynamics of the MIG reconfiguration family (``edgegym/MIGReconfig-v0``).

The :class:`~edgegym.core.dynamics.Dynamics` of MIGRator's problem (DESIGN §6, §8): the scenario's
:class:`MIGSpec`, immutable :class:`MIGParams` (the spec, the continual-learning profile and
per-signature lookup tables precomputed when an environment is built), a :class:`MIGState` of
arrays with a leading batch axis ``N`` and :class:`MIGDynamics`, whose functions step ``N``
environments in lockstep numpy. The single environment
(:class:`edgegym.families.mig.env.MIGReconfigEnv`) is the batch of one; the vector environment
(:mod:`edgegym.families.mig.vector`) the batch of ``N``.

A step (one decision epoch of ``basis_s`` seconds) does, for every env:

* **Projection**: an action that the mask forbids becomes the current allocation with the
  retraining instances no longer needed released (the lowest-index valid signature at the
  first decision).
* **Reconfiguration**: the signature is realised on the layout that keeps the most (placement,
  task) pairs (:meth:`~edgegym.hardware.migalloc.AllocationCatalogue.realise`), memoised per
  (signature, allocation, running jobs) in the params, the envs the memo misses realised as one
  batch (:meth:`~edgegym.hardware.migalloc.AllocationCatalogue.realise_batch`). Its cost
  follows the scenario's ``overhead.rule`` (:func:`~edgegym.families.mig.reconfig.reconfigure`,
  in :mod:`edgegym.families.mig.reconfig` with the rule of MPS shares): ``eq10`` (default,
  MIGRator Eq. 10-11) takes a task's whole capacity down for its Psi when its instance or GPC
  count changes, Psi being the mean overhead measured over the task's reconfigurations in the
  last window; ``per-instance`` makes each instance that gets a new task unavailable for its
  own destroy/create/library/model-load overhead. Either way each reconfiguration's overhead
  is *measured* by the per-instance components (earlier with ``preinit``, §4.2) and feeds Psi.
* **Execution** in stretches of constant rates, split at second boundaries, instances becoming
  ready and retraining completions: the request queues of
  :class:`edgegym.families.mig.serving.MIGExecutor` and the retraining rules of
  :class:`tests.reference.engine.Engine`, batched (the loop runs until every env has reached its
  step's end; an env that already has only waits).
* **Accounting** into per-window counters, from which the step's Goodput and energy are
  differences of per-tenant sums, exactly as the engine's metrics give them.

The real backend (``backend="real"``) runs the same functions for its one env with its real
executor in place of the batched stretch (:meth:`MIGDynamics.stretch` and
:meth:`MIGDynamics.enter_window` are the seam; see :mod:`edgegym.families.mig.env`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from edgegym.core.dynamics import Record
from edgegym.families.mig.observation import HIGH, PER_TENANT
from edgegym.families.mig.params import (
    FIT_EPS,
    MIGParams,
    _mask_radix,
    slice_tree,
)
from edgegym.families.mig.reconfig import (
    Reconfiguration,
    cell_base,
    reconfigure,
    switch_shares,
)
from edgegym.families.mig.reward import TERMS
from edgegym.families.mig.serving import busy_from, fluid_queue
from edgegym.hardware.mig import MIG_MEMORY_SLICES
from edgegym.hardware.migalloc import ABSENT, IDLE
from edgegym.hardware.mps import interfered

_EPS = 1e-9

# Retraining job status per tenant.
PENDING, RUNNING, DONE = 0, 1, 2


@dataclass
class MIGState:
    """N environments' state (leading axis N)."""

    time_s: np.ndarray  # (N,) simulated seconds since the episode started
    window: np.ndarray  # (N,) int64 current retraining window (K: episode over)
    step_in_window: np.ndarray  # (N,) int64 decision index inside the window
    signature: np.ndarray  # (N,) int64 current allocation signature (-1 before the first)
    arrivals: np.ndarray  # (N, M, T) requests arriving in each second
    recent_sum: np.ndarray  # (N, M, T + 1) arrivals of the 10 s before each second, summed
    norm: np.ndarray  # (N,) mean requests per decision of the episode (reward scale)
    task: np.ndarray  # (N, P) int64 task per placement (IDLE -1, ABSENT -2)
    ready_s: np.ndarray  # (N, P) time each instance finishes its reconfiguration
    since_s: np.ndarray  # (N, P) time each placement got its task (or became free)
    retire_s: np.ndarray  # (N, P) when an old MPS share still serving ends (inf: none)
    backlog: np.ndarray  # (N, M) requests queued per tenant (fluid)
    slice_free_since: np.ndarray  # (N, 8) time each memory slice became free (inf: busy)
    model_acc: np.ndarray  # (N, M) accuracy of the deployed model on the window's data
    running: np.ndarray  # (N, M) bool: a retraining job is in flight
    job_left: np.ndarray  # (N, M) GPU-seconds of retraining work left
    job_total: np.ndarray  # (N, M) GPU-seconds of the whole job
    job_target: np.ndarray  # (N, M) accuracy the model has when the job finishes
    retrained: np.ndarray  # (N, M) bool: a job finished in this window
    share_retrain: np.ndarray  # (N, M) GPU fraction the retraining job was given
    requests: np.ndarray  # (N, M, K) requests arrived per window
    served_slo: np.ndarray  # (N, M, K) requests served within the SLO
    goodput: np.ndarray  # (N, M, K) requests in SLO and answered correctly
    correct: np.ndarray  # (N, M, K) requests answered correctly
    acc_integral: np.ndarray  # (N, M, K) accuracy-seconds of the deployed models
    energy_j: np.ndarray  # (N, K) joules per window
    retrain_gpu_s: np.ndarray  # (N, M) GPU-seconds given to retraining
    retrainings: np.ndarray  # (N, M) int64 jobs finished
    reconfigurations: np.ndarray  # (N,) int64 instances (re)configured
    downtime_s: np.ndarray  # (N,) instance-seconds made unavailable by reconfigurations
    psi_s: np.ndarray  # (N, 2M) Psi of each task: its mean measured overhead, last window
    overhead_sum: np.ndarray  # (N, 2M) measured overhead of the task's events, this window
    overhead_events: np.ndarray  # (N, 2M) int64 the task's reconfigurations, this window
    overhead_s: np.ndarray  # (N,) measured reconfiguration overhead, summed over events
    overhead_plain_s: np.ndarray  # (N,) the same without pre-initialisation
    reconfig_events: np.ndarray  # (N,) int64 task reconfigurations (MIGRator Eq. 11)
    mask: np.ndarray  # (N, S) bool valid signatures now (kept by initial and step)
    timeline: list[list[dict[str, Any]] | None]  # (N,) per-stretch records, None: not kept


@dataclass
class Stretch:
    """What one stretch of constant rates did, per env (the executor seam's result)."""

    dt: np.ndarray  # (N,) seconds
    active: np.ndarray  # (N, M) bool: a retraining job progressed
    finish: np.ndarray  # (N, M) seconds until each active job finishes (inf otherwise)
    work: np.ndarray  # (N, M) retraining GPU-seconds done
    requests: np.ndarray  # (N, M) requests arrived
    served: np.ndarray  # (N, M) requests served within the SLO
    energy_j: np.ndarray  # (N,) joules


def status_of(running: np.ndarray, retrained: np.ndarray) -> np.ndarray:
    """Retraining status (PENDING / RUNNING / DONE) of each tenant, any shape."""
    return np.where(running, RUNNING, np.where(retrained, DONE, PENDING))


def _rows(x: np.ndarray) -> np.ndarray:
    return np.arange(x.shape[0])


def _put(arr: np.ndarray, sel: slice | np.ndarray, value: np.ndarray) -> np.ndarray:
    """``arr`` with rows ``sel`` (all, or an index array) set to ``value``: ``value`` itself
    for all rows, else a copy (the state's arrays are replaced, never written in place)."""
    if isinstance(sel, slice):
        return value
    out = arr.copy()
    out[sel] = value
    return out


def _sum_last(x: np.ndarray) -> np.ndarray:
    """``x.sum(axis=-1)``, bit for bit, by adding columns where the last axis is short: numpy
    adds fewer than 8 values one after another from 0.0 (pairwise only from 8 on, where this
    calls ``sum``), and a reduction over a short axis costs far more per row than an add
    (``tests/envs/test_mig_vector.py`` checks the equality)."""
    n = x.shape[-1]
    if n >= 8 or n == 0 or x.dtype != np.float64:
        return x.sum(axis=-1)
    total = 0.0 + x[..., 0]
    for j in range(1, n):
        total += x[..., j]
    return total


def _running_total(x: np.ndarray) -> np.ndarray:
    """``np.cumsum(x, axis=-1)[..., -1]``, bit for bit: the values added one after another
    from the first, by columns (quicker where the last axis is short)."""
    if x.shape[-1] == 0 or x.dtype != np.float64:
        return np.cumsum(x, axis=-1)[..., -1]
    total = x[..., 0].copy()
    for j in range(1, x.shape[-1]):
        total += x[..., j]
    return total


def _min_last(x: np.ndarray) -> np.ndarray:
    """``x.min(axis=-1)`` (a minimum is exact in any order) by halving the last axis: quicker
    than a reduction where that axis is short."""
    while x.shape[-1] > 1:
        half = x.shape[-1] // 2
        y = np.minimum(x[..., :half], x[..., half : 2 * half])
        if x.shape[-1] % 2:
            np.minimum(y[..., 0], x[..., -1], out=y[..., 0])
        x = y
    return x[..., 0]


def _cells(arr: np.ndarray, rows: np.ndarray | slice, k: np.ndarray) -> np.ndarray:
    """``arr[rows, :, k]`` of an (N, M, X) array, (R, M), ``rows`` an index array or
    ``slice(None)`` (every row), by flat index when contiguous."""
    if not arr.flags.c_contiguous:
        return arr[_rows(arr) if isinstance(rows, slice) else rows, :, k]
    return arr.reshape(-1).take(cell_base(*arr.shape)[rows] + k[:, None])


def _add_cells(arr: np.ndarray, at: np.ndarray, value: np.ndarray) -> None:
    """``arr.flat[at] += value`` in place (``at`` holds no index twice)."""
    if arr.flags.c_contiguous:
        arr.reshape(-1)[at] += value
    else:
        arr.put(at, arr.take(at) + value)


def _retire(state: MIGState) -> None:
    """End the old MPS shares whose task's new process is ready (:func:`switch_shares`)."""
    done = state.retire_s <= state.time_s[:, None] + _EPS
    if done.any():
        state.task = np.where(done, ABSENT, state.task)
        state.retire_s = np.where(done, np.inf, state.retire_s)


class MIGDynamics:
    """The MIG family's :class:`~edgegym.core.dynamics.Dynamics` (pure batched functions).

    Public beyond the protocol, for its envs: :meth:`project` (the allocation an action
    applies), :meth:`charged_overhead`; and the real backend's two override points,
    :meth:`stretch` and :meth:`enter_window`. Everything else is private.
    """

    terms: tuple[str, ...] = TERMS

    # ------------------------------------------------------------------ start
    def initial(self, params: MIGParams, rngs: Sequence[np.random.Generator]) -> MIGState:
        """Fresh episodes; env ``i`` draws its arrival trace from ``rngs[i]`` only. The
        deployed models know the pre-training classes; window 0 brings new ones."""
        spec, prof = params.spec, params.profile
        n, m, t, k = len(rngs), spec.n_tenants, params.n_seconds, spec.windows
        p = len(spec.catalogue.placements)
        arrivals = np.zeros((n, m, t))
        for j, rng in enumerate(rngs):
            arrivals[j] = np.stack([proc.counts(t, 1.0, rng) for proc in spec.arrivals])
        cum = np.zeros((n, m, t + 1))
        np.cumsum(arrivals, axis=2, out=cum[:, :, 1:])  # integer counts: exact sums
        lo = np.maximum(np.arange(t + 1) - 10, 0)
        norm = np.array([max(float(a.sum()) / params.n_steps, 1e-9) for a in arrivals])
        state = MIGState(
            time_s=np.zeros(n),
            window=np.zeros(n, dtype=np.int64),
            step_in_window=np.zeros(n, dtype=np.int64),
            signature=np.full(n, -1, dtype=np.int64),
            arrivals=arrivals,
            recent_sum=cum - cum[:, :, lo],
            norm=norm,
            task=np.full((n, p), ABSENT, dtype=np.int64),
            ready_s=np.zeros((n, p)),
            since_s=np.zeros((n, p)),
            retire_s=np.full((n, p), np.inf),
            backlog=np.zeros((n, m)),
            slice_free_since=np.zeros((n, MIG_MEMORY_SLICES)),
            model_acc=np.repeat(prof.start_acc.astype(float)[None], n, axis=0),
            running=np.zeros((n, m), dtype=bool),
            job_left=np.zeros((n, m)),
            job_total=np.zeros((n, m)),
            job_target=np.zeros((n, m)),
            retrained=np.zeros((n, m), dtype=bool),
            share_retrain=np.zeros((n, m)),
            requests=np.zeros((n, m, k)),
            served_slo=np.zeros((n, m, k)),
            goodput=np.zeros((n, m, k)),
            correct=np.zeros((n, m, k)),
            acc_integral=np.zeros((n, m, k)),
            energy_j=np.zeros((n, k)),
            retrain_gpu_s=np.zeros((n, m)),
            retrainings=np.zeros((n, m), dtype=np.int64),
            reconfigurations=np.zeros(n, dtype=np.int64),
            downtime_s=np.zeros(n),
            psi_s=np.repeat(np.tile(spec.overhead_new_s, 2)[None], n, axis=0),
            overhead_sum=np.zeros((n, 2 * m)),
            overhead_events=np.zeros((n, 2 * m), dtype=np.int64),
            overhead_s=np.zeros(n),
            overhead_plain_s=np.zeros(n),
            reconfig_events=np.zeros(n, dtype=np.int64),
            mask=np.zeros((n, len(spec.catalogue)), dtype=bool),
            timeline=[None] * n,
        )
        state.mask = self._mask(params, state)
        return state

    def charged_overhead(self, params: MIGParams, state: MIGState) -> np.ndarray:
        """(N, 2M) seconds a reconfiguration of each task costs now: its Psi under ``eq10``,
        the new-instance overhead of its model under ``per-instance`` (the bound the mask
        uses for a retraining start)."""
        spec = params.spec
        if spec.overhead_rule == "eq10":
            return state.psi_s
        return np.broadcast_to(np.tile(spec.overhead_new_s, 2), state.psi_s.shape)

    # ------------------------------------------------------------------ masks
    def mask(self, params: MIGParams, state: MIGState) -> np.ndarray:
        """(N, S) bool: the signatures valid now (all of them once an episode has ended); see
        the env's docstring for the rules."""
        return state.mask

    def _mask(self, params: MIGParams, state: MIGState) -> np.ndarray:
        """(N, S) bool: the mask of every env, one memoised row per distinct key. A key says,
        per tenant, where its running job's instance is (it must stay) and which retraining
        instance sizes it may take now (:meth:`_mask_row` decodes it); an ended env's key
        is -1."""
        spec, prof = params.spec, params.profile
        n, m = state.time_s.shape[0], spec.n_tenants
        cat = spec.catalogue
        k = np.minimum(state.window, spec.windows - 1)
        time_left = state.window * spec.window_s + spec.window_s - state.time_s  # (N,)
        # Work of each job: what is left, or the whole job when it has not started.
        left = np.where(state.job_left > 0, state.job_left, prof.gpu_seconds[:, k, 0].T)
        ov = self.charged_overhead(params, state)[:, m:]  # (N, M) a retraining start's cost
        with np.errstate(divide="ignore", invalid="ignore"):
            secs = ov[:, :, None] + left[:, :, None] / spec.size_train_speed
        secs = np.where(params.train_too_small, np.inf, secs)
        fits = secs <= time_left[:, None, None] + FIT_EPS  # (N, M, Z): MIGSpec.fits_window
        # Retraining sizes each tenant may take (bit Z: none, always): those its job fits in
        # while pending, none once retrained, any while running (its instance is kept as it is).
        z = len(cat.sizes)
        code = (fits & ~state.retrained[:, :, None]) @ (1 << np.arange(z)) + (1 << z)  # (N, M)
        code = np.where(state.running, (1 << (z + 1)) - 1, code)
        # Where each tenant's retraining instance is (one at most; P where it has none).
        n_place = len(cat.placements)
        at_env, at_place = np.nonzero(state.task >= m)
        where = np.full((n, m), n_place)
        where[at_env, state.task[at_env, at_place] - m] = at_place
        place = np.where(state.running, where, n_place)
        keys = (place << (len(cat.sizes) + 1) | code) @ params.mask_base
        keys[state.window >= spec.windows] = -1
        return params.masks.rows(keys, lambda idx: self._mask_rows(params, keys[idx]))

    def _mask_rows(self, params: MIGParams, keys: np.ndarray) -> np.ndarray:
        """(K, S) bool: the masks of mask keys ``keys`` (K,) (see :meth:`_mask_row`)."""
        return np.stack([self._mask_row(params, key) for key in keys.tolist()])

    def _mask_row(self, params: MIGParams, key: int) -> np.ndarray:
        """(S,) bool: the mask of one env with mask key ``key`` (see :meth:`_mask`): statically
        valid signatures that keep every running job in place, some layout hosting them, and
        give each tenant a retraining instance it may take (all signatures for -1)."""
        spec = params.spec
        cat = spec.catalogue
        m, n_place, z = spec.n_tenants, len(cat.placements), len(cat.sizes)
        if key < 0:
            return np.ones(len(cat), dtype=bool)
        places, codes = [], []
        for _ in range(m):
            key, part = divmod(key, _mask_radix(cat))
            places.append(part >> (z + 1))
            codes.append(part & ((1 << (z + 1)) - 1))
        feasible = params.feasible.get(tuple(places))
        if feasible is None:
            keep = [(p, m + i) for i, p in enumerate(places) if p < n_place]
            feasible = spec.valid_static & cat.feasible(keep)
            params.feasible[tuple(places)] = feasible
        row = feasible.copy()
        for i, code in enumerate(codes):
            row &= (code >> params.retrain_size[:, i] & 1).astype(bool)
        return row

    def project(self, params: MIGParams, state: MIGState, actions: Any) -> tuple[np.ndarray, ...]:
        """(N,) signatures applied and (N,) bool ``projected``: an action the mask forbids
        becomes the current allocation with the retraining instances no longer needed released,
        or the lowest-index valid signature (0 if none) where that is not valid either."""
        a = np.asarray(actions).astype(np.int64).reshape(-1)
        mask = state.mask
        n_sig = mask.shape[1]
        inside = (a >= 0) & (a < n_sig)
        rows = _rows(a)
        projected = ~(inside & mask[rows, np.where(inside, a, 0)])
        if not projected.any():
            return a, projected
        bits = state.running @ (1 << np.arange(params.spec.n_tenants))
        cur = params.stripped[np.maximum(state.signature, 0), bits]
        cur_ok = (state.signature >= 0) & mask[rows, cur]
        first = np.where(mask.any(axis=1), np.argmax(mask, axis=1), np.maximum(state.signature, 0))
        fallback = np.where(cur_ok, cur, first)
        return np.where(projected, fallback, a), projected

    # ------------------------------------------------------------------ step
    def step(
        self, params: MIGParams, state: MIGState, actions: np.ndarray
    ) -> tuple[MIGState, Record]:
        """One decision epoch of every env (in place). Every env must be running."""
        spec = params.spec
        if (state.window >= spec.windows).any():
            raise RuntimeError("step() on an env whose episode has ended")
        a, projected = self.project(params, state, actions)
        before = self._counters(state)  # before the reconfiguration: its downtime counts
        queued = _sum_last(state.backlog)  # requests waiting when the step starts
        changes = self._apply(params, state, a)
        t0 = state.time_s.copy()
        w_start = state.window * spec.window_s
        t_end = np.minimum(
            w_start + (state.step_in_window + 1) * spec.basis_s, w_start + spec.window_s
        )
        while True:
            if params.mps:
                _retire(state)
            go = state.time_s < t_end - _EPS
            if not go.any():
                break
            t = state.time_s
            nxt = np.minimum(t_end, np.floor(t + _EPS) + 1.0)
            pending = (state.task >= 0) & (state.ready_s > t[:, None] + _EPS)
            nxt = np.minimum(nxt, np.where(pending, state.ready_s, np.inf).min(axis=1))
            self._advance(params, state, nxt, go)
        after = self._counters(state)
        d_req, d_slo, d_good, d_corr, d_energy, d_down, d_over = (
            x1 - x0 for x0, x1 in zip(before, after, strict=True)
        )
        state.step_in_window += 1
        new_window = np.flatnonzero(state.step_in_window >= spec.steps_per_window)
        if new_window.size:
            state.step_in_window[new_window] = 0
            self.enter_window(params, state, new_window, state.window[new_window] + 1)
        state.mask = self._mask(params, state)
        full = spec.power.max_power_w * max(spec.basis_s, 1e-9)
        req = _sum_last(d_req)
        has = req > 0
        safe = np.where(has, req, 1.0)
        # Served in the step within the SLO, of the requests it had to serve: those queued at
        # its start and those arriving in it (a queue served late counts against no step's
        # arrivals alone, so the fraction stays in [0, 1]).
        present = req + queued
        slo = np.where(present > 0, _sum_last(d_slo) / np.where(present > 0, present, 1.0), 1.0)
        good = _sum_last(d_good)
        terms = {"goodput": good / state.norm, "energy": -d_energy / full}
        info = {
            "projected": projected,
            "reconfigurations": changes,
            "goodput": good,
            "requests": req,
            "slo_attainment": np.minimum(slo, 1.0),  # min: float rounding only
            "accuracy": np.where(has, _sum_last(d_corr) / safe, 0.0),
            "downtime_s": d_down,
            "overhead_s": d_over,
            "tenant_requests": d_req,
            "tenant_goodput": d_good,
            "tenant_served_slo": d_slo,
        }
        return state, Record(energy_j=d_energy, duration_s=t_end - t0, terms=terms, info=info)

    def _counters(self, state: MIGState) -> tuple[np.ndarray, ...]:
        """Per env: per-tenant sums of the window counters, energy, downtime and measured
        reconfiguration overhead so far (a step's numbers are differences of these, as the
        engine's metrics give them)."""
        return (
            _sum_last(state.requests),
            _sum_last(state.served_slo),
            _sum_last(state.goodput),
            _sum_last(state.correct),
            _sum_last(state.energy_j),
            state.downtime_s.copy(),
            state.overhead_s.copy(),
        )

    def _apply(self, params: MIGParams, state: MIGState, a: np.ndarray) -> np.ndarray:
        """Realise signatures ``a`` (N,) under the scenario's reconfiguration rule
        (:func:`reconfigure`); returns (N,) instances (re)configured (0 at the first decision,
        a warm start)."""
        spec = params.spec
        m = spec.n_tenants
        now = state.time_s[:, None]
        first = state.signature < 0
        old = state.task
        new = params.realise(a, old, state.running)
        if params.mps:
            restart = params.overhead_by_task[0].take(new + 2)
            new, rc, state.retire_s = switch_shares(
                spec.overhead_rule,
                old,
                new,
                state.ready_s,
                state.time_s,
                restart,
                state.psi_s,
                first,
            )
        else:
            rc = self._reconfigure(params, state, old, new, first)
        plain = rc.plain
        state.ready_s = rc.ready
        state.overhead_plain_s = state.overhead_plain_s + _running_total(plain)
        count = np.where(first, 0, ((new >= 0) & (new != old)).sum(axis=1))
        state.reconfigurations += count
        state.downtime_s = state.downtime_s + rc.downtime
        measured = np.where(rc.flagged, rc.measured, 0.0)
        state.overhead_sum = state.overhead_sum + measured
        state.overhead_events = state.overhead_events + rc.flagged
        state.overhead_s = state.overhead_s + _running_total(measured)
        state.reconfig_events = state.reconfig_events + rc.flagged.sum(axis=1)
        state.since_s = np.where(new != old, now, state.since_s)
        state.task = new
        # Memory slices covered by a working instance are not free; newly free ones are.
        busy = ((new >= 0) @ params.slices_f) > 0  # (N, 8) sums of 0 / 1: exact
        sfs = state.slice_free_since
        state.slice_free_since = np.where(busy, np.inf, np.where(np.isinf(sfs), now, sfs))
        state.signature = a.copy()
        # The engine's rules: a running job keeps its instance; a tenant that has retrained
        # this window is refused; a pending one with an instance starts its job.
        k = state.window
        gp_r = params.share[a, m:]
        refused = state.retrained | (~state.running & (gp_r <= 0))
        state.share_retrain = np.where(refused, 0.0, gp_r)
        start_job = ~state.running & ~refused & (state.share_retrain > 0)
        if start_job.any():
            total = params.profile.gpu_seconds[:, k, 0].T  # (N, M)
            target = params.profile.post_acc[:, k, 0].T
            state.job_total = np.where(start_job, total, state.job_total)
            state.job_left = np.where(start_job, total, state.job_left)
            state.job_target = np.where(start_job, target, state.job_target)
            state.running = state.running | start_job
        return count

    def _reconfigure(
        self,
        params: MIGParams,
        state: MIGState,
        old: np.ndarray,
        new: np.ndarray,
        first: np.ndarray,
    ) -> Reconfiguration:
        """The MIG reconfiguration from ``old`` to ``new`` (N, P) under the scenario's rule
        (:func:`reconfigure`), with each new instance's overhead (its model's, reusing the
        instance where it existed) shortened by pre-initialisation where the scenario has it."""
        spec = params.spec
        now = state.time_s[:, None]
        existed = old != ABSENT
        # The overhead of the instance's model, reusing the instance where it existed.
        code = new + 2
        ov = np.where(
            existed, params.overhead_by_task[1].take(code), params.overhead_by_task[0].take(code)
        )
        start = now
        if spec.preinit:
            # An instance whose slices were free can be built ahead of time.
            # The latest time one of its slices became free: a max over each placement's
            # slices, read off the tree of slices where the placements are its nodes (else
            # a column appended so that a span may end past the last slice).
            sfs = state.slice_free_since
            if params.slice_node is not None:
                free = slice_tree(sfs).take(params.slice_node, axis=1)
            else:
                padded = np.concatenate([sfs, sfs[:, :1]], axis=1)
                free = np.maximum.reduceat(padded, params.slice_span, axis=1)[:, ::2]
            start = np.where(
                existed & (old == IDLE),
                np.minimum(now, state.since_s),
                np.minimum(now, free),
            )
        return reconfigure(
            spec.overhead_rule,
            old,
            new,
            state.ready_s,
            state.time_s,
            np.maximum(now, start + ov),
            state.psi_s,
            params.gpcs,
            spec.destroy_s,
            first,
            # What the same reconfiguration would take without pre-initialisation (§5.2's
            # baseline of its saving).
            now + ov if spec.preinit else None,
        )

    def stretch(
        self,
        params: MIGParams,
        state: MIGState,
        until: np.ndarray,
        rows: np.ndarray | None = None,
    ) -> Stretch:
        """Serve the queues and retrain until ``until`` (N,) or the first job completion, at
        constant rates (:class:`edgegym.families.mig.serving.MIGExecutor.run`, batched), in the envs
        ``rows`` (K,) (all where ``None``); the result has one row per env run. Updates their
        backlog; the caller accounts for the rest. The executor seam: the real backend
        replaces this."""
        spec = params.spec
        m = spec.n_tenants
        sel = slice(None) if rows is None else rows
        t = state.time_s[sel]
        task, running, job_left = state.task[sel], state.running[sel], state.job_left[sel]
        ready = state.ready_s[sel] <= t[:, None] + _EPS  # (K, P)
        tenant_ids = np.arange(m)[None, :, None]
        own_i = (task[:, None, :] == tenant_ids) & ready[:, None, :]  # (K, M, P)
        # Per (env, task) of the ready instances: GPCs (whole numbers) and, for a retraining
        # task, the speed of its one instance (a sum of one term), by bincount.
        live = ready & (task >= 0)
        env, place = np.nonzero(live)
        of = task[live]
        gpcs = np.bincount(
            env * (2 * m) + of, params.gpcs[place], minlength=len(t) * 2 * m
        ).reshape(-1, 2 * m)
        job = of >= m
        env, place, of = env[job], place[job], of[job] - m
        speed = np.bincount(
            env * m + of, spec.train_speed[of, place], minlength=len(t) * m
        ).reshape(-1, m)
        speed = np.where(running, speed, 0.0)
        active = running & (speed > 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            finish = np.where(active, job_left / np.where(active, speed, 1.0), np.inf)
        dt = np.maximum(0.0, np.minimum(until[sel] - t, _min_last(finish)))
        sec = np.minimum(np.floor(t + _EPS).astype(np.int64), params.n_seconds - 1)
        lam = _cells(state.arrivals, sel, sec)  # (K, M)
        mu = np.sum(np.where(own_i, params.rate_slo, 0.0), axis=2)
        if spec.mps_inference_slowdown > 0 or spec.mps_retrain_slowdown > 0:
            # MPS interference (scenario ``mps``): with two or more tasks on the GPU, each
            # serves and retrains slower; the jobs' finish times follow the slower speed.
            tasks = own_i.any(axis=2).sum(axis=1) + active.sum(axis=1)
            shared = (tasks >= 2)[:, None]
            mu = interfered(mu, shared, spec.mps_inference_slowdown)
            speed = interfered(speed, shared, spec.mps_retrain_slowdown)
            with np.errstate(divide="ignore", invalid="ignore"):
                finish = np.where(active, job_left / np.where(active, speed, 1.0), np.inf)
            dt = np.maximum(0.0, np.minimum(until[sel] - t, _min_last(finish)))
        bmax = np.sum(np.where(own_i, params.slack, 0.0), axis=2)
        dtc = dt[:, None]
        served, b1 = fluid_queue(state.backlog[sel], lam, mu, bmax, dtc)
        state.backlog = _put(state.backlog, sel, b1)
        busy = busy_from(gpcs[:, :m], gpcs[:, m:], served, mu, dtc, running)  # (K, M)
        util = np.minimum(1.0, _sum_last(busy) / spec.catalogue.units)
        energy, _ = spec.power.gpu_energy(params.clock_mhz, util, dt)
        return Stretch(
            dt=dt,
            active=active,
            finish=finish,
            work=speed * dtc,
            requests=lam * dtc,
            served=served,
            energy_j=energy,
        )

    def _advance(self, params: MIGParams, state: MIGState, until: np.ndarray, go: np.ndarray):
        """Run the envs ``go`` (N,) one stretch towards ``until`` (N,) and account for it
        (:meth:`tests.reference.engine.Engine.advance`); the others stay as they are (the
        stretch runs only the envs that go, unless all do)."""
        rows = None if go.all() else np.flatnonzero(go)
        sel = slice(None) if rows is None else rows
        seg = self.stretch(params, state, until, rows)
        dt = seg.dt  # (K,)
        left = np.maximum(0.0, state.job_left[sel] - seg.work)
        done = seg.active & (
            (seg.finish <= dt[:, None] + _EPS)
            | (left <= _EPS * np.maximum(state.job_total[sel], 1))
        )
        state.job_left = _put(state.job_left, sel, left)
        # The envs whose stretch took time: ``rec`` indexes the state's rows and ``sub`` the
        # stretch's (both slices where every env ran one: views, no copies).
        pos = dt > 0
        if rows is None and pos.all():
            rec, sub, envs = slice(None), slice(None), _rows(dt)
        else:
            sub = pos
            rec = envs = np.flatnonzero(pos) if rows is None else rows[pos]
        if envs.size:
            k = state.window[rec]
            d = dt[sub, None]
            acc = state.model_acc[rec]
            req = seg.requests[sub]
            served = seg.served[sub]
            state.energy_j[envs, k] += seg.energy_j[sub]
            state.retrain_gpu_s[rec] += (
                np.where(state.running[rec], state.share_retrain[rec], 0.0) * d
            )
            # The (env, tenant, window k) cells of the (N, M, K) counters, by flat index.
            at = cell_base(*state.requests.shape)[rec] + k[:, None]  # (R, M)
            _add_cells(state.acc_integral, at, acc * d)
            _add_cells(state.requests, at, req)
            _add_cells(state.served_slo, at, served)
            _add_cells(state.goodput, at, served * acc)
            _add_cells(state.correct, at, req * acc)
            self._log(params, state, envs, dt[sub])
        state.time_s = _put(state.time_s, sel, state.time_s[sel] + dt)
        if done.any():
            done = _put(np.zeros_like(state.running), sel, done)
            state.model_acc = np.where(done, state.job_target, state.model_acc)
            state.running = state.running & ~done
            state.job_left = np.where(done, 0.0, state.job_left)
            state.job_total = np.where(done, 0.0, state.job_total)
            state.retrained = state.retrained | done
            state.retrainings += done

    def _log(self, params: MIGParams, state: MIGState, rec: np.ndarray, dt: np.ndarray) -> None:
        """Append a stretch record of ``dt`` (K,) seconds to the timelines of envs ``rec``
        (K,) that keep one (the engine's ``metrics.timeline`` layout)."""
        if state.timeline.count(None) == len(state.timeline):
            return
        m = params.spec.n_tenants
        for i, d in zip(rec.tolist(), dt, strict=True):
            tl = state.timeline[i]
            if tl is None:
                continue
            t = float(state.time_s[i])
            tl.append(
                {
                    "t0": t,
                    "t1": t + float(d),
                    "window": int(state.window[i]),
                    "accuracy": (state.model_acc[i] * d / d).tolist(),
                    "share_retrain": state.share_retrain[i].tolist(),
                    "share_infer": params.share[state.signature[i], :m].tolist(),
                    "retrain_cfg": np.where(state.running[i], 0, -1).tolist(),
                    "infer_cfg": [0] * m,
                }
            )

    def enter_window(
        self, params: MIGParams, state: MIGState, idx: np.ndarray, k: np.ndarray
    ) -> None:
        """Envs ``idx`` enter windows ``k``: each task's Psi becomes the mean overhead
        measured over its reconfigurations in the window that ended, unfinished jobs are
        dropped and the deployed models drift (:meth:`tests.reference.engine.Engine.start_window`);
        the executor seam."""
        state.window[idx] = k
        # Psi (MIGRator Table 2): the mean overhead of each task's reconfigurations in the
        # window that ended; a task not reconfigured keeps its Psi.
        n_ev = state.overhead_events[idx]
        mean = state.overhead_sum[idx] / np.maximum(n_ev, 1)
        state.psi_s[idx] = np.where(n_ev > 0, mean, state.psi_s[idx])
        state.overhead_sum[idx] = 0.0
        state.overhead_events[idx] = 0
        live = k < params.spec.windows
        idx, k = idx[live], k[live]
        if not idx.size:
            return
        prof = params.profile
        drifted = np.maximum(prof.floor[:, k].T, state.model_acc[idx] - prof.drift[:, k].T)
        state.model_acc[idx] = np.where((k > 0)[:, None], drifted, state.model_acc[idx])
        for arr in (state.job_left, state.job_total, state.job_target, state.share_retrain):
            arr[idx] = 0.0
        state.running[idx] = False
        state.retrained[idx] = False

    # ------------------------------------------------------------------ views
    def observation(self, params: MIGParams, state: MIGState) -> np.ndarray:
        """(N, 14 M + 4) float32 (see :mod:`edgegym.families.mig.observation` for the table)."""
        spec, prof = params.spec, params.profile
        n, m = state.time_s.shape[0], spec.n_tenants
        t = state.time_s
        now = np.floor(t + 1e-9).astype(np.int64)
        ref = np.maximum(spec.size_rate[:, -1], 1e-9)
        started = (now > 0)[:, None]
        every = slice(None)
        last = np.where(started, _cells(state.arrivals, every, np.maximum(now - 1, 0)), 0.0)
        width = np.minimum(now, 10)
        recent = np.where(
            started, _cells(state.recent_sum, every, now) / np.maximum(width, 1)[:, None], 0.0
        )
        ready = state.ready_s <= t[:, None] + _EPS
        tenant_ids = np.arange(m)[None, :, None]
        own_i = state.task[:, None, :] == tenant_ids  # (N, M, P)
        mu = np.sum(np.where(own_i & ready[:, None, :], params.rate_slo, 0.0), axis=2)
        status = status_of(state.running, state.retrained)
        k = np.minimum(state.window, spec.windows - 1)
        total = prof.gpu_seconds[:, k, 0].T
        progress = np.where(
            state.job_total > 0,
            1.0 - state.job_left / np.maximum(state.job_total, 1e-12),
            0.0,
        )
        progress = np.where(status == DONE, 1.0, progress)
        left = np.where(status == PENDING, total, state.job_left)
        # GPCs each task holds (sums of whole numbers: exact in any order).
        assigned = state.task >= 0
        env_of, place = np.nonzero(assigned)
        held = np.bincount(
            env_of * 2 * m + state.task[assigned], params.gpcs[place], minlength=n * 2 * m
        ).reshape(n, 2 * m)
        units = spec.catalogue.units  # GPCs (MIG) or MPS shares
        feats = np.zeros((n, m, PER_TENANT))
        feats[:, :, 0] = last / ref
        feats[:, :, 1] = recent / ref
        feats[:, :, 2] = state.backlog / ref
        feats[:, :, 3] = held[:, :m] / units
        feats[:, :, 4] = mu / ref
        feats[:, :, 5] = state.model_acc
        feats[:, :, 6] = prof.post_acc[:, k, 0].T
        feats.reshape(-1)[(np.arange(n * m) * PER_TENANT + 7 + status.ravel())] = 1.0
        feats[:, :, 10] = progress
        feats[:, :, 11] = held[:, m:] / units
        feats[:, :, 12] = left / np.maximum(params.speed_min, 1e-9) / spec.window_s
        feats[:, :, 13] = self.charged_overhead(params, state)[:, :m] / 10.0
        n_assigned = assigned.sum(axis=1)
        waiting = (assigned & (state.ready_s > t[:, None] + 1e-9)).sum(axis=1)
        glob = np.stack(
            [
                (t - state.window * spec.window_s) / spec.window_s,
                state.window / spec.windows,
                1.0 - held.sum(axis=1) / units,
                np.where(n_assigned > 0, waiting / np.maximum(n_assigned, 1), 0.0),
            ],
            axis=1,
        )
        out = np.concatenate([feats.reshape(n, -1), glob], axis=1)
        return np.clip(out, 0.0, HIGH).astype(np.float32)

    def done(self, params: MIGParams, state: MIGState) -> np.ndarray:
        """(N,) bool: the last window has ended."""
        return state.window >= params.spec.windows

    def metrics(self, params: MIGParams, state: MIGState, i: int) -> dict[str, float]:
        """Env ``i``'s whole-episode numbers (:meth:`edgegym.core.metrics.Metrics.summary`):
        Goodput, SLO attainment and accuracy as fractions of all requests (MIGRator §5.2)."""
        requests, goodput = state.requests[i], state.goodput[i]
        if requests.any():
            n = max(float(requests.sum()), 1.0)
            per_tenant = goodput.sum(axis=1) / np.maximum(requests.sum(axis=1), 1.0)
            return {
                "goodput": float(goodput.sum() / n),
                "slo_attainment": float(state.served_slo[i].sum() / n),
                "accuracy": float(state.correct[i].sum() / n),
                "min_tenant_goodput": float(per_tenant.min()),
                "requests": float(requests.sum()),
                "energy_j": float(state.energy_j[i].sum()),
                "retrainings": float(state.retrainings[i].sum()),
                "reconfigurations": float(state.reconfigurations[i]),
                "reconfig_events": float(state.reconfig_events[i]),
                "downtime_s": float(state.downtime_s[i]),
                "overhead_s": float(state.overhead_s[i]),
                "overhead_without_preinit_s": float(state.overhead_plain_s[i]),
            }
        wa = state.acc_integral[i] / params.spec.window_s  # no request arrived
        return {
            "accuracy": float(wa.mean()),
            "min_stream_accuracy": float(wa.mean(axis=1).min()),
            "energy_j": float(state.energy_j[i].sum()),
            "retrain_gpu_s": float(state.retrain_gpu_s[i].sum()),
            "retrainings": float(state.retrainings[i].sum()),
            "below_a_min_frac": 0.0,
        }


__all__ = [
    "DONE",
    "PENDING",
    "RUNNING",
    "MIGDynamics",
    "MIGState",
    "Stretch",
    "status_of",
]

"""MIGRator's planning model and its exact solver (arXiv 2407.13126, §4).

**The model** (:class:`PlanProblem`; the same one the brute-force test enumerates). Steps
``t = 0 .. T-1`` of length ``dt_t``; forecast arrivals ``a[m, t]``. Each step picks an allowed
signature ``n`` (:mod:`edgegym.hardware.migalloc`): an inference option ``u[n, m]`` per tenant
(the multiset of its instance sizes, capacity ``cap[m, u]`` requests/s) and a retraining size
``r[n, m]`` (or none). Tenant m's retraining occupies one instance of size z for exactly
``dur[m, z]`` consecutive steps (overhead included) ending inside the window; a pending tenant
must launch if any size fits (Formula 4). Accuracy is ``pre[m]`` until the step after its job
ends, ``post[m]`` from then on. The objective is

    sum_t sum_m acc[m, t] * (min(a[m, t], cap[m, u_t] * dt_t) - loss[m, t])

where ``loss[m, t]`` is charged when the inference option changes at t: a capacity
``added[m, u', u]`` of the new option is down for the tenant's ``psi[m]`` seconds from the
step's start, the overhead spread over the seconds it lasts instead of clipped to one step.
Over the fraction ``f_k`` of step k that the overhead covers, the option serves at the
remaining rate ``cap[u] - added`` and the arrivals beyond it are lost (nothing is ready to
queue them within their SLO), so

    loss[m, t] = sum_k f_k * (min(a_k, cap[u] dt_k) - min(a_k, (cap[u] - added) dt_k))

which never exceeds what the option would have served over the overhead. Where the arrivals
saturate the option this is Eq. 10's ``cap dt - Psi cap``; below saturation Eq. 10 read
literally lets the arrivals of the overhead wait and prices the switch lower, where the
environment's SLO admission turns them away (docs/design-notes.md, MIGRator planner).
:func:`~edgegym.baselines.migrator.build_problem` fills ``added`` and ``psi`` with the
cost rule the environment applies (``overhead.rule``,
:func:`edgegym.families.mig.reconfig.reconfigure`), so the planner's model is the environment's:

* ``eq10`` (the default; MIGRator Eq. 10-11): ``added[u', u]`` is the *whole* capacity of ``u``
  when the number of instances or of GPCs differs between ``u'`` and ``u`` (Eq. 11), else 0;
  ``psi`` is the tenant's Psi, the mean overhead the environment measured over the inference
  task's reconfigurations in the last window (``MIGSnapshot.overhead_s``);
* ``per-instance``: ``added[u', u]`` is the capacity of the instances of ``u`` not in ``u'``
  (multiset difference) and ``psi`` the model's new-instance overhead (destroy + create +
  library + model load): a finer rule than the paper's, kept as a scenario option.

A retraining job's duration counts its start overhead the same way (the retraining task's Psi
under ``eq10``).

**The solver** (a decomposition, not a monolithic ILP). Given the retraining plan (start and
size per tenant) the problem is a longest path over the inference options with transition costs
(exact Viterbi, ``O(T J^2)`` for J joint inference options; ``O(T 2^M J)`` under Eq. 11's cost,
whose switch losses depend only on which tenants change class: :class:`_TransitionCache`).
Over retraining plans it is
branch and bound: plans are solved exactly in decreasing bound order until the best found value
is within ``gap`` of every remaining bound. ``gap=0`` proves optimality; the default
``gap=0.01`` proves the result within 1% of the optimum of the model. ``max_plans`` caps the
exact solves (the returned certificate then says how far from proven it is).

Under Eq. 11's shape the bounds come in three levels, each tighter and dearer than the last, so
that few plans are ever enumerated and fewer solved (``path_bounds=False``: the per-step bound
alone, over every plan, as before):

* a plan runs through stretches of one retraining occupancy and completion state (a
  *combination*); for every combination two Viterbi passes over the whole window (forward and
  backward, :func:`_path_bounds`) bound the best path inside any stretch ``[a, b)`` in a form
  separable in its first and last option (:class:`_PathBounds`);
* a *group* of plans (blocks of consecutive starts of one size per tenant, :class:`_Groups`)
  is bounded without listing its plans: where a tenant's state is uncertain each step takes its
  best option over the states the group allows, elsewhere the stretch's path bound applies;
* a plan's *scalar* bound sums its stretches' path bounds (switches between stretches free, but
  the first and the last pair of stretches coupled through the real switch);
* its *chained* bound (:meth:`_PathBounds.chain`) runs a Viterbi over the stretch boundaries
  with every switch priced exactly, short stretches step by step, and also gives a lower bound
  (a path the plan can follow) that points the search at a good plan early.

Exact solves then step only between a plan's first and last switch of stretch
(:func:`_mid_values`): the passes are that plan's own best paths before and after.
"""

from __future__ import annotations

import functools
import heapq
import itertools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from edgegym.baselines.migrator_paths import (
    NEG,
    _mid_values,
    _option_tables,
    _OptionTables,
    _path_bounds,
    _PathBounds,
    _segments,
    _slack,
    _table_breaks,
    _TransitionCache,
    _viterbi,
    change_classes,
)

__all__ = [
    "BATCH",
    "NoFeasiblePlan",
    "Plan",
    "PlanProblem",
    "brute_force",
    "change_classes",
    "solve",
]

#: At most this many retraining plans solved together (:func:`_branch_and_bound`).
BATCH = 64
#: Plans of each refined batch (the best bounded) whose value is also bounded from below.
HINTS = 128


@dataclass
class PlanProblem:
    """One window's planning problem (all arrays numpy).

    Attributes:
        arrivals: (M, T) forecast requests arriving in each step.
        dt: (T,) step lengths in seconds.
        sig_u: (N, M) inference option of each allowed signature per tenant.
        sig_r: (N, M) retraining size index of each allowed signature (-1: none).
        cap: (M, U) requests/s of each inference option (SLO-feasible instances only).
        added: (M, U, U) capacity down for ``psi`` when going from option u' to option u
            (requests/s): Eq. 10's whole new capacity when the counts change, or the capacity
            of the instances added (``per-instance``).
        psi: (M,) seconds a change of inference option costs (Psi under ``eq10``).
        pre: (M,) accuracy before the tenant's retraining finishes.
        post: (M,) accuracy after.
        dur: (M, Z) steps a retraining job occupies an instance of each size (T + 1: cannot).
        pending: (M,) the tenant still has to retrain in this window.
        prev_u: (M,) inference option before step 0 (-1: none, no transition cost).
        must_launch: Enforce Formula 4 (a pending tenant launches if any size fits).
        samples: optional (M, K, T) sampled arrivals of each step, when the forecast is a
            distribution rather than a point: every ``min(a, rate dt)`` of the model (what an
            option serves, and serves while part of it is down) is then ``E[min(A, rate dt)]``
            over the samples.
        option_sizes: optional (M, U, Z) instances of each size in each inference option.
        layouts: optional (C, Z) instances of each size in each maximal MIG layout of the GPU.
            With ``option_sizes`` they let the MILP write the allocation per tenant (the
            instances of every tenant's inference option and retraining job fit one layout)
            instead of one column per allowed signature, where the two are the same set.
    """

    arrivals: np.ndarray
    dt: np.ndarray
    sig_u: np.ndarray
    sig_r: np.ndarray
    cap: np.ndarray
    added: np.ndarray
    psi: np.ndarray
    pre: np.ndarray
    post: np.ndarray
    dur: np.ndarray
    pending: np.ndarray
    prev_u: np.ndarray
    must_launch: bool = True
    samples: np.ndarray | None = None
    option_sizes: np.ndarray | None = None
    layouts: np.ndarray | None = None

    @property
    def shape(self) -> tuple[int, int]:
        """(M, T)."""
        return self.arrivals.shape  # type: ignore[return-value]

    def served(self) -> np.ndarray:
        """(M, U, T) requests served by each option in each step (no reconfiguration)."""
        return self._serve(self.cap)

    def _serve(self, rate: np.ndarray, tenant: int | None = None) -> np.ndarray:
        """(M, R, T) requests served in each step at ``rate`` (M, R) requests/s: ``min(a, rate
        dt)``, or its mean over the samples; (R, T) for one ``tenant`` at ``rate`` (R,)."""
        rows = slice(None) if tenant is None else slice(tenant, tenant + 1)
        rate = rate if tenant is None else rate[None]
        c = rate[:, :, None] * self.dt[None, None, :]
        if self.samples is None:
            out = np.minimum(self.arrivals[rows, None, :], c)
        else:
            out = np.minimum(self.samples[rows, None], c[:, :, None]).mean(axis=2)
        return out if tenant is None else out[0]

    def loss(self) -> np.ndarray:
        """(M, T, U, U) requests lost when switching from option u' to u at step t: over the
        part of each step the overhead covers, what u serves less what it serves with
        ``added[u', u]`` down."""
        m, t_n = self.shape
        n_u = self.added.shape[1]
        ends = np.cumsum(np.concatenate([[0.0], self.dt]))
        served = self.served()
        out = np.zeros((m, t_n, n_u, n_u))
        for i in range(m):
            # cover[t, k]: the fraction of step k inside the psi seconds from step t's start.
            lo = np.maximum(ends[:-1, None], ends[None, :-1])
            hi = np.minimum(ends[:-1, None] + self.psi[i], ends[None, 1:])
            cover = np.clip(hi - lo, 0.0, None) / self.dt[None, :]
            left = np.clip(self.cap[i][None, :] - self.added[i], 0.0, None)  # (U', U) req/s
            rates, r_of = np.unique(left, return_inverse=True)
            kept = self._serve(rates, tenant=i)  # (R, T)
            # Each distinct (remaining rate, option) once, so equal entries are equal bitwise.
            pair = r_of.reshape(left.shape) * n_u + np.arange(n_u)[None, :]
            keys, p_of = np.unique(pair, return_inverse=True)
            short = served[i][keys % n_u] - kept[keys // n_u]  # (P, T)
            # per[t] = sum over k of cover[t, k] * short[:, k], added band by band (the overhead
            # covers step t and the next few), elementwise: the same bits on every CPU.
            per = np.zeros((t_n, keys.size))
            for d in range(t_n):
                c = np.diagonal(cover, offset=d)  # cover[t, t + d]
                if not c.any():
                    break  # the overhead ends before step t + d for every t
                per[: t_n - d] += c[:, None] * short[:, d:].T
            out[i] = np.where(self.added[i] > 0, per[:, p_of.reshape(left.shape)], 0.0)
        return out

    def value(self, seq: np.ndarray) -> float:
        """Objective of a signature sequence (no feasibility check): the model's definition."""
        m, t_n = self.shape
        served = self.served()
        loss = self.loss()
        acc_post = self._finished(seq)
        total = 0.0
        for t in range(t_n):
            n = seq[t]
            for i in range(m):
                acc = self.post[i] if acc_post[i, t] else self.pre[i]
                u = self.sig_u[n, i]
                g = served[i, u, t]
                prev = self.prev_u[i] if t == 0 else self.sig_u[seq[t - 1], i]
                if prev >= 0 and prev != u:
                    g -= loss[i, t, prev, u]
                total += acc * g
        return float(total)

    def _finished(self, seq: np.ndarray) -> np.ndarray:
        m, t_n = self.shape
        out = np.zeros((m, t_n), dtype=bool)
        for i in range(m):
            if not self.pending[i]:
                out[i] = True  # already retrained (or nothing to retrain): post accuracy
                continue
            run = np.flatnonzero(self.sig_r[seq, i] >= 0)
            if run.size:
                out[i, run[-1] + 1 :] = True
        return out

    def feasible(self, seq: np.ndarray) -> bool:
        """Constraints 3-4 for a signature sequence."""
        m, t_n = self.shape
        for i in range(m):
            r = self.sig_r[seq, i]
            run = np.flatnonzero(r >= 0)
            if not self.pending[i]:
                if run.size:
                    return False
                continue
            launchable = any(
                self.dur[i, z] <= t_n and np.any(self.sig_r[:, i] == z)
                for z in range(self.dur.shape[1])
            )
            if not run.size:
                if self.must_launch and launchable:
                    return False
                continue
            z = r[run[0]]
            if run[-1] - run[0] + 1 != run.size or np.any(r[run] != z):
                return False
            if run.size != self.dur[i, z]:
                return False
        return True


class NoFeasiblePlan(ValueError):
    """No signature sequence meets the problem's constraints."""


@dataclass
class Plan:
    """A solved plan: the signature per step and the solver's certificate."""

    signatures: np.ndarray  # (T,) index into the problem's allowed signatures
    value: float  # objective of the model
    upper_bound: float  # no plan can beat this
    plans_total: int  # retraining plans considered
    plans_solved: int  # solved exactly
    seconds: float  # solver wall time
    starts: dict[int, tuple[int, int]] = field(default_factory=dict)  # tenant -> (start, size)
    start_stride: int = 1  # retraining starts considered every this many steps
    #: Formula 4 was relaxed: launching every pending job in this window cannot meet constraints
    #: 1-5 together (the jobs do not fit side by side with the inference tasks), so the plan
    #: launches the jobs that pay best and leaves the others for a later window.
    launch_relaxed: bool = False

    @property
    def gap(self) -> float:
        """Proven relative distance to the optimum of the model."""
        return max(0.0, self.upper_bound - self.value) / max(abs(self.upper_bound), 1e-12)


def _tenant_plans(p: PlanProblem, i: int, stride: int = 1) -> list[tuple[int, int]]:
    """(start, size) options of tenant i (starts every ``stride`` steps, and the latest start
    of each size); (-1, -1) for no retraining."""
    t_n = p.shape[1]
    if not p.pending[i]:
        return [(-1, -1)]
    sizes = [z for z in range(p.dur.shape[1]) if np.any(p.sig_r[:, i] == z)]
    out = []
    for z in sizes:
        last = t_n - int(p.dur[i, z])
        if last >= 0:
            out += [(s, z) for s in sorted({*range(0, last + 1, stride), last})]
    if not out or not p.must_launch:
        out.append((-1, -1))
    return out


def solve(
    p: PlanProblem,
    gap: float = 0.01,
    max_plans: int = 200_000,
    max_combos: int = 2_000_000,
    path_bounds: bool = True,
) -> Plan:
    """Branch and bound over retraining plans with an exact Viterbi per plan.

    Args:
        p: The problem.
        gap: Stop when the best value is within this fraction of every remaining bound.
        max_plans: At most this many plans are solved exactly.
        max_combos: Retraining plans considered at most. With two tenants every start step is
            considered (W1: about 233,000 plans); with three or four the start steps are
            thinned to a stride that keeps the product under this cap, and the optimum and the
            gap are then those of the model restricted to starts on that grid
            (``Plan.start_stride``).
        path_bounds: Bound plans by Viterbi passes per combination, groups and chains (see
            the module docstring; only under Eq. 11's shape). False: the per-step bound of
            every plan, as the first planner did (the same optimum, more plans solved).

    Returns:
        The best plan found and its certificate (``gap`` of the result <= ``gap`` unless
        ``max_plans`` stopped the search).
    """
    t0 = time.perf_counter()
    m = p.shape[0]
    served = p.served()  # (M, U, T)
    loss = p.loss()  # (M, T, U, U)
    tab = _option_tables(p, served, loss)
    stride, opts = _tenant_options(p, max_combos)
    n_plans = math.prod(len(o) for o in opts)
    # Transition cost tables per tenant over joint options.
    trans = _TransitionCache(p, loss, tab.joint)
    gain_cum = np.concatenate(
        [np.zeros((*tab.gain.shape[:2], 1)), np.cumsum(tab.gain, axis=2)], axis=2
    )
    breaks = _table_breaks(p, served, loss)
    # Plans share their stretches (and so solve together) when every step starts one.
    batch = BATCH if trans.enter is not None and breaks.all() else 1
    paths = None
    if path_bounds and trans.enter is not None:
        paths = _path_bounds(p, tab, trans, loss, keys=_combinations(p, tab))
    plans: dict[str, np.ndarray] = {}

    def viterbi(ks: np.ndarray) -> list[tuple[float, Callable[[], np.ndarray]]]:
        start, end, size = plans["start"][:, ks], plans["end"][:, ks], plans["size"][:, ks]
        return _viterbi(p, start, end, size, gain_cum, trans, loss, tab, breaks)

    if paths is None:
        combos = np.array(np.meshgrid(*[np.arange(len(o)) for o in opts], indexing="ij"))
        start, size, end = _plan_arrays(p, opts, combos.reshape(m, -1))
        plans.update(start=start, size=size, end=end)
        ub = _upper_bounds(p, *_segments(p, start, end, size, tab), tab)
        best_val, best_seq, best_plan, solved, bound = _branch_and_bound(
            ub, viterbi, gap, max_plans, batch
        )
    else:
        groups = _Groups(p, opts, max(2, round(64 ** (1 / max(m, 1)))))
        n_f = tab.best.shape[1]
        names = ("start", "size", "end", "cut", "key")
        store: dict[str, list[np.ndarray]] = {k: [] for k in names}
        n_stored = [0]

        def expand(gs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            start, size, end = _plan_arrays(p, opts, groups.plans(gs))
            cut, key = _segments(p, start, end, size, tab)
            for name, arr in zip(names, (start, size, end, cut, key), strict=True):
                store[name].append(arr)
                plans[name] = np.concatenate(store[name], axis=1)
            n0 = n_stored[0]
            n_stored[0] += start.shape[1]
            return np.arange(n0, n_stored[0]), _upper_bounds(p, cut, key, tab, paths)

        def refine(ks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            c = plans["key"][:, ks]
            row = np.where(c >= 0, paths.row[np.maximum(c, 0)], -1)
            cut = plans["cut"][:, ks]
            upper, _ = paths.chain(trans, cut, row, c % n_f, lower=False)
            top = np.argsort(-upper, kind="stable")[:HINTS]  # paths from below for these
            lower = np.full(len(ks), NEG)
            lower[top] = paths.chain(trans, cut[:, top], row[:, top], c[:, top] % n_f)[1]
            return upper, lower

        exact = viterbi
        if batch > 1:  # the middle of each plan step by step, its ends from the passes

            def exact(ks: np.ndarray) -> list[tuple[float, Callable[[], np.ndarray]]]:
                cut, key = plans["cut"][:, ks], plans["key"][:, ks]
                values = _mid_values(p, tab, trans, paths, cut, key)
                return [
                    (float(v), functools.partial(sequence, k))
                    for v, k in zip(values, ks, strict=True)
                ]

            def sequence(k: int) -> np.ndarray:
                return viterbi(np.array([k]))[0][1]()

        best_val, best_seq, best_plan, solved, bound = _grouped_best_first(
            groups.bounds(tab, paths), expand, refine, exact, gap, max_plans, batch
        )
        best_val = viterbi(np.array([best_plan]))[0][0]  # the value of the plan's sequence
    start, size = plans["start"], plans["size"]
    starts = {
        i: (int(start[i, best_plan]), int(size[i, best_plan])) for i in range(m) if p.pending[i]
    }
    return Plan(
        signatures=best_seq,
        value=float(best_val),
        upper_bound=max(bound, float(best_val)),
        plans_total=n_plans,
        plans_solved=solved,
        seconds=time.perf_counter() - t0,
        starts=starts,
        start_stride=stride,
    )


def _tenant_options(p: PlanProblem, max_combos: int) -> tuple[int, list[np.ndarray]]:
    """Every tenant's retraining plans ((n_i, 2) start and size, :func:`_tenant_plans`) on the
    finest grid of start steps that keeps their product under ``max_combos``, and the stride."""
    m = p.shape[0]
    stride = 1
    while True:
        per = [_tenant_plans(p, i, stride) for i in range(m)]
        if math.prod(len(x) for x in per) <= max_combos or stride >= p.shape[1]:
            break
        stride *= 2
    return stride, [np.array(x, dtype=np.int64).reshape(-1, 2) for x in per]


def _plan_arrays(
    p: PlanProblem, opts: list[np.ndarray], idx: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per tenant and plan (M, P): start step, instance size and first step after the job (-1:
    no job) of the plans choosing option ``idx[i]`` of each tenant i ((M, P))."""
    m = p.shape[0]
    start = np.stack([opts[i][idx[i], 0] for i in range(m)])
    size = np.stack([opts[i][idx[i], 1] for i in range(m)])
    dur = np.where(size >= 0, p.dur[np.arange(m)[:, None], np.maximum(size, 0)], 0)
    end = np.where(start >= 0, start + dur, -1)
    return start, size, end


def _retraining_plans(
    p: PlanProblem, max_combos: int
) -> tuple[int, np.ndarray, np.ndarray, np.ndarray]:
    """Every combination of the tenants' retraining plans, on the finest grid of start steps
    that keeps their number under ``max_combos``.

    Returns:
        The start stride, and per tenant and plan (M, P): the start step, the instance size
        and the first step after the job (-1: no job).
    """
    m = p.shape[0]
    stride, opts = _tenant_options(p, max_combos)
    combos = np.array(np.meshgrid(*[np.arange(len(x)) for x in opts], indexing="ij"))
    return stride, *_plan_arrays(p, opts, combos.reshape(m, -1))


Solved = dict[int, tuple[float, Callable[[], np.ndarray]]]


def _solve_ahead(
    viterbi: Callable[[np.ndarray], list[tuple[float, Callable[[], np.ndarray]]]],
    ks: np.ndarray,
    step: int,
    batch: int,
) -> tuple[Solved, int]:
    """Plans ``ks`` solved together (value and backtrack per plan) and the next batch size:
    twice this one, at most ``batch``."""
    return dict(zip(ks.tolist(), viterbi(ks), strict=True)), min(2 * step, batch)


def _searched(
    best_val: float,
    best_seq: Callable[[], np.ndarray] | None,
    best_plan: int,
    solved: int,
    bound: float,
) -> tuple[float, np.ndarray, int, int, float]:
    """A search's result: the best value, its signature sequence (backtracked now), its plan,
    the plans solved and the bound of those left.

    Raises:
        NoFeasiblePlan: No plan was feasible.
    """
    if best_seq is None:
        raise NoFeasiblePlan("no feasible allocation sequence for this window")
    return best_val, best_seq(), best_plan, solved, bound


def _branch_and_bound(
    ub: np.ndarray,
    viterbi: Callable[[np.ndarray], list[tuple[float, Callable[[], np.ndarray]]]],
    gap: float,
    max_plans: int,
    batch: int = 1,
) -> tuple[float, np.ndarray, int, int, float]:
    """Solve plans exactly in the order of their upper bounds until the best is within
    ``gap`` of every remaining bound (or ``max_plans`` are solved).

    ``viterbi`` solves several plans at once where ``batch > 1``: the next plans in bound
    order are solved ahead (1, 2, 4, ... up to ``batch`` at a time) and the search takes their
    values one by one, so it stops at the same plan, with the same result, as one at a time.

    Returns:
        The best value, its signature sequence, its plan, the plans solved and the bound of
        the plans left unsolved.

    Raises:
        ValueError: No plan is feasible.
    """
    best_val, best_seq, best_plan = NEG, None, -1  # best_seq: the best plan's backtrack
    solved = 0
    bound = NEG
    order = np.argsort(-ub, kind="stable")
    ahead: Solved = {}
    step = 1
    for n, k in enumerate(order):
        if ub[k] <= NEG / 2:  # this and every later plan is infeasible
            break
        if best_seq is not None and ub[k] <= best_val + gap * abs(ub[k]):
            bound = float(ub[k])  # every remaining plan is bounded by ub[k]
            break
        if solved >= max_plans:
            bound = float(ub[k])
            break
        if k not in ahead:
            ks = order[n : n + min(step, max_plans - solved)]
            ahead, step = _solve_ahead(viterbi, ks[ub[ks] > NEG / 2], step, batch)
        val, seq = ahead[k]
        solved += 1
        if val > best_val:
            best_val, best_seq, best_plan = val, seq, k
    return _searched(best_val, best_seq, best_plan, solved, bound)


class _Groups:
    """Retraining plans in groups: each tenant's options cut into blocks of at most ``length``
    consecutive starts of one instance size, a group being one block per tenant. A group's
    bound holds for each of its plans without enumerating them: between the blocks' earliest
    and latest starts (and ends) a tenant's state (waiting, retraining, done) is uncertain, and
    there each step takes its best option over every state the group allows; where every
    tenant's state is certain the stretch's path bounds apply as for one plan."""

    def __init__(self, p: PlanProblem, opts: list[np.ndarray], length: int) -> None:
        self.p, self.opts = p, opts
        m = p.shape[0]
        self.first: list[np.ndarray] = []
        self.count: list[np.ndarray] = []
        for o in opts:
            cuts = [0]
            for k in range(1, len(o)):
                if o[k, 1] != o[k - 1, 1] or o[k, 1] < 0 or k - cuts[-1] >= length:
                    cuts.append(k)
            self.first.append(np.array(cuts, dtype=np.int64))
            self.count.append(np.diff(np.r_[cuts, len(o)]).astype(np.int64))
        grid = np.meshgrid(*[np.arange(len(f)) for f in self.first], indexing="ij")
        self.block = np.array(grid).reshape(m, -1)  # (M, G) block of each tenant

    def __len__(self) -> int:
        return self.block.shape[1]

    def bounds(self, tab: _OptionTables, paths: _PathBounds) -> np.ndarray:
        """(G,) bound of every group (NEG: no plan of it is feasible)."""
        p = self.p
        m, t_n = p.shape
        n_g = len(self)
        n_f = tab.best.shape[1]
        lo, hi, dur, size = [], [], [], []
        for i in range(m):
            f, c = self.first[i][self.block[i]], self.count[i][self.block[i]]
            o = self.opts[i]
            lo.append(o[f, 0])
            hi.append(o[f + c - 1, 0])
            size.append(o[f, 1])
            dur.append(np.where(o[f, 1] >= 0, p.dur[i, np.maximum(o[f, 1], 0)], 0))
        lo, hi, dur, size = (np.array(x) for x in (lo, hi, dur, size))  # (M, G)
        job = lo >= 0
        pts = np.concatenate(
            [np.zeros((1, n_g), dtype=np.int64), np.where(job, lo, 0), np.where(job, hi, 0),
             np.where(job, lo + dur, 0), np.where(job, hi + dur, 0),
             np.full((1, n_g), t_n, dtype=np.int64)]
        )  # fmt: skip
        pts = np.sort(np.minimum(pts, t_n), axis=0)
        base = 8 * (p.dur.shape[1] + 1)  # a tenant's code: states + 8 (size + 1)
        idle = np.where(p.pending, 1, 4)[:, None]  # a tenant without a job waits or is done
        keys = []
        for a in pts[:-1]:
            mask = np.where(
                job,
                1 * (a < hi) + 2 * ((a >= lo) & (a < hi + dur)) + 4 * (a >= lo + dur),
                idle,
            )
            code = mask + 8 * (size + 1)
            keys.append((code * base ** np.arange(m)[:, None]).sum(axis=0))
        keys = np.array(keys)  # (S, G) the state set of each stretch
        live = pts[1:] > pts[:-1]
        sets, inv = np.unique(np.where(live, keys, -1), return_inverse=True)
        inv = inv.reshape(keys.shape)
        prefix = np.zeros((len(sets), t_n + 1))
        single = np.full(len(sets), -1, dtype=np.int64)  # the one combination, if certain
        bad = np.zeros(len(sets), dtype=bool)
        for r, key in enumerate(sets.tolist()):
            if key < 0:
                continue
            states = []
            for i in range(m):
                code = (key // base**i) % base
                z, mk = code // 8 - 1, code % 8
                states.append(
                    [(-1, 0)] * (mk & 1) + [(z, 0)] * ((mk >> 1) & 1) + [(-1, 1)] * (mk >> 2)
                )
            best, combos = None, []
            for combo in itertools.product(*states):
                o = int(tab.occupancy(np.array([c[0] for c in combo]))[()])
                if o < 0:
                    continue
                f = sum(c[1] << i for i, c in enumerate(combo))
                combos.append(o * n_f + f)
                row = tab.best[o, f]
                best = row if best is None else np.maximum(best, row)
            if best is None:
                bad[r] = True
                continue
            prefix[r, 1:] = np.cumsum(best)
            if len(combos) == 1:
                single[r] = combos[0]
        total = np.zeros(n_g)
        flat = prefix.reshape(-1)
        for k in range(len(pts) - 1):
            a, b, r = pts[k], pts[k + 1], inv[k]
            part = flat[r * (t_n + 1) + b] - flat[r * (t_n + 1) + a]
            one = single[r]
            if paths is not None:
                path = paths.bound(np.maximum(one, 0) * (t_n + 1), a, b)
                part = np.where(one >= 0, np.minimum(part, path), part)
            total += np.where(b > a, np.where(bad[r], NEG, part), 0.0)
        return np.maximum(total, NEG)

    def plans(self, gs: np.ndarray) -> np.ndarray:
        """(M, P) every tenant's option index of every plan of groups ``gs``."""
        m = self.block.shape[0]
        first = np.stack([self.first[i][self.block[i, gs]] for i in range(m)])
        count = np.stack([self.count[i][self.block[i, gs]] for i in range(m)])
        n = count.prod(axis=0)
        grp = np.repeat(np.arange(len(gs)), n)
        rank = np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n)
        idx = np.empty((m, len(grp)), dtype=np.int64)
        for i in range(m - 1, -1, -1):
            c = count[i][grp]
            idx[i] = first[i][grp] + rank % c
            rank = rank // c
        return idx


def _grouped_best_first(
    group_ub: np.ndarray,
    expand: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]],
    refine: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]],
    viterbi: Callable[[np.ndarray], list[tuple[float, Callable[[], np.ndarray]]]],
    gap: float,
    max_plans: int,
    batch: int = 1,
    refine_batch: int = 512,
    expand_batch: int = 1024,
) -> tuple[float, np.ndarray, int, int, float]:
    """:func:`_branch_and_bound` over three bounds, each tighter and dearer than the last: a
    group's (``group_ub``), a plan's scalar bound (computed when ``expand`` lists the plans of
    the groups whose bound reaches the top, in batches) and its chained bound (``refine``,
    for the plans whose scalar bound reaches the top). A plan is solved exactly when its
    chained bound is the largest bound left, or at once when its bound from below (a path it
    can follow) is the best seen and above the best plan so far; the search stops when the
    best value is within ``gap`` of every bound left, or when ``max_plans`` are solved.

    Returns:
        As :func:`_branch_and_bound`, the plan being its index in ``expand``'s numbering.
    """
    best_val, best_seq, best_plan = NEG, None, -1
    solved = 0
    bound = NEG
    g_order = np.argsort(-group_ub, kind="stable")
    g_order = g_order[group_ub[g_order] > NEG / 2]
    g_next = 0
    pool = np.zeros(0, dtype=np.int64)  # expanded plans by scalar bound, not yet refined
    pool_ub = np.zeros(0)
    p_next = 0
    heap: list[tuple[float, int, int]] = []  # (-chained bound, plan, plan)
    ahead: Solved = {}
    step, r_step, g_step = 1, 64, 16
    done: set[int] = set()  # plans solved
    while True:
        g_top = float(group_ub[g_order[g_next]]) if g_next < len(g_order) else NEG
        c_top = float(pool_ub[p_next]) if p_next < len(pool) else NEG
        t_top = -heap[0][0] if heap else NEG
        top = max(g_top, c_top, t_top)
        if top <= NEG / 2:
            break
        if best_seq is not None and top <= best_val + gap * abs(top):
            bound = top
            break
        if g_top >= c_top and g_top >= t_top:
            ks, kub = expand(g_order[g_next : g_next + g_step])
            g_next += g_step
            g_step = min(2 * g_step, expand_batch)
            keep = kub > NEG / 2
            pool = np.concatenate([pool[p_next:], ks[keep]])
            pool_ub = np.concatenate([pool_ub[p_next:], kub[keep]])
            order = np.argsort(-pool_ub, kind="stable")
            pool, pool_ub, p_next = pool[order], pool_ub[order], 0
            continue
        if c_top >= t_top:
            ks = pool[p_next : p_next + r_step]
            upper, lower = refine(ks)
            tb = np.minimum(upper, pool_ub[p_next : p_next + r_step])
            for k, b in zip(ks.tolist(), tb.tolist(), strict=True):
                if b > NEG / 2:
                    heapq.heappush(heap, (-b, k, k))
            p_next += len(ks)
            r_step = min(2 * r_step, refine_batch)
            k = int(ks[np.argmax(lower)]) if len(ks) else -1
            if k >= 0 and lower.max() > best_val and k not in done and solved < max_plans:
                # The batch's best path from below is above the best plan: solve its plan now.
                # An early incumbent stops the search as soon as every bound left is within
                # the gap of it, instead of after refining every plan above the best bound.
                # (A solved plan is worth at least its path, so no earlier batch's is left.)
                val, seq = viterbi(np.array([k]))[0]
                done.add(k)
                solved += 1
                if val > best_val:
                    best_val, best_seq, best_plan = val, seq, k
            continue
        if solved >= max_plans:
            bound = top
            break
        k = heapq.heappop(heap)[2]
        if k in done:
            continue
        if k not in ahead:
            more = [x[2] for x in heapq.nsmallest(min(step, max_plans - solved) - 1, heap)]
            ks = np.array([k, *[x for x in more if x not in done and x != k]], dtype=np.int64)
            ahead, step = _solve_ahead(viterbi, ks, step, batch)
        val, seq = ahead[k]
        done.add(k)
        solved += 1
        if val > best_val:
            best_val, best_seq, best_plan = val, seq, k
    return _searched(best_val, best_seq, best_plan, solved, bound)


def _combinations(p: PlanProblem, tab: _OptionTables) -> np.ndarray:
    """Every combination ``o * F + f`` of retraining occupancy and completion flags some plan
    can reach: only pending tenants retrain, a tenant retraining is not done, a tenant with
    nothing to retrain is."""
    m, t_n = p.shape
    n_f = tab.best.shape[1]
    bits = (np.arange(n_f)[:, None] >> np.arange(m)) & 1 == 1  # (F, M)
    r = tab.occ[:, None, :]  # (O, 1, M)
    runs = r >= 0
    fits = np.where(runs, p.dur[np.arange(m), np.maximum(r, 0)] <= t_n, True)
    ok = (
        np.all(~runs | (p.pending & ~bits[None]), axis=2)
        & np.all(p.pending | (bits[None] & ~runs), axis=2)
        & np.all(fits, axis=2)
    )  # (O, F)
    return np.flatnonzero(ok.ravel())


def _upper_bounds(
    p: PlanProblem,
    cut: np.ndarray,
    key: np.ndarray,
    tab: _OptionTables,
    paths: _PathBounds | None = None,
) -> np.ndarray:
    """(P,) bound of every plan: the sum over its stretches of the smallest of the stretch's
    bounds (per-step best options with transitions free, prefix sums; and, with ``paths``, the
    two path bounds of :class:`_PathBounds`)."""
    best = tab.best
    n_t = best.shape[2] + 1
    prefix = np.concatenate([np.zeros((*best.shape[:2], 1)), np.cumsum(best, axis=2)], axis=2)
    prefix = prefix.reshape(-1)  # row o * F + f, column t
    n_p = cut.shape[1]
    live = cut[1:] > cut[:-1]  # (S, P)
    parts = np.zeros(live.shape)
    for k in range(len(cut) - 1):
        a, b, c = cut[k], cut[k + 1], key[k]
        row = np.maximum(c, 0) * n_t
        part = prefix[row + b] - prefix[row + a]
        if paths is not None:
            part = np.minimum(part, paths.bound(row, a, b))
        bad = (c < 0) | (part <= NEG / 2)
        parts[k] = np.where(live[k], np.where(bad, NEG, part), 0.0)
    total = parts.sum(axis=0)
    if paths is None or paths.first_pair is None:
        return np.maximum(total, NEG)
    # The first two stretches and the last two, each pair with its switch priced exactly.
    rank = np.cumsum(live, axis=0) - 1
    n_live = live.sum(axis=0)
    cols = np.arange(n_p)

    def nth(r: np.ndarray) -> np.ndarray:  # the stretch of live rank r of each plan
        return np.argmax(live & (rank == r[None]), axis=0)

    k0, k1 = nth(np.zeros(n_p, dtype=np.int64)), nth(np.ones(n_p, dtype=np.int64))
    kl, kl2 = nth(n_live - 1), nth(n_live - 2)
    c0, c1, cl, cl2 = (np.maximum(key[k, cols], 0) for k in (k0, k1, kl, kl2))
    e1, b1 = cut[k1, cols], cut[k1 + 1, cols]
    el, al2 = cut[kl, cols], cut[kl2, cols]
    ok = (n_live >= 2) & np.all(np.where(live, key >= 0, True), axis=0)
    first = ok & (c0 == paths.idle) & (paths.first_pair_ok[c1])
    last = ok & (cl == paths.done)
    # first pair: into the second stretch from the idle prefix, its end bounded backward
    pf = paths.first_pair[c1 * n_t + e1] - np.where(b1 < n_t - 1, paths.onto_low[c1 * n_t + b1], 0)
    pf = pf + _slack(pf)
    # last pair: the last-but-one stretch bounded forward, into the finished suffix
    pl = paths.last_pair[cl2 * n_t + el] - np.where(al2 > 0, paths.into_low[cl2 * n_t + al2], 0)
    pl = pl + _slack(pl)
    part0, part1 = parts[k0, cols], parts[k1, cols]
    partl, partl2 = parts[kl, cols], parts[kl2, cols]
    two = n_live == 2  # the pair is the whole plan: the first pair's value is exact there
    out = total
    out = np.where(first, np.minimum(out, total - part0 - part1 + pf), out)
    out = np.where(last & ~two, np.minimum(out, total - partl2 - partl + pl), out)
    both = first & last & (n_live >= 4)
    out = np.where(both, np.minimum(out, total - part0 - part1 - partl2 - partl + pf + pl), out)
    return np.maximum(out, NEG)


def brute_force(p: PlanProblem) -> tuple[float, np.ndarray]:
    """Optimum by enumerating every signature sequence (tiny problems only)."""
    t_n = p.shape[1]
    n = p.sig_u.shape[0]
    if n**t_n > 2_000_000:
        raise ValueError(f"{n}^{t_n} sequences is too many for brute force")
    best, arg = NEG, None
    for idx in np.ndindex(*(n,) * t_n):
        seq = np.array(idx)
        if not p.feasible(seq):
            continue
        val = p.value(seq)
        if val > best + 1e-9:
            best, arg = val, seq
    if arg is None:
        raise ValueError("no feasible sequence")
    return best, arg


# --------------------------------------------------------------------------- the policy

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
``added[m, u', u]`` is down for the tenant's ``psi[m]`` seconds (``min(added * psi, arrivals
during the overhead)``, the overhead spread over the seconds it lasts instead of clipped to one
step). :func:`~edgegym.baselines.migrator.build_problem` fills ``added`` and ``psi`` with the
cost rule the environment applies (``overhead.rule``,
:func:`edgegym.families.mig.dynamics.reconfigure`), so the planner's model is the environment's:

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

__all__ = [
    "BATCH",
    "NoFeasiblePlan",
    "Plan",
    "PlanProblem",
    "brute_force",
    "change_classes",
    "solve",
]

NEG = -1e18
#: At most this many retraining plans solved together (:func:`_branch_and_bound`).
BATCH = 64
#: Stretches between two switches up to this many steps long are chained exactly
#: (:meth:`_PathBounds.chain`).
SHORT = 8
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
        expected_served: optional (M, U, T) requests each option serves in each step, when the
            forecast is a distribution (``E[min(A, cap dt)]``) rather than a point.
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
    expected_served: np.ndarray | None = None

    @property
    def shape(self) -> tuple[int, int]:
        """(M, T)."""
        return self.arrivals.shape  # type: ignore[return-value]

    def served(self) -> np.ndarray:
        """(M, U, T) requests served by each option in each step (no reconfiguration)."""
        if self.expected_served is not None:
            return self.expected_served
        return np.minimum(self.arrivals[:, None, :], self.cap[:, :, None] * self.dt[None, None, :])

    def loss(self) -> np.ndarray:
        """(M, T, U, U) requests lost when switching from option u' to u at step t."""
        m, t_n = self.shape
        ends = np.cumsum(np.concatenate([[0.0], self.dt]))
        out = np.zeros((m, t_n, *self.added.shape[1:]))
        for i in range(m):
            # Arrivals during the psi seconds after the start of each step.
            during = np.zeros(t_n)
            for t in range(t_n):
                horizon = ends[t] + self.psi[i]
                k = t
                while k < t_n and ends[k] < horizon - 1e-12:
                    frac = min(1.0, (horizon - ends[k]) / self.dt[k])
                    during[t] += self.arrivals[i, k] * frac
                    k += 1
            out[i] = np.minimum(self.added[i][None] * self.psi[i], during[:, None, None])
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


@dataclass(frozen=True)
class _OptionTables:
    """The window's joint inference options and the bound tables over them.

    Attributes:
        joint: (J, M) the distinct joint inference options of the signatures.
        sig_at: (O, J) the signature of retraining occupancy o and joint option j (-1: none).
        occ_lookup: Retraining occupancy key -> its row o (-1: no signature has it); the key of
            sizes ``z_i`` (-1: none) is ``sum_i (z_i + 1) occ_base^i`` (:meth:`occupancy`).
        gain: (F, J, T) accuracy-weighted served requests per accuracy flag vector f (bit i:
            tenant i at post accuracy), joint option and step.
        best: (O, F, T) the upper bound of a step's gain over the options allowed under each
            occupancy (step 0 less the switch from the option held before the window).
    """

    joint: np.ndarray
    sig_at: np.ndarray
    occ_lookup: np.ndarray
    occ_base: int
    gain: np.ndarray
    best: np.ndarray
    occ: np.ndarray  # (O, M) the retraining size of each occupancy row per tenant (-1: none)

    def occupancy(self, sizes: np.ndarray) -> np.ndarray:
        """(...,) occupancy row of retraining sizes (..., M) (-1: the tenant runs no job), -1
        where no signature has that occupancy."""
        powers = self.occ_base ** np.arange(sizes.shape[-1])
        return self.occ_lookup[((sizes + 1) * powers).sum(axis=-1)]


def _option_tables(p: PlanProblem, served: np.ndarray, loss: np.ndarray) -> _OptionTables:
    m = p.shape[0]
    n_sig = p.sig_u.shape[0]
    # Joint inference options and the retraining occupancy of each signature.
    joint, j_of = np.unique(p.sig_u, axis=0, return_inverse=True)
    j_of = j_of.ravel()
    occ, o_of = np.unique(p.sig_r, axis=0, return_inverse=True)
    o_of = o_of.ravel()
    n_j, n_o = len(joint), len(occ)
    sig_at = np.full((n_o, n_j), -1, dtype=np.int64)
    sig_at[o_of, j_of] = np.arange(n_sig)
    # Served requests per joint option and tenant: (J, M, T).
    sj = np.stack([served[i][joint[:, i]] for i in range(m)], axis=1)
    # Upper bound tables: best[o, f, t] over options allowed under occupancy o, with flag
    # vector f (bit i: tenant i at post accuracy).
    flags = np.array([[(f >> i) & 1 for i in range(m)] for f in range(2**m)], dtype=bool)
    acc_f = np.where(flags, p.post[None, :], p.pre[None, :])  # (F, M)
    gain = np.einsum("fm,jmt->fjt", acc_f, sj)  # (F, J, T)
    allowed = sig_at >= 0  # (O, J)
    # Step 0 pays the switch from the option held before the window (every plan does).
    entry = np.zeros((len(acc_f), n_j))
    for i in range(m):
        prev = p.prev_u[i]
        if prev >= 0:
            u = joint[:, i]
            entry += acc_f[:, i : i + 1] * np.where(u != prev, loss[i, 0, prev, u], 0.0)[None]
    bound_gain = gain.copy()
    bound_gain[:, :, 0] -= entry
    best = np.where(allowed[:, None, :, None], bound_gain[None], NEG).max(axis=2)  # (O, F, T)
    base = p.dur.shape[1] + 1
    occ_lookup = np.full(base**m, -1, dtype=np.int64)
    occ_lookup[((occ + 1) * base ** np.arange(m)).sum(axis=1)] = np.arange(n_o)
    return _OptionTables(joint, sig_at, occ_lookup, base, gain, best, occ)


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
    ahead: dict[int, tuple[float, Callable[[], np.ndarray]]] = {}
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
            ks = ks[ub[ks] > NEG / 2]
            ahead = dict(zip(ks.tolist(), viterbi(ks), strict=True))
            step = min(2 * step, batch)
        val, seq = ahead[k]
        solved += 1
        if val > best_val:
            best_val, best_seq, best_plan = val, seq, k
    if best_seq is None:
        raise NoFeasiblePlan("no feasible allocation sequence for this window")
    return best_val, best_seq(), best_plan, solved, bound


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
    chained bound is the largest bound left; the search stops when the best value is within
    ``gap`` of every bound left, or when ``max_plans`` are solved.

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
    ahead: dict[int, tuple[float, Callable[[], np.ndarray]]] = {}
    step, r_step, g_step = 1, 64, 16
    hint = (NEG, -1)  # the largest lower bound seen and its plan
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
            if len(ks) and lower.max() > hint[0]:
                hint = (float(lower.max()), int(ks[np.argmax(lower)]))
            p_next += len(ks)
            r_step = min(2 * r_step, refine_batch)
            continue
        if solved >= max_plans:
            bound = top
            break
        if hint[0] > best_val and hint[1] not in done:
            k = hint[1]  # the best path seen from below: a plan worth solving first
        else:
            k = heapq.heappop(heap)[2]
            if k in done:
                continue
        if k not in ahead:
            more = [x[2] for x in heapq.nsmallest(min(step, max_plans - solved) - 1, heap)]
            ks = np.array([k, *[x for x in more if x not in done and x != k]], dtype=np.int64)
            ahead = dict(zip(ks.tolist(), viterbi(ks), strict=True))
            step = min(2 * step, batch)
        val, seq = ahead[k]
        done.add(k)
        solved += 1
        if val > best_val:
            best_val, best_seq, best_plan = val, seq, k
    if best_seq is None:
        raise NoFeasiblePlan("no feasible allocation sequence for this window")
    return best_val, best_seq(), best_plan, solved, bound


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


def _segments(
    p: PlanProblem, start: np.ndarray, end: np.ndarray, size: np.ndarray, tab: _OptionTables
) -> tuple[np.ndarray, np.ndarray]:
    """Every plan's stretches between the starts and ends of its jobs.

    Returns:
        (2M + 2, P) the sorted stretch boundaries of each plan (stretch k is
        ``[cut[k], cut[k + 1])``, empty where they are equal), and per stretch and plan
        (2M + 1, P) its combination ``o * F + f`` of retraining occupancy row o and completion
        flags f (bit i: tenant i at post accuracy; -1: no signature has the occupancy).
    """
    m, t_n = p.shape
    n_p = start.shape[1]
    n_f = tab.best.shape[1]
    cut = np.concatenate(
        [np.zeros((1, n_p), dtype=np.int64), np.maximum(start, 0), np.maximum(end, 0),
         np.full((1, n_p), t_n, dtype=np.int64)]
    )  # fmt: skip
    cut = np.sort(np.minimum(cut, t_n).astype(np.int32), axis=0)  # (2M + 2, P)
    key = np.empty((len(cut) - 1, n_p), dtype=np.int32)
    bits = (1 << np.arange(m))[:, None]
    sizes = size.astype(np.int32)
    for k, a in enumerate(cut[:-1]):
        running = (a >= start) & (a < end) & (start >= 0)
        done = np.where(p.pending[:, None], (end >= 0) & (a >= end), True)
        o = tab.occupancy(np.where(running, sizes, -1).T)
        key[k] = np.where(o >= 0, o * n_f + (done * bits).sum(axis=0), -1)
    return cut, key


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


def _slack(x: np.ndarray) -> np.ndarray:
    """Room for rounding added to a path bound: its sums run in another order than the exact
    Viterbi's, so a bound that is tight could otherwise come out below the value it bounds."""
    return 1e-9 + 1e-12 * np.abs(x)


@dataclass(frozen=True)
class _PathBounds:
    """Bounds on the paths inside a stretch ``[a, b)`` under each combination c of retraining
    occupancy and completion flags, for every ``a < b``, from two Viterbi passes over the whole
    window per combination (the exact value of every stretch would take one pass per start).

    Forward, under c's tables: ``fwd[c, t, j]`` is the best path over ``[0, t]`` ending at j
    (the switch from the option held before the window included) and ``into[c, t, j]`` the
    best path over ``[0, t)`` followed by a switch into j at step t. A path over ``[a, b)``
    from j to j' extends such a prefix to a path over ``[0, b)`` ending at j', so it is worth
    at most ``fwd[c, b - 1, j'] - into[c, a, j]`` (exactly ``fwd[c, b - 1, j']`` at best where
    a = 0). Backward, by symmetry: ``bwd[c, t, j]`` is the best path over ``[t, T)`` starting
    at j and ``onto[c, t, j]`` a switch at step t out of j followed by the best path over
    ``[t, T)``; the path is worth at most ``bwd[c, a, j] - onto[c, b, j]`` (at best
    ``bwd[c, a, j]`` where b = T).

    Both bounds are separable in the path's first and last option, so a retraining plan's
    stretches chain through the real switches between them in a few Viterbi steps
    (:meth:`chain`); the scalar form (:meth:`bound`) drops those switches and bounds every plan
    at once.

    Attributes:
        row: (O * F,) the row c of occupancy o and flags f at ``o * F + f`` (-1: not needed).
        allowed: (C, J) the options each combination allows.
        fwd, into, bwd, onto: (C, T, J) (``into[:, 0]`` and ``onto[:, 0]`` unused).
        fwd_best, into_low, bwd_best, onto_low: ``max_j fwd[c, t - 1]``, ``min_j into[c, t]``,
            ``max_j bwd[c, t]``, ``min_j onto[c, t]`` over allowed j (0 where the stretch
            reaches the window's edge: ``into_low[c, 0]``, ``onto_low[c, T]``), flat, at
            ``(o * F + f) * (T + 1) + t`` (rows no stretch needs are 0).
        idle, done: the combinations ``o * F + f`` before any job starts and after every job
            ends (-1: none).
        first_pair: at ``(o * F + f) * (T + 1) + t``, the best path over ``[0, t)`` under
            ``idle`` followed by the switch at t into a path over ``[t, T)`` under the
            combination (the backward bound of a stretch from t that follows the idle one:
            ``first_pair - onto_low`` at its end); ``first_pair_ok``: the combinations whose
            flags are idle's (the switch priced with them).
        last_pair: at ``(o * F + f) * (T + 1) + t``, the best path over ``[0, t)`` under the
            combination followed by the switch at t into the best path over ``[t, T)`` under
            ``done`` (the forward bound of a stretch ending at t: ``last_pair - into_low`` at
            its start).
    """

    row: np.ndarray
    allowed: np.ndarray
    fwd: np.ndarray
    into: np.ndarray
    bwd: np.ndarray
    onto: np.ndarray
    fwd_best: np.ndarray
    into_low: np.ndarray
    bwd_best: np.ndarray
    onto_low: np.ndarray
    idle: int = -1
    done: int = -1
    gain: np.ndarray | None = None  # (F, T, J) the gain of every option per flags and step
    gain_cum: np.ndarray | None = None  # (F, T + 1, J) its sums over steps [0, t)
    first_pair: np.ndarray | None = None
    first_pair_ok: np.ndarray | None = None
    last_pair: np.ndarray | None = None

    def bound(self, row: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Bound of the best path over ``[a, b)`` under the combination ``row // (T + 1)``
        (arrays of one shape), the switches into and out of the stretch free."""
        fwd = self.fwd_best[row + b] - self.into_low[row + a]
        bwd = self.bwd_best[row + a] - self.onto_low[row + b]
        out = np.minimum(fwd, bwd)
        return out + _slack(out)

    def chain(
        self,
        trans: _TransitionCache,
        cut: np.ndarray,
        row: np.ndarray,
        flag: np.ndarray,
        lower: bool = True,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Bounds from above and from below of B plans with stretches ``[cut[k], cut[k + 1])``
        under combinations ``row[k]`` (-1: none) and flags ``flag[k]`` ((S + 1, B), (S, B),
        (S, B)): a Viterbi over the stretch boundaries, each switch between stretches priced
        exactly. From above, each stretch takes the smaller of its two separable bounds, or
        its exact Viterbi where it is at most ``SHORT`` steps long; from below (the value of a
        path the plan can follow), a long stretch stays on the option it is entered with.

        Returns:
            (B,) and (B,): each plan's upper and lower bound (NEG without ``lower``).
        """
        assert self.gain is not None and self.gain_cum is not None
        t_n = self.fwd.shape[1]
        n_b = cut.shape[1]
        rows = np.arange(n_b)
        v = np.full((n_b, self.fwd.shape[2]), NEG)
        lv = v.copy()
        out = np.full(n_b, NEG)
        low = np.full(n_b, NEG)
        for k in range(len(cut) - 1):
            a, b, c = cut[k], cut[k + 1], row[k]
            live = b > a
            if not live.any():
                continue
            ok = self.allowed[c]
            first = live & (a == 0)
            if first.any():
                v[first] = self.fwd[c[first], b[first] - 1]
                lv[first] = v[first]
            inner = live & (a > 0)
            if inner.any():
                i = rows[inner]
                ai, bi, ci, fi, oki = a[i], b[i], c[i], flag[k, i], ok[i]
                u = np.where(oki, trans.best_into_at(v[i], ai, fi), NEG)
                lu = np.where(oki, trans.best_into_at(lv[i], ai, fi), NEG) if lower else u
                last = bi == t_n
                head = (u + self.bwd[ci, ai]).max(axis=1)
                end = np.minimum(bi, t_n - 1)
                fwd = (u - np.where(oki, self.into[ci, ai], 0.0)).max(axis=1)[:, None]
                fwd = fwd + self.fwd[ci, bi - 1]
                bwd = head[:, None] - self.onto[ci, end]
                nxt = np.where(oki, np.minimum(fwd, bwd), NEG)
                stay = self.gain_cum[fi, bi] - self.gain_cum[fi, ai]
                lnxt = np.where(oki, lu + stay, NEG)
                short = np.flatnonzero(~last & (bi - ai <= SHORT))
                if len(short):  # a short stretch step by step: exact, and cheap
                    sa, sb, sc, sf, so = ai[short], bi[short], ci[short], fi[short], oki[short]
                    nxt[short] = self._steps(trans, u[short], sa, sb, sc, sf, so)
                    if lower:
                        lnxt[short] = self._steps(trans, lu[short], sa, sb, sc, sf, so)
                v[i] = np.where(last[:, None], v[i], nxt)
                lv[i] = np.where(last[:, None], lv[i], lnxt)
                out[i] = np.where(last, head, out[i])
                low[i] = np.where(last, (lu + self.bwd[ci, ai]).max(axis=1), low[i])
            ends = live & (b == t_n) & (a == 0)
            out = np.where(ends, v.max(axis=1), out)
            low = np.where(ends, lv.max(axis=1), low)
        bad = np.any((cut[1:] > cut[:-1]) & (row < 0), axis=0)  # a stretch nothing allows
        out, low = np.where(bad, NEG, out), np.where(bad | (not lower), NEG, low)
        return np.maximum(out + _slack(out), NEG), np.maximum(low - _slack(low), NEG)

    def _steps(
        self,
        trans: _TransitionCache,
        u: np.ndarray,
        a: np.ndarray,
        b: np.ndarray,
        c: np.ndarray,
        flag: np.ndarray,
        ok: np.ndarray,
    ) -> np.ndarray:
        """(B, J) the best path over ``[a, b)`` under combinations c ending at each option,
        entered with values ``u`` at step a (the exact Viterbi of the stretch)."""
        assert self.gain is not None
        v = np.where(ok, u + self.gain[flag, a], NEG)
        for d in range(1, int((b - a).max())):
            go = np.flatnonzero(a + d < b)
            t = a[go] + d
            w = trans.best_into_at(v[go], t, flag[go])
            v[go] = np.where(ok[go], w + self.gain[flag[go], t], NEG)
        return v


def _mid_values(
    p: PlanProblem,
    tab: _OptionTables,
    trans: _TransitionCache,
    paths: _PathBounds,
    cut: np.ndarray,
    key: np.ndarray,
) -> np.ndarray:
    """(B,) exact value of B plans (stretches ``cut``, ``key`` as :func:`_segments` gives
    them), step by step only between their first and last switch of stretch: the first stretch
    starts at step 0, so the forward pass of its combination is that plan's own best path up
    to its end (``paths.fwd``), and the last ends at T, where the backward pass of its
    combination is its own best path onward (``paths.bwd``). The same Viterbi as
    :func:`_viterbi` (every step its own stretch), its sums in another order."""
    t_n = p.shape[1]
    n_f = tab.best.shape[1]
    n_b = cut.shape[1]
    rows = np.arange(n_b)
    live = cut[1:] > cut[:-1]  # (S, B)
    inner = (cut > 0) & (cut < t_n)
    first = np.where(inner.any(axis=0), np.where(inner, cut, t_n).min(axis=0), t_n)
    last = np.where(inner.any(axis=0), np.where(inner, cut, 0).max(axis=0), t_n)
    k_first = np.argmax(live, axis=0)  # the stretch from 0
    k_last = len(live) - 1 - np.argmax(live[::-1], axis=0)  # the stretch to T
    c_first = paths.row[np.maximum(key[k_first, rows], 0)]
    c_last = paths.row[np.maximum(key[k_last, rows], 0)]
    out = paths.fwd_best.reshape(-1, t_n + 1)[np.maximum(key[k_first, rows], 0), t_n].copy()
    todo = first < t_n
    if not todo.any():
        return out
    gain = tab.gain  # (F, J, T)
    allowed = tab.sig_at >= 0  # (O, J)
    n_keys = len(paths.row) + 1  # combination keys, -1 shifted to 0
    # Plans that share their stretches so far share their values: one row per group.
    grp = np.full(n_b, -1)  # each plan's group (-1: not started or finished)
    gv = np.zeros((0, gain.shape[1]))  # each group's values
    for t in range(int(first[todo].min()), int(last[todo].max()) + 1):
        k = (cut[1:-1] <= t).sum(axis=0)  # the stretch holding step t
        c = key[k, rows]
        start = todo & (first == t)
        act = (grp >= 0) | start
        parent = np.where(start, len(gv) + c_first, grp)  # a starter's values: its pass
        ids, inv = np.unique(parent[act] * n_keys + c[act] + 1, return_inverse=True)
        g_parent, g_c = ids // n_keys, ids % n_keys - 1
        g_f = np.where(g_c >= 0, g_c % n_f, 0)
        src = np.concatenate([gv, paths.fwd[:, t - 1]]) if start.any() else gv
        u = trans.best_into(src[g_parent], t, g_f)
        new = np.full(n_b, -1)
        new[act] = inv.ravel()
        end = todo & (last == t)
        if end.any():
            out[end] = (u[new[end]] + paths.bwd[c_last[end], t]).max(axis=1)
        ok = allowed[np.maximum(g_c, 0) // n_f] & (g_c >= 0)[:, None]
        gv = np.where(ok, u + gain[g_f, :, t], NEG)
        grp = np.where(end, -1, new)
    return np.maximum(out, NEG)


def _path_bounds(
    p: PlanProblem,
    tab: _OptionTables,
    trans: _TransitionCache,
    loss: np.ndarray,
    cut: np.ndarray | None = None,
    key: np.ndarray | None = None,
    keys: np.ndarray | None = None,
) -> _PathBounds | None:
    """The forward and backward passes of :class:`_PathBounds` for the combinations ``keys``
    (``o * F + f``), or every combination some stretch of plans ``cut``, ``key``
    (:func:`_segments`) needs, all side by side (None: none)."""
    m, t_n = p.shape
    n_o, n_f = tab.best.shape[:2]
    if keys is None:
        present = np.zeros(n_o * n_f + 1, dtype=bool)
        present[np.where(cut[1:] > cut[:-1], key, -1)] = True  # -1: the spare last entry
        keys = np.flatnonzero(present[:-1])
    if not len(keys):
        return None
    row = np.full(n_o * n_f, -1, dtype=np.int64)
    row[keys] = np.arange(len(keys))
    c_o, c_f = keys // n_f, keys % n_f
    allowed = tab.sig_at[c_o] >= 0  # (C, J)
    gain = np.where(allowed[:, :, None], tab.gain[c_f], NEG)  # (C, J, T)
    n_c, n_j = len(keys), tab.joint.shape[0]
    accs = np.where((c_f[:, None] >> np.arange(m)) & 1 == 1, p.post, p.pre)  # (C, M)
    entry = np.zeros((n_c, n_j))
    for i in range(m):
        prev = p.prev_u[i]
        if prev >= 0:
            u = tab.joint[:, i]
            entry += accs[:, i, None] * np.where(u != prev, loss[i, 0, prev, u], 0.0)[None]
    big = np.where(allowed, 0.0, -NEG)[:, None, :]  # options not allowed never give the least
    fwd = np.empty((n_c, t_n, n_j))
    into = np.zeros((n_c, t_n, n_j))
    fwd[:, 0] = gain[:, :, 0] - entry
    for t in range(1, t_n):
        into[:, t] = trans.best_into(fwd[:, t - 1], t, c_f)
        fwd[:, t] = into[:, t] + gain[:, :, t]
    bwd = np.empty((n_c, t_n, n_j))
    onto = np.zeros((n_c, t_n, n_j))
    bwd[:, t_n - 1] = gain[:, :, t_n - 1]
    for t in range(t_n - 1, 0, -1):
        onto[:, t] = trans.best_onward(bwd[:, t], t, c_f)
        bwd[:, t - 1] = onto[:, t] + gain[:, :, t - 1]
    flat = np.zeros((4, n_o * n_f, t_n + 1))  # fwd_best, into_low, bwd_best, onto_low
    flat[0, keys, 1:] = fwd.max(axis=2)
    flat[1, keys, 1:t_n] = (into + big).min(axis=2)[:, 1:]
    flat[2, keys, :t_n] = bwd.max(axis=2)
    flat[3, keys, 1:t_n] = (onto + big).min(axis=2)[:, 1:]
    flat = flat.reshape(4, -1)
    pairs = {}
    o_idle = int(tab.occupancy(np.full(m, -1))[()])
    f_idle = int(sum(1 << i for i in range(m) if not p.pending[i]))
    idle, done = o_idle * n_f + f_idle, o_idle * n_f + n_f - 1
    if o_idle >= 0 and row[idle] >= 0 and row[done] >= 0:
        neg = np.where(allowed, 0.0, NEG)[:, None, :]  # (C, 1, J)
        first = np.zeros((n_o * n_f, t_n + 1))
        first[keys, 1:t_n] = (into[row[idle], None, 1:] + bwd[:, 1:] + neg).max(axis=2)
        last = np.zeros((n_o * n_f, t_n + 1))
        last[keys, 1:t_n] = (fwd[:, :-1] + onto[row[done], None, 1:] + neg).max(axis=2)
        ok = np.zeros(n_o * n_f, dtype=bool)
        ok[keys] = c_f == f_idle
        pairs = {"idle": idle, "done": done, "first_pair": first.reshape(-1),
                 "first_pair_ok": ok, "last_pair": last.reshape(-1)}  # fmt: skip
    gain_ftj = np.ascontiguousarray(tab.gain.transpose(0, 2, 1))
    cum = np.concatenate([np.zeros((n_f, 1, n_j)), np.cumsum(gain_ftj, axis=1)], axis=1)
    return _PathBounds(
        row, allowed, fwd, into, bwd, onto, *flat, **pairs, gain=gain_ftj, gain_cum=cum
    )


def change_classes(p: PlanProblem, loss: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The class of every inference option and the entry loss ``l[i, t, u]``, when the
    problem's switch losses have Eq. 11's shape: options fall into classes (a switch inside a
    class is free) and ``loss[i, t, u', u]`` is ``l[i, t, u]`` whenever ``u'``'s class differs
    from ``u``'s, whatever ``u'`` is (checked exactly, over the options the signatures use).

    Returns:
        (M, U) class index per tenant and option and (M, T, U) the loss of entering option u
        from another class at step t; ``None`` where the loss depends on the option left (the
        ``per-instance`` rule).
    """
    m, t_n = p.shape
    n_u = p.added.shape[1]
    cls = np.zeros((m, n_u), dtype=np.int64)
    enter = np.zeros((m, t_n, n_u))
    for i in range(m):
        used = np.unique(p.sig_u[:, i])
        free = (p.added[i] == 0) & (p.added[i].T == 0)  # switching costs nothing either way
        label = np.arange(n_u)  # an option no signature uses keeps a class of its own
        for u in used:  # classes: connected components of the free switches
            for w in used[free[u, used]]:
                a, b = label[u], label[w]
                if a != b:
                    label[label == max(a, b)] = min(a, b)
        cls[i] = np.unique(label, return_inverse=True)[1]
        differ = cls[i][:, None] != cls[i][None, :]  # (u', u)
        enter[i] = np.where(differ[None], loss[i], 0.0).max(axis=1)
        expected = np.where(differ[None], enter[i][:, None, :], 0.0)
        if not np.array_equal(loss[i][:, used][:, :, used], expected[:, used][:, :, used]):
            return None
    return cls, enter


class _TransitionCache:
    """The Viterbi step over joint options: the best predecessor value of every option
    (``max over j' of v[j'] - cost(j', j)``, with ``cost`` the tenants' accuracy-weighted
    switch losses), and the predecessor itself for the backtrack.

    Under Eq. 11's shape (:func:`change_classes`) a tenant's cost depends only on whether its
    class changes, so the step needs no (J, J) table: for every set S of tenants that keep
    their class, the best ``v`` over the options that agree with j on S's classes (one grouped
    maximum) less the loss of the tenants outside S; the best over the sets is the exact
    maximum, bit for bit the dense one's (costs only grow when a set is taken smaller than the
    exact one, and floating-point sums of non-negative terms are monotone). Other cost rules
    take the dense (J, J) table, built per loss table and completion state when first needed.
    """

    def __init__(self, p: PlanProblem, loss: np.ndarray, joint: np.ndarray) -> None:
        self.loss = loss  # (M, T, U, U)
        self.joint = joint  # (J, M)
        t_n = loss.shape[1]
        same = np.all(loss[:, 1:] == loss[:, :-1], axis=(0, 2, 3))
        idx = np.arange(t_n)
        # key[t]: the first step of t's run of identical loss tables.
        self.key = np.maximum.accumulate(np.where(np.r_[True, ~same], idx, 0))
        self.cache: dict[int, np.ndarray] = {}
        self.weighted: dict[tuple[int, int], np.ndarray] = {}
        self.pre, self.post = p.pre, p.post
        classes = change_classes(p, loss)
        self.enter = None if classes is None else classes[1]
        if classes is not None:
            self._groups(classes[0])
            self._every_table()

    def _every_table(self) -> None:
        """:meth:`weighted_at` of every step and completion state at once (the same sums, in
        the same order): ``every[pos[key[t]], flag]``."""
        keys = np.unique(self.key)
        self.every_pos = np.zeros(int(self.key.max()) + 1, dtype=np.int64)
        self.every_pos[keys] = np.arange(len(keys))
        n_flags = len(self.keep)
        acc = np.stack([self.acc(f) for f in range(n_flags)])  # (F, M)
        out = np.zeros((len(keys), n_flags, *self.group.shape))
        for i in range(self.joint.shape[1]):
            term = acc[None, :, i, None] * self.enter[i][keys][:, self.joint[:, i]][:, None, :]
            out = out + np.where(self.keep[None, None, :, i, None], 0.0, term[:, :, None, :])
        self.every = np.ascontiguousarray(out)

    def _groups(self, cls: np.ndarray) -> None:
        """Per set S of tenants keeping their class (bit i: tenant i): the options grouped by
        their classes on S, laid end to end (``order``, ``starts``), and each option's group
        (``group``: (2^M, J) into the concatenated groups)."""
        n_j, m = self.joint.shape
        self.keep = np.array([[(s >> i) & 1 for i in range(m)] for s in range(2**m)], dtype=bool)
        order, starts, group = [], [], []
        n_groups = 0
        for s, keep in enumerate(self.keep):
            key = np.stack([cls[i, self.joint[:, i]] for i in range(m) if keep[i]] or
                           [np.zeros(n_j, dtype=np.int64)], axis=1)  # fmt: skip
            gid = np.unique(key, axis=0, return_inverse=True)[1].ravel()
            perm = np.argsort(gid, kind="stable")
            first = np.flatnonzero(np.r_[True, gid[perm][1:] != gid[perm][:-1]])
            order.append(perm)
            starts.append(first + s * n_j)
            group.append(gid + n_groups)
            n_groups += len(first)
        self.order = np.concatenate(order)
        self.flat_order = self.order + np.repeat(np.arange(len(self.keep)) * n_j, n_j)
        self.starts = np.concatenate(starts)
        self.group = np.stack(group)

    def at(self, t: int) -> np.ndarray:
        """(M, J, J) costs of switching at step ``t``."""
        key = int(self.key[t])
        out = self.cache.get(key)
        if out is None:
            m = self.joint.shape[1]
            out = np.stack(
                [self.loss[i, key][self.joint[:, i]][:, self.joint[:, i]] for i in range(m)]
            )
            self.cache[key] = out
        return out

    def acc(self, flag: int) -> np.ndarray:
        """(M,) the tenants' accuracies in completion state ``flag`` (bit i: tenant i at post
        accuracy)."""
        return np.where((flag >> np.arange(len(self.post))) & 1 == 1, self.post, self.pre)

    def weighted_at(self, t: int, flag: int) -> np.ndarray:
        """``sum_i acc[i] * cost_i`` of switching at step ``t`` in completion state ``flag``:
        (J, J) from j' to j, or under Eq. 11's shape (2^M, J) the cost of entering j for the
        tenants outside each set S."""
        ck = (int(self.key[t]), int(flag))
        if self.enter is not None:
            return self.every[self.every_pos[ck[0]], ck[1]]
        out = self.weighted.get(ck)
        if out is None:
            acc = self.acc(flag)
            tr = self.at(t)
            out = acc[0] * tr[0]
            for i in range(1, tr.shape[0]):
                out = out + acc[i] * tr[i]
            self.weighted[ck] = out
        return out

    def best_into(self, v: np.ndarray, t: int, flags: np.ndarray) -> np.ndarray:
        """(B, J) ``max over j' of v[b, j'] - cost(j', j)`` for a switch at step ``t`` of B
        plans in completion states ``flags`` (B,)."""
        if self.enter is None:
            return np.stack(
                [(v[b][:, None] - self.weighted_at(t, f)).max(axis=0) for b, f in enumerate(flags)]
            )
        return self._grouped(v, self._tables(t, flags))

    def _grouped(self, v: np.ndarray, w: np.ndarray) -> np.ndarray:
        """``max over S of (the best v among the options that agree with j on S's classes)
        - w[:, S, j]``: (B, J) from values (B, J) and costs (B, 2^M, J)."""
        n_b = len(v)
        n_s, n_j = self.group.shape
        best = np.maximum.reduceat(np.take(v, self.order, axis=1), self.starts, axis=1)
        x = np.take(best, self.group.ravel(), axis=1).reshape(n_b, n_s, n_j)
        x -= w
        out = x[:, 0].copy()
        for s in range(1, n_s):
            np.maximum(out, x[:, s], out=out)
        return out

    def best_into_at(self, v: np.ndarray, t: np.ndarray, flags: np.ndarray) -> np.ndarray:
        """:meth:`best_into` with a step per row (``t``, ``flags``: (B,))."""
        if self.enter is None:
            return np.stack(
                [(v[b][:, None] - self.weighted_at(int(t[b]), f)).max(axis=0)
                 for b, f in enumerate(flags)]
            )  # fmt: skip
        n_f = self.every.shape[1]
        rows = self.every_pos[self.key[t]] * n_f + flags
        w = np.take(self.every.reshape(-1, *self.group.shape), rows, axis=0)
        return self._grouped(v, w)

    def best_onward(self, v: np.ndarray, t: int, flags: np.ndarray) -> np.ndarray:
        """(B, J) ``max over j' of v[b, j'] - cost(j, j')`` for a switch at step ``t`` out of
        every option j (the backward step; the same grouping as :meth:`best_into`, with the
        cost of entering j' taken before the grouped maximum)."""
        if self.enter is None:
            return np.stack(
                [(v[b][None, :] - self.weighted_at(t, f)).max(axis=1) for b, f in enumerate(flags)]
            )
        n_s, n_j = self.group.shape
        x = (v[:, None, :] - self._tables(t, flags)).reshape(len(v), n_s * n_j)
        best = np.maximum.reduceat(np.take(x, self.flat_order, axis=1), self.starts, axis=1)
        y = np.take(best, self.group.ravel(), axis=1).reshape(len(v), n_s, n_j)
        out = y[:, 0].copy()
        for s in range(1, n_s):
            np.maximum(out, y[:, s], out=out)
        return out

    def _tables(self, t: int, flags: np.ndarray) -> np.ndarray:
        """(B, 2^M, J) the table of :meth:`weighted_at` per completion state in ``flags``."""
        return self.every[self.every_pos[self.key[t]]][flags]

    def best_from(self, v: np.ndarray, t: int, flag: int, j: int) -> int:
        """The predecessor of option ``j`` at step ``t`` (the first maximiser, as the dense
        table's ``argmax`` picks it)."""
        key = int(self.key[t])
        acc = self.acc(flag)
        m = self.joint.shape[1]
        w = acc[0] * self.loss[0, key, self.joint[:, 0], self.joint[j, 0]]
        for i in range(1, m):
            w = w + acc[i] * self.loss[i, key, self.joint[:, i], self.joint[j, i]]
        return int(np.argmax(v - w))


def _table_breaks(p: PlanProblem, served: np.ndarray, loss: np.ndarray) -> np.ndarray:
    """(T,) bool: step t starts a new stretch of identical tables (always True at 0).

    Inside a stretch where gains and transition costs do not change, a path that stays on one
    option is optimal whenever the costs satisfy the triangle inequality (any detour can be
    replaced by its best option, entered and left directly, at no greater cost). The inequality
    is checked on each stretch's loss table: the added capacity of a multiset difference is
    subadditive and ``min(., D)`` keeps it so; Eq. 10's cost (the whole new capacity, charged
    only when the instance or GPC count changes) can violate it (a switch to an option with the
    same counts is free), unless the arrivals during Psi cap every charge, as they usually do.
    Inside a stretch whose table violates it every step is its own stretch, so the path stays
    exact.
    """
    t_n = p.shape[1]
    brk = np.ones(t_n, dtype=bool)
    if t_n < 2:
        return brk
    same = (
        np.all(served[:, :, 1:] == served[:, :, :-1], axis=(0, 1))
        & np.all(loss[:, 1:] == loss[:, :-1], axis=(0, 2, 3))
        & (p.dt[1:] == p.dt[:-1])
    )
    brk[1:] = ~same
    starts = np.flatnonzero(brk)
    ends = np.append(starts[1:], t_n)
    for a, b in zip(starts, ends, strict=True):
        lt = loss[:, a]  # (M, U, U)
        diag = np.all(np.abs(np.einsum("mii->mi", lt)) < 1e-12)
        tri = np.all(lt[:, :, None, :] <= lt[:, :, :, None] + lt[:, None, :, :] + 1e-9)
        if not (tri and diag):
            brk[a:b] = True
    return brk


def _viterbi(
    p: PlanProblem,
    start: np.ndarray,
    end: np.ndarray,
    size: np.ndarray,
    gain_cum: np.ndarray,
    trans: _TransitionCache,
    loss: np.ndarray,
    tab: _OptionTables,
    breaks: np.ndarray,
) -> list[tuple[float, Callable[[], np.ndarray]]]:
    """Exact best sequence for each of B retraining plans (``start``, ``end``, ``size``: (M, B);
    a longest path over joint options): its value and the backtrack that returns it (called for
    the best plan only).

    The path may change option only where a stretch of identical tables starts (``breaks``)
    or where a retraining job starts or ends; see :func:`_table_breaks`. Several plans are
    solved together only where every step starts a stretch (their stretches are then the
    same), each with the operations it would get alone. ``trans`` caches the accuracy-weighted
    transition costs per loss table and completion state.
    """
    m, t_n = p.shape
    n_b = start.shape[1]
    brk = breaks.copy()
    if n_b > 1 and not brk.all():
        raise ValueError("plans are solved together only when every step starts a stretch")
    for t in (*start.ravel(), *end.ravel()):
        if 0 <= t < t_n:
            brk[t] = True
    seg = np.flatnonzero(brk)
    seg_end = np.append(seg[1:], t_n)
    n_j = gain_cum.shape[1]
    # Per plan and stretch: retraining occupancy, completion flags, accuracies and gains.
    s_, st, en = seg[None, :, None], start.T[:, None, :], end.T[:, None, :]
    running = (st <= s_) & (s_ < en)  # (B, S, M)
    done = np.where(p.pending, (en >= 0) & (s_ >= en), True)
    flags = (done * (1 << np.arange(m))).sum(axis=2)  # (B, S)
    accs = np.where(done, p.post, p.pre)  # (B, S, M)
    opts = tab.occupancy(np.where(running, size.T[:, None, :], -1))  # (B, S)
    sig_at, joint = tab.sig_at, tab.joint
    ok = (sig_at[np.maximum(opts, 0)] >= 0) & (opts >= 0)[..., None]  # (B, S, J)
    gains = np.where(ok, gain_cum[flags, :, seg_end] - gain_cum[flags, :, seg], NEG)
    a0 = int(seg[0])
    cost = np.zeros((n_b, n_j))
    for i in range(m):
        prev = p.prev_u[i]
        if prev >= 0:
            u = joint[:, i]
            cost += accs[:, 0, i, None] * np.where(u != prev, loss[i, a0, prev, u], 0.0)
    v = gains[:, 0] - cost
    values = [v]  # each stretch's values before the next switch, for the backtrack
    for k in range(1, len(seg)):
        v = trans.best_into(v, int(seg[k]), flags[:, k]) + gains[:, k]
        values.append(v)
    j_end = np.argmax(v, axis=1)

    def backtrack(b: int) -> np.ndarray:
        j = int(j_end[b])
        seq = np.zeros(t_n, dtype=np.int64)
        for k in range(len(seg) - 1, -1, -1):
            seq[seg[k] : seg_end[k]] = sig_at[opts[b, k], j]
            if k:
                j = trans.best_from(values[k - 1][b], int(seg[k]), int(flags[b, k]), j)
        return seq

    return [(float(v[b, j_end[b]]), functools.partial(backtrack, b)) for b in range(n_b)]


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

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
branch and bound: dropping the transition costs gives every plan an upper bound computable for
all plans at once from prefix sums; plans are solved exactly in decreasing bound order until
the best found value is within ``gap`` of every remaining bound. ``gap=0`` proves optimality;
the default ``gap=0.01`` proves the result within 1% of the optimum of the model. ``max_plans``
caps the exact solves (the returned certificate then says how far from proven it is).
"""

from __future__ import annotations

import functools
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
    p: PlanProblem, gap: float = 0.01, max_plans: int = 200_000, max_combos: int = 2_000_000
) -> Plan:
    """Branch and bound over retraining plans with an exact Viterbi per plan.

    Args:
        p: The problem.
        gap: Stop when the best value is within this fraction of every remaining bound.
        max_plans: At most this many plans are solved exactly.
        max_combos: Retraining plans considered at most. With two tenants every start step is
            considered (W1: 84,000 plans); with three or four the start steps are thinned to a
            stride that keeps the product under this cap, and the optimum and the gap are then
            those of the model restricted to starts on that grid (``Plan.start_stride``).

    Returns:
        The best plan found and its certificate (``gap`` of the result <= ``gap`` unless
        ``max_plans`` stopped the search).
    """
    t0 = time.perf_counter()
    m = p.shape[0]
    served = p.served()  # (M, U, T)
    loss = p.loss()  # (M, T, U, U)
    tab = _option_tables(p, served, loss)
    stride, start, size, end = _retraining_plans(p, max_combos)
    ub = _upper_bounds(p, start, end, size, tab)
    gain_cum = np.concatenate(
        [np.zeros((*tab.gain.shape[:2], 1)), np.cumsum(tab.gain, axis=2)], axis=2
    )
    breaks = _table_breaks(p, served, loss)
    # Transition cost tables per tenant over joint options.
    trans = _TransitionCache(p, loss, tab.joint)

    def viterbi(ks: np.ndarray) -> list[tuple[float, Callable[[], np.ndarray]]]:
        return _viterbi(p, start[:, ks], end[:, ks], size[:, ks], gain_cum, trans, loss,
                        tab, breaks)  # fmt: skip

    # Plans share their stretches (and so solve together) when every step starts one.
    batch = BATCH if trans.enter is not None and breaks.all() else 1
    best_val, best_seq, best_plan, solved, bound = _branch_and_bound(
        ub, viterbi, gap, max_plans, batch
    )
    starts = {
        i: (int(start[i, best_plan]), int(size[i, best_plan])) for i in range(m) if p.pending[i]
    }
    return Plan(
        signatures=best_seq,
        value=float(best_val),
        upper_bound=max(bound, float(best_val)),
        plans_total=start.shape[1],
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
    return _OptionTables(joint, sig_at, occ_lookup, base, gain, best)


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
    stride = 1
    while True:
        per = [_tenant_plans(p, i, stride) for i in range(m)]
        if math.prod(len(x) for x in per) <= max_combos or stride >= p.shape[1]:
            break
        stride *= 2
    combos = np.array(np.meshgrid(*[np.arange(len(x)) for x in per], indexing="ij")).reshape(m, -1)
    start = np.stack([np.array([per[i][c][0] for c in combos[i]]) for i in range(m)])  # (M, P)
    size = np.stack([np.array([per[i][c][1] for c in combos[i]]) for i in range(m)])
    dur = np.where(size >= 0, p.dur[np.arange(m)[:, None], np.maximum(size, 0)], 0)
    end = np.where(start >= 0, start + dur, -1)  # first step after the job
    return stride, start, size, end


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


def _upper_bounds(
    p: PlanProblem,
    start: np.ndarray,
    end: np.ndarray,
    size: np.ndarray,
    tab: _OptionTables,
) -> np.ndarray:
    """(P,) bound of every plan: per-step best options, transitions free (prefix sums)."""
    m, t_n = p.shape
    best = tab.best
    prefix = np.concatenate([np.zeros((*best.shape[:2], 1)), np.cumsum(best, axis=2)], axis=2)
    bounds = np.concatenate(
        [
            np.zeros((1, start.shape[1])),
            np.maximum(start, 0),
            np.maximum(end, 0),
            np.full((1, start.shape[1]), t_n),
        ]
    )
    bounds = np.sort(np.clip(bounds, 0, t_n), axis=0).astype(np.int64)  # (2M + 2, P)
    total = np.zeros(start.shape[1])
    for a, b in itertools.pairwise(bounds):
        seg = b > a
        running = (a[None, :] >= start) & (a[None, :] < end) & (start >= 0)
        done = np.where(p.pending[:, None], (end >= 0) & (a[None, :] >= end), True)
        o = tab.occupancy(np.where(running, size, -1).T)
        f = (done * (1 << np.arange(m))[:, None]).sum(axis=0)
        oo = np.maximum(o, 0)
        part = prefix[oo, f, b] - prefix[oo, f, a]
        bad = (o < 0) | (part <= NEG / 2)
        total += np.where(seg, np.where(bad, NEG, part), 0.0)
    return np.maximum(total, NEG)


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
        self.stacked: dict[int, np.ndarray] = {}
        self.pre, self.post = p.pre, p.post
        classes = change_classes(p, loss)
        self.enter = None if classes is None else classes[1]
        if classes is not None:
            self._groups(classes[0])

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
        out = self.weighted.get(ck)
        if out is None:
            acc = self.acc(flag)
            if self.enter is None:
                tr = self.at(t)
                out = acc[0] * tr[0]
                for i in range(1, tr.shape[0]):
                    out = out + acc[i] * tr[i]
            else:
                out = np.zeros(self.group.shape)
                for i in range(self.joint.shape[1]):  # summed in tenant order, as the dense
                    term = acc[i] * self.enter[i, ck[0], self.joint[:, i]]
                    out = out + np.where(self.keep[:, i, None], 0.0, term[None])
            self.weighted[ck] = out
        return out

    def best_into(self, v: np.ndarray, t: int, flags: np.ndarray) -> np.ndarray:
        """(B, J) ``max over j' of v[b, j'] - cost(j', j)`` for a switch at step ``t`` of B
        plans in completion states ``flags`` (B,) (B is 1 for the dense table)."""
        if self.enter is None:
            return (v[0][:, None] - self.weighted_at(t, flags[0])).max(axis=0)[None]
        if len(flags) == 1:
            w = self.weighted_at(t, flags[0])[None]
        else:  # every completion state's table of this step, taken per plan
            key = int(self.key[t])
            tables = self.stacked.get(key)
            if tables is None:
                tables = np.stack([self.weighted_at(t, f) for f in range(len(self.keep))])
                self.stacked[key] = tables
            w = tables[flags]
        best = np.maximum.reduceat(v[:, self.order], self.starts, axis=1)
        return (best[:, self.group] - w).max(axis=1)

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

"""MIGRator's planning model as one MILP on HiGHS (``scipy.optimize.milp``).

The same model :func:`edgegym.baselines.migrator.solve` decomposes (:class:`PlanProblem`,
constraints 1-5 and objective 6-12 with Eq. 10-11's cost as the environment applies it), written
as an integer program the way MIGRator §4 writes it, so an established solver checks the
decomposition on full-size windows and a user can change the model by adding a row.

Variables (M tenants, T steps, U inference options per tenant, Z instance sizes):

* ``y[i, u, t]`` binary: tenant i serves with inference option u at step t (one per step).
* ``v[i, s, z]`` binary: tenant i's retraining job starts at step s on an instance of size z and
  runs exactly ``dur[i, z]`` steps (constraint 3: never interrupted or resized; 4: inside the
  window; Formula 4: a pending tenant launches if it can). ``S[i, z, t]``, the jobs of size z
  started by step t, is their running sum, so the job runs at t when ``S[i, z, t] - S[i, z, t -
  dur] = 1`` and has finished (accuracy ``post``) when ``f[i, t] = sum over z of S[i, z, t -
  dur[i, z]] = 1``.
* Constraints 1-2 (one valid MIG configuration a step), in one of two encodings:

  - **per tenant** (where the problem carries ``option_sizes`` and ``layouts``, and its allowed
    signatures are exactly the combinations of tenants' options and jobs whose instances fit
    one layout, which :func:`_fits_exactly` checks by counting; true of every W1-W16 window on
    the A100): ``w[c, t]`` binary picks a maximal layout c at step t, and for every size z the
    instances of that size in use (the tenants' inference options and running jobs) are at most
    the layout's. A 200-step W1 window: 35,367 variables (13,367 binary), 21,602 rows and
    119,000 nonzeros;
  - **per signature** (any other problem): ``x[n, t]`` binary picks an allowed signature, with
    ``y[i, u, t] = sum of x[n, t] over sig_u[n, i] = u`` and the signature's retraining size the
    running job's. Correct for any signature set, but the same window has 85,567 variables
    (53,567 binary), 31,402 rows and 271,200 nonzeros, and HiGHS finds no useful plan in 300 s
    where the per-tenant encoding reaches the optimum (docs/benchmarks.md).

* Eq. 11 charges a change when the number of instances or of GPCs differs, so options fall
  into classes and :class:`PlanProblem`'s loss ``loss[i, t, u', u]`` is ``l[i, t, u]`` when
  the class of ``u'`` differs from ``u``'s and 0 otherwise (checked: a cost rule without this
  shape is refused). Holding option u at t splits into ``stay[i, u, t] + enter[i, u, t] =
  y[i, u, t]`` with the stays of class k at most the class's share at t - 1 (a transportation
  bound, tight in the LP relaxation), so ``loss_i(t) = sum of l[i, t, u] enter[i, u, t]``.
* ``pacc[i, t] <= served_i(t)`` and ``<= served_max(t) * f[i, t]``: the served requests at post
  accuracy; ``rloss[i, t] >= loss_i(t) - loss_max(t) * (1 - f[i, t])``: the loss at post
  accuracy. The big-M's are each step's own (the most the tenant can serve or lose then), not
  the window's: on W1's windows that brings the LP relaxation from 1.3-2.5% above the optimum
  to within about 1% of it.

HiGHS's root LP (dual simplex, 25-35 s on a 200-step window) is most of its time. Started from
a plan (``start``, for example the decomposition's; ``highspy`` only) it has only to prove a
bound, which the root LP and its cuts usually do.

Objective (Eq. 6-9, maximised): ``sum over i, t of pre_i * (served - loss) + (post_i - pre_i)
* (pacc - rloss)``, which is :meth:`PlanProblem.value` of the plan. The linearisation is exact
where retraining does not lower accuracy (``post >= pre``), the case MIGRator plans for; other
problems are refused.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
from scipy.optimize import Bounds, LinearConstraint, milp
from scipy.sparse import coo_array

from edgegym.baselines.migrator_plan import NoFeasiblePlan, Plan, PlanProblem, change_classes

__all__ = ["solve_milp"]


class _Rows:
    """Sparse constraint rows ``lb <= A @ vars <= ub`` built one at a time."""

    def __init__(self) -> None:
        self.r: list[int] = []
        self.c: list[int] = []
        self.v: list[float] = []
        self.lb: list[float] = []
        self.ub: list[float] = []

    def add(self, cols, vals, lb: float, ub: float) -> None:
        k = len(self.lb)
        cols = np.asarray(cols, dtype=np.int64).ravel()
        self.r += [k] * cols.size
        self.c += cols.tolist()
        self.v += np.broadcast_to(np.asarray(vals, dtype=float), cols.shape).tolist()
        self.lb.append(lb)
        self.ub.append(ub)

    def constraint(self, n_vars: int) -> LinearConstraint:
        a = coo_array((self.v, (self.r, self.c)), shape=(len(self.lb), n_vars)).tocsr()
        return LinearConstraint(a, np.array(self.lb), np.array(self.ub))


class _Vars:
    """The MILP's variable vector, handed out block by block: ``add(shape, integer, upper)``
    reserves a block (binary or continuous, bounded by 0 and ``upper``) and returns its column
    indices in that shape."""

    def __init__(self) -> None:
        self.n = 0
        self.integer: list[np.ndarray] = []
        self.upper: list[tuple[np.ndarray, float]] = []

    def add(self, shape: tuple[int, ...], integer: bool, upper: float = 1.0) -> np.ndarray:
        cols = self.n + np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
        self.n += cols.size
        if integer:
            self.integer.append(cols.ravel())
        self.upper.append((cols.ravel(), upper))
        return cols


@dataclass(frozen=True)
class _Jobs:
    """Every retraining job a pending tenant can run inside the window (tenant, start, size),
    its start column ``v`` and the running sums ``S[i, z, t]`` of starts."""

    i: np.ndarray
    s: np.ndarray
    z: np.ndarray
    v: np.ndarray  # (J,) columns
    started: np.ndarray  # (M, Z, T) columns of S (-1: tenant i never runs size z)


def _jobs(p: PlanProblem, var: _Vars, rows: _Rows) -> _Jobs:
    """The retraining starts, their running sums, and Formula 4 (a pending tenant's job starts
    once, and must if it can)."""
    m, t_n = p.shape
    n_z = p.dur.shape[1]
    sizes = [
        (i, z)
        for i in range(m)
        if p.pending[i]
        for z in range(n_z)
        if np.any(p.sig_r[:, i] == z) and p.dur[i, z] <= t_n
    ]
    ji = np.array([i for i, z in sizes for _ in range(t_n - int(p.dur[i, z]) + 1)], dtype=int)
    jz = np.array([z for i, z in sizes for _ in range(t_n - int(p.dur[i, z]) + 1)], dtype=int)
    js = np.array([s for i, z in sizes for s in range(t_n - int(p.dur[i, z]) + 1)], dtype=int)
    v = var.add((ji.size,), integer=True)
    started = np.full((m, n_z, t_n), -1, dtype=np.int64)
    for i, z in sizes:
        started[i, z] = var.add((t_n,), integer=False)
        for t in range(t_n):  # S[t] = S[t - 1] + v[start t]
            k = v[(ji == i) & (jz == z) & (js == t)]
            cols = np.concatenate([[started[i, z, t]], started[i, z, t - 1 : t] if t else [], k])
            vals = np.concatenate([[1.0], -np.ones(cols.size - 1)])
            rows.add(cols, vals, 0.0, 0.0)
    for i in range(m):
        if p.pending[i]:
            last = started[i, :, t_n - 1]
            last = last[last >= 0]
            lb = 1.0 if (p.must_launch and last.size) else 0.0
            if last.size:
                rows.add(last, 1.0, lb, 1.0)
    return _Jobs(ji, js, jz, v, started)


def _running(p: PlanProblem, jobs: _Jobs, i: int, z: int, t: int) -> tuple[list, list]:
    """Columns and coefficients of ``S[i, z, t] - S[i, z, t - dur]``: tenant i's job of size z
    runs at step t (empty where it never can)."""
    col = jobs.started[i, z, t]
    if col < 0:
        return [], []
    back = t - int(p.dur[i, z])
    if back < 0:
        return [col], [1.0]
    return [col, jobs.started[i, z, back]], [1.0, -1.0]


def _finished(p: PlanProblem, jobs: _Jobs, i: int, t: int) -> np.ndarray:
    """Columns whose sum is ``f[i, t]``: tenant i's job ended before step t."""
    back = t - p.dur[i]
    ok = (back >= 0) & (jobs.started[i, :, 0] >= 0)
    z = np.flatnonzero(ok)
    return jobs.started[i, z, back[z]]


def _fits_exactly(p: PlanProblem) -> bool:
    """Whether the allowed signatures are exactly the combinations of every tenant's options
    (inference and retraining size, as the signatures use them) whose instances fit one of
    ``p.layouts``: then the per-tenant encoding has the same feasible set."""
    if p.option_sizes is None or p.layouts is None:
        return False
    m = p.shape[0]
    n_z = p.layouts.shape[1]
    retrain = np.eye(n_z, dtype=np.int64)

    def usage(i: int, u: int, r: int) -> np.ndarray:
        return p.option_sizes[i, u] + (retrain[r] if r >= 0 else 0)

    def fits(c) -> bool:
        return bool(np.any(np.all(np.asarray(c) <= p.layouts, axis=1)))

    for n in range(p.sig_u.shape[0]):  # every allowed signature fits
        used = sum(usage(i, p.sig_u[n, i], p.sig_r[n, i]) for i in range(m))
        if not fits(used):
            return False
    combos: Counter = Counter({(0,) * n_z: 1})  # instances in use -> combinations so far
    for i in range(m):
        pairs = [
            (int(u), int(r)) for u in np.unique(p.sig_u[:, i]) for r in np.unique(p.sig_r[:, i])
        ]
        step: Counter = Counter()
        for c, k in combos.items():
            for u, r in pairs:
                d = tuple(np.add(c, usage(i, u, r)).tolist())
                if fits(d):  # a combination that does not fit never fits with more tenants
                    step[d] += k
        combos = step
    keys = _signature_keys(p)
    return sum(combos.values()) == len(set(keys)) == len(keys)


def _signature_keys(p: PlanProblem) -> list[tuple[tuple, tuple]]:
    """Every allowed signature as (inference option per tenant, retraining size per tenant)."""
    return [(tuple(a), tuple(b)) for a, b in zip(p.sig_u.tolist(), p.sig_r.tolist(), strict=True)]


def _allocation(p: PlanProblem, var: _Vars, rows: _Rows, jobs: _Jobs) -> tuple:
    """Constraints 1-2 and the link of the configuration to the retraining jobs, per tenant
    where :func:`_fits_exactly` allows it, else per signature.

    Returns:
        ``y`` (M, U, T) columns, a function from the solution vector to the signature
        sequence, and one from a signature sequence to the values of the integer columns
        (a starting plan for HiGHS).
    """
    m, t_n = p.shape
    n_u = p.cap.shape[1]
    n_z = p.dur.shape[1]
    if _fits_exactly(p):
        y = var.add((m, n_u, t_n), integer=True)
        w = var.add((p.layouts.shape[0], t_n), integer=True)
        index = {key: n for n, key in enumerate(_signature_keys(p))}
        for i in range(m):
            unused = np.setdiff1d(np.arange(n_u), p.sig_u[:, i])
            var.upper.append((y[i, unused].ravel(), 0.0))
        for t in range(t_n):
            rows.add(w[:, t], 1.0, 1.0, 1.0)
            for i in range(m):
                rows.add(y[i, :, t], 1.0, 1.0, 1.0)
            for z in range(n_z):  # instances of size z in use <= the layout's
                cols, vals = [w[:, t]], [-p.layouts[:, z].astype(float)]
                for i in range(m):
                    k = np.flatnonzero(p.option_sizes[i, :, z])
                    cols.append(y[i, k, t])
                    vals.append(p.option_sizes[i, k, z].astype(float))
                    c, v = _running(p, jobs, i, z, t)
                    cols.append(np.asarray(c, dtype=np.int64))
                    vals.append(np.asarray(v))
                rows.add(np.concatenate(cols), np.concatenate(vals), -np.inf, 0.0)

        def sequence(sol: np.ndarray) -> np.ndarray:
            u = sol[y].argmax(axis=1)  # (M, T)
            r = np.full((m, t_n), -1)
            for k in np.flatnonzero(sol[jobs.v] > 0.5):
                i, s, z = jobs.i[k], jobs.s[k], jobs.z[k]
                r[i, s : s + int(p.dur[i, z])] = z
            return np.array([index[(tuple(u[:, t]), tuple(r[:, t]))] for t in range(t_n)])

        def start(seq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            steps = np.arange(t_n)
            on_y = y[np.arange(m)[:, None], p.sig_u[seq].T, steps[None, :]]
            used = p.option_sizes[np.arange(m)[None, :], p.sig_u[seq]].sum(axis=1)  # (T, Z)
            retrain = p.sig_r[seq]  # (T, M)
            for z in range(n_z):
                used[:, z] += (retrain == z).sum(axis=1)
            fits = np.all(used[:, None, :] <= p.layouts[None], axis=2)  # (T, C)
            on_w = w[fits.argmax(axis=1), steps]
            return _ones_among([y, w], [on_y, on_w], jobs, _job_starts(p, jobs, seq))

        return y, sequence, start

    n_sig = p.sig_u.shape[0]
    x = var.add((n_sig, t_n), integer=True)
    y = var.add((m, n_u, t_n), integer=False)
    for t in range(t_n):
        rows.add(x[:, t], 1.0, 1.0, 1.0)
        for i in range(m):
            for u in range(n_u):  # y is the sum of the signatures' choices
                sigs = np.flatnonzero(p.sig_u[:, i] == u)
                rows.add(np.concatenate([[y[i, u, t]], x[sigs, t]]),
                         np.concatenate([[-1.0], np.ones(sigs.size)]), 0.0, 0.0)  # fmt: skip
            for z in range(n_z):  # the signature's retraining size is the running job's
                sigs = np.flatnonzero(p.sig_r[:, i] == z)
                c, v = _running(p, jobs, i, z, t)
                if sigs.size or c:
                    vals = np.concatenate([np.ones(sigs.size), -np.asarray(v)])
                    rows.add(np.concatenate([x[sigs, t], c]), vals, 0.0, 0.0)

    def sequence(sol: np.ndarray) -> np.ndarray:
        return sol[x].argmax(axis=0)

    def start(seq: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return _ones_among([x], [x[seq, np.arange(t_n)]], jobs, _job_starts(p, jobs, seq))

    return y, sequence, start


def _job_starts(p: PlanProblem, jobs: _Jobs, seq: np.ndarray) -> np.ndarray:
    """The job columns a signature sequence runs (each pending tenant's first retraining step
    and size)."""
    out = []
    for i in np.flatnonzero(p.pending):
        run = np.flatnonzero(p.sig_r[seq, i] >= 0)
        if run.size:
            z = p.sig_r[seq[run[0]], i]
            out.append(jobs.v[(jobs.i == i) & (jobs.s == run[0]) & (jobs.z == z)])
    return np.concatenate(out) if out else np.zeros(0, dtype=np.int64)


def _ones_among(blocks: list, ones: list, jobs: _Jobs, started: np.ndarray) -> tuple:
    """(columns, values) of every integer column: 1 at ``ones`` and ``started``, else 0."""
    cols = np.concatenate([b.ravel() for b in blocks] + [jobs.v])
    vals = np.zeros(cols.size)
    on = np.concatenate([np.ravel(o) for o in ones] + [started])
    vals[np.isin(cols, on)] = 1.0
    return cols, vals


def _tenant_objective(p: PlanProblem, var: _Vars, rows: _Rows, obj: list, i: int,
                      y: np.ndarray, jobs: _Jobs, served: np.ndarray, cls: np.ndarray,
                      enter: np.ndarray) -> None:  # fmt: skip
    """Tenant i's Goodput terms (Eq. 6-9) as (columns, costs) in ``obj`` and the rows that
    linearise them: Eq. 11's entries through the class transportation bound, and the
    post-accuracy products with big-M's of each step (the most the tenant can serve or lose
    then), which keep the LP relaxation within about 1% of the optimum on W1's windows."""
    t_n = p.shape[1]
    n_u = p.cap.shape[1]
    pend = bool(p.pending[i])
    acc0 = p.pre[i] if pend else p.post[i]
    d_acc = (p.post[i] - p.pre[i]) if pend else 0.0
    s_max = served[i].max(axis=0)  # (T,) the most tenant i can serve at each step
    l_max = enter[i].max(axis=1)  # (T,) the most an entry can lose at each step
    used = np.unique(p.sig_u[:, i])
    charged = np.arange(t_n) if p.prev_u[i] >= 0 else np.arange(1, t_n)
    stay = var.add((n_u, t_n), integer=False)
    entry = var.add((n_u, t_n), integer=False)
    pacc = var.add((t_n,), integer=False, upper=np.inf)
    rloss = var.add((t_n,), integer=False, upper=np.inf)
    for t in range(t_n):
        obj.append((y[i, :, t], -acc0 * served[i, :, t]))
        if t in charged:  # y(u) = stay(u) + enter(u); stays in class k <= its share at t - 1
            for u in used:
                rows.add([stay[u, t], entry[u, t], y[i, u, t]], [-1.0, -1.0, 1.0], 0.0, 0.0)
            obj.append((entry[used, t], acc0 * enter[i, t, used]))
            for k in np.unique(cls[i][used]):
                ks = used[cls[i][used] == k]
                if t > 0:
                    rows.add(np.concatenate([stay[ks, t], y[i, ks, t - 1]]),
                             np.concatenate([np.ones(ks.size), -np.ones(ks.size)]),
                             -np.inf, 0.0)  # fmt: skip
                else:
                    held = 1.0 if cls[i][p.prev_u[i]] == k else 0.0
                    rows.add(stay[ks, t], 1.0, -np.inf, held)
        if d_acc > 0:
            done = _finished(p, jobs, i, t)
            # pacc <= served_i(t); pacc <= s_max(t) * f
            rows.add(np.concatenate([[pacc[t]], y[i, :, t]]),
                     np.concatenate([[1.0], -served[i, :, t]]), -np.inf, 0.0)  # fmt: skip
            vals = np.concatenate([[1.0], np.full(done.size, -s_max[t])])
            rows.add(np.concatenate([[pacc[t]], done]), vals, -np.inf, 0.0)
            obj.append(([pacc[t]], [-d_acc]))
            if t in charged and l_max[t] > 0:
                # rloss >= loss_i(t) - l_max(t) * (1 - f)
                us = used[enter[i, t, used] > 0]
                rows.add(np.concatenate([[rloss[t]], entry[us, t], done]),
                         np.concatenate([[1.0], -enter[i, t, us], np.full(done.size, -l_max[t])]),
                         -l_max[t], np.inf)  # fmt: skip
                obj.append(([rloss[t]], [d_acc]))


@dataclass(frozen=True)
class _Model:
    """The MILP in ``scipy.optimize.milp``'s terms (minimised), with the way back from its
    solution vector to the signature sequence and the retraining starts."""

    c: np.ndarray
    integrality: np.ndarray
    bounds: Bounds
    constraints: LinearConstraint
    sequence: Callable[[np.ndarray], np.ndarray]
    start: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]
    jobs: _Jobs


def _model(p: PlanProblem, served: np.ndarray, classes: tuple[np.ndarray, np.ndarray]) -> _Model:
    """The window's MILP: the jobs, the allocation, and every tenant's objective terms."""
    var, rows = _Vars(), _Rows()
    jobs = _jobs(p, var, rows)
    y, sequence, start = _allocation(p, var, rows, jobs)
    obj: list[tuple] = []  # (columns, costs) of the minimised objective
    for i in range(p.shape[0]):
        _tenant_objective(p, var, rows, obj, i, y, jobs, served, *classes)
    c = np.zeros(var.n)
    for cols, costs in obj:
        np.add.at(c, np.asarray(cols, dtype=np.int64), costs)
    ub = np.ones(var.n)
    for cols, upper in var.upper:
        ub[cols] = upper
    integrality = np.zeros(var.n)
    for cols in var.integer:
        integrality[cols] = 1
    return _Model(c, integrality, Bounds(np.zeros(var.n), ub), rows.constraint(var.n),
                  sequence, start, jobs)  # fmt: skip


def solve_milp(
    p: PlanProblem,
    gap: float = 1e-4,
    time_limit: float | None = None,
    start: np.ndarray | None = None,
) -> Plan:
    """Solve the window's plan as one MILP with HiGHS.

    Args:
        p: The problem.
        gap: HiGHS's relative MIP gap (``mip_rel_gap``).
        time_limit: Seconds before HiGHS stops with its best plan (``None``: no limit).
        start: optional (T,) signature sequence HiGHS starts from (for example the
            decomposition's plan), so that its search only has to prove a bound; needs the
            optional ``highspy`` (``scipy.optimize.milp`` takes no starting point).

    Returns:
        The plan, its value by :meth:`PlanProblem.value`, and HiGHS's dual bound as the
        certificate.

    Raises:
        ValueError: ``post < pre`` for a tenant, a cost rule without Eq. 11's shape, or no
            feasible plan (:class:`NoFeasiblePlan`).
    """
    t0 = time.perf_counter()
    if np.any(p.post < p.pre - 1e-12):
        raise ValueError("solver=milp needs post >= pre for every tenant (retraining helps)")
    served = p.served()  # (M, U, T)
    loss = p.loss()  # (M, T, U, U)
    classes = change_classes(p, loss)
    if classes is None:
        raise ValueError(
            "solver=milp linearises Eq. 11's cost (a change of instance or GPC count costs "
            "the new option's capacity); this problem's switch costs depend on the option "
            "left (the per-instance rule): use the default solver"
        )
    if start is not None and np.shape(start) != (p.shape[1],):
        raise ValueError(f"start: one signature per step ({p.shape[1]} steps), got shape "
                         f"{np.shape(start)}")  # fmt: skip
    model = _model(p, served, classes)
    if start is not None:
        res = _solve_from(model, start, gap, time_limit)
    else:
        options = {"mip_rel_gap": gap, "disp": False}
        if time_limit is not None:
            options["time_limit"] = float(time_limit)
        res = milp(model.c, integrality=model.integrality, bounds=model.bounds,
                   constraints=model.constraints, options=options)  # fmt: skip
    if res.x is None:
        raise NoFeasiblePlan(f"no feasible allocation sequence for this window ({res.message})")
    seq = model.sequence(res.x)
    jobs = model.jobs
    chosen = np.flatnonzero(res.x[jobs.v] > 0.5)
    starts = {int(jobs.i[k]): (int(jobs.s[k]), int(jobs.z[k])) for k in chosen}
    value = p.value(seq)
    bound = -float(getattr(res, "mip_dual_bound", -value) or -value)
    return Plan(
        signatures=seq,
        value=float(value),
        upper_bound=max(bound, float(value)),
        plans_total=len(jobs.i),
        plans_solved=int(getattr(res, "mip_node_count", 0) or 0),
        seconds=time.perf_counter() - t0,
        starts=starts,
    )


def _solve_from(model: _Model, start: np.ndarray, gap: float, time_limit: float | None):
    """The model on ``highspy`` with a starting plan; the result in ``scipy.optimize.milp``'s
    terms (``x``, ``mip_dual_bound``, ``mip_node_count``, ``message``)."""
    try:
        import highspy
    except ImportError:
        raise ImportError(
            "solve_milp(start=...) needs highspy (pip install highspy); scipy.optimize.milp "
            "takes no starting plan"
        ) from None
    a = model.constraints.A.tocsc()
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = a.shape[1], a.shape[0]
    lp.col_cost_ = model.c
    lp.col_lower_, lp.col_upper_ = model.bounds.lb, model.bounds.ub
    lp.row_lower_, lp.row_upper_ = model.constraints.lb, model.constraints.ub
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.start_, lp.a_matrix_.index_, lp.a_matrix_.value_ = a.indptr, a.indices, a.data
    kinds = (highspy.HighsVarType.kContinuous, highspy.HighsVarType.kInteger)
    lp.integrality_ = [kinds[int(k)] for k in model.integrality]
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    h.setOptionValue("mip_rel_gap", float(gap))
    if time_limit is not None:
        h.setOptionValue("time_limit", float(time_limit))
    h.passModel(lp)
    cols, vals = model.start(np.asarray(start))
    h.setSolution(cols.size, cols.astype(np.int32), vals)  # HiGHS completes the rest
    h.run()
    info = h.getInfo()
    found = info.primal_solution_status == 2  # kSolutionStatusFeasible
    return SimpleNamespace(
        x=np.asarray(h.getSolution().col_value) if found else None,
        mip_dual_bound=info.mip_dual_bound,
        mip_node_count=info.mip_node_count,
        message=h.modelStatusToString(h.getModelStatus()),
    )

"""MIGRator's planning model as one MILP on HiGHS (``scipy.optimize.milp``).

The same model :func:`edgegym.baselines.migrator.solve` decomposes (:class:`PlanProblem`,
constraints 1-5 and objective 6-12 with Eq. 10-11's cost as the environment applies it), written
as an integer program the way MIGRator §4 writes it, so an established solver checks the
decomposition on full-size windows and a user can change the model by adding a row.

Variables (M tenants, T steps, N allowed signatures, U inference options per tenant):

* ``x[n, t]`` binary: signature n at step t (constraints 1-2: one valid MIG configuration a
  step); tenant i's inference option is ``y[i, u, t] = sum of x[n, t] over sig_u[n, i] = u``.
* ``v[i, s, z]`` binary: tenant i's retraining job starts at step s on an instance of size z and
  runs exactly ``dur[i, z]`` steps (constraint 3: never interrupted or resized; 4: inside the
  window; Formula 4: a pending tenant launches if it can). The signature's retraining size at t
  equals the job's: ``sum of x[n, t] over sig_r[n, i] = z == sum of v[i, s, z] over s <= t <
  s + dur``.
* ``f[i, t] = sum of v[i, s, z] over s + dur[i, z] <= t``: the job finished, accuracy ``post``.
* Eq. 11 charges a change when the number of instances or of GPCs differs, so options fall
  into classes and :class:`PlanProblem`'s loss ``loss[i, t, u', u]`` is ``l[i, t, u]`` when
  the class of ``u'`` differs from ``u``'s and 0 otherwise (checked: a cost rule without this
  shape is refused). Holding option u at t splits into ``stay[i, u, t] + enter[i, u, t] =
  y[i, u, t]`` with the stays of class k at most the class's share at t - 1 (a transportation
  bound, tight in the LP relaxation), so ``loss_i(t) = sum of l[i, t, u] enter[i, u, t]``.
* ``pacc[i, t] <= served_i(t)`` and ``<= served_max * f[i, t]``: the served requests at post
  accuracy; ``rloss[i, t] >= loss_i(t) - loss_max * (1 - f[i, t])``: the loss at post accuracy.

Objective (Eq. 6-9, maximised): ``sum over i, t of pre_i * (served - loss) + (post_i - pre_i)
* (pacc - rloss)``, which is :meth:`PlanProblem.value` of the plan. The linearisation is exact
where retraining does not lower accuracy (``post >= pre``), the case MIGRator plans for; other
problems are refused.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

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


@dataclass(frozen=True)
class _Layout:
    """Where each variable sits in the MILP's vector: ``x[n, t]``, then the retraining starts
    ``v`` (one per job: tenant, start step, size), the stays and entries per tenant, option and
    step, and ``pacc`` and ``rloss`` per tenant and step."""

    t_n: int
    n_sig: int
    n_u: int
    m: int
    job_i: np.ndarray
    job_s: np.ndarray
    job_z: np.ndarray
    job_end: np.ndarray

    @property
    def n_x(self) -> int:
        return self.n_sig * self.t_n

    @property
    def v0(self) -> int:
        return self.n_x

    @property
    def st0(self) -> int:
        return self.v0 + len(self.job_i)

    @property
    def en0(self) -> int:
        return self.st0 + self.m * self.n_u * self.t_n

    @property
    def pa0(self) -> int:
        return self.en0 + self.m * self.n_u * self.t_n

    @property
    def rl0(self) -> int:
        return self.pa0 + self.m * self.t_n

    @property
    def n_vars(self) -> int:
        return self.rl0 + self.m * self.t_n

    def x(self, n, t):
        return np.asarray(n) * self.t_n + t

    def st(self, i, u, t):  # option u held at t, entered from its own class (no cost)
        return self.st0 + (i * self.n_u + np.asarray(u)) * self.t_n + t

    def en(self, i, u, t):  # option u held at t, entered from another class (Eq. 11's cost)
        return self.en0 + (i * self.n_u + np.asarray(u)) * self.t_n + t

    def pa(self, i, t):
        return self.pa0 + i * self.t_n + t

    def rl(self, i, t):
        return self.rl0 + i * self.t_n + t


def _layout(p: PlanProblem) -> _Layout:
    """Every retraining job a pending tenant can run inside the window, and the layout."""
    m, t_n = p.shape
    jobs = [
        (i, s, z)
        for i in range(m)
        if p.pending[i]
        for z in range(p.dur.shape[1])
        if np.any(p.sig_r[:, i] == z) and p.dur[i, z] <= t_n
        for s in range(t_n - int(p.dur[i, z]) + 1)
    ]
    job_i = np.array([j[0] for j in jobs], dtype=np.int64)
    job_s = np.array([j[1] for j in jobs], dtype=np.int64)
    job_z = np.array([j[2] for j in jobs], dtype=np.int64)
    job_end = job_s + np.array([p.dur[i, z] for i, _, z in jobs], dtype=np.int64)
    return _Layout(t_n, p.sig_u.shape[0], p.cap.shape[1], m, job_i, job_s, job_z, job_end)


def _allocation_rows(p: PlanProblem, lay: _Layout, rows: _Rows) -> None:
    """Constraints 1-4: one signature per step; a pending tenant's job starts once (Formula 4:
    must, if it can) and the signature's retraining size is the running job's."""
    m, t_n = p.shape
    for t in range(t_n):  # one signature per step (constraints 1-2)
        rows.add(lay.x(np.arange(lay.n_sig), t), 1.0, 1.0, 1.0)
    for i in range(m):
        mine = np.flatnonzero(lay.job_i == i)
        if p.pending[i]:
            launchable = mine.size > 0
            lb = 1.0 if (p.must_launch and launchable) else 0.0
            if mine.size:
                rows.add(lay.v0 + mine, 1.0, lb, 1.0)
        for z in range(p.dur.shape[1]):  # the signature's retraining size is the job's
            sigs = np.flatnonzero(p.sig_r[:, i] == z)
            mz = mine[lay.job_z[mine] == z]
            for t in range(t_n):
                on = mz[(lay.job_s[mz] <= t) & (t < lay.job_end[mz])]
                if sigs.size == 0 and on.size == 0:
                    continue
                cols = np.concatenate([lay.x(sigs, t), lay.v0 + on])
                vals = np.concatenate([np.ones(sigs.size), -np.ones(on.size)])
                rows.add(cols, vals, 0.0, 0.0)


def _tenant_objective(p: PlanProblem, lay: _Layout, rows: _Rows, c: np.ndarray, i: int,
                      served: np.ndarray, cls: np.ndarray, enter: np.ndarray) -> None:  # fmt: skip
    """Tenant i's Goodput terms (Eq. 6-9) in ``c`` and the rows that linearise them: Eq. 11's
    entries through the class transportation bound, and the post-accuracy products."""
    t_n, n_sig, n_u = lay.t_n, lay.n_sig, lay.n_u
    x, st, en, pa, rl = lay.x, lay.st, lay.en, lay.pa, lay.rl
    mine = np.flatnonzero(lay.job_i == i)
    pend = bool(p.pending[i])
    acc0 = p.pre[i] if pend else p.post[i]
    d_acc = (p.post[i] - p.pre[i]) if pend else 0.0
    s_max = float(served[i].max()) if served[i].size else 0.0
    l_max = float(enter[i].max()) if enter[i].size else 0.0
    u_of = p.sig_u[:, i]
    for t in range(t_n):
        gain = served[i, u_of, t]  # served requests of each signature for tenant i
        c[x(np.arange(n_sig), t)] -= acc0 * gain
        done = mine[lay.job_end[mine] <= t]  # f[i, t] = sum of these v
        # y(u) = stay(u) + enter(u); the stays in class k at most its share of step t - 1
        charge = t > 0 or p.prev_u[i] >= 0
        if charge:
            for u in range(n_u):
                sigs = np.flatnonzero(u_of == u)
                cols = np.concatenate([[st(i, u, t), en(i, u, t)], x(sigs, t)])
                vals = np.concatenate([[-1.0, -1.0], np.ones(sigs.size)])
                rows.add(cols, vals, 0.0, 0.0)
                c[en(i, u, t)] += acc0 * enter[i, t, u]
            for k in np.unique(cls[i]):
                ks = np.flatnonzero(cls[i] == k)
                if t > 0:
                    before = np.flatnonzero(cls[i][u_of] == k)
                    cols = np.concatenate([st(i, ks, t), x(before, t - 1)])
                    vals = np.concatenate([np.ones(ks.size), -np.ones(before.size)])
                    rows.add(cols, vals, -np.inf, 0.0)
                else:
                    held = 1.0 if cls[i][p.prev_u[i]] == k else 0.0
                    rows.add(st(i, ks, t), 1.0, -np.inf, held)
        if d_acc > 0:
            # pacc <= served_i(t); pacc <= s_max * f
            rows.add(np.concatenate([[pa(i, t)], x(np.arange(n_sig), t)]),
                     np.concatenate([[1.0], -gain]), -np.inf, 0.0)  # fmt: skip
            cols = np.concatenate([[pa(i, t)], lay.v0 + done])
            rows.add(cols, np.concatenate([[1.0], -s_max * np.ones(done.size)]), -np.inf, 0.0)
            c[pa(i, t)] -= d_acc
            if charge and l_max > 0:
                # rloss >= loss_i(t) - l_max * (1 - f)
                us = np.flatnonzero(enter[i, t] > 0)
                rows.add(np.concatenate([[rl(i, t)], en(i, us, t), lay.v0 + done]),
                         np.concatenate([[1.0], -enter[i, t, us], -l_max * np.ones(done.size)]),
                         -l_max, np.inf)  # fmt: skip
                c[rl(i, t)] += d_acc


def solve_milp(p: PlanProblem, gap: float = 1e-4, time_limit: float | None = None) -> Plan:
    """Solve the window's plan as one MILP with HiGHS.

    Args:
        p: The problem.
        gap: HiGHS's relative MIP gap (``mip_rel_gap``).
        time_limit: Seconds before HiGHS stops with its best plan (``None``: no limit).

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
    lay = _layout(p)
    rows = _Rows()
    _allocation_rows(p, lay, rows)
    c = np.zeros(lay.n_vars)
    for i in range(p.shape[0]):
        _tenant_objective(p, lay, rows, c, i, served, *classes)
    lb = np.zeros(lay.n_vars)
    ub = np.ones(lay.n_vars)
    ub[lay.pa0 :] = np.inf  # stays and entries are at most 1 through their rows
    integrality = np.zeros(lay.n_vars)
    integrality[: lay.st0] = 1
    options = {"mip_rel_gap": gap, "disp": False}
    if time_limit is not None:
        options["time_limit"] = float(time_limit)
    res = milp(c, integrality=integrality, bounds=Bounds(lb, ub),
               constraints=rows.constraint(lay.n_vars), options=options)  # fmt: skip
    if res.x is None:
        raise NoFeasiblePlan(f"no feasible allocation sequence for this window ({res.message})")
    seq = res.x[: lay.n_x].reshape(lay.n_sig, lay.t_n).argmax(axis=0)
    chosen = np.flatnonzero(res.x[lay.v0 : lay.st0] > 0.5)
    starts = {int(lay.job_i[k]): (int(lay.job_s[k]), int(lay.job_z[k])) for k in chosen}
    value = p.value(seq)
    bound = -float(getattr(res, "mip_dual_bound", -value) or -value)
    return Plan(
        signatures=seq,
        value=float(value),
        upper_bound=max(bound, float(value)),
        plans_total=len(lay.job_i),
        plans_solved=int(getattr(res, "mip_node_count", 0) or 0),
        seconds=time.perf_counter() - t0,
        starts=starts,
    )

"""List scheduling (Algorithm 1) and single-request scheduling with retraining (SRS, Alg. 2).

From "Online Scheduling of Edge Multiple-Model Inference with DAG Structure and Retraining"
(Zeng et al., INFOCOM'25; seed 004). Functions operate on the simulation core
(:class:`edgegym.sim.dag.EdgeCluster`); the environment adapter comes with
``edgegym/DAGOffload-v0``.

* Priority (Eq. 10): ``phi(i) = max_{i' in suc(i)} (t_exe(i) + t_trans_max(i, i') + phi(i'))``
  with ``t_exe`` the mean execution time over servers and ``t_trans_max`` the transfer over the
  slowest link; an exit task has ``phi = t_exe``.
* Algorithm 1: tasks in decreasing priority; each goes to the server with the earliest finish
  time (Eq. 5-7) given the tasks already placed.
* Algorithm 2 (SRS): Algorithm 1 on the inference DAG; then, per task in topological order, the
  retraining configuration minimising ``Delta P`` (Eq. 11) on the task's server from that
  schedule, added only if it lowers the objective (``Delta P < 0``) or the model is below
  ``A_min``; then Algorithm 1 on the extended DAG.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from edgegym.sim.dag import EdgeCluster, RequestSchedule
from edgegym.workload.dag import DAGApp, RetrainOption, extend_with_retraining

__all__ = ["list_schedule", "priorities", "srs_choices"]


def priorities(app: DAGApp, cluster: EdgeCluster) -> np.ndarray:
    """(V,) Eq. 10 priorities."""
    mean_exe = np.array(
        [np.mean(app.workload[i] / (app.demand[i] * cluster.speed)) for i in range(app.n)]
    )
    slowest = float(np.min(cluster.link[~np.eye(cluster.n, dtype=bool)])) if cluster.n > 1 else 1.0
    phi = np.zeros(app.n)
    for i in reversed(app.order):
        succ = app.succs(i)
        phi[i] = mean_exe[i] + max((d / slowest + phi[v] for v, d in succ), default=0.0)
    return phi


def list_schedule(
    cluster: EdgeCluster, app: DAGApp, arrival: float, servers: Sequence[int] | None = None
) -> RequestSchedule:
    """Algorithm 1: place every task of ``app`` on ``cluster`` (the cluster is updated).

    Args:
        cluster: Servers with the timelines of everything placed before.
        app: The (possibly extended) DAG of one request.
        arrival: The request's arrival time.
        servers: Optional fixed server per task (then only the earliest-start rule applies).

    Returns:
        The request's schedule.
    """
    phi = priorities(app, cluster)
    order = sorted(range(app.n), key=lambda i: (-phi[i], app.order.index(i)))
    sched = RequestSchedule(app, arrival)
    for i in order:
        if servers is not None:
            cluster.place(sched, i, int(servers[i]))
            continue
        finishes = [cluster.finish_on(sched, i, j)[1] for j in range(cluster.n)]
        cluster.place(sched, i, int(np.argmin(finishes)))
    return sched


def srs_choices(
    cluster: EdgeCluster,
    app: DAGApp,
    arrival: float,
    acc_now: np.ndarray,
    acc_after: np.ndarray,
    options: Sequence[RetrainOption],
    theta: float,
    a_min: float = 0.0,
) -> list[int]:
    """Algorithm 2's retraining configuration per task (-1 for none).

    Args:
        cluster: Servers (not modified).
        app: The inference DAG.
        arrival: Arrival time.
        acc_now: (V,) accuracy of each task's model now (``a_i``).
        acc_after: (V, H) accuracy after retraining with each option (``f(u_h, m_i)``).
        options: The configurations.
        theta: Weight of accuracy in the objective.
        a_min: Accuracy floor; a model below it is retrained with the best option.

    Returns:
        (V,) option index per task.
    """
    trial = cluster.copy()
    base = list_schedule(trial, app, arrival)
    choice = []
    for i in range(app.n):
        j = base.tasks[i].server
        into = sum(d for _, d in app.preds(i)) + float(app.model_mb[i])
        src = min(
            (base.tasks[u].server for u, _ in app.preds(i)),
            key=lambda s: cluster.link[s, j],
            default=j,
        )
        best, best_h = 0.0, -1
        for h, opt in enumerate(options):
            dp = (
                opt.workload / (opt.demand * cluster.speed[j])
                + cluster.transfer(into, src, j)
                + opt.data_mb / cluster.source[j]
                + theta * (acc_now[i] - acc_after[i, h])
            )
            if acc_after[i, h] < a_min:
                continue
            if best_h < 0 or dp < best:
                best, best_h = dp, h
        must = acc_now[i] < a_min
        choice.append(best_h if best_h >= 0 and (best < 0 or must) else -1)
    return choice


def srs_schedule(
    cluster: EdgeCluster,
    app: DAGApp,
    arrival: float,
    acc_now: np.ndarray,
    acc_after: np.ndarray,
    options: Sequence[RetrainOption],
    theta: float,
    a_min: float = 0.0,
) -> tuple[RequestSchedule, list[int]]:
    """Algorithm 2 end to end: choose retraining, extend the DAG, list-schedule it."""
    choice = srs_choices(cluster, app, arrival, acc_now, acc_after, options, theta, a_min)
    ext = extend_with_retraining(app, choice, options)
    return list_schedule(cluster, ext, arrival), choice

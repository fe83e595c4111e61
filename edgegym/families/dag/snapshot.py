"""What baselines and tests read of a DAG env (``env.unwrapped.sim_state()``), built on demand
from the array state of :mod:`edgegym.families.dag.dynamics`: the epoch, the servers as an
:class:`~edgegym.families.dag.cluster.EdgeCluster` (a copy with the timelines as they are, to
read or plan on) and the pending requests with their extended DAGs and placements.

Nothing here is on the step's path: the views cost a few Python objects per call, and the
dynamics never reads them back."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from edgegym.families.dag.cluster import EdgeCluster, Placement, RequestSchedule
from edgegym.families.dag.dynamics import ADMIT, OVER, DAGState
from edgegym.families.dag.episode import after_retraining
from edgegym.families.dag.graph import DAGApp, RetrainOption, extend_with_retraining
from edgegym.families.dag.params import DAGParams

__all__ = [
    "DAGSnapshot",
    "Epoch",
    "PendingRequest",
    "cluster_of",
    "epoch_of",
    "pending_of",
    "request_of",
    "retrain_options",
    "snapshot",
]


@dataclass(frozen=True)
class Epoch:
    """The decision an env waits for: admit request ``k`` (choose its retraining
    configurations) or place node ``node`` of request ``k``'s extended DAG on a server."""

    kind: str  # "admit" or "place"
    k: int
    node: int = -1
    time_s: float = 0.0  # the request's arrival (admit) or the node's earliest input time


@dataclass(frozen=True)
class PendingRequest:
    """An admitted request whose extended DAG is (or was, at its last node) being placed."""

    app: DAGApp  # inference DAG
    app_index: int
    schedule: RequestSchedule  # extended DAG and the placements so far
    queue: list[int]  # unplaced nodes of the extended DAG in decreasing Eq. 10 priority
    choice: list[int]  # retraining option per inference task (-1: none)
    acc: np.ndarray  # (V,) accuracy each task runs with
    acc_now: np.ndarray  # (V,) accuracy of each task's model at arrival
    acc_after: np.ndarray  # (V, H) accuracy after retraining with each option
    options: tuple[tuple[RetrainOption, ...], ...]  # (V, H) options as they ran at arrival
    retrains: dict[int, int]  # extended node -> the inference task whose model it retrains


@dataclass(frozen=True)
class DAGSnapshot:
    """Structured state handed to baselines by ``env.unwrapped.sim_state()``.

    ``kind == "admit"``: request ``k`` arrives; choose retraining configurations for its tasks.
    ``kind == "place"``: choose the server of node ``node`` of ``schedule.app`` (the extended
    DAG; nodes ``>= app.n`` are retraining nodes). ``cluster`` is a copy of the servers with
    their timelines as they are now: read it, or plan on it (writing it changes nothing).
    """

    kind: str
    k: int
    node: int
    time_s: float
    app: DAGApp  # the request's inference DAG
    app_index: int
    schedule: RequestSchedule | None  # the request's extended DAG and placements (place)
    cluster: EdgeCluster
    acc_now: np.ndarray  # (V,) accuracy of each task's model at the request's arrival
    acc_after: np.ndarray  # (V, H) accuracy after retraining with each option
    options: tuple[tuple[RetrainOption, ...], ...]  # (V, H) configurations as they run
    theta: float
    a_min: float
    max_nodes: int


def epoch_of(state: DAGState, i: int) -> Epoch | None:
    """Env ``i``'s epoch (``None`` once its episode has ended)."""
    kind = int(state.kind[i])
    if kind == OVER:
        return None
    if kind == ADMIT:
        return Epoch("admit", int(state.k[i]), -1, float(state.time_s[i]))
    return Epoch("place", int(state.k[i]), int(state.node[i]), float(state.time_s[i]))


def cluster_of(params: DAGParams, state: DAGState, i: int) -> EdgeCluster:
    """Env ``i``'s servers and capacity timelines as an :class:`EdgeCluster` (a copy)."""
    p, tl = params, state.timelines
    out = EdgeCluster(
        state.speed[i],
        np.full(p.e, p.units),
        state.link[i],
        state.source_mb_s[i],
        state.storage_mb_s[i],
    )
    sizes = tl.size[i].tolist()
    out.times = [tl.time[i, j, :n].tolist() for j, n in enumerate(sizes)]
    out.used = [tl.used[i, j, :n].tolist() for j, n in enumerate(sizes)]
    return out


def retrain_options(params: DAGParams, frac: np.ndarray) -> tuple[tuple[RetrainOption, ...], ...]:
    """Per task, the configurations as they run with data fractions ``frac`` (V, H): data,
    workload and gain scaled by the pool of drifted samples (workload 0 when it is empty)."""
    return tuple(
        tuple(
            RetrainOption(o.name, o.data_mb * f, o.workload * f, o.demand, o.gain * f)
            for o, f in zip(params.options, row, strict=True)
        )
        for row in frac.tolist()
    )


def request_of(
    params: DAGParams, state: DAGState, i: int, s: int, cache: dict[int, Any] | None = None
) -> PendingRequest:
    """The request in slot ``s`` of env ``i``: its extended DAG (Fig. 7, as it was admitted),
    the placements so far and the nodes still to place. ``cache`` (request index -> what its
    admission fixed) spares rebuilding the extended DAG at every epoch of the request."""
    rq = state.requests
    k = int(rq.k[i, s]) if rq.k[i, s] >= 0 else None
    fixed = None if cache is None or k is None else cache.get(k)
    if fixed is None:
        fixed = _admitted(params, state, i, s)
        if cache is not None and k is not None:
            cache[k] = fixed
    app, choice, options, acc_now, acc_after, ext, retrains = fixed
    head, size = int(rq.head[i, s]), int(rq.size[i, s])
    sched = RequestSchedule(ext, float(rq.arrival[i, s]))
    order = rq.queue[i, s, :size].tolist()
    for x in order[:head]:
        sched.tasks[x] = Placement(
            int(rq.server[i, s, x]), float(rq.start[i, s, x]), float(rq.finish[i, s, x])
        )
    return PendingRequest(
        app=app,
        app_index=int(rq.app[i, s]),
        schedule=sched,
        queue=order[head:],
        choice=choice,
        acc=rq.acc[i, s, : app.n].copy(),
        acc_now=acc_now,
        acc_after=acc_after,
        options=options,
        retrains=retrains,
    )


def _admitted(params: DAGParams, state: DAGState, i: int, s: int) -> tuple[Any, ...]:
    """What the admission of the request in slot ``s`` of env ``i`` fixed: its application,
    choices, options, accuracies at arrival, extended DAG and retraining nodes."""
    rq = state.requests
    a = int(rq.app[i, s])
    app = params.apps[a]
    v = app.n
    choice = rq.choice[i, s, :v].tolist()
    frac = rq.frac[i, s, :v]
    options = retrain_options(params, frac)
    acc_now = rq.acc_now[i, s, :v].copy()
    acc_after = after_retraining(params, params.app_models[a], acc_now, frac)
    for arr in (acc_now, acc_after):
        arr.setflags(write=False)  # shared by every view of the request
    ext = extend_with_retraining(app, choice, options)
    retrains = {x: t for t, x in enumerate(rq.retrain[i, s, :v].tolist()) if x >= 0}
    return app, choice, options, acc_now, acc_after, ext, retrains


def pending_of(params: DAGParams, state: DAGState, i: int) -> dict[int, PendingRequest]:
    """Env ``i``'s admitted requests still being placed, by request index (admission order)."""
    rq = state.requests
    slots = sorted((k, s) for s, k in enumerate(rq.k[i].tolist()) if k >= 0)
    return {k: request_of(params, state, i, s) for k, s in slots}


def snapshot(
    params: DAGParams, state: DAGState, i: int, cache: dict[int, Any] | None = None
) -> DAGSnapshot:
    """Env ``i``'s current epoch for a baseline (see :class:`DAGSnapshot`; ``cache`` as for
    :func:`request_of`).

    Raises:
        RuntimeError: The episode has ended.
    """
    ep = epoch_of(state, i)
    if ep is None:
        raise RuntimeError("the episode has ended; call reset()")
    extra: dict[str, Any]
    if ep.kind == "admit":
        a = int(state.app_of[i, ep.k])
        v = params.apps[a].n
        extra = {
            "app": params.apps[a],
            "app_index": a,
            "schedule": None,
            "acc_now": state.acc_now[i, :v].copy(),
            "acc_after": state.acc_after[i, :v].copy(),
            "options": retrain_options(params, state.frac[i, :v]),
        }
    else:
        req = request_of(params, state, i, int(state.slot[i]), cache)
        extra = {
            "app": req.app,
            "app_index": req.app_index,
            "schedule": req.schedule,
            "acc_now": req.acc_now,
            "acc_after": req.acc_after,
            "options": req.options,
        }
    return DAGSnapshot(
        kind=ep.kind,
        k=ep.k,
        node=ep.node,
        time_s=ep.time_s,
        cluster=cluster_of(params, state, i),
        theta=params.theta,
        a_min=params.a_min,
        max_nodes=params.n_nodes,
        **extra,
    )

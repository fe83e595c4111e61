"""Batched dynamics of the DAG-offload family (``edgegym/DAGOffload-v0``, SRS/MRS, INFOCOM'25).

The family's :class:`~edgegym.core.dynamics.Dynamics` (DESIGN §6, §8): immutable :class:`DAGParams`
(everything a scenario fixes, precomputed once: the applications with their predecessor and
successor tables, the models' drift and pool rates, the retraining configurations, the power
of a resource unit) and two implementations of the same functions, equal bit for bit:

* :class:`DAGDynamics` over :class:`DAGState`, arrays only: the vector environment's
  (:mod:`edgegym.families.dag.vector`, ``N`` envs). The servers' capacity timelines are padded
  breakpoints (:class:`~edgegym.families.dag.cluster.Timelines`; placement is
  :func:`~edgegym.families.dag.cluster.earliest_starts` and
  :func:`~edgegym.families.dag.cluster.commit` over all envs at once), the admitted requests still
  being placed are ``Q`` padded slots per env (:class:`Requests`: each extended DAG's nodes,
  priority queue, placements and head input times), and the epoch, mask and arriving request of
  every env are arrays too. A step is a few hundred numpy calls whatever ``N``; Python loops only
  over the admitted requests' (application, retrained tasks) pairs (a cached topological order) and
  the step's lists of retrained tasks. The widths ``K`` and ``Q`` grow by doubling:
  :meth:`DAGDynamics.observation` leaves a step's worth of room, so a step never changes them
  (a vector env writes stepped sub-batches and fresh envs back into its state).
* :class:`ObjectDAGDynamics` over :class:`ObjectDAGState`: per-env Python objects (each env's
  :class:`~edgegym.families.dag.cluster.EdgeCluster`, :class:`Pending` requests and finished
  schedules), stepped one env after the other. The single environment's
  (:class:`edgegym.families.dag.env.DAGOffloadEnv`, the batch of one): for one env it is about 3x
  faster than the array path (numpy's per-call overhead), and baselines plan on its live
  clusters. It is the reference the array path is tested against (``tests/envs/test_vector.py``,
  ``tests/envs/test_dag_vector.py``), as :class:`~edgegym.families.dag.cluster.EdgeCluster` is for
  the timeline functions (``tests/sim/test_dag_timelines.py``).

Both compute every float with the same operations in the same order (sums of a row as numpy
sums it alone, Eq. 10 priorities by relaxation over the same terms), hence the equality.

One decision epoch (see the env's docstring): **admit** request ``k`` with retraining choices
(models drift linearly to a floor from their last retraining; a pool of drifted samples grows
and empties at each retraining; a chosen configuration adds a retraining node to the request's
DAG), or **place** the head node of a pending request on a server at its earliest feasible
start (:meth:`~edgegym.families.dag.cluster.EdgeCluster.place`), paying its energy and the growth of
the request's latest finish.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from edgegym.core.dynamics import Record
from edgegym.families.dag.cluster import (
    EdgeCluster,
    RequestSchedule,
    Timelines,
    commit,
    earliest_start_row,
    earliest_starts,
    forget_before,
    list_order,
    priorities,
)
from edgegym.families.dag.graph import (
    DAGApp,
    RetrainOption,
    extend_with_retraining,
    topological_order,
)
from edgegym.families.dag.params import DAGParams
from edgegym.families.dag.reward import TERMS

NODE_FEATURES = 13
SERVER_FEATURES = 5
GLOBALS = 5
_MB_PER_GBPS = 125.0
_ARRIVAL_BINS = 1000
OVER, ADMIT, PLACE = 0, 1, 2  # DAGState.kind: the episode has ended, admit, place


@dataclass
class Epoch:
    """The decision an env waits for: admit request ``k`` (choose its retraining
    configurations) or place node ``node`` of request ``k``'s extended DAG on a server."""

    kind: str  # "admit" or "place"
    k: int
    node: int = -1
    time_s: float = 0.0  # the request's arrival (admit) or the node's earliest input time


@dataclass
class Pending:
    """An admitted request whose extended DAG is still being placed."""

    app: DAGApp  # inference DAG
    app_index: int
    schedule: RequestSchedule  # extended DAG and the placements so far
    queue: list[int]  # unplaced nodes of the extended DAG in decreasing Eq. 10 priority
    choice: list[int]  # retraining option per inference task (-1: none)
    acc: np.ndarray  # (V,) accuracy each task runs with
    acc_now: np.ndarray  # (V,) accuracy of each task's model at arrival
    acc_after: np.ndarray  # (V, H) accuracy after retraining with each option
    options: tuple[tuple[RetrainOption, ...], ...]  # (V, H) options as they ran at arrival
    priority: np.ndarray  # (V,) Eq. 10 priorities of the inference DAG
    retrains: dict[int, int]  # extended node -> the inference task whose model it retrains
    head_ready: float = 0.0  # earliest input time of queue[0] over the servers
    ready_on: list[float] = field(default_factory=list)  # (E,) input time of queue[0] on each
    front: float = 0.0  # latest finish of the nodes placed so far (arrival before any)


@dataclass(frozen=True)
class Arriving:
    """The request of an admit epoch as it would run now (cached until the epoch changes)."""

    app: DAGApp
    app_index: int
    acc_now: np.ndarray  # (V,) accuracy of each task's model at the arrival
    acc_after: np.ndarray  # (V, H) accuracy after retraining with each option
    options: tuple[tuple[RetrainOption, ...], ...]  # (V, H) options as they would run


def _draw(
    params: DAGParams, rng: np.random.Generator
) -> tuple[EdgeCluster, np.ndarray, np.ndarray]:
    """One env's episode, drawn from ``rng`` (always in this order): its servers (speeds,
    links, storage bandwidth), the (R,) arrival times (the arrival process over the run,
    time-scaled to exactly R requests), the (R,) application of each request, and last the
    controller's bandwidth to each server (drawn last, so the draws before it are those of
    the version that had one rate for the controller and storage)."""
    p = params
    lo, hi = p.speed_tflops
    speed = rng.uniform(lo, hi, p.e) / hi  # 1 = the fastest server in the range
    lo, hi = p.link_gbps
    link = rng.uniform(lo, hi, (p.e, p.e)) * _MB_PER_GBPS
    link = (link + link.T) / 2
    lo, hi = p.storage_gbps
    storage = rng.uniform(lo, hi, p.e) * _MB_PER_GBPS
    dt = p.duration / _ARRIVAL_BINS
    counts = p.arrival.counts(_ARRIVAL_BINS, dt, rng).astype(float)
    if counts.sum() <= 0:
        counts = np.ones(_ARRIVAL_BINS)
    edges = np.linspace(0.0, p.duration, _ARRIVAL_BINS + 1)
    cdf = np.concatenate([[0.0], np.cumsum(counts)]) / counts.sum()
    r = p.n_requests
    q = (np.arange(r) + rng.uniform(size=r)) / r
    apps = rng.choice(len(p.apps), size=r, p=p.app_weights)
    lo, hi = p.controller_gbps
    controller = rng.uniform(lo, hi, p.e) * _MB_PER_GBPS
    cluster = EdgeCluster(speed, np.full(p.e, p.units), link, controller, storage)
    return cluster, np.interp(q, cdf, edges), apps


def _fraction(
    params: DAGParams,
    state: ObjectDAGState | DAGState,
    env: np.ndarray | int,
    idx: np.ndarray,
    t: np.ndarray | float,
) -> np.ndarray:
    """(..., H) fraction of each configuration's data the pools of models ``idx`` (...) of
    envs ``env`` hold at ``t`` (1 without pools): a retraining uses ``min(b_h, pool)`` and
    its cost and gain scale with it."""
    bt = state.base_time[env, idx]
    pool = state.pool_mb[env, idx] + params.m_pool_rate[idx] * np.maximum(0.0, t - bt)
    frac = np.minimum(1.0, pool[..., None] / np.maximum(params.opt_data, 1e-12))
    return np.where(params.m_pooled[idx][..., None], frac, 1.0)


def _tables(
    params: DAGParams,
    state: ObjectDAGState | DAGState,
    t: np.ndarray,
    app_of: np.ndarray,
    acc: np.ndarray,
    acc_now: np.ndarray,
    phi: np.ndarray,
    placed: np.ndarray,
    cur: np.ndarray,
    cur_r: np.ndarray,
    servers: np.ndarray,
    admit: np.ndarray,
    pending: np.ndarray,
) -> dict[str, np.ndarray]:
    """The ``Dict`` observation of every env (see the env's docstring) from what each
    dynamics gathers per env; the node tables are formed for all envs at once.

    Args:
        params: The scenario's params.
        state: Either dynamics' state (speeds, links to storage, model retraining times).
        t: (N,) time of each env's epoch.
        app_of: (N,) int64 application of the epoch's request (-1: none).
        acc: (N, n) accuracy each task runs with.
        acc_now: (N, n) accuracy of each task's model at the arrival.
        phi: (N, n) Eq. 10 priorities.
        placed: (N, n) bool: the task is placed.
        cur: (N,) int64 presented inference node (-1: none).
        cur_r: (N,) int64 task whose model the presented node retrains (-1: none).
        servers: (N, E, SERVER_FEATURES) float32 with the backlog and finish-gap columns set
            (completed here).
        admit: (N,) bool: an admit epoch (an array or a list).
        pending: (N,) requests still being placed, / 10 (an array or a list).

    Returns:
        The observation, each entry (N, ...) float32.
    """
    m, n = len(t), params.n_nodes
    live = app_of >= 0
    ai = np.where(live, app_of, 0)
    feats = np.empty((m, n, NODE_FEATURES))
    feats[:, :, :4] = params.app_static[ai]
    feats[:, :, 4] = acc
    feats[:, :, 5] = params.app_ceiling[ai] - acc
    base = state.base_time[np.arange(m)[:, None], params.app_model[ai]]
    feats[:, :, 6] = np.maximum(0.0, t[:, None] - base) / 100.0
    feats[:, :, 7] = params.app_exe[ai] * state.mean_inv_speed[:, None]
    feats[:, :, 8] = phi
    feats[:, :, 9] = acc - acc_now  # accuracy gained by the chosen retraining
    feats[:, :, 10] = placed
    col = np.arange(n)[None, :]
    feats[:, :, 11] = col == cur[:, None]
    feats[:, :, 12] = col == cur_r[:, None]
    feats[~(params.app_valid[ai] & live[:, None])] = 0.0
    servers[:, :, 0] = state.speed
    servers[:, :, 1] = params.units
    servers[:, :, 3] = state.storage_mb_s / 1000.0
    glob = np.empty((m, GLOBALS), dtype=np.float32)
    glob[:, 0] = state.next / params.n_requests
    glob[:, 1] = params.theta / 10
    glob[:, 2] = params.a_min
    glob[:, 3] = admit
    glob[:, 4] = pending
    return {
        "nodes": feats.astype(np.float32),
        "edges": np.where(live[:, None, None], params.app_edges[ai], np.float32(-1.0)),
        "edge_mask": np.where(live[:, None], params.app_edge_mask[ai], np.float32(0.0)),
        "servers": np.minimum(servers, 1e6),
        "globals": glob,
    }


class _DAGDynamicsBase:
    """What both dynamics share: the reward terms and the whole-episode numbers."""

    terms: tuple[str, ...] = TERMS

    def metrics(
        self, params: DAGParams, state: ObjectDAGState | DAGState, i: int
    ) -> dict[str, float]:
        """Env ``i``'s whole-episode numbers (its ``info["episode_metrics"]``)."""
        k = params.n_requests
        return {
            "objective": float(state.total_objective[i]) / k,
            "completion_s": float(state.total_completion[i]) / k,
            "accuracy": float(state.total_accuracy[i]) / k,
            "retrainings": float(state.retrainings[i]),
            "energy_j": float(state.energy_j[i]),
        }


@dataclass
class _EpisodeStart:
    """The state fields both DAG dynamics start alike (:func:`_episode_start` builds them):
    arrivals, models, totals and the drawn servers' speeds and links (leading axis N)."""

    times: np.ndarray  # (N, R) arrival time of each request
    app_of: np.ndarray  # (N, R) int64 application of each request
    base_acc: np.ndarray  # (N, M) accuracy of each model at its last retraining
    base_time: np.ndarray  # (N, M) time of each model's last retraining
    pool_mb: np.ndarray  # (N, M) pooled request inputs since the last retraining
    next: np.ndarray  # (N,) int64 requests admitted so far (the next one to admit)
    total_objective: np.ndarray  # (N,) sum of the finished requests' objectives
    total_completion: np.ndarray  # (N,) sum of their completion times
    total_accuracy: np.ndarray  # (N,) sum of the admitted requests' mean accuracy
    retrainings: np.ndarray  # (N,) int64 retraining nodes added
    energy_j: np.ndarray  # (N,) joules of the placed nodes
    busy: np.ndarray  # (N, E) resource-unit seconds used per server
    horizon: np.ndarray  # (N,) latest finish so far
    speed: np.ndarray  # (N, E) server speeds (as in the cluster)
    source_mb_s: np.ndarray  # (N, E) bandwidth from the controller to each server
    storage_mb_s: np.ndarray  # (N, E) bandwidth from storage to each server
    mean_inv_speed: np.ndarray  # (N,) mean over servers of 1 / speed


@dataclass
class ObjectDAGState(_EpisodeStart):
    """N environments' state for :class:`ObjectDAGDynamics` (leading axis N; list fields hold
    one Python object per env)."""

    cluster: list[EdgeCluster]  # (N,) servers and their capacity timelines
    epoch: list[Epoch | None]  # (N,) the decision waited for (None: episode over)
    pending: list[dict[int, Pending]]  # (N,) admitted requests still being placed
    schedules: list[list[RequestSchedule]]  # (N,) finished requests' schedules (kept with
    records: list[list[dict[str, Any]]]  # (N,) one per finished request;   keep_history)
    arriving: list[Arriving | None]  # (N,) cache of the admit epoch's request (None: unset)
    masks: list[np.ndarray | None]  # (N,) cache of the epoch's (K,) mask (None: unset)
    phi: list[dict[int, np.ndarray]]  # (N,) cache: application -> Eq. 10 priorities


def _episode_start(
    p: DAGParams, rngs: Sequence[np.random.Generator]
) -> tuple[list[EdgeCluster], dict[str, np.ndarray]]:
    """Each env's drawn cluster and the state fields both dynamics start alike: arrivals,
    models, zero totals and the servers' speeds (env ``i`` draws from ``rngs[i]`` only)."""
    m, n_models = len(rngs), len(p.model_names)
    times = np.zeros((m, p.n_requests))
    app_of = np.zeros((m, p.n_requests), dtype=np.int64)
    speeds = np.zeros((m, p.e))
    sources = np.zeros((m, p.e))
    storages = np.zeros((m, p.e))
    inv = np.zeros(m)
    clusters = []
    for j, rng in enumerate(rngs):
        cluster, times[j], app_of[j] = _draw(p, rng)
        clusters.append(cluster)
        inv[j] = float(np.mean(1.0 / cluster.speed))
        speeds[j], sources[j], storages[j] = cluster.speed, cluster.source, cluster.storage
    return clusters, {
        "times": times,
        "app_of": app_of,
        "base_acc": np.tile(p.m_start, (m, 1)),
        "base_time": np.zeros((m, n_models)),
        "pool_mb": np.zeros((m, n_models)),
        "next": np.zeros(m, dtype=np.int64),
        "total_objective": np.zeros(m),
        "total_completion": np.zeros(m),
        "total_accuracy": np.zeros(m),
        "retrainings": np.zeros(m, dtype=np.int64),
        "energy_j": np.zeros(m),
        "busy": np.zeros((m, p.e)),
        "horizon": np.zeros(m),
        "speed": speeds,
        "source_mb_s": sources,
        "storage_mb_s": storages,
        "mean_inv_speed": inv,
    }


class ObjectDAGDynamics(_DAGDynamicsBase):
    """The DAG family's :class:`~edgegym.core.dynamics.Dynamics` over per-env Python objects: each
    env's :class:`~edgegym.families.dag.cluster.EdgeCluster` and :class:`Pending` requests, stepped
    one env after the other. The single environment's dynamics (the fastest for one env) and the
    reference :class:`DAGDynamics` is checked against.

    Args:
        keep_history: Keep every finished request's schedule and record
            (``ObjectDAGState.schedules`` and ``records``: about 5 kB a request). Without
            it an episode's memory does not grow with its requests.
    """

    def __init__(self, keep_history: bool = True) -> None:
        self.keep_history = bool(keep_history)

    # ------------------------------------------------------------------ start
    def initial(self, params: DAGParams, rngs: Sequence[np.random.Generator]) -> ObjectDAGState:
        """Fresh episodes; env ``i`` draws its servers and requests from ``rngs[i]`` only."""
        p, m = params, len(rngs)
        clusters, common = _episode_start(p, rngs)
        state = ObjectDAGState(
            **common,
            cluster=clusters,
            epoch=[None] * m,
            pending=[{} for _ in range(m)],
            schedules=[[] for _ in range(m)],
            records=[[] for _ in range(m)],
            arriving=[None] * m,
            masks=[None] * m,
            phi=[{} for _ in range(m)],
        )
        for j in range(m):
            self.advance(p, state, j)
        return state

    # ------------------------------------------------------------------ per env
    def advance(self, params: DAGParams, state: ObjectDAGState, i: int) -> None:
        """Pick env ``i``'s next epoch (Algorithm 3's order; see the env's docstring)."""
        best = None
        pending = state.pending[i]
        for k, q in pending.items():
            key = (q.head_ready, q.schedule.arrival, k)
            if best is None or key < best:
                best = key
        nxt = int(state.next[i])
        state.arriving[i] = None
        state.masks[i] = None
        if nxt < params.n_requests and (best is None or state.times[i, nxt] <= best[0]):
            state.epoch[i] = Epoch("admit", nxt, -1, float(state.times[i, nxt]))
        elif best is not None:
            k = best[2]
            state.epoch[i] = Epoch("place", k, pending[k].queue[0], best[0])
        else:
            state.epoch[i] = None

    def now(self, params: DAGParams, state: ObjectDAGState, i: int) -> float:
        """Time of env ``i``'s current epoch (the last arrival after the episode ends)."""
        ep = state.epoch[i]
        if ep is not None:
            return ep.time_s
        return float(state.times[i, -1]) if state.next[i] > 0 else 0.0

    def model_accuracy(
        self, params: DAGParams, state: ObjectDAGState, i: int, t: float
    ) -> np.ndarray:
        """(M,) accuracy of every model of env ``i`` at time t (linear drift to a floor)."""
        drift = params.m_drift * (t - state.base_time[i])
        return np.maximum(params.m_floor, state.base_acc[i] - drift)

    def data_fraction(
        self, params: DAGParams, state: ObjectDAGState, i: int, idx: np.ndarray, t: float
    ) -> np.ndarray:
        """(V, H) fraction of each configuration's data the model's pool holds (1 without
        pools): a retraining uses ``min(b_h, pool)`` and its cost and gain scale with it."""
        return _fraction(params, state, i, idx, t)

    def task_acc(
        self, params: DAGParams, state: ObjectDAGState, i: int, app: DAGApp, t: float
    ) -> tuple[np.ndarray, np.ndarray]:
        """(V,) accuracy of ``app``'s tasks at t and (V, H) after retraining with each option."""
        idx = np.array([params.model_index[m] for m in app.models])
        return self._task_acc(params, state, i, idx, t)

    def _task_acc(
        self, params: DAGParams, state: ObjectDAGState, i: int, idx: np.ndarray, t: float
    ) -> tuple[np.ndarray, np.ndarray]:
        now = self.model_accuracy(params, state, i, t)[idx]
        gain = params.opt_gain[None, :] * self.data_fraction(params, state, i, idx, t)
        after = now[:, None] + gain * (params.m_ceiling[idx][:, None] - now[:, None])
        return now, after

    def task_options(
        self, params: DAGParams, state: ObjectDAGState, i: int, app: DAGApp, t: float
    ) -> list[list[RetrainOption]]:
        """Per task, the configurations as they would run now (data and workload scaled by
        the pool of drifted samples; workload 0 when the pool is empty)."""
        idx = np.array([params.model_index[m] for m in app.models])
        return self._task_options(params, self.data_fraction(params, state, i, idx, t))

    @staticmethod
    def _task_options(params: DAGParams, frac: np.ndarray) -> list[list[RetrainOption]]:
        out = []
        for row_frac in frac.tolist():
            row = []
            for o, f in zip(params.options, row_frac, strict=True):
                row.append(
                    RetrainOption(o.name, o.data_mb * f, o.workload * f, o.demand, o.gain * f)
                )
            out.append(row)
        return out

    def arriving(self, params: DAGParams, state: ObjectDAGState, i: int) -> Arriving:
        """The request of env ``i``'s admit epoch (computed once per epoch)."""
        got = state.arriving[i]
        if got is not None:
            return got
        k = state.epoch[i].k
        a = int(state.app_of[i, k])
        app, t = params.apps[a], float(state.times[i, k])
        idx = params.app_models[a]
        now, after = self._task_acc(params, state, i, idx, t)
        frac = self.data_fraction(params, state, i, idx, t)
        opts = tuple(map(tuple, self._task_options(params, frac)))
        got = Arriving(app, a, now, after, opts)
        state.arriving[i] = got
        return got

    def _priorities(self, params: DAGParams, state: ObjectDAGState, i: int, a: int) -> np.ndarray:
        """(V,) Eq. 10 priorities of application ``a`` on env ``i``'s servers (cached: they
        depend only on the servers' speeds and links)."""
        phi = state.phi[i].get(a)
        if phi is None:
            phi = priorities(params.apps[a], state.cluster[i])
            phi.setflags(write=False)
            state.phi[i][a] = phi
        return phi

    @staticmethod
    def idle_mask(params: DAGParams) -> np.ndarray:
        """(K,) bool: the mask without an epoch (before reset, after the end): 0 everywhere."""
        h = len(params.options)
        out = np.zeros(params.e + params.n_nodes * (h + 1), dtype=bool)
        out[0] = True
        out[params.e :: h + 1] = True
        return out

    def mask_row(self, params: DAGParams, state: ObjectDAGState, i: int) -> np.ndarray:
        """(K,) bool: env ``i``'s flat action mask (see the env's docstring; computed once per
        epoch: do not write to it)."""
        got = state.masks[i]
        if got is None:
            got = state.masks[i] = self._mask_row(params, state, i)
        return got

    def _mask_row(self, params: DAGParams, state: ObjectDAGState, i: int) -> np.ndarray:
        n, e, h = params.n_nodes, params.e, len(params.options)
        ep = state.epoch[i]
        if ep is None:
            return self.idle_mask(params)
        srv = np.zeros(e, dtype=bool)
        cfg = np.zeros((n, h + 1), dtype=bool)
        srv[0] = True
        cfg[:, 0] = True
        if ep.kind == "place":
            demand = state.pending[i][ep.k].schedule.app.demand[ep.node]
            srv = state.cluster[i].capacity >= demand - 1e-9
        else:
            arr = self.arriving(params, state, i)
            v = arr.app.n
            has_data = np.array([[o.workload > 0 for o in row] for row in arr.options])
            ok = (arr.acc_after >= params.a_min) & has_data & params.opt_fits
            cfg[:v, 1:] = ok
            cfg[:v, 0] = (arr.acc_now >= params.a_min) | ~ok.any(axis=1)
        return np.concatenate([srv, cfg.ravel()])

    def _project_row(
        self, params: DAGParams, state: ObjectDAGState, i: int, action: np.ndarray, mask: np.ndarray
    ) -> tuple[int, list[int]]:
        """Applied ``(server, retraining choices)`` of env ``i`` for its int64 ``action``."""
        n, e, h = params.n_nodes, params.e, len(params.options)
        srv_mask, cfg_mask = mask[:e], mask[e:].reshape(n, h + 1)
        a = action
        server = int(a[0]) if 0 <= a[0] < e and srv_mask[a[0]] else int(np.argmax(srv_mask))
        choice = []
        ep = state.epoch[i]
        if ep is not None and ep.kind == "admit":
            app = params.apps[int(state.app_of[i, ep.k])]
            for t in range(app.n):
                v = a[1 + t]
                if not (0 <= v <= h and cfg_mask[t, v]):
                    valid = np.flatnonzero(cfg_mask[t])
                    v = int(valid[1]) if valid.size > 1 and not cfg_mask[t, 0] else int(valid[0])
                choice.append(int(v) - 1)
        return server, choice

    def _admit(
        self, params: DAGParams, state: ObjectDAGState, i: int, choice: list[int]
    ) -> tuple[float, float]:
        """Admit env ``i``'s arriving request with its retraining choices; returns the
        accuracy term (minus the accuracy loss) and the request's mean accuracy."""
        k = state.epoch[i].k
        t = float(state.times[i, k])
        arr = self.arriving(params, state, i)
        app, a, now, after = arr.app, arr.app_index, arr.acc_now, arr.acc_after
        cluster = state.cluster[i]
        ext = extend_with_retraining(app, choice, arr.options)
        acc = np.array([after[v, c] if c >= 0 else now[v] for v, c in enumerate(choice)])
        idx = params.app_models[a]
        retrains, r = {}, app.n
        for v, c in enumerate(choice):
            if c >= 0:
                mdl = idx[v]
                state.base_acc[i, mdl] = after[v, c]  # updated for this and later requests
                state.base_time[i, mdl] = t
                state.pool_mb[i, mdl] = 0.0
                retrains[r] = v
                r += 1
        if params.pool_from_inputs:  # this request's data joins its models' pools
            inflow = params.app_inflow[a]
            for v in range(app.n):
                state.pool_mb[i, idx[v]] += inflow[v]
        p = Pending(
            app=app,
            app_index=a,
            schedule=RequestSchedule(ext, t),
            queue=list_order(ext, cluster),
            choice=choice,
            acc=acc,
            acc_now=now,
            acc_after=after,
            options=arr.options,
            priority=self._priorities(params, state, i, a),
            retrains=retrains,
        )
        p.head_ready = self._ready(params, cluster, p)
        p.front = t
        pending = state.pending[i]
        pending[k] = p
        state.next[i] += 1
        # No node can start before the earliest pending request's arrival any more.
        cluster.forget_before(min(q.schedule.arrival for q in pending.values()))
        mean = float(acc.mean())
        state.total_accuracy[i] += mean
        state.retrainings[i] += len(retrains)
        return -float(np.sum(1.0 - acc)), mean

    @staticmethod
    def _ready(params: DAGParams, cluster: EdgeCluster, p: Pending) -> float:
        """Earliest input time of ``p``'s head node over the servers (each kept in
        ``p.ready_on``: it changes only when the request's own nodes are placed)."""
        node, sched = p.queue[0], p.schedule
        p.ready_on = [cluster.ready_time(sched, node, j) for j in range(params.e)]
        return min(p.ready_on)

    def place(
        self, params: DAGParams, state: ObjectDAGState, i: int, server: int
    ) -> tuple[float, float, dict[str, Any] | None]:
        """Place env ``i``'s presented node on ``server``: returns the growth of the request's
        latest finish, the node's joules, and the request's record if it is now finished."""
        ep = state.epoch[i]
        k, node = ep.k, ep.node
        pending = state.pending[i]
        p = pending[k]
        demand = float(p.schedule.app.demand[node])
        pl = state.cluster[i].place(p.schedule, node, server)
        state.busy[i, server] += (pl.finish - pl.start) * demand
        state.horizon[i] = max(float(state.horizon[i]), pl.finish)
        energy = (pl.finish - pl.start) * demand / params.units * params.unit_dyn_w
        state.energy_j[i] += energy
        p.queue.pop(0)
        # The completion term is paid as the request's latest finish moves (it telescopes to
        # the completion time at the last node), so each placement sees its own cost.
        grown = max(0.0, pl.finish - p.front)
        p.front = max(p.front, pl.finish)
        if p.queue:
            p.head_ready = self._ready(params, state.cluster[i], p)
            return grown, energy, None
        del pending[k]
        completion = p.schedule.completion
        loss = float(np.sum(1.0 - p.acc))
        objective = completion + params.theta * loss
        state.total_objective[i] += objective
        state.total_completion[i] += completion
        record = {
            "request": k,
            "app": p.app.name,
            "arrival_s": p.schedule.arrival,
            "completion_s": completion,
            "accuracy": float(p.acc.mean()),
            "objective": objective,
            "retrainings": len(p.retrains),
        }
        if self.keep_history:
            state.schedules[i].append(p.schedule)
            state.records[i].append(record)
        return grown, energy, record

    # ------------------------------------------------------------------ contract
    def mask(self, params: DAGParams, state: ObjectDAGState) -> np.ndarray:
        """(N, K) bool: the flat action mask of every env."""
        return np.stack([self.mask_row(params, state, i) for i in range(len(state.epoch))])

    def project(
        self, params: DAGParams, state: ObjectDAGState, actions: Any, mask: np.ndarray | None = None
    ) -> list[tuple[int, list[int]]]:
        """Per env, the applied ``(server, retraining choices)`` for ``actions`` (N, 1 + n)."""
        a = np.asarray(actions)
        m = len(state.epoch)
        if a.shape != (m, 1 + params.n_nodes):
            raise ValueError(f"actions must have shape ({m}, {1 + params.n_nodes}), got {a.shape}")
        if a.dtype.kind in "iub":
            a = a.astype(np.int64)
        else:
            a = np.nan_to_num(a.astype(float)).astype(np.int64)
        if mask is None:
            mask = self.mask(params, state)
        return [self._project_row(params, state, i, a[i], mask[i]) for i in range(m)]

    def step(
        self, params: DAGParams, state: ObjectDAGState, actions: np.ndarray
    ) -> tuple[ObjectDAGState, Record]:
        """One decision epoch of every env (in place). Every env must have an epoch."""
        if any(ep is None for ep in state.epoch):
            raise RuntimeError("step() on an env whose episode has ended")
        m, e = len(state.epoch), params.e
        applied = self.project(params, state, actions)
        completion = np.zeros(m)
        accuracy = np.zeros(m)
        energy = np.zeros(m)
        kind = np.empty(m, dtype="<U5")
        request = np.zeros(m, dtype=np.int64)
        node = np.full(m, -1, dtype=np.int64)
        server = np.full(m, -1, dtype=np.int64)
        acc_mean = np.full(m, np.nan)
        retrained = np.empty(m, dtype=object)
        done_s = np.full(m, np.nan)
        objective = np.full(m, np.nan)
        start = np.zeros(m)
        for i, (srv, choice) in enumerate(applied):
            ep = state.epoch[i]
            kind[i], request[i], start[i] = ep.kind, ep.k, ep.time_s
            if ep.kind == "admit":
                accuracy[i], acc_mean[i] = self._admit(params, state, i, choice)
                retrained[i] = [v for v, c in enumerate(choice) if c >= 0]
            else:
                grown, joules, rec = self.place(params, state, i, srv)
                completion[i] = -grown
                energy[i] = joules
                node[i], server[i] = ep.node, srv
                retrained[i] = []
                if rec is not None:
                    done_s[i] = rec["completion_s"]
                    acc_mean[i] = rec["accuracy"]
                    objective[i] = rec["objective"]
            self.advance(params, state, i)
        util = state.busy / (params.units * np.maximum(state.horizon, 1e-9))[:, None]
        now = np.array([self.now(params, state, i) for i in range(m)])
        record = Record(
            energy_j=energy,
            duration_s=np.maximum(0.0, now - start),
            terms={"completion": completion, "accuracy": accuracy, "energy": -energy / 1000.0},
            info={
                "epoch": kind,
                "request": request,
                "utilisation": util.reshape(m, e),
                "node": node,
                "server": server,
                "accuracy": acc_mean,
                "retrained": np.fromiter(retrained, dtype=object, count=m),
                "completion_s": done_s,
                "objective": objective,
            },
        )
        return state, record

    def observation(self, params: DAGParams, state: ObjectDAGState) -> dict[str, np.ndarray]:
        """The ``Dict`` observation of every env, each entry (N, ...) float32 (see the env's
        docstring for the tables). The node tables are formed for all envs at once from the
        per-env accuracies, priorities and flags gathered here."""
        m, n, e = len(state.epoch), params.n_nodes, params.e
        servers = np.zeros((m, e, SERVER_FEATURES), dtype=np.float32)
        app_of = np.full(m, -1, dtype=np.int64)
        t = np.zeros(m)
        acc = np.zeros((m, n))  # accuracy each task runs with
        acc_now = np.zeros((m, n))  # accuracy of each task's model at arrival
        phi = np.zeros((m, n))
        placed = np.zeros((m, n))
        cur = np.full(m, -1, dtype=np.int64)  # presented inference node
        cur_r = np.full(m, -1, dtype=np.int64)  # task whose model the presented node retrains
        for i in range(m):
            ep = state.epoch[i]
            t[i] = now = self.now(params, state, i)
            cluster = state.cluster[i]
            servers[i, :, 2] = [max(0.0, tl[-1] - now) for tl in cluster.times]
            if ep is None:
                continue
            if ep.kind == "admit":
                arr = self.arriving(params, state, i)
                a, v = arr.app_index, arr.app.n
                acc[i, :v] = arr.acc_now
                acc_now[i, :v] = arr.acc_now
                phi[i, :v] = self._priorities(params, state, i, a)
            else:
                p = state.pending[i][ep.k]
                a, v = p.app_index, p.app.n
                acc[i, :v] = p.acc
                acc_now[i, :v] = p.acc_now
                phi[i, :v] = p.priority
                tasks = p.schedule.tasks
                placed[i, :v] = [x in tasks for x in range(v)]
                if ep.node < v:
                    cur[i] = ep.node
                cur_r[i] = p.retrains.get(ep.node, -1)
                servers[i, :, 4] = self._finish_gaps(params, cluster, p, ep.node)
            app_of[i] = a
        admit = [ep is not None and ep.kind == "admit" for ep in state.epoch]
        pending = [len(q) / 10.0 for q in state.pending]
        return _tables(
            params, state, t, app_of, acc, acc_now, phi, placed, cur, cur_r, servers, admit, pending
        )

    @staticmethod
    def _finish_gaps(params: DAGParams, cluster: EdgeCluster, p: Pending, node: int) -> np.ndarray:
        """(E,) seconds ``node`` would finish on each server after its earliest finish
        (:meth:`~edgegym.families.dag.cluster.EdgeCluster.finish_on` with the input times kept)."""
        app = p.schedule.app
        w, c = float(app.workload[node]), app.demand[node]
        fin = []
        for j, ready in enumerate(p.ready_on):
            dur = cluster.exec_time(w, c, j)
            fin.append(cluster.earliest_start(j, ready, dur, c) + dur)
        return np.array(fin) - min(fin)  # 0 on the earliest-finish server(s)

    def done(self, params: DAGParams, state: ObjectDAGState) -> np.ndarray:
        """(N,) bool: every request admitted and placed."""
        return np.array([ep is None for ep in state.epoch], dtype=bool)


@dataclass
class Requests:
    """Every env's admitted requests still being placed, one per slot (``Q`` slots, padded;
    ``X`` = :attr:`DAGParams.n_ext` nodes: an extended DAG has its V inference tasks at
    ``0 .. V - 1`` and one retraining node per retrained task after them, in task order).
    Node and server indices are int16 (the arrays are copied whole when a vector env steps a
    sub-batch)."""

    k: np.ndarray  # (N, Q) int64 request in the slot (-1: a free slot)
    app: np.ndarray  # (N, Q) int64 its application
    arrival: np.ndarray  # (N, Q) its arrival time
    size: np.ndarray  # (N, Q) int64 nodes of its extended DAG
    head: np.ndarray  # (N, Q) int64 nodes placed so far (queue[head] is next)
    queue: np.ndarray  # (N, Q, X) int16 nodes in decreasing Eq. 10 priority
    task: np.ndarray  # (N, Q, X) int16 inference task of each node (a retraining node: its task's)
    retrain: np.ndarray  # (N, Q, n) int16 retraining node of each task (-1: none)
    workload: np.ndarray  # (N, Q, X) of each node
    demand: np.ndarray  # (N, Q, X) of each node
    input_mb: np.ndarray  # (N, Q, X) MB from the controller (tasks) / storage (retraining nodes)
    acc: np.ndarray  # (N, Q, n) accuracy each task runs with
    acc_now: np.ndarray  # (N, Q, n) accuracy of each task's model at the arrival
    server: np.ndarray  # (N, Q, X) int16 server of each placed node (-1: not placed)
    finish: np.ndarray  # (N, Q, X) finish of each placed node
    front: np.ndarray  # (N, Q) latest finish of the nodes placed so far (arrival before any)
    ready: np.ndarray  # (N, Q) earliest input time of queue[head] over the servers
    ready_on: np.ndarray  # (N, Q, E) input time of queue[head] on each server

    @classmethod
    def empty(cls, m: int, q: int, n: int, x: int, e: int) -> Requests:
        """``m`` envs with ``q`` free slots for ``x``-node extended DAGs of up to ``n`` tasks
        (``e`` servers)."""
        return cls(
            k=np.full((m, q), -1, dtype=np.int64),
            app=np.zeros((m, q), dtype=np.int64),
            arrival=np.zeros((m, q)),
            size=np.zeros((m, q), dtype=np.int64),
            head=np.zeros((m, q), dtype=np.int64),
            queue=np.zeros((m, q, x), dtype=np.int16),
            task=np.zeros((m, q, x), dtype=np.int16),
            retrain=np.full((m, q, n), -1, dtype=np.int16),
            workload=np.zeros((m, q, x)),
            demand=np.ones((m, q, x)),
            input_mb=np.zeros((m, q, x)),
            acc=np.zeros((m, q, n)),
            acc_now=np.zeros((m, q, n)),
            server=np.full((m, q, x), -1, dtype=np.int16),
            finish=np.zeros((m, q, x)),
            front=np.zeros((m, q)),
            ready=np.zeros((m, q)),
            ready_on=np.zeros((m, q, e)),
        )

    @property
    def width(self) -> int:
        """Q, the padded number of slots."""
        return self.k.shape[1]

    def widen(self, q: int) -> None:
        """Pad every env to ``q`` slots (in place; ``q`` >= :attr:`width`), free ones."""
        for f in fields(self):
            a = getattr(self, f.name)
            pad = np.full((a.shape[0], q - a.shape[1], *a.shape[2:]), -1 if f.name == "k" else 0)
            setattr(self, f.name, np.concatenate([a, pad.astype(a.dtype)], axis=1))


@dataclass
class DAGState(_EpisodeStart):
    """N environments' state for :class:`DAGDynamics` (leading axis N; arrays only)."""

    link: np.ndarray  # (N, E, E) server-to-server bandwidth, MB/s
    slowest: np.ndarray  # (N,) slowest link between two servers (Eq. 10)
    app_phi: np.ndarray  # (N, A, n) Eq. 10 priorities of each application's tasks
    kind: np.ndarray  # (N,) int8 the epoch: OVER, ADMIT or PLACE
    k: np.ndarray  # (N,) int64 its request (-1: over)
    slot: np.ndarray  # (N,) int64 the request's slot in `requests` (place epochs; -1 else)
    node: np.ndarray  # (N,) int64 the node to place (place epochs; -1 else)
    time_s: np.ndarray  # (N,) the request's arrival (admit) or the node's earliest input time
    acc_now: np.ndarray  # (N, n) admit epochs: accuracy of each task's model at the arrival
    acc_after: np.ndarray  # (N, n, H) admit epochs: accuracy after retraining with each option
    frac: np.ndarray  # (N, n, H) admit epochs: data fraction of each option
    masks: np.ndarray  # (N, E + n (H + 1)) bool flat action mask of the epoch
    start_on: np.ndarray  # (N, E) place epochs: the node's earliest start on each server
    timelines: Timelines  # (N, E, K) the servers' capacity timelines
    requests: Requests  # (N, Q, ...) admitted requests still being placed


def _row_sums(x: np.ndarray, length: np.ndarray) -> np.ndarray:
    """(B,) ``np.sum(x[b, :length[b]])`` of every row, summed exactly as numpy sums the row
    alone (rows of one length are summed together; numpy's pairwise order depends on it)."""
    if len(x) == 1:  # one row (np.unique costs more than the sum)
        return x[:, : int(length[0])].sum(axis=1)
    out = np.empty(len(x))
    for v in np.unique(length):
        rows = length == v
        out[rows] = x[rows, :v].sum(axis=1)
    return out


def _extended_positions(app: DAGApp, retrained: np.ndarray, width: int) -> np.ndarray:
    """(width,) position of each node of ``app``'s extended DAG (retraining nodes for the
    tasks ``retrained``) in its topological order (``width`` for padding): the tie-break of
    :func:`~edgegym.families.dag.cluster.list_order`."""
    edges = [tuple(e) for e in app.edges.tolist()]
    r = app.n
    for i in np.flatnonzero(retrained).tolist():
        edges += [(u, r) for u, _ in app.preds(i)]
        edges.append((r, i))
        r += 1
    pos = np.full(width, width, dtype=np.int64)
    pos[topological_order(r, edges, app.name)] = np.arange(r)
    return pos


class DAGDynamics(_DAGDynamicsBase):
    """The DAG family's :class:`~edgegym.core.dynamics.Dynamics` over arrays: every step is a few
    numpy passes over all envs' timelines and pending requests (see the module docstring);
    the vector environment's dynamics. :class:`ObjectDAGDynamics` is its reference.

    The padded widths of the states it makes (timeline breakpoints ``K``, request slots
    ``Q``) are kept here and only grow, so a fresh state always fits the states grown before.
    """

    def __init__(self) -> None:
        self.breakpoints = 64  # K of the states made from now on
        self.slots = 32  # Q of the states made from now on
        # (application, retrained tasks) -> topological positions of the extended DAG's nodes
        self._positions: dict[tuple[int, bytes], np.ndarray] = {}

    # ------------------------------------------------------------------ start
    def initial(self, params: DAGParams, rngs: Sequence[np.random.Generator]) -> DAGState:
        """Fresh episodes; env ``i`` draws its servers and requests from ``rngs[i]`` only."""
        p = params
        m, n, h = len(rngs), p.n_nodes, len(p.options)
        clusters, common = _episode_start(p, rngs)
        slowest = np.ones(m)
        links = np.zeros((m, p.e, p.e))
        phi = np.zeros((m, len(p.apps), n))
        off = ~np.eye(p.e, dtype=bool)
        for j, cluster in enumerate(clusters):
            links[j] = cluster.link
            if p.e > 1:  # as priorities() takes it
                slowest[j] = float(np.min(cluster.link[off]))
            for a, app in enumerate(p.apps):
                phi[j, a, : app.n] = priorities(app, cluster)
        state = DAGState(
            **common,
            link=links,
            slowest=slowest,
            app_phi=phi,
            kind=np.zeros(m, dtype=np.int8),
            k=np.full(m, -1, dtype=np.int64),
            slot=np.full(m, -1, dtype=np.int64),
            node=np.full(m, -1, dtype=np.int64),
            time_s=np.zeros(m),
            acc_now=np.zeros((m, n)),
            acc_after=np.zeros((m, n, h)),
            frac=np.zeros((m, n, h)),
            masks=np.zeros((m, p.e + n * (h + 1)), dtype=bool),
            start_on=np.zeros((m, p.e)),
            timelines=Timelines.empty(m, p.e, self.breakpoints),
            requests=Requests.empty(m, self.slots, n, p.n_ext, p.e),
        )
        self.advance(p, state)
        return state

    def _reserve(self, state: DAGState) -> None:
        """Widen ``state`` (doubling) so that one step fits in it: two free breakpoint
        columns per server besides the padding one, and a free request slot per env. The
        states made from then on get the new widths (a vector env writes fresh envs into its
        state)."""
        tl, rq = state.timelines, state.requests
        k, q = tl.width, rq.width
        while int(tl.size.max()) + 3 > k:
            k *= 2
        while int(np.count_nonzero(rq.k >= 0, axis=1).max()) + 1 > q:
            q *= 2
        if k > tl.width:
            tl.widen(k)
        if q > rq.width:
            rq.widen(q)
        self.breakpoints = max(self.breakpoints, k)
        self.slots = max(self.slots, q)

    # ------------------------------------------------------------------ epochs
    def advance(self, params: DAGParams, state: DAGState) -> None:
        """Pick every env's next epoch (Algorithm 3's order; see the env's docstring): the
        pending head that can start earliest (ties: earlier arrival, then lower request
        index), unless the next request arrives no later; also its mask and, at admit epochs,
        the arriving request's accuracies."""
        if len(state.next) == 1:
            self._pick_one(params, state)
        else:
            self._pick(params, state)
        admit, place = state.kind == ADMIT, state.kind == PLACE
        if admit.any():
            self._arriving(params, state, np.flatnonzero(admit))
        if place.any():
            self._starts(params, state, np.flatnonzero(place))
        state.masks = self._masks(params, state)

    @staticmethod
    def _pick(params: DAGParams, state: DAGState) -> None:
        """Every env's next epoch, request, slot, node and time (:meth:`advance`)."""
        rq, r = state.requests, params.n_requests
        rows = np.arange(len(state.next))
        live = rq.k >= 0  # (N, Q)
        ready = np.where(live, rq.ready, np.inf)
        best = ready.min(axis=1)
        tie = live & (ready == best[:, None])
        arrival = np.where(tie, rq.arrival, np.inf)
        tie &= arrival == arrival.min(axis=1)[:, None]
        slot = np.where(tie, rq.k, r).argmin(axis=1)  # (N,)
        pending = live.any(axis=1)
        t_next = state.times[rows, np.minimum(state.next, r - 1)]
        admit = (state.next < r) & (~pending | (t_next <= best))
        place = ~admit & pending
        head = np.minimum(rq.head[rows, slot], rq.queue.shape[2] - 1)
        state.kind = np.where(admit, ADMIT, np.where(place, PLACE, OVER)).astype(np.int8)
        state.k = np.where(admit, state.next, np.where(place, rq.k[rows, slot], -1))
        state.slot = np.where(place, slot, -1)
        state.node = np.where(place, rq.queue[rows, slot, head], -1).astype(np.int64)
        state.time_s = np.where(admit, t_next, np.where(place, best, 0.0))

    @staticmethod
    def _pick_one(params: DAGParams, state: DAGState) -> None:
        """:meth:`_pick` of a batch of one: the smallest (input time, arrival, request) of
        the pending heads, against the next arrival, on Python values."""
        rq, r = state.requests, params.n_requests
        best, slot = None, -1
        rows = zip(rq.k[0].tolist(), rq.ready[0].tolist(), rq.arrival[0].tolist(), strict=True)
        for q, (k, ready, arrival) in enumerate(rows):
            if k >= 0 and (best is None or (ready, arrival, k) < best):
                best, slot = (ready, arrival, k), q
        nxt = int(state.next[0])
        t_next = float(state.times[0, min(nxt, r - 1)])
        kind, k, node, t = OVER, -1, -1, 0.0
        if nxt < r and (best is None or t_next <= best[0]):
            kind, k, slot, t = ADMIT, nxt, -1, t_next
        elif best is not None:
            head = min(int(rq.head[0, slot]), rq.queue.shape[2] - 1)
            kind, k, node, t = PLACE, best[2], int(rq.queue[0, slot, head]), best[0]
        else:
            slot = -1
        state.kind = np.array([kind], dtype=np.int8)
        state.k = np.array([k], dtype=np.int64)
        state.slot = np.array([slot], dtype=np.int64)
        state.node = np.array([node], dtype=np.int64)
        state.time_s = np.array([t])

    def _starts(self, params: DAGParams, state: DAGState, ix: np.ndarray) -> None:
        """The earliest start of the node presented in envs ``ix`` (place epochs) on each
        server (:meth:`~edgegym.families.dag.cluster.EdgeCluster.finish_on` with the input times
        kept): the observation shows the finish times, the step places at one of them."""
        rq, tl = state.requests, state.timelines
        if len(state.kind) == 1:
            self._starts_one(params, state)
            return
        s, x = state.slot[ix], state.node[ix]
        demand = np.zeros(len(state.kind))
        duration = np.zeros((len(state.kind), params.e))
        ready = np.full((len(state.kind), params.e), np.inf)  # other envs: nothing to scan
        demand[ix] = rq.demand[ix, s, x]
        duration[ix] = rq.workload[ix, s, x][:, None] / (demand[ix, None] * state.speed[ix])
        ready[ix] = rq.ready_on[ix, s]
        # Over every env's timelines at once (no copies); the others' results are dropped.
        start = earliest_starts(
            tl.time, tl.used, tl.size, params.units, ready, duration, demand[:, None]
        )
        state.start_on[ix] = start[ix]

    @staticmethod
    def _starts_one(params: DAGParams, state: DAGState) -> None:
        """:meth:`_starts` of a batch of one: the list rule on each server's row (what
        :func:`~edgegym.families.dag.cluster.earliest_starts` computes, without numpy's
        per-call cost on tiny arrays)."""
        rq, tl = state.requests, state.timelines
        s, x = int(state.slot[0]), int(state.node[0])
        demand = float(rq.demand[0, s, x])
        workload = float(rq.workload[0, s, x])
        if demand > params.units + 1e-9:
            state.start_on[0] = np.inf
            return
        limit = (params.units - demand) + 1e-9
        sizes = tl.size[0].tolist()
        out = []
        readies, speeds = rq.ready_on[0, s].tolist(), state.speed[0].tolist()
        for j, (ready, speed) in enumerate(zip(readies, speeds, strict=True)):
            n = sizes[j]
            times, used = tl.time[0, j, :n].tolist(), tl.used[0, j, :n].tolist()
            out.append(earliest_start_row(times, used, limit, ready, workload / (demand * speed)))
        state.start_on[0] = out

    def _arriving(self, params: DAGParams, state: DAGState, ix: np.ndarray) -> None:
        """Accuracies and data fractions of the request arriving in envs ``ix`` (admit
        epochs), as :meth:`ObjectDAGDynamics.arriving` forms them."""
        p = params
        k = state.k[ix]
        t = state.times[ix, k][:, None]  # (B, 1)
        idx = p.app_model[state.app_of[ix, k]]  # (B, n) model of each task
        r = ix[:, None]
        drift = p.m_drift[idx] * (t - state.base_time[r, idx])
        now = np.maximum(p.m_floor[idx], state.base_acc[r, idx] - drift)  # (B, n)
        state.frac[ix] = frac = _fraction(p, state, r, idx, t)  # (B, n, H)
        gain = p.opt_gain * frac
        state.acc_now[ix] = now
        state.acc_after[ix] = now[:, :, None] + gain * (p.m_ceiling[idx] - now)[:, :, None]

    def _masks(self, params: DAGParams, state: DAGState) -> np.ndarray:
        """(N, E + n (H + 1)) bool: every env's flat action mask (see the env's docstring)."""
        m, n, e, h = len(state.kind), params.n_nodes, params.e, len(params.options)
        srv = np.zeros((m, e), dtype=bool)
        cfg = np.zeros((m, n, h + 1), dtype=bool)
        srv[:, 0] = True
        cfg[:, :, 0] = True
        pi = np.flatnonzero(state.kind == PLACE)
        if pi.size:
            rq = state.requests
            demand = rq.demand[pi, state.slot[pi], state.node[pi]]
            srv[pi] = params.units >= (demand - 1e-9)[:, None]  # every server has `units`
        ai = np.flatnonzero(state.kind == ADMIT)
        if ai.size:
            valid = params.app_valid[state.app_of[ai, state.k[ai]]]  # (B, n)
            has_data = params.opt_work * state.frac[ai] > 0  # the option's scaled workload
            ok = (state.acc_after[ai] >= params.a_min) & has_data & params.opt_fits
            ok &= valid[:, :, None]
            cfg[ai, :, 1:] = ok
            cfg[ai, :, 0] = ~valid | (state.acc_now[ai] >= params.a_min) | ~ok.any(axis=2)
        return np.concatenate([srv, cfg.reshape(m, -1)], axis=1)

    def now_all(self, params: DAGParams, state: DAGState) -> np.ndarray:
        """(N,) :meth:`now` of every env."""
        last = np.where(state.next > 0, state.times[:, -1], 0.0)
        return np.where(state.kind != OVER, state.time_s, last)

    # ------------------------------------------------------------------ per env
    def now(self, params: DAGParams, state: DAGState, i: int) -> float:
        """Time of env ``i``'s current epoch (the last arrival after the episode ends)."""
        if state.kind[i] != OVER:
            return float(state.time_s[i])
        return float(state.times[i, -1]) if state.next[i] > 0 else 0.0

    # ------------------------------------------------------------------ transitions
    def _heads(self, params: DAGParams, state: DAGState) -> None:
        """The input times of the pending requests' heads that changed (marked NaN by
        :meth:`_admit` and :meth:`place`): all of them at once."""
        rq = state.requests
        ix, s = np.nonzero(np.isnan(rq.ready))
        if ix.size == 1:  # the usual case: the request just admitted or placed
            i, q = int(ix[0]), int(s[0])
            ready_on = self._ready_on_one(params, state, i, q, int(rq.queue[i, q, rq.head[i, q]]))
            rq.ready_on[i, q] = ready_on
            rq.ready[i, q] = min(ready_on)
        elif ix.size:
            ready_on = self._ready_on(params, state, ix, s, rq.queue[ix, s, rq.head[ix, s]])
            rq.ready_on[ix, s] = ready_on
            rq.ready[ix, s] = ready_on.min(axis=1)

    def _ready_on(
        self, params: DAGParams, state: DAGState, ix: np.ndarray, s: np.ndarray, x: np.ndarray
    ) -> np.ndarray:
        """(B, E) :meth:`~edgegym.families.dag.cluster.EdgeCluster.ready_time` of node ``x`` of the
        request in slot ``s`` of env ``ix`` on every server (Eq. 6-7): its input from the controller
        (an inference task) or from storage (a retraining node), and each predecessor's finish
        plus the transfer (an inference task whose model is retrained also waits for the
        retraining node, which sends it the model)."""
        rq = state.requests
        a = rq.app[ix, s]
        arrival = rq.arrival[ix, s][:, None]  # (B, 1)
        task = rq.task[ix, s, x]
        inp = rq.input_mb[ix, s, x][:, None]
        is_task = (x < params.app_n[a])[:, None]
        rate = np.where(is_task, state.source_mb_s[ix], state.storage_mb_s[ix])
        t = np.where(inp > 0, np.maximum(arrival, arrival + inp / rate), arrival)
        retrain = np.where(is_task[:, 0], rq.retrain[ix, s, task], -1)
        pred = np.concatenate([params.app_pred[a, task], retrain[:, None]], axis=1)  # (B, P+1)
        to_task = params.app_retrain_mb[a, task][:, None]
        mb = np.concatenate([params.app_pred_mb[a, task], to_task], axis=1)
        ok = pred >= 0
        pred = np.where(ok, pred, 0)
        r, c = ix[:, None], s[:, None]
        src = rq.server[r, c, pred]  # (B, P+1)
        move = mb[:, :, None] / state.link[r, src]  # (B, P+1, E)
        local = (src[:, :, None] == np.arange(params.e)) | (mb[:, :, None] <= 0)
        arrive = rq.finish[r, c, pred][:, :, None] + np.where(local, 0.0, move)
        arrive = np.where(ok[:, :, None], arrive, -np.inf).max(axis=1)
        return np.maximum(t, arrive)

    @staticmethod
    def _ready_on_one(params: DAGParams, state: DAGState, i: int, s: int, x: int) -> list[float]:
        """:meth:`_ready_on` of one node (the same float operations, on Python floats)."""
        rq = state.requests
        a = int(rq.app[i, s])
        arrival = float(rq.arrival[i, s])
        task = int(rq.task[i, s, x])
        inp = float(rq.input_mb[i, s, x])
        if x < params.app_n[a]:
            rate = state.source_mb_s[i]
            retrain = int(rq.retrain[i, s, task])
        else:
            rate, retrain = state.storage_mb_s[i], -1
        pred = [*params.app_pred[a, task].tolist(), retrain]
        mb = [*params.app_pred_mb[a, task].tolist(), float(params.app_retrain_mb[a, task])]
        ins = [
            (int(rq.server[i, s, u]), d, float(rq.finish[i, s, u]))
            for u, d in zip(pred, mb, strict=True)
            if u >= 0
        ]
        link = state.link[i]
        out = []
        for j, r in enumerate(rate.tolist()):
            t = max(arrival, arrival + inp / r) if inp > 0 else arrival
            for src, d, fin in ins:
                t = max(t, fin if src == j or d <= 0 else fin + d / float(link[src, j]))
            out.append(t)
        return out

    def _admit(
        self, params: DAGParams, state: DAGState, ix: np.ndarray, choice: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Admit the arriving request of envs ``ix`` with retraining options ``choice`` (B, n)
        (-1: none); returns the accuracy terms (minus the accuracy loss) and the requests'
        mean accuracy, each (B,).

        The extended DAG's Eq. 10 priorities are computed for all the envs at once (one
        relaxation per level of the application's DAG); their order is
        :func:`~edgegym.families.dag.cluster.list_order`'s, ties broken by topological position."""
        p, rq = params, state.requests
        b, n, x_max = len(ix), p.n_nodes, p.n_ext
        rows = np.arange(b)
        k = state.k[ix]
        a = state.app_of[ix, k]
        t = state.times[ix, k]
        v = p.app_n[a]
        now, after, frac = state.acc_now[ix], state.acc_after[ix], state.frac[ix]
        retrained = choice >= 0  # (B, n)
        option = np.maximum(choice, 0)
        picked = after[rows[:, None], np.arange(n), option]  # (B, n)
        acc = np.where(retrained, picked, now)
        # The models: the retrained ones restart (a later task on the same model wins).
        model = p.app_model[a]
        last = retrained & ~(p.app_later_same[a] & retrained[:, None, :]).any(axis=2)
        br, bc = np.nonzero(last)
        state.base_acc[ix[br], model[br, bc]] = picked[br, bc]
        br, bc = np.nonzero(retrained)
        state.base_time[ix[br], model[br, bc]] = t[br]
        state.pool_mb[ix[br], model[br, bc]] = 0.0
        if p.pool_from_inputs:  # this request's data joins its models' pools, task by task
            br, bc = np.nonzero(p.app_valid[a])
            np.add.at(state.pool_mb, (ix[br], model[br, bc]), p.app_inflow[a[br], bc])
        # The extended DAG: tasks 0 .. V-1, then one retraining node per retrained task.
        node = np.where(retrained, v[:, None] + np.cumsum(retrained, axis=1) - 1, -1)  # (B, n)
        size = v + retrained.sum(axis=1)
        col = np.arange(x_max)
        task = np.where(col < v[:, None], col, 0)  # (B, X)
        br, bc = np.nonzero(retrained)
        task[br, node[br, bc]] = bc
        is_retrain = (col >= v[:, None]) & (col < size[:, None])
        h = option[rows[:, None], task]  # (B, X) option of each retraining node
        f = frac[rows[:, None], task, h]
        static = p.app_static[a[:, None], task]  # (B, X, 4)
        workload = np.where(is_retrain, p.opt_work[h] * f, static[:, :, 1])
        demand = np.where(is_retrain, p.opt_demand[h], static[:, :, 2])
        input_mb = np.where(is_retrain, p.opt_data[h] * f, static[:, :, 3])
        # Eq. 10 on the extended DAG: a retraining node's only successor is its task, and a
        # task's predecessors also feed the retraining nodes of its successors. Tasks are
        # below V <= X / 2 (the largest application's task count).
        nv = x_max // 2
        speed = state.speed[ix][:, None, :]
        exe = np.mean(workload[:, :, None] / (demand[:, :, None] * speed), axis=2)  # (B, X)
        slowest = state.slowest[ix][:, None]  # (B, 1)
        exe_r = exe[rows[:, None], np.maximum(node[:, :nv], 0)]  # (B, nv) retraining nodes
        to_task = p.app_retrain_mb[a, :nv] / slowest
        succ = p.app_succ[a, :nv]  # (B, nv, S)
        has = succ >= 0
        edge = p.app_succ_mb[a, :nv] / slowest[:, :, None]
        flat = np.maximum(succ, 0) + (rows * nv)[:, None, None]  # into eff.ravel()
        phi = np.zeros((b, nv))
        for _ in range(int(p.app_height[a].max()) + 1):
            # A successor's retraining node outranks the successor itself (same edge).
            eff = np.where(retrained[:, :nv], exe_r + (to_task + phi), phi)
            down = edge + eff.ravel().take(flat)
            down = np.where(has, down, -np.inf).max(axis=2)
            phi = exe[:, :nv] + np.where(has.any(axis=2), down, 0.0)
        ext_phi = np.zeros((b, x_max))
        ext_phi[:, :nv] = phi
        ext_phi[br, node[br, bc]] = (exe_r + (to_task + phi))[br, bc]
        key = np.where(col < size[:, None], -ext_phi, np.inf)
        order = np.lexsort((self._ext_positions(p, a, retrained), key), axis=1)  # (B, X)
        # Into a free slot.
        s = (rq.k[ix] < 0).argmax(axis=1)
        rq.k[ix, s], rq.app[ix, s], rq.arrival[ix, s] = k, a, t
        rq.size[ix, s], rq.head[ix, s], rq.queue[ix, s] = size, 0, order
        rq.task[ix, s], rq.retrain[ix, s] = task, node
        rq.workload[ix, s], rq.demand[ix, s], rq.input_mb[ix, s] = workload, demand, input_mb
        rq.acc[ix, s], rq.acc_now[ix, s] = acc, now
        rq.server[ix, s] = -1
        rq.front[ix, s] = t
        rq.ready[ix, s] = np.nan  # its head's input times: _heads()
        # No node can start before the earliest pending request's arrival any more.
        first = np.where(rq.k[ix] >= 0, rq.arrival[ix], np.inf).min(axis=1)
        forget_before(state.timelines, ix, first)
        mean = _row_sums(acc, v) / v
        state.next[ix] += 1
        state.total_accuracy[ix] += mean
        state.retrainings[ix] += retrained.sum(axis=1)
        return -_row_sums(1.0 - acc, v), mean

    def _ext_positions(self, params: DAGParams, a: np.ndarray, retrained: np.ndarray) -> np.ndarray:
        """(B, X) topological positions of the extended DAGs' nodes (cached per application
        and set of retrained tasks)."""
        out = np.empty((len(a), params.n_ext), dtype=np.int64)
        for r, (app, row) in enumerate(zip(a.tolist(), retrained, strict=True)):
            key = (app, row.tobytes())
            pos = self._positions.get(key)
            if pos is None:
                pos = _extended_positions(params.apps[app], row, out.shape[1])
                self._positions[key] = pos
            out[r] = pos
        return out

    def place(
        self, params: DAGParams, state: DAGState, ix: np.ndarray, server: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple[np.ndarray, ...]]:
        """Place the presented node of envs ``ix`` on ``server`` (B,) at its earliest feasible
        start. Returns the growth of each request's latest finish (B,), the nodes' joules
        (B,), (B,) bool: the request is now finished, and those requests' completion time,
        mean accuracy and objective (F,) (:meth:`_finish`)."""
        p, rq, tl = params, state.requests, state.timelines
        s, x = state.slot[ix], state.node[ix]
        demand = rq.demand[ix, s, x]
        duration = rq.workload[ix, s, x] / (demand * state.speed[ix, server])
        start = state.start_on[ix, server]
        finish = start + duration
        commit(tl, ix, server, start, finish, demand)
        held = (finish - start) * demand
        state.busy[ix, server] += held
        state.horizon[ix] = np.maximum(state.horizon[ix], finish)
        energy = held / p.units * p.unit_dyn_w
        state.energy_j[ix] += energy
        rq.server[ix, s, x], rq.finish[ix, s, x] = server, finish
        # The completion term is paid as the request's latest finish moves (it telescopes to
        # the completion time at the last node), so each placement sees its own cost.
        front = rq.front[ix, s]
        grown = np.maximum(0.0, finish - front)
        rq.front[ix, s] = np.maximum(front, finish)
        rq.head[ix, s] += 1
        done = rq.head[ix, s] == rq.size[ix, s]
        rq.ready[ix[~done], s[~done]] = np.nan  # the next head's input times: _heads()
        return grown, energy, done, self._finish(p, state, ix[done], s[done])

    def _finish(
        self, params: DAGParams, state: DAGState, ix: np.ndarray, s: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Account for the requests in slots ``s`` of envs ``ix`` (F,), all placed, and free
        their slots; returns their completion times, mean accuracies and objectives."""
        p, rq = params, state.requests
        a = rq.app[ix, s]
        v = p.app_n[a]
        size = rq.size[ix, s]
        arrival = rq.arrival[ix, s]
        finish = rq.finish[ix, s]  # (F, X)
        placed = np.arange(finish.shape[1]) < size[:, None]
        completion = np.where(placed, finish, -np.inf).max(axis=1) - arrival
        acc = rq.acc[ix, s]
        accuracy = _row_sums(acc, v) / v
        objective = completion + p.theta * _row_sums(1.0 - acc, v)
        state.total_objective[ix] += objective
        state.total_completion[ix] += completion
        rq.k[ix, s] = -1
        return completion, accuracy, objective

    # ------------------------------------------------------------------ contract
    def mask(self, params: DAGParams, state: DAGState) -> np.ndarray:
        """(N, K) bool: the flat action mask of every env."""
        return state.masks.copy()

    def project(
        self, params: DAGParams, state: DAGState, actions: Any, mask: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The applied decisions for ``actions`` (N, 1 + n): the server of the presented node
        (N,) and, at admit epochs, the retraining option of each task (N, n) (-1: none, and
        everywhere else). Invalid entries go to the lowest valid server, and to "none" or
        the second allowed configuration (the first when only one is allowed)."""
        a = np.asarray(actions)
        m, n, e, h = len(state.kind), params.n_nodes, params.e, len(params.options)
        if a.shape != (m, 1 + n):
            raise ValueError(f"actions must have shape ({m}, {1 + n}), got {a.shape}")
        if a.dtype.kind in "iub":
            a = a.astype(np.int64)
        else:
            a = np.nan_to_num(a.astype(float)).astype(np.int64)
        if mask is None:
            mask = state.masks
        if m == 1:
            return self._project_one(params, state, a[0], mask[0])
        rows = np.arange(m)
        srv_ok, cfg = mask[:, :e], mask[:, e:].reshape(m, n, h + 1)
        s = a[:, 0]
        fine = (s >= 0) & (s < e) & srv_ok[rows, np.minimum(np.maximum(s, 0), e - 1)]
        server = np.where(fine, s, srv_ok.argmax(axis=1))
        v = a[:, 1:]
        fine = (v >= 0) & (v <= h)
        fine &= cfg[rows[:, None], np.arange(n), np.minimum(np.maximum(v, 0), h)]
        first = cfg.argmax(axis=2)  # (N, n)
        rest = cfg & (np.arange(h + 1) != first[:, :, None])
        second = np.where(rest.any(axis=2) & ~cfg[:, :, 0], rest.argmax(axis=2), first)
        v = np.where(fine, v, second)
        admit = state.kind == ADMIT
        valid = params.app_valid[state.app_of[rows, np.maximum(state.k, 0)]] & admit[:, None]
        return server, np.where(valid, v - 1, -1)

    @staticmethod
    def _project_one(
        params: DAGParams, state: DAGState, action: np.ndarray, mask: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`project` of a batch of one (int64 ``action``, (K,) ``mask``), entry by entry."""
        n, e, h = params.n_nodes, params.e, len(params.options)
        srv = mask[:e]
        s = int(action[0])
        server = s if 0 <= s < e and srv[s] else int(srv.argmax())
        choice = np.full((1, n), -1, dtype=np.int64)
        if state.kind[0] == ADMIT:
            cfg = mask[e:].reshape(n, h + 1)
            valid = params.app_valid[state.app_of[0, state.k[0]]]
            for t in np.flatnonzero(valid).tolist():
                v = int(action[1 + t])
                if not (0 <= v <= h and cfg[t, v]):
                    ok = np.flatnonzero(cfg[t])
                    v = int(ok[1]) if ok.size > 1 and not cfg[t, 0] else int(ok[0])
                choice[0, t] = v - 1
        return np.array([server]), choice

    def step(
        self, params: DAGParams, state: DAGState, actions: np.ndarray
    ) -> tuple[DAGState, Record]:
        """One decision epoch of every env (in place). Every env must have an epoch."""
        if (state.kind == OVER).any():
            raise RuntimeError("step() on an env whose episode has ended")
        self._reserve(state)  # a no-op after observation(), which keeps the room
        m, e = len(state.kind), params.e
        server, choice = self.project(params, state, actions)
        kind, request, start = state.kind, state.k, state.time_s
        is_place = kind == PLACE
        completion = np.zeros(m)
        accuracy = np.zeros(m)
        energy = np.zeros(m)
        acc_mean = np.full(m, np.nan)
        done_s = np.full(m, np.nan)
        objective = np.full(m, np.nan)
        retrained: list[list[int]] = [[] for _ in range(m)]  # per env, the retrained tasks
        ai = np.flatnonzero(~is_place)
        if ai.size:
            accuracy[ai], acc_mean[ai] = self._admit(params, state, ai, choice[ai])
            rows, tasks = np.nonzero(choice[ai] >= 0)
            ends = np.searchsorted(rows, np.arange(ai.size), side="right").tolist()
            tasks = tasks.tolist()
            for r, (i, end) in enumerate(zip(ai.tolist(), ends, strict=True)):
                retrained[i] = tasks[ends[r - 1] if r else 0 : end]
        pi = np.flatnonzero(is_place)
        if pi.size:
            grown, joules, done, ended = self.place(params, state, pi, server[pi])
            done_s[pi[done]], acc_mean[pi[done]], objective[pi[done]] = ended
            completion[pi] = -grown
            energy[pi] = joules
        node = np.where(is_place, state.node, -1)
        self._heads(params, state)
        self.advance(params, state)
        util = state.busy / (params.units * np.maximum(state.horizon, 1e-9))[:, None]
        record = Record(
            energy_j=energy,
            duration_s=np.maximum(0.0, self.now_all(params, state) - start),
            terms={"completion": completion, "accuracy": accuracy, "energy": -energy / 1000.0},
            info={
                "epoch": np.where(is_place, "place", "admit"),
                "request": request,
                "utilisation": util.reshape(m, e),
                "node": node,
                "server": np.where(is_place, server, -1),
                "accuracy": acc_mean,
                "retrained": np.fromiter(retrained, dtype=object, count=m),
                "completion_s": done_s,
                "objective": objective,
            },
        )
        return state, record

    def observation(self, params: DAGParams, state: DAGState) -> dict[str, np.ndarray]:
        """The ``Dict`` observation of every env, each entry (N, ...) float32 (see the env's
        docstring for the tables). Also widens the state for the next step (the padded widths
        then never change inside a step)."""
        m, n, e, r = len(state.kind), params.n_nodes, params.e, params.n_requests
        rq, tl = state.requests, state.timelines
        rows = np.arange(m)
        t = self.now_all(params, state)
        admit, place = state.kind == ADMIT, state.kind == PLACE
        s = np.maximum(state.slot, 0)
        k = np.minimum(np.maximum(state.k, 0), r - 1)
        app = np.where(place, rq.app[rows, s], state.app_of[rows, k])
        app = np.where(admit | place, app, -1)
        v = params.app_n[app]
        acc = np.where(place[:, None], rq.acc[rows, s], state.acc_now)  # runs with
        acc_now = np.where(place[:, None], rq.acc_now[rows, s], state.acc_now)  # at arrival
        placed = np.zeros((m, n), dtype=bool)
        w = min(n, params.n_ext)  # the tasks (< V) are in both
        placed[:, :w] = place[:, None] & (rq.server[rows, s, :w] >= 0)
        node = state.node
        cur = np.where(place & (node < v), node, -1)  # presented inference node
        # Task whose model the presented node retrains.
        cur_r = np.where(place & (node >= v), rq.task[rows, s, np.maximum(node, 0)], -1)
        servers = np.zeros((m, e, SERVER_FEATURES), dtype=np.float32)
        servers[:, :, 2] = np.maximum(0.0, tl.last() - t[:, None])
        pi = np.flatnonzero(place)
        if pi.size:
            # Seconds the presented node would finish on each server after its earliest finish.
            ps, px = s[pi], node[pi]
            demand = rq.demand[pi, ps, px]
            duration = rq.workload[pi, ps, px][:, None] / (demand[:, None] * state.speed[pi])
            fin = state.start_on[pi] + duration
            servers[pi, :, 4] = fin - fin.min(axis=1, keepdims=True)
        phi = state.app_phi[rows, np.maximum(app, 0)]
        pending = np.count_nonzero(rq.k >= 0, axis=1) / 10.0
        self._reserve(state)
        return _tables(
            params, state, t, app, acc, acc_now, phi, placed, cur, cur_r, servers, admit, pending
        )

    def done(self, params: DAGParams, state: DAGState) -> np.ndarray:
        """(N,) bool: every request admitted and placed."""
        return state.kind == OVER


__all__ = [
    "ADMIT",
    "GLOBALS",
    "NODE_FEATURES",
    "OVER",
    "PLACE",
    "SERVER_FEATURES",
    "Arriving",
    "DAGDynamics",
    "DAGState",
    "Epoch",
    "ObjectDAGDynamics",
    "ObjectDAGState",
    "Pending",
    "Requests",
]

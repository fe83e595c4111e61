"""Batched dynamics of the DAG-offload family (``edgegym/DAGOffload-v0``, SRS/MRS, INFOCOM'25).

The family's :class:`~edgegym.sim.core.Dynamics` (DESIGN §6, §8): immutable :class:`DAGParams`
(everything a scenario fixes, precomputed once: the applications, the models' drift and pool
rates, the retraining configurations, the power of a resource unit), a :class:`DAGState` with
a leading batch axis ``N`` and :class:`DAGDynamics`. The single environment
(:class:`edgegym.envs.dag.env.DAGOffloadEnv`) is the batch of one; the vector environment
(:mod:`edgegym.envs.dag.vector`) the batch of ``N``.

What is per-env numbers (model drift and pools, arrival times, totals, server load) are
arrays with the batch axis; what is per-env Python objects (the capacity timelines of
:class:`~edgegym.sim.dag.EdgeCluster`, the admitted requests still being placed, the finished
schedules) are lists of length ``N``. The timelines do not vectorise (list scheduling inserts
into sorted breakpoints), so :meth:`DAGDynamics.step` loops over the envs inside; everything
around it (masks, projection, observation tables) is formed per env from cached per-epoch
values, and the contract is the same as the other families'.

One decision epoch (see the env's docstring): **admit** request ``k`` with retraining choices
(models drift linearly to a floor from their last retraining; a pool of drifted samples grows
and empties at each retraining; a chosen configuration adds a retraining node to the request's
DAG), or **place** the head node of a pending request on a server at its earliest feasible
start (:meth:`~edgegym.sim.dag.EdgeCluster.place`), paying its energy and the growth of the
request's latest finish.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from edgegym.hardware.gpus import PowerModel, get_gpu
from edgegym.scenarios import Scenario
from edgegym.sim.core import Record
from edgegym.sim.dag import EdgeCluster, RequestSchedule, list_order, priorities
from edgegym.workload.arrivals import make_arrival
from edgegym.workload.dag import DAGApp, RetrainOption, extend_with_retraining

NODE_FEATURES = 13
SERVER_FEATURES = 5
GLOBALS = 5
TERMS = ("completion", "accuracy", "energy")
_MB_PER_GBPS = 125.0
_ARRIVAL_BINS = 1000


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


@dataclass(frozen=True, eq=False)
class DAGParams:
    """Everything a scenario fixes, precomputed once (M models, H retraining options)."""

    e: int  # edge servers
    units: float  # resource units per server
    gpus_per_server: int
    n_nodes: int  # max_nodes: rows of the node table
    n_edges: int  # max_edges: rows of the edge list
    theta: float
    a_min: float
    n_requests: int
    duration: float
    weights: dict[str, float]  # reward term -> weight (completion, accuracy = theta, energy)
    options: tuple[RetrainOption, ...]  # (H,)
    opt_gain: np.ndarray  # (H,) gain of each option
    opt_data: np.ndarray  # (H,) data MB of each option
    opt_fits: np.ndarray  # (H,) bool: the option's demand fits a server
    model_names: tuple[str, ...]  # (M,) sorted
    model_index: dict[str, int]  # model name -> index
    m_start: np.ndarray  # (M,) accuracy at t = 0
    m_ceiling: np.ndarray  # (M,)
    m_drift: np.ndarray  # (M,) accuracy lost per second
    m_floor: np.ndarray  # (M,)
    m_pool_rate: np.ndarray  # (M,) MB of drifted samples per second
    m_pooled: np.ndarray  # (M,) bool: retraining data is limited by a pool
    pool_from_inputs: bool
    apps: tuple[DAGApp, ...]
    app_models: tuple[np.ndarray, ...]  # per app, (V,) model index of each task
    app_inflow: tuple[np.ndarray, ...]  # per app, (V,) MB each task receives (pool growth)
    # Per app, padded to n = max_nodes tasks / max_edges edges (the observation's tables):
    app_valid: np.ndarray  # (A, n) bool: a task of the app
    app_static: np.ndarray  # (A, n, 4) 1, workload, demand, input MB (0 for padding)
    app_exe: np.ndarray  # (A, n) workload / demand
    app_ceiling: np.ndarray  # (A, n) accuracy ceiling of the task's model
    app_model: np.ndarray  # (A, n) int64 model of each task (0 for padding)
    app_edges: np.ndarray  # (A, max_edges, 2) float32 edges (-1 padding)
    app_edge_mask: np.ndarray  # (A, max_edges) float32
    app_weights: np.ndarray  # (A,) probability of each application
    arrival: Any  # arrival process (time-scaled to ``n_requests``)
    speed_tflops: tuple[float, float]
    link_gbps: tuple[float, float]
    storage_gbps: tuple[float, float]
    unit_dyn_w: float  # dynamic watts of all of a server's GPUs at full load
    power: PowerModel


def dag_params(sc: Scenario) -> DAGParams:
    """Precompute the :class:`DAGParams` of a loaded (and validated) scenario."""
    sv = sc["servers"]
    power = PowerModel.from_spec(get_gpu(sv["gpu"]))
    units = float(sv["gpus_per_server"] * sv["units_per_gpu"])
    theta = float(sc["theta"])
    obj = sc["objective"]
    options = tuple(RetrainOption(**c) for c in sc["retrain_configs"])
    names = tuple(sorted(sc["models"]))
    mp = sc["models"]
    pool_rate = np.array([mp[m]["pool_mb_per_s"] for m in names])
    pool_from_inputs = bool(sc["pool_from_inputs"])
    apps = []
    for a in sc["applications"]:
        t = a["tasks"]
        e = a["edges"]
        apps.append(
            DAGApp(
                name=a["name"],
                models=tuple(x["model"] for x in t),
                workload=np.array([x["workload"] for x in t]),
                demand=np.array([x["demand"] for x in t]),
                input_mb=np.array([x["input_mb"] for x in t]),
                edges=np.array([[x[0], x[1]] for x in e], dtype=np.int64).reshape(-1, 2),
                edge_mb=np.array([x[2] for x in e], dtype=float),
                model_mb=np.array([mp[x["model"]]["size_mb"] for x in t]),
            )
        )
    index = {m: k for k, m in enumerate(names)}
    inflow = tuple(
        np.array([app.input_mb[i] + sum(d for _, d in app.preds(i)) for i in range(app.n)])
        for app in apps
    )
    weights = np.array([a["weight"] for a in sc["applications"]])
    n, n_edges, n_apps = int(sc["max_nodes"]), int(sc["max_edges"]), len(apps)
    valid = np.zeros((n_apps, n), dtype=bool)
    static = np.zeros((n_apps, n, 4))
    exe = np.zeros((n_apps, n))
    ceiling = np.zeros((n_apps, n))
    model = np.zeros((n_apps, n), dtype=np.int64)
    edges = np.full((n_apps, n_edges, 2), -1.0, dtype=np.float32)
    edge_mask = np.zeros((n_apps, n_edges), dtype=np.float32)
    ceilings = np.array([mp[m]["ceiling"] for m in names])
    for a, app in enumerate(apps):
        v, idx = app.n, np.array([index[m] for m in app.models])
        valid[a, :v] = True
        static[a, :v, 0] = 1.0
        static[a, :v, 1] = app.workload
        static[a, :v, 2] = app.demand
        static[a, :v, 3] = app.input_mb
        exe[a, :v] = app.workload / app.demand
        ceiling[a, :v] = ceilings[idx]
        model[a, :v] = idx
        k = min(len(app.edges), n_edges)
        edges[a, :k] = app.edges[:k]
        edge_mask[a, :k] = 1.0
    return DAGParams(
        e=int(sv["count"]),
        units=units,
        gpus_per_server=int(sv["gpus_per_server"]),
        n_nodes=n,
        n_edges=n_edges,
        theta=theta,
        a_min=float(sc["a_min"]),
        n_requests=int(sc["requests"]),
        duration=float(sc["duration_s"]),
        weights={
            "completion": float(obj["completion"]),
            "accuracy": theta,
            "energy": float(obj["energy"]),
        },
        options=options,
        opt_gain=np.array([o.gain for o in options]),
        opt_data=np.array([o.data_mb for o in options]),
        opt_fits=np.array([units >= o.demand for o in options]),
        model_names=names,
        model_index=index,
        m_start=np.array([mp[m]["start_accuracy"] for m in names]),
        m_ceiling=ceilings,
        m_drift=np.array([mp[m]["drift_per_s"] for m in names]),
        m_floor=np.array([mp[m]["floor"] for m in names]),
        m_pool_rate=pool_rate,
        m_pooled=(pool_rate > 0) | pool_from_inputs,
        pool_from_inputs=pool_from_inputs,
        apps=tuple(apps),
        app_models=tuple(np.array([index[m] for m in app.models]) for app in apps),
        app_inflow=inflow,
        app_valid=valid,
        app_static=static,
        app_exe=exe,
        app_ceiling=ceiling,
        app_model=model,
        app_edges=edges,
        app_edge_mask=edge_mask,
        app_weights=weights / weights.sum(),
        arrival=make_arrival(sc["arrival"], Path(sc.source).parent),
        speed_tflops=tuple(map(float, sv["speed_tflops"])),
        link_gbps=tuple(map(float, sv["link_gbps"])),
        storage_gbps=tuple(map(float, sv["storage_gbps"])),
        # Servers run at the top clock; a node's joules are the dynamic power of the units
        # it holds (linear in the utilisation), idle power is not counted.
        unit_dyn_w=float(power.dynamic_power(power.max_clock_mhz, 1.0))
        * int(sv["gpus_per_server"]),
        power=power,
    )


@dataclass
class DAGState:
    """N environments' state (leading axis N; list fields hold one Python object per env)."""

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
    source_mb_s: np.ndarray  # (N, E) bandwidth from storage to each server
    mean_inv_speed: np.ndarray  # (N,) mean over servers of 1 / speed
    cluster: list[EdgeCluster]  # (N,) servers and their capacity timelines
    epoch: list[Epoch | None]  # (N,) the decision waited for (None: episode over)
    pending: list[dict[int, Pending]]  # (N,) admitted requests still being placed
    schedules: list[list[RequestSchedule]]  # (N,) finished requests' schedules
    records: list[list[dict[str, Any]]]  # (N,) one per finished request
    arriving: list[Arriving | None]  # (N,) cache of the admit epoch's request (None: unset)
    masks: list[np.ndarray | None]  # (N,) cache of the epoch's (K,) mask (None: unset)
    phi: list[dict[int, np.ndarray]]  # (N,) cache: application -> Eq. 10 priorities


class DAGDynamics:
    """The DAG family's :class:`~edgegym.sim.core.Dynamics`: batched functions that loop over
    the envs where the capacity timelines need it (see the module docstring)."""

    terms: tuple[str, ...] = TERMS

    # ------------------------------------------------------------------ start
    def initial(self, params: DAGParams, rngs: Sequence[np.random.Generator]) -> DAGState:
        """Fresh episodes; env ``i`` draws its servers and requests from ``rngs[i]`` only."""
        p = params
        m, n_models = len(rngs), len(p.model_names)
        times = np.zeros((m, p.n_requests))
        app_of = np.zeros((m, p.n_requests), dtype=np.int64)
        clusters = []
        inv = np.zeros(m)
        speeds = np.zeros((m, p.e))
        sources = np.zeros((m, p.e))
        for j, rng in enumerate(rngs):
            lo, hi = p.speed_tflops
            speed = rng.uniform(lo, hi, p.e) / hi  # 1 = the fastest server in the range
            lo, hi = p.link_gbps
            link = rng.uniform(lo, hi, (p.e, p.e)) * _MB_PER_GBPS
            link = (link + link.T) / 2
            lo, hi = p.storage_gbps
            source = rng.uniform(lo, hi, p.e) * _MB_PER_GBPS
            cluster = EdgeCluster(speed, np.full(p.e, p.units), link, source)
            clusters.append(cluster)
            inv[j] = float(np.mean(1.0 / cluster.speed))
            speeds[j], sources[j] = cluster.speed, cluster.source
            # Arrival times: the process over the run, time-scaled to exactly R requests.
            dt = p.duration / _ARRIVAL_BINS
            counts = p.arrival.counts(_ARRIVAL_BINS, dt, rng).astype(float)
            if counts.sum() <= 0:
                counts = np.ones(_ARRIVAL_BINS)
            edges = np.linspace(0.0, p.duration, _ARRIVAL_BINS + 1)
            cdf = np.concatenate([[0.0], np.cumsum(counts)]) / counts.sum()
            r = p.n_requests
            q = (np.arange(r) + rng.uniform(size=r)) / r
            times[j] = np.interp(q, cdf, edges)
            app_of[j] = rng.choice(len(p.apps), size=r, p=p.app_weights)
        state = DAGState(
            times=times,
            app_of=app_of,
            base_acc=np.tile(p.m_start, (m, 1)),
            base_time=np.zeros((m, n_models)),
            pool_mb=np.zeros((m, n_models)),
            next=np.zeros(m, dtype=np.int64),
            total_objective=np.zeros(m),
            total_completion=np.zeros(m),
            total_accuracy=np.zeros(m),
            retrainings=np.zeros(m, dtype=np.int64),
            energy_j=np.zeros(m),
            busy=np.zeros((m, p.e)),
            horizon=np.zeros(m),
            speed=speeds,
            source_mb_s=sources,
            mean_inv_speed=inv,
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
    def advance(self, params: DAGParams, state: DAGState, i: int) -> None:
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

    def now(self, params: DAGParams, state: DAGState, i: int) -> float:
        """Time of env ``i``'s current epoch (the last arrival after the episode ends)."""
        ep = state.epoch[i]
        if ep is not None:
            return ep.time_s
        return float(state.times[i, -1]) if state.next[i] > 0 else 0.0

    def model_accuracy(self, params: DAGParams, state: DAGState, i: int, t: float) -> np.ndarray:
        """(M,) accuracy of every model of env ``i`` at time t (linear drift to a floor)."""
        drift = params.m_drift * (t - state.base_time[i])
        return np.maximum(params.m_floor, state.base_acc[i] - drift)

    def data_fraction(
        self, params: DAGParams, state: DAGState, i: int, idx: np.ndarray, t: float
    ) -> np.ndarray:
        """(V, H) fraction of each configuration's data the model's pool holds (1 without
        pools): a retraining uses ``min(b_h, pool)`` and its cost and gain scale with it."""
        bt = state.base_time[i, idx]
        pool = state.pool_mb[i, idx] + params.m_pool_rate[idx] * np.maximum(0.0, t - bt)
        b = params.opt_data
        frac = np.minimum(1.0, pool[:, None] / np.maximum(b[None, :], 1e-12))
        return np.where(params.m_pooled[idx][:, None], frac, 1.0)

    def task_acc(
        self, params: DAGParams, state: DAGState, i: int, app: DAGApp, t: float
    ) -> tuple[np.ndarray, np.ndarray]:
        """(V,) accuracy of ``app``'s tasks at t and (V, H) after retraining with each option."""
        idx = np.array([params.model_index[m] for m in app.models])
        return self._task_acc(params, state, i, idx, t)

    def _task_acc(
        self, params: DAGParams, state: DAGState, i: int, idx: np.ndarray, t: float
    ) -> tuple[np.ndarray, np.ndarray]:
        now = self.model_accuracy(params, state, i, t)[idx]
        gain = params.opt_gain[None, :] * self.data_fraction(params, state, i, idx, t)
        after = now[:, None] + gain * (params.m_ceiling[idx][:, None] - now[:, None])
        return now, after

    def task_options(
        self, params: DAGParams, state: DAGState, i: int, app: DAGApp, t: float
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

    def arriving(self, params: DAGParams, state: DAGState, i: int) -> Arriving:
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

    def priorities(self, params: DAGParams, state: DAGState, i: int, a: int) -> np.ndarray:
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

    def mask_row(self, params: DAGParams, state: DAGState, i: int) -> np.ndarray:
        """(K,) bool: env ``i``'s flat action mask (see the env's docstring; computed once per
        epoch: do not write to it)."""
        got = state.masks[i]
        if got is None:
            got = state.masks[i] = self._mask_row(params, state, i)
        return got

    def _mask_row(self, params: DAGParams, state: DAGState, i: int) -> np.ndarray:
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

    def project_row(
        self, params: DAGParams, state: DAGState, i: int, action: np.ndarray, mask: np.ndarray
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

    def admit(
        self, params: DAGParams, state: DAGState, i: int, choice: list[int]
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
            priority=self.priorities(params, state, i, a),
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
        self, params: DAGParams, state: DAGState, i: int, server: int
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
        state.schedules[i].append(p.schedule)
        record = {
            "request": k,
            "app": p.app.name,
            "arrival_s": p.schedule.arrival,
            "completion_s": completion,
            "accuracy": float(p.acc.mean()),
            "objective": objective,
            "retrainings": len(p.retrains),
        }
        state.records[i].append(record)
        return grown, energy, record

    # ------------------------------------------------------------------ contract
    def mask(self, params: DAGParams, state: DAGState) -> np.ndarray:
        """(N, K) bool: the flat action mask of every env."""
        return np.stack([self.mask_row(params, state, i) for i in range(len(state.epoch))])

    def project(
        self, params: DAGParams, state: DAGState, actions: Any, mask: np.ndarray | None = None
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
        return [self.project_row(params, state, i, a[i], mask[i]) for i in range(m)]

    def step(
        self, params: DAGParams, state: DAGState, actions: np.ndarray
    ) -> tuple[DAGState, Record]:
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
                accuracy[i], acc_mean[i] = self.admit(params, state, i, choice)
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
                "retrained": retrained,
                "completion_s": done_s,
                "objective": objective,
            },
        )
        return state, record

    def observation(self, params: DAGParams, state: DAGState) -> dict[str, np.ndarray]:
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
                phi[i, :v] = self.priorities(params, state, i, a)
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
        servers[:, :, 3] = state.source_mb_s / 1000.0
        glob = np.empty((m, GLOBALS), dtype=np.float32)
        glob[:, 0] = state.next / params.n_requests
        glob[:, 1] = params.theta / 10
        glob[:, 2] = params.a_min
        glob[:, 3] = [ep is not None and ep.kind == "admit" for ep in state.epoch]
        glob[:, 4] = [len(q) / 10.0 for q in state.pending]
        return {
            "nodes": feats.astype(np.float32),
            "edges": np.where(live[:, None, None], params.app_edges[ai], np.float32(-1.0)),
            "edge_mask": np.where(live[:, None], params.app_edge_mask[ai], np.float32(0.0)),
            "servers": np.minimum(servers, 1e6),
            "globals": glob,
        }

    @staticmethod
    def _finish_gaps(params: DAGParams, cluster: EdgeCluster, p: Pending, node: int) -> np.ndarray:
        """(E,) seconds ``node`` would finish on each server after its earliest finish
        (:meth:`~edgegym.sim.dag.EdgeCluster.finish_on` with the input times kept)."""
        app = p.schedule.app
        w, c = float(app.workload[node]), app.demand[node]
        fin = []
        for j, ready in enumerate(p.ready_on):
            dur = cluster.exec_time(w, c, j)
            fin.append(cluster.earliest_start(j, ready, dur, c) + dur)
        return np.array(fin) - min(fin)  # 0 on the earliest-finish server(s)

    def done(self, params: DAGParams, state: DAGState) -> np.ndarray:
        """(N,) bool: every request admitted and placed."""
        return np.array([ep is None for ep in state.epoch], dtype=bool)

    def metrics(self, params: DAGParams, state: DAGState, i: int) -> dict[str, float]:
        """Env ``i``'s whole-episode numbers (its ``info["episode_metrics"]``)."""
        k = params.n_requests
        return {
            "objective": float(state.total_objective[i]) / k,
            "completion_s": float(state.total_completion[i]) / k,
            "accuracy": float(state.total_accuracy[i]) / k,
            "retrainings": float(state.retrainings[i]),
            "energy_j": float(state.energy_j[i]),
        }


__all__ = [
    "GLOBALS",
    "NODE_FEATURES",
    "SERVER_FEATURES",
    "TERMS",
    "Arriving",
    "DAGDynamics",
    "DAGParams",
    "DAGState",
    "Epoch",
    "Pending",
    "dag_params",
]

"""``edgegym/DAGOffload-v0``: DAG requests with retraining across edge servers (SRS/MRS)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces

from edgegym.envs.base import EdgeEnv
from edgegym.envs.render import Panel, Series, tenant_colors
from edgegym.hardware.gpus import PowerModel, get_gpu
from edgegym.scenarios import Scenario
from edgegym.sim.dag import EdgeCluster, RequestSchedule, list_order, priorities
from edgegym.workload.arrivals import make_arrival
from edgegym.workload.dag import DAGApp, RetrainOption, extend_with_retraining

DEFAULT_SCENARIO = "srs-edge-5apps"
NODE_FEATURES = 13
SERVER_FEATURES = 5
GLOBALS = 5
_MB_PER_GBPS = 125.0


@dataclass
class Epoch:
    """The decision the environment waits for: admit request ``k`` (choose its retraining
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
    front: float = 0.0  # latest finish of the nodes placed so far (arrival before any)


@dataclass(frozen=True)
class DAGSnapshot:
    """Structured state handed to baselines by ``env.unwrapped.sim_state()``.

    ``kind == "admit"``: request ``k`` arrives; choose retraining configurations for its tasks.
    ``kind == "place"``: choose the server of node ``node`` of ``schedule.app`` (the extended
    DAG; nodes ``>= app.n`` are retraining nodes). ``cluster`` is the live cluster: read it,
    or ``copy()`` it to plan.
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


class DAGOffloadEnv(EdgeEnv):
    """Online scheduling of multi-model DAG requests with retraining (Zeng et al., INFOCOM'25).

    Requests of several applications (DAGs of models) arrive over time at an edge cluster of E
    servers (speed S_j, capacity C_j resource units, links D between servers and from storage).
    Each model drifts: its accuracy falls with time since its last retraining, while a pool of
    drifted samples grows (``pool_mb_per_s``) and empties at each retraining. The agent decides
    what Algorithm 3 (MRS) decides:

    * **admit** (a request arrives): per task, no retraining or a configuration
      ``u_h = (b_h, n_h, o_h)``; a chosen one adds a retraining node to the request's DAG
      (slides' Fig. 7) and updates the model for this and later requests. The accuracy term
      ``-theta * sum_i (1 - A_i)`` is the reward of this epoch.
    * **place** (a node is next): its edge server. The node is placed at its earliest feasible
      start there (capacity timelines, transfers; Eq. 5-8). The reward is minus the growth of
      the request's latest finish time (from its arrival), so a request's place epochs add up
      to ``-completion``.

    **Decision epochs**: every admitted request keeps its extended DAG's nodes in decreasing
    Eq. 10 priority. The next epoch places the head node that can start earliest (Algorithm 3,
    line 10; ties: earlier arrival), unless the next request arrives before that instant (or
    nothing is pending): then it admits that request. So one episode has ``requests`` admit
    epochs and one place epoch per (inference or retraining) node.

    **Action space**: ``MultiDiscrete([E] + [H + 1] * N)`` with N = ``max_nodes``: the server
    of the presented node (ignored at admit epochs), then per task 0 (no retraining) or
    1 + configuration index (ignored at place epochs). ``action_masks()`` /
    ``info["action_mask"]`` (flat): ignored entries allow only 0; servers whose capacity cannot
    hold the node are masked; "no retraining" is masked where the model is below A_min
    (Eq. 9d), and so are configurations whose result stays below A_min or whose pool is empty.
    Invalid entries are projected deterministically (an invalid server to the lowest valid
    one, an invalid retraining choice to the cheapest configuration that reaches A_min, or
    none).

    **Observation**: ``Dict`` of ``nodes`` (N, 13) for the epoch's request (valid, workload,
    demand, input MB, accuracy it runs with, gap to the model's ceiling, seconds since the
    model's last retraining / 100, mean execution time, Eq. 10 priority, accuracy gained by
    the chosen retraining, placed, presented, presented retraining node of this task), ``edges``
    (M, 2) node indices (-1 padding), ``edge_mask`` (M,), ``servers`` (E, 5) (speed, capacity,
    backlog seconds, link to storage / 1000, seconds the presented node would finish there
    after its earliest possible finish: 0 on the earliest-finish server),
    ``globals`` (5,) (fraction of requests admitted, theta / 10, A_min, admit epoch, pending
    requests / 10).

    **Reward**: per request, ``-(completion + theta * sum_i (1 - A_i))`` (Eq. 9) summed over
    its epochs, as named terms ``completion`` and ``accuracy`` (weights ``objective.completion``
    = 1 and theta) plus ``energy`` (minus the placed node's joules / 1000, weight
    ``objective.energy`` = 0; ``--set objective.energy=0.5`` trades energy against time).
    ``info``: the epoch, per-request completion time, accuracy and
    objective when they are known, per-server utilisation, energy of the step.

    **Episode end**: ``terminated`` once every request is admitted and placed.

    Args:
        scenario: Bundled name or path (family ``dag``).
        record_timeline: Accepted for the evaluator; every request's schedule is kept in
            ``env.unwrapped.schedules`` anyway.
        render_mode: ``None``, ``"ansi"`` (one line: the epoch and the request counts),
            ``"rgb_array"`` (a 640x360 frame: each server's backlog, and the requests
            admitted, pending and completed with their mean completion time;
            :mod:`edgegym.envs.render`) or ``"human"`` (that frame in a window).
        **overrides: Scenario overrides (``requests=50``, ``theta=5``, ``count=3`` servers).

    Version history: v0: initial release.
    """

    env_id = "edgegym/DAGOffload-v0"
    metadata = {**EdgeEnv.metadata, "render_fps": 20}  # noqa: RUF012

    def __init__(
        self,
        scenario: str | Scenario = DEFAULT_SCENARIO,
        record_timeline: bool = False,
        render_mode: str | None = None,
        **overrides: Any,
    ) -> None:
        self.record_timeline = record_timeline  # schedules are always kept in `schedules`
        sc = self._setup(
            scenario, overrides, render_mode=render_mode, record_timeline=record_timeline
        )
        self.scenario = sc
        sv = sc["servers"]
        self.e = int(sv["count"])
        self.gpu = get_gpu(sv["gpu"])
        self.power = PowerModel.from_spec(self.gpu)
        self.gpus_per_server = int(sv["gpus_per_server"])
        self.units = float(sv["gpus_per_server"] * sv["units_per_gpu"])
        self.n_nodes = int(sc["max_nodes"])
        self.n_edges = int(sc["max_edges"])
        self.theta = float(sc["theta"])
        obj = sc["objective"]
        #: Weights of the named terms: ``objective.completion`` (1), theta, ``objective.energy``
        #: (0); the defaults give Eq. 9.
        self.weights = {
            "completion": float(obj["completion"]),
            "accuracy": self.theta,
            "energy": float(obj["energy"]),
        }
        self.a_min = float(sc["a_min"])
        self.n_requests = int(sc["requests"])
        self.duration = float(sc["duration_s"])
        self.options = tuple(RetrainOption(**c) for c in sc["retrain_configs"])
        self.model_names = sorted(sc["models"])
        self.model_index = {m: k for k, m in enumerate(self.model_names)}
        mp = sc["models"]
        self.m_start = np.array([mp[m]["start_accuracy"] for m in self.model_names])
        self.m_ceiling = np.array([mp[m]["ceiling"] for m in self.model_names])
        self.m_drift = np.array([mp[m]["drift_per_s"] for m in self.model_names])
        self.m_floor = np.array([mp[m]["floor"] for m in self.model_names])
        self.m_pool_rate = np.array([mp[m]["pool_mb_per_s"] for m in self.model_names])
        self.pool_from_inputs = bool(sc["pool_from_inputs"])
        self.m_pooled = (self.m_pool_rate > 0) | self.pool_from_inputs
        self.apps = []
        for a in sc["applications"]:
            t = a["tasks"]
            e = a["edges"]
            self.apps.append(
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
        self.app_weights = np.array([a["weight"] for a in sc["applications"]])
        self.app_weights = self.app_weights / self.app_weights.sum()
        self.arrival = make_arrival(sc["arrival"], Path(sc.source).parent)
        h = len(self.options)
        self.action_space = spaces.MultiDiscrete(np.array([self.e] + [h + 1] * self.n_nodes))
        big = 1e6
        self.observation_space = spaces.Dict(
            {
                "nodes": spaces.Box(0.0, big, (self.n_nodes, NODE_FEATURES), np.float32),
                "edges": spaces.Box(-1.0, float(self.n_nodes), (self.n_edges, 2), np.float32),
                "edge_mask": spaces.Box(0.0, 1.0, (self.n_edges,), np.float32),
                "servers": spaces.Box(0.0, big, (self.e, SERVER_FEATURES), np.float32),
                "globals": spaces.Box(0.0, big, (GLOBALS,), np.float32),
            }
        )
        self._next = -1  # next request to admit; -1 before reset()
        self.epoch: Epoch | None = None

    # ------------------------------------------------------------------ episode
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        super().reset(seed=seed)
        rng = self.np_random
        sv = self.scenario["servers"]
        lo, hi = sv["speed_tflops"]
        speed = rng.uniform(lo, hi, self.e) / hi  # 1 = the fastest server in the range
        lo, hi = sv["link_gbps"]
        link = rng.uniform(lo, hi, (self.e, self.e)) * _MB_PER_GBPS
        link = (link + link.T) / 2
        lo, hi = sv["storage_gbps"]
        source = rng.uniform(lo, hi, self.e) * _MB_PER_GBPS
        self.cluster = EdgeCluster(speed, np.full(self.e, self.units), link, source)
        # Arrival times: the process over the run, time-scaled to exactly `requests` requests.
        n_bins = 1000
        counts = self.arrival.counts(n_bins, self.duration / n_bins, rng).astype(float)
        if counts.sum() <= 0:
            counts = np.ones(n_bins)
        edges = np.linspace(0.0, self.duration, n_bins + 1)
        cdf = np.concatenate([[0.0], np.cumsum(counts)]) / counts.sum()
        q = (np.arange(self.n_requests) + rng.uniform(size=self.n_requests)) / self.n_requests
        self.times = np.interp(q, cdf, edges)
        self.app_of = rng.choice(len(self.apps), size=self.n_requests, p=self.app_weights)
        self.base_acc = self.m_start.copy()
        self.base_time = np.zeros(len(self.model_names))
        self.pool_mb = np.zeros(len(self.model_names))  # request inputs since last retraining
        self.total = {"objective": 0.0, "completion": 0.0, "accuracy": 0.0, "retrainings": 0}
        self.energy_j = 0.0
        self.busy = np.zeros(self.e)  # resource-unit seconds used per server
        self.horizon = 0.0  # latest finish so far
        self.pending: dict[int, Pending] = {}
        self.schedules: list[RequestSchedule] = []
        self.records: list[dict[str, Any]] = []  # one per completed request (arrival order kept)
        self._next = 0
        self._advance()
        return self._obs(), self._info({})

    def _advance(self) -> None:
        """Pick the next epoch (see the class docstring)."""
        best = None
        for k, p in self.pending.items():
            key = (p.head_ready, p.schedule.arrival, k)
            if best is None or key < best:
                best = key
        if self._next < self.n_requests and (best is None or self.times[self._next] <= best[0]):
            k = self._next
            self.epoch = Epoch("admit", k, -1, float(self.times[k]))
        elif best is not None:
            k = best[2]
            self.epoch = Epoch("place", k, self.pending[k].queue[0], best[0])
        else:
            self.epoch = None

    @property
    def now(self) -> float:
        """Time of the current epoch (the last one after the episode ends)."""
        if self.epoch is not None:
            return self.epoch.time_s
        return float(self.times[-1]) if self._next > 0 else 0.0

    def model_accuracy(self, t: float) -> np.ndarray:
        """(models,) accuracy of every model at time t (linear drift to a floor)."""
        return np.maximum(self.m_floor, self.base_acc - self.m_drift * (t - self.base_time))

    def _task_acc(self, app: DAGApp, t: float) -> tuple[np.ndarray, np.ndarray]:
        acc = self.model_accuracy(t)
        idx = np.array([self.model_index[m] for m in app.models])
        now = acc[idx]
        gain = np.array([o.gain for o in self.options])[None, :] * self._data_fraction(idx, t)
        after = now[:, None] + gain * (self.m_ceiling[idx][:, None] - now[:, None])
        return now, after

    def _data_fraction(self, idx: np.ndarray, t: float) -> np.ndarray:
        """(V, H) fraction of each configuration's data the model's pool holds (1 without
        pools): a retraining uses ``min(b_h, pool)`` and its cost and gain scale with it."""
        b = np.array([o.data_mb for o in self.options])
        pool = self.pool_mb[idx] + self.m_pool_rate[idx] * np.maximum(0.0, t - self.base_time[idx])
        frac = np.minimum(1.0, pool[:, None] / np.maximum(b[None, :], 1e-12))
        return np.where(self.m_pooled[idx][:, None], frac, 1.0)

    def task_options(self, app: DAGApp, t: float) -> list[list[RetrainOption]]:
        """Per task, the configurations as they would run now (data and workload scaled by
        the pool of drifted samples; workload 0 when the pool is empty)."""
        idx = np.array([self.model_index[m] for m in app.models])
        frac = self._data_fraction(idx, t)
        out = []
        for i in range(app.n):
            row = []
            for h, o in enumerate(self.options):
                f = float(frac[i, h])
                row.append(
                    RetrainOption(o.name, o.data_mb * f, o.workload * f, o.demand, o.gain * f)
                )
            out.append(row)
        return out

    def _arriving(self) -> tuple[DAGApp, int, np.ndarray, np.ndarray, tuple]:
        """The request of the current admit epoch: app, its index, accuracies and options."""
        k = self.epoch.k
        a = int(self.app_of[k])
        app, t = self.apps[a], float(self.times[k])
        now, after = self._task_acc(app, t)
        return app, a, now, after, tuple(map(tuple, self.task_options(app, t)))

    def sim_state(self) -> DAGSnapshot:
        """The current epoch's request and the live cluster, for baselines."""
        ep = self.epoch
        if ep is None:
            raise RuntimeError("the episode has ended; call reset()")
        if ep.kind == "admit":
            app, a, now, after, opts = self._arriving()
            sched = None
        else:
            p = self.pending[ep.k]
            app, a, now, after, opts = p.app, p.app_index, p.acc_now, p.acc_after, p.options
            sched = p.schedule
        return DAGSnapshot(
            kind=ep.kind,
            k=ep.k,
            node=ep.node,
            time_s=ep.time_s,
            app=app,
            app_index=a,
            schedule=sched,
            cluster=self.cluster,
            acc_now=now,
            acc_after=after,
            options=opts,
            theta=self.theta,
            a_min=self.a_min,
            max_nodes=self.n_nodes,
        )

    # ------------------------------------------------------------------ actions
    def action_masks(self) -> np.ndarray:
        """Flat mask over the ``MultiDiscrete`` entries (see the class docstring)."""
        n, e, h = self.n_nodes, self.e, len(self.options)
        srv = np.zeros(e, dtype=bool)
        cfg = np.zeros((n, h + 1), dtype=bool)
        srv[0] = True
        cfg[:, 0] = True
        ep = self.epoch
        if ep is not None and ep.kind == "place":
            demand = self.pending[ep.k].schedule.app.demand[ep.node]
            srv = self.cluster.capacity >= demand - 1e-9
        elif ep is not None:
            app, _, now, after, opts = self._arriving()
            fits = np.array([self.units >= o.demand for o in self.options])
            for i in range(app.n):
                has_data = np.array([o.workload > 0 for o in opts[i]])
                ok = (after[i] >= self.a_min) & has_data & fits
                cfg[i, 1:] = ok
                cfg[i, 0] = now[i] >= self.a_min or not ok.any()
        return np.concatenate([srv, cfg.ravel()])

    def project(self, action: Any) -> tuple[int, list[int]]:
        """Applied ``(server, retraining choices)`` for ``action`` at the current epoch."""
        a = np.asarray(action)
        n, e, h = self.n_nodes, self.e, len(self.options)
        if a.shape != (1 + n,):
            raise ValueError(f"action must have shape ({1 + n},), got {a.shape}")
        a = np.nan_to_num(a.astype(float)).astype(np.int64)
        mask = self.action_masks()
        srv_mask, cfg_mask = mask[:e], mask[e:].reshape(n, h + 1)
        server = int(a[0]) if 0 <= a[0] < e and srv_mask[a[0]] else int(np.argmax(srv_mask))
        choice = []
        if self.epoch is not None and self.epoch.kind == "admit":
            app = self.apps[int(self.app_of[self.epoch.k])]
            for i in range(app.n):
                v = a[1 + i]
                if not (0 <= v <= h and cfg_mask[i, v]):
                    valid = np.flatnonzero(cfg_mask[i])
                    v = int(valid[1]) if valid.size > 1 and not cfg_mask[i, 0] else int(valid[0])
                choice.append(int(v) - 1)
        return server, choice

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        if self.epoch is None:
            raise RuntimeError("call reset() before step() (and after the episode ends)")
        server, choice = self.project(action)
        ep = self.epoch
        if ep.kind == "admit":
            terms, extra = self._admit(choice)
        else:
            terms, extra = self._place(server)
        reward = float(sum(self.weights[k] * v for k, v in terms.items()))
        self._advance()
        terminated = self.epoch is None
        info = self._info(
            {
                "epoch": ep.kind,
                "request": ep.k,
                "reward_terms": terms,
                "utilisation": (self.busy / (self.units * max(self.horizon, 1e-9))).tolist(),
                **extra,
            }
        )
        if terminated:
            k = self.n_requests
            info["episode_metrics"] = {
                "objective": self.total["objective"] / k,
                "completion_s": self.total["completion"] / k,
                "accuracy": self.total["accuracy"] / k,
                "retrainings": float(self.total["retrainings"]),
                "energy_j": self.energy_j,
            }
        return self._obs(), reward, terminated, False, info

    def _admit(self, choice: list[int]) -> tuple[dict[str, float], dict[str, Any]]:
        """Admit the arriving request with its retraining choices."""
        k = self.epoch.k
        t = float(self.times[k])
        app, a, now, after, opts = self._arriving()
        ext = extend_with_retraining(app, choice, opts)
        acc = np.array([after[i, c] if c >= 0 else now[i] for i, c in enumerate(choice)])
        retrains, r = {}, app.n
        for i, c in enumerate(choice):
            if c >= 0:
                m = self.model_index[app.models[i]]
                self.base_acc[m] = after[i, c]  # updated for this and later requests
                self.base_time[m] = t
                self.pool_mb[m] = 0.0
                retrains[r] = i
                r += 1
        if self.pool_from_inputs:  # this request's data joins its models' pools
            for i, name in enumerate(app.models):
                into = app.input_mb[i] + sum(d for _, d in app.preds(i))
                self.pool_mb[self.model_index[name]] += into
        sched = RequestSchedule(ext, t)
        p = Pending(
            app=app,
            app_index=a,
            schedule=sched,
            queue=list_order(ext, self.cluster),
            choice=choice,
            acc=acc,
            acc_now=now,
            acc_after=after,
            options=opts,
            priority=priorities(app, self.cluster),
            retrains=retrains,
        )
        p.head_ready = self._ready(p)
        p.front = t
        self.pending[k] = p
        self._next += 1
        # No node can start before the earliest pending request's arrival any more.
        self.cluster.forget_before(min(q.schedule.arrival for q in self.pending.values()))
        loss = float(np.sum(1.0 - acc))
        self.total["accuracy"] += float(acc.mean())
        self.total["retrainings"] += len(retrains)
        terms = {"completion": 0.0, "accuracy": -loss, "energy": 0.0}
        extra = {
            "accuracy": float(acc.mean()),
            "retrained": [i for i, c in enumerate(choice) if c >= 0],
            "energy_j": 0.0,
        }
        return terms, extra

    def _ready(self, p: Pending) -> float:
        i = p.queue[0]
        return min(self.cluster.ready_time(p.schedule, i, j) for j in range(self.e))

    def _place(self, server: int) -> tuple[dict[str, float], dict[str, Any]]:
        """Place the presented node on ``server``; finish its request if it was the last."""
        k, i = self.epoch.k, self.epoch.node
        p = self.pending[k]
        app = p.schedule.app
        pl = self.cluster.place(p.schedule, i, server)
        self.busy[server] += (pl.finish - pl.start) * float(app.demand[i])
        self.horizon = max(self.horizon, pl.finish)
        dyn = (self.power.max_power_w - self.power.idle_power_w) * self.gpus_per_server
        energy = (pl.finish - pl.start) * float(app.demand[i]) / self.units * dyn
        self.energy_j += energy
        p.queue.pop(0)
        # The completion term is paid as the request's latest finish moves (it telescopes to
        # the completion time at the last node), so each placement sees its own cost.
        grown = max(0.0, pl.finish - p.front)
        p.front = max(p.front, pl.finish)
        terms = {"completion": -grown, "accuracy": 0.0, "energy": -energy / 1000.0}
        extra: dict[str, Any] = {"node": i, "server": server, "energy_j": energy}
        if p.queue:
            p.head_ready = self._ready(p)
            return terms, extra
        del self.pending[k]
        completion = p.schedule.completion
        loss = float(np.sum(1.0 - p.acc))
        objective = completion + self.theta * loss
        self.total["objective"] += objective
        self.total["completion"] += completion
        self.schedules.append(p.schedule)
        self.records.append(
            {
                "request": k,
                "app": p.app.name,
                "arrival_s": p.schedule.arrival,
                "completion_s": completion,
                "accuracy": float(p.acc.mean()),
                "objective": objective,
                "retrainings": len(p.retrains),
            }
        )
        extra.update(
            {"completion_s": completion, "accuracy": float(p.acc.mean()), "objective": objective}
        )
        return terms, extra

    # ------------------------------------------------------------------ views
    def _obs(self) -> dict[str, np.ndarray]:
        n = self.n_nodes
        nodes = np.zeros((n, NODE_FEATURES), dtype=np.float32)
        edges = np.full((self.n_edges, 2), -1.0, dtype=np.float32)
        emask = np.zeros(self.n_edges, dtype=np.float32)
        servers = np.zeros((self.e, SERVER_FEATURES), dtype=np.float32)
        ep = self.epoch
        t = self.now
        if ep is not None:
            if ep.kind == "admit":
                app, _, acc, _, _ = self._arriving()
                phi = priorities(app, self.cluster)
                gained = np.zeros(app.n)
                placed: set[int] = set()
                cur, cur_r = -1, -1
            else:
                p = self.pending[ep.k]
                app, acc, phi, placed = p.app, p.acc, p.priority, set(p.schedule.tasks)
                gained = p.acc - p.acc_now
                cur = ep.node if ep.node < app.n else -1
                cur_r = p.retrains.get(ep.node, -1)
            idx = [self.model_index[m] for m in app.models]
            mean_exe = app.workload / app.demand * float(np.mean(1.0 / self.cluster.speed))
            for i in range(app.n):
                nodes[i] = [
                    1.0,
                    app.workload[i],
                    app.demand[i],
                    app.input_mb[i],
                    acc[i],
                    self.m_ceiling[idx[i]] - acc[i],
                    max(0.0, t - self.base_time[idx[i]]) / 100.0,
                    mean_exe[i],
                    phi[i],
                    gained[i],
                    float(i in placed),
                    float(i == cur),
                    float(i == cur_r),
                ]
            m = min(len(app.edges), self.n_edges)
            edges[:m] = app.edges[:m]
            emask[:m] = 1.0
            if ep.kind == "place":
                sched = self.pending[ep.k].schedule
                fin = [self.cluster.finish_on(sched, ep.node, j)[1] for j in range(self.e)]
                servers[:, 4] = np.array(fin) - min(fin)  # 0 on the earliest-finish server(s)
        for j in range(self.e):
            last = self.cluster.times[j][-1]
            servers[j, :4] = [
                self.cluster.speed[j],
                self.units,
                max(0.0, last - t),
                self.cluster.source[j] / 1000.0,
            ]
        glob = np.array(
            [
                self._next / self.n_requests if self._next >= 0 else 0.0,
                self.theta / 10,
                self.a_min,
                float(ep is not None and ep.kind == "admit"),
                len(self.pending) / 10.0 if self._next >= 0 else 0.0,
            ],
            dtype=np.float32,
        )
        return {
            "nodes": nodes,
            "edges": edges,
            "edge_mask": emask,
            "servers": np.minimum(servers, 1e6),
            "globals": glob,
        }

    def _info(self, extra: dict[str, Any]) -> dict[str, Any]:
        info = {"action_mask": self.action_masks(), "time_s": self.now}
        info.update(extra)
        return info

    def _render_text(self) -> str | None:
        """One text line of the current state."""
        if self._next < 0:
            return None
        ep = self.epoch
        what = (
            "done"
            if ep is None
            else f"{ep.kind} request {ep.k}" + (f" node {ep.node}" if ep.kind == "place" else "")
        )
        return (
            f"t={self.now:.2f}s {what}; admitted {self._next}/{self.n_requests}, "
            f"pending {len(self.pending)}, completed {len(self.records)}"
        )

    def _frame_panels(self) -> tuple[str, list[Panel]]:
        """Title and panels of the ``"rgb_array"`` frame: server load, request counts."""
        if self._next < 0:
            return "DAGOffload-v0: call reset()", []
        t = self.now
        backlog = np.array([max(0.0, self.cluster.times[j][-1] - t) for j in range(self.e)])
        util = self.busy / (self.units * max(self.horizon, 1e-9))
        dark, _ = tenant_colors(self.e)
        ep = self.epoch
        if ep is None:
            what = "done"
        elif ep.kind == "admit":
            what = f"admit request {ep.k}"
        else:
            what = f"place request {ep.k} node {ep.node}"
        title = f"t = {t:.2f} s   {what}"
        servers = Panel(
            f"server backlog (mean utilisation {float(util.mean()):.0%})",
            [f"e{j}" for j in range(self.e)],
            [Series("backlog", backlog, dark)],
            ylabel="seconds until free",
            ymax_min=1.0,
        )
        done = len(self.records)
        mean = f"{np.mean([r['completion_s'] for r in self.records]):.2f} s" if done else "-"
        requests = Panel(
            f"requests of {self.n_requests} (mean completion {mean})",
            ["admitted", "pending", "completed"],
            [Series("requests", [self._next, len(self.pending), done], ["C0", "C1", "C2"])],
        )
        return title, [servers, requests]

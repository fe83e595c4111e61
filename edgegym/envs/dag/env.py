"""``edgegym/DAGOffload-v0``: DAG requests with retraining across edge servers (SRS/MRS)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from edgegym.envs._common import check_render_mode, scenario_for
from edgegym.hardware.gpus import PowerModel, get_gpu
from edgegym.scenarios import Scenario
from edgegym.sim.dag import EdgeCluster, RequestSchedule, list_order, priorities
from edgegym.workload.arrivals import make_arrival
from edgegym.workload.dag import DAGApp, RetrainOption, extend_with_retraining

DEFAULT_SCENARIO = "srs-edge-5apps"
NODE_FEATURES = 9
SERVER_FEATURES = 4
GLOBALS = 3
_MB_PER_GBPS = 125.0


@dataclass(frozen=True)
class DAGSnapshot:
    """Structured state handed to baselines by ``env.unwrapped.sim_state()``."""

    time_s: float
    app: DAGApp  # the arriving request's inference DAG
    app_index: int
    cluster: EdgeCluster  # a copy with every earlier placement
    acc_now: np.ndarray  # (V,) accuracy of each task's model now
    acc_after: np.ndarray  # (V, H) accuracy after retraining with each option
    options: tuple[tuple[RetrainOption, ...], ...]  # (V, H) configurations as they run now
    theta: float
    a_min: float
    max_nodes: int


class DAGOffloadEnv(gym.Env):
    """Online scheduling of multi-model DAG requests with retraining (Zeng et al., INFOCOM'25).

    Requests of several applications (DAGs of models) arrive over time at an edge cluster of E
    servers (speed S_j, capacity C_j resource units, links D between servers and from storage).
    Each model drifts: its accuracy falls with time since its last retraining. For each arriving
    request the agent places every task on a server and may retrain any task's model with a
    configuration ``u_h = (b_h, n_h, o_h)``: that adds a retraining node to the request's DAG
    (slides' Fig. 7), delays the task by the retraining and its transfers, and raises the
    model's accuracy for this and later requests.

    **Decision epochs**: one per request, at its arrival (requests in arrival order).

    **Action space**: ``MultiDiscrete([E] * 2N + [H + 1] * N)`` with N = ``max_nodes``: the
    server of each inference task, the server of each task's retraining node, and per task 0 (no
    retraining) or 1 + configuration index. ``action_masks()`` / ``info["action_mask"]`` (flat):
    padding slots only 0; servers whose capacity cannot hold the task are masked; "no
    retraining" is masked where the model is below A_min (Eq. 9d) and configurations whose
    result stays below A_min are masked. Invalid entries are projected deterministically
    (padding to 0, an invalid server to the lowest valid one, an invalid retraining choice to
    the cheapest configuration that reaches A_min, or none).

    **Execution**: the (extended) DAG's tasks are placed in decreasing Eq. 10 priority, each at
    its earliest feasible start on its server (capacity timelines, transfers; Eq. 5-8).

    **Observation**: ``Dict`` of ``nodes`` (N, 9) (valid, workload, demand, input MB, model
    accuracy, gap to the model's ceiling, seconds since the model's last retraining / 100,
    mean execution time, priority), ``edges`` (M, 2) node indices (-1 padding), ``edge_mask``
    (M,), ``servers`` (E, 4) (speed, capacity, backlog seconds, link to storage), ``globals``
    (3,) (episode fraction, theta / 10, A_min).

    **Reward**: ``-(completion + theta * sum_i (1 - A_i))`` of the request (Eq. 9), as named
    terms ``completion`` and ``accuracy`` (weights 1 and theta) plus ``energy`` (weight 0).
    ``info``: completion time, mean accuracy, per-server utilisation, energy.

    **Episode end**: ``terminated`` after ``requests`` requests.

    Args:
        scenario: Bundled name or path (family ``dag``).
        record_timeline: Accepted for the evaluator; every request's schedule is kept in
            ``env.unwrapped.schedules`` anyway.
        render_mode: ``None`` or ``"ansi"``.
        **overrides: Scenario overrides (``requests=50``, ``theta=5``, ``count=3`` servers).

    Version history: v0: initial release.
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 4}  # noqa: RUF012

    def __init__(
        self,
        scenario: str | Scenario = DEFAULT_SCENARIO,
        record_timeline: bool = False,
        render_mode: str | None = None,
        **overrides: Any,
    ) -> None:
        self.record_timeline = record_timeline  # schedules are always kept in `schedules`
        sc = scenario_for("edgegym/DAGOffload-v0", scenario, overrides)
        self.scenario = sc
        self.render_mode = check_render_mode(render_mode)
        sv = sc["servers"]
        self.e = int(sv["count"])
        self.gpu = get_gpu(sv["gpu"])
        self.power = PowerModel.from_spec(self.gpu)
        self.gpus_per_server = int(sv["gpus_per_server"])
        self.units = float(sv["gpus_per_server"] * sv["units_per_gpu"])
        self.n_nodes = int(sc["max_nodes"])
        self.n_edges = int(sc["max_edges"])
        self.theta = float(sc["theta"])
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
        self.action_space = spaces.MultiDiscrete(
            np.array([self.e] * (2 * self.n_nodes) + [h + 1] * self.n_nodes)
        )
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
        self._k = -1

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
        self.total = {"objective": 0.0, "completion": 0.0, "accuracy": 0.0, "retrainings": 0}
        self.energy_j = 0.0
        self.busy = np.zeros(self.e)  # resource-unit seconds used per server
        self.schedules: list[RequestSchedule] = []
        self._k = 0
        return self._obs(), self._info({})

    @property
    def now(self) -> float:
        """Arrival time of the current request."""
        return float(self.times[min(self._k, self.n_requests - 1)])

    def _current(self) -> tuple[DAGApp, int]:
        a = int(self.app_of[min(self._k, self.n_requests - 1)])
        return self.apps[a], a

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
        rate = self.m_pool_rate[idx]
        pool = rate * np.maximum(0.0, t - self.base_time[idx])
        frac = np.minimum(1.0, pool[:, None] / np.maximum(b[None, :], 1e-12))
        return np.where(rate[:, None] > 0, frac, 1.0)

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

    def sim_state(self) -> DAGSnapshot:
        """The arriving request and the cluster (a copy), for baselines."""
        app, a = self._current()
        now, after = self._task_acc(app, self.now)
        return DAGSnapshot(
            time_s=self.now,
            app=app,
            app_index=a,
            cluster=self.cluster.copy(),
            acc_now=now,
            acc_after=after,
            options=tuple(map(tuple, self.task_options(app, self.now))),
            theta=self.theta,
            a_min=self.a_min,
            max_nodes=self.n_nodes,
        )

    # ------------------------------------------------------------------ actions
    def action_masks(self) -> np.ndarray:
        """Flat mask over the ``MultiDiscrete`` entries (see the class docstring)."""
        n, e, h = self.n_nodes, self.e, len(self.options)
        out_srv = np.zeros((2 * n, e), dtype=bool)
        out_cfg = np.zeros((n, h + 1), dtype=bool)
        out_srv[:, 0] = True
        out_cfg[:, 0] = True
        if 0 <= self._k < self.n_requests:
            app, _ = self._current()
            now, after = self._task_acc(app, self.now)
            opts = self.task_options(app, self.now)
            for i in range(app.n):
                out_srv[i] = self.units >= app.demand[i]
                has_data = np.array([o.workload > 0 for o in opts[i]])
                ok = (after[i] >= self.a_min) & has_data
                out_cfg[i, 1:] = ok
                out_cfg[i, 0] = now[i] >= self.a_min or not ok.any()
                out_srv[n + i] = True  # any server can host a retraining node
                out_cfg[i, 1:] &= np.array([self.units >= o.demand for o in self.options])
                if not out_cfg[i].any():
                    out_cfg[i, 0] = True
        return np.concatenate([out_srv.ravel(), out_cfg.ravel()])

    def project(self, action: Any) -> tuple[np.ndarray, np.ndarray, list[int]]:
        """Applied (servers, retraining servers, choices) for ``action``."""
        a = np.asarray(action)
        n, e, h = self.n_nodes, self.e, len(self.options)
        if a.shape != (3 * n,):
            raise ValueError(f"action must have shape ({3 * n},), got {a.shape}")
        a = np.nan_to_num(a.astype(float)).astype(np.int64)
        mask = self.action_masks()
        srv_mask = mask[: 2 * n * e].reshape(2 * n, e)
        cfg_mask = mask[2 * n * e :].reshape(n, h + 1)
        srv = np.zeros(2 * n, dtype=np.int64)
        for k in range(2 * n):
            v = a[k]
            srv[k] = v if 0 <= v < e and srv_mask[k, v] else int(np.argmax(srv_mask[k]))
        app, _ = self._current()
        choice = []
        for i in range(app.n):
            v = a[2 * n + i]
            if not (0 <= v <= h and cfg_mask[i, v]):
                valid = np.flatnonzero(cfg_mask[i])
                v = int(valid[1]) if valid.size > 1 and not cfg_mask[i, 0] else int(valid[0])
            choice.append(int(v) - 1)
        return srv[:n], srv[n:], choice

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        if self._k < 0 or self._k >= self.n_requests:
            raise RuntimeError("call reset() before step() (and after the episode ends)")
        servers, rservers, choice = self.project(action)
        app, _ = self._current()
        t = self.now
        now, after = self._task_acc(app, t)
        ext = extend_with_retraining(app, choice, self.task_options(app, t))
        placed = np.concatenate(
            [servers[: app.n], [rservers[i] for i in range(app.n) if choice[i] >= 0]]
        ).astype(np.int64)
        sched = self._schedule(ext, t, placed)
        acc = np.array([after[i, choice[i]] if choice[i] >= 0 else now[i] for i in range(app.n)])
        # Retrained models stay updated for later requests (from this arrival on).
        for i, c in enumerate(choice):
            if c >= 0:
                m = self.model_index[app.models[i]]
                self.base_acc[m] = after[i, c]
                self.base_time[m] = t
        completion = sched.completion
        loss = float(np.sum(1.0 - acc))
        objective = completion + self.theta * loss
        energy = self._energy(ext, sched)
        self.energy_j += energy
        self.total["objective"] += objective
        self.total["completion"] += completion
        self.total["accuracy"] += float(acc.mean())
        self.total["retrainings"] += sum(c >= 0 for c in choice)
        self.schedules.append(sched)
        terms = {"completion": -completion, "accuracy": -loss, "energy": -energy / 1000.0}
        weights = {"completion": 1.0, "accuracy": self.theta, "energy": 0.0}
        reward = float(sum(weights[k] * v for k, v in terms.items()))
        self._k += 1
        terminated = self._k >= self.n_requests
        elapsed = max(t + completion, 1e-9)
        info = self._info(
            {
                "reward_terms": terms,
                "completion_s": completion,
                "accuracy": float(acc.mean()),
                "objective": objective,
                "retrained": [i for i, c in enumerate(choice) if c >= 0],
                "servers": servers[: app.n].tolist(),
                "energy_j": energy,
                "utilisation": (self.busy / (self.units * elapsed)).tolist(),
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

    def _schedule(self, app: DAGApp, t: float, servers: np.ndarray) -> RequestSchedule:
        sched = RequestSchedule(app, t)
        for i in list_order(app, self.cluster):
            p = self.cluster.place(sched, i, int(servers[i]))
            self.busy[p.server] += (p.finish - p.start) * float(app.demand[i])
        return sched

    def _energy(self, app: DAGApp, sched: RequestSchedule) -> float:
        """Dynamic energy of the request's tasks: busy share of a server's GPUs at full power."""
        dyn = (self.power.max_power_w - self.power.idle_power_w) * self.gpus_per_server
        return float(
            sum(
                (p.finish - p.start) * app.demand[i] / self.units * dyn
                for i, p in sched.tasks.items()
            )
        )

    # ------------------------------------------------------------------ views
    def _obs(self) -> dict[str, np.ndarray]:
        n = self.n_nodes
        nodes = np.zeros((n, NODE_FEATURES), dtype=np.float32)
        edges = np.full((self.n_edges, 2), -1.0, dtype=np.float32)
        emask = np.zeros(self.n_edges, dtype=np.float32)
        t = self.now if self._k >= 0 else 0.0
        if 0 <= self._k < self.n_requests:
            app, _ = self._current()
            acc, _ = self._task_acc(app, t)
            idx = [self.model_index[m] for m in app.models]
            phi = priorities(app, self.cluster)
            mean_exe = [np.mean(app.workload[i] / (app.demand[i] * self.cluster.speed))
                        for i in range(app.n)]  # fmt: skip
            for i in range(app.n):
                nodes[i] = [
                    1.0,
                    app.workload[i],
                    app.demand[i],
                    app.input_mb[i],
                    acc[i],
                    self.m_ceiling[idx[i]] - acc[i],
                    (t - self.base_time[idx[i]]) / 100.0,
                    mean_exe[i],
                    phi[i],
                ]
            k = min(len(app.edges), self.n_edges)
            edges[:k] = app.edges[:k]
            emask[:k] = 1.0
        servers = np.zeros((self.e, SERVER_FEATURES), dtype=np.float32)
        for j in range(self.e):
            last = self.cluster.times[j][-1] if self.cluster.times[j] else 0.0
            servers[j] = [
                self.cluster.speed[j],
                self.units,
                max(0.0, last - t),
                self.cluster.source[j] / 1000.0,
            ]
        glob = np.array(
            [self._k / self.n_requests if self._k >= 0 else 0.0, self.theta / 10, self.a_min],
            dtype=np.float32,
        )
        return {
            "nodes": nodes,
            "edges": edges,
            "edge_mask": emask,
            "servers": servers,
            "globals": glob,
        }

    def _info(self, extra: dict[str, Any]) -> dict[str, Any]:
        info = {"action_mask": self.action_masks(), "time_s": self.now if self._k >= 0 else 0.0}
        info.update(extra)
        return info

    def render(self) -> str | None:
        if self.render_mode != "ansi" or self._k < 0:
            return None
        return f"request {self._k}/{self.n_requests} at t={self.now:.2f}s"

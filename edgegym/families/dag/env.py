"""``edgegym/DAGOffload-v0``: DAG requests with retraining across edge servers (SRS/MRS)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np
from gymnasium import spaces

from edgegym.core.checks import check_backend, check_real_options, real_seed
from edgegym.core.dynamics import Record
from edgegym.core.env import EdgeEnv
from edgegym.core.render import Panel, Series, tenant_colors
from edgegym.families.dag.cluster import EdgeCluster, RequestSchedule
from edgegym.families.dag.dynamics import ADMIT, DAGDynamics, DAGState
from edgegym.families.dag.episode import after_retraining, pool_fraction
from edgegym.families.dag.graph import DAGApp, RetrainOption
from edgegym.families.dag.observation import GLOBALS, NODE_FEATURES, OBS_HIGH, SERVER_FEATURES
from edgegym.families.dag.params import DAGParams, make_params
from edgegym.families.dag.snapshot import (
    DAGSnapshot,
    Epoch,
    PendingRequest,
    cluster_of,
    epoch_of,
    pending_of,
    request_of,
    retrain_options,
    snapshot,
)
from edgegym.hardware.gpus import get_gpu
from edgegym.scenarios import Scenario

DEFAULT_SCENARIO = "srs-edge-5apps"
__all__ = [
    "DEFAULT_SCENARIO",
    "GLOBALS",
    "NODE_FEATURES",
    "SERVER_FEATURES",
    "DAGOffloadEnv",
    "DAGSnapshot",
    "Epoch",
    "PendingRequest",
    "RealDAGDynamics",
    "dag_spaces",
]


def dag_spaces(p: DAGParams) -> tuple[spaces.Dict, spaces.MultiDiscrete]:
    """Observation and action space of one env (the single and the vector env share them)."""
    n, h, big = p.n_nodes, len(p.options), OBS_HIGH
    obs = spaces.Dict(
        {
            "nodes": spaces.Box(0.0, big, (n, NODE_FEATURES), np.float32),
            "edges": spaces.Box(-1.0, float(n), (p.n_edges, 2), np.float32),
            "edge_mask": spaces.Box(0.0, 1.0, (p.n_edges,), np.float32),
            "servers": spaces.Box(0.0, big, (p.e, SERVER_FEATURES), np.float32),
            "globals": spaces.Box(0.0, big, (GLOBALS,), np.float32),
        }
    )
    return obs, spaces.MultiDiscrete(np.array([p.e] + [h + 1] * n))


def step_info(rec: Record, i: int) -> dict[str, Any]:
    """Env ``i``'s epoch-specific ``info`` entries out of a step's Record, as the single env
    gives them: admit epochs ``accuracy``, ``retrained``, ``energy_j``; place epochs
    ``node``, ``server``, ``energy_j``, and ``completion_s``, ``accuracy``, ``objective`` when
    the request finished."""
    rec_info = rec.info
    energy = float(rec.energy_j[i])
    if rec_info["epoch"][i] == "admit":
        return {
            "accuracy": float(rec_info["accuracy"][i]),
            "retrained": list(rec_info["retrained"][i]),
            "energy_j": energy,
        }
    out: dict[str, Any] = {
        "node": int(rec_info["node"][i]),
        "server": int(rec_info["server"][i]),
        "energy_j": energy,
    }
    if not np.isnan(rec_info["objective"][i]):
        out["completion_s"] = float(rec_info["completion_s"][i])
        out["accuracy"] = float(rec_info["accuracy"][i])
        out["objective"] = float(rec_info["objective"][i])
    return out


def mask_before_reset(p: DAGParams) -> np.ndarray:
    """The flat action mask of no epoch (before reset): server 0 and "no retraining" only."""
    h = len(p.options)
    out = np.zeros(p.e + p.n_nodes * (h + 1), dtype=bool)
    out[0] = True
    out[p.e :: h + 1] = True
    return out


class RealDAGDynamics(DAGDynamics):
    """The simulator's dynamics with a real executor beside them (``backend="real"``, one env).

    The dynamics decide every epoch as in simulation (so the state and the observations are
    the simulator's); after each step the executor runs the placed node on the device and
    replaces the reward's ``completion`` term with the growth of the request's replayed latest
    finish, and the node's modelled energy with NVML's where it reads (:mod:`edgegym.real.dag`).

    Args:
        make_executor: ``make_executor(params, state, rng)`` builds an episode's executor from
            its initial state and its generator.
    """

    def __init__(self, make_executor: Callable[[DAGParams, DAGState, Any], Any]) -> None:
        super().__init__()
        self.make_executor = make_executor
        self.executor: Any = None

    def initial(self, params: DAGParams, rngs: Sequence[np.random.Generator]) -> DAGState:
        """The simulator's initial state, and a fresh executor for the episode."""
        if len(rngs) != 1:
            raise ValueError("the real backend runs one env (the vector env is simulation only)")
        state = super().initial(params, rngs)
        self.executor = self.make_executor(params, state, rngs[0])
        return state

    def step(
        self, params: DAGParams, state: DAGState, actions: np.ndarray
    ) -> tuple[DAGState, Record]:
        """The simulator's step, then the executor's real work on its record."""
        epoch = self.executor.epoch(state)
        state, rec = super().step(params, state, actions)
        self.executor.after_step(params, state, rec, epoch)
        return state, rec


def real_executor(
    device: str,
    time_scale: float | None,
    options: dict[str, Any],
    params: DAGParams,
    state: DAGState,
    rng: np.random.Generator,
) -> Any:
    """The real backend's executor of one episode (:class:`RealDAGDynamics`'s factory, with
    the first three arguments bound), seeded from a copy of the episode's generator."""
    from edgegym.real.dag import RealDAGExecutor

    return RealDAGExecutor(params, state, device, time_scale, seed=real_seed(rng), options=options)


def _param(name: str, doc: str) -> property:
    """A read-only property: the scenario's ``params.<name>``."""
    return property(lambda self: getattr(self.params, name), doc=doc)


def _env0(name: str, doc: str) -> property:
    """A read-only property: row 0 of the state's ``<name>`` array (a view)."""
    return property(lambda self: getattr(self.state, name)[0], doc=doc)


class DAGOffloadEnv(EdgeEnv):
    """Online scheduling of multi-model DAG requests with retraining (Zeng et al., INFOCOM'25).

    Requests of several applications (DAGs of models) arrive over time at an edge cluster of E
    servers (speed S_j, capacity C_j resource units, links D between servers, from the
    controller, which sends a request's input data, and from storage, which sends a retraining
    node's training data).
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
    requests / 10); ``nodes`` and ``servers`` are clamped into the box ``[0, 1e6]``.

    **Reward**: per request, ``-(completion + theta * sum_i (1 - A_i))`` (Eq. 9) summed over
    its epochs, as named terms ``completion`` and ``accuracy`` (weights ``objective.completion``
    = 1 and theta) plus ``energy`` (minus the placed node's joules / 1000, weight
    ``objective.energy`` = 0; ``--set objective.energy=0.5`` trades energy against time).
    ``info``: the epoch, per-request completion time, accuracy and
    objective when they are known, per-server utilisation, energy of the step.

    **Episode end**: ``terminated`` once every request is admitted and placed.

    Args:
        scenario: Bundled name or path (family ``dag``).
        record_timeline: Keep every finished request's schedule and record
            (``env.unwrapped.schedules``, ``env.unwrapped.records``; about 5 kB a request).
            Off by default, so an episode's memory does not grow with its requests.
        render_mode: ``None``, ``"ansi"`` (one line: the epoch and the request counts),
            ``"rgb_array"`` (a 640x360 frame: each server's backlog, and the requests
            admitted, pending and completed with their mean completion time;
            :mod:`edgegym.core.render`) or ``"human"`` (that frame in a window).
        backend: ``"sim"`` (default) or ``"real"``: every placed node runs a compact
            stand-in network on ``device`` (a forward pass, or a retraining node's SGD steps)
            and each request's completion is replayed from the measured execution times; the
            reward's ``completion`` term is the replay's and, where NVML reads the GPU, the
            ``energy`` term is measured (the accuracy term, the state and the observations
            stay the simulator's). ``info["real"]`` holds every
            node's measured and replayed times and every finished request's replayed and
            simulated completion and measured and simulated accuracy
            (:mod:`edgegym.real.dag`).
        device: Torch device of the real backend, ``"cpu"`` or ``"cuda[:N]"``.
        time_scale: Real backend: scenario seconds per wall second of measured work (``None``:
            1).
        real_options: Real backend options (:data:`edgegym.real.dag.DEFAULT_OPTIONS`).
        **overrides: Scenario overrides (``requests=50``, ``theta=5``, ``count=3`` servers).

    Version history: v0: initial release; ``backend="real"`` added (same spaces).
    """

    env_id = "edgegym/DAGOffload-v0"
    metadata = {**EdgeEnv.metadata, "render_fps": 20}  # noqa: RUF012

    def __init__(
        self,
        scenario: str | Scenario = DEFAULT_SCENARIO,
        record_timeline: bool = False,
        render_mode: str | None = None,
        backend: str = "sim",
        device: str = "cpu",
        time_scale: float | None = None,
        real_options: dict[str, Any] | None = None,
        **overrides: Any,
    ) -> None:
        self.backend, self.device, self.time_scale = check_backend(backend, device, time_scale)
        self.real_options = check_real_options(
            real_options, self.backend, "edgegym.real.dag:DEFAULT_OPTIONS"
        )
        sc = self._setup(
            scenario, overrides, render_mode=render_mode, record_timeline=record_timeline
        )
        self.scenario = sc
        p = make_params(sc)
        dynamics = DAGDynamics()
        if self.backend == "real":
            dynamics = RealDAGDynamics(
                partial(real_executor, self.device, self.time_scale, self.real_options)
            )
        self._use(p, dynamics, *dag_spaces(p))
        self.gpu = get_gpu(sc["servers"]["gpu"])
        self._records: list[dict[str, Any]] = []
        self._schedules: list[RequestSchedule] = []
        self._admitted: dict[int, Any] = {}  # request -> what its admission fixed (sim_state)

    # ------------------------------------------------------------------ what a scenario fixes
    e = _param("e", "Edge servers.")
    n_nodes = _param("n_nodes", "Tasks of the largest application (``max_nodes``).")
    n_edges = _param("n_edges", "Edges of the largest application.")
    units = _param("units", "Resource units of every server.")
    theta = _param("theta", "Weight of accuracy in the objective (Eq. 9).")
    a_min = _param("a_min", "Accuracy floor (Eq. 9d).")
    n_requests = _param("n_requests", "Requests of an episode.")
    duration = _param("duration", "Seconds the arrivals span.")
    options = _param("options", "The retraining configurations as the scenario gives them.")

    @property
    def apps(self) -> list[DAGApp]:
        """The applications."""
        return list(self.params.apps)

    @property
    def model_names(self) -> list[str]:
        """The models, in the order of the per-model arrays."""
        return list(self.params.model_names)

    @property
    def model_index(self) -> dict[str, int]:
        """Model name -> its index in the per-model arrays."""
        return dict(self.params.model_index)

    # ------------------------------------------------------------------ state (env 0)
    @property
    def cluster(self) -> EdgeCluster:
        """The edge servers and their capacity timelines (a copy: read it or plan on it)."""
        return cluster_of(self.params, self.state, 0)

    @property
    def epoch(self) -> Epoch | None:
        """The decision waited for (``None`` before reset and after the episode ends)."""
        return None if self.state is None else epoch_of(self.state, 0)

    @property
    def pending(self) -> dict[int, PendingRequest]:
        """Admitted requests still being placed, by request index (views, built per call)."""
        return pending_of(self.params, self.state, 0)

    def _need_history(self, what: str) -> None:
        if not self.record_timeline:
            raise RuntimeError(
                f"env.{what} needs DAGOffloadEnv(record_timeline=True) (or gym.make(..., "
                "record_timeline=True)): finished requests are not kept otherwise"
            )

    @property
    def schedules(self) -> list[RequestSchedule]:
        """Every finished request's schedule, in completion order (``record_timeline``)."""
        self._need_history("schedules")
        return self._schedules

    @property
    def records(self) -> list[dict[str, Any]]:
        """One entry per finished request (completion order; ``record_timeline``)."""
        self._need_history("records")
        return self._records

    def allocation_timeline(self) -> list[dict[str, Any]] | None:
        """Every finished request (its :attr:`records` entry, with ``nodes``: server, start,
        finish, resource units and whether it retrains, per node), or ``None`` without
        ``record_timeline``."""
        return self._records if self.record_timeline else None

    def plot_info(self) -> dict[str, Any]:
        """The servers, their resource units and the applications, for the figures."""
        p = self.params
        return {"unit": "server", "servers": int(p.e), "capacity": float(p.units),
                "apps": [a.name for a in p.apps]}  # fmt: skip

    @property
    def completed(self) -> int:
        """Requests finished so far."""
        if self.state is None:
            return 0
        return self._next - int(np.count_nonzero(self.state.requests.k[0] >= 0))

    times = _env0("times", "(requests,) arrival times (a view: writing it changes the episode).")
    app_of = _env0("app_of", "(requests,) application of each request.")
    base_acc = _env0("base_acc", "(models,) accuracy of each model at its last retraining.")
    base_time = _env0("base_time", "(models,) time of each model's last retraining.")
    pool_mb = _env0("pool_mb", "(models,) request inputs pooled since each model's retraining.")
    busy = _env0("busy", "(E,) resource-unit seconds used per server.")

    @property
    def horizon(self) -> float:
        """Latest finish so far."""
        return float(self.state.horizon[0])

    @property
    def energy_j(self) -> float:
        """Joules of the nodes placed so far."""
        return float(self.state.energy_j[0])

    @property
    def _next(self) -> int:
        """Requests admitted so far (-1 before reset)."""
        return -1 if self.state is None else int(self.state.next[0])

    # ------------------------------------------------------------------ episode
    def _on_reset(self) -> None:
        self._records, self._schedules, self._admitted = [], [], {}

    def _advance(self) -> None:
        """Pick the next epoch again (after writing :attr:`times`; see the class docstring)."""
        self.dynamics.advance(self.params, self.state)
        self._mask = None

    @property
    def now(self) -> float:
        """Time of the current epoch (the last one after the episode ends)."""
        return self.dynamics.now(self.params, self.state, 0)

    def model_accuracy(self, t: float) -> np.ndarray:
        """(models,) accuracy of every model at time t (linear drift to a floor)."""
        drift = self.params.m_drift * (t - self.base_time)
        return np.maximum(self.params.m_floor, self.base_acc - drift)

    def _data_fraction(self, idx: np.ndarray, t: float) -> np.ndarray:
        """(V, H) fraction of each configuration's data the model's pool holds (1 without
        pools): a retraining uses ``min(b_h, pool)`` and its cost and gain scale with it."""
        return pool_fraction(self.params, self.state, 0, idx, t)

    def task_accuracy(self, app: DAGApp, t: float) -> tuple[np.ndarray, np.ndarray]:
        """(V,) accuracy of ``app``'s tasks at t and (V, H) after retraining with each option."""
        idx = np.array([self.params.model_index[m] for m in app.models])
        now = self.model_accuracy(t)[idx]
        return now, after_retraining(self.params, idx, now, self._data_fraction(idx, t))

    def task_options(self, app: DAGApp, t: float) -> list[list[RetrainOption]]:
        """Per task, the configurations as they would run now (data and workload scaled by
        the pool of drifted samples; workload 0 when the pool is empty)."""
        idx = np.array([self.params.model_index[m] for m in app.models])
        return [list(row) for row in retrain_options(self.params, self._data_fraction(idx, t))]

    def sim_state(self) -> DAGSnapshot:
        """The current epoch's request and a copy of the cluster, for baselines."""
        if self.state is None:
            raise RuntimeError("call reset() before sim_state()")
        live = self.state.requests.k[0]
        if len(self._admitted) > 2 * live.size:  # forget the finished requests
            keep = set(live.tolist())
            self._admitted = {k: v for k, v in self._admitted.items() if k in keep}
        return snapshot(self.params, self.state, 0, self._admitted)

    # ------------------------------------------------------------------ actions
    #: What one action holds (appended to the message of a malformed action).
    action_help = (
        " (entry 0: server of the presented node; then per task: 0 = no retraining, "
        "1 + configuration; env.unwrapped.describe_action(a) reads one at the current epoch)"
    )

    def describe_action(self, action: Any) -> str:
        """The action in words and numbers at the current epoch: the presented node's server
        (a place epoch) or each task's retraining choice (an admit epoch); the entries the
        epoch does not read are not described."""
        snap = self.sim_state()
        a = np.asarray(action, dtype=np.int64).ravel()
        if snap.kind == "place":
            node = snap.node
            app = snap.app
            what = (
                f"task {node} ({app.models[node]})" if node < app.n else f"retraining node {node}"
            )
            return f"request {snap.k} ({app.name}): {what} on server {int(a[0])}"
        lines = [f"request {snap.k} ({snap.app.name}) arrives:"]
        for v in range(snap.app.n):
            h = int(a[1 + v])
            if h == 0:
                choice = "no retraining"
            else:
                opt = snap.options[v][h - 1]
                choice = (
                    f"retrain with configuration {h - 1} ({opt.name}: {opt.data_mb:g} MB, "
                    f"{opt.workload:g} units, accuracy {snap.acc_now[v]:.3f} -> "
                    f"{snap.acc_after[v, h - 1]:.3f})"
                )
            lines.append(f"  task {v} ({snap.app.models[v]}): {choice}")
        return "\n".join(lines)

    def action_masks(self) -> np.ndarray:
        """Flat mask over the ``MultiDiscrete`` entries (see the class docstring); before
        reset, the mask of no epoch (server 0 and "no retraining" only)."""
        if self.state is None:
            return mask_before_reset(self.params)
        return super().action_masks()

    def project(self, action: Any) -> tuple[int, list[int]]:
        """Applied ``(server, retraining choices)`` for ``action`` at the current epoch."""
        server, choice = self.dynamics.project(self.params, self.state, self._action_batch(action))
        if self.state.kind[0] != ADMIT:
            return int(server[0]), []
        v = self.params.app_n[self.state.app_of[0, self.state.k[0]]]
        return int(server[0]), choice[0, :v].tolist()

    # ------------------------------------------------------------------ info and records
    @property
    def executor(self) -> Any:
        """The real backend's executor of the episode (``None`` in simulation or before
        ``reset``)."""
        return getattr(self.dynamics, "executor", None) if self.state is not None else None

    def _state_info(self) -> dict[str, Any]:
        info: dict[str, Any] = {"time_s": self.now}
        if self.backend == "real":
            info["real"] = self.executor.report()
        return info

    def _record_info(self, rec: Record) -> dict[str, Any]:
        return {
            "epoch": str(rec.info["epoch"][0]),
            "request": int(rec.info["request"][0]),
            "utilisation": rec.info["utilisation"][0].tolist(),
            **step_info(rec, 0),
        }

    def _before_step(self) -> int:
        return int(self.state.slot[0])

    def _timeline_add(self, slot: int, rec: Record) -> None:
        """Keep the request's record and schedule when this step placed its last node (its
        slot is free now but still holds the request)."""
        objective = float(rec.info["objective"][0])
        if np.isnan(objective):
            return
        req = request_of(self.params, self.state, 0, slot, self._admitted)
        sched = req.schedule
        self._schedules.append(sched)
        nodes = [
            [p.server, p.start, p.finish, float(sched.app.demand[x]), x in req.retrains]
            for x, p in sorted(sched.tasks.items())
        ]
        self._records.append(
            {
                "request": int(rec.info["request"][0]),
                "app": req.app.name,
                "arrival_s": sched.arrival,
                "completion_s": float(rec.info["completion_s"][0]),
                "accuracy": float(rec.info["accuracy"][0]),
                "objective": objective,
                "retrainings": len(req.retrains),
                "nodes": nodes,  # [server, start, finish, units, retraining] per node
            }
        )

    # ------------------------------------------------------------------ views
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
        pending = self._next - self.completed
        return (
            f"t={self.now:.2f}s {what}; admitted {self._next}/{self.n_requests}, "
            f"pending {pending}, completed {self.completed}"
        )

    def _frame_panels(self) -> tuple[str, list[Panel]]:
        """Title and panels of the ``"rgb_array"`` frame: server load, request counts."""
        if self._next < 0:
            return "DAGOffload-v0: call reset()", []
        t = self.now
        backlog = np.maximum(0.0, self.state.timelines.last()[0] - t)
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
        done = self.completed
        mean = f"{float(self.state.total_completion[0]) / done:.2f} s" if done else "-"
        requests = Panel(
            f"requests of {self.n_requests} (mean completion {mean})",
            ["admitted", "pending", "completed"],
            [Series("requests", [self._next, self._next - done, done], ["C0", "C1", "C2"])],
        )
        return title, [servers, requests]

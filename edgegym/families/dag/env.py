"""``edgegym/DAGOffload-v0``: DAG requests with retraining across edge servers (SRS/MRS)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from edgegym.core.checks import check_action
from edgegym.core.dynamics import Record, weighted_reward
from edgegym.core.env import EdgeEnv
from edgegym.core.render import Panel, Series, tenant_colors
from edgegym.families.dag.cluster import EdgeCluster, RequestSchedule
from edgegym.families.dag.graph import DAGApp, RetrainOption
from edgegym.families.dag.objects import Epoch, ObjectDAGDynamics, ObjectDAGState, Pending
from edgegym.families.dag.observation import GLOBALS, NODE_FEATURES, SERVER_FEATURES
from edgegym.families.dag.params import DAGParams, make_params
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
    "Pending",
    "dag_spaces",
]


def dag_spaces(p: DAGParams) -> tuple[spaces.Dict, spaces.MultiDiscrete]:
    """Observation and action space of one env (the single and the vector env share them)."""
    n, h, big = p.n_nodes, len(p.options), 1e6
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
        record_timeline: Keep every finished request's schedule and record
            (``env.unwrapped.schedules``, ``env.unwrapped.records``; about 5 kB a request).
            Off by default, so an episode's memory does not grow with its requests.
        render_mode: ``None``, ``"ansi"`` (one line: the epoch and the request counts),
            ``"rgb_array"`` (a 640x360 frame: each server's backlog, and the requests
            admitted, pending and completed with their mean completion time;
            :mod:`edgegym.core.render`) or ``"human"`` (that frame in a window).
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
        self.record_timeline = record_timeline
        sc = self._setup(
            scenario, overrides, render_mode=render_mode, record_timeline=record_timeline
        )
        self.scenario = sc
        self.params = p = make_params(sc)
        # Per-env objects: the fastest for one env (the vector env runs the array dynamics).
        self.dynamics = ObjectDAGDynamics(keep_history=record_timeline)
        self.e = p.e
        self.gpu = get_gpu(sc["servers"]["gpu"])
        self.power = p.power
        self.gpus_per_server = p.gpus_per_server
        self.units = p.units
        self.n_nodes = p.n_nodes
        self.n_edges = p.n_edges
        self.theta = p.theta
        #: Weights of the named terms: ``objective.completion`` (1), theta, ``objective.energy``
        #: (0); the defaults give Eq. 9.
        self.a_min = p.a_min
        self.n_requests = p.n_requests
        self.duration = p.duration
        self.options = p.options
        self.model_names = list(p.model_names)
        self.model_index = dict(p.model_index)
        self.m_start = p.m_start
        self.m_ceiling = p.m_ceiling
        self.m_drift = p.m_drift
        self.m_floor = p.m_floor
        self.m_pool_rate = p.m_pool_rate
        self.pool_from_inputs = p.pool_from_inputs
        self.m_pooled = p.m_pooled
        self.apps = list(p.apps)
        self.app_weights = p.app_weights
        self.arrival = p.arrival
        self.observation_space, self.action_space = dag_spaces(p)
        self.state: ObjectDAGState | None = None

    # ------------------------------------------------------------------ state (env 0)
    @property
    def cluster(self) -> EdgeCluster:
        """The edge servers and their capacity timelines."""
        return self.state.cluster[0]

    @property
    def epoch(self) -> Epoch | None:
        """The decision waited for (``None`` before reset and after the episode ends)."""
        return None if self.state is None else self.state.epoch[0]

    @property
    def pending(self) -> dict[int, Pending]:
        """Admitted requests still being placed, by request index."""
        return self.state.pending[0]

    @property
    def schedules(self) -> list[RequestSchedule]:
        """Every finished request's schedule, in completion order (``record_timeline``)."""
        self._need_history("schedules")
        return self.state.schedules[0]

    def _need_history(self, what: str) -> None:
        if not self.record_timeline:
            raise RuntimeError(
                f"env.{what} needs DAGOffloadEnv(record_timeline=True) (or gym.make(..., "
                "record_timeline=True)): finished requests are not kept otherwise"
            )

    @property
    def records(self) -> list[dict[str, Any]]:
        """One entry per finished request (completion order; ``record_timeline``)."""
        self._need_history("records")
        return self.state.records[0]

    @property
    def completed(self) -> int:
        """Requests finished so far."""
        return self._next - len(self.pending) if self._next >= 0 else 0

    @property
    def times(self) -> np.ndarray:
        """(requests,) arrival times (a view: writing it changes the episode)."""
        return self.state.times[0]

    @property
    def app_of(self) -> np.ndarray:
        """(requests,) application of each request."""
        return self.state.app_of[0]

    @property
    def base_acc(self) -> np.ndarray:
        """(models,) accuracy of each model at its last retraining."""
        return self.state.base_acc[0]

    @property
    def base_time(self) -> np.ndarray:
        """(models,) time of each model's last retraining."""
        return self.state.base_time[0]

    @property
    def pool_mb(self) -> np.ndarray:
        """(models,) pooled request inputs since each model's last retraining."""
        return self.state.pool_mb[0]

    @property
    def busy(self) -> np.ndarray:
        """(E,) resource-unit seconds used per server."""
        return self.state.busy[0]

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
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        gym.Env.reset(self, seed=seed)  # the episode is drawn below, not by EdgeEnv.reset
        self.state = self.dynamics.initial(self.params, [self.np_random])
        return self._obs(), self._info({})

    def _advance(self) -> None:
        """Pick the next epoch (see the class docstring)."""
        self.dynamics.advance(self.params, self.state, 0)

    @property
    def now(self) -> float:
        """Time of the current epoch (the last one after the episode ends)."""
        return self.dynamics.now(self.params, self.state, 0)

    def model_accuracy(self, t: float) -> np.ndarray:
        """(models,) accuracy of every model at time t (linear drift to a floor)."""
        return self.dynamics.model_accuracy(self.params, self.state, 0, t)

    def _task_acc(self, app: DAGApp, t: float) -> tuple[np.ndarray, np.ndarray]:
        return self.dynamics.task_acc(self.params, self.state, 0, app, t)

    def _data_fraction(self, idx: np.ndarray, t: float) -> np.ndarray:
        """(V, H) fraction of each configuration's data the model's pool holds (1 without
        pools): a retraining uses ``min(b_h, pool)`` and its cost and gain scale with it."""
        return self.dynamics.data_fraction(self.params, self.state, 0, idx, t)

    def task_options(self, app: DAGApp, t: float) -> list[list[RetrainOption]]:
        """Per task, the configurations as they would run now (data and workload scaled by
        the pool of drifted samples; workload 0 when the pool is empty)."""
        return self.dynamics.task_options(self.params, self.state, 0, app, t)

    def sim_state(self) -> DAGSnapshot:
        """The current epoch's request and the live cluster, for baselines."""
        ep = self.epoch
        if ep is None:
            raise RuntimeError("the episode has ended; call reset()")
        if ep.kind == "admit":
            arr = self.dynamics.arriving(self.params, self.state, 0)
            app, a, now, after = arr.app, arr.app_index, arr.acc_now, arr.acc_after
            opts, sched = arr.options, None
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
    #: What one action holds (appended to the message of a malformed action).
    action_help = (
        " (entry 0: server of the presented node; then per task: 0 = no retraining, "
        "1 + configuration)"
    )

    def action_masks(self) -> np.ndarray:
        """Flat mask over the ``MultiDiscrete`` entries (see the class docstring)."""
        if self.state is None:
            return self.dynamics.idle_mask(self.params)
        return self.dynamics.mask_row(self.params, self.state, 0).copy()

    def project(self, action: Any) -> tuple[int, list[int]]:
        """Applied ``(server, retraining choices)`` for ``action`` at the current epoch."""
        a = check_action(self.action_space, action, hint=self.action_help)
        return self.dynamics.project(self.params, self.state, a[None])[0]

    def step(self, action: Any) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        if self.epoch is None:
            raise RuntimeError("call reset() before step() (and after the episode ends)")
        a = check_action(self.action_space, action, hint=self.action_help)
        self.state, rec = self.dynamics.step(self.params, self.state, a[None])
        terms = {name: float(v[0]) for name, v in rec.terms.items()}
        reward = float(weighted_reward(rec.terms, self.params.term_weights)[0])
        terminated = self.epoch is None
        row = rec.info
        info = self._info(
            {
                "epoch": str(row["epoch"][0]),
                "request": int(row["request"][0]),
                "reward_terms": terms,
                "utilisation": row["utilisation"][0].tolist(),
                **step_info(rec, 0),
            }
        )
        if terminated:
            info["episode_metrics"] = self.dynamics.metrics(self.params, self.state, 0)
        return self._obs(), reward, terminated, False, info

    # ------------------------------------------------------------------ views
    def _obs(self) -> dict[str, np.ndarray]:
        obs = self.dynamics.observation(self.params, self.state)
        return {k: v[0] for k, v in obs.items()}

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
            f"pending {len(self.pending)}, completed {self.completed}"
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
        done = self.completed
        mean = f"{float(self.state.total_completion[0]) / done:.2f} s" if done else "-"
        requests = Panel(
            f"requests of {self.n_requests} (mean completion {mean})",
            ["admitted", "pending", "completed"],
            [Series("requests", [self._next, len(self.pending), done], ["C0", "C1", "C2"])],
        )
        return title, [servers, requests]

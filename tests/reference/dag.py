"""The DAG family's dynamics over per-env Python objects: the slow, obviously-correct oracle the
array dynamics (:mod:`edgegym.families.dag.dynamics`, which both the single and the vector env
run) is tested against step by step (``tests/envs/test_dag_reference.py``). Each env is an
:class:`~edgegym.families.dag.cluster.EdgeCluster` with :class:`Pending` requests and finished
schedules, stepped one env after the other: Algorithm 3 written as the paper reads. Both compute
every float with the same operations in the same order, so they agree bit for bit."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from edgegym.core.dynamics import Record
from edgegym.families.dag.cluster import EdgeCluster, RequestSchedule, list_order, priorities
from edgegym.families.dag.episode import (
    DAGDynamicsBase,
    EpisodeStart,
    episode_start,
    pool_fraction,
)
from edgegym.families.dag.graph import DAGApp, RetrainOption, extend_with_retraining
from edgegym.families.dag.observation import SERVER_FEATURES, tables
from edgegym.families.dag.params import DAGParams
from edgegym.families.dag.snapshot import Epoch

__all__ = ["Arriving", "ObjectDAGDynamics", "ObjectDAGState", "Pending"]


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


@dataclass
class ObjectDAGState(EpisodeStart):
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


class ObjectDAGDynamics(DAGDynamicsBase):
    """The DAG family's :class:`~edgegym.core.dynamics.Dynamics` over per-env Python objects: each
    env's :class:`~edgegym.families.dag.cluster.EdgeCluster` and :class:`Pending` requests, stepped
    one env after the other; the reference the array
    :class:`~edgegym.families.dag.dynamics.DAGDynamics` is checked against.

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
        clusters, common = episode_start(p, rngs)
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
        return pool_fraction(params, state, i, idx, t)

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
        return tables(
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

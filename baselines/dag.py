"""List scheduling (Algorithm 1), SRS (Algorithm 2) and MRS (Algorithm 3) with retraining.

From "Online Scheduling of Edge Multiple-Model Inference with DAG Structure and Retraining"
(Zeng et al., INFOCOM'25; seed 004). Functions operate on the simulation core
(:class:`edgegym.families.dag.cluster.EdgeCluster`). The policies read
``env.unwrapped.sim_state()`` (:class:`edgegym.families.dag.snapshot.DAGSnapshot`), built from
the environment's array state: ``snap.cluster`` is an :class:`EdgeCluster` with the servers'
timelines as they are (a copy), ``snap.schedule`` the presented request's extended DAG with its
placements so far.

* Priority (Eq. 10): ``phi(i) = max_{i' in suc(i)} (t_exe(i) + t_trans_max(i, i') + phi(i'))``
  with ``t_exe`` the mean execution time over servers and ``t_trans_max`` the transfer over the
  slowest link; an exit task has ``phi = t_exe``.
* Algorithm 1: tasks in decreasing priority; each goes to the server with the earliest finish
  time (Eq. 5-7) given the tasks already placed.
* Algorithm 2 (SRS), as written (``always=True, chain=True``, the default): Algorithm 1 on the
  inference DAG (line 1) gives each task its server ``j*``; the DAG becomes a single chain in
  topological order (line 2, :func:`~edgegym.families.dag.graph.chain_dag`), so each task has one
  predecessor ``i'`` (its server ``j'*``); every task gets a retraining node with the
  configuration of least ``Delta P`` (Eq. 11) (lines 3-6); Algorithm 1 schedules the extended
  DAG (line 7).
* edgegym's variant (``always=False, chain=False``): ``Delta P`` with the task's DAG
  predecessors (their data summed, sent over the slowest of their links) and a node only where
  it lowers the objective (``Delta P < 0``) or the model is below ``A_min``.
* Algorithm 3 (MRS): Algorithm 2's configurations at each arrival (either rule); the head task
  (of all pending requests' priority lists) that can start earliest goes to its
  earliest-finish server.

Policies for ``edgegym/DAGOffload-v0``: ``mrs`` answers the environment's epochs as Algorithm 3
does; the per-request schedulers (``list``, ``srs``, ``pass``, ``ekya-dag``, ``adainf``) plan a
request at its arrival and replay the plan (:class:`PlannedDAGPolicy`). ``srs`` and ``mrs`` take
``always`` and ``chain`` (``mrs:always=false,chain=false`` is edgegym's variant).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from edgegym.baselines.base import Policy
from edgegym.families.dag.cluster import EdgeCluster, RequestSchedule, list_order, priorities
from edgegym.families.dag.graph import DAGApp, chain_dag, extend_with_retraining, option_for

__all__ = [
    "AdaInfPolicy",
    "EkyaDAGPolicy",
    "ListPolicy",
    "MRSPolicy",
    "PASSPolicy",
    "PlannedDAGPolicy",
    "SRSPolicy",
    "delta_p",
    "earliest_finish_server",
    "list_order",
    "list_schedule",
    "mrs_schedule",
    "priorities",
    "srs_choices",
    "srs_schedule",
]


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
    sched = RequestSchedule(app, arrival)
    for i in list_order(app, cluster):
        if servers is not None:
            cluster.place(sched, i, int(servers[i]))
            continue
        finishes = [cluster.finish_on(sched, i, j)[1] for j in range(cluster.n)]
        cluster.place(sched, i, int(np.argmin(finishes)))
    return sched


def delta_p(
    cluster: EdgeCluster,
    app: DAGApp,
    base: RequestSchedule,
    i: int,
    opt: Any,
    acc_now: float,
    acc_after: float,
    theta: float,
    chain: bool = True,
) -> float:
    """Eq. 11: the change of the objective when task ``i`` gets a retraining node with
    configuration ``opt`` = ``u_h``, priced on the schedule ``base`` of the inference DAG::

        Delta P(i, h) = n_h / (o_h S_j*) + (d^{i',i} + d(m^i)) / D_{j'*, j*} + b_h / D_j*
                        + theta (a^i - f(u_h, m^i))

    ``j*`` is task ``i``'s server in ``base``. With ``chain`` (Algorithm 2 as written), ``app``
    is the chain of line 2 (:func:`~edgegym.families.dag.graph.chain_dag`): ``i'`` is task ``i``'s
    one predecessor there and ``j'*`` its server (the chain's first task has none: ``j'* = j*``, no
    transfer). Without it (edgegym's variant), ``app`` is the DAG, ``d^{i',i}`` the sum over
    ``i``'s predecessors and ``j'*`` the one of their servers with the smallest ``link[s, j*]``
    entry (the slowest link; a predecessor on ``j*`` compares by the matrix's unused diagonal
    and then transfers nothing), as edgegym's first version priced it.
    ``D_j*`` is the storage cluster's link to ``j*`` (the training data ``b_h`` comes from
    storage).

    Args:
        cluster: The servers (speeds, links; not modified).
        app: The chain (``chain=True``) or the inference DAG, as ``base`` was scheduled.
        base: Algorithm 1's schedule of the inference DAG (line 1).
        i: The task.
        opt: The configuration (``data_mb`` = b_h, ``workload`` = n_h, ``demand`` = o_h).
        acc_now: ``a^i``, the accuracy of task ``i``'s model now.
        acc_after: ``f(u_h, m^i)``, its accuracy after the retraining.
        theta: Weight of accuracy in the objective.
        chain: ``app`` is the chain (one predecessor per task).
    """
    j = base.tasks[i].server
    preds = app.preds(i)
    if chain and len(preds) > 1:
        raise ValueError(f"{app.name}: task {i} has {len(preds)} predecessors; not a chain")
    into = sum(d for _, d in preds) + float(app.model_mb[i])
    src = min((base.tasks[u].server for u, _ in preds), key=lambda s: cluster.link[s, j], default=j)
    return (
        opt.workload / (opt.demand * cluster.speed[j])
        + cluster.transfer(into, src, j)
        + opt.data_mb / cluster.storage[j]
        + theta * (acc_now - acc_after)
    )


def srs_choices(
    cluster: EdgeCluster,
    app: DAGApp,
    arrival: float,
    acc_now: np.ndarray,
    acc_after: np.ndarray,
    options: Sequence[Any],
    theta: float,
    a_min: float = 0.0,
    always: bool = True,
    chain: bool = True,
) -> list[int]:
    """Algorithm 2's retraining configuration per task, lines 1-6 (-1 for none).

    Line 1 schedules the inference DAG with Algorithm 1 on a copy of the cluster; each task's
    candidates are the configurations with data to retrain on (a non-empty pool) whose result
    meets ``A_min`` (Eq. 9d), priced by :func:`delta_p` (Eq. 11). As written (``always=True,
    chain=True``): line 2 turns the DAG into a chain in topological order, and every task gets
    its least-Delta-P candidate (lines 3-6). ``chain=False`` prices the node on the DAG's
    predecessors instead; ``always=False`` keeps a node only where ``Delta P < 0`` or the
    model is below ``A_min``; both off is edgegym's variant.

    Args:
        cluster: Servers (not modified).
        app: The inference DAG.
        arrival: Arrival time.
        acc_now: (V,) accuracy of each task's model now (``a_i``).
        acc_after: (V, H) accuracy after retraining with each option (``f(u_h, m_i)``).
        options: The configurations (one list, or one per task).
        theta: Weight of accuracy in the objective.
        a_min: Accuracy floor; a model below it is retrained with its least-Delta-P candidate.
        always: Add the least-Delta-P node for every task with a candidate (Algorithm 2);
            ``False``: only where ``Delta P < 0`` or A_min forces it.
        chain: Price the nodes on the chain of line 2 (Algorithm 2); ``False``: on the DAG.

    Returns:
        (V,) option index per task.
    """
    base = list_schedule(cluster.copy(), app, arrival)
    priced = chain_dag(app) if chain else app
    choice = []
    for i in range(app.n):
        best, best_h = 0.0, -1
        for h in range(acc_after.shape[1]):
            opt = option_for(options, i, h)
            if opt.workload <= 0 or acc_after[i, h] < a_min:
                continue  # nothing to retrain on (empty pool), or below A_min (Eq. 9d)
            dp = delta_p(cluster, priced, base, i, opt, acc_now[i], acc_after[i, h], theta, chain)
            if best_h < 0 or dp < best:
                best, best_h = dp, h
        must = acc_now[i] < a_min
        choice.append(best_h if best_h >= 0 and (always or best < 0 or must) else -1)
    return choice


def srs_schedule(
    cluster: EdgeCluster,
    app: DAGApp,
    arrival: float,
    acc_now: np.ndarray,
    acc_after: np.ndarray,
    options: Sequence[Any],
    theta: float,
    a_min: float = 0.0,
    always: bool = True,
    chain: bool = True,
    schedule_chain: bool = False,
) -> tuple[RequestSchedule, list[int]]:
    """Algorithm 2 end to end: choose the retraining nodes (:func:`srs_choices`), extend the
    DAG (Fig. 7) and list-schedule it (line 7; the cluster is updated).

    Line 7 schedules "the extended DAG". edgegym reads it as the request's DAG with the
    retraining nodes (the default): the chain of line 2 is what Eq. 11's single predecessor
    ``i'`` needs, and Algorithm 3 schedules the request's DAG too. ``schedule_chain=True``
    takes the other reading, the extended chain (every task after the one before it in
    topological order: no two tasks of the request run side by side).
    """
    choice = srs_choices(
        cluster, app, arrival, acc_now, acc_after, options, theta, a_min, always, chain
    )
    ext = extend_with_retraining(chain_dag(app) if schedule_chain else app, choice, options)
    return list_schedule(cluster, ext, arrival), choice


# --------------------------------------------------------------------------- policies
def _forced(snap) -> list[int]:
    """Retraining only where the model is below A_min (cheapest option that reaches it)."""
    out = []
    for i in range(snap.app.n):
        if snap.acc_now[i] >= snap.a_min:
            out.append(-1)
            continue
        opts = snap.options[i]
        ok = [h for h in range(len(opts)) if snap.acc_after[i, h] >= snap.a_min]
        ok = [h for h in ok if opts[h].workload > 0]
        out.append(min(ok, key=lambda h: opts[h].workload) if ok else -1)
    return out


def _admit_action(snap, choice: Sequence[int]) -> np.ndarray:
    """The environment's action for an admit epoch with retraining ``choice``."""
    out = np.zeros(1 + snap.max_nodes, dtype=np.int64)
    for i, c in enumerate(choice):
        out[1 + i] = c + 1
    return out


def _place_action(snap, server: int) -> np.ndarray:
    out = np.zeros(1 + snap.max_nodes, dtype=np.int64)
    out[0] = server
    return out


def earliest_finish_server(snap) -> int:
    """The server where the presented node finishes first (Eq. 5-7; Alg. 1 and 3's rule)."""
    finishes = [
        snap.cluster.finish_on(snap.schedule, snap.node, j)[1] for j in range(snap.cluster.n)
    ]
    return int(np.argmin(finishes))


class PlannedDAGPolicy(Policy):
    """A per-request scheduler: at a request's arrival it chooses the retraining configurations
    (:meth:`choose`) and list-schedules the extended DAG on a copy of the cluster
    (Algorithm 1); at the request's place epochs it sends each node to its planned server.

    The node then starts at its earliest feasible instant on that server, which can be later
    than planned when another request's node took the slot in between (the plan is made for
    the request alone, as SRS, PASS, Ekya and AdaInf schedule requests one at a time).
    """

    name = "planned"

    def __init__(self, env) -> None:
        super().__init__(env)
        self.plans: dict[int, np.ndarray] = {}

    def reset(self, seed: int | None = None) -> None:
        """Forget the plans."""
        self.plans = {}

    def choose(self, snap) -> list[int]:
        """Retraining option per task (-1: none) of the arriving request."""
        raise NotImplementedError

    def act(self) -> np.ndarray:
        """Plan at admit epochs, replay the plan at place epochs."""
        snap = self.unwrapped.sim_state()
        if snap.kind == "place":
            plan = self.plans.get(snap.k)
            if plan is None:  # not planned by this policy (e.g. created mid-episode)
                return _place_action(snap, earliest_finish_server(snap))
            if len(snap.schedule.tasks) + 1 == snap.schedule.app.n:
                del self.plans[snap.k]  # the request's last node
            return _place_action(snap, int(plan[snap.node]))
        choice = [c if c >= 0 else f for c, f in zip(self.choose(snap), _forced(snap), strict=True)]
        ext = extend_with_retraining(snap.app, choice, snap.options)
        sched = list_schedule(snap.cluster.copy(), ext, snap.time_s)
        self.plans[snap.k] = np.array([sched.tasks[i].server for i in range(ext.n)])
        return _admit_action(snap, choice)


class ListPolicy(PlannedDAGPolicy):
    """Algorithm 1 (list scheduling, earliest finish time); retrains only what A_min forces."""

    name = "list"

    def choose(self, snap) -> list[int]:
        """No retraining of its own."""
        return [-1] * snap.app.n


class SRSPolicy(PlannedDAGPolicy):
    """Algorithm 2 (SRS) per request: retraining configurations by Delta P (Eq. 11), then
    Algorithm 1 on the extended DAG, planned at the request's arrival.

    Args:
        env: A ``DAGOffload-v0`` environment.
        always: Add the least-Delta-P retraining node for every task with data to retrain on
            (Algorithm 2 as written, the default); ``False`` adds one only where Delta P < 0
            or A_min forces it.
        chain: Price the nodes on the chain of Algorithm 2's line 2 (the default); ``False``
            on the DAG's predecessors (with ``always=False``: edgegym's variant).
    """

    name = "srs"

    def __init__(self, env, always: bool = True, chain: bool = True) -> None:
        super().__init__(env)
        self.always = bool(always)
        self.chain = bool(chain)

    def choose(self, snap) -> list[int]:
        """Algorithm 2's choices."""
        return srs_choices(
            snap.cluster, snap.app, snap.time_s, snap.acc_now, snap.acc_after, snap.options,
            snap.theta, snap.a_min, self.always, self.chain,
        )  # fmt: skip


class MRSPolicy(SRSPolicy):
    """Algorithm 3 (MRS): Algorithm 2's retraining configurations at each arrival; each node
    the environment presents (the head that can start earliest across the pending requests'
    priority lists, Alg. 3 line 10) goes to the server where it finishes first (lines 11-13).

    Args:
        env: A ``DAGOffload-v0`` environment.
        always: As for :class:`SRSPolicy`.
        chain: As for :class:`SRSPolicy`.
    """

    name = "mrs"

    def act(self) -> np.ndarray:
        """Algorithm 2 at admit epochs, earliest finish time at place epochs."""
        snap = self.unwrapped.sim_state()
        if snap.kind == "place":
            return _place_action(snap, earliest_finish_server(snap))
        choice = [c if c >= 0 else f for c, f in zip(self.choose(snap), _forced(snap), strict=True)]
        return _admit_action(snap, choice)


class PASSPolicy(PlannedDAGPolicy):
    """PASS-style: priority list scheduling (no retraining logic of its own), configured as in
    the SRS paper to retrain every model periodically with the most accurate configuration.

    Args:
        env: A ``DAGOffload-v0`` environment.
        period_s: Retrain a model when its last retraining is at least this old.
    """

    name = "pass"

    def __init__(self, env, period_s: float = 120.0) -> None:
        super().__init__(env)
        self.period_s = float(period_s)

    def choose(self, snap) -> list[int]:
        """Periodic retraining with the most accurate configuration."""
        env = self.unwrapped
        choice = []
        for i, m in enumerate(snap.app.models):
            age = snap.time_s - env.base_time[env.model_index[m]]
            best = int(np.argmax(snap.acc_after[i]))
            useful = snap.options[i][best].workload > 0
            choice.append(best if age >= self.period_s and useful else -1)
        return choice


class EkyaDAGPolicy(PlannedDAGPolicy):
    """Ekya-style: greedily retrain with the configuration that maximises accuracy whenever it
    raises the model's accuracy by at least ``min_gain``; list scheduling for placement."""

    name = "ekya-dag"

    def __init__(self, env, min_gain: float = 0.05) -> None:
        super().__init__(env)
        self.min_gain = float(min_gain)

    def choose(self, snap) -> list[int]:
        """Max-accuracy retraining."""
        choice = []
        for i in range(snap.app.n):
            h = int(np.argmax(snap.acc_after[i]))
            gain = snap.acc_after[i, h] - snap.acc_now[i]
            useful = snap.options[i][h].workload > 0
            choice.append(h if gain >= self.min_gain and useful else -1)
        return choice


class AdaInfPolicy(PlannedDAGPolicy):
    """AdaInf-style: a fixed share of GPU time goes to (incremental) retraining; within that
    budget the task whose retraining has the largest impact (accuracy gain x requests that use
    it) is retrained with the cheapest configuration.

    Args:
        env: A ``DAGOffload-v0`` environment.
        budget: Fraction of the cluster's GPU time retraining may use.
    """

    name = "adainf"

    def __init__(self, env, budget: float = 0.1) -> None:
        super().__init__(env)
        self.budget = float(budget)
        self.spent = 0.0

    def reset(self, seed: int | None = None) -> None:
        """Forget the plans and the retraining time spent."""
        super().reset(seed)
        self.spent = 0.0

    def choose(self, snap) -> list[int]:
        """Impact-ordered incremental retraining within the GPU-time budget."""
        cheap = int(np.argmin([o.workload for o in snap.options[0]]))
        allowed = self.budget * snap.time_s * float(snap.cluster.capacity.sum())
        choice = [-1] * snap.app.n
        gains = snap.acc_after[:, cheap] - snap.acc_now
        uses = np.array([1 + len(snap.app.succs(i)) for i in range(snap.app.n)])
        i = int(np.argmax(gains * uses))
        opt = snap.options[i][cheap]
        cost = opt.workload / opt.demand  # GPU-seconds at speed 1
        if gains[i] > 0 and opt.workload > 0 and self.spent + cost <= allowed:
            choice[i] = cheap
            self.spent += cost
        return choice


def mrs_schedule(
    cluster: EdgeCluster,
    requests: Sequence[tuple[Any, ...]],
    options: Sequence[Any],
    theta: float,
    a_min: float = 0.0,
    always: bool = True,
    chain: bool = True,
) -> list[tuple[RequestSchedule, list[int]]]:
    """Algorithm 3 (MRS) over a set of requests (the cluster is updated).

    Each request ``(app, arrival, acc_now, acc_after)`` gets its retraining configurations from
    Algorithm 2 (line 3; :func:`srs_choices`, evaluated on the cluster as it is when the
    requests are admitted, in arrival order) and a task list of its extended DAG in decreasing
    Eq. 10 priority (lines 4-6). Then, repeatedly, the head task of every list forms the set H
    (line 9); the one that can start earliest (its inputs ready soonest; ties: earlier arrival,
    lower request index; line 10) is placed on the server where it finishes first (lines
    11-13), and removed from its list (lines 14-17).

    Args:
        cluster: The servers (updated with every placement).
        requests: ``(app, arrival, acc_now, acc_after)`` per request, or ``(app, arrival,
            acc_now, acc_after, options)`` where a request's configurations are its own (the
            environment scales them by the pools of drifted samples at its arrival).
        options: The configurations (one list, or one per task) of requests that bring none.
        theta: Weight of accuracy in the objective.
        a_min: Accuracy floor.
        always: Algorithm 2's rule, as in :func:`srs_choices`: ``always=True, chain=True`` is
            Algorithm 2 as written (the default), ``always=False, chain=False`` edgegym's
            variant.
        chain: As in :func:`srs_choices`.

    Returns:
        Per request (in input order): its schedule and its retraining choices.
    """
    order = sorted(range(len(requests)), key=lambda k: requests[k][1])
    lists: dict[int, list[int]] = {}
    scheds: dict[int, RequestSchedule] = {}
    choices: dict[int, list[int]] = {}
    for k in order:
        app, arrival, acc_now, acc_after, *own = requests[k]
        opts = own[0] if own else options
        choice = srs_choices(
            cluster, app, arrival, acc_now, acc_after, opts, theta, a_min, always, chain
        )
        ext = extend_with_retraining(app, choice, opts)
        choices[k] = choice
        scheds[k] = RequestSchedule(ext, arrival)
        lists[k] = list_order(ext, cluster)
    while lists:
        best = None
        for k, q in lists.items():
            s = scheds[k]
            i = q[0]
            ready = min(cluster.ready_time(s, i, j) for j in range(cluster.n))
            key = (ready, s.arrival, k)
            if best is None or key < best[0]:
                best = (key, k, i)
        _, k, i = best
        s = scheds[k]
        finishes = [cluster.finish_on(s, i, j)[1] for j in range(cluster.n)]
        cluster.place(s, i, int(np.argmin(finishes)))
        lists[k].pop(0)
        if not lists[k]:
            del lists[k]
    return [(scheds[k], choices[k]) for k in range(len(requests))]

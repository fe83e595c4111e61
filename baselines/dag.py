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
    "dag_work_bound",
    "delta_p",
    "earliest_finish_server",
    "list_order",
    "list_schedule",
    "mrs_schedule",
    "priorities",
    "srs_choices",
    "srs_schedule",
]


def dag_work_bound(nodes: int, servers: int, configurations: int) -> int:
    """The most evaluations a published DAG scheduler makes for one decision, counted (never
    timed): placements tried (:meth:`EdgeCluster.finish_on`, each a scan of one server's
    timeline) plus configurations priced (Eq. 11's :func:`delta_p`, or a baseline's rule).

    At an admit epoch: two list schedules of the inference DAG on a copy of the cluster (SRS's
    line 1; AdaInf's plan and its idle makespan), ``nodes * (servers + 1)`` each (every server
    tried, then the placement); at most two looks per task and configuration (whether it can
    retrain, then its price); and the plan of the
    extended DAG (at most two nodes per task). At a place epoch: one try per server (MRS's
    earliest finish). Bounded by ``4 V (E + 1) + 2 V H`` for V tasks, E servers, H
    configurations.
    """
    return 4 * nodes * (servers + 1) + 2 * nodes * configurations


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


def _baseline_arg(env, key: str, given: float | None, name: str) -> float:
    """A published scheduler's parameter: ``given``, else the scenario's ``baselines.<key>``
    (where its source is named), else the schema's default. ``given`` is checked against the
    range the schema declares for ``baselines.<key>`` (the one rule for both), so a bad value
    is refused when the policy is made, not mid-episode.

    Raises:
        ValueError: ``given`` is outside that range; the message names the policy's
            parameter ``name``, the range, the value and the field.
    """
    from edgegym.families.dag.schema import DAGBaselines
    from edgegym.workload.checks import check

    field = DAGBaselines.model_fields[key]
    if given is not None:
        try:
            return float(check(given, field.rebuild_annotation(), name))
        except ValueError as exc:
            raise ValueError(f"{exc} (the range of the scenario's baselines.{key})") from None
    sc = getattr(env, "scenario", None)
    section = sc.get("baselines") if sc is not None else None
    if section and key in section:
        return float(section[key])
    return float(field.default)


def _first_of_model(app: DAGApp) -> list[bool]:
    """(V,) whether task ``i`` is the first of the request's tasks to run its model (a model
    is retrained at most once per request)."""
    seen: set[str] = set()
    out = []
    for m in app.models:
        out.append(m not in seen)
        seen.add(m)
    return out


def _usable(options: Sequence[Any], acc_after: np.ndarray, i: int, a_min: float) -> list[int]:
    """Configurations task ``i`` can retrain with: data in the pool, a result at A_min."""
    return [
        h
        for h in range(acc_after.shape[1])
        if option_for(options, i, h).workload > 0 and acc_after[i, h] >= a_min
    ]


def pass_due(time_s: float, period_s: float, last_retrain_s: float) -> bool:
    """PASS as the SRS slides configure it: every model is retrained once per period. A
    model is due at ``time_s`` when its last retraining is older than the latest period
    boundary ``k period_s`` (k >= 1; the models are fresh at t = 0)."""
    k = int(np.floor(time_s / period_s + 1e-12))
    return k >= 1 and last_retrain_s < k * period_s


def pass_choices(
    app: DAGApp,
    time_s: float,
    acc_after: np.ndarray,
    options: Sequence[Any],
    last_retrain_s: Sequence[float],
    period_s: float,
    a_min: float = 0.0,
) -> list[int]:
    """PASS's retraining per task (-1: none): a due model (:func:`pass_due`) retrains with
    its most accurate configuration (the slides: "to reach the highest accuracy")."""
    out = []
    for i, first in enumerate(_first_of_model(app)):
        ok = _usable(options, acc_after, i, a_min)
        if first and ok and pass_due(time_s, period_s, float(last_retrain_s[i])):
            out.append(max(ok, key=lambda h: acc_after[i, h]))
        else:
            out.append(-1)
    return out


class PASSPolicy(PlannedDAGPolicy):
    """PASS [23 in the SRS slides]: priority-based DAG scheduling (each task's priority, then
    a server per task in priority order: Algorithm 1's rule, planned at the request's
    arrival). PASS has no retraining of its own; the slides configure it "to retrain all
    models periodically to reach the highest accuracy": every model is retrained once per
    ``period_s`` (at its first request after each period boundary), with its most accurate
    configuration (:func:`pass_choices`).

    Args:
        env: A ``DAGOffload-v0`` environment.
        period_s: The retraining period (s); ``None``: the scenario's
            ``baselines.pass_period_s``. Given, it must lie in that field's range.
    """

    name = "pass"

    def __init__(self, env, period_s: float | None = None) -> None:
        super().__init__(env)
        self.period_s = _baseline_arg(self.unwrapped, "pass_period_s", period_s, "period_s")

    def choose(self, snap) -> list[int]:
        """Periodic retraining with the most accurate configuration."""
        env = self.unwrapped
        last = [env.base_time[env.model_index[m]] for m in snap.app.models]
        return pass_choices(
            snap.app, snap.time_s, snap.acc_after, snap.options, last, self.period_s, snap.a_min
        )


def ekya_window_choices(
    cluster: EdgeCluster,
    app: DAGApp,
    time_s: float,
    acc_now: np.ndarray,
    acc_after: np.ndarray,
    options: Sequence[Any],
    decided: Sequence[bool],
    window_s: float,
    a_min: float = 0.0,
) -> list[int]:
    """Ekya's retraining per task (-1: none), once per retraining window.

    Ekya (NSDI'22, §4) decides every model's retraining at the start of each retraining
    window: its thief scheduler picks, for each retraining job, the configuration and the
    GPU share that maximise the inference accuracy averaged over the window, accuracy staying
    at the old model's until the retraining ends. Here a model's decision falls at its first
    request in the window (``decided[i]`` is False: the model has not been decided in this
    window); the configurations are the slides' ``u_h = (b_h, n_h, o_h)``, each with its
    resource ``o_h``, so picking one is picking the split. A configuration's retraining takes
    ``n_h / (o_h S)`` on the cluster's mean speed plus its data from storage (mean link); its
    window-averaged accuracy is ``(T a + (R - T) f(u_h)) / R`` over the ``R`` seconds left in
    the window. The best one is chosen if it beats not retraining.
    """
    w = int(np.floor(time_s / window_s + 1e-12))
    rest = (w + 1) * window_s - time_s
    speed = float(np.mean(cluster.speed))
    storage = float(np.mean(cluster.storage))
    out = []
    for i, first in enumerate(_first_of_model(app)):
        best, best_h = float(acc_now[i]), -1
        if first and not decided[i]:
            for h in _usable(options, acc_after, i, a_min):
                opt = option_for(options, i, h)
                t_r = opt.workload / (opt.demand * speed) + opt.data_mb / storage
                held = min(t_r, rest)
                avg = (held * acc_now[i] + (rest - held) * acc_after[i, h]) / rest
                if avg > best:
                    best, best_h = avg, h
        out.append(best_h)
    return out


class EkyaDAGPolicy(PlannedDAGPolicy):
    """Ekya [7 in the SRS slides] (NSDI'22): retraining decided per retraining window by the
    thief scheduler's rule (:func:`ekya_window_choices`: each model once per window, the
    configuration and resource of best window-averaged accuracy); Algorithm 1's placement,
    planned at the request's arrival (Ekya schedules one server's GPUs; the slides pair it
    with the same list placement as the other per-request baselines).

    Args:
        env: A ``DAGOffload-v0`` environment.
        window_s: The retraining window (s); ``None``: the scenario's
            ``baselines.ekya_window_s`` (Ekya §5: 200 s). Given, it must lie in that field's range.
    """

    name = "ekya-dag"

    def __init__(self, env, window_s: float | None = None) -> None:
        super().__init__(env)
        self.window_s = _baseline_arg(self.unwrapped, "ekya_window_s", window_s, "window_s")
        self.decided: dict[str, int] = {}  # model -> the last window it was decided in

    def reset(self, seed: int | None = None) -> None:
        """Forget the plans and the windows decided."""
        super().reset(seed)
        self.decided = {}

    def choose(self, snap) -> list[int]:
        """The window's decision for the models not decided yet in this window."""
        w = int(np.floor(snap.time_s / self.window_s + 1e-12))
        decided = [self.decided.get(m, -1) == w for m in snap.app.models]
        choice = ekya_window_choices(
            snap.cluster, snap.app, snap.time_s, snap.acc_now, snap.acc_after, snap.options,
            decided, self.window_s, snap.a_min,
        )  # fmt: skip
        for m in snap.app.models:
            self.decided[m] = w
        return choice


def _descendants(app: DAGApp) -> list[int]:
    """(V,) number of tasks downstream of each task."""
    below: list[set[int]] = [set() for _ in range(app.n)]
    for i in reversed(app.order):
        for u, _ in app.succs(i):
            below[i] |= {u} | below[u]
    return [len(b) for b in below]


def adainf_choices(
    cluster: EdgeCluster,
    app: DAGApp,
    time_s: float,
    acc_now: np.ndarray,
    acc_after: np.ndarray,
    options: Sequence[Any],
    slo_s: float,
    a_min: float = 0.0,
) -> list[int]:
    """AdaInf's incremental retraining for one request (-1: none).

    AdaInf (SIGCOMM'23; the SRS slides' summary): retraining runs before the request's
    inference ("incremental retraining"); the GPU time is split between retraining and
    inference to meet the request's SLO, and the retraining time among the retraining tasks
    by their impact degree. Here: Algorithm 1 plans the inference DAG alone on the cluster as
    it is; the slack ``slo_s`` minus that completion time is the retraining budget (none
    when it is not positive). A task's impact degree is the accuracy its best configuration
    gains times the tasks its output reaches (itself and its descendants); each task with
    impact gets the budget's share in proportion, and retrains with the most accurate
    configuration whose time fits its share: execution on the task's planned server, the
    training data from storage and the inputs and model it sends the task.
    """
    base = list_schedule(cluster.copy(), app, time_s)
    slack = slo_s - base.completion
    if slack <= 0:
        return [-1] * app.n
    down = _descendants(app)
    firsts = _first_of_model(app)
    usable = [_usable(options, acc_after, i, a_min) if firsts[i] else [] for i in range(app.n)]
    impact = np.zeros(app.n)
    for i, ok in enumerate(usable):
        if ok:
            gain = max(acc_after[i, h] for h in ok) - acc_now[i]
            impact[i] = max(0.0, gain) * (1 + down[i])
    total = impact.sum()
    if total <= 0:
        return [-1] * app.n
    off = ~np.eye(cluster.n, dtype=bool)
    slowest = float(np.min(cluster.link[off])) if cluster.n > 1 else float(cluster.link[0, 0])
    out = []
    for i, ok in enumerate(usable):
        share = slack * impact[i] / total
        j = base.tasks[i].server
        into = sum(d for _, d in app.preds(i)) + float(app.model_mb[i])
        fits = []
        for h in ok:
            opt = option_for(options, i, h)
            t_r = (
                cluster.exec_time(opt.workload, opt.demand, j)
                + opt.data_mb / cluster.storage[j]
                + into / slowest
            )
            if impact[i] > 0 and t_r <= share:
                fits.append(h)
        out.append(max(fits, key=lambda h: acc_after[i, h]) if fits else -1)
    return out


def idle_makespan(cluster: EdgeCluster, app: DAGApp) -> float:
    """Algorithm 1's completion time of ``app``'s inference DAG alone on idle servers."""
    c = cluster
    idle = EdgeCluster(c.speed, c.capacity, c.link, c.source, c.storage)
    return list_schedule(idle, app, 0.0).completion


class AdaInfPolicy(PlannedDAGPolicy):
    """AdaInf [8 in the SRS slides] (SIGCOMM'23): incremental retraining before inference,
    the GPU time split between retraining and inference to meet each request's SLO and the
    retraining time among the tasks by impact degree (:func:`adainf_choices`); Algorithm 1's
    placement, planned at the request's arrival.

    Args:
        env: A ``DAGOffload-v0`` environment.
        slo_factor: A request's SLO as a multiple of its inference DAG's makespan on idle
            servers (:func:`idle_makespan`); ``None``: the scenario's
            ``baselines.adainf_slo_factor``. Given, it must lie in that field's range.
    """

    name = "adainf"

    def __init__(self, env, slo_factor: float | None = None) -> None:
        super().__init__(env)
        self.slo_factor = _baseline_arg(
            self.unwrapped, "adainf_slo_factor", slo_factor, "slo_factor"
        )
        self._idle: dict[int, float] = {}  # application -> idle makespan (this episode)

    def reset(self, seed: int | None = None) -> None:
        """Forget the plans and the idle makespans (the servers are drawn per episode)."""
        super().reset(seed)
        self._idle = {}

    def choose(self, snap) -> list[int]:
        """Retraining within the request's SLO slack, split by impact degree."""
        a = snap.app_index
        if a not in self._idle:
            self._idle[a] = idle_makespan(snap.cluster, snap.app)
        return adainf_choices(
            snap.cluster, snap.app, snap.time_s, snap.acc_now, snap.acc_after, snap.options,
            self.slo_factor * self._idle[a], snap.a_min,
        )  # fmt: skip


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

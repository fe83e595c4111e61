"""Batched dynamics of the DAG-offload family (``edgegym/DAGOffload-v0``, SRS/MRS, INFOCOM'25).

The family's :class:`~edgegym.core.dynamics.Dynamics` (DESIGN §6, §8) over immutable
:class:`DAGParams` (everything a scenario fixes, precomputed once: the applications with their
predecessor and successor tables, the models' drift and pool rates, the retraining
configurations, the power of a resource unit): :class:`DAGDynamics` over :class:`DAGState`,
arrays only, run by the vector environment (:mod:`edgegym.families.dag.vector`, ``N`` envs) and
by the single environment (:class:`edgegym.families.dag.env.DAGOffloadEnv`, a batch of one).

The servers' capacity timelines are padded breakpoints
(:class:`~edgegym.families.dag.cluster.Timelines`; placement is
:func:`~edgegym.families.dag.cluster.earliest_starts` and
:func:`~edgegym.families.dag.cluster.commit` over all envs at once), the admitted requests still
being placed are ``Q`` padded slots per env (:class:`Requests`: each extended DAG's nodes,
priority queue, placements and head input times), and the epoch, mask and arriving request of
every env are arrays too. A step is a few hundred numpy calls whatever ``N``; Python loops only
over the admitted requests' (application, retrained tasks) pairs (a cached topological order) and
the step's lists of retrained tasks. The widths ``K`` and ``Q`` grow by doubling:
:meth:`DAGDynamics.observation` leaves a step's worth of room, so a step never changes them
(a vector env writes stepped sub-batches and fresh envs back into its state).

A batch of one (the single env, a vector env's sub-batches of one) takes Python-value paths
where numpy's per-call cost on tiny arrays would dominate: the next epoch, the head's input
times, the projection, the mask, the placement, the observation's gathers, and the timelines'
list rules (:func:`~edgegym.families.dag.cluster.earliest_start_row`,
:func:`~edgegym.families.dag.cluster.commit_row`, :func:`~edgegym.families.dag.cluster.forget_row`,
which :class:`~edgegym.families.dag.cluster.EdgeCluster` runs too), with the same float
operations as the batched paths.

The per-env object version of the same rules (each env an
:class:`~edgegym.families.dag.cluster.EdgeCluster` with its pending requests, Algorithm 3 as the
paper reads) is the oracle in ``tests/reference/dag.py``, tested equal bit for bit step by step
(``tests/envs/test_dag_reference.py``), as :class:`~edgegym.families.dag.cluster.EdgeCluster` is
for the timeline functions (``tests/sim/test_dag_timelines.py``): both compute every float with
the same operations in the same order (sums of a row as numpy sums it alone, Eq. 10 priorities
by relaxation over the same terms).

One decision epoch (see the env's docstring): **admit** request ``k`` with retraining choices
(models drift linearly to a floor from their last retraining; a pool of drifted samples grows
and empties at each retraining; a chosen configuration adds a retraining node to the request's
DAG), or **place** the head node of a pending request on a server at its earliest feasible
start (:meth:`~edgegym.families.dag.cluster.EdgeCluster.place`), paying its energy and the growth of
the request's latest finish.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from edgegym.core.dynamics import Record
from edgegym.families.dag.cluster import (
    Timelines,
    commit,
    earliest_start_row,
    earliest_starts,
    forget_before,
    priorities,
)
from edgegym.families.dag.episode import (
    DAGDynamicsBase,
    EpisodeStart,
    after_retraining,
    episode_start,
    pool_fraction,
)
from edgegym.families.dag.graph import DAGApp, topological_order
from edgegym.families.dag.observation import GLOBALS, NODE_FEATURES, SERVER_FEATURES, tables
from edgegym.families.dag.params import DAGParams

OVER, ADMIT, PLACE = 0, 1, 2  # DAGState.kind: the episode has ended, admit, place
_FIRST, _NONE = np.zeros(1, dtype=np.int64), np.zeros(0, dtype=np.int64)  # env sets of one env
_EPOCHS = np.array(["admit", "place"])  # info["epoch"] by `kind == PLACE`
_FIRST.setflags(write=False)
_NONE.setflags(write=False)


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
    choice: np.ndarray  # (N, Q, n) int16 retraining option of each task (-1: none)
    frac: np.ndarray  # (N, Q, n, H) data fraction of each option at the arrival
    start: np.ndarray  # (N, Q, X) start of each placed node
    server: np.ndarray  # (N, Q, X) int16 server of each placed node (-1: not placed)
    finish: np.ndarray  # (N, Q, X) finish of each placed node
    front: np.ndarray  # (N, Q) latest finish of the nodes placed so far (arrival before any)
    ready: np.ndarray  # (N, Q) earliest input time of queue[head] over the servers
    ready_on: np.ndarray  # (N, Q, E) input time of queue[head] on each server

    @classmethod
    def empty(cls, m: int, q: int, n: int, x: int, e: int, h: int) -> Requests:
        """``m`` envs with ``q`` free slots for ``x``-node extended DAGs of up to ``n`` tasks
        (``e`` servers, ``h`` retraining options)."""
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
            choice=np.full((m, q, n), -1, dtype=np.int16),
            frac=np.zeros((m, q, n, h)),
            start=np.zeros((m, q, x)),
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
class DAGState(EpisodeStart):
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


def _config_mask(
    params: DAGParams, state: DAGState, ix: np.ndarray | int, valid: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The retraining entries of the mask of the admit epochs of envs ``ix`` whose tasks are
    ``valid`` (..., n): "none" (..., n) and each option (..., n, H). An option needs data
    in the pool (its scaled workload > 0), a result at or above A_min and a server it fits
    on; "none" is masked where the model is below A_min and some option is allowed."""
    has_data = params.opt_work * state.frac[ix] > 0
    ok = (state.acc_after[ix] >= params.a_min) & has_data & params.opt_fits
    ok &= valid[..., None]
    none = ~valid | (state.acc_now[ix] >= params.a_min) | ~ok.any(axis=-1)
    return none, ok


class DAGDynamics(DAGDynamicsBase):
    """The DAG family's :class:`~edgegym.core.dynamics.Dynamics` over arrays: every step is a few
    numpy passes over all envs' timelines and pending requests (see the module docstring);
    the dynamics of the vector env and of the single env (a batch of one).

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
        clusters, common = episode_start(p, rngs)
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
            requests=Requests.empty(m, self.slots, n, p.n_ext, p.e, h),
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
        if len(rq.k) == 1:  # Python values for one env
            roomy = max(tl.size[0].tolist()) + 3 <= k and -1 in rq.k[0].tolist()
        else:
            roomy = tl.size.max() + 3 <= k and (rq.k < 0).any(axis=1).all()  # the usual case
        if not roomy:
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
            kind = int(state.kind[0])
            if kind == ADMIT:
                self._arriving(params, state, _FIRST)
            elif kind == PLACE:
                self._starts_one(params, state)
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
        epochs), as the arriving request would run now."""
        p = params
        k = state.k[ix]
        t = state.times[ix, k][:, None]  # (B, 1)
        idx = p.app_model[state.app_of[ix, k]]  # (B, n) model of each task
        r = ix[:, None]
        drift = p.m_drift[idx] * (t - state.base_time[r, idx])
        now = np.maximum(p.m_floor[idx], state.base_acc[r, idx] - drift)  # (B, n)
        state.frac[ix] = frac = pool_fraction(p, state, r, idx, t)  # (B, n, H)
        state.acc_now[ix] = now
        state.acc_after[ix] = after_retraining(p, idx, now, frac)

    def _masks(self, params: DAGParams, state: DAGState) -> np.ndarray:
        """(N, E + n (H + 1)) bool: every env's flat action mask (see the env's docstring)."""
        m, n, e, h = len(state.kind), params.n_nodes, params.e, len(params.options)
        out = np.zeros((m, e + n * (h + 1)), dtype=bool)
        out[:, 0] = True
        out[:, e :: h + 1] = True  # "no retraining" of every task
        srv, cfg = out[:, :e], out[:, e:].reshape(m, n, h + 1)  # views
        rq = state.requests
        if m == 1:  # Python indices (fancy indexing costs more on one row)
            kind = int(state.kind[0])
            if kind == PLACE:
                demand = rq.demand[0, int(state.slot[0]), int(state.node[0])]
                srv[0] = params.units >= demand - 1e-9  # every server has `units`
            elif kind == ADMIT:
                valid = params.app_valid[state.app_of[0, state.k[0]]]
                cfg[0, :, 0], cfg[0, :, 1:] = _config_mask(params, state, 0, valid)
            return out
        pi = np.flatnonzero(state.kind == PLACE)
        if pi.size:
            demand = rq.demand[pi, state.slot[pi], state.node[pi]]
            srv[pi] = params.units >= (demand - 1e-9)[:, None]  # every server has `units`
        ai = np.flatnonzero(state.kind == ADMIT)
        if ai.size:
            valid = params.app_valid[state.app_of[ai, state.k[ai]]]  # (B, n)
            cfg[ai, :, 0], cfg[ai, :, 1:] = _config_mask(params, state, ai, valid)
        return out

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
        order = self._ext_order(p, state, ix, a, retrained, node, workload, demand, size)
        # Into a free slot.
        s = (rq.k[ix] < 0).argmax(axis=1)
        rq.k[ix, s], rq.app[ix, s], rq.arrival[ix, s] = k, a, t
        rq.size[ix, s], rq.head[ix, s], rq.queue[ix, s] = size, 0, order
        rq.task[ix, s], rq.retrain[ix, s] = task, node
        rq.workload[ix, s], rq.demand[ix, s], rq.input_mb[ix, s] = workload, demand, input_mb
        rq.acc[ix, s], rq.acc_now[ix, s] = acc, now
        rq.choice[ix, s], rq.frac[ix, s] = choice, frac
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

    def _ext_order(
        self,
        p: DAGParams,
        state: DAGState,
        ix: np.ndarray,
        a: np.ndarray,
        retrained: np.ndarray,
        node: np.ndarray,
        workload: np.ndarray,
        demand: np.ndarray,
        size: np.ndarray,
    ) -> np.ndarray:
        """(B, X) the nodes of the admitted requests' extended DAGs (applications ``a``, tasks
        ``retrained`` (B, n) with retraining node ``node``, nodes' ``workload`` and ``demand``
        (B, X), ``size`` nodes) in decreasing Eq. 10 priority, for all the envs ``ix`` at once
        (one relaxation per level of the application's DAG); ties by topological position, as
        :func:`~edgegym.families.dag.cluster.list_order` orders them."""
        b, x_max = len(ix), p.n_ext
        rows, col = np.arange(b), np.arange(x_max)
        br, bc = np.nonzero(retrained)
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
        return np.lexsort((self._ext_positions(p, a, retrained), key), axis=1)

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
        if len(ix) == 1:  # numpy scalars: the same operations without fancy indexing
            ix, server = ix[0], server[0]
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
        rq.server[ix, s, x], rq.start[ix, s, x], rq.finish[ix, s, x] = server, start, finish
        # The completion term is paid as the request's latest finish moves (it telescopes to
        # the completion time at the last node), so each placement sees its own cost.
        front = rq.front[ix, s]
        grown = np.maximum(0.0, finish - front)
        rq.front[ix, s] = np.maximum(front, finish)
        rq.head[ix, s] += 1
        done = rq.head[ix, s] == rq.size[ix, s]
        if np.ndim(ix) == 0:  # back to a batch of one
            ix, s, grown, energy, done = (np.array([v]) for v in (ix, s, grown, energy, done))
        rq.ready[ix[~done], s[~done]] = np.nan  # the next head's input times: _heads()
        if not done.any():
            return grown, energy, done, (np.empty(0), np.empty(0), np.empty(0))
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
        if m == 1:  # no flatnonzero for one env
            pi, ai = (_FIRST, _NONE) if is_place[0] else (_NONE, _FIRST)
        else:
            pi, ai = np.flatnonzero(is_place), np.flatnonzero(~is_place)
        if ai.size:
            accuracy[ai], acc_mean[ai] = self._admit(params, state, ai, choice[ai])
            rows, tasks = np.nonzero(choice[ai] >= 0)
            ends = np.searchsorted(rows, np.arange(ai.size), side="right").tolist()
            tasks = tasks.tolist()
            for r, (i, end) in enumerate(zip(ai.tolist(), ends, strict=True)):
                retrained[i] = tasks[ends[r - 1] if r else 0 : end]
        if pi.size:
            grown, joules, done, ended = self.place(params, state, pi, server[pi])
            if done.any():
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
                "epoch": _EPOCHS[is_place.view(np.int8)],  # np.where on strings is slow
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
        if len(state.kind) == 1:
            return self._observation_one(params, state)
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
        return tables(
            params, state, t, app, acc, acc_now, phi, placed, cur, cur_r, servers, admit, pending
        )

    def _observation_one(self, params: DAGParams, state: DAGState) -> dict[str, np.ndarray]:
        """:meth:`observation` of a batch of one: what it gathers, read with Python indices
        and slices (the same values; numpy's fancy indexing costs more on one row)."""
        n, rq = params.n_nodes, state.requests
        t = self.now(params, state, 0)
        kind = int(state.kind[0])
        a, cur, cur_r = -1, -1, -1
        acc = acc_now = state.acc_now  # admit epochs (and unused after the end)
        placed = np.zeros((1, n), dtype=bool)
        servers = np.zeros((1, params.e, SERVER_FEATURES), dtype=np.float32)
        servers[0, :, 2] = np.maximum(0.0, state.timelines.last()[0] - t)
        if kind == ADMIT:
            a = int(state.app_of[0, state.k[0]])
        elif kind == PLACE:
            s, x = int(state.slot[0]), int(state.node[0])
            a = int(rq.app[0, s])
            acc, acc_now = rq.acc[:, s], rq.acc_now[:, s]
            w = min(n, params.n_ext)  # the tasks (< V) are in both
            placed[0, :w] = rq.server[0, s, :w] >= 0
            if x < params.app_n[a]:
                cur = x  # presented inference node
            else:
                cur_r = int(rq.task[0, s, x])  # task whose model the presented node retrains
            # Seconds the presented node would finish on each server after its earliest finish.
            duration = rq.workload[0, s, x] / (rq.demand[0, s, x] * state.speed[0])
            fin = state.start_on[0] + duration
            servers[0, :, 4] = fin - fin.min()
        phi = state.app_phi[:, max(a, 0)]
        pending = [np.count_nonzero(rq.k[0] >= 0) / 10.0]
        self._reserve(state)
        return tables(
            params, state, np.array([t]), np.array([a]), acc, acc_now, phi, placed,
            np.array([cur]), np.array([cur_r]), servers, [kind == ADMIT], pending,
        )  # fmt: skip

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
    "DAGDynamics",
    "DAGState",
    "Requests",
]

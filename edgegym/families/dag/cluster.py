"""Edge servers running DAG tasks: capacity timelines, transfers, earliest-start placement.

The core of the DAG-offload family (SRS/MRS, INFOCOM'25). A task of workload ``w`` and demand
``c`` runs on server ``j`` for ``w / (c S_j)`` seconds (Eq. 5) and holds ``c`` of the server's
``C_j`` resource units; at no instant may a server's running tasks hold more than ``C_j``
(Eq. 8). It may start once every predecessor has finished and its data has arrived
(``d / D_{j',j}``, Eq. 6-7; the same server transfers instantly) and, for its inputs from the
controller (a request's data) and from the storage cluster (a retraining node's training data),
once ``d_0 / D_j`` has elapsed after the request arrived, each over its own link (the slides'
testbed: controller-server 3-5 Gbps like server-server, storage-server 7-10 Gbps).
:meth:`EdgeCluster.place` puts a task at the earliest such instant on a server (the insertion
policy of list scheduling: a gap in the timeline is used when the whole task fits in it).

:class:`Timelines` holds the same step functions for many envs at once, padded to a common
width, and :func:`earliest_starts`, :func:`commit` and :func:`forget_before` are
:meth:`EdgeCluster.earliest_start`, :meth:`EdgeCluster.commit` and
:meth:`EdgeCluster.forget_before` over all of them in a few numpy passes, with the same float
operations (so the same results, bit for bit). :class:`EdgeCluster` stays the one-env
reference (and what the single env and baselines plan on).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

import numpy as np

from edgegym.families.dag.graph import DAGApp

__all__ = [
    "EdgeCluster",
    "Placement",
    "RequestSchedule",
    "Timelines",
    "commit",
    "commit_one",
    "commit_row",
    "earliest_start_row",
    "earliest_starts",
    "forget_before",
    "forget_row",
    "list_order",
    "priorities",
]

_SHORT = 8  # columns earliest_starts scans in every row (rows that need more: a second pass)


@dataclass
class Placement:
    """Where and when one task runs."""

    server: int
    start: float
    finish: float


@dataclass
class RequestSchedule:
    """The placements of one request's (extended) DAG."""

    app: DAGApp
    arrival: float
    tasks: dict[int, Placement] = field(default_factory=dict)

    @property
    def completion(self) -> float:
        """Latest finish minus arrival (the request's completion time)."""
        return max(p.finish for p in self.tasks.values()) - self.arrival


class EdgeCluster:
    """E edge servers with speeds, capacities and links.

    Args:
        speed: (E,) GPU speed of each server (workload units per second per resource unit).
        capacity: (E,) resource units of each server.
        link_mb_s: (E, E) server-to-server bandwidth in MB/s (the diagonal is ignored).
        source_mb_s: (E,) bandwidth from the controller to each server, MB/s (a request's
            input data, ``input_mb``).
        storage_mb_s: (E,) bandwidth from the storage cluster to each server, MB/s (a
            retraining node's training data, ``storage_mb``); ``None``: ``source_mb_s`` (one
            rate for both).
    """

    def __init__(
        self,
        speed: np.ndarray,
        capacity: np.ndarray,
        link_mb_s: np.ndarray,
        source_mb_s: np.ndarray,
        storage_mb_s: np.ndarray | None = None,
    ) -> None:
        self.speed = np.asarray(speed, dtype=float)
        self.capacity = np.asarray(capacity, dtype=float)
        self.link = np.asarray(link_mb_s, dtype=float)
        self.source = np.asarray(source_mb_s, dtype=float)
        self.storage = self.source if storage_mb_s is None else np.asarray(storage_mb_s, float)
        e = self.speed.size
        if (
            self.capacity.shape != (e,)
            or self.link.shape != (e, e)
            or self.source.shape != (e,)
            or self.storage.shape != (e,)
        ):
            raise ValueError(
                "speed, capacity, link_mb_s, source_mb_s and storage_mb_s must describe E servers"
            )
        if np.any(self.speed <= 0) or np.any(self.capacity <= 0):
            raise ValueError("server speeds and capacities must be > 0")
        # Per server: sorted breakpoints and the resource units in use from each one on.
        self.times: list[list[float]] = [[0.0] for _ in range(e)]
        self.used: list[list[float]] = [[0.0] for _ in range(e)]

    @property
    def n(self) -> int:
        """Servers."""
        return self.speed.size

    def copy(self) -> EdgeCluster:
        """Independent copy (timelines included), for what-if evaluation."""
        out = EdgeCluster(self.speed, self.capacity, self.link, self.source, self.storage)
        out.times = [list(t) for t in self.times]
        out.used = [list(u) for u in self.used]
        return out

    def exec_time(self, workload: float, demand: float, j: int) -> float:
        """``w / (c S_j)`` (Eq. 5)."""
        return float(workload) / (float(demand) * float(self.speed[j]))

    def transfer(self, mb: float, src: int, dst: int) -> float:
        """Seconds to move ``mb`` from server ``src`` to ``dst`` (0 on the same server)."""
        if src == dst or mb <= 0:
            return 0.0
        return float(mb) / float(self.link[src, dst])

    def ready_time(self, sched: RequestSchedule, i: int, j: int) -> float:
        """Earliest instant task i's inputs are all on server j (Eq. 6-7): its data from the
        controller and from storage (each over its own link, from the request's arrival) and
        every predecessor's output."""
        app = sched.app
        t = sched.arrival
        if app.input_mb[i] > 0:
            t = max(t, sched.arrival + float(app.input_mb[i]) / float(self.source[j]))
        if app.storage_mb[i] > 0:
            t = max(t, sched.arrival + float(app.storage_mb[i]) / float(self.storage[j]))
        for u, d in app.preds(i):
            p = sched.tasks[u]
            t = max(t, p.finish + self.transfer(d, p.server, j))
        return t

    def earliest_start(self, j: int, ready: float, duration: float, demand: float) -> float:
        """Earliest ``t >= ready`` with ``demand`` units free on server j for ``duration``."""
        if demand > self.capacity[j] + 1e-9:
            return float("inf")
        cap = float(self.capacity[j]) - float(demand) + 1e-9
        return earliest_start_row(self.times[j], self.used[j], cap, ready, duration)

    def finish_on(self, sched: RequestSchedule, i: int, j: int) -> tuple[float, float]:
        """``(start, finish)`` task i would get on server j now."""
        app = sched.app
        dur = self.exec_time(app.workload[i], app.demand[i], j)
        start = self.earliest_start(j, self.ready_time(sched, i, j), dur, app.demand[i])
        return start, start + dur

    def commit(self, j: int, start: float, finish: float, demand: float) -> None:
        """Reserve ``demand`` units on server j over ``[start, finish)``."""
        commit_row(self.times[j], self.used[j], start, finish, float(demand))

    def place(self, sched: RequestSchedule, i: int, j: int) -> Placement:
        """Put task i of ``sched`` on server j at its earliest feasible start and record it."""
        start, finish = self.finish_on(sched, i, j)
        self.commit(j, start, finish, float(sched.app.demand[i]))
        p = Placement(j, start, finish)
        sched.tasks[i] = p
        return p

    def forget_before(self, t: float) -> None:
        """Drop timeline breakpoints before ``t`` (keeping the usage in force at ``t``).

        Safe once no task can start before ``t`` any more; keeps the timelines short over long
        online runs (placement cost grows with the breakpoints after a task's ready time).
        """
        for j in range(self.n):
            kept = forget_row(self.times[j], self.used[j], t)
            if kept is not None:
                self.times[j], self.used[j] = kept

    def usage_at(self, j: int, t: float) -> float:
        """Resource units in use on server j at time t."""
        k = bisect.bisect_right(self.times[j], t) - 1
        return float(self.used[j][max(k, 0)])


def earliest_start_row(
    times: list[float], used: list[float], limit: float, ready: float, duration: float
) -> float:
    """Earliest ``t >= ready`` for a task of ``duration`` on one server's timeline (sorted
    breakpoints ``times``, units ``used`` from each on) where no segment it overlaps holds
    more than ``limit`` units (capacity minus the task's demand, plus 1e-9). The rule of
    :meth:`EdgeCluster.earliest_start`, also what the array dynamics runs for one env."""
    # Candidate starts: ready, and every breakpoint after it (usage only drops there).
    cands = [ready] + [t for t in times if t > ready]
    for s in cands:
        end = s + duration
        k = bisect.bisect_right(times, s) - 1
        ok = True
        while k < len(times) and (k < 0 or times[k] < end - 1e-12):
            if used[max(k, 0)] > limit:
                ok = False
                break
            k += 1
        if ok:
            return s
    return float("inf")  # pragma: no cover - the last breakpoint always has usage 0


def commit_row(
    times: list[float], used: list[float], start: float, finish: float, demand: float
) -> None:
    """Reserve ``demand`` units over ``[start, finish)`` on one server's timeline (in place):
    :meth:`EdgeCluster.commit`'s rule, also what the array dynamics runs for one env."""
    for t in (start, finish):
        k = bisect.bisect_right(times, t) - 1
        if abs(times[k] - t) > 1e-12:
            times.insert(k + 1, t)
            used.insert(k + 1, used[k])
    for k, t in enumerate(times):
        if start - 1e-12 <= t < finish - 1e-12:
            used[k] += demand


def forget_row(
    times: list[float], used: list[float], t: float
) -> tuple[list[float], list[float]] | None:
    """One server's timeline without its breakpoints before ``t`` (the usage in force at
    ``t`` starts at ``t``), or ``None`` when nothing goes: :meth:`EdgeCluster.forget_before`'s
    rule, also what the array dynamics runs for one env."""
    k = bisect.bisect_right(times, t) - 1
    if k <= 0:
        return None
    return [t, *times[k + 1 :]], used[k:]


def priorities(app: DAGApp, cluster: EdgeCluster) -> np.ndarray:
    """(V,) priorities of Eq. 10: ``phi(i) = max_{i' in suc(i)} (t_exe(i) + t_trans_max(i, i')
    + phi(i'))`` with the mean execution time over servers and the slowest link; an exit task
    has ``phi = t_exe(i)``. A predecessor always outranks its successors."""
    mean_exe = np.array(
        [np.mean(app.workload[i] / (app.demand[i] * cluster.speed)) for i in range(app.n)]
    )
    off = ~np.eye(cluster.n, dtype=bool)
    slowest = float(np.min(cluster.link[off])) if cluster.n > 1 else 1.0
    phi = np.zeros(app.n)
    for i in reversed(app.order):
        phi[i] = mean_exe[i] + max((d / slowest + phi[v] for v, d in app.succs(i)), default=0.0)
    return phi


def list_order(app: DAGApp, cluster: EdgeCluster) -> list[int]:
    """Tasks in decreasing priority (ties: topological position), a valid execution order."""
    phi = priorities(app, cluster)
    pos = {v: k for k, v in enumerate(app.order)}
    return sorted(range(app.n), key=lambda i: (-phi[i], pos[i]))


@dataclass
class Timelines:
    """The capacity timelines of ``E`` servers in each of ``N`` envs, padded to ``K``
    breakpoints: the arrays of :class:`EdgeCluster`'s ``times`` / ``used`` lists.

    Row ``(i, j)`` holds ``size[i, j]`` breakpoints; the columns after them hold ``+inf`` and
    0, and the last column is always such padding (the functions below rely on it).
    """

    time: np.ndarray  # (N, E, K) breakpoints, ascending, +inf after the last
    used: np.ndarray  # (N, E, K) resource units in use from each breakpoint on, 0 after the last
    size: np.ndarray  # (N, E) int64 breakpoints in use (>= 1)

    @classmethod
    def empty(cls, n: int, e: int, k: int) -> Timelines:
        """``n`` envs of ``e`` idle servers (one breakpoint at 0), ``k`` columns."""
        time = np.full((n, e, k), np.inf)
        time[:, :, 0] = 0.0
        return cls(time, np.zeros((n, e, k)), np.ones((n, e), dtype=np.int64))

    @property
    def width(self) -> int:
        """K, the padded number of columns."""
        return self.time.shape[2]

    def widen(self, k: int) -> None:
        """Pad every row to ``k`` columns (in place; ``k`` >= :attr:`width`)."""
        extra = k - self.width
        n, e, _ = self.time.shape
        self.time = np.concatenate([self.time, np.full((n, e, extra), np.inf)], axis=2)
        self.used = np.concatenate([self.used, np.zeros((n, e, extra))], axis=2)

    def last(self) -> np.ndarray:
        """(N, E) the last breakpoint of every server (when its last task finishes)."""
        rows = np.arange(self.size.size).reshape(self.size.shape) * self.width
        return self.time.ravel().take(rows + self.size - 1)


def _count_le(x: np.ndarray, v: np.ndarray) -> np.ndarray:
    """(...) how many entries of each row of ``x`` (..., W) are <= ``v`` (...): bisect_right
    on sorted rows (einsum sums short rows far faster than ``count_nonzero``)."""
    return np.einsum("...w->...", (x <= v[..., None]).view(np.uint8).astype(np.int32))


def earliest_starts(
    time: np.ndarray,
    used: np.ndarray,
    size: np.ndarray,
    capacity: float,
    ready: np.ndarray,
    duration: np.ndarray,
    demand: np.ndarray,
) -> np.ndarray:
    """:meth:`EdgeCluster.earliest_start` of one task per timeline row.

    A start ``s`` (``ready``, or a breakpoint after it) fails when a segment it would overlap
    (from the one holding ``s`` to the last that begins before ``s + duration - 1e-12``)
    holds more than ``capacity - demand + 1e-9``. The time the next such segment begins, at or
    after each column, is a running minimum from the right, so every candidate is checked at
    once and the first one that passes wins. Only the columns from the segment holding
    ``ready`` on matter, so each row is scanned from there (most rows need a few columns; the
    long ones get a second, wider pass).

    Args:
        time: (..., K) breakpoints of each row (+inf padding, the last column always padding).
        used: (..., K) units in use from each breakpoint on (0 padding).
        size: (...) int breakpoints in use per row.
        capacity: Units of every row's server.
        ready: (...) earliest start allowed in each row (broadcast to ``time``'s rows).
        duration: (...) seconds the task runs in each row (broadcast likewise).
        demand: (...) units it holds in each row (broadcast likewise).

    Returns:
        (...) the earliest feasible start per row (``inf`` where the demand exceeds the
        capacity).
    """
    shape, k = time.shape[:-1], time.shape[-1]
    time, used = time.reshape(-1, k), used.reshape(-1, k)  # (M, K)
    m = len(time)
    size = size.reshape(m)
    ready, duration, demand = (
        np.broadcast_to(x, shape).reshape(m) for x in (ready, duration, demand)
    )
    # The segment holding `ready`: bisect_right - 1 (-1 when ready precedes every breakpoint).
    seg = _count_le(time[:, : int(size.max()) + 1], ready) - 1
    need = size - np.maximum(seg, 0) + 1  # columns from there on, with a padding one
    limit = (capacity - demand) + 1e-9
    # Most rows need a few columns: scan them all that wide, then the few long ones again.
    rows = np.arange(m)
    width = int(need.max())
    start = _scan(time, used, rows, seg, min(width, _SHORT), ready, duration, limit)
    if width > _SHORT:
        long = np.flatnonzero(need > _SHORT)
        start[long] = _scan(
            time, used, long, seg[long], width, ready[long], duration[long], limit[long]
        )
    return np.where(demand > capacity + 1e-9, np.inf, start).reshape(shape)


def _scan(
    time: np.ndarray,
    used: np.ndarray,
    rows: np.ndarray,
    seg: np.ndarray,
    width: int,
    ready: np.ndarray,
    duration: np.ndarray,
    limit: np.ndarray,
) -> np.ndarray:
    """(B,) :func:`earliest_starts` of the rows ``rows`` of ``time``/``used`` (M, K), scanning
    ``width`` columns from the segment ``seg`` (B,) holding ``ready`` (B,), with ``limit``
    (B,) the most units in use a segment may hold."""
    b, k = len(rows), time.shape[1]
    # The window, one column per row of these (W, B) arrays (so the running minimum below
    # goes over contiguous rows); K-1 is padding.
    cols = np.minimum(np.maximum(seg, 0) + np.arange(width)[:, None], k - 1) + rows * k
    t = time.ravel().take(cols)  # (W, B)
    over = used.ravel().take(cols) > limit  # (W, B)
    # When the first over-full segment at or after each column begins (inf: none): a running
    # minimum from the right, row by row (numpy's own accumulate is slower here).
    t_over = np.where(over, t, np.inf)
    for c in range(width - 2, -1, -1):
        np.minimum(t_over[c], t_over[c + 1], out=t_over[c])
    fits = (t > ready) & ~(t_over < (t + duration) - 1e-12)  # (W, B)
    first_fit = t.ravel().take(fits.argmax(axis=0) * b + np.arange(b))
    # `ready` itself: its own segment (column 0) on; before the first breakpoint, column 0's
    # usage counts too (EdgeCluster's `used[max(k, 0)]`).
    late = t_over[0] < (ready + duration) - 1e-12
    late |= (seg < 0) & over[0]
    return np.where(late, first_fit, ready)


def commit(
    tl: Timelines,
    env: np.ndarray,
    server: np.ndarray,
    start: np.ndarray,
    finish: np.ndarray,
    demand: np.ndarray,
) -> None:
    """:meth:`EdgeCluster.commit` of one task per row ``(env[r], server[r])`` (distinct rows):
    insert ``start`` and ``finish`` as breakpoints unless one lies within 1e-12, then add
    ``demand`` to the segments in ``[start, finish)``. ``tl`` must have three free columns in
    those rows (one stays padding).

    Args:
        tl: The timelines (updated in place).
        env: (P,) int env of each task (or one task: every argument a scalar).
        server: (P,) int its server.
        start: (P,) its start.
        finish: (P,) its finish.
        demand: (P,) units it holds.
    """
    if np.ndim(env) == 0:  # one task: the list rule on its row (numpy's per-call cost dominates)
        commit_one(tl, int(env), int(server), start, finish, demand)
        return
    if len(env) == 1:
        commit_one(tl, int(env[0]), int(server[0]), start[0], finish[0], demand[0])
        return
    size = tl.size[env, server]
    width = int(size.max()) + 2
    time = tl.time[env, server, :width]  # (P, W) copies
    used = tl.used[env, server, :width]
    col = np.arange(width)
    rows = (np.arange(len(env)) * width)[:, None]
    for t in (start, finish):
        after = _count_le(time, t)
        # times[k] with k = after - 1 (-1 wraps to the last breakpoint, as in a list)
        prev = np.where(after > 0, after - 1, size - 1) + rows[:, 0]
        new = np.abs(time.ravel()[prev] - t) > 1e-12  # (P,)
        keep = used.ravel()[prev]
        src = col - (new[:, None] & (col > after[:, None])) + rows  # columns moved right
        at = new[:, None] & (col == after[:, None])
        time = np.where(at, t[:, None], time.ravel().take(src))
        used = np.where(at, keep[:, None], used.ravel().take(src))
        size = size + new
    span = (time >= (start - 1e-12)[:, None]) & (time < (finish - 1e-12)[:, None])
    used += np.where(span, demand[:, None], 0.0)
    tl.time[env, server, :width] = time
    tl.used[env, server, :width] = used
    tl.size[env, server] = size


def commit_one(tl: Timelines, i: int, j: int, start: float, finish: float, demand: float) -> None:
    """:func:`commit` of one task on server ``j`` of env ``i``: :func:`commit_row` on the row."""
    n = int(tl.size[i, j])
    times, used = tl.time[i, j, :n].tolist(), tl.used[i, j, :n].tolist()
    commit_row(times, used, float(start), float(finish), float(demand))
    tl.time[i, j, : len(times)] = times
    tl.used[i, j, : len(used)] = used
    tl.size[i, j] = len(times)


def forget_before(tl: Timelines, env: np.ndarray, t: np.ndarray) -> None:
    """:meth:`EdgeCluster.forget_before` on every server of the envs ``env`` (distinct), each
    at its own time ``t``: breakpoints before ``t`` go, the usage in force at ``t`` stays.

    Args:
        tl: The timelines (updated in place).
        env: (B,) int envs.
        t: (B,) the time before which each env's breakpoints go.
    """
    if len(env) == 1:  # one env: the list rule on each row (numpy's per-call cost dominates)
        i, at = int(env[0]), float(t[0])
        for j, n in enumerate(tl.size[i].tolist()):
            kept = forget_row(tl.time[i, j, :n].tolist(), tl.used[i, j, :n].tolist(), at)
            if kept is not None:
                times, used = kept
                tl.time[i, j, : len(times)], tl.time[i, j, len(times) : n] = times, np.inf
                tl.used[i, j, : len(used)], tl.used[i, j, len(used) : n] = used, 0.0
                tl.size[i, j] = len(times)
        return
    size = tl.size[env]  # (B, E)
    width = int(size.max()) + 1  # the last column is padding
    time = tl.time[env, :, :width]  # (B, E, W) copies
    drop = np.maximum(_count_le(time, np.repeat(t[:, None], size.shape[1], axis=1)) - 1, 0)
    if not drop.any():
        return
    rows = (np.arange(size.size) * width).reshape(*size.shape, 1)
    src = np.minimum(drop[:, :, None] + np.arange(width), width - 1) + rows
    time = time.ravel().take(src)
    time[:, :, 0] = np.where(drop > 0, t[:, None], time[:, :, 0])
    tl.time[env, :, :width] = time
    tl.used[env, :, :width] = tl.used[env, :, :width].ravel().take(src)
    tl.size[env] = size - drop

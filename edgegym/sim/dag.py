"""Edge servers running DAG tasks: capacity timelines, transfers, earliest-start placement.

The core of the DAG-offload family (SRS/MRS, INFOCOM'25). A task of workload ``w`` and demand
``c`` runs on server ``j`` for ``w / (c S_j)`` seconds (Eq. 5) and holds ``c`` of the server's
``C_j`` resource units; at no instant may a server's running tasks hold more than ``C_j``
(Eq. 8). It may start once every predecessor has finished and its data has arrived
(``d / D_{j',j}``, Eq. 6-7; the same server transfers instantly) and, for inputs from the
controller / storage, once ``d_0 / D_j`` has elapsed after the request arrived.
:meth:`EdgeCluster.place` puts a task at the earliest such instant on a server (the insertion
policy of list scheduling: a gap in the timeline is used when the whole task fits in it).
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field

import numpy as np

from edgegym.workload.dag import DAGApp

__all__ = ["EdgeCluster", "Placement", "RequestSchedule", "list_order", "priorities"]


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
        source_mb_s: (E,) bandwidth from the controller / storage to each server, MB/s.
    """

    def __init__(
        self,
        speed: np.ndarray,
        capacity: np.ndarray,
        link_mb_s: np.ndarray,
        source_mb_s: np.ndarray,
    ) -> None:
        self.speed = np.asarray(speed, dtype=float)
        self.capacity = np.asarray(capacity, dtype=float)
        self.link = np.asarray(link_mb_s, dtype=float)
        self.source = np.asarray(source_mb_s, dtype=float)
        e = self.speed.size
        if self.capacity.shape != (e,) or self.link.shape != (e, e) or self.source.shape != (e,):
            raise ValueError("speed, capacity, link_mb_s and source_mb_s must describe E servers")
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
        out = EdgeCluster(self.speed, self.capacity, self.link, self.source)
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
        """Earliest instant task i's inputs are all on server j (Eq. 6-7)."""
        app = sched.app
        t = sched.arrival
        if app.input_mb[i] > 0:
            t = max(t, sched.arrival + float(app.input_mb[i]) / float(self.source[j]))
        for u, d in app.preds(i):
            p = sched.tasks[u]
            t = max(t, p.finish + self.transfer(d, p.server, j))
        return t

    def earliest_start(self, j: int, ready: float, duration: float, demand: float) -> float:
        """Earliest ``t >= ready`` with ``demand`` units free on server j for ``duration``."""
        if demand > self.capacity[j] + 1e-9:
            return float("inf")
        times, used = self.times[j], self.used[j]
        cap = float(self.capacity[j]) - float(demand) + 1e-9
        # Candidate starts: ready, and every breakpoint after it (usage only drops there).
        cands = [ready] + [t for t in times if t > ready]
        for s in cands:
            end = s + duration
            k = bisect.bisect_right(times, s) - 1
            ok = True
            while k < len(times) and (k < 0 or times[k] < end - 1e-12):
                if used[max(k, 0)] > cap:
                    ok = False
                    break
                k += 1
            if ok:
                return s
        return float("inf")  # pragma: no cover - the last breakpoint always has usage 0

    def finish_on(self, sched: RequestSchedule, i: int, j: int) -> tuple[float, float]:
        """``(start, finish)`` task i would get on server j now."""
        app = sched.app
        dur = self.exec_time(app.workload[i], app.demand[i], j)
        start = self.earliest_start(j, self.ready_time(sched, i, j), dur, app.demand[i])
        return start, start + dur

    def commit(self, j: int, start: float, finish: float, demand: float) -> None:
        """Reserve ``demand`` units on server j over ``[start, finish)``."""
        times, used = self.times[j], self.used[j]
        for t in (start, finish):
            k = bisect.bisect_right(times, t) - 1
            if abs(times[k] - t) > 1e-12:
                times.insert(k + 1, t)
                used.insert(k + 1, used[k])
        for k, t in enumerate(times):
            if start - 1e-12 <= t < finish - 1e-12:
                used[k] += float(demand)

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
            times, used = self.times[j], self.used[j]
            k = bisect.bisect_right(times, t) - 1
            if k > 0:
                self.times[j] = [t, *times[k + 1 :]]
                self.used[j] = used[k:]

    def usage_at(self, j: int, t: float) -> float:
        """Resource units in use on server j at time t."""
        k = bisect.bisect_right(self.times[j], t) - 1
        return float(self.used[j][max(k, 0)])


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

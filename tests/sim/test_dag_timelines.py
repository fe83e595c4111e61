"""The batched capacity timelines (``families/dag/cluster.py``: Timelines, earliest_starts, commit,
forget_before) against the one-env reference :class:`EdgeCluster`, bit for bit, on random
placements: many envs and servers at once, ready times on and between breakpoints, starts
within 1e-12 of a breakpoint, demands that do not fit, and forgetting."""

from __future__ import annotations

import numpy as np
import pytest

from edgegym.families.dag.cluster import (
    EdgeCluster,
    Timelines,
    commit,
    earliest_starts,
    forget_before,
)


def _assert_same(tl: Timelines, clusters: list[EdgeCluster]) -> None:
    for i, c in enumerate(clusters):
        for j in range(c.n):
            size = int(tl.size[i, j])
            assert tl.time[i, j, :size].tolist() == c.times[j], (i, j)
            assert tl.used[i, j, :size].tolist() == c.used[j], (i, j)
            assert np.all(np.isinf(tl.time[i, j, size:])) and not tl.used[i, j, size:].any()


def _widen(tl: Timelines) -> None:
    """What DAGDynamics keeps: room for one commit and a padding column."""
    while int(tl.size.max()) + 3 > tl.width:
        tl.widen(2 * tl.width)


def _ready(rng: np.random.Generator, times: list[float]) -> float:
    """A ready time: on a breakpoint, just around one, or anywhere in the timeline's span."""
    u = rng.random()
    t = times[int(rng.integers(len(times)))]
    if u < 0.25:
        return t
    if u < 0.4:
        return t + float(rng.choice([-5e-13, 5e-13, -2e-12, 2e-12]))
    return float(rng.uniform(max(0.0, times[0] - 0.5), times[-1] + 1.0))


@pytest.mark.parametrize("seed", range(12))
def test_batched_timelines_equal_edge_clusters(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n, e = int(rng.integers(1, 7)), int(rng.integers(1, 5))
    units = float(rng.integers(1, 5))
    clusters = [
        EdgeCluster(np.ones(e), np.full(e, units), np.ones((e, e)), np.ones(e)) for _ in range(n)
    ]
    tl = Timelines.empty(n, e, 4)
    envs = np.arange(n)
    checked = placed = 0
    for _ in range(120):
        # Every env, every server: one task's earliest start.
        ready = np.array([[_ready(rng, c.times[j]) for j in range(e)] for c in clusters])
        duration = rng.choice([1e-3, 0.05, 0.3, 1.0, 2.5], size=(n, e))
        demand = rng.integers(1, int(units) + 2, size=n).astype(float)  # may not fit
        got = earliest_starts(tl.time, tl.used, tl.size, units, ready, duration, demand[:, None])
        want = [
            [c.earliest_start(j, ready[i, j], duration[i, j], demand[i]) for j in range(e)]
            for i, c in enumerate(clusters)
        ]
        assert got.tolist() == want
        checked += n * e
        # Each env (some of them) commits the task on one server at its earliest start, or
        # at an instant 1e-13 off a breakpoint.
        go = envs[rng.random(n) < 0.8]
        server = rng.integers(0, e, size=go.size)
        start = got[go, server]
        fits = np.isfinite(start)
        go, server, start = go[fits], server[fits], start[fits]
        if go.size:
            near = rng.random(go.size) < 0.15
            for r in np.flatnonzero(near):
                times = clusters[go[r]].times[server[r]]
                start[r] = times[int(rng.integers(len(times)))] + 1e-13
            finish = start + duration[go, server]
            _widen(tl)
            commit(tl, go, server, start, finish, demand[go])
            for r, i in enumerate(go):
                clusters[i].commit(int(server[r]), start[r], finish[r], demand[i])
            placed += go.size
        some = envs[rng.random(n) < 0.6]
        if rng.random() < 0.2 and some.size:
            t = np.array([_ready(rng, clusters[i].times[0]) for i in some])
            forget_before(tl, some, t)
            for i, ti in zip(some, t, strict=True):
                clusters[i].forget_before(float(ti))
        _assert_same(tl, clusters)
    assert checked > 0 and placed > 0
    np.testing.assert_array_equal(tl.last(), [[c.times[j][-1] for j in range(e)] for c in clusters])


def test_earliest_start_uses_gaps_and_skips_busy_segments() -> None:
    """A hand-checked case: 2 units, [0, 1) holds 2, [1, 2) holds 1, [3, 4) holds 2."""
    c = EdgeCluster(np.ones(1), np.array([2.0]), np.ones((1, 1)), np.ones(1))
    for s, f, d in ((0.0, 1.0, 2.0), (1.0, 2.0, 1.0), (3.0, 4.0, 2.0)):
        c.commit(0, s, f, d)
    tl = Timelines.empty(1, 1, 8)
    for s, f, d in ((0.0, 1.0, 2.0), (1.0, 2.0, 1.0), (3.0, 4.0, 2.0)):
        commit(tl, np.array([0]), np.array([0]), np.array([s]), np.array([f]), np.array([d]))
    _assert_same(tl, [c])
    cases = [  # ready, duration, demand -> start
        (0.0, 0.5, 1.0, 1.0),  # busy until 1, then one unit is free
        (0.0, 1.5, 1.0, 1.0),  # [1, 2.5) overlaps [1, 2) (1 unit) only
        (0.0, 2.5, 1.0, 4.0),  # a 2.5 s task cannot fit before [3, 4)
        (0.5, 1.0, 2.0, 2.0),  # two units: only from 2 on, and [2, 3) is 1 s long
        (0.5, 1.5, 2.0, 4.0),
        (5.0, 1.0, 2.0, 5.0),
        (0.0, 1.0, 3.0, np.inf),  # more than the server has
    ]
    for ready, dur, dem, want in cases:
        args = (np.array([[ready]]), np.array([[dur]]), np.array([[dem]]))
        got = earliest_starts(tl.time, tl.used, tl.size, 2.0, *args)
        assert got[0, 0] == want == c.earliest_start(0, ready, dur, dem)

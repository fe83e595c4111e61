"""edgegym/DAGOffload-v0: the observation's columns against values worked out by hand.

``tests/reference/dag.py`` forms its observation with the production
:func:`edgegym.families.dag.observation.tables`, so the step-by-step equivalence test cannot
catch a wrong or swapped feature column. Here a two-task application on two servers with
round numbers is driven through a few epochs and every column of ``nodes``, ``servers`` and
``globals`` is compared with its value computed in the comments from the scenario's inputs
(the env's docstring and docs/environments.md name the columns).

The only drawn inputs are the two requests' arrival times ``t0 < t1`` (read from the env);
speeds, links and bandwidths are fixed by giving each range one value (a speed is the draw
over the range's top, so ``[10, 10]`` is speed 1), except in the last test, where the speeds
and links are the first draws of the episode's generator, repeated here with numpy.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.seeding import np_random

import edgegym  # noqa: F401  (registers the ids)

# Columns, as the env's docstring lists them.
NODE_COLS = (
    "valid", "workload", "demand", "input_mb", "acc", "gap", "since", "exe", "phi", "gain",
    "placed", "presented", "retrain_of",
)  # fmt: skip
SERVER_COLS = ("speed", "capacity", "backlog", "storage", "finish_gap")
GLOBAL_COLS = ("admitted", "theta", "a_min", "admit", "pending")

# Task 0 runs model "a" (workload 0.6 on 2 units, 2 MB from the controller), task 1 model "b"
# (0.3 on 1 unit); task 0 sends task 1 3 MB. One retraining configuration: 50 MB of data from
# storage, 100 units of work on 1 unit, closing half the gap to the ceiling.
APP = {
    "name": "app",
    "tasks": [
        {"model": "a", "workload": 0.6, "demand": 2, "input_mb": 2.0},
        {"model": "b", "workload": 0.3, "demand": 1},
    ],
    "edges": [[0, 1, 3.0]],
}
MODELS = {
    "a": {"start_accuracy": 0.8, "ceiling": 0.9, "drift_per_s": 0.001, "floor": 0.5,
          "size_mb": 10},
    "b": {"start_accuracy": 0.7, "ceiling": 0.95, "drift_per_s": 0.05, "floor": 0.3,
          "size_mb": 5},
}  # fmt: skip
CONFIG = [{"name": "r", "data_mb": 50, "workload": 100, "demand": 1, "gain": 0.5}]


def _make(speeds: tuple[int, int] = (10, 10), link: tuple[int, int] = (8, 8), count: int = 2):
    servers = {
        "count": count,
        "gpu": "A100-80GB",
        "gpus_per_server": 1,
        "units_per_gpu": 2,  # capacity 2 units per server
        "speed_tflops": list(speeds),
        "link_gbps": list(link),  # 8 Gbps x 125 = 1000 MB/s
        "controller_gbps": [8, 8],  # 1000 MB/s
        "storage_gbps": [4, 4],  # 500 MB/s
    }
    return gym.make(
        "edgegym/DAGOffload-v0",
        scenario="srs-edge-3servers",
        requests=2,
        duration_s=100,
        theta=3.0,
        a_min=0.25,
        max_nodes=3,  # one padding row
        max_edges=2,  # one padding edge
        pool_from_inputs=False,  # no pools: a retraining always has its full data
        model_scope="shared",
        servers=servers,
        arrival={"kind": "poisson", "rate": 1.0},
        retrain_configs=CONFIG,
        models=MODELS,
        applications=[APP],
    )


def _check(table: np.ndarray, cols: tuple[str, ...], want: dict[str, float], what: str) -> None:
    """Every column of the row ``table`` equals ``want`` (float32 tolerance)."""
    assert table.shape == (len(cols),)
    got = {c: float(x) for c, x in zip(cols, table, strict=True)}
    assert set(want) == set(cols)
    for c in cols:
        assert got[c] == pytest.approx(want[c], rel=1e-6, abs=1e-6), f"{what}: {c}"


def _node(**kw: float) -> dict[str, float]:
    """A valid task's row: valid 1 and the flags 0 unless given."""
    return {"valid": 1.0, "gain": 0.0, "placed": 0.0, "presented": 0.0, "retrain_of": 0.0, **kw}


# Row constants of both tasks: workload, demand, input MB; mean execution time
# workload / demand x mean(1 / speed) = 0.6 / 2 x 1 = 0.3 and 0.3 / 1 x 1 = 0.3; Eq. 10
# priorities: task 1 is an exit, phi1 = 0.3; phi0 = 0.3 + 3 MB / 1000 MB/s + phi1 = 0.603.
T0 = {"workload": 0.6, "demand": 2.0, "input_mb": 2.0, "exe": 0.3, "phi": 0.603}
T1 = {"workload": 0.3, "demand": 1.0, "input_mb": 0.0, "exe": 0.3, "phi": 0.3}


def _server(backlog: float = 0.0, finish_gap: float = 0.0) -> dict[str, float]:
    # speed 1, 1 GPU x 2 units = capacity 2, storage 500 MB/s / 1000 = 0.5.
    return {"speed": 1.0, "capacity": 2.0, "backlog": backlog, "storage": 0.5,
            "finish_gap": finish_gap}  # fmt: skip


def _globals(admitted: float, admit: float, pending: float) -> dict[str, float]:
    # theta / 10 = 3 / 10 = 0.3; A_min = 0.25.
    return {"admitted": admitted, "theta": 0.3, "a_min": 0.25, "admit": admit, "pending": pending}


def _assert_obs(obs: dict[str, np.ndarray], rows, servers, glob, what: str) -> None:
    for i, want in enumerate(rows):
        _check(obs["nodes"][i], NODE_COLS, want, f"{what}, node {i}")
    assert not obs["nodes"][len(rows) :].any(), f"{what}: padding rows"
    for j, want in enumerate(servers):
        _check(obs["servers"][j], SERVER_COLS, want, f"{what}, server {j}")
    _check(obs["globals"], GLOBAL_COLS, glob, f"{what}, globals")


def test_an_episode_of_two_requests_column_by_column():
    env = _make()
    obs, _ = env.reset(seed=0)
    u: Any = env.unwrapped
    t0, t1 = (float(x) for x in u.times)
    # Preconditions of the hand values: model b has drifted to its floor by t0
    # (0.7 - 0.05 t0 < 0.3 for t0 > 8) and model a has not (0.8 - 0.001 t < 0.5 for t < 300).
    assert 8.0 < t0 < t1 < 100.0
    np.testing.assert_array_equal(obs["edges"], [[0.0, 1.0], [-1.0, -1.0]])
    np.testing.assert_array_equal(obs["edge_mask"], [1.0, 0.0])

    # ---- A: admit request 0 at t0. Model a: 0.8 - 0.001 t0 (gap 0.9 - it), model b at its
    # floor 0.3 (gap 0.95 - 0.3 = 0.65); neither retrained yet: t0 / 100 seconds since.
    a0 = 0.8 - 0.001 * t0
    assert u.epoch.kind == "admit" and u.now == pytest.approx(t0)
    _assert_obs(
        obs,
        [
            _node(**T0, acc=a0, gap=0.9 - a0, since=t0 / 100),
            _node(**T1, acc=0.3, gap=0.65, since=t0 / 100),
        ],
        [_server(), _server()],
        _globals(admitted=0 / 2, admit=1.0, pending=0 / 10),
        "A",
    )

    # Retrain task 0 with configuration 0, not task 1: a runs with a0 + 0.5 (0.9 - a0).
    obs, *_ = env.step(np.array([0, 1, 0, 0]))
    ar = a0 + 0.5 * (0.9 - a0)
    # ---- B: place request 0's retraining node (node 2; its priority 100 / 1 + 10 MB model /
    # 1000 + phi0 = 100.613 tops phi0 = 0.603). Its 50 MB come from storage at 500 MB/s:
    # t = t0 + 0.1. Model a was retrained at t0 (0.1 s ago); the request's task 0 runs with
    # ar, a gain of ar - a0; the retraining node is task 0's (column 12). Both servers are
    # idle and equal: the node finishes at t0 + 0.1 + 100 on either (finish gaps 0).
    tb = t0 + 0.1
    assert (u.epoch.kind, u.epoch.k, u.epoch.node) == ("place", 0, 2)
    assert u.now == pytest.approx(tb)
    _assert_obs(
        obs,
        [
            _node(**T0, acc=ar, gap=0.9 - ar, since=0.1 / 100, gain=ar - a0, retrain_of=1.0),
            _node(**T1, acc=0.3, gap=0.65, since=tb / 100),
        ],
        [_server(), _server()],
        _globals(admitted=1 / 2, admit=0.0, pending=1 / 10),
        "B",
    )

    # On server 0: it holds 1 of 2 units over [t0 + 0.1, t0 + 100.1].
    obs, *_ = env.step(np.array([0, 0, 0, 0]))
    busy_until = t0 + 100.1
    # ---- C: admit request 1 at t1 (request 0's task 0 waits for the retraining until
    # t0 + 100.1 > t1). Model a: ar - 0.001 (t1 - t0), retrained t1 - t0 ago; b at its floor,
    # never retrained. Server 0's backlog: t0 + 100.1 - t1.
    a1 = ar - 0.001 * (t1 - t0)
    assert (u.epoch.kind, u.epoch.k) == ("admit", 1) and u.now == pytest.approx(t1)
    _assert_obs(
        obs,
        [
            _node(**T0, acc=a1, gap=0.9 - a1, since=(t1 - t0) / 100),
            _node(**T1, acc=0.3, gap=0.65, since=t1 / 100),
        ],
        [_server(backlog=busy_until - t1), _server()],
        _globals(admitted=1 / 2, admit=1.0, pending=1 / 10),
        "C",
    )

    # No retraining.
    obs, *_ = env.step(np.array([0, 0, 0, 0]))
    # ---- D: place request 1's task 0, its input 2 MB / 1000 MB/s after t1: td = t1 + 0.002.
    # Its 2 units fit server 0 only once the retraining ends: it would run there over
    # [t0 + 100.1, t0 + 100.4] (0.6 / (2 x 1) = 0.3 s), on server 1 over [td, td + 0.3]:
    # server 0 finishes (t0 + 100.4) - (td + 0.3) later.
    td = t1 + 0.002
    assert (u.epoch.kind, u.epoch.k, u.epoch.node) == ("place", 1, 0)
    assert u.now == pytest.approx(td)
    _assert_obs(
        obs,
        [
            _node(**T0, acc=a1, gap=0.9 - a1, since=(td - t0) / 100, presented=1.0),
            _node(**T1, acc=0.3, gap=0.65, since=td / 100),
        ],
        [
            _server(backlog=busy_until - td, finish_gap=(busy_until + 0.3) - (td + 0.3)),
            _server(),
        ],
        _globals(admitted=2 / 2, admit=0.0, pending=2 / 10),
        "D",
    )

    # On server 1: over [td, td + 0.3].
    obs, *_ = env.step(np.array([1, 0, 0, 0]))
    # ---- E: place request 1's task 1 at te = td + 0.3 (task 0's output is local on server
    # 1; on server 0 it comes 3 MB / 1000 MB/s = 0.003 s later). 1 unit, 0.3 s: server 0 has
    # a unit free beside the retraining, so it finishes 0.003 later there. Task 0 is placed.
    te = td + 0.3
    assert (u.epoch.kind, u.epoch.k, u.epoch.node) == ("place", 1, 1)
    assert u.now == pytest.approx(te)
    _assert_obs(
        obs,
        [
            _node(**T0, acc=a1, gap=0.9 - a1, since=(te - t0) / 100, placed=1.0),
            _node(**T1, acc=0.3, gap=0.65, since=te / 100, presented=1.0),
        ],
        [_server(backlog=busy_until - te, finish_gap=0.003), _server()],
        _globals(admitted=2 / 2, admit=0.0, pending=2 / 10),
        "E",
    )

    # On server 1: request 1 is done.
    obs, *_ = env.step(np.array([1, 0, 0, 0]))
    # ---- F: place request 0's task 0 once its model arrives: on server 0 at t0 + 100.1 (the
    # retraining node ran there), on server 1 10 MB / 1000 MB/s later; 0.3 s either way.
    # Request 0 runs with ar (gain ar - a0); a was last retrained at t0, b never. No backlog
    # (server 1's work ended at te + 0.3 < t0 + 100.1).
    tf = busy_until
    assert (u.epoch.kind, u.epoch.k, u.epoch.node) == ("place", 0, 0)
    assert u.now == pytest.approx(tf)
    _assert_obs(
        obs,
        [
            _node(**T0, acc=ar, gap=0.9 - ar, since=(tf - t0) / 100, gain=ar - a0, presented=1),
            _node(**T1, acc=0.3, gap=0.65, since=tf / 100),
        ],
        [_server(), _server(finish_gap=0.01)],
        _globals(admitted=2 / 2, admit=0.0, pending=1 / 10),
        "F",
    )


def test_unequal_speeds_and_links():
    """Three servers of 5-10 TFLOPS with links of 4-8 Gbps: the env's generator draws the
    speeds (over the top, 10), then the server-server links (symmetrised), then the storage
    links (``draw_episode``'s documented order), repeated here with numpy."""
    env = _make(speeds=(5, 10), link=(4, 8), count=3)
    obs, _ = env.reset(seed=1)
    u: Any = env.unwrapped
    rng, _ = np_random(1)
    speed = rng.uniform(5, 10, 3) / 10
    link = rng.uniform(4, 8, (3, 3)) * 125  # MB/s
    link = (link + link.T) / 2
    pairs = [link[0, 1], link[0, 2], link[1, 2]]
    slowest = min(pairs)
    # The columns below tell the servers and the slowest link from the fastest apart.
    assert np.ptp(speed) > 0.05 and max(pairs) - slowest > 50
    t0, t1 = (float(x) for x in u.times)
    assert t0 + 0.002 < t1  # request 0's first node comes before request 1 arrives
    a0 = 0.8 - 0.001 * t0
    # Mean execution time: workload / demand x mean(1 / speed); Eq. 10 with the mean times
    # and the slowest link: phi1 = exe1, phi0 = exe0 + 3 MB / slowest + phi1.
    inv = (1 / speed[0] + 1 / speed[1] + 1 / speed[2]) / 3
    exe0, exe1 = 0.6 / 2 * inv, 0.3 / 1 * inv
    phi1 = exe1
    phi0 = exe0 + 3.0 / slowest + phi1
    rows = [
        _node(workload=0.6, demand=2, input_mb=2, exe=exe0, phi=phi0, acc=a0, gap=0.9 - a0,
              since=t0 / 100),
        _node(workload=0.3, demand=1, input_mb=0, exe=exe1, phi=phi1,
              acc=max(0.3, 0.7 - 0.05 * t0), gap=0.95 - max(0.3, 0.7 - 0.05 * t0),
              since=t0 / 100),
    ]  # fmt: skip
    servers = [
        {"speed": s, "capacity": 2.0, "backlog": 0.0, "storage": 0.5, "finish_gap": 0.0}
        for s in speed
    ]
    _assert_obs(obs, rows, servers, _globals(0.0, 1.0, 0.0), "admit")

    # No retraining; task 0 is next at t0 + 2 MB / 1000 MB/s on every idle server and runs
    # 0.6 / (2 s_j) there: server j finishes 0.3 / s_j - min_k 0.3 / s_k after the earliest.
    obs, *_ = env.step(np.array([0, 0, 0, 0]))
    t = t0 + 0.002
    assert (u.epoch.kind, u.epoch.k, u.epoch.node) == ("place", 0, 0)
    assert u.now == pytest.approx(t)
    fin = 0.3 / speed
    gaps = fin - fin.min()
    rows[0].update(presented=1.0, since=t / 100)
    rows[1].update(since=t / 100)
    for j, g in enumerate(gaps):
        servers[j]["finish_gap"] = g
    _assert_obs(obs, rows, servers, _globals(0.5, 0.0, 0.1), "place")

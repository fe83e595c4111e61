"""DAG core: malformed DAGs, schedule constraints on random DAGs, list scheduling vs brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from edgegym.baselines.dag import list_schedule, priorities, srs_schedule
from edgegym.families.dag.cluster import EdgeCluster, RequestSchedule
from edgegym.families.dag.graph import DAGApp, DAGError, RetrainOption, extend_with_retraining


def _app(n, edges, rng, name="app"):
    return DAGApp(
        name=name,
        models=tuple(f"m{i}" for i in range(n)),
        workload=rng.uniform(0.1, 0.5, n),
        demand=rng.integers(1, 3, n).astype(float),
        input_mb=np.where(rng.random(n) < 0.5, rng.uniform(0.8, 1.6, n), 0.0),
        edges=np.array(edges, dtype=np.int64).reshape(-1, 2),
        edge_mb=rng.uniform(0.1, 1.6, len(edges)),
        model_mb=rng.uniform(5, 50, n),
    )


def _random_dag(rng, n):
    edges = [(u, v) for u in range(n) for v in range(u + 1, n) if rng.random() < 0.4]
    return _app(n, edges, rng)


def _cluster(rng, e, cap=(2, 4)):
    link = rng.uniform(375, 625, (e, e))  # 3-5 Gbps in MB/s
    return EdgeCluster(
        speed=rng.uniform(0.5, 1.0, e),
        capacity=rng.integers(cap[0], cap[1] + 1, e).astype(float),
        link_mb_s=(link + link.T) / 2,
        source_mb_s=rng.uniform(875, 1250, e),  # 7-10 Gbps
    )


@pytest.mark.parametrize(
    ("edges", "needle"),
    [([(0, 1), (1, 2), (2, 0)], "cycle"), ([(0, 5)], "dangling"), ([(1, 1)], "self-loop")],
)
def test_malformed_dag_is_rejected(edges, needle):
    with pytest.raises(DAGError, match=needle):
        _app(3, edges, np.random.default_rng(0))


@pytest.mark.parametrize("seed", range(25))
def test_constraints_hold_on_random_dags_and_assignments(seed, check_schedule):
    rng = np.random.default_rng(seed)
    cluster = _cluster(rng, int(rng.integers(1, 4)))
    scheds = []
    t = 0.0
    for _ in range(int(rng.integers(1, 5))):
        app = _random_dag(rng, int(rng.integers(1, 7)))
        servers = rng.integers(0, cluster.n, app.n) if rng.random() < 0.5 else None
        scheds.append(list_schedule(cluster, app, t, servers))
        t += float(rng.uniform(0, 0.3))
    check_schedule(cluster, scheds)


@pytest.mark.parametrize("seed", range(15))
def test_list_scheduling_picks_the_earliest_finish_and_never_beats_brute_force(seed):
    rng = np.random.default_rng(100 + seed)
    cluster = _cluster(rng, 3, cap=(1, 2))
    app = _random_dag(rng, int(rng.integers(2, 6)))
    phi = priorities(app, cluster)
    order = sorted(range(app.n), key=lambda i: (-phi[i], app.order.index(i)))
    # Every precedence edge goes from higher to lower priority (a valid list order).
    for u, v in app.edges:
        assert phi[u] > phi[v]
    greedy = list_schedule(cluster.copy(), app, 0.0)
    # Brute force over all server assignments (same list order, earliest start each).
    best = np.inf
    for servers in itertools.product(range(cluster.n), repeat=app.n):
        s = list_schedule(cluster.copy(), app, 0.0, servers)
        best = min(best, s.completion)
    assert greedy.completion >= best - 1e-9
    # Each greedy step chose the server with the earliest finish given the earlier steps.
    c = cluster.copy()
    replay = RequestSchedule(app, 0.0)
    for i in order:
        finishes = [c.finish_on(replay, i, j)[1] for j in range(c.n)]
        c.place(replay, i, greedy.tasks[i].server)
        assert replay.tasks[i].finish == pytest.approx(min(finishes))


def test_list_scheduling_is_optimal_without_contention_or_transfers():
    rng = np.random.default_rng(7)
    for _ in range(10):
        n = int(rng.integers(2, 6))
        app = _random_dag(rng, n)
        app = DAGApp(app.name, app.models, app.workload, app.demand, np.zeros(n), app.edges,
                     np.zeros(len(app.edges)), app.model_mb)  # fmt: skip
        e = 3
        cluster = EdgeCluster(np.ones(e), np.full(e, 100.0), np.full((e, e), 1e9), np.ones(e))
        greedy = list_schedule(cluster.copy(), app, 0.0)
        best = min(
            list_schedule(cluster.copy(), app, 0.0, s).completion
            for s in itertools.product(range(e), repeat=n)
        )
        assert greedy.completion == pytest.approx(best)


def test_retraining_nodes_follow_fig_7():
    rng = np.random.default_rng(1)
    app = _app(3, [(0, 1), (0, 2), (1, 2)], rng)
    opts = [RetrainOption("small", 2.0, 0.4, 1.0, 0.5)]
    ext = extend_with_retraining(app, [-1, -1, 0], opts)
    assert ext.n == 4
    r = 3
    assert ext.storage_mb[r] == pytest.approx(2.0)  # training data from storage
    assert ext.input_mb[r] == 0.0  # nothing from the controller
    into_2 = {u: d for u, d in app.preds(2)}
    assert {u: d for u, d in ext.preds(r)} == pytest.approx(into_2)  # d_{i',|V|+i} = d_{i',i}
    back = dict(ext.succs(r))
    assert back[2] == pytest.approx(sum(into_2.values()) + app.model_mb[2])


def test_srs_variant_retrains_when_accuracy_gain_outweighs_time(check_schedule):
    rng = np.random.default_rng(3)
    app = _app(3, [(0, 1), (1, 2)], rng)
    opts = [RetrainOption("cheap", 1.0, 0.2, 1.0, 0.5), RetrainOption("big", 4.0, 1.0, 1.0, 0.9)]
    acc_now = np.array([0.5, 0.9, 0.6])
    acc_after = np.array([[0.7, 0.95], [0.9, 0.9], [0.62, 0.63]])
    cluster = _cluster(rng, 2)
    sched, choice = srs_schedule(
        cluster, app, 0.0, acc_now, acc_after, opts, theta=10.0, always=False, chain=False
    )
    assert choice[0] >= 0  # +0.2..0.45 accuracy for about a second: worth it at theta = 10
    assert choice[1] == -1  # no gain
    assert sched.app.n == app.n + sum(c >= 0 for c in choice)
    check_schedule(cluster, [sched])
    # Algorithm 2 as written adds a node to every task, the least-Delta-P one.
    lit, lit_choice = srs_schedule(cluster.copy(), app, 0.0, acc_now, acc_after, opts, 10.0)
    assert min(lit_choice) >= 0 and lit.app.n == 2 * app.n


def test_mrs_keeps_every_constraint_and_matches_srs_on_one_request(check_schedule):
    from edgegym.baselines.dag import mrs_schedule

    rng = np.random.default_rng(11)
    opts = [RetrainOption("cheap", 1.0, 0.2, 1.0, 0.5), RetrainOption("big", 4.0, 1.0, 2.0, 0.9)]
    reqs = []
    for k in range(6):
        app = _random_dag(rng, int(rng.integers(2, 6)))
        now = rng.uniform(0.4, 0.9, app.n)
        after = now[:, None] + np.array([0.1, 0.3])[None, :]
        reqs.append((app, float(k // 2) * 0.1, now, after))  # pairs arrive together
    cluster = _cluster(rng, 3)
    out = mrs_schedule(cluster, reqs, opts, theta=5.0)
    check_schedule(cluster, [s for s, _ in out])
    one = _cluster(np.random.default_rng(5), 2)
    a, s_one = reqs[0], None
    s_one, c_one = srs_schedule(one.copy(), a[0], a[1], a[2], a[3], opts, 5.0)
    ((s_mrs, c_mrs),) = mrs_schedule(one.copy(), [a], opts, theta=5.0)
    assert c_one == c_mrs
    assert s_mrs.completion == pytest.approx(s_one.completion)

"""Algorithm 2 (SRS) as written: the chain of line 2, Eq. 11 and line 7, worked by hand and
against brute-force references on tiny instances; the controller and storage links."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from edgegym.baselines.dag import delta_p, list_schedule, mrs_schedule, srs_choices, srs_schedule
from edgegym.families.dag.cluster import EdgeCluster, RequestSchedule
from edgegym.families.dag.graph import DAGApp, RetrainOption, chain_dag, extend_with_retraining

THETA = 10.0
# u_h = (b_h MB, n_h, o_h): both fit a one-unit server.
OPTS = [RetrainOption("small", 20.0, 1.0, 1.0, 0.5), RetrainOption("large", 100.0, 3.0, 1.0, 0.9)]


def _hand_cluster() -> EdgeCluster:
    """Two one-unit servers: speeds 1 and 0.5, 100 MB/s between them (diagonal too), the
    controller at 50 MB/s to both, storage at 200 and 100 MB/s."""
    return EdgeCluster(
        speed=np.array([1.0, 0.5]),
        capacity=np.array([1.0, 1.0]),
        link_mb_s=np.full((2, 2), 100.0),
        source_mb_s=np.array([50.0, 50.0]),
        storage_mb_s=np.array([200.0, 100.0]),
    )


def _hand_app() -> DAGApp:
    """Two entry tasks (0, 1) feeding a join (2): 0 -> 2 (20 MB), 1 -> 2 (10 MB)."""
    return DAGApp(
        name="join",
        models=("m0", "m1", "m2"),
        workload=np.array([1.0, 1.0, 0.5]),
        demand=np.ones(3),
        input_mb=np.array([10.0, 5.0, 0.0]),
        edges=np.array([[0, 2], [1, 2]]),
        edge_mb=np.array([20.0, 10.0]),
        model_mb=np.array([4.0, 6.0, 8.0]),
    )


ACC_NOW = np.array([0.70, 0.60, 0.50])
ACC_AFTER = np.array([[0.80, 0.95], [0.823, 0.90], [0.70, 0.72]])


def test_chain_of_line_2_by_hand():
    chain = chain_dag(_hand_app())
    assert chain.edges.tolist() == [[0, 1], [1, 2]]
    # Task 1 gets nothing from a DAG predecessor; task 2 gets 20 + 10 MB along the chain.
    assert chain.edge_mb.tolist() == [0.0, 30.0]
    assert chain.input_mb.tolist() == [10.0, 5.0, 0.0] and chain.models == _hand_app().models


def test_algorithm_1_and_eq_11_by_hand():
    """Algorithm 1 (line 1) by hand: priorities 2.45 / 2.35 / 0.75 give the order 0, 1, 2.
    Task 0 on server 0 over [0.2, 1.2) (input 10 MB / 50 MB/s; server 1 would finish 2.2);
    task 1 on server 1 over [0.1, 2.1) (server 0 is full until 1.2: 2.2); task 2 on server 0
    over [2.2, 2.7) (task 1's 10 MB needs 0.1 s; server 1 would finish 3.1)."""
    cluster, app = _hand_cluster(), _hand_app()
    base = list_schedule(cluster.copy(), app, 0.0)
    assert [base.tasks[i].server for i in range(3)] == [0, 1, 0]
    assert [base.tasks[i].start for i in range(3)] == pytest.approx([0.2, 0.1, 2.2])
    chain = chain_dag(app)
    # Eq. 11 on the chain, time part: n_h / (o_h S_j*) + (d^{i',i} + d(m)) / D + b_h / D_j*.
    # Task 0: first in the chain, on server 0:  1 + 0 + 20/200 = 1.1;   3 + 0 + 100/200 = 3.5.
    # Task 1: on server 1 (speed 0.5), i' = 0 on server 0, 0 + 6 MB:
    #         2 + 0.06 + 20/100 = 2.26;   6 + 0.06 + 1.0 = 7.06.
    # Task 2: on server 0, i' = 1 on server 1, 30 + 8 MB:  1 + 0.38 + 0.1 = 1.48;  3.88.
    want_time = {0: (1.1, 3.5), 1: (2.26, 7.06), 2: (1.48, 3.88)}
    for i, times in want_time.items():
        for h, t in enumerate(times):
            gain = THETA * (ACC_NOW[i] - ACC_AFTER[i, h])
            got = delta_p(cluster, chain, base, i, OPTS[h], ACC_NOW[i], ACC_AFTER[i, h], THETA)
            assert got == pytest.approx(t + gain)
    # edgegym's variant prices on the DAG: task 1 has no predecessor (no transfer): 2.2;
    # task 2's predecessors tie on the link, the first (task 0, on server 0) sends: 1.1.
    variant = {(1, 0): 2.2, (2, 0): 1.1}
    for (i, h), t in variant.items():
        got = delta_p(cluster, app, base, i, OPTS[h], ACC_NOW[i], ACC_AFTER[i, h], THETA, False)
        assert got == pytest.approx(t + THETA * (ACC_NOW[i] - ACC_AFTER[i, h]))


def test_algorithm_2_choices_by_hand():
    """Delta P with theta = 10: task 0 0.1 / 1.0, task 1 0.03 / 4.06 (chain) or -0.03 (DAG),
    task 2 -0.52 / 1.68 (chain) or -0.9 (DAG). As written every task takes its least Delta P;
    the thresholds keep only the negative ones."""
    cluster, app = _hand_cluster(), _hand_app()
    args = (cluster, app, 0.0, ACC_NOW, ACC_AFTER, OPTS, THETA)
    assert srs_choices(*args) == [0, 0, 0]  # Algorithm 2 as written
    assert srs_choices(*args, always=True, chain=False) == [0, 0, 0]
    assert srs_choices(*args, always=False, chain=True) == [-1, -1, 0]
    assert srs_choices(*args, always=False, chain=False) == [-1, 0, 0]  # edgegym's variant
    # A model below A_min is retrained even when Delta P > 0; an option below it never runs.
    assert srs_choices(*args, a_min=0.65, always=False) == [-1, 0, 0]
    assert srs_choices(*args, a_min=0.85, always=False) == [1, 1, -1]


def test_line_7_schedules_the_extended_dag_by_hand(check_schedule):
    """SRS's line 7 on the hand instance: retraining nodes 3, 4, 5 (of tasks 0, 1, 2), Eq. 10
    order 3, 4, 0, 1, 5, 2. Server 0 (speed 1, storage 200 MB/s) finishes every node first:
    3 [0.1, 1.1), 4 [1.1, 2.1), 0 [2.1, 3.1) (server 1: 3.14), 1 [3.1, 4.1) (4.16),
    5 [4.1, 5.1) (6.2), 2 [5.1, 5.6) (6.48)."""
    cluster = _hand_cluster()
    sched, choice = srs_schedule(cluster, _hand_app(), 0.0, ACC_NOW, ACC_AFTER, OPTS, THETA)
    assert choice == [0, 0, 0]
    want = {3: 0.1, 4: 1.1, 0: 2.1, 1: 3.1, 5: 4.1, 2: 5.1}
    assert {i: p.server for i, p in sched.tasks.items()} == dict.fromkeys(want, 0)
    assert {i: sched.tasks[i].start for i in want} == pytest.approx(want)
    assert sched.completion == pytest.approx(5.6)
    check_schedule(cluster, [sched])


def test_the_other_reading_of_line_7_runs_the_chain(check_schedule):
    cluster = _hand_cluster()
    sched, _ = srs_schedule(
        cluster, _hand_app(), 0.0, ACC_NOW, ACC_AFTER, OPTS, THETA, schedule_chain=True
    )
    t = sched.tasks
    assert t[1].start >= t[0].finish - 1e-12 and t[2].start >= t[1].finish - 1e-12
    check_schedule(cluster, [sched])


def test_controller_and_storage_links_are_separate():
    cluster, app = _hand_cluster(), _hand_app()
    ext = extend_with_retraining(app, [0, -1, -1], OPTS)
    s = RequestSchedule(ext, 1.0)
    # Task 1's 5 MB come from the controller (50 MB/s), node 3's 20 MB from storage.
    assert cluster.ready_time(s, 1, 1) == pytest.approx(1.0 + 5.0 / 50.0)
    assert cluster.ready_time(s, 3, 0) == pytest.approx(1.0 + 20.0 / 200.0)
    assert cluster.ready_time(s, 3, 1) == pytest.approx(1.0 + 20.0 / 100.0)
    one = EdgeCluster(cluster.speed, cluster.capacity, cluster.link, cluster.source)
    assert one.ready_time(s, 3, 0) == pytest.approx(1.0 + 20.0 / 50.0)  # one rate for both
    assert cluster.copy().storage.tolist() == [200.0, 100.0]


# ---------------------------------------------------------------- brute-force references
def _random_instance(seed: int, n_max: int = 5):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, n_max + 1))
    edges = [(u, v) for u in range(n) for v in range(u + 1, n) if rng.random() < 0.45]
    perm = rng.permutation(n)  # node labels not in topological order
    edges = [(int(perm[u]), int(perm[v])) for u, v in edges]
    app = DAGApp(
        name=f"r{seed}",
        models=tuple(f"m{i}" for i in range(n)),
        workload=rng.uniform(0.1, 0.5, n),
        demand=np.ones(n),
        input_mb=rng.uniform(0.8, 1.6, n),
        edges=np.array(edges, dtype=np.int64).reshape(-1, 2),
        edge_mb=rng.uniform(0.8, 1.6, len(edges)),
        model_mb=rng.uniform(5, 100, n),
    )
    e = int(rng.integers(1, 4))
    link = rng.uniform(375, 625, (e, e))
    cluster = EdgeCluster(
        rng.uniform(0.5, 1.0, e),
        np.full(e, 2.0),
        (link + link.T) / 2,
        rng.uniform(375, 625, e),
        rng.uniform(875, 1250, e),
    )
    h = 3
    opts = [
        [RetrainOption(f"o{k}", *rng.uniform([5, 0.2, 1], [200, 4, 2]), 0.5) for k in range(h)]
        for _ in range(n)
    ]
    acc_now = rng.uniform(0.4, 0.9, n)
    acc_after = np.minimum(1.0, acc_now[:, None] + rng.uniform(-0.05, 0.4, (n, h)))
    return app, cluster, opts, acc_now, acc_after, rng.uniform(0.5, 20.0)


@pytest.mark.parametrize("seed", range(40))
def test_chain_is_the_smallest_topological_order_by_brute_force(seed):
    app, *_ = _random_instance(seed, n_max=6)
    valid = [
        p
        for p in itertools.permutations(range(app.n))
        if all(p.index(u) < p.index(v) for u, v in app.edges.tolist())
    ]
    chain = chain_dag(app)
    order = [int(chain.edges[0, 0]), *chain.edges[:, 1].tolist()] if app.n > 1 else [0]
    assert tuple(order) == min(valid)
    for (_, v), mb in zip(chain.edges.tolist(), chain.edge_mb, strict=True):
        assert mb == pytest.approx(sum(d for _, d in app.preds(v)))  # all that v receives


@pytest.mark.parametrize("seed", range(40))
def test_algorithm_2_against_brute_force_over_all_configurations(seed):
    """Eq. 11 written out independently (i' = the previous task in the smallest topological
    order, found by brute force), and the configurations Y minimising the sum of Delta P over
    all H^V choices: Algorithm 2 as written picks the same Y (Delta P is separable per task).
    Pricing on the chain never changes that choice (Eq. 11's transfer term is the same for
    every configuration of a task), only the threshold variant's."""
    app, cluster, opts, acc_now, acc_after, theta = _random_instance(seed)
    base = list_schedule(cluster.copy(), app, 0.0)
    order = min(
        p
        for p in itertools.permutations(range(app.n))
        if all(p.index(u) < p.index(v) for u, v in app.edges.tolist())
    )

    def dp(i: int, h: int) -> float:
        o, j = opts[i][h], base.tasks[i].server
        k = order.index(i)
        src = base.tasks[order[k - 1]].server if k else j
        into = sum(d for _, d in app.preds(i)) + app.model_mb[i]
        move = 0.0 if src == j else into / cluster.link[src, j]
        return (
            o.workload / (o.demand * cluster.speed[j])
            + move
            + o.data_mb / cluster.storage[j]
            + theta * (acc_now[i] - acc_after[i, h])
        )

    h = len(opts[0])
    best = min(
        itertools.product(range(h), repeat=app.n),
        key=lambda y: (sum(dp(i, c) for i, c in enumerate(y)), y),
    )
    args = (cluster, app, 0.0, acc_now, acc_after, opts, theta)
    assert srs_choices(*args) == list(best)
    assert srs_choices(*args, chain=False) == list(best)
    threshold = [c if dp(i, c) < 0 else -1 for i, c in enumerate(best)]
    assert srs_choices(*args, always=False) == threshold


@pytest.mark.parametrize("seed", range(10))
def test_literal_mrs_on_one_request_is_literal_srs(seed, check_schedule):
    app, cluster, opts, acc_now, acc_after, theta = _random_instance(seed)
    s_srs, c_srs = srs_schedule(cluster.copy(), app, 0.5, acc_now, acc_after, opts, theta)
    mine = cluster.copy()
    ((s_mrs, c_mrs),) = mrs_schedule(mine, [(app, 0.5, acc_now, acc_after)], opts, theta)
    assert c_srs == c_mrs and min(c_mrs) >= 0
    assert s_mrs.completion == pytest.approx(s_srs.completion)
    check_schedule(mine, [s_mrs])

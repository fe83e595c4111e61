"""The DAG baselines' own retraining triggers, as their sources describe them: PASS retrains
every model once per period, Ekya decides each model once per retraining window (best
window-averaged accuracy), AdaInf retrains within the request's SLO slack split by impact
degree. Known answers on hand-built cases, and the triggers as they run in an episode."""

from __future__ import annotations

import numpy as np
import pytest

from edgegym.baselines import make_policy
from edgegym.baselines.dag import (
    adainf_choices,
    ekya_window_choices,
    idle_makespan,
    list_schedule,
    pass_choices,
    pass_due,
)
from edgegym.families.dag import DAGOffloadEnv
from edgegym.families.dag.cluster import EdgeCluster
from edgegym.families.dag.graph import DAGApp, RetrainOption

# u_h = (b_h MB, n_h, o_h, gain): both fit a one-unit server.
OPTS = [RetrainOption("small", 20.0, 1.0, 1.0, 0.5), RetrainOption("large", 100.0, 3.0, 1.0, 0.9)]


def _cluster() -> EdgeCluster:
    """Two one-unit servers (speeds 1 and 0.5), 100 MB/s links, controller 50 MB/s, storage
    200 and 100 MB/s."""
    return EdgeCluster(
        speed=np.array([1.0, 0.5]),
        capacity=np.array([1.0, 1.0]),
        link_mb_s=np.full((2, 2), 100.0),
        source_mb_s=np.array([50.0, 50.0]),
        storage_mb_s=np.array([200.0, 100.0]),
    )


def _app(models=("m0", "m1", "m2")) -> DAGApp:
    """Two entry tasks (0, 1) feeding a join (2)."""
    return DAGApp(
        name="join",
        models=models,
        workload=np.array([1.0, 1.0, 0.5]),
        demand=np.ones(3),
        input_mb=np.array([10.0, 5.0, 0.0]),
        edges=np.array([[0, 2], [1, 2]]),
        edge_mb=np.array([20.0, 10.0]),
        model_mb=np.array([4.0, 6.0, 8.0]),
    )


ACC_NOW = np.array([0.70, 0.60, 0.50])
ACC_AFTER = np.array([[0.80, 0.95], [0.823, 0.90], [0.70, 0.72]])


# ------------------------------------------------------------------ PASS
@pytest.mark.parametrize(
    ("t", "last", "due"),
    [(50.0, 0.0, False), (119.9, 0.0, False), (120.0, 0.0, True), (130.0, 0.0, True),
     (130.0, 125.0, False), (239.0, 125.0, False), (250.0, 125.0, True), (250.0, 240.0, False)],
)  # fmt: skip
def test_pass_due_once_per_period(t, last, due):
    assert pass_due(t, 120.0, last) is due


def test_pass_retrains_due_models_with_the_most_accurate_configuration():
    app = _app(models=("m0", "m1", "m0"))  # task 2 runs task 0's model: retrained once
    last = [0.0, 130.0, 0.0]
    assert pass_choices(app, 100.0, ACC_AFTER, OPTS, last, 120.0) == [-1, -1, -1]
    assert pass_choices(app, 150.0, ACC_AFTER, OPTS, last, 120.0) == [1, -1, -1]
    # A configuration without data (workload 0: an empty pool) is not used.
    empty = [OPTS[0], RetrainOption("large", 0.0, 0.0, 1.0, 0.0)]
    assert pass_choices(app, 150.0, ACC_AFTER, empty, last, 120.0) == [0, -1, -1]


# ------------------------------------------------------------------ Ekya
def test_ekya_window_choice_by_hand():
    """Mean speed 0.75, mean storage 150 MB/s: small takes 1/0.75 + 20/150 = 1.4667 s,
    large 3/0.75 + 100/150 = 4.6667 s. At t = 190 of a 200 s window (10 s left), task 0:
    small averages (1.4667 0.70 + 8.5333 0.80) / 10 = 0.78533, large (4.6667 0.70 + 5.3333
    0.95) / 10 = 0.83333: large. Task 1: small (1.4667 0.6 + 8.5333 0.823) / 10 = 0.79029,
    large (4.6667 0.6 + 5.3333 0.9) / 10 = 0.76: small. Task 2 was decided in this window."""
    got = ekya_window_choices(
        _cluster(), _app(), 190.0, ACC_NOW, ACC_AFTER, OPTS, [False, False, True], 200.0
    )
    assert got == [1, 0, -1]
    # Early in the window the most accurate configuration wins for every undecided task.
    got = ekya_window_choices(
        _cluster(), _app(), 200.0, ACC_NOW, ACC_AFTER, OPTS, [False] * 3, 200.0
    )
    assert got == [1, 1, 1]
    # With 1 s left no retraining ends in the window: nothing beats the old model.
    got = ekya_window_choices(
        _cluster(), _app(), 399.0, ACC_NOW, ACC_AFTER, OPTS, [False] * 3, 200.0
    )
    assert got == [-1, -1, -1]


def test_ekya_decides_each_model_once_per_window_at_its_first_request():
    env = DAGOffloadEnv("srs-edge-5apps", requests=300, duration_s=90.0)
    pol = make_policy("ekya-dag:window_s=30", env)
    obs, _ = env.reset(seed=0)
    pol.reset(0)
    first: dict[tuple[str, int], float] = {}  # (model, window) -> its first request's arrival
    retrained: list[tuple[str, float]] = []
    term = False
    while not term:
        snap = env.unwrapped.sim_state()
        if snap.kind == "admit":
            for m in snap.app.models:
                first.setdefault((m, int(snap.time_s // 30)), snap.time_s)
        action, _ = pol.predict(obs)
        obs, _, term, _, info = env.step(action)
        if info["epoch"] == "admit":
            retrained += [(snap.app.models[i], snap.time_s) for i in info["retrained"]]
    assert retrained, "Ekya retrained nothing"
    seen = set()
    for m, t in retrained:
        w = int(t // 30)
        assert w >= 1, "window 0 starts with empty pools"
        assert (m, w) not in seen, f"{m} retrained twice in window {w}"
        seen.add((m, w))
        assert t == first[(m, w)], f"{m} retrained at {t}, not at its first request of window {w}"


# ------------------------------------------------------------------ AdaInf
def test_adainf_fires_only_within_the_slo_slack():
    cluster, app = _cluster(), _app()
    alone = list_schedule(cluster.copy(), app, 0.0).completion
    assert idle_makespan(cluster, app) == pytest.approx(alone)
    # No slack: no retraining, however much accuracy it would buy.
    assert adainf_choices(cluster, app, 0.0, ACC_NOW, ACC_AFTER, OPTS, alone) == [-1, -1, -1]
    assert adainf_choices(cluster, app, 0.0, ACC_NOW, ACC_AFTER, OPTS, 0.5 * alone) == [-1] * 3
    # A huge SLO: every impacted task retrains with its most accurate configuration.
    assert adainf_choices(cluster, app, 0.0, ACC_NOW, ACC_AFTER, OPTS, alone + 1e3) == [1, 1, 1]
    # No accuracy to gain: no retraining.
    flat = np.repeat(ACC_NOW[:, None], 2, axis=1)
    assert adainf_choices(cluster, app, 0.0, ACC_NOW, flat, OPTS, alone + 1e3) == [-1, -1, -1]


def test_adainf_splits_the_slack_by_impact_degree():
    """Impact = best gain x (1 + descendants): task 0 0.25 x 2 = 0.5, task 1 0.3 x 2 = 0.6,
    task 2 0.22 x 1 = 0.22 (total 1.32). Retraining times on the tasks' planned servers (0, 1
    and 0): exec + data / storage + (inputs + model) / 100 MB/s."""
    cluster, app = _cluster(), _app()
    base = list_schedule(cluster.copy(), app, 0.0)
    srv = [base.tasks[i].server for i in range(3)]
    into = [4.0, 6.0, 38.0]

    def t_r(i, h):
        o = OPTS[h]
        return o.workload / (o.demand * cluster.speed[srv[i]]) + o.data_mb / cluster.storage[
            srv[i]
        ] + into[i] / 100.0  # fmt: skip

    share = np.array([0.5, 0.6, 0.22]) / 1.32
    # The slack that just lets task 1 retrain with "large": shares follow the impacts.
    slack = t_r(1, 1) / share[1] + 1e-9
    want = []
    for i in range(3):
        fits = [h for h in (0, 1) if t_r(i, h) <= slack * share[i]]
        want.append(max(fits, key=lambda h: ACC_AFTER[i, h]) if fits else -1)
    got = adainf_choices(cluster, app, 0.0, ACC_NOW, ACC_AFTER, OPTS, base.completion + slack)
    assert got == want and got[1] == 1
    # Just below it, task 1 falls back to what fits its share.
    got = adainf_choices(
        cluster, app, 0.0, ACC_NOW, ACC_AFTER, OPTS, base.completion + slack - 1e-6
    )
    assert got[1] != 1


@pytest.mark.parametrize("name", ["pass", "ekya-dag", "adainf"])
def test_baseline_parameters_come_from_the_scenario(name):
    env = DAGOffloadEnv("srs-edge-5apps", requests=20)
    pol = make_policy(name, env)
    sc = env.scenario["baselines"]
    attr, key = {
        "pass": ("period_s", "pass_period_s"),
        "ekya-dag": ("window_s", "ekya_window_s"),
        "adainf": ("slo_factor", "adainf_slo_factor"),
    }[name]
    assert getattr(pol, attr) == sc[key]

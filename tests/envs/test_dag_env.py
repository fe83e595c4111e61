"""edgegym/DAGOffload-v0: constraints under random actions, epochs in Algorithm 3's order, A_min,
policies, pools, bad DAG files."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

from edgegym.baselines import make_policy
from edgegym.families.dag import DAGOffloadEnv
from edgegym.scenarios import ScenarioError, load


def test_random_actions_never_violate_precedence_transfer_or_capacity(check_schedule):
    env = DAGOffloadEnv(record_timeline=True, requests=40, duration_s=20.0)
    rng = np.random.default_rng(0)
    env.reset(seed=1)
    term = False
    while not term:
        action = rng.integers(0, env.action_space.nvec)
        _, reward, term, _, _ = env.step(action)
        assert np.isfinite(reward)
    assert len(env.schedules) == 40 and not env.pending
    check_schedule(env.cluster, env.schedules)


def test_epochs_follow_algorithm_3():
    """Each place epoch presents the head that can start earliest; arrivals come first when
    they are earlier; rewards add up to the per-request objective."""
    env = DAGOffloadEnv(record_timeline=True, requests=60, duration_s=10.0)
    env.reset(seed=3)
    rng = np.random.default_rng(3)
    term, total, admitted, seen = False, 0.0, 0, []
    while not term:
        ep = env.epoch
        heads = [
            (min(env.cluster.ready_time(p.schedule, p.queue[0], j) for j in range(env.e)), k)
            for k, p in env.pending.items()
        ]
        if ep.kind == "admit":
            assert ep.k == admitted and all(ep.time_s <= r for r, _ in heads)
            admitted += 1
        else:
            assert ep.node == env.pending[ep.k].queue[0]
            assert ep.time_s == pytest.approx(min(heads)[0])
            if admitted < 60:
                assert ep.time_s < env.times[admitted]
        seen.append(ep.kind)
        _, reward, term, _, info = env.step(rng.integers(0, env.action_space.nvec))
        total += reward
    assert seen.count("admit") == 60
    assert seen.count("place") == sum(s.app.n for s in env.schedules)
    per_request = sum(r["objective"] for r in env.records)
    assert total == pytest.approx(-per_request)
    assert info["episode_metrics"]["objective"] == pytest.approx(per_request / 60)


def test_a_min_is_never_violated():
    env = DAGOffloadEnv(
        record_timeline=True, requests=60, duration_s=3000.0, a_min=0.7, pool_from_inputs=False
    )
    env.reset(seed=0)
    term, below_seen = False, 0
    while not term:
        snap = env.sim_state()
        # "never retrain" everywhere: the projection must retrain every task whose model is
        # below A_min (each one: the request's mean accuracy could hide one)
        _, _, term, _, info = env.step(np.zeros(env.action_space.shape, dtype=np.int64))
        if snap.kind == "admit":
            below = {int(v) for v in np.flatnonzero(snap.acc_now < 0.7 - 1e-9)}
            assert below <= set(info["retrained"]), (below, info["retrained"])
            below_seen += len(below)
    assert below_seen > 0 and info["episode_metrics"]["retrainings"] > 0


@pytest.mark.parametrize("name", ["list", "srs", "mrs"])
def test_policies_beat_random_on_the_objective(name):
    def run(policy):
        env = DAGOffloadEnv(record_timeline=True, requests=60, duration_s=20.0)
        pol = make_policy(policy, env)
        obs, _ = env.reset(seed=0)
        pol.reset(0)
        term = False
        while not term:
            a, _ = pol.predict(obs)
            obs, _, term, _, info = env.step(a)
        return info["episode_metrics"]["objective"]

    assert run(name) < run("random")


@pytest.mark.parametrize(
    ("spec", "rule", "pools"),
    [
        ("mrs", {}, False),  # Algorithm 2 as written (chain, a node on every task)
        ("mrs:always=false,chain=false", {"always": False, "chain": False}, False),
        ("mrs", {}, True),
        ("mrs:always=false,chain=false", {"always": False, "chain": False}, True),
    ],
)
def test_mrs_policy_reproduces_algorithm_3_on_a_batch(check_schedule, spec, rule, pools):
    """Requests that all arrive at once: the environment with the ``mrs`` policy places every
    node where :func:`mrs_schedule` (Algorithm 3 as a function) does, with either rule of
    Algorithm 2, from the accuracies each request sees at its admission."""
    from edgegym.baselines.dag import mrs_schedule

    env = DAGOffloadEnv(
        record_timeline=True, requests=6, duration_s=1e-9, a_min=0.0, pool_from_inputs=pools
    )
    pol = make_policy(spec, env)
    obs, _ = env.reset(seed=4)
    env.times[:] = 0.0
    env._advance()
    cluster = env.cluster.copy()
    batch = []
    term = False
    while not term:
        snap = env.sim_state()
        if snap.kind == "admit":  # what the request sees after earlier requests' retraining
            now, after = snap.acc_now.copy(), snap.acc_after.copy()
            batch.append((snap.app, 0.0, now, after, snap.options))
        a, _ = pol.predict(obs)
        obs, _, term, _, _ = env.step(a)
    want = mrs_schedule(cluster, batch, env.options, env.theta, 0.0, **rule)
    got = {r["request"]: s for r, s in zip(env.records, env.schedules, strict=True)}
    assert sum(len(s.tasks) for s, _ in want) == sum(len(s.tasks) for s in env.schedules)
    if not pools and rule == {}:
        assert all(min(c) >= 0 for _, c in want)  # a retraining node on every task
    for k, (sched, _) in enumerate(want):
        assert {i: (p.server, round(p.start, 9)) for i, p in got[k].tasks.items()} == {
            i: (p.server, round(p.start, 9)) for i, p in sched.tasks.items()
        }
    check_schedule(env.cluster, env.schedules)


def _write(tmp_path, edges):
    raw = yaml.safe_load(open(load("srs-edge-5apps").source).read())
    raw["applications"][1]["edges"] = edges
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(raw))
    return str(path)


@pytest.mark.parametrize(
    ("edges", "needle"),
    [([[0, 1, 0.4], [1, 2, 0.3], [2, 0, 0.1]], "cycle"), ([[0, 7, 0.4]], "dangling")],
)
def test_malformed_dag_in_scenario_is_a_clear_error(tmp_path, edges, needle):
    with pytest.raises(ScenarioError, match=needle) as err:
        DAGOffloadEnv(_write(tmp_path, edges), record_timeline=True)
    assert "image-processing" in str(err.value) and "bad.yaml" in str(err.value)


@pytest.mark.parametrize("name", ["list", "srs", "mrs", "pass", "ekya-dag", "adainf"])
def test_dag_policies_give_valid_actions(name):
    env = DAGOffloadEnv(record_timeline=True, requests=25, duration_s=200.0)
    pol = make_policy(name, env)
    obs, _ = env.reset(seed=2)
    pol.reset(2)
    term = False
    while not term:
        a, _ = pol.predict(obs)
        mask = env.action_masks()
        nvec = env.action_space.nvec
        offsets = np.concatenate([[0], np.cumsum(nvec)[:-1]])
        assert all(mask[o + v] for o, v in zip(offsets, a, strict=True)), "masked entry chosen"
        obs, _, term, _, info = env.step(a)
    assert info["episode_metrics"]["accuracy"] > 0


def test_pool_of_drifted_samples_limits_retraining(tmp_path):
    raw = yaml.safe_load(open(load("srs-edge-5apps").source).read())
    raw["pool_from_inputs"] = False
    for m in raw["models"].values():
        m["pool_mb_per_s"] = 0.5
    path = tmp_path / "pool.yaml"
    path.write_text(yaml.safe_dump(raw))
    env = DAGOffloadEnv(str(path), record_timeline=True, requests=30)
    env.reset(seed=0)
    snap = env.sim_state()
    t, full = snap.time_s, env.options
    for i in range(snap.app.n):
        pool = 0.5 * t  # nothing retrained yet: the pool grew since t = 0
        for h, o in enumerate(snap.options[i]):
            frac = min(1.0, pool / full[h].data_mb)
            assert o.data_mb == pytest.approx(full[h].data_mb * frac)
            assert o.workload == pytest.approx(full[h].workload * frac)
    # Retrain task 0's model now: right after, its pool is empty and it cannot retrain again.
    n = env.n_nodes
    action = np.zeros(1 + n, dtype=np.int64)
    action[1] = 1
    _, _, _, _, info = env.step(action)
    assert 0 in info["retrained"]
    model = snap.app.models[0]
    idx = np.array([env.model_index[model]])
    assert np.all(env._data_fraction(idx, t) == 0.0)


def test_pool_from_inputs_grows_with_requests_and_empties_on_retraining():
    env = DAGOffloadEnv(
        record_timeline=True, requests=30
    )  # the bundled scenario pools request inputs
    env.reset(seed=0)
    snap = env.sim_state()
    assert all(o.workload == 0 for row in snap.options for o in row)  # nothing seen yet
    assert not env.action_masks()[env.e :].reshape(env.n_nodes, -1)[:, 1:].any()
    env.step(np.zeros(1 + env.n_nodes, dtype=np.int64))  # admit without retraining
    app = snap.app
    for i, name in enumerate(app.models):
        sent = app.input_mb[i] + sum(d for _, d in app.preds(i))
        assert env.pool_mb[env.model_index[name]] >= sent - 1e-12


def test_reward_is_the_objective_weighted_sum_of_the_signed_terms():
    env = DAGOffloadEnv(
        record_timeline=True,
        requests=12,
        theta=3.0,
        **{"objective.energy": 0.5, "objective.completion": 2.0},
    )
    _, info = env.reset(seed=1)
    done, seen_energy = False, False
    while not done:
        _, reward, done, _, info = env.step(np.zeros(env.action_space.shape, dtype=np.int64))
        t = info["reward_terms"]
        assert reward == pytest.approx(
            2.0 * t["completion"] + 3.0 * t["accuracy"] + 0.5 * t["energy"]
        )
        seen_energy |= t["energy"] < 0
    assert seen_energy  # placements cost energy, so the energy weight matters
    with pytest.raises(ValueError, match=r"objective\.power"):
        DAGOffloadEnv(record_timeline=True, requests=12, **{"objective.power": 1.0})


def test_each_application_can_train_models_of_its_own():
    """``model_scope: application`` (the bundled SRS scenarios): the slides' applications come
    with their own datasets (lifelogging on Adience, the others from [22] and [8]), so two
    applications that both run a MobileNetV3 have two models, each with its own pool and
    accuracy. A request feeds only
    its own application's models; under ``shared`` both applications feed one model."""
    shared = DAGOffloadEnv("srs-edge-5apps", requests=30, model_scope="shared")
    own = DAGOffloadEnv("srs-edge-5apps", requests=30)  # the bundled scenarios' setting
    sc = load("srs-edge-5apps")
    pairs = {(a["name"], t["model"]) for a in sc["applications"] for t in a["tasks"]}
    assert sorted(own.model_names) == sorted(f"{a}/{m}" for a, m in pairs)
    assert len(shared.model_names) == len(sc["models"]) < len(own.model_names)
    k = own.model_index["social-media/mobilenetv3"]
    assert own.params.m_start[k] == sc["models"]["mobilenetv3"]["start_accuracy"]
    for env in (shared, own):
        env.reset(seed=0)
        app = env.sim_state().app
        env.step(np.zeros(1 + env.n_nodes, dtype=np.int64))  # admit without retraining
        fed = {env.model_index[name] for name in app.models}
        assert (env.pool_mb[sorted(fed)] > 0).all()
        others = np.setdiff1d(np.arange(len(env.model_names)), sorted(fed))
        assert (env.pool_mb[others] == 0).all()
        mobilenet = [n for n in env.model_names if n.endswith("mobilenetv3")]
        if env is own:  # the application's own MobileNetV3 only
            assert sum(env.pool_mb[env.model_index[n]] > 0 for n in mobilenet) <= 1
            assert all(n.startswith(app.name + "/") for n in app.models)

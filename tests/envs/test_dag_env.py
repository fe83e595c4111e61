"""edgegym/DAGOffload-v0: constraints under random actions, A_min, policies, bad DAG files."""

from __future__ import annotations

import numpy as np
import pytest
import yaml
from edgegym.baselines import make_policy

from edgegym.envs.dag import DAGOffloadEnv
from edgegym.scenarios import ScenarioError, load


def test_random_actions_never_violate_precedence_transfer_or_capacity(check_schedule):
    env = DAGOffloadEnv(requests=40, duration_s=20.0)
    rng = np.random.default_rng(0)
    env.reset(seed=1)
    term = False
    while not term:
        action = rng.integers(0, env.action_space.nvec)
        _, _, term, _, info = env.step(action)
        assert np.isfinite(info["objective"])
    check_schedule(env.cluster, env.schedules)


def test_a_min_is_never_violated():
    env = DAGOffloadEnv(requests=60, duration_s=3000.0, a_min=0.7)
    env.reset(seed=0)
    term = False
    while not term:
        # "never retrain" everywhere: the projection must retrain models below A_min
        _, _, term, _, info = env.step(np.zeros(env.action_space.shape, dtype=np.int64))
        assert info["accuracy"] >= 0.7 - 1e-9 or info["retrained"]
    assert info["episode_metrics"]["retrainings"] > 0


@pytest.mark.parametrize("name", ["list", "srs"])
def test_policies_beat_random_on_the_objective(name):
    def run(policy):
        env = DAGOffloadEnv(requests=60)
        pol = make_policy(policy, env)
        obs, _ = env.reset(seed=0)
        pol.reset(0)
        term = False
        while not term:
            a, _ = pol.predict(obs)
            obs, _, term, _, info = env.step(a)
        return info["episode_metrics"]["objective"]

    assert run(name) < run("random")


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
        DAGOffloadEnv(_write(tmp_path, edges))
    assert "image-processing" in str(err.value) and "bad.yaml" in str(err.value)


@pytest.mark.parametrize("name", ["list", "srs", "pass", "ekya-dag", "adainf"])
def test_dag_policies_give_valid_actions(name):
    env = DAGOffloadEnv(requests=25, duration_s=200.0)
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
    for m in raw["models"].values():
        m["pool_mb_per_s"] = 0.5
    path = tmp_path / "pool.yaml"
    path.write_text(yaml.safe_dump(raw))
    env = DAGOffloadEnv(str(path), requests=30)
    env.reset(seed=0)
    app, _ = env._current()
    t = env.now
    opts = env.task_options(app, t)
    full = env.options
    for i in range(app.n):
        pool = 0.5 * t  # nothing retrained yet: the pool grew since t = 0
        for h, o in enumerate(opts[i]):
            frac = min(1.0, pool / full[h].data_mb)
            assert o.data_mb == pytest.approx(full[h].data_mb * frac)
            assert o.workload == pytest.approx(full[h].workload * frac)
    # Retrain task 0's model now: right after, its pool is empty and it cannot retrain again.
    n = env.n_nodes
    action = np.zeros(3 * n, dtype=np.int64)
    action[2 * n] = 1
    _, _, _, _, info = env.step(action)
    assert 0 in info["retrained"]
    env.times[env._k] = env.times[env._k - 1]  # the next request at the same instant
    env.app_of[env._k] = env.app_of[env._k - 1]
    mask = env.action_masks()[2 * n * env.e :].reshape(n, -1)
    assert not mask[0, 1:].any() and mask[0, 0]

"""edgegym/DAGOffload-v0 at the edges of valid scenarios (the fuzz audit's items 5 and 8): every
observation inside ``observation_space`` (a model's floor above its ceiling is refused; the
``nodes`` table is clamped into its box as the ``servers`` table is), and no two
applications' models merged into one under ``model_scope: application``.

Each test here failed on the code before its fix."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from edgegym.families.dag import DAGOffloadEnv
from edgegym.families.dag.observation import OBS_HIGH, in_box
from edgegym.scenarios import ScenarioError

MODEL = {"m": {"start_accuracy": 0.8, "ceiling": 0.9}}
ONE_CONFIG = [{"name": "r", "data_mb": 10, "workload": 1, "demand": 1, "gain": 0.5}]


def _masked_episode(env: DAGOffloadEnv, seed: int = 0) -> list[dict[str, np.ndarray]]:
    """Every observation of one episode driven by random actions the mask allows."""
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    e, h, n = env.params.e, len(env.params.options), env.params.n_nodes
    seen, done = [obs], False
    while not done:
        mask = env.action_masks()
        action = [rng.choice(np.flatnonzero(mask[:e]))] + [
            rng.choice(np.flatnonzero(mask[e + i * (h + 1) : e + (i + 1) * (h + 1)]))
            for i in range(n)
        ]
        obs, _, term, trunc, _ = env.step(np.array(action))
        seen.append(obs)
        done = term or trunc
    return seen


# ------------------------------------------------------------------ 5a: floor above the ceiling
@pytest.mark.parametrize(
    ("overrides", "needle"),
    [
        (
            {"models.tinyyolo.floor": 0.95},
            "models.tinyyolo.floor: floor 0.95 is above the ceiling 0.9 of model 'tinyyolo'",
        ),
        (
            {"models": {"m": {"start_accuracy": 0, "ceiling": 1e-9, "floor": 1}}},
            "models.m.floor: floor 1 is above the ceiling 1e-09 of model 'm'",
        ),
    ],
)
def test_a_floor_above_the_ceiling_is_refused(overrides: dict[str, Any], needle: str):
    """The audit's reproducers: accuracy drifted down to a floor above the ceiling, so the
    observation's gap to the ceiling (``nodes[:, 5]``) went to -0.05 and -1.0."""
    kw = {"requests": 5, **overrides}
    if "models" in overrides:
        kw["applications"] = [{"name": "a", "tasks": [{"model": "m", "workload": 0.3}]}]
        kw["retrain_configs"] = ONE_CONFIG
    with pytest.raises(ScenarioError, match="drifts down to the floor") as err:
        DAGOffloadEnv("srs-edge-3servers", **kw)
    assert needle in str(err.value)


def test_a_floor_equal_to_the_ceiling_and_a_start_below_the_floor_are_accepted():
    """Only the ordering the dynamics rely on is refused: a start below the floor is the floor
    (drift stops there), a floor at the ceiling a model that never drifts below it."""
    models = {"m": {"start_accuracy": 0.1, "ceiling": 0.6, "floor": 0.6}}
    env = DAGOffloadEnv(
        "srs-edge-3servers",
        requests=5,
        models=models,
        retrain_configs=ONE_CONFIG,
        applications=[{"name": "a", "tasks": [{"model": "m", "workload": 0.3}]}],
    )
    for obs in _masked_episode(env):
        assert env.observation_space.contains(obs)


# ------------------------------------------------------------------ 5b: nodes clamped to the box
def test_a_large_execution_time_is_clamped_to_the_box():
    """A workload of 1e5 on 0.1 units: the mean execution time and the Eq. 10 priority
    (columns 7 and 8) were 1.58e6 at reset, above the box's 1e6."""
    env = DAGOffloadEnv(
        "srs-edge-3servers",
        requests=5,
        models=MODEL,
        applications=[{"name": "a", "tasks": [{"model": "m", "workload": 1e5, "demand": 0.1}]}],
    )
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    assert obs["nodes"][0, 7] == obs["nodes"][0, 8] == OBS_HIGH


def test_slow_links_with_large_data_stay_in_the_box():
    """A 16-task chain of 1 TB transfers on 1 Mbps links: the clock passes 1e8 s, so the
    seconds since a model's retraining / 100 (column 6) passed the box's 1e6."""
    k = 16
    slow = {
        "speed_tflops": [0.1, 0.1],
        "link_gbps": [0.001, 0.001],
        "controller_gbps": [0.001, 0.001],
        "storage_gbps": [0.001, 0.001],
    }
    chain = {
        "name": "a",
        "tasks": [{"model": "m", "workload": 1.0, "input_mb": 1e6}] * k,
        "edges": [[i, i + 1, 1e6] for i in range(k - 1)],
    }
    env = DAGOffloadEnv(
        "srs-edge-3servers",
        requests=4,
        duration_s=10.0,
        max_nodes=k,
        max_edges=k,
        servers=slow,
        models=MODEL,
        pool_from_inputs=False,
        retrain_configs=[{"name": "r", "data_mb": 1e6, "workload": 1, "demand": 1, "gain": 0.5}],
        applications=[chain],
    )
    seen = _masked_episode(env)
    assert all(env.observation_space.contains(obs) for obs in seen)
    assert max(obs["nodes"][:, 6].max() for obs in seen) == OBS_HIGH


def test_a_retraining_with_gain_one_keeps_the_gap_to_the_ceiling_non_negative():
    """0.3 + (0.9 - 0.3) rounds one ulp above 0.9: with a gain of 1 and the full data, a
    retrained model's gap to its ceiling (column 5) was -1.1e-16, outside the box."""
    env = DAGOffloadEnv(
        "srs-edge-3servers",
        requests=20,
        pool_from_inputs=False,
        models={"m": {"start_accuracy": 0.3, "ceiling": 0.9, "floor": 0.0, "drift_per_s": 0.0}},
        retrain_configs=[{"name": "r", "data_mb": 10, "workload": 1, "demand": 1, "gain": 1.0}],
        applications=[{"name": "a", "tasks": [{"model": "m", "workload": 0.3}]}],
    )
    obs, _ = env.reset(seed=0)
    e, h = env.params.e, len(env.params.options)
    seen, done, retrained = [obs], False, 0
    while not done:  # retrain whenever the mask allows it
        mask = env.action_masks()
        cfg = mask[e : e + h + 1]
        action = np.zeros(1 + env.params.n_nodes, dtype=np.int64)
        action[1] = 1 if cfg[1] else 0
        obs, _, term, trunc, info = env.step(action)
        seen.append(obs)
        retrained += len(info.get("retrained", ()))
        done = term or trunc
    assert 0.3 + (0.9 - 0.3) > 0.9  # the rounding this test relies on
    assert retrained > 0  # the case the test is about happened
    assert all(env.observation_space.contains(obs) for obs in seen)


def test_in_box_clamps_both_ends_and_keeps_every_value_inside():
    """One rule for the ``nodes`` and ``servers`` tables: values inside the box keep their
    bits (``-0.0`` included, as the golden trajectories digest them)."""
    table = np.array([-1e-16, -0.0, 0.0, 0.5, OBS_HIGH, 1.58e6, np.inf], dtype=np.float32)
    out = in_box(table)
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, [0.0, 0.0, 0.0, 0.5, OBS_HIGH, OBS_HIGH, OBS_HIGH])
    assert np.signbit(out[1]) and not np.signbit(out[0])
    assert out is not table and table[0] < 0  # a new array


# ------------------------------------------------------------------ 8: one name, one model
def test_a_model_name_with_a_slash_is_refused():
    """App ``a`` with model ``b/c`` and app ``a/b`` with model ``c`` were both ``a/b/c`` under
    ``model_scope: application``: one accuracy and one pool for two models, silently. Model
    names may not contain "/" (under ``shared`` too, where ``b/c`` read model ``c``'s entry)."""
    models = {"b/c": {"start_accuracy": 0.8, "ceiling": 0.9}, "c": dict(MODEL["m"])}
    apps = [
        {"name": "a", "tasks": [{"model": "b/c", "workload": 0.3}]},
        {"name": "a/b", "tasks": [{"model": "c", "workload": 0.3}]},
    ]
    for scope in ("application", "shared"):
        with pytest.raises(ScenarioError, match="model names must not contain '/', got 'b/c'"):
            DAGOffloadEnv(
                "srs-edge-3servers",
                requests=5,
                model_scope=scope,
                models=models,
                applications=apps,
            )


def test_an_application_name_with_a_slash_keeps_its_own_models():
    """An application's name may contain "/": with none in model names, the last "/" of
    ``application/model`` ends the application, so the names stay distinct."""
    models = {"c": dict(MODEL["m"]), "b": {"start_accuracy": 0.5, "ceiling": 0.6}}
    apps = [
        {"name": "a", "tasks": [{"model": "b", "workload": 0.3}]},
        {"name": "a/b", "tasks": [{"model": "c", "workload": 0.3}]},
    ]
    env = DAGOffloadEnv(
        "srs-edge-3servers", requests=5, model_scope="application", models=models, applications=apps
    )
    assert env.model_names == ["a/b", "a/b/c"]
    assert list(env.params.m_start) == [0.5, 0.8]

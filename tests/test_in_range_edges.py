"""Values just inside a field's range still give results inside their meaning: accuracies and
goodput never negative. A MIG tenant's ``ceiling`` may be any value in (0, 1]; at 0.05 the
new-class accuracy target, ``ceiling - difficulty * log2(classes / pretrain)``, went below
zero and took ``info["accuracy"]`` and ``info["goodput"]`` with it (down to -2.73 per step
under static-half)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import edgegym  # noqa: F401  (registers the ids)
from edgegym.baselines import make_policy
from edgegym.scenarios import resolve


def _mig_scenario(tmp_path, ceilings: tuple[float, float]) -> str:
    text = resolve("migrator-w1").read_text()
    for old, new in zip(("ceiling: 0.9,", "ceiling: 0.97,"), ceilings, strict=True):
        assert old in text
        text = text.replace(old, f"ceiling: {new},")
    path = tmp_path / "low-ceiling.yaml"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("policy", ["migrator", "static-half"])
@pytest.mark.parametrize("ceilings", [(0.05, 0.05), (0.001, 1.0)])
def test_a_low_mig_ceiling_keeps_accuracy_and_goodput_non_negative(tmp_path, policy, ceilings):
    env = gym.make(
        "edgegym/MIGReconfig-v0",
        scenario=_mig_scenario(tmp_path, ceilings),
        window_s=60,  # long enough for retraining to finish and reach the target
    )
    pol = make_policy(policy, env)
    obs, info = env.reset(seed=0)
    pol.reset(0)
    done = False
    while not done:
        obs, reward, term, trunc, info = env.step(pol.predict(obs)[0])
        done = term or trunc
        assert np.isfinite(reward)
        for key in ("goodput", "accuracy"):
            if key in info:
                assert np.all(np.asarray(info[key]) >= 0.0), (key, info[key])
    metrics = info["episode_metrics"]
    for key, value in metrics.items():
        if "goodput" in key or "accuracy" in key or "attainment" in key:
            assert 0.0 <= value <= 1.0 or ("goodput" in key and value >= 0.0), (key, value)


@pytest.mark.parametrize("vector", [False, True])
def test_unknown_reset_options_are_refused_naming_them(vector):
    from edgegym.core.registry import ENV_IDS

    for env_id in ENV_IDS:
        env = (
            gym.make_vec(env_id, 2, vectorization_mode="vector_entry_point")
            if vector
            else gym.make(env_id)
        )
        env.reset(seed=0, options={})  # what SB3 passes
        with pytest.raises(ValueError, match=r"unknown option.*'windows'"):
            env.reset(seed=0, options={"windows": 3})
        env.close()


@pytest.mark.parametrize(
    ("scenario", "most"), [("etf-tx2-resnet50-mobilenetv2", 8), ("migrator-w1", 4)]
)
def test_too_many_tenants_are_refused_by_count_before_any_is_checked(scenario, most, monkeypatch):
    """Refused on the list's length (pydantic checks it first), in a short line that gives
    the count, not the entries."""
    import yaml

    from edgegym.scenarios import ScenarioError, validate

    raw = yaml.safe_load(resolve(scenario).read_text())
    raw["tenants"] = raw["tenants"] * 50_000
    with pytest.raises(ScenarioError) as err:
        validate(raw, scenario)
    message = str(err.value)
    assert f"tenants: must have at most {most} entries, got 100000 entries" in message
    assert len(message) < 120 and "{" not in message


def test_units_per_quantum_are_bounded_where_etf_works_unit_by_unit():
    from edgegym.families.energy.schema import MAX_UNITS
    from edgegym.scenarios import ScenarioError, load

    with pytest.raises(ScenarioError, match=f"600000 units per quantum; at most {MAX_UNITS}"):
        load("etf-tx2-resnet50-mobilenetv2", quantum_s=60, unit_s=1e-4)
    load("etf-tx2-resnet50-mobilenetv2", quantum_s=MAX_UNITS * 0.001, unit_s=0.001)  # the bound

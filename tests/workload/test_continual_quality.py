"""Per-window retraining quality (``workload.continual.config_quality``) where no configuration
gains anything, and the continual env's numbers staying finite there.

Regression (fuzz audit, finding 1): ``drift.sensitivity.partial_layers: [0, 0]`` with every
retraining configuration at ``layers_retrained < 1`` made every configuration's quality 0, and
normalising by the best one divided 0 by 0: NaN observations (outside the observation space),
NaN rewards and NaN episode metrics, which ``edgegym evaluate`` printed as ``- ± -``.
"""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
import pytest

import edgegym
from edgegym.baselines import make_policy
from edgegym.workload.continual import RetrainConfig, config_quality

ENV = "edgegym/ContinualLearning-v0"
#: Every window's lam is 0 and no configuration retrains every layer: no quality anywhere.
ZERO = {"epochs_tau": [3, 20], "data_exponent": [0.05, 0.8], "partial_layers": [0, 0]}
OVERRIDES = {
    "windows": 2,
    "streams": 2,
    "retrain_configs": [
        {"name": "last", "layers_retrained": 0.3},
        {"name": "half", "layers_retrained": 0.5, "epochs": 5, "gpu_seconds": 3.0},
    ],
    "uniform": {"config1": "half", "config2": "last"},
    "drift.sensitivity": ZERO,
}


def _configs(*layers: float) -> list[RetrainConfig]:
    return [
        RetrainConfig(
            name=f"c{i}", epochs=1 + 3 * i, layers_retrained=x, data_fraction=0.5 + 0.1 * i
        )
        for i, x in enumerate(layers)
    ]


def test_no_configuration_gains_anything_quality_zero() -> None:
    q = config_quality(_configs(0.3, 0.5, 0.9), ZERO, (3, 4), np.random.default_rng(0))
    assert q.shape == (3, 4, 3)
    assert np.array_equal(q, np.zeros_like(q))  # not NaN


def test_quality_elsewhere_is_the_normalised_formula_bit_for_bit() -> None:
    """Windows where some configuration gains something: ``q / q.max`` as before, bit for bit;
    windows that underflow to 0 everywhere get quality 0."""
    configs = _configs(0.3, 1.0, 0.6, 0.2)
    sens = {"epochs_tau": [0.1, 50], "data_exponent": [0.0, 5.0], "partial_layers": [0.0, 1.0]}
    rng = np.random.default_rng(1)
    got = config_quality(configs, sens, (5, 6), rng)
    rng = np.random.default_rng(1)
    tau = rng.uniform(0.1, 50, (5, 6))[..., None]
    beta = rng.uniform(0.0, 5.0, (5, 6))[..., None]
    lam = rng.uniform(0.0, 1.0, (5, 6))[..., None]
    epochs = np.array([c.epochs for c in configs], dtype=float)
    data = np.array([c.data_fraction for c in configs])
    layers = np.array([c.layers_retrained for c in configs])
    q = (1.0 - np.exp(-epochs / tau)) * data**beta * lam ** ((1.0 - layers) / 0.7)
    assert got.tobytes() == (q / q.max(axis=-1, keepdims=True)).tobytes()
    assert np.all(got.max(axis=-1) == 1.0)
    # Underflow: data_fraction 1e-70 at exponent 5 is 0 in float64, so is every quality.
    tiny = [RetrainConfig(name="t", data_fraction=1e-70, layers_retrained=1.0)]
    sens = {"epochs_tau": [3, 3], "data_exponent": [5, 5], "partial_layers": [1, 1]}
    under = config_quality(tiny, sens, (2, 2), np.random.default_rng(0))
    assert np.array_equal(under, np.zeros((2, 2, 1)))


@pytest.mark.parametrize("policy", ["uniform", "random", "thief", "ekya-fixedconfig"])
def test_env_stays_finite_and_in_its_space(policy: str) -> None:
    env = gym.make(ENV, scenario="ekya-waymo", **OVERRIDES, **{"drift.config_jitter": 0.0})
    u = env.unwrapped
    pol = make_policy(policy, env)
    pol.reset(0)
    obs, _ = env.reset(seed=0)
    # Retraining gains nothing: every configuration ends where the never-retrained model is.
    prof = u.profile
    assert np.array_equal(prof.quality, np.zeros_like(prof.quality))
    assert np.array_equal(prof.post_acc, np.broadcast_to(prof.floor[..., None], prof.shape))
    done = False
    while not done:
        assert env.observation_space.contains(obs)
        assert all(np.isfinite(v).all() for v in obs.values())
        action, _ = pol.predict(obs)
        obs, reward, done, _, info = env.step(action)
        assert math.isfinite(reward)
    assert env.observation_space.contains(obs)
    metrics = info["episode_metrics"]
    assert all(math.isfinite(v) for v in metrics.values()), metrics


def test_evaluate_table_has_numbers() -> None:
    res = edgegym.evaluate(
        ENV, ["uniform", "random"], scenario="ekya-waymo", episodes=1, overrides=OVERRIDES,
        progress=False,
    )  # fmt: skip
    assert res.ok
    assert "- ± -" not in res.table()


def test_a_metric_that_is_not_finite_is_an_error_naming_it() -> None:
    """What would be shown as ``-`` raises, naming the metric."""
    env = gym.make(ENV, scenario="ekya-waymo", windows=1, streams=1)
    u = env.unwrapped
    env.reset(seed=0)
    assert all(math.isfinite(v) for v in u.episode_metrics().values())
    u.state.acc_integral[0, 0, 0] = np.nan
    with pytest.raises(FloatingPointError, match="accuracy=nan"):
        u.episode_metrics()

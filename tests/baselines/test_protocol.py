"""The policy protocol's contract for callers: one clear error for misuse."""

from __future__ import annotations

import gymnasium as gym
import pytest
from edgegym.baselines import make_policy

import edgegym  # noqa: F401  (registers the ids)


@pytest.mark.parametrize(
    ("env_id", "policy"),
    [
        ("edgegym/ContinualLearning-v0", "thief"),
        ("edgegym/EnergyFairShare-v0", "etf"),
        ("edgegym/MIGReconfig-v0", "migrator"),
        ("edgegym/DAGOffload-v0", "mrs"),
    ],
)
def test_predict_before_reset_says_so(env_id, policy):
    env = gym.make(env_id)
    pol = make_policy(policy, env)
    with pytest.raises(RuntimeError, match=rf"{policy}: predict\(\) before .*reset\(\)"):
        pol.predict(env.observation_space.sample())
    obs, _ = env.reset(seed=0)
    pol.reset(0)
    action, _ = pol.predict(obs)
    assert env.action_space.contains(action)

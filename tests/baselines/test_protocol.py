"""The policy protocol's contract for callers: one clear error for misuse."""

from __future__ import annotations

import gymnasium as gym
import pytest

import edgegym  # noqa: F401  (registers the ids)
from edgegym.baselines import make_policy


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


def test_thief_delta_follows_the_share_quantum():
    """The thief's default Delta is the quantum multiple nearest 0.1 GPUs, so it plays a
    scenario on a 0.25-GPU grid (property tests found 0.1 failing there mid-episode); a
    Delta off the grid is refused when the policy is made."""
    env = gym.make("edgegym/ContinualLearning-v0", share_quantum=0.25, windows=1, streams=2)
    pol = make_policy("thief", env)
    assert pol.delta == 0.25
    obs, _ = env.reset(seed=0)
    pol.reset(0)
    done = False
    while not done:
        obs, _, term, trunc, _ = env.step(pol.predict(obs)[0])
        done = term or trunc
    assert make_policy("thief", gym.make("edgegym/ContinualLearning-v0")).delta == 0.1
    fine = gym.make("edgegym/ContinualLearning-v0", share_quantum=0.05)
    assert make_policy("thief", fine).delta == pytest.approx(0.1)
    with pytest.raises(ValueError, match=r"delta=0\.1 must be a positive multiple of the quantum"):
        make_policy("thief:delta=0.1", env)

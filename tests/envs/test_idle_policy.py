"""Doing nothing must not pay: on every family's default scenario the all-zero action (idle
GPU, no retraining; the masks allow it) scores below the family's published scheduler, and the
fairness indices of an idle GPU are those the ETF paper's definitions imply."""

from __future__ import annotations

import numpy as np
import pytest

import edgegym
from edgegym.baselines import DEFAULT_POLICY
from edgegym.core.registry import ENV_IDS
from edgegym.families.energy.timeslice import fairness


class DoNothing:
    """The all-zero action every step (projected by the environment like any other)."""

    def __init__(self, env):
        self.space = env.action_space

    def predict(self, obs, state=None, episode_start=None, deterministic=True):
        return np.zeros(self.space.shape or (), dtype=self.space.dtype), state


@pytest.mark.parametrize("env_id", sorted(ENV_IDS))
def test_doing_nothing_scores_below_the_published_scheduler(env_id):
    published = DEFAULT_POLICY[ENV_IDS[env_id][1]]
    res = edgegym.evaluate(
        env_id,
        {published: published, "idle": lambda env: DoNothing(env)},
        episodes=1,
        seed=7,
        progress=False,
        overrides={"windows": 2} if "MIGReconfig" in env_id else None,  # 2 of W1's 4 windows
    )
    assert res.ok, res.errors
    assert res.result("idle")["mean_return"] < res.result(published)["mean_return"], res.table()


def test_idle_energy_episode_is_unfair_not_perfect():
    res = edgegym.evaluate(
        "edgegym/EnergyFairShare-v0",
        {"idle": lambda env: DoNothing(env)},
        episodes=1,
        seed=0,
        progress=False,
    )
    metrics = res.result("idle")["per_episode"][0]["metrics"]
    assert metrics["F_S"] == 0.0 and metrics["mean_step_F_S"] == 0.0


def test_fairness_when_nothing_or_nobody_ran():
    assert fairness(np.zeros(2), np.zeros(2)) == (0.0, 0.0, 0.0)  # both starved
    assert fairness(np.zeros(1), np.zeros(1)) == (0.0, 0.0, 0.0)  # the only tenant starved
    assert fairness(np.array([]), np.array([])) == (1.0, 1.0, 1.0)  # nobody wanted the GPU
    assert fairness(np.array([3.0]), np.array([6.0])) == (1.0, 1.0, 1.0)
    f_t, f_e, f_s = fairness(np.array([1.0, 2.0]), np.array([4.0, 2.0]), np.array([1.0, 2.0]))
    assert (f_t, f_e, f_s) == (1.0, 0.25, 0.25)  # weight-normalised min / max

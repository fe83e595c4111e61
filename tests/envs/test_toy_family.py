"""A fifth family is one folder plus one registration line: the toy family of
``tests/families/toy/`` (the file roles of ``edgegym/families/<name>/``: schema, reward,
dynamics, env, vector) registered with ``register_family(FAMILY)`` passes the checkers and the
conformance basics, and the evaluator, the flat views, ``Family.params`` and the CLI serve it
without edits elsewhere; its ``vector_entry_point`` gives it a native vector env that steps
exactly as its single envs. Its optimum is known (see the package's docstring).
"""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.utils.env_checker import check_env as gym_check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env

import edgegym
from edgegym import cli
from edgegym.core.registry import ENV_IDS, register_family, unregister_family
from edgegym.scenarios import ScenarioError, load
from edgegym.wrappers import make_flat
from tests.families.toy import FAMILY, TOY_ID
from tests.families.toy.vector import ToyShareVectorEnv


class Optimal:
    """The known optimum: tenant 0 gets exactly its demand."""

    def predict(self, obs, state=None, episode_start=None, deterministic=True):
        return int(round(float(obs[0]) * UNITS)), state


UNITS = 4  # the toy.yaml scenario's units


@pytest.fixture
def toy():
    register_family(FAMILY)
    yield Path(FAMILY.default_scenario)
    unregister_family("toy")
    assert TOY_ID not in ENV_IDS and TOY_ID not in gym.registry


def test_toy_family_passes_the_checkers_and_is_reproducible(toy):
    gym_check_env(gym.make(TOY_ID).unwrapped)
    sb3_check_env(gym.make(TOY_ID), warn=False)
    runs = []
    for env in (gym.make(TOY_ID), pickle.loads(pickle.dumps(gym.make(TOY_ID)))):
        obs, _ = env.reset(seed=3)
        env.action_space.seed(3)
        traj, done = [obs], False
        while not done:
            obs, r, done, _, _ = env.step(env.action_space.sample())
            traj.append(np.append(obs, r))
        runs.append(np.concatenate(traj))
    np.testing.assert_array_equal(runs[0], runs[1])
    assert load(toy)["family"] == "toy"
    params = FAMILY.params(load(toy, units=3))
    assert (params.units, params.term_weights) == (3, {"served": 1.0})
    with pytest.raises(ScenarioError, match="units"):
        load(toy, units=99)
    with pytest.raises(TypeError, match="unexpected keyword argument 'frameskip'"):
        gym.make(TOY_ID, frameskip=1)
    assert make_flat(TOY_ID).action_space == spaces.Discrete(UNITS + 1)


def test_evaluator_and_cli_serve_the_toy_family(toy, tmp_path, capsys):
    res = edgegym.evaluate(
        TOY_ID, {"optimal": Optimal(), "random": "random"}, episodes=3, seed=0, progress=False
    )
    assert res.ok, res.errors
    assert res.result("optimal")["mean_return"] > res.result("random")["mean_return"]
    assert "served" in res.table()  # the family's headline metric
    # the optimum is known: every step serves min(d0 + d1, units)
    env = gym.make(TOY_ID)
    obs, _ = env.reset(seed=0)
    best, got, done = 0.0, 0.0, False
    while not done:
        best += min(int(env.unwrapped.state.demand[0].sum()), UNITS) / UNITS
        obs, r, done, _, _ = env.step(Optimal().predict(obs)[0])
        got += r
    assert got == pytest.approx(best)

    assert cli.main(["envs"]) == 0
    assert TOY_ID in capsys.readouterr().out
    out = tmp_path / "toy.json"
    code = cli.main(
        ["evaluate", TOY_ID, "--policy", "random", "--episodes", "2", "--json", str(out)]
    )
    assert code == 0
    data = json.loads(out.read_text())
    assert data["env"] == TOY_ID and data["results"][0]["policy"] == "random"


def test_toy_family_gets_a_native_vector_env(toy):
    """Its ``vector_entry_point`` is all a family adds for ``make_vec``: N toy envs in one
    batch step exactly as N single envs seeded s + i."""
    from gymnasium.vector import AutoresetMode
    from test_vector import assert_vector_matches_singles  # same folder (pytest prepends it)

    from edgegym.core.registry import get_family

    vec = gym.make_vec(TOY_ID, num_envs=3, autoreset_mode=AutoresetMode.SAME_STEP)
    assert isinstance(vec, ToyShareVectorEnv) and vec.action_masks().shape == (3, UNITS + 1)
    assert_vector_matches_singles(get_family("toy"), {}, seed=5, n=6)

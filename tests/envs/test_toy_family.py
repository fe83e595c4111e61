"""A fifth family registered at run time (issue: a new family touches few places): a toy
family declared here passes the checkers and the conformance basics, and the evaluator, the
flat views and the CLI serve it without edits elsewhere. It writes a batched dynamics
(:class:`ToyDynamics`, the contract of :mod:`edgegym.core.dynamics`) and two small env classes,
on :class:`~edgegym.core.env.EdgeEnv` and :class:`~edgegym.core.vector.EdgeVectorEnv`; its
``vector_entry_point`` gives it a native vector env that steps exactly as its single envs.

The toy: each step one GPU of ``units`` units is split between two tenants whose demand (in
units) is drawn every step; reward term ``served`` = units that met demand / ``units``. Its
optimum is known: give tenant 0 ``min(d0, units)``, the rest to tenant 1, which serves
``min(d0 + d1, units)``.
"""

from __future__ import annotations

import json
import pickle
from dataclasses import dataclass
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import yaml
from gymnasium import spaces
from gymnasium.utils.env_checker import check_env as gym_check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env

import edgegym
from edgegym import cli
from edgegym.core.dynamics import Record
from edgegym.core.env import EdgeEnv
from edgegym.core.registry import (
    ENV_IDS,
    Family,
    ScenarioSchema,
    register_family,
    unregister_family,
)
from edgegym.core.vector import EdgeVectorEnv
from edgegym.scenarios import ScenarioError, load
from edgegym.wrappers import make_flat

TOY_ID = "edgegym/ToyShare-v0"
TOP = {"name": None, "family": None, "description": None, "steps": None, "units": None}


def _validate(raw, src, base_dir):
    unknown = set(raw) - {*TOP, "objective"}
    if unknown:
        raise ScenarioError(f"{src}: {sorted(unknown)[0]}: unknown field")
    data = dict(raw)
    for key, lo, hi in (("steps", 1, 1000), ("units", 1, 20)):
        v = data.get(key)
        if not isinstance(v, int) or not lo <= v <= hi:
            raise ScenarioError(f"{src}: {key} = {v!r}: expected an integer in [{lo}, {hi}]")
    data["objective"] = {"served": 1.0, **dict(raw.get("objective") or {})}
    return data


@dataclass
class ToyState:
    """N toy envs (the contract of :mod:`edgegym.core.dynamics`)."""

    k: np.ndarray  # (N,) int64 steps taken
    demand: np.ndarray  # (N, 2) int64 units each tenant wants this step
    served: np.ndarray  # (N,) sum of the served term
    rng: list  # (N,) each env's generator (demand is drawn every step)


@dataclass(frozen=True)
class ToyParams:
    steps: int
    units: int


class ToyDynamics:
    """The toy's dynamics, batched: what a fifth family writes in ``sim/<family>.py``."""

    terms = ("served",)

    def initial(self, p: ToyParams, rngs) -> ToyState:
        demand = np.array([r.integers(0, p.units + 1, size=2) for r in rngs], dtype=np.int64)
        m = len(rngs)
        return ToyState(np.zeros(m, np.int64), demand.reshape(m, 2), np.zeros(m), list(rngs))

    def mask(self, p: ToyParams, state: ToyState) -> np.ndarray:
        return np.ones((len(state.k), p.units + 1), dtype=bool)

    def step(self, p: ToyParams, state: ToyState, actions: np.ndarray):
        a = np.asarray(actions, dtype=np.int64)
        met = np.minimum(a, state.demand[:, 0]) + np.minimum(p.units - a, state.demand[:, 1])
        served = met / p.units
        state.served = state.served + served
        state.k = state.k + 1
        state.demand = np.array([r.integers(0, p.units + 1, size=2) for r in state.rng])
        n = len(a)
        return state, Record(np.zeros(n), np.ones(n), {"served": served})

    def observation(self, p: ToyParams, state: ToyState) -> np.ndarray:
        return (state.demand / p.units).astype(np.float32)

    def done(self, p: ToyParams, state: ToyState) -> np.ndarray:
        return state.k >= p.steps

    def metrics(self, p: ToyParams, state: ToyState, i: int) -> dict[str, float]:
        return {"served": float(state.served[i]) / p.steps}


def toy_core(scenario):
    """Params, dynamics and spaces of a toy scenario: what single and vector env both build."""
    p = ToyParams(int(scenario["steps"]), int(scenario["units"]))
    obs = spaces.Box(0.0, 1.0, shape=(2,), dtype=np.float32)
    return p, ToyDynamics(), obs, spaces.Discrete(p.units + 1)


class ToyShareEnv(EdgeEnv):
    """Toy family: ``Discrete(units + 1)`` units for tenant 0 (the rest to tenant 1); what a
    fifth family writes in ``envs/<family>/env.py`` (EdgeEnv runs the episode)."""

    env_id = TOY_ID
    metadata = {"render_modes": []}  # noqa: RUF012

    def __init__(self, scenario=None, record_timeline: bool = False, **overrides):
        sc = self._setup(
            scenario or ENV_IDS[TOY_ID][2], overrides, render_mode=None,
            record_timeline=record_timeline,
        )  # fmt: skip
        self._use(*toy_core(sc), dict(sc["objective"]))


class ToyShareVectorEnv(EdgeVectorEnv):
    """What a fifth family writes in ``envs/<family>/vector.py``."""

    env_id = TOY_ID

    def _build(self, scenario):
        return toy_core(scenario)


class Optimal:
    """The known optimum: tenant 0 gets exactly its demand."""

    def predict(self, obs, state=None, episode_start=None, deterministic=True):
        return int(round(float(obs[0]) * UNITS)), state


UNITS = 4


@pytest.fixture
def toy(tmp_path: Path):
    path = tmp_path / "toy.yaml"
    path.write_text(yaml.safe_dump({"name": "toy", "family": "toy", "steps": 20, "units": UNITS}))
    family = Family(
        name="toy",
        env_id=TOY_ID,
        entry_point=f"{__name__}:ToyShareEnv",
        vector_entry_point=f"{__name__}:ToyShareVectorEnv",
        default_scenario=str(path),
        summary="toy: one GPU split between two tenants",
        schema=ScenarioSchema(_validate, TOP, {}, frozenset({"objective"})),
        headline_metrics=(("served", "served"),),
    )
    register_family(family)
    yield path
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

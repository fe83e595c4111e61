"""Native vector environments, every family that has one (issue 13, acceptance 1): a vector env
of N = 8 seeded s .. s + 7, driven by the same actions, gives exactly what 8 single envs give:
observations, rewards, terminations, masks, energy, reward terms and episode metrics.

A family opts in by naming a ``vector_entry_point`` in its :class:`~edgegym.core.registry.Family`;
this file then tests it with no further entry. Family-specific checks (autoreset details,
projection corner cases) live in the families' own test files.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.envs.registration import load_env_creator as load_object
from gymnasium.vector import AutoresetMode

import edgegym  # noqa: F401  (registers the ids)
from edgegym.core.registry import FAMILIES

N = 8

#: Small scenarios per family (fast episodes), and one override that changes the dynamics.
SMALL: dict[str, list[tuple[str | None, dict[str, Any]]]] = {
    "energy": [
        (None, {"quanta": 40}),
        ("etf-tx2-arrivals", {"quanta": 30, "objective.energy": 0.5}),
        ("etf-dynamic-3", {}),
    ],
    "mig": [
        ("migrator-w5", {"window_s": 12, "windows": 2}),
        ("migrator-w1", {"window_s": 10, "windows": 2, "objective.energy": 0.3}),
        ("migrator-w5", {"window_s": 12, "windows": 2, "mps.shares": 14, "preinit": False}),
    ],
    "continual": [
        (None, {"streams": 3, "windows": 3}),
        ("ekya-waymo", {"streams": 4, "windows": 2, "gpus": 2}),
    ],
    "dag": [(None, {"requests": 30}), ("srs-edge-3servers", {"requests": 20})],
}

VECTOR_FAMILIES = [f for f in FAMILIES.values() if f.vector_entry_point]
CASES = [
    pytest.param(fam, scenario, overrides, seed, id=f"{fam.name}-{scenario or 'default'}-s{seed}")
    for fam in VECTOR_FAMILIES
    for k, (scenario, overrides) in enumerate(SMALL.get(fam.name, [(None, {})]))
    for seed in (k, 100 + k)
]


def masked_random(rng: np.random.Generator, mask: np.ndarray, space: gym.Space) -> np.ndarray:
    """(N, ...) actions: per env (and per entry of a MultiDiscrete) uniform among the allowed
    values; 0 where nothing is allowed."""
    out = []
    for row in mask:
        if isinstance(space, gym.spaces.Discrete):
            ok = np.flatnonzero(row)
            out.append(int(rng.choice(ok)) if ok.size else 0)
            continue
        nvec = space.nvec.ravel()
        vals, offset = np.zeros(nvec.size, dtype=np.int64), 0
        for j, n in enumerate(nvec):
            ok = np.flatnonzero(row[offset : offset + int(n)])
            vals[j] = rng.choice(ok) if ok.size else 0
            offset += int(n)
        out.append(vals.reshape(space.nvec.shape))
    return np.asarray(out)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.tobytes() == b.tobytes()


def _row(obs: Any, i: int) -> Any:
    return {k: v[i] for k, v in obs.items()} if isinstance(obs, dict) else obs[i]


@pytest.mark.parametrize(("fam", "scenario", "overrides", "seed"), CASES)
def test_vector_equals_single_envs(fam, scenario, overrides, seed) -> None:
    kwargs = dict(overrides)
    if scenario is not None:
        kwargs["scenario"] = scenario
    assert_vector_matches_singles(fam, kwargs, seed)


def assert_vector_matches_singles(fam: Any, kwargs: dict[str, Any], seed: int, n: int = N) -> None:
    """Step ``fam``'s vector env of ``n`` envs (seed ``seed``) and ``n`` single envs (seeds
    ``seed + i``) with the same masked random actions until every env has ended; everything
    each env returns must be equal, bit for bit. (Also used by the toy family's test.)"""
    vec = load_object(fam.vector_entry_point)(num_envs=n, **kwargs)
    singles = [gym.make(fam.env_id, **kwargs).unwrapped for _ in range(n)]
    space = vec.single_action_space
    assert space == singles[0].action_space
    assert vec.single_observation_space == singles[0].observation_space
    obs, info = vec.reset(seed=seed)
    for i, env in enumerate(singles):
        o, inf = env.reset(seed=seed + i)
        assert _same(_row(obs, i), o)
        np.testing.assert_array_equal(info["action_mask"][i], inf["action_mask"])
    np.testing.assert_array_equal(vec.action_masks(), info["action_mask"])
    rng = np.random.default_rng(seed)
    alive = np.ones(n, dtype=bool)
    steps = 0
    while alive.any():
        actions = masked_random(rng, vec.action_masks(), space)
        obs, rew, term, trunc, info = vec.step(actions)
        steps += 1
        assert obs in vec.observation_space
        for i, env in enumerate(singles):
            if not alive[i]:
                continue  # ended: the vector env resets it; compared no further
            o, r, t, tr, inf = env.step(actions[i])
            assert _same(_row(obs, i), o), f"obs of env {i} at step {steps}"
            assert rew[i] == r, f"reward of env {i} at step {steps}: {rew[i]} vs {r}"
            assert (term[i], trunc[i]) == (t, tr)
            np.testing.assert_array_equal(info["action_mask"][i], inf["action_mask"])
            assert info["energy_j"][i] == inf["energy_j"]
            for name, v in inf["reward_terms"].items():
                assert info["reward_terms"][name][i] == v, name
            if t or tr:
                alive[i] = False
                assert info["_episode_metrics"][i]
                for key, v in inf["episode_metrics"].items():
                    assert _same(info["episode_metrics"][key][i], v), key
        assert steps < 50_000, "runaway episode"
    vec.close()


@pytest.mark.parametrize("fam", VECTOR_FAMILIES, ids=lambda f: f.name)
def test_make_vec_uses_the_native_vector_env(fam) -> None:
    """``gymnasium.make_vec(id, N)`` goes through the family's ``vector_entry_point``, in both
    autoreset modes, and its masks have the batch axis."""
    scenario, overrides = SMALL.get(fam.name, [(None, {})])[0]
    kwargs = dict(overrides, **({"scenario": scenario} if scenario else {}))
    for mode in (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP):
        vec = gym.make_vec(fam.env_id, num_envs=3, autoreset_mode=mode, **kwargs)
        assert isinstance(vec, load_object(fam.vector_entry_point))
        assert vec.metadata["autoreset_mode"] == mode
        obs, info = vec.reset(seed=0)
        assert obs in vec.observation_space
        assert info["action_mask"].shape[0] == 3 and vec.action_masks().shape[0] == 3
        rng = np.random.default_rng(0)
        ended = False
        for _ in range(20_000):
            obs, rew, term, _, info = vec.step(
                masked_random(rng, vec.action_masks(), vec.single_action_space)
            )
            assert obs in vec.observation_space and np.isfinite(rew).all()
            if term.any():
                ended = True
                if mode == AutoresetMode.SAME_STEP:
                    i = int(np.flatnonzero(term)[0])
                    assert info["_final_obs"][i]
                    assert info["final_obs"][i] in vec.single_observation_space
                    assert "episode_metrics" in info["final_info"]
                break
        assert ended
        vec.close()


@pytest.mark.parametrize("fam", VECTOR_FAMILIES, ids=lambda f: f.name)
def test_bad_vector_arguments_are_clear(fam) -> None:
    cls = load_object(fam.vector_entry_point)
    with pytest.raises(ValueError, match="num_envs must be >= 1"):
        cls(num_envs=0)
    with pytest.raises(TypeError, match="num_envs must be an integer"):
        cls(num_envs=2.5)
    with pytest.raises(TypeError, match="unexpected keyword argument 'no_such_field'"):
        cls(num_envs=2, no_such_field=1)
    vec = cls(num_envs=2)
    with pytest.raises(RuntimeError, match="reset"):
        vec.step(vec.action_space.sample())
    vec.reset(seed=0)
    with pytest.raises(ValueError, match="actions has shape"):
        vec.step(np.zeros((5, 5), dtype=np.int64))
    with pytest.raises(ValueError, match="is outside"):
        vec.step(np.full(vec.action_space.shape, -1))


FLAT_FAMILIES = [f for f in VECTOR_FAMILIES if f.flat_id]


@pytest.mark.parametrize("fam", FLAT_FAMILIES, ids=lambda f: f.name)
def test_flat_vector_equals_flat_single_envs(fam) -> None:
    """``make_vec(<Flat id>, N)`` is the native vector env in :class:`FlatVectorEnv`; each env
    steps exactly as ``gymnasium.make(<Flat id>)`` does (same joint actions and masks)."""
    scenario, overrides = SMALL.get(fam.name, [(None, {})])[0]
    kwargs = dict(overrides, **({"scenario": scenario} if scenario else {}))
    n = 4
    vec = gym.make_vec(fam.flat_id, num_envs=n, **kwargs)
    assert type(vec).__name__ == "FlatVectorEnv"
    singles = [gym.make(fam.flat_id, **kwargs) for _ in range(n)]
    assert vec.single_action_space == singles[0].action_space
    assert vec.single_observation_space == singles[0].observation_space
    obs, info = vec.reset(seed=7)
    for i, env in enumerate(singles):
        o, inf = env.reset(seed=7 + i)
        assert _same(obs[i], o)
        np.testing.assert_array_equal(info["action_mask"][i], inf["action_mask"])
    rng = np.random.default_rng(0)
    alive = np.ones(n, dtype=bool)
    while alive.any():
        actions = masked_random(rng, vec.action_masks(), vec.single_action_space)
        obs, rew, term, trunc, info = vec.step(actions)
        for i, env in enumerate(singles):
            if not alive[i]:
                continue
            o, r, t, tr, inf = env.step(actions[i])
            assert _same(obs[i], o) and rew[i] == r and (term[i], trunc[i]) == (t, tr)
            np.testing.assert_array_equal(info["action_mask"][i], inf["action_mask"])
            np.testing.assert_array_equal(info["joint_action"][i], inf["joint_action"])
            alive[i] = not (t or tr)
    vec.close()


@pytest.mark.parametrize("fam", FLAT_FAMILIES, ids=lambda f: f.name)
def test_flat_vector_same_step_autoreset(fam) -> None:
    scenario, overrides = SMALL.get(fam.name, [(None, {})])[0]
    kwargs = dict(overrides, **({"scenario": scenario} if scenario else {}))
    vec = gym.make_vec(fam.flat_id, num_envs=2, autoreset_mode=AutoresetMode.SAME_STEP, **kwargs)
    vec.reset(seed=0)
    rng = np.random.default_rng(0)
    for _ in range(20_000):
        obs, _, term, _, info = vec.step(
            masked_random(rng, vec.action_masks(), vec.single_action_space)
        )
        if term.any():
            i = int(np.flatnonzero(term)[0])
            assert info["final_obs"][i] in vec.single_observation_space
            assert info["final_info"]["action_mask"][i].shape == (len(vec.joint),)
            assert obs in vec.observation_space
            return
    raise AssertionError("no episode ended")


#: Each family's overrides that shorten a bundled scenario's episode (and its scenario prefix).
SHORTER = {
    "continual": ("ekya-", {"windows": 2}),
    "mig": ("migrator-", {"window_s": 15, "windows": 2}),
    "energy": ("etf-", {"quanta": 40}),
    "dag": ("srs-", {"requests": 25}),
}


def _bundled_cases() -> list[Any]:
    from edgegym.scenarios import bundled

    out = []
    for fam in VECTOR_FAMILIES:
        prefix, short = SHORTER.get(fam.name, (None, {}))
        for name in bundled():
            if prefix and name.startswith(prefix):
                out.append(pytest.param(fam, name, short, id=f"{fam.name}-{name}"))
    return out


@pytest.mark.parametrize(("fam", "scenario", "short"), _bundled_cases())
def test_every_bundled_scenario_steps_alike_in_the_vector_env(fam, scenario, short) -> None:
    """Every bundled scenario, its episode shortened (a measured table's first windows), gives
    in the vector env exactly what single envs give."""
    if scenario == "ekya-table1":
        short = {}  # its two windows are the example
    assert_vector_matches_singles(fam, {"scenario": scenario, **short}, seed=3, n=3)

"""SB3's VecEnv over the native vector envs (edgegym.agents.sb3.vecenv): step for step what
``DummyVecEnv`` of single envs gives (observations, rewards, dones, terminal observations,
masks, episode stats), and MaskablePPO trains on it."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from sb3_contrib.common.maskable.utils import get_action_masks, is_masking_supported
from stable_baselines3.common.env_util import make_vec_env

from edgegym.agents.sb3.vecenv import SB3VecEnv, make_sb3_vec_env
from edgegym.core.registry import FAMILIES

#: Every base and Flat id whose family has a native vector env.
IDS = [i for f in FAMILIES.values() if f.vector_entry_point for i in (f.env_id, f.flat_id) if i]
SMALL = {
    "energy": {"quanta": 6},
    "mig": {"scenario": "migrator-w5", "window_s": 6, "windows": 1},
    "continual": {"streams": 2, "windows": 2},
    "dag": {"requests": 6},
}


def _small(env_id: str) -> dict:
    from edgegym.core.registry import family_of_id

    return dict(SMALL.get(family_of_id(env_id).name, {}))


@pytest.mark.parametrize("env_id", IDS)
def test_native_equals_dummy_vec_env(env_id) -> None:
    kw = _small(env_id)
    ref = make_vec_env(env_id, n_envs=3, env_kwargs=kw)
    nat = make_sb3_vec_env(env_id, 3, **kw)
    assert is_masking_supported(nat)
    assert nat.observation_space == ref.observation_space
    assert nat.action_space == ref.action_space
    ref.seed(5)
    nat.seed(5)
    a, b = ref.reset(), nat.reset()
    assert _same(a, b)
    rng = np.random.default_rng(0)
    ended = 0
    for t in range(400):
        m1, m2 = get_action_masks(ref), get_action_masks(nat)
        np.testing.assert_array_equal(m1, m2)
        acts = _masked(rng, m1, ref.action_space)
        ref.step_async(acts)
        o1, r1, d1, i1 = ref.step_wait()
        nat.step_async(acts)
        o2, r2, d2, i2 = nat.step_wait()
        assert _same(o1, o2) and np.array_equal(r1, r2) and np.array_equal(d1, d2), t
        for x, y in zip(i1, i2, strict=True):
            if "terminal_observation" in x:
                ended += 1
                assert _same(x["terminal_observation"], y["terminal_observation"])
                assert x["episode"]["r"] == y["episode"]["r"]
                assert x["episode"]["l"] == y["episode"]["l"]
                assert x["TimeLimit.truncated"] == y["TimeLimit.truncated"]
        if ended >= 6:
            break
    assert ended >= 3
    nat.close()
    ref.close()


def _same(a, b) -> bool:
    if isinstance(a, dict):
        return all(np.array_equal(a[k], b[k]) for k in a)
    return np.array_equal(a, b)


def _masked(rng, masks, space) -> np.ndarray:
    if isinstance(space, gym.spaces.Discrete):
        return np.array([rng.choice(np.flatnonzero(r)) for r in masks])
    out = []
    for row in masks:
        vals, off = [], 0
        for n in space.nvec:
            ok = np.flatnonzero(row[off : off + n])
            vals.append(rng.choice(ok) if ok.size else 0)
            off += n
        out.append(vals)
    return np.array(out)


def test_maskable_ppo_trains_on_the_native_vec_env() -> None:
    from sb3_contrib import MaskablePPO

    venv = make_sb3_vec_env("edgegym/EnergyFairShare-Flat-v0", 8, quanta=10)
    model = MaskablePPO("MlpPolicy", venv, n_steps=16, batch_size=64, seed=0, verbose=0)
    model.learn(256)
    assert model.num_timesteps >= 256
    assert len(model.ep_info_buffer) > 0  # episode stats reached SB3's logger


def test_clear_errors() -> None:
    vec = gym.make_vec("edgegym/EnergyFairShare-v0", 2, vectorization_mode="vector_entry_point")
    with pytest.raises(ValueError, match="SameStep"):
        SB3VecEnv(vec)
    no_native = [f.env_id for f in FAMILIES.values() if not f.vector_entry_point]
    if no_native:
        with pytest.raises(ValueError, match="no native vector env"):
            make_sb3_vec_env(no_native[0], 2)


def test_native_vec_env_for_an_env_that_needs_no_view() -> None:
    """MIG observes a flat Box and acts in Discrete: the native vector env is used as it is
    (it once asked for a joint-action catalogue of the Discrete space and crashed)."""
    from edgegym.agents.sb3.envs import EnvFactory, native_vec_env

    wrappers = {"flatten_obs": False, "discrete_actions": False, "max_actions": 1024}
    venv = native_vec_env(EnvFactory("edgegym/MIGReconfig-v0", None, {}, wrappers), 2)
    assert venv is not None
    assert venv.num_envs == 2
    assert venv.action_space == gym.spaces.Discrete(496)
    venv.seed(0)
    assert venv.reset().shape == (2, 32)
    masks = np.stack(venv.env_method("action_masks"))
    assert masks.shape == (2, 496) and masks.any(axis=1).all()
    venv.close()

"""Flat views (edgegym.wrappers): observation flattening, joint actions, masks, flat ids."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.utils.env_checker import check_env as gym_check_env
from gymnasium.wrappers import PassiveEnvChecker
from stable_baselines3.common.env_checker import check_env as sb3_check_env

import edgegym  # noqa: F401  (registers the ids)
from edgegym.baselines import make_policy
from edgegym.core.registry import FLAT_IDS
from edgegym.wrappers import (
    DictFlattener,
    DiscreteActions,
    FlatObservation,
    JointActions,
    TeacherAction,
    generic_catalogue,
    joint_actions,
    make_flat,
    make_masked,
)

CONT = "edgegym/ContinualLearning-v0"
ENERGY = "edgegym/EnergyFairShare-v0"
MIG = "edgegym/MIGReconfig-v0"
SMALL = {
    CONT: {"streams": 3, "windows": 3},
    ENERGY: {"quanta": 12},
    MIG: {"scenario": "migrator-w5", "window_s": 12, "windows": 2},
    "edgegym/DAGOffload-v0": {"requests": 4},
}


def _random_valid(mask: np.ndarray, rng: np.random.Generator) -> int:
    return int(rng.choice(np.flatnonzero(mask)))


def _md_valid(action: np.ndarray, md_mask: np.ndarray, nvec: np.ndarray) -> bool:
    offsets = np.concatenate([[0], np.cumsum(nvec)[:-1]])
    return bool(np.all(md_mask[offsets + action]))


# ----------------------------------------------------------------------------- observations
def test_flat_observation_matches_the_dict_contents():
    env = gym.make(CONT, **SMALL[CONT])
    flat = FlatObservation(gym.make(CONT, **SMALL[CONT]))
    assert flat.keys == ("globals", "stream_mask", "streams")  # the Dict space's (sorted) order
    obs, _ = env.reset(seed=3)
    fobs, _ = flat.reset(seed=3)
    assert fobs.dtype == np.float32 and flat.observation_space.contains(fobs)
    expected = np.concatenate([obs[k].ravel() for k in ("globals", "stream_mask", "streams")])
    np.testing.assert_array_equal(fobs, expected)
    for key in flat.keys:
        np.testing.assert_array_equal(fobs[flat.slices[key]], obs[key].ravel())
    back = flat.unflatten(fobs)
    for key in flat.keys:
        np.testing.assert_array_equal(back[key], obs[key])
    # Bounds follow the same order.
    np.testing.assert_array_equal(
        flat.observation_space.high[flat.slices["streams"]],
        env.observation_space["streams"].high.ravel(),
    )


def test_dict_flattener_rejects_nested_or_discrete_entries():
    with pytest.raises(TypeError, match="nope"):
        DictFlattener(spaces.Dict({"nope": spaces.Discrete(3)}))
    with pytest.raises(TypeError):
        DictFlattener(spaces.Discrete(3))
    ok = DictFlattener(spaces.Dict({"b": spaces.MultiBinary(2), "a": spaces.Box(0, 1, (2, 2))}))
    assert ok.space.shape == (6,)


# ----------------------------------------------------------------------------- joint actions
def test_full_product_indexing_and_mask():
    nvec = np.array([2, 3, 4])
    joint = JointActions(nvec)
    assert len(joint) == 24 and joint.is_product
    for i in range(24):
        assert joint.index(joint.vector(i)) == i
    np.testing.assert_array_equal(joint.vector(23), [1, 2, 3])  # last entry fastest
    rng = np.random.default_rng(0)
    for _ in range(20):
        md = rng.random(nvec.sum()) < 0.6
        md[[0, 2, 5]] = True  # one valid value per entry at least
        mask = joint.mask(md)
        for i in range(24):
            assert mask[i] == _md_valid(joint.vector(i), md, nvec)
            fixed = joint.decode(i, md)
            assert _md_valid(fixed, md, nvec)
            if mask[i]:
                np.testing.assert_array_equal(fixed, joint.vector(i))


def test_catalogue_mask_rule_one_valid_index_per_distinct_action():
    nvec = np.array([3, 3])
    table = np.array([[0, 0], [2, 2], [1, 2], [2, 1], [0, 1]])
    joint = JointActions(nvec, table)
    md = np.array([True, True, False, False, True, True])  # entry 0 in {0, 1}, entry 1 in {1, 2}
    mask = joint.mask(md)
    # [0,0] -> [0,1] (equals the valid [0,1]: not its representative); [2,2] -> [1,2] (valid
    # [1,2] stands for it); [2,1] -> [1,1] (no valid member: the first stands); [0,1] valid.
    np.testing.assert_array_equal(mask, [False, False, True, True, True])
    np.testing.assert_array_equal(joint.decode(3, md), [1, 1])
    np.testing.assert_array_equal(joint.decode(0, md), [0, 1])
    # An entry with no valid value at all still leaves a valid index.
    assert joint.mask(np.array([False, False, False, True, True, True])).any()


def test_generic_catalogue_is_bounded_and_covers_every_entry():
    nvec = np.array([5] + [4] * 30)
    table = generic_catalogue(nvec, 200)
    assert len(table) <= 200 + 5
    for d in range(nvec.size):
        assert (table[:, d] > 0).any()
    assert not (table == 0).all(axis=1)[1:].any()  # only the first row is all zeros


@pytest.mark.parametrize("env_id", [CONT, ENERGY])
def test_discrete_mask_consistent_with_multidiscrete_mask(env_id):
    env = DiscreteActions(gym.make(env_id, **SMALL[env_id]))
    nvec = env.env.action_space.nvec
    rng = np.random.default_rng(1)
    _obs, info = env.reset(seed=0)
    done, steps = False, 0
    while not done:
        md = env.unwrapped.action_masks()
        mask = env.action_masks()
        np.testing.assert_array_equal(mask, info["action_mask"])
        assert mask.any()
        valid = np.flatnonzero(mask)
        decoded = np.array([env.joint.decode(i, md) for i in range(len(env.joint))])
        for i in valid:
            assert _md_valid(decoded[i], md, nvec)
        # one valid index per distinct executable joint action
        assert len({tuple(decoded[i]) for i in valid}) == valid.size
        assert {tuple(r) for r in decoded} == {tuple(decoded[i]) for i in valid}
        a = _random_valid(mask, rng)
        _obs, _, term, trunc, info = env.step(a)
        np.testing.assert_array_equal(info["joint_action"], decoded[a])
        done = term or trunc
        steps += 1
    assert steps > 1


def test_energy_catalogue_holds_every_work_conserving_split_and_the_etf_actions():
    env = gym.make(ENERGY)
    joint = joint_actions(env)
    u = env.unwrapped.params
    assert len(joint) == u.units + 1  # two tenants: (0, U), (1, U - 1), ..., (U, 0)
    table = np.array([joint.vector(i) for i in range(len(joint))])
    assert (table.sum(axis=1) == u.units).all() and (table[:, 2:] == 0).all()
    env.reset(seed=0)
    for name in ("etf", "tf", "ef"):
        action, _ = make_policy(name, env).predict(None)
        assert joint.index(action) is not None, name


def test_energy_catalogue_coarsens_when_too_large():
    env = gym.make(ENERGY, scenario="etf-dynamic-3")
    joint = joint_actions(env, max_actions=200)
    assert 100 < len(joint) <= 200
    table = np.array([joint.vector(i) for i in range(len(joint))])
    assert (table.sum(axis=1) == env.unwrapped.params.units).all()


@pytest.mark.parametrize(
    "policy", ["uniform-c1-50", "uniform-c2-30", "uniform-c1-90", "no-retrain"]
)
def test_continual_catalogue_holds_the_uniform_and_no_retrain_actions(policy):
    # a_min = 0: PickConfigs' inference choice is then the catalogue's (most accurate that fits)
    env = gym.make(CONT, scenario="ekya-table1", a_min=0.0)
    joint = joint_actions(env)
    assert joint.rule == "continual-catalogue"
    env.reset(seed=0)
    action, _ = make_policy(policy, env).predict(None)
    assert joint.index(action) is not None
    # With a_MIN binding, the retraining choice and the shares are still there.
    env = gym.make(CONT, scenario="ekya-table1")
    env.reset(seed=0)
    action = make_policy(policy, env).predict(None)[0].reshape(-1, 4)
    table = np.array([joint.vector(i) for i in range(len(joint))]).reshape(len(joint), -1, 4)
    assert (table[:, :, [0, 2, 3]] == action[None, :, [0, 2, 3]]).all(axis=(1, 2)).any()


def test_catalogues_are_deterministic():
    """The same catalogue in this process and in others with other string hashes (an order
    taken from a set of names would differ there): a shipped agent's actions mean the same."""
    script = (
        "import gymnasium as gym, edgegym; from edgegym.wrappers import joint_actions; "
        f"print(*(joint_actions(gym.make(i)).fingerprint() for i in {[CONT, ENERGY]!r}))"
    )
    here = [joint_actions(gym.make(env_id)).fingerprint() for env_id in (CONT, ENERGY)]
    assert here == [joint_actions(gym.make(env_id)).fingerprint() for env_id in (CONT, ENERGY)]
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        out = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
        )
        assert out.stdout.split() == [str(f) for f in here], hash_seed


# ----------------------------------------------------------------------------- flat envs
@pytest.mark.parametrize("env_id", [CONT, ENERGY, MIG])
def test_make_flat_gives_box_and_discrete(env_id):
    env = make_flat(env_id, **SMALL[env_id])
    assert isinstance(env.observation_space, spaces.Box)
    assert len(env.observation_space.shape) == 1
    assert isinstance(env.action_space, spaces.Discrete)
    obs, _info = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    mask = env.get_wrapper_attr("action_masks")()
    assert mask.shape == (env.action_space.n,) and mask.any()


def _wrapper_types(env: gym.Env) -> list[type]:
    out = []
    while isinstance(env, gym.Wrapper):
        out.append(type(env))
        env = env.env
    return out


@pytest.mark.parametrize("flat_id", sorted(FLAT_IDS))
def test_flat_ids_pass_the_checkers_and_pickle(flat_id):
    kwargs = SMALL[FLAT_IDS[flat_id]]
    env = gym.make(flat_id, **kwargs)
    # Gymnasium's passive checker wraps the flat view the user steps, and only that one
    assert isinstance(env, PassiveEnvChecker) and isinstance(env.env, DiscreteActions)
    assert _wrapper_types(env).count(PassiveEnvChecker) == 1
    unchecked = gym.make(flat_id, disable_env_checker=True, **kwargs)
    assert isinstance(unchecked, DiscreteActions)  # outermost: .action_masks() is Discrete
    assert PassiveEnvChecker not in _wrapper_types(unchecked)
    gym_check_env(gym.make(flat_id, **kwargs).unwrapped)
    sb3_check_env(gym.make(flat_id, **kwargs), warn=False)
    # same-seed rollouts equal, also after pickling
    clone = pickle.loads(pickle.dumps(env))
    runs = []
    for e in (env, clone):
        rng = np.random.default_rng(5)
        obs, _ = e.reset(seed=11)
        traj, done = [obs], False
        while not done:
            mask = e.get_wrapper_attr("action_masks")()  # the Discrete mask, through wrappers
            obs, r, term, trunc, _ = e.step(_random_valid(mask, rng))
            traj.append(np.append(obs, r))
            done = term or trunc
        runs.append(np.concatenate(traj))
    np.testing.assert_array_equal(runs[0], runs[1])


_REBUILT = {
    "make_flat": lambda: make_flat(CONT, **SMALL[CONT]),
    "make_masked": lambda: make_masked(MIG, **SMALL[MIG]),
    "teacher": lambda: DiscreteActions(gym.make(ENERGY, **SMALL[ENERGY]), teacher="etf"),
    "TeacherAction": lambda: TeacherAction(gym.make(MIG, **SMALL[MIG]), "migrator"),
}


@pytest.mark.parametrize("build", sorted(_REBUILT))
def test_wrapped_envs_are_rebuilt_from_their_spec(build):
    """Gymnasium rebuilds an env from ``env.spec`` (``check_env`` does, with each render mode):
    the same wrappers with the same arguments, the same episode. Before, every edgegym wrapper
    made ``gym.make(env.spec)`` fail ("does not inherit from RecordConstructorArgs")."""
    env = _REBUILT[build]()
    gym_check_env(env)  # it remakes the env from its spec
    again = gym.make(env.spec)
    assert _wrapper_types(again) == _wrapper_types(env)
    for e in (env, again):
        e.reset(seed=4)
    mask = env.get_wrapper_attr("action_masks")()
    np.testing.assert_array_equal(mask, again.get_wrapper_attr("action_masks")())
    action = int(np.flatnonzero(mask)[-1])  # the teacher's index where there is one
    a, b = env.step(action), again.step(action)
    assert _same_step(a, b)


def _same_step(a: tuple, b: tuple) -> bool:
    obs_a, obs_b = a[0], b[0]
    if isinstance(obs_a, dict):
        return all(np.array_equal(obs_a[k], obs_b[k]) for k in obs_a) and a[1:4] == b[1:4]
    return np.array_equal(obs_a, obs_b) and a[1:4] == b[1:4]


def test_discrete_actions_needs_multidiscrete():
    with pytest.raises(TypeError, match="MultiDiscrete"):
        DiscreteActions(gym.make(MIG, **SMALL[MIG]))

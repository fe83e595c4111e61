"""The action-space contract (issue 17, part 1): every id, single and vector, raises one clear
``ValueError`` naming the space for an action outside it (wrong shape or dtype, out of range,
NaN), leaves the episode as it was, and keeps projecting masked actions inside the space."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import edgegym  # noqa: F401  (registers the ids)
from edgegym.core.checks import check_action

IDS = sorted(k for k in gym.registry if k.startswith("edgegym/"))
SMALL = {
    "edgegym/ContinualLearning-v0": {"streams": 3, "windows": 2},
    "edgegym/ContinualLearning-Flat-v0": {"streams": 3, "windows": 2},
    "edgegym/MIGReconfig-v0": {"window_s": 40, "windows": 2},
}


def _bad_single(space: gym.Space) -> list:
    if isinstance(space, gym.spaces.Discrete):
        n = int(space.n)
        return [n, -1, 10**6, 3.7, 2.0, np.nan, np.float32(1), "x", None, [0, 1]]
    nvec = np.asarray(space.nvec)
    ok = np.zeros_like(nvec)
    return [
        nvec,  # every entry one past its range
        nvec + 3,
        ok - 1,
        np.where(np.arange(nvec.size) == nvec.size - 1, nvec, ok),  # only the last entry
        np.full(nvec.shape, np.nan),
        ok.astype(np.float64),  # integral floats: not integers
        ok[:-1],
        np.zeros((2, *nvec.shape), dtype=np.int64),
        "x",
    ]


@pytest.mark.parametrize("env_id", IDS)
def test_out_of_space_actions_raise_one_clear_error_and_change_nothing(env_id):
    env = gym.make(env_id, **SMALL.get(env_id, {}))
    env.reset(seed=0)
    space = env.action_space
    kind = type(space).__name__
    for bad in _bad_single(space):
        with pytest.raises(ValueError, match=kind) as err:
            env.step(bad)
        assert "\n" not in str(err.value)
        if not isinstance(bad, str | type(None)):
            assert not space.contains(np.asarray(bad))  # Gymnasium agrees it is outside
    # Nothing was applied: the first valid step after the rejected ones matches a fresh env.
    fresh = gym.make(env_id, **SMALL.get(env_id, {}))
    fresh.reset(seed=0)
    good = np.zeros(space.shape, dtype=np.int64)
    a = env.step(good)
    b = fresh.step(good)
    assert a[1] == b[1]
    for x, y in zip(
        gym.spaces.flatten(env.observation_space, a[0]),
        gym.spaces.flatten(fresh.observation_space, b[0]),
        strict=True,
    ):
        assert x == y
    env.close()
    fresh.close()


@pytest.mark.parametrize("env_id", [i for i in IDS if gym.spec(i).vector_entry_point])
def test_vector_envs_raise_for_out_of_space_actions(env_id):
    vec = gym.make_vec(env_id, 2, vectorization_mode="vector_entry_point",
                       **SMALL.get(env_id, {}))  # fmt: skip
    vec.reset(seed=0)
    space = vec.action_space
    good = np.zeros(space.shape, dtype=np.int64)
    for bad in (good - 1, good + 10**6, good.astype(float), np.full(space.shape, np.nan),
                good[:1], np.zeros((3, *space.shape[1:]), dtype=np.int64)):  # fmt: skip
        with pytest.raises(ValueError, match="actions"):
            vec.step(bad)
    vec.step(good)  # and the env still steps
    vec.close()


@pytest.mark.parametrize("env_id", IDS)
def test_every_in_space_action_is_accepted(env_id):
    """Random elements of the space (masked or not) are never rejected: masks project."""
    env = gym.make(env_id, **SMALL.get(env_id, {}))
    env.action_space.seed(1)
    env.reset(seed=1)
    for _ in range(20):
        _, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        assert np.isfinite(reward)
        if terminated or truncated:
            env.reset()
    env.close()


def test_check_action_names_entry_and_range():
    md = gym.spaces.MultiDiscrete([3, 4])
    with pytest.raises(ValueError, match=r"action\[1\] = 4 is outside MultiDiscrete\(\[3, 4\]\) "
                       r"\(entry 1 takes 0 \.\. 3\)"):  # fmt: skip
        check_action(md, np.array([0, 4]))
    d = gym.spaces.Discrete(5, start=2)
    with pytest.raises(ValueError, match=r"valid: 2 \.\. 6"):
        check_action(d, 1)
    assert check_action(d, np.int32(6)) == 6
    np.testing.assert_array_equal(check_action(md, [2, 3]), [2, 3])
    assert check_action(gym.spaces.Box(0, 1, (2,)), "passes through") == "passes through"
    # None and integers past int64 are named as such (they read "shape ()" and "dtype object")
    with pytest.raises(
        ValueError, match=r"action is None; MultiDiscrete\(\[3, 4\]\) expects shape"
    ):
        check_action(md, None)
    with pytest.raises(ValueError, match=r"integer outside Discrete\(5\) starting at 2 \(past"):
        check_action(d, 2**70)
    with pytest.raises(ValueError, match=r"integer outside MultiDiscrete.*past 64 bits"):
        check_action(md, [1, 2**64])


@pytest.mark.parametrize("dims", [(3, 4, 2, 5), (2**40, 2**40, 3)])  # the second overflows int64
def test_flat_mask_row_groups_are_numpys_row_unique(dims):
    """The flat view's grouping of repaired actions equals ``np.unique(axis=0)``'s, on the
    integer path and on the fallback for products of dims past int64."""
    from edgegym.wrappers import _row_groups

    rng = np.random.default_rng(0)
    rows = np.stack([rng.integers(0, min(d, 3), size=200) for d in dims], axis=1)
    first, inverse = _row_groups(rows, np.array(dims, dtype=object))
    _, want_first, want_inverse = np.unique(rows, axis=0, return_index=True, return_inverse=True)
    assert np.array_equal(first, want_first)
    assert np.array_equal(inverse, want_inverse.ravel())
    assert np.array_equal(rows[first[inverse]], rows)  # each row's group starts with its twin

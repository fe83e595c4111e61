"""The native vector envs' ``info`` is Gymnasium's: every registered edgegym id made with
``gymnasium.make_vec(id, N)`` (its ``vector_entry_point``) gives, at every step of episodes
that end, what ``gymnasium.make_vec(id, N, vectorization_mode="sync")`` gives with the same
seeds, actions and autoreset mode: the same observations, rewards and ends, and the same
``info`` entries held by the same envs (each ``_key`` mask) with the same values, also in
``final_obs`` / ``final_info`` with ``SameStep`` autoreset, where an env that ended holds its
reset's entries and the others keep their step's.

Where a family's vector env documents another layout (text entries left out, an allocation
spread over arrays, NaN / -1 / empty padding where the single env has no entry), the rows are
compared after that translation; an id without one must match bit for bit, masks and the
zeros of envs that do not hold an entry included.

Also: ``action_masks()`` before ``reset`` agrees across the single, native vector and flat
views, and no view hands out the mask it keeps.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import edgegym  # noqa: F401  (registers the ids)
from edgegym.core.registry import FAMILIES
from edgegym.core.vector import replace_rows
from edgegym.wrappers import make_masked_vector
from tests.envs.test_vector import SMALL, _same, masked_random

N = 3
IDS = sorted(
    i
    for i, spec in gym.registry.items()
    if i.startswith("edgegym/") and spec.vector_entry_point is not None
)
FAMILY_OF = {
    i: fam for fam in FAMILIES.values() for i in (fam.env_id, fam.flat_id) if i is not None
}

#: Documented layout differences of a family's vector env, per entry: "sync only" (the vector
#: env leaves it out), "allocation" (the single env's ``allocation`` dict spread over arrays),
#: or "pad" (the vector env holds it, padded, where the single env has no such entry).
LAYOUT: dict[str, dict[str, str]] = {
    "mig": {"allocation": "sync only", "layout": "sync only"},
    "continual": {
        "retrain_cfg": "allocation",
        "infer_cfg": "allocation",
        "share_retrain": "allocation",
        "share_infer": "allocation",
    },
    "dag": {
        "accuracy": "pad",
        "completion_s": "pad",
        "objective": "pad",
        "node": "pad",
        "server": "pad",
        "retrained": "pad",
    },
}


#: Families whose episodes differ in length, so that some envs end while others go on (energy
#: and MIG episodes all last the scenario's length: their envs end together).
STAGGERED = {"continual", "dag"}


def _kwargs(env_id: str) -> dict[str, Any]:
    scenario, overrides = SMALL.get(FAMILY_OF[env_id].name, [(None, {})])[0]
    return dict(overrides, **({"scenario": scenario} if scenario else {}))


def _row(info: dict[str, Any], i: int) -> dict[str, Any]:
    """Env ``i``'s entries of a vector ``info`` (those its ``_key`` says it holds)."""
    out: dict[str, Any] = {}
    for key, value in info.items():
        if key.startswith("_") or not info["_" + key][i]:
            continue
        out[key] = _row(value, i) if isinstance(value, dict) else value[i]
    return out


def _is_pad(value: Any) -> bool:
    v = np.asarray(value)
    if v.size == 0:
        return True
    if v.dtype.kind not in "fiu" or v.size != 1:
        return False
    return bool(np.isnan(v) if v.dtype.kind == "f" else v == -1)


def _translated(native: dict[str, Any], sync: dict[str, Any], family: str) -> dict[str, Any]:
    """Native row ``native`` in the single env's layout (the family's :data:`LAYOUT`)."""
    layout = LAYOUT.get(family, {})
    out: dict[str, Any] = {}
    for key, value in native.items():
        how = layout.get(key)
        if how == "allocation":
            out.setdefault("allocation", {})[key] = value
        elif how == "pad" and key not in sync:
            assert _is_pad(value), f"{key}: {value!r} held where the single env has none"
        else:
            out[key] = value
    for key, how in layout.items():
        if how == "sync only":
            assert key not in native, key
            sync.pop(key, None)
    return out


def _assert_rows_equal(native: Any, sync: Any, where: str) -> None:
    if isinstance(sync, dict):
        assert isinstance(native, dict), where
        assert native.keys() == sync.keys(), f"{where}: {sorted(native)} vs {sorted(sync)}"
        for key in sync:
            _assert_rows_equal(native[key], sync[key], f"{where}/{key}")
        return
    a, b = np.asarray(native), np.asarray(sync)
    if a.dtype == object or b.dtype == object or a.dtype.kind == "U" or b.dtype.kind == "U":
        assert native == sync or (a.size == b.size == 0), f"{where}: {native!r} vs {sync!r}"
    else:
        np.testing.assert_array_equal(a, b, err_msg=where)


def _assert_infos_equal(native: dict, sync: dict, family: str, strict: bool, where: str) -> None:
    if strict:  # bit for bit: keys, masks, every row (zeros where not held), dtypes
        assert native.keys() == sync.keys(), f"{where}: {sorted(native)} vs {sorted(sync)}"
        for key in sync:
            a, b = native[key], sync[key]
            if key == "final_obs":
                for i in range(N):
                    assert (a[i] is None) == (b[i] is None) and (
                        a[i] is None or _same(a[i], b[i])
                    ), f"{where}/final_obs[{i}]"
            elif isinstance(b, dict):
                _assert_infos_equal(a, b, family, strict, f"{where}/{key}")
            else:
                assert a.dtype == b.dtype and a.shape == b.shape, f"{where}/{key}"
                assert a.tobytes() == b.tobytes(), f"{where}/{key}: {a!r} vs {b!r}"
        return
    for key in ("final_obs", "final_info"):
        assert (key in native) == (key in sync), f"{where}: {key}"
        if key in sync:
            np.testing.assert_array_equal(native["_" + key], sync["_" + key])
    for i in range(N):
        n_row = {k: v for k, v in _row(native, i).items() if k not in ("final_obs", "final_info")}
        s_row = {k: v for k, v in _row(sync, i).items() if k not in ("final_obs", "final_info")}
        _assert_rows_equal(_translated(n_row, s_row, family), s_row, f"{where} env {i}")
        if "final_obs" in sync and sync["_final_obs"][i]:
            assert _same(native["final_obs"][i], sync["final_obs"][i]), f"{where} final_obs"
            n_fin, s_fin = _row(native["final_info"], i), _row(sync["final_info"], i)
            _assert_rows_equal(_translated(n_fin, s_fin, family), s_fin, f"{where} final {i}")


@pytest.mark.parametrize("limit", [None, 7])
@pytest.mark.parametrize("mode", [AutoresetMode.SAME_STEP, AutoresetMode.NEXT_STEP])
@pytest.mark.parametrize("env_id", IDS)
def test_native_vector_info_equals_sync(
    env_id: str, mode: AutoresetMode, limit: int | None
) -> None:
    """``limit``: ``max_episode_steps``, which the native env applies itself and ``sync`` by a
    ``TimeLimit`` on each env (the native envs refused it before)."""
    family = FAMILY_OF[env_id].name
    strict = family not in LAYOUT
    kwargs = {**_kwargs(env_id), "max_episode_steps": limit}
    native = gym.make_vec(
        env_id, N, vectorization_mode="vector_entry_point", autoreset_mode=mode, **kwargs
    )
    sync = gym.make_vec(
        env_id, N, vectorization_mode="sync", vector_kwargs={"autoreset_mode": mode}, **kwargs
    )
    o_n, i_n = native.reset(seed=5)
    o_s, i_s = sync.reset(seed=5)
    assert _same(o_n, o_s)
    _assert_infos_equal(i_n, i_s, family, strict, "reset")
    rng = np.random.default_rng(0)
    ends = np.zeros(N, dtype=int)
    steps = partial = 0
    while ends.min() < 2:  # every env across two episode ends (and their resets)
        actions = masked_random(rng, native.action_masks(), native.single_action_space)
        out_n, out_s = native.step(actions), sync.step(actions)
        steps += 1
        where = f"step {steps}"
        assert _same(out_n[0], out_s[0]), f"{where}: obs"
        for k in (1, 2, 3):
            np.testing.assert_array_equal(out_n[k], out_s[k], err_msg=where)
        _assert_infos_equal(out_n[4], out_s[4], family, strict, where)
        done = out_n[2] | out_n[3]
        ends += done
        partial += bool(done.any() and not done.all())
        assert steps < 5_000, "runaway episode"
    if limit is not None:
        resets = mode == AutoresetMode.NEXT_STEP  # the step that resets the first episode
        assert steps == 2 * limit + resets, "not truncated at the limit"
    elif family in STAGGERED:
        assert partial, "no step where some envs ended and others went on"
    native.close()
    sync.close()


def _single_masks_before_reset(env_id: str) -> np.ndarray:
    env = gym.make(env_id, **_kwargs(env_id))
    try:
        return np.asarray(env.get_wrapper_attr("action_masks")(), dtype=bool)
    finally:
        env.close()


@pytest.mark.parametrize("env_id", IDS)
def test_action_masks_before_reset_agree(env_id: str) -> None:
    """Single env, native vector env, (for a ``-Flat-v0`` id) the flat vector view and
    :func:`make_masked_vector` give the same mask before ``reset``: the single env's, in every
    row (every action, except where a family's single env documents another)."""
    single = _single_masks_before_reset(env_id)
    fam = FAMILY_OF[env_id]
    if fam.name in ("energy", "mig") and env_id == fam.env_id:
        assert single.all()  # the base env's rule: every action
    vec = gym.make_vec(env_id, N, **_kwargs(env_id))
    before = vec.action_masks()
    assert before.dtype == bool and before.shape == (N, single.size)
    assert (before == single).all()
    k = vec.single_action_space
    assert single.size == (int(k.n) if isinstance(k, gym.spaces.Discrete) else int(k.nvec.sum()))
    _, info = vec.reset(seed=0)
    np.testing.assert_array_equal(vec.action_masks(), info["action_mask"])
    vec.close()
    masked = make_masked_vector(env_id, N, **_kwargs(env_id))  # RLlib's view
    assert (masked.action_masks() == single).all()
    masked.close()


@pytest.mark.parametrize("env_id", IDS)
def test_masks_handed_out_are_copies(env_id: str) -> None:
    """Changing a mask ``action_masks()`` or ``info["action_mask"]`` gave changes nothing
    the env keeps (single, native vector and flat vector views)."""
    env = gym.make(env_id, **_kwargs(env_id))
    _, info = env.reset(seed=0)
    fn = env.get_wrapper_attr("action_masks")
    keep = fn().copy()
    fn()[:] = ~keep
    info["action_mask"][:] = ~keep
    np.testing.assert_array_equal(fn(), keep)
    env.close()
    for mode in (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP):
        vec = gym.make_vec(env_id, N, autoreset_mode=mode, **_kwargs(env_id))
        _, info = vec.reset(seed=0)
        rng = np.random.default_rng(0)
        for _ in range(3):
            keep = vec.action_masks().copy()
            vec.action_masks()[:] = ~keep
            info["action_mask"][:] = ~keep
            np.testing.assert_array_equal(vec.action_masks(), keep)
            actions = masked_random(rng, vec.action_masks(), vec.single_action_space)
            *_, info = vec.step(actions)
        vec.close()


def test_replace_rows_is_what_gymnasium_add_info_builds() -> None:
    """The rows swapped hold exactly the new entries; the others keep theirs; an entry no env
    holds is left out; a row without its entry is zero (``None`` for objects), as
    ``VectorEnv._add_info`` builds the info of per-env dicts."""
    vec = gym.vector.VectorEnv()
    vec.num_envs = 3
    rows = [
        {"a": 1.0, "t": {"x": 2.0}, "s": "p", "m": np.arange(2)},
        {"a": 3.0, "t": {"x": 4.0}, "s": "q", "only_old": 7},
        {"a": 5.0, "t": {"x": 6.0}, "s": "r", "m": np.arange(2) + 1},
    ]
    fresh = [{"a": -1.0, "new": 1}, {"a": -2.0, "new": 2}, {"a": -3.0, "new": 3}]

    def build(per_env: list[dict[str, Any]]) -> dict[str, Any]:
        info: dict[str, Any] = {}
        for i, row in enumerate(per_env):
            info = vec._add_info(info, row, i)
        return info

    swap = np.array([False, True, False])
    got = replace_rows(build(rows), build(fresh), swap)
    want = build([rows[0], fresh[1], rows[2]])
    assert got.keys() == want.keys()  # "only_old" is gone
    for key in want:
        if isinstance(want[key], dict):
            assert got[key].keys() == want[key].keys()
            for k in want[key]:
                np.testing.assert_array_equal(got[key][k], want[key][k])
        else:
            assert got[key].dtype == want[key].dtype, key
            assert list(got[key].ravel()) == list(want[key].ravel()), key
    every = np.ones(3, dtype=bool)
    assert replace_rows(build(rows), build(fresh), every).keys() == build(fresh).keys()


@pytest.mark.parametrize("env_id", IDS)
def test_native_vector_refuses_frames_and_bad_limits_in_one_message(env_id: str) -> None:
    """A render mode (Gymnasium passes one through ``make_vec``) says where frames come from;
    before, every id refused it as an unknown scenario override."""
    with pytest.raises(ValueError, match="vectorization_mode='sync'"):
        gym.make_vec(env_id, 2, render_mode="rgb_array", **_kwargs(env_id))
    with pytest.raises(ValueError, match="render_mode must be one of"):
        gym.make_vec(env_id, 2, render_mode="movie", **_kwargs(env_id))
    for bad in (0, 2.5, True):
        with pytest.raises(ValueError, match="max_episode_steps must be an integer >= 1"):
            gym.make_vec(env_id, 2, max_episode_steps=bad, **_kwargs(env_id))

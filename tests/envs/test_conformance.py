"""One conformance test parametrised over every registered id (DESIGN.md §7-8).

Gymnasium and SB3 checkers, same-seed rollouts equal, pickling, spaces contain every
observation, masks, invalid actions, episode end, vector envs and padding.
"""

from __future__ import annotations

import pickle
import warnings
from functools import partial
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env as gym_check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env

import edgegym
from edgegym.core.registry import ENV_IDS
from edgegym.families.continual import ContinualLearningEnv
from edgegym.scenarios import ScenarioError

IDS = sorted(ENV_IDS)
CONTINUAL_IDS = [i for i in IDS if ENV_IDS[i][1] == "continual"]

#: Per family: a fixed hand-checkable scenario and a small random override of the default.
VARIANTS: dict[str, dict[str, dict[str, Any]]] = {
    "continual": {
        "table1": {"scenario": "ekya-table1"},
        "small": {"streams": 3, "windows": 3},
    },
    "energy": {
        "small": {"scenario": "etf-tx2-arrivals", "quanta": 12},
        "dynamic": {"scenario": "etf-dynamic-3", "quanta": 120, "max_tenants": 3},
        "a10g": {"scenario": "etf-a10g-gpt2-mobilenetv2", "quanta": 8, "max_tenants": 2},
    },
    "dag": {
        "small": {"requests": 3},
        "three-servers": {"requests": 8, "count": 3, "theta": 10.0},
    },
    "mig": {
        "small": {"scenario": "migrator-w5", "window_s": 12, "windows": 2},
        "h100-basis3": {
            "scenario": "migrator-w1",
            "window_s": 20,
            "windows": 1,
            "basis_s": 3,
            "gpu": "H100-80GB",
            "preinit": True,
        },
    },
}
MAX_STEPS = 500


def _variants(env_id: str) -> dict[str, dict[str, Any]]:
    return VARIANTS.get(ENV_IDS[env_id][1], {"default": {}})


def _random_kwargs(env_id: str) -> dict[str, Any]:
    """Kwargs of a variant whose episodes depend on the seed."""
    v = _variants(env_id)
    return v.get("small", next(iter(v.values())))


CASES = [pytest.param(i, name, id=f"{i}-{name}") for i in IDS for name in _variants(i)]
CONTINUAL_CASES = [c for c in CASES if c.values[0] in CONTINUAL_IDS]


def nvec_of(env: gym.Env) -> np.ndarray | None:
    """``MultiDiscrete`` sizes, or None for a ``Discrete`` action space."""
    return getattr(env.action_space, "nvec", None)


def mask_size(env: gym.Env) -> int:
    nvec = nvec_of(env)
    return int(env.action_space.n) if nvec is None else int(nvec.sum())


def make(env_id: str, variant: str, **extra: Any) -> gym.Env:
    return gym.make(env_id, **{**_variants(env_id)[variant], **extra})


def sample_masked(mask: np.ndarray, nvec: np.ndarray | None, rng: np.random.Generator):
    """One action drawn uniformly inside a flat ``MultiDiscrete`` mask (or a ``Discrete`` one
    when ``nvec`` is None)."""
    if nvec is None:
        valid = np.flatnonzero(mask)
        assert valid.size > 0, "no valid action"
        return np.int64(rng.choice(valid))
    out = np.empty(len(nvec), dtype=np.int64)
    start = 0
    for j, n in enumerate(nvec):
        valid = np.flatnonzero(mask[start : start + n])
        assert valid.size > 0, f"entry {j} has no valid value"
        out[j] = rng.choice(valid)
        start += n
    return out


def rollout(env: gym.Env, seed: int | None, action_seed: int, max_steps: int = MAX_STEPS):
    """Reset with ``seed`` and run masked random actions to the end; return the trajectory."""
    obs, info = env.reset(seed=seed)
    return continue_rollout(env, obs, info, action_seed, max_steps)


def continue_rollout(env, obs, info, action_seed, max_steps=MAX_STEPS):
    rng = np.random.default_rng(action_seed)
    nvec = getattr(env.action_space, "nvec", None)
    traj = [(obs, None, None, None, info)]
    for _ in range(max_steps):
        action = sample_masked(env.unwrapped.action_masks(), nvec, rng)
        obs, rew, term, trunc, info = env.step(action)
        traj.append((obs, rew, term, trunc, info))
        if term or trunc:
            return traj
    raise AssertionError(f"episode did not end within {max_steps} steps")


def assert_same(a: Any, b: Any, path: str = "") -> None:
    """Exact structural equality of observations, rewards and infos."""
    if isinstance(a, dict):
        assert isinstance(b, dict) and set(a) == set(b), f"{path}: keys differ"
        for k in a:
            assert_same(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list | tuple):
        assert isinstance(b, list | tuple) and len(a) == len(b), f"{path}: lengths differ"
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            assert_same(x, y, f"{path}[{i}]")
    elif isinstance(a, np.ndarray):
        assert isinstance(b, np.ndarray) and a.dtype == b.dtype, f"{path}: dtype differs"
        np.testing.assert_array_equal(a, b, err_msg=path)
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def applied_total(info: dict[str, Any]) -> float:
    alloc = info["allocation"]
    return float(np.sum(alloc["share_retrain"]) + np.sum(alloc["share_infer"]))


# ------------------------------------------------------------------------------ checkers
@pytest.mark.parametrize(("env_id", "variant"), CASES)
def test_gymnasium_checker(env_id, variant):
    env = make(env_id, variant)
    gym_check_env(env.unwrapped, skip_render_check=False)


@pytest.mark.parametrize(("env_id", "variant"), CASES)
def test_sb3_checker(env_id, variant):
    env = make(env_id, variant)
    with warnings.catch_warnings():
        # SB3 recommends flat observations; the 2-D `streams` array is intended (DESIGN §7).
        warnings.filterwarnings("ignore", message=".*unconventional shape.*")
        sb3_check_env(env.unwrapped, warn=True)


@pytest.mark.parametrize("env_id", IDS)
def test_make_without_kwargs(env_id):
    assert env_id in gym.registry
    env = gym.make(env_id)
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    assert env.spec is not None and env.spec.id == env_id
    default = ENV_IDS[env_id][2]
    assert edgegym.scenarios.load(default) is not None
    if hasattr(env.unwrapped, "spec_"):
        assert env.unwrapped.spec_.scenario.name == default
    _, _, _, trunc, _ = env.step(env.action_space.sample())
    assert trunc is False


@pytest.mark.parametrize("env_id", CONTINUAL_IDS)
def test_make_with_scenario_and_overrides(env_id):
    env = gym.make(env_id, scenario="ekya-table1", gpus=4)
    spec = env.unwrapped.spec_
    assert spec.scenario.name == "ekya-table1" and spec.gpus == 4
    # 4 GPUs at quantum 0.05: 81 share levels per job.
    assert int(env.action_space.nvec[2]) == 81
    with pytest.raises(ScenarioError, match="nonexistent"):
        gym.make(env_id, nonexistent=3)


# ------------------------------------------------------------------------- determinism
@pytest.mark.parametrize(("env_id", "variant"), CASES)
def test_same_seed_same_rollout(env_id, variant):
    a = rollout(make(env_id, variant), seed=7, action_seed=3)
    b = rollout(make(env_id, variant), seed=7, action_seed=3)
    assert len(a) == len(b)
    assert_same(a, b)
    # Reusing one instance: reset(seed) restarts the same episode bit for bit.
    env = make(env_id, variant)
    assert_same(rollout(env, 7, 3), rollout(env, 7, 3))


@pytest.mark.parametrize("env_id", IDS)
def test_different_seeds_differ(env_id):
    kw = _random_kwargs(env_id)
    env = gym.make(env_id, **kw)
    obs0, _ = env.reset(seed=0)
    obs1, _ = env.reset(seed=1)
    if isinstance(obs0, dict) and "streams" in obs0:  # Ekya draws window 0's profile at reset
        assert any(not np.array_equal(obs0[k], obs1[k]) for k in obs0)
    r0 = [s[1] for s in rollout(env, 0, 3)[1:]]
    r1 = [s[1] for s in rollout(env, 1, 3)[1:]]
    assert r0 != r1


# ----------------------------------------------------------------------------- pickling
@pytest.mark.parametrize("env_id", IDS)
def test_pickle_fresh_env(env_id):
    kw = _random_kwargs(env_id)
    env = gym.make(env_id, **kw)
    clone = pickle.loads(pickle.dumps(env))
    assert_same(rollout(env, 11, 5), rollout(clone, 11, 5))


@pytest.mark.parametrize("env_id", IDS)
def test_pickle_mid_episode_continues_identically(env_id):
    kw = _random_kwargs(env_id)
    env = gym.make(env_id, **kw)
    obs, info = env.reset(seed=4)
    rng = np.random.default_rng(0)
    for _ in range(3):
        action = sample_masked(env.unwrapped.action_masks(), nvec_of(env), rng)
        obs, _, term, _, info = env.step(action)
        assert not term
    clone = pickle.loads(pickle.dumps(env))
    a = continue_rollout(env, obs, info, action_seed=9)
    b = continue_rollout(clone, obs, info, action_seed=9)
    assert len(a) > 1
    assert_same(a, b)


# ------------------------------------------------------------------------ spaces, masks
@pytest.mark.parametrize(("env_id", "variant"), CASES)
def test_observations_in_space_and_masks(env_id, variant):
    env = make(env_id, variant)
    nvec = nvec_of(env)
    rng = np.random.default_rng(0)
    for seed in (0, 1):
        obs, info = env.reset(seed=seed)
        term = trunc = False
        while True:
            assert env.observation_space.contains(obs)
            mask = env.unwrapped.action_masks()
            assert mask.dtype == bool and mask.shape == (mask_size(env),)
            np.testing.assert_array_equal(mask, info["action_mask"])
            if term or trunc:
                break
            obs, rew, term, trunc, info = env.step(sample_masked(mask, nvec, rng))
            assert np.isfinite(rew)
            assert isinstance(term, bool) and isinstance(trunc, bool)


@pytest.mark.parametrize(("env_id", "variant"), CONTINUAL_CASES)
def test_masked_actions_are_applied_feasibly(env_id, variant):
    env = make(env_id, variant)
    u = env.unwrapped
    rng = np.random.default_rng(1)
    for seed in range(3):
        env.reset(seed=seed)
        done = False
        while not done:
            mask = u.action_masks()
            action = sample_masked(mask, env.action_space.nvec, rng)
            _, _, done, _, info = env.step(action)
            assert applied_total(info) <= u.spec_.gpus + 1e-9
            a = action.reshape(u.max_streams, 4)[: u.spec_.streams]
            np.testing.assert_array_equal(info["allocation"]["infer_cfg"], a[:, 1])
            applied = np.asarray(info["allocation"]["retrain_cfg"])
            assert np.all((applied == -1) | (applied == a[:, 0] - 1))


@pytest.mark.parametrize("env_id", CONTINUAL_IDS)
def test_mask_forbids_retraining_twice(env_id):
    env = gym.make(env_id, scenario="ekya-table1")
    u = env.unwrapped
    c1 = int(u.action_space.nvec[0])
    env.reset(seed=0)
    # Stream 0 retrains Cfg2 (65 GPU-s) on 1 GPU; stream 1 only infers.
    action = np.zeros(8, dtype=np.int64)
    action[:4] = [2, 0, 20, 20]
    action[4:] = [0, 0, 0, 20]
    mask = u.action_masks().reshape(2, -1)
    assert mask[0, :c1].all()
    _, _, _, _, info = env.step(action)
    assert info["time_s"] == pytest.approx(65.0)
    mask = u.action_masks().reshape(2, -1)
    assert mask[0, 0] and not mask[0, 1:c1].any(), "retrained stream may only pick 'none'"
    assert mask[1, :c1].all()


# -------------------------------------------------------------------- invalid actions
@pytest.mark.parametrize(("env_id", "variant"), CONTINUAL_CASES)
def test_out_of_space_actions_are_rejected_and_in_space_ones_projected(env_id, variant):
    env = make(env_id, variant)
    u = env.unwrapped
    nvec = env.action_space.nvec
    env.reset(seed=0)
    for bad in (nvec + 3, -np.ones_like(nvec) * 2, nvec * 10):
        with pytest.raises(ValueError, match="outside MultiDiscrete"):
            env.step(bad.astype(np.int64))
    # Every entry at its largest value: inside the space, over capacity (and masked for
    # streams with jobs in flight): projected, deterministically.
    for bad in (nvec - 1, np.maximum(nvec - 2, 0)):
        results = []
        for _ in range(2):
            env.reset(seed=0)
            obs, rew, _, _, info = env.step(bad.astype(np.int64))
            assert env.observation_space.contains(obs)
            assert np.isfinite(rew)
            assert applied_total(info) <= u.spec_.gpus + 1e-9
            q = u.spec_.quantum
            for key in ("share_retrain", "share_infer"):
                s = np.asarray(info["allocation"][key]) / q
                np.testing.assert_allclose(s, np.round(s), atol=1e-6)
            results.append((obs, rew, info))
        assert_same(results[0], results[1])  # projection is deterministic


@pytest.mark.parametrize(("env_id", "variant"), CONTINUAL_CASES)
def test_wrong_shape_is_rejected(env_id, variant):
    env = make(env_id, variant)
    env.reset(seed=0)
    n = int(env.action_space.shape[0])
    for bad in (np.zeros(n - 1, np.int64), np.zeros(n + 4, np.int64), np.zeros((2, n), np.int64)):
        with pytest.raises(ValueError, match="shape"):
            env.step(bad)
    # The rejected actions left the episode untouched.
    _, _, _, _, info = env.step(np.zeros(n, dtype=np.int64))
    assert info["time_s"] > 0


# ----------------------------------------------------------------------- episode end
@pytest.mark.parametrize(("env_id", "variant"), CASES)
def test_terminates_after_last_window(env_id, variant):
    env = make(env_id, variant, record_timeline=True)  # DAG: keeps the requests' schedules
    u = env.unwrapped
    if hasattr(u, "n_requests"):  # one admit step per request, one place step per node
        traj = rollout(env, 0, 1)
        kinds = [info["epoch"] for *_, info in traj[1:]]
        assert kinds.count("admit") == u.n_requests
        assert kinds.count("place") == sum(s.app.n for s in u.schedules)
        assert traj[-1][2] is True and "episode_metrics" in traj[-1][4]
        with pytest.raises(RuntimeError, match="reset"):
            env.step(env.action_space.sample())
        return
    if hasattr(u, "spec_"):
        windows, window_s = u.spec_.windows, u.spec_.window_s
    else:  # one step per scheduling quantum
        windows, window_s = u.params.quanta, u.params.quantum_s
    traj = rollout(env, 0, 1)
    for _, _, term, trunc, info in traj[1:-1]:
        assert term is False and trunc is False
        assert info.get("window", 0) < windows
    _, _, term, trunc, info = traj[-1]
    assert term is True and trunc is False
    assert info.get("window", windows) == windows
    assert info["time_s"] == pytest.approx(windows * window_s)
    assert "episode_metrics" in info
    with pytest.raises(RuntimeError, match="reset"):
        env.step(env.action_space.sample())
    # reset() starts a new episode after the end.
    env.reset(seed=0)
    env.step(np.zeros(env.action_space.shape, dtype=np.int64))


@pytest.mark.parametrize("env_id", CONTINUAL_IDS)
def test_idle_episode_takes_one_step_per_window(env_id):
    env = gym.make(env_id, scenario="ekya-table1")
    env.reset(seed=0)
    action = np.zeros(env.action_space.shape, dtype=np.int64)
    out = [env.step(action) for _ in range(2)]
    assert [o[2] for o in out] == [False, True]
    assert all(o[3] is False for o in out)


def test_step_before_reset_is_a_clear_error():
    env = ContinualLearningEnv(scenario="ekya-table1")
    with pytest.raises(RuntimeError, match="reset"):
        env.step(np.zeros(env.action_space.shape, dtype=np.int64))


# ----------------------------------------------------------------------- vector envs
@pytest.mark.parametrize("env_id", IDS)
def test_sync_vector_env(env_id):
    kw = _random_kwargs(env_id)
    envs = gym.vector.SyncVectorEnv([partial(gym.make, env_id, **kw) for _ in range(2)])
    obs, _ = envs.reset(seed=[0, 1])
    assert envs.observation_space.contains(obs)
    if isinstance(obs, dict) and "streams" in obs:
        assert not np.array_equal(obs["streams"][0], obs["streams"][1])
    envs.action_space.seed(0)
    ended = 0
    for _ in range(30):
        obs, rew, term, trunc, _ = envs.step(envs.action_space.sample())
        assert rew.shape == (2,) and term.shape == (2,) and not trunc.any()
        assert envs.observation_space.contains(obs)
        ended += int(term.sum())
    assert ended >= 1, "no sub-environment finished an episode in 30 steps"
    envs.close()


# -------------------------------------------------------------------------- padding
@pytest.mark.parametrize("env_id", CONTINUAL_IDS)
def test_max_streams_padding(env_id):
    padded = gym.make(env_id, scenario="ekya-table1", max_streams=5)
    plain = gym.make(env_id, scenario="ekya-table1")
    assert padded.action_space.shape == (20,)
    assert padded.observation_space["streams"].shape[0] == 5
    per = int(padded.action_space.nvec[:4].sum())
    offsets = np.cumsum([0, *padded.action_space.nvec[:3]])
    rng = np.random.default_rng(0)
    obs_p, _ = padded.reset(seed=3)
    obs_u, _ = plain.reset(seed=3)
    done = False
    while True:
        assert padded.observation_space.contains(obs_p)
        np.testing.assert_array_equal(obs_p["stream_mask"], [1, 1, 0, 0, 0])
        np.testing.assert_array_equal(obs_p["streams"][2:], 0.0)
        np.testing.assert_array_equal(obs_p["streams"][:2], obs_u["streams"])
        mask = padded.unwrapped.action_masks().reshape(5, per)
        for row in mask[2:]:  # padding slots: only the all-zero action
            np.testing.assert_array_equal(np.flatnonzero(row), offsets)
        if done:
            break
        real = sample_masked(plain.unwrapped.action_masks(), plain.action_space.nvec, rng)
        garbage = rng.integers(0, padded.action_space.nvec[8:])  # ignored padding entries
        obs_p, rew_p, done, _, info_p = padded.step(np.concatenate([real, garbage]))
        obs_u, rew_u, done_u, _, info_u = plain.step(real)
        assert rew_p == rew_u and done == done_u
        assert info_p["allocation"] == info_u["allocation"]
    with pytest.raises(ScenarioError, match="max_streams"):
        gym.make(env_id, scenario="ekya-table1", max_streams=1)
    # Bounded and typed (10^8 slots allocated 12 GB; "abc" and 2.9 were int()'s traceback)
    for bad, says in [(10**8, "to 1024 slots"), ("abc", "whole number"), (2.9, "whole number")]:
        with pytest.raises(ScenarioError, match=says):
            gym.make(env_id, scenario="ekya-table1", max_streams=bad)
    assert gym.make(env_id, scenario="ekya-table1", max_streams="3").unwrapped.max_streams == 3


# ------------------------------------------------------------------------------ energy
@pytest.mark.parametrize(("env_id", "variant"), CASES)
def test_energy_reported_every_step_and_episode(env_id, variant):
    env = make(env_id, variant)
    traj = rollout(env, 0, 2)
    steps = [info["energy_j"] for *_, info in traj[1:]]
    assert all(np.isfinite(e) and e >= 0 for e in steps)
    assert sum(steps) > 0
    metrics = traj[-1][4]["episode_metrics"]
    assert metrics["energy_j"] == pytest.approx(sum(steps), rel=1e-9)
    assert all("energy" in info["reward_terms"] for *_, info in traj[1:])
    # One sign convention in every family: penalties are negative terms.
    assert all(info["reward_terms"]["energy"] <= 0 for *_, info in traj[1:])


@pytest.mark.parametrize("env_id", IDS)
def test_scenario_of_another_family_is_rejected(env_id):
    family = ENV_IDS[env_id][1]
    other = next(v[2] for v in ENV_IDS.values() if v[1] != family)
    with pytest.raises(ScenarioError, match="does not fit"):
        gym.make(env_id, scenario=other)


def test_continual_reward_is_the_weighted_sum_of_its_signed_terms():
    from edgegym.families.continual.reward import WEIGHT_KEYS

    overrides = {"objective.energy": 0.5}
    env = gym.make("edgegym/ContinualLearning-v0", scenario="ekya-table1", **overrides)
    weights = env.unwrapped.spec_.objective
    assert weights["energy"] == 0.5
    for _, reward, _, _, info in rollout(env, 0, 2)[1:]:
        terms = info["reward_terms"]
        assert terms["a_min_shortfall"] <= 0 and terms["energy"] < 0
        expected = sum(weights[WEIGHT_KEYS[k]] * v for k, v in terms.items())
        assert reward == pytest.approx(expected)

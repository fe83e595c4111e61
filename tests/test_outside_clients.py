"""Outside RL code, as users run it, on every registered id: Stable-Baselines3's
``make_vec_env`` (DummyVecEnv and SubprocVecEnv; it passes ``render_mode="rgb_array"``) under
MaskablePPO, TorchRL's ``GymEnv`` (it probes with ``frameskip`` and expects a ``TypeError``),
Gymnasium's ``make_vec`` in both autoreset modes, and ``RecordVideo``."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces
from gymnasium.vector import AutoresetMode
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.utils import get_action_masks
from stable_baselines3.common.env_util import make_vec_env
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

import edgegym  # noqa: F401  (registers the ids)
from edgegym.core.registry import ENV_IDS, FLAT_IDS
from edgegym.scenarios import ScenarioError, load

ALL_IDS = sorted([*ENV_IDS, *FLAT_IDS])

#: Small scenarios per base id, so each client runs whole episodes in a few seconds.
SMALL = {
    "edgegym/ContinualLearning-v0": {"streams": 3, "windows": 2},
    "edgegym/EnergyFairShare-v0": {"quanta": 12},
    "edgegym/MIGReconfig-v0": {"scenario": "migrator-w5", "window_s": 6, "windows": 2},
    "edgegym/DAGOffload-v0": {"requests": 4},
}


def small(env_id: str) -> dict:
    return dict(SMALL[FLAT_IDS.get(env_id, env_id)])


@pytest.mark.parametrize("vec_env_cls", [DummyVecEnv, SubprocVecEnv], ids=["dummy", "subproc"])
@pytest.mark.parametrize("env_id", ALL_IDS)
def test_sb3_make_vec_env_trains_maskable_ppo(env_id, vec_env_cls):
    venv = make_vec_env(env_id, n_envs=2, seed=0, env_kwargs=small(env_id), vec_env_cls=vec_env_cls)
    try:
        assert venv.render_mode == "rgb_array"  # what make_vec_env asked for, and got
        dict_obs = isinstance(venv.observation_space, spaces.Dict)
        model = MaskablePPO(
            "MultiInputPolicy" if dict_obs else "MlpPolicy",
            venv,
            n_steps=64,
            batch_size=128,
            n_epochs=1,
            seed=0,
            device="cpu",
        )
        model.learn(total_timesteps=256)
        assert model.num_timesteps >= 256
        masks = get_action_masks(venv)  # reaches action_masks() through Monitor
        assert masks.shape[0] == 2 and masks.any(axis=1).all()
        frames = venv.get_images()
        assert len(frames) == 2
        assert all(f.dtype == np.uint8 and f.ndim == 3 and f.shape[2] == 3 for f in frames)
    finally:
        venv.close()


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_torchrl_gym_env_passes_check_env_specs(env_id):
    pytest.importorskip("torchrl")
    from torchrl.envs import GymEnv
    from torchrl.envs.utils import check_env_specs

    env = GymEnv(env_id, **small(env_id))  # GymEnv(env_id) first passes frameskip=1
    check_env_specs(env, seed=0)
    rollout = env.rollout(5)
    assert rollout.batch_size[0] >= 1
    env.close()


def test_unknown_keyword_is_a_type_error_with_the_standard_wording():
    for env_id in ("edgegym/MIGReconfig-v0", "edgegym/ContinualLearning-Flat-v0"):
        with pytest.raises(TypeError, match="unexpected keyword argument 'frameskip'") as err:
            gym.make(env_id, frameskip=1)
        assert isinstance(err.value, ScenarioError)  # still the scenario's error, too
        assert "scenario field" in str(err.value)
    with pytest.raises(ScenarioError, match="unknown field") as err:  # --set keeps its words
        load("migrator-w5", frameskip=1)
    assert isinstance(err.value, TypeError)


def _first_done(envs: gym.vector.VectorEnv, seed: int) -> tuple[int, dict, np.ndarray]:
    """Step random masked actions until some env finishes; the step index, info and obs."""
    obs, info = envs.reset(seed=seed)
    envs.action_space.seed(seed)
    for k in range(10_000):
        obs, _r, term, trunc, info = envs.step(envs.action_space.sample())
        if (term | trunc).any():
            return k, info, obs
    raise AssertionError("no episode ended")


@pytest.mark.parametrize("env_id", ALL_IDS)
def test_gymnasium_make_vec_in_both_autoreset_modes(env_id):
    kwargs = small(env_id)
    same = gym.make_vec(
        env_id,
        num_envs=2,
        vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": AutoresetMode.SAME_STEP},
        **kwargs,
    )
    _k, info, obs = _first_done(same, seed=3)
    ended = np.flatnonzero(info["_final_obs"])
    assert ended.size >= 1  # the final observation is in info, obs is already the next reset's
    assert same.single_observation_space.contains(info["final_obs"][ended[0]])
    assert same.observation_space.contains(obs)
    same.close()

    nxt = gym.make_vec(
        env_id,
        num_envs=2,
        vectorization_mode="sync",
        vector_kwargs={"autoreset_mode": AutoresetMode.NEXT_STEP},
        **kwargs,
    )
    _first_done(nxt, seed=3)
    _obs, rewards, _term, _trunc, _ = nxt.step(nxt.action_space.sample())
    assert nxt.observation_space.contains(_obs)
    assert np.isfinite(rewards).all()
    nxt.close()


def test_record_video_writes_a_video(tmp_path):
    pytest.importorskip("moviepy")
    from gymnasium.wrappers import RecordVideo

    env = gym.make("edgegym/EnergyFairShare-v0", render_mode="rgb_array", quanta=8)
    folder = tmp_path / "videos"  # new, so RecordVideo has nothing to warn about
    env = RecordVideo(env, str(folder), episode_trigger=lambda _: True, disable_logger=True)
    env.reset(seed=0)
    done = False
    while not done:
        _, _, term, trunc, _ = env.step(env.action_space.sample())
        done = term or trunc
    env.close()
    videos = list(folder.glob("*.mp4"))
    assert len(videos) == 1 and videos[0].stat().st_size > 1000


@pytest.mark.parametrize("env_id", [*sorted(FLAT_IDS), "edgegym/MIGReconfig-v0"])
def test_cleanrl_style_ids_and_episode_statistics(env_id):
    """As CleanRL's ppo.py builds its envs (``gym.make(env_id)``, ``RecordEpisodeStatistics``,
    ``SyncVectorEnv``) with the documented ``edgegym:`` prefix, and its returns read the way
    docs/agents.md says (``infos["episode"]["r"][infos["_episode"]]``)."""
    kwargs = small(env_id)

    def make_env():
        return gym.wrappers.RecordEpisodeStatistics(gym.make(f"edgegym:{env_id}", **kwargs))

    envs = gym.vector.SyncVectorEnv([make_env for _ in range(2)])
    envs.action_space.seed(0)
    envs.reset(seed=0)
    totals, returns = np.zeros(2), []
    for _ in range(2000):
        _, reward, _, _, infos = envs.step(envs.action_space.sample())
        totals += reward
        if "episode" in infos:
            done = infos["_episode"]
            returns += list(infos["episode"]["r"][done])
            np.testing.assert_allclose(infos["episode"]["r"][done], totals[done], rtol=1e-5)
            totals[done] = 0.0
            break
    assert returns, "no episode finished"
    assert "final_info" not in infos  # the Gymnasium 0.29 key CleanRL's logging reads

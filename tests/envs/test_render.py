"""``render_mode="rgb_array"`` and ``"human"`` on every environment (:mod:`edgegym.core.render`):
what SB3's ``make_vec_env``, Gymnasium's ``RecordVideo`` and CleanRL's ``--capture-video`` need."""

from __future__ import annotations

import pickle
import warnings
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import edgegym  # noqa: F401  (registers the ids)
from edgegym.core.render import RENDER_MODES, release

#: Small overrides per base id, so that every test here runs in well under a second.
SMALL: dict[str, dict[str, Any]] = {
    "edgegym/ContinualLearning-v0": {"streams": 3, "windows": 3},
    "edgegym/MIGReconfig-v0": {"scenario": "migrator-w5", "window_s": 12, "windows": 2},
    "edgegym/EnergyFairShare-v0": {"scenario": "etf-tx2-arrivals", "quanta": 12},
    "edgegym/DAGOffload-v0": {"requests": 3},
}
IDS = sorted(SMALL)


def make(env_id: str, render_mode: str | None) -> gym.Env:
    return gym.make(env_id, render_mode=render_mode, **SMALL[env_id])


def steps(env: gym.Env, n: int, seed: int = 0) -> None:
    """A few random steps (invalid entries are projected by the environments)."""
    env.action_space.seed(seed)
    for _ in range(n):
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        if terminated or truncated:
            env.reset(seed=seed + 1)


def check_frame(frame: Any) -> None:
    assert isinstance(frame, np.ndarray)
    assert frame.dtype == np.uint8
    assert frame.ndim == 3 and frame.shape[2] == 3
    assert frame.shape[0] % 2 == 0 and frame.shape[1] % 2 == 0  # ffmpeg's yuv420p


@pytest.mark.parametrize("env_id", IDS)
def test_rgb_array_frames(env_id):
    env = make(env_id, "rgb_array")
    assert list(env.metadata["render_modes"]) == list(RENDER_MODES)
    assert env.metadata["render_fps"] > 0
    env.reset(seed=0)
    first = env.render()
    check_frame(first)
    assert np.ptp(first) > 0, "the frame draws nothing"
    assert np.array_equal(env.render(), first), "the same state draws the same frame"
    steps(env, 3)
    later = env.render()
    check_frame(later)
    assert later.shape == first.shape
    assert not np.array_equal(later, first), "the frame does not follow the state"
    # AsyncVectorEnv / SubprocVecEnv pickle environments: after rendering too, and the copy
    # draws the same frame with a renderer of its own.
    clone = pickle.loads(pickle.dumps(env))
    assert np.array_equal(clone.render(), later)
    env.close()


@pytest.mark.parametrize("env_id", IDS)
def test_render_before_reset_and_other_modes(env_id):
    env = make(env_id, "rgb_array").unwrapped
    blank = env.render()  # before reset: a valid frame, never an error
    check_frame(blank)
    env.reset(seed=0)
    assert env.render().shape == blank.shape
    ansi = make(env_id, "ansi").unwrapped
    assert ansi.render() is None
    ansi.reset(seed=0)
    assert isinstance(ansi.render(), str)
    quiet = make(env_id, None)
    quiet.reset(seed=0)
    assert quiet.render() is None


@pytest.mark.parametrize("env_id", IDS)
def test_human_mode_shows_without_error(env_id):
    env = make(env_id, "human")
    env.reset(seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "non-interactive" warning on a headless machine
        assert env.render() is None
        steps(env, 1)
        assert env.render() is None  # the same window again
    pickle.dumps(env)
    release(env.unwrapped)
    env.close()


@pytest.mark.parametrize("env_id", IDS)
def test_bad_render_mode_names_the_allowed_ones(env_id):
    with pytest.raises(ValueError, match="None, 'ansi', 'rgb_array', 'human'"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Gymnasium warns of the unknown mode first
            make(env_id, "rgb")


def test_flat_view_renders():
    env = gym.make(
        "edgegym/EnergyFairShare-Flat-v0",
        render_mode="rgb_array",
        **SMALL["edgegym/EnergyFairShare-v0"],
    )
    env.reset(seed=0)
    check_frame(env.render())

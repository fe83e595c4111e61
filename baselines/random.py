"""Uniformly random valid actions (sampled inside the environment's action mask)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
from edgegym.baselines.base import Policy


class RandomPolicy(Policy):
    """Each ``MultiDiscrete`` entry (or the ``Discrete`` action) drawn uniformly among its
    valid values."""

    name = "random"

    def __init__(self, env: gym.Env, seed: int = 0) -> None:
        super().__init__(env)
        self.rng = np.random.default_rng(seed)

    def reset(self, seed: int | None = None) -> None:
        """Reseed so evaluation episodes are reproducible."""
        if seed is not None:
            self.rng = np.random.default_rng(seed + 7919)

    def act(self) -> np.ndarray:
        """One random valid action."""
        space = self.unwrapped.action_space
        mask = self.unwrapped.action_masks()
        if isinstance(space, gym.spaces.Discrete):
            valid = np.flatnonzero(mask)
            return np.int64(self.rng.choice(valid) if valid.size else 0)
        nvec = self.unwrapped.action_space.nvec
        mask = self.unwrapped.action_masks()
        out = np.empty(len(nvec), dtype=np.int64)
        start = 0
        for j, n in enumerate(nvec):
            valid = np.flatnonzero(mask[start : start + n])
            out[j] = self.rng.choice(valid) if valid.size else 0
            start += n
        return out

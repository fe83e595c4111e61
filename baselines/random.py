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
        """One random valid action of the environment the policy was given.

        That is the wrapped environment's space and mask where a wrapper changed the action
        space (the ``-Flat`` views), the environment's own otherwise.
        """
        space = self.env.action_space
        mask = np.asarray(self.env.get_wrapper_attr("action_masks")(), dtype=bool)
        if isinstance(space, gym.spaces.Discrete):
            valid = np.flatnonzero(mask)
            return np.int64(self.rng.choice(valid) if valid.size else 0)
        out = np.empty(len(space.nvec), dtype=np.int64)
        start = 0
        for j, n in enumerate(space.nvec):
            valid = np.flatnonzero(mask[start : start + n])
            out[j] = self.rng.choice(valid) if valid.size else 0
            start += n
        return out

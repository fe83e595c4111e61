"""The policy protocol every baseline answers (Stable-Baselines3's ``predict``)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np


class Policy:
    """Base class: an analytic scheduler bound to an environment.

    Subclasses implement :meth:`act` on the structured state of the environment
    (``env.unwrapped.sim_state()``) and return an action of the environment's action space;
    :meth:`predict` wraps it in SB3's signature so one evaluator scores every policy.
    """

    name = "policy"

    @classmethod
    def paper_setup(cls, scenario: str, given: Mapping[str, Any], **params: Any) -> dict[str, Any]:
        """Scenario overrides that put this scheduler where its paper evaluates it (none here).

        A published scheduler's baselines are often evaluated in a setting of their own: Ekya's
        uniform baselines run no micro-profiler, MIGRator's Ekya and Astraea share the GPU by
        MPS. :func:`edgegym.evaluate` applies these overrides on top of the user's ``given``
        ones for this policy's episodes (``setup=False`` runs every policy on the scenario as
        given) and reports them with the policy's result.

        Args:
            scenario: The scenario name or path being evaluated.
            given: The user's scenario overrides (dotted keys).
            **params: The policy's own parameters (``"name:key=value"``).
        """
        return {}

    def __init__(self, env: gym.Env) -> None:
        self.env = env
        self.unwrapped = env.unwrapped

    def act(self) -> np.ndarray:
        """Action for the environment's current state."""
        raise NotImplementedError

    def reset(self, seed: int | None = None) -> None:
        """Called by the evaluator at every episode start (stateful policies reseed here)."""

    def predict(
        self,
        observation: Any,
        state: Any = None,
        episode_start: Any = None,
        deterministic: bool = True,
    ) -> tuple[np.ndarray, Any]:
        """SB3 protocol: ``(action, state)``; the observation is not needed (structured state).

        Raises:
            RuntimeError: The environment has not been reset yet.
        """
        if getattr(self.unwrapped, "state", True) is None:  # an edgegym env before reset()
            raise RuntimeError(
                f"{self.name}: predict() before the environment's first reset(); call "
                "env.reset() first (the policy reads the environment's state)"
            )
        return self.act(), state

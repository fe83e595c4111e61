"""Observation layout of ``edgegym/EnergyFairShare-v0``: one flat ``Box`` in [0, 10].

Per tenant slot :data:`PER_TENANT` features (the environment's class docstring names them),
then :data:`GLOBALS` features of the quantum;
:meth:`edgegym.families.energy.dynamics.EnergyDynamics.observation` computes it for a batch of
envs.
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

#: Features per tenant slot, and of the quantum.
PER_TENANT = 9
GLOBALS = 4
#: Every feature is clipped to [0, HIGH].
HIGH = 10.0


def space(n_slots: int) -> spaces.Box:
    """The observation space of ``n_slots`` tenant slots."""
    return spaces.Box(0.0, HIGH, shape=(PER_TENANT * n_slots + GLOBALS,), dtype=np.float32)


__all__ = ["GLOBALS", "HIGH", "PER_TENANT", "space"]

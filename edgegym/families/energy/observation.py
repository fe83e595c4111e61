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


def tenant_layout(obs: spaces.Space, nvec: list[int]) -> dict | None:
    """Where the per-tenant policies (``edgegym.agents.policies.tenants``) find each tenant:
    blocks of :data:`PER_TENANT` features, one per action block, then :data:`GLOBALS`; the
    one action entry per tenant (its time units) is a fraction of a whole on a grid. ``None``
    for an observation of another shape (a wrapped view)."""
    if not isinstance(obs, spaces.Box):
        return None
    return {
        "kind": "flat",
        "n_tenants": len(nvec),
        "per_tenant": PER_TENANT,
        "n_globals": GLOBALS,
        "scaled": (True,),
    }


__all__ = ["GLOBALS", "HIGH", "PER_TENANT", "space", "tenant_layout"]

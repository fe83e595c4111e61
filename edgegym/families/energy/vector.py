"""Native vector environment of ``edgegym/EnergyFairShare-v0``: N envs as one batch of numpy.

:class:`EnergyFairShareVectorEnv` is the base :class:`~edgegym.core.vector.EdgeVectorEnv` over
the family's :class:`~edgegym.families.energy.dynamics.EnergyDynamics`; env ``i`` of a vector env
reset with ``seed=s`` steps exactly as a single
:class:`~edgegym.families.energy.env.EnergyFairShareEnv` reset with ``seed=s + i``.
``gymnasium.make_vec("edgegym/EnergyFairShare-v0", num_envs=N)`` builds it.
"""

from __future__ import annotations

from typing import Any

from gymnasium import spaces

from edgegym.core.vector import EdgeVectorEnv
from edgegym.families.energy.dynamics import EnergyDynamics
from edgegym.families.energy.env import energy_spaces
from edgegym.families.energy.params import EnergyParams, make_params
from edgegym.scenarios import Scenario


class EnergyFairShareVectorEnv(EdgeVectorEnv):
    """``num_envs`` energy fair-share environments stepped as one batch (see
    :class:`~edgegym.core.vector.EdgeVectorEnv` for the layout and autoreset modes).

    ``info`` holds, batched, what the single env's holds: ``action_mask`` (N, max_tenants *
    (U + 1)), ``time_s``, and after a step ``reward_terms``, ``energy_j``, ``units``,
    ``tenant_time_s``, ``tenant_energy_j``, ``throughput_rps``, ``latency_s``, ``F_T``,
    ``F_E``, ``F_S``.
    """

    env_id = "edgegym/EnergyFairShare-v0"
    params: EnergyParams

    def _build(
        self, scenario: Scenario
    ) -> tuple[EnergyParams, EnergyDynamics, spaces.Space, spaces.Space]:
        p = make_params(scenario)
        obs_space, act_space = energy_spaces(p)
        return p, EnergyDynamics(), obs_space, act_space

    def _state_info(self) -> dict[str, Any]:
        return {"time_s": self.state.k * self.params.quantum_s}


__all__ = ["EnergyFairShareVectorEnv"]

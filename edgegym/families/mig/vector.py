"""Native vector environment of ``edgegym/MIGReconfig-v0``: N envs as one batch of numpy.

:class:`MIGVectorEnv` is the base :class:`~edgegym.core.vector.EdgeVectorEnv` over the family's
:class:`~edgegym.families.mig.dynamics.MIGDynamics`; env ``i`` of a vector env reset with ``seed=s``
steps exactly as a single :class:`~edgegym.families.mig.env.MIGReconfigEnv` reset with ``seed=s +
i``. ``gymnasium.make_vec("edgegym/MIGReconfig-v0", num_envs=N)`` builds it (simulation backend).
"""

from __future__ import annotations

from typing import Any

from gymnasium import spaces

from edgegym.core.vector import EdgeVectorEnv
from edgegym.families.mig.dynamics import MIGDynamics
from edgegym.families.mig.env import mig_spaces
from edgegym.families.mig.params import MIGParams, make_params
from edgegym.scenarios import Scenario


class MIGVectorEnv(EdgeVectorEnv):
    """``num_envs`` MIG reconfiguration environments stepped as one batch (see
    :class:`~edgegym.core.vector.EdgeVectorEnv` for the layout and autoreset modes).

    ``info`` holds, batched, the single env's numeric entries: ``action_mask`` (N, S),
    ``time_s``, ``window``, and after a step ``reward_terms``, ``energy_j``, ``projected``,
    ``reconfigurations``, ``goodput``, ``requests``, ``slo_attainment``, ``accuracy``,
    ``downtime_s``, ``overhead_s``, plus the step's per-tenant ``tenant_requests``,
    ``tenant_goodput`` and ``tenant_served_slo`` (N, M). The text entries ``allocation`` and
    ``layout`` are left out (``params.spec.catalogue.describe(signature)`` gives the former).
    """

    env_id = "edgegym/MIGReconfig-v0"
    params: MIGParams

    def _build(
        self, scenario: Scenario
    ) -> tuple[MIGParams, MIGDynamics, spaces.Space, spaces.Space]:
        p = make_params(scenario)
        obs_space, act_space = mig_spaces(p)
        return p, MIGDynamics(), obs_space, act_space

    def _state_info(self) -> dict[str, Any]:
        return {"time_s": self.state.time_s.copy(), "window": self.state.window.copy()}


__all__ = ["MIGVectorEnv"]

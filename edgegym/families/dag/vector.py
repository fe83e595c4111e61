"""Native vector environment of ``edgegym/DAGOffload-v0``: N envs as one batch.

:class:`DAGOffloadVectorEnv` is the base :class:`~edgegym.core.vector.EdgeVectorEnv` over the
family's :class:`~edgegym.families.dag.dynamics.DAGDynamics` (every env's capacity timelines as
padded arrays, stepped at once); env ``i`` of a vector env reset with ``seed=s`` steps exactly as a
single
:class:`~edgegym.families.dag.env.DAGOffloadEnv` reset with ``seed=s + i``.
``gymnasium.make_vec("edgegym/DAGOffload-v0", num_envs=N)`` builds it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from edgegym.core.vector import EdgeVectorEnv
from edgegym.families.dag.dynamics import DAGDynamics
from edgegym.families.dag.env import dag_spaces, mask_before_reset
from edgegym.families.dag.params import DAGParams, make_params
from edgegym.scenarios import Scenario


class DAGOffloadVectorEnv(EdgeVectorEnv):
    """``num_envs`` DAG-offload environments stepped as one batch (see
    :class:`~edgegym.core.vector.EdgeVectorEnv` for the layout and autoreset modes).

    ``info`` holds, batched, what the single env's holds: ``action_mask`` (N, E + max_nodes *
    (H + 1)), ``time_s``, and after a step ``reward_terms``, ``energy_j``, ``epoch`` (N,)
    (``"admit"`` / ``"place"``), ``request``, ``utilisation`` (N, E), ``node`` and ``server``
    (-1 at admit epochs), ``retrained`` (N,) lists (empty at place epochs), and ``accuracy``,
    ``completion_s``, ``objective`` (NaN where the single env has no such entry).
    """

    env_id = "edgegym/DAGOffload-v0"
    params: DAGParams

    def _build(
        self, scenario: Scenario
    ) -> tuple[DAGParams, DAGDynamics, spaces.Space, spaces.Space]:
        p = make_params(scenario)
        obs_space, act_space = dag_spaces(p)
        return p, DAGDynamics(), obs_space, act_space

    def _mask_before_reset(self) -> np.ndarray:
        return mask_before_reset(self.params)  # as the single env

    def _state_info(self) -> dict[str, Any]:
        dyn, p, st = self.dynamics, self.params, self.state
        return {"time_s": dyn.now_all(p, st)}


__all__ = ["DAGOffloadVectorEnv"]

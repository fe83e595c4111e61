"""The toy's native vector environment: the base class runs the batch; the family builds."""

from __future__ import annotations

from edgegym.core.vector import EdgeVectorEnv
from tests.families.toy.dynamics import ToyDynamics, make_params, toy_spaces
from tests.families.toy.env import TOY_ID


class ToyShareVectorEnv(EdgeVectorEnv):
    env_id = TOY_ID

    def _build(self, scenario):
        params = make_params(scenario)
        return (params, ToyDynamics(), *toy_spaces(params))

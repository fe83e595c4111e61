"""The toy's single environment: :class:`~edgegym.core.env.EdgeEnv` runs the episode."""

from __future__ import annotations

from typing import Any, ClassVar

from edgegym.core.env import EdgeEnv
from edgegym.core.registry import ENV_IDS
from tests.families.toy.dynamics import ToyDynamics, make_params, toy_spaces

TOY_ID = "edgegym/ToyShare-v0"


class ToyShareEnv(EdgeEnv):
    """Toy family: ``Discrete(units + 1)`` units for tenant 0 (the rest to tenant 1)."""

    env_id = TOY_ID
    metadata: ClassVar[dict[str, Any]] = {"render_modes": []}

    def __init__(self, scenario=None, record_timeline: bool = False, **overrides):
        sc = self._setup(
            scenario or ENV_IDS[TOY_ID][2], overrides, render_mode=None,
            record_timeline=record_timeline,
        )  # fmt: skip
        params = make_params(sc)
        self._use(params, ToyDynamics(), *toy_spaces(params))

"""A fifth family in the folder layout of ``edgegym/families/<name>/`` (schema, reward,
dynamics, env, vector), used by ``tests/envs/test_toy_family.py`` to show that a new family is
one folder plus one registration line: ``register_family(FAMILY)``.

The toy: each step one GPU of ``units`` units is split between two tenants whose demand (in
units) is drawn every step; reward term ``served`` = units that met demand / ``units``. Its
optimum is known: give tenant 0 ``min(d0, units)``, the rest to tenant 1, which serves
``min(d0 + d1, units)``.
"""

from pathlib import Path

from edgegym.core.registry import Family
from tests.families.toy.dynamics import make_params
from tests.families.toy.env import TOY_ID
from tests.families.toy.schema import SCHEMA

#: Not registered on import (the suite's other tests must not see it); a test registers it.
FAMILY = Family(
    name="toy",
    env_id=TOY_ID,
    entry_point="tests.families.toy.env:ToyShareEnv",
    vector_entry_point="tests.families.toy.vector:ToyShareVectorEnv",
    default_scenario=str(Path(__file__).with_name("toy.yaml")),
    summary="toy: one GPU split between two tenants",
    schema=SCHEMA,
    headline_metrics=(("served", "served"),),
    make_params=make_params,
)

__all__ = ["FAMILY", "TOY_ID"]

"""Scenario schema of the toy family: a pydantic model per section, as every family has."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field

from edgegym.scenarios import Record, ScenarioModel, Weight100, family_schema
from edgegym.workload.checks import Range


class ToyObjective(Record):
    """``objective`` of a toy scenario (one weight per reward term)."""

    served: Weight100 = 1.0


class ToyScenario(ScenarioModel):
    """A toy scenario: ``steps`` steps of one GPU of ``units`` units."""

    SECTIONS: ClassVar[frozenset[str]] = frozenset({"objective"})

    family: Literal["toy"]
    steps: Annotated[int, Range(1, 1000)] = 20
    units: Annotated[int, Range(1, 20)] = 4
    objective: ToyObjective = Field(default_factory=ToyObjective)


SCHEMA = family_schema(ToyScenario, Record, arrivals=lambda d: [])

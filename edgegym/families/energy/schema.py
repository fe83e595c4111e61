"""Scenario schema of ETF's energy fair share (``edgegym/EnergyFairShare-v0``): one pydantic model
per section and record, validated by :mod:`edgegym.scenarios` (field types and ranges from
:mod:`edgegym.workload.checks`)."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from annotated_types import Len
from pydantic import (
    Field,
    model_validator,
)

from edgegym.scenarios import (
    ClockSchedule,
    Gpu,
    Model,
    ModelOverride,
    Record,
    ScenarioModel,
    Weight100,
    clock_problem,
    family_schema,
    unique_names,
)
from edgegym.workload.checks import Expect, Range, Text, rule


class EnergyHardware(Record):
    """``hardware`` of an energy scenario."""

    gpu: Gpu = "TX2"


class EnergyObjective(Record):
    """``objective`` of an energy scenario."""

    fs: Weight100 = 1.0
    ft: Weight100 = 0.0
    fe: Weight100 = 0.0
    throughput: Weight100 = 0.0
    energy: Weight100 = 0.0


class EnergyTenant(Record):
    """One of an energy scenario's ``tenants``."""

    name: Text = ""
    model: Model
    clock_mhz: ClockSchedule = 0
    weight: Annotated[float, Range(0.0, 1e6, lo_open=True)] = 1.0
    demand: Annotated[
        Literal["backlogged"] | dict[str, Any], Expect("'backlogged' or an arrival mapping")
    ] = "backlogged"
    arrive_s: Annotated[float, Range(0.0, 1e9)] = 0.0
    leave_s: Annotated[float, Range(0.0, 1e9)] = 1e9
    batch: Annotated[int, Range(1, 64)] = 1
    profile: ModelOverride | None = None  # measured numbers replacing the catalogue's

    @model_validator(mode="after")
    def _leaves_after_arriving(self) -> EnergyTenant:
        if self.leave_s <= self.arrive_s:
            raise rule(
                f"leave_s = {self.leave_s} must be after arrive_s = {self.arrive_s}",
                field="leave_s",
            )
        return self


#: Most time units in one quantum. ETF and EF hand out a quantum unit by unit, so their work
#: per decision grows with it (600,000 units took 1-3 s per decision); the bundled scenarios
#: use 60 (0.3 s in 5 ms units), and 10,000 is a 1 ms unit in a 10 s quantum.
MAX_UNITS = 10_000


class EnergyScenario(ScenarioModel):
    """A scenario of the energy family (``edgegym/EnergyFairShare-v0``, ETF)."""

    SECTIONS: ClassVar[frozenset[str]] = frozenset({"hardware", "objective", "tenants"})

    family: Literal["energy"]
    quantum_s: Annotated[float, Range(0.001, 60.0)] = 0.3
    unit_s: Annotated[float, Range(0.0001, 60.0)] = 0.01
    quanta: Annotated[int, Range(1, 10**6)] = 200
    # Bounded: every quantum sums the horizon's buffer (O(H) per step, bit-for-bit the
    # chronological sum), so 10^6 made an episode quadratic; 1000 quanta (300 s at 0.3 s)
    # is far beyond the papers' horizons. A horizon longer than the episode is the episode.
    fairness_horizon: Annotated[int, Range(1, 1000)] = 10
    max_tenants: Annotated[int, Range(1, 8)] = 8
    hardware: EnergyHardware = Field(default_factory=EnergyHardware)
    objective: EnergyObjective = Field(default_factory=EnergyObjective)
    # At most max_tenants' own bound (8), checked before the entries are: a file with 10^5
    # tenants is refused at once instead of after validating every one of them.
    tenants: Annotated[list[EnergyTenant], Len(1, 8)]

    @model_validator(mode="after")
    def _across_sections(self) -> EnergyScenario:
        units = self.quantum_s / self.unit_s
        if abs(units - round(units)) > 1e-6 or round(units) < 1:
            raise rule(f"quantum_s / unit_s = {units:g} must be a whole number of units (>= 1)")
        if round(units) > MAX_UNITS:
            raise rule(
                f"quantum_s / unit_s = {units:g} units per quantum; at most {MAX_UNITS} (ETF and "
                "EF allocate a quantum unit by unit)"
            )
        if len(self.tenants) > self.max_tenants:
            raise rule(
                f"must be a list of 1 to max_tenants = {self.max_tenants} tenants, got "
                f"{len(self.tenants)}",
                field="tenants",
            )
        for i, t in enumerate(self.tenants):
            clocks = t.clock_mhz if isinstance(t.clock_mhz, list) else [[0, t.clock_mhz]]
            for _, mhz in clocks:
                problem = clock_problem(self.hardware.gpu, mhz)
                if problem:
                    raise rule(problem, field=f"tenants[{i}]")
            t.name = t.name or f"A{i + 1}"
        unique_names(self.tenants, "tenants")  # per-tenant results are keyed by name
        return self


#: How :mod:`edgegym.scenarios` validates and overrides this family's scenarios.
SCHEMA = family_schema(
    EnergyScenario,
    EnergyHardware,
    arrivals=lambda d: [
        (f"tenants[{i}].demand", t["demand"])
        for i, t in enumerate(d["tenants"])
        if isinstance(t["demand"], dict)
    ],
)

"""Scenario schema of MIGRator's MIG reconfiguration (``edgegym/MIGReconfig-v0``): one pydantic
model per section and record, validated by :mod:`edgegym.scenarios` (field types and ranges from
:mod:`edgegym.workload.checks`)."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from annotated_types import Len
from pydantic import (
    Field,
    model_validator,
)

from edgegym.families.mig.datasets import NC_DATASETS
from edgegym.hardware.migalloc import share_count_problem, share_counts
from edgegym.hardware.mps import MPS_INFERENCE_SLOWDOWN, MPS_RETRAIN_SLOWDOWN
from edgegym.scenarios import (
    Arrival,
    ClockMHz,
    MigGpu,
    Model,
    ModelOverride,
    Record,
    ScenarioModel,
    Seconds60,
    Slowdown,
    UnitOpen,
    Weight100,
    clock_problem,
    family_schema,
    unique_names,
)
from edgegym.workload.checks import Flag, OneOf, Range, Text, rule


def _datasets() -> list[str]:
    return sorted(NC_DATASETS)


Dataset = Annotated[str, OneOf(_datasets)]


class MIGHardware(Record):
    """``hardware`` of a MIG scenario."""

    gpu: MigGpu = "A100-40GB"
    clock_mhz: ClockMHz = 0.0

    @model_validator(mode="after")
    def _clock_runs(self) -> MIGHardware:
        problem = clock_problem(self.gpu, self.clock_mhz)
        if problem:
            raise rule(problem)
        return self


class MIGOverhead(Record):
    """``overhead``: MIGRator Fig. 5 components per instance (model load is per model) and the
    rule that charges them (:func:`edgegym.families.mig.reconfig.reconfigure`): ``eq10`` (MIGRator
    Eq. 10-11: a task whose instance or GPC count changes loses its whole capacity for its Psi, the
    mean overhead measured over its reconfigurations in the last window) or ``per-instance`` (each
    instance given a new task is down for its own components)."""

    rule: Literal["eq10", "per-instance"] = "eq10"
    destroy_s: Seconds60 = 0.5
    create_s: Seconds60 = 1.5
    library_s: Seconds60 = 2.0


class MIGMPS(Record):
    """``mps``: interference between co-located work when the GPU is shared by MPS instead of
    MIG (MIGRator §1, §5.2: MPS leaves memory bandwidth shared, so the paper's Ekya and
    Astraea suffer interference that MIG removes). With ``interference`` on, whenever two or
    more tasks hold the GPU (inference instances that serve, running retraining jobs), every
    inference task serves ``1 - inference_slowdown`` of its requests per second and every
    retraining job progresses ``1 - retrain_slowdown`` as fast
    (:meth:`edgegym.families.mig.dynamics.MIGDynamics.stretch`). Off by default: MIG isolates.
    Only the dynamics change, never the observation or the action space. Defaults: the H200
    measurement of 2026-11-27 (``tools/gpu/mps_regime.py``; fp32, 224x224; docs/real-gpu.md)
    over ResNet50 and ViT-B/16 co-located as inference (batch 8) and retraining (batch 32) at
    25/50/75% shares: inference lost 15.3% on average (ResNet50 14-39%, ViT 4-5%), retraining
    3.6% (ResNet50 2.5-8.7%, ViT 1.4-1.9%).

    ``shares`` n > 0 makes the tasks hold MPS shares of the GPU in n-ths of its SMs instead of
    MIG instances (:func:`edgegym.hardware.migalloc.share_catalogue`: one share per task, the
    action space its signatures). A share change restarts the task's process (the library and
    model load of ``overhead``; nothing is destroyed or created) while the old process serves on
    at the old share until the new one is ready, memory is not partitioned
    (every model fits, the tenants' models together must fit the GPU's memory) and there is
    nothing to pre-initialise. 0 (default): MIG instances. The counts M tenants can have
    (:func:`shares_problem` refuses the others, naming them): 2-28 for one tenant, 2-23 for
    two, 3-13 for three, 4-8 for four (:func:`edgegym.hardware.migalloc.share_counts`)."""

    interference: Flag = False
    shares: Annotated[int, Range(0, 28)] = 0
    inference_slowdown: Slowdown = MPS_INFERENCE_SLOWDOWN
    retrain_slowdown: Slowdown = MPS_RETRAIN_SLOWDOWN


class MIGObjective(Record):
    """``objective`` of a MIG scenario."""

    goodput: Weight100 = 1.0
    energy: Weight100 = 0.0


class MIGTenant(Record):
    """One of a MIG scenario's ``tenants``."""

    model: Model
    dataset: Dataset
    arrival: Arrival
    slo_ms: Annotated[float, Range(0.0, 1e5, lo_open=True)]
    ceiling: UnitOpen = 0.9
    name: Text = ""
    profile: ModelOverride | None = None  # measured numbers replacing the catalogue's


class NCDatasetOverride(Record):
    """One entry of a MIG scenario's ``datasets`` (dataset name -> numbers replacing the bundled
    dataset's, :func:`edgegym.families.mig.datasets.dataset_with`): the frames or documents
    per class a window trains on, the epochs (passes over them; fractional allowed), the
    accuracy lost per doubling of the classes and the fraction of its accuracy a model loses
    when a window's new classes arrive. Every field is optional; a missing one keeps the
    bundled number."""

    samples_per_class: Annotated[int, Range(1, 10**6)] | None = None
    epochs: Annotated[float, Range(0.0, 1000.0, lo_open=True)] | None = None
    difficulty: Annotated[float, Range(0.0, 1.0)] | None = None
    drop: Annotated[float, Range(0.0, 1.0, hi_open=True)] | None = None


class MIGScenario(ScenarioModel):
    """A scenario of the MIG family (``edgegym/MIGReconfig-v0``, MIGRator)."""

    SECTIONS: ClassVar[frozenset[str]] = frozenset(
        {"hardware", "overhead", "mps", "objective", "datasets", "tenants"}
    )

    family: Literal["mig"]
    window_s: Annotated[float, Range(1.0, 1e5)] = 200.0
    windows: Annotated[int, Range(0, 100)] = 0  # 0: the datasets' schedule
    basis_s: Annotated[float, Range(0.5, 10.0)] = 1.0
    batch: Annotated[int, Range(1, 64)] = 1
    preinit: Flag = False
    data_fraction: UnitOpen = 1.0
    retrain_scale: Annotated[float, Range(0.0, 10.0, lo_open=True)] = 1.0
    hardware: MIGHardware = Field(default_factory=MIGHardware)
    overhead: MIGOverhead = Field(default_factory=MIGOverhead)
    mps: MIGMPS = Field(default_factory=MIGMPS)
    objective: MIGObjective = Field(default_factory=MIGObjective)
    datasets: dict[Dataset, NCDatasetOverride] = Field(default_factory=dict)
    tenants: Annotated[list[MIGTenant], Len(1, 4)]

    @model_validator(mode="after")
    def _across_sections(self) -> MIGScenario:
        for i, t in enumerate(self.tenants):
            t.name = t.name or f"{t.model}-{i}"
        unique_names(self.tenants, "tenants")  # per-tenant labels and results are keyed by name
        shortest = min(NC_DATASETS[t.dataset].windows for t in self.tenants)
        if self.windows > shortest:
            raise rule(
                f"must be an integer in [0, {shortest}] (the shortest dataset schedule; 0 means "
                f"{shortest}), got {self.windows}",
                field="windows",
            )
        self.windows = self.windows or shortest
        problem = shares_problem(self.mps.shares, len(self.tenants))
        if problem:
            raise rule(problem, field="mps.shares")
        if self.mps.shares and self.preinit:
            raise rule(
                "must be false with MPS shares (mps.shares > 0): pre-initialisation builds MIG "
                "instances ahead of time, and MPS has none",
                field="preinit",
            )
        return self


def shares_problem(shares: int, n_tenants: int) -> str | None:
    """Why ``mps.shares: shares`` cannot hold ``n_tenants`` tenants, naming the counts that
    can (:func:`edgegym.hardware.migalloc.share_counts`), or None (0, MIG instances, always
    can)."""
    if shares == 0:
        return None
    counts = share_counts(n_tenants)
    if shares in counts:
        return None
    lo, hi = counts[0], counts[-1]
    who = f"{n_tenants} tenant{'s' if n_tenants > 1 else ''}"
    if shares < lo:  # each inference task holds one share, and a GPU has 2 shares at least
        why = f"{who} need{'' if n_tenants > 1 else 's'} at least {lo} MPS shares"
    else:
        why = share_count_problem(n_tenants, shares)
    return f"must be 0 (MIG instances) or {lo} to {hi} MPS shares for {who}, got {shares} ({why})"


#: How :mod:`edgegym.scenarios` validates and overrides this family's scenarios.
SCHEMA = family_schema(
    MIGScenario,
    MIGHardware,
    arrivals=lambda d: [
        (f"tenants[{i}].arrival", t["arrival"]) for i, t in enumerate(d["tenants"])
    ],
)

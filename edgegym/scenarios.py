"""Scenario files: schema, validation, loading and keyword overrides.

A scenario is a YAML file naming the hardware, the tenants and their models, the drift and
configuration profiles, the window length and the objective weights. Bundled scenarios live
in ``scenarios/`` (installed as ``edgegym.scenario_data``); any other path works too.
Validation happens once, at load time: a bad file raises :class:`ScenarioError` with one line
per problem, each naming the file, the field path (``tenants[2].slo_ms``), the bad value and
the allowed range.

Each family's schema is a pydantic model (:class:`ContinualScenario`, :class:`MIGScenario`,
:class:`EnergyScenario`, :class:`DAGScenario`), one model per section and record, with the
defaults in the models, ``extra="forbid"`` (a typo is named) and the field types of
:mod:`edgegym.workload.checks` (ranges; NaN and infinities rejected). A validated scenario is
the model's ``model_dump()``: plain dicts, lists and numbers, as the simulators read them.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import numpy as np
import yaml
from annotated_types import Len, MinLen
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
    model_validator,
)
from pydantic_core import CoreSchema, PydanticCustomError, core_schema

from edgegym.families import FAMILIES, ScenarioSchema, Validator
from edgegym.hardware.gpus import GPUS
from edgegym.workload.arrival_specs import make_arrival
from edgegym.workload.checks import Expect, Flag, OneOf, Range, Text, check, error_lines, rule
from edgegym.workload.continual import MAE_PER_STD
from edgegym.workload.dag import DAGError, topological_order
from edgegym.workload.models import MODELS
from edgegym.workload.nc import NC_DATASETS


class ScenarioError(ValueError):
    """A scenario file or override is invalid; the message names file, field and range."""


class UnknownOverrideError(ScenarioError, TypeError):
    """An override names no field of the scenario.

    Also a :class:`TypeError`: environments take overrides as keyword arguments, and code that
    probes a constructor with optional keywords (TorchRL's ``GymEnv`` passes ``frameskip``,
    SB3's ``make_vec_env`` passes ``render_mode``) expects Python's "unexpected keyword
    argument" ``TypeError`` for one it does not take.

    Attributes:
        key: The override's name.
        allowed: The names it could have been.
    """

    def __init__(self, message: str, key: str = "", allowed: list[str] | None = None) -> None:
        # One-argument construction too: Gymnasium's make re-raises a creator's TypeError as
        # ``type(e)(message)``.
        super().__init__(message)
        self.key = key
        self.allowed = list(allowed or [])


# ----------------------------------------------------------------------------- field types
def _gpus() -> list[str]:
    return sorted(GPUS)


def _mig_gpus() -> list[str]:
    return sorted(name for name, g in GPUS.items() if g.mig_capable)


def _models() -> list[str]:
    return sorted(MODELS)


def _datasets() -> list[str]:
    return sorted(NC_DATASETS)


Gpu = Annotated[str, OneOf(_gpus)]
MigGpu = Annotated[str, OneOf(_mig_gpus)]
Model = Annotated[str, OneOf(_models)]
Dataset = Annotated[str, OneOf(_datasets)]
Unit = Annotated[float, Range(0.0, 1.0)]
UnitOpen = Annotated[float, Range(0.0, 1.0, lo_open=True)]
Weight100 = Annotated[float, Range(0.0, 100.0)]
Seconds60 = Annotated[float, Range(0.0, 60.0)]
DagWeight = Annotated[float, Range(0.0, 1e6)]
ClockMHz = Annotated[float, Range(0.0, 1e4)]  # a DVFS core clock; 0: the GPU's top clock
Arrival = Annotated[dict[str, Any], Expect("an arrival mapping with a 'kind' field")]


@dataclass(frozen=True)
class Pair:
    """Pydantic metadata of a ``list[float]`` field: ``[low, high]`` with
    ``lo <= low <= high <= hi`` (a range a value is drawn from).

    Attributes:
        lo: Smallest allowed low end.
        hi: Largest allowed high end.
    """

    lo: float
    hi: float

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> CoreSchema:
        """Two numbers in ``[lo, hi]``, in order; any error reads ``must be a pair ...``."""
        item = Range(self.lo, self.hi).__get_pydantic_core_schema__(float, handler)
        pair = core_schema.list_schema(item, min_length=2, max_length=2)

        def ordered(v: list[float]) -> list[float]:
            if v[0] > v[1]:
                raise PydanticCustomError("order", "low > high")
            return v

        schema = core_schema.no_info_after_validator_function(ordered, pair)
        return core_schema.custom_error_schema(
            schema,
            custom_error_type="expected",
            custom_error_message="must be {expected}",
            custom_error_context={
                "expected": f"a pair [low, high] with {self.lo} <= low <= high <= {self.hi}"
            },
        )


_STEP = (Annotated[float, Range(0)], Annotated[float, Range(0, lo_open=True)])


def _clock(v: Any) -> Any:
    """An energy tenant's clock: MHz > 0, or a schedule ``[[time_s >= 0, MHz > 0], ...]``."""
    try:
        if not isinstance(v, list):
            return check(v, _STEP[1], "clock_mhz")
        if not v:
            raise ValueError
        for step in v:
            if not isinstance(step, list | tuple) or len(step) != 2:
                raise ValueError
            for x, tp in zip(step, _STEP, strict=True):
                check(x, tp, "clock_mhz")
    except ValueError:
        raise PydanticCustomError(
            "expected",
            "must be {expected}",
            {"expected": "MHz > 0 or a list of [time_s, MHz] pairs"},
        ) from None
    return v


#: An energy tenant's clock: MHz > 0, or ``[[time_s, MHz], ...]`` (kept as written).
ClockSchedule = Annotated[Any, PlainValidator(_clock)]


def _clock_problem(gpu: str, mhz: float) -> str | None:
    """Why a DVFS clock is not one the GPU can run (0: its top clock), or None."""
    try:
        GPUS[gpu].resolve_clock(mhz)
    except ValueError as exc:
        return str(exc)
    return None


def _unique_names(records: list[Any], field: str) -> None:
    names = [r.name for r in records]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise rule(f"duplicate name {dup[0]!r}", field=field)


# ----------------------------------------------------------------------------- models
class Record(BaseModel):
    """Base of every section and record: unknown fields are errors."""

    model_config = ConfigDict(extra="forbid")


class ScenarioModel(Record):
    """Base of a family's scenario: the fields every family has.

    Class attributes:
        SECTIONS: Fields that are sections or lists of records (``section.field`` overrides).
        HARDWARE: The section whose fields overrides may name bare (``gpus=4``).
    """

    SECTIONS: ClassVar[frozenset[str]] = frozenset()
    HARDWARE: ClassVar[str] = "hardware"
    #: Free-text fields, kept as written (and left out when absent).
    FREE: ClassVar[frozenset[str]] = frozenset({"provenance", "notes", "paper"})

    name: Text
    description: Text = ""
    provenance: Any = None
    notes: Any = None
    paper: Any = None

    @model_serializer(mode="wrap")
    def _as_written(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Fields, then the free text given, then the sections (absent free text left out)."""
        data = handler(self)
        head = ["name", "family", "description"]
        order = [
            *head,
            *(k for k in data if k not in head and k not in self.SECTIONS and k not in self.FREE),
            *(k for k in ("provenance", "notes", "paper") if k in self.model_fields_set),
            *(k for k in data if k in self.SECTIONS),
        ]
        return {k: data[k] for k in order}


# Continual family (edgegym/ContinualLearning-v0, Ekya).
class Hardware(Record):
    """``hardware`` of a continual scenario."""

    gpu: Gpu
    gpus: Annotated[int, Range(1, 64)] = 1
    share_quantum: Annotated[float, Range(0.0, 1.0, lo_open=True)] = 0.1
    share_alpha: Annotated[float, Range(0.1, 1.0)] = 1.0
    multi_gpu_efficiency: Unit = 0.9
    clock_mhz: ClockMHz = 0.0

    @model_validator(mode="after")
    def _clock_runs(self) -> Hardware:
        problem = _clock_problem(self.gpu, self.clock_mhz)
        if problem:
            raise rule(problem)
        return self


class RetrainConfig(Record):
    """One of ``retrain_configs``."""

    name: Text
    epochs: Annotated[int, Range(1, 10_000)] = 1
    batch_size: Annotated[int, Range(1, 65_536)] = 32
    layers_retrained: Unit = 1.0
    last_layer_width: Annotated[int, Range(1, 1_000_000)] = 64
    data_fraction: UnitOpen = 1.0
    gpu_seconds: Annotated[float, Range(0.0, 1e7, lo_open=True)] = 1.0
    quality: Unit = 1.0
    curve_rate: Annotated[float, Range(0.0, 100.0, lo_open=True)] = 3.0


class InferenceConfig(Record):
    """One of ``inference_configs``."""

    name: Text
    frame_sampling: UnitOpen = 1.0
    resolution: UnitOpen = 1.0
    share: Annotated[float, Range(0.0, 64.0, lo_open=True)]
    accuracy_factor: Unit


class Sensitivity(Record):
    """``drift.sensitivity``: ranges the per-stream sensitivities are drawn from."""

    epochs_tau: Annotated[list[float], Pair(0.1, 1000.0)]
    data_exponent: Annotated[list[float], Pair(0.0, 5.0)]
    partial_layers: Annotated[list[float], Pair(0.0, 1.0)]


class GeneratedDrift(Record):
    """``drift`` with ``kind: generated``: every episode's profile is drawn from ranges."""

    kind: Literal["generated"]
    ceiling: Annotated[list[float], Pair(0.0, 1.0)]
    floor_gap: Annotated[list[float], Pair(0.0, 1.0)]
    drift: Annotated[list[float], Pair(0.0, 1.0)]
    config_jitter: Annotated[float, Range(0.0, 0.5)] = 0.0
    data_volume: Annotated[list[float], Pair(0.01, 100.0)] = [1.0, 1.0]
    demand: Annotated[list[float], Pair(0.01, 100.0)] = [1.0, 1.0]
    sensitivity: Sensitivity | None = None


class TableDrift(Record):
    """``drift`` with ``kind: table``: explicit tables, broadcast to their shapes (checked by
    :class:`ContinualScenario`, which knows the streams, windows and configurations)."""

    #: field -> (axes of [streams, windows, configs] it spans, upper bound of its values).
    SHAPES: ClassVar[dict[str, tuple[int, float | None]]] = {
        "start_accuracy": (1, 1.0),
        "post_accuracy": (3, 1.0),
        "gpu_seconds": (3, None),
        "floor": (2, 1.0),
        "drift": (2, 1.0),
        "demand": (2, None),
    }

    kind: Literal["table"]
    start_accuracy: Any
    post_accuracy: Any
    gpu_seconds: Any
    floor: Any = None
    drift: Any = None
    demand: Any = None

    @model_serializer(mode="wrap")
    def _as_written(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return {k: v for k, v in handler(self).items() if k in self.model_fields_set}

    def check_shapes(self, shape: tuple[int, int, int]) -> None:
        """Each table fits ``shape[:axes]`` (or is a scalar) and its values are in range.

        Raises:
            PydanticCustomError: The first table that does not, naming it.
        """
        for key, (axes, upper) in self.SHAPES.items():
            if key not in self.model_fields_set:
                continue
            want = shape[:axes]
            try:
                arr = np.asarray(getattr(self, key), dtype=float)
            except (TypeError, ValueError):
                raise rule("must be numbers (nested lists)", field=key) from None
            try:
                if arr.ndim not in (0, len(want)):
                    raise ValueError
                np.broadcast_to(arr, want)
            except ValueError:
                raise rule(
                    f"shape {list(arr.shape)} does not fit [streams, windows, configs] = "
                    f"{list(want)}",
                    field=key,
                ) from None
            bounds = Range(0, upper)
            if np.any(bounds.outside(arr)):
                raise rule(f"values must be finite numbers {bounds.text()}", field=key)


class Profiler(Record):
    """``profiler``: Ekya's micro-profiler and what comes with it (NSDI'22 §4.3, §6.3; arXiv §5).

    Every mechanic is off at its default; the bundled Ekya scenarios turn them on.

    Attributes:
        error: Median absolute error of the post-retraining accuracy estimates (Fig. 11a:
            0.058); the Gaussian error's standard deviation is derived from it
            (:func:`edgegym.workload.continual.error_std`, clipping to [0, 1] included).
        shared: Fraction of the error variance shared by all configurations of a stream in
            a window (they are profiled on the same data subsample).
        prune_every: Windows between two prunings of the worst configurations (0: never).
        prune_fraction: Fraction of a stream's profiled configurations dropped at each
            pruning (those farthest below the Pareto frontier of cost vs estimated accuracy).
        cost_s: GPU-seconds (full GPU, top clock) to profile every configuration of one
            stream in one window; a pruned list costs its configurations' share of it. The
            window's cost is held as a GPU share for the whole window.
        annotation_s: Seconds at each window start before the golden model's labels exist;
            no retraining job starts before (Ekya subtracts the delay from the window).
        checkpoint_epochs: A retraining job is checkpointed every this many epochs (0:
            never): the checkpoint replaces the deployed model when it is more accurate, the
            job's accuracy estimate is refined, and the scheduler decides again.
    """

    error: Annotated[float, Range(0.0, 0.5)] = 0.0
    shared: Unit = 0.0
    prune_every: Annotated[int, Range(0, 1000)] = 0
    prune_fraction: Annotated[float, Range(0.0, 1.0, hi_open=True)] = 0.0
    cost_s: Annotated[float, Range(0.0, 1e6)] = 0.0
    annotation_s: Annotated[float, Range(0.0, 1e6)] = 0.0
    checkpoint_epochs: Annotated[int, Range(0, 10_000)] = 0


def _old_profiler_fields(data: Any) -> Any:
    """Convert the pre-issue-14 top-level ``profiler_noise`` / ``profiler_noise_shared``.

    ``profiler_noise`` was the estimate error's standard deviation: it is read as
    ``profiler.error = MAE_PER_STD * profiler_noise`` (0.6745 x), the median absolute error of
    Gaussian errors of that deviation, so the deviation the environment derives is the old one
    wherever clipping to [0, 1] does not matter; ``profiler_noise_shared`` is read as
    ``profiler.shared``. Giving an old field and its new one is an error.
    """
    if not isinstance(data, dict) or not (
        "profiler_noise" in data or "profiler_noise_shared" in data
    ):
        return data
    data = dict(data)
    prof = data.get("profiler")
    prof = dict(prof) if isinstance(prof, Mapping) else {}
    for old, new in (("profiler_noise", "error"), ("profiler_noise_shared", "shared")):
        if old not in data:
            continue
        value = data.pop(old)
        if new in prof:
            raise rule(
                f"give profiler.{new} or the old {old}, not both ({old} is read as "
                f"profiler.{new}{' = 0.6745 x ' + old if new == 'error' else ''})",
                field=old,
            )
        if new == "error":
            try:
                value = check(value, Annotated[float, Range(0.0, 0.5)], old) * MAE_PER_STD
            except ValueError as exc:
                raise rule(str(exc).partition(": ")[2], field=old) from None
        prof[new] = value
    data["profiler"] = prof
    return data


class Objective(Record):
    """``objective`` of a continual scenario."""

    accuracy: Weight100 = 1.0
    a_min: Weight100 = 1.0
    energy: Unit = 0.0


class Uniform(Record):
    """``uniform``: the two retraining configurations of the Uniform baseline."""

    config1: Text
    config2: Text


class ContinualScenario(ScenarioModel):
    """A scenario of the continual family (``edgegym/ContinualLearning-v0``, Ekya)."""

    SECTIONS: ClassVar[frozenset[str]] = frozenset(
        {
            "hardware",
            "retrain_configs",
            "inference_configs",
            "drift",
            "uniform",
            "objective",
            "profiler",
        }
    )

    family: Literal["continual"]
    model: Model = "resnet18"
    streams: Annotated[int, Range(1, 64)]
    windows: Annotated[int, Range(1, 1000)]
    window_s: Annotated[float, Range(0.0, 1e6, lo_open=True)]
    a_min: Unit = 0.0
    profiler: Profiler = Field(default_factory=Profiler)
    hardware: Hardware
    retrain_configs: Annotated[list[RetrainConfig], MinLen(1)]
    inference_configs: Annotated[list[InferenceConfig], MinLen(1)]
    objective: Objective = Field(default_factory=Objective)
    uniform: Uniform | None = None
    drift: Annotated[GeneratedDrift | TableDrift, Field(discriminator="kind")]

    @model_validator(mode="before")
    @classmethod
    def _old_fields(cls, data: Any) -> Any:
        """Pre-issue-14 files: ``profiler_noise`` (a standard deviation) and
        ``profiler_noise_shared`` become ``profiler.error`` and ``profiler.shared``."""
        return _old_profiler_fields(data)

    @model_validator(mode="after")
    def _across_sections(self) -> ContinualScenario:
        _unique_names(self.retrain_configs, "retrain_configs")
        _unique_names(self.inference_configs, "inference_configs")
        names = [c.name for c in self.retrain_configs]
        if self.uniform is None:
            self.uniform = Uniform(config1=names[-1], config2=names[0])
        for key in ("config1", "config2"):
            value = getattr(self.uniform, key)
            if value not in names:
                raise rule(
                    f"must be one of {', '.join(names)}, got {value!r}", field=f"uniform.{key}"
                )
        if isinstance(self.drift, TableDrift):
            try:
                self.drift.check_shapes((self.streams, self.windows, len(names)))
            except PydanticCustomError as err:
                ctx = err.context or {}
                raise rule(str(ctx["problem"]), field=f"drift.{ctx['field']}") from None
        return self


# MIG reconfiguration family (edgegym/MIGReconfig-v0, MIGRator).
class MIGHardware(Record):
    """``hardware`` of a MIG scenario."""

    gpu: MigGpu = "A100-40GB"
    clock_mhz: ClockMHz = 0.0

    @model_validator(mode="after")
    def _clock_runs(self) -> MIGHardware:
        problem = _clock_problem(self.gpu, self.clock_mhz)
        if problem:
            raise rule(problem)
        return self


class MIGOverhead(Record):
    """``overhead``: MIGRator Fig. 5 components per instance (model load is per model) and the
    rule that charges them (:func:`edgegym.sim.mig.reconfigure`): ``eq10`` (MIGRator Eq. 10-11:
    a task whose instance or GPC count changes loses its whole capacity for its Psi, the mean
    overhead measured over its reconfigurations in the last window) or ``per-instance`` (each
    instance given a new task is down for its own components)."""

    rule: Literal["eq10", "per-instance"] = "eq10"
    destroy_s: Seconds60 = 0.5
    create_s: Seconds60 = 1.5
    library_s: Seconds60 = 2.0


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


class MIGScenario(ScenarioModel):
    """A scenario of the MIG family (``edgegym/MIGReconfig-v0``, MIGRator)."""

    SECTIONS: ClassVar[frozenset[str]] = frozenset({"hardware", "overhead", "objective", "tenants"})

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
    objective: MIGObjective = Field(default_factory=MIGObjective)
    tenants: Annotated[list[MIGTenant], Len(1, 4)]

    @model_validator(mode="after")
    def _across_sections(self) -> MIGScenario:
        for i, t in enumerate(self.tenants):
            t.name = t.name or f"{t.model}-{i}"
        shortest = min(NC_DATASETS[t.dataset].windows for t in self.tenants)
        if self.windows > shortest:
            raise rule(
                f"must be an integer in [0, {shortest}] (the shortest dataset schedule; 0 means "
                f"{shortest}), got {self.windows}",
                field="windows",
            )
        self.windows = self.windows or shortest
        return self


# Energy fair-share family (edgegym/EnergyFairShare-v0, ETF).
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

    @model_validator(mode="after")
    def _leaves_after_arriving(self) -> EnergyTenant:
        if self.leave_s <= self.arrive_s:
            raise rule(
                f"leave_s = {self.leave_s} must be after arrive_s = {self.arrive_s}",
                field="leave_s",
            )
        return self


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
    tenants: Annotated[list[EnergyTenant], MinLen(1)]

    @model_validator(mode="after")
    def _across_sections(self) -> EnergyScenario:
        units = self.quantum_s / self.unit_s
        if abs(units - round(units)) > 1e-6 or round(units) < 1:
            raise rule(f"quantum_s / unit_s = {units:g} must be a whole number of units (>= 1)")
        if len(self.tenants) > self.max_tenants:
            raise rule(
                f"must be a list of 1 to max_tenants = {self.max_tenants} tenants, got "
                f"{len(self.tenants)}",
                field="tenants",
            )
        for i, t in enumerate(self.tenants):
            clocks = t.clock_mhz if isinstance(t.clock_mhz, list) else [[0, t.clock_mhz]]
            for _, mhz in clocks:
                problem = _clock_problem(self.hardware.gpu, mhz)
                if problem:
                    raise rule(problem, field=f"tenants[{i}]")
            t.name = t.name or f"A{i + 1}"
        return self


# DAG offload family (edgegym/DAGOffload-v0, SRS/MRS).
class DAGServers(Record):
    """``servers`` of a DAG scenario (the hardware section). The defaults are the SRS slides'
    testbed: 5 servers of 2 A100 80 GB, 9.7-19.5 TFLOPS, server-server and controller-server
    links of 3-5 Gbps, storage-server links of 7-10 Gbps (each rate drawn per episode)."""

    count: Annotated[int, Range(1, 64)] = 5
    gpu: Gpu = "A100-80GB"
    gpus_per_server: Annotated[int, Range(1, 16)] = 2
    units_per_gpu: Annotated[int, Range(1, 100)] = 2
    speed_tflops: Annotated[list[float], Pair(0.1, 1e4)] = [9.7, 19.5]
    link_gbps: Annotated[list[float], Pair(0.001, 1e4)] = [3.0, 5.0]
    # The controller's link to each server (a request's input data).
    controller_gbps: Annotated[list[float], Pair(0.001, 1e4)] = [3.0, 5.0]
    # The storage cluster's link to each server (a retraining node's training data).
    storage_gbps: Annotated[list[float], Pair(0.001, 1e4)] = [7.0, 10.0]


class DAGRetrain(Record):
    """One of a DAG scenario's ``retrain_configs``."""

    name: Text
    data_mb: Annotated[float, Range(0.0, 1e6)]
    workload: Annotated[float, Range(0.0, 1e6, lo_open=True)]
    demand: Annotated[float, Range(0.0, 1e3, lo_open=True)]
    gain: Unit


class DAGModel(Record):
    """One of a DAG scenario's ``models`` (name -> accuracy profile)."""

    start_accuracy: Unit
    ceiling: UnitOpen  # an accuracy ceiling of 0 is no model (and divides the features)
    drift_per_s: Annotated[float, Range(0.0, 1.0)] = 0.0005
    floor: Unit = 0.3
    size_mb: Annotated[float, Range(0.0, 1e5)] = 20.0
    # Drifted samples collected per second (besides request inputs with pool_from_inputs);
    # with neither, configurations always have their full data.
    pool_mb_per_s: Annotated[float, Range(0.0, 1e4)] = 0.0


class DAGObjective(Record):
    """Weights of the DAG family's completion and energy terms; the accuracy term's weight is
    the paper's theta (top-level ``theta``), so Eq. 9 is the default objective."""

    completion: DagWeight = 1.0
    energy: DagWeight = 0.0


class DAGTask(Record):
    """One task (node) of a DAG application."""

    model: Text
    workload: Annotated[float, Range(0.0, 1e6, lo_open=True)]
    demand: Annotated[float, Range(0.0, 1e3, lo_open=True)] = 1.0
    input_mb: Annotated[float, Range(0.0, 1e6)] = 0.0


Edge = Annotated[list[Annotated[float, Range()]], Len(3, 3), Expect("an edge [from, to, MB]")]


class DAGApplication(Record):
    """One of a DAG scenario's ``applications``: tasks and the edges between them."""

    name: Text | None = None
    tasks: Annotated[list[DAGTask], MinLen(1)]
    edges: list[Edge] = []
    weight: Annotated[float, Range(0.0, lo_open=True)] = 1.0

    @model_validator(mode="after")
    def _acyclic(self) -> DAGApplication:
        for i, (_, _, mb) in enumerate(self.edges):
            if not 0.0 <= mb <= 1e6:  # as a task's input_mb
                raise rule(f"edge {i}: MB must be in [0, 1e6], got {mb:g}", field="edges")
        try:
            topological_order(
                len(self.tasks), [(int(e[0]), int(e[1])) for e in self.edges], self.name or "dag"
            )
        except DAGError as exc:
            raise rule(str(exc), field="edges") from None
        self.weight = float(self.weight)
        return self


class DAGScenario(ScenarioModel):
    """A scenario of the DAG family (``edgegym/DAGOffload-v0``, SRS/MRS)."""

    SECTIONS: ClassVar[frozenset[str]] = frozenset(
        {"servers", "retrain_configs", "models", "applications", "arrival", "objective"}
    )
    HARDWARE: ClassVar[str] = "servers"

    family: Literal["dag"]
    requests: Annotated[int, Range(1, 10**6)] = 200
    duration_s: Annotated[float, Range(0.0, 1e7, lo_open=True)] = 600.0
    theta: DagWeight = 1.0
    a_min: Unit = 0.0
    max_nodes: Annotated[int, Range(1, 64)] = 8
    max_edges: Annotated[int, Range(1, 256)] = 16
    # Drifted samples = the data each request sends to a model (emptied by a retraining).
    pool_from_inputs: Flag = False
    servers: DAGServers = Field(default_factory=DAGServers)
    objective: DAGObjective = Field(default_factory=DAGObjective)
    retrain_configs: Annotated[list[DAGRetrain], MinLen(1)]
    models: Annotated[dict[str, DAGModel], MinLen(1)]
    arrival: Arrival = {"kind": "poisson", "rate": 1.0}
    applications: Annotated[list[DAGApplication], MinLen(1)]

    @model_validator(mode="after")
    def _across_sections(self) -> DAGScenario:
        _unique_names(self.retrain_configs, "retrain_configs")
        units = self.servers.gpus_per_server * self.servers.units_per_gpu
        for h, cfg in enumerate(self.retrain_configs):
            if cfg.demand > units:
                raise rule(
                    f"{cfg.demand:g} units exceed a server's {units} (servers.gpus_per_server "
                    "x units_per_gpu): no server could run the retraining",
                    field=f"retrain_configs[{h}].demand",
                )
        for name, m in self.models.items():
            if m.start_accuracy > m.ceiling:
                raise rule(
                    f"{m.start_accuracy:g} is above the model's ceiling {m.ceiling:g}",
                    field=f"models.{name}.start_accuracy",
                )
        for a, app in enumerate(self.applications):
            where = f"applications[{a}]"
            app.name = app.name or f"app{a}"
            for i, task in enumerate(app.tasks):
                if task.model not in self.models:
                    raise rule(
                        f"must be one of {', '.join(self.models)}, got {task.model!r}",
                        field=f"{where}.tasks[{i}].model",
                    )
                if task.demand > units:
                    raise rule(
                        f"{task.demand:g} units exceed a server's {units} (servers."
                        "gpus_per_server x units_per_gpu): no server could run the task",
                        field=f"{where}.tasks[{i}].demand",
                    )
            for j, edge in enumerate(app.edges):
                for end in edge[:2]:
                    if not float(end).is_integer():
                        raise rule(
                            f"task indices must be whole numbers, got {end:g}",
                            field=f"{where}.edges[{j}]",
                        )
            if len(app.tasks) > self.max_nodes:
                raise rule(
                    f"{len(app.tasks)} tasks exceed max_nodes = {self.max_nodes}", field=where
                )
            if len(app.edges) > self.max_edges:
                raise rule(
                    f"{len(app.edges)} edges exceed max_edges = {self.max_edges}", field=where
                )
        return self


def _validator(
    model: type[ScenarioModel], arrivals: Callable[[dict[str, Any]], list[tuple[str, Any]]]
) -> Validator:
    """A family's validator: the model, then its arrival specs (files resolved in base_dir).

    Args:
        model: The family's scenario model.
        arrivals: ``data -> [(field path, arrival mapping), ...]`` of a validated scenario.

    Returns:
        ``validate(raw, src, base_dir) -> data`` raising :class:`ScenarioError`.
    """

    def validate(raw: Mapping[str, Any], src: str, base_dir: Path | None) -> dict[str, Any]:
        try:
            data = model.model_validate(raw).model_dump()
        except ValidationError as exc:
            raise ScenarioError("\n".join(error_lines(exc, src, model=model, sep=": "))) from None
        for where, spec in arrivals(data):
            try:
                make_arrival(spec, base_dir, where=f"{src}: {where}")
            except (ValueError, FileNotFoundError) as exc:
                raise ScenarioError(str(exc)) from None
        return data

    return validate


def _schema(
    model: type[ScenarioModel], validate: Validator, hardware: type[Record]
) -> ScenarioSchema:
    top = {
        k: f
        for k, f in model.model_fields.items()
        if k not in model.SECTIONS and k not in model.FREE
    }
    return ScenarioSchema(
        validate, top, dict(hardware.model_fields), model.SECTIONS, hardware_key=model.HARDWARE
    )


def _schemas() -> dict[str, ScenarioSchema]:
    """The built-in families' scenario schemas (each family package registers its own)."""
    continual = _validator(ContinualScenario, lambda d: [])
    mig = _validator(
        MIGScenario,
        lambda d: [(f"tenants[{i}].arrival", t["arrival"]) for i, t in enumerate(d["tenants"])],
    )
    energy = _validator(
        EnergyScenario,
        lambda d: [
            (f"tenants[{i}].demand", t["demand"])
            for i, t in enumerate(d["tenants"])
            if isinstance(t["demand"], dict)
        ],
    )
    dag = _validator(DAGScenario, lambda d: [("arrival", d["arrival"])])
    return {
        "continual": _schema(ContinualScenario, continual, Hardware),
        "mig": _schema(MIGScenario, mig, MIGHardware),
        "energy": _schema(EnergyScenario, energy, EnergyHardware),
        "dag": _schema(DAGScenario, dag, DAGServers),
    }


#: Scenario schemas of the four built-in families, by family name.
SCHEMAS: dict[str, ScenarioSchema] = _schemas()


@dataclass
class Scenario:
    """A validated scenario: the raw mapping plus where it came from."""

    name: str
    data: dict[str, Any]
    source: str

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def get(self, key: str, default: Any = None) -> Any:
        """Mapping-style access."""
        return self.data.get(key, default)

    def with_overrides(self, **overrides: Any) -> Scenario:
        """A validated copy with field overrides (as :func:`load` applies them)."""
        path = Path(self.source)
        src = path.name if path.parent == _bundled_dir() else str(path)
        raw = apply_overrides(copy.deepcopy(self.data), overrides, src)
        return Scenario(self.name, validate(raw, src, path.parent), self.source)


def validate(raw: Any, src: str, base_dir: Path | None = None) -> dict[str, Any]:
    """Validate a scenario mapping and fill defaults; raise :class:`ScenarioError` if bad.

    Args:
        raw: The parsed file.
        src: Name used in messages.
        base_dir: Directory relative trace paths resolve against (the file's directory).

    Returns:
        The validated scenario: plain dicts, lists and numbers, defaults filled in.
    """
    if not isinstance(raw, Mapping):
        raise ScenarioError(f"{src}: the file must hold a mapping of fields at the top level")
    if raw.get("family") not in FAMILIES:
        raise ScenarioError(
            f"{src}: family = {raw.get('family')!r} is not one of {', '.join(FAMILIES)}"
        )
    return FAMILIES[raw["family"]].schema.validate(raw, src, base_dir)


# ----------------------------------------------------------------------------- loading
def _bundled_dir() -> Path:
    return Path(str(resources.files("edgegym.scenario_data")))


def bundled() -> list[str]:
    """Names of the bundled scenarios."""
    return sorted(p.stem for p in _bundled_dir().glob("*.yaml"))


def resolve(name_or_path: str | Path) -> Path:
    """Path of a bundled scenario name or of a scenario file."""
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml") or p.exists():
        if not p.exists():
            raise ScenarioError(f"{p}: scenario file not found")
        if p.is_dir():
            raise ScenarioError(f"{p}: is a folder; give a scenario .yaml file")
        return p
    candidate = _bundled_dir() / f"{name_or_path}.yaml"
    if not candidate.exists():
        raise ScenarioError(
            f"unknown scenario {str(name_or_path)!r}; bundled: {', '.join(bundled())} "
            "(or give a path to a .yaml file)"
        )
    return candidate


def _parse_value(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return yaml.safe_load(value)
        except yaml.YAMLError:
            return value
    return value


def apply_overrides(raw: dict[str, Any], overrides: Mapping[str, Any], src: str) -> dict[str, Any]:
    """Apply ``key=value`` overrides (dotted paths; bare hardware keys such as ``gpus`` work)."""
    out = copy.deepcopy(raw)
    fam = FAMILIES.get(out.get("family"))
    schema = fam.schema if fam is not None else SCHEMAS["continual"]
    top, hardware, sections = schema.top, schema.hardware, schema.sections
    for key, value in overrides.items():
        path = key.split(".")
        if len(path) == 1 and path[0] not in out and path[0] in hardware:
            path = [schema.hardware_key, path[0]]
        if len(path) == 1 and path[0] not in top and path[0] not in sections:
            allowed = [*top, *hardware, "section.field"]
            raise UnknownOverrideError(
                f"{src}: override {key!r}: unknown field (allowed: {', '.join(allowed)})",
                key,
                allowed,
            )
        node = out
        for part in path[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ScenarioError(f"{src}: override {key!r}: {part} is not a section")
        node[path[-1]] = _parse_value(value)
    return out


def load(name_or_path: str | Path, **overrides: Any) -> Scenario:
    """Load, override and validate a scenario.

    Args:
        name_or_path: A bundled name (see :func:`bundled`) or a path to a YAML file.
        **overrides: Field overrides, e.g. ``gpus=4`` or ``drift.drift=[0.1, 0.2]``.

    Raises:
        ScenarioError: The file is missing, unparsable, or a field is out of range.
    """
    path = resolve(name_or_path)
    src = path.name if path.parent == _bundled_dir() else str(path)
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ScenarioError(f"{src}: not valid YAML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ScenarioError(f"{src}: not a text file ({exc.reason})") from None
    except RecursionError:
        raise ScenarioError(f"{src}: nested too deeply to be a scenario file") from None
    try:
        if overrides:
            raw = apply_overrides(raw if isinstance(raw, dict) else {}, overrides, src)
        data = validate(raw, src, path.parent)
    except RecursionError:
        raise ScenarioError(f"{src}: a value is nested too deeply to be a scenario") from None
    return Scenario(name=data["name"], data=data, source=str(path))

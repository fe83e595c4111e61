"""Scenario schema of Ekya's continual learning (``edgegym/ContinualLearning-v0``): one pydantic
model per section and record, validated by :mod:`edgegym.scenarios` (field types and ranges from
:mod:`edgegym.workload.checks`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal

import numpy as np
from annotated_types import MinLen
from pydantic import (
    Field,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)
from pydantic_core import PydanticCustomError

from edgegym.hardware.mps import RESNET18_MPS_INFERENCE_SLOWDOWN, RESNET18_MPS_RETRAIN_SLOWDOWN
from edgegym.scenarios import (
    ClockMHz,
    Gpu,
    Model,
    Pair,
    Record,
    ScenarioModel,
    Slowdown,
    Unit,
    UnitOpen,
    Weight100,
    clock_problem,
    family_schema,
    unique_names,
)
from edgegym.workload.checks import Flag, Range, Text, check, rule
from edgegym.workload.continual import MAE_PER_STD, first_part

#: Most share levels ``gpus / share_quantum`` an allocation may have: the action space has
#: that many levels per job, and the thief and the dynamics hold arrays of that length (at 64
#: GPUs and a 1e-6 quantum the thief's floors alone took about 3 GB).
MAX_SHARE_LEVELS = 100_000


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
        problem = clock_problem(self.gpu, self.clock_mhz)
        if problem:
            raise rule(problem)
        levels = self.gpus / self.share_quantum
        if levels > MAX_SHARE_LEVELS:
            raise rule(
                f"share_quantum {self.share_quantum:g} with {self.gpus} GPU(s) gives "
                f"{levels:,.0f} share levels per job; at most {MAX_SHARE_LEVELS:,} (a quantum of "
                f"at least {self.gpus / MAX_SHARE_LEVELS:g} GPU)"
            )
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
    :class:`ContinualScenario`, which knows the streams, windows and configurations).

    A table may hold more streams or windows than the scenario runs: the first ``streams``
    rows and the first ``windows`` columns are used
    (:func:`~edgegym.workload.continual.first_part`). Ekya adds streams in a fixed order, so
    any k streams are the first k of every larger set (§6.1), and a measured table lists its
    windows as they come, so one table serves a sweep over the stream count and a shorter
    episode."""

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
                np.broadcast_to(first_part(arr, want), want)
            except ValueError:
                raise rule(_misfit(arr.shape, want), field=key) from None
            bounds = Range(0, upper)
            if np.any(bounds.outside(arr)):
                raise rule(f"values must be finite numbers {bounds.text()}", field=key)


def _misfit(have: tuple[int, ...], want: tuple[int, ...]) -> str:
    """Why a table of shape ``have`` does not fit an episode of ``want`` = ``[streams, windows,
    configs][:len(want)]``, naming the axis that falls short where it is one."""
    axes = ("streams", "windows", "configs")
    text = f"shape {list(have)} does not fit [{', '.join(axes[: len(want)])}] = {list(want)}"
    if len(have) != len(want):
        return text
    why = [
        f"it holds {n} {axis}, the scenario runs {w}"
        for axis, n, w in zip(axes[:2], have, want, strict=False)
        if 1 < n < w
    ]
    if why:
        return f"{text}: {'; '.join(why)} (a table may hold more streams or windows, not fewer)"
    return text


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


class ContinualMPS(Record):
    """``mps``: interference between inference and retraining that share the GPUs' SMs by MPS,
    as Ekya runs them (NSDI'22 §5). With ``interference`` on, whenever a retraining job holds
    a share beside inference, every stream's inference keeps ``1 - inference_slowdown`` of its
    share's throughput (fewer frames kept) and every job progresses ``1 - retrain_slowdown``
    as fast (:func:`edgegym.hardware.mps.interfered`, the rule the MIG family's MPS baselines
    use). The family pools the GPUs' shares without placing them on GPUs, so on more than one
    GPU every stream counts as co-located with any running job (exact on one GPU, the most
    interference on more). Off by default: the authors' simulator, whose inputs the bundled
    Ekya scenarios take, models none, and neither does the thief's estimate. Only the
    dynamics change, never the observation or the action space. Defaults: the H200
    measurement of 2026-11-27 for ResNet18, Ekya's model
    (:data:`edgegym.hardware.mps.RESNET18_MPS_INFERENCE_SLOWDOWN`, 2.0%, and
    ``RESNET18_MPS_RETRAIN_SLOWDOWN``, 4.3%); the MIG family's default is the mean over
    ResNet50 and ViT-B/16 (15.3% and 3.6%), MIGRator's larger models."""

    interference: Flag = False
    inference_slowdown: Slowdown = RESNET18_MPS_INFERENCE_SLOWDOWN
    retrain_slowdown: Slowdown = RESNET18_MPS_RETRAIN_SLOWDOWN


class Objective(Record):
    """``objective`` of a continual scenario."""

    accuracy: Weight100 = 1.0
    a_min: Weight100 = 1.0
    energy: Unit = 0.0


class Uniform(Record):
    """``uniform``: the two retraining configurations of the Uniform baseline.

    Either named (``config1``, ``config2``: Table 1's example names them) or chosen by Ekya's
    procedure (§5): ``holdout_streams`` hold-out streams drawn from the scenario's ``drift``
    with seed ``holdout_seed`` (outside the evaluation's seeds), the Pareto frontier of their
    mean cost and accuracy, its most accurate point as Config 1 and its middle point as
    Config 2 (:func:`edgegym.workload.continual.uniform_points`). Generated drift only.
    """

    config1: Text | None = None
    config2: Text | None = None
    holdout_streams: Annotated[int, Range(1, 64)] | None = None
    holdout_seed: Annotated[int, Range(0, 2**63 - 1)] | None = None

    @model_validator(mode="after")
    def _one_way(self) -> Uniform:
        named = self.config1 is not None or self.config2 is not None
        holdout = self.holdout_streams is not None or self.holdout_seed is not None
        if named == holdout:
            raise rule(
                "give config1 and config2 (named configurations) or holdout_streams and "
                "holdout_seed (Ekya's hold-out Pareto procedure), one of the two"
            )
        if named and (self.config1 is None or self.config2 is None):
            raise rule("give both config1 and config2")
        if holdout and (self.holdout_streams is None or self.holdout_seed is None):
            raise rule("give both holdout_streams and holdout_seed")
        return self

    @model_serializer(mode="wrap")
    def _as_written(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return {k: v for k, v in handler(self).items() if v is not None}


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
            "mps",
        }
    )

    family: Literal["continual"]
    model: Model = "resnet18"
    streams: Annotated[int, Range(1, 64)]
    windows: Annotated[int, Range(1, 1000)]
    window_s: Annotated[float, Range(0.0, 1e6, lo_open=True)]
    a_min: Unit = 0.0
    profiler: Profiler = Field(default_factory=Profiler)
    mps: ContinualMPS = Field(default_factory=ContinualMPS)
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
        unique_names(self.retrain_configs, "retrain_configs")
        unique_names(self.inference_configs, "inference_configs")
        names = [c.name for c in self.retrain_configs]
        if self.uniform is None:
            self.uniform = Uniform(config1=names[-1], config2=names[0])
        if self.uniform.holdout_streams is not None and not isinstance(self.drift, GeneratedDrift):
            raise rule(
                "the hold-out procedure draws streams from generated drift; name config1 "
                "and config2 for table drift",
                field="uniform",
            )
        for key in ("config1", "config2"):
            value = getattr(self.uniform, key)
            if value is not None and value not in names:
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


#: How :mod:`edgegym.scenarios` validates and overrides this family's scenarios.
SCHEMA = family_schema(
    ContinualScenario,
    Hardware,
    arrivals=lambda d: [],
)

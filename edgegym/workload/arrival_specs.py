"""Arrival specs: the ``arrival`` mapping of a scenario as typed models, and the factory
:func:`make_arrival` that turns one into an :class:`~edgegym.workload.processes.ArrivalProcess`.

Accepted specs (optional fields in brackets)::

    {"kind": "poisson", "rate": R}
    {"kind": "mmpp", "rates": [R0, R1, ...], "dwell_s": [D0, D1, ...]}
    {"kind": "mmpp", "rates": [...], "switch_rates": [...] or [[...], ...]}
    {"kind": "diurnal", "rate": R, "amplitude": A, "period_s": P, ["phase": radians]}
    {"kind": "trace", "path": "traces/x.csv", ["interval_s": S], ["scale": 1.0],
     ["loop": true]}
    {"kind": "trace", "counts": [c0, c1, ...], "interval_s": S, ...}
    {"kind": "azure", "rate": R, ["sigma": 0.25], ["corr_s": 15], ["jitter": 0.15],
     ["bursts_per_min": 2], ["burst_s": 2], ["burst_height": 2],
     ["recur_s": 200, "persistence": 0.5]}
    {"kind": "alibaba", "rate": R, ["level_sigma": 0.25], ["level_dwell_s": 30],
     ["sigma": 0.12], ["corr_s": 3], ["amplitude": 0.2], ["period_s": 60], ["phase": 0],
     ["recur_s": 200, "persistence": 0.5]}
    {"kind": "request-log", "path": "x.csv", "format": "azure-llm" | "alibaba-callgraph",
     ["scale": 1.0], ["start_s": 0], ["loop": true]}
    {"kind": "azure-functions", "path": "traces/azure-functions-2019-sample.csv",
     ["function": hash-or-row-index], ["scale": 1.0], ["start_minute": 0], ["loop": true]}

One model per kind (:data:`SPECS`), with ``extra="forbid"`` so that a typo is named; the
field types are the ones the processes' constructors check their arguments with
(:mod:`edgegym.workload.checks`), and optional generator parameters default to the
constructors' defaults.
"""

from __future__ import annotations

import inspect
import numbers
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, PlainValidator, ValidationError, model_validator
from pydantic_core import PydanticCustomError

from edgegym.workload.checks import (
    Expect,
    Finite,
    Flag,
    NonNegative,
    Positive,
    Range,
    error_lines,
    rule,
)
from edgegym.workload.generators import (
    AlibabaLike,
    AzureLike,
    BurstSeconds,
    LogSigma,
    Multiplier,
    Persistence,
    Recurring,
)
from edgegym.workload.processes import (
    MAX_RATE,
    MMPP,
    Amplitude,
    ArrivalProcess,
    AzureFunctionsReplay,
    Diurnal,
    NonNegativeArray,
    Poisson,
    PositiveArray,
    RateArray,
    TraceReplay,
)
from edgegym.workload.tracefiles import (
    AZURE_FUNCTIONS_MINUTES,
    REQUEST_LOG_FORMATS,
    load_counts_trace,
    read_azure_functions,
    read_request_log,
    request_counts,
)

__all__ = [
    "ARRIVAL_KINDS",
    "SPECS",
    "AlibabaSpec",
    "ArrivalSpec",
    "AzureFunctionsSpec",
    "AzureSpec",
    "DiurnalSpec",
    "MMPPSpec",
    "PoissonSpec",
    "RequestLogSpec",
    "TraceSpec",
    "make_arrival",
]

#: A file path, relative ones resolved against the scenario file's directory.
#: Mean arrival rate, requests per second, at most ``MAX_RATE`` (10^6: numpy's Poisson refuses
#: rates near 1e19 per step, and 10^6 requests/s is far beyond any edge server).
Rate = Annotated[float, Range(0.0, MAX_RATE)]

FilePath = Annotated[Path, Expect("a file path string")]


def _default(cls: type, name: str) -> Any:
    """The default of a constructor's keyword (one source for the specs' defaults)."""
    return inspect.signature(cls).parameters[name].default


def _function(value: Any) -> str | int | None:
    """An Azure Functions row selector: None, a HashFunction or a 0-based row index."""
    if value is None:
        return None
    if isinstance(value, str) and value.strip():
        return value
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and value >= 0:
        return int(value)
    raise PydanticCustomError(
        "expected", "must be {expected}", {"expected": "a HashFunction string or a row index >= 0"}
    )


class ArrivalSpec(BaseModel):
    """Base of the arrival specs: unknown fields are errors; :meth:`build` makes the process."""

    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    kind: str

    def build(self, base_dir: Path | None, where: str) -> ArrivalProcess:
        """The process.

        Args:
            base_dir: Directory relative paths resolve against (None: the current one).
            where: Prefix of error messages (``"my.yaml: tenants[2].arrival"``).

        Raises:
            ValueError: A rule across fields or a file failed; the message names the field.
            FileNotFoundError: A trace file does not exist.
        """
        raise NotImplementedError


class PoissonSpec(ArrivalSpec):
    """``{"kind": "poisson", "rate": R}``: :class:`~edgegym.workload.processes.Poisson`."""

    kind: Literal["poisson"]
    rate: Rate

    def build(self, base_dir: Path | None, where: str) -> ArrivalProcess:
        """The Poisson process (see :meth:`ArrivalSpec.build`)."""
        return Poisson(self.rate)


class MMPPSpec(ArrivalSpec):
    """``{"kind": "mmpp", "rates": [...], "dwell_s" | "switch_rates": [...]}``:
    :class:`~edgegym.workload.processes.MMPP` (``switch_rates``' shape is checked there)."""

    kind: Literal["mmpp"]
    rates: RateArray
    dwell_s: PositiveArray | None = None
    switch_rates: Any = None

    @model_validator(mode="after")
    def _one_switching(self) -> MMPPSpec:
        if (self.dwell_s is None) == (self.switch_rates is None):
            raise rule(
                "give exactly one of dwell_s (mean seconds per visit to each state, > 0) or "
                "switch_rates (1/s per state, or an (S, S) matrix)",
                field="dwell_s / switch_rates",
            )
        return self

    def build(self, base_dir: Path | None, where: str) -> ArrivalProcess:
        """The MMPP (see :meth:`ArrivalSpec.build`)."""
        try:
            if self.dwell_s is not None:
                return MMPP(self.rates, self.dwell_s)
            return MMPP(self.rates, switch_rates=self.switch_rates)
        except ValueError as exc:
            raise ValueError(f"{where}.{exc}") from None


class DiurnalSpec(ArrivalSpec):
    """``{"kind": "diurnal", "rate", "amplitude", "period_s", ["phase"]}``:
    :class:`~edgegym.workload.processes.Diurnal`."""

    kind: Literal["diurnal"]
    rate: Rate
    amplitude: Amplitude
    period_s: Positive
    phase: Finite = 0.0

    def build(self, base_dir: Path | None, where: str) -> ArrivalProcess:
        """The diurnal process (see :meth:`ArrivalSpec.build`)."""
        return Diurnal(self.rate, self.amplitude, self.period_s, self.phase)


def _resolve(path: Path, base_dir: Path | None) -> Path:
    return path if path.is_absolute() or base_dir is None else Path(base_dir) / path


class TraceSpec(ArrivalSpec):
    """``{"kind": "trace", "path" | "counts", ["interval_s"], ["scale"], ["loop"]}``:
    :class:`~edgegym.workload.processes.TraceReplay` of a counts file or inline counts."""

    kind: Literal["trace"]
    path: FilePath | None = None
    counts: NonNegativeArray | None = None
    interval_s: Positive | None = None
    scale: NonNegative = 1.0
    loop: Flag = True

    @model_validator(mode="after")
    def _one_source(self) -> TraceSpec:
        if (self.path is None) == (self.counts is None):
            raise rule(
                "give exactly one of path (a counts trace file) or counts (an inline list of "
                "non-negative integers)",
                field="path / counts",
            )
        if self.counts is not None and self.interval_s is None:
            raise rule("missing (inline counts need it: seconds > 0)", field="interval_s")
        return self

    def build(self, base_dir: Path | None, where: str) -> ArrivalProcess:
        """The replay (see :meth:`ArrivalSpec.build`)."""
        if self.counts is not None:
            try:
                return TraceReplay(self.counts, self.interval_s, loop=self.loop, scale=self.scale)  # type: ignore[arg-type]
            except ValueError as exc:
                msg = str(exc).replace("counts_per_interval", "counts")
                raise ValueError(f"{where}.{msg}") from None
        assert self.path is not None  # _one_source
        path = _resolve(self.path, base_dir)
        try:
            trace = load_counts_trace(path)
        except FileNotFoundError as exc:
            raise FileNotFoundError(f"{where}.path: {exc}") from None
        except ValueError as exc:
            raise ValueError(f"{where}.path: {exc}") from None
        interval_s = self.interval_s if self.interval_s is not None else trace.interval_s
        if interval_s is None:
            raise ValueError(
                f"{where}.interval_s: missing, and {path} does not give it either (add "
                "'# interval_s: 60' to the file or interval_s (seconds > 0) to the spec)"
            )
        try:
            return TraceReplay(trace.counts, interval_s, loop=self.loop, scale=self.scale)
        except ValueError as exc:
            raise ValueError(f"{where}.{exc}".replace("counts_per_interval", "path")) from None


class _RecurringFields(ArrivalSpec):
    """``recur_s`` and ``persistence`` of the synthetic generators: with ``persistence`` > 0
    the process is :class:`~edgegym.workload.generators.Recurring` (a share ``persistence`` of
    the rate repeats every ``recur_s`` seconds); without them, the stationary generator."""

    recur_s: Annotated[float, Range(1.0, 1e6)] | None = None
    persistence: Persistence = 0.0

    @model_validator(mode="after")
    def _recurrence(self) -> _RecurringFields:
        if self.persistence > 0 and self.recur_s is None:
            raise rule(
                "missing (persistence > 0 needs the recurrence period: seconds >= 1, usually "
                "the retraining window)",
                field="recur_s",
            )
        if self.recur_s is not None and self.recur_s != round(self.recur_s):
            raise rule(
                f"must be a whole number of seconds >= 1, got {self.recur_s!r}", field="recur_s"
            )
        return self

    def _wrap(self, base: Any) -> ArrivalProcess:
        if self.persistence > 0:
            return Recurring(base, self.recur_s, self.persistence)  # type: ignore[arg-type]
        return base


class AzureSpec(_RecurringFields):
    """``{"kind": "azure", "rate", ...}``: :class:`~edgegym.workload.generators.AzureLike`
    (parameters and defaults there)."""

    kind: Literal["azure"]
    rate: Rate
    sigma: LogSigma = _default(AzureLike, "sigma")
    corr_s: Positive = _default(AzureLike, "corr_s")
    jitter: LogSigma = _default(AzureLike, "jitter")
    bursts_per_min: NonNegative = _default(AzureLike, "bursts_per_min")
    burst_s: BurstSeconds = _default(AzureLike, "burst_s")
    burst_height: Multiplier = _default(AzureLike, "burst_height")

    def build(self, base_dir: Path | None, where: str) -> ArrivalProcess:
        """The generator (see :meth:`ArrivalSpec.build`)."""
        return self._wrap(AzureLike(**self.model_dump(exclude={"kind", "recur_s", "persistence"})))


class AlibabaSpec(_RecurringFields):
    """``{"kind": "alibaba", "rate", ...}``: :class:`~edgegym.workload.generators.AlibabaLike`
    (parameters and defaults there)."""

    kind: Literal["alibaba"]
    rate: Rate
    level_sigma: LogSigma = _default(AlibabaLike, "level_sigma")
    level_dwell_s: Positive = _default(AlibabaLike, "level_dwell_s")
    sigma: LogSigma = _default(AlibabaLike, "sigma")
    corr_s: Positive = _default(AlibabaLike, "corr_s")
    amplitude: Amplitude = _default(AlibabaLike, "amplitude")
    period_s: Positive = _default(AlibabaLike, "period_s")
    phase: Finite = _default(AlibabaLike, "phase")

    def build(self, base_dir: Path | None, where: str) -> ArrivalProcess:
        """The generator (see :meth:`ArrivalSpec.build`)."""
        return self._wrap(
            AlibabaLike(**self.model_dump(exclude={"kind", "recur_s", "persistence"}))
        )


class AzureFunctionsSpec(ArrivalSpec):
    """``{"kind": "azure-functions", "path", ["function"], ["scale"], ["start_minute"],
    ["loop"]}``: :class:`~edgegym.workload.processes.AzureFunctionsReplay` of a file in the
    Azure Functions 2019 per-minute format (every row summed unless ``function`` picks one by
    HashFunction or 0-based row index)."""

    kind: Literal["azure-functions"]
    path: FilePath
    function: Annotated[str | int | None, PlainValidator(_function)] = None
    scale: NonNegative = 1.0
    start_minute: Annotated[int, Range(0, AZURE_FUNCTIONS_MINUTES, hi_open=True)] = 0
    loop: Flag = True

    def build(self, base_dir: Path | None, where: str) -> ArrivalProcess:
        """The replay (see :meth:`ArrivalSpec.build`)."""
        path = _resolve(self.path, base_dir)
        try:
            table = read_azure_functions(path)
        except FileNotFoundError as exc:
            raise FileNotFoundError(f"{where}.path: {exc}") from None
        except ValueError as exc:
            raise ValueError(f"{where}.path: {exc}") from None
        try:
            counts = table.select(self.function, "sum")
        except ValueError as exc:
            raise ValueError(f"{where}.{exc}") from None
        try:
            return AzureFunctionsReplay(
                counts, scale=self.scale, start_minute=self.start_minute, loop=self.loop
            )
        except ValueError as exc:
            raise ValueError(f"{where}.{exc}".replace("counts_per_interval", "path")) from None


class RequestLogSpec(ArrivalSpec):
    """``{"kind": "request-log", "path", "format", ["scale"], ["start_s"], ["loop"]}``: a
    :class:`~edgegym.workload.processes.TraceReplay` of the per-second counts of a per-request
    log (:func:`~edgegym.workload.tracefiles.read_request_log`: ``azure-llm`` for the Azure LLM
    inference trace 2023, ``alibaba-callgraph`` for an Alibaba microservices call-graph
    table), from ``start_s`` seconds after its first request."""

    kind: Literal["request-log"]
    path: FilePath
    format: Literal[tuple(REQUEST_LOG_FORMATS)]  # type: ignore[valid-type]
    scale: NonNegative = 1.0
    start_s: Annotated[int, Range(0)] = 0
    loop: Flag = True

    def build(self, base_dir: Path | None, where: str) -> ArrivalProcess:
        """The replay (see :meth:`ArrivalSpec.build`)."""
        path = _resolve(self.path, base_dir)
        try:
            counts = request_counts(read_request_log(path, self.format))
        except FileNotFoundError as exc:
            raise FileNotFoundError(f"{where}.path: {exc}") from None
        except ValueError as exc:
            raise ValueError(f"{where}.path: {exc}") from None
        if self.start_s >= counts.size:
            raise ValueError(
                f"{where}.start_s: {self.start_s} s is past the end of {path} "
                f"({counts.size} s of requests)"
            )
        try:
            return TraceReplay(counts[self.start_s :], 1.0, loop=self.loop, scale=self.scale)
        except ValueError as exc:
            raise ValueError(f"{where}.{exc}".replace("counts_per_interval", "path")) from None


#: kind -> its spec model.
SPECS: dict[str, type[ArrivalSpec]] = {
    "poisson": PoissonSpec,
    "mmpp": MMPPSpec,
    "diurnal": DiurnalSpec,
    "trace": TraceSpec,
    "azure": AzureSpec,
    "alibaba": AlibabaSpec,
    "azure-functions": AzureFunctionsSpec,
    "request-log": RequestLogSpec,
}

#: The ``kind`` values :func:`make_arrival` accepts.
ARRIVAL_KINDS: tuple[str, ...] = tuple(SPECS)


_KINDS_TEXT = ", ".join(ARRIVAL_KINDS)


def make_arrival(
    spec: Mapping[str, Any],
    base_dir: str | os.PathLike[str] | None = None,
    *,
    where: str = "arrival",
) -> ArrivalProcess:
    """Build an arrival process from a scenario dict (the specs in the module docstring).

    Args:
        spec: The dict, e.g. one tenant's ``arrival`` entry of a scenario.
        base_dir: Directory that relative trace paths are resolved against (usually the
            scenario file's directory); the current directory if None.
        where: Prefix for error messages, e.g. ``"my.yaml: tenants[2].arrival"``.

    Returns:
        The process.

    Raises:
        ValueError: On an unknown kind, an unknown, missing or out-of-range field, or a bad
            trace file; the message names the field and what is allowed (one line per error).
        FileNotFoundError: If a trace file does not exist.
    """
    if not isinstance(spec, Mapping):
        raise ValueError(
            f"{where}: must be a mapping with a 'kind' field ({_KINDS_TEXT}), got {spec!r}"
        )
    if "kind" not in spec:
        raise ValueError(f"{where}.kind: missing; allowed: {_KINDS_TEXT}")
    kind = spec["kind"]
    if not isinstance(kind, str) or kind.lower() not in SPECS:
        raise ValueError(f"{where}.kind: unknown arrival kind {kind!r}; allowed: {_KINDS_TEXT}")
    model = SPECS[kind.lower()]
    try:
        parsed = model.model_validate({**spec, "kind": kind.lower()})
    except ValidationError as exc:
        raise ValueError("\n".join(error_lines(exc, where, model=model))) from None
    return parsed.build(Path(base_dir) if base_dir is not None else None, where)

"""Scenario files: schema, validation, loading and keyword overrides.

A scenario is a YAML file naming the hardware, the tenants and their models, the drift and
configuration profiles, the window length and the objective weights. Bundled scenarios live
in ``scenarios/`` (installed as ``edgegym.scenario_data``); any other path works too.
Validation happens once, at load time: a bad file raises :class:`ScenarioError` with one
message naming the file, the field and the allowed range.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

from edgegym.families import FAMILIES, ScenarioSchema
from edgegym.hardware.gpus import GPUS
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


# ----------------------------------------------------------------------------- field checks
Check = Callable[[Any], str | None]  # returns a problem description, or None when valid


def _num(lo: float, hi: float, *, integer: bool = False, lo_open: bool = False) -> Check:
    kind = "integer" if integer else "number"
    article = "an" if integer else "a"
    bracket = "(" if lo_open else "["

    def check(v: Any) -> str | None:
        ok_type = isinstance(v, int) if integer else isinstance(v, int | float)
        if isinstance(v, bool) or not ok_type:
            return f"must be {article} {kind} in {bracket}{lo}, {hi}]"
        if v < lo or v > hi or (lo_open and v == lo):
            return f"= {v} is out of range (allowed: {kind} in {bracket}{lo}, {hi}])"
        return None

    return check


def _choice(options: Callable[[], list[str]] | list[str]) -> Check:
    def check(v: Any) -> str | None:
        opts = options() if callable(options) else options
        if v not in opts:
            return f"= {v!r} is not one of {', '.join(map(str, opts))}"
        return None

    return check


def _str(v: Any) -> str | None:
    return None if isinstance(v, str) and v else "must be a non-empty string"


def _range_pair(lo: float, hi: float) -> Check:
    def check(v: Any) -> str | None:
        if (
            not isinstance(v, list | tuple)
            or len(v) != 2
            or not all(isinstance(x, int | float) and not isinstance(x, bool) for x in v)
        ):
            return f"must be a pair [low, high] of numbers in [{lo}, {hi}]"
        if not (lo <= v[0] <= v[1] <= hi):
            return f"= {list(v)} must satisfy {lo} <= low <= high <= {hi}"
        return None

    return check


# Field specs: name -> (check, required, default). Nested sections are validated by their own
# spec below; lists of records by a record spec.
_UNIT = _num(0.0, 1.0)
HARDWARE = {
    "gpu": (_choice(lambda: sorted(GPUS)), True, None),
    "gpus": (_num(1, 64, integer=True), False, 1),
    "share_quantum": (_num(0.0, 1.0, lo_open=True), False, 0.1),
    "share_alpha": (_num(0.1, 1.0), False, 1.0),
    "multi_gpu_efficiency": (_num(0.0, 1.0), False, 0.9),
    "clock_mhz": (_num(0.0, 1e4), False, 0.0),  # DVFS core clock of every GPU; 0: the top
}
RETRAIN_CONFIG = {
    "name": (_str, True, None),
    "epochs": (_num(1, 10_000, integer=True), False, 1),
    "batch_size": (_num(1, 65_536, integer=True), False, 32),
    "layers_retrained": (_UNIT, False, 1.0),
    "last_layer_width": (_num(1, 1_000_000, integer=True), False, 64),
    "data_fraction": (_num(0.0, 1.0, lo_open=True), False, 1.0),
    "gpu_seconds": (_num(0.0, 1e7, lo_open=True), False, 1.0),
    "quality": (_UNIT, False, 1.0),
    "curve_rate": (_num(0.0, 100.0, lo_open=True), False, 3.0),
}
INFERENCE_CONFIG = {
    "name": (_str, True, None),
    "frame_sampling": (_num(0.0, 1.0, lo_open=True), False, 1.0),
    "resolution": (_num(0.0, 1.0, lo_open=True), False, 1.0),
    "share": (_num(0.0, 64.0, lo_open=True), True, None),
    "accuracy_factor": (_UNIT, True, None),
}
GENERATED_DRIFT = {
    "kind": (_choice(["generated"]), True, None),
    "ceiling": (_range_pair(0.0, 1.0), True, None),
    "floor_gap": (_range_pair(0.0, 1.0), True, None),
    "drift": (_range_pair(0.0, 1.0), True, None),
    "config_jitter": (_num(0.0, 0.5), False, 0.0),
    "data_volume": (_range_pair(0.01, 100.0), False, [1.0, 1.0]),
    "demand": (_range_pair(0.01, 100.0), False, [1.0, 1.0]),
    "sensitivity": (lambda v: _validate_sensitivity(v), False, None),
}


def _validate_sensitivity(v: Any) -> str | None:
    if v is None:
        return None
    keys = {"epochs_tau": (0.1, 1000.0), "data_exponent": (0.0, 5.0), "partial_layers": (0.0, 1.0)}
    if not isinstance(v, Mapping) or set(v) != set(keys):
        return f"must be a mapping with exactly {', '.join(keys)}"
    for key, (lo, hi) in keys.items():
        problem = _range_pair(lo, hi)(v[key])
        if problem:
            return f"{key} {problem}"
    return None


OBJECTIVE = {
    "accuracy": (_num(0.0, 100.0), False, 1.0),
    "a_min": (_num(0.0, 100.0), False, 1.0),
    "energy": (_num(0.0, 1.0), False, 0.0),
}
CONTINUAL = {
    "name": (_str, True, None),
    "family": (_choice(["continual"]), True, None),
    "description": (_str, False, ""),
    "model": (_choice(lambda: sorted(MODELS)), False, "resnet18"),
    "streams": (_num(1, 64, integer=True), True, None),
    "windows": (_num(1, 1000, integer=True), True, None),
    "window_s": (_num(0.0, 1e6, lo_open=True), True, None),
    "a_min": (_UNIT, False, 0.0),
    "profiler_noise": (_num(0.0, 0.5), False, 0.0),
    "profiler_noise_shared": (_UNIT, False, 0.0),
}
SECTIONS = {"hardware", "retrain_configs", "inference_configs", "drift", "uniform", "objective"}
FREE = {"provenance", "notes", "paper"}


def _validate_top(
    raw: Mapping[str, Any],
    spec: Mapping[str, tuple[Check, bool, Any]],
    sections: set[str],
    src: str,
) -> dict[str, Any]:
    """Top-level fields of any family: no unknown keys, the spec's fields, free-text kept."""
    unknown = set(raw) - set(spec) - sections - FREE
    if unknown:
        allowed = ", ".join([*spec, *sorted(sections)])
        raise ScenarioError(f"{src}: {sorted(unknown)[0]}: unknown field (allowed: {allowed})")
    data = _validate_record({k: v for k, v in raw.items() if k in spec}, spec, "scenario", src)
    for key in FREE & set(raw):
        data[key] = raw[key]
    return data


def _check_clock(gpu_name: str, mhz: Any, where: str, src: str) -> None:
    """A DVFS clock must be one the GPU can run (0: its top clock)."""
    try:
        GPUS[gpu_name].resolve_clock(mhz)
    except ValueError as exc:
        raise ScenarioError(f"{src}: {where}.{exc}") from None


def _bool(v: Any) -> str | None:
    return None if isinstance(v, bool) else "must be true or false"


def _mig_gpus() -> list[str]:
    return sorted(name for name, g in GPUS.items() if g.mig_capable)


# MIG reconfiguration family (edgegym/MIGReconfig-v0, MIGRator).
MIG = {
    "name": (_str, True, None),
    "family": (_choice(["mig"]), True, None),
    "description": (_str, False, ""),
    "window_s": (_num(1.0, 1e5), False, 200.0),
    "windows": (_num(0, 100, integer=True), False, 0),  # 0: the datasets' schedule
    "basis_s": (_num(0.5, 10.0), False, 1.0),
    "batch": (_num(1, 64, integer=True), False, 1),
    "preinit": (_bool, False, False),
    "data_fraction": (_num(0.0, 1.0, lo_open=True), False, 1.0),
}
MIG_HARDWARE = {
    "gpu": (_choice(_mig_gpus), False, "A100-40GB"),
    "clock_mhz": (_num(0.0, 1e4), False, 0.0),  # 0: the GPU's top clock
}
MIG_OVERHEAD = {  # MIGRator Fig. 5 components per instance (model load is per model)
    "destroy_s": (_num(0.0, 60.0), False, 0.5),
    "create_s": (_num(0.0, 60.0), False, 1.5),
    "library_s": (_num(0.0, 60.0), False, 2.0),
}
MIG_OBJECTIVE = {
    "goodput": (_num(0.0, 100.0), False, 1.0),
    "energy": (_num(0.0, 100.0), False, 0.0),
}
MIG_TENANT = {
    "model": (_choice(lambda: sorted(MODELS)), True, None),
    "dataset": (_choice(lambda: sorted(NC_DATASETS)), True, None),
    "arrival": (lambda v: None if isinstance(v, Mapping) else "must be a mapping", True, None),
    "slo_ms": (_num(0.0, 1e5, lo_open=True), True, None),
    "ceiling": (_num(0.0, 1.0, lo_open=True), False, 0.9),
    "name": (_str, False, ""),
}
MIG_SECTIONS = {"hardware", "overhead", "objective", "tenants"}


# Energy fair-share family (edgegym/EnergyFairShare-v0, ETF).
ENERGY = {
    "name": (_str, True, None),
    "family": (_choice(["energy"]), True, None),
    "description": (_str, False, ""),
    "quantum_s": (_num(0.001, 60.0), False, 0.3),
    "unit_s": (_num(0.0001, 60.0), False, 0.01),
    "quanta": (_num(1, 10**6, integer=True), False, 200),
    "fairness_horizon": (_num(1, 10**6, integer=True), False, 10),
    "max_tenants": (_num(1, 8, integer=True), False, 8),
}
ENERGY_HARDWARE = {"gpu": (_choice(lambda: sorted(GPUS)), False, "TX2")}
ENERGY_OBJECTIVE = {
    "fs": (_num(0.0, 100.0), False, 1.0),
    "ft": (_num(0.0, 100.0), False, 0.0),
    "fe": (_num(0.0, 100.0), False, 0.0),
    "throughput": (_num(0.0, 100.0), False, 0.0),
    "energy": (_num(0.0, 100.0), False, 0.0),
}
ENERGY_SECTIONS = {"hardware", "objective", "tenants"}


def _clock_check(v: Any) -> str | None:
    if isinstance(v, int | float) and not isinstance(v, bool) and v > 0:
        return None
    ok = (
        isinstance(v, list)
        and v
        and all(
            isinstance(x, list | tuple)
            and len(x) == 2
            and all(isinstance(y, int | float) and not isinstance(y, bool) for y in x)
            and x[0] >= 0
            and x[1] > 0
            for x in v
        )
    )
    return None if ok else "must be MHz > 0 or a list of [time_s, MHz] pairs"


ENERGY_TENANT = {
    "name": (_str, False, ""),
    "model": (_choice(lambda: sorted(MODELS)), True, None),
    "clock_mhz": (_clock_check, False, 0),
    "weight": (_num(0.0, 1e6, lo_open=True), False, 1.0),
    "demand": (
        lambda v: (
            None
            if v == "backlogged" or isinstance(v, Mapping)
            else "must be 'backlogged' or an arrival mapping"
        ),
        False,
        "backlogged",
    ),
    "arrive_s": (_num(0.0, 1e9), False, 0.0),
    "leave_s": (_num(0.0, 1e9), False, 1e9),
    "batch": (_num(1, 64, integer=True), False, 1),
}


def _validate_energy(raw: Mapping[str, Any], src: str, base_dir: Path | None) -> dict[str, Any]:
    from edgegym.workload.arrivals import make_arrival

    data = _validate_top(raw, ENERGY, ENERGY_SECTIONS, src)
    data["hardware"] = _validate_record(raw.get("hardware", {}), ENERGY_HARDWARE, "hardware", src)
    data["objective"] = _validate_record(
        raw.get("objective", {}), ENERGY_OBJECTIVE, "objective", src
    )
    units = data["quantum_s"] / data["unit_s"]
    if abs(units - round(units)) > 1e-6 or round(units) < 1:
        raise ScenarioError(
            f"{src}: quantum_s / unit_s = {units:g} must be a whole number of units (>= 1)"
        )
    tenants = raw.get("tenants")
    if not isinstance(tenants, list) or not 1 <= len(tenants) <= data["max_tenants"]:
        raise ScenarioError(
            f"{src}: tenants: must be a list of 1 to max_tenants = {data['max_tenants']} tenants"
        )
    data["tenants"] = []
    for i, rec in enumerate(tenants):
        t = _validate_record(rec, ENERGY_TENANT, f"tenants[{i}]", src)
        clocks = t["clock_mhz"] if isinstance(t["clock_mhz"], list) else [[0, t["clock_mhz"]]]
        for _, mhz in clocks:
            _check_clock(data["hardware"]["gpu"], mhz, f"tenants[{i}]", src)
        if isinstance(t["demand"], Mapping):
            try:
                make_arrival(t["demand"], base_dir, where=f"{src}: tenants[{i}].demand")
            except (ValueError, FileNotFoundError) as exc:
                raise ScenarioError(str(exc)) from None
        if t["leave_s"] <= t["arrive_s"]:
            raise ScenarioError(f"{src}: tenants[{i}]: leave_s must be after arrive_s")
        t["name"] = t["name"] or f"A{i + 1}"
        data["tenants"].append(t)
    return data


# DAG offload family (edgegym/DAGOffload-v0, SRS/MRS).
DAG = {
    "name": (_str, True, None),
    "family": (_choice(["dag"]), True, None),
    "description": (_str, False, ""),
    "requests": (_num(1, 10**6, integer=True), False, 200),
    "duration_s": (_num(0.0, 1e7, lo_open=True), False, 600.0),
    "theta": (_num(0.0, 1e6), False, 1.0),
    "a_min": (_num(0.0, 1.0), False, 0.0),
    "max_nodes": (_num(1, 64, integer=True), False, 8),
    "max_edges": (_num(1, 256, integer=True), False, 16),
    # Drifted samples = the data each request sends to a model (emptied by a retraining).
    "pool_from_inputs": (_bool, False, False),
}
DAG_SERVERS = {
    "count": (_num(1, 64, integer=True), False, 5),
    "gpu": (_choice(lambda: sorted(GPUS)), False, "A100-40GB"),
    "gpus_per_server": (_num(1, 16, integer=True), False, 2),
    "units_per_gpu": (_num(1, 100, integer=True), False, 2),
    "speed_tflops": (_range_pair(0.1, 1e4), False, [9.7, 19.5]),
    "link_gbps": (_range_pair(0.001, 1e4), False, [3.0, 5.0]),
    "storage_gbps": (_range_pair(0.001, 1e4), False, [7.0, 10.0]),
}
DAG_RETRAIN = {
    "name": (_str, True, None),
    "data_mb": (_num(0.0, 1e6), True, None),
    "workload": (_num(0.0, 1e6, lo_open=True), True, None),
    "demand": (_num(0.0, 1e3, lo_open=True), True, None),
    "gain": (_UNIT, True, None),
}
DAG_MODEL = {
    "start_accuracy": (_UNIT, True, None),
    "ceiling": (_UNIT, True, None),
    "drift_per_s": (_num(0.0, 1.0), False, 0.0005),
    "floor": (_UNIT, False, 0.3),
    "size_mb": (_num(0.0, 1e5), False, 20.0),
    # Drifted samples collected per second (besides request inputs with pool_from_inputs);
    # with neither, configurations always have their full data.
    "pool_mb_per_s": (_num(0.0, 1e4), False, 0.0),
}
#: Weights of the DAG family's completion and energy terms; the accuracy term's weight is the
#: paper's theta (top-level ``theta``), so Eq. 9 is the default objective.
DAG_OBJECTIVE = {
    "completion": (_num(0.0, 1e6), False, 1.0),
    "energy": (_num(0.0, 1e6), False, 0.0),
}
DAG_SECTIONS = {"servers", "retrain_configs", "models", "applications", "arrival", "objective"}


def _validate_dag(raw: Mapping[str, Any], src: str, base_dir: Path | None) -> dict[str, Any]:
    from edgegym.workload.arrivals import make_arrival
    from edgegym.workload.dag import DAGError, topological_order

    data = _validate_top(raw, DAG, DAG_SECTIONS, src)
    data["servers"] = _validate_record(raw.get("servers", {}), DAG_SERVERS, "servers", src)
    data["objective"] = _validate_record(raw.get("objective", {}), DAG_OBJECTIVE, "objective", src)
    data["retrain_configs"] = _validate_list(
        raw.get("retrain_configs"), DAG_RETRAIN, "retrain_configs", src
    )
    models = raw.get("models")
    if not isinstance(models, Mapping) or not models:
        raise ScenarioError(f"{src}: models: must map model names to their accuracy profiles")
    data["models"] = {
        str(k): _validate_record(v, DAG_MODEL, f"models.{k}", src) for k, v in models.items()
    }
    arrival = raw.get("arrival", {"kind": "poisson", "rate": 1.0})
    try:
        make_arrival(arrival, base_dir, where=f"{src}: arrival")
    except (ValueError, FileNotFoundError) as exc:
        raise ScenarioError(str(exc)) from None
    data["arrival"] = arrival
    apps = raw.get("applications")
    if not isinstance(apps, list) or not apps:
        raise ScenarioError(f"{src}: applications: must be a non-empty list")
    data["applications"] = []
    task_spec = {
        "model": (_choice(lambda: sorted(data["models"])), True, None),
        "workload": (_num(0.0, 1e6, lo_open=True), True, None),
        "demand": (_num(0.0, 1e3, lo_open=True), False, 1.0),
        "input_mb": (_num(0.0, 1e6), False, 0.0),
    }
    for a, app in enumerate(apps):
        where = f"applications[{a}]"
        if not isinstance(app, Mapping):
            raise ScenarioError(f"{src}: {where}: must be a mapping")
        name = app.get("name", f"app{a}")
        tasks = app.get("tasks")
        if not isinstance(tasks, list) or not tasks:
            raise ScenarioError(f"{src}: {where}.tasks: must be a non-empty list")
        if len(tasks) > data["max_nodes"]:
            raise ScenarioError(
                f"{src}: {where}: {len(tasks)} tasks exceed max_nodes = {data['max_nodes']}"
            )
        recs = [
            _validate_record(t, task_spec, f"{where}.tasks[{i}]", src) for i, t in enumerate(tasks)
        ]
        edges = app.get("edges", [])
        if not isinstance(edges, list) or not all(
            isinstance(e, list | tuple) and len(e) == 3 for e in edges
        ):
            raise ScenarioError(f"{src}: {where}.edges: must be a list of [from, to, MB]")
        if len(edges) > data["max_edges"]:
            raise ScenarioError(
                f"{src}: {where}: {len(edges)} edges exceed max_edges = {data['max_edges']}"
            )
        try:
            topological_order(len(recs), [(int(e[0]), int(e[1])) for e in edges], f"{src}: {name}")
        except (DAGError, TypeError, ValueError) as exc:
            raise ScenarioError(str(exc)) from None
        weight = app.get("weight", 1.0)
        if not isinstance(weight, int | float) or weight <= 0:
            raise ScenarioError(f"{src}: {where}.weight: must be a number > 0")
        data["applications"].append(
            {
                "name": str(name),
                "tasks": recs,
                "edges": [list(e) for e in edges],
                "weight": float(weight),
            }
        )
    return data


def _validate_mig(raw: Mapping[str, Any], src: str, base_dir: Path | None) -> dict[str, Any]:
    from edgegym.workload.arrivals import make_arrival

    data = _validate_top(raw, MIG, MIG_SECTIONS, src)
    data["hardware"] = _validate_record(raw.get("hardware", {}), MIG_HARDWARE, "hardware", src)
    _check_clock(data["hardware"]["gpu"], data["hardware"]["clock_mhz"], "hardware", src)
    data["overhead"] = _validate_record(raw.get("overhead", {}), MIG_OVERHEAD, "overhead", src)
    data["objective"] = _validate_record(raw.get("objective", {}), MIG_OBJECTIVE, "objective", src)
    tenants = raw.get("tenants")
    if not isinstance(tenants, list) or not 1 <= len(tenants) <= 4:
        raise ScenarioError(f"{src}: tenants: must be a list of 1 to 4 tenants")
    data["tenants"] = []
    for i, rec in enumerate(tenants):
        t = _validate_record(rec, MIG_TENANT, f"tenants[{i}]", src)
        try:
            make_arrival(t["arrival"], base_dir, where=f"{src}: tenants[{i}].arrival")
        except (ValueError, FileNotFoundError) as exc:
            raise ScenarioError(str(exc)) from None
        t["name"] = t["name"] or f"{t['model']}-{i}"
        data["tenants"].append(t)
    shortest = min(NC_DATASETS[t["dataset"]].windows for t in data["tenants"])
    if data["windows"] > shortest:
        raise ScenarioError(
            f"{src}: windows = {data['windows']} is out of range (allowed: integer in "
            f"[0, {shortest}], the shortest dataset schedule; 0 means {shortest})"
        )
    data["windows"] = data["windows"] or shortest
    return data


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


def _validate_record(
    rec: Any, spec: Mapping[str, tuple[Check, bool, Any]], where: str, src: str
) -> dict[str, Any]:
    if not isinstance(rec, Mapping):
        raise ScenarioError(f"{src}: {where}: must be a mapping of fields")
    unknown = set(rec) - set(spec)
    if unknown:
        raise ScenarioError(
            f"{src}: {where}.{sorted(unknown)[0]}: unknown field (allowed: {', '.join(spec)})"
        )
    out = {}
    for key, (check, required, default) in spec.items():
        if key not in rec:
            if required:
                raise ScenarioError(f"{src}: {where}.{key}: missing required field")
            out[key] = copy.deepcopy(default)
            continue
        problem = check(rec[key])
        if problem:
            raise ScenarioError(f"{src}: {where}.{key} {problem}")
        out[key] = rec[key]
    return out


def _validate_list(
    items: Any, spec: Mapping[str, tuple[Check, bool, Any]], where: str, src: str
) -> list[dict[str, Any]]:
    if not isinstance(items, list) or not items:
        raise ScenarioError(f"{src}: {where}: must be a non-empty list")
    out = [_validate_record(r, spec, f"{where}[{i}]", src) for i, r in enumerate(items)]
    names = [r["name"] for r in out]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise ScenarioError(f"{src}: {where}: duplicate name {sorted(dup)[0]!r}")
    return out


def _check_shape(
    value: Any, shape: tuple[int, ...], where: str, src: str, upper: float | None = None
) -> None:
    import numpy as np

    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError):
        raise ScenarioError(f"{src}: {where}: must be numbers (nested lists)") from None
    try:
        if arr.ndim not in (0, len(shape)):
            raise ValueError
        np.broadcast_to(arr, shape)
    except ValueError:
        raise ScenarioError(
            f"{src}: {where}: shape {list(arr.shape)} does not fit "
            f"[streams, windows, configs] = {list(shape)}"
        ) from None
    if np.any(arr < 0) or (upper is not None and np.any(arr > upper)):
        bound = f"in [0, {upper}]" if upper is not None else ">= 0"
        raise ScenarioError(f"{src}: {where}: values must be {bound}")


def validate(raw: Any, src: str, base_dir: Path | None = None) -> dict[str, Any]:
    """Validate a scenario mapping and fill defaults; raise :class:`ScenarioError` if bad.

    Args:
        raw: The parsed file.
        src: Name used in messages.
        base_dir: Directory relative trace paths resolve against (the file's directory).
    """
    if not isinstance(raw, Mapping):
        raise ScenarioError(f"{src}: the file must hold a mapping of fields at the top level")
    if raw.get("family") not in FAMILIES:
        raise ScenarioError(
            f"{src}: family = {raw.get('family')!r} is not one of {', '.join(FAMILIES)}"
        )
    return FAMILIES[raw["family"]].schema.validate(raw, src, base_dir)


def _validate_continual(raw: Mapping[str, Any], src: str, base_dir: Path | None) -> dict[str, Any]:
    data = _validate_top(raw, CONTINUAL, SECTIONS, src)
    data["hardware"] = _validate_record(raw.get("hardware"), HARDWARE, "hardware", src)
    _check_clock(data["hardware"]["gpu"], data["hardware"]["clock_mhz"], "hardware", src)
    data["retrain_configs"] = _validate_list(
        raw.get("retrain_configs"), RETRAIN_CONFIG, "retrain_configs", src
    )
    data["inference_configs"] = _validate_list(
        raw.get("inference_configs"), INFERENCE_CONFIG, "inference_configs", src
    )
    data["objective"] = _validate_record(raw.get("objective", {}), OBJECTIVE, "objective", src)
    names = [c["name"] for c in data["retrain_configs"]]
    uniform = raw.get("uniform", {"config1": names[-1], "config2": names[0]})
    data["uniform"] = _validate_record(
        uniform,
        {"config1": (_choice(names), True, None), "config2": (_choice(names), True, None)},
        "uniform",
        src,
    )
    drift = raw.get("drift")
    if not isinstance(drift, Mapping) or drift.get("kind") not in ("generated", "table"):
        raise ScenarioError(f"{src}: drift.kind: must be 'generated' or 'table'")
    if drift["kind"] == "generated":
        data["drift"] = _validate_record(drift, GENERATED_DRIFT, "drift", src)
    else:
        shape = (data["streams"], data["windows"], len(names))
        allowed = {
            "kind",
            "start_accuracy",
            "post_accuracy",
            "gpu_seconds",
            "floor",
            "drift",
            "demand",
        }
        extra = set(drift) - allowed
        if extra:
            raise ScenarioError(f"{src}: drift.{sorted(extra)[0]}: unknown field")
        for key, shp, required, upper in (
            ("start_accuracy", shape[:1], True, 1.0),
            ("post_accuracy", shape, True, 1.0),
            ("gpu_seconds", shape, True, None),
            ("floor", shape[:2], False, 1.0),
            ("drift", shape[:2], False, 1.0),
            ("demand", shape[:2], False, None),
        ):
            if key not in drift:
                if required:
                    raise ScenarioError(f"{src}: drift.{key}: missing required field")
                continue
            _check_shape(drift[key], shp, f"drift.{key}", src, upper)
        data["drift"] = dict(drift)
    return data


def _schemas() -> dict[str, ScenarioSchema]:
    """The built-in families' scenario schemas (each family package registers its own)."""
    return {
        "continual": ScenarioSchema(_validate_continual, CONTINUAL, HARDWARE, frozenset(SECTIONS)),
        "mig": ScenarioSchema(_validate_mig, MIG, MIG_HARDWARE, frozenset(MIG_SECTIONS)),
        "energy": ScenarioSchema(
            _validate_energy, ENERGY, ENERGY_HARDWARE, frozenset(ENERGY_SECTIONS)
        ),
        "dag": ScenarioSchema(
            _validate_dag, DAG, DAG_SERVERS, frozenset(DAG_SECTIONS), hardware_key="servers"
        ),
    }


#: Scenario schemas of the four built-in families, by family name.
SCHEMAS: dict[str, ScenarioSchema] = _schemas()


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
    if overrides:
        raw = apply_overrides(raw if isinstance(raw, dict) else {}, overrides, src)
    data = validate(raw, src, path.parent)
    return Scenario(name=data["name"], data=data, source=str(path))

"""Profiler: measure models and retraining configurations for real; write a scenario file.

:func:`profile` runs the real backend's models on a device and writes a continual-learning
scenario whose numbers are measured rather than synthesised:

* **Inference latency** of the compact model versus batch size (measured) and versus GPU share
  (time-slicing: a share ``s`` of the device serves a batch in ``latency / s``; derived, marked
  as such), and the share each inference configuration needs for ``fps`` frames per second.
* **Retraining** of every configuration of the base scenario on every stream and window:
  device seconds (the scenario's ``gpu_seconds``: seconds on the whole device) and held-out
  accuracy after each epoch, with the micro-profiler's curve fit
  ``acc(e) = a_inf - (a_inf - a_0) * exp(-e / tau)`` (Ekya §4.3 fits such a curve from a few
  epochs to extrapolate).
* **Drift**: the deployed model's accuracy at window 0 (``start_accuracy``) and how much the
  model retrained with the first configuration loses on the next window (``drift``).

The file keeps the base scenario's structure (streams, windows, configurations) and records
the device, torch version, date and every measurement under ``provenance.measured``; its
window length is stretched where needed so that the slowest measured job fits in a window at
a full device. On a GPU that the hardware catalogue knows (:func:`catalogue_gpu`: H200
141 GB, H100 80 GB, A100 40/80 GB, V100 16 GB, A10G) its ``hardware.gpu`` names the measured
GPU, so that the simulator models that GPU's power and clocks; otherwise (the CPU, an
unknown GPU) the base scenario's GPU is kept and ``provenance.measured.hardware`` says so. The
simulator runs it like any other scenario; ``backend="real"`` too.
"""

from __future__ import annotations

import copy
import datetime
import platform
import re
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import yaml

from edgegym.real import TINY_SCENARIO
from edgegym.real.data import DigitStream
from edgegym.real.executor import DEFAULT_OPTIONS, check_device
from edgegym.real.models import architecture_for
from edgegym.real.retrain import RetrainJob, evaluate, pretrained, sync
from edgegym.scenarios import load, read_raw, resolve
from edgegym.workload.continual import RetrainConfig


def fit_curve(epochs: np.ndarray, acc: np.ndarray) -> dict[str, float] | None:
    """Fit ``a_inf - (a_inf - a_0) * exp(-e / tau)`` to accuracies at epochs (incl. 0)."""
    from scipy.optimize import curve_fit

    def f(e: np.ndarray, a0: float, a_inf: float, tau: float) -> np.ndarray:
        return a_inf - (a_inf - a0) * np.exp(-e / tau)

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # covariance warnings on flat curves
            (a0, a_inf, tau), _ = curve_fit(
                f,
                epochs,
                acc,
                p0=(acc[0], acc.max(), 1.0),
                bounds=([0.0, 0.0, 0.05], [1.0, 1.0, 100.0]),
                maxfev=5000,
            )
    except (RuntimeError, ValueError):
        return None
    rmse = float(np.sqrt(np.mean((f(epochs, a0, a_inf, tau) - acc) ** 2)))
    return {"a0": float(a0), "a_inf": float(a_inf), "tau": float(tau), "rmse": rmse}


def catalogue_gpu(device_name: str, memory_gb: float | None = None) -> str | None:
    """The hardware catalogue's name (:data:`edgegym.hardware.gpus.GPUS`) of a CUDA device.

    Args:
        device_name: torch's / NVML's name, e.g. ``"NVIDIA H100 80GB HBM3"``,
            ``"NVIDIA A100-SXM4-40GB"``, ``"Tesla V100-SXM2-16GB"``, ``"NVIDIA A10G"``.
        memory_gb: The device's memory, where the name does not give it.

    Returns:
        ``"H100-80GB"``, ``"H200-141GB"``, ``"A100-40GB"``, ``"A100-80GB"``, ``"V100-16GB"``,
        ``"A10G"``, or ``None`` for a GPU the catalogue lacks (a V100 32 GB, an L4, ...).
    """
    name = device_name.upper()
    found = re.search(r"(\d+)\s*GB", name)
    mem = float(found.group(1)) if found else memory_gb

    def near(gb: float) -> bool:
        return mem is None or abs(mem - gb) <= 0.15 * gb

    if "A10G" in name:
        return "A10G"
    if "H100" in name and near(80):
        return "H100-80GB"
    if "H200" in name and near(141):
        return "H200-141GB"
    if "A100" in name:
        if mem is not None and near(80):
            return "A100-80GB"
        return "A100-40GB" if near(40) else None
    if "V100" in name and near(16):
        return "V100-16GB"
    return None


def _latency_ms(
    model: torch.nn.Module, batch: int, device: str, repeats: int, side: int = 8
) -> float:
    """Milliseconds to serve a batch of ``side`` x ``side`` one-channel inputs.

    Each pass waits for the device (:func:`~edgegym.real.retrain.sync`), as every real executor
    serves a batch: a request's result exists only then. Passes queued back to back hide each
    batch's launch and wait behind the next one's; profiled that way on an H200, the energy
    family's real run served 33 % fewer requests than its model (docs/real-gpu.md).
    """
    x = torch.rand(batch, 1, side, side, device=device)
    model.eval()
    with torch.no_grad():
        model(x)  # warm-up
        sync(device)
        t0 = time.perf_counter()
        for _ in range(repeats):
            model(x)
            sync(device)
    return 1000.0 * (time.perf_counter() - t0) / repeats


def profile(
    out: str | Path,
    device: str = "cpu",
    base_scenario: str | Path = TINY_SCENARIO,
    seed: int = 0,
    batches: tuple[int, ...] = (1, 8, 32),
    shares: tuple[float, ...] = (0.25, 0.5, 1.0),
    fps: float = 30.0,
    options: dict[str, Any] | None = None,
    repeats: int = 20,
) -> dict[str, Any]:
    """Profile on ``device`` and write a measured continual scenario to ``out``.

    Args:
        out: Path of the scenario file to write.
        device: ``"cpu"`` or ``"cuda[:N]"``.
        base_scenario: Scenario whose structure (streams, windows, configurations) is kept.
        seed: Seed of the data stream and the networks.
        batches: Inference batch sizes to time.
        shares: Device shares to report latency at (time-slicing: derived).
        fps: Frame rate a stream must sustain (sets each inference configuration's share).
        options: Real backend options (:data:`edgegym.real.executor.DEFAULT_OPTIONS`).
        repeats: Timed forward passes per batch size.

    Returns:
        The scenario written, as a mapping.
    """
    check_device(device)
    opts = {**DEFAULT_OPTIONS, **(options or {})}
    base = _read_base(base_scenario)
    arch = architecture_for(base["model"])
    threads = torch.get_num_threads()
    torch.set_num_threads(int(opts["threads"]))
    try:
        latency, m = _measure(base, arch, device, seed, batches, opts, repeats)
    finally:
        torch.set_num_threads(threads)
    scenario = copy.deepcopy(base)
    hardware = _hardware(base, device)
    if hardware.gpu is not None:
        scenario["hardware"] = {**(base.get("hardware") or {}), "gpu": hardware.gpu}
    scenario["name"] = f"measured-{Path(out).stem}"
    scenario["description"] = (
        f"Measured by 'edgegym profile' on {device} from {base.get('name', base_scenario)}."
    )
    per_frame_s = latency[max(batches)] / 1000.0 / max(batches)
    for cfg in scenario["inference_configs"]:
        needed = fps * cfg.get("frame_sampling", 1.0) * per_frame_s
        cfg["share"] = float(round(max(needed, 1e-3), 6))
    max_job = float(np.max(m.secs))
    scenario["window_s"] = float(max(float(base["window_s"]), round(4 * max_job, 3)))
    scenario["drift"] = {
        "kind": "table",
        "start_accuracy": [round(a, 4) for a in m.start_acc],
        "post_accuracy": np.round(m.post, 4).tolist(),
        "gpu_seconds": np.round(m.secs, 5).tolist(),
        "drift": np.round(m.drift, 4).tolist(),
        "floor": 0.0,
    }
    scenario["provenance"] = {
        "measured": _measured_provenance(
            device, hardware, arch, opts, seed, latency, shares, fps, m.curves
        ),
        "base": base.get("provenance", {}),
    }
    from edgegym.outputs import write_text

    write_text(out, yaml.safe_dump(scenario, sort_keys=False, width=100), "scenario")
    return scenario


def _read_base(base_scenario: str | Path) -> dict[str, Any]:
    """The base scenario's mapping, checked to be a loadable continual scenario before any
    measuring. The file is an untrusted input: :func:`edgegym.scenarios.load` reads it first
    (a regular file of bounded size, UTF-8, YAML without duplicate keys or alias bombs, not
    nested too deeply, every field in range), so a bad one is one line naming it; its mapping
    as written is then read the same way (:func:`edgegym.scenarios.read_raw`, which resolves
    an ``extends``).

    Raises:
        ScenarioError: Not a loadable scenario (or changed while read), naming the file.
        ValueError: A scenario of another family.
    """
    base_path = resolve(base_scenario)  # a bundled name or a path; ScenarioError if neither
    load(base_path)  # a clear message for a bad file before any measuring
    base = read_raw(base_path)  # as written, its extends resolved; changed since: as load says
    family = base.get("family") if isinstance(base, dict) else None
    if family != "continual":
        hint = f"; pass --family {family}" if family in ("mig", "energy", "dag") else ""
        raise ValueError(
            f"{base_scenario}: not a continual scenario, the family --family names (the "
            f"default){hint}"
        )
    return base


@dataclass
class _Measured:
    """Retraining measured per stream, window and configuration (the scenario's drift table)
    and every job's accuracy curve."""

    start_acc: list[float] = field(default_factory=list)
    post: list[list[list[float]]] = field(default_factory=list)
    secs: list[list[list[float]]] = field(default_factory=list)
    drift: list[list[float]] = field(default_factory=list)
    curves: list[dict[str, Any]] = field(default_factory=list)


def _measure(
    base: dict[str, Any],
    arch: str,
    device: str,
    seed: int,
    batches: tuple[int, ...],
    opts: dict[str, Any],
    repeats: int,
) -> tuple[dict[int, float], _Measured]:
    """Inference latency per batch size (ms), then every stream's retraining."""
    configs = [RetrainConfig(**c) for c in base["retrain_configs"]]
    n_streams, n_windows = int(base["streams"]), int(base["windows"])
    streams = [
        DigitStream(
            windows=n_windows,
            kind=opts["kind"],
            n_train=int(opts["n_train"]),
            n_test=int(opts["n_test"]),
            severity=float(opts["severity"]),
            stream=v,
            seed=seed,
        )
        for v in range(n_streams)
    ]
    model = pretrained(arch, streams[0], int(opts["width"]), device)
    latency = {b: _latency_ms(model, b, device, repeats) for b in batches}
    m = _Measured()
    for v, stream in enumerate(streams):
        deployed = pretrained(arch, stream, int(opts["width"]), device)
        post_v, secs_v, drift_v = [], [], []
        for k in range(n_windows):
            w = stream.window(k)
            a0 = evaluate(deployed, w.x_test, w.y_test, device)[0]
            if k == 0:
                m.start_acc.append(a0)
            else:
                drift_v.append(max(0.0, post_v[-1][0] - a0))
            row_acc, row_s, deployed = _retrain_window(
                deployed, w, a0, configs, v, k, seed, device, m.curves
            )
            post_v.append(row_acc)
            secs_v.append(row_s)
        m.post.append(post_v)
        m.secs.append(secs_v)
        m.drift.append([0.0, *drift_v])
    return latency, m


def _retrain_window(
    deployed: torch.nn.Module,
    w: Any,
    a0: float,
    configs: list[RetrainConfig],
    v: int,
    k: int,
    seed: int,
    device: str,
    curves: list[dict[str, Any]],
) -> tuple[list[float], list[float], torch.nn.Module]:
    """Retrain a copy of the deployed model with every configuration on window ``k`` of
    stream ``v``; appends each job's curve to ``curves``.

    Returns:
        The accuracy after retraining and the device seconds per configuration, and the
        model the first configuration retrained (deployed in the next window).
    """
    row_acc, row_s, first = [], [], None
    for c, cfg in enumerate(configs):
        job = RetrainJob(copy.deepcopy(deployed), w, cfg, seed=seed + k, device=device)
        job.run_epochs(cfg.epochs)
        acc = np.array([a0, *job.curve])
        curves.append(
            {
                "stream": v,
                "window": k,
                "config": cfg.name,
                "seconds": round(job.seconds, 5),
                "accuracy_vs_epoch": [round(float(a), 4) for a in acc],
                "fit": fit_curve(np.arange(len(acc), dtype=float), acc),
            }
        )
        row_acc.append(float(job.curve[-1]))
        row_s.append(max(job.seconds, 1e-3))
        if c == 0:
            first = job.model
    return row_acc, row_s, first


@dataclass(frozen=True)
class _Hardware:
    """The measured device: its name, the catalogue GPU it is (if any) and what the scenario
    says about it."""

    device_name: str
    gpu: str | None
    note: str


def _hardware(base: dict[str, Any], device: str) -> _Hardware:
    base_gpu = (base.get("hardware") or {}).get("gpu")
    if device.startswith("cuda"):
        device_name = torch.cuda.get_device_name(device)
        memory_gb = torch.cuda.get_device_properties(device).total_memory / 1e9
        gpu = catalogue_gpu(device_name, memory_gb)
    else:
        device_name = platform.processor() or platform.machine()
        gpu = None
    if gpu is not None:
        note = f"hardware.gpu {gpu}: the measured GPU (base scenario: {base_gpu})"
    else:
        note = (
            f"hardware.gpu {base_gpu} kept from the base scenario: the catalogue has no entry "
            f"for {device_name}"
        )
    return _Hardware(device_name=device_name, gpu=gpu, note=note)


def _measured_provenance(
    device: str,
    hardware: _Hardware,
    arch: str,
    opts: dict[str, Any],
    seed: int,
    latency: dict[int, float],
    shares: tuple[float, ...],
    fps: float,
    curves: list[dict[str, Any]],
) -> dict[str, Any]:
    """``provenance.measured``: the device, software, data and every measurement."""
    return {
        "tool": "edgegym profile",
        "device": device,
        "device_name": hardware.device_name,
        "hardware": hardware.note,
        "torch": str(torch.__version__),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "architecture": arch,
        "data": {k: opts[k] for k in ("kind", "n_train", "n_test", "severity")},
        "seed": seed,
        "latency_ms_vs_batch": {int(b): round(t, 5) for b, t in latency.items()},
        "latency_ms_vs_share": {
            float(s): {int(b): round(t / s, 5) for b, t in latency.items()} for s in shares
        },
        "latency_vs_share_note": "time-slicing: latency at share s = latency at 1 / s "
        "(derived; MIG/MPS shares were not applied)",
        "fps": fps,
        "retraining": curves,
    }

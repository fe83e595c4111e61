"""The profiler for the MIG, energy and DAG families: measure a base scenario's models on a device.

:func:`profile_family` starts from a base scenario of the family, replaces what the device can
measure and keeps everything else with its original provenance. Each replaced field's
provenance reads ``measured: <device name>, <date>; ...`` (or ``derived: ...`` where a value is
computed from a measurement by a stated rule), and ``provenance.measured`` records the device,
torch version, date and every raw measurement. Every model is timed as its compact stand-in
(:mod:`edgegym.real.models`: ResNet-18-style, MobileNetV2-style for MobileNets), at ``width``
base channels on ``side`` x ``side`` inputs (``width=64`` has ResNet-18's channel widths).

* **mig**: per tenant, the stand-in's latency at batch 1, the scenario's batch and 8 (the
  catalogue's ``latency_ms`` and ``batch_exponent``, fitted), and one training step's cost per
  sample against inference's at batch 32 (``train_factor``, MIGRator §4.1.2's rule). Per MIG
  instance size: measured on the existing instances where MIG mode is on with instances (one
  child process per instance, ``CUDA_VISIBLE_DEVICES=<MIG UUID>``: CUDA shows a process one
  MIG device), ``share_alpha`` fitted to them; otherwise derived from the whole-device
  latency scaled by the instance's compute fraction (``share_alpha = 1``), or an error under
  ``mig_required``. With ``beside_s``, the ``mps`` slowdowns too: each stand-in's inference
  beside its retraining job in a second process (an MPS client where the daemon runs, as
  Ekya shared a GPU), against alone.
* **energy**: per tenant, service time per request at the clock the device ran the stand-in at
  (read under load, converted to the top clock by the model's DVFS rule where NVML reads a
  lower clock) and, where NVML reads power, mean power at several utilisation levels (duty
  cycles of the stand-in) with the power model's activity fitted to them, where the power rose
  clearly with the utilisation (:data:`MIN_ACTIVITY_SIGNAL`). The clock curve (levels,
  voltages, idle and top power) stays the hardware catalogue's: the profiler never sets clocks.
* **dag**: per task model, the node latency (inference, batch 1) and the stand-in's size in
  MB; per retraining configuration, the training cost of its data, all in the scenario's GPU
  time units (seconds on one resource unit of a speed-1 server: seconds on the whole device x
  ``units_per_gpu``).

Read-only towards the device: no clock, power limit or MIG mode is ever changed.
"""

from __future__ import annotations

import copy
import datetime
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
import yaml

from edgegym.hardware.gpus import GPUS, PowerModel, get_gpu
from edgegym.hardware.mig import MIG_TOTAL_GPCS, get_mig_profiles
from edgegym.real.energy import EnergyMeter
from edgegym.real.executor import check_device, gpu_index
from edgegym.real.models import architecture_for, build
from edgegym.real.profile import _hardware, _latency_ms
from edgegym.real.retrain import sync
from edgegym.real.sharing import Sharing, detect
from edgegym.scenarios import load, read_raw, resolve
from edgegym.workload.models import get_model

#: Families :func:`profile_family` writes (the continual family is :func:`profile.profile`).
FAMILIES = ("mig", "energy", "dag")
#: Utilisation levels the energy profiler measures power at.
UTILISATION_LEVELS = (0.0, 0.25, 0.5, 0.75, 1.0)
#: A fitted activity replaces the catalogue's only where the stand-in moved the power clearly:
#: a slope above this fraction of the dynamic power at the clock, and above three times the
#: fit's residual. The compact stand-ins are launch bound on a large GPU (on an H200 their power
#: stayed within 120-125 W at every duty cycle, 2026-11-28), and a flat line says nothing about
#: the model they stand in for.
MIN_ACTIVITY_SIGNAL = 0.05
#: Batch of the training steps timed (and of the inference it is compared with).
TRAIN_BATCH = 32


@dataclass(frozen=True)
class Settings:
    """How :func:`profile_family` measures.

    Attributes:
        device: ``"cpu"`` or ``"cuda[:N]"``.
        repeats: Timed passes per measurement.
        width: Base channels of the stand-in networks (64: ResNet-18's widths).
        side: Input side in pixels (1 channel).
        seed: Seed of the networks' weights.
        power_s: Seconds of each utilisation level (energy family, where NVML reads power).
        mig_required: Raise instead of deriving MIG instance latencies when no instance can
            be measured.
        beside_s: Seconds of the co-location measurement (MIG family: inference beside a
            retraining job in another process; 0: not measured, the base's ``mps`` kept).
    """

    device: str = "cpu"
    repeats: int = 20
    width: int = 8
    side: int = 8
    seed: int = 0
    power_s: float = 2.0
    mig_required: bool = False
    beside_s: float = 0.0


@dataclass(frozen=True)
class Stamp:
    """The device and date every replaced field's provenance names."""

    device: str
    device_name: str
    gpu: str | None  # the hardware catalogue's name of the device, if it has one
    date: str

    def measured(self, how: str) -> str:
        """A ``measured:`` provenance line."""
        return f"measured: {self.device_name}, {self.date}; {how}"

    def derived(self, how: str) -> str:
        """A ``derived:`` provenance line."""
        return f"derived: from measurements on {self.device_name}, {self.date}; {how}"


def _stamp(device: str) -> Stamp:
    hw = _hardware({}, device)
    name = hw.device_name if device.startswith("cuda") else f"cpu ({hw.device_name})"
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    return Stamp(device, name, hw.gpu, date)


# ----------------------------------------------------------------------------- measurements
def standin(model_name: str, s: Settings) -> tuple[str, torch.nn.Module]:
    """The stand-in network of a scenario's model, on the device, in eval mode."""
    arch = architecture_for(model_name)
    return arch, build(arch, width=s.width, seed=s.seed).to(s.device).eval()


def size_mb(model: torch.nn.Module) -> float:
    """Megabytes of a network's parameters and buffers (its weights file, fp32)."""
    tensors = [*model.parameters(), *model.buffers()]
    return sum(t.numel() * t.element_size() for t in tensors) / 1e6


def latency_vs_batch(model: torch.nn.Module, batches: list[int], s: Settings) -> dict[int, float]:
    """Milliseconds per forward pass at each batch size."""
    return {b: _latency_ms(model, b, s.device, s.repeats, s.side) for b in batches}


def fit_batch(latency: dict[int, float], fallback_exponent: float) -> tuple[float, float]:
    """``(latency_ms at batch 1, exponent)`` of ``latency_ms * b**exponent`` fitted in log
    space (the catalogue's batch rule); one batch size keeps ``fallback_exponent``."""
    b = np.array(sorted(latency), dtype=float)
    t = np.array([latency[int(k)] for k in b])
    if len(b) < 2:
        return float(t[0] / b[0] ** fallback_exponent), fallback_exponent
    slope, icpt = np.polyfit(np.log(b), np.log(t), 1)
    return float(np.exp(icpt)), float(np.clip(slope, 0.0, 2.0))


def train_ms_per_sample(model: torch.nn.Module, s: Settings, batch: int = TRAIN_BATCH) -> float:
    """Milliseconds of SGD (forward, backward, step) per sample at ``batch``; the model's
    weights are restored afterwards."""
    state = copy.deepcopy(model.state_dict())
    x = torch.rand(batch, 1, s.side, s.side, device=s.device)
    y = torch.randint(0, 10, (batch,), device=s.device)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()
    model.train()

    def step() -> None:
        opt.zero_grad(set_to_none=True)
        loss_fn(model(x), y).backward()
        opt.step()

    step()  # warm-up
    sync(s.device)
    t0 = time.perf_counter()
    for _ in range(s.repeats):
        step()
    sync(s.device)
    ms = 1000.0 * (time.perf_counter() - t0) / s.repeats / batch
    model.load_state_dict(state)
    model.eval()
    return ms


def _r(x: float, digits: int = 6) -> float:
    """``x`` to ``digits`` significant digits (a YAML file a person reads)."""
    return float(f"{x:.{digits}g}")


# ----------------------------------------------------------------------------- co-location
def retrain_child(arch: str, width: int, side: int, device: str, seconds: float) -> None:
    """A retraining job that runs alone for ``seconds``, prints ``beside``, runs ``seconds``
    more while the parent measures inference beside it, then prints its mean SGD step (ms)
    in each phase as JSON. What :func:`beside_retraining`'s child process runs."""
    s = Settings(device=device, width=width, side=side, repeats=1)
    model = build(arch, width=width).to(device)
    steps: list[list[float]] = [[], []]
    for phase in (0, 1):
        if phase == 1:
            print("beside", flush=True)
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            steps[phase].append(train_ms_per_sample(model, s) * TRAIN_BATCH)
    print(json.dumps({"alone_ms": np.mean(steps[0]), "beside_ms": np.mean(steps[1])}), flush=True)


def beside_retraining(model_name: str, s: Settings) -> dict[str, float]:
    """Inference (batch 8) of a stand-in alone and beside its retraining job (batch 32) in
    another process, which is an MPS client where an MPS control daemon runs (Ekya's
    arrangement) and is time-sliced with this one otherwise.

    Returns:
        Milliseconds alone and beside for both, and each side's slowdown (the share of its
        speed it loses beside the other: the MIG family's ``mps`` fields).
    """
    arch, model = standin(model_name, s)
    alone = _latency_ms(model, 8, s.device, s.repeats, s.side)
    code = (
        "import json, sys; from edgegym.real.profile_families import retrain_child; "
        "retrain_child(*json.loads(sys.argv[1]))"
    )
    args = json.dumps([arch, s.width, s.side, s.device, s.beside_s])
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    proc = subprocess.Popen(
        [sys.executable, "-c", code, args], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        if proc.stdout is None or proc.stdout.readline().strip() != "beside":
            raise RuntimeError("the retraining process did not start")
        lat, end = [], time.perf_counter() + 0.8 * s.beside_s
        while time.perf_counter() < end or not lat:
            lat.append(_latency_ms(model, 8, s.device, 1, s.side))
        out, _ = proc.communicate(timeout=600)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    train = json.loads(out.strip().splitlines()[-1])
    beside = float(np.median(lat))
    return {
        "infer_ms_alone": _r(alone, 5),
        "infer_ms_beside": _r(beside, 5),
        "train_step_ms_alone": _r(train["alone_ms"], 5),
        "train_step_ms_beside": _r(train["beside_ms"], 5),
        "inference_slowdown": _r(float(np.clip(1.0 - alone / beside, 0.0, 0.99)), 4),
        "retrain_slowdown": _r(
            float(np.clip(1.0 - train["alone_ms"] / train["beside_ms"], 0.0, 0.99)), 4
        ),
    }


def _mps_slowdowns(
    sc: dict[str, Any], st: Stamp, s: Settings
) -> tuple[list[str], dict[str, dict[str, float]]]:
    """The MIG family's ``mps`` slowdowns measured with the tenants' stand-ins (their mean),
    where ``s.beside_s`` asks for it. Returns the messages for the user and the runs."""
    if s.beside_s <= 0:
        return [], {}
    runs = {t["model"]: beside_retraining(t["model"], s) for t in sc["tenants"]}
    daemon = detect(gpu_index(s.device)).mps_daemon
    how = (
        f"the tenants' stand-ins (width {s.width}), inference (batch 8) beside a retraining "
        f"job (batch {TRAIN_BATCH}) in another process "
        f"{'under MPS' if daemon else '(no MPS daemon: time-sliced)'}, against alone; mean "
        "over the models"
    )
    mps = sc.setdefault("mps", {})
    for side in ("inference", "retrain"):
        mean = float(np.mean([r[f"{side}_slowdown"] for r in runs.values()]))
        mps[f"{side}_slowdown"] = _r(mean, 4)
        sc["provenance"][f"mps.{side}_slowdown"] = st.measured(how)
    if daemon:
        return [], runs
    note = (
        f"no MPS control daemon for {s.device}: inference beside retraining was measured "
        "time-sliced, not under MPS (Ekya's arrangement needs nvidia-cuda-mps-control -d)"
    )
    return [note], runs


# ----------------------------------------------------------------------------- MIG
def probe_latency(arch: str, width: int, batch: int, repeats: int, side: int) -> float:
    """Batch latency (ms) of a stand-in on ``cuda``; what a MIG instance's child process runs."""
    model = build(arch, width=width).to("cuda").eval()
    return _latency_ms(model, batch, "cuda", repeats, side)


def _child_latency(uuid: str, arch: str, batch: int, s: Settings) -> float:
    """:func:`probe_latency` in a child process that sees only MIG instance ``uuid``."""
    code = (
        "import json, sys; from edgegym.real.profile_families import probe_latency; "
        "print(json.dumps(probe_latency(*json.loads(sys.argv[1]))))"
    )
    args = json.dumps([arch, s.width, batch, s.repeats, s.side])
    root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": uuid}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    out = subprocess.run(
        [sys.executable, "-c", code, args],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    return float(json.loads(out.stdout.strip().splitlines()[-1]))


#: ``(uuid, arch, batch, settings) -> ms``: how one MIG instance is measured (tests swap it).
InstanceRunner = Callable[[str, str, int, Settings], float]


def mig_size_latency(
    sharing: Sharing, arch: str, batch: int, s: Settings, run: InstanceRunner = _child_latency
) -> tuple[dict[int, float], str]:
    """Batch latency (ms) per MIG instance size (GPCs) measured on the existing instances.

    Returns:
        ``{gpcs: ms}`` (empty where nothing could be measured) and why, if so.
    """
    if not sharing.mig_mode:
        why = sharing.message or f"MIG is not enabled on {s.device}"
        return {}, why
    if not sharing.mig_instances:
        return {}, "MIG mode is on but no MIG instance exists (edgegym never creates one)"
    out: dict[int, float] = {}
    for inst in sharing.mig_instances:
        if int(inst["slices"]) in out:
            continue
        try:
            out[int(inst["slices"])] = run(str(inst["uuid"]), arch, batch, s)
        except (OSError, ValueError, subprocess.SubprocessError) as exc:
            return {}, f"measuring on MIG instance {inst['uuid']} failed ({exc})"
    return out, ""


def fit_share_alpha(by_size: dict[int, float]) -> tuple[float, float]:
    """``(whole-GPU ms, alpha)`` of ``latency(g) = whole / (g / 7)**alpha`` fitted to
    latencies per instance size (one size: ``alpha = 1``, the compute fraction)."""
    g = np.array(sorted(by_size), dtype=float)
    t = np.array([by_size[int(k)] for k in g])
    frac = g / MIG_TOTAL_GPCS
    if len(g) < 2:
        return float(t[0] * frac[0]), 1.0
    slope, icpt = np.polyfit(np.log(frac), np.log(t), 1)
    return float(np.exp(icpt)), float(np.clip(-slope, 0.01, 4.0))


def _mig_tenant(
    t: dict[str, Any], batch: int, gpu: str, s: Settings, sharing: Sharing, run: InstanceRunner
) -> tuple[dict[str, float], dict[str, Any], str]:
    """One MIG tenant: its ``profile`` fields, the record of its measurements, and why MIG
    instance latencies are derived (empty where they were measured)."""
    arch, model = standin(t["model"], s)
    lat = latency_vs_batch(model, sorted({1, batch, 8}), s)
    l1, expo = fit_batch(lat, get_model(t["model"]).batch_exponent)
    infer_ms = _latency_ms(model, TRAIN_BATCH, s.device, s.repeats, s.side) / TRAIN_BATCH
    train_ms = train_ms_per_sample(model, s)
    by_size, why = mig_size_latency(sharing, arch, batch, s, run)
    alpha = 1.0
    if by_size:
        whole, alpha = fit_share_alpha(by_size)
        l1 = whole / batch**expo
    sizes = sorted({p.gpcs for p in get_mig_profiles(gpu).values()})
    per_size = {int(g): _r(l1 * batch**expo / (g / MIG_TOTAL_GPCS) ** alpha, 5) for g in sizes}
    profile = {
        "latency_ms": _r(max(l1, 1e-4)),
        "batch_exponent": _r(expo, 4),
        "share_alpha": _r(alpha, 4),
        "train_factor": _r(max(train_ms / max(infer_ms, 1e-9), 1e-3), 4),
    }
    record = {
        "tenant": t.get("name") or t["model"],
        "model": t["model"],
        "stand_in": arch,
        "size_mb": _r(size_mb(model), 4),
        "latency_ms_vs_batch": {int(b): _r(v, 5) for b, v in lat.items()},
        "latency_ms_per_instance_gpcs": per_size,
        "instances": "measured" if by_size else "derived",
        "measured_instance_ms": {int(g): _r(v, 5) for g, v in by_size.items()},
        "infer_ms_per_sample_batch32": _r(infer_ms, 5),
        "train_ms_per_sample_batch32": _r(train_ms, 5),
    }
    return profile, record, why


def _profile_mig(
    sc: dict[str, Any], st: Stamp, s: Settings, run: InstanceRunner | None = None
) -> list[str]:
    """Measure a MIG scenario's tenants (see the module docstring); edits ``sc``, returns the
    messages for the user."""
    run = run or _child_latency
    notes = _retarget_gpu(sc, "hardware", st, mig=True)
    gpu, batch = sc["hardware"]["gpu"], int(sc.get("batch", 1))
    sharing = detect(gpu_index(s.device))
    if s.mig_required and not (sharing.mig_mode and sharing.mig_instances):
        _, why = mig_size_latency(sharing, "", batch, s)
        raise RuntimeError(
            f"{why}: no MIG instance latency can be measured (--mig-required); run on a GPU in "
            "MIG mode with instances, or drop --mig-required to derive them"
        )
    records, whys = [], set()
    for t in sc["tenants"]:
        profile, record, why = _mig_tenant(t, batch, gpu, s, sharing, run)
        t["profile"] = profile
        records.append(record)
        if why:
            whys.add(why)
    prov = sc["provenance"]
    how = f"the stand-in networks (width {s.width}, {s.side}x{s.side} inputs)"
    prov["tenants.profile.latency_ms"] = st.measured(f"batch-1 latency of {how}, fitted")
    prov["tenants.profile.batch_exponent"] = st.measured(
        f"fitted to the latency of {how} at batches {sorted({1, batch, 8})}"
    )
    prov["tenants.profile.train_factor"] = st.measured(
        f"SGD per sample over inference per sample of {how}, both at batch {TRAIN_BATCH}"
    )
    if whys:
        why = "; ".join(sorted(whys))
        if s.mig_required:
            raise RuntimeError(
                f"{why}: no MIG instance latency could be measured (--mig-required); run on a "
                "GPU in MIG mode with instances, or drop --mig-required to derive them"
            )
        prov["tenants.profile.share_alpha"] = st.derived(
            "1.0: each MIG instance's latency is the whole device's scaled by its compute "
            f"fraction (GPCs / 7); {why}"
        )
        notes.append(
            f"{why}: MIG instance latencies derived from the whole-device measurement "
            "(scaled by each instance's compute fraction), marked 'derived:' in provenance"
        )
    else:
        prov["tenants.profile.share_alpha"] = st.measured(
            f"fitted to {how}'s latency on the existing MIG instances"
        )
    beside_notes, runs = _mps_slowdowns(sc, st, s)
    extra = {"beside_retraining": runs} if runs else {}
    sc["provenance"]["measured"] = _record(st, s, {"tenants": records, **extra})
    return notes + beside_notes


# ----------------------------------------------------------------------------- energy
def clocks_under_load(
    model: torch.nn.Module, s: Settings, index: int | None, seconds: float = 0.3
) -> tuple[float, float] | None:
    """``(SM clock while the stand-in runs, top SM clock)`` in MHz as NVML reads them
    (read-only), or ``None`` where NVML reads no clock.

    The clock is read with the stand-in's passes queued on the device: an idle GPU reports its
    idle clock (345 MHz on an H200) and boosts within milliseconds of work, so a reading taken
    before the work would rescale every latency by the wrong clock. The median of the readings
    is kept.
    """
    if index is None:
        return None
    try:
        import pynvml

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        top = float(pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM))
        x = torch.rand(8, 1, s.side, s.side, device=s.device)
        reads = []
        with torch.no_grad():
            end = time.perf_counter() + seconds
            while time.perf_counter() < end or not reads:
                for _ in range(4):
                    model(x)
                reads.append(float(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)))
            sync(s.device)
    except Exception:  # no NVML, no GPU, or a GPU that does not report clocks
        return None
    now = float(np.median(reads))
    return (now, top) if now > 0 and top > 0 else None


def power_vs_utilisation(
    model: torch.nn.Module,
    s: Settings,
    meter: EnergyMeter,
    levels: tuple[float, ...] = UTILISATION_LEVELS,
    period_s: float = 0.05,
) -> dict[float, float]:
    """Mean watts while the stand-in keeps the device busy a fraction ``u`` of every
    ``period_s`` (a duty cycle), for ``s.power_s`` seconds per level; levels NVML could not
    measure are left out."""
    x = torch.rand(8, 1, s.side, s.side, device=s.device)
    out: dict[float, float] = {}
    with torch.no_grad():
        for u in levels:
            meter.begin("u")
            end = time.perf_counter() + s.power_s
            while time.perf_counter() < end:
                t0 = time.perf_counter()
                while time.perf_counter() - t0 < u * period_s:
                    model(x)
                    sync(s.device)
                time.sleep(max(0.0, period_s - (time.perf_counter() - t0)))
            m = meter.end("u")
            if m.energy_j is not None and m.seconds > 0:
                out[float(u)] = m.energy_j / m.seconds
    return out


def fit_activity(
    power_w: dict[float, float], pm: PowerModel, clock_ratio: float = 1.0
) -> dict[str, float]:
    """The power model's activity fitted to watts per utilisation level.

    The energy family draws ``idle + (max - idle) * activity * u * (f / f_max) * (V / V_max)^2``
    (:class:`~edgegym.hardware.gpus.PowerModel`); a line ``p0 + slope * u`` through the
    measurements gives ``activity = slope / dynamic power at u = 1``, at the catalogue clock
    ``clock_ratio`` of the top one (the clock the device ran at). Idle and top power stay the
    catalogue's; the measured intercept is reported beside them.
    """
    u = np.array(sorted(power_w), dtype=float)
    p = np.array([power_w[k] for k in u])
    slope, p0 = np.polyfit(u, p, 1) if len(u) >= 2 else (0.0, float(p[0]))
    f = float(np.clip(pm.max_clock_mhz * clock_ratio, pm.min_clock_mhz, pm.max_clock_mhz))
    dyn = float(pm.dynamic_power(f, 1.0))
    activity = float(np.clip(slope / dyn, 0.0, 1.0)) if dyn > 0 else 0.0
    rmse = float(np.sqrt(np.mean((p0 + slope * u - p) ** 2)))
    return {
        "activity": activity,
        "intercept_w": float(p0),
        "slope_w": float(slope),
        "rmse_w": rmse,
        "catalogue_idle_w": float(pm.idle_power_w),
        "catalogue_dynamic_w_at_clock": dyn,
    }


def activity_is_measurable(fit: dict[str, float]) -> bool:
    """Whether a :func:`fit_activity` line rose clearly above its noise and the catalogue's
    dynamic power (:data:`MIN_ACTIVITY_SIGNAL`)."""
    floor = MIN_ACTIVITY_SIGNAL * fit["catalogue_dynamic_w_at_clock"]
    return fit["slope_w"] > max(floor, 3.0 * fit["rmse_w"])


def _energy_tenant(
    t: dict[str, Any], gpu: str, s: Settings, meter: EnergyMeter
) -> tuple[dict[str, float], dict[str, Any]]:
    """One energy tenant: its ``profile`` fields and the record of its measurements."""
    cat = get_model(t["model"])
    arch, model = standin(t["model"], s)
    batch = int(t.get("batch", 1))
    lat = latency_vs_batch(model, sorted({1, batch, 8}), s)
    clocks = clocks_under_load(model, s, gpu_index(s.device))
    l1, expo = fit_batch(lat, cat.batch_exponent)
    ratio = min(1.0, clocks[0] / clocks[1]) if clocks else 1.0
    # Measured at the clock it ran at; the family's latency is at the top clock (DVFS rule).
    l1_top = l1 / ((1.0 - cat.memory_bound) / ratio + cat.memory_bound)
    profile = {"latency_ms": _r(max(l1_top, 1e-4)), "batch_exponent": _r(expo, 4)}
    record: dict[str, Any] = {
        "tenant": t.get("name") or t["model"],
        "model": t["model"],
        "stand_in": arch,
        "size_mb": _r(size_mb(model), 4),
        "latency_ms_vs_batch": {int(b): _r(v, 5) for b, v in lat.items()},
        "service_ms_per_request": _r(lat[batch] / batch, 5),
        "clock_mhz": {"under_load": clocks[0], "top": clocks[1]} if clocks else "not read",
    }
    if meter.available:
        power = power_vs_utilisation(model, s, meter)
        if len(power) >= 2:
            fit = fit_activity(power, PowerModel.from_spec(get_gpu(gpu)), ratio)
            record["power_w_vs_utilisation"] = {u: _r(w, 5) for u, w in power.items()}
            record["power_fit"] = {k: _r(v, 5) for k, v in fit.items()}
            if activity_is_measurable(fit):
                profile["power_activity"] = _r(fit["activity"], 4)
            else:
                record["power_fit"]["kept"] = "catalogue: the stand-in's power stayed flat"
    return profile, record


def _profile_energy(sc: dict[str, Any], st: Stamp, s: Settings, meter: Any = None) -> list[str]:
    """Measure an energy scenario's tenants (see the module docstring); edits ``sc``, returns
    the messages for the user."""
    notes = _retarget_gpu(sc, "hardware", st)
    gpu = sc["hardware"]["gpu"]
    meter = meter if meter is not None else EnergyMeter(gpu_index(s.device))
    records = []
    for t in sc["tenants"]:
        t["profile"], record = _energy_tenant(t, gpu, s, meter)
        records.append(record)
    prov = sc["provenance"]
    how = f"the stand-in networks (width {s.width}, {s.side}x{s.side} inputs)"
    read = [r["clock_mhz"] for r in records if isinstance(r["clock_mhz"], dict)]
    at = (
        "SM clock under load "
        + ", ".join(f"{c['under_load']:g}" for c in read)
        + f" of {read[0]['top']:g} MHz"
        if read
        else "the clock the device ran at"
    )
    prov["tenants.profile.latency_ms"] = st.measured(
        f"service time per request of {how} at the clock it ran at ({at}), as at the top clock"
    )
    prov["tenants.profile.batch_exponent"] = st.measured(f"fitted to the latency of {how}")
    fitted = [
        t.get("name") or t["model"] for t in sc["tenants"] if "power_activity" in t["profile"]
    ]
    flat = [r["tenant"] for r in records if "kept" in r.get("power_fit", {})]
    if fitted:
        kept = f"; kept the catalogue's for {', '.join(flat)} (flat power)" if flat else ""
        prov["tenants.profile.power_activity"] = st.measured(
            f"NVML ({meter.method}) mean power at utilisation {list(UTILISATION_LEVELS)} "
            "(duty cycles of the stand-in), the activity fitted with the catalogue's idle and "
            f"top power for {', '.join(fitted)}{kept}"
        )
        power = "measured: tenants.profile.power_activity"
    if flat:
        notes.append(
            f"the stand-ins of {', '.join(flat)} did not move the power clearly (slope at most "
            f"{MIN_ACTIVITY_SIGNAL:.0%} of the dynamic power or 3x the fit's residual): their "
            "power activity stays the catalogue's (edgegym.workload.models)"
        )
    if not fitted:
        why = meter.message or (
            "the stand-ins' power stayed flat" if flat else "too few power readings"
        )
        notes.append(
            f"no power measurement on {s.device} ({why}): the power model stays the hardware "
            "catalogue's (each model's activity from edgegym.workload.models)"
        )
        power = f"catalogue: kept, NVML measured no power ({why})"
    gpu_src = str(prov.get("hardware.gpu", f"choice: {gpu}"))
    prov["hardware.gpu"] = (
        f"{gpu_src}; its clock curve (DVFS levels, voltages, idle and top power) is the hardware "
        "catalogue's (edgegym.hardware.gpus), not measured: edgegym profile never sets clocks"
    )
    sc["provenance"]["measured"] = _record(
        st, s, {"tenants": records, "power": power, "clock_curve": "catalogue: " + gpu}
    )
    return notes


# ----------------------------------------------------------------------------- DAG
def _profile_dag(sc: dict[str, Any], st: Stamp, s: Settings) -> list[str]:
    """Measure a DAG scenario's models and retraining (see the module docstring); edits
    ``sc``, returns the messages for the user."""
    notes = _retarget_gpu(sc, "servers", st)
    units = float((sc.get("servers") or {}).get("units_per_gpu", 2))
    records: dict[str, dict[str, Any]] = {}
    for name, m in sc["models"].items():
        arch, model = standin(name, s)
        ms = _latency_ms(model, 1, s.device, s.repeats, s.side)
        records[name] = {
            "stand_in": arch,
            "latency_ms": _r(ms, 5),
            "train_ms_per_sample": _r(train_ms_per_sample(model, s), 5),
            "size_mb": _r(size_mb(model), 4),
        }
        m["size_mb"] = records[name]["size_mb"]
    tasks = [task for app in sc["applications"] for task in app["tasks"]]
    for task in tasks:
        task["workload"] = _r(max(records[task["model"]]["latency_ms"] / 1000.0 * units, 1e-6))
    # A configuration's data is the request inputs the pool collected (pool_from_inputs), so
    # its samples are its MB over a request input's MB.
    inputs = [float(t["input_mb"]) for t in tasks if float(t.get("input_mb", 0) or 0) > 0]
    input_mb = float(np.mean(inputs)) if inputs else 1.0
    train_s = float(np.mean([records[t["model"]]["train_ms_per_sample"] for t in tasks])) / 1e3
    for cfg in sc["retrain_configs"]:
        samples = float(cfg["data_mb"]) / input_mb
        cfg["workload"] = _r(max(train_s * samples * units, 1e-6))
    prov = sc["provenance"]
    how = f"the stand-in networks (width {s.width}, {s.side}x{s.side} inputs)"
    unit = f"GPU time units: seconds on the whole device x units_per_gpu ({units:g})"
    prov["applications.tasks.workload"] = st.measured(
        f"batch-1 latency of the task model's stand-in among {how}, in {unit}"
    )
    prov["retrain_configs.workload"] = st.measured(
        f"SGD seconds per sample (batch {TRAIN_BATCH}) of {how}, mean over the tasks, x "
        f"samples (data_mb / a request input's {input_mb:.3g} MB), in {unit}"
    )
    for name in records:
        prov[f"models.{name}.size_mb"] = st.measured(
            f"fp32 parameters and buffers of the stand-in ({records[name]['stand_in']}, width "
            f"{s.width})"
        )
    sc["provenance"]["measured"] = _record(
        st, s, {"models": records, "request_input_mb": _r(input_mb, 4)}
    )
    return notes


# ----------------------------------------------------------------------------- the file
def _remap_clock(mhz: float, old: str, new: str) -> float:
    """The new GPU's clock level nearest the same fraction of its top clock (0 stays 0)."""
    if not mhz:
        return 0.0
    frac = float(mhz) / get_gpu(old).max_clock_mhz
    levels = get_gpu(new).clock_array()
    return float(levels[np.argmin(np.abs(levels - frac * levels[-1]))])


def _retarget_gpu(sc: dict[str, Any], section: str, st: Stamp, mig: bool = False) -> list[str]:
    """Name the measured GPU in ``section.gpu`` where the catalogue has it (so that the
    simulator models its power and clocks), its clocks mapped onto the new GPU's levels;
    otherwise keep the base's GPU. Returns the messages for the user."""
    hw = sc.setdefault(section, {})
    old = hw.get("gpu")
    if old is None:
        old = "A100-40GB" if mig else ("A100-80GB" if section == "servers" else "TX2")
    if st.gpu is None or st.gpu == old or (mig and not GPUS[st.gpu].mig_capable):
        if st.device.startswith("cuda") and st.gpu != old:
            return [
                f"{section}.gpu {old} kept: the catalogue has no (MIG) entry for {st.device_name}"
            ]
        return []
    hw["gpu"] = st.gpu
    prov = sc["provenance"]
    prov[f"{section}.gpu"] = st.measured(f"the measured GPU, the catalogue's {st.gpu}")
    clocks = [(hw, "clock_mhz")] + [(t, "clock_mhz") for t in sc.get("tenants", [])]
    for rec, key in clocks:
        value = rec.get(key)
        if isinstance(value, list):
            rec[key] = [[at, _remap_clock(f, old, st.gpu)] for at, f in value]
        elif value:
            rec[key] = _remap_clock(value, old, st.gpu)
        else:
            continue
        where = "hardware.clock_mhz" if rec is hw else "tenants.clock_mhz"
        prov[where] = st.derived(
            f"the base's clock ({old}) mapped to the {st.gpu} level nearest the same fraction "
            "of the top clock"
        )
    return [f"{section}.gpu: {st.gpu}, the measured GPU (base: {old})"]


def _record(st: Stamp, s: Settings, data: dict[str, Any]) -> dict[str, Any]:
    """``provenance.measured``: the device, software, settings and every measurement."""
    return {
        "tool": "edgegym profile",
        "device": st.device,
        "device_name": st.device_name,
        "date": st.date,
        "torch": str(torch.__version__),
        "settings": {
            "repeats": s.repeats,
            "width": s.width,
            "side": s.side,
            "seed": s.seed,
            "beside_s": s.beside_s,
        },
        **data,
    }


def _absolute_paths(node: Any, base_dir: Path) -> None:
    """Make the trace paths of arrival specs absolute, so the file runs where it is written."""
    if isinstance(node, dict):
        if "kind" in node and isinstance(node.get("path"), str):
            if not Path(node["path"]).is_absolute():
                node["path"] = str((base_dir / node["path"]).resolve())
        for value in node.values():
            _absolute_paths(value, base_dir)
    elif isinstance(node, list):
        for value in node:
            _absolute_paths(value, base_dir)


def profile_family(
    family: str,
    out: str | Path,
    base_scenario: str | Path | None = None,
    settings: Settings | None = None,
) -> tuple[dict[str, Any], list[str]]:
    """Measure a base scenario of ``family`` on a device and write the measured scenario.

    Args:
        family: ``"mig"``, ``"energy"`` or ``"dag"``.
        out: Path of the scenario file to write.
        base_scenario: A bundled name or a path (default: the family's default scenario).
        settings: How to measure (device, repeats, network size, ...).

    Returns:
        The scenario written, as a mapping, and the messages for the user (what was kept
        or derived and why).

    Raises:
        ValueError: An unknown family, or a base scenario of another family.
        RuntimeError: CUDA asked for without a GPU; MIG required where it is not enabled.
    """
    from edgegym.core.registry import FAMILIES as REGISTERED
    from edgegym.outputs import write_text

    s = settings or Settings()
    if family not in FAMILIES:
        raise ValueError(f"family {family!r}: expected one of {', '.join(FAMILIES)}")
    check_device(s.device)
    base_path = resolve(base_scenario or REGISTERED[family].default_scenario)
    load(base_path)  # a clear message for a bad file before any measuring
    raw = read_raw(base_path)  # as written, its extends resolved
    if raw.get("family") != family:
        raise ValueError(
            f"{base_path.name}: a scenario of the {raw.get('family')} family; --family "
            f"{family} needs one of the {family} family as --base"
        )
    sc = copy.deepcopy(raw)
    sc["provenance"] = dict(raw.get("provenance") or {})
    _absolute_paths(sc, base_path.parent)
    st = _stamp(s.device)
    measure = {"mig": _profile_mig, "energy": _profile_energy, "dag": _profile_dag}[family]
    notes = measure(sc, st, s)
    base_prov = raw.get("provenance") or {}
    sc["provenance"]["measured"]["replaced"] = [
        k for k, v in sc["provenance"].items() if k != "measured" and base_prov.get(k) != v
    ]
    sc["name"] = f"measured-{Path(out).stem}"
    sc["description"] = (
        f"Measured by 'edgegym profile --family {family}' on {st.device_name} from "
        f"{raw.get('name', base_path.stem)}."
    )
    write_text(out, yaml.safe_dump(sc, sort_keys=False, width=100, allow_unicode=True), "scenario")
    load(out)  # the simulator reads the file as written; a problem here is the profiler's
    return sc, notes

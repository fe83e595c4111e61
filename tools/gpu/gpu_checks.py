"""GPU checks of edgegym's real backend (docs/real-gpu.md). Writes $OUT/checks.json.

Sections: environment, sharing detection, energy meter sanity, the tiny continual and MIG
scenarios run for real on cuda (paced, time_scale=20) beside their simulated runs.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import os
import sys
import time
import traceback

import numpy as np

OUT = os.environ.get("OUT", "/tmp/out")
RESULT: dict = {}


def save() -> None:
    with open(os.path.join(OUT, "checks.json"), "w") as fh:
        json.dump(RESULT, fh, indent=1, default=str)


def section(name):
    def deco(fn):
        t0 = time.perf_counter()
        print(f"=== {name}", flush=True)
        try:
            RESULT[name] = fn()
        except Exception as exc:
            RESULT[name] = {"error": repr(exc), "traceback": traceback.format_exc()}
            print(traceback.format_exc(), flush=True)
        RESULT.setdefault("_seconds", {})[name] = round(time.perf_counter() - t0, 2)
        print(json.dumps(RESULT[name], default=str)[:3000], flush=True)
        save()
        return fn

    return deco


SKIP = set(os.environ.get("CHECK_SKIP", "").split(","))


def section(name, _section=section):
    if name in SKIP:
        return lambda fn: fn
    return _section(name)


@section("environment")
def _env():
    import pynvml
    import torch

    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(0)
    name = pynvml.nvmlDeviceGetName(h)
    out = {
        "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(),
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "cuda_available": torch.cuda.is_available(),
        "device_name": torch.cuda.get_device_name(0),
        "nvml_name": name.decode() if isinstance(name, bytes) else name,
        "driver": pynvml.nvmlSystemGetDriverVersion(),
        "nvml_version": pynvml.nvmlSystemGetNVMLVersion(),
        "cuda_driver_version": pynvml.nvmlSystemGetCudaDriverVersion(),
        "memory_total_mib": pynvml.nvmlDeviceGetMemoryInfo(h).total // 2**20,
        "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES"),
    }
    for key, fn in {
        "power_limit_w": lambda: pynvml.nvmlDeviceGetPowerManagementLimit(h) / 1000,
        "power_now_w": lambda: pynvml.nvmlDeviceGetPowerUsage(h) / 1000,
        "energy_counter_mj": lambda: pynvml.nvmlDeviceGetTotalEnergyConsumption(h),
        "sm_clock_mhz": lambda: pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
        "max_sm_clock_mhz": lambda: pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_SM),
        "mig_mode_raw": lambda: pynvml.nvmlDeviceGetMigMode(h),
        "compute_mode": lambda: pynvml.nvmlDeviceGetComputeMode(h),
    }.items():
        try:
            out[key] = fn()
        except Exception as exc:
            out[key] = f"error: {exc!r}"
    return out


@section("sharing")
def _sharing():
    from edgegym.real.sharing import detect, mps_daemon

    s = detect(0)
    return {
        "detect(0)": dataclasses.asdict(s),
        "notes": s.notes(),
        "mps_daemon()": mps_daemon(),
        "detect(None)": dataclasses.asdict(detect(None)),
    }


@section("energy_meter")
def _energy():
    import torch

    from edgegym.real.energy import EnergyMeter

    counter = EnergyMeter(0)
    sampling = EnergyMeter(0, sample_interval_s=0.02)
    sampling.method = "sampling"  # the fallback, forced, beside the counter
    out = {"method": counter.method, "message": counter.message}
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    torch.cuda.synchronize()
    for label, load in (("idle_2s", False), ("bf16_matmul_3s", True)):
        counter.begin(label)
        sampling.begin(label)
        t0 = time.perf_counter()
        n = 0
        while time.perf_counter() - t0 < (3.0 if load else 2.0):
            if load:
                for _ in range(10):
                    a @ a
                torch.cuda.synchronize()
                n += 10
            else:
                time.sleep(0.05)
        mc, ms = counter.end(label), sampling.end(label)
        out[label] = {
            "seconds": round(mc.seconds, 3),
            "counter_j": mc.energy_j,
            "counter_method": mc.method,
            "sampling_j": ms.energy_j,
            "sampling_method": ms.method,
            "mean_power_counter_w": None if mc.energy_j is None else mc.energy_j / mc.seconds,
            "matmuls": n,
        }
    return out


def _real_run(env_id: str, scenario: str, time_scale: float, seed: int = 0):
    import gymnasium as gym

    from edgegym.baselines import DEFAULT_POLICY
    from edgegym.core.registry import ENV_IDS
    from edgegym.real.fidelity import _episode

    policy = DEFAULT_POLICY[ENV_IDS[env_id][1]]
    t0 = time.perf_counter()
    sim_windows, _ = _episode(gym.make(env_id, scenario=scenario).unwrapped, policy, seed)
    t_sim = time.perf_counter() - t0
    env = gym.make(
        env_id,
        scenario=scenario,
        backend="real",
        device=os.environ.get("CHECK_DEVICE", "cuda"),
        time_scale=time_scale,
    ).unwrapped
    t0 = time.perf_counter()
    real_windows, log = _episode(env, policy, seed)
    t_real = time.perf_counter() - t0
    ex = env.executor
    segs = [r for r in log if r["event"] == "segment"]
    per_window = _per_window(segs)
    lat = [ms for r in segs for ms in r["infer_latency_ms"] if ms is not None]
    finished = [j for r in segs for j in r["finished"]]
    extra = _latency_vs_profile(segs)
    return {
        "env_id": env_id,
        "policy": policy,
        "time_scale": time_scale,
        "seconds_sim": round(t_sim, 2),
        "seconds_real": round(t_real, 2),
        "energy_available": ex.meter.available,
        "energy_method": ex.meter.method,
        "energy_message": ex.meter.message,
        "emulated": ex.emulated,
        "sharing": dataclasses.asdict(ex.device_sharing),
        "sim_windows": sim_windows,
        "real_windows": real_windows,
        "per_window": per_window,
        "infer_latency_ms": {
            "n": len(lat),
            "median": float(np.median(lat)) if lat else None,
            "min": float(np.min(lat)) if lat else None,
            "max": float(np.max(lat)) if lat else None,
        },
        "finished_jobs": finished,
        "window_starts": [r for r in log if r["event"] == "window"],
        **extra,
    }


def _per_window(segs: list[dict]) -> dict:
    """Per window of a real run: segments, measured energy, wall, work, busy, scenario and
    overrun seconds, the energy methods used and the mean power."""
    per_window = {}
    for r in segs:
        w = per_window.setdefault(
            r["window"],
            {
                "segments": 0,
                "measured_j": 0.0,
                "wall_s": 0.0,
                "work_s": 0.0,
                "busy_s": 0.0,
                "scenario_s": 0.0,
                "overrun_s": 0.0,
                "methods": set(),
            },
        )
        w["segments"] += 1
        w["measured_j"] += r["measured_j"] or 0.0
        w["wall_s"] += r["wall_s"]
        w["work_s"] += r["work_s"]
        w["busy_s"] += float(np.sum(r["busy_s"]))
        w["scenario_s"] += r["duration_s"]
        w["overrun_s"] += r["overrun_s"] or 0.0
        w["methods"].add(r["energy_method"])
    for w in per_window.values():
        w["methods"] = sorted(map(str, w["methods"]))
        w["mean_power_w"] = w["measured_j"] / w["wall_s"] if w["wall_s"] else None
        for k in ("measured_j", "wall_s", "work_s", "busy_s", "overrun_s", "mean_power_w"):
            if w[k] is not None:
                w[k] = round(w[k], 4)
    return per_window


def _latency_vs_profile(segs: list[dict]) -> dict:
    """Where the segments carry the profile's latencies (the MIG family): those latencies and
    the share of measured latencies within the SLO."""
    extra = {}
    if segs and "profile_latency_ms" in segs[0]:
        extra["profile_latency_ms"] = sorted(
            {ms for r in segs for ms in r["profile_latency_ms"] if ms is not None}
        )
        extra["within_slo"] = [x for r in segs for x in r["latency_within_slo"] if x is not None]
        extra["within_slo_share"] = (
            float(np.mean(extra["within_slo"])) if extra["within_slo"] else None
        )
        del extra["within_slo"]
    return extra


@section("real_continual_tiny")
def _cont():
    from edgegym.real import TINY_SCENARIO

    return _real_run("edgegym/ContinualLearning-v0", TINY_SCENARIO, 20.0)


@section("real_mig_tiny")
def _mig():
    from edgegym.real import TINY_MIG_SCENARIO

    return _real_run("edgegym/MIGReconfig-v0", TINY_MIG_SCENARIO, 20.0)


save()
print("done", flush=True)

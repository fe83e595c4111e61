"""The real executor: runs the engine's allocations as actual PyTorch work on a device.

:class:`RealExecutor` implements the engine's executor interface
(:class:`edgegym.core.executor.Executor`) for the continual-learning family. The engine keeps
its rules and its clock; the executor makes what happens in each stretch real:

* **Models and data.** Every stream deploys a compact network (:mod:`edgegym.real.models`)
  pretrained on the clean base data of its :class:`~edgegym.real.data.DigitStream`; window k
  of the scenario is window k of the stream (drifted digits or new classes).
* **Accuracy.** At every window start and every model swap the deployed model's accuracy is
  measured on the window's held-out samples (ground-truth labels stand in for the golden
  model); the environment writes it into the engine's state in place of the profile's drift
  (:meth:`deployed_accuracy`). Delivered inference accuracy then follows the scenario's
  inference configurations exactly as in the simulator (frame sampling factor, share needed).
* **Retraining.** A job is real SGD under its configuration (:mod:`edgegym.real.retrain`).
  Its length in scenario time still comes from the profile's GPU-seconds and the share (the
  scheduler's view); its epochs run as the job progresses, and when the engine finishes the
  job the model's measured held-out accuracy becomes the job's result (``job_target``).
* **Inference.** In each stretch a stream with an inference share runs its deployed model on
  the window's held-out samples, as many as its share serves (``share / share needed``), and
  the forward latency is measured.
* **Shares** are emulated: the device runs the stretch's work of all streams one after another
  (time-slicing), each stream's work scaled by its share. MIG instances and MPS thread
  percentages are not applied, and neither are clocks or power limits (never changed here);
  :attr:`emulated` lists what was requested but emulated, and what the GPU offers that the run
  leaves unused (existing MIG instances, an MPS daemon: :mod:`edgegym.real.sharing`).
* **Time scale.** With ``time_scale = s`` a stretch of ``d`` scenario seconds takes ``d / s``
  seconds of wall time: the executor sleeps for what its work leaves of that, and reports an
  overrun where the work took longer. ``time_scale=None`` runs as fast as the work allows.
* **Energy** per stretch from :class:`edgegym.real.energy.EnergyMeter` (NVML); attributed to
  streams by their measured busy device time. The segment's energy is on the simulator's time
  base: the measured mean power times the stretch's scenario seconds (``scenario_j``; the
  joules of the wall time are ``measured_j`` in the log). Where energy is unavailable (CPU, no
  NVML) the segment keeps the simulator's modelled energy and the log says ``measured_j:
  None``.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch

from edgegym.core.state import Allocation, ClusterState, Segment, TenantState
from edgegym.real.data import DigitStream, Window
from edgegym.real.energy import EnergyMeter, attribute
from edgegym.real.models import architecture_for
from edgegym.real.retrain import RetrainJob, evaluate, pretrained
from edgegym.real.sharing import detect as detect_sharing
from edgegym.workload.continual import RetrainConfig

#: Default options of the real backend (``real_options=`` of the environment).
DEFAULT_OPTIONS: dict[str, Any] = {
    "kind": "drift",  # DigitStream kind: "drift", "nc" or "mixed"
    "n_train": 256,  # train samples per window
    "n_test": 200,  # held-out samples per window
    "severity": 0.8,  # corruption severity of drift windows
    "width": 8,  # base channels of the networks
    "infer_batch": 32,  # inference batch size
    "threads": 1,  # torch CPU threads while the executor works (restored after)
}


def check_device(device: str) -> str:
    """Validate a torch device for the real backend; a clear error when CUDA is missing."""
    if device == "cpu":
        return device
    if device.startswith("cuda"):
        if not torch.cuda.is_available():
            raise RuntimeError(
                f"device={device!r} was requested but torch sees no CUDA GPU "
                f"(torch {torch.__version__}, CUDA build: {torch.version.cuda}); "
                "use device='cpu' to run the real backend on the CPU"
            )
        return device
    raise ValueError(f"device={device!r}; expected 'cpu' or 'cuda[:N]'")


def _option_problem(value: Any, default: Any) -> str | None:
    """Why ``value`` cannot replace an option whose default is ``default``, or None: a flag
    takes true or false, a count an integer, a number a finite number, a name a string (an
    option whose default is None takes anything its executor reads)."""
    if isinstance(default, bool):
        return None if isinstance(value, bool) else "must be true or false"
    if isinstance(default, int):
        ok = isinstance(value, int) and not isinstance(value, bool)
        return None if ok else "must be an integer"
    if isinstance(default, float):
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        return None if ok and math.isfinite(value) else "must be a finite number"
    if isinstance(default, str):
        return None if isinstance(value, str) else "must be a string"
    return None


def merge_options(options: Mapping[str, Any] | None, defaults: Mapping[str, Any]) -> dict[str, Any]:
    """A real executor's options: ``defaults`` overridden by ``options`` (``real_options=`` of
    the environment); a misspelt key, or a value of another type than its default's
    (``epochs: abc``), is an error naming it, never silently ignored."""
    unknown = set(options or {}) - set(defaults)
    if unknown:
        raise ValueError(
            f"real_options: unknown key(s) {sorted(unknown)}; allowed: {sorted(defaults)}"
        )
    for key, value in (options or {}).items():
        problem = _option_problem(value, defaults[key])
        if problem:
            text = repr(value)
            text = text if len(text) <= 40 else f"{text[:37]}..."
            raise ValueError(f"real_options: {key} {problem}, got {text}")
    return {**defaults, **(options or {})}


def gpu_index(device: str) -> int | None:
    """NVML index of a torch device (``None`` for the CPU)."""
    if not device.startswith("cuda"):
        return None
    return int(device.split(":")[1]) if ":" in device else 0


@contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Torch's CPU threads set to ``n`` while the executor works, restored afterwards (the
    user's own setting is not changed for good)."""
    before = torch.get_num_threads()
    torch.set_num_threads(int(n))
    try:
        yield
    finally:
        torch.set_num_threads(before)


class RealReport:
    """``info["real"]`` of a step, the same keys in every family's real executor: it reads the
    executor's ``device``, ``time_scale``, ``emulated``, ``meter`` and ``log``."""

    device: str
    time_scale: float | None
    emulated: list[str]
    meter: EnergyMeter
    log: list[dict[str, Any]]

    def drain_log(self) -> list[dict[str, Any]]:
        """The records logged since the last call."""
        out, self.log = self.log, []
        return out

    def report(self) -> dict[str, Any]:
        """Device, pacing, what was emulated, energy, and the records since the last step."""
        return {
            "device": self.device,
            "time_scale": self.time_scale,
            "emulated": list(self.emulated),
            "energy_available": self.meter.available,
            "energy_message": self.meter.message,
            "log": self.drain_log(),
        }


class RealWork(RealReport):
    """What the real executors of every family share (see the module docstring).

    The models, the data streams, the energy meter, the pacing, the log and the real
    retraining slices; a family's executor adds its inference slice and forwards the rest of
    the executor protocol to the simulated executor it wraps.

    Args:
        sim: The simulated executor of the same scenario (progress rates and everything the
            real run does not measure).
        retrain_configs: The scenario's retraining configurations.
        n_windows: Retraining windows of the episode.
        model_names: The scenario's model per tenant (mapped onto compact architectures).
        device: ``"cpu"`` or ``"cuda[:N]"``.
        time_scale: Scenario seconds per wall second (``None``: no pacing).
        seed: Seed of the data split, corruptions, initial weights and batch order.
        requested: Descriptions of what the scenario requests that this run emulates.
        options: Overrides of the family's :attr:`defaults`.
    """

    #: Options of this executor (``real_options=`` of the environment) and their defaults.
    defaults: dict[str, Any] = DEFAULT_OPTIONS
    #: How the run emulates the scenario's GPU sharing (listed first in :attr:`emulated`).
    sharing = (
        "GPU shares: emulated by time-slicing one device ({device}); each stream's work is "
        "scaled by its share"
    )

    def __init__(
        self,
        sim: Any,
        retrain_configs: tuple[RetrainConfig, ...],
        n_windows: int,
        model_names: list[str],
        device: str = "cpu",
        time_scale: float | None = None,
        seed: int = 0,
        requested: list[str] | None = None,
        options: dict[str, Any] | None = None,
    ) -> None:
        self.opts = merge_options(options, self.defaults)
        self.sim = sim
        self.configs = retrain_configs
        self.device = check_device(device)
        self.time_scale = time_scale if time_scale and time_scale > 0 else None
        self.seed = int(seed)
        self.archs = [architecture_for(name) for name in model_names]
        n = len(model_names)
        self.streams = [
            DigitStream(
                windows=n_windows,
                kind=self.opts["kind"],
                n_train=int(self.opts["n_train"]),
                n_test=int(self.opts["n_test"]),
                severity=float(self.opts["severity"]),
                stream=v,
                seed=self.seed,
            )
            for v in range(n)
        ]
        with torch_threads(self.opts["threads"]):
            self.models = [
                pretrained(arch, s, int(self.opts["width"]), self.device)
                for arch, s in zip(self.archs, self.streams, strict=True)
            ]
        self.jobs: list[RetrainJob | None] = [None] * n
        self.windows: list[Window | None] = [None] * n
        self.acc = np.zeros(n)  # measured accuracy of the deployed models on the window
        index = gpu_index(self.device)
        self.meter = EnergyMeter(index)
        self.device_sharing = detect_sharing(index)
        self.emulated = [
            self.sharing.format(device=self.device),
            *self.device_sharing.notes(),
            *(requested or []),
        ]
        self.log: list[dict[str, Any]] = []
        self.window = -1

    # ------------------------------------------------------------ helpers
    def _measure(self, v: int) -> float:
        w = self.windows[v]
        return evaluate(self.models[v], w.x_test, w.y_test, self.device)[0]

    def deployed_accuracy(self) -> np.ndarray:
        """(V,) measured held-out accuracy of the deployed models on the current window."""
        return self.acc.copy()

    def report(self) -> dict[str, Any]:
        """:meth:`RealReport.report` and the device's sharing (MIG, MPS) as detected."""
        return {**super().report(), "sharing": dataclasses.asdict(self.device_sharing)}

    # ---------------------------------------------------- executor protocol
    def start_window(self, k: int) -> None:
        """Switch every stream to window ``k``'s data and measure the deployed models on it."""
        self.sim.start_window(k)
        self.window = k
        self.jobs = [None] * len(self.jobs)  # unfinished jobs are dropped by the engine
        with torch_threads(self.opts["threads"]):
            for v, stream in enumerate(self.streams):
                self.windows[v] = stream.window(min(k, stream.windows - 1))
                self.acc[v] = self._measure(v)
        w0 = self.windows[0]
        self.log.append(
            {
                "event": "window",
                "window": k,
                "measured_accuracy": self.acc.round(4).tolist(),
                "corruption": [w.corruption for w in self.windows],
                "classes": [len(w.classes) for w in self.windows],
                "n_test": len(w0.y_test),
            }
        )

    def retrain_speed(self, alloc: Allocation) -> np.ndarray:
        """(V,) work rate of each retraining job (the simulator's share model)."""
        return self.sim.retrain_speed(alloc)

    def run(
        self, cluster: ClusterState, tenants: TenantState, alloc: Allocation, duration_s: float
    ) -> Segment:
        """Run the stretch's work for real, paced to ``duration_s / time_scale`` wall seconds."""
        seg = self.sim.run(cluster, tenants, alloc, duration_s)
        n = len(self.models)
        busy = np.zeros(n)
        latency_ms = [None] * n
        finished = []
        self.meter.begin("segment")
        t0 = time.perf_counter()
        with torch_threads(self.opts["threads"]):
            for v in range(n):
                busy[v] += self._retrain_slice(v, tenants, alloc, seg, finished)
                lat, sec = self._infer_slice(v, alloc, seg)
                latency_ms[v], busy[v] = lat, busy[v] + sec
        work_s = time.perf_counter() - t0
        wall_target = duration_s / self.time_scale if self.time_scale else 0.0
        if wall_target > work_s:
            time.sleep(wall_target - work_s)
        m = self.meter.end("segment")
        per_tenant = attribute(m.energy_j, busy)
        scenario_j = None
        if m.energy_j is not None:
            # The measured mean power over the stretch's scenario seconds: the simulator's
            # time base (the raw joules of the wall time stay in the log).
            to_scenario = duration_s / m.seconds if m.seconds > 0 else 0.0
            scenario_j = m.energy_j * to_scenario
            seg.energy_j = scenario_j
            seg.tenant_energy_j = None if per_tenant is None else per_tenant * to_scenario
        self.log.append(
            {
                "event": "segment",
                "window": self.window,
                "duration_s": float(duration_s),
                "wall_s": round(m.seconds, 4),
                "work_s": round(work_s, 4),
                "overrun_s": round(max(0.0, work_s - wall_target), 4) if self.time_scale else None,
                "busy_s": busy.round(4).tolist(),
                "infer_latency_ms": latency_ms,
                "measured_j": m.energy_j,
                "mean_w": None if m.energy_j is None or m.seconds <= 0 else m.energy_j / m.seconds,
                "scenario_j": scenario_j,
                "energy_method": m.method,
                "energy_message": m.message,
                "tenant_energy_j": None if per_tenant is None else per_tenant.tolist(),
                "finished": finished,
            }
        )
        return seg

    # ------------------------------------------------------------- slices
    def _infer_slice(self, v: int, alloc: Allocation, seg: Segment) -> tuple[float | None, float]:
        """Run tenant ``v``'s inference of the stretch: (ms per batch or None, busy seconds)."""
        raise NotImplementedError

    def _retrain_slice(
        self,
        v: int,
        tenants: TenantState,
        alloc: Allocation,
        seg: Segment,
        finished: list[dict[str, Any]],
    ) -> float:
        cfg_idx = int(alloc.retrain_cfg[v])
        if cfg_idx < 0 or tenants.job_total[v] <= 0:
            return 0.0
        cfg = self.configs[cfg_idx]
        job = self.jobs[v]
        if job is None or job.config is not cfg:
            job = RetrainJob(
                copy.deepcopy(self.models[v]),
                self.windows[v],
                cfg,
                seed=self.seed * 1000 + self.window * 10 + v,
                device=self.device,
            )
            self.jobs[v] = job
        total, left = tenants.job_total[v], tenants.job_left[v]
        completes = seg.work_done[v] >= left - 1e-9 * max(total, 1.0)
        progress = 1.0 if completes else (total - left + seg.work_done[v]) / total
        due = cfg.epochs if completes else math.floor(progress * cfg.epochs + 1e-9)
        before = job.seconds
        job.run_epochs(due - job.epochs_done)
        spent = job.seconds - before
        if completes:
            acc = job.curve[-1] if job.curve else job.accuracy()
            tenants.job_target[v] = acc  # the engine swaps the model in with this accuracy
            self.models[v] = job.model
            self.acc[v] = acc
            self.jobs[v] = None
            finished.append(
                {
                    "stream": v,
                    "config": cfg.name,
                    "config_index": cfg_idx,
                    "epochs": cfg.epochs,
                    "train_s": round(job.seconds, 4),
                    "accuracy_curve": [round(a, 4) for a in job.curve],
                    "accuracy": acc,
                }
            )
        return spent


class RealExecutor(RealWork):
    """The continual-learning family's real executor (``edgegym/ContinualLearning-v0``)."""

    @property
    def infer_share(self) -> np.ndarray:
        """(V, L) share each inference configuration needs now (the simulator's)."""
        return self.sim.infer_share

    def inference_accuracy(self, tenants: TenantState, alloc: Allocation) -> np.ndarray:
        """(V,) delivered accuracy (measured model accuracy, simulator's configuration model)."""
        return self.sim.inference_accuracy(tenants, alloc)

    def _infer_slice(self, v: int, alloc: Allocation, seg: Segment) -> tuple[float | None, float]:
        share = float(alloc.share_infer[v])
        if share <= 0 or seg.duration_s <= 0:
            return None, 0.0
        needed = float(self.infer_share[v, alloc.infer_cfg[v]])
        w = self.windows[v]
        frac = min(1.0, share / needed) if needed > 0 else 1.0
        bs = int(self.opts["infer_batch"])
        count = max(1, round(frac * len(w.y_test)))
        x = w.x_test[:count]
        _, seconds = evaluate(self.models[v], x, w.y_test[:count], self.device, bs)
        batches = max(1, math.ceil(count / bs))
        return round(1000.0 * seconds / batches, 4), seconds

"""The energy family for real: the tenants' models time-sliced on one device, in the simulator's
CFS order, with the device's energy where NVML reads it.

Each quantum the simulator's :class:`~edgegym.families.energy.timeslice.TimeSliceExecutor`
decides who runs, in which order and for how long (ETF §5's CFS order and virtual runtimes, so
the schedule a policy sees is the simulator's); :class:`RealTimeSliceExecutor` then runs each
tenant's compact stand-in network (:mod:`edgegym.real.models`, ResNet- or MobileNet-style by
the scenario's model name) for its slice: inference batches back to back until the slice's
wall time (``slice / time_scale``) is over. What it reports per quantum:

* **requests**: the requests the device served in the slice, scaled to the slice's scenario
  length (``served / wall * slice``), and by the DVFS model's speed at the tenant's clock
  against the top clock: by default clocks are never changed (the run stays at the device's
  clock and says so in ``emulated``); with ``allow_clock_changes`` on a GPU each slice runs
  with the graphics clock locked at the tenant's clock (:class:`~edgegym.real.clocks.ClockLock`:
  the same fraction of the top clock, nearest supported) and what it served is measured;
* **energy**: NVML's energy of each slice (counter, or power sampling: one window per slice,
  so each tenant's own power is measured), on the scenario's time base (the slice's measured
  mean power times its length in scenario seconds, as docs/real-gpu.md's time base reads);
  without NVML (the CPU, a GPU with neither counter nor sampling) the DVFS model's energy, and
  ``emulated`` says so;
* **time, order, latency, idle**: the simulator's (the schedule is the simulator's).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from edgegym.real.clocks import ClockLock
from edgegym.real.energy import EnergyMeter
from edgegym.real.executor import RealReport, gpu_index, merge_options, torch_threads
from edgegym.real.retrain import sync

if TYPE_CHECKING:  # the family sits a floor above the real executors: imported when run
    from edgegym.families.energy.timeslice import QuantumResult, TimeSliceExecutor

#: Real-backend options of the energy family (``real_options``): the stand-in networks' width,
#: the inference batch (the scenario's tenant batch where ``None``), whether the tenants'
#: clocks may be set on the GPU (off: the device's clocks are never changed) and torch's CPU
#: threads while a quantum runs (1, as in the other families: on a 2-core machine one thread
#: served 15-18 thousand requests in an episode where torch's default pool served 13 thousand).
DEFAULT_OPTIONS: dict[str, Any] = {
    "width": 8,
    "batch": None,
    "allow_clock_changes": False,
    "threads": 1,
}


class RealTimeSliceExecutor(RealReport):
    """One episode's quanta on a real device (the energy family's executor seam).

    Args:
        sim: The simulator's executor of this episode (its schedule is followed).
        models: Each tenant slot's model name (the stand-in's architecture by name).
        batch: Each slot's inference batch.
        top_service: (n,) seconds per request of each slot at the top clock (the DVFS model's
            speed at a tenant's clock against the top is ``top_service / service``).
        device: ``"cpu"`` or ``"cuda[:N]"``.
        time_scale: Scenario seconds per wall second (``None``: 1).
        seed: Seed of the stand-ins' weights and inputs.
        requested: What the scenario asks that is not applied (clocks), for ``emulated``.
        options: :data:`DEFAULT_OPTIONS` overrides.
        clocks: Each slot's clock schedule ``[(at_s, MHz), ...]`` (for ``allow_clock_changes``).
        max_clock_mhz: The scenario GPU's top clock (a clock locks at its fraction of it).
    """

    def __init__(
        self,
        sim: TimeSliceExecutor,
        models: Sequence[str],
        batch: Sequence[int],
        top_service: np.ndarray,
        device: str = "cpu",
        time_scale: float | None = None,
        seed: int = 0,
        requested: Sequence[str] = (),
        options: dict[str, Any] | None = None,
        clocks: Sequence[Sequence[tuple[float, float]]] = (),
        max_clock_mhz: float = 0.0,
    ) -> None:
        import torch

        from edgegym.real import models as nets

        self.opts = merge_options(options, DEFAULT_OPTIONS)
        self.sim = sim
        self.device = device
        self.time_scale = time_scale
        self.top_service = np.asarray(top_service, dtype=float)
        gen = torch.Generator().manual_seed(seed)
        self.models, self.inputs = [], []
        for k, name in enumerate(models):
            b = int(self.opts["batch"] or batch[k])
            net = nets.build(
                nets.architecture_for(name), width=int(self.opts["width"]), seed=seed + k
            )
            self.models.append(net.to(device).eval())
            self.inputs.append(torch.rand(b, 1, 8, 8, generator=gen).to(device))
        index = gpu_index(device)
        self.meter = EnergyMeter(index)
        self.clocks, self.max_clock_mhz = [list(c) for c in clocks], float(max_clock_mhz)
        self.requested = list(requested)
        allowed = bool(self.opts["allow_clock_changes"]) and bool(self.clocks)
        self.clock = ClockLock(index, allowed and self.max_clock_mhz > 0)
        self.emulated = [f"tenants time-sliced on one {device} device in the simulator's CFS order"]
        if self.clock.available:
            self.emulated.append(
                "clocks: locked per slice at each tenant's fraction of the top clock "
                "(nearest supported; reset after every quantum)"
            )
        else:
            self.emulated.extend(requested)
            if self.opts["allow_clock_changes"]:
                self.emulated.append(f"clocks: {self.clock.message}")
        if not self.meter.available:
            self.emulated.append(f"energy: {self.meter.message}; the DVFS model's energy")
        self.log: list[dict[str, Any]] = []

    def _lock_clock(self, k: int, t: float) -> float | None:
        """Lock slot k's clock at time ``t`` where allowed and possible: the MHz locked."""
        if not self.clock.available or k >= len(self.clocks):
            return None
        from edgegym.families.energy.params import clock_at

        mhz = self.clock.lock(clock_at(self.clocks[k], t) / self.max_clock_mhz)
        if mhz is None:  # refused: the rest of the run is emulated, and the report says so
            self.emulated = [e for e in self.emulated if not e.startswith("clocks: locked")]
            self.emulated += [*self.requested, f"clocks: {self.clock.message}"]
        return mhz

    # The dynamics read the scheduler's state from the executor after every quantum.
    @property
    def vruntime(self) -> np.ndarray:
        return self.sim.vruntime

    @property
    def served_until(self) -> np.ndarray:
        return self.sim.served_until

    def _infer_for(self, k: int, wall_s: float) -> tuple[int, float]:
        """Run slot k's inference batches back to back for ``wall_s`` seconds: requests served
        and the seconds it took (at least one batch)."""
        import torch

        model, x = self.models[k], self.inputs[k]
        served, t0 = 0, time.perf_counter()
        with torch.no_grad():
            while True:
                model(x)
                served += x.shape[0]
                sync(self.device)
                if time.perf_counter() - t0 >= wall_s:
                    return served, time.perf_counter() - t0

    def run(
        self,
        units: np.ndarray,
        power_w: np.ndarray,
        service_s: np.ndarray,
        work_s: np.ndarray,
        quantum_s: float,
    ) -> QuantumResult:
        """One quantum: the simulator's schedule, run for real (see the module docstring)."""
        from edgegym.families.energy.timeslice import QuantumResult

        q = self.sim.run(units, power_w, service_s, work_s, quantum_s)
        scale = float(self.time_scale or 1.0)
        requests = np.zeros_like(q.requests)
        energy = q.energy_j.copy()  # the DVFS model's, where NVML measures nothing
        busy = np.zeros_like(q.time_s)
        measured_j, method = 0.0, None
        locked: list[float | None] = [None] * len(q.time_s)
        try:
            with torch_threads(self.opts["threads"]):
                for k in q.order:
                    if q.time_s[k] <= 0:
                        continue
                    locked[k] = self._lock_clock(int(k), (self.sim.quanta - 1) * quantum_s)
                    self.meter.begin("slice")
                    served, busy[k] = self._infer_for(int(k), float(q.time_s[k]) / scale)
                    m = self.meter.end("slice")
                    # At a locked clock the device ran at the tenant's speed; otherwise the DVFS
                    # model scales what the device served at its own clock.
                    model = service_s[k] > 0 and locked[k] is None
                    speed = self.top_service[k] / service_s[k] if model else 1.0
                    requests[k] = served / busy[k] * q.time_s[k] * speed
                    if m.energy_j is not None:  # the slice's mean power, over its scenario seconds
                        energy[k] = m.energy_j / m.seconds * q.time_s[k]
                        measured_j, method = measured_j + m.energy_j, m.method
        finally:
            self.clock.reset()
        entry: dict[str, Any] = {
            "quantum": self.sim.quanta - 1,
            "wall_s": float(busy.sum()),
            "requests": requests.tolist(),
            "measured_j": measured_j if method else None,
            "energy_method": method,
        }
        if any(c is not None for c in locked):
            entry["locked_mhz"] = locked
        self.log.append(entry)
        return QuantumResult(
            time_s=q.time_s,
            energy_j=energy,
            requests=requests,
            latency_s=q.latency_s,
            order=q.order,
            idle_j=q.idle_j,
            offset_s=q.offset_s,
        )


__all__ = ["DEFAULT_OPTIONS", "RealTimeSliceExecutor"]

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
  against the top clock (clocks are never changed: the run stays at the device's clock and
  says so in ``emulated``);
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

from edgegym.real.energy import EnergyMeter
from edgegym.real.executor import RealReport

if TYPE_CHECKING:  # the family sits a floor above the real executors: imported when run
    from edgegym.families.energy.timeslice import QuantumResult, TimeSliceExecutor

#: Real-backend options of the energy family (``real_options``): the stand-in networks' width
#: and the inference batch (the scenario's tenant batch where ``None``).
DEFAULT_OPTIONS: dict[str, Any] = {"width": 8, "batch": None}


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
    ) -> None:
        import torch

        from edgegym.real import models as nets

        unknown = set(options or {}) - set(DEFAULT_OPTIONS)
        if unknown:
            raise ValueError(
                f"real_options: unknown key(s) {sorted(unknown)}; "
                f"allowed: {sorted(DEFAULT_OPTIONS)}"
            )
        self.opts = {**DEFAULT_OPTIONS, **(options or {})}
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
        gpu_index = None
        if device.startswith("cuda"):
            gpu_index = int(device.split(":")[1]) if ":" in device else 0
        self.meter = EnergyMeter(gpu_index)
        self.emulated = [
            f"tenants time-sliced on one {device} device in the simulator's CFS order",
            *requested,
        ]
        if not self.meter.available:
            self.emulated.append(f"energy: {self.meter.message}; the DVFS model's energy")
        self.log: list[dict[str, Any]] = []

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
                if self.device.startswith("cuda"):
                    torch.cuda.synchronize()
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
        for k in q.order:
            if q.time_s[k] <= 0:
                continue
            self.meter.begin("slice")
            served, busy[k] = self._infer_for(int(k), float(q.time_s[k]) / scale)
            m = self.meter.end("slice")
            speed = self.top_service[k] / service_s[k] if service_s[k] > 0 else 1.0
            requests[k] = served / busy[k] * q.time_s[k] * speed
            if m.energy_j is not None:  # the slice's mean power, over its scenario seconds
                energy[k] = m.energy_j / m.seconds * q.time_s[k]
                measured_j, method = measured_j + m.energy_j, m.method
        self.log.append(
            {
                "quantum": self.sim.quanta - 1,
                "wall_s": float(busy.sum()),
                "requests": requests.tolist(),
                "measured_j": measured_j if method else None,
                "energy_method": method,
            }
        )
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

"""GPU energy from NVML over begin/end windows (like Zeus's ``begin_window``/``end_window``).

:class:`EnergyMeter` picks the best source the device offers:

1. ``"counter"``: NVML's total-energy counter (``nvmlDeviceGetTotalEnergyConsumption``,
   millijoules since the driver loaded; Volta and newer). A window's energy is the difference
   of the counter at its end and its start.
2. ``"sampling"``: where the counter is missing, a background thread samples the power draw
   (``nvmlDeviceGetPowerUsage``, milliwatts) every ``sample_interval_s`` and the window's
   energy is the trapezoidal integral of the samples over the window.
3. unavailable: no NVML library, no GPU, or NVML failing. The run goes on; every window
   reports ``energy_j=None`` and the reason in ``message``.

Per-task attribution (:func:`attribute`): NVML measures a whole GPU, not a MIG slice or an MPS
client, so a window's energy is split among the tasks in proportion to the device time each
task kept the GPU busy (its measured compute seconds); with no busy time it is split evenly.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Measurement:
    """Energy of one window."""

    name: str
    seconds: float  # wall seconds of the window
    energy_j: float | None  # None where energy is unavailable
    method: str | None  # "counter", "sampling" or None
    message: str = ""  # why energy is unavailable, if it is


class _Sampler(threading.Thread):
    def __init__(self, read_mw: Any, interval_s: float) -> None:
        super().__init__(daemon=True)
        self.read_mw, self.interval_s = read_mw, interval_s
        self.samples: list[tuple[float, float]] = []
        self.stop = threading.Event()
        self.error = ""

    def sample(self) -> None:
        try:
            self.samples.append((time.perf_counter(), float(self.read_mw()) / 1000.0))
        except Exception as exc:  # NVML can fail mid-run; report, never crash the run
            self.error = f"power sampling failed: {exc}"
            self.stop.set()

    def run(self) -> None:
        while not self.stop.is_set():
            self.sample()
            self.stop.wait(self.interval_s)

    def energy_j(self) -> float | None:
        if len(self.samples) < 2 or self.error:
            return None
        t, p = np.array(self.samples).T
        return float(np.sum(0.5 * (p[1:] + p[:-1]) * np.diff(t)))


class EnergyMeter:
    """Measures GPU energy over named windows; never raises because NVML is missing or failing.

    Args:
        device_index: NVML index of the GPU (``None``: no GPU, energy unavailable).
        sample_interval_s: Power sampling period of the fallback.
    """

    def __init__(self, device_index: int | None = 0, sample_interval_s: float = 0.05) -> None:
        self.sample_interval_s = sample_interval_s
        self.method: str | None = None
        self.message = ""
        self._nvml: Any = None
        self._handle: Any = None
        self._open: dict[str, tuple[float, Any]] = {}
        if device_index is None:
            self.message = "no GPU: energy unavailable (the run is on the CPU)"
            return
        try:
            import pynvml

            pynvml.nvmlInit()
            self._handle = pynvml.nvmlDeviceGetHandleByIndex(device_index)
            self._nvml = pynvml
        except Exception as exc:
            self.message = f"NVML unavailable ({exc}): energy unavailable"
            return
        try:
            pynvml.nvmlDeviceGetTotalEnergyConsumption(self._handle)
            self.method = "counter"
            return
        except Exception:
            pass
        try:
            pynvml.nvmlDeviceGetPowerUsage(self._handle)
            self.method = "sampling"
            self.message = "no total-energy counter on this GPU: power sampling"
        except Exception as exc:
            self.message = f"NVML reads neither energy nor power ({exc}): energy unavailable"

    @property
    def available(self) -> bool:
        """Energy is measured (by counter or sampling)."""
        return self.method is not None

    def begin(self, name: str) -> None:
        """Open the window ``name``."""
        t0 = time.perf_counter()
        state: Any = None
        if self.method == "counter":
            try:
                state = self._nvml.nvmlDeviceGetTotalEnergyConsumption(self._handle)
            except Exception as exc:
                state = exc
        elif self.method == "sampling":
            state = _Sampler(
                lambda: self._nvml.nvmlDeviceGetPowerUsage(self._handle), self.sample_interval_s
            )
            state.start()
        self._open[name] = (t0, state)

    def end(self, name: str) -> Measurement:
        """Close the window ``name`` and return its energy."""
        t0, state = self._open.pop(name)
        if self.method == "sampling":
            state.stop.set()
            state.join()
            state.sample()  # a sample at the very end
        seconds = time.perf_counter() - t0
        if self.method is None:
            return Measurement(name, seconds, None, None, self.message)
        if self.method == "counter":
            try:
                if isinstance(state, Exception):
                    raise state
                now = self._nvml.nvmlDeviceGetTotalEnergyConsumption(self._handle)
                return Measurement(name, seconds, (now - state) / 1000.0, "counter")
            except Exception as exc:
                return Measurement(name, seconds, None, None, f"energy counter failed: {exc}")
        energy = state.energy_j()
        if energy is None:
            msg = state.error or "too few power samples in the window"
            return Measurement(name, seconds, None, None, msg)
        return Measurement(name, seconds, energy, "sampling", self.message)


def attribute(energy_j: float | None, busy_s: np.ndarray) -> np.ndarray | None:
    """Split a window's energy among tasks by their share of the measured busy device time.

    Args:
        energy_j: The window's energy (``None``: unavailable, returned as ``None``).
        busy_s: (T,) seconds each task kept the device busy in the window.
    """
    if energy_j is None:
        return None
    busy = np.maximum(np.asarray(busy_s, dtype=float), 0.0)
    if busy.sum() <= 0:
        return np.full(busy.shape, energy_j / max(len(busy), 1))
    return energy_j * busy / busy.sum()

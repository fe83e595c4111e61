"""The GPU's graphics clock, locked for a tenant's slice only where the user allows it.

The energy family's tenants each run at their own DVFS clock (ETF §3). By default the real
backend never touches the device's clocks: it runs at the clock the device is at and scales
what it measured by the DVFS model (``info["real"]["emulated"]`` says so). With
``real_options={"allow_clock_changes": True}`` on a GPU, :class:`ClockLock` locks the
graphics clock for each slice through NVML (``nvmlDeviceSetGpuLockedClocks``, which needs
administrator rights on most systems) and resets it (``nvmlDeviceResetGpuLockedClocks``)
after every quantum, so that a run stopped between quanta leaves the device as it found it.

A scenario's clocks belong to its GPU (a TX2's 114-1300 MHz, say), which need not be the
device the run is on, so a clock is mapped by its fraction of the scenario GPU's top clock
onto the device's supported graphics clocks (at the device's highest memory clock): the
nearest supported clock to ``fraction x the device's highest``.

Where locking is not possible (no GPU, NVML missing, no permission, a clock NVML refuses)
the run goes on at the device's clock, emulated as before, and :attr:`ClockLock.message`
says why; a refusal mid-run turns locking off for the rest of the run.
"""

from __future__ import annotations

from typing import Any


class ClockLock:
    """Locks the graphics clock of one GPU on request; never raises for NVML's sake.

    Args:
        gpu_index: NVML index of the GPU (``None``: the run is on the CPU).
        allowed: The user allowed clock changes (``real_options["allow_clock_changes"]``).
    """

    def __init__(self, gpu_index: int | None, allowed: bool) -> None:
        self.message = ""
        self.supported: list[float] = []
        self.locked = False
        self._nvml: Any = None
        self._handle: Any = None
        if not allowed:
            self.message = "clock changes are off (real_options allow_clock_changes)"
            return
        if gpu_index is None:
            self.message = "clock changes allowed, but the run is on the CPU: no clock to set"
            return
        try:
            import pynvml

            pynvml.nvmlInit()
            handle = pynvml.nvmlDeviceGetHandleByIndex(gpu_index)
            memory = max(pynvml.nvmlDeviceGetSupportedMemoryClocks(handle))
            clocks = pynvml.nvmlDeviceGetSupportedGraphicsClocks(handle, memory)
        except Exception as exc:
            self.message = f"clock changes allowed, but NVML cannot list the clocks ({exc})"
            return
        if not clocks:
            self.message = "clock changes allowed, but NVML lists no graphics clocks"
            return
        self.supported = sorted(float(c) for c in clocks)
        self._nvml, self._handle = pynvml, handle

    @property
    def available(self) -> bool:
        """Clocks are locked for the slices."""
        return self._nvml is not None

    def target(self, fraction: float) -> float:
        """The supported clock nearest to ``fraction`` of the device's highest (ties: lower)."""
        want = fraction * self.supported[-1]
        return min(self.supported, key=lambda c: (abs(c - want), c))

    def lock(self, fraction: float) -> float | None:
        """Lock the graphics clock at :meth:`target` of ``fraction``; returns the MHz locked,
        or ``None`` where NVML refused (locking is then off for the rest of the run)."""
        if not self.available:
            return None
        mhz = self.target(fraction)
        try:
            self._nvml.nvmlDeviceSetGpuLockedClocks(self._handle, int(mhz), int(mhz))
        except Exception as exc:
            self.message = f"clock changes allowed, but NVML refused to lock {mhz:.0f} MHz ({exc})"
            self.reset()
            self._nvml = None
            return None
        self.locked = True
        return mhz

    def reset(self) -> None:
        """Give the clock back to the driver (after every quantum, and where locking fails)."""
        if not self.locked:  # locked implies NVML is at hand: a refusal resets before dropping it
            return
        try:
            self._nvml.nvmlDeviceResetGpuLockedClocks(self._handle)
        except Exception as exc:
            self.message = f"{self.message}; resetting the locked clock failed ({exc})".lstrip("; ")
        self.locked = False


__all__ = ["ClockLock"]

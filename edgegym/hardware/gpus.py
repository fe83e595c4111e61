"""GPU catalogue, DVFS clock levels and the power/speed model.

Where the numbers come from:

* SM counts, memory, memory bandwidth, peak FP32 and dense FP16 tensor throughput, boost clock
  and TDP are NVIDIA's public datasheet figures for V100 SXM2 16 GB, A100 SXM4 40 GB, A100
  SXM4 80 GB, H100 SXM5 80 GB and H200 SXM 141 GB. The A10G (AWS G5) has no NVIDIA datasheet;
  its figures are the ones AWS and public comparisons report (80 SMs, 24 GB GDDR6, 600 GB/s,
  ~35 TFLOPS FP32, ~70 TFLOPS FP16 tensor, 1710 MHz, 300 W power limit).
* Jetson TX2: 256-core Pascal GPU (2 SMs), 8 GB memory shared with the CPU, 59.7 GB/s, the 13
  GPU clock levels the board exposes (114.75 ... 1300.5 MHz) and a 15 W module maximum, as in
  the ETF paper (SEC'23, section 5). Pascal on TX2 has no tensor cores; ``peak_fp16_tflops`` is
  the packed-FP16 rate (2x FP32).
* Clock grids of the data-center GPUs are not the drivers' full tables (which step by a few
  MHz) but a coarse ascending grid, roughly every 150 MHz from ~500 MHz up to the boost clock.
* Idle power and the voltage range are modelling assumptions, not datasheet values: idle is a
  typical ``nvidia-smi`` reading of an idle board (the H200's 79 W was read by NVML on an idle
  H200 SXM without a CUDA context, 2026-11-27, docs/real-gpu.md); core voltage ramps from
  ~0.70 V to ~1.05 V on the data-center parts and from 0.60 V to 1.10 V on TX2 (with these
  constants the TX2 model gives a ~8x power ratio between the top and bottom clock at full
  load, the order of the "1-to-7.9" disparity ETF measures).

Power model (:class:`PowerModel`)::

    P(f, u) = P_idle + (P_max - P_idle) * u * (f / f_max) * (V(f) / V_max) ** 2
    V(f)    = V_min + (V_max - V_min) * clip((f - f_min) / (f_max - f_min), 0, 1)

i.e. dynamic power ~ C V^2 f scaled by utilisation ``u`` in [0, 1]. Speed (:func:`speed_factor`)
is throughput relative to the maximum clock; with a memory-bound fraction ``m`` of the work
that does not scale with the core clock: ``1 / ((1 - m) * f_max / f + m)``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["GPUS", "GPUSpec", "PowerModel", "get_gpu", "speed_factor"]


@dataclass(frozen=True)
class GPUSpec:
    """Static description of one GPU model.

    Attributes:
        name: Catalogue key, e.g. ``"A100-40GB"``.
        sms: Streaming multiprocessors.
        memory_gb: Device memory in GB (shared with the CPU when ``unified_memory``).
        peak_fp32_tflops: Peak FP32 (non-tensor) throughput at the boost clock.
        peak_fp16_tflops: Peak dense FP16 tensor throughput at the boost clock.
        clocks_mhz: Available DVFS core-clock levels, ascending; the last one is the maximum.
        idle_power_w: Board power when idle (modelling assumption).
        max_power_w: TDP / board power limit.
        mig_capable: Whether the GPU supports Multi-Instance GPU.
        memory_bandwidth_gbs: Peak memory bandwidth in GB/s.
        mig_gpcs: GPCs available to MIG (7 on A100/H100), 0 when not MIG capable.
        min_voltage_v: Core voltage at the lowest clock level (assumption).
        max_voltage_v: Core voltage at the highest clock level (assumption).
        unified_memory: True when memory is shared with the CPU (Jetson).
    """

    name: str
    sms: int
    memory_gb: float
    peak_fp32_tflops: float
    peak_fp16_tflops: float
    clocks_mhz: tuple[float, ...]
    idle_power_w: float
    max_power_w: float
    mig_capable: bool
    memory_bandwidth_gbs: float
    mig_gpcs: int = 0
    min_voltage_v: float = 0.70
    max_voltage_v: float = 1.05
    unified_memory: bool = False

    def __post_init__(self) -> None:
        clocks = np.asarray(self.clocks_mhz, dtype=float)
        if clocks.ndim != 1 or clocks.size == 0 or np.any(clocks <= 0):
            raise ValueError(f"{self.name}: clocks_mhz must be a non-empty tuple of positive MHz")
        if np.any(np.diff(clocks) <= 0):
            raise ValueError(f"{self.name}: clocks_mhz must be strictly ascending")
        if not 0 <= self.idle_power_w < self.max_power_w:
            raise ValueError(f"{self.name}: need 0 <= idle_power_w < max_power_w")
        if not 0 < self.min_voltage_v <= self.max_voltage_v:
            raise ValueError(f"{self.name}: need 0 < min_voltage_v <= max_voltage_v")
        if self.mig_capable != (self.mig_gpcs > 0):
            raise ValueError(f"{self.name}: mig_gpcs > 0 exactly when mig_capable")

    @property
    def max_clock_mhz(self) -> float:
        """Highest DVFS level (boost clock) in MHz."""
        return self.clocks_mhz[-1]

    def resolve_clock(self, mhz: float) -> float:
        """A scenario's clock: ``0`` means the top level; anything else must lie in the range.

        Raises:
            ValueError: If ``mhz`` is outside ``[min_clock_mhz, max_clock_mhz]``.
        """
        f = float(mhz) or self.max_clock_mhz
        if not self.min_clock_mhz - 1e-6 <= f <= self.max_clock_mhz + 1e-6:
            raise ValueError(
                f"clock_mhz = {mhz} is out of range (allowed: {self.min_clock_mhz} to "
                f"{self.max_clock_mhz} MHz on {self.name}, or 0 for the top clock)"
            )
        return f

    @property
    def min_clock_mhz(self) -> float:
        """Lowest DVFS level in MHz."""
        return self.clocks_mhz[0]

    def clock_array(self) -> NDArray[np.float64]:
        """Clock levels as an array, shape (n_levels,)."""
        return np.asarray(self.clocks_mhz, dtype=np.float64)


_TX2_CLOCKS = (
    114.75, 216.75, 318.75, 420.75, 522.75, 624.75, 726.75,
    828.75, 930.75, 1032.75, 1134.75, 1236.75, 1300.5,
)  # fmt: skip

_H100_CLOCKS = (
    510.0, 660.0, 810.0, 960.0, 1110.0, 1260.0, 1410.0, 1560.0, 1710.0, 1860.0, 1980.0,
)  # fmt: skip

GPUS: dict[str, GPUSpec] = {
    spec.name: spec
    for spec in (
        GPUSpec(
            name="V100-16GB",
            sms=80,
            memory_gb=16.0,
            peak_fp32_tflops=15.7,
            peak_fp16_tflops=125.0,
            clocks_mhz=(510.0, 660.0, 810.0, 960.0, 1110.0, 1260.0, 1410.0, 1530.0),
            idle_power_w=40.0,
            max_power_w=300.0,
            mig_capable=False,
            memory_bandwidth_gbs=900.0,
        ),
        GPUSpec(
            name="A100-40GB",
            sms=108,
            memory_gb=40.0,
            peak_fp32_tflops=19.5,
            peak_fp16_tflops=312.0,
            clocks_mhz=(510.0, 660.0, 810.0, 960.0, 1110.0, 1260.0, 1410.0),
            idle_power_w=55.0,
            max_power_w=400.0,
            mig_capable=True,
            memory_bandwidth_gbs=1555.0,
            mig_gpcs=7,
        ),
        # A100 SXM4 80 GB (the SRS/MRS slides' edge servers): NVIDIA A100 datasheet, 80GB
        # SXM column: 108 SMs, 80 GB HBM2e at 2,039 GB/s, 19.5 TFLOPS FP32, 312 TFLOPS dense
        # FP16 tensor, 1410 MHz boost, 400 W TDP (the PCIe card: 1,935 GB/s, 300 W). Clock grid
        # and idle power as the 40 GB part (same GA100 die). MIG capable on the real card (up to
        # 7 instances, 1g.10gb ... 7g.80gb), but edgegym has no MIG profile table for it
        # (hardware/mig.py), so it is not offered to the MIG family.
        GPUSpec(
            name="A100-80GB",
            sms=108,
            memory_gb=80.0,
            peak_fp32_tflops=19.5,
            peak_fp16_tflops=312.0,
            clocks_mhz=(510.0, 660.0, 810.0, 960.0, 1110.0, 1260.0, 1410.0),
            idle_power_w=55.0,
            max_power_w=400.0,
            mig_capable=False,
            memory_bandwidth_gbs=2039.0,
        ),
        GPUSpec(
            name="H100-80GB",
            sms=132,
            memory_gb=80.0,
            peak_fp32_tflops=67.0,
            peak_fp16_tflops=989.4,
            clocks_mhz=_H100_CLOCKS,
            idle_power_w=70.0,
            max_power_w=700.0,
            mig_capable=True,
            memory_bandwidth_gbs=3350.0,
            mig_gpcs=7,
        ),
        GPUSpec(  # same GH100 die and clocks as the H100 SXM5; HBM3e (H200 datasheet, 2024)
            name="H200-141GB",
            sms=132,
            memory_gb=141.0,
            peak_fp32_tflops=67.0,
            peak_fp16_tflops=989.4,
            clocks_mhz=_H100_CLOCKS,
            idle_power_w=79.0,  # measured: NVML power draw, no CUDA context, H200, 2026-11-27
            max_power_w=700.0,
            mig_capable=True,
            memory_bandwidth_gbs=4800.0,
            mig_gpcs=7,
        ),
        GPUSpec(
            name="A10G",
            sms=80,
            memory_gb=24.0,
            peak_fp32_tflops=35.0,
            peak_fp16_tflops=70.0,
            clocks_mhz=(510.0, 660.0, 810.0, 960.0, 1110.0, 1260.0, 1410.0, 1560.0, 1710.0),
            idle_power_w=25.0,
            max_power_w=300.0,
            mig_capable=False,
            memory_bandwidth_gbs=600.0,
        ),
        GPUSpec(
            name="TX2",
            sms=2,
            memory_gb=8.0,
            peak_fp32_tflops=0.666,
            peak_fp16_tflops=1.332,
            clocks_mhz=_TX2_CLOCKS,
            idle_power_w=1.5,
            max_power_w=15.0,
            mig_capable=False,
            memory_bandwidth_gbs=59.7,
            min_voltage_v=0.60,
            max_voltage_v=1.10,
            unified_memory=True,
        ),
    )
}


def get_gpu(name: str) -> GPUSpec:
    """Look up a GPU in the catalogue.

    Args:
        name: Catalogue key, e.g. ``"A100-40GB"``.

    Returns:
        The :class:`GPUSpec`.

    Raises:
        KeyError: If ``name`` is unknown; the message lists the valid names.
    """
    try:
        return GPUS[name]
    except KeyError:
        raise KeyError(f"unknown GPU {name!r}; valid names: {', '.join(sorted(GPUS))}") from None


def speed_factor(
    clock_mhz: ArrayLike, max_clock_mhz: float, memory_bound: ArrayLike = 0.0
) -> NDArray[np.float64]:
    """Throughput at ``clock_mhz`` relative to the maximum clock.

    ``speed = 1 / ((1 - m) * f_max / f + m)``: the compute-bound part ``1 - m`` of the work
    stretches with ``f_max / f``, the memory-bound part ``m`` does not. ``m = 0`` gives
    ``f / f_max``; ``m = 1`` gives 1 at every clock.

    Args:
        clock_mhz: Core clock(s), any shape, each in (0, max_clock_mhz].
        max_clock_mhz: The clock at which speed is 1.
        memory_bound: Memory-bound fraction(s) in [0, 1], broadcast against ``clock_mhz``.

    Returns:
        Speed factors in (0, 1], broadcast shape of the inputs.

    Raises:
        ValueError: On a clock outside (0, max_clock_mhz] or ``memory_bound`` outside [0, 1].
    """
    f = np.asarray(clock_mhz, dtype=np.float64)
    m = np.asarray(memory_bound, dtype=np.float64)
    if np.any(f <= 0) or np.any(f > max_clock_mhz * (1 + 1e-9)):
        raise ValueError(f"clock_mhz must lie in (0, {max_clock_mhz}]")
    if np.any(m < 0) or np.any(m > 1):
        raise ValueError("memory_bound must lie in [0, 1]")
    return 1.0 / ((1.0 - m) * (max_clock_mhz / f) + m)


@dataclass(frozen=True)
class PowerModel:
    """DVFS power model ``P = idle + (max - idle) * u * (f / f_max) * (V(f) / V_max)^2``.

    ``V(f)`` ramps linearly from ``min_voltage_v`` at ``min_clock_mhz`` to ``max_voltage_v`` at
    ``max_clock_mhz`` (clamped below ``min_clock_mhz``). At ``u = 0`` power is ``idle_power_w``
    at every clock; at ``u = 1`` and ``f = f_max`` it is ``max_power_w``.

    Attributes:
        idle_power_w: Power at zero utilisation.
        max_power_w: Power at full utilisation and the maximum clock.
        min_clock_mhz: Lowest DVFS level (voltage floor).
        max_clock_mhz: Highest DVFS level.
        min_voltage_v: Voltage at ``min_clock_mhz``.
        max_voltage_v: Voltage at ``max_clock_mhz``.
    """

    idle_power_w: float
    max_power_w: float
    min_clock_mhz: float
    max_clock_mhz: float
    min_voltage_v: float
    max_voltage_v: float

    @classmethod
    def from_spec(cls, spec: GPUSpec) -> PowerModel:
        """Build the model from a catalogue entry.

        Args:
            spec: The GPU.

        Returns:
            The power model with the spec's idle/max power, clock range and voltage range.
        """
        return cls(
            idle_power_w=spec.idle_power_w,
            max_power_w=spec.max_power_w,
            min_clock_mhz=spec.min_clock_mhz,
            max_clock_mhz=spec.max_clock_mhz,
            min_voltage_v=spec.min_voltage_v,
            max_voltage_v=spec.max_voltage_v,
        )

    def voltage(self, clock_mhz: ArrayLike) -> NDArray[np.float64]:
        """Core voltage in volts at ``clock_mhz`` (any shape, same shape out)."""
        f = np.asarray(clock_mhz, dtype=np.float64)
        span = self.max_clock_mhz - self.min_clock_mhz
        frac = np.clip((f - self.min_clock_mhz) / span, 0.0, 1.0) if span > 0 else np.ones_like(f)
        return self.min_voltage_v + (self.max_voltage_v - self.min_voltage_v) * frac

    def power(self, clock_mhz: ArrayLike, utilisation: ArrayLike) -> NDArray[np.float64]:
        """Power draw in watts.

        Args:
            clock_mhz: Core clock(s) in (0, max_clock_mhz], any shape.
            utilisation: Busy fraction(s) in [0, 1], broadcast against ``clock_mhz``.

        Returns:
            Watts, broadcast shape of the inputs.

        Raises:
            ValueError: On a clock or utilisation out of range.
        """
        f, u = self._checked(clock_mhz, utilisation)
        return self.idle_power_w + self._dynamic(f, u)

    def dynamic_power(self, clock_mhz: ArrayLike, utilisation: ArrayLike) -> NDArray[np.float64]:
        """Watts above idle, ``power - idle_power_w`` (linear in the utilisation); arguments
        and errors as in :meth:`power`."""
        return self._dynamic(*self._checked(clock_mhz, utilisation))

    def _checked(
        self, clock_mhz: ArrayLike, utilisation: ArrayLike
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        f = np.asarray(clock_mhz, dtype=np.float64)  # (...)
        if np.any(f <= 0) or np.any(f > self.max_clock_mhz * (1 + 1e-9)):
            raise ValueError(f"clock_mhz must lie in (0, {self.max_clock_mhz}]")
        return f, _checked_utilisation(utilisation)  # (...) broadcastable to f

    def _dynamic(self, f: NDArray[np.float64], u: NDArray[np.float64]) -> NDArray[np.float64]:
        v_rel = self.voltage(f) / self.max_voltage_v
        return self._dynamic_at(u, f / self.max_clock_mhz, v_rel**2)

    def _dynamic_at(self, u: ArrayLike, rel: ArrayLike, v2: ArrayLike) -> NDArray[np.float64]:
        """The dynamic-power rule from a clock's factors: ``(max - idle) * u * f / f_max *
        (V / V_max)^2``."""
        return (self.max_power_w - self.idle_power_w) * u * rel * v2

    def energy(
        self, clock_mhz: ArrayLike, utilisation: ArrayLike, duration_s: ArrayLike
    ) -> NDArray[np.float64]:
        """Energy in joules of running ``duration_s`` seconds at constant clock and utilisation.

        Args:
            clock_mhz: Core clock(s), as in :meth:`power`.
            utilisation: Busy fraction(s), as in :meth:`power`.
            duration_s: Seconds (>= 0), broadcast against the other two.

        Returns:
            Joules, broadcast shape of the inputs.
        """
        return self.power(clock_mhz, utilisation) * np.asarray(duration_s, dtype=np.float64)

    def gpu_energy(
        self, clock_mhz: ArrayLike, utilisation: ArrayLike, duration_s: ArrayLike
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Joules of G GPUs that run a stretch at one utilisation: the total and its idle part.

        The one energy rule of the simulated families (continual, MIG and DAG; the energy
        family's tenants each run alone at their own clock, which is :meth:`energy`).

        Args:
            clock_mhz: (G,) core clock of each GPU (or a scalar: one GPU).
            utilisation: (...) busy fraction of every GPU in each stretch.
            duration_s: (...) seconds of each stretch, broadcast against ``utilisation``.

        Returns:
            ``(total, idle)``, each of the broadcast shape of ``utilisation`` and
            ``duration_s``: ``sum_g power(f_g, u) * t`` and ``sum_g power(f_g, 0) * t``.
        """
        f = np.atleast_1d(np.asarray(clock_mhz, dtype=np.float64))  # (G,)
        t = np.asarray(duration_s, dtype=np.float64)
        if f.shape == (1,):
            # One GPU: the same products, elementwise (a sum over one GPU is its value), with
            # the clock's factors worked out once per clock.
            rel, v2 = _clock_factors(self, float(f[0]))
            dyn = self._dynamic_at(_checked_utilisation(utilisation), rel, v2)
            total = (self.idle_power_w + dyn) * t
        else:
            u = np.asarray(utilisation, dtype=np.float64)[..., None]  # (..., 1)
            total = self.power(f, u).sum(axis=-1) * t
        idle = np.full(f.shape, self.idle_power_w).sum() * t  # summed as power(f, 0) is
        return total, idle

    @staticmethod
    def attribute(total_j: ArrayLike, idle_j: ArrayLike, busy: ArrayLike) -> NDArray[np.float64]:
        """Split joules among tenants: idle evenly, the rest in proportion to what each used.

        Args:
            total_j: (...) joules of each stretch.
            idle_j: (...) the idle part of ``total_j``.
            busy: (..., M) resources (GPUs, GPCs, device seconds) each of M tenants kept busy.

        Returns:
            (..., M) joules per tenant; they sum to ``total_j``. With nothing busy, only the
            idle part is split (evenly).
        """
        busy = np.asarray(busy, dtype=np.float64)
        total = np.asarray(total_j, dtype=np.float64)[..., None]
        idle = np.asarray(idle_j, dtype=np.float64)[..., None]
        used = busy.sum(axis=-1, keepdims=True)
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(used > 0, busy / np.where(used > 0, used, 1.0), 0.0)
        return idle / max(busy.shape[-1], 1) + (total - idle) * share

    def speed_factor(
        self, clock_mhz: ArrayLike, memory_bound: ArrayLike = 0.0
    ) -> NDArray[np.float64]:
        """Throughput relative to the maximum clock; see :func:`speed_factor`."""
        return speed_factor(clock_mhz, self.max_clock_mhz, memory_bound)


def _checked_utilisation(utilisation: ArrayLike) -> NDArray[np.float64]:
    """Busy fractions as float64, each in [0, 1] (a ValueError otherwise)."""
    u = np.asarray(utilisation, dtype=np.float64)
    if np.any(u < 0) or np.any(u > 1):
        raise ValueError("utilisation must lie in [0, 1]")
    return u


@functools.lru_cache(maxsize=64)
def _clock_factors(model: PowerModel, clock_mhz: float) -> tuple[float, float]:
    """``f / f_max`` and ``(V(f) / V_max)^2`` of one clock, as :meth:`PowerModel.power` forms
    them (the clock checked as there)."""
    f, _ = model._checked(np.array([clock_mhz]), 0.0)
    v_rel = model.voltage(f) / model.max_voltage_v
    return float((f / model.max_clock_mhz)[0]), float((v_rel**2)[0])

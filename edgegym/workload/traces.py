"""Inference-trace workloads: synthetic stand-ins for the MIGRator traces, and Azure Functions.

MIGRator (ASPLOS'24, §3 "Fine-grain reconfiguration", Figure 3) drives its two CL tenants with
two real request traces over a 200 s retraining window: a Microsoft Azure Functions trace
(Inception) and an Alibaba cluster trace (ResNet50). Figure 3 plots both in requests per second
on a 0-300 axis: both fluctuate strongly from second to second, with bursts, and the two cross
often, one staying above the other for tens of seconds at a time. The real per-second series are
not shipped with the paper and nothing can be downloaded here, so this module *synthesises*
processes with the same visual statistics:

* :class:`AzureLike` -- spiky: a log-normal AR(1) level (correlation time ~15 s), per-second
  log-normal jitter, and short random bursts (~2 per minute, ~2 s, about 2x the level).
* :class:`AlibabaLike` -- smoother: log-normal levels that shift at random (~every 30 s), a
  small AR(1) wobble and a periodic component (60 s period).

Both are stationary, their parameters are documented with the statistics they target
(:meth:`AzureLike.target_stats`, :meth:`AlibabaLike.target_stats` give the exact values for
1 s counts), and :func:`trace_stats` measures the same statistics on any counts series. They are
fitted to the paper's figure, not to the real traces.

The public Azure Functions 2019 dataset (``invocations_per_function_md.anon.dNN.csv``) gives
per-minute invocation counts for one day, one row per function. :func:`read_azure_functions`
and :func:`load_azure_functions` read that format; :class:`AzureFunctionsReplay` replays the
per-minute counts on any time grid (each minute's count spread multinomially over its 60 s).
:func:`write_azure_functions_sample` writes the small synthetic file bundled as
``scenarios/traces/azure-functions-2019-sample.csv``::

    python -m edgegym.workload.traces --write-sample \
        scenarios/traces/azure-functions-2019-sample.csv

Units: time in seconds, rates in requests per second, counts in requests.
"""

from __future__ import annotations

import argparse
import hashlib
import math
import numbers
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from edgegym.workload.arrivals import (
    ArrivalProcess,
    TraceReplay,
    _check_real,
    _check_real_array,
    _check_rng,
)

__all__ = [
    "AZURE_FUNCTIONS_ID_COLUMNS",
    "AZURE_FUNCTIONS_MINUTES",
    "AlibabaLike",
    "AzureFunctionsReplay",
    "AzureFunctionsTable",
    "AzureLike",
    "load_azure_functions",
    "read_azure_functions",
    "trace_stats",
    "write_azure_functions_sample",
]

#: Length of one step of the synthetic processes' latent rate, in seconds: the rate is constant
#: over each tick ``[k * TICK_S, (k + 1) * TICK_S)``; counts on any ``dt`` integrate it exactly.
TICK_S = 1.0

#: The identifying columns that start an Azure Functions 2019 invocation-count file.
AZURE_FUNCTIONS_ID_COLUMNS: tuple[str, ...] = ("HashOwner", "HashApp", "HashFunction", "Trigger")
#: Minute columns (``1`` .. ``1440``) of an Azure Functions 2019 invocation-count file.
AZURE_FUNCTIONS_MINUTES = 1440

# Standard-normal 99.9% quantile (nominal peak rates).
_Z999 = 3.090232306167813


# --------------------------------------------------------------------------------------------
# statistics
# --------------------------------------------------------------------------------------------


def trace_stats(
    counts: npt.ArrayLike,
    *,
    interval_s: float = 1.0,
    burst_factor: float = 1.6,
    window: int = 31,
) -> dict[str, float]:
    """Summary statistics of a counts-per-interval series (normally 1 s counts).

    Bursts are maximal runs of intervals whose count exceeds both ``burst_factor`` times the
    local baseline (the median of a centred window of ``window`` intervals) and the baseline
    plus three Poisson standard deviations (``3 * sqrt(max(baseline, 1))``, so that noise on a
    low baseline is not called a burst).

    Args:
        counts: Counts (or rates) per interval, 1-d, at least 2 finite values >= 0.
        interval_s: Interval length in seconds (> 0); only ``bursts_per_min`` uses it.
        burst_factor: Threshold over the local baseline (> 1).
        window: Baseline window in intervals (odd, >= 3).

    Returns:
        A dict of floats: ``n`` (intervals), ``mean``, ``std`` (population), ``cv``
        (``std / mean``), ``p99`` (99th percentile), ``p99_over_mean`` (burst ratio),
        ``lag1_autocorr`` (sample autocorrelation at lag 1), ``bursts_per_min`` and
        ``burst_peak_ratio`` (mean over bursts of the largest count / baseline in the burst).
        Ratios with a zero denominator are NaN, and so is ``burst_peak_ratio`` without bursts.

    Raises:
        ValueError: If ``counts`` is not a 1-d series of at least 2 finite values >= 0, or an
            option is out of range.
    """
    x = _check_real_array(counts, "counts", lo=0.0)
    if x.size < 2:
        raise ValueError(f"counts: needs at least 2 intervals, got {x.size}")
    interval_s = _check_real(interval_s, "interval_s", lo=0.0, lo_open=True)
    burst_factor = _check_real(burst_factor, "burst_factor", lo=1.0, lo_open=True)
    if isinstance(window, bool) or not isinstance(window, numbers.Integral) or window < 3:
        raise ValueError(f"window: must be an odd integer >= 3, got {window!r}")
    if window % 2 == 0:
        raise ValueError(f"window: must be an odd integer >= 3, got {window!r}")
    nan = math.nan
    mean = float(x.mean())
    d = x - mean
    var = float(d @ d) / x.size
    std = math.sqrt(var)
    p99 = float(np.percentile(x, 99))
    half = int(window) // 2
    padded = np.pad(x, half, mode="edge")
    windows = np.lib.stride_tricks.sliding_window_view(padded, int(window))
    baseline = np.partition(windows, half, axis=1)[:, half]  # median of an odd window
    above = (x > burst_factor * baseline) & (x - baseline >= 3.0 * np.sqrt(np.maximum(baseline, 1)))
    starts = np.flatnonzero(above & ~np.concatenate([[False], above[:-1]]))
    if starts.size:
        ratio = np.where(above, x / np.maximum(baseline, 1.0), 0.0)
        peak_ratio = float(np.maximum.reduceat(ratio, starts).mean())
    else:
        peak_ratio = nan
    return {
        "n": float(x.size),
        "mean": mean,
        "std": std,
        "cv": std / mean if mean > 0 else nan,
        "p99": p99,
        "p99_over_mean": p99 / mean if mean > 0 else nan,
        "lag1_autocorr": float(d[:-1] @ d[1:]) / (var * x.size) if var > 0 else nan,
        "bursts_per_min": starts.size / (x.size * interval_s / 60.0),
        "burst_peak_ratio": peak_ratio,
    }


def _poisson_count_stats(mean: float, second_moment: float, lag1_moment: float) -> dict[str, float]:
    """Stats of 1 s Poisson counts whose rate is ``mean * F`` with ``E[F] = 1``.

    Args:
        mean: Mean rate (requests/s).
        second_moment: ``E[F_t ** 2]``.
        lag1_moment: ``E[F_t * F_{t+1}]``.
    """
    var = mean + mean * mean * (second_moment - 1.0)
    cov = mean * mean * (lag1_moment - 1.0)
    std = math.sqrt(var)
    return {
        "mean": mean,
        "std": std,
        "cv": std / mean if mean > 0 else math.nan,
        "lag1_autocorr": cov / var if var > 0 else math.nan,
    }


# --------------------------------------------------------------------------------------------
# synthetic processes
# --------------------------------------------------------------------------------------------


def _ar1(phi: float, n: int, rng: np.random.Generator) -> np.ndarray:
    """Stationary AR(1) with unit variance: ``x[k] = phi * x[k-1] + sqrt(1 - phi^2) * e[k]``.

    ``x[0]`` is standard normal. Vectorised: with fast decay (``phi^64 < 1e-16``) as a sum of
    the few lags that matter, otherwise block by block with the closed form
    ``x[b+i] = phi^i * (phi * x[b-1] + sum_{j<=i} u[b+j] / phi^j)`` over blocks short enough
    that ``phi^-i`` stays below ``e^30``.
    """
    u = rng.standard_normal(n)
    u[1:] *= math.sqrt(1.0 - phi * phi)
    if phi <= 0.0 or n == 0:
        return u
    decay = -math.log(phi)  # > 0
    lags = math.ceil(37.0 / decay)  # phi**lags < 1e-16
    if lags <= 64:
        x = u.copy()
        for lag in range(1, min(lags, n)):
            x[lag:] += phi**lag * u[:-lag]
        return x
    block = max(1, int(30.0 / decay))
    powers = phi ** np.arange(min(block, n), dtype=np.float64)
    x = np.empty(n)
    prev = 0.0
    for b in range(0, n, block):
        seg = u[b : b + block]
        p = powers[: seg.size]
        x[b : b + seg.size] = p * (phi * prev + np.cumsum(seg / p))
        prev = float(x[b + seg.size - 1])
    return x


class _TickModulated(ArrivalProcess):
    """Poisson arrivals whose rate ``rate * F(t)`` is a random step function on 1 s ticks.

    Subclasses give the per-tick factor ``F`` (mean 1): :meth:`_sample_factors` along one random
    path, :meth:`_mean_factors` its expectation (the mean profile). The count of an interval is
    Poisson with the rate integrated exactly over it, for any ``dt`` and ``start_s``; ticks are
    aligned to ``t = 0``. Each call samples a fresh, stationary path (the latent state is not
    carried from one call to the next, so ``start_s`` only moves the tick alignment and the
    phase of periodic parts).
    """

    rate: float

    @property
    def mean_rate(self) -> float:
        """Long-run mean rate, requests/s (the ``rate`` argument)."""
        return self.rate

    def rates(
        self,
        n_intervals: int,
        dt: float,
        rng: np.random.Generator | None = None,
        *,
        start_s: float = 0.0,
    ) -> np.ndarray:
        """Arrival rate averaged over each interval.

        Args:
            n_intervals: Number of intervals (>= 0).
            dt: Interval length in seconds (> 0).
            rng: With a generator: the rate along one sampled path of the latent process
                (the path :meth:`counts` draws its Poisson counts from when given the same
                generator state). With None: the mean profile, i.e. the expected rate
                (deterministic; constant for :class:`AzureLike`).
            start_s: Time of the first interval's start, in seconds.

        Returns:
            float64 array of shape ``(n_intervals,)`` in requests/s.
        """
        return super().rates(n_intervals, dt, rng, start_s=start_s)

    def _expected_counts(
        self, n: int, dt: float, rng: np.random.Generator | None, start_s: float
    ) -> np.ndarray:
        if n == 0:
            return np.zeros(0)
        k0 = math.floor(start_s / TICK_S)
        k1 = math.ceil((start_s + n * dt) / TICK_S) + 1  # one spare tick against rounding
        nt = k1 - k0
        if rng is None:
            f = self._mean_factors(k0, nt)
        else:
            f = self._sample_factors(k0, nt, _check_rng(rng, f"{type(self).__name__}.rates"))
        knots = (k0 + np.arange(nt + 1, dtype=np.float64)) * TICK_S
        cum = np.concatenate([[0.0], np.cumsum(self.rate * TICK_S * f)])
        edges = start_s + np.arange(n + 1, dtype=np.float64) * dt
        return np.clip(np.diff(np.interp(edges, knots, cum)), 0.0, None)

    def _mean_factors(self, k0: int, nt: int) -> np.ndarray:
        return np.ones(nt)

    def _sample_factors(self, k0: int, nt: int, rng: np.random.Generator) -> np.ndarray:
        raise NotImplementedError


class AzureLike(_TickModulated):
    """Spiky request rate in the style of the Azure Functions trace of MIGRator's Figure 3.

    Synthesised from the paper's figure (not fitted to the real trace). The rate is constant
    over each 1 s tick ``k``::

        rate_k = rate * exp(sigma * X_k - sigma^2 / 2) * exp(jitter * Z_k - jitter^2 / 2)
                      * M_k / E[M]

    * ``X``: stationary AR(1) with unit variance and correlation time ``corr_s``
      (``corr(X_k, X_k+1) = exp(-1 / corr_s)``): the slowly wandering level that makes the
      Azure and Alibaba tenants trade places every few tens of seconds;
    * ``Z``: independent standard normals: second-to-second jitter;
    * ``M_k = 1 + sum of (H - 1)`` over the bursts active in tick ``k``: bursts start as a
      Poisson process of ``bursts_per_min`` per minute, last a geometric number of ticks with
      mean ``burst_s``, and multiply the rate by ``H = 1 + (burst_height - 1) * Exp(1)`` (mean
      ``burst_height``); overlapping bursts add up.

    The factors are independent and have mean 1, so the long-run mean rate is exactly ``rate``
    (between bursts the rate sits at ``rate / E[M]``). Counts are Poisson with the rate
    integrated over each interval. Default targets, for 1 s counts (exact, from
    :meth:`target_stats`; p99 and bursts measured with :func:`trace_stats` over 10^6 s):

    ====================  ========  =========================================
    statistic             target    source
    ====================  ========  =========================================
    mean                  120/s     Fig. 3: both curves mostly 50-250 rps
    per-second CV         0.474     Fig. 3: strong second-to-second swings
    lag-1 autocorr.       0.545     spiky: a burst rarely outlives 2-3 s
    p99 / mean            2.85      Fig. 3: spikes reach the top of the 300 rps axis
    detected bursts       1.85/min  runs >= 1.6x the local 31 s median
    burst peak / median   2.4       mean over detected bursts
    ====================  ========  =========================================

    Args:
        rate: Long-run mean rate, requests/s (>= 0).
        sigma: Log-std of the slow level ``X`` (in [0, 2]).
        corr_s: Correlation time of the slow level, seconds (> 0).
        jitter: Log-std of the per-second jitter (in [0, 2]).
        bursts_per_min: Mean number of bursts starting per minute (>= 0).
        burst_s: Mean burst length in seconds (>= 1).
        burst_height: Mean rate multiplier of a burst (>= 1; 1 disables bursts).

    Raises:
        ValueError: If a parameter is out of range; the message names it.
    """

    def __init__(
        self,
        rate: float = 120.0,
        *,
        sigma: float = 0.25,
        corr_s: float = 15.0,
        jitter: float = 0.15,
        bursts_per_min: float = 2.0,
        burst_s: float = 2.0,
        burst_height: float = 2.0,
    ) -> None:
        self.rate = _check_real(rate, "rate", lo=0.0)
        self.sigma = _check_real(sigma, "sigma", lo=0.0, hi=2.0)
        self.corr_s = _check_real(corr_s, "corr_s", lo=0.0, lo_open=True)
        self.jitter = _check_real(jitter, "jitter", lo=0.0, hi=2.0)
        self.bursts_per_min = _check_real(bursts_per_min, "bursts_per_min", lo=0.0)
        self.burst_s = _check_real(burst_s, "burst_s", lo=TICK_S)
        self.burst_height = _check_real(burst_height, "burst_height", lo=1.0)

    @property
    def _burst_mean(self) -> float:
        """``E[M]``: 1 + (mean bursts active) * (mean extra height)."""
        return 1.0 + self.bursts_per_min / 60.0 * self.burst_s * (self.burst_height - 1.0)

    @property
    def peak_rate(self) -> float:
        """Nominal peak, requests/s (the rate is unbounded; this is for normalising).

        The 99.9% quantile of the log-normal factors times one burst of twice the mean extra
        height, divided by ``E[M]``. Sampled rates exceed it well under 0.1% of the time.
        """
        s2 = self.sigma**2 + self.jitter**2
        lognormal = math.exp(_Z999 * math.sqrt(s2) - s2 / 2.0)
        burst = 1.0 + 2.0 * (self.burst_height - 1.0) if self.bursts_per_min > 0 else 1.0
        return self.rate * lognormal * burst / self._burst_mean

    def target_stats(self) -> dict[str, float]:
        """Exact stationary ``mean``, ``std``, ``cv`` and ``lag1_autocorr`` of 1 s counts.

        Aligned 1 s intervals (``dt = 1``, integer ``start_s``); see the class docstring.
        """
        em = self._burst_mean
        active = self.bursts_per_min / 60.0 * self.burst_s  # mean bursts active in a tick
        h2 = 2.0 * (self.burst_height - 1.0) ** 2  # E[(H - 1)^2], H - 1 exponential
        keep = 1.0 - TICK_S / self.burst_s  # P(an active burst is still active next tick)
        phi = math.exp(-TICK_S / self.corr_s)
        second = math.exp(self.sigma**2 + self.jitter**2) * (1.0 + active * h2 / em**2)
        lag1 = math.exp(self.sigma**2 * phi) * (1.0 + active * keep * h2 / em**2)
        return _poisson_count_stats(self.rate, second, lag1)

    def _bursts(self, nt: int, rng: np.random.Generator) -> np.ndarray:
        """``M`` on ``nt`` ticks, started in its stationary state (warm-up of 30 mean bursts)."""
        if self.bursts_per_min == 0.0 or self.burst_height == 1.0:
            return np.ones(nt)
        mean_len = self.burst_s / TICK_S
        warm = math.ceil(30.0 * mean_len)
        n_start = rng.poisson(self.bursts_per_min / 60.0 * TICK_S, size=nt + warm)
        start = np.repeat(np.arange(-warm, nt, dtype=np.int64), n_start)
        length = rng.geometric(1.0 / mean_len, size=start.size)
        extra = (self.burst_height - 1.0) * rng.standard_exponential(start.size)
        end = np.clip(start + length, 0, nt)
        start = np.clip(start, 0, nt)
        diff = np.bincount(start, weights=extra, minlength=nt + 1) - np.bincount(
            end, weights=extra, minlength=nt + 1
        )
        return 1.0 + np.clip(np.cumsum(diff[:nt]), 0.0, None)  # clip: float residue only

    def _sample_factors(self, k0: int, nt: int, rng: np.random.Generator) -> np.ndarray:
        log_f = np.full(nt, -0.5 * (self.sigma**2 + self.jitter**2))
        if self.sigma > 0:
            log_f += self.sigma * _ar1(math.exp(-TICK_S / self.corr_s), nt, rng)
        if self.jitter > 0:
            log_f += self.jitter * rng.standard_normal(nt)
        return np.exp(log_f) * self._bursts(nt, rng) / self._burst_mean

    def __repr__(self) -> str:
        return (
            f"AzureLike(rate={self.rate:g}, sigma={self.sigma:g}, corr_s={self.corr_s:g}, "
            f"jitter={self.jitter:g}, bursts_per_min={self.bursts_per_min:g}, "
            f"burst_s={self.burst_s:g}, burst_height={self.burst_height:g})"
        )


class AlibabaLike(_TickModulated):
    """Smooth, level-shifting request rate in the style of the Alibaba trace of MIGRator Fig. 3.

    Synthesised from the paper's figure (not fitted to the real trace). The rate is constant
    over each 1 s tick ``k``::

        rate_k = rate * L_k * exp(sigma * X_k - sigma^2 / 2) * (1 + a * sin(w t_k + phase))

    * ``L``: piecewise-constant level; at each tick it is replaced, with probability
      ``1 - exp(-1 / level_dwell_s)``, by a fresh ``exp(level_sigma * Z - level_sigma^2 / 2)``
      (mean 1): plateaus of ``level_dwell_s`` seconds on average;
    * ``X``: stationary AR(1) with unit variance and correlation time ``corr_s``: a small
      wobble on the plateaus;
    * the periodic part with ``w = 2 pi / period_s`` is averaged over each tick (``a`` is
      ``amplitude`` times ``sinc``), so it integrates to exactly 1 over whole periods.

    The long-run mean rate is exactly ``rate``; :meth:`rates` without a generator gives the
    mean profile ``rate * (1 + a * sin(...))``. Counts are Poisson with the rate integrated
    over each interval. Default targets, for 1 s counts (exact, from :meth:`target_stats`, as
    time averages over whole periods; p99 and bursts measured with :func:`trace_stats` over
    10^6 s):

    ====================  ========  =========================================
    statistic             target    source
    ====================  ========  =========================================
    mean                  120/s     Fig. 3: both curves mostly 50-250 rps
    per-second CV         0.331     Fig. 3: smoother than the Azure curve
    lag-1 autocorr.       0.862     plateaus last tens of seconds
    p99 / mean            2.0       no isolated spikes
    detected bursts       0.17/min  runs >= 1.6x the local 31 s median (level jumps)
    burst peak / median   1.8       mean over detected bursts
    ====================  ========  =========================================

    Args:
        rate: Long-run mean rate, requests/s (>= 0).
        level_sigma: Log-std of the plateau levels (in [0, 2]).
        level_dwell_s: Mean plateau length, seconds (> 0).
        sigma: Log-std of the AR(1) wobble (in [0, 2]).
        corr_s: Correlation time of the wobble, seconds (> 0).
        amplitude: Relative amplitude of the periodic part, in [0, 1).
        period_s: Period of the periodic part, seconds (> 0).
        phase: Phase of the periodic part at ``t = 0``, radians.

    Raises:
        ValueError: If a parameter is out of range; the message names it.
    """

    def __init__(
        self,
        rate: float = 120.0,
        *,
        level_sigma: float = 0.25,
        level_dwell_s: float = 30.0,
        sigma: float = 0.12,
        corr_s: float = 3.0,
        amplitude: float = 0.2,
        period_s: float = 60.0,
        phase: float = 0.0,
    ) -> None:
        self.rate = _check_real(rate, "rate", lo=0.0)
        self.level_sigma = _check_real(level_sigma, "level_sigma", lo=0.0, hi=2.0)
        self.level_dwell_s = _check_real(level_dwell_s, "level_dwell_s", lo=0.0, lo_open=True)
        self.sigma = _check_real(sigma, "sigma", lo=0.0, hi=2.0)
        self.corr_s = _check_real(corr_s, "corr_s", lo=0.0, lo_open=True)
        self.amplitude = _check_real(amplitude, "amplitude", lo=0.0, hi=1.0, hi_open=True)
        self.period_s = _check_real(period_s, "period_s", lo=0.0, lo_open=True)
        self.phase = _check_real(phase, "phase")

    @property
    def _tick_amplitude(self) -> float:
        """Amplitude of the tick-averaged sine: ``amplitude * sinc(TICK_S / period_s)``."""
        half = math.pi * TICK_S / self.period_s
        return self.amplitude * math.sin(half) / half

    @property
    def peak_rate(self) -> float:
        """Nominal peak, requests/s (the rate is unbounded; this is for normalising).

        The 99.9% quantile of the log-normal factors times ``1 + amplitude``. Sampled rates
        exceed it well under 0.1% of the time.
        """
        s2 = self.level_sigma**2 + self.sigma**2
        return self.rate * math.exp(_Z999 * math.sqrt(s2) - s2 / 2.0) * (1.0 + self.amplitude)

    def target_stats(self) -> dict[str, float]:
        """Exact ``mean``, ``std``, ``cv`` and ``lag1_autocorr`` of 1 s counts.

        Aligned 1 s intervals, as time averages over whole periods; see the class docstring.
        """
        stay = math.exp(-TICK_S / self.level_dwell_s)
        phi = math.exp(-TICK_S / self.corr_s)
        a2 = self._tick_amplitude**2 / 2.0
        ls2 = self.level_sigma**2
        second = math.exp(ls2 + self.sigma**2) * (1.0 + a2)
        lag1 = (
            (stay * math.exp(ls2) + 1.0 - stay)
            * math.exp(self.sigma**2 * phi)
            * (1.0 + a2 * math.cos(2.0 * math.pi * TICK_S / self.period_s))
        )
        return _poisson_count_stats(self.rate, second, lag1)

    def _mean_factors(self, k0: int, nt: int) -> np.ndarray:
        if self.amplitude == 0.0:
            return np.ones(nt)
        mid = (k0 + np.arange(nt, dtype=np.float64) + 0.5) * TICK_S
        return 1.0 + self._tick_amplitude * np.sin(2.0 * math.pi / self.period_s * mid + self.phase)

    def _sample_factors(self, k0: int, nt: int, rng: np.random.Generator) -> np.ndarray:
        f = self._mean_factors(k0, nt)
        if self.level_sigma > 0:
            switch = rng.random(nt) < -math.expm1(-TICK_S / self.level_dwell_s)
            switch[0] = True
            segment = np.cumsum(switch) - 1
            z = rng.standard_normal(int(segment[-1]) + 1)
            f = f * np.exp(self.level_sigma * z - 0.5 * self.level_sigma**2)[segment]
        if self.sigma > 0:
            x = _ar1(math.exp(-TICK_S / self.corr_s), nt, rng)
            f = f * np.exp(self.sigma * x - 0.5 * self.sigma**2)
        return f

    def __repr__(self) -> str:
        return (
            f"AlibabaLike(rate={self.rate:g}, level_sigma={self.level_sigma:g}, "
            f"level_dwell_s={self.level_dwell_s:g}, sigma={self.sigma:g}, "
            f"corr_s={self.corr_s:g}, amplitude={self.amplitude:g}, "
            f"period_s={self.period_s:g}, phase={self.phase:g})"
        )


# --------------------------------------------------------------------------------------------
# Azure Functions 2019 invocation counts
# --------------------------------------------------------------------------------------------

_FORMAT_HINT = "HashOwner,HashApp,HashFunction,Trigger,1,2,...,1440"
_DIGITS_ROW = re.compile(r"[0-9]+(?:,[0-9]+)*\Z")
_DIGITS = re.compile(r"[0-9]+\Z")


class AzureFunctionsTable(NamedTuple):
    """The rows of an Azure Functions 2019 invocation-count file (:func:`read_azure_functions`)."""

    path: Path
    """The file read."""
    owners: tuple[str, ...]
    """HashOwner of each row."""
    apps: tuple[str, ...]
    """HashApp of each row."""
    functions: tuple[str, ...]
    """HashFunction of each row."""
    triggers: tuple[str, ...]
    """Trigger of each row (http, timer, queue, event, storage, orchestration, others)."""
    counts: np.ndarray
    """int64, shape ``(n_rows, 1440)``: invocations in each minute of the day, per row."""
    lines: tuple[int, ...]
    """Line number (1-based) of each row in the file."""

    def select(self, function: int | str | None = None, aggregate: str = "sum") -> np.ndarray:
        """Per-minute counts of some rows.

        Args:
            function: None for every row; an ``int`` for one row (0-based, in file order); a
                ``str`` for the rows whose HashFunction equals it (case-insensitive; several
                rows may share a function hash across apps).
            aggregate: ``"sum"``: add the selected rows into one series, shape ``(1440,)``;
                ``"row"``: keep them, shape ``(n_selected, 1440)``.

        Returns:
            int64 per-minute counts.

        Raises:
            ValueError: On an unknown hash, an index out of range, a ``function`` of another
                type, or an unknown ``aggregate``.
        """
        n = len(self.functions)
        if aggregate not in ("sum", "row"):
            raise ValueError(f"aggregate: must be 'sum' or 'row', got {aggregate!r}")
        if function is None:
            rows = self.counts
        elif isinstance(function, numbers.Integral) and not isinstance(function, bool):
            i = int(function)
            if not 0 <= i < n:
                raise ValueError(
                    f"function: row index {i} out of range; {self.path} has {n} function rows "
                    f"(0 to {n - 1})"
                )
            rows = self.counts[i : i + 1]
        elif isinstance(function, str) and function.strip():
            want = function.strip().lower()
            hit = [i for i, h in enumerate(self.functions) if h.lower() == want]
            if not hit:
                known = ", ".join(repr(h) for h in self.functions[:3])
                raise ValueError(
                    f"function: unknown function hash {function!r}: no row of {self.path} has "
                    f"that HashFunction ({n} rows, e.g. {known}{', ...' if n > 3 else ''})"
                )
            rows = self.counts[hit]
        else:
            raise ValueError(
                "function: must be a HashFunction string, a row index >= 0, or None for all "
                f"rows, got {function!r}"
            )
        return rows.sum(axis=0) if aggregate == "sum" else rows.copy()


def _bad_count(text: str, path: Path, lineno: int, minute: int) -> int:
    """Parse a count that failed the fast path, or raise naming the file, line and minute."""
    where = f"{path}, line {lineno}, minute {minute}"
    if re.fullmatch(r"-[0-9]+", text):
        raise ValueError(f"{where}: count {text} is negative (counts must be >= 0)")
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value.is_integer() and value >= 0):
        if math.isfinite(value) and value < 0:
            raise ValueError(f"{where}: count {text} is negative (counts must be >= 0)")
        raise ValueError(
            f"{where}: count {text!r} is not an integer (counts must be whole numbers >= 0)"
        )
    return int(value)


def read_azure_functions(path: str | os.PathLike[str]) -> AzureFunctionsTable:
    """Read an Azure Functions 2019 invocation-count file (``invocations_per_function_md``).

    The format: a CSV header ``HashOwner,HashApp,HashFunction,Trigger,1,2,...,1440`` and one row
    per function with its four ids and 1440 per-minute invocation counts (one day). Blank lines
    and lines starting with ``#`` are skipped (an extension; the public files have none).

    Args:
        path: The file.

    Returns:
        The table of rows.

    Raises:
        FileNotFoundError: If the file does not exist (the message names it).
        ValueError: On an empty file, a header without the four id columns or without exactly
            the minute columns ``1`` .. ``1440``, a row with the wrong number of columns, a count
            that is not a whole number >= 0, or no rows. The message names the file and line.
    """
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{p}: Azure Functions trace file not found")
    if not p.is_file():
        raise ValueError(f"{p}: Azure Functions trace path is not a regular file")
    try:
        text = p.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{p}: Azure Functions trace is not UTF-8 text ({exc})") from exc

    n_id = len(AZURE_FUNCTIONS_ID_COLUMNS)
    n_cols = n_id + AZURE_FUNCTIONS_MINUTES
    header_line = 0
    ids: list[list[str]] = []
    rows: list[list[int]] = []
    lines: list[int] = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        fields = [f.strip() for f in line.split(",")]
        if not header_line:
            _check_header(fields, p, lineno)
            header_line = lineno
            continue
        if len(fields) != n_cols:
            raise ValueError(
                f"{p}, line {lineno}: expected {n_cols} comma-separated columns (4 ids and "
                f"{AZURE_FUNCTIONS_MINUTES} minute counts, as in the header), got {len(fields)} "
                f"({len(fields) - n_id} minute columns)"
            )
        minutes = fields[n_id:]
        if _DIGITS_ROW.match(",".join(minutes)):
            rows.append(list(map(int, minutes)))
        else:
            rows.append(
                [
                    int(f) if _DIGITS.match(f) else _bad_count(f, p, lineno, m)
                    for m, f in enumerate(minutes, start=1)
                ]
            )
        ids.append(fields[:n_id])
        lines.append(lineno)
    if not header_line:
        raise ValueError(
            f"{p}: empty file (expected a header row {_FORMAT_HINT} and one row per function)"
        )
    if not rows:
        raise ValueError(f"{p}: no function rows after the header on line {header_line}")
    cols = list(zip(*ids, strict=True))
    return AzureFunctionsTable(
        path=p,
        owners=tuple(cols[0]),
        apps=tuple(cols[1]),
        functions=tuple(cols[2]),
        triggers=tuple(cols[3]),
        counts=np.asarray(rows, dtype=np.int64),
        lines=tuple(lines),
    )


def _check_header(fields: list[str], path: Path, lineno: int) -> None:
    where = f"{path}, line {lineno}"
    for i, want in enumerate(AZURE_FUNCTIONS_ID_COLUMNS):
        got = fields[i] if i < len(fields) else None
        if got is None or got.lower() != want.lower():
            found = "missing" if got is None else f"{got!r}"
            raise ValueError(
                f"{where}: header column {i + 1} is {found}, expected {want!r} (missing header "
                f"column {want!r}; the header must be {_FORMAT_HINT})"
            )
    minutes = fields[len(AZURE_FUNCTIONS_ID_COLUMNS) :]
    if len(minutes) != AZURE_FUNCTIONS_MINUTES:
        raise ValueError(
            f"{where}: header has {len(minutes)} minute columns, expected "
            f"{AZURE_FUNCTIONS_MINUTES} (1 to {AZURE_FUNCTIONS_MINUTES}, one per minute of the "
            "day)"
        )
    for m, name in enumerate(minutes, start=1):
        if name != str(m):
            raise ValueError(
                f"{where}: header minute column {len(AZURE_FUNCTIONS_ID_COLUMNS) + m} is "
                f"{name!r}, expected '{m}' (minute columns must be 1 to "
                f"{AZURE_FUNCTIONS_MINUTES} in order)"
            )


def load_azure_functions(
    path: str | os.PathLike[str],
    function: int | str | None = None,
    aggregate: str = "sum",
) -> np.ndarray:
    """Per-minute invocation counts from an Azure Functions 2019 file.

    Args:
        path: The file (see :func:`read_azure_functions` for the format).
        function: None for every function, a row index (0-based, in file order) or a
            HashFunction (case-insensitive).
        aggregate: ``"sum"``: one series, shape ``(1440,)``; ``"row"``: one series per selected
            row, shape ``(n_selected, 1440)``.

    Returns:
        int64 per-minute counts.

    Raises:
        FileNotFoundError: If the file does not exist.
        ValueError: If the file is malformed (the message names the file and line), or the
            function is unknown (the message names the file and the hash or index).
    """
    return read_azure_functions(path).select(function, aggregate)


class AzureFunctionsReplay(TraceReplay):
    """Replay per-minute invocation counts (Azure Functions 2019) as arrivals on any grid.

    A :class:`~edgegym.workload.arrivals.TraceReplay` with ``interval_s = 60``: on a grid finer
    than a minute each minute's count is spread over its 60 s multinomially (with the ``rng``
    of :meth:`counts`; :meth:`rates` spreads it uniformly), so the per-minute totals are kept
    exactly; coarser grids sum whole minutes. ``start_minute`` shifts the replay so that
    ``t = 0`` is the start of that minute of the day; with ``loop`` the day repeats.

    Args:
        per_minute_counts: Non-negative integer counts per minute, shape ``(n_minutes,)``
            (1440 for one day of the public trace).
        scale: Traffic multiplier (>= 0), as in ``TraceReplay``: integer ``scale`` multiplies
            each minute exactly, a fractional part thins binomially.
        start_minute: Minute of the trace at ``t = 0`` (0-based, ``0 <= start_minute <
            n_minutes``).
        loop: Repeat the trace forever; if False no requests arrive after its last minute.

    Raises:
        ValueError: If a count is not a whole number >= 0 or a parameter is out of range.
    """

    def __init__(
        self,
        per_minute_counts: npt.ArrayLike,
        *,
        scale: float = 1.0,
        start_minute: int = 0,
        loop: bool = True,
    ) -> None:
        arr = _check_real_array(per_minute_counts, "per_minute_counts", lo=0.0)
        if not np.all(arr == np.floor(arr)):
            i = int(np.flatnonzero(arr != np.floor(arr))[0])
            raise ValueError(
                f"per_minute_counts: every entry must be a non-negative integer, "
                f"got {arr[i]!r} at {i}"
            )
        super().__init__(arr, 60.0, loop=loop, scale=scale)
        if (
            isinstance(start_minute, bool)
            or not isinstance(start_minute, numbers.Integral)
            or not 0 <= int(start_minute) < arr.size
        ):
            raise ValueError(
                f"start_minute: must be an integer in [0, {arr.size}) (a minute of the trace), "
                f"got {start_minute!r}"
            )
        self.start_minute = int(start_minute)

    @classmethod
    def from_csv(
        cls,
        path: str | os.PathLike[str],
        function: int | str | None = None,
        *,
        scale: float = 1.0,
        start_minute: int = 0,
        loop: bool = True,
    ) -> AzureFunctionsReplay:
        """Replay the (summed) per-minute counts of an Azure Functions 2019 file.

        Args:
            path: The file.
            function: Which rows: see :func:`load_azure_functions` (None: all, summed).
            scale: See :class:`AzureFunctionsReplay`.
            start_minute: See :class:`AzureFunctionsReplay`.
            loop: See :class:`AzureFunctionsReplay`.

        Raises:
            FileNotFoundError: If the file is missing.
            ValueError: If the file is malformed or the function unknown.
        """
        counts = load_azure_functions(path, function, "sum")
        return cls(counts, scale=scale, start_minute=start_minute, loop=loop)

    def _overlaps(
        self, n: int, dt: float, start_s: float
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return super()._overlaps(n, dt, start_s + 60.0 * self.start_minute)

    def __repr__(self) -> str:
        return (
            f"AzureFunctionsReplay(<{self.trace_counts.size} minutes>, "
            f"start_minute={self.start_minute}, loop={self.loop}, scale={self.scale:g})"
        )


# --------------------------------------------------------------------------------------------
# the bundled sample
# --------------------------------------------------------------------------------------------

# (owner, app, trigger, kind) of the sample's six functions; see _sample_minutes.
_SAMPLE_FUNCTIONS: tuple[tuple[int, int, str, str], ...] = (
    (0, 0, "http", "api"),
    (0, 0, "http", "api-small"),
    (0, 1, "timer", "cron-5min"),
    (1, 2, "timer", "cron-1min"),
    (1, 2, "queue", "bursty"),
    (2, 3, "event", "sparse"),
)


def _fake_hash(seed: int, what: str, index: int) -> str:
    """A 64-hex-digit id like the public trace's, derived (sha256) from the seed: not real."""
    return hashlib.sha256(
        f"edgegym synthetic sample seed={seed} {what}={index}".encode()
    ).hexdigest()


def _poisson_inverse(mean: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Poisson draws by CDF inversion of uniforms (stable across numpy versions)."""
    k_max = int(np.ceil(mean.max() + 12.0 * np.sqrt(mean.max()) + 12.0))
    pmf = np.exp(-mean)
    cdf = pmf.copy()
    out = np.zeros(mean.shape, dtype=np.int64)
    for k in range(k_max):
        out += u > cdf
        pmf = pmf * mean / (k + 1)
        cdf = cdf + pmf
    return out


def _sample_minutes(kind: str, rng: np.random.Generator) -> np.ndarray:
    """One synthetic function's 1440 per-minute counts, from uniform draws only."""
    minute = np.arange(AZURE_FUNCTIONS_MINUTES, dtype=np.float64)
    # diurnal shape: low at 04:00, high at 16:00 (mean 1 over the day)
    day = 1.0 + 0.6 * np.sin(2.0 * math.pi * (minute - 600.0) / AZURE_FUNCTIONS_MINUTES)
    u = rng.random(AZURE_FUNCTIONS_MINUTES)
    if kind == "api":
        return _poisson_inverse(30.0 * day, u)
    if kind == "api-small":
        return _poisson_inverse(8.0 * day, u)
    if kind == "cron-5min":
        return ((minute + 1) % 5 == 0).astype(np.int64)
    if kind == "cron-1min":
        return 1 + (u < 0.02).astype(np.int64)  # a retry now and then
    if kind == "bursty":
        # on/off queue drain: bursts start with prob 1/90 per minute and last ~12 minutes
        v = rng.random(AZURE_FUNCTIONS_MINUTES)
        on = np.zeros(AZURE_FUNCTIONS_MINUTES, dtype=bool)
        state = False
        for m in range(AZURE_FUNCTIONS_MINUTES):
            state = (v[m] >= 1.0 / 12.0) if state else (v[m] < 1.0 / 90.0)
            on[m] = state
        return _poisson_inverse(np.where(on, 45.0, 0.5), u)
    if kind == "sparse":
        batch = (minute >= 120) & (minute < 135)  # nightly batch at 02:00
        return _poisson_inverse(np.where(batch, 25.0, 0.3), u)
    raise ValueError(f"unknown sample function kind {kind!r}")


def write_azure_functions_sample(path: str | os.PathLike[str], seed: int = 0) -> Path:
    """Write a small synthetic file in the Azure Functions 2019 invocation-count format.

    Six functions of four apps of three owners (two http APIs with a diurnal load, two timers,
    a bursty queue consumer and a sparse event handler with a nightly batch), 1440 minutes
    each, about 43 invocations per minute in all. The ids are sha256 digests of the seed, not
    real hashes, and the counts are made up: the file only exercises the format. Only uniform
    draws of ``numpy.random.default_rng(seed)`` are used, so the bytes do not depend on numpy's
    samplers.

    Args:
        path: Output file (overwritten; parent directories are created).
        seed: Seed of the counts and the ids.

    Returns:
        The path written.
    """
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
        raise ValueError(f"seed: must be an integer >= 0, got {seed!r}")
    rng = np.random.default_rng(int(seed))
    header = ",".join(
        [*AZURE_FUNCTIONS_ID_COLUMNS, *(str(m) for m in range(1, AZURE_FUNCTIONS_MINUTES + 1))]
    )
    out = [header]
    for i, (owner, app, trigger, kind) in enumerate(_SAMPLE_FUNCTIONS):
        counts = _sample_minutes(kind, rng)
        ids = [
            _fake_hash(seed, "owner", owner),
            _fake_hash(seed, "app", app),
            _fake_hash(seed, "function", i),
            trigger,
        ]
        out.append(",".join([*ids, *map(str, counts.tolist())]))
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with p.open("w", encoding="utf-8", newline="\n") as fh:
        fh.write("\n".join(out) + "\n")
    return p


# --------------------------------------------------------------------------------------------
# command line
# --------------------------------------------------------------------------------------------


def _stats_table(seconds: int, seed: int) -> str:
    """Markdown table of target vs measured stats of the default generators."""
    keys = ("mean", "cv", "lag1_autocorr", "p99_over_mean", "bursts_per_min", "burst_peak_ratio")
    lines = [
        "| generator | " + " | ".join(keys) + " |",
        "|---|" + "---|" * len(keys),
    ]
    for proc in (AzureLike(), AlibabaLike()):
        got = trace_stats(proc.counts(seconds, 1.0, np.random.default_rng(seed)))
        want = proc.target_stats()
        cells = [
            f"{got[k]:.3g} (target {want[k]:.3g})" if k in want else f"{got[k]:.3g}" for k in keys
        ]
        lines.append(f"| {type(proc).__name__} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: write the bundled sample, or print the generators' statistics.

    Returns:
        The exit code: 0 success, 2 bad arguments (one ``error:`` line on stderr).
    """
    from edgegym.outputs import check_output_path

    prog = "python -m edgegym.workload.traces"
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Synthetic inference traces and the Azure Functions 2019 sample.",
    )
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument(
        "--write-sample", metavar="PATH", help="write the synthetic Azure Functions sample"
    )
    group.add_argument(
        "--stats", action="store_true", help="print measured vs target stats of the generators"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed (>= 0, default 0)")
    parser.add_argument(
        "--seconds",
        type=int,
        default=1_000_000,
        help="sample length for --stats (>= 2, default 1e6)",
    )
    args = parser.parse_args(argv)

    def fail(message: str) -> int:
        print(f"{prog}: error: {message}", file=sys.stderr)
        return 2

    if args.seed < 0:
        return fail(f"--seed must be >= 0, got {args.seed}")
    if args.write_sample is not None:
        try:
            path = check_output_path(args.write_sample, flag="--write-sample")
        except ValueError as exc:
            return fail(str(exc))
        print(write_azure_functions_sample(path, seed=args.seed))
    else:
        if args.seconds < 2:
            return fail(
                f"--seconds must be >= 2 (the statistics need 2 intervals), got {args.seconds}"
            )
        print(_stats_table(args.seconds, args.seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())

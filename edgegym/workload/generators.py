"""Synthetic stand-ins for the MIGRator inference traces, and statistics of counts series.

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

Units: time in seconds, rates in requests per second, counts in requests.
"""

from __future__ import annotations

import math
from typing import Annotated

import numpy as np
import numpy.typing as npt

from edgegym.workload.checks import Expect, Finite, NonNegative, Positive, Range, check
from edgegym.workload.processes import (
    Amplitude,
    ArrivalProcess,
    NonNegativeArray,
    _check_rng,
)

__all__ = ["TICK_S", "AlibabaLike", "AzureLike", "Recurring", "trace_stats", "window_correlation"]

#: Log-std of a log-normal factor, in [0, 2].
LogSigma = Annotated[float, Range(0, 2)]
#: A burst's mean length in seconds, at least one tick (>= 1).
BurstSeconds = Annotated[float, Range(1)]
#: A mean rate multiplier, >= 1.
Multiplier = Annotated[float, Range(1)]
_OVER_ONE = Annotated[float, Range(1, lo_open=True)]
_WINDOW = Annotated[int, Range(3), Expect("an odd integer >= 3")]


#: Length of one step of the synthetic processes' latent rate, in seconds: the rate is constant
#: over each tick ``[k * TICK_S, (k + 1) * TICK_S)``; counts on any ``dt`` integrate it exactly.
TICK_S = 1.0

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
    x = check(counts, NonNegativeArray, "counts")
    if x.size < 2:
        raise ValueError(f"counts: needs at least 2 intervals, got {x.size}")
    interval_s = float(check(interval_s, Positive, "interval_s"))
    burst_factor = float(check(burst_factor, _OVER_ONE, "burst_factor"))
    window = check(window, _WINDOW, "window")
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
        self.rate = float(check(rate, NonNegative, "rate"))
        self.sigma = float(check(sigma, LogSigma, "sigma"))
        self.corr_s = float(check(corr_s, Positive, "corr_s"))
        self.jitter = float(check(jitter, LogSigma, "jitter"))
        self.bursts_per_min = float(check(bursts_per_min, NonNegative, "bursts_per_min"))
        self.burst_s = float(check(burst_s, BurstSeconds, "burst_s"))
        self.burst_height = float(check(burst_height, Multiplier, "burst_height"))

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
        self.rate = float(check(rate, NonNegative, "rate"))
        self.level_sigma = float(check(level_sigma, LogSigma, "level_sigma"))
        self.level_dwell_s = float(check(level_dwell_s, Positive, "level_dwell_s"))
        self.sigma = float(check(sigma, LogSigma, "sigma"))
        self.corr_s = float(check(corr_s, Positive, "corr_s"))
        self.amplitude = float(check(amplitude, Amplitude, "amplitude"))
        self.period_s = float(check(period_s, Positive, "period_s"))
        self.phase = float(check(phase, Finite, "phase"))

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
# recurrence across windows (a planner that learns from past windows needs a pattern to learn)
# --------------------------------------------------------------------------------------------

#: Share of a recurring process's rate that repeats every period, in [0, 1].
Persistence = Annotated[float, Range(0, 1)]


class Recurring(_TickModulated):
    """A synthetic trace whose per-second structure recurs every ``period_s`` seconds.

    MIGRator forecasts every second of the next retraining window from the previous windows'
    arrivals (§4.1.3, an Informer model): the per-second shape of the real Azure and Alibaba
    traces (Fig. 3) repeats from one window to the next closely enough to be learned. The
    stationary generators (:class:`AzureLike`, :class:`AlibabaLike`) draw a fresh path every
    second, so nothing recurs at the window period; this process adds the recurrence and keeps
    the base's per-second statistics. With ``p`` the persistence, the rate factor of tick ``k``
    is::

        F_k = 1 + a * (S_(k mod P) - 1) + b * (G_k - 1)
        a = p / sqrt(p^2 + (1 - p)^2),   b = (1 - p) / sqrt(p^2 + (1 - p)^2)

    * ``S``: the *shape*, one path of the base generator over one period of ``P = period_s``
      ticks (ticks ``0 .. P-1``), drawn once per call (once per episode): it repeats in every
      period, so the same second of every window sees the same shape;
    * ``G``: a fresh path of the same generator over the whole call (what changes from one
      window to the next: level, bursts, jitter).

    Both paths' factors have mean 1 over time (the shape carries its periodic part, if any, with
    it), their deviations from 1 the base's autocovariance, and ``a^2 + b^2 = 1``, so the mean
    rate, the per-second variance (CV) and the lag-1 autocorrelation are the base's whatever
    the persistence (a plain convex mix ``p S + (1 - p) G`` would shrink the variance to
    ``p^2 + (1 - p)^2`` of it: half at ``p`` 0.5). A sum of two deviations is less skewed
    than one, so bursts are lower (``a`` or ``b`` of their height) and come from both paths; the
    factor is floored at 0 (at the defaults, in none of 10^6 sampled ticks of either generator).
    ``persistence`` 0 is the base generator's rate (a different random stream, though: use the
    base itself for its exact paths); 1 repeats the shape exactly (only the Poisson noise of the
    counts differs between windows). The correlation of the rate at the same second of two
    windows is ``a^2 = p^2 / (p^2 + (1 - p)^2)``; :meth:`window_correlation` gives it for 1 s
    counts (Poisson noise included). *Synthesised*: the paper states no number for how strongly
    its traces recur; reports sweep ``persistence``.

    Args:
        base: The generator whose paths give the shape and the fresh part
            (:class:`AzureLike` or :class:`AlibabaLike`).
        period_s: Recurrence period in seconds (the retraining window; a whole number of 1 s
            ticks, >= 1).
        persistence: Share of the rate that recurs, in [0, 1].

    Raises:
        ValueError: If a parameter is out of range; the message names it.
    """

    def __init__(self, base: _TickModulated, period_s: float, persistence: float) -> None:
        if not isinstance(base, _TickModulated):
            raise ValueError(
                f"base: must be an AzureLike or AlibabaLike generator, got {type(base).__name__}"
            )
        period = float(check(period_s, Annotated[float, Range(1.0, 1e6)], "period_s"))
        if period != round(period):
            raise ValueError(f"period_s: must be a whole number of seconds >= 1, got {period_s!r}")
        self.base = base
        self.rate = base.rate
        self.period_s = period
        self.persistence = float(check(persistence, Persistence, "persistence"))

    @property
    def peak_rate(self) -> float:
        """Nominal peak: the base's (the factor has the base's variance and a lighter tail)."""
        return self.base.peak_rate

    def window_correlation(self) -> float:
        """Expected correlation of 1 s counts at the same second of two different periods
        (aligned 1 s intervals), from the base's exact count statistics."""
        st = self.base.target_stats()
        mean = st["mean"]
        if mean <= 0:
            return math.nan
        v = (st["std"] ** 2 - mean) / mean**2  # variance of the rate factor
        a, _ = self._weights()
        cov = mean * mean * a * a * v
        var = mean + mean * mean * v
        return cov / var if var > 0 else math.nan

    def _weights(self) -> tuple[float, float]:
        """``(a, b)``: the weights of the shape's and the fresh path's deviations."""
        p = self.persistence
        norm = math.hypot(p, 1.0 - p)
        return p / norm, (1.0 - p) / norm

    def _mean_factors(self, k0: int, nt: int) -> np.ndarray:
        return self.base._mean_factors(k0, nt)

    def _sample_factors(self, k0: int, nt: int, rng: np.random.Generator) -> np.ndarray:
        period = int(self.period_s)
        shape = self.base._sample_factors(0, period, rng)
        fresh = self.base._sample_factors(k0, nt, rng)
        idx = np.mod(k0 + np.arange(nt, dtype=np.int64), period)
        a, b = self._weights()
        return np.maximum(1.0 + a * (shape[idx] - 1.0) + b * (fresh - 1.0), 0.0)

    def __repr__(self) -> str:
        return (
            f"Recurring({self.base!r}, period_s={self.period_s:g}, "
            f"persistence={self.persistence:g})"
        )


def window_correlation(counts: npt.ArrayLike, period: int) -> float:
    """Mean correlation between the per-interval counts of consecutive periods.

    The series is cut into whole periods of ``period`` intervals; for each pair of consecutive
    periods the Pearson correlation of their counts is taken, and the mean over pairs returned
    (NaN when fewer than two periods, or a period is constant).

    Args:
        counts: 1-d counts (or rates) per interval.
        period: Intervals per period (>= 2).
    """
    x = np.asarray(counts, dtype=np.float64).ravel()
    period = int(period)
    if period < 2:
        raise ValueError(f"period: must be an integer >= 2, got {period}")
    n = x.size // period
    if n < 2:
        return math.nan
    w = x[: n * period].reshape(n, period)
    w = w - w.mean(axis=1, keepdims=True)
    norm = np.sqrt((w * w).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (w[:-1] * w[1:]).sum(axis=1) / (norm[:-1] * norm[1:])
    return float(np.mean(r))

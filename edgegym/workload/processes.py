"""Request-arrival processes: how many inference requests arrive in each simulation interval.

Every process answers two questions on a fixed grid of ``n_intervals`` intervals of ``dt``
seconds, starting at ``start_s`` seconds:

* :meth:`ArrivalProcess.counts` -- an ``int64`` array of shape ``(n_intervals,)`` with the number
  of requests that arrive in each interval (a sample; all randomness comes from the
  ``numpy.random.Generator`` passed in, so one seed gives one path, bit for bit);
* :meth:`ArrivalProcess.rates` -- a ``float64`` array of shape ``(n_intervals,)`` with the
  expected arrival rate (requests/s) averaged over each interval.

The simulator works on counts per interval, never on request objects (DESIGN.md §6), so a whole
episode of arrivals is one vectorised call.

Processes:

* :class:`Poisson` -- homogeneous Poisson arrivals.
* :class:`MMPP` -- Markov-modulated Poisson process, simulated exactly in continuous time: the
  modulating chain's dwell times are exponential, and the count of an interval is Poisson with
  the rate integrated over that interval (state switches inside an interval included).
* :class:`Diurnal` -- sinusoidal rate, counts Poisson of the exactly integrated rate.
* :class:`TraceReplay` -- replays a counts-per-interval trace re-binned to any ``dt``; counts are
  conserved (each trace interval's requests are spread uniformly at random over the part of
  the time grid it covers, with a multinomial).
* :class:`AzureFunctionsReplay` -- a :class:`TraceReplay` of Azure Functions 2019 per-minute
  counts.

The synthetic MIGRator-style generators are in :mod:`edgegym.workload.generators`, the file
formats in :mod:`edgegym.workload.tracefiles`, and :func:`~edgegym.workload.arrival_specs.\
make_arrival` builds a process from a scenario's ``arrival`` mapping. Parameters are checked
with the types of :mod:`edgegym.workload.checks` (``ValueError`` naming the argument).

Units: time in seconds, rates in requests per second, counts in requests.
"""

from __future__ import annotations

import abc
import math
import os
from collections.abc import Sequence
from typing import Annotated, Any

import numpy as np
import numpy.typing as npt

from edgegym.workload.checks import (
    Finite,
    Flag,
    Floats,
    NonNegative,
    Positive,
    Range,
    check,
)
from edgegym.workload.tracefiles import load_azure_functions, load_counts_trace

__all__ = [
    "MMPP",
    "ArrivalProcess",
    "AzureFunctionsReplay",
    "Diurnal",
    "Poisson",
    "TraceReplay",
]

#: Highest mean arrival rate, requests per second: numpy's Poisson refuses rates near 1e19
#: per step, and 10^6 requests/s is far beyond any edge server.
MAX_RATE = 1e6
#: Arrival rates per state or counts per interval: a non-empty list of numbers >= 0.
NonNegativeArray = Annotated[np.ndarray, Floats(Range(0))]
#: Arrival rates per state (requests/s): a non-empty list of numbers in [0, MAX_RATE].
RateArray = Annotated[np.ndarray, Floats(Range(0.0, MAX_RATE))]
#: Dwell times or exit rates per state: a non-empty list of numbers > 0.
PositiveArray = Annotated[np.ndarray, Floats(Range(0, lo_open=True))]
#: An (S, S) transition-rate matrix: numbers >= 0.
RateMatrix = Annotated[np.ndarray, Floats(Range(0), ndim=2)]
#: The relative amplitude of a sinusoidal rate, in [0, 1) (the rate stays positive).
Amplitude = Annotated[float, Range(0, 1, hi_open=True)]
_COUNT = Annotated[int, Range(0)]

# Overlaps shorter than this fraction of min(dt, interval_s) are float noise from bin edges that
# coincide mathematically; they are treated as zero so no request lands in a neighbouring bin.
_OVERLAP_EPS = 1e-9


def _check_grid(n_intervals: Any, dt: Any, start_s: Any) -> tuple[int, float, float]:
    return (
        check(n_intervals, _COUNT, "n_intervals"),
        float(check(dt, Positive, "dt")),
        float(check(start_s, Finite, "start_s")),
    )


def _check_rng(rng: Any, who: str) -> np.random.Generator:
    if not isinstance(rng, np.random.Generator):
        raise TypeError(
            f"{who}: rng must be a numpy.random.Generator (e.g. numpy.random.default_rng(seed)), "
            f"got {type(rng).__name__}"
        )
    return rng


# --------------------------------------------------------------------------------------------
# processes
# --------------------------------------------------------------------------------------------


class ArrivalProcess(abc.ABC):
    """Base class of request-arrival processes that produce counts per interval.

    Subclasses implement :meth:`_expected_counts` (the rate integrated over each interval); the
    default :meth:`counts` draws a Poisson count for each interval from it. Processes hold only
    their parameters (no hidden state between calls), so instances are pickleable and each call
    samples a fresh path from the ``rng`` given.
    """

    @property
    @abc.abstractmethod
    def mean_rate(self) -> float:
        """Long-run mean arrival rate in requests/s."""

    @property
    @abc.abstractmethod
    def peak_rate(self) -> float:
        """An upper bound on the instantaneous rate in requests/s (for normalising observations).

        For :class:`TraceReplay` it is the largest per-interval rate of the trace.
        """

    def rates(
        self,
        n_intervals: int,
        dt: float,
        rng: np.random.Generator | None = None,
        *,
        start_s: float = 0.0,
    ) -> np.ndarray:
        """Expected arrival rate, averaged over each interval.

        Args:
            n_intervals: Number of intervals (>= 0).
            dt: Interval length in seconds (> 0).
            rng: Random generator. Needed only by processes whose rate is itself random
                (:class:`MMPP`, where the result is the rate along one sampled path of the
                modulating chain); deterministic processes ignore it.
            start_s: Time of the first interval's start, in seconds (phase of :class:`Diurnal`,
                offset into :class:`TraceReplay`; the stationary processes ignore it).

        Returns:
            float64 array of shape ``(n_intervals,)`` in requests/s.
        """
        n, dt, start_s = _check_grid(n_intervals, dt, start_s)
        return self._expected_counts(n, dt, rng, start_s) / dt

    def counts(
        self,
        n_intervals: int,
        dt: float,
        rng: np.random.Generator,
        *,
        start_s: float = 0.0,
    ) -> np.ndarray:
        """Sample the number of arrivals in each interval.

        Args:
            n_intervals: Number of intervals (>= 0).
            dt: Interval length in seconds (> 0).
            rng: The only source of randomness; the same generator state gives the same counts.
            start_s: Time of the first interval's start, in seconds.

        Returns:
            int64 array of shape ``(n_intervals,)``.
        """
        n, dt, start_s = _check_grid(n_intervals, dt, start_s)
        rng = _check_rng(rng, f"{type(self).__name__}.counts")
        lam = self._expected_counts(n, dt, rng, start_s)
        return rng.poisson(lam).astype(np.int64, copy=False)

    @abc.abstractmethod
    def _expected_counts(
        self, n: int, dt: float, rng: np.random.Generator | None, start_s: float
    ) -> np.ndarray:
        """Rate integrated over each interval: float64, shape ``(n,)``, arguments validated."""


class Poisson(ArrivalProcess):
    """Homogeneous Poisson arrivals.

    Args:
        rate: Arrival rate in requests/s (>= 0).
    """

    def __init__(self, rate: float) -> None:
        self.rate = float(check(rate, NonNegative, "rate"))

    @property
    def mean_rate(self) -> float:
        """The constant rate, requests/s."""
        return self.rate

    @property
    def peak_rate(self) -> float:
        """The constant rate, requests/s."""
        return self.rate

    def _expected_counts(
        self, n: int, dt: float, rng: np.random.Generator | None, start_s: float
    ) -> np.ndarray:
        return np.full(n, self.rate * dt, dtype=np.float64)

    def __repr__(self) -> str:
        return f"Poisson(rate={self.rate:g})"


class MMPP(ArrivalProcess):
    """Markov-modulated Poisson process (MMPP), simulated exactly in continuous time.

    A continuous-time Markov chain over ``S`` states modulates the rate: in state ``i`` requests
    arrive as a Poisson process of rate ``rates[i]``. Each sampled path starts in a state drawn
    from the chain's stationary distribution (so the process is stationary and ``start_s`` does
    not matter), dwell times are exponential, and the count of an interval is Poisson with the
    rate integrated over that interval, switches inside the interval included. The cost is one
    vectorised draw per state switch, independent of ``dt``.

    Give the switching either as ``dwell_s`` or as ``switch_rates``:

    * ``dwell_s[i]``: mean seconds spent in state ``i`` per visit (> 0); on leaving, the next
      state is uniform over the others.
    * ``switch_rates`` 1-d: ``switch_rates[i]`` is the rate (1/s, > 0) of leaving state ``i``
      (``1 / dwell_s[i]``); the next state is uniform over the others.
    * ``switch_rates`` 2-d ``(S, S)``: ``switch_rates[i][j]`` is the rate of jumping from ``i`` to
      ``j`` (>= 0; the diagonal is ignored). The chain must have a unique stationary
      distribution and every state a positive exit rate.

    Args:
        rates: Arrival rate in each state, requests/s (>= 0), shape ``(S,)``.
        dwell_s: Mean dwell time of each state in seconds, shape ``(S,)``.
        switch_rates: Exit rates ``(S,)`` or a transition-rate matrix ``(S, S)``, in 1/s.

    Raises:
        ValueError: If not exactly one of ``dwell_s``/``switch_rates`` is given, or a value is
            out of range or of the wrong shape; the message names the argument.
    """

    def __init__(
        self,
        rates: Sequence[float] | npt.ArrayLike,
        dwell_s: Sequence[float] | npt.ArrayLike | None = None,
        *,
        switch_rates: npt.ArrayLike | None = None,
    ) -> None:
        lam = check(rates, RateArray, "rates")
        s = lam.size
        if (dwell_s is None) == (switch_rates is None):
            raise ValueError(
                "dwell_s / switch_rates: give exactly one of dwell_s (mean seconds per visit to "
                "each state, > 0) or switch_rates (1/s, exit rate per state or an (S, S) matrix)"
            )
        if dwell_s is not None:
            dwell = check(dwell_s, PositiveArray, "dwell_s")
            if dwell.size != s:
                raise ValueError(
                    f"dwell_s: needs one value per state ({s} rates given), got {dwell.size}"
                )
            q = self._uniform_generator(1.0 / dwell)
        else:
            try:
                sr_ndim = np.ndim(switch_rates)
            except ValueError as exc:  # ragged nested lists
                raise ValueError(
                    f"switch_rates: must be a list of exit rates or an ({s}, {s}) matrix: {exc}"
                ) from exc
            if sr_ndim == 2:
                mat = check(switch_rates, RateMatrix, "switch_rates")
                if mat.shape != (s, s):
                    raise ValueError(
                        f"switch_rates: a matrix must have shape ({s}, {s}) to match rates, "
                        f"got {mat.shape}"
                    )
                q = mat.copy()
                np.fill_diagonal(q, 0.0)
                if s > 1 and (q.sum(axis=1) <= 0).any():
                    i = int(np.flatnonzero(q.sum(axis=1) <= 0)[0])
                    raise ValueError(
                        f"switch_rates: state {i} has no way out (row {i} off-diagonal rates all "
                        "0); every state needs a total exit rate > 0"
                    )
            else:
                exit_rates = check(switch_rates, PositiveArray, "switch_rates")
                if exit_rates.size != s:
                    raise ValueError(
                        f"switch_rates: needs one exit rate per state ({s} rates given), "
                        f"got {exit_rates.size}"
                    )
                q = self._uniform_generator(exit_rates)
        self.state_rates: np.ndarray = lam  # (S,) requests/s
        self.transition_rates: np.ndarray = q  # (S, S) 1/s, zero diagonal
        self._exit: np.ndarray = q.sum(axis=1)  # (S,) 1/s
        self._uniform_jumps = bool(
            s <= 2 or np.allclose(q, self._uniform_generator(self._exit), rtol=1e-12, atol=0.0)
        )
        with np.errstate(divide="ignore", invalid="ignore"):
            jump_p = np.where(self._exit[:, None] > 0, q / self._exit[:, None], 0.0)
        self._jump_cdf: np.ndarray = np.cumsum(jump_p, axis=1)  # (S, S)
        if s > 1:
            self._jump_cdf[:, -1] = 1.0
        self.stationary: np.ndarray = self._stationary(q)  # (S,)

    @staticmethod
    def _uniform_generator(exit_rates: np.ndarray) -> np.ndarray:
        s = exit_rates.size
        if s == 1:
            return np.zeros((1, 1))
        q = np.repeat((exit_rates / (s - 1))[:, None], s, axis=1)
        np.fill_diagonal(q, 0.0)
        return q

    @staticmethod
    def _stationary(q: np.ndarray) -> np.ndarray:
        s = q.shape[0]
        if s == 1:
            return np.ones(1)
        a = (q - np.diag(q.sum(axis=1))).T
        a[-1, :] = 1.0
        b = np.zeros(s)
        b[-1] = 1.0
        try:
            pi = np.linalg.solve(a, b)
        except np.linalg.LinAlgError:
            pi = np.full(s, np.nan)
        if not np.all(np.isfinite(pi)) or pi.min() < -1e-9:
            raise ValueError(
                "switch_rates: the chain has no unique stationary distribution (it splits into "
                "separate closed groups of states); connect the states"
            )
        pi = np.clip(pi, 0.0, None)
        return pi / pi.sum()

    @property
    def n_states(self) -> int:
        """Number of modulating states ``S``."""
        return int(self.state_rates.size)

    @property
    def mean_rate(self) -> float:
        """Stationary mean rate ``sum_i pi_i * rates[i]``, requests/s."""
        return float(self.stationary @ self.state_rates)

    @property
    def peak_rate(self) -> float:
        """Largest state rate, requests/s."""
        return float(self.state_rates.max())

    def _next_states(self, prev: int, size: int, rng: np.random.Generator) -> np.ndarray:
        """Sample ``size`` successive jump-chain states following state ``prev``."""
        s = self.n_states
        if s == 2:
            return (prev + np.arange(1, size + 1)) % 2
        if self._uniform_jumps:
            steps = rng.integers(1, s, size=size)
            return (prev + np.cumsum(steps)) % s
        u = rng.random(size)
        cdf = self._jump_cdf
        out = np.empty(size, dtype=np.int64)
        cur = prev
        for k in range(size):  # one Python step per state switch, not per request
            cur = int(np.searchsorted(cdf[cur], u[k], side="right"))
            out[k] = cur
        return out

    def _expected_counts(
        self, n: int, dt: float, rng: np.random.Generator | None, start_s: float
    ) -> np.ndarray:
        if self.n_states == 1 or n == 0:
            return np.full(n, float(self.state_rates[0]) * dt)
        rng = _check_rng(rng, "MMPP.rates")
        horizon = n * dt
        jump_rate = float(self.stationary @ self._exit)
        t_parts = [np.zeros(1)]
        cum_parts = [np.zeros(1)]
        t_now = 0.0
        cum_now = 0.0
        states = np.array([int(rng.choice(self.n_states, p=self.stationary))])
        first = True
        while t_now < horizon:
            size = int((horizon - t_now) * jump_rate * 1.1) + 16
            if first:
                states = np.concatenate([states, self._next_states(int(states[0]), size - 1, rng)])
                first = False
            else:
                states = self._next_states(int(states[-1]), size, rng)
            dwell = rng.standard_exponential(size) / self._exit[states]
            t = t_now + np.cumsum(dwell)
            cum = cum_now + np.cumsum(self.state_rates[states] * dwell)
            t_parts.append(t)
            cum_parts.append(cum)
            t_now = float(t[-1])
            cum_now = float(cum[-1])
        knots_t = np.concatenate(t_parts)
        knots_cum = np.concatenate(cum_parts)
        edges = np.arange(n + 1, dtype=np.float64) * dt
        integrated = np.diff(np.interp(edges, knots_t, knots_cum))
        return np.clip(integrated, 0.0, None)

    def __repr__(self) -> str:
        return (
            f"MMPP(rates={self.state_rates.tolist()}, "
            f"mean_dwell_s={(1.0 / self._exit).tolist() if self.n_states > 1 else [math.inf]})"
        )


class Diurnal(ArrivalProcess):
    """Poisson arrivals with a sinusoidal rate.

    ``rate(t) = mean_rate * (1 + amplitude * sin(2 * pi * t / period_s + phase))``; the count of
    an interval is Poisson with this rate integrated exactly over the interval.

    Args:
        mean_rate: Mean rate over a period, requests/s (>= 0).
        amplitude: Relative amplitude in [0, 1) (the rate stays positive).
        period_s: Period in seconds (> 0), e.g. 86400 for a day.
        phase: Phase in radians at ``t = 0``.
    """

    def __init__(
        self, mean_rate: float, amplitude: float, period_s: float, phase: float = 0.0
    ) -> None:
        self.rate = float(check(mean_rate, NonNegative, "mean_rate"))
        self.amplitude = float(check(amplitude, Amplitude, "amplitude"))
        self.period_s = float(check(period_s, Positive, "period_s"))
        self.phase = float(check(phase, Finite, "phase"))

    @property
    def mean_rate(self) -> float:
        """Mean over a whole period, requests/s."""
        return self.rate

    @property
    def peak_rate(self) -> float:
        """``mean_rate * (1 + amplitude)``, requests/s."""
        return self.rate * (1.0 + self.amplitude)

    def _expected_counts(
        self, n: int, dt: float, rng: np.random.Generator | None, start_s: float
    ) -> np.ndarray:
        w = 2.0 * math.pi / self.period_s
        mid = start_s + (np.arange(n, dtype=np.float64) + 0.5) * dt
        # integral of sin(w t + phase) over [mid - dt/2, mid + dt/2], in a cancellation-free form
        wave = (2.0 / w) * np.sin(w * mid + self.phase) * math.sin(w * dt / 2.0)
        return np.clip(self.rate * (dt + self.amplitude * wave), 0.0, None)

    def __repr__(self) -> str:
        return (
            f"Diurnal(mean_rate={self.rate:g}, amplitude={self.amplitude:g}, "
            f"period_s={self.period_s:g}, phase={self.phase:g})"
        )


class TraceReplay(ArrivalProcess):
    """Replay a recorded counts-per-interval series on any time grid.

    Trace interval ``k`` covers ``[k * interval_s, (k + 1) * interval_s)``. On a grid of ``dt``
    its requests are spread uniformly at random over the part of each grid interval that it
    overlaps (a multinomial), so when ``dt`` divides ``interval_s`` each trace interval's count is
    split over its sub-intervals, and when ``dt`` is a multiple of ``interval_s`` the counts are
    summed exactly; in every case the total over whole trace intervals is conserved.

    ``scale`` multiplies the traffic: each trace interval's count ``c`` becomes
    ``floor(scale) * c + Binomial(c, scale - floor(scale))`` (exact for integer ``scale``, mean
    ``scale * c`` otherwise), drawn independently for every replayed copy of the interval.

    Args:
        counts_per_interval: Non-negative integer counts, shape ``(n_trace_intervals,)``.
        interval_s: Length of one trace interval in seconds (> 0).
        loop: Repeat the trace forever; if False, no requests arrive outside
            ``[0, duration_s)``.
        scale: Traffic multiplier (>= 0).
    """

    def __init__(
        self,
        counts_per_interval: npt.ArrayLike,
        interval_s: float,
        loop: bool = True,
        scale: float = 1.0,
    ) -> None:
        arr = check(counts_per_interval, NonNegativeArray, "counts_per_interval")
        if not np.all(arr == np.floor(arr)):
            i = int(np.flatnonzero(arr != np.floor(arr))[0])
            raise ValueError(
                f"counts_per_interval: every entry must be a non-negative integer, "
                f"got {arr[i]!r} at {i}"
            )
        self.interval_s = float(check(interval_s, Positive, "interval_s"))
        self.loop: bool = check(bool(loop) if isinstance(loop, np.bool_) else loop, Flag, "loop")
        self.scale = float(check(scale, NonNegative, "scale"))
        peak = float(arr.max()) * self.scale / self.interval_s if self.scale > 0 else 0.0
        if peak > MAX_RATE:
            raise ValueError(
                f"counts_per_interval / scale: the busiest interval replays at {peak:.3g} "
                f"requests/s; at most {MAX_RATE:g} (max count x scale / interval_s)"
            )
        self.trace_counts: np.ndarray = arr.astype(np.int64)  # (L,)

    @classmethod
    def from_file(
        cls,
        path: str | os.PathLike[str],
        interval_s: float | None = None,
        *,
        loop: bool = True,
        scale: float = 1.0,
    ) -> TraceReplay:
        """Load a trace with :func:`load_counts_trace` and replay it.

        Args:
            path: Trace file.
            interval_s: Trace interval in seconds; overrides the file's. Required when the file
                does not give one.
            loop: See :class:`TraceReplay`.
            scale: See :class:`TraceReplay`.

        Raises:
            FileNotFoundError: If the file is missing.
            ValueError: If the file is malformed or no interval length is known.
        """
        trace = load_counts_trace(path)
        if interval_s is None:
            interval_s = trace.interval_s
        if interval_s is None:
            raise ValueError(
                f"interval_s: {path} does not give the trace interval (add a '# interval_s: 60' "
                "line or an interval_s column), so pass interval_s (seconds, > 0)"
            )
        return cls(trace.counts, interval_s, loop=loop, scale=scale)

    @property
    def duration_s(self) -> float:
        """Length of one pass over the trace, seconds."""
        return self.trace_counts.size * self.interval_s

    @property
    def mean_rate(self) -> float:
        """Mean rate over one pass of the trace, times ``scale``, requests/s."""
        return self.scale * float(self.trace_counts.sum()) / self.duration_s

    @property
    def peak_rate(self) -> float:
        """Largest per-trace-interval rate times ``scale``, requests/s."""
        return self.scale * float(self.trace_counts.max()) / self.interval_s

    def _overlaps(
        self, n: int, dt: float, start_s: float
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Which grid bins each trace interval in the horizon overlaps, and by how much.

        Returns:
            ``(k, bins, overlap)``: trace-interval instances ``k`` (K,) (unwrapped indices, may
            exceed the trace length when looping), grid-bin indices ``bins`` (K, m) clipped into
            ``[0, n)``, and overlap lengths in seconds (K, m), zero for bins outside the grid.
        """
        big_i = self.interval_s
        empty = (np.zeros(0, np.int64), np.zeros((0, 1), np.int64), np.zeros((0, 1)))
        if n == 0:
            return empty
        t_end = start_s + n * dt
        k_first = math.floor(start_s / big_i)
        k_last = math.ceil(t_end / big_i) - 1
        if not self.loop:
            k_first = max(k_first, 0)
            k_last = min(k_last, self.trace_counts.size - 1)
        if k_last < k_first:
            return empty
        ks = np.arange(k_first, k_last + 1, dtype=np.int64)
        lo_k = ks * big_i
        hi_k = lo_k + big_i
        m = min(math.ceil(big_i / dt) + 3, n + 2)
        j0 = np.maximum(np.floor((lo_k - start_s) / dt).astype(np.int64) - 1, 0)
        j = j0[:, None] + np.arange(m, dtype=np.int64)[None, :]
        lo_j = start_s + j * dt
        ov = np.minimum(lo_j + dt, hi_k[:, None]) - np.maximum(lo_j, lo_k[:, None])
        ov[(j >= n) | (ov < _OVERLAP_EPS * min(dt, big_i))] = 0.0
        return ks, np.minimum(j, n - 1), ov

    def _instance_counts(self, ks: np.ndarray) -> np.ndarray:
        return self.trace_counts[ks % self.trace_counts.size]

    def _expected_counts(
        self, n: int, dt: float, rng: np.random.Generator | None, start_s: float
    ) -> np.ndarray:
        ks, bins, ov = self._overlaps(n, dt, start_s)
        per_second = self.scale * self._instance_counts(ks) / self.interval_s
        return np.bincount(bins.ravel(), weights=(ov * per_second[:, None]).ravel(), minlength=n)

    def counts(
        self,
        n_intervals: int,
        dt: float,
        rng: np.random.Generator,
        *,
        start_s: float = 0.0,
    ) -> np.ndarray:
        """Replay the trace on a grid of ``n_intervals`` intervals of ``dt`` seconds.

        Args:
            n_intervals: Number of intervals (>= 0).
            dt: Interval length in seconds (> 0).
            rng: Source of the multinomial spreading (and of the thinning for non-integer
                ``scale``).
            start_s: Offset into the (looped) trace, in seconds.

        Returns:
            int64 array of shape ``(n_intervals,)``.
        """
        n, dt, start_s = _check_grid(n_intervals, dt, start_s)
        rng = _check_rng(rng, "TraceReplay.counts")
        ks, bins, ov = self._overlaps(n, dt, start_s)
        c = self._instance_counts(ks)
        whole = math.floor(self.scale)
        frac = self.scale - whole
        c = whole * c
        if frac > 0.0:
            c = c + rng.binomial(self._instance_counts(ks), frac)
        p = ov / self.interval_s
        outside = np.clip(1.0 - p.sum(axis=1, keepdims=True), 0.0, None)
        pvals = np.concatenate([p, outside], axis=1)
        pvals /= pvals.sum(axis=1, keepdims=True)
        draws = rng.multinomial(c, pvals)[:, :-1] if ks.size else np.zeros_like(ov)
        out = np.bincount(bins.ravel(), weights=draws.ravel().astype(np.float64), minlength=n)
        return np.rint(out).astype(np.int64)

    def __repr__(self) -> str:
        return (
            f"TraceReplay(<{self.trace_counts.size} intervals>, interval_s={self.interval_s:g}, "
            f"loop={self.loop}, scale={self.scale:g})"
        )


class AzureFunctionsReplay(TraceReplay):
    """Replay per-minute invocation counts (Azure Functions 2019) as arrivals on any grid.

    A :class:`TraceReplay` with ``interval_s = 60``: on a grid finer
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
        arr = check(per_minute_counts, NonNegativeArray, "per_minute_counts")
        if not np.all(arr == np.floor(arr)):
            i = int(np.flatnonzero(arr != np.floor(arr))[0])
            raise ValueError(
                f"per_minute_counts: every entry must be a non-negative integer, "
                f"got {arr[i]!r} at {i}"
            )
        super().__init__(arr, 60.0, loop=loop, scale=scale)
        minute = Annotated[int, Range(0, arr.size, hi_open=True)]  # a minute of the trace
        self.start_minute: int = check(start_minute, minute, "start_minute")

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

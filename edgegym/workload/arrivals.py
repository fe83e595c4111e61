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

Scenario files describe a process as a dict, built by :func:`make_arrival`::

    {"kind": "poisson", "rate": 30}
    {"kind": "mmpp", "rates": [10, 80], "dwell_s": [20, 5]}
    {"kind": "diurnal", "rate": 30, "amplitude": 0.5, "period_s": 2000}
    {"kind": "trace", "path": "traces/sample-counts.csv", "scale": 1.0}
    {"kind": "azure", "rate": 120}
    {"kind": "alibaba", "rate": 120}
    {"kind": "azure-functions", "path": "traces/azure-functions-2019-sample.csv", "scale": 100}

Trace files are read by :func:`load_counts_trace`. The ``azure``, ``alibaba`` and
``azure-functions`` kinds live in :mod:`edgegym.workload.traces` (synthetic stand-ins for the
MIGRator traces, and the Azure Functions 2019 per-minute format).

Units: time in seconds, rates in requests per second, counts in requests.
"""

from __future__ import annotations

import abc
import math
import numbers
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

__all__ = [
    "ARRIVAL_KINDS",
    "MMPP",
    "ArrivalProcess",
    "CountsTrace",
    "Diurnal",
    "Poisson",
    "TraceReplay",
    "load_counts_trace",
    "make_arrival",
]

#: The ``kind`` values :func:`make_arrival` accepts.
ARRIVAL_KINDS: tuple[str, ...] = (
    "poisson",
    "mmpp",
    "diurnal",
    "trace",
    "azure",
    "alibaba",
    "azure-functions",
)

# Overlaps shorter than this fraction of min(dt, interval_s) are float noise from bin edges that
# coincide mathematically; they are treated as zero so no request lands in a neighbouring bin.
_OVERLAP_EPS = 1e-9


# --------------------------------------------------------------------------------------------
# validation helpers (shared by the constructors and make_arrival so messages agree)
# --------------------------------------------------------------------------------------------


def _range_text(lo: float | None, hi: float | None, lo_open: bool, hi_open: bool) -> str:
    """Describe an allowed interval, e.g. ``'>= 0'`` or ``'in [0, 1)'``."""
    if lo is not None and hi is not None:
        return f"in {'(' if lo_open else '['}{lo:g}, {hi:g}{')' if hi_open else ']'}"
    if lo is not None:
        return f"{'>' if lo_open else '>='} {lo:g}"
    if hi is not None:
        return f"{'<' if hi_open else '<='} {hi:g}"
    return "(any finite value)"


def _in_range(x: float, lo: float | None, hi: float | None, lo_open: bool, hi_open: bool) -> bool:
    if lo is not None and (x <= lo if lo_open else x < lo):
        return False
    return not (hi is not None and (x >= hi if hi_open else x > hi))


def _check_real(
    value: Any,
    name: str,
    *,
    lo: float | None = None,
    hi: float | None = None,
    lo_open: bool = False,
    hi_open: bool = False,
) -> float:
    """Return ``value`` as a float, or raise ``ValueError`` naming ``name`` and the range."""
    rng_txt = _range_text(lo, hi, lo_open, hi_open)
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name}: must be a finite number {rng_txt}, got {value!r}")
    x = float(value)
    if not math.isfinite(x) or not _in_range(x, lo, hi, lo_open, hi_open):
        raise ValueError(f"{name}: must be a finite number {rng_txt}, got {value!r}")
    return x


def _check_real_array(
    values: Any,
    name: str,
    *,
    ndim: int = 1,
    lo: float | None = None,
    hi: float | None = None,
    lo_open: bool = False,
    hi_open: bool = False,
) -> np.ndarray:
    """Return ``values`` as a float64 array of ``ndim`` dims, non-empty, every entry in range."""
    rng_txt = _range_text(lo, hi, lo_open, hi_open)
    what = "a list of" if ndim == 1 else "a matrix (list of lists) of"
    if isinstance(values, str | bytes | Mapping):
        raise ValueError(f"{name}: must be {what} finite numbers {rng_txt}, got {values!r}")
    try:
        arr = np.asarray(values)
    except ValueError as exc:  # ragged nested lists
        raise ValueError(f"{name}: must be {what} finite numbers {rng_txt}: {exc}") from exc
    if arr.dtype == np.bool_ or not (
        np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)
    ):
        raise ValueError(f"{name}: must be {what} finite numbers {rng_txt}, got {values!r}")
    if arr.ndim != ndim or arr.size == 0:
        raise ValueError(
            f"{name}: must be a non-empty {ndim}-d array of numbers {rng_txt}, "
            f"got shape {arr.shape}"
        )
    arr = arr.astype(np.float64)
    bad = ~np.isfinite(arr)
    if lo is not None:
        bad |= (arr <= lo) if lo_open else (arr < lo)
    if hi is not None:
        bad |= (arr >= hi) if hi_open else (arr > hi)
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        at = idx[0] if ndim == 1 else list(idx)
        raise ValueError(
            f"{name}: every entry must be a finite number {rng_txt}, got {arr[idx]!r} at {at}"
        )
    return arr


def _check_grid(n_intervals: Any, dt: Any, start_s: Any) -> tuple[int, float, float]:
    if isinstance(n_intervals, bool) or not isinstance(n_intervals, numbers.Integral):
        raise ValueError(f"n_intervals: must be an integer >= 0, got {n_intervals!r}")
    n = int(n_intervals)
    if n < 0:
        raise ValueError(f"n_intervals: must be an integer >= 0, got {n}")
    return (
        n,
        _check_real(dt, "dt", lo=0.0, lo_open=True),
        _check_real(start_s, "start_s"),
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
        self.rate = _check_real(rate, "rate", lo=0.0)

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
        lam = _check_real_array(rates, "rates", lo=0.0)
        s = lam.size
        if (dwell_s is None) == (switch_rates is None):
            raise ValueError(
                "dwell_s / switch_rates: give exactly one of dwell_s (mean seconds per visit to "
                "each state, > 0) or switch_rates (1/s, exit rate per state or an (S, S) matrix)"
            )
        if dwell_s is not None:
            dwell = _check_real_array(dwell_s, "dwell_s", lo=0.0, lo_open=True)
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
                mat = _check_real_array(switch_rates, "switch_rates", ndim=2, lo=0.0)
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
                exit_rates = _check_real_array(switch_rates, "switch_rates", lo=0.0, lo_open=True)
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
        self.rate = _check_real(mean_rate, "mean_rate", lo=0.0)
        self.amplitude = _check_real(amplitude, "amplitude", lo=0.0, hi=1.0, hi_open=True)
        self.period_s = _check_real(period_s, "period_s", lo=0.0, lo_open=True)
        self.phase = _check_real(phase, "phase")

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


class CountsTrace(NamedTuple):
    """A counts-per-interval trace as read by :func:`load_counts_trace`."""

    counts: np.ndarray
    """int64, shape (n_trace_intervals,): requests in each trace interval."""
    interval_s: float | None
    """Trace interval length in seconds, or None when the file does not say."""


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
        arr = _check_real_array(counts_per_interval, "counts_per_interval", lo=0.0)
        if not np.all(arr == np.floor(arr)):
            i = int(np.flatnonzero(arr != np.floor(arr))[0])
            raise ValueError(
                f"counts_per_interval: every entry must be a non-negative integer, "
                f"got {arr[i]!r} at {i}"
            )
        self.trace_counts: np.ndarray = arr.astype(np.int64)  # (L,)
        self.interval_s = _check_real(interval_s, "interval_s", lo=0.0, lo_open=True)
        if not isinstance(loop, bool | np.bool_):
            raise ValueError(f"loop: must be true or false, got {loop!r}")
        self.loop = bool(loop)
        self.scale = _check_real(scale, "scale", lo=0.0)

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


# --------------------------------------------------------------------------------------------
# trace files
# --------------------------------------------------------------------------------------------

_INTERVAL_COMMENT = re.compile(r"^#\s*interval_s\s*[:=]\s*(\S+)\s*$", re.IGNORECASE)
_COUNT_COLUMNS = ("count", "counts")


def _parse_count(text: str, path: Path, lineno: int) -> int:
    try:
        value = int(text)
    except ValueError:
        try:
            as_float = float(text)
        except ValueError:
            as_float = math.nan
        if not (math.isfinite(as_float) and as_float.is_integer()):
            raise ValueError(
                f"{path}, line {lineno}: count {text!r} is not an integer "
                "(counts must be whole numbers >= 0)"
            ) from None
        value = int(as_float)
    if value < 0:
        raise ValueError(f"{path}, line {lineno}: count {value} is negative (counts must be >= 0)")
    return value


def _parse_interval(text: str, path: Path, lineno: int) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise ValueError(
            f"{path}, line {lineno}: interval_s {text!r} is not a number of seconds > 0"
        )
    return value


def load_counts_trace(path: str | os.PathLike[str]) -> CountsTrace:
    """Read a counts-per-interval trace file.

    Two layouts are accepted (UTF-8 text; blank lines and ``#`` comments are ignored):

    * one non-negative integer per line;
    * CSV with a header row that has a ``count`` column, and optionally an ``interval_s``
      column (the same value on every row); other columns are ignored.

    The interval length may also be given by a comment line ``# interval_s: 60``.

    Args:
        path: The file.

    Returns:
        The counts (int64, shape ``(n,)``) and the interval length in seconds, or None if the
        file does not give one.

    Raises:
        FileNotFoundError: If the file does not exist (the message names it).
        ValueError: On a malformed file: non-integer or negative count, wrong number of columns,
            no ``count`` column, inconsistent ``interval_s``, or no counts at all. The message
            names the file and the line.
    """
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{p}: arrival trace file not found")
    if not p.is_file():
        raise ValueError(f"{p}: arrival trace path is not a regular file")
    try:
        text = p.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"{p}: arrival trace is not UTF-8 text ({exc})") from exc

    interval: float | None = None
    interval_line = 0
    count_col: int | None = None  # None: plain layout (one integer per line)
    interval_col: int | None = None
    n_cols = 1
    first_data = True
    counts: list[int] = []

    def set_interval(value: float, lineno: int) -> None:
        nonlocal interval, interval_line
        if interval is not None and not math.isclose(value, interval, rel_tol=1e-9):
            raise ValueError(
                f"{p}, line {lineno}: interval_s {value:g} differs from {interval:g} given on "
                f"line {interval_line}; a trace has one interval length"
            )
        if interval is None:
            interval, interval_line = value, lineno

    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            match = _INTERVAL_COMMENT.match(line)
            if match:
                set_interval(_parse_interval(match.group(1), p, lineno), lineno)
            continue
        line = line.split("#", 1)[0].strip()
        fields = [f.strip() for f in line.split(",")]
        if first_data:
            first_data = False
            try:
                float(fields[0])
                is_header = False
            except ValueError:
                is_header = True
            if is_header:
                names = [f.lower() for f in fields]
                found = [c for c in _COUNT_COLUMNS if c in names]
                if not found:
                    raise ValueError(
                        f"{p}, line {lineno}: header {line!r} has no 'count' column "
                        "(expected one integer per line, or a CSV header with a 'count' column)"
                    )
                count_col = names.index(found[0])
                interval_col = names.index("interval_s") if "interval_s" in names else None
                n_cols = len(names)
                continue
        if count_col is None:
            if len(fields) != 1:
                raise ValueError(
                    f"{p}, line {lineno}: expected one integer per line, got {line!r} "
                    "(a CSV needs a header row with a 'count' column)"
                )
            counts.append(_parse_count(fields[0], p, lineno))
        else:
            if len(fields) != n_cols:
                raise ValueError(
                    f"{p}, line {lineno}: expected {n_cols} comma-separated columns as in the "
                    f"header, got {len(fields)}"
                )
            counts.append(_parse_count(fields[count_col], p, lineno))
            if interval_col is not None:
                set_interval(_parse_interval(fields[interval_col], p, lineno), lineno)
    if not counts:
        raise ValueError(
            f"{p}: no counts found (expected one integer per line, or a CSV with a header row "
            "containing a 'count' column)"
        )
    return CountsTrace(np.asarray(counts, dtype=np.int64), interval)


# --------------------------------------------------------------------------------------------
# scenario specs
# --------------------------------------------------------------------------------------------

_MISSING = object()

_SPEC_FIELDS: dict[str, tuple[str, ...]] = {
    "poisson": ("rate",),
    "mmpp": ("rates", "dwell_s", "switch_rates"),
    "diurnal": ("rate", "amplitude", "period_s", "phase"),
    "trace": ("path", "counts", "interval_s", "scale", "loop"),
    "azure": ("rate", "sigma", "corr_s", "jitter", "bursts_per_min", "burst_s", "burst_height"),
    "alibaba": (
        "rate",
        "level_sigma",
        "level_dwell_s",
        "sigma",
        "corr_s",
        "amplitude",
        "period_s",
        "phase",
    ),
    "azure-functions": ("path", "function", "scale", "start_minute", "loop"),
}


def _resolve_path(raw_path: Any, base_dir: str | os.PathLike[str] | None, where: str) -> Path:
    """A spec's ``path``, relative paths resolved against ``base_dir``."""
    if not isinstance(raw_path, str | os.PathLike) or not str(raw_path):
        raise ValueError(f"{where}.path: must be a file path string, got {raw_path!r}")
    path = Path(raw_path)
    if not path.is_absolute() and base_dir is not None:
        path = Path(base_dir) / path
    return path


def make_arrival(
    spec: Mapping[str, Any],
    base_dir: str | os.PathLike[str] | None = None,
    *,
    where: str = "arrival",
) -> ArrivalProcess:
    """Build an arrival process from a scenario dict.

    Accepted specs (optional fields in brackets)::

        {"kind": "poisson", "rate": R}
        {"kind": "mmpp", "rates": [R0, R1, ...], "dwell_s": [D0, D1, ...]}
        {"kind": "mmpp", "rates": [...], "switch_rates": [...] or [[...], ...]}
        {"kind": "diurnal", "rate": R, "amplitude": A, "period_s": P, ["phase": radians]}
        {"kind": "trace", "path": "traces/x.csv", ["interval_s": S], ["scale": 1.0],
         ["loop": true]}
        {"kind": "trace", "counts": [c0, c1, ...], "interval_s": S, ...}
        {"kind": "azure", "rate": R, ["sigma": 0.25], ["corr_s": 15], ["jitter": 0.15],
         ["bursts_per_min": 2], ["burst_s": 2], ["burst_height": 2]}
        {"kind": "alibaba", "rate": R, ["level_sigma": 0.25], ["level_dwell_s": 30],
         ["sigma": 0.12], ["corr_s": 3], ["amplitude": 0.2], ["period_s": 60], ["phase": 0]}
        {"kind": "azure-functions", "path": "traces/azure-functions-2019-sample.csv",
         ["function": hash-or-row-index], ["scale": 1.0], ["start_minute": 0], ["loop": true]}

    ``azure`` and ``alibaba`` are :class:`~edgegym.workload.traces.AzureLike` and
    :class:`~edgegym.workload.traces.AlibabaLike` (defaults there); ``azure-functions`` replays
    a file in the Azure Functions 2019 per-minute format with
    :class:`~edgegym.workload.traces.AzureFunctionsReplay` (every row summed unless ``function``
    picks one by HashFunction or 0-based row index).

    Args:
        spec: The dict, e.g. one tenant's ``arrival`` entry of a scenario.
        base_dir: Directory that relative trace paths are resolved against (usually the
            scenario file's directory); the current directory if None.
        where: Prefix for error messages, e.g. ``"my.yaml: tenants[2].arrival"``.

    Returns:
        The process.

    Raises:
        ValueError: On an unknown kind, an unknown, missing or out-of-range field, or a bad
            trace file; the message names the field and what is allowed.
        FileNotFoundError: If a trace file does not exist.
    """
    if not isinstance(spec, Mapping):
        raise ValueError(
            f"{where}: must be a mapping with a 'kind' field "
            f"({', '.join(ARRIVAL_KINDS)}), got {spec!r}"
        )
    kind = spec.get("kind", _MISSING)
    if kind is _MISSING:
        raise ValueError(f"{where}.kind: missing; allowed: {', '.join(ARRIVAL_KINDS)}")
    if not isinstance(kind, str) or kind.lower() not in _SPEC_FIELDS:
        raise ValueError(
            f"{where}.kind: unknown arrival kind {kind!r}; allowed: {', '.join(ARRIVAL_KINDS)}"
        )
    kind = kind.lower()
    allowed = _SPEC_FIELDS[kind]
    for key in spec:
        if key != "kind" and key not in allowed:
            raise ValueError(
                f"{where}: unknown field {key!r} for kind {kind!r}; "
                f"allowed fields: kind, {', '.join(allowed)}"
            )

    def need(key: str, what: str) -> Any:
        if key not in spec:
            raise ValueError(f"{where}.{key}: missing (kind {kind!r} needs it: {what})")
        return spec[key]

    def field(key: str) -> str:
        return f"{where}.{key}"

    if kind == "poisson":
        return Poisson(_check_real(need("rate", "requests/s >= 0"), field("rate"), lo=0.0))

    if kind == "mmpp":
        rates = _check_real_array(
            need("rates", "a list of per-state rates, requests/s >= 0"), field("rates"), lo=0.0
        )
        if ("dwell_s" in spec) == ("switch_rates" in spec):
            raise ValueError(
                f"{where}.dwell_s / {where}.switch_rates: give exactly one of dwell_s (mean "
                "seconds per visit to each state, > 0) or switch_rates (1/s per state, or an "
                "(S, S) matrix)"
            )
        try:
            if "dwell_s" in spec:
                dwell = _check_real_array(spec["dwell_s"], field("dwell_s"), lo=0.0, lo_open=True)
                return MMPP(rates, dwell)
            return MMPP(rates, switch_rates=spec["switch_rates"])
        except ValueError as exc:
            raise ValueError(f"{where}.{exc}") from exc

    if kind in ("azure", "alibaba", "azure-functions"):
        return _make_trace_arrival(kind, spec, base_dir, where)

    if kind == "diurnal":
        return Diurnal(
            mean_rate=_check_real(need("rate", "requests/s >= 0"), field("rate"), lo=0.0),
            amplitude=_check_real(
                need("amplitude", "a number in [0, 1)"),
                field("amplitude"),
                lo=0.0,
                hi=1.0,
                hi_open=True,
            ),
            period_s=_check_real(
                need("period_s", "seconds > 0"), field("period_s"), lo=0.0, lo_open=True
            ),
            phase=_check_real(spec.get("phase", 0.0), field("phase")),
        )

    # kind == "trace"
    scale = _check_real(spec.get("scale", 1.0), field("scale"), lo=0.0)
    loop = spec.get("loop", True)
    if not isinstance(loop, bool):
        raise ValueError(f"{where}.loop: must be true or false, got {loop!r}")
    interval_s: float | None = None
    if "interval_s" in spec:
        interval_s = _check_real(spec["interval_s"], field("interval_s"), lo=0.0, lo_open=True)
    if ("path" in spec) == ("counts" in spec):
        raise ValueError(
            f"{where}.path / {where}.counts: give exactly one of path (a counts trace file) "
            "or counts (an inline list of non-negative integers)"
        )
    if "counts" in spec:
        if interval_s is None:
            raise ValueError(f"{where}.interval_s: missing (inline counts need it: seconds > 0)")
        try:
            return TraceReplay(spec["counts"], interval_s, loop=loop, scale=scale)
        except ValueError as exc:
            msg = str(exc).replace("counts_per_interval", "counts")
            raise ValueError(f"{where}.{msg}") from exc
    path = _resolve_path(spec["path"], base_dir, where)
    try:
        trace = load_counts_trace(path)
    except FileNotFoundError as exc:
        raise FileNotFoundError(f"{where}.path: {exc}") from exc
    except ValueError as exc:
        raise ValueError(f"{where}.path: {exc}") from exc
    if interval_s is None:
        interval_s = trace.interval_s
    if interval_s is None:
        raise ValueError(
            f"{where}.interval_s: missing, and {path} does not give it either (add "
            "'# interval_s: 60' to the file or interval_s (seconds > 0) to the spec)"
        )
    return TraceReplay(trace.counts, interval_s, loop=loop, scale=scale)


def _make_trace_arrival(
    kind: str, spec: Mapping[str, Any], base_dir: str | os.PathLike[str] | None, where: str
) -> ArrivalProcess:
    """The ``azure``, ``alibaba`` and ``azure-functions`` kinds of :func:`make_arrival`."""
    from edgegym.workload import traces  # here: traces imports this module

    if kind in ("azure", "alibaba"):
        if "rate" not in spec:
            raise ValueError(f"{where}.rate: missing (kind {kind!r} needs it: requests/s >= 0)")
        rate = _check_real(spec["rate"], f"{where}.rate", lo=0.0)
        params = {k: v for k, v in spec.items() if k not in ("kind", "rate")}
        cls = traces.AzureLike if kind == "azure" else traces.AlibabaLike
        try:
            return cls(rate, **params)
        except ValueError as exc:
            raise ValueError(f"{where}.{exc}") from exc

    # kind == "azure-functions"
    if "path" not in spec:
        raise ValueError(
            f"{where}.path: missing (kind {kind!r} needs it: an Azure Functions 2019 "
            "invocation-count CSV)"
        )
    scale = _check_real(spec.get("scale", 1.0), f"{where}.scale", lo=0.0)
    loop = spec.get("loop", True)
    if not isinstance(loop, bool):
        raise ValueError(f"{where}.loop: must be true or false, got {loop!r}")
    function = spec.get("function")
    if function is not None and (
        isinstance(function, bool)
        or not isinstance(function, numbers.Integral | str)
        or (isinstance(function, str) and not function.strip())
        or (isinstance(function, numbers.Integral) and function < 0)
    ):
        raise ValueError(
            f"{where}.function: must be a HashFunction string or a row index >= 0, got {function!r}"
        )
    start_minute = spec.get("start_minute", 0)
    if (
        isinstance(start_minute, bool)
        or not isinstance(start_minute, numbers.Integral)
        or not 0 <= start_minute < traces.AZURE_FUNCTIONS_MINUTES
    ):
        raise ValueError(
            f"{where}.start_minute: must be an integer in [0, {traces.AZURE_FUNCTIONS_MINUTES}) "
            f"(a minute of the day), got {start_minute!r}"
        )
    path = _resolve_path(spec["path"], base_dir, where)
    try:
        table = traces.read_azure_functions(path)
    except FileNotFoundError as exc:
        raise FileNotFoundError(f"{where}.path: {exc}") from exc
    except ValueError as exc:
        raise ValueError(f"{where}.path: {exc}") from exc
    try:
        counts = table.select(function, "sum")
    except ValueError as exc:
        raise ValueError(f"{where}.{exc}") from exc
    return traces.AzureFunctionsReplay(
        counts, scale=scale, start_minute=int(start_minute), loop=loop
    )

"""Energy-Time Fairness (Liang et al., SEC'23): TF, EF and ETF(phi) time slices.

:func:`etf_time_slices` is Algorithm 1 exactly: every tenant first gets its phi-fair minimum
time, ``min(w_i / sum(w) * T * phi, d_i)`` in whole units (rounded down), then the remaining
units go one at a time to the tenant with the least weighted energy ``slice_i * P_i / w_i``
whose demand is not met (ties to the lower index). ``phi = 1`` is time fairness (TF), ``phi = 0``
energy fairness (EF, max-min weighted energy). :func:`phi_fair` is the largest phi at which
ETF still reaches perfect energy fairness (Eq. 15). The policies wrap them for
``edgegym/EnergyFairShare-v0``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

import gymnasium as gym
import numpy as np

from edgegym.baselines.base import Policy
from edgegym.families.energy.timeslice import fairness
from edgegym.workload.checks import Floats, Range, check

__all__ = ["ETFPolicy", "etf_time_slices", "fairness", "phi_fair"]


#: Power or weights per tenant: non-empty, finite and > 0.
_POSITIVE = Annotated[np.ndarray, Floats(Range(0, lo_open=True))]
_DEMANDS = Annotated[np.ndarray, Floats(Range(0))]
_PHI = Annotated[float, Range(0, 1)]
_UNITS = Annotated[int, Range(0)]


def _check(
    power: Sequence[float] | np.ndarray,
    weights: Sequence[float] | np.ndarray | None,
    phi: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    p = check(power, _POSITIVE, "power")
    w = np.ones_like(p) if weights is None else check(weights, _POSITIVE, "weights")
    if w.shape != p.shape:
        raise ValueError(f"weights: must have one entry per tenant ({p.size}), got {w.shape}")
    if phi is not None:
        check(phi, _PHI, "phi")
    return p, w


def etf_time_slices(
    power: Sequence[float] | np.ndarray,
    quantum: int,
    phi: float = 0.7,
    weights: Sequence[float] | np.ndarray | None = None,
    demands: Sequence[int] | np.ndarray | None = None,
) -> np.ndarray:
    """Algorithm 1 of the ETF paper: integer time units per tenant for one quantum.

    Args:
        power: (N,) power of each tenant while it runs, watts (> 0).
        quantum: T, the number of time units to hand out (>= 0).
        phi: Time-fair factor in [0, 1].
        weights: (N,) positive weights (default equal).
        demands: (N,) units each tenant can use (default: backlogged, T each).

    Returns:
        (N,) int64 time units; never above a demand; all T units are handed out unless every
        demand is met (Pareto efficiency).

    Raises:
        ValueError: On non-positive power or weights, phi outside [0, 1], a negative quantum
            or negative demands.
    """
    p, w = _check(power, weights, phi)
    t = check(quantum, _UNITS, "quantum")
    d = (
        np.full(p.size, t, dtype=np.float64)
        if demands is None
        else check(demands, _DEMANDS, "demands")
    )
    if d.shape != p.shape or not np.all(np.equal(np.floor(d), d)):
        raise ValueError(f"demands: must be {p.size} non-negative integers, got {d.tolist()}")
    d = d.astype(np.int64)
    # Line 1: phi-fair minimum in whole units, capped by demand (1e-9 guards float floors).
    slices = np.minimum(np.floor(w / w.sum() * t * float(phi) + 1e-9).astype(np.int64), d)
    energy = slices * p / w  # line 2
    remain = t - int(slices.sum())  # line 3
    while remain > 0:  # lines 4-9
        open_ = slices < d
        if not open_.any():
            break
        k = int(np.argmin(np.where(open_, energy, np.inf)))
        slices[k] += 1
        energy[k] = slices[k] * p[k] / w[k]
        remain -= 1
    return slices


def phi_fair(
    power: Sequence[float] | np.ndarray, weights: Sequence[float] | np.ndarray | None = None
) -> float:
    """Largest phi at which ETF reaches perfect (weighted) energy fairness (Eq. 15).

    Energy fairness gives tenant i the time ``T * (w_i / P_i) / sum_k (w_k / P_k)``; the phi-fair
    guarantee ``phi * T * w_i / sum(w)`` fits under it for every tenant (so the catch-up period
    can repatriate all the energy the guarantee costs, Eq. 15) exactly when
    ``phi <= sum(w) / (max_i P_i * sum_k (w_k / P_k))``. Continuous time (no unit rounding).
    """
    p, w = _check(power, weights)
    return float(min(1.0, w.sum() / (p.max() * np.sum(w / p))))


class ETFPolicy(Policy):
    """ETF(phi) on ``edgegym/EnergyFairShare-v0``: Algorithm 1 every quantum with the tenants'
    profiled power, weights and demands (``tf`` is phi = 1, ``ef`` is phi = 0)."""

    name = "etf"

    def __init__(self, env: gym.Env, phi: float = 0.7) -> None:
        super().__init__(env)
        self.phi = float(check(phi, _PHI, "phi"))

    def act(self) -> np.ndarray:
        """Time units per tenant slot (inactive slots get 0)."""
        snap = self.unwrapped.sim_state()
        out = np.zeros(snap.active.shape[0], dtype=np.int64)
        idx = np.flatnonzero(snap.active)
        if idx.size:
            out[idx] = etf_time_slices(
                snap.power[idx], snap.units, self.phi, snap.weights[idx], snap.demand_units[idx]
            )
        return out

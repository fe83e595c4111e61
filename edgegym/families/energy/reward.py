"""Reward terms of ``edgegym/EnergyFairShare-v0`` (named, weighted by the scenario's objective).

Per quantum, over the tenants present:

* ``fs``, ``ft``, ``fe``: system, time and energy fairness F_S = min(F_T, F_E) over the last
  ``fairness_horizon`` quanta (ETF §3; :func:`edgegym.families.energy.timeslice.fairness`).
  ``fs`` has weight 1 by default: the published objective.
* ``throughput``: requests served in the quantum over what the tenants present would serve
  alone at their top clock, on average.
* ``energy``: minus the quantum's energy over the GPU's maximum power times the quantum.

:meth:`edgegym.families.energy.dynamics.EnergyDynamics.step` returns them; the reward is their
weighted sum (:func:`edgegym.core.dynamics.weighted_reward`).
"""

from __future__ import annotations

from collections.abc import Mapping

#: Reward terms, in order; the scenario's ``objective`` has one weight per term.
TERMS = ("fs", "ft", "fe", "throughput", "energy")


def term_weights(objective: Mapping[str, float]) -> dict[str, float]:
    """Weight of each reward term: the scenario's ``objective`` entry of the same name."""
    return {t: float(objective[t]) for t in TERMS}


__all__ = ["TERMS", "term_weights"]

"""Reward terms of ``edgegym/MIGReconfig-v0`` (named, weighted by the scenario's objective).

* ``goodput``: requests served within their SLO *and* answered correctly in the step (MIGRator
  Eq. 6-9, in expectation over the deployed model's accuracy), divided by the episode's mean
  requests per step; the mean of this term over an episode is the episode's Goodput fraction.
* ``energy``: minus the step's energy over the GPU's maximum power times the basis (a fraction
  of the most the GPU could use); weight 0 by default, so the published objective is unchanged.

:meth:`edgegym.families.mig.dynamics.MIGDynamics.step` returns them; the reward is their
weighted sum (:func:`edgegym.core.dynamics.weighted_reward`).
"""

from __future__ import annotations

from collections.abc import Mapping

#: Reward terms, in order; the scenario's ``objective`` has one weight per term.
TERMS = ("goodput", "energy")


def term_weights(objective: Mapping[str, float]) -> dict[str, float]:
    """Weight of each reward term: the scenario's ``objective`` entry of the same name."""
    return {t: float(objective[t]) for t in TERMS}


__all__ = ["TERMS", "term_weights"]

"""Reward terms of ``edgegym/DAGOffload-v0`` (named, weighted by the scenario's objective).

A request's objective is its completion time plus theta times its accuracy loss (SRS/MRS
Eq. 9); the reward is its negative, spread over the request's epochs:

* ``completion``: minus the seconds the request's completion moved on (weight
  ``objective.completion``, 1 by default).
* ``accuracy``: minus the accuracy lost, ``sum_i (1 - A_i)`` over its tasks (weight theta,
  the scenario's top-level ``theta``).
* ``energy``: minus the placed node's joules / 1000 (weight ``objective.energy``, 0 by
  default, so the published objective is unchanged).

:class:`edgegym.families.dag.dynamics.DAGDynamics` returns them; the reward is their weighted
sum (:func:`edgegym.core.dynamics.weighted_reward`).
"""

from __future__ import annotations

from collections.abc import Mapping

#: Reward terms, in order.
TERMS = ("completion", "accuracy", "energy")


def term_weights(objective: Mapping[str, float], theta: float) -> dict[str, float]:
    """Weight of each reward term: ``objective.completion``, theta, ``objective.energy``."""
    return {
        "completion": float(objective["completion"]),
        "accuracy": float(theta),
        "energy": float(objective["energy"]),
    }


__all__ = ["TERMS", "term_weights"]

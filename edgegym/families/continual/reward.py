"""Named reward terms of the continual-learning family (weighted by the scenario objective).

Per decision step, over the interval since the previous decision:

* ``accuracy``: integral of inference accuracy, averaged over streams, divided by the window
  length, so a window contributes its window-averaged accuracy and an episode's return is the
  sum over windows (Ekya's objective, Eq. 1).
* ``a_min_shortfall``: minus the same integral of ``max(0, a_MIN - accuracy)``.
* ``energy``: minus the energy used, as a fraction of the energy all GPUs draw at full power
  over one window (weight 0 by default, so the published objective is unchanged).

Terms are signed as in every edgegym family: the reward is ``sum(weight * term)`` with the
scenario's non-negative ``objective`` weights (:func:`edgegym.core.dynamics.weighted_reward`;
the weight of each term is the objective entry :data:`WEIGHT_KEYS` names), so penalties are
negative terms. :class:`edgegym.families.continual.dynamics.ContinualDynamics` computes them,
batched (``Record.terms``).
"""

from __future__ import annotations

from collections.abc import Mapping

#: Reward terms, in order.
TERMS = ("accuracy", "a_min_shortfall", "energy")
#: Objective weight of each reward term (the scenario's ``objective`` keys).
WEIGHT_KEYS = {"accuracy": "accuracy", "a_min_shortfall": "a_min", "energy": "energy"}


def term_weights(objective: Mapping[str, float]) -> dict[str, float]:
    """Weight of each reward term, from the scenario's ``objective`` (keyed as there)."""
    return {t: float(objective[WEIGHT_KEYS[t]]) for t in TERMS}


__all__ = ["TERMS", "WEIGHT_KEYS", "term_weights"]

"""Named reward terms of the continual-learning family (weighted by the scenario objective).

Per decision step, over the interval since the previous decision:

* ``accuracy``: integral of inference accuracy, averaged over streams, divided by the window
  length, so a window contributes its window-averaged accuracy and an episode's return is the
  sum over windows (Ekya's objective, Eq. 1).
* ``a_min_shortfall``: minus the same integral of ``max(0, a_MIN - accuracy)``.
* ``energy``: minus the energy used, as a fraction of the energy all GPUs draw at full power
  over one window (weight 0 by default, so the published objective is unchanged).

Terms are signed as in every edgegym family: the reward is ``sum(weight * term)`` with the
scenario's non-negative ``objective`` weights, so penalties are negative terms.
"""

from __future__ import annotations

import numpy as np

TERMS = ("accuracy", "a_min_shortfall", "energy")
WEIGHT_KEYS = {"accuracy": "accuracy", "a_min_shortfall": "a_min", "energy": "energy"}


def segment_terms(
    acc_integral: np.ndarray,
    duration_s: float,
    energy_j: float,
    a_min: float,
    window_s: float,
    full_power_w: float,
) -> dict[str, float]:
    """Reward terms of one executed segment (constant accuracy over ``duration_s``)."""
    if duration_s <= 0:
        return dict.fromkeys(TERMS, 0.0)
    n = acc_integral.shape[0]
    acc = acc_integral / duration_s
    shortfall = np.maximum(0.0, a_min - acc) * duration_s
    return {
        "accuracy": float(acc_integral.sum()) / (n * window_s),
        "a_min_shortfall": -float(shortfall.sum()) / (n * window_s),
        "energy": -energy_j / (full_power_w * window_s),
    }


def combine(terms: dict[str, float], weights: dict[str, float]) -> float:
    """Weighted sum of the (signed) terms."""
    return float(sum(weights[WEIGHT_KEYS[t]] * v for t, v in terms.items()))

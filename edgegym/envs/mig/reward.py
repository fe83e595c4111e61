"""Reward terms of ``edgegym/MIGReconfig-v0`` (named, weighted by the scenario's objective).

* ``goodput``: requests served within their SLO *and* answered correctly in the step (MIGRator
  Eq. 6-9, in expectation over the deployed model's accuracy), divided by the episode's mean
  requests per step; the mean of this term over an episode is the episode's Goodput fraction.
* ``energy``: minus the step's energy over the GPU's maximum power times the basis (a fraction
  of the most the GPU could use); weight 0 by default, so the published objective is unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from edgegym.envs.mig.env import MIGReconfigEnv

TERMS = ("goodput", "energy")


def terms(env: MIGReconfigEnv, delta: Mapping[str, np.ndarray], dt: float) -> dict[str, float]:
    """The unweighted terms of one step."""
    spec = env.spec_
    full = spec.power.max_power_w * max(spec.basis_s, 1e-9)
    return {
        "goodput": float(delta["goodput"].sum()) / env.norm,
        "energy": -float(delta["energy_j"][0]) / full,
    }


def combine(values: Mapping[str, float], weights: Mapping[str, float]) -> float:
    """Weighted sum of the terms."""
    return float(sum(weights.get(k, 0.0) * v for k, v in values.items()))

"""The energy family's catalogue of joint actions for its flat view
(``edgegym/EnergyFairShare-Flat-v0``; :class:`edgegym.wrappers.DiscreteActions`).

Every split of the quantum's ``U`` units among the scenario's tenant slots (padding slots,
always empty, get 0) that hands out all ``U`` units, in steps of ``U / m`` with ``m = U`` when
the C(m + n - 1, n - 1) splits fit ``max_actions`` (otherwise the largest ``m`` that fits;
units by largest remainder, ties to the lower slot), in lexicographic order of the first
tenant's share ascending. With ``m = U`` every work-conserving split is there, so ETF's, TF's
and EF's actions for backlogged tenants are; absent tenants and demands below the split are
clipped by the repair (as the environment would).
"""

from __future__ import annotations

import itertools
import math

import gymnasium as gym
import numpy as np

from edgegym.hardware.mps import largest_remainder


def _compositions(m: int, parts: int) -> np.ndarray:
    """Every way to write ``m`` as an ordered sum of ``parts`` non-negative integers,
    lexicographically by the first part ascending."""
    rows = []
    for bars in itertools.combinations(range(m + parts - 1), parts - 1):
        cuts = (-1, *bars, m + parts - 1)
        rows.append([cuts[i + 1] - cuts[i] - 1 for i in range(parts)])
    return np.asarray(rows, dtype=np.int64).reshape(-1, parts)


def catalogue(env: gym.Env, max_actions: int) -> np.ndarray:
    """The catalogue (module docstring)."""
    p = env.unwrapped.params
    slots, live, units = int(p.n), int(p.n_tenants), int(p.units)
    live = max(1, min(live, slots))
    m = units
    while m > 1 and math.comb(m + live - 1, live - 1) > max_actions:
        m -= 1
    chunks = _compositions(m, live)
    out = np.zeros((chunks.shape[0], slots), dtype=np.int64)
    out[:, :live] = chunks if m == units else largest_remainder(chunks, units)
    return out

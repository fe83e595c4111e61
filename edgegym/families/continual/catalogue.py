"""The continual family's catalogue of joint actions for its flat view
(``edgegym/ContinualLearning-Flat-v0``; :class:`edgegym.wrappers.DiscreteActions`).

Joint actions that treat every stream alike, as Ekya's uniform baselines do. Entry 0: no
retraining, each stream's even share ``G / V`` (on the delta grid) to inference (the
``no-retrain`` baseline's split). Then for every retraining configuration ``c`` (scenario
order) and inference fraction ``f`` in :data:`FRACTIONS`: every stream retrains with ``c``,
inference gets ``floor(f * G / V)`` and retraining the rest of ``G / V`` (both on the delta
grid, as ``uniform`` computes them). The inference configuration of a share is the most
accurate one that keeps up at nominal demand within it (the cheapest when none does). Padding
slots stay zero. So the ``uniform-c{1,2}-{30,50,90}`` and ``no-retrain`` actions at a window
start are in the catalogue (up to PickConfigs' demand- and a_MIN-aware choice of inference
configuration). A stream with a job in flight keeps its configuration (repair), as the
environment requires.
"""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np

#: Inference fractions of the catalogue (Ekya's uniform 30/50/90 % and between).
FRACTIONS = (0.1, 0.3, 0.5, 0.7, 0.9)


def _grid(share: float, quantum: float) -> float:
    return math.floor(share / quantum + 1e-9) * quantum


def catalogue(env: gym.Env, max_actions: int) -> tuple[np.ndarray, list[str]]:
    """The catalogue (module docstring) and its labels (``"none"``,
    ``"c{configuration}@{fraction}"``); ``max_actions`` unused."""
    u = env.unwrapped
    spec = u.spec_
    slots, n, q = int(u.max_streams), int(spec.streams), float(spec.quantum)
    per_stream = spec.gpus / n
    need = np.asarray(spec.infer_share, dtype=float) / float(spec.speed)
    factor = np.asarray(spec.infer_factor, dtype=float)
    levels = spec.levels

    def infer_cfg(share: float) -> int:
        fits = need <= share + 1e-9
        if not fits.any():
            return int(np.argmin(need))
        return int(np.argmax(np.where(fits, factor, -np.inf)))

    def quanta(share: float) -> int:
        return min(levels - 1, int(math.floor(share / q + 1e-6)))

    rows, labels = [], ["none"]
    share_all = _grid(per_stream, q)
    rows.append((0, infer_cfg(share_all), 0, quanta(share_all)))
    for c in range(len(spec.retrain_configs)):
        for f in FRACTIONS:
            share_i = _grid(per_stream * f, q)
            share_r = _grid(per_stream - share_i, q)
            rows.append((1 + c, infer_cfg(share_i), quanta(share_r), quanta(share_i)))
            labels.append(f"c{c}@{f:g}")
    out = np.zeros((len(rows), slots, 4), dtype=np.int64)
    out[:, :n, :] = np.asarray(rows, dtype=np.int64)[:, None, :]
    return out.reshape(len(rows), slots * 4), labels

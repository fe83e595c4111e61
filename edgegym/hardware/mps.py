"""MPS (SM-share) helpers: projecting requested shares onto a quantum grid, share -> speed, and
the slowdown of work that shares the SMs.

Shares are in GPUs (1.0 = one whole GPU); Ekya allocates GPU time to jobs in quanta of
``delta`` (its thief scheduler steals in steps of delta), which :func:`quantize_shares`
enforces. :func:`share_speedup` is a modelling choice, not a measured curve: sub-linear (for
``alpha < 1``) inside one GPU, and ``multi_gpu_efficiency`` per extra GPU beyond one.
:func:`interfered` is MPS interference, with the slowdowns measured on an H200 as constants.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "MPS_INFERENCE_SLOWDOWN",
    "MPS_RETRAIN_SLOWDOWN",
    "RESNET18_MPS_INFERENCE_SLOWDOWN",
    "RESNET18_MPS_RETRAIN_SLOWDOWN",
    "interfered",
    "largest_remainder",
    "quantize_shares",
    "share_speedup",
    "slowdowns",
]

#: MPS interference between inference and retraining sharing one GPU's SMs, measured on an
#: NVIDIA H200 on 2026-11-27 (``tools/gpu/mps_regime.py``; torch fp32, 224x224; docs/real-gpu.md):
#: inference (batch 8, share 100 - p) beside retraining (batch 32, share p), p = 25/50/75%,
#: against each alone at the same share. Inference lost 15.3% of its throughput on average
#: (ResNet50 14-39%, ViT-B/16 4-5%), retraining 3.6% (ResNet50 2.5-8.7%, ViT-B/16 1.4-1.9%).
MPS_INFERENCE_SLOWDOWN = 0.153
MPS_RETRAIN_SLOWDOWN = 0.036
#: The same measurement for ResNet18 (Ekya's edge model) beside its own retraining: inference
#: lost 2.0% at p = 50% (alone at 75% was not measured), retraining 4.0 / 4.6% at p = 25 / 50%.
RESNET18_MPS_INFERENCE_SLOWDOWN = 0.020
RESNET18_MPS_RETRAIN_SLOWDOWN = 0.043

_EPS = 1e-9  # tolerance when converting floats to whole quanta


def quantize_shares(
    shares: ArrayLike, quantum: float, capacity: float = 1.0, *, as_quanta: bool = False
) -> NDArray[np.float64] | NDArray[np.int64]:
    """Project requested shares onto multiples of ``quantum`` that sum to at most ``capacity``.

    Deterministic rule, computed in whole quanta (integers, so no float drift):

    1. ``q_i = floor(shares_i / quantum)`` and ``C = floor(capacity / quantum)`` (each with a
       1e-9 tolerance, so 0.3 / 0.1 counts as 3 quanta).
    2. If ``sum(q) <= C`` return ``q``: feasible on-grid requests come back unchanged.
    3. Otherwise scale to ``t_i = q_i * C / sum(q)``, take ``floor(t_i)`` (exact integer
       division) and hand the ``C - sum(floor(t))`` leftover quanta out one each, by largest
       fractional remainder of ``t_i``, ties to the lower index. The result sums to exactly
       ``C`` and never exceeds ``q_i`` for any request.

    Args:
        shares: Requested shares in GPUs, shape (n,), non-negative and finite.
        quantum: Grid step in GPUs (> 0), e.g. 0.1.
        capacity: Total shares available in GPUs (>= 0).
        as_quanta: Return integer quanta instead of shares.

    Returns:
        Shape (n,): ``quanta * quantum`` as float64, or the int64 quanta if ``as_quanta``.

    Raises:
        ValueError: On negative / non-finite shares, a non-positive quantum or negative capacity.
    """
    x = np.asarray(shares, dtype=np.float64)  # (n,)
    if x.ndim != 1:
        raise ValueError(f"shares must be 1-D, got shape {x.shape}")
    if not np.all(np.isfinite(x)) or np.any(x < 0):
        raise ValueError("shares must be finite and non-negative")
    if not quantum > 0:
        raise ValueError(f"quantum must be > 0, got {quantum}")
    if not capacity >= 0:
        raise ValueError(f"capacity must be >= 0, got {capacity}")

    q = np.floor(x / quantum + _EPS).astype(np.int64)  # (n,) requested quanta
    cap = int(np.floor(capacity / quantum + _EPS))
    if int(q.sum()) > cap:
        q = largest_remainder(q[None, :], cap)[0]
    return q if as_quanta else q * quantum


def largest_remainder(q: ArrayLike, total: int | ArrayLike) -> NDArray[np.int64]:
    """Rows of whole units rescaled to sum to exactly ``total``, by largest remainder.

    Each row ``q`` (non-negative integers, positive sum ``S``) becomes ``floor(q * total /
    S)`` (exact integer division) plus one unit each for the ``total - sum(floor)`` entries
    with the largest remainders ``q * total mod S``, ties to the lower index: the rule of
    :func:`quantize_shares` (rows over capacity scaled down) and of the energy family's
    catalogue (splits of ``m`` chunks scaled up onto ``U`` units). Exact integers, so equal
    remainders are equal (no float rounding decides a tie).

    Args:
        q: (M, n) non-negative integers, every row with a positive sum.
        total: Units each row sums to afterwards (>= 0): one for all rows, or (M,) one each.

    Returns:
        (M, n) int64.
    """
    q = np.asarray(q, dtype=np.int64)
    sums = q.sum(axis=1, keepdims=True)  # (M, 1)
    if np.ndim(total):
        total = np.asarray(total, dtype=np.int64).reshape(-1, 1)  # (M, 1)
    else:
        total = int(total)
    scaled = q * total
    base = scaled // sums
    remainder = scaled % sums
    leftover = total - base.sum(axis=1, keepdims=True)  # (M, 1)
    # Rank of each entry when sorted by remainder, largest first, ties to the lower index.
    order = np.argsort(-remainder, axis=1, kind="stable")
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.broadcast_to(np.arange(q.shape[1]), q.shape), axis=1)
    return base + (rank < leftover)


def interfered(rate: ArrayLike, shared: ArrayLike, slowdown: float) -> NDArray[np.float64]:
    """``rate`` where the work has the GPU to itself, ``1 - slowdown`` of it where it shares
    the GPU's SMs by MPS with other work (``shared``, broadcast against ``rate``): the one rule
    of MPS interference, in every family that models it."""
    rate = np.asarray(rate, dtype=np.float64)
    return np.where(shared, rate * (1.0 - slowdown), rate)


def slowdowns(section: Mapping[str, Any]) -> tuple[float, float]:
    """``(inference, retraining)`` slowdowns of a scenario's ``mps`` section: its
    ``inference_slowdown`` and ``retrain_slowdown`` where ``interference`` is on, else none."""
    if not section["interference"]:
        return 0.0, 0.0
    return float(section["inference_slowdown"]), float(section["retrain_slowdown"])


def share_speedup(
    share: ArrayLike, alpha: float = 1.0, multi_gpu_efficiency: float = 0.9
) -> NDArray[np.float64]:
    """Throughput of a job given ``share`` GPUs, relative to one whole GPU.

    ``speed = min(s, 1) ** alpha + max(s - 1, 0) * multi_gpu_efficiency``.

    Args:
        share: Share(s) in GPUs, any shape, >= 0.
        alpha: Exponent inside one GPU (1 = linear in SM share, < 1 = diminishing returns).
        multi_gpu_efficiency: Throughput of each GPU beyond the first.

    Returns:
        Relative throughput, same shape as ``share``.

    Raises:
        ValueError: On a negative share or non-positive ``alpha``.
    """
    s = np.asarray(share, dtype=np.float64)
    if np.any(s < 0):
        raise ValueError("share must be >= 0")
    if not alpha > 0:
        raise ValueError(f"alpha must be > 0, got {alpha}")
    return np.minimum(s, 1.0) ** alpha + np.maximum(s - 1.0, 0.0) * multi_gpu_efficiency

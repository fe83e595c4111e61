"""What both DAG dynamics start alike (``edgegym/DAGOffload-v0``): each env's drawn episode (its
servers and the requests' arrivals and applications), the state fields every episode starts
with, the pools' data fractions and the whole-episode numbers."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from edgegym.families.dag.cluster import EdgeCluster
from edgegym.families.dag.params import DAGParams
from edgegym.families.dag.reward import TERMS

_MB_PER_GBPS = 125.0
_ARRIVAL_BINS = 1000

__all__ = [
    "DAGDynamicsBase",
    "EpisodeStart",
    "after_retraining",
    "draw_episode",
    "episode_start",
    "pool_fraction",
]


def draw_episode(
    params: DAGParams, rng: np.random.Generator
) -> tuple[EdgeCluster, np.ndarray, np.ndarray]:
    """One env's episode, drawn from ``rng`` (always in this order): its servers (speeds,
    links, storage bandwidth), the (R,) arrival times (the arrival process over the run,
    time-scaled to exactly R requests), the (R,) application of each request, and last the
    controller's bandwidth to each server (drawn last, so the draws before it are those of
    the version that had one rate for the controller and storage)."""
    p = params
    lo, hi = p.speed_tflops
    speed = rng.uniform(lo, hi, p.e) / hi  # 1 = the fastest server in the range
    lo, hi = p.link_gbps
    link = rng.uniform(lo, hi, (p.e, p.e)) * _MB_PER_GBPS
    link = (link + link.T) / 2
    lo, hi = p.storage_gbps
    storage = rng.uniform(lo, hi, p.e) * _MB_PER_GBPS
    dt = p.duration / _ARRIVAL_BINS
    counts = p.arrival.counts(_ARRIVAL_BINS, dt, rng).astype(float)
    if counts.sum() <= 0:
        counts = np.ones(_ARRIVAL_BINS)
    edges = np.linspace(0.0, p.duration, _ARRIVAL_BINS + 1)
    cdf = np.concatenate([[0.0], np.cumsum(counts)]) / counts.sum()
    r = p.n_requests
    q = (np.arange(r) + rng.uniform(size=r)) / r
    apps = rng.choice(len(p.apps), size=r, p=p.app_weights)
    lo, hi = p.controller_gbps
    controller = rng.uniform(lo, hi, p.e) * _MB_PER_GBPS
    cluster = EdgeCluster(speed, np.full(p.e, p.units), link, controller, storage)
    return cluster, np.interp(q, cdf, edges), apps


def pool_fraction(
    params: DAGParams,
    state: EpisodeStart,
    env: np.ndarray | int,
    idx: np.ndarray,
    t: np.ndarray | float,
) -> np.ndarray:
    """(..., H) fraction of each configuration's data the pools of models ``idx`` (...) of
    envs ``env`` hold at ``t`` (1 without pools): a retraining uses ``min(b_h, pool)`` and
    its cost and gain scale with it."""
    bt = state.base_time[env, idx]
    pool = state.pool_mb[env, idx] + params.m_pool_rate[idx] * np.maximum(0.0, t - bt)
    frac = np.minimum(1.0, pool[..., None] / np.maximum(params.opt_data, 1e-12))
    return np.where(params.m_pooled[idx][..., None], frac, 1.0)


def after_retraining(
    params: DAGParams, idx: np.ndarray, now: np.ndarray, frac: np.ndarray
) -> np.ndarray:
    """(..., H) accuracy of models ``idx`` (...) after retraining with each option, from their
    accuracy ``now`` (...) and the options' data fractions ``frac`` (..., H): each closes
    ``gain x fraction`` of the gap to the model's ceiling."""
    gain = params.opt_gain * frac
    return now[..., None] + gain * (params.m_ceiling[idx] - now)[..., None]


class DAGDynamicsBase:
    """What both dynamics share: the reward terms and the whole-episode numbers."""

    terms: tuple[str, ...] = TERMS

    def metrics(self, params: DAGParams, state: EpisodeStart, i: int) -> dict[str, float]:
        """Env ``i``'s whole-episode numbers (its ``info["episode_metrics"]``)."""
        k = params.n_requests
        return {
            "objective": float(state.total_objective[i]) / k,
            "completion_s": float(state.total_completion[i]) / k,
            "accuracy": float(state.total_accuracy[i]) / k,
            "retrainings": float(state.retrainings[i]),
            "energy_j": float(state.energy_j[i]),
        }


@dataclass
class EpisodeStart:
    """The state fields both DAG dynamics start alike (:func:`episode_start` builds them):
    arrivals, models, totals and the drawn servers' speeds and links (leading axis N)."""

    times: np.ndarray  # (N, R) arrival time of each request
    app_of: np.ndarray  # (N, R) int64 application of each request
    base_acc: np.ndarray  # (N, M) accuracy of each model at its last retraining
    base_time: np.ndarray  # (N, M) time of each model's last retraining
    pool_mb: np.ndarray  # (N, M) pooled request inputs since the last retraining
    next: np.ndarray  # (N,) int64 requests admitted so far (the next one to admit)
    total_objective: np.ndarray  # (N,) sum of the finished requests' objectives
    total_completion: np.ndarray  # (N,) sum of their completion times
    total_accuracy: np.ndarray  # (N,) sum of the admitted requests' mean accuracy
    retrainings: np.ndarray  # (N,) int64 retraining nodes added
    energy_j: np.ndarray  # (N,) joules of the placed nodes
    busy: np.ndarray  # (N, E) resource-unit seconds used per server
    horizon: np.ndarray  # (N,) latest finish so far
    speed: np.ndarray  # (N, E) server speeds (as in the cluster)
    source_mb_s: np.ndarray  # (N, E) bandwidth from the controller to each server
    storage_mb_s: np.ndarray  # (N, E) bandwidth from storage to each server
    mean_inv_speed: np.ndarray  # (N,) mean over servers of 1 / speed


def episode_start(
    p: DAGParams, rngs: Sequence[np.random.Generator]
) -> tuple[list[EdgeCluster], dict[str, np.ndarray]]:
    """Each env's drawn cluster and the state fields both dynamics start alike: arrivals,
    models, zero totals and the servers' speeds (env ``i`` draws from ``rngs[i]`` only)."""
    m, n_models = len(rngs), len(p.model_names)
    times = np.zeros((m, p.n_requests))
    app_of = np.zeros((m, p.n_requests), dtype=np.int64)
    speeds = np.zeros((m, p.e))
    sources = np.zeros((m, p.e))
    storages = np.zeros((m, p.e))
    inv = np.zeros(m)
    clusters = []
    for j, rng in enumerate(rngs):
        cluster, times[j], app_of[j] = draw_episode(p, rng)
        clusters.append(cluster)
        inv[j] = float(np.mean(1.0 / cluster.speed))
        speeds[j], sources[j], storages[j] = cluster.speed, cluster.source, cluster.storage
    return clusters, {
        "times": times,
        "app_of": app_of,
        "base_acc": np.tile(p.m_start, (m, 1)),
        "base_time": np.zeros((m, n_models)),
        "pool_mb": np.zeros((m, n_models)),
        "next": np.zeros(m, dtype=np.int64),
        "total_objective": np.zeros(m),
        "total_completion": np.zeros(m),
        "total_accuracy": np.zeros(m),
        "retrainings": np.zeros(m, dtype=np.int64),
        "energy_j": np.zeros(m),
        "busy": np.zeros((m, p.e)),
        "horizon": np.zeros(m),
        "speed": speeds,
        "source_mb_s": sources,
        "storage_mb_s": storages,
        "mean_inv_speed": inv,
    }

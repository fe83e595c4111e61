"""Observation encoding of the continual-learning family (one-level ``Dict`` of ``Box``).

``streams`` (V_max, 9 + 2C), one row per stream, zero rows for padding:

====  ==========================================================================
col   feature (all in [0, 1])
====  ==========================================================================
0     stream present (1) or padding (0)
1     accuracy of the deployed model on the current window's data
2     a retraining job is in flight
3     the stream already retrained in this window
4     progress of the job in flight
5     validation accuracy of the job in flight (accuracy-vs-progress curve)
6     share the best inference configuration needs at the current demand, / G
7     share held by the retraining job, / G
8     share held by the inference job, / G
9+c   micro-profiler estimate of post-retraining accuracy with configuration c
9+C+c estimated GPU-seconds of configuration c / (G * window length), capped at 1
====  ==========================================================================

``stream_mask`` (V_max,): 1 for present streams. ``globals`` (6,): time left in the window /
window length, window index / windows, GPUs / 64, free share / G, a_MIN, quantum / G.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from gymnasium import spaces

from edgegym.workload.continual import progress_accuracy

if TYPE_CHECKING:
    from edgegym.envs.continual.env import ContinualLearningEnv

N_STREAM_BASE = 9
N_GLOBAL = 6


def make_space(n_configs: int, max_streams: int) -> spaces.Dict:
    """Observation space for ``n_configs`` retraining configurations."""
    width = N_STREAM_BASE + 2 * n_configs
    return spaces.Dict(
        {
            "streams": spaces.Box(0.0, 1.0, (max_streams, width), dtype=np.float32),
            "stream_mask": spaces.Box(0.0, 1.0, (max_streams,), dtype=np.float32),
            "globals": spaces.Box(0.0, 1.0, (N_GLOBAL,), dtype=np.float32),
        }
    )


def encode(env: ContinualLearningEnv) -> dict[str, np.ndarray]:
    """Observation of the environment's current state."""
    spec, eng = env.spec_, env.engine
    t, a = eng.tenants, eng.alloc
    n, g = spec.streams, float(spec.gpus)
    c = len(spec.retrain_configs)
    rows = np.zeros((env.max_streams, N_STREAM_BASE + 2 * c), dtype=np.float32)
    running = t.running
    cfg = np.maximum(t.job_cfg, 0)
    rate = env.curve_rate[cfg]
    est_target = env.est_post_acc[np.arange(n), cfg]
    rows[:n, 0] = 1.0
    rows[:n, 1] = t.model_acc
    rows[:n, 2] = running
    rows[:n, 3] = t.retrained
    rows[:n, 4] = t.progress
    rows[:n, 5] = np.where(
        running, progress_accuracy(t.model_acc, est_target, t.progress, rate), 0.0
    )
    rows[:n, 6] = np.minimum(1.0, env.infer_share_now.max(axis=1) / g)
    rows[:n, 7] = a.share_retrain / g
    rows[:n, 8] = a.share_infer / g
    rows[:n, 9 : 9 + c] = env.est_post_acc
    rows[:n, 9 + c :] = np.minimum(1.0, env.est_gpu_seconds / (g * spec.window_s))
    mask = np.zeros(env.max_streams, dtype=np.float32)
    mask[:n] = 1.0
    free = max(0.0, g - a.total) / g
    glob = np.array(
        [
            eng.time_left_s / spec.window_s,
            min(eng.window, spec.windows - 1) / max(spec.windows - 1, 1),
            min(1.0, g / 64.0),
            free,
            spec.a_min,
            min(1.0, spec.quantum / g),
        ],
        dtype=np.float32,
    )
    return {"streams": np.clip(rows, 0.0, 1.0), "stream_mask": mask, "globals": np.clip(glob, 0, 1)}

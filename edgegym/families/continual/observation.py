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
5     validation accuracy of the job in flight (accuracy-vs-progress curve from the
      deployed accuracy when it started to its current estimate)
6     share the best inference configuration needs at the current demand, / G
7     share held by the retraining job, / G
8     share held by the inference job, / G
9+c   micro-profiler estimate of post-retraining accuracy with configuration c (0 once
      the micro-profiler has pruned c)
9+C+c estimated GPU-seconds of configuration c / (G * window length), capped at 1
====  ==========================================================================

``stream_mask`` (V_max,): 1 for present streams. ``globals`` (6,): time left in the window /
window length, window index / windows, GPUs / 64, free share / G (what neither the jobs nor
the micro-profiler hold), a_MIN, quantum / G.

The encoding itself is :meth:`edgegym.families.continual.dynamics.ContinualDynamics.observation`
(batched: every array gets a leading axis N); the single environment returns its row.
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from edgegym.families.continual.dynamics import N_GLOBAL, N_STREAM_BASE


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


def tenant_layout(obs: spaces.Space, nvec: list[int]) -> dict | None:
    """Where the per-tenant policies (``edgegym.agents.policies.tenants``) find each stream:
    the ``streams`` table of the ``Dict`` observation and its ``globals``. A stream's action
    entries are its retraining configuration (none, or one of them), its inference
    configuration, and its two GPU shares (fractions of a whole on a grid). ``None`` for an
    observation of another shape (a wrapped view)."""
    if not isinstance(obs, spaces.Dict):
        return None
    rows, columns = obs["streams"].shape
    return {
        "kind": "dict",
        "n_tenants": rows,
        "per_tenant": columns,
        "n_globals": obs["globals"].shape[0],
        "scaled": (False, False, True, True),
        "configs": int(nvec[0]) - 1,
    }


__all__ = ["N_GLOBAL", "N_STREAM_BASE", "make_space", "tenant_layout"]

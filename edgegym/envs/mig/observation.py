"""Observation encoding of ``edgegym/MIGReconfig-v0``: one flat ``Box``.

Per tenant (14 features, tenants in scenario order), rates normalised by the tenant's
throughput on a whole GPU (``ref``):

====  ==========================================================
0     arrival rate in the last second / ref
1     mean arrival rate over the last 10 s / ref
2     queued requests / ref
3     GPCs held by the inference task / 7
4     ready inference capacity (SLO-feasible) / ref
5     accuracy of the deployed model
6     accuracy after this window's retraining
7-9   retraining status one-hot: pending, running, done
10    progress of the retraining job in [0, 1]
11    GPCs held by the retraining job / 7
12    seconds the job needs on the smallest instance it fits / window
13    seconds of reconfiguration overhead of a new instance / 10
====  ==========================================================

Then 4 globals: time into the window / window, window index / windows, unassigned GPCs / 7,
fraction of assigned instances still reconfiguring. Values are clipped to [0, 10].
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from gymnasium import spaces

from edgegym.envs.mig.types import MIGSpec
from edgegym.hardware.mig import MIG_TOTAL_GPCS

if TYPE_CHECKING:
    from edgegym.envs.mig.env import MIGReconfigEnv

PER_TENANT = 14
GLOBALS = 4
HIGH = 10.0


def space(spec: MIGSpec) -> spaces.Box:
    """The observation space for a specification."""
    n = PER_TENANT * spec.n_tenants + GLOBALS
    return spaces.Box(0.0, HIGH, shape=(n,), dtype=np.float32)


def encode(env: MIGReconfigEnv) -> np.ndarray:
    """Encode the environment's current state."""
    spec = env.spec_
    eng = env._engine()
    ex = env.executor
    st = ex.state
    m = spec.n_tenants
    t = eng.cluster.time_s
    now = int(np.floor(t + 1e-9))
    ref = np.maximum(spec.size_rate[:, -1], 1e-9)
    last = env.arrivals[:, max(now - 1, 0) : max(now, 1)].mean(axis=1) if now > 0 else np.zeros(m)
    recent = env.arrivals[:, max(now - 10, 0) : now].mean(axis=1) if now > 0 else np.zeros(m)
    mu, _ = ex.capacity()
    status = env.status()
    k = min(eng.window, spec.windows - 1)
    total = env.profile.gpu_seconds[:, k, 0]
    tn = eng.tenants
    progress = np.where(status == 2, 1.0, tn.progress)
    left = np.where(status == 0, total, tn.job_left)
    zmin = np.searchsorted(np.array(spec.catalogue.sizes), spec.min_train_size)
    zmin = np.minimum(zmin, len(spec.catalogue.sizes) - 1)
    speed_min = spec.size_train_speed[np.arange(m), zmin]
    own_i = (st.task[None, :] == np.arange(m)[:, None]).astype(float)
    own_r = (st.task[None, :] == (m + np.arange(m))[:, None]).astype(float)
    gp = spec.catalogue.placement_size.astype(float)
    feats = np.zeros((m, PER_TENANT))
    feats[:, 0] = last / ref
    feats[:, 1] = recent / ref
    feats[:, 2] = st.backlog / ref
    feats[:, 3] = own_i @ gp / MIG_TOTAL_GPCS
    feats[:, 4] = mu / ref
    feats[:, 5] = tn.model_acc
    feats[:, 6] = env.profile.post_acc[:, k, 0]
    feats[np.arange(m), 7 + status] = 1.0
    feats[:, 10] = progress
    feats[:, 11] = own_r @ gp / MIG_TOTAL_GPCS
    feats[:, 12] = left / np.maximum(speed_min, 1e-9) / spec.window_s
    feats[:, 13] = spec.overhead_new_s / 10.0
    assigned = st.task >= 0
    glob = np.array(
        [
            (t - eng.window_start_s) / spec.window_s,
            eng.window / spec.windows,
            1.0 - float(gp[assigned].sum()) / MIG_TOTAL_GPCS,
            float(np.mean(st.ready_s[assigned] > t + 1e-9)) if assigned.any() else 0.0,
        ]
    )
    out = np.concatenate([feats.ravel(), glob])
    return np.clip(out, 0.0, HIGH).astype(np.float32)

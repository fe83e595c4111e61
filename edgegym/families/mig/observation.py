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
13    reconfiguration cost of the inference task (s) / 10
====  ==========================================================

Feature 13 is the task's Psi under ``overhead.rule: eq10`` (MIGRator Eq. 10), the overhead of a
new instance for the model under ``per-instance``.

Then 4 globals: time into the window / window, window index / windows, unassigned GPCs / 7,
fraction of assigned instances still reconfiguring. Values are clipped to [0, 10]. With MPS
shares (scenario ``mps.shares: n``) GPCs read shares and 7 reads n; while a task's new process
starts, its old share still serving counts as held too.

:meth:`edgegym.families.mig.dynamics.MIGDynamics.observation` computes it for a batch of envs.
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from edgegym.families.mig.params import MIGSpec

#: Features per tenant, globals, and the clip of every value (the layout above).
PER_TENANT = 14
GLOBALS = 4
HIGH = 10.0

__all__ = ["GLOBALS", "HIGH", "PER_TENANT", "space"]


def space(spec: MIGSpec) -> spaces.Box:
    """The observation space for a specification."""
    n = PER_TENANT * spec.n_tenants + GLOBALS
    return spaces.Box(0.0, HIGH, shape=(n,), dtype=np.float32)

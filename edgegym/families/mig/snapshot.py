"""Static specification and structured snapshot of the MIG reconfiguration family.

:class:`MIGSpec` and the retraining status codes live with the family's dynamics in
:mod:`edgegym.families.mig.dynamics`; they are re-exported here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from edgegym.families.mig.dynamics import DONE, PENDING, RUNNING
from edgegym.families.mig.params import FIT_EPS, MIGSpec

__all__ = ["DONE", "FIT_EPS", "PENDING", "RUNNING", "MIGSnapshot", "MIGSpec"]


@dataclass(frozen=True)
class MIGSnapshot:
    """Structured state handed to baselines by ``env.unwrapped.sim_state()``."""

    spec: MIGSpec
    time_s: float
    window: int
    step_in_window: int  # decision index inside the window
    signature: int  # current allocation signature (-1 before the first decision)
    placement_task: np.ndarray  # (P,) current task per placement
    status: np.ndarray  # (M,) PENDING / RUNNING / DONE
    job_left: np.ndarray  # (M,) GPU-seconds of retraining left (whole job if pending)
    model_acc: np.ndarray  # (M,) accuracy of the deployed model
    post_acc: np.ndarray  # (M,) accuracy after this window's retraining
    backlog: np.ndarray  # (M,) requests queued
    past_arrivals: np.ndarray  # (M, t) per-second arrivals observed so far this episode
    mask: np.ndarray  # (N,) valid signatures now
    overhead_s: np.ndarray  # (2M,) seconds a reconfiguration of each task costs now (Psi)
    window_arrivals: np.ndarray | None = None  # (M, S) true arrivals of this window (oracle)

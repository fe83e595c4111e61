"""Static specification and structured snapshot of the continual-learning family.

:class:`ContinualSpec` (what a scenario fixes) lives with the family's dynamics in
:mod:`edgegym.families.continual.dynamics` and is re-exported here.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from edgegym.core.state import Allocation
from edgegym.families.continual.params import ContinualSpec


@dataclass(frozen=True)
class ContinualSnapshot:
    """Structured state handed to analytic schedulers by ``env.unwrapped.sim_state()``.

    Schedulers decide from the micro-profiler's estimates (``est_*``); the true values are
    there for oracle variants and for analysis. ``est_post_acc`` holds an estimate for every
    configuration (a scheduler that profiles only some, such as Ekya-FixedConfig, reads those);
    ``profiled`` says which the micro-profiler still profiles after pruning, the list Ekya's
    thief chooses from. ``job_target_est`` is refined at each checkpoint of a job in flight.
    """

    gpus: int
    quantum: float
    window: int
    n_windows: int
    window_s: float
    time_left_s: float
    a_min: float
    share_alpha: float
    multi_gpu_efficiency: float
    model_acc: np.ndarray  # (V,) accuracy of the deployed models
    job_cfg: np.ndarray  # (V,) configuration of the retraining job in flight, -1 = none
    job_left: np.ndarray  # (V,) GPU-seconds of work left in that job
    job_target_est: np.ndarray  # (V,) estimated accuracy when that job finishes
    retrained: np.ndarray  # (V,) bool, already retrained in this window
    est_post_acc: np.ndarray  # (V, C) micro-profiler estimate of post-retraining accuracy
    est_gpu_seconds: np.ndarray  # (V, C) estimated retraining cost at a full GPU
    true_post_acc: np.ndarray  # (V, C)
    true_gpu_seconds: np.ndarray  # (V, C)
    infer_share: np.ndarray  # (V, L) share each inference configuration needs now
    infer_factor: np.ndarray  # (L,)
    uniform_configs: tuple[int, int]
    alloc: Allocation  # allocation currently applied
    profiled: np.ndarray | None = None  # (V, C) bool, configurations still profiled (None: all)
    reserved: float = 0.0  # GPUs the micro-profiler holds in this window
    retrain_wait_s: float = 0.0  # seconds until the window's labels exist (jobs may start)
    infer_base_share: np.ndarray | None = None  # (L,) share each configuration needs at demand 1

    @property
    def nominal_infer_share(self) -> np.ndarray:
        """(L,) share each inference configuration needs at nominal demand (the stream-wise
        mean of ``infer_share`` where the snapshot does not carry it)."""
        if self.infer_base_share is not None:
            return self.infer_base_share
        return np.atleast_2d(self.infer_share).mean(axis=0)

    @property
    def capacity(self) -> float:
        """GPUs a scheduler may allocate: all of them minus the micro-profiler's share."""
        return self.gpus - self.reserved

    @property
    def streams(self) -> int:
        """Number of streams V."""
        return int(self.model_acc.shape[0])

    @property
    def can_retrain(self) -> np.ndarray:
        """(V,) bool: a new retraining job may start (none in flight, none done this window,
        the window's labels exist)."""
        return (self.job_cfg < 0) & ~self.retrained & (self.retrain_wait_s <= 0.0)


__all__ = ["ContinualSnapshot", "ContinualSpec"]

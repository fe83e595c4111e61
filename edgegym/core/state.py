"""Typed simulator state: dataclasses of numpy arrays over tenants (shapes in comments).

A *tenant* is one stream / model / application. Each tenant owns an inference job and at most
one retraining job per retraining window. These are the one-env dataclasses of the executor
seam (:class:`edgegym.core.executor.Executor`: the simulated and real executors take and return
them); the families' batched states live in their dynamics modules
(``edgegym/families/<name>/dynamics.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields

import numpy as np


@dataclass
class Allocation:
    """Resources and configurations applied to every tenant until the next decision."""

    retrain_cfg: np.ndarray  # (V,) int, retraining configuration index, -1 = none
    infer_cfg: np.ndarray  # (V,) int, inference configuration index
    share_retrain: np.ndarray  # (V,) float, GPUs held by the retraining job
    share_infer: np.ndarray  # (V,) float, GPUs held by the inference job

    @classmethod
    def idle(cls, n: int) -> Allocation:
        """No retraining, configuration 0, no shares."""
        return cls(
            retrain_cfg=np.full(n, -1, dtype=np.int64),
            infer_cfg=np.zeros(n, dtype=np.int64),
            share_retrain=np.zeros(n),
            share_infer=np.zeros(n),
        )

    def copy(self) -> Allocation:
        """Deep copy."""
        return Allocation(*(getattr(self, f.name).copy() for f in fields(self)))

    @property
    def total(self) -> float:
        """GPUs allocated in all."""
        return float(self.share_retrain.sum() + self.share_infer.sum())


@dataclass
class TenantState:
    """Per-tenant dynamic state."""

    model_acc: np.ndarray  # (V,) accuracy of the deployed model on the current window's data
    job_cfg: np.ndarray  # (V,) int, configuration of the retraining job in flight, -1 = none
    job_left: np.ndarray  # (V,) GPU-seconds (full GPU, top clock) of work still to do
    job_total: np.ndarray  # (V,) GPU-seconds of the whole job
    job_target: np.ndarray  # (V,) accuracy the model will have when the job finishes
    retrained: np.ndarray  # (V,) bool, a retraining job finished in this window

    @classmethod
    def fresh(cls, model_acc: np.ndarray) -> TenantState:
        """Tenants with deployed models and no retraining job."""
        n = model_acc.shape[0]
        return cls(
            model_acc=model_acc.astype(float).copy(),
            job_cfg=np.full(n, -1, dtype=np.int64),
            job_left=np.zeros(n),
            job_total=np.zeros(n),
            job_target=np.zeros(n),
            retrained=np.zeros(n, dtype=bool),
        )

    @property
    def running(self) -> np.ndarray:
        """(V,) bool, a retraining job is in flight."""
        return self.job_cfg >= 0

    @property
    def progress(self) -> np.ndarray:
        """(V,) fraction of the in-flight job done (0 where none)."""
        return np.where(
            self.job_total > 0, 1.0 - self.job_left / np.maximum(self.job_total, 1e-12), 0.0
        )


@dataclass
class ClusterState:
    """The GPUs and the clock of the simulation."""

    gpus: int  # number of GPUs pooled by the scheduler
    clock_mhz: np.ndarray  # (G,) DVFS core clock of each GPU
    time_s: float = 0.0  # simulated time since the episode started
    energy_j: float = 0.0  # energy used since the episode started


@dataclass
class Segment:
    """What happened over one stretch of constant allocation (returned by the executor)."""

    duration_s: float  # length of the stretch
    work_done: np.ndarray  # (V,) GPU-seconds of retraining work done per tenant
    acc_integral: np.ndarray  # (V,) integral of inference accuracy over the stretch (acc * s)
    energy_j: float  # energy used by all GPUs over the stretch
    tenant_energy_j: np.ndarray = field(default_factory=lambda: np.zeros(0))  # (V,) attributed
    # Request-serving families (MIG) also report requests; empty where there are none.
    requests: np.ndarray = field(default_factory=lambda: np.zeros(0))  # (V,) arrived
    served_slo: np.ndarray = field(default_factory=lambda: np.zeros(0))  # (V,) served in SLO
    goodput: np.ndarray = field(default_factory=lambda: np.zeros(0))  # (V,) in SLO and correct
    correct: np.ndarray = field(default_factory=lambda: np.zeros(0))  # (V,) answered correctly


@dataclass
class MIGState:
    """Physical MIG state of one GPU: the task on each placement and when it can work."""

    task: np.ndarray  # (P,) int, task per placement (IDLE -1, ABSENT -2, else task index)
    ready_s: np.ndarray  # (P,) time the instance finishes its reconfiguration overhead
    since_s: np.ndarray  # (P,) time the placement got its current task (or became free)
    backlog: np.ndarray  # (M,) requests queued per tenant (fluid)

    @classmethod
    def empty(cls, n_placements: int, n_tenants: int) -> MIGState:
        """No instances, empty queues."""
        return cls(
            task=np.full(n_placements, -2, dtype=np.int64),
            ready_s=np.zeros(n_placements),
            since_s=np.zeros(n_placements),
            backlog=np.zeros(n_tenants),
        )

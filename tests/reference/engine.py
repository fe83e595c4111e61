"""The one-env event-exact engine: the reference the batched dynamics were checked against.

Until issue 13 the continual and MIG families ran on this engine; they now run on their
batched dynamics (:mod:`edgegym.families.continual.dynamics`, :mod:`edgegym.families.mig.dynamics`),
which apply the same rules over N envs. No environment uses it; it stays as the slow,
obviously-correct statement of the rules below: ``tests/sim/test_engine.py`` checks it against
hand-computed values, and ``tests/sim/test_engine_reference.py`` drives it and the batched continual
dynamics with the same allocations over whole episodes and requires the same models, times, energy
and window accuracies.

An :class:`Engine` holds the state (:mod:`edgegym.core.state`), the profile of the episode and
an executor. ``apply`` installs an allocation (starting, continuing or refusing retraining
jobs by the rules below), ``advance`` runs it to the next event (a retraining job finishing or
the requested horizon) in one closed-form stretch, and ``start_window`` applies data drift.

Rules, in one place:
* A retraining job starts when its tenant is given a configuration and a positive share; its
  configuration is then fixed until it finishes (Ekya leaves running configurations alone).
* A tenant retrains at most once per window (its data has been used); a job that has not
  finished when its window ends is dropped.
* Retraining is incremental: a job's result is the profile's ``window_post`` of the deployed
  model it starts from; when it finishes, the retrained model replaces the deployed one at
  once where it is more accurate (:func:`edgegym.workload.continual.swap_if_better`).
* Drift: at a window start the deployed model's accuracy becomes
  ``max(floor, accuracy - drift)``.
* Labels: no job starts in the first ``annotation_s`` seconds of a window (the golden model
  labels the window's data; Ekya subtracts the delay from the window).
* Checkpoints: a job is checkpointed every ``checkpoint_step[c]`` of its progress (strictly
  before it finishes); the checkpoint replaces the deployed model when it is more accurate
  (:func:`edgegym.families.continual.dynamics.checkpoint_update`). A checkpoint and the labels
  becoming ready are events: ``advance`` stops there.

The micro-profiler (estimates, pruning, its GPU share) is the environment's: it decides what a
scheduler sees and how much it may allocate, not how an allocation runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from edgegym.core.executor import Executor
from edgegym.core.metrics import Metrics
from edgegym.core.state import Allocation, ClusterState, Segment, TenantState
from edgegym.families.continual.dynamics import checkpoint_update, checkpoint_work
from edgegym.workload.continual import ContinualProfile, swap_if_better

_EPS = 1e-9


@dataclass
class Engine:
    """Event-exact simulator of retraining and inference on pooled GPUs.

    ``annotation_s``, ``checkpoint_step`` ((C,), ``inf``: no checkpoints) and ``curve_rate``
    ((C,), the accuracy-vs-progress curvature) are the scenario's ``profiler`` rules.
    """

    profile: ContinualProfile
    executor: Executor
    cluster: ClusterState
    window_s: float
    annotation_s: float = 0.0
    checkpoint_step: np.ndarray | None = None
    curve_rate: np.ndarray | None = None
    tenants: TenantState = field(init=False)
    alloc: Allocation = field(init=False)
    window: int = field(init=False, default=0)
    metrics: Metrics = field(init=False)
    start_acc: np.ndarray = field(init=False)  # (V,) deployed accuracy when each job started
    checkpoints: np.ndarray = field(init=False)  # (V,) checkpoints each job has passed

    def __post_init__(self) -> None:
        n_streams, n_windows, n_configs = self.profile.shape
        if self.checkpoint_step is None:
            self.checkpoint_step = np.full(n_configs, np.inf)
        if self.curve_rate is None:
            self.curve_rate = np.full(n_configs, 3.0)
        self.start_acc = np.zeros(n_streams)
        self.checkpoints = np.zeros(n_streams, dtype=np.int64)
        self.tenants = TenantState.fresh(self.profile.start_acc)
        self.alloc = Allocation.idle(n_streams)
        self.metrics = Metrics(n_streams, n_windows, self.window_s)
        self.window = 0

    # ------------------------------------------------------------------ time
    @property
    def n_windows(self) -> int:
        """Retraining windows in the episode."""
        return self.profile.shape[1]

    @property
    def window_start_s(self) -> float:
        """Simulated time at which the current window started."""
        return self.window * self.window_s

    @property
    def time_left_s(self) -> float:
        """Seconds left in the current window."""
        return max(0.0, self.window_start_s + self.window_s - self.cluster.time_s)

    @property
    def ready_s(self) -> float:
        """Time from which jobs may start in the current window (its labels exist)."""
        return self.window_start_s + self.annotation_s

    @property
    def done(self) -> bool:
        """The last window has ended."""
        return self.window >= self.n_windows

    def start_window(self, k: int) -> None:
        """Enter window ``k``: drop unfinished jobs, apply drift to the deployed models."""
        t = self.tenants
        self.window = k
        if k >= self.n_windows:
            return
        self.executor.start_window(k)
        if k > 0:
            t.model_acc = np.maximum(
                self.profile.floor[:, k], t.model_acc - self.profile.drift[:, k]
            )
        t.job_cfg[:] = -1
        t.job_left[:] = 0.0
        t.job_total[:] = 0.0
        t.job_target[:] = 0.0
        t.retrained[:] = False
        self.start_acc[:] = 0.0
        self.checkpoints[:] = 0
        self.alloc = Allocation.idle(t.model_acc.shape[0])

    # ------------------------------------------------------------ decisions
    def apply(self, alloc: Allocation) -> Allocation:
        """Install an allocation and return the one actually applied.

        Shares must already fit the GPUs (the environment projects them). Retraining requests
        of tenants that already retrained this window, or made before its labels exist, are
        refused (share 0); tenants with a job in flight keep its configuration.
        """
        t, k = self.tenants, self.window
        a = alloc.copy()
        a.retrain_cfg = np.where(t.running, t.job_cfg, a.retrain_cfg)
        waiting = self.cluster.time_s < self.ready_s - 1e-9
        refused = t.retrained | (a.retrain_cfg < 0) | (waiting & ~t.running)
        a.retrain_cfg[refused] = -1
        a.share_retrain[refused] = 0.0
        start = (~t.running) & (a.retrain_cfg >= 0) & (a.share_retrain > 0)
        if np.any(start):
            idx = np.flatnonzero(start)
            cfg = a.retrain_cfg[idx]
            t.job_cfg[idx] = cfg
            t.job_total[idx] = self.profile.gpu_seconds[idx, k, cfg]
            t.job_left[idx] = t.job_total[idx]
            t.job_target[idx] = self.profile.window_post(k, t.model_acc)[idx, cfg]
            self.start_acc[idx] = t.model_acc[idx]
            self.checkpoints[idx] = 0
        # A configuration chosen with no share does not start a job: report it as none.
        idle_request = (~t.running) & (a.retrain_cfg >= 0)
        a.retrain_cfg[idle_request] = -1
        self.alloc = a
        return a

    def advance(self, until_s: float) -> tuple[Segment, np.ndarray]:
        """Run the current allocation until ``until_s`` or the first event: a job completing
        or reaching a checkpoint, or the window's labels becoming ready.

        Returns:
            The executed segment and a (V,) bool mask of jobs that finished at its end.
        """
        t, c = self.tenants, self.cluster
        speed = self.executor.retrain_speed(self.alloc)
        active = t.running & (speed > 0)
        rate = np.where(active, speed, 1.0)
        finish = np.where(active, t.job_left / rate, np.inf)
        step = self.checkpoint_step[np.maximum(t.job_cfg, 0)]
        ckpt_time = np.where(
            active, checkpoint_work(t.job_total, t.job_left, self.checkpoints, step) / rate, np.inf
        )
        if c.time_s < self.ready_s - 1e-9:
            until_s = min(until_s, self.ready_s)
        first = min(float(finish.min(initial=np.inf)), float(ckpt_time.min(initial=np.inf)))
        dt = max(0.0, min(until_s - c.time_s, first))
        seg = self.executor.run(c, t, self.alloc, dt)
        t.job_left = np.maximum(0.0, t.job_left - seg.work_done)
        done = active & ((finish <= dt + _EPS) | (t.job_left <= _EPS * np.maximum(t.job_total, 1)))
        record(self.metrics, self, seg)
        c.time_s += dt
        c.energy_j += seg.energy_j
        ckpt = active & ~done & (ckpt_time <= dt + _EPS)
        if np.any(ckpt):
            idx = np.flatnonzero(ckpt)
            self.checkpoints[idx] += 1
            cfg = t.job_cfg[idx]
            t.model_acc[idx], _ = checkpoint_update(
                t.model_acc[idx],
                self.start_acc[idx],
                t.job_target[idx],
                t.job_target[idx],
                self.checkpoints[idx] * step[idx],
                self.curve_rate[cfg],
            )
        if np.any(done):
            t.model_acc = np.where(done, swap_if_better(t.model_acc, t.job_target), t.model_acc)
            t.job_cfg[done] = -1
            t.job_left[done] = 0.0
            t.job_total[done] = 0.0
            t.retrained |= done
            self.metrics.retrainings += done
            self.alloc.retrain_cfg[done] = -1
        return seg, done


def record(metrics: Metrics, engine: Engine, seg: Segment) -> None:
    """Add one executed segment to ``metrics`` (the engine calls it before it moves time on)."""
    k = engine.window
    dt = seg.duration_s
    if dt <= 0:
        return
    metrics.acc_integral[:, k] += seg.acc_integral
    metrics.energy_j[k] += seg.energy_j
    if seg.tenant_energy_j.size:
        metrics.tenant_energy_j += seg.tenant_energy_j
    metrics.retrain_gpu_s += (
        np.where(engine.alloc.retrain_cfg >= 0, engine.alloc.share_retrain, 0.0) * dt
    )
    if seg.requests.size:
        metrics.requests[:, k] += seg.requests
        metrics.served_slo[:, k] += seg.served_slo
        metrics.goodput[:, k] += seg.goodput
        metrics.correct[:, k] += seg.correct
    acc = seg.acc_integral / dt
    metrics.below_min_s += np.where(acc < metrics.a_min - 1e-9, dt, 0.0)
    if metrics.timeline is not None:
        a = engine.alloc
        metrics.timeline.append(
            {
                "t0": engine.cluster.time_s,
                "t1": engine.cluster.time_s + dt,
                "window": k,
                "accuracy": acc.tolist(),
                "share_retrain": a.share_retrain.tolist(),
                "share_infer": a.share_infer.tolist(),
                "retrain_cfg": a.retrain_cfg.tolist(),
                "infer_cfg": a.infer_cfg.tolist(),
            }
        )

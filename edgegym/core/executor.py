"""Executors run an allocation for a stretch of time and report what happened.

The engine (:mod:`tests.reference.engine`) owns the state and the rules (model swap on completion,
window boundaries, metrics); an executor only *executes*: given the state and the allocation it
says how much retraining work got done, what inference accuracy was delivered and how much
energy was used. :class:`SimulatedExecutor` computes this from profiles; a real executor
(``edgegym.real``) runs the work on a device and measures it.
"""

from __future__ import annotations

from typing import Protocol

import numpy as np

from edgegym.core.state import Allocation, ClusterState, Segment, TenantState
from edgegym.hardware.gpus import PowerModel
from edgegym.hardware.mps import share_speedup
from edgegym.workload.continual import inference_accuracy


class Executor(Protocol):
    """Runs one stretch of constant allocation."""

    def start_window(self, k: int) -> None:
        """The engine entered retraining window ``k`` (demand may change)."""
        ...

    def retrain_speed(self, alloc: Allocation) -> np.ndarray:
        """(V,) GPU-seconds of retraining work done per second by each tenant's job."""
        ...

    def run(
        self, cluster: ClusterState, tenants: TenantState, alloc: Allocation, duration_s: float
    ) -> Segment:
        """Execute ``alloc`` for ``duration_s`` seconds (no job finishes strictly inside)."""
        ...


class SimulatedExecutor:
    """Profile-driven executor: closed-form progress, accuracy and power.

    Args:
        demand: (V, K) inference demand of each tenant in each window (1 = nominal).
        infer_share: (L,) share each inference configuration needs at nominal demand.
        infer_factor: (L,) accuracy factor of each inference configuration.
        power: Power model of one GPU.
        share_alpha: Sub-linearity of throughput in the share (``share_speedup``).
        multi_gpu_efficiency: Throughput of each GPU beyond the first for one job.
        speed: Throughput at the GPUs' DVFS clock relative to the top clock
            (:func:`edgegym.hardware.gpus.speed_factor`): retraining runs this much slower
            and inference needs ``1 / speed`` times the share.
    """

    def __init__(
        self,
        demand: np.ndarray,
        infer_share: np.ndarray,
        infer_factor: np.ndarray,
        power: PowerModel,
        share_alpha: float = 1.0,
        multi_gpu_efficiency: float = 0.9,
        speed: float = 1.0,
    ) -> None:
        self.demand = demand  # (V, K)
        self.speed = float(speed)
        self.base_share = np.asarray(infer_share) / self.speed  # (L,)
        self.infer_share = demand[:, :1] * self.base_share[None, :]  # (V, L) current window
        self.infer_factor = infer_factor  # (L,)
        self.power = power
        self.share_alpha = share_alpha
        self.multi_gpu_efficiency = multi_gpu_efficiency

    def start_window(self, k: int) -> None:
        """Set the inference shares needed at window ``k``'s demand."""
        k = min(k, self.demand.shape[1] - 1)
        self.infer_share = self.demand[:, k : k + 1] * self.base_share[None, :]

    def retrain_speed(self, alloc: Allocation) -> np.ndarray:
        """(V,) work rate of each retraining job (zero where none runs)."""
        speed = share_speedup(alloc.share_retrain, self.share_alpha, self.multi_gpu_efficiency)
        return np.where(alloc.retrain_cfg >= 0, speed * self.speed, 0.0)

    def inference_accuracy(self, tenants: TenantState, alloc: Allocation) -> np.ndarray:
        """(V,) instantaneous inference accuracy under ``alloc``."""
        idx = np.arange(alloc.infer_cfg.shape[0])
        needed = self.infer_share[idx, alloc.infer_cfg]
        factor = self.infer_factor[alloc.infer_cfg]
        return inference_accuracy(tenants.model_acc, factor, needed, alloc.share_infer)

    def run(
        self, cluster: ClusterState, tenants: TenantState, alloc: Allocation, duration_s: float
    ) -> Segment:
        """Advance by ``duration_s`` with piecewise-constant rates (exact, no ticks)."""
        acc = self.inference_accuracy(tenants, alloc)
        work = self.retrain_speed(alloc) * duration_s
        # Inference uses at most the share its configuration needs; the rest idles.
        idx = np.arange(alloc.infer_cfg.shape[0])
        busy_infer = np.minimum(alloc.share_infer, self.infer_share[idx, alloc.infer_cfg])
        busy_train = np.where(alloc.retrain_cfg >= 0, alloc.share_retrain, 0.0)
        busy = busy_infer + busy_train  # (V,) GPUs in use per tenant
        util = min(1.0, float(busy.sum()) / cluster.gpus)
        energy, idle = self.power.gpu_energy(cluster.clock_mhz, util, duration_s)
        return Segment(
            duration_s=duration_s,
            work_done=work,
            acc_integral=acc * duration_s,
            energy_j=float(energy),
            tenant_energy_j=self.power.attribute(energy, idle, busy),
        )

"""Request serving on MIG instances: the executor behind ``edgegym/MIGReconfig-v0``.

The :class:`~tests.reference.engine.Engine` owns the retraining rules (a job starts when its tenant
is given an instance, is never resized, finishes or is dropped at the window end, swaps the model
on completion). :class:`MIGExecutor` executes a stretch of constant allocation on one MIG GPU:

* **Instances** are placements holding a task (:class:`~edgegym.core.state.MIGState`). An
  instance does nothing until ``ready_s`` (its reconfiguration overhead); the environment splits
  time at those instants, so rates are constant inside a stretch.
* **Inference** of tenant m is a FIFO fluid queue served by all its ready instances: capacity
  ``mu = sum(batch / latency)`` over instances whose batch latency meets the SLO, arrivals at the
  trace's rate of the current second (uniform inside the second). A request is admitted only if
  it will finish within its SLO (admission control: the queue holds at most
  ``sum(rate * (SLO - latency))`` requests); the others miss their SLO and take no GPU time.
  Requests served are answered with the deployed model's accuracy at that moment, so
  ``goodput = served * accuracy`` in expectation (MIGRator Eq. 9).
* **Retraining** progresses at the instance's training speed while the instance is ready.
* **Energy**: one GPU at its clock, utilisation = busy GPCs / 7 (inference instances busy in
  proportion to the load they serve, retraining instances fully), power from
  :class:`~edgegym.hardware.gpus.PowerModel`; idle power split evenly between tenants, dynamic
  power by busy GPCs.
"""

from __future__ import annotations

import numpy as np

from edgegym.core.state import Allocation, ClusterState, MIGState, Segment, TenantState
from edgegym.hardware.gpus import PowerModel
from edgegym.hardware.mig import MIG_TOTAL_GPCS

_EPS = 1e-9


def fluid_queue(
    b0: np.ndarray, lam: np.ndarray, mu: np.ndarray, bmax: np.ndarray, dt: np.ndarray | float
) -> tuple[np.ndarray, np.ndarray]:
    """One stretch of SLO-admission fluid queues at constant rates (any broadcastable shapes).

    Requests queued beyond ``bmax`` (what the instances can finish within the SLO) miss it
    (they count as arrived and not served in time). With ``lam <= mu`` the queue drains (or
    stays empty) and everything is admitted; with ``lam > mu`` it fills to ``bmax``, then
    arrivals are turned away. The one rule of the simulated (batched,
    :mod:`edgegym.families.mig.dynamics`) and the real MIG executors.

    Args:
        b0: Backlog at the start (requests).
        lam: Arrival rate (requests/s).
        mu: Service rate within the SLO (requests/s).
        bmax: Largest backlog still served within the SLO.
        dt: Stretch length (s).

    Returns:
        ``(served, backlog at the end)``.
    """
    b0 = np.minimum(b0, bmax)
    spare, excess, full = mu - lam, lam - mu, mu * dt  # each formed once
    filling = lam > mu
    with np.errstate(divide="ignore", invalid="ignore"):
        draining = np.where(mu > lam, b0 / np.maximum(spare, _EPS), np.inf) >= dt  # all of dt
        drain_served = np.where(draining, full, b0 + lam * dt)
        drain_b1 = np.where(draining, b0 - spare * dt, 0.0)
        t_full = np.where(filling, (bmax - b0) / np.maximum(excess, _EPS), np.inf)
        fill_b1 = np.where(t_full >= dt, b0 + excess * dt, bmax)
    served = np.where(filling, full, drain_served)
    return served, np.maximum(0.0, np.where(filling, fill_b1, drain_b1))


def busy_gpcs(
    infer_own: np.ndarray,
    train_own: np.ndarray,
    gpcs: np.ndarray,
    served: np.ndarray,
    mu: np.ndarray,
    dt: np.ndarray | float,
    training: np.ndarray,
) -> np.ndarray:
    """(..., M) GPCs each tenant keeps busy in a stretch: its ready inference instances in
    proportion to the load they serve, its ready retraining instance fully while a job runs.
    The one energy rule of the simulated (batched) and the real MIG executors; utilisation is
    the sum over tenants / 7 GPCs, capped at 1.

    Args:
        infer_own: (..., M, P) placement p is a ready inference instance of tenant m.
        train_own: (..., M, P) placement p is a ready retraining instance of tenant m.
        gpcs: (P,) GPCs of each placement.
        served: (..., M) requests served in the stretch (:func:`fluid_queue`).
        mu: (..., M) service rate within the SLO.
        dt: Stretch length (s), broadcastable against ``served``.
        training: (..., M) the tenant's retraining job runs.
    """
    return busy_from(
        infer_own.astype(float) @ gpcs, train_own.astype(float) @ gpcs, served, mu, dt, training
    )


def busy_from(
    infer_gpcs: np.ndarray,
    train_gpcs: np.ndarray,
    served: np.ndarray,
    mu: np.ndarray,
    dt: np.ndarray | float,
    training: np.ndarray,
) -> np.ndarray:
    """:func:`busy_gpcs` from the GPCs of each tenant's ready inference instances and of its
    ready retraining instance, (..., M) each."""
    with np.errstate(divide="ignore", invalid="ignore"):
        load = np.where(mu > 0, np.minimum(1.0, served / np.maximum(mu * dt, _EPS)), 0.0)
    return infer_gpcs * load + np.where(training, train_gpcs, 0.0)


class MIGExecutor:
    """Profile-driven executor of one MIG GPU shared by M tenants.

    Args:
        arrivals: (M, T) requests arriving in each second of the episode.
        rate: (M, P) requests/s one instance at each placement serves for each tenant's model.
        latency: (M, P) seconds per batch on each placement.
        train_speed: (M, P) GPU-seconds of retraining work per second on each placement.
        slo_s: (M,) latency SLO per tenant.
        placement_gpcs: (P,) GPCs of each placement.
        power: Power model of the GPU.
        cluster: The engine's cluster state (its clock ``time_s`` is read here).
    """

    def __init__(
        self,
        arrivals: np.ndarray,
        rate: np.ndarray,
        latency: np.ndarray,
        train_speed: np.ndarray,
        slo_s: np.ndarray,
        placement_gpcs: np.ndarray,
        power: PowerModel,
        cluster: ClusterState,
    ) -> None:
        self.arrivals = arrivals.astype(float)  # (M, T)
        self.rate = rate  # (M, P)
        self.latency = latency  # (M, P)
        self.train_speed = train_speed  # (M, P)
        self.slo_s = slo_s  # (M,)
        self.gpcs = placement_gpcs.astype(float)  # (P,)
        self.power = power
        self.cluster = cluster
        m, p = rate.shape
        self.n_tenants = m
        self.state = MIGState.empty(p, m)
        self._meets = latency <= slo_s[:, None] + _EPS  # (M, P)
        self._slack = np.where(self._meets, rate * (slo_s[:, None] - latency), 0.0)  # (M, P)

    # -------------------------------------------------------------- helpers
    def _ready(self) -> np.ndarray:
        return self.state.ready_s <= self.cluster.time_s + _EPS  # (P,)

    def capacity(self, ready_only: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """(M,) service rate meeting the SLO and (M,) queue bound of each tenant's instances."""
        m = self.n_tenants
        task = self.state.task
        own = task[None, :] == np.arange(m)[:, None]  # (M, P)
        if ready_only:
            own &= self._ready()[None, :]
        mu = np.sum(np.where(own & self._meets, self.rate, 0.0), axis=1)
        bmax = np.sum(np.where(own, self._slack, 0.0), axis=1)
        return mu, bmax

    def arrival_rate(self, t: float) -> np.ndarray:
        """(M,) arrival rate in the second containing ``t``."""
        sec = min(int(np.floor(t + _EPS)), self.arrivals.shape[1] - 1)
        return self.arrivals[:, sec]

    # ------------------------------------------------------ executor protocol
    def start_window(self, k: int) -> None:
        """Nothing changes at a window start (queues carry over)."""

    def retrain_speed(self, alloc: Allocation) -> np.ndarray:
        """(M,) work rate of each tenant's retraining job on its ready instance."""
        m = self.n_tenants
        task = self.state.task
        own = (task[None, :] == (m + np.arange(m))[:, None]) & self._ready()[None, :]
        speed = np.sum(np.where(own, self.train_speed, 0.0), axis=1)
        return np.where(alloc.retrain_cfg >= 0, speed, 0.0)

    def run(
        self, cluster: ClusterState, tenants: TenantState, alloc: Allocation, duration_s: float
    ) -> Segment:
        """Serve the queues and advance retraining for ``duration_s`` (constant rates)."""
        dt = duration_s
        lam = self.arrival_rate(cluster.time_s)
        mu, bmax = self.capacity()
        served, self.state.backlog = fluid_queue(self.state.backlog, lam, mu, bmax, dt)
        acc = tenants.model_acc
        requests = lam * dt
        work = self.retrain_speed(alloc) * dt
        # Energy.
        m = self.n_tenants
        task = self.state.task
        ready = self._ready()
        infer_own = (task[None, :] == np.arange(m)[:, None]) & ready[None, :]
        train_own = (task[None, :] == (m + np.arange(m))[:, None]) & ready[None, :]
        training = alloc.retrain_cfg >= 0
        busy = busy_gpcs(infer_own, train_own, self.gpcs, served, mu, dt, training)  # (M,)
        util = min(1.0, float(busy.sum()) / MIG_TOTAL_GPCS)
        energy, idle = self.power.gpu_energy(cluster.clock_mhz, util, dt)
        return Segment(
            duration_s=dt,
            work_done=work,
            acc_integral=acc * dt,
            energy_j=float(energy),
            tenant_energy_j=self.power.attribute(energy, idle, busy),
            requests=requests,
            served_slo=served,
            goodput=served * acc,
            correct=requests * acc,
        )

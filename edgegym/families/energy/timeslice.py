"""Time-sliced execution on one GPU: the one-env executor of ``edgegym/EnergyFairShare-v0``.

:class:`edgegym.families.energy.dynamics.EnergyDynamics` runs this rule batched over N envs; with
``make_params(..., make_executor=...)`` each env's quantum runs on its own executor (the seam
a real backend plugs into), built from a :class:`TimeSliceExecutor`.
``tests/sim/test_timeslice_reference.py`` requires both to agree over whole episodes.

Each scheduling quantum the tenants' time slices (in whole units) run in the CFS-like order of
the ETF scheduler (§5): the tenant with the lowest virtual runtime goes first and runs for its
slice or until its queue is empty, then ``vruntime += ran / slice`` (Eq. 16). Each tenant runs
at its own DVFS clock, which sets its speed and its power (``PowerModel`` with the model's
activity as utilisation); the GPU idles at idle power for any unused part of the quantum.
Energy is attributed to the tenant that runs (the idle remainder to nobody).

Latency comes from that simulated order. Tenants run back to back from the start of the
quantum, so a tenant's slice begins at the sum of the slices run before it
(:func:`cfs_offsets`). Between the end of its last slice and the start of this one the tenant
waits (its "vacation" ``V``, as in polling systems): a request that arrives in the ``V + t_i``
seconds up to the end of this slice waits ``V / 2`` on average if it arrives in the vacation
and nothing if it arrives during the slice, so its mean latency is its service time plus
``V^2 / (2 (V + t_i))`` (:func:`slice_latency`). The vacation runs only while the tenant has
work waiting: a tenant that is absent or has nothing queued restarts it at the end of the
quantum. When every quantum runs the tenants in the same order, ``V = T - t_i`` and this is
``(T - t_i)^2 / (2 T)``, the residual of a periodic vacation; the order changes it when it
changes (a tenant arriving with a low virtual runtime runs first from then on, a tenant
given nothing for a quantum waits through it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class QuantumResult:
    """What one quantum did, per tenant (shapes (N,))."""

    time_s: np.ndarray  # seconds each tenant ran
    energy_j: np.ndarray  # joules each tenant used
    requests: np.ndarray  # requests served
    latency_s: np.ndarray  # mean request latency (service + wait for the tenant's turn)
    order: np.ndarray  # tenants in execution order (those that ran)
    idle_j: float  # energy of the idle remainder of the quantum
    offset_s: np.ndarray  # seconds from the quantum's start at which each slice began


def cfs_offsets(vruntime: np.ndarray, granted: np.ndarray, ran: np.ndarray) -> np.ndarray:
    """(..., n) seconds from the quantum's start at which each tenant's slice begins.

    The tenants granted time run back to back in the CFS order of ETF §5: lowest virtual
    runtime first (ties: lower slot), each for what it ran. A tenant granted nothing gets the
    quantum's total run time (it does not run).

    Args:
        vruntime: (..., n) virtual runtimes before the quantum.
        granted: (..., n) seconds granted.
        ran: (..., n) seconds each tenant ran (at most ``granted``).
    """
    key = np.where(granted > 0, vruntime, np.inf)
    order = np.argsort(key, axis=-1, kind="stable")
    ran_sorted = np.take_along_axis(ran, order, axis=-1)
    zero = np.zeros_like(ran_sorted[..., :1])
    before = np.concatenate([zero, np.cumsum(ran_sorted, axis=-1)[..., :-1]], axis=-1)
    out = np.empty_like(before)
    np.put_along_axis(out, order, before, axis=-1)
    return out


def slice_latency(service_s: np.ndarray, ran_s: np.ndarray, vacation_s: np.ndarray) -> np.ndarray:
    """(...) mean latency of the requests a slice serves: ``service + V^2 / (2 (V + ran))``
    (``inf`` where the tenant did not run).

    Args:
        service_s: (...) seconds per request.
        ran_s: (...) seconds the tenant ran in this quantum.
        vacation_s: (...) seconds between the end of its last slice and the start of this one.
    """
    runs = ran_s > 0
    span = np.where(runs, vacation_s + ran_s, 1.0)
    return np.where(runs, service_s + vacation_s**2 / (2.0 * span), np.inf)


class TimeSliceExecutor:
    """Runs quanta of time slices; keeps the virtual runtimes between quanta.

    Args:
        n: Tenant slots.
        unit_s: Length of one time unit, seconds.
        idle_power_w: GPU power when nobody runs.
    """

    def __init__(self, n: int, unit_s: float, idle_power_w: float) -> None:
        self.unit_s = float(unit_s)
        self.idle_power_w = float(idle_power_w)
        self.vruntime = np.zeros(n)
        #: Quanta run so far (quantum k starts at k T).
        self.quanta = 0
        #: When each tenant's vacation began: the end of its last slice, or of the last
        #: quantum in which it had nothing waiting (seconds from the start).
        self.served_until = np.zeros(n)

    def run(
        self,
        units: np.ndarray,
        power_w: np.ndarray,
        service_s: np.ndarray,
        work_s: np.ndarray,
        quantum_s: float,
    ) -> QuantumResult:
        """Execute one quantum.

        Args:
            units: (N,) time units granted.
            power_w: (N,) power of each tenant while it runs.
            service_s: (N,) seconds per request at the tenant's clock.
            work_s: (N,) seconds of queued work (``inf`` when backlogged, 0 when absent).
            quantum_s: Quantum length T.

        Returns:
            The :class:`QuantumResult`.
        """
        granted = units * self.unit_s
        ran = np.minimum(granted, np.maximum(work_s, 0.0))
        runs = np.flatnonzero(granted > 0)
        order = runs[np.lexsort((runs, self.vruntime[runs]))]
        # The slices run back to back in that order from the quantum's start.
        offset = np.zeros(ran.shape)
        t = 0.0
        for i in order:
            offset[i] = t
            t += ran[i]
        offset[granted <= 0] = t  # did not run
        self.vruntime[runs] += ran[runs] / granted[runs]
        with np.errstate(divide="ignore", invalid="ignore"):
            requests = np.where(service_s > 0, ran / service_s, 0.0)
        start = self.quanta * quantum_s
        begin = start + offset
        latency = slice_latency(service_s, ran, np.maximum(0.0, begin - self.served_until))
        waiting = np.where(work_s > 0, self.served_until, start + quantum_s)
        self.served_until = np.where(ran > 0, begin + ran, waiting)
        self.quanta += 1
        idle = max(0.0, quantum_s - float(ran.sum())) * self.idle_power_w
        return QuantumResult(
            time_s=ran,
            energy_j=ran * power_w,
            requests=requests,
            latency_s=latency,
            order=order,
            idle_j=idle,
            offset_s=offset,
        )


def fairness(
    time_s: np.ndarray, energy_j: np.ndarray, weights: np.ndarray | None = None
) -> tuple[float, float, float]:
    """``(F_T, F_E, F_S)`` of ETF §6.1 over the tenants given (those that wanted the GPU):
    min/max of weight-normalised time and of energy, and the smaller of the two.

    Where the ratio is 0/0 the paper's definitions are read as follows. No tenant given:
    nobody wanted the GPU, nothing was shared, and every allocation is equally fair (1.0).
    Tenants given but none ran: each was starved, the opposite of fair (0.0; a fair-share
    scheduler exists to prevent starvation, §1), so idling the GPU never scores as fair. One
    tenant that ran is perfectly fair.

    Args:
        time_s: (N,) time each tenant got.
        energy_j: (N,) energy each tenant used.
        weights: (N,) positive weights (default equal).
    """
    t = np.asarray(time_s, dtype=float)
    e = np.asarray(energy_j, dtype=float)
    w = np.ones_like(t) if weights is None else np.asarray(weights, dtype=float)
    if t.size == 0:
        return 1.0, 1.0, 1.0
    tn, en = t / w, e / w
    if not tn.max() > 0:
        return 0.0, 0.0, 0.0
    f_t = float(tn.min() / tn.max())
    f_e = float(en.min() / en.max()) if en.max() > 0 else 1.0
    return f_t, f_e, min(f_t, f_e)

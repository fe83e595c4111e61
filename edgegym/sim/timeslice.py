"""Time-sliced execution on one GPU: the one-env executor of ``edgegym/EnergyFairShare-v0``.

:class:`edgegym.sim.energy.EnergyDynamics` runs this rule batched over N envs; with
``energy_params(..., make_executor=...)`` each env's quantum runs on its own executor (the seam
a real backend plugs into), built from a :class:`TimeSliceExecutor`.
``tests/sim/test_timeslice_reference.py`` requires both to agree over whole episodes.

Each scheduling quantum the tenants' time slices (in whole units) run in the CFS-like order of
the ETF scheduler (§5): the tenant with the lowest virtual runtime goes first and runs for its
slice or until its queue is empty, then ``vruntime += ran / slice`` (Eq. 16). Each tenant runs
at its own DVFS clock, which sets its speed and its power (``PowerModel`` with the model's
activity as utilisation); the GPU idles at idle power for any unused part of the quantum.
Energy is attributed to the tenant that runs (the idle remainder to nobody).

Latency: a backlogged tenant is served for ``t_i`` seconds of every ``T``; a request arriving at
a random time waits on average ``(T - t_i)^2 / (2 T)`` for its tenant's turn (the residual of the
"vacation", as in polling systems) and then its own service time.
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
            work_s: (N,) seconds of queued work (``inf`` when backlogged).
            quantum_s: Quantum length T.

        Returns:
            The :class:`QuantumResult`.
        """
        granted = units * self.unit_s
        ran = np.minimum(granted, np.maximum(work_s, 0.0))
        runs = np.flatnonzero(granted > 0)
        order = runs[np.lexsort((runs, self.vruntime[runs]))]
        self.vruntime[runs] += ran[runs] / granted[runs]
        with np.errstate(divide="ignore", invalid="ignore"):
            requests = np.where(service_s > 0, ran / service_s, 0.0)
        wait = (quantum_s - ran) ** 2 / (2.0 * quantum_s)
        latency = np.where(ran > 0, service_s + wait, np.inf)
        idle = max(0.0, quantum_s - float(ran.sum())) * self.idle_power_w
        return QuantumResult(
            time_s=ran,
            energy_j=ran * power_w,
            requests=requests,
            latency_s=latency,
            order=order,
            idle_j=idle,
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

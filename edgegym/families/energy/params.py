"""What an energy scenario fixes, precomputed once when an environment is built.

:class:`EnergyParams` holds the tenants' slots, weights, presence, arrival processes and their
power and service time per quantum at their DVFS clocks (tables over the episode's quanta) that
the batched dynamics (:mod:`edgegym.families.energy.dynamics`) read; :func:`profiles_at` gives
them at any time (render, reproductions); :func:`make_params` is the one way to build them
(``Family.params``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from edgegym.families.energy.reward import term_weights
from edgegym.families.energy.timeslice import (
    TimeSliceExecutor,
)
from edgegym.hardware.gpus import PowerModel, get_gpu
from edgegym.scenarios import Scenario
from edgegym.workload.arrival_specs import make_arrival
from edgegym.workload.models import model_with

#: The executor seam of the family: ``make_executor(simulator, rng) -> executor``, where the
#: executor has the simulator's ``run(units, power_w, service_s, work_s, quantum_s)`` (one
#: quantum of one env, returning a :class:`QuantumResult`) and its ``vruntime``.
ExecutorFactory = Callable[[TimeSliceExecutor, np.random.Generator], Any]


@dataclass(frozen=True, eq=False)
class EnergyParams:
    """Everything a scenario fixes, precomputed once (n = ``max_tenants`` slots)."""

    n: int  # tenant slots
    n_tenants: int  # slots holding a tenant
    names: tuple[str, ...]  # (n_tenants,)
    units: int  # U: time units per quantum
    unit_s: float
    quantum_s: float  # T
    quanta: int  # episode length in quanta
    horizon: int  # H: fairness horizon in quanta
    weights: np.ndarray  # (n,) tenant weights (0 for padding)
    arrive: np.ndarray  # (n,) seconds (inf for padding)
    leave: np.ndarray  # (n,) seconds (-inf for padding)
    backlogged: np.ndarray  # (n,) bool: always has work (padding counts as backlogged)
    arrival_slots: tuple[int, ...]  # slots fed by an arrival process
    active_tab: np.ndarray  # (quanta + 1, n) bool: present at the start of quantum k
    power_tab: np.ndarray  # (quanta + 1, n) watts while running in quantum k
    service_tab: np.ndarray  # (quanta + 1, n) seconds per request in quantum k
    top_service: np.ndarray  # (n,) seconds per request at the top clock
    idle_power_w: float
    max_power_w: float
    term_weights: dict[str, float]  # reward term -> objective weight
    processes: tuple[Any, ...]  # (n_tenants,) arrival process or None (backlogged)
    # What profiles_at needs for an arbitrary time (render, reproduce scripts).
    clocks: tuple[tuple[tuple[float, float], ...], ...] = field(repr=False)
    models: tuple[Any, ...] = field(repr=False)
    batch: tuple[int, ...] = field(repr=False)
    power_model: PowerModel = field(repr=False)
    max_clock_mhz: float = 0.0
    # The executor seam: builds each env's executor at reset (None: the batched simulator).
    make_executor: ExecutorFactory | None = field(default=None, repr=False)


def clock_at(clocks: Sequence[tuple[float, float]], t: float) -> float:
    """Clock (MHz) of a schedule ``[(at_s, mhz), ...]`` (sorted) at time t."""
    f = clocks[0][1]
    for at, mhz in clocks:
        if at <= t + 1e-9:
            f = mhz
    return f


def _compute_profiles(
    n: int,
    clocks: Sequence[Sequence[tuple[float, float]]],
    models: Sequence[Any],
    batch: Sequence[int],
    power_model: PowerModel,
    top: float,
    t: float,
) -> tuple[np.ndarray, np.ndarray]:
    power = np.zeros(n)
    service = np.zeros(n)
    for i, md in enumerate(models):
        f = clock_at(clocks[i], t)
        power[i] = float(power_model.power(f, md.power_activity))
        b = batch[i]
        service[i] = float(md.latency_s(1.0, f / top, b)) / b
    return power, service


def profiles_at(params: EnergyParams, t: float) -> tuple[np.ndarray, np.ndarray]:
    """(n,) power (W) and seconds per request of every slot at time ``t`` (fresh arrays)."""
    return _compute_profiles(
        params.n,
        params.clocks,
        params.models,
        params.batch,
        params.power_model,
        params.max_clock_mhz,
        t,
    )


def make_params(sc: Scenario, make_executor: ExecutorFactory | None = None) -> EnergyParams:
    """Precompute the :class:`EnergyParams` of a loaded (and validated) scenario.

    Args:
        sc: The scenario.
        make_executor: The executor seam: ``make_executor(simulator, rng)`` builds an env's
            executor at reset from the one-env :class:`TimeSliceExecutor` (a real backend
            wraps it); ``None`` runs the batched simulator alone.
    """
    gpu = get_gpu(sc["hardware"]["gpu"])
    power_model = PowerModel.from_spec(gpu)
    quantum_s = float(sc["quantum_s"])
    unit_s = float(sc["unit_s"])
    units = round(quantum_s / unit_s)
    quanta = int(sc["quanta"])
    n = int(sc["max_tenants"])
    tenants = sc["tenants"]
    nt = len(tenants)
    models = tuple(model_with(t["model"], t.get("profile")) for t in tenants)
    weights, arrive, leave = _tenant_slots(tenants, n)
    clocks = _tenant_clocks(tenants, gpu)
    batch = tuple(int(t["batch"]) for t in tenants)
    base = Path(sc.source).parent
    processes = tuple(
        None if t["demand"] == "backlogged" else make_arrival(t["demand"], base) for t in tenants
    )
    top = gpu.max_clock_mhz
    power_tab, service_tab, active_tab = _quantum_tables(
        n, quanta, quantum_s, clocks, models, batch, power_model, top, arrive, leave
    )
    top_service = np.zeros(n)
    for i, md in enumerate(models):
        top_service[i] = float(md.latency_s(1.0, 1.0, batch[i])) / batch[i]
    backlogged = np.ones(n, dtype=bool)
    for i, p in enumerate(processes):
        backlogged[i] = p is None
    for arr in (weights, arrive, leave, backlogged, active_tab, power_tab, service_tab):
        arr.setflags(write=False)
    top_service.setflags(write=False)
    return EnergyParams(
        n=n,
        n_tenants=nt,
        names=tuple(t["name"] for t in tenants),
        units=units,
        unit_s=unit_s,
        quantum_s=quantum_s,
        quanta=quanta,
        horizon=min(int(sc["fairness_horizon"]), quanta),  # longer: the same sums
        weights=weights,
        arrive=arrive,
        leave=leave,
        backlogged=backlogged,
        arrival_slots=tuple(i for i, p in enumerate(processes) if p is not None),
        active_tab=active_tab,
        power_tab=power_tab,
        service_tab=service_tab,
        top_service=top_service,
        idle_power_w=float(power_model.idle_power_w),
        max_power_w=float(power_model.max_power_w),
        term_weights=term_weights(sc["objective"]),
        processes=processes,
        clocks=clocks,
        models=models,
        batch=batch,
        power_model=power_model,
        max_clock_mhz=float(top),
        make_executor=make_executor,
    )


def _tenant_slots(tenants: list[dict], n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(n,) weight, arrival and leaving time per slot (empty slots: weight 0, never present)."""
    nt = len(tenants)
    weights = np.zeros(n)
    weights[:nt] = [t["weight"] for t in tenants]
    arrive = np.full(n, np.inf)
    leave = np.full(n, -np.inf)
    arrive[:nt] = [t["arrive_s"] for t in tenants]
    leave[:nt] = [t["leave_s"] for t in tenants]
    return weights, arrive, leave


def _tenant_clocks(tenants: list[dict], gpu: Any) -> tuple[tuple[tuple[float, float], ...], ...]:
    """Each tenant's clock schedule: ``(from_s, MHz)`` pairs in time order, at the GPU's
    supported clocks."""
    resolve = gpu.resolve_clock
    return tuple(
        tuple(sorted((float(a), resolve(f)) for a, f in t["clock_mhz"]))
        if isinstance(t["clock_mhz"], list)
        else ((0.0, resolve(t["clock_mhz"])),)
        for t in tenants
    )


def _quantum_tables(
    n: int,
    quanta: int,
    quantum_s: float,
    clocks: tuple[tuple[tuple[float, float], ...], ...],
    models: tuple[Any, ...],
    batch: tuple[int, ...],
    power_model: PowerModel,
    top: float,
    arrive: np.ndarray,
    leave: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(quanta + 1, n) power, seconds per request and presence of every slot at every quantum
    start k * T (k = 0 .. quanta), one profile computation per clock set."""
    nt = len(clocks)
    cache: dict[tuple[float, ...], tuple[np.ndarray, np.ndarray]] = {}
    power_tab = np.zeros((quanta + 1, n))
    service_tab = np.zeros((quanta + 1, n))
    active_tab = np.zeros((quanta + 1, n), dtype=bool)
    for k in range(quanta + 1):
        t = k * quantum_s
        key = tuple(clock_at(clocks[i], t) for i in range(nt))
        if key not in cache:
            cache[key] = _compute_profiles(n, clocks, models, batch, power_model, top, t)
        power_tab[k], service_tab[k] = cache[key]
        active_tab[k] = (arrive <= t + 1e-9) & (leave > t + 1e-9)
    return power_tab, service_tab, active_tab


__all__ = ["EnergyParams", "ExecutorFactory", "clock_at", "make_params", "profiles_at"]

"""Pure batched dynamics of the energy fair-share family (``edgegym/EnergyFairShare-v0``).

The :class:`~edgegym.core.dynamics.Dynamics` of ETF time-sharing (DESIGN §6, §8): immutable
:class:`EnergyParams` (everything a scenario fixes, precomputed when an environment is built:
the per-quantum power and seconds-per-request tables of every slot from its clock schedule,
presence, top-clock service), a :class:`EnergyState` of arrays with a leading batch axis ``N``
and :class:`EnergyDynamics`, whose functions step ``N`` environments in lockstep numpy. The
single environment (:class:`edgegym.families.energy.env.EnergyFairShareEnv`) is the batch of one;
the vector environment (:mod:`edgegym.families.energy.vector`) the batch of ``N``.

Each quantum follows :mod:`edgegym.families.energy.timeslice` (CFS order,
``vruntime += ran / slice``, idle remainder at idle power, each request's latency from where its
tenant's slice falls in that order) and :func:`edgegym.families.energy.timeslice.fairness`
(F_T, F_E, F_S over the present tenants that wanted the GPU or ran in the last
``fairness_horizon`` quanta). The horizon is a shifted buffer of the last ``H`` quanta, summed
oldest first so the sums equal a sum over the quanta in chronological order bit for bit
(older, empty rows add exact zeros).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from edgegym.core.dynamics import Record
from edgegym.families.energy.observation import HIGH, PER_TENANT
from edgegym.families.energy.params import (
    EnergyParams,
)
from edgegym.families.energy.reward import TERMS
from edgegym.families.energy.timeslice import (
    TimeSliceExecutor,
    cfs_offsets,
    fairness,
    slice_latency,
)
from edgegym.hardware.mps import largest_remainder


@dataclass
class EnergyState:
    """N environments' state (leading axis N)."""

    k: np.ndarray  # (N,) int64 index of the current quantum (quanta: episode over)
    arrivals: np.ndarray  # (N, n, quanta) requests arriving in each quantum
    queue: np.ndarray  # (N, n) requests waiting (arrival-driven tenants)
    time_total: np.ndarray  # (N, n) seconds run so far
    energy_total: np.ndarray  # (N, n) joules used so far
    requests_total: np.ndarray  # (N, n) requests served so far
    energy_j: np.ndarray  # (N,) joules of the episode (idle included)
    hist_t: np.ndarray  # (N, H, n) seconds run in the last H quanta, oldest first
    hist_e: np.ndarray  # (N, H, n) joules used in the last H quanta, oldest first
    hist_w: np.ndarray  # (N, H, n) bool: wanted the GPU in the last H quanta
    sum_t: np.ndarray  # (N, n) hist_t summed oldest first (kept by step)
    sum_e: np.ndarray  # (N, n) hist_e summed oldest first (kept by step)
    any_w: np.ndarray  # (N, n) bool: hist_w.any(axis=1) (kept by step)
    last_t: np.ndarray  # (N, n) seconds run in the last quantum
    last_e: np.ndarray  # (N, n) joules used in the last quantum
    fs_sum: np.ndarray  # (N,) sum of the per-step F_S
    vruntime: np.ndarray  # (N, n) CFS virtual runtimes
    served_until: np.ndarray  # (N, n) start of each tenant's vacation (seconds; latency)
    wanted_ever: np.ndarray  # (N, n) bool: wanted the GPU at some quantum
    executors: list[Any]  # (N,) each env's executor (``params.make_executor``) or None


def _rows(x: np.ndarray) -> np.ndarray:
    return np.arange(x.shape[0])


class EnergyDynamics:
    """The energy family's :class:`~edgegym.core.dynamics.Dynamics` (pure batched functions).

    Public beyond the protocol, for its envs: :meth:`project` (the units an action applies),
    :meth:`demand_units` and :meth:`fairness_of`. Everything else is private.
    """

    terms: tuple[str, ...] = TERMS

    # ------------------------------------------------------------------ start
    def initial(self, params: EnergyParams, rngs: Sequence[np.random.Generator]) -> EnergyState:
        """Fresh episodes; env ``i`` draws its arrivals from ``rngs[i]`` only."""
        m, n, h = len(rngs), params.n, params.horizon
        arrivals = np.zeros((m, n, params.quanta))
        for j, rng in enumerate(rngs):
            for i, proc in enumerate(params.processes):
                if proc is not None:
                    arrivals[j, i] = proc.counts(params.quanta, params.quantum_s, rng)
        return EnergyState(
            k=np.zeros(m, dtype=np.int64),
            arrivals=arrivals,
            queue=np.zeros((m, n)),
            time_total=np.zeros((m, n)),
            energy_total=np.zeros((m, n)),
            requests_total=np.zeros((m, n)),
            energy_j=np.zeros(m),
            hist_t=np.zeros((m, h, n)),
            hist_e=np.zeros((m, h, n)),
            hist_w=np.zeros((m, h, n), dtype=bool),
            sum_t=np.zeros((m, n)),
            sum_e=np.zeros((m, n)),
            any_w=np.zeros((m, n), dtype=bool),
            last_t=np.zeros((m, n)),
            last_e=np.zeros((m, n)),
            fs_sum=np.zeros(m),
            vruntime=np.zeros((m, n)),
            served_until=np.zeros((m, n)),
            wanted_ever=np.zeros((m, n), dtype=bool),
            executors=[self._executor(params, rng) for rng in rngs],
        )

    @staticmethod
    def _executor(params: EnergyParams, rng: np.random.Generator) -> Any:
        if params.make_executor is None:
            return None
        sim = TimeSliceExecutor(params.n, params.unit_s, params.idle_power_w)
        return params.make_executor(sim, rng)

    # ------------------------------------------------------------------ helpers
    def demand_units(
        self, params: EnergyParams, state: EnergyState, k: np.ndarray | None = None
    ) -> np.ndarray:
        """(N, n) int64 units each slot can use at quantum ``k`` (default: the current one),
        with the arrivals and queue of the current quantum."""
        kk = state.k if k is None else k
        kq = state.k
        active = params.active_tab[kk]
        out = np.where(active, params.units, 0).astype(np.int64)
        if params.arrival_slots:
            slots = np.asarray(params.arrival_slots)
            service = params.service_tab[kk][:, slots]
            kc = np.minimum(kq, params.quanta - 1)
            new = state.arrivals[_rows(kq), :, kc][:, slots]
            new = np.where((kq < params.quanta)[:, None], new, 0.0)
            work = (state.queue[:, slots] + new) * service
            need = np.minimum(params.units, np.ceil(work / params.unit_s - 1e-9)).astype(np.int64)
            out[:, slots] = np.where(active[:, slots], need, 0)
        return out

    def _horizon_sums(self, params: EnergyParams, state: EnergyState) -> tuple[np.ndarray, ...]:
        """(N, n) time, energy over the fairness horizon (oldest first), (N, n) wanted in it."""
        return state.sum_t, state.sum_e, state.any_w

    def _sum_horizon(self, params: EnergyParams, state: EnergyState) -> tuple[np.ndarray, ...]:
        t = state.hist_t[:, 0].copy()
        e = state.hist_e[:, 0].copy()
        for j in range(1, params.horizon):
            t += state.hist_t[:, j]
            e += state.hist_e[:, j]
        return t, e, state.hist_w.any(axis=1)

    def fairness_of(
        self, params: EnergyParams, state: EnergyState, active: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(N,) F_T, F_E, F_S over the horizon of the ``active`` (N, n) tenants that wanted the
        GPU in it or ran in it (exactly :func:`edgegym.families.energy.timeslice.fairness` per
        env)."""
        t, e, wanted = self._horizon_sums(params, state)
        counted = active & (wanted | (t > 0))
        w = params.weights
        safe = np.where(w > 0, w, 1.0)
        tn, en = t / safe, e / safe
        tmax = np.where(counted, tn, -np.inf).max(axis=1)
        tmin = np.where(counted, tn, np.inf).min(axis=1)
        emax = np.where(counted, en, -np.inf).max(axis=1)
        emin = np.where(counted, en, np.inf).min(axis=1)
        anyc = counted.any(axis=1)
        ran = tmax > 0
        with np.errstate(divide="ignore", invalid="ignore"):
            f_t = np.where(ran, tmin / tmax, 0.0)
            f_e = np.where(ran, np.where(emax > 0, emin / emax, 1.0), 0.0)
        f_t = np.where(anyc, f_t, 1.0)
        f_e = np.where(anyc, f_e, 1.0)
        empty = state.k == 0  # no quantum in the horizon yet
        f_t = np.where(empty, 1.0, f_t)
        f_e = np.where(empty, 1.0, f_e)
        return f_t, f_e, np.minimum(f_t, f_e)

    def project(self, params: EnergyParams, state: EnergyState, actions: Any) -> np.ndarray:
        """(N, n) int64 units applied: clipped to the mask, floored, and rows over U scaled
        down onto whole units as :func:`edgegym.hardware.mps.quantize_shares` does
        (:func:`edgegym.hardware.mps.largest_remainder`)."""
        a = np.asarray(actions)
        m = state.k.shape[0]
        if a.shape != (m, params.n):
            raise ValueError(f"actions must have shape ({m}, {params.n}), got {a.shape}")
        d = self.demand_units(params, state)
        u = np.clip(np.nan_to_num(a.astype(float)), 0, None)
        u = np.minimum(np.floor(u), d).astype(np.int64)
        over = np.flatnonzero(u.sum(axis=1) > params.units)
        if over.size:
            u[over] = largest_remainder(u[over], params.units)
        return u

    # ------------------------------------------------------------------ contract
    def mask(self, params: EnergyParams, state: EnergyState) -> np.ndarray:
        """(N, n * (U + 1)) bool: units 0 .. demand for each slot (only 0 once done)."""
        done = state.k >= params.quanta
        d = np.where(done[:, None], 0, self.demand_units(params, state))
        grid = np.arange(params.units + 1)[None, None, :] <= d[:, :, None]
        return grid.reshape(d.shape[0], -1)

    def step(
        self, params: EnergyParams, state: EnergyState, actions: np.ndarray
    ) -> tuple[EnergyState, Record]:
        """One quantum of every env (in place). Every env must have ``k < quanta``."""
        if (state.k >= params.quanta).any():
            raise RuntimeError("step() on an env whose episode has ended")
        k = state.k
        big_t = params.quantum_s
        units = self.project(params, state, actions)
        active = params.active_tab[k]
        wanted = self.demand_units(params, state) > 0
        state.wanted_ever |= wanted
        power = params.power_tab[k]
        service = params.service_tab[k]
        work = self._queued_work(params, state, service, active)
        ran, energy, requests, latency, idle = self._run_quantum(
            params, state, units, power, service, work
        )
        if params.arrival_slots:
            slots = np.asarray(params.arrival_slots)
            state.queue[:, slots] = np.maximum(0.0, state.queue[:, slots] - requests[:, slots])
        step_energy = energy.sum(axis=1) + idle
        self._account(params, state, ran, energy, requests, step_energy, wanted)
        state.k = k + 1
        # Fairness over the horizon that ends with this quantum, its tenants present.
        f_t, f_e, f_s = self.fairness_of(params, state, active)
        state.fs_sum += f_s
        alone = np.where(active, big_t / np.maximum(params.top_service, 1e-12), 0.0)
        per = alone.sum(axis=1) / np.maximum(active.sum(axis=1), 1)
        terms = {
            "fs": f_s,
            "ft": f_t,
            "fe": f_e,
            "throughput": requests.sum(axis=1) / np.maximum(per, 1e-9),
            "energy": -step_energy / (params.max_power_w * big_t),
        }
        info = {
            "units": units,
            "tenant_time_s": ran,
            "tenant_energy_j": energy,
            "throughput_rps": requests / big_t,
            "latency_s": latency,
            "F_T": f_t,
            "F_E": f_e,
            "F_S": f_s,
        }
        record = Record(
            energy_j=step_energy,
            duration_s=np.full(k.shape[0], big_t),
            terms=terms,
            info=info,
        )
        return state, record

    @staticmethod
    def _queued_work(
        params: EnergyParams, state: EnergyState, service: np.ndarray, active: np.ndarray
    ) -> np.ndarray:
        """(N, n) seconds of work waiting this quantum: this quantum's arrivals join the
        queues (in place); a backlogged tenant has endless work, an absent one none."""
        k = state.k
        work = np.full(active.shape, np.inf)
        if params.arrival_slots:
            slots = np.asarray(params.arrival_slots)
            state.queue[:, slots] += state.arrivals[_rows(k), :, k][:, slots]
            work[:, slots] = state.queue[:, slots] * service[:, slots]
        return np.where(active, work, 0.0)  # an absent tenant has nothing waiting

    @staticmethod
    def _run_quantum(
        params: EnergyParams,
        state: EnergyState,
        units: np.ndarray,
        power: np.ndarray,
        service: np.ndarray,
        work: np.ndarray,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Time-sliced execution of one quantum (``TimeSliceExecutor.run``, batched; through
        each env's executor where there is the executor seam); advances the CFS state.

        Returns:
            (N, n) seconds run, energy and requests served, and latency per slot; (N,) idle
            energy.
        """
        big_t = params.quantum_s
        granted = units * params.unit_s
        ran = np.minimum(granted, np.maximum(work, 0.0))
        runs = granted > 0
        # Latency from the CFS order: each slice begins after those run before it.
        start = (state.k * big_t)[:, None]
        begin = start + cfs_offsets(state.vruntime, granted, ran)
        latency = slice_latency(service, ran, np.maximum(0.0, begin - state.served_until))
        waiting = np.where(work > 0, state.served_until, start + big_t)
        state.served_until = np.where(ran > 0, begin + ran, waiting)
        with np.errstate(divide="ignore", invalid="ignore"):
            state.vruntime += np.where(runs, ran / np.where(runs, granted, 1.0), 0.0)
            requests = np.where(service > 0, ran / service, 0.0)
        idle = np.maximum(0.0, big_t - ran.sum(axis=1)) * params.idle_power_w
        energy = ran * power
        if params.make_executor is not None:  # the executor seam: each env runs on its own
            for i, ex in enumerate(state.executors):
                q = ex.run(units[i], power[i], service[i], work[i], big_t)
                ran[i], energy[i], requests[i] = q.time_s, q.energy_j, q.requests
                latency[i], idle[i] = q.latency_s, q.idle_j
                state.vruntime[i] = ex.vruntime
                state.served_until[i] = ex.served_until
        return ran, energy, requests, latency, idle

    def _account(
        self,
        params: EnergyParams,
        state: EnergyState,
        ran: np.ndarray,
        energy: np.ndarray,
        requests: np.ndarray,
        step_energy: np.ndarray,
        wanted: np.ndarray,
    ) -> None:
        """Add the quantum to the totals and shift it into the fairness horizon."""
        state.time_total += ran
        state.energy_total += energy
        state.requests_total += requests
        state.energy_j += step_energy
        for hist, new in ((state.hist_t, ran), (state.hist_e, energy), (state.hist_w, wanted)):
            hist[:, :-1] = hist[:, 1:]
            hist[:, -1] = new
        state.last_t = ran.copy()
        state.last_e = energy.copy()
        state.sum_t, state.sum_e, state.any_w = self._sum_horizon(params, state)

    def observation(self, params: EnergyParams, state: EnergyState) -> np.ndarray:
        """(N, 9 n + 4) float32 (see the env's docstring for the table)."""
        k = state.k
        m, n = k.shape[0], params.n
        ko = np.minimum(k, params.quanta - 1)
        power = params.power_tab[ko]
        service = params.service_tab[ko]
        active = params.active_tab[ko]
        w = np.where(active, params.weights, 0.0)
        t, e, _ = self._horizon_sums(params, state)
        feats = np.zeros((m, n, PER_TENANT))
        feats[:, :, 0] = active
        feats[:, :, 1] = w / np.maximum(w.sum(axis=1), 1e-12)[:, None]
        feats[:, :, 2] = power / params.max_power_w
        with np.errstate(divide="ignore", invalid="ignore"):
            feats[:, :, 3] = np.where(
                service > 0, params.top_service / np.maximum(service, 1e-12), 0.0
            )
        running = k < params.quanta
        if running.any():
            d = self.demand_units(params, state, ko) / params.units
            feats[:, :, 4] = np.where(running[:, None], d, 0.0)
        started = (k > 0)[:, None]
        feats[:, :, 5] = np.where(started, t / np.maximum(t.sum(axis=1), 1e-12)[:, None], 0.0)
        feats[:, :, 6] = np.where(started, e / np.maximum(e.sum(axis=1), 1e-12)[:, None], 0.0)
        lt, le = state.last_t, state.last_e
        feats[:, :, 7] = lt / np.maximum(lt.sum(axis=1), 1e-12)[:, None]
        feats[:, :, 8] = le / np.maximum(le.sum(axis=1), 1e-12)[:, None]
        f_t, f_e, _ = self.fairness_of(params, state, active)
        glob = np.stack([k / params.quanta, f_t, f_e, active.sum(axis=1) / n], axis=1)
        out = np.concatenate([feats.reshape(m, -1), glob], axis=1)
        return np.clip(out, 0.0, HIGH).astype(np.float32)

    def done(self, params: EnergyParams, state: EnergyState) -> np.ndarray:
        """(N,) bool: ``quanta`` quanta have run."""
        return state.k >= params.quanta

    def metrics(self, params: EnergyParams, state: EnergyState, i: int) -> dict[str, float]:
        """Env ``i``'s whole-episode numbers (its ``info["episode_metrics"]``)."""
        tt, et, rt = state.time_total[i], state.energy_total[i], state.requests_total[i]
        w = params.weights
        live = (w > 0) & (state.wanted_ever[i] | (tt > 0))
        f_t, f_e, f_s = fairness(tt[live], et[live], w[live])
        total_s = max(params.quanta * params.quantum_s, 1e-12)
        out: dict[str, float] = {
            "F_T": f_t,
            "F_E": f_e,
            "F_S": f_s,
            "mean_step_F_S": float(state.fs_sum[i]) / max(int(state.k[i]), 1),
            "energy_j": float(state.energy_j[i]),
            "throughput_rps": float(rt.sum() / total_s),
        }
        for j, name in enumerate(params.names):
            out[f"time_share_{name}"] = float(tt[j] / total_s)
            out[f"energy_j_{name}"] = float(et[j])
            out[f"throughput_rps_{name}"] = float(rt[j] / total_s)
        return out


__all__ = [
    "EnergyDynamics",
    "EnergyState",
]

"""``edgegym/EnergyFairShare-v0``: time-sharing one GPU among tenants at their own DVFS clocks."""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from edgegym.envs._common import check_render_mode, scenario_for
from edgegym.envs.render import Panel, Series, release, render_frame, tenant_colors
from edgegym.hardware.gpus import PowerModel, get_gpu
from edgegym.hardware.mps import quantize_shares
from edgegym.scenarios import Scenario
from edgegym.sim.timeslice import TimeSliceExecutor, fairness
from edgegym.workload.arrivals import make_arrival
from edgegym.workload.models import get_model

DEFAULT_SCENARIO = "etf-tx2-resnet50-mobilenetv2"
PER_TENANT = 9
GLOBALS = 4
TERMS = ("fs", "ft", "fe", "throughput", "energy")


@dataclass(frozen=True)
class EnergySnapshot:
    """Structured state handed to baselines by ``env.unwrapped.sim_state()``."""

    time_s: float
    units: int  # time units per quantum (T)
    active: np.ndarray  # (N,) tenant present this quantum
    power: np.ndarray  # (N,) watts while running (profiled)
    weights: np.ndarray  # (N,)
    demand_units: np.ndarray  # (N,) units each tenant can use this quantum
    speed: np.ndarray  # (N,) requests/s while running
    time_s_total: np.ndarray  # (N,) seconds run so far
    energy_j_total: np.ndarray  # (N,) joules used so far


class EnergyFairShareEnv(gym.Env):
    """Energy-Time Fairness (Liang et al., SEC'23): N tenants time-share one GPU.

    Each tenant serves a DNN model at its own DVFS clock (fixed, or changing at given times),
    which sets its speed and its power; tenants have weights, a demand (backlogged, or requests
    from an arrival process) and may arrive and leave during the episode (Fig. 9).

    **Decision epochs**: every scheduling quantum ``T = quantum_s``.

    **Action space**: ``MultiDiscrete([U + 1] * max_tenants)``: time units (of ``unit_s``; U =
    T / unit_s) for each tenant slot. ``action_masks()`` / ``info["action_mask"]`` (flat, per
    entry) allow 0 .. the tenant's demand for present tenants and only 0 for absent ones and
    padding. Invalid actions are projected deterministically: entries are clipped to the mask,
    and if they exceed U they are scaled down onto whole units by
    :func:`edgegym.hardware.mps.quantize_shares` (largest remainder, ties to the lower index).
    Units left unassigned idle the GPU. Inside the quantum, slices run in the CFS virtual-runtime
    order of §5 (:mod:`edgegym.sim.timeslice`).

    **Observation**: flat ``Box`` (9 per tenant slot + 4): present, weight share, power / the
    GPU's maximum, speed at the clock / at the top clock, demand / U, weighted share of time and
    of energy over the fairness horizon, time and energy share in the last quantum; then the
    episode fraction, F_T, F_E and the number of present tenants / max_tenants.

    **Reward**: weighted named terms: ``fs`` = F_S = min(F_T, F_E) over the last
    ``fairness_horizon`` quanta (weight 1 by default), ``ft``, ``fe``, ``throughput`` (requests
    served / what the present tenants would serve alone at the top clock) and ``energy``
    (minus energy / (max power x T)). F_T and F_E are min/max of weight-normalised time and
    energy over the present tenants that wanted the GPU in the horizon (§6.1); an idle GPU
    with work waiting scores 0 (every such tenant starved), a horizon in which nobody wanted the
    GPU scores 1 (:func:`edgegym.sim.timeslice.fairness`). ``info``: per-tenant time, energy,
    throughput and latency, F_T / F_E / F_S, energy_j, the applied units, the reward terms.

    **Episode end**: ``terminated`` after ``quanta`` quanta.

    Args:
        scenario: Bundled name (``etf-*``) or path, or a loaded scenario.
        record_timeline: Keep per-quantum records in ``env.unwrapped.timeline``.
        render_mode: ``None``, ``"ansi"`` (one line: each tenant's time and energy in the
            last quantum), ``"rgb_array"`` (a 640x360 frame: each tenant's share of the last
            quantum's time and energy, and F_T, F_E, F_S over the fairness horizon;
            :mod:`edgegym.envs.render`) or ``"human"`` (that frame in a window).
        **overrides: Scenario overrides (``quanta=50``, ``gpu=A10G``, ``objective.fs=0``).

    Version history: v0: initial release.
    """

    metadata = {"render_modes": ["ansi", "rgb_array", "human"], "render_fps": 10}  # noqa: RUF012

    def __init__(
        self,
        scenario: str | Scenario = DEFAULT_SCENARIO,
        record_timeline: bool = False,
        render_mode: str | None = None,
        **overrides: Any,
    ) -> None:
        sc = scenario_for("edgegym/EnergyFairShare-v0", scenario, overrides)
        self.scenario = sc
        self.render_mode = check_render_mode(render_mode)
        self.record_timeline = record_timeline
        self.gpu = get_gpu(sc["hardware"]["gpu"])
        self.power_model = PowerModel.from_spec(self.gpu)
        self.quantum_s = float(sc["quantum_s"])
        self.unit_s = float(sc["unit_s"])
        self.units = round(self.quantum_s / self.unit_s)
        self.quanta = int(sc["quanta"])
        self.horizon = int(sc["fairness_horizon"])
        self.n = int(sc["max_tenants"])
        tenants = sc["tenants"]
        self.n_tenants = len(tenants)
        self.names = [t["name"] for t in tenants]
        self.models = [get_model(t["model"]) for t in tenants]
        self.weights = np.zeros(self.n)
        self.weights[: self.n_tenants] = [t["weight"] for t in tenants]
        self.arrive = np.full(self.n, np.inf)
        self.leave = np.full(self.n, -np.inf)
        self.arrive[: self.n_tenants] = [t["arrive_s"] for t in tenants]
        self.leave[: self.n_tenants] = [t["leave_s"] for t in tenants]
        resolve = self.gpu.resolve_clock
        self.clocks = [
            sorted((float(a), resolve(f)) for a, f in t["clock_mhz"])
            if isinstance(t["clock_mhz"], list)
            else [(0.0, resolve(t["clock_mhz"]))]
            for t in tenants
        ]
        self.batch = [int(t["batch"]) for t in tenants]
        base = Path(sc.source).parent
        self.demand_spec = [
            None if t["demand"] == "backlogged" else make_arrival(t["demand"], base)
            for t in tenants
        ]
        self.weights_obj = dict(sc["objective"])
        self.action_space = spaces.MultiDiscrete(np.full(self.n, self.units + 1))
        self.observation_space = spaces.Box(
            0.0, 10.0, shape=(PER_TENANT * self.n + GLOBALS,), dtype=np.float32
        )
        self.timeline: list[dict[str, Any]] | None = None
        self._k = -1

    # ------------------------------------------------------------------ profiles
    def clock_at(self, i: int, t: float) -> float:
        """Clock (MHz) of tenant i at time t."""
        f = self.clocks[i][0][1]
        for at, mhz in self.clocks[i]:
            if at <= t + 1e-9:
                f = mhz
        return f

    def _profiles(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """(N,) power (W) and seconds per request of every slot at time t (cached per clocks)."""
        key = tuple(self.clock_at(i, t) for i in range(self.n_tenants))
        cache = self.__dict__.setdefault("_profile_cache", {})
        if key not in cache:
            cache[key] = self._compute_profiles(t)
        power, service = cache[key]
        return power.copy(), service.copy()

    def _compute_profiles(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        power = np.zeros(self.n)
        service = np.zeros(self.n)
        top = self.gpu.max_clock_mhz
        for i, md in enumerate(self.models):
            f = self.clock_at(i, t)
            power[i] = float(self.power_model.power(f, md.power_activity))
            b = self.batch[i]
            service[i] = float(md.latency_s(1.0, f / top, b)) / b
        return power, service

    # ------------------------------------------------------------------ gym API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        self.arrivals = np.zeros((self.n, self.quanta))
        for i, proc in enumerate(self.demand_spec):
            if proc is not None:
                self.arrivals[i] = proc.counts(self.quanta, self.quantum_s, self.np_random)
        self.executor = TimeSliceExecutor(self.n, self.unit_s, self.power_model.idle_power_w)
        self.queue = np.zeros(self.n)  # requests waiting (arrival-driven tenants)
        self.time_total = np.zeros(self.n)
        self.energy_total = np.zeros(self.n)
        self.requests_total = np.zeros(self.n)
        self.energy_j = 0.0
        # Per quantum of the fairness horizon: (time_s, energy_j, wanted) per slot.
        self.recent: deque[tuple[np.ndarray, np.ndarray, np.ndarray]] = deque(maxlen=self.horizon)
        self.wanted_ever = np.zeros(self.n, dtype=bool)
        self.last = (np.zeros(self.n), np.zeros(self.n))
        self.fs_sum = 0.0
        self._k = 0
        self.timeline = [] if self.record_timeline else None
        return self._obs(), self._info({})

    @property
    def now_s(self) -> float:
        """Time at the start of the current quantum."""
        return self._k * self.quantum_s

    def _active(self, t: float) -> np.ndarray:
        return (self.arrive <= t + 1e-9) & (self.leave > t + 1e-9)

    def _demand_units(self, t: float) -> np.ndarray:
        active = self._active(t)
        _, service = self._profiles(t)
        out = np.zeros(self.n, dtype=np.int64)
        for i in np.flatnonzero(active):
            if self.demand_spec[i] is None:
                out[i] = self.units
            else:
                k = min(self._k, self.quanta - 1)  # after the last quantum: nothing arrives
                new = self.arrivals[i, k] if self._k < self.quanta else 0.0
                work = (self.queue[i] + new) * service[i]
                out[i] = min(self.units, math.ceil(work / self.unit_s - 1e-9))
        return out

    def action_masks(self) -> np.ndarray:
        """Flat (max_tenants * (U + 1),) bool: units 0 .. demand for each slot."""
        done = self._k < 0 or self._k >= self.quanta
        d = np.zeros(self.n, dtype=int) if done else self._demand_units(self.now_s)
        grid = np.arange(self.units + 1)[None, :] <= d[:, None]
        return grid.ravel()

    def sim_state(self) -> EnergySnapshot:
        """Structured state for baselines."""
        t = self.now_s
        power, service = self._profiles(t)
        return EnergySnapshot(
            time_s=t,
            units=self.units,
            active=self._active(t),
            power=power,
            weights=self.weights.copy(),
            demand_units=self._demand_units(t),
            speed=np.where(service > 0, 1.0 / np.maximum(service, 1e-12), 0.0),
            time_s_total=self.time_total.copy(),
            energy_j_total=self.energy_total.copy(),
        )

    def project(self, action: Any) -> np.ndarray:
        """The units actually applied for ``action`` (see the class docstring)."""
        a = np.asarray(action)
        if a.shape != (self.n,):
            raise ValueError(f"action must have shape ({self.n},), got {a.shape}")
        d = self._demand_units(self.now_s)
        u = np.clip(np.nan_to_num(a.astype(float)), 0, None)
        u = np.minimum(np.floor(u), d).astype(np.int64)
        if u.sum() > self.units:
            u = np.asarray(quantize_shares(u, 1.0, float(self.units), as_quanta=True))
        return u.astype(np.int64)

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if self._k < 0 or self._k >= self.quanta:
            raise RuntimeError("call reset() before step() (and after the episode ends)")
        t = self.now_s
        units = self.project(action)
        active = self._active(t)
        wanted = self._demand_units(t) > 0  # had work for the GPU this quantum
        self.wanted_ever |= wanted
        power, service = self._profiles(t)
        work = np.full(self.n, np.inf)
        for i, proc in enumerate(self.demand_spec):
            if proc is not None:
                self.queue[i] += self.arrivals[i, self._k]
                work[i] = self.queue[i] * service[i]
        res = self.executor.run(units, power, service, work, self.quantum_s)
        for i, proc in enumerate(self.demand_spec):
            if proc is not None:
                self.queue[i] = max(0.0, self.queue[i] - res.requests[i])
        self.time_total += res.time_s
        self.energy_total += res.energy_j
        self.requests_total += res.requests
        step_energy = float(res.energy_j.sum()) + res.idle_j
        self.energy_j += step_energy
        self.recent.append((res.time_s, res.energy_j, wanted))
        self.last = (res.time_s, res.energy_j)
        f_t, f_e, f_s = self._fairness(active)
        self.fs_sum += f_s
        top_service, _ = self._top_service()
        # What the present tenants would serve in the quantum at the top clock, sharing evenly.
        alone = np.where(active, self.quantum_s / np.maximum(top_service, 1e-12), 0.0)
        terms = {
            "fs": f_s,
            "ft": f_t,
            "fe": f_e,
            "throughput": float(res.requests.sum() / max(alone.sum() / max(active.sum(), 1), 1e-9)),
            "energy": -step_energy / (self.power_model.max_power_w * self.quantum_s),
        }
        reward = float(sum(self.weights_obj.get(k, 0.0) * v for k, v in terms.items()))
        if self.timeline is not None:
            self.timeline.append(
                {
                    "t0": t,
                    "t1": t + self.quantum_s,
                    "units": units.tolist(),
                    "time_s": res.time_s.tolist(),
                    "energy_j": res.energy_j.tolist(),
                    "active": active.tolist(),
                }
            )
        self._k += 1
        terminated = self._k >= self.quanta
        info = self._info(
            {
                "reward_terms": terms,
                "units": units,
                "tenant_time_s": res.time_s,
                "tenant_energy_j": res.energy_j,
                "throughput_rps": res.requests / self.quantum_s,
                "latency_s": res.latency_s,
                "energy_j": step_energy,
                "F_T": f_t,
                "F_E": f_e,
                "F_S": f_s,
            }
        )
        if terminated:
            info["episode_metrics"] = self.episode_metrics()
        return self._obs(), reward, terminated, False, info

    def _top_service(self) -> tuple[np.ndarray, np.ndarray]:
        out = np.zeros(self.n)
        for i, md in enumerate(self.models):
            out[i] = float(md.latency_s(1.0, 1.0, self.batch[i])) / self.batch[i]
        return out, np.where(out > 0, out, 1.0)

    def _fairness(self, active: np.ndarray) -> tuple[float, float, float]:
        """F_T, F_E, F_S over the last ``fairness_horizon`` quanta, of the present tenants that
        wanted the GPU in that horizon or got time in it (a tenant with nothing to run is not
        starved; an idle GPU with work waiting scores 0, see :func:`fairness`)."""
        if not self.recent:
            return 1.0, 1.0, 1.0
        t = np.sum([r[0] for r in self.recent], axis=0)
        e = np.sum([r[1] for r in self.recent], axis=0)
        wanted = np.any([r[2] for r in self.recent], axis=0)
        counted = active & (wanted | (t > 0))
        return fairness(t[counted], e[counted], self.weights[counted])

    def episode_metrics(self) -> dict[str, Any]:
        """Whole-episode numbers: fairness of the cumulative allocation and per-tenant totals."""
        live = (self.weights > 0) & (self.wanted_ever | (self.time_total > 0))
        f_t, f_e, f_s = fairness(self.time_total[live], self.energy_total[live], self.weights[live])
        total_s = max(self.quanta * self.quantum_s, 1e-12)
        out: dict[str, Any] = {
            "F_T": f_t,
            "F_E": f_e,
            "F_S": f_s,
            "mean_step_F_S": self.fs_sum / max(self._k, 1),
            "energy_j": self.energy_j,
            "throughput_rps": float(self.requests_total.sum() / total_s),
        }
        for i in range(self.n_tenants):
            out[f"time_share_{self.names[i]}"] = float(self.time_total[i] / total_s)
            out[f"energy_j_{self.names[i]}"] = float(self.energy_total[i])
            out[f"throughput_rps_{self.names[i]}"] = float(self.requests_total[i] / total_s)
        return out

    def _obs(self) -> np.ndarray:
        t = min(self.now_s, (self.quanta - 1) * self.quantum_s)
        power, service = self._profiles(t)
        active = self._active(t)
        top_service, _ = self._top_service()
        w = np.where(active, self.weights, 0.0)
        tw, ew = self._horizon_shares()
        lt, le = self.last
        feats = np.zeros((self.n, PER_TENANT))
        feats[:, 0] = active
        feats[:, 1] = w / max(w.sum(), 1e-12)
        feats[:, 2] = power / self.power_model.max_power_w
        feats[:, 3] = np.where(service > 0, top_service / np.maximum(service, 1e-12), 0.0)
        feats[:, 4] = 0.0 if self._k >= self.quanta else self._demand_units(t) / self.units
        feats[:, 5] = tw
        feats[:, 6] = ew
        feats[:, 7] = lt / max(lt.sum(), 1e-12)
        feats[:, 8] = le / max(le.sum(), 1e-12)
        f_t, f_e, _ = self._fairness(active)
        glob = np.array([self._k / self.quanta, f_t, f_e, active.sum() / self.n])
        return np.clip(np.concatenate([feats.ravel(), glob]), 0.0, 10.0).astype(np.float32)

    def _horizon_shares(self) -> tuple[np.ndarray, np.ndarray]:
        if not self.recent:
            return np.zeros(self.n), np.zeros(self.n)
        t = np.sum([r[0] for r in self.recent], axis=0)
        e = np.sum([r[1] for r in self.recent], axis=0)
        return t / max(t.sum(), 1e-12), e / max(e.sum(), 1e-12)

    def _info(self, extra: dict[str, Any]) -> dict[str, Any]:
        info = {"action_mask": self.action_masks(), "time_s": self.now_s}
        info.update(extra)
        return info

    def close(self) -> None:
        """Close the ``"human"`` window, if one is open."""
        release(self)
        super().close()

    def render(self) -> str | np.ndarray | None:
        """One text line (``"ansi"``), the frame of :meth:`_frame_panels` (``"rgb_array"``),
        or that frame shown in a window (``"human"``, returns ``None``)."""
        if self.render_mode in ("rgb_array", "human"):
            return render_frame(self, *self._frame_panels())
        if self.render_mode != "ansi" or self._k < 0:
            return None
        lt, le = self.last
        parts = [f"{self.names[i]}: {lt[i]:.3f}s {le[i]:.2f}J" for i in range(self.n_tenants)]
        return f"t={self.now_s:.2f}s " + ", ".join(parts)

    def _frame_panels(self) -> tuple[str, list[Panel]]:
        """Title and panels of the ``"rgb_array"`` frame: last quantum's shares, fairness."""
        if self._k < 0:
            return "EnergyFairShare-v0: call reset()", []
        n = self.n_tenants
        lt, le = self.last
        t_share = lt[:n] / max(float(lt.sum()), 1e-12)
        e_share = le[:n] / max(float(le.sum()), 1e-12)
        # Fairness of the horizon that ended with the last quantum (its tenants present).
        last_t = max(self._k - 1, 0) * self.quantum_s
        f_t, f_e, f_s = self._fairness(self._active(last_t))
        present = [self.names[i] for i in np.flatnonzero(self._active(self.now_s)[:n])]
        dark, light = tenant_colors(n)
        done = " (done)" if self._k >= self.quanta else ""
        title = (
            f"t = {self.now_s:.2f} s   quantum {self._k}/{self.quanta}{done}   "
            f"present: {', '.join(present) or 'none'}"
        )
        shares = Panel(
            "last quantum: share of GPU time and energy",
            list(self.names),
            [Series("time", t_share, light, "0.75"), Series("energy", e_share, dark, "0.3")],
            ylim=(0.0, 1.0),
        )
        fair = Panel(
            f"fairness over the last {min(self._k, self.horizon)} quanta",
            ["F_T", "F_E", "F_S"],
            [Series("fairness", [f_t, f_e, f_s], ["tab:blue", "tab:orange", "tab:green"], "0.5")],
            ylim=(0.0, 1.0),
        )
        return title, [shares, fair]

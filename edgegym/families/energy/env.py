"""``edgegym/EnergyFairShare-v0``: time-sharing one GPU among tenants at their own DVFS clocks."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np
from gymnasium import spaces

from edgegym.core.checks import check_backend, check_real_options, real_seed, unapplied_clock
from edgegym.core.dynamics import Record
from edgegym.core.env import EdgeEnv
from edgegym.core.render import Panel, Series, tenant_colors
from edgegym.families.energy import observation
from edgegym.families.energy.dynamics import EnergyDynamics
from edgegym.families.energy.observation import GLOBALS, PER_TENANT
from edgegym.families.energy.params import EnergyParams, clock_at, make_params, profiles_at
from edgegym.families.energy.reward import TERMS
from edgegym.scenarios import Scenario

DEFAULT_SCENARIO = "etf-tx2-resnet50-mobilenetv2"
__all__ = [
    "DEFAULT_SCENARIO",
    "GLOBALS",
    "PER_TENANT",
    "TERMS",
    "EnergyFairShareEnv",
    "EnergySnapshot",
    "energy_spaces",
]


def energy_spaces(p: EnergyParams) -> tuple[spaces.Box, spaces.MultiDiscrete]:
    """Observation and action space of one env (the single and the vector env share them)."""
    return observation.space(p.n), spaces.MultiDiscrete(np.full(p.n, p.units + 1))


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


def real_executor(
    params: EnergyParams,
    device: str,
    time_scale: float | None,
    options: dict[str, Any],
    sim: Any,
    rng: np.random.Generator,
) -> Any:
    """The real backend's executor of one episode (``EnergyParams.make_executor``, with the
    first four arguments bound): the tenants' stand-in networks time-sliced on ``device``
    (:class:`edgegym.real.timeslice.RealTimeSliceExecutor`), seeded from a copy of the
    episode's generator."""
    from edgegym.real.timeslice import RealTimeSliceExecutor

    requested = []
    for i, name in enumerate(params.names):
        for _, mhz in params.clocks[i]:
            for note in unapplied_clock(mhz, params.max_clock_mhz, "request rates and energy"):
                requested.append(f"{name}: {note}")
    return RealTimeSliceExecutor(
        sim,
        [md.name for md in params.models],
        params.batch,
        params.top_service,
        device=device,
        time_scale=time_scale,
        seed=real_seed(rng),
        requested=list(dict.fromkeys(requested)),
        options=options,
        clocks=params.clocks,
        max_clock_mhz=params.max_clock_mhz,
    )


class EnergyFairShareEnv(EdgeEnv):
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
    order of §5 (:mod:`edgegym.families.energy.timeslice`).

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
    GPU scores 1 (:func:`edgegym.families.energy.timeslice.fairness`). ``info``: per-tenant time,
    energy, throughput and latency (the mean wait of the requests the tenant's slice serves, from
    where the slice falls in the quantum's CFS order, plus the service time;
    :mod:`edgegym.families.energy.timeslice`), F_T / F_E / F_S, energy_j, the applied units, the
    reward terms.

    **Episode end**: ``terminated`` after ``quanta`` quanta.

    Args:
        scenario: Bundled name (``etf-*``) or path, or a loaded scenario.
        record_timeline: Keep per-quantum records in ``env.unwrapped.timeline``.
        render_mode: ``None``, ``"ansi"`` (one line: each tenant's time and energy in the
            last quantum), ``"rgb_array"`` (a 640x360 frame: each tenant's share of the last
            quantum's time and energy, and F_T, F_E, F_S over the fairness horizon;
            :mod:`edgegym.core.render`) or ``"human"`` (that frame in a window).
        backend: ``"sim"`` (default) or ``"real"``: each tenant's slices run a compact
            stand-in network on ``device`` in the simulator's CFS order; requests and, where
            NVML reads it, energy are measured (:mod:`edgegym.real.timeslice`), and
            ``info["real"]`` says what was measured and what was emulated (clocks are never
            changed).
        device: Torch device of the real backend, ``"cpu"`` or ``"cuda[:N]"``.
        time_scale: Real backend: scenario seconds per wall second (``None``: 1).
        real_options: Real backend options (:data:`edgegym.real.timeslice.DEFAULT_OPTIONS`).
        **overrides: Scenario overrides (``quanta=50``, ``gpu=A10G``, ``objective.fs=0``).

    Version history: v0: initial release; ``backend="real"`` added (same spaces).
    """

    env_id = "edgegym/EnergyFairShare-v0"
    metadata = {"render_modes": ["ansi", "rgb_array", "human"], "render_fps": 10}  # noqa: RUF012

    def __init__(
        self,
        scenario: str | Scenario = DEFAULT_SCENARIO,
        record_timeline: bool = False,
        render_mode: str | None = None,
        backend: str = "sim",
        device: str = "cpu",
        time_scale: float | None = None,
        real_options: dict[str, Any] | None = None,
        **overrides: Any,
    ) -> None:
        self.backend, self.device, self.time_scale = check_backend(backend, device, time_scale)
        self.real_options = check_real_options(
            real_options, self.backend, "edgegym.real.timeslice:DEFAULT_OPTIONS"
        )
        sc = self._setup(
            scenario, overrides, render_mode=render_mode, record_timeline=record_timeline
        )
        self.scenario = sc
        params = make_params(sc)
        if self.backend == "real":
            make = partial(real_executor, params, self.device, self.time_scale, self.real_options)
            params = dataclasses.replace(params, make_executor=make)
        self._use(params, EnergyDynamics(), *energy_spaces(params))

    # ------------------------------------------------------------------ profiles
    def clock_at(self, i: int, t: float) -> float:
        """Clock (MHz) of tenant i at time t."""
        return clock_at(self.params.clocks[i], t)

    def profiles(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """(N,) power (W) and seconds per request of every slot at time t."""
        return profiles_at(self.params, t)

    # ------------------------------------------------------------------ episode
    @property
    def _k(self) -> int:
        return -1 if self.state is None else int(self.state.k[0])

    @property
    def now_s(self) -> float:
        """Time at the start of the current quantum."""
        return self._k * self.params.quantum_s

    @property
    def last(self) -> tuple[np.ndarray, np.ndarray]:
        """(N,) seconds run and joules used by every slot in the last quantum."""
        if self.state is None:
            return np.zeros(self.params.n), np.zeros(self.params.n)
        return self.state.last_t[0], self.state.last_e[0]

    def _active(self, t: float) -> np.ndarray:
        return (self.params.arrive <= t + 1e-9) & (self.params.leave > t + 1e-9)

    def _demand_units(self) -> np.ndarray:
        return self.dynamics.demand_units(self.params, self.state)[0]

    def sim_state(self) -> EnergySnapshot:
        """Structured state for baselines."""
        st = self.state
        k = min(self._k, self.params.quanta)
        service = self.params.service_tab[k].copy()
        return EnergySnapshot(
            time_s=self.now_s,
            units=self.params.units,
            active=self.params.active_tab[k].copy(),
            power=self.params.power_tab[k].copy(),
            weights=self.params.weights.copy(),
            demand_units=self._demand_units(),
            speed=np.where(service > 0, 1.0 / np.maximum(service, 1e-12), 0.0),
            time_s_total=st.time_total[0].copy(),
            energy_j_total=st.energy_total[0].copy(),
        )

    def project(self, action: Any) -> np.ndarray:
        """The units actually applied for ``action`` (see the class docstring)."""
        return self.dynamics.project(self.params, self.state, self._action_batch(action))[0]

    action_help = (
        " (time units per tenant slot, 0 .. the quantum's units; env.unwrapped."
        "describe_action(a) reads one)"
    )

    def describe_action(self, action: Any) -> str:
        """The action in words and numbers: each tenant's time units, seconds and share
        of the quantum, as requested (over-full actions are then scaled down)."""
        p = self.params
        a = np.asarray(action, dtype=np.int64).ravel()
        units = int(round(p.quantum_s / p.unit_s))
        return "\n".join(
            f"{p.names[i]}: {int(a[i])} of {units} units ({a[i] * p.unit_s:.3f} s, "
            f"{a[i] / units:.0%} of the quantum)"
            for i in range(p.n_tenants)
        )

    @property
    def executor(self) -> Any:
        """The real backend's executor of the episode (``None`` in simulation or before
        ``reset``)."""
        return None if self.state is None else self.state.executors[0]

    def _state_info(self) -> dict[str, Any]:
        info: dict[str, Any] = {"time_s": self.now_s}
        if self.backend == "real":
            info["real"] = self.executor.report()
        return info

    def _before_step(self) -> tuple[float, np.ndarray]:
        return self.now_s, self.params.active_tab[self._k].copy()

    def _timeline_add(self, before: tuple[float, np.ndarray], rec: Record) -> None:
        t, active = before
        row = rec.info
        self.timeline.append(
            {
                "t0": t,
                "t1": t + self.params.quantum_s,
                "units": row["units"][0].tolist(),
                "time_s": row["tenant_time_s"][0].tolist(),
                "energy_j": row["tenant_energy_j"][0].tolist(),
                "active": active.tolist(),
            }
        )

    def allocation_timeline(self) -> list[dict[str, Any]] | None:
        """One record per quantum (``t0``, ``t1``; per tenant ``units``, ``time_s`` it ran,
        ``energy_j`` its slices took, ``active``), or ``None`` without ``record_timeline``."""
        return self.timeline

    def plot_info(self) -> dict[str, Any]:
        """The tenants' names and the GPU's idle power, for the evaluator's figures."""
        p = self.params
        return {"unit": "tenant", "tenants": list(p.names), "idle_w": float(p.idle_power_w)}

    def _fairness(self, active: np.ndarray) -> tuple[float, float, float]:
        """F_T, F_E, F_S over the last ``fairness_horizon`` quanta, of the present tenants that
        wanted the GPU in that horizon or got time in it (a tenant with nothing to run is not
        starved; an idle GPU with work waiting scores 0, see :func:`fairness`)."""
        f = self.dynamics.fairness_of(self.params, self.state, np.asarray(active)[None])
        return float(f[0][0]), float(f[1][0]), float(f[2][0])

    def _render_text(self) -> str | None:
        """One line: each tenant's time and energy in the last quantum."""
        if self._k < 0:
            return None
        lt, le = self.last
        names = self.params.names
        parts = [f"{names[i]}: {lt[i]:.3f}s {le[i]:.2f}J" for i in range(len(names))]
        return f"t={self.now_s:.2f}s " + ", ".join(parts)

    def _frame_panels(self) -> tuple[str, list[Panel]]:
        """Title and panels of the ``"rgb_array"`` frame: last quantum's shares, fairness."""
        if self._k < 0:
            return "EnergyFairShare-v0: call reset()", []
        n = self.params.n_tenants
        lt, le = self.last
        t_share = lt[:n] / max(float(lt.sum()), 1e-12)
        e_share = le[:n] / max(float(le.sum()), 1e-12)
        # Fairness of the horizon that ended with the last quantum (its tenants present).
        last_t = max(self._k - 1, 0) * self.params.quantum_s
        f_t, f_e, f_s = self._fairness(self._active(last_t))
        present = [self.params.names[i] for i in np.flatnonzero(self._active(self.now_s)[:n])]
        dark, light = tenant_colors(n)
        done = " (done)" if self._k >= self.params.quanta else ""
        title = (
            f"t = {self.now_s:.2f} s   quantum {self._k}/{self.params.quanta}{done}   "
            f"present: {', '.join(present) or 'none'}"
        )
        shares = Panel(
            "last quantum: share of GPU time and energy",
            list(self.params.names),
            [Series("time", t_share, light, "0.75"), Series("energy", e_share, dark, "0.3")],
            ylim=(0.0, 1.0),
        )
        fair = Panel(
            f"fairness over the last {min(self._k, self.params.horizon)} quanta",
            ["F_T", "F_E", "F_S"],
            [Series("fairness", [f_t, f_e, f_s], ["tab:blue", "tab:orange", "tab:green"], "0.5")],
            ylim=(0.0, 1.0),
        )
        return title, [shares, fair]

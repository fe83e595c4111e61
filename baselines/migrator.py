"""MIGRator (arXiv 2407.13126, §4): a Goodput-optimal MIG allocation sequence per window.

At the start of every retraining window MIGRator plans the allocation of every decision step of
the window from a forecast of the window's arrivals, maximising Goodput (Eq. 6-9) subject to
constraints 1-5: a valid MIG configuration every step (1), no instance sharing (2), retraining
never interrupted or resized (3), launched and finished inside the window (4), every inference
task always deployable (5); reconfigurations cost throughput (Eq. 10-11).

The planning model (:class:`PlanProblem`, Eq. 6-12 with constraints 1-5 and Eq. 10-11's cost as
the environment applies it) and its exact solver (:func:`solve`: branch and bound over retraining
plans, Viterbi inside) are in :mod:`edgegym.baselines.migrator_plan`; this module forecasts the
window's arrivals, builds its problem from an environment snapshot (:func:`build_problem`) and
follows the plan (:class:`MIGRatorPolicy`).
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import gymnasium as gym
import numpy as np

from edgegym.baselines.base import Policy
from edgegym.baselines.migrator_plan import (
    NoFeasiblePlan,
    Plan,
    PlanProblem,
    brute_force,
    change_classes,
    solve,
)
from edgegym.families.mig.dynamics import RUNNING
from edgegym.hardware.mig import layout_sizes, valid_layouts

__all__ = [
    "FORECASTERS",
    "SOLVERS",
    "MIGRatorPolicy",
    "NoFeasiblePlan",
    "Plan",
    "PlanProblem",
    "SeasonalForecast",
    "brute_force",
    "build_problem",
    "change_classes",
    "forecast",
    "seasonal_forecast",
    "solve",
]

#: The planners of ``migrator:solver=...``.
SOLVERS = ("decomposition", "milp")


def forecast(
    past: np.ndarray,
    window_s: int,
    mean_rate: np.ndarray,
    smooth_s: int = 5,
    seasonal: float = 0.0,
) -> np.ndarray:
    """Per-second arrivals expected in the next window, from the past windows only.

    MIGRator uses an Informer model; this is the simple forecaster the reproduction uses: with
    no history, each tenant's long-run mean rate; afterwards the previous window's per-second
    counts (seasonal naive at the window period), smoothed over ``smooth_s`` seconds, averaged
    half and half with the mean of the previous window (shrinkage towards the level).

    Args:
        past: (M, t) per-second arrivals observed so far.
        window_s: Seconds in the window.
        mean_rate: (M,) long-run mean rate of each tenant's arrival process.
        smooth_s: Moving-average width (the window's length where that is shorter).

    Returns:
        (M, window_s) forecast.
    """
    m = past.shape[0]
    if past.shape[1] < window_s:
        return np.repeat(np.asarray(mean_rate, dtype=float)[:, None], window_s, axis=1)
    last = past[:, -window_s:].astype(float)
    width = min(int(smooth_s), window_s)  # a kernel no longer than the window: window_s values
    kernel = np.ones(width) / width
    smooth = np.stack([np.convolve(last[i], kernel, mode="same") for i in range(m)])
    return (1.0 - seasonal) * last.mean(axis=1, keepdims=True) + seasonal * smooth


@dataclass
class SeasonalForecast:
    """What :func:`seasonal_forecast` learned from the past windows."""

    mean: np.ndarray
    """(M, S) expected arrivals in each second of the next window."""
    samples: np.ndarray | None
    """(M, K, S) sampled arrivals per second (the forecast plus the last window's residuals),
    whose spread scores the options by ``E[min(A, cap)]``; None without a past window."""
    weight: np.ndarray
    """(M,) the learned weight of the recurring shape (0: the level alone, 1: the shape)."""
    windows: int
    """Past windows it learned from."""


def seasonal_forecast(
    past: np.ndarray,
    window_s: int,
    mean_rate: np.ndarray,
    smooth_s: int = 5,
    prior_weight: float = 0.5,
) -> SeasonalForecast:
    """Per-second arrivals of the next window from the recurring shape of the past windows.

    MIGRator predicts every second of a window from the previous windows' arrivals with an
    Informer model (§4.1.3); this is a simple seasonal forecaster in its place, learned from the
    past windows only (documented as such in the reproduction report):

    * each past window's counts divided by that window's mean and smoothed over ``smooth_s``
      seconds give its *shape*; the shape forecast ``P`` is their mean over all past windows;
    * the weight ``beta`` of the shape is learned: with two or more past windows, the
      least-squares weight (clipped to [0, 1]) with which the shape of the windows before the
      last predicts the last window's shape (``beta = <x, y> / <x, x>`` on the deviations from
      1); with one past window, ``prior_weight``;
    * the forecast is the last window's level times ``1 + beta (P - 1)``, and its spread is the
      last window's residuals around the same fit, added to every second.

    On stationary arrivals (nothing recurs) ``beta`` is learned near 0 and the forecast is the
    previous window's level, as in :func:`forecast`.

    Args:
        past: (M, t) per-second arrivals observed so far (from the episode start, so windows
            are the whole ``window_s`` blocks counted back from the present).
        window_s: Seconds in the window.
        mean_rate: (M,) long-run mean rate of each tenant (the forecast with no history).
        smooth_s: Moving-average width of the shapes (seconds, >= 1; the window's length
            where that is shorter, so the forecast has ``window_s`` seconds for any window).
        prior_weight: ``beta`` with a single past window, in [0, 1].

    Returns:
        The forecast (:class:`SeasonalForecast`).
    """
    m = past.shape[0]
    n = past.shape[1] // window_s
    if n == 0:
        return SeasonalForecast(
            mean=np.repeat(np.asarray(mean_rate, dtype=float)[:, None], window_s, axis=1),
            samples=None,
            weight=np.zeros(m),
            windows=0,
        )
    w = past[:, past.shape[1] - n * window_s :].astype(float).reshape(m, n, window_s)
    level = w.mean(axis=2)  # (M, n)
    ratio = w / np.maximum(level, 1e-9)[:, :, None]
    kernel = np.ones(min(int(smooth_s), window_s))  # no longer than the window: S values
    width = np.convolve(np.ones(window_s), kernel, mode="same")  # seconds inside the window
    shape = np.apply_along_axis(lambda r: np.convolve(r, kernel, mode="same"), 2, ratio) / width
    profile = shape.mean(axis=1)  # (M, S)
    if n >= 2:
        x = shape[:, :-1].mean(axis=1) - 1.0
        y = shape[:, -1] - 1.0
        num = np.sum(x * y, axis=1)
        den = np.sum(x * x, axis=1)
        beta = np.clip(np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0), 0.0, 1.0)
    else:
        beta = np.full(m, float(prior_weight))
    last_level = level[:, -1:]
    fit = last_level * (1.0 + beta[:, None] * (profile - 1.0))  # (M, S)
    resid = w[:, -1] - fit  # (M, S): the last window around the same fit
    samples = np.maximum(0.0, fit[:, None, :] + resid[:, :, None])  # (M, K=S, S)
    return SeasonalForecast(mean=fit, samples=samples, weight=beta, windows=n)


#: MIGRator's forecasters: ``seasonal`` (:func:`seasonal_forecast`, learns the recurring
#: per-second shape of the past windows; the default) and ``level`` (:func:`forecast`, the
#: previous window's level with its per-second distribution, the planner's first forecaster).
FORECASTERS = ("seasonal", "level")


def build_problem(
    snap, arrivals_per_s: np.ndarray, must_launch: bool = True, samples: np.ndarray | None = None
) -> PlanProblem:
    """The planning problem of the current window from an environment snapshot.

    Args:
        snap: :class:`edgegym.families.mig.snapshot.MIGSnapshot` at a window start.
        arrivals_per_s: (M, S) arrivals per second to plan for (forecast or oracle).
        must_launch: Formula 4.
        samples: optional (M, K) per-second arrival counts whose empirical distribution is the
            forecast of every second, or (M, K, S) sampled arrivals of each second: options
            are then scored by ``E[min(A, cap)]``.

    Returns:
        The problem over the signatures valid in this window; ``problem.signatures`` maps its
        signature indices back to the catalogue.
    """
    spec = snap.spec
    cat = spec.catalogue
    m = spec.n_tenants
    t_n = spec.steps_per_window
    edges = np.minimum(np.arange(t_n + 1) * spec.basis_s, spec.window_s)
    dt = np.diff(edges)
    pending = snap.status == 0
    ok = spec.valid_static.copy()
    for i in range(m):
        if not pending[i]:
            ok &= cat.n_instances[:, m + i] == 0
    sigs = np.flatnonzero(ok)
    options = [sorted({cat.signatures[n][i] for n in sigs}) for i in range(m)]
    u_index = [{u: k for k, u in enumerate(opts)} for opts in options]
    cap, added = _capacity_tables(spec, options)
    sizes = list(cat.sizes)
    sig_u = np.array([[u_index[i][cat.signatures[n][i]] for i in range(m)] for n in sigs])
    sig_r = np.array(
        [
            [
                sizes.index(cat.signatures[n][m + i][0]) if cat.signatures[n][m + i] else -1
                for i in range(m)
            ]
            for n in sigs
        ]
    )
    option_sizes = np.zeros((m, cap.shape[1], len(sizes)), dtype=np.int64)
    for i in range(m):
        for k, u in enumerate(options[i]):
            for z in u:
                option_sizes[i, k, sizes.index(z)] += 1
    prev = np.full(m, -1)
    if snap.signature >= 0:
        for i in range(m):
            prev[i] = u_index[i].get(cat.signatures[snap.signature][i], -1)
    per_step = None
    if samples is not None and samples.ndim == 3:
        k_n = samples.shape[1]
        flat = samples.astype(float).reshape(m * k_n, samples.shape[2])
        per_step = _arrivals_per_step(flat, edges).reshape(m, k_n, t_n)  # (M, K, T)
    elif samples is not None:
        per_step = samples.astype(float)[:, :, None] * dt[None, None, :]  # (M, K, T)
    prob = PlanProblem(
        samples=per_step,
        arrivals=_arrivals_per_step(arrivals_per_s, edges),
        dt=dt,
        sig_u=sig_u,
        sig_r=sig_r,
        cap=cap,
        added=added,
        psi=np.array(snap.overhead_s[:m], dtype=float),
        pre=snap.model_acc.copy(),
        post=np.where(pending, snap.post_acc, snap.model_acc),
        dur=_retrain_steps(snap),
        pending=pending,
        prev_u=prev,
        must_launch=must_launch,
        option_sizes=option_sizes,
        layouts=_layout_sizes(cat.gpu, tuple(sizes)),
    )
    prob.signatures = sigs  # type: ignore[attr-defined]
    return prob


@functools.cache
def _layout_sizes(gpu: str, sizes: tuple[int, ...]) -> np.ndarray:
    """(C, Z) instances of each size in each maximal MIG layout of ``gpu``."""
    rows = [[layout_sizes(lay).count(z) for z in sizes] for lay in valid_layouts(gpu, True)]
    rows = np.unique(np.array(rows, dtype=np.int64), axis=0)
    inside = (rows[:, None] <= rows[None]).all(axis=2) & (rows[:, None] != rows[None]).any(axis=2)
    return rows[~inside.any(axis=1)]  # a multiset inside another layout's adds nothing


def _arrivals_per_step(arrivals_per_s: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """(M, T) arrivals per step from arrivals per second (uniform inside each second)."""
    m = arrivals_per_s.shape[0]
    cum = np.concatenate([np.zeros((m, 1)), np.cumsum(arrivals_per_s, axis=1)], axis=1)
    sec = np.arange(cum.shape[1])
    per_step = np.stack([np.diff(np.interp(edges, sec, cum[i])) for i in range(m)])
    return np.round(per_step, 9)  # no float noise: equal seconds give equal steps


def _capacity_tables(spec, options: list[list[tuple]]) -> tuple[np.ndarray, np.ndarray]:
    """Per tenant and inference option: the capacity (requests per second), and per pair of
    options the capacity a switch from the first to the second takes down (Eq. 10 or the
    per-instance rule).

    Returns:
        ``cap`` (M, U) and ``added`` (M, U, U).
    """
    m = len(options)
    n_u = max(len(o) for o in options)
    sizes = list(spec.catalogue.sizes)
    cap = np.zeros((m, n_u))
    added = np.zeros((m, n_u, n_u))
    eq10 = spec.overhead_rule == "eq10"
    for i in range(m):
        rate = dict(zip(sizes, spec.size_rate[i], strict=True))
        for a, u in enumerate(options[i]):
            cap[i, a] = sum(rate[z] for z in u)
        for a, u in enumerate(options[i]):
            for b, v in enumerate(options[i]):
                if eq10:  # Eq. 11: instance or GPC count changes -> Eq. 10: all of v is down
                    changed = len(u) != len(v) or sum(u) != sum(v)
                    added[i, a, b] = cap[i, b] if changed else 0.0
                    continue
                left = list(u)
                new = []
                for z in v:  # instances of v not in u (multiset difference)
                    if z in left:
                        left.remove(z)
                    else:
                        new.append(z)
                added[i, a, b] = sum(rate[z] for z in new)
    return cap, added


def _retrain_steps(snap) -> np.ndarray:
    """(M, Z) steps a pending job takes per instance size (beyond the window where the size
    cannot hold it); a start costs what the environment charges now."""
    spec = snap.spec
    m, t_n = spec.n_tenants, spec.steps_per_window
    secs = spec.retrain_seconds(snap.job_left, snap.overhead_s[m:])
    with np.errstate(invalid="ignore"):
        dur = np.ceil(secs / spec.basis_s - 1e-9)
    return np.where(~np.isfinite(dur) | (dur > t_n), t_n + 1, dur).astype(np.int64)


class MIGRatorPolicy(Policy):
    """MIGRator: plan each window with :func:`solve`, then follow the plan step by step.

    Args:
        env: An ``edgegym/MIGReconfig-v0`` environment.
        oracle: Plan with the window's true arrivals instead of the forecast.
        forecaster: ``seasonal`` (the default: :func:`seasonal_forecast`, learns the per-second
            shape that recurs across windows) or ``level`` (:func:`forecast`, the forecaster
            the first forecaster: the previous window's level and per-second distribution).
        gap: Optimality gap the solver proves (0.01: within 1%).
        max_plans: Cap on exact plan solves per window (the decomposition).
        solver: ``decomposition`` (the default: :func:`solve`) or ``milp`` (the same model as
            one MILP on HiGHS, :func:`edgegym.baselines.migrator_milp.solve_milp`: the
            cross-check, minutes per full window, docs/benchmarks.md).
        time_limit: Seconds HiGHS may take per window (``milp`` only; default no limit).

    Where Formula 4 cannot hold together with constraints 1-5 (the pending jobs cannot all run
    beside the inference tasks and finish in the window, as on W5 with 40 s windows), the window
    is planned without it and its plan says so (``Plan.launch_relaxed``).

    When the plan and the environment disagree (a job finishes a step earlier or later than
    planned because the real overhead differs from the model's, or MPS interference slows it),
    the planned signature is repaired: running jobs keep their instance, finished ones release
    theirs. Where the repaired signature is not valid either (the planned inference does not
    fit beside a job still running, or the planned instances cannot be placed beside a running
    job's), the policy keeps the current allocation, releasing the instances of jobs no longer
    running, or else takes the lowest-index valid signature (:meth:`_fallback`: what the
    environment's projection applied before): it never returns an action its mask forbids.
    ``plans`` keeps every window's :class:`Plan` (value, bound, solve time).
    """

    name = "migrator"

    def __init__(
        self,
        env: gym.Env,
        oracle: bool = False,
        gap: float = 0.01,
        max_plans: int = 2000,
        forecaster: str = "seasonal",
        solver: str = "decomposition",
        time_limit: float | None = None,
    ) -> None:
        super().__init__(env)
        if solver not in SOLVERS:
            raise ValueError(f"solver={solver!r} is unknown (allowed: {', '.join(SOLVERS)})")
        if time_limit is not None and not float(time_limit) > 0:
            raise ValueError(f"time_limit={time_limit} must be > 0 seconds")
        self.solver = solver
        self.time_limit = None if time_limit is None else float(time_limit)
        self.oracle = bool(oracle)
        if forecaster not in FORECASTERS:
            raise ValueError(
                f"forecaster={forecaster!r} is unknown (allowed: {', '.join(FORECASTERS)})"
            )
        self.forecaster = forecaster
        self.gap = float(gap)
        self.max_plans = int(max_plans)
        if not 0.0 <= self.gap < 1.0:
            raise ValueError(f"gap={gap} is out of range (allowed: [0, 1), a relative gap)")
        if self.max_plans < 1:
            raise ValueError(f"max_plans={max_plans} must be >= 1")
        self.plans: list[Plan] = []
        # the seasonal forecaster's weights of the shape, per window with a past window
        self.weights: list[np.ndarray] = []
        self._seed = 0
        self._window = -1
        self._seq: np.ndarray | None = None

    def reset(self, seed: int | None = None) -> None:
        """Forget the plan."""
        self._seed = 0 if seed is None else int(seed) + 104729
        self._window = -1
        self._seq = None
        self.plans = []
        self.weights = []

    def _plan(self, snap) -> None:
        spec = snap.spec
        s = int(np.ceil(spec.window_s))
        samples = None
        if self.oracle:
            arr = snap.window_arrivals
        else:
            mean = np.array([proc.mean_rate for proc in spec.arrivals])
            fc = None
            if self.forecaster == "seasonal":
                fc = seasonal_forecast(snap.past_arrivals, s, mean)
                if fc.windows:
                    self.weights.append(fc.weight)
            if fc is not None and fc.samples is not None:
                arr, samples = fc.mean, fc.samples
            else:  # the level forecaster, or no past window yet (the two agree then)
                arr = forecast(snap.past_arrivals, s, mean)
                samples = self._history(snap, s)
        prob = build_problem(snap, arr, samples=samples)
        try:
            plan = self._solve(prob)
        except NoFeasiblePlan:  # Formula 4 cannot hold with 1-5 here: launch what fits
            plan = self._solve(dataclasses.replace(prob, must_launch=False))
            plan.launch_relaxed = True
        self.plans.append(plan)
        self._seq = prob.signatures[plan.signatures]  # type: ignore[attr-defined]
        self._window = snap.window

    def _solve(self, prob: PlanProblem) -> Plan:
        if self.solver == "milp":
            from edgegym.baselines.migrator_milp import solve_milp

            return solve_milp(prob, gap=self.gap, time_limit=self.time_limit)
        return solve(prob, gap=self.gap, max_plans=self.max_plans)

    def _history(self, snap, s: int) -> np.ndarray:
        """The last window of per-second arrivals (before the episode: drawn from the arrival
        processes with the policy's own generator, standing in for the pre-episode history)."""
        past = snap.past_arrivals
        if past.shape[1] >= s:
            return past[:, -s:]
        rng = np.random.default_rng(self._seed)
        pre = np.stack([proc.counts(s, 1.0, rng) for proc in snap.spec.arrivals])
        return np.concatenate([pre, past], axis=1)[:, -s:]

    def act(self) -> np.ndarray:
        """The planned signature of this step, repaired if the environment disagrees."""
        snap = self.unwrapped.sim_state(oracle=self.oracle)
        if snap.window != self._window or self._seq is None:
            self._plan(snap)
        spec = snap.spec
        cat = spec.catalogue
        n = int(self._seq[min(snap.step_in_window, len(self._seq) - 1)])
        if snap.mask[n]:
            return np.int64(n)
        m = spec.n_tenants
        sig = list(cat.signatures[n])
        cur = cat.signatures[snap.signature] if snap.signature >= 0 else None
        for i in range(m):
            if snap.status[i] == RUNNING and cur is not None:
                sig[m + i] = cur[m + i]
            elif snap.status[i] != 0:
                sig[m + i] = ()
        try:
            fixed = cat.index(tuple(sig))
        except KeyError:
            fixed = -1
        if fixed >= 0 and snap.mask[fixed]:
            return np.int64(fixed)
        want = fixed if fixed >= 0 else n
        return np.int64(self._fallback(snap, want, self.unwrapped.params.stripped))

    @staticmethod
    def _fallback(snap, want: int, stripped: np.ndarray) -> int:
        """A valid signature where neither the plan nor its repair is (a job the plan expected
        finished still runs, e.g. slowed by MPS interference, and the planned inference no
        longer fits beside it; or the planned instances cannot be placed beside a running
        job's): the one the environment projects a masked action onto
        (:meth:`~edgegym.families.mig.dynamics.MIGDynamics.project`), so the allocations are
        the ones the policy had before it chose valid actions itself. That is the current
        allocation keeping only the running jobs' retraining instances (the environment's own
        table, ``stripped``: :attr:`~edgegym.families.mig.params.MIGParams.stripped`), else the
        lowest-index valid signature, else ``want`` where the mask allows nothing."""
        if snap.signature >= 0:
            running = np.asarray(snap.status) == RUNNING
            bits = int(running @ (1 << np.arange(running.size)))
            cur = int(stripped[snap.signature, bits])
            if snap.mask[cur]:
                return cur
        valid = np.flatnonzero(snap.mask)
        return int(valid[0]) if valid.size else want

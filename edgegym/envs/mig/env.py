"""``edgegym/MIGReconfig-v0``: per-second MIG reconfiguration for multi-tenant continual
learning (MIGRator)."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from edgegym.envs._common import (
    check_backend,
    real_seed,
    unapplied_clock,
)
from edgegym.envs.base import EdgeEnv
from edgegym.envs.mig import observation, reward
from edgegym.envs.mig.types import DONE, PENDING, RUNNING, MIGSnapshot, MIGSpec
from edgegym.envs.render import Panel, Series, tenant_colors
from edgegym.hardware.mig import MIG_MEMORY_SLICES, MIG_TOTAL_GPCS
from edgegym.hardware.migalloc import ABSENT, IDLE
from edgegym.scenarios import Scenario
from edgegym.sim.engine import Engine
from edgegym.sim.serving import MIGExecutor
from edgegym.sim.state import Allocation, ClusterState

DEFAULT_SCENARIO = "migrator-w1"
_EPS = 1e-9


class MIGReconfigEnv(EdgeEnv):
    """MIGRator's problem (arXiv 2407.13126, §2-§4): M tenants share one MIG GPU.

    Each tenant serves inference requests (arrival trace, latency SLO, batch size) with its
    model and retrains the model once per retraining window on the window's new classes. A
    request counts towards **Goodput** when it is served within its SLO *and* answered correctly
    (MIGRator Eq. 6-9); until its tenant's retraining finishes it is answered with the
    pre-retraining accuracy, afterwards with the post-retraining accuracy.

    **Decision epochs**: every ``basis_s`` seconds (default 1 s; 0.5 to 10 s). Simulated time
    inside a step is split only where rates change (second boundaries, instances becoming
    ready, retraining completions).

    **Action space**: ``Discrete(N)`` over the allocation signatures of
    :func:`edgegym.hardware.migalloc.catalogue` (for 2 tenants on an A100, N = 496): for each
    task (inference and retraining of every tenant) the MIG instance sizes it holds. The
    environment realises the signature on a valid layout that keeps the most (placement, task)
    pairs of the current allocation (:meth:`AllocationCatalogue.realise`); a running retraining
    job's instance never moves. A signature is valid (``action_masks()`` and
    ``info["action_mask"]``) exactly when:

    * every inference task holds an instance with enough memory for its model;
    * a running retraining job keeps exactly its instance (no interruption, no resizing);
    * a tenant that has retrained this window holds no retraining instance;
    * a pending job gets none, or one instance with enough memory on which it finishes inside
      the window, counting a fresh instance's reconfiguration overhead;
    * some layout hosts it while keeping the running jobs' placements.

    An invalid action is projected deterministically onto the current allocation with the
    retraining instances no longer needed released (the lowest-index valid signature at the
    first decision); ``info["projected"]`` says so.

    **Reconfiguration**: an instance that gets a new task is unavailable for the overhead of the
    tenant's model (MIGRator Fig. 5): ``destroy + create + library + model load`` when the
    placement is new, ``library + model load`` when an existing instance changes task. With
    ``preinit`` (§4.2) an instance whose memory slices were free can be built ahead of time: it
    is ready at ``max(now, free_since + overhead)`` (the runtime is assumed to know the next
    allocation, as MIGRator's planner does).

    **Observation**: flat ``Box`` (14 M + 4,), see :mod:`edgegym.envs.mig.observation`.

    **Reward**: named terms (:mod:`edgegym.envs.mig.reward`): ``goodput`` (requests in SLO and
    correct in the step, divided by the episode's mean requests per step, so the mean reward of
    an episode is its Goodput fraction) minus ``energy`` (weight 0 by default).

    **Start state**: instances of the first allocation are ready at t = 0 (a warm start); the
    deployed models know the pre-training classes; window 0 brings new classes.

    **Episode end**: ``terminated`` after the last window; never truncated.

    Args:
        scenario: Bundled scenario name (``migrator-w1`` ... ``migrator-w16``) or a path.
        record_timeline: Keep one record per decision in ``env.unwrapped.timeline``.
        render_mode: ``None``, ``"ansi"`` (one line: time, window, allocation, layout),
            ``"rgb_array"`` (a 640x360 frame: each tenant's GPCs, retraining dark, inference
            light, reconfiguring grey, and its model accuracy, SLO attainment and Goodput in
            the window so far; :mod:`edgegym.envs.render`) or ``"human"`` (that frame in a
            window).
        backend: ``"sim"`` (default: the profile-driven simulator) or ``"real"``: the tenants'
            models, their accuracy and their retraining are real PyTorch work on ``device``
            (:class:`edgegym.real.mig.RealMIGExecutor`); ``info["real"]`` then holds what was
            measured since the last step and what was emulated. See ``docs/real.md``.
        device: Torch device of the real backend, ``"cpu"`` or ``"cuda[:N]"``.
        time_scale: Real backend pacing: scenario seconds per wall second (``None``: as fast
            as the work allows).
        real_options: Real backend options (:data:`edgegym.real.mig.MIG_OPTIONS`).
        **overrides: Scenario field overrides, e.g. ``basis_s=0.5``, ``batch=4``,
            ``preinit=true``, ``gpu=H100-80GB``.

    Version history: v0: initial release; ``backend="real"`` added (same spaces).
    """

    env_id = "edgegym/MIGReconfig-v0"
    metadata = {**EdgeEnv.metadata, "render_fps": 10}  # noqa: RUF012

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
        self.real_options = dict(real_options or {})
        sc = self._setup(
            scenario, overrides, render_mode=render_mode, record_timeline=record_timeline
        )
        self.spec_ = spec = MIGSpec.from_scenario(sc)
        self.action_space = spaces.Discrete(len(spec.catalogue))
        self.observation_space = observation.space(spec)
        self.timeline: list[dict[str, Any]] | None = None
        self.engine: Engine | None = None
        self._ready = False
        self._mask: np.ndarray | None = None

    # ------------------------------------------------------------------ gym API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        spec = self.spec_
        rng = self.np_random
        self.arrivals = np.stack(
            [proc.counts(spec.n_seconds, 1.0, rng) for proc in spec.arrivals]
        ).astype(float)  # (M, T)
        cluster = ClusterState(gpus=1, clock_mhz=np.array([spec.clock_mhz]))
        self.executor = MIGExecutor(
            self.arrivals,
            spec.rate,
            spec.latency,
            spec.train_speed,
            spec.slo_s,
            spec.catalogue.placement_size,
            spec.power,
            cluster,
        )
        if self.backend == "real":
            self.executor = self._real_executor(self.executor)
        self.profile = spec.profile()
        self.engine = Engine(self.profile, self.executor, cluster, spec.window_s)
        if self.record_timeline:
            self.engine.metrics.timeline = []  # per segment: GPC fractions, model accuracy
        self._start_window(0)
        self.signature = -1
        self.step_in_window = 0
        self.slice_free_since = np.zeros(MIG_MEMORY_SLICES)
        n_steps = spec.windows * spec.steps_per_window
        self.norm = max(float(self.arrivals.sum()) / n_steps, 1e-9)
        self.timeline = [] if self.record_timeline else None
        self._ready = True
        self._mask = None
        return observation.encode(self), self._info({})

    def step(self, action: Any) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        if not self._ready or self.engine is None or self.engine.done:
            raise RuntimeError("call reset() before step() (and after the episode ends)")
        mask = self.action_masks()
        try:
            a = int(np.asarray(action).reshape(()))
        except (TypeError, ValueError):
            raise ValueError(
                f"action must be one integer in [0, {mask.size}), got {action!r}"
            ) from None
        projected = not (0 <= a < mask.size and mask[a])
        if projected:
            a = self._fallback(mask)
        changes = self._apply(a)
        self._mask = None
        eng = self.engine
        spec = self.spec_
        t0 = eng.cluster.time_s
        window_end = eng.window_start_s + spec.window_s
        t_end = min(eng.window_start_s + (self.step_in_window + 1) * spec.basis_s, window_end)
        m0 = self._counters()
        self._run_until(t_end)
        m1 = self._counters()
        delta = {k: m1[k] - m0[k] for k in m0}
        self.step_in_window += 1
        if self.step_in_window >= spec.steps_per_window:
            self._start_window(eng.window + 1)
            self.step_in_window = 0
        self._mask = None  # the state moved on: recompute the mask when asked
        terms = reward.terms(self, delta, t_end - t0)
        r = reward.combine(terms, spec.weights)
        if self.timeline is not None:
            self.timeline.append(
                {
                    "t0": t0,
                    "t1": t_end,
                    "window": int(eng.window if self.step_in_window else eng.window - 1),
                    "signature": a,
                    "allocation": spec.catalogue.describe(a),
                    "gpcs": spec.catalogue.gpcs[a].tolist(),
                    "requests": delta["requests"].tolist(),
                    "goodput": delta["goodput"].tolist(),
                    "served_slo": delta["served_slo"].tolist(),
                    "model_acc": eng.tenants.model_acc.tolist(),
                    "reconfigured": changes,
                }
            )
        terminated = eng.done
        info = self._info({"reward_terms": terms, "projected": projected, **self._step_info(delta)})
        info["reconfigurations"] = changes
        if terminated:
            info["episode_metrics"] = eng.metrics.summary()
        return observation.encode(self), float(r), terminated, False, info

    def action_masks(self) -> np.ndarray:
        """(N,) bool: the signatures that are valid now (see the class docstring)."""
        if self._mask is None:
            self._mask = self._compute_mask()
        return self._mask.copy()

    def _compute_mask(self) -> np.ndarray:
        spec = self.spec_
        cat = spec.catalogue
        eng = self.engine
        if eng is None or eng.done:
            return np.ones(len(cat), dtype=bool)
        m = spec.n_tenants
        status = self.status()
        keep = self._keep()
        mask = spec.valid_static & cat.feasible(keep)
        time_left = eng.window_start_s + spec.window_s - eng.cluster.time_s
        # Work of each job: what is left, or the whole job when it has not started.
        left = np.where(
            eng.tenants.job_left > 0,
            eng.tenants.job_left,
            self.profile.gpu_seconds[:, eng.window, 0],
        )
        fits = spec.fits_window(left, time_left)  # (M, Z)
        for i in range(m):
            if status[i] == RUNNING:
                continue
            none = cat.n_instances[:, m + i] == 0
            if status[i] == DONE:
                mask &= none
                continue
            mask &= none | np.any(cat.counts[:, m + i, :][:, fits[i]] > 0, axis=1)
        return mask

    def sim_state(self, oracle: bool = False) -> MIGSnapshot:
        """Structured state for baselines (``oracle``: include this window's true arrivals)."""
        eng = self._engine()
        spec = self.spec_
        t = eng.cluster.time_s
        now = int(np.floor(t + _EPS))
        w0 = int(round(eng.window_start_s))
        window = None
        if oracle:
            window = self.arrivals[:, w0 : w0 + int(np.ceil(spec.window_s))].copy()
        left = np.where(
            self.status() == PENDING,
            self.profile.gpu_seconds[:, min(eng.window, spec.windows - 1), 0],
            eng.tenants.job_left,
        )
        return MIGSnapshot(
            spec=spec,
            time_s=t,
            window=eng.window,
            step_in_window=self.step_in_window,
            signature=self.signature,
            placement_task=self.executor.state.task.copy(),
            status=self.status(),
            job_left=left,
            model_acc=eng.tenants.model_acc.copy(),
            post_acc=self.profile.post_acc[:, min(eng.window, spec.windows - 1), 0].copy(),
            backlog=self.executor.state.backlog.copy(),
            past_arrivals=self.arrivals[:, :now].copy(),
            mask=self.action_masks(),
            window_arrivals=window,
        )

    def status(self) -> np.ndarray:
        """(M,) retraining status of each tenant in the current window."""
        t = self._engine().tenants
        return np.where(t.running, RUNNING, np.where(t.retrained, DONE, PENDING))

    def _render_text(self) -> str | None:
        """One text line of the current state."""
        if self.engine is None:
            return None
        eng = self.engine
        cat = self.spec_.catalogue
        lay = self._layout_text()
        desc = cat.describe(self.signature) if self.signature >= 0 else "-"
        return f"t={eng.cluster.time_s:7.1f}s window {eng.window}: {desc} [{lay}]"

    def _frame_panels(self) -> tuple[str, list[Panel]]:
        """Title and panels of the ``"rgb_array"`` frame: GPCs and serving per tenant."""
        spec = self.spec_
        eng = self.engine
        if eng is None or not self._ready:
            return "MIGReconfig-v0: call reset()", []
        m = spec.n_tenants
        st = self.executor.state
        now = eng.cluster.time_s
        size = spec.catalogue.placement_size
        gpcs = np.zeros((3, m))  # retraining, inference, reconfiguring (not ready yet)
        for p in np.flatnonzero(st.task >= 0):
            task = int(st.task[p])
            row = 2 if st.ready_s[p] > now + _EPS else (0 if task >= m else 1)
            gpcs[row, task % m] += float(size[p])
        k = min(eng.window, spec.windows - 1)
        if self.step_in_window == 0 and not eng.done and k > 0:
            k -= 1  # a window has just begun: show the one that ended
        mt = eng.metrics
        req = mt.requests[:, k]
        slo = np.divide(mt.served_slo[:, k], req, out=np.zeros(m), where=req > 0)
        good = np.divide(mt.goodput[:, k], req, out=np.zeros(m), where=req > 0)
        dark, light = tenant_colors(m)
        labels = list(spec.names)
        desc = spec.catalogue.describe(self.signature) if self.signature >= 0 else "-"
        window = f"{min(eng.window + 1, spec.windows)}/{spec.windows}"
        title = f"t = {now:.1f} s   window {window}{' (done)' if eng.done else ''}   {desc}"
        layout = Panel(
            f"MIG GPCs ({spec.gpu.name})",
            labels,
            [
                Series("retraining", gpcs[0], dark, "0.3"),
                Series("inference", gpcs[1], light, "0.75"),
                Series("reconfiguring", gpcs[2], "0.55"),
            ],
            stacked=True,
            ylim=(0.0, float(MIG_TOTAL_GPCS)),
            ylabel="GPCs",
        )
        serving = Panel(
            f"window {k + 1}: {int(req.sum())} requests",
            labels,
            [
                Series("model accuracy", eng.tenants.model_acc, dark, "0.3"),
                Series("SLO attainment", slo, light, "0.75"),
                Series("Goodput", good, "tab:green"),
            ],
            ylim=(0.0, 1.0),
        )
        return title, [layout, serving]

    # ------------------------------------------------------------------ internals
    def _start_window(self, k: int) -> None:
        eng = self._engine()
        eng.start_window(k)
        if self.backend == "real" and not eng.done:
            # New classes as measured: the deployed models' accuracy on the window's data.
            eng.tenants.model_acc = self.executor.deployed_accuracy()

    def _real_executor(self, sim: MIGExecutor) -> Any:
        from edgegym.real.mig import RealMIGExecutor

        spec = self.spec_
        return RealMIGExecutor(
            sim,
            spec,
            device=self.device,
            time_scale=self.time_scale,
            seed=real_seed(self.np_random),
            requested=unapplied_clock(
                spec.clock_mhz, spec.gpu.max_clock_mhz, "latencies and training speeds"
            ),
            options=self.real_options,
        )

    def _engine(self) -> Engine:
        if self.engine is None:
            raise RuntimeError("call reset() first")
        return self.engine

    def _keep(self) -> list[tuple[int, int]]:
        m = self.spec_.n_tenants
        task = self.executor.state.task
        running = self._engine().tenants.running
        return [(int(p), int(task[p])) for p in np.flatnonzero(task >= m) if running[task[p] - m]]

    def _fallback(self, mask: np.ndarray) -> int:
        cat = self.spec_.catalogue
        m = self.spec_.n_tenants
        if self.signature >= 0:
            sig = list(cat.signatures[self.signature])
            running = self._engine().tenants.running
            for i in range(m):
                if not running[i]:
                    sig[m + i] = ()
            n = cat.index(tuple(sig))
            if mask[n]:
                return n
        valid = np.flatnonzero(mask)
        return int(valid[0]) if valid.size else max(self.signature, 0)

    def _apply(self, n: int) -> int:
        """Realise signature ``n``; returns the number of instances (re)configured."""
        spec = self.spec_
        cat = spec.catalogue
        eng = self._engine()
        st = self.executor.state
        m = spec.n_tenants
        now = eng.cluster.time_s
        _, new = cat.realise(n, st.task, self._keep())
        first = self.signature < 0
        changed = 0
        downtime = 0.0
        for p in np.flatnonzero(new >= 0):
            if new[p] == st.task[p]:
                continue
            tenant = int(new[p]) % m
            existed = st.task[p] != ABSENT
            ov = spec.overhead_reload_s[tenant] if existed else spec.overhead_new_s[tenant]
            start = now
            if spec.preinit and not first:
                prof, s0 = cat.placements[p]
                if existed and st.task[p] == IDLE:
                    start = min(now, float(st.since_s[p]))
                else:
                    free = float(self.slice_free_since[s0 : s0 + prof.mem_slices].max())
                    start = min(now, free)
            ready = now if first else max(now, start + ov)
            st.ready_s[p] = ready
            changed += 1
            downtime += ready - now
        moved = new != st.task
        st.since_s[moved] = now
        st.task = new
        # Memory slices covered by a working instance are not free; newly free ones are.
        busy = np.zeros(MIG_MEMORY_SLICES, dtype=bool)
        for p in np.flatnonzero(new >= 0):
            prof, s0 = cat.placements[p]
            busy[s0 : s0 + prof.mem_slices] = True
        was_busy = np.isinf(self.slice_free_since)
        self.slice_free_since = np.where(
            busy, np.inf, np.where(was_busy, now, self.slice_free_since)
        )
        self.signature = n
        if not first:
            eng.metrics.reconfigurations += changed
            eng.metrics.downtime_s += downtime
        gp = cat.gpcs[n].astype(float) / MIG_TOTAL_GPCS
        alloc = Allocation.idle(m)
        alloc.share_infer = gp[:m].copy()
        alloc.share_retrain = gp[m:].copy()
        alloc.retrain_cfg = np.where(gp[m:] > 0, 0, -1)
        eng.apply(alloc)
        return 0 if first else changed

    def _run_until(self, t_end: float) -> None:
        eng = self._engine()
        st = self.executor.state
        while eng.cluster.time_s < t_end - _EPS and not eng.done:
            t = eng.cluster.time_s
            nxt = min(t_end, np.floor(t + _EPS) + 1.0)
            pending = st.ready_s[(st.task >= 0) & (st.ready_s > t + _EPS)]
            if pending.size:
                nxt = min(nxt, float(pending.min()))
            eng.advance(nxt)

    def _counters(self) -> dict[str, np.ndarray]:
        mt = self._engine().metrics
        return {
            "requests": mt.requests.sum(axis=1),
            "served_slo": mt.served_slo.sum(axis=1),
            "goodput": mt.goodput.sum(axis=1),
            "correct": mt.correct.sum(axis=1),
            "energy_j": np.array([mt.energy_j.sum()]),
            "downtime_s": np.array([mt.downtime_s]),
        }

    def _step_info(self, delta: dict[str, np.ndarray]) -> dict[str, Any]:
        req = float(delta["requests"].sum())
        return {
            "goodput": float(delta["goodput"].sum()),
            "requests": req,
            "slo_attainment": float(delta["served_slo"].sum() / req) if req > 0 else 1.0,
            "accuracy": float(delta["correct"].sum() / req) if req > 0 else 0.0,
            "energy_j": float(delta["energy_j"][0]),
            "downtime_s": float(delta["downtime_s"][0]),
        }

    def _layout_text(self) -> str:
        cat = self.spec_.catalogue
        st = self.executor.state
        m = self.spec_.n_tenants
        parts = []
        for p in np.flatnonzero(st.task != ABSENT):
            prof, s0 = cat.placements[p]
            t = int(st.task[p])
            who = "idle" if t < 0 else (f"I{t}" if t < m else f"R{t - m}")
            parts.append(f"{prof.name}@{s0}:{who}")
        return " ".join(parts)

    def _info(self, extra: dict[str, Any]) -> dict[str, Any]:
        mask = self.action_masks()
        eng = self._engine()
        info = {"action_mask": mask, "time_s": eng.cluster.time_s, "window": eng.window}
        if self.signature >= 0:
            info["allocation"] = self.spec_.catalogue.describe(self.signature)
            info["layout"] = self._layout_text()
        info.update(extra)
        if self.backend == "real":
            info["real"] = self.executor.report()
        return info

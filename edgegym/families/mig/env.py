"""``edgegym/MIGReconfig-v0``: per-second MIG reconfiguration for multi-tenant continual
learning (MIGRator)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
from gymnasium import spaces

from edgegym.core.checks import check_backend, check_real_options, real_seed, unapplied_clock
from edgegym.core.dynamics import Record
from edgegym.core.env import EdgeEnv
from edgegym.core.render import Panel, Series, tenant_colors
from edgegym.core.state import Allocation, ClusterState, TenantState
from edgegym.core.state import MIGState as InstanceState
from edgegym.families.mig import observation
from edgegym.families.mig.dynamics import MIGDynamics, MIGState, Stretch, status_of
from edgegym.families.mig.params import MIGParams, make_params
from edgegym.families.mig.serving import MIGExecutor
from edgegym.families.mig.snapshot import PENDING, MIGSnapshot
from edgegym.hardware.migalloc import ABSENT
from edgegym.scenarios import Scenario

DEFAULT_SCENARIO = "migrator-w1"
_EPS = 1e-9


def mig_spaces(params: MIGParams) -> tuple[spaces.Box, spaces.Discrete]:
    """The observation and action spaces of a scenario (single env; shared with the vector
    env)."""
    spec = params.spec
    return observation.space(spec), spaces.Discrete(len(spec.catalogue))


class _RealDynamics(MIGDynamics):
    """The dynamics of the real backend's one env: the real executor
    (:class:`edgegym.real.mig.RealMIGExecutor`) runs each stretch and measures the deployed
    models at every window start; everything else is :class:`MIGDynamics`'.

    The executor keeps the engine's interface (cluster, tenants, allocation objects), so each
    stretch hands it env 0's state in those objects; ``tenants.job_target`` is a view, so a
    real retraining job's measured accuracy is what the model is swapped in with.
    """

    def __init__(self, executor: Any, cluster: ClusterState) -> None:
        self.executor = executor
        self.cluster = cluster

    def stretch(
        self,
        params: MIGParams,
        state: MIGState,
        until: np.ndarray,
        rows: np.ndarray | None = None,
    ) -> Stretch:
        """One stretch of the real executor (``rows`` is ``None``: its one env runs whenever
        a stretch does)."""
        m = params.spec.n_tenants
        ex = self.executor
        t = float(state.time_s[0])
        self.cluster.time_s = t
        ex.sim.state = InstanceState(
            task=state.task[0].copy(),
            ready_s=state.ready_s[0].copy(),
            since_s=state.since_s[0].copy(),
            backlog=state.backlog[0].copy(),
        )
        cfg = np.where(state.running[0], 0, -1)
        tenants = TenantState(
            model_acc=state.model_acc[0].copy(),
            job_cfg=cfg.copy(),
            job_left=state.job_left[0].copy(),
            job_total=state.job_total[0].copy(),
            job_target=state.job_target[0],  # a view: the executor sets measured targets
            retrained=state.retrained[0].copy(),
        )
        alloc = Allocation(
            retrain_cfg=cfg,
            infer_cfg=np.zeros(m, dtype=np.int64),
            share_retrain=state.share_retrain[0].copy(),
            share_infer=params.share[state.signature[0], :m].copy(),
        )
        speed = ex.retrain_speed(alloc)
        active = state.running[0] & (speed > 0)
        with np.errstate(divide="ignore"):
            finish = np.where(active, tenants.job_left / np.where(active, speed, 1.0), np.inf)
        dt = max(0.0, min(float(until[0]) - t, float(finish.min(initial=np.inf))))
        seg = ex.run(self.cluster, tenants, alloc, dt)
        state.backlog = ex.sim.state.backlog[None].copy()
        return Stretch(
            dt=np.array([dt]),
            active=active[None],
            finish=finish[None],
            work=seg.work_done[None],
            requests=seg.requests[None],
            served=seg.served_slo[None],
            energy_j=np.array([seg.energy_j]),
        )

    def enter_window(
        self, params: MIGParams, state: MIGState, idx: np.ndarray, k: np.ndarray
    ) -> None:
        super().enter_window(params, state, idx, k)
        if int(k[0]) < params.spec.windows:
            self.measure(int(k[0]), state)

    def measure(self, k: int, state: MIGState) -> None:
        """New classes as measured: the deployed models' accuracy on window ``k``'s data."""
        self.executor.start_window(k)
        state.model_acc[0] = self.executor.deployed_accuracy()


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

    A masked signature (inside the space) is projected deterministically onto the current
    allocation with the retraining instances no longer needed released (the lowest-index
    valid signature at the first decision); ``info["projected"]`` says so. An index outside
    ``Discrete(N)`` is a ``ValueError``.

    **Reconfiguration** (``overhead.rule``, :func:`edgegym.families.mig.reconfig.reconfigure`). The
    default, ``eq10``, is MIGRator's Eq. 10-11: when the number of instances or of GPCs a task holds
    changes, the task's whole capacity is down for its Psi, the mean overhead measured over its
    reconfigurations in the last window (before any: a new instance's overhead). ``per-instance``
    makes each instance that gets a new task unavailable for its own overhead instead. Either
    way a reconfiguration's overhead is measured by MIGRator Fig. 5's components: ``destroy +
    create + library + model load`` when the placement is new, ``library + model load`` when an
    existing instance changes task, ``destroy`` when a task only gives instances up. With
    ``preinit`` (§4.2) an instance whose memory slices were free can be built ahead of time: it
    is ready at ``max(now, free_since + overhead)`` (the runtime is assumed to know the next
    allocation, as MIGRator's planner does), which shortens the measured overhead and so Psi.

    **Observation**: flat ``Box`` (14 M + 4,), see :mod:`edgegym.families.mig.observation`.

    **Reward**: named terms (:mod:`edgegym.families.mig.reward`): ``goodput`` (requests in SLO and
    correct in the step, divided by the episode's mean requests per step, so the mean reward of
    an episode is its Goodput fraction) minus ``energy`` (weight 0 by default).

    **Start state**: instances of the first allocation are ready at t = 0 (a warm start); the
    deployed models know the pre-training classes; window 0 brings new classes.

    **Episode end**: ``terminated`` after the last window; never truncated.

    **Info**: ``action_mask``, ``time_s``, ``window``, ``allocation`` and ``layout`` (text, once
    a signature is applied); after a step ``reward_terms``, ``projected``, ``reconfigurations``,
    ``goodput``, ``requests``, ``slo_attainment`` (requests served within the SLO in the step,
    over those it had to serve: queued at its start or arriving in it; in [0, 1]),
    ``accuracy``, ``energy_j``, ``downtime_s`` (instance-seconds the step's reconfiguration
    made unavailable), ``overhead_s`` (its measured overhead, summed over the tasks it
    reconfigured); ``episode_metrics`` at the end (with
    ``reconfigurations``, ``reconfig_events``, ``downtime_s`` and ``overhead_s``).

    **Implementation**: the batch of one of :class:`edgegym.families.mig.dynamics.MIGDynamics` (the
    native vector environment, :class:`edgegym.families.mig.vector.MIGVectorEnv`, is the batch of
    N). The real backend runs the same dynamics with the real executor in its execution seam.
    ``window``, ``profile`` and ``executor`` give env 0's window, true profile and instances.

    Args:
        scenario: Bundled scenario name (``migrator-w1`` ... ``migrator-w16``) or a path.
        record_timeline: Keep one record per decision in ``env.unwrapped.timeline``.
        render_mode: ``None``, ``"ansi"`` (one line: time, window, allocation, layout),
            ``"rgb_array"`` (a 640x360 frame: each tenant's GPCs, retraining dark, inference
            light, reconfiguring grey, and its model accuracy, SLO attainment and Goodput in
            the window so far; :mod:`edgegym.core.render`) or ``"human"`` (that frame in a
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
    action_help = (
        " (one allocation signature: env.unwrapped.describe_action(a) reads it, e.g. "
        "'I0=1 I1=1 R0=1 R1=-' for the GPCs of each tenant's inference and retraining "
        "instances; spec_.catalogue.signatures[a] gives them as tuples)"
    )

    def describe_action(self, action: Any) -> str:
        """The allocation signature in words and numbers: each tenant's inference and
        retraining instances (GPCs; under MPS its share, e.g. ``3/14``), and the catalogue's
        short form."""
        spec = self.spec_
        cat = spec.catalogue
        n = int(np.asarray(action).reshape(-1)[0])
        sig = cat.signatures[n]
        m = spec.n_tenants
        unit = f"/{cat.units}" if self.params.mps else "g"
        lines = []
        for i in range(m):
            infer = " + ".join(f"{g}{unit}" for g in sig[i]) or "none"
            retrain = " + ".join(f"{g}{unit}" for g in sig[m + i]) or "none"
            lines.append(f"tenant {i}: inference on {infer}, retraining on {retrain}")
        return "\n".join([*lines, f"({spec.catalogue.describe(n)})"])

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
            real_options, self.backend, "edgegym.real.mig:MIG_OPTIONS"
        )
        sc = self._setup(
            scenario, overrides, render_mode=render_mode, record_timeline=record_timeline
        )
        params = make_params(sc)
        if self.backend == "real" and params.mps:
            raise ValueError(
                "backend='real' runs MIG instances; a scenario with MPS shares (mps.shares > 0) "
                "has no real backend: use backend='sim' or mps.shares: 0"
            )
        self.spec_ = params.spec
        self.profile = params.profile
        self._use(params, MIGDynamics(), *mig_spaces(params))
        self._real: Any = None

    # ------------------------------------------------------------------ episode
    def _on_reset(self) -> None:
        if self.backend == "real":
            self._start_real(self.state)
        if self.record_timeline:
            self.state.timeline[0] = []  # per stretch: GPU shares, model accuracy

    def _before_step(self) -> float:
        return float(self.state.time_s[0])

    def allocation_timeline(self) -> list[dict[str, Any]] | None:
        """The dynamics' per-stretch records (a step holds several stretches: instances
        becoming ready, second boundaries of the arrivals)."""
        return None if self.state is None else self.state.timeline[0]

    def _timeline_add(self, t0: float, rec: Record) -> None:
        st, cat = self.state, self.spec_.catalogue
        sig = int(st.signature[0])
        row = {key: value[0] for key, value in rec.info.items()}
        self.timeline.append(
            {
                "t0": t0,
                "t1": t0 + float(rec.duration_s[0]),
                "window": int(st.window[0] if st.step_in_window[0] else st.window[0] - 1),
                "signature": sig,
                "allocation": cat.describe(sig),
                "gpcs": cat.gpcs[sig].tolist(),
                "requests": row["tenant_requests"].tolist(),
                "goodput": row["tenant_goodput"].tolist(),
                "served_slo": row["tenant_served_slo"].tolist(),
                "model_acc": st.model_acc[0].tolist(),
                "reconfigured": int(row["reconfigurations"]),
            }
        )

    def sim_state(self, oracle: bool = False) -> MIGSnapshot:
        """Structured state for baselines (``oracle``: include this window's true arrivals)."""
        st = self._state()
        spec = self.spec_
        t = float(st.time_s[0])
        now = int(np.floor(t + _EPS))
        window = int(st.window[0])
        arrivals = st.arrivals[0]
        w0 = round(window * spec.window_s)
        k = min(window, spec.windows - 1)
        status = self.status()
        return MIGSnapshot(
            spec=spec,
            time_s=t,
            window=window,
            step_in_window=int(st.step_in_window[0]),
            signature=int(st.signature[0]),
            placement_task=st.task[0].copy(),
            status=status,
            job_left=np.where(status == PENDING, self.profile.gpu_seconds[:, k, 0], st.job_left[0]),
            model_acc=st.model_acc[0].copy(),
            post_acc=self.profile.post_acc[:, k, 0].copy(),
            backlog=st.backlog[0].copy(),
            past_arrivals=arrivals[:, :now].copy(),
            mask=self.action_masks(),
            overhead_s=np.array(self.dynamics.charged_overhead(self.params, st)[0]),
            window_arrivals=(
                arrivals[:, w0 : w0 + int(np.ceil(spec.window_s))].copy() if oracle else None
            ),
        )

    def status(self) -> np.ndarray:
        """(M,) retraining status of each tenant in the current window."""
        st = self._state()
        return status_of(st.running[0], st.retrained[0])

    # ------------------------------------------------------------------ views of env 0
    @property
    def window(self) -> int:
        """The current retraining window (``windows`` once the episode has ended)."""
        if self.state is None:
            raise RuntimeError("call reset() first")
        return int(self.state.window[0])

    @property
    def executor(self) -> Any:
        """The real backend's executor; in simulation, env 0's instances and queues as
        ``executor.state`` (:class:`edgegym.core.state.MIGState`, live views)."""
        if self._real is not None:
            return self._real
        st = self._state()
        return SimpleNamespace(
            state=InstanceState(
                task=st.task[0], ready_s=st.ready_s[0], since_s=st.since_s[0], backlog=st.backlog[0]
            )
        )

    # ------------------------------------------------------------------ rendering
    def _render_text(self) -> str | None:
        """One text line of the current state."""
        st = self.state
        if st is None:
            return None
        sig = int(st.signature[0])
        desc = self.spec_.catalogue.describe(sig) if sig >= 0 else "-"
        t = float(st.time_s[0])
        return f"t={t:7.1f}s window {int(st.window[0])}: {desc} [{self._layout_text()}]"

    def _frame_panels(self) -> tuple[str, list[Panel]]:
        """Title and panels of the ``"rgb_array"`` frame: GPCs and serving per tenant."""
        spec = self.spec_
        st = self.state
        if st is None:
            return "MIGReconfig-v0: call reset()", []
        m = spec.n_tenants
        now = float(st.time_s[0])
        task, ready_s = st.task[0], st.ready_s[0]
        size = spec.catalogue.placement_size
        gpcs = np.zeros((3, m))  # retraining, inference, reconfiguring (not ready yet)
        for p in np.flatnonzero(task >= 0):
            t = int(task[p])
            row = 2 if ready_s[p] > now + _EPS else (0 if t >= m else 1)
            gpcs[row, t % m] += float(size[p])
        window = int(st.window[0])
        done = window >= spec.windows
        k = min(window, spec.windows - 1)
        if st.step_in_window[0] == 0 and not done and k > 0:
            k -= 1  # a window has just begun: show the one that ended
        req = st.requests[0][:, k]
        slo = np.divide(st.served_slo[0][:, k], req, out=np.zeros(m), where=req > 0)
        good = np.divide(st.goodput[0][:, k], req, out=np.zeros(m), where=req > 0)
        dark, light = tenant_colors(m)
        labels = list(spec.names)
        sig = int(st.signature[0])
        desc = spec.catalogue.describe(sig) if sig >= 0 else "-"
        shown = f"{min(window + 1, spec.windows)}/{spec.windows}"
        title = f"t = {now:.1f} s   window {shown}{' (done)' if done else ''}   {desc}"
        units = spec.catalogue.units
        shared = self.params.mps
        layout = Panel(
            f"MPS shares of {units} ({spec.gpu.name})" if shared else f"MIG GPCs ({spec.gpu.name})",
            labels,
            [
                Series("retraining", gpcs[0], dark, "0.3"),
                Series("inference", gpcs[1], light, "0.75"),
                Series("reconfiguring", gpcs[2], "0.55"),
            ],
            stacked=True,
            ylim=(0.0, float(units)),
            ylabel="shares" if shared else "GPCs",
        )
        serving = Panel(
            f"window {k + 1}: {int(req.sum())} requests",
            labels,
            [
                Series("model accuracy", st.model_acc[0], dark, "0.3"),
                Series("SLO attainment", slo, light, "0.75"),
                Series("Goodput", good, "tab:green"),
            ],
            ylim=(0.0, 1.0),
        )
        return title, [layout, serving]

    # ------------------------------------------------------------------ internals
    def _state(self) -> MIGState:
        if self.state is None:
            raise RuntimeError("call reset() first")
        return self.state

    def _start_real(self, state: MIGState) -> None:
        """Build the episode's real executor (after the arrivals are drawn, as the seed of its
        work comes from a copy of the generator) and measure the deployed models."""
        from edgegym.real.mig import RealMIGExecutor

        spec = self.spec_
        cluster = ClusterState(gpus=1, clock_mhz=self.params.clock_mhz.copy())
        sim = MIGExecutor(
            state.arrivals[0],
            spec.rate,
            spec.latency,
            spec.train_speed,
            spec.slo_s,
            spec.catalogue.placement_size,
            spec.power,
            cluster,
        )
        self._real = RealMIGExecutor(
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
        dyn = _RealDynamics(self._real, cluster)
        dyn.measure(0, state)
        self.dynamics = dyn

    def _layout_text(self) -> str:
        cat = self.spec_.catalogue
        task = self._state().task[0]
        m = self.spec_.n_tenants
        parts = []
        shares = self.params.mps
        ready = self._state().ready_s[0] <= float(self._state().time_s[0]) + _EPS
        for p in np.flatnonzero(task != ABSENT):
            prof, s0 = cat.placements[p]
            t = int(task[p])
            who = "idle" if t < 0 else (f"I{t}" if t < m else f"R{t - m}")
            if shares:  # MPS: the task and its share, a new process not serving yet marked
                parts.append(f"{who}:{prof.gpcs}/{cat.units}{'' if ready[p] else ' (starting)'}")
            else:
                parts.append(f"{prof.name}@{s0}:{who}")
        return " ".join(parts)

    def _state_info(self) -> dict[str, Any]:
        st = self._state()
        info: dict[str, Any] = {"time_s": float(st.time_s[0]), "window": int(st.window[0])}
        sig = int(st.signature[0])
        if sig >= 0:
            info["allocation"] = self.spec_.catalogue.describe(sig)
            info["layout"] = self._layout_text()
        if self._real is not None:
            info["real"] = self._real.report()
        return info


__all__ = ["DEFAULT_SCENARIO", "MIGReconfigEnv", "mig_spaces"]

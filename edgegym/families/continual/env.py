"""``edgegym/ContinualLearning-v0``: joint retraining and inference on shared GPUs (Ekya).

The environment is the batch of one of the family's functional core
(:mod:`edgegym.families.continual.dynamics`): ``reset`` draws a fresh :class:`ContinualState` of one
env, ``step`` runs :meth:`ContinualDynamics.step` on it and returns row 0 of what it computes. The
real backend plugs its executor into the same dynamics (``ContinualParams.make_executor``).
"""

from __future__ import annotations

import dataclasses
from functools import partial
from typing import Any

import numpy as np
from gymnasium import spaces

from edgegym.core.checks import (
    check_backend,
    check_real_options,
    real_seed,
    unapplied_clock,
)
from edgegym.core.dynamics import Record
from edgegym.core.env import EdgeEnv
from edgegym.core.executor import Executor, SimulatedExecutor
from edgegym.core.render import Panel, Series, tenant_colors
from edgegym.core.state import Allocation
from edgegym.families.continual import observation
from edgegym.families.continual.dynamics import (
    ContinualDynamics,
    ContinualState,
    serving_share,
)
from edgegym.families.continual.params import ContinualParams, make_params
from edgegym.families.continual.reward import TERMS
from edgegym.families.continual.snapshot import ContinualSnapshot, ContinualSpec
from edgegym.scenarios import Scenario
from edgegym.workload.continual import ContinualProfile, inference_accuracy

DEFAULT_SCENARIO = "ekya-cityscapes"


def continual_spaces(p: ContinualParams) -> tuple[spaces.Dict, spaces.MultiDiscrete]:
    """Observation and action space of one env (the single and the vector env share them)."""
    obs = observation.make_space(len(p.spec.retrain_configs), p.max_streams)
    return obs, spaces.MultiDiscrete(np.tile(p.nvec, p.max_streams))


def real_executor(
    spec: ContinualSpec,
    device: str,
    time_scale: float | None,
    options: dict[str, Any],
    sim: SimulatedExecutor,
    rng: np.random.Generator,
) -> Executor:
    """The real backend's executor of one episode (``ContinualParams.make_executor``, with
    the first four arguments bound): actual PyTorch work on ``device``, seeded from a copy of
    the episode's generator."""
    from edgegym.real.executor import RealExecutor

    requested = []
    if spec.gpus > 1:
        requested.append(f"{spec.gpus} GPUs: emulated on one {device} device")
    requested += unapplied_clock(
        spec.clock_mhz, spec.gpu.max_clock_mhz, "progress rates and shares"
    )
    return RealExecutor(
        sim,
        spec.retrain_configs,
        spec.windows,
        [spec.model.name] * spec.streams,
        device=device,
        time_scale=time_scale,
        seed=real_seed(rng),
        requested=requested,
        options=options,
    )


class ContinualLearningEnv(EdgeEnv):
    """Ekya's joint retraining/inference scheduling problem (NSDI'22, §3-4).

    V video streams share G GPUs (MPS-style shares in quanta of delta). Each stream runs live
    inference with its current model while its data drifts; in each retraining window the
    scheduler may retrain the model once, choosing a retraining configuration (cost vs
    accuracy), an inference configuration (frame sampling, resolution) and the GPU shares of
    both jobs. The retrained model replaces the old one when the job finishes.

    **Decision epochs**: the start of every retraining window and every retraining completion
    (Ekya reallocates then). Simulated time between epochs is advanced in closed form
    (:class:`edgegym.families.continual.dynamics.ContinualDynamics`, this env being its batch of
    one; the native vector env :class:`edgegym.families.continual.vector.ContinualLearningVectorEnv`
    steps N at once).

    **Action space**: ``MultiDiscrete`` with 4 entries per stream slot (``max_streams`` slots):
    ``[retrain, infer, r, i]`` where ``retrain`` is 0 (no retraining) or 1 + configuration
    index, ``infer`` the inference configuration, and ``r`` / ``i`` the retraining / inference
    shares in quanta of delta (0 .. G/delta). Invalid entries are masked in
    ``action_masks()`` and ``info["action_mask"]`` (flat, per ``MultiDiscrete`` entry); an
    invalid action is projected deterministically: a stream with a job in flight keeps its
    configuration, a stream that already retrained this window or a padding slot gets none,
    a retraining share without a configuration is dropped, and if the shares exceed G they are
    scaled down onto the delta grid by ``hardware.mps.quantize_shares`` (largest remainder,
    ties to the lower index). ``info["allocation"]`` is the allocation actually applied.

    **Observation**: ``Dict`` of ``streams`` (V_max, 9 + 2C), ``stream_mask`` (V_max,) and
    ``globals`` (6,); see :mod:`edgegym.families.continual.observation`.

    **Reward**: weighted named terms (:mod:`edgegym.families.continual.reward`): window-averaged
    inference accuracy (so the return over an episode is the sum of window-mean accuracies),
    minus the a_MIN shortfall, minus energy (weight 0 by default). ``info["reward_terms"]``.

    **Start state**: models at the scenario's start accuracy, no jobs, no shares; the
    micro-profiler's estimates of window 0 drawn.

    **Episode end**: ``terminated`` after the last window; never truncated.

    Args:
        scenario: Bundled scenario name or path to a scenario file.
        max_streams: Stream slots (pad to train one policy over scenarios with fewer streams).
        record_timeline: Keep a per-segment timeline in ``env.unwrapped.timeline``.
        render_mode: ``None``, ``"ansi"`` (text table of the streams), ``"rgb_array"`` (a
            640x360 frame: GPU shares per stream, retraining dark and inference light, and
            inference accuracy against a_MIN; :mod:`edgegym.core.render`) or ``"human"``
            (that frame in a window).
        backend: ``"sim"`` (default: the profile-driven simulator) or ``"real"``: actual
            PyTorch inference and retraining on ``device`` with measured accuracies,
            latencies and energy (:class:`edgegym.real.executor.RealExecutor`);
            ``info["real"]`` then holds what was measured since the last step and what was
            emulated. See ``docs/real.md``.
        device: Torch device of the real backend, ``"cpu"`` or ``"cuda[:N]"`` (an error if
            CUDA is requested and torch sees no GPU).
        time_scale: Real backend: scenario seconds per wall second (``10``: a 200 s window
            runs in 20 s); ``None`` runs as fast as the work allows.
        real_options: Real backend options (:data:`edgegym.real.executor.DEFAULT_OPTIONS`:
            data stream kind, samples per window, drift severity, network width, ...).
        **overrides: Scenario field overrides, e.g. ``gpus=4``, ``streams=2``.

    Version history: v0: initial release; ``backend="real"`` added (same spaces).
    """

    env_id = "edgegym/ContinualLearning-v0"
    metadata = {**EdgeEnv.metadata, "render_fps": 2}  # noqa: RUF012

    def __init__(
        self,
        scenario: str | Scenario = DEFAULT_SCENARIO,
        max_streams: int | None = None,
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
            real_options, self.backend, "edgegym.real.executor:DEFAULT_OPTIONS"
        )
        sc = self._setup(
            scenario, overrides, render_mode=render_mode, record_timeline=record_timeline
        )
        params = make_params(sc, max_streams)
        self.spec_ = spec = params.spec
        self.max_streams = params.max_streams
        if self.backend == "real" and spec.mps_inference_slowdown + spec.mps_retrain_slowdown > 0:
            raise ValueError(
                "backend='real' measures co-located work on the device, MPS interference "
                "included; mps.interference: true models it in simulation only: use "
                "backend='sim' or mps.interference: false"
            )
        if self.backend == "real":
            make = partial(real_executor, spec, self.device, self.time_scale, self.real_options)
            params = dataclasses.replace(params, make_executor=make)
        self._use(params, ContinualDynamics(), *continual_spaces(params))

    # ------------------------------------------------------------------ episode
    action_help = (
        " (4 entries per stream slot: retrain (0 = none, 1 + configuration), inference "
        "configuration, retraining GPU quanta, inference GPU quanta; env.unwrapped."
        "describe_action(a) reads one)"
    )

    def describe_action(self, action: Any) -> str:
        """The action in words and numbers, one line per live stream, as requested (the
        environment then projects it onto a feasible one; ``info`` says what was applied)."""
        spec = self.spec_
        a = np.asarray(action, dtype=np.int64).reshape(self.max_streams, 4)
        lines = []
        for v in range(spec.streams):
            r, i, rq, iq = (int(x) for x in a[v])
            infer = spec.inference_configs[min(i, len(spec.inference_configs) - 1)].name
            text = (
                f"stream {v}: infer with configuration {i} ({infer}) on {iq * spec.quantum:.2f} GPU"
            )
            if r > 0:
                cfg = spec.retrain_configs[min(r - 1, len(spec.retrain_configs) - 1)].name
                text += (
                    f"; retrain with configuration {r - 1} ({cfg}) on {rq * spec.quantum:.2f} GPU"
                )
            else:
                text += "; no retraining"
            lines.append(text)
        return "\n".join(lines)

    def _reset_info(self) -> dict[str, Any]:
        return {"reward_terms": dict.fromkeys(TERMS, 0.0), "energy_j": 0.0}

    @property
    def est_post_acc(self) -> np.ndarray:
        """(V, C) micro-profiler estimates of post-retraining accuracy in the current window."""
        return self._state.est_post_acc[0]

    @property
    def est_gpu_seconds(self) -> np.ndarray:
        """(V, C) retraining cost of every configuration in the current window."""
        return self._state.gpu_seconds[0]

    @property
    def infer_share_now(self) -> np.ndarray:
        """(V, L) share each inference configuration needs in the current window."""
        return self._state.infer_share[0]

    @property
    def _state(self) -> ContinualState:
        if self.state is None:
            raise RuntimeError("call reset() first")
        return self.state

    @property
    def window(self) -> int:
        """The current retraining window (``windows`` once the episode has ended)."""
        return int(self._state.window[0])

    @property
    def profile(self) -> ContinualProfile:
        """The episode's true profile: drift, and each configuration's accuracy and cost."""
        return self._state.episode[0].profile

    @property
    def executor(self) -> Executor | None:
        """The real backend's executor of the episode (``None`` in simulation)."""
        return self._state.episode[0].executor

    def _record_info(self, rec: Record) -> dict[str, Any]:
        """``info["allocation"]``: the allocation actually applied."""
        return {"allocation": {k: v[0].tolist() for k, v in rec.info.items()}}

    def _before_step(self) -> tuple[Any, ...]:
        st = self.state
        return (
            float(st.time_s[0]),
            int(st.window[0]),
            st.model_acc[0].copy(),
            st.infer_share[0].copy(),
        )

    def allocation_timeline(self) -> list[dict[str, Any]] | None:
        """Its timeline: every step is one stretch of constant allocation."""
        return self.timeline

    def _timeline_add(self, before: tuple[Any, ...], rec: Record) -> None:
        applied = {k: v[0] for k, v in rec.info.items()}
        self._record_segment(before, applied, float(rec.duration_s[0]))

    def _record_segment(
        self, before: tuple[Any, ...], applied: dict[str, np.ndarray], dt: float
    ) -> None:
        """Append the step's stretch to the timeline (as :class:`Metrics` records it)."""
        if dt <= 0:
            return
        t0, window, model_acc, infer_share = before
        cfg = applied["infer_cfg"]
        needed = infer_share[np.arange(cfg.shape[0]), cfg]
        factor = self.spec_.infer_factor[cfg]
        share = serving_share(
            self.spec_, applied["share_infer"], applied["share_retrain"], applied["retrain_cfg"]
        )
        acc = inference_accuracy(model_acc, factor, needed, share) * dt / dt
        self.timeline.append(
            {
                "t0": t0,
                "t1": t0 + dt,
                "window": window,
                "accuracy": acc.tolist(),
                "share_retrain": applied["share_retrain"].tolist(),
                "share_infer": applied["share_infer"].tolist(),
                "retrain_cfg": applied["retrain_cfg"].tolist(),
                "infer_cfg": applied["infer_cfg"].tolist(),
            }
        )

    # ------------------------------------------------------------------ actions
    def decode_action(self, action: np.ndarray) -> Allocation:
        """Turn a ``MultiDiscrete`` action into a feasible :class:`Allocation` (projection)."""
        retrain, infer, share_r, share_i = self.dynamics.project(
            self.params, self._state, np.asarray(action)[None]
        )
        return Allocation(
            retrain_cfg=retrain[0],
            infer_cfg=infer[0],
            share_retrain=share_r[0],
            share_infer=share_i[0],
        )

    def encode_action(self, alloc: Allocation) -> np.ndarray:
        """Inverse of :meth:`decode_action` for allocations on the delta grid."""
        spec = self.spec_
        out = np.zeros((self.max_streams, 4), dtype=np.int64)
        n = spec.streams
        out[:n, 0] = np.asarray(alloc.retrain_cfg) + 1
        out[:n, 1] = alloc.infer_cfg
        out[:n, 2] = np.floor(np.asarray(alloc.share_retrain) / spec.quantum + 1e-6)
        out[:n, 3] = np.floor(np.asarray(alloc.share_infer) / spec.quantum + 1e-6)
        return np.clip(out, 0, self.params.nvec - 1).reshape(-1)

    def action_masks(self) -> np.ndarray:
        """Flat boolean mask over every ``MultiDiscrete`` entry (sb3-contrib convention)."""
        if self.state is None:
            return self.dynamics.base_mask(self.params, 1).reshape(-1)
        return super().action_masks()

    # ------------------------------------------------------------------ views
    def sim_state(self) -> ContinualSnapshot:
        """Structured state for analytic schedulers (estimates, and the truth for oracles)."""
        spec, st = self.spec_, self.state
        if st is None:
            raise RuntimeError("call reset() before sim_state()")
        window = int(st.window[0])
        est = st.est_post_acc[0]
        now = float(st.time_s[0])
        wait = float(st.ready_s[0]) - now  # until the labels exist (dynamics._ready)
        return ContinualSnapshot(
            gpus=spec.gpus,
            quantum=spec.quantum,
            window=window,
            n_windows=spec.windows,
            window_s=spec.window_s,
            time_left_s=float(self.dynamics.time_left(self.params, st)[0]),
            a_min=spec.a_min,
            share_alpha=spec.share_alpha,
            multi_gpu_efficiency=spec.multi_gpu_efficiency,
            model_acc=st.model_acc[0].copy(),
            job_cfg=st.job_cfg[0].copy(),
            job_left=st.job_left[0].copy(),
            job_target_est=np.where(st.job_cfg[0] >= 0, st.job_est[0], 0.0),
            retrained=st.retrained[0].copy(),
            est_post_acc=est.copy(),
            est_gpu_seconds=st.gpu_seconds[0].copy(),
            true_post_acc=st.post_acc[0].copy(),
            true_gpu_seconds=st.gpu_seconds[0].copy(),
            infer_share=st.infer_share[0].copy(),
            infer_factor=spec.infer_factor.copy(),
            uniform_configs=spec.uniform_configs,
            alloc=Allocation(
                retrain_cfg=st.retrain_cfg[0].copy(),
                infer_cfg=st.infer_cfg[0].copy(),
                share_retrain=st.share_retrain[0].copy(),
                share_infer=st.share_infer[0].copy(),
            ),
            profiled=st.profiled[0].copy(),
            reserved=float(st.reserved_q[0]) * spec.quantum,
            retrain_wait_s=wait if wait > 1e-9 and window < spec.windows else 0.0,
            infer_base_share=np.asarray(self.params.base_share, dtype=float).copy(),
        )

    def _state_info(self) -> dict[str, Any]:
        st = self.state
        acc = self.dynamics.stream_accuracy(self.params, st)[0]
        info = {
            "stream_accuracy": acc.tolist(),
            "model_accuracy": st.model_acc[0].tolist(),
            "window": int(st.window[0]),
            "time_s": float(st.time_s[0]),
        }
        if self.backend == "real":
            info["real"] = st.episode[0].executor.report()
        return info

    def _render_text(self) -> str | None:
        """Text table of the streams."""
        if self.state is None:
            return None
        cluster, t, a = self.dynamics.engine_views(self.params, self.state, 0)
        lines = [f"t={cluster.time_s:8.1f}s window {self.window}  energy {cluster.energy_j:.0f} J"]
        lines.append("stream  model_acc  job  progress  share_r  share_i  infer_cfg")
        for v in range(self.spec_.streams):
            lines.append(
                f"{v:6d}  {t.model_acc[v]:9.3f}  {t.job_cfg[v]:3d}  {t.progress[v]:8.2f}  "
                f"{a.share_retrain[v]:7.2f}  {a.share_infer[v]:7.2f}  {a.infer_cfg[v]:9d}"
            )
        return "\n".join(lines)

    def _frame_panels(self) -> tuple[str, list[Panel]]:
        """Title and panels of the ``"rgb_array"`` frame: GPU shares and accuracy per stream."""
        spec = self.spec_
        if self.state is None:
            return "ContinualLearning-v0: call reset()", []
        n = spec.streams
        cluster, _, a = self.dynamics.engine_views(self.params, self.state, 0)
        done = self.window >= spec.windows
        acc = np.asarray(self.dynamics.stream_accuracy(self.params, self.state)[0], dtype=float)
        dark, light = tenant_colors(n)
        labels = [f"s{v}" for v in range(n)]
        window = f"{min(self.window + 1, spec.windows)}/{spec.windows}"
        title = (
            f"t = {cluster.time_s:.1f} s   window {window}"
            f"{' (done)' if done else ''}   energy {cluster.energy_j / 1e3:.1f} kJ"
        )
        shares = Panel(
            f"GPU shares ({spec.gpus} GPU{'s' if spec.gpus > 1 else ''})",
            labels,
            [
                Series("retraining", a.share_retrain, dark, "0.3"),
                Series("inference", a.share_infer, light, "0.75"),
            ],
            stacked=True,
            ylim=(0.0, float(spec.gpus)),
            ylabel="GPUs",
        )
        accuracy = Panel(
            "inference accuracy",
            labels,
            [Series("accuracy", acc, light, "0.75")],
            ylim=(0.0, 1.0),
            hline=spec.a_min,
            hline_label=f"a_MIN {spec.a_min:g}",
        )
        return title, [shares, accuracy]

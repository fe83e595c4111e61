"""``edgegym/ContinualLearning-v0``: joint retraining and inference on shared GPUs (Ekya)."""

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
from edgegym.envs.continual import observation, reward
from edgegym.envs.continual.types import ContinualSnapshot, ContinualSpec
from edgegym.envs.render import Panel, Series, tenant_colors
from edgegym.hardware.gpus import PowerModel
from edgegym.hardware.mps import quantize_shares
from edgegym.scenarios import Scenario, ScenarioError
from edgegym.sim.engine import Engine
from edgegym.sim.executor import SimulatedExecutor
from edgegym.sim.state import Allocation, ClusterState
from edgegym.workload.continual import sample_profile

DEFAULT_SCENARIO = "ekya-cityscapes"


class ContinualLearningEnv(EdgeEnv):
    """Ekya's joint retraining/inference scheduling problem (NSDI'22, §3-4).

    V video streams share G GPUs (MPS-style shares in quanta of delta). Each stream runs live
    inference with its current model while its data drifts; in each retraining window the
    scheduler may retrain the model once, choosing a retraining configuration (cost vs
    accuracy), an inference configuration (frame sampling, resolution) and the GPU shares of
    both jobs. The retrained model replaces the old one when the job finishes.

    **Decision epochs**: the start of every retraining window and every retraining completion
    (Ekya reallocates then). Simulated time between epochs is advanced in closed form.

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
    ``globals`` (6,); see :mod:`edgegym.envs.continual.observation`.

    **Reward**: weighted named terms (:mod:`edgegym.envs.continual.reward`): window-averaged
    inference accuracy (so the return over an episode is the sum of window-mean accuracies),
    minus the a_MIN shortfall, minus energy (weight 0 by default). ``info["reward_terms"]``.

    **Start state**: models at the scenario's start accuracy, no jobs, no shares; the
    micro-profiler's estimates of window 0 drawn.

    **Episode end**: ``terminated`` after the last window; never truncated.

    Args:
        scenario: Bundled scenario name or path to a scenario file.
        max_streams: Stream slots (pad to train one policy over scenarios with fewer streams).
        record_timeline: Keep a per-segment timeline in ``env.unwrapped.engine.metrics``.
        render_mode: ``None``, ``"ansi"`` (text table of the streams), ``"rgb_array"`` (a
            640x360 frame: GPU shares per stream, retraining dark and inference light, and
            inference accuracy against a_MIN; :mod:`edgegym.envs.render`) or ``"human"``
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
        self.real_options = dict(real_options or {})
        sc = self._setup(
            scenario, overrides, render_mode=render_mode, record_timeline=record_timeline
        )
        self.spec_ = spec = ContinualSpec.from_scenario(sc)
        self.max_streams = int(max_streams or spec.streams)
        if self.max_streams < spec.streams:
            raise ScenarioError(
                f"max_streams={self.max_streams} is smaller than the scenario's "
                f"{spec.streams} streams"
            )
        c, l_inf, q = len(spec.retrain_configs), len(spec.inference_configs), spec.levels
        self._per_stream = np.array([c + 1, l_inf, q, q], dtype=np.int64)
        self.action_space = spaces.MultiDiscrete(np.tile(self._per_stream, self.max_streams))
        self.observation_space = observation.make_space(c, self.max_streams)
        self.power = PowerModel.from_spec(spec.gpu)
        self.full_power_w = spec.gpus * spec.gpu.max_power_w
        self.curve_rate = np.array([cfg.curve_rate for cfg in spec.retrain_configs])
        self.engine: Engine | None = None

    # ------------------------------------------------------------------ episode
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Start an episode: draw its profile and the window-0 estimates from ``np_random``."""
        super().reset(seed=seed)
        spec = self.spec_
        profile = sample_profile(
            spec.scenario["drift"], spec.retrain_configs, spec.streams, spec.windows, self.np_random
        )
        executor = SimulatedExecutor(
            profile.demand,
            spec.infer_share,
            spec.infer_factor,
            self.power,
            spec.share_alpha,
            spec.multi_gpu_efficiency,
            speed=spec.speed,
        )
        if self.backend == "real":
            executor = self._real_executor(executor)
        cluster = ClusterState(gpus=spec.gpus, clock_mhz=np.full(spec.gpus, spec.clock_mhz))
        self.engine = Engine(profile, executor, cluster, spec.window_s)
        self.engine.metrics.a_min = spec.a_min
        if self.record_timeline:
            self.engine.metrics.timeline = []
        self._enter_window(0)
        return observation.encode(self), self._info(dict.fromkeys(reward.TERMS, 0.0), 0.0)

    def _real_executor(self, sim: SimulatedExecutor) -> Any:
        from edgegym.real.executor import RealExecutor

        spec = self.spec_
        requested = []
        if spec.gpus > 1:
            requested.append(f"{spec.gpus} GPUs: emulated on one {self.device} device")
        requested += unapplied_clock(
            spec.clock_mhz, spec.gpu.max_clock_mhz, "progress rates and shares"
        )
        return RealExecutor(
            sim,
            spec.retrain_configs,
            spec.windows,
            [spec.model.name] * spec.streams,
            device=self.device,
            time_scale=self.time_scale,
            seed=real_seed(self.np_random),
            requested=requested,
            options=self.real_options,
        )

    def _enter_window(self, k: int) -> None:
        eng, spec = self.engine, self.spec_
        eng.start_window(k)
        if k >= spec.windows:
            return
        if self.backend == "real":
            # Drift as measured: the deployed models' accuracy on the new window's data.
            eng.tenants.model_acc = eng.executor.deployed_accuracy()
        prof = eng.profile
        # Micro-profiler error: a part shared by all configurations of a stream (they are
        # profiled on the same data subsample) and an independent part per configuration.
        rho = spec.profiler_noise_shared
        shared = self.np_random.normal(0.0, 1.0, size=(spec.streams, 1))
        own = self.np_random.normal(0.0, 1.0, size=prof.post_acc[:, k].shape)
        noise = np.sqrt(rho) * shared + np.sqrt(1.0 - rho) * own
        self.est_post_acc = np.clip(prof.post_acc[:, k] + spec.profiler_noise * noise, 0.0, 1.0)
        self.est_gpu_seconds = prof.gpu_seconds[:, k].copy()  # resource demands: deterministic

    @property
    def infer_share_now(self) -> np.ndarray:
        """(V, L) share each inference configuration needs in the current window."""
        return self.engine.executor.infer_share

    def step(
        self, action: np.ndarray
    ) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        """Apply an allocation and run to the next decision epoch."""
        if self.engine is None:
            raise RuntimeError("call reset() before step()")
        if self.engine.done:
            raise RuntimeError("the episode has ended; call reset()")
        action = np.asarray(action)
        if action.shape != self.action_space.shape:
            raise ValueError(
                f"action has shape {action.shape}; expected {self.action_space.shape} "
                f"(4 entries per stream slot: retrain, infer, retrain quanta, infer quanta)"
            )
        applied = self.engine.apply(self.decode_action(action)).copy()
        terms, energy = self._run_to_next_epoch()
        rew = reward.combine(terms, self.spec_.weights)
        info = self._info(terms, energy)
        info["allocation"] = {
            "retrain_cfg": applied.retrain_cfg.tolist(),
            "infer_cfg": applied.infer_cfg.tolist(),
            "share_retrain": applied.share_retrain.tolist(),
            "share_infer": applied.share_infer.tolist(),
        }
        terminated = self.engine.done
        if terminated:
            info["episode_metrics"] = self.engine.metrics.summary()
        return observation.encode(self), rew, terminated, False, info

    def _run_to_next_epoch(self) -> tuple[dict[str, float], float]:
        eng, spec = self.engine, self.spec_
        terms = dict.fromkeys(reward.TERMS, 0.0)
        energy = 0.0
        while True:
            window_end = eng.window_start_s + spec.window_s
            seg, done = eng.advance(window_end)
            seg_terms = reward.segment_terms(
                seg.acc_integral,
                seg.duration_s,
                seg.energy_j,
                spec.a_min,
                spec.window_s,
                self.full_power_w,
            )
            for key, value in seg_terms.items():
                terms[key] += value
            energy += seg.energy_j
            if eng.cluster.time_s >= window_end - 1e-9:
                self._enter_window(eng.window + 1)
                return terms, energy
            if np.any(done):
                return terms, energy

    # ------------------------------------------------------------------ actions
    def decode_action(self, action: np.ndarray) -> Allocation:
        """Turn a ``MultiDiscrete`` action into a feasible :class:`Allocation` (projection)."""
        spec, t = self.spec_, self.engine.tenants
        n = spec.streams
        a = np.asarray(action, dtype=np.int64).reshape(self.max_streams, 4)[:n]
        a = np.clip(a, 0, self._per_stream - 1)
        retrain = a[:, 0] - 1
        retrain = np.where(t.running, t.job_cfg, retrain)
        retrain = np.where(t.retrained, -1, retrain)
        r_quanta = np.where(retrain >= 0, a[:, 2], 0)
        shares = quantize_shares(
            np.concatenate([r_quanta, a[:, 3]]) * spec.quantum, spec.quantum, spec.gpus
        )
        return Allocation(
            retrain_cfg=retrain,
            infer_cfg=a[:, 1].copy(),
            share_retrain=shares[:n],
            share_infer=shares[n:],
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
        return np.clip(out, 0, self._per_stream - 1).reshape(-1)

    def action_masks(self) -> np.ndarray:
        """Flat boolean mask over every ``MultiDiscrete`` entry (sb3-contrib convention)."""
        spec = self.spec_
        c1, l_inf, q, _ = self._per_stream
        rows = np.zeros((self.max_streams, int(self._per_stream.sum())), dtype=bool)
        rows[:, 0] = True  # no retraining
        rows[:, c1] = True  # inference configuration 0
        rows[:, c1 + l_inf] = True  # zero retraining share
        rows[:, c1 + l_inf + q] = True  # zero inference share
        if self.engine is not None and not self.engine.done:
            t = self.engine.tenants
            n = spec.streams
            free = ~t.running & ~t.retrained
            rows[:n, 1:c1] = free[:, None]
            running = np.flatnonzero(t.running)
            rows[running, 0] = False
            rows[running, 1 + t.job_cfg[running]] = True
            rows[:n, c1 : c1 + l_inf] = True
            retrain_ok = t.running | free
            rows[:n, c1 + l_inf : c1 + l_inf + q] = retrain_ok[:, None]
            rows[:n, c1 + l_inf] = True
            rows[:n, c1 + l_inf + q :] = True
        return rows.reshape(-1)

    # ------------------------------------------------------------------ views
    def sim_state(self) -> ContinualSnapshot:
        """Structured state for analytic schedulers (estimates, and the truth for oracles)."""
        eng, spec = self.engine, self.spec_
        if eng is None:
            raise RuntimeError("call reset() before sim_state()")
        t = eng.tenants
        k = min(eng.window, spec.windows - 1)
        idx = np.arange(spec.streams)
        cfg = np.maximum(t.job_cfg, 0)
        return ContinualSnapshot(
            gpus=spec.gpus,
            quantum=spec.quantum,
            window=eng.window,
            n_windows=spec.windows,
            window_s=spec.window_s,
            time_left_s=eng.time_left_s,
            a_min=spec.a_min,
            share_alpha=spec.share_alpha,
            multi_gpu_efficiency=spec.multi_gpu_efficiency,
            model_acc=t.model_acc.copy(),
            job_cfg=t.job_cfg.copy(),
            job_left=t.job_left.copy(),
            job_target_est=np.where(t.running, self.est_post_acc[idx, cfg], 0.0),
            retrained=t.retrained.copy(),
            est_post_acc=self.est_post_acc.copy(),
            est_gpu_seconds=self.est_gpu_seconds.copy(),
            true_post_acc=eng.profile.post_acc[:, k].copy(),
            true_gpu_seconds=eng.profile.gpu_seconds[:, k].copy(),
            infer_share=self.infer_share_now.copy(),
            infer_factor=spec.infer_factor.copy(),
            uniform_configs=spec.uniform_configs,
            alloc=eng.alloc.copy(),
        )

    def _info(self, terms: dict[str, float], energy: float) -> dict[str, Any]:
        eng = self.engine
        acc = eng.executor.inference_accuracy(eng.tenants, eng.alloc)
        info = {
            "reward_terms": terms,
            "energy_j": energy,
            "stream_accuracy": acc.tolist(),
            "model_accuracy": eng.tenants.model_acc.tolist(),
            "window": eng.window,
            "time_s": eng.cluster.time_s,
            "action_mask": self.action_masks(),
        }
        if self.backend == "real":
            info["real"] = eng.executor.report()
        return info

    def _render_text(self) -> str | None:
        """Text table of the streams."""
        if self.engine is None:
            return None
        eng = self.engine
        t, a = eng.tenants, eng.alloc
        lines = [
            f"t={eng.cluster.time_s:8.1f}s window {eng.window}  energy {eng.cluster.energy_j:.0f} J"
        ]
        lines.append("stream  model_acc  job  progress  share_r  share_i  infer_cfg")
        for v in range(self.spec_.streams):
            lines.append(
                f"{v:6d}  {t.model_acc[v]:9.3f}  {t.job_cfg[v]:3d}  {t.progress[v]:8.2f}  "
                f"{a.share_retrain[v]:7.2f}  {a.share_infer[v]:7.2f}  {a.infer_cfg[v]:9d}"
            )
        return "\n".join(lines)

    def _frame_panels(self) -> tuple[str, list[Panel]]:
        """Title and panels of the ``"rgb_array"`` frame: GPU shares and accuracy per stream."""
        eng, spec = self.engine, self.spec_
        if eng is None:
            return "ContinualLearning-v0: call reset()", []
        n = spec.streams
        a = eng.alloc
        acc = np.asarray(eng.executor.inference_accuracy(eng.tenants, a), dtype=float)
        dark, light = tenant_colors(n)
        labels = [f"s{v}" for v in range(n)]
        window = f"{min(eng.window + 1, spec.windows)}/{spec.windows}"
        title = (
            f"t = {eng.cluster.time_s:.1f} s   window {window}"
            f"{' (done)' if eng.done else ''}   energy {eng.cluster.energy_j / 1e3:.1f} kJ"
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

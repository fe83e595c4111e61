"""What a continual scenario fixes, precomputed once when an environment is built.

:class:`ContinualSpec` is the scenario read into typed fields (configurations, profiles, the
micro-profiler's settings); :class:`ContinualParams` adds the tables the batched dynamics
(:mod:`edgegym.families.continual.dynamics`) read at every step; :func:`make_params` is the one
way to build them (``Family.params``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from edgegym.core.executor import Executor, SimulatedExecutor
from edgegym.families.continual.reward import term_weights
from edgegym.hardware.gpus import GPUSpec, PowerModel, get_gpu, speed_factor
from edgegym.hardware.mps import slowdowns
from edgegym.inputs import quoted
from edgegym.scenarios import Scenario, ScenarioError
from edgegym.workload.continual import (
    InferenceConfig,
    RetrainConfig,
    error_std,
    holdout_profile,
    sample_profile,
    uniform_points,
)
from edgegym.workload.models import ModelProfile, get_model

_STD_SAMPLES = 16  # sample episodes whose accuracies set the profiler error's deviation
QUANTA_EPS = 1e-9  # hardware.mps.quantize_shares's tolerance on whole quanta
#: Most stream slots an env may pad to (``max_streams``): 16x the most streams a scenario runs
#: (64); each slot is a row of the observation and of the action mask.
MAX_SLOTS = 1024

#: Builds an env's executor from its simulated executor and its generator (real backend).
ExecutorFactory = Callable[[SimulatedExecutor, np.random.Generator], Executor]


@dataclass(frozen=True)
class ContinualSpec:
    """Everything a scenario fixes, precomputed once when the environment is built."""

    scenario: Scenario
    gpu: GPUSpec
    model: ModelProfile
    gpus: int
    quantum: float  # delta: GPU share unit of every allocation
    streams: int
    windows: int
    window_s: float
    a_min: float
    profiler_error: float  # median absolute error of the micro-profiler's estimates (input)
    profiler_noise: float  # standard deviation of their Gaussian error (derived from it)
    profiler_noise_shared: float  # fraction of the estimate error's variance shared by configs
    share_alpha: float
    multi_gpu_efficiency: float
    retrain_configs: tuple[RetrainConfig, ...]
    inference_configs: tuple[InferenceConfig, ...]
    infer_share: np.ndarray  # (L,) share each inference configuration needs at demand 1
    infer_factor: np.ndarray  # (L,) accuracy factor of each inference configuration
    uniform_configs: tuple[int, int]  # indices of the uniform scheduler's Config 1 and 2
    objective: dict[str, float]  # the scenario's objective weights, keyed as there
    clock_mhz: float = 0.0  # DVFS core clock of every GPU
    speed: float = 1.0  # throughput at that clock relative to the top clock
    prune_every: int = 0  # windows between prunings of the worst configurations (0: never)
    prune_fraction: float = 0.0  # fraction of a stream's profiled configurations pruned
    profile_cost_s: float = 0.0  # GPU-seconds to profile all of one stream's configurations
    # (C,) each configuration's share of that cost (its share of the exhaustive retraining cost)
    profile_weight: np.ndarray = field(default_factory=lambda: np.zeros(0))
    annotation_s: float = 0.0  # seconds of labelling at each window start (no retraining)
    # (C,) job progress between two checkpoints of each configuration (>= 1: none)
    checkpoint_step: np.ndarray = field(default_factory=lambda: np.zeros(0))
    mps_inference_slowdown: float = 0.0  # inference beside retraining loses this (0: none)
    mps_retrain_slowdown: float = 0.0  # retraining beside inference loses this (0: none)

    @classmethod
    def from_scenario(cls, sc: Scenario) -> ContinualSpec:
        """Build the specification from a validated scenario."""
        hw = sc["hardware"]
        retrain = tuple(RetrainConfig(**c) for c in sc["retrain_configs"])
        infer = tuple(InferenceConfig(**c) for c in sc["inference_configs"])
        gpu = get_gpu(hw["gpu"])
        model = get_model(sc["model"])
        clock = gpu.resolve_clock(hw["clock_mhz"])  # validated at load time
        prof = sc["profiler"]
        mps_inf, mps_ret = slowdowns(sc["mps"])
        streams, windows = int(sc["streams"]), int(sc["windows"])
        # The error's deviation from its median absolute error, over the true accuracies of
        # sample episodes (a generator of its own: the envs' random streams are untouched).
        error = float(prof["error"])
        sample = [
            sample_profile(
                sc["drift"], retrain, streams, windows, np.random.default_rng(i)
            ).post_acc
            for i in range(_STD_SAMPLES if sc["drift"]["kind"] == "generated" and error else 1)
        ]
        nominal = np.array([c.gpu_seconds for c in retrain])
        every = int(prof["checkpoint_epochs"])
        epochs = np.array([c.epochs for c in retrain], dtype=float)
        return cls(
            scenario=sc,
            gpu=gpu,
            model=model,
            gpus=int(hw["gpus"]),
            quantum=float(hw["share_quantum"]),
            streams=streams,
            windows=windows,
            window_s=float(sc["window_s"]),
            a_min=float(sc["a_min"]),
            profiler_error=error,
            profiler_noise=error_std(error, np.stack(sample)),
            profiler_noise_shared=float(prof["shared"]),
            share_alpha=float(hw["share_alpha"]),
            multi_gpu_efficiency=float(hw["multi_gpu_efficiency"]),
            retrain_configs=retrain,
            inference_configs=infer,
            infer_share=np.array([c.share for c in infer]),
            infer_factor=np.array([c.accuracy_factor for c in infer]),
            uniform_configs=_uniform_configs(sc, retrain, windows),
            objective={k: float(v) for k, v in sc["objective"].items()},
            clock_mhz=clock,
            speed=float(speed_factor(clock, gpu.max_clock_mhz, model.memory_bound)),
            prune_every=int(prof["prune_every"]),
            prune_fraction=float(prof["prune_fraction"]),
            profile_cost_s=float(prof["cost_s"]),
            profile_weight=nominal / nominal.sum(),
            annotation_s=float(prof["annotation_s"]),
            checkpoint_step=every / epochs if every else np.full(len(retrain), np.inf),
            mps_inference_slowdown=mps_inf,
            mps_retrain_slowdown=mps_ret,
        )

    @property
    def levels(self) -> int:
        """Share levels per job: 0, delta, ..., G (inclusive)."""
        return int(round(self.gpus / self.quantum)) + 1


def _uniform_configs(
    sc: Scenario, retrain: tuple[RetrainConfig, ...], windows: int
) -> tuple[int, int]:
    """Indices of the uniform baseline's Config 1 and Config 2: named in the scenario, or
    chosen on its hold-out streams (:class:`edgegym.families.continual.schema.Uniform`)."""
    uni = sc["uniform"]
    if uni.get("holdout_streams") is None:
        names = [c.name for c in retrain]
        return names.index(uni["config1"]), names.index(uni["config2"])
    cost, acc = holdout_profile(
        sc["drift"], retrain, int(uni["holdout_streams"]), windows, int(uni["holdout_seed"])
    )
    return uniform_points(cost, acc)


@dataclass(frozen=True, eq=False)
class ContinualParams:
    """Everything a scenario fixes, precomputed once (V streams, ``max_streams`` slots, C
    retraining and L inference configurations, K windows, G GPUs)."""

    spec: ContinualSpec
    max_streams: int  # stream slots of the action and observation (>= V; padding beyond V)
    nvec: np.ndarray  # (4,) int64 entries per slot: [C + 1, L, levels, levels]
    curve_rate: np.ndarray  # (C,) accuracy-vs-progress curvature of each configuration
    base_share: np.ndarray  # (L,) share each inference configuration needs at demand 1
    widest: int  # the inference configuration that needs the largest share
    cap_quanta: int  # whole quanta of all G GPUs
    power_model: PowerModel
    clock_mhz: np.ndarray  # (G,) core clock of every GPU
    full_power_w: float  # watts of all G GPUs at full power
    mask_idle: np.ndarray  # (max_streams, W) bool: the mask of an env that is not live
    mask_live: np.ndarray  # (max_streams, W) bool: the state-independent part of a live one
    term_weights: dict[str, float]  # reward term -> objective weight
    make_executor: ExecutorFactory | None = field(default=None, repr=False)


def make_params(
    sc: Scenario,
    max_streams: int | None = None,
    make_executor: ExecutorFactory | None = None,
) -> ContinualParams:
    """The :class:`ContinualParams` of a loaded scenario (``Family.params``).

    Args:
        sc: The scenario.
        max_streams: Stream slots (default: the scenario's streams).
        make_executor: Builds each env's executor at reset (``None``: the simulator).

    Raises:
        ScenarioError: ``max_streams`` is not a whole number from the scenario's streams to
            :data:`MAX_SLOTS`.
    """
    spec = ContinualSpec.from_scenario(sc)
    if isinstance(max_streams, str) and max_streams.strip().isdecimal():  # from --set
        max_streams = int(max_streams)
    if max_streams is not None:
        if isinstance(max_streams, bool) or not isinstance(max_streams, int | np.integer):
            raise ScenarioError(f"max_streams must be a whole number, got {quoted(max_streams)}")
        if not spec.streams <= max_streams <= MAX_SLOTS:
            raise ScenarioError(
                f"max_streams={int(max_streams)} is out of range (allowed: {spec.streams}, the "
                f"scenario's streams, to {MAX_SLOTS} slots)"
            )
    c, l_inf, q = len(spec.retrain_configs), len(spec.inference_configs), spec.levels
    power = PowerModel.from_spec(spec.gpu)
    clock = np.full(spec.gpus, spec.clock_mhz)
    nvec = np.array([c + 1, l_inf, q, q], dtype=np.int64)
    base_share = np.asarray(spec.infer_share) / float(spec.speed)
    curve = np.array([cfg.curve_rate for cfg in spec.retrain_configs])
    slots = int(max_streams or spec.streams)
    idle = np.zeros((slots, int(nvec.sum())), dtype=bool)
    idle[:, [0, c + 1, c + 1 + l_inf, c + 1 + l_inf + q]] = True  # none, config 0, zero shares
    live = idle.copy()
    live[: spec.streams, c + 1 : c + 1 + l_inf] = True  # every inference configuration
    live[: spec.streams, c + 1 + l_inf + q :] = True  # every inference share
    for arr in (nvec, base_share, curve, clock, idle, live):
        arr.setflags(write=False)
    return ContinualParams(
        spec=spec,
        max_streams=slots,
        nvec=nvec,
        curve_rate=curve,
        base_share=base_share,
        widest=int(np.argmax(base_share)),
        cap_quanta=int(np.floor(spec.gpus / spec.quantum + QUANTA_EPS)),
        power_model=power,
        clock_mhz=clock,
        full_power_w=spec.gpus * spec.gpu.max_power_w,
        term_weights=term_weights(spec.objective),
        mask_idle=idle,
        mask_live=live,
        make_executor=make_executor,
    )


__all__ = ["QUANTA_EPS", "ContinualParams", "ContinualSpec", "ExecutorFactory", "make_params"]

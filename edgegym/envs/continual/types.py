"""Static specification and structured snapshot of the continual-learning family."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from edgegym.hardware.gpus import GPUSpec, get_gpu, speed_factor
from edgegym.scenarios import Scenario
from edgegym.sim.state import Allocation
from edgegym.workload.continual import InferenceConfig, RetrainConfig
from edgegym.workload.models import ModelProfile, get_model


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
    profiler_noise: float
    profiler_noise_shared: float  # fraction of the estimate error's variance shared by configs
    share_alpha: float
    multi_gpu_efficiency: float
    retrain_configs: tuple[RetrainConfig, ...]
    inference_configs: tuple[InferenceConfig, ...]
    infer_share: np.ndarray  # (L,) share each inference configuration needs at demand 1
    infer_factor: np.ndarray  # (L,) accuracy factor of each inference configuration
    uniform_configs: tuple[int, int]  # indices of the uniform scheduler's Config 1 and 2
    weights: dict[str, float]  # objective weights by reward-term name
    clock_mhz: float = 0.0  # DVFS core clock of every GPU
    speed: float = 1.0  # throughput at that clock relative to the top clock

    @classmethod
    def from_scenario(cls, sc: Scenario) -> ContinualSpec:
        """Build the specification from a validated scenario."""
        hw = sc["hardware"]
        retrain = tuple(RetrainConfig(**c) for c in sc["retrain_configs"])
        infer = tuple(InferenceConfig(**c) for c in sc["inference_configs"])
        names = [c.name for c in retrain]
        gpu = get_gpu(hw["gpu"])
        model = get_model(sc["model"])
        clock = gpu.resolve_clock(hw["clock_mhz"])  # validated at load time
        return cls(
            scenario=sc,
            gpu=gpu,
            model=model,
            gpus=int(hw["gpus"]),
            quantum=float(hw["share_quantum"]),
            streams=int(sc["streams"]),
            windows=int(sc["windows"]),
            window_s=float(sc["window_s"]),
            a_min=float(sc["a_min"]),
            profiler_noise=float(sc["profiler_noise"]),
            profiler_noise_shared=float(sc["profiler_noise_shared"]),
            share_alpha=float(hw["share_alpha"]),
            multi_gpu_efficiency=float(hw["multi_gpu_efficiency"]),
            retrain_configs=retrain,
            inference_configs=infer,
            infer_share=np.array([c.share for c in infer]),
            infer_factor=np.array([c.accuracy_factor for c in infer]),
            uniform_configs=(
                names.index(sc["uniform"]["config1"]),
                names.index(sc["uniform"]["config2"]),
            ),
            weights={k: float(v) for k, v in sc["objective"].items()},
            clock_mhz=clock,
            speed=float(speed_factor(clock, gpu.max_clock_mhz, model.memory_bound)),
        )

    @property
    def levels(self) -> int:
        """Share levels per job: 0, delta, ..., G (inclusive)."""
        return int(round(self.gpus / self.quantum)) + 1


@dataclass(frozen=True)
class ContinualSnapshot:
    """Structured state handed to analytic schedulers by ``env.unwrapped.sim_state()``.

    Schedulers decide from the micro-profiler's estimates (``est_*``); the true values are
    there for oracle variants and for analysis.
    """

    gpus: int
    quantum: float
    window: int
    n_windows: int
    window_s: float
    time_left_s: float
    a_min: float
    share_alpha: float
    multi_gpu_efficiency: float
    model_acc: np.ndarray  # (V,) accuracy of the deployed models
    job_cfg: np.ndarray  # (V,) configuration of the retraining job in flight, -1 = none
    job_left: np.ndarray  # (V,) GPU-seconds of work left in that job
    job_target_est: np.ndarray  # (V,) estimated accuracy when that job finishes
    retrained: np.ndarray  # (V,) bool, already retrained in this window
    est_post_acc: np.ndarray  # (V, C) micro-profiler estimate of post-retraining accuracy
    est_gpu_seconds: np.ndarray  # (V, C) estimated retraining cost at a full GPU
    true_post_acc: np.ndarray  # (V, C)
    true_gpu_seconds: np.ndarray  # (V, C)
    infer_share: np.ndarray  # (V, L) share each inference configuration needs now
    infer_factor: np.ndarray  # (L,)
    uniform_configs: tuple[int, int]
    alloc: Allocation  # allocation currently applied

    @property
    def streams(self) -> int:
        """Number of streams V."""
        return int(self.model_acc.shape[0])

    @property
    def can_retrain(self) -> np.ndarray:
        """(V,) bool: a new retraining job may start (none in flight, none done this window)."""
        return (self.job_cfg < 0) & ~self.retrained

"""DNN model profiles: compute, memory and latency as a function of share, clock and batch.

Latencies are per-sample times on a *full reference GPU at its highest clock*; the simulator
scales them with the share a task holds (``hardware.mps.share_speedup``), the DVFS clock
(``PowerModel.speed_factor``) and the batch size. The numbers are public figures for the
architectures (GFLOPs, parameter memory) with latencies synthesised from GFLOPs at a typical
achieved throughput; edgegym's profiler replaces them with measured values where a scenario
says so.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class ModelProfile:
    """Resource profile of one DNN.

    Attributes:
        name: Model name.
        gflops: Forward-pass GFLOPs per sample at the native resolution.
        memory_gb: GPU memory of weights, activations and runtime context, in GB.
        latency_ms: Batch-1 forward latency on a full reference GPU at the top clock.
        batch_exponent: Latency of a batch of b samples is ``latency_ms * b**batch_exponent``
            (below 1: batching amortises fixed costs).
        share_alpha: Throughput of a share s <= 1 of a GPU is ``s**share_alpha``.
        memory_bound: Fraction of the runtime that does not scale with the core clock.
        train_factor: GPU time of one training sample relative to one inference sample
            (MIGRator §4.1.2 estimates training as 3x inference latency).
        train_memory_gb: Memory a retraining job needs (weights, optimiser state, activations
            at its batch size); sets the smallest MIG instance it can run on.
        train_alpha: Training throughput of a share s <= 1 is ``s**train_alpha`` (batched
            training scales closer to linearly than batch-1 inference).
        model_load_s: Seconds to load the model onto a fresh instance (MIGRator Fig. 5's
            "model load" component; the rest of the reconfiguration overhead is per GPU).
        power_activity: Fraction of the GPU's dynamic power the model draws at full
            utilisation (large, parallel models exercise more cores; ETF Fig. 1).
        source: Where the numbers come from.
    """

    name: str
    gflops: float
    memory_gb: float
    latency_ms: float
    batch_exponent: float = 0.7
    share_alpha: float = 1.0
    memory_bound: float = 0.3
    train_factor: float = 3.0
    train_memory_gb: float = 0.0
    train_alpha: float = 0.9
    model_load_s: float = 1.0
    power_activity: float = 1.0
    source: str = "synthesised from GFLOPs"

    def latency_s(
        self,
        share: np.ndarray | float = 1.0,
        clock_factor: np.ndarray | float = 1.0,
        batch: np.ndarray | int = 1,
    ) -> np.ndarray:
        """Latency in seconds of one batch, vectorised over its arguments.

        Args:
            share: GPU share in GPUs (0 < share); shares above 1 span several GPUs.
            clock_factor: Core clock relative to the top clock, in (0, 1].
            batch: Batch size.

        Returns:
            Seconds per batch (``inf`` where the share is zero).
        """
        from edgegym.hardware.mps import share_speedup

        share = np.asarray(share, dtype=float)
        speed = share_speedup(share, alpha=self.share_alpha)
        clock = np.asarray(clock_factor, dtype=float)
        clock_slowdown = (1.0 - self.memory_bound) / clock + self.memory_bound
        base = self.latency_ms * 1e-3 * np.asarray(batch, dtype=float) ** self.batch_exponent
        with np.errstate(divide="ignore"):
            return np.where(speed > 0, base * clock_slowdown / np.maximum(speed, 1e-12), np.inf)


_MIGRATOR = (
    "MIGRator Table 3 (GFLOPs); memory, A100 latency, MIG scaling and model-load time "
    "synthesised (published architecture sizes, typical A100 batch-1 latency)"
)

MODELS: dict[str, ModelProfile] = {
    m.name: m
    for m in (
        ModelProfile("resnet18", gflops=1.82, memory_gb=1.2, latency_ms=1.6),
        ModelProfile(
            "resnet50",
            gflops=4.09,
            memory_gb=2.0,
            latency_ms=3.4,
            share_alpha=0.6,
            train_memory_gb=4.0,
            model_load_s=1.0,
            source=_MIGRATOR,
        ),
        ModelProfile(
            "mobilenetv2",
            gflops=0.32,
            memory_gb=0.8,
            latency_ms=0.9,
            share_alpha=0.35,
            train_memory_gb=3.0,
            model_load_s=0.5,
            power_activity=0.42,  # ETF: ~4.4x below ResNet50@1300 at 726 MHz on TX2 (Fig. 5)
            source=_MIGRATOR,
        ),
        ModelProfile("shufflenet", gflops=0.15, memory_gb=0.7, latency_ms=0.8),
        # MIGRator's "High" GFLOPs models: compute-bound, near-linear in the instance size.
        ModelProfile(
            "bert",
            gflops=22.2,
            memory_gb=2.5,
            latency_ms=5.5,
            share_alpha=0.85,
            train_memory_gb=8.0,
            model_load_s=1.8,
            source=_MIGRATOR,
        ),
        ModelProfile(
            "vit",
            gflops=17.56,
            memory_gb=2.0,
            latency_ms=4.8,
            share_alpha=0.85,
            train_memory_gb=7.0,
            model_load_s=1.6,
            source=_MIGRATOR,
        ),
        ModelProfile(
            "convnext",
            gflops=15.36,
            memory_gb=2.2,
            latency_ms=4.6,
            share_alpha=0.8,
            train_memory_gb=9.0,
            model_load_s=2.2,
            source=_MIGRATOR,
        ),
        ModelProfile(
            "gpt2",
            gflops=3.3,
            memory_gb=1.5,
            latency_ms=6.0,
            share_alpha=0.8,
            power_activity=1.0,  # ETF Fig. 8: ~2.2x MobileNetV2's power on an A10G (2.1 here)
            source="ETF §6.4 (GPT-2 vs MobileNetV2 on A10G, disparity ~2.2); rest synthesised",
        ),
        # "Low" GFLOPs models: launch-bound at batch 1, gain little from a larger instance.
        ModelProfile(
            "inception",
            gflops=5.71,
            memory_gb=1.5,
            latency_ms=4.0,
            share_alpha=0.55,
            train_memory_gb=5.5,
            model_load_s=1.1,
            source=_MIGRATOR,
        ),
    )
}


def get_model(name: str) -> ModelProfile:
    """Return the profile of a bundled model, or raise ``KeyError`` naming the valid ones."""
    try:
        return MODELS[name]
    except KeyError:
        raise KeyError(f"unknown model {name!r}; valid: {', '.join(sorted(MODELS))}") from None


#: The :class:`ModelProfile` fields a scenario may set for one tenant (``tenants[i].profile``
#: in the MIG and energy families): what ``edgegym profile`` measures on a device, so that a
#: measured file carries its numbers without a catalogue entry per device.
PROFILE_FIELDS = ("latency_ms", "batch_exponent", "share_alpha", "train_factor", "power_activity")


def model_with(name: str, profile: Mapping[str, Any] | None = None) -> ModelProfile:
    """The bundled model ``name`` with the fields a scenario's ``profile`` sets replaced.

    Args:
        name: A bundled model (:data:`MODELS`).
        profile: ``{field: value}`` of :data:`PROFILE_FIELDS`; ``None`` values and a missing
            mapping keep the catalogue's numbers.
    """
    given = {k: None if v is None else float(v) for k, v in (profile or {}).items()}
    return with_fields(get_model(name), given, PROFILE_FIELDS, "profile")


def with_fields(base: Any, fields: Mapping[str, Any] | None, allowed: Sequence[str], where: str):
    """A bundled record (a frozen dataclass with a ``source``) with the fields a scenario's
    section ``where`` sets replaced, its ``source`` naming them; ``None`` values and a missing
    mapping keep the bundled numbers, a field outside ``allowed`` is a ``KeyError``."""
    given = {k: v for k, v in (fields or {}).items() if v is not None}
    unknown = sorted(set(given) - set(allowed))
    if unknown:
        raise KeyError(f"unknown {where} field(s) {unknown}; valid: {', '.join(allowed)}")
    if not given:
        return base
    note = f"scenario {where} ({', '.join(sorted(given))}); the rest: {base.source}"
    return dataclasses.replace(base, **given, source=note)

"""What runs on the GPUs: model profiles, arrivals and traces, drift and configurations."""

from edgegym.workload.arrivals import make_arrival
from edgegym.workload.continual import (
    ContinualProfile,
    InferenceConfig,
    RetrainConfig,
    inference_accuracy,
    pareto_front,
    progress_accuracy,
    sample_profile,
)
from edgegym.workload.models import MODELS, ModelProfile, get_model

__all__ = [
    "MODELS",
    "ContinualProfile",
    "InferenceConfig",
    "ModelProfile",
    "RetrainConfig",
    "get_model",
    "inference_accuracy",
    "make_arrival",
    "pareto_front",
    "progress_accuracy",
    "sample_profile",
]

"""What runs on the GPUs: model profiles, arrivals and traces, drift and configurations."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from edgegym.workload.traces import (
        AlibabaLike,
        AzureFunctionsReplay,
        AzureLike,
        load_azure_functions,
        read_azure_functions,
        trace_stats,
        write_azure_functions_sample,
    )

# edgegym.workload.traces is imported on first use, not here, so that
# ``python -m edgegym.workload.traces`` does not find it already imported (runpy warns then).
_LAZY_TRACES = (
    "AlibabaLike",
    "AzureFunctionsReplay",
    "AzureLike",
    "load_azure_functions",
    "read_azure_functions",
    "trace_stats",
    "write_azure_functions_sample",
)


def __getattr__(name: str) -> Any:
    if name in _LAZY_TRACES:
        return getattr(importlib.import_module("edgegym.workload.traces"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "MODELS",
    "AlibabaLike",
    "AzureFunctionsReplay",
    "AzureLike",
    "ContinualProfile",
    "InferenceConfig",
    "ModelProfile",
    "RetrainConfig",
    "get_model",
    "inference_accuracy",
    "load_azure_functions",
    "make_arrival",
    "pareto_front",
    "progress_accuracy",
    "read_azure_functions",
    "sample_profile",
    "trace_stats",
    "write_azure_functions_sample",
]

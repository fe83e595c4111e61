"""What runs on the GPUs: model profiles, arrivals and traces, drift and configurations.

Arrivals by role: :mod:`~edgegym.workload.processes` (the processes),
:mod:`~edgegym.workload.generators` (synthetic MIGRator-style traces),
:mod:`~edgegym.workload.tracefiles` (trace file formats), :mod:`~edgegym.workload.arrival_specs`
(a scenario's ``arrival`` mapping and :func:`make_arrival`); :mod:`~edgegym.workload.traces`
is their command line (``python -m edgegym.workload.traces``).
:mod:`~edgegym.workload.checks` holds the one rule every parameter and scenario field is
checked with.
"""

from __future__ import annotations

from edgegym.workload.arrival_specs import make_arrival
from edgegym.workload.continual import (
    ContinualProfile,
    InferenceConfig,
    RetrainConfig,
    inference_accuracy,
    pareto_front,
    progress_accuracy,
    sample_profile,
)
from edgegym.workload.generators import AlibabaLike, AzureLike, trace_stats
from edgegym.workload.models import MODELS, ModelProfile, get_model
from edgegym.workload.processes import AzureFunctionsReplay
from edgegym.workload.tracefiles import (
    load_azure_functions,
    read_azure_functions,
    write_azure_functions_sample,
)

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

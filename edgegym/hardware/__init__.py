"""What a GPU is: specs, DVFS clocks and power, MIG profiles and layouts, MPS shares."""

from edgegym.hardware.gpus import GPUS, GPUSpec, PowerModel, get_gpu, speed_factor
from edgegym.hardware.mig import (
    MIG_MEMORY_SLICES,
    MIG_PROFILES,
    MIG_TOTAL_GPCS,
    MIGInstance,
    MIGLayout,
    MIGProfile,
    changed_instances,
    get_mig_profiles,
    is_maximal,
    layout_sizes,
    layouts_gpc_array,
    layouts_slice_array,
    make_layout,
    valid_layouts,
)
from edgegym.hardware.mps import quantize_shares, share_speedup

__all__ = [
    "GPUS",
    "MIG_MEMORY_SLICES",
    "MIG_PROFILES",
    "MIG_TOTAL_GPCS",
    "GPUSpec",
    "MIGInstance",
    "MIGLayout",
    "MIGProfile",
    "PowerModel",
    "changed_instances",
    "get_gpu",
    "get_mig_profiles",
    "is_maximal",
    "layout_sizes",
    "layouts_gpc_array",
    "layouts_slice_array",
    "make_layout",
    "quantize_shares",
    "share_speedup",
    "speed_factor",
    "valid_layouts",
]

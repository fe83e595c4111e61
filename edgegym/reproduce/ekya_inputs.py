"""The synthesised inputs of an Ekya scenario and how section (g) of the reproduction
(:func:`edgegym.reproduce.ekya.synthesised_sweep`) scales them: each input the default
scenario's provenance calls synthesised or a choice, x0.5 and x2 one at a time, and those it
leaves alone with the reason."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from edgegym.scenarios import Scenario

#: (g): the synthesised inputs swept, each scaled by these factors (the scenario's is 1).
SWEEP_FACTORS = (0.5, 2.0)
#: The sweep (g)'s point with the scenario's inputs as given (and the ablation (f)'s).
SCENARIO_POINT = "as in the scenario"

#: Fig. 4's example (``ekya-table1``): one of its two synthesised inputs is the share a full-rate
#: stream needs (1 GPU). Fig. 4 pins it to (0.75, 1.5] GPU: at the uniform share of 0.75 GPU
#: inference keeps x0.75 of the model's accuracy, the half-rate configuration's, so 0.75 GPU must
#: not sustain the full rate and must sustain half of it. The claims are also judged at these
#: factors on it, the ends of that range (x0.5 and x2 would contradict the figure).
TABLE1_DEMANDS = (0.8, 1.5)

#: Fig. 4's example's other synthesised input: the accuracy a model loses between the two
#: windows (none in the scenario; the example gives the start accuracy of window 1 only). Zero
#: has no size to scale, so the claims are also judged at the ends of the range the family's
#: default scenario draws it from (``ekya-cityscapes``'s ``drift.drift``, 4-16 points, itself
#: synthesised: no published number; a test keeps the two equal).
TABLE1_DRIFTS = (0.04, 0.16)


def scaled_demand(sc: Scenario, factor: float) -> dict[str, Any]:
    """Every inference configuration's share times ``factor``: the share a full-rate stream
    needs, scaled (the configurations keep their frame rates and accuracy)."""
    return {
        "inference_configs": [{**c, "share": c["share"] * factor} for c in sc["inference_configs"]]
    }


def table1_variants(sc: Scenario) -> dict[str, dict[str, Any]]:
    """The points besides the scenario as given at which Fig. 4's claims are judged on
    ``ekya-table1`` (``sc``): label -> scenario overrides (:data:`TABLE1_DEMANDS`, then
    :data:`TABLE1_DRIFTS`)."""
    return {
        **{f"demand x{f:g}": scaled_demand(sc, f) for f in TABLE1_DEMANDS},
        **{f"drift {100 * d:g} points": {"drift.drift": d} for d in TABLE1_DRIFTS},
    }


def table1_label(key: str) -> str:
    """The label of a point of :func:`table1_variants` as a saved run names it (runs before
    the drift points name a demand factor alone, ``"0.8"``)."""
    try:
        return f"demand x{float(key):g}"
    except ValueError:
        return key


def _scaled_costs(sc: Scenario, factor: float) -> dict[str, Any]:
    """Every retraining configuration's GPU-seconds times ``factor`` (table drift: its
    per-window table too, the costs the episode uses)."""
    out: dict[str, Any] = {
        "retrain_configs": [
            {**c, "gpu_seconds": c["gpu_seconds"] * factor} for c in sc["retrain_configs"]
        ]
    }
    if sc["drift"]["kind"] == "table":
        out["drift.gpu_seconds"] = (np.asarray(sc["drift"]["gpu_seconds"]) * factor).tolist()
    return out


def _scaled_drift(sc: Scenario, factor: float) -> dict[str, Any]:
    """The accuracy lost at each window start times ``factor`` (a range, a scalar or a table),
    at most 1."""
    return {"drift.drift": np.minimum(1.0, np.asarray(sc["drift"]["drift"]) * factor).tolist()}


def _scaled_shared(sc: Scenario, factor: float) -> dict[str, Any]:
    return {"profiler.shared": min(1.0, sc["profiler"]["shared"] * factor)}


#: A (g) scaler: the overrides that scale one input by a factor, ``None`` where it is absent.
Scaler = Callable[[Scenario, float], "dict[str, Any] | None"]


def _generated_only(scale: Scaler) -> Scaler:
    """``scale`` for a scenario that draws its profiles from ranges (``drift.kind:
    generated``); ``None`` for one with explicit tables, which has no such input."""

    @functools.wraps(scale)
    def scaler(sc: Scenario, factor: float) -> dict[str, Any] | None:
        return scale(sc, factor) if sc["drift"]["kind"] == "generated" else None

    return scaler


@_generated_only
def _scaled_error(sc: Scenario, factor: float) -> dict[str, Any] | None:
    """The error the best retrained model leaves, ``1 - drift.ceiling``, times ``factor``."""
    return {"drift.ceiling": [round(1.0 - (1.0 - c) * factor, 6) for c in sc["drift"]["ceiling"]]}


@_generated_only
def _scaled_gap_floor(sc: Scenario, factor: float) -> dict[str, Any] | None:
    """The lower bound of the never-retrained model's loss times ``factor`` (the upper bound is
    Fig. 2b's measured 22 points and stays), at most the upper bound."""
    lo, hi = sc["drift"]["floor_gap"]
    return {"drift.floor_gap": [min(hi, lo * factor), hi]}


@_generated_only
def _scaled_sensitivity(sc: Scenario, factor: float) -> dict[str, Any] | None:
    """How much the configurations differ within a window, times ``factor``: the epoch time
    constant and the data exponent scaled, and the quality lost by retraining only the last
    layers (``1 - partial_layers``) scaled within [0, 1]. Above 1 the cheap configurations fall
    further behind the best one; below 1 they come closer to it (as in the three windows the
    authors measured, scenario ``ekya-cityscapes-authors-profiles``)."""
    sens = sc["drift"].get("sensitivity")
    if not sens:
        return None
    return {
        "drift.sensitivity": {
            "epochs_tau": [v * factor for v in sens["epochs_tau"]],
            "data_exponent": [v * factor for v in sens["data_exponent"]],
            "partial_layers": [max(0.0, 1.0 - (1.0 - v) * factor) for v in sens["partial_layers"]],
        }
    }


@_generated_only
def _scaled_jitter(sc: Scenario, factor: float) -> dict[str, Any] | None:
    return {"drift.config_jitter": min(0.5, sc["drift"]["config_jitter"] * factor)}


def _scaled_spread(key: str):
    """Scaler of a per-window multiplier's range around 1 (``drift.data_volume``,
    ``drift.demand``): its distance from 1 times ``factor``."""

    @_generated_only
    def scale(sc: Scenario, factor: float) -> dict[str, Any] | None:
        return {f"drift.{key}": [round(1.0 + (v - 1.0) * factor, 6) for v in sc["drift"][key]]}

    return scale


def _scaled_prune(sc: Scenario, factor: float) -> dict[str, Any]:
    return {"profiler.prune_fraction": min(0.75, sc["profiler"]["prune_fraction"] * factor)}


def _scaled_checkpoints(sc: Scenario, factor: float) -> dict[str, Any]:
    """The checkpoint interval in epochs times ``factor``, rounded (at least 1)."""
    return {
        "profiler.checkpoint_epochs": max(1, round(sc["profiler"]["checkpoint_epochs"] * factor))
    }


#: (g): the synthesised inputs (and choices) of the scenario, each scaled alone: every
#: retraining configuration's GPU-seconds (Fig. 3b and Table 1 give a range, not the table),
#: the accuracy a model loses at each window start (no published number), the share of the
#: micro-profiler's error common to a stream's configurations (set after seeing a result), the
#: error the best model leaves, the lower bound of the never-retrained model's loss, how much
#: the configurations differ (set after seeing a result), their jitter, the per-window
#: data-volume and demand jitter, the pruned fraction and the checkpoint interval. A scaler
#: returns None where the scenario has no such input (explicit tables).
SYNTHESISED = {
    "retraining cost (retrain_configs.gpu_seconds)": _scaled_costs,
    "drift at window starts (drift.drift)": _scaled_drift,
    "shared estimate error (profiler.shared)": _scaled_shared,
    "best model's error (1 - drift.ceiling)": _scaled_error,
    "least loss without retraining (drift.floor_gap low)": _scaled_gap_floor,
    "configurations' differences (drift.sensitivity)": _scaled_sensitivity,
    "configuration jitter (drift.config_jitter)": _scaled_jitter,
    "data-volume jitter (drift.data_volume)": _scaled_spread("data_volume"),
    "demand jitter (drift.demand)": _scaled_spread("demand"),
    "pruned fraction (profiler.prune_fraction)": _scaled_prune,
    "checkpoint interval (profiler.checkpoint_epochs)": _scaled_checkpoints,
}


#: The default scenario's synthesised inputs and choices that (g) does not scale, and why
#: (``tests/test_reproduce_ekya.py`` checks that every other one is in :data:`SYNTHESISED`).
NOT_SWEPT = {
    "hardware.gpus": "the experiment's setting: (a) runs 1 and 2 GPUs, (b) 1 to 16",
    "hardware.share_quantum": "the allocation unit; (d) sweeps the thief's step Delta",
    "objective": "what is measured, not an input",
    "uniform.holdout_seed": "which two hold-out streams the uniform baselines are chosen on",
    "retrain_configs.name": "a name",
    "retrain_configs.epochs": "the grid of 18 configurations: (g) scales their relative "
    "quality (drift.sensitivity) and their cost",
    "retrain_configs.batch_size": "as retrain_configs.epochs",
    "retrain_configs.layers_retrained": "as retrain_configs.epochs",
    "retrain_configs.last_layer_width": "as retrain_configs.epochs",
    "retrain_configs.data_fraction": "as retrain_configs.epochs",
    "retrain_configs.quality": "informational only (drift.sensitivity draws each window's)",
    "drift": "the block: its fields are swept one at a time",
}

"""The Ekya reproduction's sweep (g) of the synthesised inputs: every such input of the default
scenario has an x0.5 and an x2 variant that loads as a valid scenario, changes only its own
field, is the scenario itself at x1, and moves the input the way the report says."""

from __future__ import annotations

import re

import numpy as np
import pytest

from edgegym.families.continual.params import ContinualSpec
from edgegym.reproduce import ekya
from edgegym.scenarios import load
from edgegym.workload.continual import config_quality


@pytest.mark.parametrize("label", list(ekya.SYNTHESISED))
def test_each_synthesised_input_is_swept_alone(label: str) -> None:
    sc = load("ekya-cityscapes")
    scale = ekya.SYNTHESISED[label]
    assert load("ekya-cityscapes", **scale(sc, 1.0)) == sc  # x1 is the scenario
    for factor in ekya.SWEEP_FACTORS:
        ov = scale(sc, factor)
        changed = load("ekya-cityscapes", **ov)  # validates the variant
        sections = {key.split(".")[0] for key in ov}
        assert all(changed[k] == sc[k] for k in sc.data if k not in sections)
        assert changed != sc, f"{label} x{factor:g} changes nothing"


def test_the_sensitivity_sweep_brings_cheap_configurations_closer_to_the_best() -> None:
    """x0.5 flattens the configurations' quality (the cheapest reaches more of the best's gain,
    as in the authors' measured windows), x2 steepens it."""
    sc = load("ekya-cityscapes")
    cheapest = int(np.argmin([c["gpu_seconds"] for c in sc["retrain_configs"]]))
    spec = ContinualSpec.from_scenario(sc)
    mean_q = []
    for factor in (0.5, 1.0, 2.0):
        sens = ekya.SYNTHESISED["configurations' differences (drift.sensitivity)"](sc, factor)
        q = config_quality(
            spec.retrain_configs,
            sens["drift.sensitivity"],
            (50, 10),
            np.random.default_rng(0),
        )
        mean_q.append(float(q[..., cheapest].mean()))
    assert mean_q[0] > mean_q[1] > mean_q[2]


def test_inputs_an_explicit_table_does_not_have_are_left_out() -> None:
    """On the authors' measured tables only the inputs that exist are swept."""
    sc = load("ekya-cityscapes-authors-profiles")
    kept = {label for label, scale in ekya.SYNTHESISED.items() if scale(sc, 2.0) is not None}
    assert "configurations' differences (drift.sensitivity)" not in kept
    assert "best model's error (1 - drift.ceiling)" not in kept
    assert "retraining cost (retrain_configs.gpu_seconds)" in kept
    for label in kept:
        load("ekya-cityscapes-authors-profiles", **ekya.SYNTHESISED[label](sc, 2.0))


def test_every_synthesised_input_of_the_scenario_is_swept_or_said_why_not() -> None:
    """Each input the default scenario's provenance calls synthesised or a choice is scaled by
    (g) (named in a label) or listed in ``NOT_SWEPT`` with the reason."""
    from edgegym.provenance import source_of

    raw = load("ekya-cityscapes").data
    swept = " ".join(ekya.SYNTHESISED)
    for key in raw["provenance"]:
        kind = (source_of(raw, key) or "").split(":")[0]
        if kind in ("synthesised", "choice"):
            named = re.search(rf"[( ]{re.escape(key)}[) ]", swept)
            assert named or key in ekya.NOT_SWEPT, key
    assert set(ekya.NOT_SWEPT) <= set(raw["provenance"])  # no stale entries


def test_runs_at_scaled_inputs_stay_out_of_the_a_min_table(monkeypatch) -> None:
    """The report's a_MIN table covers the scenario's inputs: a run of (g) at scaled inputs
    that put a_MIN out of reach is not folded in, the same run otherwise is."""
    monkeypatch.setattr(ekya, "BELOW_A_MIN", {})
    low = {"drift.ceiling": [0.30, 0.35], "gpus": 1}
    ekya._run(["no-retrain"], "ekya-cityscapes", 1, track_a_min=False, **low)
    assert ekya.BELOW_A_MIN == {}
    ekya._run(["no-retrain"], "ekya-cityscapes", 1, **low)
    assert ekya.BELOW_A_MIN["no-retrain"] > 0.5

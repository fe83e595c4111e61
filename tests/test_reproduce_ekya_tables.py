"""The Ekya report's section tables, written from the measurements alone
(:mod:`edgegym.reproduce.ekya_tables`): known answers on a small hand-made run."""

from __future__ import annotations

import pytest

from edgegym.reproduce.ekya_claims import UNIFORMS, gain_over_each
from edgegym.reproduce.ekya_tables import (
    PAPER_CAPACITY,
    ablation_text,
    delta_text,
    noise_text,
    search_text,
    section_texts,
    streams_text,
    sweep_text,
    table1_text,
)


def _rows(text: str) -> list[list[str]]:
    """The cells of every row of the first Markdown table in ``text``, header first."""
    table = text.split("\n\n")[0]
    return [
        [c.strip() for c in line.strip("|").split("|")]
        for line in table.splitlines()
        if not line.startswith("|---")
    ]


def _streams() -> dict:
    """Two stream counts on 1 and 2 GPUs; uniform-c2-90 is the best uniform at 1 GPU, 2
    streams, uniform-c1-50 everywhere else."""
    acc = {}
    for g in (1, 2):
        acc[g] = {"thief": {1: (0.80, 0.01), 2: (0.70 + 0.1 * (g - 1), 0.02)}}
        for u in UNIFORMS:
            acc[g][u] = {1: (0.60, 0.0), 2: (0.50, 0.0)}
        acc[g]["uniform-c1-50"] = {1: (0.78, 0.0), 2: (0.55, 0.0)}
    acc[1]["uniform-c2-90"][2] = (0.76, 0.01)
    capacity = {"thief": (2, 2), **{u: (1, 1) for u in UNIFORMS}}
    capacity["uniform-c2-30"] = (0, 1)
    return {"acc": acc, "capacity": capacity}


def test_the_streams_table_names_the_best_uniform_at_each_point() -> None:
    header, *rows = _rows(streams_text(_streams()))
    assert header == [
        "streams",
        "thief 1 GPU",
        "best uniform 1 GPU",
        "thief 2 GPUs",
        "best uniform 2 GPUs",
        "best uniform (1 GPU)",
        "best uniform (2 GPUs)",
    ]
    thief_1, best_1 = ["80.0 ± 1.0", "78.0 ± 0.0"], ["70.0 ± 2.0", "76.0 ± 1.0"]
    assert rows[0] == ["1", *thief_1, *thief_1, "c1-50", "c1-50"]
    assert rows[1] == ["2", *best_1, "80.0 ± 2.0", "55.0 ± 0.0", "c2-90", "c1-50"]


def test_the_advantage_over_each_uniform_variant_alone_is_its_largest_over_the_streams() -> None:
    """Beside the best-uniform reading the claims use: the thief against each variant alone,
    at the stream count where the gap is largest."""
    acc = _streams()["acc"]
    each = gain_over_each(acc[1])
    assert each["uniform-c1-50"] == pytest.approx((0.15, 2))  # 0.70 - 0.55 at 2 streams
    assert each["uniform-c2-90"] == pytest.approx((0.20, 1))  # 0.80 - 0.60; behind at 2
    text = streams_text(_streams()).split("where it is largest):\n\n")[1]
    header, *rows = _rows(text)
    assert header == ["uniform variant", "1 GPU", "2 GPUs"]
    assert rows[0] == ["Uniform (Cfg 1, 50%)", "+15.0 (2 streams)", "+25.0 (2 streams)"]


def test_the_capacity_table_stands_beside_the_papers_with_its_scaling() -> None:
    text = streams_text(_streams())
    cap = _rows(text.split("Capacity (streams with accuracy >= 0.75):\n\n")[1])
    assert cap[0] == ["scheduler", "paper: 1 / 2 GPUs (scaling)", "edgegym: 1 / 2 GPUs"]
    by_name = {r[0]: r[1:] for r in cap[1:]}
    assert by_name["Ekya (thief)"] == [
        f"{PAPER_CAPACITY['thief'][0]} / {PAPER_CAPACITY['thief'][1]} (4x)",
        "2 / 2 (1x)",
    ]
    assert by_name["Uniform (Cfg 2, 30%)"] == ["0 / 2 (-)", "0 / 1 (-)"]  # no 1-GPU capacity


def test_the_delta_table_pairs_each_variants_accuracy_with_its_decision_time() -> None:
    d = {
        "deltas": [1.0, 0.1],
        "acc": {"default": [(0.7, 0.01), (0.72, 0.0)], "literal Alg. 1": [(0.69, 0.0), (0.7, 0.0)]},
        "decision_ms": {"default": [0.04, 6.25], "literal Alg. 1": [0.05, 4.64]},
        "exact": (0.75, 0.02),
        "exact_ms": 104.0,
    }
    header, *rows = _rows(delta_text(d))
    assert header[1:3] == ["default: accuracy (%)", "default: decision (ms)"]
    assert rows == [
        ["1", "70.0 ± 1.0", "0.0", "69.0 ± 0.0", "0.1"],
        ["0.1", "72.0 ± 0.0", "6.2", "70.0 ± 0.0", "4.6"],
        ["exact search (`thief:exact=true`)", "75.0 ± 2.0", "104.0", "-", "-"],
    ]


def test_the_noise_table_shows_the_error_given_and_the_deviation_used() -> None:
    e = {
        "noise": [0.0, 0.2],
        "error": [0.0, 0.1349],
        "std_used": [0.0, 0.2031],
        "acc": [(0.8, 0.01), (0.78, 0.02)],
    }
    assert _rows(noise_text(e))[1:] == [
        ["0%", "0.0", "0.0", "80.0 ± 1.0"],
        ["20%", "13.5", "20.3", "78.0 ± 2.0"],
    ]


def test_the_ablation_table_keeps_the_measured_order_and_names_the_references() -> None:
    by_variant = {"as in the scenario": 0.5, "oracle": 0.6, "best uniform": 0.4}
    f = {"acc": {g: by_variant for g in (1, 4)}}
    header, *rows = _rows(ablation_text(f))
    assert header == ["variant", "1 GPU: accuracy (%)", "4 GPUs: accuracy (%)"]
    assert [r[0] for r in rows] == [
        "thief, as in the scenario",
        "oracle thief (true profiles, scenario's mechanics)",
        "best uniform variant (no profiler)",
    ]


def test_the_sweep_table_marks_the_inputs_the_simulators_setting_does_not_have() -> None:
    """A micro-profiler input has no gain in the simulator's setting: "-" there."""
    point = {"thief": 0.5, "best": 0.47, "best_uniform": "uniform-c2-90", "none": 0.46}
    g = {
        "acc": {"as in the scenario": {1: point, 2: point}, "profiler x2": {1: point, 2: point}},
        "gain": {"as in the scenario": {1: 0.03, 2: 0.03}, "profiler x2": {1: 0.025, 2: -0.01}},
        "gain_sim": {"as in the scenario": {1: 0.041, 2: 0.05, 8: 0.024}},
        "ablation": {"as in the scenario": 0.006, "profiler x2": -0.002},
        "noise_drop": {"as in the scenario": 0.017, "profiler x2": 0.031},
    }
    header, *rows = _rows(sweep_text(g))
    assert header[-5:] == [
        "gain 1 GPU, simulator's setting",
        "gain 2 GPUs, simulator's setting",
        "gain 8 GPUs, simulator's setting",
        "Fig. 10a margin, 4 GPUs",
        "Fig. 11b drop, 4 GPUs",
    ]
    per_gpu = ["50.0", "47.0 (c2-90)", "46.0", "+3.0"]
    sim = ["+4.1", "+5.0", "+2.4"]
    assert rows[0] == ["as in the scenario", *per_gpu, *per_gpu, *sim, "+0.6", "1.7"]
    assert rows[1][-6:] == ["-1.0", "-", "-", "-", "-0.2", "3.1"]


def test_the_search_table_reads_each_search_against_its_inference_only_self() -> None:
    """(h): the five searches, no retraining and the best uniform from (g), then the points
    retraining adds to each search and what the exact search finds above the steals."""
    acc = {
        "thief": (0.49, 0.01),
        "thief:retrain=false": (0.495, 0.0),
        "thief:exact=true": (0.50, 0.0),
        "thief:exact=true,retrain=false": (0.48, 0.0),
        "thief:exact=true,oracle=true": (0.51, 0.0),
    }
    point = {"thief": 0.5, "best": 0.47, "best_uniform": "uniform-c2-90", "none": 0.46}
    text = search_text({"acc": {1: acc}}, {"acc": {"as in the scenario": {1: point}}})
    first, second = text.split("\n\n")
    header, *rows = _rows(first)
    assert header == ["policy", "1 GPU: accuracy (%)"]
    assert [r[1] for r in rows] == ["49.0 ± 1.0", "49.5 ± 0.0", "50.0 ± 0.0", "48.0 ± 0.0",
                                    "51.0 ± 0.0", "46.0", "47.0"]  # fmt: skip
    assert _rows(second)[1:] == [
        ["retraining adds, steals", "-0.5"],
        ["retraining adds, exact", "+2.0"],
        ["retraining adds, exact, true profiles", "+3.0"],
        ["the exact search above the steals", "+1.0"],
    ]


def test_the_table1_table_names_each_point_and_ends_with_the_papers_averages() -> None:
    """A run from before the drift points names its demand points by their factor alone."""
    t1 = {
        "uniform": 0.552,
        "thief": 0.705,
        "sweep": {
            "1.5": {"uniform": 0.552, "thief": 0.52},
            "drift 16 points": {"uniform": 0.495, "thief": 0.672},
        },
    }
    assert _rows(table1_text(t1)) == [
        ["point", "uniform (Cfg 1, 50%)", "thief (Delta 0.05)"],
        ["the scenario as given", "55.2", "70.5"],
        ["demand x1.5", "55.2", "52.0"],
        ["drift 16 points", "49.5", "67.2"],
        ["paper (Fig. 4)", "56", "73"],
    ]


SECTIONS = ["a", "b", "d", "e", "f", "g", "h", "t1"]


@pytest.mark.parametrize("missing", SECTIONS)
def test_a_run_without_a_sections_measurements_cannot_be_written(missing: str) -> None:
    with pytest.raises(KeyError):
        section_texts({k: {} for k in SECTIONS if k != missing})

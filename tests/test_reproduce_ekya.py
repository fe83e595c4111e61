"""The Ekya reproduction's sweep (g) of the synthesised inputs: every such input of the default
scenario has an x0.5 and an x2 variant that loads as a valid scenario, changes only its own
field, is the scenario itself at x1, and moves the input the way the report says. Fig. 8's
claims are judged in the authors' simulator's setting, which has no micro-profiler."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

from edgegym.families.continual.params import ContinualSpec
from edgegym.reproduce import ekya, ekya_inputs
from edgegym.reproduce.ekya_inputs import TABLE1_DEMANDS
from edgegym.scenarios import load
from edgegym.workload.continual import config_quality


@pytest.mark.parametrize("label", list(ekya_inputs.SYNTHESISED))
def test_each_synthesised_input_is_swept_alone(label: str) -> None:
    sc = load("ekya-cityscapes")
    scale = ekya_inputs.SYNTHESISED[label]
    assert load("ekya-cityscapes", **scale(sc, 1.0)) == sc  # x1 is the scenario
    for factor in ekya_inputs.SWEEP_FACTORS:
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
    scale = ekya_inputs.SYNTHESISED["configurations' differences (drift.sensitivity)"]
    for factor in (0.5, 1.0, 2.0):
        sens = scale(sc, factor)
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
    kept = {label for label, scale in ekya_inputs.SYNTHESISED.items() if scale(sc, 2.0) is not None}
    assert "configurations' differences (drift.sensitivity)" not in kept
    assert "best model's error (1 - drift.ceiling)" not in kept
    assert "retraining cost (retrain_configs.gpu_seconds)" in kept
    for label in kept:
        load("ekya-cityscapes-authors-profiles", **ekya_inputs.SYNTHESISED[label](sc, 2.0))


def test_every_synthesised_input_of_the_scenario_is_swept_or_said_why_not() -> None:
    """Each input the default scenario's provenance calls synthesised or a choice is scaled by
    (g) (named in a label) or listed in ``NOT_SWEPT`` with the reason."""
    from edgegym.provenance import source_of

    raw = load("ekya-cityscapes").data
    swept = " ".join(ekya_inputs.SYNTHESISED)
    for key in raw["provenance"]:
        kind = (source_of(raw, key) or "").split(":")[0]
        if kind in ("synthesised", "choice"):
            named = re.search(rf"[( ]{re.escape(key)}[) ]", swept)
            assert named or key in ekya_inputs.NOT_SWEPT, key
    assert set(ekya_inputs.NOT_SWEPT) <= set(raw["provenance"])  # no stale entries


def test_runs_at_scaled_inputs_stay_out_of_the_a_min_table(monkeypatch) -> None:
    """The report's a_MIN table covers the scenario's inputs: a run of (g) at scaled inputs
    that put a_MIN out of reach is not folded in, the same run otherwise is."""
    monkeypatch.setattr(ekya, "BELOW_A_MIN", {})
    low = {"drift.ceiling": [0.30, 0.35], "gpus": 1}
    ekya._run(["no-retrain"], "ekya-cityscapes", 1, track_a_min=False, **low)
    assert ekya.BELOW_A_MIN == {}
    ekya._run(["no-retrain"], "ekya-cityscapes", 1, **low)
    assert ekya.BELOW_A_MIN["no-retrain"] > 0.5


@pytest.mark.parametrize("setting", ["scenario", "simulator"])
def test_the_simulators_setting_schedules_on_the_true_profiles_without_a_micro_profiler(
    setting: str,
) -> None:
    """In :data:`ekya.SIMULATOR` (the released simulator's run of Fig. 8) the thief reads the
    true post-retraining accuracies, no GPU is held for profiling, retraining may start at the
    window's start, nothing is pruned and no checkpoint is loaded; the scenario as it is has
    each of the five."""
    ov = ekya.SIMULATOR if setting == "simulator" else {}
    spec = ContinualSpec.from_scenario(load("ekya-cityscapes", **ov))
    env = gym.make(ekya.ENV_ID, scenario="ekya-cityscapes", **ov).unwrapped
    env.reset(seed=0)
    snap = env.sim_state()
    mechanics = {
        "estimate error": not np.allclose(snap.est_post_acc, snap.true_post_acc),
        "profiling share": snap.reserved > 0,
        "labelling delay": snap.retrain_wait_s > 0,
        "pruning": spec.prune_every > 0,
        "checkpoints": bool(np.isfinite(spec.checkpoint_step).any()),
    }
    assert mechanics == dict.fromkeys(mechanics, setting == "scenario")


def _fig8(thief: dict[int, float], uniform: dict[int, float]) -> dict:
    """Section (b)'s readings for a thief and four equal uniform variants on 1-16 GPUs."""
    acc = {"thief": {g: (thief[g], 0.0) for g in ekya.GPU_COUNTS}}
    acc.update({u: {g: (uniform[g], 0.0) for g in ekya.GPU_COUNTS} for u in ekya.UNIFORMS})
    acc["no-retrain"] = {g: (0.4, 0.0) for g in ekya.GPU_COUNTS}
    return ekya._fig8(acc)


@pytest.mark.parametrize("sim_gain_at_8", [0.02, -0.01])
def test_fig8_claims_are_judged_in_the_simulators_setting(sim_gain_at_8: float) -> None:
    """The margin claim holds on the simulator's readings where the scenario's fail (the
    thief below a uniform at 8 GPUs), unless the sweep's simulator gain at 8 GPUs is negative;
    the GPU saving is the simulator's, the scenario's is quoted beside it."""
    from edgegym.reproduce.ekya_claims import _Context, _margin_claim, _saving_claim

    uniform = {1: 0.45, 2: 0.55, 4: 0.70, 8: 0.78, 16: 0.79}
    b = _fig8({1: 0.47, 2: 0.60, 4: 0.75, 8: 0.77, 16: 0.785}, uniform)  # -1 at 8 GPUs
    b["sim"] = _fig8({1: 0.48, 2: 0.62, 4: 0.80, 8: 0.79, 16: 0.83}, uniform)  # 4x saving
    fa = {
        g: dict.fromkeys(["oracle", "exact estimates (error 0)", "best uniform"], 0.5)
        for g in (1, 4, 8)
    }
    gain_sim = {
        "as in the scenario": {1: 0.01, 2: 0.03, 4: 0.02, 8: sim_gain_at_8, 16: 0.04},
        "drift x2": {1: 0.02, 2: 0.04, 4: 0.03, 8: 0.03, 16: 0.05},
    }
    g = {
        "gain_sim": gain_sim,
        "min_sim": {n: min(v[n] for v in gain_sim.values()) for n in ekya.GPU_COUNTS},
    }
    h = {"acc": {1: dict.fromkeys(ekya.SEARCH, (0.5, 0.0))}}
    ctx = _Context(b, {"acc": fa}, g, h)
    margin, saving = _margin_claim(ctx, b), _saving_claim(ctx, b)
    assert margin.edgegym_value == 1.0  # the simulator's smallest margin, 1 point at 8 GPUs
    assert margin.holds is (sim_gain_at_8 > 0)
    # the verdict per sweep point: the scenario's inputs fail with the sweep's 8-GPU gain
    assert margin.points == {"default": sim_gain_at_8 > 0, "drift x2": True}
    assert f"{100 * sim_gain_at_8:+.1f} at 8 GPUs" in (margin.test if margin.holds else margin.why)
    assert "-1.0 points, at 8 GPUs" in (margin.test if margin.holds else margin.why)
    assert saving.holds and saving.edgegym_value == 4.0
    assert "micro-profiler not reached" in saving.test  # the scenario's thief never gets there


DOCS = Path(__file__).resolve().parents[1] / "docs" / "reproduction"


@pytest.mark.parametrize(
    ("section", "key"),
    [
        ("d", "deltas"),
        ("d", "decision_ms"),
        ("d", "exact"),
        ("e", "std_used"),
        ("g", "acc"),
        ("g", "ablation"),
        ("g", "noise_drop"),
        ("h", "acc"),
        ("t1", "sweep"),
    ],
)
def test_render_only_of_a_saved_run_without_a_tables_or_figures_data_writes_nothing(
    tmp_path: Path, capsys, section: str, key: str
) -> None:
    """A saved run that lacks what a table or a figure shows (one of an older version: Delta's
    grid, its decision times, the deviation the noise sweep used, the swept inputs'
    accuracies) is one error line naming it, before the report, the figures or the claims are
    written."""
    saved = json.loads((DOCS / "ekya-runs.json").read_text())
    del saved["sections"][section][key]
    (tmp_path / "ekya-runs.json").write_text(json.dumps(saved))
    assert ekya.main(["--render-only", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot read the saved runs" in err[0] and f"'{key}'" in err[0]
    written = [p.name for p in tmp_path.iterdir() if p.name != ".edgegym.lock"]
    assert written == ["ekya-runs.json"]


@pytest.mark.parametrize(
    ("saved", "says"),
    [
        (None, "does not exist; run without it first"),
        ("{not json", "cannot read the saved runs"),
        (
            '{"run": {"scenario": "ekya-cityscapes"}, "below_a_min": {}, "sections": {}}',
            "ekya-runs.json: run: has no 'episodes'",
        ),
    ],
)
def test_render_only_without_a_saved_run_is_one_error_line(
    tmp_path: Path, capsys, saved: str | None, says: str
) -> None:
    if saved is not None:
        (tmp_path / "ekya-runs.json").write_text(saved)
    assert ekya.main(["--render-only", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"{ekya.PROG}: error: --render-only: ")
    assert says in err[0]
    assert not (tmp_path / "ekya.md").exists()


def test_a_run_and_its_render_only_draw_the_same_figures(tmp_path: Path, monkeypatch) -> None:
    """The tables and figures come from the measurements alone: a run (its sections stubbed
    with the committed run's measurements) and ``--render-only`` of the runs file it saved
    write the same report and draw the same seven PNGs byte for byte (the JSON round trip
    keeps what a table or a figure shows)."""
    sections = ekya._load_runs(DOCS)["sections"]
    monkeypatch.setattr(ekya, "_sections", lambda *args, **kwargs: sections)
    monkeypatch.setattr(ekya, "PARALLEL", dict(ekya.PARALLEL))
    monkeypatch.setattr(ekya, "BELOW_A_MIN", {})
    run, again = tmp_path / "run", tmp_path / "again"
    assert ekya.main(["--out", str(run)]) == 0
    again.mkdir()
    shutil.copy(run / "ekya-runs.json", again / "ekya-runs.json")
    assert ekya.main(["--render-only", "--out", str(again)]) == 0
    figures = sorted(name for name, kind in ekya.OUTPUTS.items() if kind == "figure")
    assert len(figures) == 7
    for name in figures:
        assert (run / name).read_bytes() == (again / name).read_bytes(), name
    assert (run / "ekya.md").read_text() == (again / "ekya.md").read_text()


@pytest.mark.parametrize(
    ("ablation", "noise_drop", "holds"),
    [
        ({"as in the scenario": 0.006, "x2": 0.004}, {"as in the scenario": 0.017}, (True, True)),
        ({"as in the scenario": 0.006, "x2": -0.002}, {"x0.5": 0.031}, (False, False)),
    ],
)
def test_the_4_gpu_claims_hold_only_across_the_sweep(ablation, noise_drop, holds) -> None:
    """Fig. 10a's margin and Fig. 11b's drop hold at the scenario's inputs here (+0.6 and 1.7
    points); each counts as holding only if it also holds at every point of (g), and where it
    fails there the reason names the point and its value."""
    from edgegym.reproduce.ekya_claims import (
        FIXEDCONFIG,
        _ablation_claim,
        _Context,
        _noise_claim,
    )

    uniform = {1: 0.45, 2: 0.55, 4: 0.70, 8: 0.78, 16: 0.79}
    b = _fig8({1: 0.47, 2: 0.60, 4: 0.756, 8: 0.79, 16: 0.80}, uniform)
    b["acc"]["ekya-fixedres"] = {4: (0.75, 0.0)}
    b["acc"][FIXEDCONFIG] = {4: (0.74, 0.0)}
    fa = {
        g: dict.fromkeys(
            ["as in the scenario", "oracle", "exact estimates (error 0)", "best uniform"], 0.5
        )
        for g in (1, 4, 8)
    }
    g = {"ablation": ablation, "noise_drop": noise_drop}
    h = {"acc": {1: dict.fromkeys(ekya.SEARCH, (0.5, 0.0))}}
    e = {"noise": [0.0, 0.2], "acc": [(0.767, 0.0), (0.75, 0.0)]}
    ctx = _Context(b, {"acc": fa}, g, h)
    ablation_claim, noise_claim = _ablation_claim(ctx, b), _noise_claim(ctx, e)
    assert ablation_claim.edgegym_value == 0.6 and noise_claim.edgegym_value == 1.7
    assert (ablation_claim.holds, noise_claim.holds) == holds
    if not holds[0]:
        assert ablation_claim.why == "fails at 1 of 2 points of the sweep (g): x2: -0.2"
        assert noise_claim.why == "fails at 1 of 1 points of the sweep (g): x0.5: +3.1"


@pytest.mark.parametrize("factor", [1.0, *TABLE1_DEMANDS])
def test_table1_demands_keep_fig4s_accuracy_at_the_uniform_share(factor: float) -> None:
    """Fig. 4: at the uniform scheduler's 0.75 GPU inference keeps x0.75 (65% -> 49%): the
    demands Fig. 4's claims are also judged at must give that, as the scenario's does."""
    from edgegym.reproduce.ekya_inputs import scaled_demand

    table1 = load("ekya-table1")
    configs = scaled_demand(table1, factor)["inference_configs"]
    assert [c["frame_sampling"] for c in configs] == [
        c["frame_sampling"] for c in table1["inference_configs"]
    ]
    sustained = [c["accuracy_factor"] for c in configs if c["share"] <= 0.75 + 1e-12]
    assert max(sustained) == 0.75


@pytest.mark.parametrize(("thief_at_1_5", "holds"), [(0.71, True), (0.52, False)])
def test_fig4_claims_hold_only_at_every_demand_fig4_allows(thief_at_1_5, holds) -> None:
    """The thief's 73% is judged with the scenario's full-rate demand and at the ends of the
    range Fig. 4 allows; a point outside the rule fails the claim and is named (a saved run
    from before the drift points names its demand points by their factor alone)."""
    from edgegym.reproduce.ekya_claims import _table1_claims

    t1 = {
        "thief": 0.705,
        "uniform": 0.552,
        "sweep": {
            "0.8": {"thief": 0.754, "uniform": 0.552},
            "1.5": {"thief": thief_at_1_5, "uniform": 0.552},
        },
    }
    thief, uniform = _table1_claims(t1)
    assert uniform.holds and "demand x0.8: 55.2, demand x1.5: 55.2" in uniform.test
    assert "drift" not in uniform.test  # this run has no drift points
    assert thief.holds is holds and thief.edgegym_value == 70.5
    if not holds:
        assert thief.why.startswith("it is 52.0 at demand x1.5; demand: the full-rate")
        assert "x0.8" not in thief.why and "drift" not in thief.why


def test_fig4_claims_fail_at_a_drift_point_and_name_it() -> None:
    """The drift between the two windows is swept too: a claim that holds at every demand but
    not at a drift point fails, and its reason names that point and that input only."""
    from edgegym.reproduce.ekya_claims import _table1_claims

    t1 = {"thief": 0.705, "uniform": 0.552, "sweep": {}}
    for label, _ in ekya_inputs.table1_variants(load("ekya-table1")).items():
        t1["sweep"][label] = {"thief": 0.70, "uniform": 0.552}
    t1["sweep"]["drift 16 points"]["uniform"] = 0.495
    thief, uniform = _table1_claims(t1)
    assert thief.holds and not uniform.holds
    assert "drift 4 points: 55.2, drift 16 points: 49.5" in uniform.test
    assert uniform.why.startswith("it is 49.5 at drift 16 points; drift: the accuracy")
    assert "demand" not in uniform.why


def test_table1_drifts_are_the_default_scenarios_range() -> None:
    """Fig. 4's example is judged at the ends of the range ekya-cityscapes draws the drift
    between windows from; the two stay equal, and each point sets that drift alone."""
    assert list(ekya_inputs.TABLE1_DRIFTS) == load("ekya-cityscapes")["drift"]["drift"]
    table1 = load("ekya-table1")
    variants = ekya_inputs.table1_variants(table1)
    assert list(variants) == ["demand x0.8", "demand x1.5", "drift 4 points", "drift 16 points"]
    for d in ekya_inputs.TABLE1_DRIFTS:
        changed = load("ekya-table1", **variants[f"drift {100 * d:g} points"])
        assert changed["drift"]["drift"] == d
        assert all(changed[k] == table1[k] for k in table1.data if k != "drift")

"""``python -m edgegym.reproduce.migrator --render-only``: report and claims from saved runs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from edgegym.baselines.mig import MPS_SHARES
from edgegym.journal import job_key
from edgegym.reproduce import migrator, migrator_claims, migrator_report, migrator_workloads
from edgegym.reproduce.claims import load

SAVED = Path(__file__).resolve().parents[1] / "docs" / "reproduction" / "migrator-runs.json"


def test_render_only_writes_the_report_and_the_claims(tmp_path: Path) -> None:
    shutil.copy(SAVED, tmp_path / "migrator-runs.json")
    assert migrator.main(["--render-only", "--out", str(tmp_path)]) == 0
    report = (tmp_path / "migrator.md").read_text()
    assert "## Pre-initialisation" in report and "## Claims" in report
    claims = [c for c in load(tmp_path) if c.paper == "migrator"]
    held = [c for c in claims if c.role == "held-out"]
    assert len(held) >= 3
    assert any(c.role == "calibration" for c in claims)
    assert all(c.holds or c.why for c in claims)
    figures = {c.figure for c in held}
    assert {"Fig. 7", "§5.2", "Fig. 9", "Fig. 10"} <= figures


def test_a_tiny_full_run_judges_claims_across_the_sweeps(tmp_path: Path, monkeypatch) -> None:
    """Every experiment and sweep runs (tiny episodes, in this process), the report
    has the MPS, forecaster and robustness sections and the sweep figure, and a held-out claim
    holds only where it holds at every sweep point. A smoke run: its claims are not counted."""
    from edgegym.reproduce import migrator_calibration

    tiny = {"window_s": 40, "windows": 1, "data_fraction": 0.2}
    plain = migrator.scenario_overrides
    monkeypatch.setattr(
        migrator, "scenario_overrides", lambda w, p, ov: {**plain(w, p, ov), **tiny}
    )
    monkeypatch.setattr(migrator, "BASES", [0.5, 1.0, 10.0])
    monkeypatch.setattr(migrator, "ORACLE_WORKLOADS", ["w1"])
    monkeypatch.setattr(migrator_calibration, "calibration_claims", lambda: ([], {}))
    monkeypatch.setattr(migrator_report, "_calibration_section", lambda rows, claims: [])
    # Stopped after 40 episodes (a crash, a session that ends), then run again: it resumes.
    ran, limit = [], [40]

    def run_one(job, plain=migrator.run_one):
        if len(ran) == limit[0]:
            raise RuntimeError("stopped")
        ran.append(job_key(job))
        return plain(job)

    monkeypatch.setattr(migrator, "run_one", run_one)
    argv = ["--quick", "--seeds", "1", "--out", str(tmp_path), "--workers", "1"]
    with pytest.raises(RuntimeError, match="stopped"):
        migrator.main(argv)
    journal = tmp_path / "migrator-journal.jsonl"
    assert len(journal.read_text().splitlines()) == 1 + 40  # its header and 40 episodes
    first, limit[0] = set(ran), -1
    ran.clear()
    assert migrator.main(argv) == 0
    saved = json.loads((tmp_path / "migrator-runs.json").read_text())
    args = [saved[k] for k in ("workloads", "basis_workloads", "oracle_workloads")]
    jobs = [j for js in migrator._experiments(*args, range(1)).values() for j in js]
    assert sorted(ran) == sorted(k for j in jobs if (k := job_key(j)) not in first)
    assert not journal.exists()  # its episodes are in migrator-runs.json now
    # the experiments and ablations run before the sweeps, each part timed on its own
    parts = saved["elapsed_parts"]
    assert set(parts) == {"experiments", "sweeps", "calibration"}
    assert sum(parts.values()) == pytest.approx(saved["elapsed"], abs=0.01)
    report = (tmp_path / "migrator.md").read_text()
    assert "min (experiments and ablations " in report and ", robustness sweeps " in report
    for section in (
        "## MPS interference",
        "## Robustness sweeps",
        "MIGRator (level)",
        "### The MPS baselines on MIG instances (ablation)",
        "- **Two descriptions of PARIS**",
    ):
        assert section in report
    # PARIS's other description runs as an ablation, and the PARIS claims quote it
    assert {
        r["policy"]
        for r in json.loads((tmp_path / "migrator-runs.json").read_text())["rows"]["paris_static"]
    } == {migrator.STATIC_PARIS}
    assert "never reconfiguring during execution (`paris:static=true`)" in report
    assert (tmp_path / "migrator-sweeps.png").stat().st_size > 0
    runs = json.loads((tmp_path / "migrator-runs.json").read_text())["rows"]
    assert {f"sweep:{n}" for n in migrator.SWEEPS} <= set(runs)
    ekya = [r for r in runs["main"] if r["policy"] == "ekya-mig"]
    assert ekya and all(
        migrator.scenario_overrides(r["workload"], r["policy"], r["overrides"])["mps.interference"]
        for r in ekya
    )
    f = migrator_claims._facts(["w1", "w5", "w9"], ["w1"], ["w1"], runs)
    claims = migrator_claims._claims(["w1", "w5", "w9"], ["w1"], ["w1"], runs)
    held = [c for c in claims if c.role == "held-out"]
    saved = [c for c in load(tmp_path) if c.paper == "migrator" and c.role == "held-out"]
    assert saved and all(c.smoke for c in saved)  # a quick run: marked smoke, not counted
    for c in held:
        assert "every sweep point" in c.test
    # the MPS baselines hold MPS shares; the ablation puts them on MIG instances, and the
    # accuracy claims over them say what it measured
    on_mig = runs["on_mig"]
    assert {r["policy"] for r in on_mig} == set(migrator.MPS_POLICIES)
    assert all(r["overrides"] == {"mps.shares": 0} for r in on_mig)
    acc_claim = next(c for c in held if c.figure == "Fig. 8b" and "Astraea" in c.claim)
    assert acc_claim.holds or "on MIG instances instead of MPS shares" in acc_claim.why
    # a gain claim holds only if it holds at the default and at every sweep point
    c = next(c for c in held if c.figure == "Fig. 7" and "Ekya" in c.claim)
    points = migrator_claims._points(f, "good")
    gains = [migrator_claims._gain(t, "migrator", "ekya-mig") for _, t in points]
    assert c.holds == all(g > 0 and g >= 17 / 2 for g in gains)


def test_an_episode_records_when_its_retraining_jobs_end() -> None:
    """PARIS on W1 starts each window's jobs at the window start on the smallest instance that
    holds them (2 GPCs for Bert and ViT): each ends its GPU-seconds / that instance's speed
    into the window, plus the instance's set-up (a few seconds)."""
    from edgegym.families.mig import MIGReconfigEnv

    out = migrator.run_one(("w1", "paris", {}, 0))
    params = MIGReconfigEnv("migrator-w1").params
    spec, gpu_s = params.spec, params.profile.gpu_seconds[:, 0, 0]
    z = list(spec.catalogue.sizes).index(2)
    alone = float(np.mean(gpu_s / spec.size_train_speed[:, z]))
    assert alone <= out["retrain_finish_s"] <= alone + 10.0
    assert out["retrain_gpcs"] == pytest.approx(2.0)


def test_the_mps_baselines_hold_mps_shares_and_the_mig_based_ones_mig_instances() -> None:
    """Ekya and Astraea (MPS in the paper) run with MPS shares of the GPU, interference on and
    no pre-initialisation; ``mps.shares: 0`` puts them back on MIG instances (pre-initialised
    as the scenario says); MIGRator and PARIS hold MIG instances."""
    for p in migrator.MPS_POLICIES:
        ov = migrator.scenario_overrides("w1", p, {})
        assert ov["mps.shares"] == MPS_SHARES and ov["preinit"] is False
        assert ov["mps.interference"] is True
        on_mig = migrator.scenario_overrides("w1", p, {"mps.shares": 0})
        assert on_mig["mps.shares"] == 0 and "preinit" not in on_mig
    for p in ("migrator", "paris"):
        assert "mps.shares" not in migrator.scenario_overrides("w1", p, {})
    # Astraea's retraining takes the smallest share its job finishes in: less than a GPC
    out = migrator.run_one(("w1", "astraea", {}, 0))
    assert out["retrain_gpcs"] < 1.0
    assert migrator.run_one(("w1", "astraea", {"mps.shares": 0}, 0))["retrain_gpcs"] >= 1.0


def test_the_share_exponent_sweep_scales_every_models_exponent_up_to_linear() -> None:
    """``share_alpha_x`` rewrites each tenant's inference share exponent (capped at 1, linear),
    keeping the workload's trace level and persistence; a smaller exponent makes a small
    instance serve more of what the whole GPU serves."""
    from edgegym.families.mig import MIGReconfigEnv
    from edgegym.reproduce import migrator_workloads as mw
    from edgegym.workload.models import get_model

    half = migrator.scenario_overrides("w5", "paris", {"share_alpha_x": 0.5})
    linear = migrator.scenario_overrides("w5", "paris", {"share_alpha_x": 100.0})
    for ov, want in ((half, lambda a: 0.5 * a), (linear, lambda a: 1.0)):
        assert [t["profile"]["share_alpha"] for t in ov["tenants"]] == [
            want(get_model(t["model"]).share_alpha) for t in ov["tenants"]
        ]
        assert [t["arrival"]["rate"] for t in ov["tenants"]] == [mw.RATE] * 2
    rates = [MIGReconfigEnv("migrator-w5", **ov).params.spec.size_rate for ov in (half, {}, linear)]
    one_gpc = [r[:, 0] / r[:, -1] for r in rates]  # a 1-GPC instance over the whole GPU
    assert np.all(one_gpc[0] > one_gpc[1]) and np.all(one_gpc[1] > one_gpc[2])
    assert one_gpc[2] == pytest.approx(1 / 7)


def test_the_slo_and_ceiling_sweeps_rewrite_only_their_own_field() -> None:
    """``slo_x`` scales every tenant's SLO and ``ceiling_error_x`` the error its ceiling leaves;
    at x1 the tenants are the workload file's. At SLO x0.5 a 'High' model no longer meets its
    SLO on one GPC at batch 1, which it does at the file's SLO."""
    from edgegym.families.mig import MIGReconfigEnv
    from edgegym.reproduce import migrator_workloads as mw
    from edgegym.scenarios import load

    file_tenants = load("migrator-w1")["tenants"]
    for t, f in zip(mw.tenants("w1"), file_tenants, strict=True):
        assert {k: f[k] for k in t} == t  # the file's fields, equal values
    tight = migrator.scenario_overrides("w1", "paris", {"slo_x": 0.5})["tenants"]
    worse = migrator.scenario_overrides("w1", "paris", {"ceiling_error_x": 2.0})["tenants"]
    for t, f in zip(tight, file_tenants, strict=True):
        assert t["slo_ms"] == 0.5 * f["slo_ms"] and t["ceiling"] == f["ceiling"]
    for t, f in zip(worse, file_tenants, strict=True):
        assert t["ceiling"] == pytest.approx(1 - 2 * (1 - f["ceiling"]))
        assert t["slo_ms"] == f["slo_ms"] and t["arrival"] == f["arrival"]
    one_gpc = [
        MIGReconfigEnv("migrator-w1", **ov).params.spec.size_rate[:, 0]
        for ov in ({}, {"tenants": tight})
    ]
    assert np.all(one_gpc[0] > 0) and np.all(one_gpc[1] == 0)


def test_the_dispersion_sweep_scales_every_log_std_of_both_traces() -> None:
    """``dispersion_x`` scales the Azure-like trace's ``sigma`` and ``jitter`` and the
    Alibaba-like trace's ``level_sigma`` and ``sigma`` from the generators' defaults, leaves the
    level and recurrence as the files have them, and the counts of an episode swing more."""
    from edgegym.families.mig import MIGReconfigEnv
    from edgegym.scenarios import load
    from edgegym.workload.generators import AlibabaLike, AzureLike, trace_stats

    file_tenants = load("migrator-w1")["tenants"]
    wide = migrator.scenario_overrides("w1", "paris", {"dispersion_x": 2.0})["tenants"]
    base = {"alibaba": AlibabaLike(), "azure": AzureLike()}
    for t, f in zip(wide, file_tenants, strict=True):
        kind = f["arrival"]["kind"]
        fields = migrator_workloads.DISPERSION_FIELDS[kind]
        for name in fields:
            assert t["arrival"][name] == pytest.approx(2.0 * getattr(base[kind], name))
        rest = {k: v for k, v in t["arrival"].items() if k not in fields}
        assert rest == f["arrival"]
    cv = []
    for ov in ({}, {"tenants": wide}):
        procs = MIGReconfigEnv("migrator-w1", **ov).params.spec.arrivals
        rng = np.random.default_rng(0)
        cv.append([trace_stats(p.counts(20_000, 1.0, rng))["cv"] for p in procs])
    assert np.all(np.array(cv[1]) > 1.3 * np.array(cv[0]))


def test_fig3_counts_every_second_of_a_window_once() -> None:
    """Fig. 3's check assigns each of a window's 200 seconds to its best splits (ties share a
    second), and its distance is 0 on the paper's own table and 1 on a table with no split in
    common; at the workloads' level every split is best for some seconds, as in Fig. 3."""
    from edgegym.reproduce import migrator_calibration as mc

    best = mc.fig3_best(windows=4)
    assert sum(best.values()) == pytest.approx(200.0)
    assert min(best.values()) > 0
    assert mc._fig3_distance(dict(mc.FIG3_BEST)) == 0.0
    lopsided = dict.fromkeys(mc.FIG3_BEST, 0.0)
    assert mc._fig3_distance({**lopsided, "6-1": 200.0}) == pytest.approx(1 - 16 / 200)


@pytest.mark.parametrize("library_x", [1.0, *migrator_workloads.OVERHEAD_SPLIT_SWEEP])
def test_the_overhead_split_points_keep_a_new_placements_cost(library_x: float) -> None:
    """The robustness sweep moves Fig. 5's synthesised split, not its calibrated total: an
    instance built anew costs what it did, one handed to another task pays the scaled library
    load, a task that only gives instances up the scaled destruction; x1 is the scenario."""
    from edgegym.families.mig.params import MIGSpec
    from edgegym.scenarios import load as load_scenario

    base = MIGSpec.from_scenario(load_scenario("migrator-w1"))
    ov = migrator_workloads.overhead_split(library_x)
    spec = MIGSpec.from_scenario(load_scenario("migrator-w1", **ov))
    np.testing.assert_allclose(spec.overhead_new_s, base.overhead_new_s)
    np.testing.assert_allclose(
        spec.overhead_reload_s - base.overhead_reload_s, 2.0 * (library_x - 1.0)
    )
    assert spec.destroy_s == pytest.approx(0.5 * (4.0 - 2.0 * library_x) / 2.0)
    assert ov["overhead.create_s"] == pytest.approx(3 * ov["overhead.destroy_s"])
    with pytest.raises(ValueError, match="no creation time"):
        migrator_workloads.overhead_split(2.0)


def test_the_accuracy_model_points_scale_its_synthesised_numbers_only() -> None:
    """``class difficulty`` scales every dataset's accuracy lost per doubling of the classes,
    so the retrained targets fall by that factor times the known answer
    ``difficulty * log2(classes / pretrain)``; ``retraining data`` scales NC-CORe50's frames
    and NC-20-Newsgroups' epochs, so those tenants' jobs cost that factor more, while
    NC-CIFAR-10's (the fitted ``retrain_scale``'s dataset) and every accuracy stay."""
    from edgegym.families.mig.datasets import NC_DATASETS
    from edgegym.families.mig.params import MIGSpec
    from edgegym.reproduce.migrator_setup import ALL_POLICY_SWEEPS, SWEEPS
    from edgegym.scenarios import load as load_scenario

    for name in (
        "class difficulty x0.5",
        "class difficulty x2",
        "retraining data x2",
        "class drop x0.5",
    ):
        assert name in SWEEPS and name in ALL_POLICY_SWEEPS

    def profile(key: str, point: str | None = None):
        ov = migrator.scenario_overrides(key, "migrator", SWEEPS[point] if point else {})
        return MIGSpec.from_scenario(load_scenario(f"migrator-{key}", **ov)).profile()

    # W3: ViT and ConvNeXt on NC-CIFAR-10; W13: ViT and ResNet50 on NC-CORe50; W1: Bert on
    # NC-20-Newsgroups beside ViT on NC-CIFAR-10.
    for key, data in (("w3", "nc-cifar10"), ("w13", "nc-core50")):
        ds = NC_DATASETS[data]
        base, hard = profile(key), profile(key, "class difficulty x2")
        windows = base.post_acc.shape[1]
        drop = ds.difficulty * np.log2(ds.classes() / ds.pretrain_classes)[:windows]
        # data_fraction 1: the post-retraining accuracy is the target itself
        np.testing.assert_allclose(base.post_acc[..., 0] - hard.post_acc[..., 0], [drop, drop])
        np.testing.assert_array_equal(hard.gpu_seconds, base.gpu_seconds)

    base, more = profile("w13"), profile("w13", "retraining data x2")
    np.testing.assert_allclose(more.gpu_seconds, 2 * base.gpu_seconds)
    np.testing.assert_array_equal(more.post_acc, base.post_acc)
    base, less = profile("w1"), profile("w1", "retraining data x0.5")
    np.testing.assert_allclose(less.gpu_seconds[0], 0.5 * base.gpu_seconds[0])  # Bert, epochs
    np.testing.assert_array_equal(less.gpu_seconds[1], base.gpu_seconds[1])  # ViT, NC-CIFAR-10

    # The new-class drop x0.5: every window starts with half the loss (no floor binds there),
    # the retrained accuracies and the jobs stay.
    base, half = profile("w3"), profile("w3", "class drop x0.5")
    np.testing.assert_allclose(half.drift[:, 1:], 0.5 * base.drift[:, 1:])
    ceil = base.start_acc / (1 - NC_DATASETS["nc-cifar10"].drop)
    np.testing.assert_allclose(half.start_acc, ceil * (1 - NC_DATASETS["nc-cifar10"].drop / 2))
    np.testing.assert_array_equal(half.post_acc, base.post_acc)
    np.testing.assert_array_equal(half.gpu_seconds, base.gpu_seconds)


def test_a_scenarios_datasets_section_is_checked() -> None:
    """``datasets`` keys are the bundled datasets and its fields are ranged: a typo or a bad
    value is one line naming the field."""
    from edgegym.scenarios import ScenarioError
    from edgegym.scenarios import load as load_scenario

    for key, value, words in (
        ("datasets.nc-cifar100.difficulty", 0.1, "datasets.nc-cifar100"),
        ("datasets.nc-cifar10.epoch", 2, "epoch"),
        ("datasets.nc-cifar10.difficulty", -0.1, "difficulty"),
        ("datasets.nc-core50.samples_per_class", 0, "samples_per_class"),
        ("datasets.nc-20news.epochs", ".nan", "epochs"),
        ("datasets.nc-cifar10.drop", 1.0, "drop"),
    ):
        with pytest.raises(ScenarioError, match=words):
            load_scenario("migrator-w1", **{key: value})


def test_a_near_miss_names_each_seeds_episode() -> None:
    """The batch-4 claim's losses give MIGRator minus the winner in each seed's episode, and
    the basis claim the best basis in each seed's episodes: a verdict the seeds disagree on is
    within the episodes' noise (hand-built rows: W1 lost in seed 0 only, bases split)."""
    workloads = ["w1", "w2"]
    rows = []
    for seed, (mig_w1, ekya_w1) in enumerate(((0.50, 0.60), (0.58, 0.56))):
        for policy in migrator_claims.POLICIES:
            for w in workloads:
                value = {"migrator": mig_w1, "ekya-mig": ekya_w1}.get(policy, 0.1)
                value = value if w == "w1" else (0.9 if policy == "migrator" else 0.2)
                rows.append({"policy": policy, "workload": w, "seed": seed, "goodput": value})
    tab = migrator_claims._table(rows, "goodput", migrator_claims.POLICIES, workloads)
    seeds = migrator_claims._by_seed(rows, "goodput", migrator_claims.POLICIES, workloads)
    text = migrator_claims._losses(tab, workloads, seeds)
    assert (
        text == "MIGRator is not highest in W1 (Ekya 58.0 vs 54.0; per seed -10.00 / +2.00 points)"
    )
    assert "per seed" not in migrator_claims._losses(tab, workloads)

    basis_rows = [
        {
            "policy": "migrator",
            "workload": w,
            "seed": seed,
            "goodput": g,
            "overrides": {"basis_s": b},
        }
        for w in workloads
        for seed, best in ((0, 0.5), (1, 3.0))
        for b, g in ((0.5, 0.7), (1.0, 0.6), (3.0, 0.65))
        for g in [0.8 if b == best else g]
    ]
    assert migrator_claims._basis_best_by_seed(basis_rows, workloads) == {0: 0.5, 1: 3.0}
    assert migrator_claims._seed_bases({0: 0.5, 1: 3.0}) == " (per seed: 0.5 s, 3 s)"
    assert migrator_claims._seed_bases({0: 0.5}) == ""


def test_every_synthesised_input_of_the_workload_files_is_swept() -> None:
    """Each provenance entry of the 16 workload files that says synthesised or a choice names
    sweep points in ``SWEPT_INPUTS`` (a new synthesised field without a sweep fails here), and
    every point named there is one the reproduction runs."""
    from edgegym.provenance import source_of
    from edgegym.reproduce.migrator_setup import SWEEPS, SWEPT_INPUTS
    from edgegym.scenarios import load as load_scenario

    for key in migrator_workloads.WORKLOADS:
        raw = load_scenario(f"migrator-{key}").data
        for field in raw["provenance"]:
            kind = (source_of(raw, field) or "").split(":")[0]
            if kind in ("synthesised", "choice"):
                assert field in SWEPT_INPUTS, (key, field)
    for field, points in SWEPT_INPUTS.items():
        assert points and set(points) <= set(SWEEPS), field

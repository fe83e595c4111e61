"""The claims table: records, merging per paper, rendering, the held-out counts, and smoke
runs (``--quick``), whose claims are marked and never counted."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from edgegym.outputs import is_edgegym_output
from edgegym.reproduce import __main__ as reproduce_main
from edgegym.reproduce import ekya, etf, migrator, srs
from edgegym.reproduce.claims import (
    ROBUSTNESS_FIGURE,
    Claim,
    holds_cell,
    in_smoke_run,
    load,
    panel_title,
    record,
    robustness_figure,
    row_label,
    smoke_run,
    summary,
    update,
    verdict_changes,
    verdict_grid,
)


def _claim(paper: str, holds: bool, value: float = 1.0, role: str = "held-out") -> Claim:
    return Claim(
        paper=paper,
        figure="Fig. 1",
        claim=f"{paper} claim {value}",
        metric="points",
        paper_value=2.0,
        edgegym_value=value,
        role=role,  # type: ignore[arg-type]
        holds=holds,
        test="same sign",
        why="" if holds else "sweep in the report: the gap closes at 4 GPUs",
    )


def test_update_replaces_one_papers_records_and_renders(tmp_path: Path) -> None:
    update("etf", [_claim("etf", True), _claim("etf", False)], tmp_path)
    update("ekya", [_claim("ekya", True, role="calibration")], tmp_path)
    update("etf", [_claim("etf", True, 3.0)], tmp_path)
    claims = load(tmp_path)
    assert [(c.paper, c.edgegym_value) for c in claims] == [("ekya", 1.0), ("etf", 3.0)]
    data = json.loads((tmp_path / "claims.json").read_text())
    assert set(data["claims"][0]) >= {
        "paper",
        "figure",
        "claim",
        "metric",
        "paper_value",
        "edgegym_value",
        "role",
        "holds",
        "why",
    }
    readme = (tmp_path / "README.md").read_text()
    assert "| [Energy-Time Fairness (SEC'23)](etf.md) | 1 | 1 | 0 | 0 |" in readme
    assert "| [Ekya (NSDI'22)](ekya.md) | 0 | 0 | 1 | 1 |" in readme


def test_runs_on_other_scenarios_are_listed_not_counted(tmp_path: Path) -> None:
    """A reproduction written to a folder of the table's (another scenario) is listed with its
    own count and stays out of the main table's."""
    update("ekya", [_claim("ekya", True), _claim("ekya", False)], tmp_path / "measured")
    update("ekya", [_claim("ekya", False)], tmp_path)
    readme = (tmp_path / "README.md").read_text()
    assert "| [Ekya (NSDI'22)](ekya.md) | 1 | 0 | 0 | 0 |" in readme
    assert "- [measured](measured/ekya.md): Ekya (NSDI'22), 1 of 2 held-out claims hold" in readme
    assert [c.holds for c in load(tmp_path)] == [False]


def test_a_claim_that_fails_must_say_why() -> None:
    with pytest.raises(ValueError, match="say why"):
        Claim("srs", "Fig. 3", "c", "m", 1.0, 0.0, "held-out", False)
    with pytest.raises(ValueError, match="paper must be one of"):
        Claim("decima", "Fig. 3", "c", "m", 1.0, 0.0, "held-out", True)
    with pytest.raises(ValueError, match="finite"):
        Claim("srs", "Fig. 3", "c", "m", 1.0, float("nan"), "held-out", True)
    with pytest.raises(ValueError, match="another paper"):
        update("srs", [_claim("etf", True)], "/nonexistent-never-written")


def test_a_broken_table_is_named_not_overwritten(tmp_path: Path) -> None:
    (tmp_path / "claims.json").write_text("{not json")
    with pytest.raises(ValueError, match="not a claims table"):
        update("etf", [_claim("etf", True)], tmp_path)
    assert (tmp_path / "claims.json").read_text() == "{not json"


def _fake_papers(
    monkeypatch, ran: list[str], fail: str | None = None, argvs: dict | None = None
) -> None:
    """``all`` runs stand-ins: each records one held-out claim that holds (``fail`` raises)
    and, in ``argvs``, the arguments it was given."""

    def fake(paper: str):
        def main(argv: list[str]) -> int:
            ran.append(paper)
            if argvs is not None:
                argvs[paper] = argv
            if paper == fail:
                raise RuntimeError("boom")
            update(paper, [_claim(paper, True)], argv[argv.index("--out") + 1])
            return 0

        return type("M", (), {"main": staticmethod(main), "OUTPUTS": {f"{paper}.md": "report"}})

    def import_module(name: str):
        return fake(name.rsplit(".", 1)[1])

    monkeypatch.setattr(reproduce_main.importlib, "import_module", import_module)


def test_all_keeps_going_when_one_reproduction_fails(tmp_path, monkeypatch, capsys) -> None:
    ran: list[str] = []
    _fake_papers(monkeypatch, ran, fail="ekya")
    code = reproduce_main.main(["all", "--out", str(tmp_path)])
    assert code == 1 and ran == ["etf", "ekya", "srs", "migrator"]
    err = capsys.readouterr()
    assert "ekya failed: RuntimeError: boom" in err.err
    assert "migrator: 1/1 held-out claims hold" in err.out
    assert "ekya: failed (above)" in err.out  # not a count of records it did not write
    assert {c.paper for c in load(tmp_path)} == {"etf", "srs", "migrator"}
    assert not any(c.smoke for c in load(tmp_path))


def test_all_from_another_first_seed_reruns_the_seeded_papers_beside_the_table(
    tmp_path, monkeypatch, capsys
) -> None:
    """``all --first-seed N`` reruns ekya, srs and migrator on seeds N.. into
    docs/reproduction/seeds-N and leaves etf (no random input) and the table alone."""
    monkeypatch.chdir(tmp_path)
    ran: list[str] = []
    _fake_papers(monkeypatch, ran)
    assert reproduce_main.main(["all", "--first-seed", "5"]) == 0
    assert ran == ["ekya", "srs", "migrator"]
    assert {c.paper for c in load(tmp_path / "docs/reproduction/seeds-5")} == {
        "ekya",
        "srs",
        "migrator",
    }
    assert not (tmp_path / "docs/reproduction/claims.json").exists()
    assert "etf: not rerun (its episodes do not depend on the seed)" in capsys.readouterr().out


def test_all_render_only_renders_the_saved_papers_and_reruns_etf(
    tmp_path, monkeypatch, capsys
) -> None:
    """``all --render-only`` asks ekya, srs and migrator to render from their saved runs and
    reruns etf (it saves none); a missing runs file stops it before any paper runs, naming
    the file."""
    ran: list[str] = []
    argvs: dict[str, list[str]] = {}
    _fake_papers(monkeypatch, ran, argvs=argvs)
    for paper in ("ekya", "srs"):
        (tmp_path / f"{paper}-runs.json").write_text("{}")
    assert reproduce_main.main(["all", "--render-only", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert ran == [] and f"no saved runs in {tmp_path}/migrator-runs.json;" in err
    (tmp_path / "migrator-runs.json").write_text("{}")
    assert reproduce_main.main(["all", "--render-only", "--out", str(tmp_path)]) == 0
    assert ran == ["etf", "ekya", "srs", "migrator"]
    assert {p for p, argv in argvs.items() if "--render-only" in argv} == {
        "ekya",
        "srs",
        "migrator",
    }
    assert "srs: 1/1 held-out claims hold" in capsys.readouterr().out


def test_all_render_only_renders_the_runs_listed_beside_the_table_first(
    tmp_path, monkeypatch, capsys
) -> None:
    """A folder inside --out that holds saved runs (another scenario, a seed check) is
    rendered too, each saved paper of it alone and before the table's own papers, so the
    table lists it as rendered now; a folder without saved runs is left alone."""
    ran: list[str] = []
    calls: list[tuple[str, str]] = []
    _fake_papers(monkeypatch, ran)
    plain = reproduce_main._run_paper

    def run_paper(paper, argv, name):
        calls.append((paper, argv[argv.index("--out") + 1]))
        return plain(paper, argv, name)

    monkeypatch.setattr(reproduce_main, "_run_paper", run_paper)
    for paper in ("ekya", "srs", "migrator"):
        (tmp_path / f"{paper}-runs.json").write_text("{}")
    (tmp_path / "seeds-7").mkdir()
    (tmp_path / "seeds-7" / "srs-runs.json").write_text("{}")
    (tmp_path / "notes").mkdir()
    assert reproduce_main.main(["all", "--render-only", "--out", str(tmp_path)]) == 0
    seeds = str(tmp_path / "seeds-7")
    assert calls[0] == ("srs", seeds) and [c[1] for c in calls[1:]] == [str(tmp_path)] * 4
    assert "srs in " + seeds + ": 1/1 held-out claims hold" in capsys.readouterr().out
    assert "- [seeds-7](seeds-7/srs.md)" in (tmp_path / "README.md").read_text()


def test_a_quick_runs_claims_are_smoke_checks_not_counted(tmp_path, monkeypatch, capsys) -> None:
    ran: list[str] = []
    _fake_papers(monkeypatch, ran)
    assert reproduce_main.main(["all", "--out", str(tmp_path), "--quick"]) == 0
    out = capsys.readouterr().out
    for paper in ("etf", "ekya", "srs", "migrator"):
        assert f"{paper}: smoke run: 1 claim checked on a reduced sample; not counted" in out
    assert "held-out claims hold" not in out
    claims = load(tmp_path)
    assert len(claims) == 4 and all(c.smoke for c in claims)
    assert all(
        r["smoke"] is True for r in json.loads((tmp_path / "claims.json").read_text())["claims"]
    )
    readme = (tmp_path / "README.md").read_text()
    assert "**Smoke run: 4 claims checked on a reduced sample; not counted.**" in readme
    assert "| [Energy-Time Fairness (SEC'23)](etf.md) | 1 | smoke | 0 | smoke |" in readme
    assert "| yes |" not in readme  # no row reads as a result


def test_a_quick_run_does_not_write_the_committed_claims_table(tmp_path, monkeypatch) -> None:
    """By default it writes to runs/reproduction-quick; pointed at a full run's table it
    refuses before any work, and the table stays as it was."""
    monkeypatch.chdir(tmp_path)
    docs = tmp_path / "docs" / "reproduction"
    update("etf", [_claim("etf", True)], docs)  # a full run's table, as committed
    before = (docs / "claims.json").read_text()
    ran: list[str] = []
    _fake_papers(monkeypatch, ran)
    assert reproduce_main.main(["all", "--quick"]) == 0
    assert (docs / "claims.json").read_text() == before
    quick = load(tmp_path / "runs" / "reproduction-quick")
    assert len(quick) == 4 and all(c.smoke for c in quick)
    ran.clear()
    assert reproduce_main.main(["all", "--quick", "--out", str(docs), "--force"]) == 2
    assert ran == [] and (docs / "claims.json").read_text() == before
    with smoke_run(), pytest.raises(ValueError, match="holds the claims of a full run"):
        update("srs", [_claim("srs", True)], docs)
    assert (docs / "claims.json").read_text() == before


@pytest.mark.parametrize(
    ("module", "runs"),
    [(srs, "_run_all"), (migrator, "_run_and_save"), (ekya, "_sections"), (etf, "_run")],
)
def test_a_quick_reproduction_refuses_a_full_runs_folder(
    tmp_path, module, runs, monkeypatch, capsys
) -> None:
    update("etf", [_claim("etf", True)], tmp_path)

    def run(*args, **kwargs):
        raise AssertionError("refused before any work")

    monkeypatch.setattr(module, runs, run)
    assert module.main(["--quick", "--out", str(tmp_path)]) == 2
    assert "a quick (smoke) run does not overwrite them" in capsys.readouterr().err


def test_smoke_marks_claims_made_inside_it_only() -> None:
    assert not _claim("etf", True).smoke
    with smoke_run(False):
        assert not _claim("etf", True).smoke
    with smoke_run():
        c = _claim("etf", False)
        assert c.smoke and record(c)["smoke"] is True
        assert summary([c]) == "smoke run: 1 claim checked on a reduced sample; not counted"
        assert holds_cell(c) == "smoke"
    full = _claim("etf", True)
    assert "smoke" not in record(full) and summary([full]) == "1/1 held-out claims hold"


@pytest.mark.parametrize(("module", "runs"), [(ekya, "_sections"), (etf, "_run")])
def test_every_reproduction_takes_quick_itself(tmp_path, module, runs, monkeypatch) -> None:
    """``python -m edgegym.reproduce PAPER --quick`` works for every paper: the run is a smoke
    run (its claims marked) written to runs/reproduction-quick by default."""
    monkeypatch.chdir(tmp_path)
    seen: list[tuple[bool, bool, bool]] = []

    def run(*args, **kwargs):  # where the run writes: the folder is made (and locked) by now
        quick, docs = Path("runs/reproduction-quick"), Path("docs/reproduction")
        seen.append((in_smoke_run(), quick.is_dir(), docs.exists()))
        raise RuntimeError("stop after the checks")

    monkeypatch.setattr(module, runs, run)
    with pytest.raises(RuntimeError, match="stop after the checks"):
        reproduce_main.main([module.__name__.rsplit(".", 1)[1], "--quick"])
    assert seen == [(True, True, False)]
    assert not in_smoke_run()


def test_the_committed_table_gives_reasons_only_to_failing_claims() -> None:
    """Every claim that fails in ``docs/reproduction/claims.json`` says why, and none that
    holds carries a reason (a reason on a holding claim reads as a failure in the records)."""
    claims = load(Path(__file__).resolve().parents[1] / "docs" / "reproduction")
    assert {c.paper for c in claims} == {"ekya", "etf", "migrator", "srs"}
    wrong = [f"{c.paper}: {c.claim}" for c in claims if bool(c.why) == c.holds]
    assert not wrong, wrong


def test_runs_on_other_seeds_name_the_claims_whose_verdict_differs(tmp_path: Path) -> None:
    """A seed check (or another scenario's run) lists the held-out claims whose verdict is not
    the committed run's, both ways, and says so when every verdict is the same."""
    base = [_claim("ekya", True, 1.0), _claim("ekya", False, 2.0), _claim("ekya", True, 3.0)]
    update("ekya", base, tmp_path)
    moved = [_claim("ekya", False, 1.0), _claim("ekya", True, 2.0), _claim("ekya", True, 3.0)]
    update("ekya", moved, tmp_path / "seeds-100")
    update("ekya", base, tmp_path / "seeds-200")
    update("ekya", base, tmp_path)  # re-render the table's README with both folders there
    readme = (tmp_path / "README.md").read_text()
    line = next(x for x in readme.splitlines() if x.startswith("- [seeds-100]"))
    assert "2 of 3 held-out claims hold; a different verdict on 2:" in line
    assert "'ekya claim 1.0' (no; below: yes)" in line
    assert "'ekya claim 2.0' (yes; below: no)" in line and "claim 3.0" not in line
    line = next(x for x in readme.splitlines() if x.startswith("- [seeds-200]"))
    assert line.endswith("the same verdict as below on every one")


@pytest.mark.parametrize("module", [ekya, migrator, srs])
def test_a_run_from_another_first_seed_writes_beside_the_table(module) -> None:
    """``--first-seed N`` (N > 0) defaults to docs/reproduction/seeds-N; 0 to the table
    itself; a given --out wins; a negative seed is one error line, before any work."""
    from edgegym.reproduce import claims

    for argv, want in (
        ([], "docs/reproduction"),
        (["--first-seed", "100"], "docs/reproduction/seeds-100"),
        (["--first-seed", "100", "--out", "elsewhere"], "elsewhere"),
        (["--first-seed", "100", "--quick"], "runs/reproduction-quick"),
    ):
        ap = argparse.ArgumentParser()
        claims.add_first_seed_argument(ap)
        ap.add_argument("--out", default=None)
        ap.add_argument("--quick", action="store_true")
        assert claims.out_folder(ap.parse_args(argv)) == want
    assert module.main(["--first-seed", "-1"]) == 2


def test_the_episodes_start_at_the_first_seed() -> None:
    """Every job of a seed check runs on seeds N.. (never the committed run's 0..)."""
    jobs = srs._jobs("srs-edge-5apps", [{}], ["mrs", "pass"], 2, 100)
    assert sorted({j[3] for j in jobs}) == [100, 101]
    exp = migrator._experiments(["w1"], ["w1"], ["w1"], range(7, 9))
    assert {j[3] for js in exp.values() for j in js} == {7, 8}
    assert ekya.regenerate_command("ekya-cityscapes", 3, "docs/reproduction/seeds-100", 100) == (
        f"{ekya.PROG} --first-seed 100"
    )
    ekya.PARALLEL["seed"] = 100
    try:
        assert ekya._seeds_text(3) == "3 seeded episodes per point, seeds 100..102"
    finally:
        ekya.PARALLEL["seed"] = 0
    assert ekya._seeds_text(1) == "1 seeded episode per point, seed 0"


def test_a_run_says_which_verdicts_changed_against_the_table(tmp_path: Path, capsys) -> None:
    """Writing a paper's claims over its earlier records names every flipped, new and gone
    claim, and says so when every verdict stayed (with how many values moved); the first run
    of a paper and smoke runs compare nothing."""
    update("srs", [_claim("srs", True, 1.0), _claim("srs", False, 2.0)], tmp_path)
    assert "srs claims" not in capsys.readouterr().err  # nothing to compare with
    update("srs", [_claim("srs", True, 1.0), _claim("srs", False, 2.0)], tmp_path)
    table = tmp_path / "claims.json"
    assert f"srs claims in {table}: every verdict as before this run (0 values changed)" in (
        capsys.readouterr().err
    )
    flipped = dataclasses.replace(_claim("srs", False, 2.0), holds=True, why="", edgegym_value=3)
    update("srs", [flipped, _claim("srs", True, 4.0)], tmp_path)
    err = capsys.readouterr().err
    assert "3 verdict changes against the records before this run (1 value changed): " in err
    assert "'srs claim 2.0' holds now" in err
    assert "'srs claim 4.0' is new (holds)" in err and "'srs claim 1.0' is gone" in err
    assert verdict_changes(load(tmp_path), [dataclasses.replace(flipped, smoke=True)]) == ""


def test_a_claims_sweep_points_are_recorded_and_bind_its_verdict(tmp_path: Path) -> None:
    """``points`` holds a claim's verdict at each sweep point: a claim that holds must hold at
    every one, the records keep them (and leave them out where a claim has none), and a
    claims table written with them draws them as a grid."""
    with pytest.raises(ValueError, match="fails at sweep points: load x2"):
        dataclasses.replace(_claim("srs", True), points={"default": True, "load x2": False})
    with pytest.raises(ValueError, match="booleans"):
        dataclasses.replace(_claim("srs", True), points={"default": 1})
    swept = dataclasses.replace(
        _claim("srs", False), points={"default": True, "load x0.5": True, "load x2": False}
    )
    assert record(swept)["points"] == {"default": True, "load x0.5": True, "load x2": False}
    assert "points" not in record(_claim("srs", True))
    update("srs", [swept, _claim("srs", True, 2.0)], tmp_path)
    assert load(tmp_path)[0].points == swept.points
    assert is_edgegym_output(tmp_path / ROBUSTNESS_FIGURE, "figure")
    assert f"]({ROBUSTNESS_FIGURE})" in (tmp_path / "README.md").read_text()


def test_the_verdict_grid_puts_the_default_first_and_leaves_unjudged_points_empty() -> None:
    one_point = _claim("ekya", False)  # judged at the inputs as given only
    swept = dataclasses.replace(
        _claim("ekya", True, 2.0), points={"drift x2": True, "default": True}
    )
    other = dataclasses.replace(
        _claim("ekya", False, 3.0), points={"default": False, "demand x0.8": True}
    )
    names, grid = verdict_grid([one_point, swept, other])
    assert names == ["default", "drift x2", "demand x0.8"]
    expected = np.array([[0, np.nan, np.nan], [1, 1, np.nan], [0, np.nan, 1]])
    np.testing.assert_array_equal(grid, expected)


def test_a_long_claims_row_keeps_its_end_so_claims_that_differ_there_stay_apart() -> None:
    text = "Ekya's accuracy advantage over the uniform baselines grows to 29 points with more "
    one, two = (
        dataclasses.replace(_claim("ekya", False), figure="Fig. 6, §6.1", claim=text + end)
        for end in ("streams on 1 GPU", "streams on 2 GPUs")
    )
    assert row_label(one) != row_label(two)
    assert row_label(one).startswith("fails | Fig. 6: Ekya's accuracy")
    assert row_label(two).endswith("on 2 GPUs") and "..." in row_label(two)
    short = dataclasses.replace(_claim("ekya", True), claim="MRS decides in milliseconds")
    assert row_label(short) == "holds | Fig. 1: MRS decides in milliseconds"


def test_the_committed_table_holds_a_claim_only_where_it_holds_at_every_point() -> None:
    """Every held-out claim of ``docs/reproduction/claims.json`` judged across a sweep carries
    its verdict per point, the inputs as given among them (the robustness rule of the claims
    table); the ones judged at one point are those whose inputs no sweep moves."""
    claims = load(Path(__file__).resolve().parents[1] / "docs" / "reproduction")
    held = [c for c in claims if c.role == "held-out"]
    swept = [c for c in held if c.points]
    assert {c.paper for c in swept} == {"ekya", "etf", "migrator", "srs"}
    assert all("default" in c.points and len(c.points) > 1 for c in swept)
    assert all(c.holds == all(c.points.values()) for c in swept)
    assert all(not c.points for c in claims if c.role == "calibration")


def test_a_smoke_runs_grid_counts_no_claim() -> None:
    """A quick run's grid says smoke where a full run's says holds or fails, in every row and
    every panel title, as its table does."""
    with smoke_run():
        claims = [_claim("etf", True), _claim("etf", False, 2.0)]
    assert [row_label(c).split(" | ")[0] for c in claims] == ["smoke", "smoke"]
    assert panel_title("etf", claims).endswith("2 held-out claims, smoke run (not counted)")
    full = [_claim("etf", True), _claim("etf", False, 2.0)]
    assert [row_label(c).split(" | ")[0] for c in full] == ["holds", "fails"]
    assert panel_title("etf", full).endswith("1 of 2 held-out claims hold at every point")


@pytest.mark.parametrize("points", [1, 2, 30])
def test_the_grids_texts_fit_inside_the_figure_however_few_its_points(points: int) -> None:
    """The figure is as wide as its titles and row labels need, also for a single paper judged
    at one or two points (a quick run of one paper), where the grid alone is narrow."""
    import matplotlib.pyplot as plt

    names = ["default", *(f"input {i} x2" for i in range(points - 1))]
    long = "With three tenants the low-power A3 gets a disproportionately high time share"
    claims = [
        dataclasses.replace(
            _claim("etf", k % 2 == 0, float(k)),
            claim=f"{long} ({k})",
            points={n: True for n in names} if points > 1 else {},
        )
        for k in range(3)
    ]
    fig = robustness_figure(claims)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    box = fig.bbox
    texts = [fig._suptitle, *(ax.title for ax in fig.axes)]
    texts += [t for ax in fig.axes for t in ax.get_yticklabels()]
    for text in texts:
        extent = text.get_window_extent(renderer)
        assert extent.x0 >= box.x0 - 1 and extent.x1 <= box.x1 + 1, text.get_text()
    plt.close(fig)

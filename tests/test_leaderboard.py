"""The leaderboard end to end on a tiny configuration: every family, one scenario each, one
episode; markdown sections, figures, JSON written as it goes, re-rendering, resume, failures."""

from __future__ import annotations

import json

import pytest

from edgegym import leaderboard as lb
from edgegym.agents.policy import shipped_path
from edgegym.cli import main as cli_main

FAMILIES = ["continual", "mig", "energy", "dag"]


@pytest.fixture(scope="module")
def board(tmp_path_factory, tiny_sets):
    """One tiny leaderboard run shared by the tests below."""
    out = tmp_path_factory.mktemp("leaderboard")
    argv = ["--quick", "--episodes", "1", "--out", str(out), "--no-progress", *tiny_sets]
    assert lb.main(argv) == 0
    return out


def test_writes_markdown_json_and_one_figure_per_family(board):
    md = (board / "leaderboard.md").read_text()
    assert md.splitlines()[:2] == ["<!-- edgegym_output: report -->", "# Leaderboard"]
    assert "## Shipped PPO on each family's default scenario" in md
    for fam in FAMILIES:
        env_id = lb.families()[fam]
        scen = lb.default_scenario_of(fam)
        assert f"## {fam} — `{env_id}`" in md
        assert f"### {scen} (default)" in md
        assert f"![{fam}: mean return per policy and scenario](leaderboard-{fam}.png)" in md
        assert (board / f"leaderboard-{fam}.png").stat().st_size > 1000
    data = json.loads((board / "leaderboard.json").read_text())
    assert set(data["cells"]) == {f"{f}/{lb.default_scenario_of(f)}" for f in FAMILIES}
    for key, cell in data["cells"].items():
        fam = key.split("/")[0]
        names = [r["policy"] for r in cell["results"]]
        # Every registered policy of the family ran (or says why not), on the same seeds.
        assert set(names) | set(cell["skipped"]) == set(cell["policies"])
        assert set(lb.family_policies(fam)) <= set(cell["policies"])
        assert all(r["episodes"] == 1 and "error" not in r for r in cell["results"])
        assert cell["seeds"] == [0] and cell["overrides"]
        assert ("ppo" in cell["policies"]) == shipped_path(fam).is_file()
    assert data["runs"][-1]["wall_s"] > 0


def test_rows_show_ppo_or_not_shipped_and_the_gap(board):
    md = (board / "leaderboard.md").read_text()
    for fam in FAMILIES:
        section = md.split(f"## {fam} — ")[1].split("\n## ")[0]
        if shipped_path(fam).is_file():
            assert "| **ppo** |" in section
            assert "PPO − best baseline (" in section
            assert "timesteps" in section and "wall time" in section
        else:
            assert "ppo: not shipped" in section
            assert "**Shipped PPO**: not shipped" in section
    assert "| continual | ekya-cityscapes |" in md  # the summary row


def test_headroom_references_run_beside_the_baselines_but_never_count_as_one(board):
    data = json.loads((board / "leaderboard.json").read_text())
    md = (board / "leaderboard.md").read_text()
    summary = md.split("## Shipped PPO on each family's default scenario")[1].split("\n## ")[0]
    assert "| headroom reference |" in summary.splitlines()[2]
    for fam, refs in lb.HEADROOM.items():
        cell = data["cells"][f"{fam}/{lb.default_scenario_of(fam)}"]
        assert set(refs) <= set(cell["policies"])
        rows = {r["policy"]: r for r in cell["results"]}
        for ref in refs:
            assert lb.is_headroom(ref) and ref in rows
            assert f"| {ref} (headroom reference) |" in md
        # The best baseline is the best row that is neither PPO, random nor a reference,
        # even where a reference scores higher.
        contenders = [r for n, r in rows.items() if n not in ("ppo", "random", *refs)]
        best = max(contenders, key=lambda r: r["mean_return"])
        shown = [ln for ln in md.splitlines() if "(best baseline)" in ln and "|" in ln]
        assert any(f"| {best['policy']} (best baseline) |" in ln for ln in shown)
        row = next(ln for ln in summary.splitlines() if ln.startswith(f"| {fam} |"))
        assert f"{refs[0]} " in row  # the summary names it in its own column


def test_best_baseline_skips_headroom_references():
    from edgegym.leaderboard.render import best_baseline, headroom_row

    ref = lb.HEADROOM["continual"][0]
    rows = [
        {"policy": ref, "mean_return": 5.0},
        {"policy": "ppo", "mean_return": 4.95},
        {"policy": "thief", "mean_return": 4.9},
    ]
    assert best_baseline(rows)["policy"] == "thief"
    assert headroom_row("continual", rows)["policy"] == ref
    assert headroom_row("mig", rows) is None  # not one of the mig family's
    assert not lb.is_headroom("thief")


def test_render_only_rewrites_the_report_from_the_json(board, capsys):
    md = board / "leaderboard.md"
    before = md.read_text()
    md.unlink()
    (board / "leaderboard-energy.png").unlink()
    # The edgegym CLI runs the same command.
    assert cli_main(["leaderboard", "--render-only", "--out", str(board)]) == 0
    assert md.read_text() == before
    assert (board / "leaderboard-energy.png").is_file()


def test_resume_keeps_finished_scenarios(board, tmp_path, monkeypatch, tiny_sets):
    out = tmp_path / "copy"
    out.mkdir()
    (out / "leaderboard.json").write_text((board / "leaderboard.json").read_text())

    def boom(*args, **kwargs):
        raise AssertionError("a finished scenario was evaluated again")

    monkeypatch.setattr(lb.runner, "run_cell", boom)
    argv = [
        "--quick",
        "--episodes",
        "1",
        "--out",
        str(out),
        "--no-progress",
        "--resume",
        *tiny_sets,
    ]
    assert lb.main(argv) == 0
    assert (out / "leaderboard.md").is_file()


def test_resume_after_retraining_reruns_only_the_agent(board, tmp_path, monkeypatch, tiny_sets):
    out = tmp_path / "copy"
    out.mkdir()
    data = json.loads((board / "leaderboard.json").read_text())
    key = "energy/etf-tx2-resnet50-mobilenetv2"
    cell = data["cells"][key]
    now_sha = cell["ppo"]["sha256"]
    cell["ppo"]["sha256"] = "0" * 64  # as if the shipped agent had been retrained since
    etf = next(r for r in cell["results"] if r["policy"] == "etf")
    etf["mean_return"] = 12345.0  # a marker: the baselines' rows must be kept as they are
    stale_ppo = next(r for r in cell["results"] if r["policy"] == "ppo")
    stale_ppo["mean_return"] = -999.0
    (out / "leaderboard.json").write_text(json.dumps(data))
    real, calls = lb.run_cell, []

    def spy(family, scenario, *args, **kwargs):
        calls.append((family, kwargs.get("only")))
        return real(family, scenario, *args, **kwargs)

    monkeypatch.setattr(lb.runner, "run_cell", spy)
    argv = ["--quick", "--episodes", "1", "--out", str(out), "--no-progress", "--resume"]
    assert lb.main([*argv, *tiny_sets]) == 0
    assert calls == [("energy", ["ppo"])]
    got = json.loads((out / "leaderboard.json").read_text())["cells"][key]
    assert got["ppo"]["sha256"] == now_sha
    rows = {r["policy"]: r["mean_return"] for r in got["results"]}
    assert rows["etf"] == 12345.0
    assert rows["ppo"] != -999.0
    assert set(rows) | set(got["skipped"]) == set(got["policies"])


def test_rerunning_an_agent_that_cannot_play_a_scenario_keeps_its_reason(monkeypatch):
    """``--resume`` after retraining reruns the agent's rows alone; where the agent cannot act
    (its spaces refused, as an MLP agent refuses another scenario's) the reason is the new
    row, not a failed cell ("no policies to evaluate")."""
    import edgegym.baselines as baselines
    from edgegym.agents.policy import PolicyLoadError

    real = baselines.make_policy

    def refusing(spec, env, *args, **kwargs):
        if spec == "ppo":
            raise PolicyLoadError("the joint actions of this environment differ")
        return real(spec, env, *args, **kwargs)

    monkeypatch.setattr(baselines, "make_policy", refusing)
    info = lb.shipped_info("continual")
    cell = lb.run_cell("continual", "ekya-table1", 1, 0, {}, False, info, only=["ppo"])
    assert cell["results"] == []
    assert "joint actions" in cell["skipped"]["ppo"]


def test_a_failure_midway_keeps_the_other_results(tmp_path, monkeypatch, capsys, tiny_sets):
    real = lb.run_cell
    calls = []

    def flaky(family, scenario, *args, **kwargs):
        calls.append(family)
        if family == "mig":
            raise RuntimeError("simulated crash")
        return real(family, scenario, *args, **kwargs)

    monkeypatch.setattr(lb.runner, "run_cell", flaky)
    argv = ["--quick", "--families", "energy,mig,continual", "--episodes", "1"]
    argv += ["--out", str(tmp_path), "--no-progress", *tiny_sets]
    assert lb.main(argv) == 1
    assert calls == ["continual", "mig", "energy"]  # the run went on after the crash
    data = json.loads((tmp_path / "leaderboard.json").read_text())
    assert "simulated crash" in data["cells"]["mig/migrator-w1"]["error"]
    assert data["cells"]["energy/etf-tx2-resnet50-mobilenetv2"]["results"]
    assert data["runs"][-1]["failed"] == ["mig/migrator-w1"]
    md = (tmp_path / "leaderboard.md").read_text()
    assert "Evaluation failed: RuntimeError: simulated crash" in md
    assert "mig/migrator-w1 failed" in capsys.readouterr().err


def test_plan_defaults_and_selection():
    cells = lb.plan()
    mig = [s for f, s in cells if f == "mig"]
    assert mig == [f"migrator-w{k}" for k in range(1, 9)]  # the default subset
    assert [f for f, _ in cells if f == "dag"] and [f for f, _ in cells if f == "energy"]
    assert len([s for f, s in lb.plan(["mig"], ["all"]) if f == "mig"]) == 16
    assert lb.plan(quick=True) == [(f, lb.default_scenario_of(f)) for f in FAMILIES]
    assert lb.plan(None, ["etf-dynamic-3", "ekya-table1"]) == [
        ("continual", "ekya-table1"),
        ("energy", "etf-dynamic-3"),
    ]


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--families", "nope"], "unknown family 'nope'"),
        (["--scenarios", "nope"], "unknown scenario 'nope'"),
        (["--set", "requests=200"], "expected FAMILY:KEY=VALUE"),
        (["--set", "dag:bogus=1", "--families", "dag"], "bogus"),
        (["--episodes", "0"], "--episodes must be >= 1"),
        (["--render-only"], "no results to render"),
        (["--families", ""], "--families names nothing"),
        (["--scenarios", " , "], "--scenarios names nothing"),
        (["--resume", "--fresh"], "give one"),
    ],
)
def test_bad_arguments_exit_2(argv, needle, tmp_path, capsys):
    assert lb.main([*argv, "--out", str(tmp_path), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert needle in err and "Traceback" not in err
    assert not (tmp_path / "leaderboard.json").exists()


def test_held_out_variants_are_cells_with_their_own_overrides():
    assert lb.split_variant("ekya-waymo@streams=6,gpus=2") == (
        "ekya-waymo",
        {"streams": 6, "gpus": 2},
    )
    assert lb.split_variant("ekya-waymo") == ("ekya-waymo", {})
    with pytest.raises(lb.LeaderboardError, match="KEY=VALUE"):
        lb.split_variant("ekya-waymo@streams")
    default = lb.plan(["continual"])
    assert default[-len(lb.HELD_OUT["continual"]) :] == [
        ("continual", v) for v in lb.HELD_OUT["continual"]
    ]
    assert all("@" not in s for _, s in lb.plan(["continual"], quick=True))
    named = lb.plan(None, ["etf-dynamic-3@unit_s=0.0075"])
    assert named == [("energy", "etf-dynamic-3@unit_s=0.0075")]
    with pytest.raises(lb.LeaderboardError, match="unknown scenario 'nope'"):
        lb.plan(None, ["nope@x=1"])
    cell = lb.run_cell("energy", "etf-dynamic-3@unit_s=0.0075", episodes=1,
                       overrides={"quanta": 4}, progress=False, ppo=None)  # fmt: skip
    assert cell["scenario"] == "etf-dynamic-3@unit_s=0.0075"
    assert cell["overrides"] == {"quanta": 4, "unit_s": 0.0075}
    assert {r["policy"] for r in cell["results"]} >= {"etf", "random"}


@pytest.mark.parametrize("init_from, expected", [(None, None), ({"timesteps": 110592}, 110592)])
def test_a_fine_tuned_agent_says_so_and_counts_the_steps_it_started_from(
    tmp_path, monkeypatch, init_from, expected
):
    """An agent trained with ``--init-from`` is not an agent trained from scratch on the
    recorded budget: the summary names the fine-tuning and the steps it started from."""
    import importlib

    import yaml

    import edgegym.agents.policy as agent_policy

    render = importlib.import_module("edgegym.leaderboard.render")  # the package has a render()

    cfg = yaml.safe_load(shipped_path("dag").with_name("config.yaml").read_text())
    cfg.pop("init_from", None)
    if init_from is not None:
        cfg["init_from"] = {"model": "agents/trained/dag/model.zip", **init_from}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg))
    (tmp_path / "model.zip").write_bytes(b"weights")
    monkeypatch.setattr(agent_policy, "shipped_path", lambda family: tmp_path / "model.zip")
    info = lb.shipped_info("dag")
    assert info["init_from"] == expected
    steps = f"{int(info['timesteps']):,} steps"
    budget, policy = render._budget_text(info, "steps"), render._policy_text(info)
    if expected is None:
        assert budget == steps
        assert "fine-tuned" not in policy
    else:
        assert budget == f"{steps} (after 110,592 in the model it was fine-tuned from)"
        assert "fine-tuned from an earlier agent" in policy

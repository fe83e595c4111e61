"""Outputs never destroy a file edgegym did not write, never an input of the same command,
and are written atomically (issue 17, part 2); bad policy specs and scenario paths are one
line (part 2b)."""

from __future__ import annotations

import json
import os

import gymnasium as gym
import pytest
from edgegym.baselines import make_policy, parse_policy

from edgegym import cli
from edgegym.outputs import check_output_path, is_edgegym_output, write_atomic, write_json
from edgegym.scenarios import resolve

ENV = "edgegym/ContinualLearning-v0"
TINY = ["--set", "windows=2", "--set", "streams=2", "--episodes", "1", "--no-progress"]


def _no_work(monkeypatch):
    import edgegym.evaluation as ev

    def boom(*args, **kwargs):
        raise AssertionError("the evaluation ran although an output path was refused")

    monkeypatch.setattr(ev, "evaluate", boom)


def test_a_foreign_json_is_kept_unless_forced(tmp_path, capsys):
    mine = tmp_path / "keep.json"
    mine.write_text('{"mine": 1}\n')
    assert cli.main(["evaluate", ENV, *TINY, "--json", str(mine)]) == 2
    assert "not an edgegym evaluation output" in capsys.readouterr().err
    assert mine.read_text() == '{"mine": 1}\n'
    # Its own output is rewritten without --force; a foreign one with --force.
    ours = tmp_path / "ours.json"
    assert cli.main(["evaluate", ENV, *TINY, "--json", str(ours)]) == 0
    assert cli.main(["evaluate", ENV, *TINY, "--json", str(ours)]) == 0
    assert json.loads(ours.read_text())["edgegym_output"] == "evaluation"
    assert cli.main(["evaluate", ENV, *TINY, "--json", str(mine), "--force"]) == 0
    assert json.loads(mine.read_text())["env"] == ENV


def test_an_input_is_never_an_output_and_bad_paths_fail_before_work(tmp_path, monkeypatch, capsys):
    scenario = tmp_path / "good.yaml"
    scenario.write_text(resolve("ekya-table1").read_text())
    before = scenario.read_text()
    _no_work(monkeypatch)
    for extra in (
        ["--scenario", str(scenario), "--json", str(scenario), "--force"],
        ["--plot", str(tmp_path / "x.zzz")],
        ["--plot", str(tmp_path / "img.png")],  # a foreign image (written below)
    ):
        (tmp_path / "img.png").write_bytes(b"\x89PNG not ours")
        assert cli.main(["evaluate", ENV, *TINY, *extra]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "error:" in err
    assert scenario.read_text() == before
    assert (tmp_path / "img.png").read_bytes() == b"\x89PNG not ours"


def test_figures_carry_the_marker_and_json_the_kind(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from edgegym.outputs import save_figure

    for ext in ("png", "pdf", "svg"):
        path = tmp_path / f"f.{ext}"
        save_figure(plt.figure(), path)
        assert is_edgegym_output(path, "figure")
        check_output_path(path, kind="figure")  # ours: may be rewritten
    plt.close("all")
    legacy = tmp_path / "legacy.json"  # an evaluation written before the marker existed
    legacy.write_text(json.dumps({"env": ENV, "scenario": "s", "seeds": [0], "results": []}))
    assert is_edgegym_output(legacy, "evaluation")
    write_json(tmp_path / "r.json", {"x": 1}, "fidelity")
    assert is_edgegym_output(tmp_path / "r.json", "fidelity")
    assert not is_edgegym_output(tmp_path / "r.json", "evaluation")
    with pytest.raises(ValueError, match="not an edgegym evaluation output"):
        check_output_path(tmp_path / "r.json", kind="evaluation")


def test_an_interrupted_write_leaves_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "out.json"
    path.write_text("old")

    def fail(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(KeyboardInterrupt):
        write_atomic(path, "new" * 1000)
    assert path.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]  # no temp file left
    monkeypatch.undo()
    write_atomic(path, "new")
    assert path.read_text() == "new"


def test_policy_specs_are_strict():
    env = gym.make(ENV, windows=2, streams=2)
    with pytest.raises(ValueError, match="oracle must be true or false, got 'no'"):
        make_policy("thief:oracle=no", env)
    with pytest.raises(ValueError, match="'delta' is given twice"):
        parse_policy("thief:delta=0.1,delta=0.2")
    with pytest.raises(ValueError, match="a policy spec is a string"):
        make_policy(None, env)
    assert make_policy("thief:oracle=TRUE", env).oracle is True


def test_a_scenario_folder_is_one_line(tmp_path, capsys):
    assert cli.main(["evaluate", ENV, "--scenario", str(tmp_path), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "is a folder" in err and err.count("\n") == 1


def test_interrupted_evaluate_keeps_the_episodes_it_finished(tmp_path, monkeypatch, capsys):
    """Ctrl-C in the third episode: exit 130, one line, and --json holds the two finished
    episodes (the policy cut short says so)."""
    import json

    import edgegym.evaluation as ev
    from edgegym.cli import main

    real, calls = ev._run_episode, []

    def stop_third(env, policy, seed):
        calls.append(seed)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(env, policy, seed)

    monkeypatch.setattr(ev, "_run_episode", stop_third)
    out = tmp_path / "kept.json"
    argv = ["evaluate", "edgegym/EnergyFairShare-v0", "--policy", "etf", "--policy", "random"]
    rc = main([*argv, "--episodes", "2", "--json", str(out), "--no-progress"])
    assert rc == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"edgegym: interrupted; kept 2 finished episode(s) in {out}"]
    data = json.loads(out.read_text())
    assert data["edgegym_output"] == "evaluation"
    assert [r["policy"] for r in data["results"]] == ["etf"]
    assert [e["seed"] for e in data["results"][0]["per_episode"]] == [0, 1]

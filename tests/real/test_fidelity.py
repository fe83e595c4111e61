"""``edgegym fidelity``: the same scenario and policy in sim and real mode, per window."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("sklearn")

from edgegym.cli import main


def test_fidelity_cli_reports_every_window(tmp_path, capsys):
    out = tmp_path / "fid.json"
    code = main(
        ["fidelity", "edgegym/ContinualLearning-v0", "--policy", "thief", "--json", str(out)]
    )
    assert code == 0
    text = capsys.readouterr().out
    assert "| window |" in text and "time-slicing" in text
    report = json.loads(out.read_text())
    assert [row["window"] for row in report["windows"]] == [0, 1]
    for row in report["windows"]:
        for key in ("reward", "accuracy"):
            assert row["diff"][key] == pytest.approx(row["real"][key] - row["sim"][key])


def test_fidelity_of_the_mig_family_defaults_to_its_tiny_scenario_and_migrator():
    from edgegym.real.fidelity import fidelity, format_report

    report = fidelity("edgegym/MIGReconfig-v0", real_options={"infer_cap": 2})
    assert report["policy"] == "migrator" and report["scenario"].endswith("real-mig-tiny.yaml")
    assert [row["window"] for row in report["windows"]] == [0, 1]
    for row in report["windows"]:
        assert {"reward", "goodput", "energy"} <= set(row["diff"])
        assert row["diff"]["goodput"] == pytest.approx(
            row["real"]["goodput"] - row["sim"]["goodput"]
        )
    # Measured accuracies are not the profile's: the goodput term moves.
    assert any(abs(row["diff"]["goodput"]) > 1e-3 for row in report["windows"])
    assert "MIG instances: emulated by time-slicing" in format_report(report)


def test_fidelity_without_real_backend_is_a_usage_error(capsys):
    assert main(["fidelity", "edgegym/EnergyFairShare-v0"]) == 2
    err = capsys.readouterr().err
    assert "no real backend" in err and "edgegym/MIGReconfig-v0" in err

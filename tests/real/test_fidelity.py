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


def test_fidelity_without_real_backend_is_a_usage_error(capsys):
    assert main(["fidelity", "edgegym/MIGReconfig-v0"]) == 2
    assert "no real backend" in capsys.readouterr().err

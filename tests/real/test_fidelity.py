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
    assert report["energy_segments"] == []  # no NVML on the CPU: nothing was measured
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
    # Measured vs profile accuracies: window 0's deployed models and every retrained model.
    acc = report["accuracy"]
    assert [row["window"] for row in acc] == [0, 1]
    assert len(acc[0]["deployed_measured"]) == len(acc[0]["deployed_profile"]) == 2
    assert sorted(j["tenant"] for row in acc for j in row["jobs"]) == [0, 0, 1, 1]
    for row in acc:
        for job in row["jobs"]:
            assert 0.0 <= job["measured"] <= 1.0 and 0.0 < job["profile"] <= 1.0
    assert [row["tenant"] for row in report["latency"]] == [0, 1]
    assert all(row["stretches"] > 0 and row["measured_ms"] > 0 for row in report["latency"])
    text = format_report(report)
    assert "MIG instances: emulated by time-slicing" in text
    assert "Accuracy, measured (real)" in text and "| tenant | stretches |" in text


def test_fidelity_without_real_backend_is_a_usage_error(capsys):
    assert main(["fidelity", "edgegym/Nope-v0"]) == 2
    err = capsys.readouterr().err
    assert "no real backend" in err and "edgegym/DAGOffload-v0" in err


def test_fidelity_rejects_a_bad_time_scale_before_running(capsys):
    assert main(["fidelity", "edgegym/ContinualLearning-v0", "--time-scale", "-1"]) == 2
    assert "time_scale=-1.0" in capsys.readouterr().err


def test_energy_segments_show_where_the_time_base_loses_joules():
    """A short segment whose counter did not move and one that carries its joules: the
    window drew 120 W of wall time, the per-segment conversion reports 7.7 W (as the unpaced
    H200 continual run read below the GPU's idle power, docs/real-gpu.md)."""
    from edgegym.real.fidelity import energy_segments, format_report

    def seg(window, duration_s, wall_s, measured_j):
        return {"event": "segment", "window": window, "duration_s": duration_s,
                "wall_s": wall_s, "measured_j": measured_j,
                "scenario_j": measured_j * duration_s / wall_s}  # fmt: skip

    log = [seg(0, 30.0, 0.001, 0.0), seg(0, 1.0, 0.001, 0.24), {"event": "window", "window": 1}]
    log.append({"event": "segment", "window": 1, "measured_j": None})  # no NVML: left out
    (row,) = energy_segments(log)
    assert (row["segments"], row["zero_j"], row["shortest_wall_s"]) == (2, 1, 0.001)
    assert row["window_mean_w"] == pytest.approx(120.0)
    assert row["scenario_mean_w"] == pytest.approx(240.0 / 31.0, abs=1e-3)
    report = {"env_id": "x", "scenario": "s", "policy": "p", "seed": 0, "device": "cuda",
              "windows": [{"window": 0, "sim": {"r": 1.0}, "real": {"r": 1.0},
                           "diff": {"r": 0.0}}],
              "emulated": [], "energy": "counter", "energy_segments": [row]}  # fmt: skip
    text = format_report(report)
    assert "| 0 | 2 (1) |" in text
    assert "Warning: segments as short as 0.001 s" in text and "--time-scale" in text
    report["energy_segments"] = [{**row, "shortest_wall_s": 0.17}]  # paced: no warning
    assert "Warning" not in format_report(report)


def test_a_gpu_run_says_when_the_scenario_models_another_gpu(monkeypatch):
    """On an H200 the TX2 pair's power is the H200's (2026-11-28: 122 W against the model's
    7.5 W): the report says so and names the profile command that makes a scenario of the
    device; on the GPU the scenario models, and on the CPU, it says nothing."""
    from edgegym.real import profile
    from edgegym.real.fidelity import hardware_note

    h200 = profile._Hardware("NVIDIA H200", "H200-141GB", "")
    monkeypatch.setattr(profile, "_hardware", lambda base, device: h200)
    note = hardware_note("etf-tx2-resnet50-mobilenetv2", "cuda")
    assert "models TX2" in note and "NVIDIA H200 (H200-141GB)" in note
    assert "edgegym profile --family energy --device cuda" in note
    continual = hardware_note("ekya-cityscapes", "cuda")
    assert "profile --device cuda" in continual  # the continual family's profile: no --family
    a100 = profile._Hardware("NVIDIA A100-SXM4-40GB", "A100-40GB", "")
    monkeypatch.setattr(profile, "_hardware", lambda base, device: a100)
    assert hardware_note("migrator-w1", "cuda") == ""
    assert hardware_note("etf-tx2-resnet50-mobilenetv2", "cpu") == ""

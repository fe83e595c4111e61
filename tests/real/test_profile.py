"""``edgegym profile --device cpu`` writes a measured scenario that the simulator runs."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

pytest.importorskip("sklearn")

from edgegym.cli import main
from edgegym.families.continual.env import ContinualLearningEnv
from edgegym.real.profile import catalogue_gpu, fit_curve
from edgegym.scenarios import load


def test_fit_curve_recovers_parameters():
    e = np.arange(6, dtype=float)
    acc = 0.9 - (0.9 - 0.3) * np.exp(-e / 2.0)
    fit = fit_curve(e, acc)
    assert fit["a_inf"] == pytest.approx(0.9, abs=1e-3) and fit["tau"] == pytest.approx(2.0, 1e-2)


@pytest.mark.parametrize(
    ("name", "memory_gb", "expected"),
    [
        ("NVIDIA H100 80GB HBM3", 85.5, "H100-80GB"),  # torch's name on the H100 measured
        ("NVIDIA H100 PCIe", 85.0, "H100-80GB"),
        ("NVIDIA H100 NVL", 100.0, None),  # 94 GB: not the catalogue's part
        ("NVIDIA A100-SXM4-40GB", 42.5, "A100-40GB"),
        ("NVIDIA A100-SXM4-80GB", 85.0, "A100-80GB"),
        ("NVIDIA A100 80GB PCIe", None, "A100-80GB"),
        ("Tesla V100-SXM2-16GB", 17.0, "V100-16GB"),
        ("Tesla V100-SXM2-32GB", 34.0, None),
        ("NVIDIA A10G", 23.8, "A10G"),
        ("NVIDIA H200", 150.75, "H200-141GB"),  # torch: 143,771 MiB on the H200 measured 2026-11-27
        ("NVIDIA GH200 480GB", 102.0, None),  # not the catalogue's part
    ],
)
def test_catalogue_gpu_names_the_measured_gpu(name, memory_gb, expected):
    assert catalogue_gpu(name, memory_gb) == expected


def test_profile_cli_writes_a_scenario_the_simulator_runs(tmp_path, capsys):
    out = tmp_path / "cpu.yaml"
    assert main(["profile", "--device", "cpu", "--out", str(out)]) == 0
    assert "measured on cpu" in capsys.readouterr().out
    raw = yaml.safe_load(out.read_text())
    measured = raw["provenance"]["measured"]
    assert measured["device"] == "cpu" and measured["date"]
    # The CPU is no catalogue GPU: the base scenario's GPU is kept, and the file says so.
    assert raw["hardware"]["gpu"] == "V100-16GB" and "kept" in measured["hardware"]
    assert set(measured["latency_ms_vs_batch"]) == {1, 8, 32}
    runs = measured["retraining"]
    assert len(runs) == 2 * 2 * 2  # streams x windows x configurations
    assert all(len(r["accuracy_vs_epoch"]) >= 2 and r["seconds"] > 0 for r in runs)
    sc = load(str(out))
    assert sc["family"] == "continual"
    env = ContinualLearningEnv(str(out))
    env.reset(seed=0)
    terminated, steps = False, 0
    while not terminated:
        _, rew, terminated, _, info = env.step(env.action_space.sample())
        assert np.isfinite(rew)
        steps += 1
    assert 0.0 <= info["episode_metrics"]["accuracy"] <= 1.0


def test_measured_h100_profile_runs_in_the_simulator():
    from edgegym.real import MEASURED_H100_SCENARIO

    raw = yaml.safe_load(open(MEASURED_H100_SCENARIO).read())
    measured = raw["provenance"]["measured"]
    assert measured["device_name"] == "NVIDIA H100 80GB HBM3" and measured["device"] == "cuda"
    assert raw["hardware"]["gpu"] == "H100-80GB"
    assert len(measured["retraining"]) == 2 * 2 * 2
    secs = np.array(raw["drift"]["gpu_seconds"])
    assert secs.shape == (2, 2, 2) and np.all(secs > 0) and np.all(secs < 10)
    env = ContinualLearningEnv(MEASURED_H100_SCENARIO)
    env.reset(seed=0)
    terminated = False
    while not terminated:
        _, rew, terminated, _, info = env.step(env.action_space.sample())
        assert np.isfinite(rew)
    assert 0.0 <= info["episode_metrics"]["accuracy"] <= 1.0


def test_profile_cuda_without_gpu_is_a_usage_error(tmp_path, capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    assert main(["profile", "--device", "cuda", "--out", str(tmp_path / "x.yaml")]) == 2
    assert "no CUDA GPU" in capsys.readouterr().err


def test_the_profiled_latency_waits_for_every_batch_as_the_executors_serve_it(monkeypatch):
    """Each timed pass ends with a wait on the device, as a served batch does in every real
    executor; queued passes with one wait at the end would time the GPU's pipelining instead
    (on an H200 the energy family's real run then served 33 % fewer requests than its model)."""
    import torch

    from edgegym.real import profile

    events: list[str] = []

    class Net(torch.nn.Module):
        def forward(self, x):
            events.append("pass")
            return x

    monkeypatch.setattr(profile, "sync", lambda device: events.append(f"sync {device}"))
    monkeypatch.setattr(torch, "rand", lambda *shape, device: torch.zeros(shape))  # no GPU here
    profile._latency_ms(Net(), batch=2, device="cuda:0", repeats=3)
    assert events == ["pass", "sync cuda:0"] * 4  # the warm-up, then every timed pass

"""``edgegym profile --device cpu`` writes a measured scenario that the simulator runs."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

pytest.importorskip("sklearn")

from edgegym.cli import main
from edgegym.envs.continual.env import ContinualLearningEnv
from edgegym.real.profile import fit_curve
from edgegym.scenarios import load


def test_fit_curve_recovers_parameters():
    e = np.arange(6, dtype=float)
    acc = 0.9 - (0.9 - 0.3) * np.exp(-e / 2.0)
    fit = fit_curve(e, acc)
    assert fit["a_inf"] == pytest.approx(0.9, abs=1e-3) and fit["tau"] == pytest.approx(2.0, 1e-2)


def test_profile_cli_writes_a_scenario_the_simulator_runs(tmp_path, capsys):
    out = tmp_path / "cpu.yaml"
    assert main(["profile", "--device", "cpu", "--out", str(out)]) == 0
    assert "measured on cpu" in capsys.readouterr().out
    raw = yaml.safe_load(out.read_text())
    measured = raw["provenance"]["measured"]
    assert measured["device"] == "cpu" and measured["date"]
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


def test_profile_cuda_without_gpu_is_a_usage_error(tmp_path, capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    assert main(["profile", "--device", "cuda", "--out", str(tmp_path / "x.yaml")]) == 2
    assert "no CUDA GPU" in capsys.readouterr().err

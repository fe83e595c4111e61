"""Acceptance: the continual environment runs a tiny scenario for real on the CPU."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

pytest.importorskip("sklearn")
torch = pytest.importorskip("torch")

from edgegym.core.state import Allocation  # noqa: E402
from edgegym.families.continual.env import ContinualLearningEnv  # noqa: E402
from edgegym.real import TINY_SCENARIO  # noqa: E402


def _retrain_everyone(env: ContinualLearningEnv) -> np.ndarray:
    s = env.unwrapped.sim_state()
    cfg = np.where(s.job_cfg >= 0, s.job_cfg, np.where(s.can_retrain, 0, -1))
    alloc = Allocation(
        retrain_cfg=cfg,
        infer_cfg=np.zeros(s.streams, dtype=np.int64),
        share_retrain=np.full(s.streams, 0.2),
        share_infer=np.full(s.streams, 0.3),
    )
    return env.encode_action(alloc)


def test_tiny_scenario_runs_for_real_on_cpu():
    env = ContinualLearningEnv(TINY_SCENARIO, backend="real", device="cpu", time_scale=30.0)
    obs, info = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    real = info["real"]
    assert real["device"] == "cpu" and real["emulated"]
    assert "time-slicing" in real["emulated"][0]
    assert real["energy_available"] is False and "unavailable" in real["energy_message"]
    start = real["log"][0]
    assert start["event"] == "window" and start["corruption"][0] == "rotation"
    # The deployed accuracy is measured on the drifted window, not taken from the profile.
    np.testing.assert_allclose(info["model_accuracy"], start["measured_accuracy"])
    finished, segments, terminated, steps = [], [], False, 0
    while not terminated:
        obs, rew, terminated, truncated, info = env.step(_retrain_everyone(env))
        assert env.observation_space.contains(obs) and not truncated and np.isfinite(rew)
        for rec in info["real"]["log"]:
            if rec["event"] == "segment":
                segments.append(rec)
                finished += rec["finished"]
                # Energy unavailable on the CPU: reported, not invented.
                assert rec["measured_j"] is None and rec["energy_method"] is None
                assert rec["overrun_s"] is not None
        steps += 1
        assert steps < 20
    assert "episode_metrics" in info
    # Both streams retrained in both windows, for real.
    assert sorted((f["stream"]) for f in finished) == [0, 0, 1, 1]
    first = next(f for f in finished if f["stream"] == 0)
    assert len(first["accuracy_curve"]) == 5 and first["train_s"] > 0
    assert first["accuracy"] > start["measured_accuracy"][0] + 0.2  # real learning
    # Time scale: 120 scenario seconds at 30x take at least 4 s of wall time.
    assert sum(s["wall_s"] for s in segments) >= 120 / 30 - 0.1
    assert any(s["infer_latency_ms"][0] for s in segments)
    pickle.loads(pickle.dumps(env))


def test_same_seed_same_real_accuracies():
    accs = []
    for _ in range(2):
        env = ContinualLearningEnv(TINY_SCENARIO, backend="real", real_options={"n_test": 64})
        _, info = env.reset(seed=0)
        _, _, _, _, info = env.step(_retrain_everyone(env))
        accs.append(info["model_accuracy"])
    assert accs[0] == accs[1]


def test_sim_backend_unchanged_and_bad_arguments():
    sim = ContinualLearningEnv(TINY_SCENARIO)
    _, info = sim.reset(seed=0)
    assert "real" not in info
    assert info["model_accuracy"] == [0.25, 0.47]
    with pytest.raises(ValueError, match="backend"):
        ContinualLearningEnv(TINY_SCENARIO, backend="gpu")
    with pytest.raises(ValueError, match="real_options"):
        ContinualLearningEnv(TINY_SCENARIO, backend="real", real_options={"bogus": 1}).reset()


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is present")
def test_cuda_without_gpu_is_a_clear_error():
    with pytest.raises(RuntimeError, match="no CUDA GPU"):
        ContinualLearningEnv(TINY_SCENARIO, backend="real", device="cuda")

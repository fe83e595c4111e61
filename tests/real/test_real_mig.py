"""The MIG family's real backend: the tiny MIG scenario runs for real on the CPU."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("sklearn")
pytest.importorskip("torch")

from edgegym.baselines import make_policy
from edgegym.families.mig.env import MIGReconfigEnv
from edgegym.real import TINY_MIG_SCENARIO

FAST = {"infer_cap": 2}


def _episode(env: MIGReconfigEnv, seed: int = 0) -> tuple[list[dict], list[dict], dict]:
    policy = make_policy("migrator", env)
    obs, info = env.reset(seed=seed)
    policy.reset(seed)
    logs = list(info["real"]["log"]) if "real" in info else []
    infos, terminated = [info], False
    while not terminated:
        action, _ = policy.predict(obs, deterministic=True)
        obs, reward, terminated, truncated, info = env.step(action)
        assert env.observation_space.contains(obs) and not truncated and np.isfinite(reward)
        logs += info.get("real", {}).get("log", [])
        infos.append(info)
    return logs, infos, info["episode_metrics"]


@pytest.fixture(scope="module")
def real_run():
    env = MIGReconfigEnv(TINY_MIG_SCENARIO, backend="real", real_options=FAST)
    return env, *_episode(env)


def test_real_mig_episode_measures_new_classes_and_learns_them(real_run):
    _, logs, _, _ = real_run
    windows = [r for r in logs if r["event"] == "window"]
    assert [w["window"] for w in windows] == [0, 1]
    # Window 0 brings 3 classes the deployed models never saw: measured, not the profile's.
    assert windows[0]["classes"] == [8, 8]
    assert max(windows[0]["measured_accuracy"]) < 0.7
    finished = [f for r in logs if r["event"] == "segment" for f in r["finished"]]
    assert sorted(f["stream"] for f in finished) == [0, 0, 1, 1]  # both tenants, both windows
    for f in finished[:2]:  # window 0's jobs: real SGD raises the held-out accuracy
        before = windows[0]["measured_accuracy"][f["stream"]]
        assert len(f["accuracy_curve"]) == 4 and f["train_s"] > 0
        assert f["accuracy"] > before + 0.15


def test_real_mig_segments_log_latency_against_the_profile_and_slo(real_run):
    _, logs, infos, _ = real_run
    segments = [r for r in logs if r["event"] == "segment"]
    served = [s for s in segments if any(s["infer_latency_ms"])]
    assert served
    for s in served:
        for v, ms in enumerate(s["infer_latency_ms"]):
            if ms is not None:
                assert ms > 0 and s["profile_latency_ms"][v] > 0
                assert s["latency_within_slo"][v] == (ms <= 50.0)
                assert s["served"][v] > 0
        assert s["measured_j"] is None  # the CPU has no energy counter: reported, not invented
    emulated = infos[-1]["real"]["emulated"]
    assert emulated[0].startswith("MIG instances: emulated by time-slicing")
    assert any("at most 2" in e for e in emulated)


def test_real_goodput_follows_the_measured_accuracy(real_run):
    _, _, _, metrics = real_run
    sim_env = MIGReconfigEnv(TINY_MIG_SCENARIO)
    _, _, sim_metrics = _episode(sim_env)
    # Same arrivals and queue model: the same requests are served in the SLO...
    assert metrics["requests"] == sim_metrics["requests"]
    assert metrics["slo_attainment"] == pytest.approx(sim_metrics["slo_attainment"])
    # ...answered with measured accuracies instead of the profile's.
    assert metrics["goodput"] != pytest.approx(sim_metrics["goodput"], abs=1e-3)


def test_real_mig_is_reproducible_and_rejects_bad_options():
    a = MIGReconfigEnv(TINY_MIG_SCENARIO, backend="real", real_options=FAST)
    b = MIGReconfigEnv(TINY_MIG_SCENARIO, backend="real", real_options=FAST)
    ra = a.reset(seed=3)[1]["real"]["log"][0]["measured_accuracy"]
    rb = b.reset(seed=3)[1]["real"]["log"][0]["measured_accuracy"]
    assert ra == rb
    # The engine answers requests with the measured accuracy, not the profile's.
    np.testing.assert_allclose(a.state.model_acc[0], ra, atol=1e-4)
    assert not np.allclose(a.state.model_acc[0], a.profile.start_acc)
    with pytest.raises(ValueError, match="bogus"):
        MIGReconfigEnv(TINY_MIG_SCENARIO, backend="real", real_options={"bogus": 1}).reset()
    with pytest.raises(ValueError, match="epochs"):
        MIGReconfigEnv(TINY_MIG_SCENARIO, backend="real", real_options={"epochs": 0}).reset()
    with pytest.raises(ValueError, match="backend"):
        MIGReconfigEnv(TINY_MIG_SCENARIO, backend="gpu")
    for bad in (0, -1.0, "fast"):
        with pytest.raises(ValueError, match="time_scale"):
            MIGReconfigEnv(TINY_MIG_SCENARIO, backend="real", time_scale=bad)

"""The energy family for real (``EnergyFairShare-v0``, ``backend="real"``): the simulator's CFS
schedule run with real inference on the CPU, requests measured, energy from NVML where it
reads (a stand-in meter here) and from the DVFS model where not, and ``info["real"]`` naming
what was emulated."""

from __future__ import annotations

import numpy as np
import pytest

from edgegym.baselines import make_policy
from edgegym.families.energy import EnergyFairShareEnv
from edgegym.real import timeslice
from edgegym.real.energy import Measurement

SCENARIO, QUANTA = "etf-tx2-resnet50-mobilenetv2", 6


def _play(env):
    pol = make_policy("etf", env)
    obs, _ = env.reset(seed=0)
    pol.reset(0)
    infos, done = [], False
    while not done:
        action, _ = pol.predict(obs)
        obs, _, done, _, info = env.step(action)
        infos.append(info)
    return infos


def test_the_real_run_follows_the_simulators_schedule_and_measures_requests():
    sim = _play(EnergyFairShareEnv(SCENARIO, quanta=QUANTA))
    real = _play(EnergyFairShareEnv(SCENARIO, quanta=QUANTA, backend="real", time_scale=50))
    s, r = sim[-1]["episode_metrics"], real[-1]["episode_metrics"]
    for key in ("F_T", "time_share_A1", "time_share_A2"):  # the schedule is the simulator's
        assert r[key] == pytest.approx(s[key])
    assert r["energy_j"] == pytest.approx(s["energy_j"])  # no NVML on the CPU: the model's
    assert r["throughput_rps"] > 0 and r["throughput_rps"] != s["throughput_rps"]  # measured
    rep = real[-1]["real"]
    assert rep["device"] == "cpu" and not rep["energy_available"]
    assert any(e.startswith("energy:") and "DVFS model" in e for e in rep["emulated"])
    assert rep["log"] and rep["log"][-1]["requests"][0] > 0


class _Meter:
    """NVML as a meter that reads 2 J per 0.01 s window (200 W)."""

    available, message = True, ""

    def begin(self, name):
        pass

    def end(self, name):
        return Measurement(name, 0.01, 2.0, "counter")


def test_measured_slice_energy_is_put_on_the_scenarios_time_base(monkeypatch):
    monkeypatch.setattr(timeslice, "EnergyMeter", lambda index: _Meter())
    env = EnergyFairShareEnv(SCENARIO, quanta=QUANTA, backend="real", time_scale=50)
    infos = _play(env)
    m = infos[-1]["episode_metrics"]
    ran = m["time_share_A1"] * QUANTA * env.params.quantum_s  # the tenant's scenario seconds
    assert m["energy_j_A1"] == pytest.approx(200.0 * ran)  # 200 W over its slices
    assert not any(e.startswith("energy:") for e in infos[-1]["real"]["emulated"])
    assert infos[-1]["real"]["log"][-1]["energy_method"] == "counter"


def test_clocks_are_never_set_and_bad_options_are_refused():
    env = EnergyFairShareEnv("etf-dynamic-3", quanta=2, backend="real", time_scale=50)
    env.reset(seed=0)
    _, _, _, _, info = env.step(np.zeros(env.action_space.shape, dtype=np.int64))
    assert any("not applied (clocks are never changed)" in e for e in info["real"]["emulated"])
    with pytest.raises(ValueError, match="unknown key"):
        EnergyFairShareEnv(SCENARIO, backend="real", real_options={"bogus": 1}).reset(seed=0)


def test_fidelity_compares_the_episodes_fairness_power_and_throughput():
    from edgegym.real.fidelity import fidelity, format_report

    report = fidelity("edgegym/EnergyFairShare-v0", time_scale=500)
    (row,) = report["windows"]
    assert row["window"] == "episode"
    assert set(row["sim"]) == {"F_T", "F_E", "F_S", "mean_power_w", "throughput_rps", "energy_j"}
    assert row["diff"]["F_T"] == pytest.approx(0.0)  # the same schedule
    assert row["real"]["throughput_rps"] > 0
    assert "| episode |" in format_report(report) and "never changed" in format_report(report)

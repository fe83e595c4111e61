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
from edgegym.real.clocks import ClockLock
from tests.real.stubs import FixedMeter

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


def test_measured_slice_energy_is_put_on_the_scenarios_time_base(monkeypatch):
    monkeypatch.setattr(timeslice, "EnergyMeter", lambda index: FixedMeter())
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


class _FakeClocks:
    """pynvml's clock calls on a GPU whose graphics clocks are 300-1980 MHz in steps of 120,
    recording every lock and reset (``refuse``: locking raises, as without admin rights)."""

    def __init__(self, refuse: bool = False) -> None:
        self.calls: list[tuple] = []
        self.refuse = refuse

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import pynvml

        def lock(handle, lo, hi):
            if self.refuse:
                raise pynvml.NVMLError(pynvml.NVML_ERROR_NO_PERMISSION)
            self.calls.append(("lock", lo, hi))

        monkeypatch.setattr(pynvml, "nvmlInit", lambda: None)
        monkeypatch.setattr(pynvml, "nvmlDeviceGetHandleByIndex", lambda i: f"gpu{i}")
        monkeypatch.setattr(pynvml, "nvmlDeviceGetSupportedMemoryClocks", lambda h: [810, 2619])
        monkeypatch.setattr(
            pynvml,
            "nvmlDeviceGetSupportedGraphicsClocks",
            lambda h, mem: list(range(1980, 299, -120)) if mem == 2619 else [300],
        )
        monkeypatch.setattr(pynvml, "nvmlDeviceSetGpuLockedClocks", lock)
        monkeypatch.setattr(
            pynvml, "nvmlDeviceResetGpuLockedClocks", lambda h: self.calls.append(("reset",))
        )


def test_clock_lock_maps_a_fraction_of_the_top_clock_to_the_nearest_supported(monkeypatch):
    fake = _FakeClocks()
    fake.install(monkeypatch)
    assert not ClockLock(0, allowed=False).available  # off unless allowed
    assert not ClockLock(None, allowed=True).available  # the CPU has no clock to set
    lock = ClockLock(0, allowed=True)
    assert lock.available and lock.supported[0] == 300 and lock.supported[-1] == 1980
    assert lock.target(1.0) == 1980
    assert lock.target(726 / 1300) == 1140  # 0.558 x 1980 = 1105.8: 1140 is nearer than 1020
    assert lock.lock(114 / 1300) == 300  # below the lowest: the lowest
    lock.reset()
    lock.reset()  # a second reset with nothing locked calls nothing
    assert fake.calls == [("lock", 300, 300), ("reset",)]


def _real_env(monkeypatch, **options):
    # The executor's GPU index is None on the CPU; the lock is built for GPU 0 as on a GPU.
    monkeypatch.setattr(timeslice, "ClockLock", lambda index, allowed: ClockLock(0, allowed))
    return EnergyFairShareEnv(
        SCENARIO, quanta=QUANTA, backend="real", time_scale=50, real_options=options
    )


def test_allowed_clock_changes_lock_each_slice_at_its_tenants_clock(monkeypatch):
    fake = _FakeClocks()
    fake.install(monkeypatch)
    env = _real_env(monkeypatch, allow_clock_changes=True)
    infos = _play(env)
    p = env.params
    want = {
        ClockLock(0, True).target(mhz / p.max_clock_mhz) for c in p.clocks for _, mhz in c
    }  # ResNet50 at 1300 MHz (the top: 1980), MobileNetV2 at 726 (1140)
    locks = [c for c in fake.calls if c[0] == "lock"]
    assert {c[1] for c in locks} == want and all(c[1] == c[2] for c in locks)
    # Every quantum gives the clock back before the next.
    resets = [i for i, c in enumerate(fake.calls) if c[0] == "reset"]
    assert len(resets) == QUANTA and resets[-1] == len(fake.calls) - 1
    rep = infos[-1]["real"]
    assert not any("not applied" in e for e in rep["emulated"])
    assert any(e.startswith("clocks: locked per slice") for e in rep["emulated"])
    assert set(rep["log"][-1]["locked_mhz"]) <= want | {None}


def test_clock_changes_stay_off_by_default_and_a_refusal_falls_back_to_the_model(monkeypatch):
    fake = _FakeClocks()
    fake.install(monkeypatch)
    infos = _play(_real_env(monkeypatch))  # not allowed: NVML's clocks are never called
    assert fake.calls == []
    assert any("not applied (clocks are never changed)" in e for e in infos[-1]["real"]["emulated"])
    refused = _FakeClocks(refuse=True)
    refused.install(monkeypatch)
    env = _real_env(monkeypatch, allow_clock_changes=True)
    infos = _play(env)
    assert refused.calls == []  # the refusal locked nothing, so nothing to reset
    assert not env.executor.clock.available and "NVML refused" in env.executor.clock.message
    emulated = infos[-1]["real"]["emulated"]
    assert any(e.startswith("clocks: clock changes allowed, but NVML refused") for e in emulated)
    assert not any(e.startswith("clocks: locked") for e in emulated)
    assert all("locked_mhz" not in entry for entry in infos[-1]["real"]["log"])
    # The run went on at the device's clock, scaled by the DVFS model as without the option.
    assert infos[-1]["episode_metrics"]["throughput_rps"] > 0

"""NVML energy meter with pynvml patched (as Zeus's tests do): counter, sampling, failures."""

from __future__ import annotations

import time

import numpy as np
import pynvml
import pytest

from edgegym.real.energy import EnergyMeter, attribute


class FakeNVML:
    """Counter in mJ that grows at ``watts``; power reads in mW."""

    def __init__(self, watts: float = 100.0, counter: bool = True) -> None:
        self.watts, self.counter = watts, counter
        self.t0 = time.perf_counter()

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(pynvml, "nvmlInit", lambda: None)
        monkeypatch.setattr(pynvml, "nvmlDeviceGetHandleByIndex", lambda i: f"gpu{i}")
        monkeypatch.setattr(pynvml, "nvmlDeviceGetTotalEnergyConsumption", self.energy)
        monkeypatch.setattr(pynvml, "nvmlDeviceGetPowerUsage", lambda h: self.watts * 1000.0)

    def energy(self, handle: str) -> int:
        if not self.counter:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return int((time.perf_counter() - self.t0) * self.watts * 1000.0)


def _window(meter: EnergyMeter, seconds: float = 0.2):
    meter.begin("w")
    time.sleep(seconds)
    return meter.end("w")


def test_counter_present(monkeypatch):
    FakeNVML(watts=100.0).install(monkeypatch)
    meter = EnergyMeter(0)
    assert meter.method == "counter"
    m = _window(meter)
    assert m.method == "counter"
    assert m.energy_j == pytest.approx(100.0 * m.seconds, rel=0.15)


def test_counter_absent_falls_back_to_sampling(monkeypatch):
    FakeNVML(watts=50.0, counter=False).install(monkeypatch)
    meter = EnergyMeter(0, sample_interval_s=0.01)
    assert meter.method == "sampling"
    m = _window(meter, 0.3)
    assert m.method == "sampling"
    assert m.energy_j == pytest.approx(50.0 * m.seconds, rel=0.15)


def test_init_failure_means_unavailable(monkeypatch):
    def fail():
        raise pynvml.NVMLError(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)

    monkeypatch.setattr(pynvml, "nvmlInit", fail)
    meter = EnergyMeter(0)
    assert not meter.available
    m = _window(meter, 0.01)
    assert m.energy_j is None and m.method is None and "NVML unavailable" in m.message


def test_call_raising_mid_run_is_reported_not_raised(monkeypatch):
    fake = FakeNVML()
    fake.install(monkeypatch)
    meter = EnergyMeter(0)
    meter.begin("w")
    fake.counter = False  # the counter starts failing
    m = meter.end("w")
    assert m.energy_j is None and "failed" in m.message

    def broken(handle):
        raise pynvml.NVMLError(pynvml.NVML_ERROR_UNKNOWN)

    monkeypatch.setattr(pynvml, "nvmlDeviceGetTotalEnergyConsumption", broken)
    monkeypatch.setattr(pynvml, "nvmlDeviceGetPowerUsage", broken)
    meter = EnergyMeter(0)
    assert not meter.available and "neither" in meter.message
    assert _window(meter, 0.01).energy_j is None


def test_sampling_failure_mid_run(monkeypatch):
    FakeNVML(counter=False).install(monkeypatch)
    meter = EnergyMeter(0, sample_interval_s=0.01)
    meter.begin("w")

    def broken(handle):
        raise pynvml.NVMLError(pynvml.NVML_ERROR_UNKNOWN)

    monkeypatch.setattr(pynvml, "nvmlDeviceGetPowerUsage", broken)
    time.sleep(0.05)
    m = meter.end("w")
    assert m.energy_j is None and "sampling failed" in m.message


def test_no_gpu_and_attribution():
    meter = EnergyMeter(None)
    assert _window(meter, 0.0).energy_j is None
    assert attribute(None, np.ones(2)) is None
    np.testing.assert_allclose(attribute(90.0, np.array([1.0, 2.0])), [30.0, 60.0])
    np.testing.assert_allclose(attribute(10.0, np.zeros(2)), [5.0, 5.0])


def test_real_segments_report_energy_on_the_scenario_time_base(monkeypatch):
    """A stretch's energy is the measured mean power times its scenario seconds (what the
    simulator models), whatever the wall time; the raw joules stay in the log."""
    from edgegym.families.continual import ContinualLearningEnv
    from edgegym.real import TINY_SCENARIO

    FakeNVML(watts=100.0).install(monkeypatch)
    env = ContinualLearningEnv(TINY_SCENARIO, backend="real", device="cpu", time_scale=None)
    env.reset(seed=0)
    env.executor.meter = EnergyMeter(0)  # the CPU run, metered by the patched NVML
    action = np.zeros(env.action_space.shape, dtype=np.int64)
    _, _, _, _, info = env.step(action)
    segments = [r for r in info["real"]["log"] if r["event"] == "segment"]
    assert segments
    for r in segments:
        assert r["measured_j"] == pytest.approx(100.0 * r["wall_s"], rel=0.05, abs=0.05)
        assert r["mean_w"] == pytest.approx(100.0, rel=0.5)  # short stretches: mJ rounding
        assert r["scenario_j"] == pytest.approx(r["mean_w"] * r["duration_s"], rel=1e-9)
    assert info["energy_j"] == pytest.approx(sum(r["scenario_j"] for r in segments), rel=1e-6)
    assert info["energy_j"] > 10 * sum(r["measured_j"] for r in segments)  # scenario >> wall

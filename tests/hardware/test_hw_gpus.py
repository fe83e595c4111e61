"""Tests for the GPU catalogue and the DVFS power / speed model."""

import numpy as np
import pytest

from edgegym.hardware import GPUS, GPUSpec, PowerModel, get_gpu, speed_factor

TX2_LEVELS = (
    114.75, 216.75, 318.75, 420.75, 522.75, 624.75, 726.75,
    828.75, 930.75, 1032.75, 1134.75, 1236.75, 1300.5,
)  # fmt: skip


def test_catalogue_has_required_gpus_with_datasheet_numbers():
    assert {"V100-16GB", "A100-40GB", "H100-80GB", "A10G", "TX2"} <= set(GPUS)
    expected = {  # name: (SMs, memory GB, boost MHz, TDP W)
        "V100-16GB": (80, 16, 1530, 300),
        "A100-40GB": (108, 40, 1410, 400),
        "H100-80GB": (132, 80, 1980, 700),
        "A10G": (80, 24, 1710, 300),
        "TX2": (2, 8, 1300.5, 15),
    }
    for name, (sms, mem, fmax, tdp) in expected.items():
        g = get_gpu(name)
        assert (g.sms, g.memory_gb, g.max_clock_mhz, g.max_power_w) == (sms, mem, fmax, tdp)


def test_tx2_clock_levels_exact():
    tx2 = get_gpu("TX2")
    assert tx2.clocks_mhz == TX2_LEVELS
    assert tx2.unified_memory and not tx2.mig_capable


def test_mig_capability_and_clock_grids():
    assert {n for n, g in GPUS.items() if g.mig_capable} == {"A100-40GB", "H100-80GB", "H200-141GB"}
    # every MIG-capable GPU has its profiles; its full instance has 7 GPCs and at most its SMs
    from edgegym.hardware.mig import MIG_PROFILES

    for name in ("A100-40GB", "H100-80GB", "H200-141GB"):
        full = max(MIG_PROFILES[name].values(), key=lambda p: p.gpcs)
        assert full.gpcs == GPUS[name].mig_gpcs == 7 and full.sms <= GPUS[name].sms
    for g in GPUS.values():
        clocks = g.clock_array()
        assert np.all(np.diff(clocks) > 0)
        assert g.idle_power_w < g.max_power_w
        assert g.peak_fp16_tflops > g.peak_fp32_tflops > 0
        if g.name != "TX2":
            assert 400 <= clocks[0] <= 600 and len(clocks) >= 7
            assert np.all(np.diff(clocks) <= 160)


def test_get_gpu_unknown_lists_valid_names():
    with pytest.raises(KeyError) as err:
        get_gpu("RTX-9090")
    for name in GPUS:
        assert name in str(err.value)


def test_spec_validation_rejects_descending_clocks():
    with pytest.raises(ValueError, match="ascending"):
        GPUSpec("bad", 1, 1.0, 1.0, 2.0, (900.0, 800.0), 1.0, 10.0, False, 10.0)


@pytest.mark.parametrize("name", sorted(GPUS))
def test_power_idle_max_and_monotone(name):
    spec = get_gpu(name)
    pm = PowerModel.from_spec(spec)
    f = spec.clock_array()[:, None]  # (n_levels, 1)
    u = np.linspace(0.0, 1.0, 11)[None, :]  # (1, 11)
    p = pm.power(f, u)  # (n_levels, 11)
    assert p.shape == (len(spec.clocks_mhz), 11)
    np.testing.assert_allclose(p[:, 0], spec.idle_power_w)
    assert p[-1, -1] == pytest.approx(spec.max_power_w)
    assert np.all(np.diff(p[:, 1:], axis=0) > 0)  # strictly increasing in clock for u > 0
    assert np.all(np.diff(p, axis=1) > 0)  # strictly increasing in utilisation
    assert np.all((p >= spec.idle_power_w) & (p <= spec.max_power_w + 1e-9))


def test_power_hand_computed_value():
    pm = PowerModel(10.0, 110.0, 500.0, 1500.0, 0.5, 1.0)
    # f = 1000: V = 0.75, V/Vmax = 0.75; P = 10 + 100 * 0.5 * (2/3) * 0.5625
    assert pm.power(1000.0, 0.5) == pytest.approx(10 + 100 * 0.5 * (2 / 3) * 0.5625)
    # below f_min the voltage stays at V_min
    assert pm.voltage(250.0) == pytest.approx(0.5)
    assert pm.energy(1500.0, 1.0, 2.0) == pytest.approx(220.0)


def test_power_rejects_out_of_range():
    pm = PowerModel.from_spec(get_gpu("A100-40GB"))
    with pytest.raises(ValueError):
        pm.power(1500.0, 0.5)
    with pytest.raises(ValueError):
        pm.power(1000.0, 1.5)
    with pytest.raises(ValueError):
        pm.power(0.0, 0.5)


def test_tx2_power_disparity_order_of_etf():
    pm = PowerModel.from_spec(get_gpu("TX2"))
    ratio = pm.power(1300.5, 1.0) / pm.power(114.75, 1.0)
    assert 6.0 < ratio < 10.0  # ETF reports up to 1-to-7.9 between its two tenants


def test_speed_factor():
    f = np.array([325.0, 650.0, 1300.0])
    np.testing.assert_allclose(speed_factor(f, 1300.0), f / 1300.0)
    np.testing.assert_allclose(speed_factor(f, 1300.0, memory_bound=1.0), 1.0)
    half = speed_factor(f, 1300.0, memory_bound=0.5)
    np.testing.assert_allclose(half, 1.0 / (0.5 * 1300.0 / f + 0.5))
    assert np.all(half >= f / 1300.0) and np.all(np.diff(half) > 0)
    m = np.array([[0.0], [0.5], [1.0]])  # (3, 1) broadcast against (3,)
    assert speed_factor(f, 1300.0, m).shape == (3, 3)
    pm = PowerModel.from_spec(get_gpu("TX2"))
    assert pm.speed_factor(1300.5) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        speed_factor(1400.0, 1300.0)
    with pytest.raises(ValueError):
        speed_factor(1000.0, 1300.0, memory_bound=1.2)


def test_gpu_energy_and_attribution_by_hand():
    """Two V100s at 1000 MHz, half busy, 2 s: every family's one energy rule (idle split
    evenly, dynamic in proportion to what each tenant used), worked out by hand."""
    pm = PowerModel.from_spec(get_gpu("V100-16GB"))
    f = 1000.0
    v = pm.min_voltage_v + (pm.max_voltage_v - pm.min_voltage_v) * (
        (f - pm.min_clock_mhz) / (pm.max_clock_mhz - pm.min_clock_mhz)
    )
    dyn = (
        (pm.max_power_w - pm.idle_power_w)
        * 0.5
        * (f / pm.max_clock_mhz)
        * (v / pm.max_voltage_v) ** 2
    )
    total, idle = pm.gpu_energy(np.array([f, f]), 0.5, 2.0)
    assert idle == pytest.approx(2 * pm.idle_power_w * 2.0)
    assert total == pytest.approx(2 * (pm.idle_power_w + dyn) * 2.0)
    assert float(pm.dynamic_power(f, 0.5)) == pytest.approx(dyn)
    # Batched over stretches: (N,) utilisations and durations.
    tot_b, idle_b = pm.gpu_energy(np.array([f, f]), np.array([0.0, 0.5]), np.array([1.0, 2.0]))
    np.testing.assert_allclose(tot_b, [2 * pm.idle_power_w, total])
    np.testing.assert_allclose(idle_b, [2 * pm.idle_power_w, idle])
    # Tenants using 1 and 3 units: idle halves, dynamic 1:3; the split sums to the total.
    split = PowerModel.attribute(total, idle, np.array([1.0, 3.0]))
    np.testing.assert_allclose(
        split, [idle / 2 + (total - idle) / 4, idle / 2 + 3 * (total - idle) / 4]
    )
    assert split.sum() == pytest.approx(total)
    # Nothing busy: only idle is split, evenly.
    np.testing.assert_allclose(PowerModel.attribute(idle, idle, np.zeros(4)), np.full(4, idle / 4))
    with pytest.raises(ValueError, match="utilisation"):
        pm.gpu_energy(np.array([f]), 1.5, 1.0)


@pytest.mark.parametrize("name", ["V100-16GB", "A100-40GB", "TX2"])
def test_one_gpu_energy_equals_the_power_sum_bit_for_bit(name):
    """One GPU's shortcut (the clock's factors worked out once) gives the same joules, to the
    bit, as the power of every GPU summed, for batched and scalar stretches."""
    pm = PowerModel.from_spec(get_gpu(name))
    rng = np.random.default_rng(1)
    u = np.concatenate([rng.random(300), [0.0, 1.0]])
    t = rng.random(302) * 3
    for f in (pm.min_clock_mhz, pm.max_clock_mhz, 0.5 * (pm.min_clock_mhz + pm.max_clock_mhz)):
        clock = np.array([f])
        want = pm.power(clock, u[:, None]).sum(axis=-1) * t
        total, idle = pm.gpu_energy(clock, u, t)
        np.testing.assert_array_equal(total, want)
        np.testing.assert_array_equal(idle, pm.idle_power_w * t)
        assert pm.gpu_energy(clock, 0.25, 2.0)[0] == pm.power(clock, [[0.25]]).sum() * 2.0
    with pytest.raises(ValueError, match="clock"):
        pm.gpu_energy(np.array([pm.max_clock_mhz * 2]), 0.5, 1.0)

"""ETF (SEC'23): Algorithm 1's worked example, properties against brute force, phi_fair."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from edgegym.baselines import make_policy
from edgegym.baselines.etf import etf_time_slices, fairness, phi_fair
from edgegym.families.energy import EnergyFairShareEnv


def test_worked_example_section_4_3():
    power = np.array([2.0, 3.0, 8.0])
    slices = etf_time_slices(power, 30, phi=0.7)
    assert slices.tolist() == [14, 9, 7]
    assert (slices * power).tolist() == [28, 27, 56]


def _brute(power, weights, quantum, demands, guarantee):
    """All integer allocations: Pareto-efficient ones and the best achievable minimum energy."""
    n = len(power)
    best = -1.0
    total = min(quantum, int(sum(demands)))
    for alloc in itertools.product(*(range(d + 1) for d in demands)):
        a = np.array(alloc)
        if a.sum() != total or np.any(a < guarantee):
            continue
        best = max(best, float(np.min(a * power / weights)))
    assert best >= 0 or n == 0
    return best


@pytest.mark.parametrize("seed", range(40))
def test_pareto_and_theorem_3_against_brute_force(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 4))
    quantum = int(rng.integers(1, 13))
    power = rng.uniform(0.5, 8.0, n)
    weights = rng.integers(1, 4, n).astype(float)
    demands = rng.integers(0, quantum + 2, n)
    phi = float(rng.choice([0.0, 0.3, 0.7, 1.0, rng.uniform()]))
    slices = etf_time_slices(power, quantum, phi, weights, demands)
    # Pareto efficiency: never above demand, every unit handed out unless all demands are met.
    assert np.all(slices <= demands)
    assert slices.sum() == min(quantum, demands.sum())
    # Time guarantee (line 1) and Theorem 3: max-min weighted energy subject to it.
    guarantee = np.minimum(np.floor(weights / weights.sum() * quantum * phi + 1e-9), demands)
    assert np.all(slices >= guarantee)
    best = _brute(power, weights, quantum, demands, guarantee)
    assert np.min(slices * power / weights) == pytest.approx(best)


def test_phi_one_is_time_fairness_and_zero_energy_fairness():
    power = np.array([7.5, 1.7, 3.0])
    w = np.array([1.0, 1.0, 2.0])
    tf = etf_time_slices(power, 40, 1.0, w)
    assert tf.tolist() == [10, 10, 20]  # proportional to weights
    ef = etf_time_slices(power, 400, 0.0, w)
    e = ef * power / w
    assert e.max() - e.min() <= power.max() / w.min() + 1e-9  # equal within one unit


def test_phi_fair_is_where_energy_fairness_stops_being_perfect():
    power = np.array([4.0, 1.0])
    assert phi_fair(power) == pytest.approx(0.4)
    assert phi_fair(power, [2.0, 1.0]) == pytest.approx(0.5)
    for phi, perfect in ((0.35, True), (0.45, False)):
        s = etf_time_slices(power, 10_000, phi)
        _, f_e, _ = fairness(s, s * power)
        assert (f_e > 0.999) == perfect


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"power": [1.0, -2.0], "quantum": 10}, "power"),
        ({"power": [1.0, 2.0], "quantum": 10, "phi": 1.5}, "phi"),
        ({"power": [1.0, 2.0], "quantum": 10, "weights": [1.0, 0.0]}, "weights"),
        ({"power": [1.0, 2.0], "quantum": -1}, "quantum"),
        ({"power": [1.0, 2.0], "quantum": 10, "demands": [1, -1]}, "demands"),
    ],
)
def test_bad_inputs_are_rejected(kwargs, needle):
    with pytest.raises(ValueError, match=needle):
        etf_time_slices(**kwargs)


def test_phi_fair_rejects_bad_power_and_weights():
    with pytest.raises(ValueError, match="power"):
        phi_fair([0.0, 1.0])
    with pytest.raises(ValueError, match="weights"):
        phi_fair([1.0, 2.0], [1.0, -1.0])


def _episode(name, scenario, **kw):
    env = EnergyFairShareEnv(scenario, max_tenants=3, **kw)
    pol = make_policy(name, env)
    obs, _ = env.reset(seed=0)
    term = False
    while not term:
        a, _ = pol.predict(obs)
        obs, _, term, _, info = env.step(a)
    return env, info


def test_env_time_fairness_known_answer():
    env, info = _episode("tf", "etf-tx2-resnet50-mobilenetv2", quanta=20)
    m = info["episode_metrics"]
    assert m["time_share_A1"] == pytest.approx(0.5)
    power, _ = env.profiles(0.0)
    assert m["F_E"] == pytest.approx(power[1] / power[0])
    assert m["F_T"] == pytest.approx(1.0)


def test_env_dynamic_tenants_get_no_time_when_absent():
    _, info = _episode("etf", "etf-dynamic-3", quanta=300)
    m = info["episode_metrics"]
    # A3 is present 30 s of the 90 s run: at most a third of the time.
    assert 0 < m["time_share_A3"] <= 1 / 3 + 1e-9
    assert m["time_share_A1"] + m["time_share_A2"] + m["time_share_A3"] == pytest.approx(1.0)


def test_clock_schedule_changes_power_mid_episode(tmp_path):
    import yaml

    path = tmp_path / "sched.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "name": "sched",
                "family": "energy",
                "quanta": 20,
                "tenants": [
                    {"model": "resnet50", "clock_mhz": [[0, 1300.5], [3.0, 726.75]]},
                    {"model": "mobilenetv2", "clock_mhz": 726.75},
                ],
            }
        )
    )
    env = EnergyFairShareEnv(str(path), max_tenants=2)
    pol = make_policy("tf", env)
    obs, _ = env.reset(seed=0)
    energy = []
    for _ in range(20):
        a, _ = pol.predict(obs)
        obs, _, _, _, info = env.step(a)
        energy.append(info["tenant_energy_j"][0])
    assert energy[0] > energy[-1] * 2  # A1 drops from 1300 to 726 MHz at t = 3 s

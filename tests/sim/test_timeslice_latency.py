"""Latency from the simulated CFS order (ETF §5): slices run back to back, lowest virtual runtime
first; a request's wait is the vacation before its tenant's slice. Worked by hand."""

from __future__ import annotations

import numpy as np
import pytest

from edgegym.baselines.etf import ETFPolicy
from edgegym.families.energy import EnergyFairShareEnv
from edgegym.families.energy.timeslice import TimeSliceExecutor, cfs_offsets, slice_latency

T = 0.3
SERVICE = np.array([0.01, 0.02, 0.04])
POWER = np.ones(3)
INF = np.full(3, np.inf)


def _run(ex: TimeSliceExecutor, units, work=INF):
    return ex.run(np.array(units), POWER, SERVICE, np.asarray(work, dtype=float), T)


def test_offsets_follow_the_virtual_runtime():
    vr = np.array([[2.0, 1.0, 1.0], [0.0, 0.0, 5.0]])
    granted = np.array([[0.1, 0.1, 0.1], [0.0, 0.2, 0.1]])
    ran = np.array([[0.1, 0.05, 0.1], [0.0, 0.2, 0.1]])
    # Row 0: order 1, 2 (tie on vruntime: lower slot), 0. Row 1: slot 0 does not run.
    np.testing.assert_allclose(cfs_offsets(vr, granted, ran), [[0.15, 0.0, 0.05], [0.3, 0.0, 0.2]])
    lat = slice_latency(np.array([0.01, 0.01]), np.array([0.1, 0.0]), np.array([0.2, 0.1]))
    assert lat[0] == pytest.approx(0.01 + 0.2**2 / (2 * 0.3)) and lat[1] == np.inf


def test_a_fixed_order_gives_the_periodic_vacation():
    """Slices of 20 and 40 units of 5 ms (0.1 s, 0.2 s) every 0.3 s: tenant 0 runs first, so
    in the first quantum it has waited nothing and tenant 1 0.1 s; from then on each waits
    T - t_i, and the mean wait is (T - t_i)^2 / (2T)."""
    ex = TimeSliceExecutor(3, 0.005, 1.0)
    q = _run(ex, [20, 40, 0])
    np.testing.assert_allclose(q.offset_s[:2], [0.0, 0.1])
    assert q.latency_s[0] == pytest.approx(SERVICE[0])
    assert q.latency_s[1] == pytest.approx(SERVICE[1] + 0.1**2 / (2 * 0.3))
    assert q.latency_s[2] == np.inf
    for _ in range(3):
        q = _run(ex, [20, 40, 0])
        want = SERVICE[:2] + (T - np.array([0.1, 0.2])) ** 2 / (2 * T)
        np.testing.assert_allclose(q.latency_s[:2], want)


def test_the_order_changes_the_latency():
    """Quantum 0: tenant 0 gets 0.1 s, tenant 1 0.2 s (vruntime 1 each after it). Quantum 1:
    tenant 0 gets 0.2 s, tenant 1 nothing (vruntime: 0 -> 2, 1 stays 1). Quantum 2: tenant 1
    (vruntime 1) now runs before tenant 0 (2): tenant 1 has waited since 0.3 s, i.e. 0.3 s
    (its whole skipped quantum); tenant 0's slice ended at 0.5 s and begins at 0.6 + 0.1."""
    ex = TimeSliceExecutor(3, 0.005, 1.0)
    _run(ex, [20, 40, 0])
    q1 = _run(ex, [40, 0, 0])
    assert q1.latency_s[0] == pytest.approx(SERVICE[0] + 0.2**2 / (2 * 0.4))  # V = 0.3 - 0.1
    assert q1.latency_s[1] == np.inf
    q2 = _run(ex, [20, 20, 0])
    assert q2.order.tolist() == [1, 0]
    assert q2.latency_s[1] == pytest.approx(SERVICE[1] + 0.3**2 / (2 * 0.4))
    assert q2.latency_s[0] == pytest.approx(SERVICE[0] + 0.2**2 / (2 * 0.3))


def test_nothing_waiting_restarts_the_vacation():
    """A tenant with nothing queued (or absent) has no request waiting: its vacation starts
    again at the end of that quantum."""
    ex = TimeSliceExecutor(3, 0.005, 1.0)
    _run(ex, [20, 20, 0], work=[np.inf, np.inf, 0.0])
    _run(ex, [20, 0, 0], work=[np.inf, 0.0, 0.0])  # tenant 1 idle: restarts at 0.6
    q = _run(ex, [20, 20, 20], work=[np.inf, np.inf, np.inf])
    # Order by vruntime: tenant 2 (0), tenant 1 (1), tenant 0 (2).
    np.testing.assert_allclose(q.offset_s, [0.2, 0.1, 0.0])
    assert q.latency_s[2] == pytest.approx(SERVICE[2])
    assert q.latency_s[1] == pytest.approx(SERVICE[1] + 0.1**2 / (2 * 0.2))
    assert q.latency_s[0] == pytest.approx(SERVICE[0] + 0.4**2 / (2 * 0.5))  # ended at 0.4


def test_a_tenant_arriving_with_a_low_vruntime_runs_first():
    """etf-dynamic-3: A2 arrives at 15 s with vruntime 0 while A1's is about 50, so it runs
    first from then on: at its first quantum A2 waits nothing and A1 waits A2's slice."""
    env = EnergyFairShareEnv("etf-dynamic-3")
    pol = ETFPolicy(env, phi=0.7)
    obs, _ = env.reset(seed=0)
    arrive = round(15.0 / env.params.quantum_s)
    for k in range(arrive + 2):
        action, _ = pol.predict(obs)
        obs, _, _, _, info = env.step(action)
        lat, ran = info["latency_s"], info["tenant_time_s"]
        service = env.params.service_tab[k]
        if k < arrive:
            assert lat[0] == pytest.approx(service[0]) and lat[1] == np.inf
        elif k == arrive:
            assert lat[1] == pytest.approx(service[1])
            assert lat[0] == pytest.approx(service[0] + ran[1] ** 2 / (2 * T))

"""MPS interference in the MIG family -- co-located work serves and retrains
``1 - s`` as fast when the scenario turns it on, and nothing changes when it is off."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from edgegym.baselines import make_policy
from edgegym.families.mig import MIGReconfigEnv

SMALL = {"window_s": 40, "windows": 2, "data_fraction": 0.2}


def _state_with_retraining(env: MIGReconfigEnv):
    """Step Ekya-on-MIG until a retraining job runs beside the inference instances."""
    pol = make_policy("ekya-mig", env)
    obs, _ = env.reset(seed=0)
    pol.reset(0)
    for _ in range(40):
        a, _ = pol.predict(obs)
        obs, *_ = env.step(a)
        st = env.state
        if st.running[0].any() and (st.task[0] >= 0).sum() >= 3 and st.time_s[0] > 8:
            return st
    raise AssertionError("no retraining job ran beside inference")


@pytest.mark.parametrize("s_inf, s_ret", [(0.02, 0.043), (0.3, 0.1)])
def test_colocated_work_progresses_one_minus_s_as_fast(s_inf, s_ret):
    off = MIGReconfigEnv("migrator-w7", **SMALL)
    on = MIGReconfigEnv(
        "migrator-w7",
        **SMALL,
        **{
            "mps.interference": True,
            "mps.inference_slowdown": s_inf,
            "mps.retrain_slowdown": s_ret,
        },
    )
    st = _state_with_retraining(off)
    until = st.time_s + 0.01  # a short stretch: no job finishes
    a = off.dynamics.stretch(off.params, copy.deepcopy(st), until)
    b = on.dynamics.stretch(on.params, copy.deepcopy(st), until)
    assert np.array_equal(a.dt, b.dt) and np.all(a.dt > 0)
    run = a.active[0]
    assert run.any()
    np.testing.assert_allclose(b.work[0][run], (1 - s_ret) * a.work[0][run], rtol=1e-12)
    np.testing.assert_allclose(b.finish[0][run], a.finish[0][run] / (1 - s_ret), rtol=1e-12)
    # served requests: min(arrivals + backlog, capacity); where capacity binds, 1 - s of it
    st2 = copy.deepcopy(st)
    st2.backlog[:] = 1e6  # every queue saturated: service is capacity-bound
    a = off.dynamics.stretch(off.params, copy.deepcopy(st2), until)
    b = on.dynamics.stretch(on.params, copy.deepcopy(st2), until)
    served = a.served[0] > 0
    assert served.any()
    np.testing.assert_allclose(b.served[0][served], (1 - s_inf) * a.served[0][served], rtol=1e-9)


def test_a_lone_task_is_not_slowed():
    """One task alone on the GPU has nothing to interfere with."""
    on = MIGReconfigEnv("migrator-w7", **SMALL, **{"mps.interference": True})
    off = MIGReconfigEnv("migrator-w7", **SMALL)
    st = _state_with_retraining(off)
    st.running[:] = False  # no retraining ...
    st.task[0][st.task[0] != 0] = -1  # ... and only tenant 0's inference instances
    st.backlog[:] = 1e6
    until = st.time_s + 0.25
    a = off.dynamics.stretch(off.params, copy.deepcopy(st), until)
    b = on.dynamics.stretch(on.params, copy.deepcopy(st), until)
    assert a.served[0][0] > 0
    np.testing.assert_array_equal(a.served, b.served)


def _episode(overrides) -> tuple[list, dict]:
    env = MIGReconfigEnv("migrator-w5", **SMALL, **overrides)
    pol = make_policy("astraea", env)
    obs, _ = env.reset(seed=1)
    pol.reset(1)
    trace, term = [], False
    while not term:
        a, _ = pol.predict(obs)
        obs, r, term, _, info = env.step(a)
        trace.append((int(a), r, obs.tobytes()))
    return trace, info["episode_metrics"]


def test_off_leaves_trajectories_bitwise_and_spaces_unchanged():
    base, m0 = _episode({})
    off, m1 = _episode({"mps.interference": False, "mps.retrain_slowdown": 0.5})
    assert base == off and m0 == m1
    _, m2 = _episode({"mps.interference": True})
    assert m2 != m0  # on, the dynamics change (the policy may then allocate differently)
    env_on = MIGReconfigEnv("migrator-w5", **SMALL, **{"mps.interference": True})
    env_off = MIGReconfigEnv("migrator-w5", **SMALL)
    assert env_on.observation_space == env_off.observation_space
    assert env_on.action_space == env_off.action_space


def test_slowdown_out_of_range_is_a_clear_error():
    with pytest.raises(ValueError, match=r"mps\.retrain_slowdown"):
        MIGReconfigEnv("migrator-w7", **SMALL, **{"mps.retrain_slowdown": 1.0})

"""The thief's work per decision is bounded by a count (never by a timer): scores asked for at most
``thief_work_bound``, and a Delta so fine that the bound explodes is refused before any work."""

from __future__ import annotations

import math

import pytest

from edgegym.baselines import make_policy
from edgegym.baselines.ekya import MAX_STEPS, thief_schedule, thief_work_bound
from edgegym.families.continual import ContinualLearningEnv


@pytest.mark.parametrize(("gpus", "delta"), [(1, 0.1), (1, 0.01), (4, 0.05), (16, 0.1)])
def test_every_decision_stays_within_the_bound(gpus, delta):
    env = ContinualLearningEnv("ekya-cityscapes", gpus=gpus, windows=2)
    env.reset(seed=0)
    policy = make_policy(f"thief:delta={delta}", env)
    work: list[int] = []
    done = False
    while not done:
        snap = env.sim_state()
        thief_schedule(snap, delta, work=work)
        step = round(delta / snap.quantum)
        n_quanta = math.floor(snap.capacity / snap.quantum + 1e-9)
        assert 0 < work[-1] <= thief_work_bound(snap.streams, n_quanta, step)
        action, _ = policy.predict(None)
        *_, term, trunc, _ = env.step(action)
        done = term or trunc
    assert len(work) >= 2


def test_the_bound_grows_with_the_steps_and_the_square_of_the_jobs():
    assert thief_work_bound(10, 100, 10) == 20 + 2 * 20 * 19 * 11
    assert thief_work_bound(10, 100, 1) > 9 * thief_work_bound(10, 100, 10)
    assert thief_work_bound(20, 100, 10) > 3.9 * thief_work_bound(10, 100, 10)


def test_a_delta_too_fine_for_the_gpus_is_refused_before_any_work():
    env = ContinualLearningEnv("ekya-cityscapes", gpus=16, windows=1, share_quantum=0.001)
    env.reset(seed=0)
    with pytest.raises(ValueError, match=f"16,000 steps over 16 GPUs; at most {MAX_STEPS}"):
        make_policy("thief:delta=0.001", env)
    make_policy(f"thief:delta={16 / MAX_STEPS}", env)  # exactly the limit is allowed
    with pytest.raises(ValueError, match="at most"):
        thief_schedule(env.sim_state(), 0.001)

"""MPS interference in the continual family (scenario ``mps``): while a retraining job holds a
share beside inference, inference keeps ``1 - s_inf`` of its share's frames and the job
progresses ``1 - s_ret`` as fast; nothing is slowed without retraining, and nothing changes
when it is off."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from edgegym.baselines import thief_schedule
from edgegym.families.continual.env import ContinualLearningEnv
from edgegym.workload.continual import inference_accuracy

SMALL = {"windows": 2, "streams": 4}


def _on(s_inf: float = 0.2, s_ret: float = 0.1, **extra) -> ContinualLearningEnv:
    return ContinualLearningEnv(
        "ekya-cityscapes",
        **SMALL,
        **extra,
        **{
            "mps.interference": True,
            "mps.inference_slowdown": s_inf,
            "mps.retrain_slowdown": s_ret,
        },
    )


def _thief_until_retraining(env: ContinualLearningEnv) -> None:
    """Step the thief until a retraining job holds a share beside inference."""
    env.reset(seed=0)
    for _ in range(20):
        st = env.state
        if ((st.job_cfg[0] >= 0) & (st.share_retrain[0] > 0)).any():
            return
        env.step(env.encode_action(thief_schedule(env.sim_state(), delta=0.1)[0]))
    raise AssertionError("no retraining job ran")


@pytest.mark.parametrize(("s_inf", "s_ret"), [(0.153, 0.036), (0.4, 0.25)])
def test_colocated_inference_and_retraining_are_slowed(s_inf: float, s_ret: float) -> None:
    off = ContinualLearningEnv("ekya-cityscapes", **SMALL)
    on = _on(s_inf, s_ret)
    _thief_until_retraining(off)
    st = off.state
    want = inference_accuracy(
        st.model_acc,
        off.spec_.infer_factor[st.infer_cfg],
        np.take_along_axis(st.infer_share, st.infer_cfg[..., None], axis=-1)[..., 0],
        st.share_infer * (1 - s_inf),
    )
    got = on.dynamics.stream_accuracy(on.params, st)
    np.testing.assert_allclose(got, want, rtol=1e-12)
    assert (got < off.dynamics.stream_accuracy(off.params, st) - 1e-9).any()
    # One step from the same state with the same action: each job moves 1 - s_ret as far in
    # the same time (or the stretch is shorter only because a job finishes later).
    action = off.encode_action(thief_schedule(off.sim_state(), delta=0.1)[0])
    on.state = copy.deepcopy(st)
    on._ended = off._ended
    before = st.job_left[0].copy()
    t0 = float(st.time_s[0])
    off.step(action)
    on.step(action)
    dt_off, dt_on = float(off.state.time_s[0] - t0), float(on.state.time_s[0] - t0)
    run = (on.state.job_cfg[0] >= 0) & (off.state.job_cfg[0] >= 0)
    assert run.any() and dt_on > 0 and dt_off > 0
    rate_off = (before - off.state.job_left[0])[run] / dt_off
    rate_on = (before - on.state.job_left[0])[run] / dt_on
    np.testing.assert_allclose(rate_on, (1 - s_ret) * rate_off, rtol=1e-9)


def test_inference_alone_is_not_slowed() -> None:
    """No retraining share: nothing shares the GPU with inference."""
    off = ContinualLearningEnv("ekya-cityscapes", **SMALL)
    on = _on()
    _thief_until_retraining(off)
    st = copy.deepcopy(off.state)
    st.share_retrain[:] = 0.0
    np.testing.assert_array_equal(
        on.dynamics.stream_accuracy(on.params, st), off.dynamics.stream_accuracy(off.params, st)
    )


def _episode(policy: str, overrides: dict) -> tuple[list, dict]:
    from edgegym.baselines import make_policy

    env = ContinualLearningEnv("ekya-cityscapes", **SMALL, **overrides)
    pol = make_policy(policy, env)
    obs, _ = env.reset(seed=1)
    pol.reset(1)
    trace, done = [], False
    while not done:
        a, _ = pol.predict(obs)
        obs, r, done, _, info = env.step(a)
        trace.append((np.asarray(a).tobytes(), r, {k: v.tobytes() for k, v in obs.items()}))
    return trace, info["episode_metrics"]


def test_off_leaves_trajectories_bitwise_and_spaces_unchanged() -> None:
    base, m0 = _episode("thief", {})
    off, m1 = _episode("thief", {"mps.interference": False, "mps.inference_slowdown": 0.5})
    assert base == off and m0 == m1
    _, m2 = _episode("thief", {"mps.interference": True})
    assert m2["accuracy"] < m0["accuracy"]  # the thief retrains, so its inference is slowed
    # no retraining at all: interference has nothing to act on
    assert _episode("no-retrain", {"mps.interference": True}) == _episode("no-retrain", {})
    on = _on()
    plain = ContinualLearningEnv("ekya-cityscapes", **SMALL)
    assert on.observation_space == plain.observation_space
    assert on.action_space == plain.action_space


def test_timeline_accuracy_counts_the_slowdown() -> None:
    """The recorded timeline's accuracy is the one the episode is scored on."""
    env = _on(record_timeline=True)
    env.reset(seed=2)
    done = False
    while not done:
        action = env.encode_action(thief_schedule(env.sim_state(), delta=0.1)[0])
        *_, done, _, info = env.step(action)
    tl = env.timeline
    span = np.array([seg["t1"] - seg["t0"] for seg in tl])
    acc = np.array([np.mean(seg["accuracy"]) for seg in tl])
    mean = float((span * acc).sum() / span.sum())
    assert mean == pytest.approx(info["episode_metrics"]["accuracy"], abs=1e-9)


def test_slowdown_out_of_range_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"mps\.inference_slowdown"):
        _on(s_inf=1.0)


def test_the_real_backend_refuses_simulated_interference() -> None:
    """The device has its own interference: the simulated one would count it twice."""
    with pytest.raises(ValueError, match=r"mps\.interference: true models it in simulation"):
        ContinualLearningEnv("ekya-cityscapes-mps-interference", backend="real")

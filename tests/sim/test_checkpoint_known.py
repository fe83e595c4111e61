"""Known answers for the continual family's retraining checkpoints, computed by hand.

:func:`~edgegym.families.continual.dynamics.checkpoint_work` is shared by the batched
dynamics and the reference engine (``tests/reference/engine.py``), so the equivalence tests
cannot catch a wrong rule in it. Ekya (arXiv §5, "Model checkpointing and reloading",
"Adapting estimates during retraining") checkpoints a retraining job every few epochs; the
scenario's ``profiler.checkpoint_epochs`` of a configuration's ``epochs`` makes a checkpoint
every ``step = checkpoint_epochs / epochs`` of the job's progress, at progress ``step, 2 step,
...`` strictly before 1 (a "checkpoint" at progress 1 is the job's completion, not a
checkpoint). Every number below is worked out in the comments.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from edgegym.families.continual.dynamics import checkpoint_work
from edgegym.families.continual.env import ContinualLearningEnv

INF = math.inf
TOTAL = 20.0  # GPU-seconds of the job in every case below


def _work(total: float, left: float, ckpt: int, step: float) -> float:
    """checkpoint_work of one job, as a Python float."""
    out = checkpoint_work(
        np.array([total]), np.array([left]), np.array([ckpt], dtype=np.int64), np.array([step])
    )
    assert out.shape == (1,)
    return float(out[0])


# checkpoint_epochs = 3 of 10 epochs: step = 3 / 10 = 0.3, checkpoints at progress 0.3, 0.6,
# 0.9 (1.2 is past the end), i.e. after 6, 12 and 18 of the job's 20 GPU-seconds. The job has
# done ``20 - left`` GPU-seconds (progress (20 - left) / 20); the work to the next checkpoint
# is (next checkpoint's GPU-seconds) - (done).
STEP_3_OF_10 = [
    # (left, checkpoints passed, expected work, why)
    (20.0, 0, 6.0, "progress 0: next checkpoint 0.3 -> 0.3 * 20 - 0 = 6"),
    (17.0, 0, 3.0, "progress 0.15 (done 3): 6 - 3 = 3"),
    (14.0, 0, 0.0, "progress 0.3 exactly, not yet counted: the checkpoint is now, 6 - 6 = 0"),
    (14.0, 1, 6.0, "progress 0.3, counted: next 0.6 -> 12 - 6 = 6"),
    (11.0, 1, 3.0, "progress 0.45 (done 9): 12 - 9 = 3"),
    (8.0, 2, 6.0, "progress 0.6, counted: next 0.9 -> 18 - 12 = 6"),
    (3.0, 2, 1.0, "progress 0.85 (done 17): 18 - 17 = 1"),
    (2.0, 3, INF, "progress 0.9, counted: next 1.2 >= 1 -> none before the end"),
    (1.0, 3, INF, "progress 0.95: none"),
    (1e-9, 3, INF, "progress just before 1: none"),
    (0.0, 3, INF, "progress 1 (finished): none"),
]


@pytest.mark.parametrize(("left", "ckpt", "want", "why"), STEP_3_OF_10)
def test_three_of_ten_epochs(left: float, ckpt: int, want: float, why: str) -> None:
    got = _work(TOTAL, left, ckpt, 0.3)
    if math.isinf(want):
        assert got == INF, why
    else:
        assert got == pytest.approx(want, abs=1e-9), why


@pytest.mark.parametrize(
    ("left", "ckpt", "step", "want", "why"),
    [
        # checkpoint_epochs = 5 of 10: step 0.5, one checkpoint at progress 0.5 (10 GPU-s).
        (20.0, 0, 0.5, 10.0, "5 of 10, progress 0: 0.5 * 20 - 0 = 10"),
        # The second would be at progress 2 * 0.5 = 1: the job's end, not a checkpoint.
        (10.0, 1, 0.5, INF, "5 of 10, progress 0.5 counted: 1.0 is not strictly before 1"),
        (0.5, 1, 0.5, INF, "5 of 10, progress 0.975: none"),
        # checkpoint_epochs = 1 of 49: 49 * (1 / 49) is 0.9999999999999999 in floating point,
        # one ulp below 1, yet it is progress 1 (the job's end), so no checkpoint there; the
        # one before, 48 / 49, is a checkpoint: at progress 47 / 49 (left 2 / 49 of 20 = 40 / 49,
        # 47 counted) the work to it is 20 / 49.
        (40 / 49, 47, 1 / 49, 20 / 49, "1 of 49, progress 47/49 counted: 48/49 is next"),
        (20 / 49, 48, 1 / 49, INF, "1 of 49, progress 48/49 counted: 49/49 = 1 is the end"),
        # checkpoint_epochs = 1 of 3: 3 * (1/3) = 1.0; checkpoints at 1/3 and 2/3 only.
        (40 / 3, 1, 1 / 3, 20 / 3, "1 of 3, progress 1/3 counted: 2/3 * 20 - 20/3 = 20/3"),
        (20 / 3, 2, 1 / 3, INF, "1 of 3, progress 2/3 counted: 3/3 = 1 is the end"),
        # checkpoint_epochs = 999 of 1000: one checkpoint, one epoch before the end, at
        # progress 0.999 < 1: 0.999 * 20 = 19.98 GPU-s from the start.
        (20.0, 0, 0.999, 19.98, "999 of 1000, progress 0: 0.999 * 20 - 0 = 19.98"),
        (0.02, 1, 0.999, INF, "999 of 1000, progress 0.999 counted: 1.998 is past the end"),
        # checkpoint_epochs >= epochs: step >= 1, never a checkpoint.
        (20.0, 0, 1.0, INF, "10 of 10: the first would be at progress 1"),
        (20.0, 0, 2.0, INF, "20 of 10: past the end"),
        # checkpoint_epochs = 0 (off): ContinualSpec's step is inf.
        (20.0, 0, INF, INF, "checkpoints off (step inf)"),
    ],
)
def test_boundaries(left: float, ckpt: int, step: float, want: float, why: str) -> None:
    got = _work(TOTAL, left, ckpt, step)
    if math.isinf(want):
        assert got == INF, why
    else:
        assert got == pytest.approx(want, abs=1e-9), why


def test_vectorised_over_jobs() -> None:
    """Several (N, V) jobs at once, each its own row of the tables above (the dynamics call it
    on (N, V) arrays): 2 envs x 2 streams."""
    total = np.array([[20.0, 20.0], [40.0, 20.0]])
    left = np.array([[17.0, 2.0], [40.0, 10.0]])
    ckpt = np.array([[0, 3], [0, 1]], dtype=np.int64)
    step = np.array([[0.3, 0.3], [0.25, 0.5]])
    got = checkpoint_work(total, left, ckpt, step)
    # [0, 0]: 3 of 10 at progress 0.15 -> 3 (above); [0, 1]: progress 0.9 counted -> none;
    # [1, 0]: a 40 GPU-s job, step 0.25, progress 0 -> 0.25 * 40 = 10;
    # [1, 1]: 5 of 10 at progress 0.5 counted -> none.
    np.testing.assert_allclose(got, [[3.0, INF], [10.0, INF]], atol=1e-9)


# ----------------------------------------------------------------------------- in the env
def _scenario(checkpoint_epochs: int) -> dict[str, Any]:
    """1 GPU, 2 streams, 3 windows of 100 s; configuration c0: 10 epochs, 20 GPU-seconds,
    from accuracy 0.5 to 0.8; the micro-profiler's estimates have a 0.05 error."""
    return {
        "name": "checkpoint-known",
        "family": "continual",
        "hardware": {"gpu": "V100-16GB", "gpus": 1, "share_quantum": 0.05},
        "streams": 2,
        "windows": 3,
        "window_s": 100,
        "a_min": 0.0,
        "profiler": {"checkpoint_epochs": checkpoint_epochs, "error": 0.05},
        "retrain_configs": [{"name": "c0", "epochs": 10, "gpu_seconds": 20}],
        "inference_configs": [{"name": "full", "share": 0.1, "accuracy_factor": 1.0}],
        "drift": {
            "kind": "table",
            "start_accuracy": [0.5, 0.5],
            "post_accuracy": [[[0.8]]],
            "gpu_seconds": [[[20]]],
        },
    }


# Stream 0 retrains with c0 on 10 quanta of 0.05 = 1/2 GPU (20 GPU-s take 40 s), inference on
# 2 quanta; stream 1 only infers.
TRAIN = np.array([1, 0, 10, 2, 0, 0, 0, 2], dtype=np.int64)


def test_three_of_ten_epochs_in_the_env(write_scenario) -> None:
    """checkpoint_epochs = 3 of 10 (step 0.3): the 20 GPU-s job at 1/2 GPU passes checkpoints
    at 6, 12, 18 GPU-s, i.e. t = 12, 24, 36 s, and finishes at t = 40 (no fourth checkpoint
    at progress 1.2, nor one at the end). At each checkpoint p the deployed model becomes
    progress_accuracy(0.5, 0.8, p, 3) = 0.5 + 0.3 (1 - e^{-3p}) / (1 - e^{-3}) and the
    estimate of the final accuracy becomes 0.8 + (est0 - 0.8) (1 - p)."""
    env = ContinualLearningEnv(scenario=str(write_scenario(_scenario(3))))
    env.reset(seed=3)
    est0 = float(env.est_post_acc[0, 0])
    assert abs(est0 - 0.8) > 1e-3  # the refinement below is visible
    assert float(env.spec_.checkpoint_step[0]) == pytest.approx(0.3)
    for n, (t, p) in enumerate([(12.0, 0.3), (24.0, 0.6), (36.0, 0.9)], start=1):
        _, _, _, _, info = env.step(TRAIN)
        assert info["time_s"] == pytest.approx(t)
        # p = 0.3: 0.5 + 0.3 * (1 - e^-0.9) / (1 - e^-3) = 0.5 + 0.3 * 0.593430 / 0.950213
        # = 0.687357; p = 0.6: 0.5 + 0.3 * 0.834701 / 0.950213 = 0.763531; p = 0.9:
        # 0.5 + 0.3 * 0.932794 / 0.950213 = 0.794501.
        ckpt = 0.5 + 0.3 * (1 - math.exp(-3 * p)) / (1 - math.exp(-3))
        assert info["model_accuracy"][0] == pytest.approx(ckpt, abs=1e-9)
        assert info["model_accuracy"][1] == pytest.approx(0.5)
        assert env.sim_state().job_target_est[0] == pytest.approx(0.8 + (est0 - 0.8) * (1 - p))
        assert int(env.state.job_ckpt[0, 0]) == n
        assert float(env.state.job_left[0, 0]) == pytest.approx(20.0 - 20.0 * p)
    # 2 GPU-s left at 1/2 GPU: the job finishes at t = 40 with the final model, 0.8.
    _, _, _, _, info = env.step(TRAIN)
    assert info["time_s"] == pytest.approx(40.0)
    assert info["model_accuracy"][0] == pytest.approx(0.8)
    assert env.sim_state().retrained[0]


@pytest.mark.parametrize("every", [10, 20])
def test_no_checkpoint_at_or_past_the_end_in_the_env(write_scenario, every: int) -> None:
    """checkpoint_epochs = 10 or 20 of 10 epochs: step >= 1, no checkpoint at all; the first
    step runs the job to its end at t = 20 / (1/2) = 40 s."""
    env = ContinualLearningEnv(scenario=str(write_scenario(_scenario(every))))
    env.reset(seed=3)
    _, _, _, _, info = env.step(TRAIN)
    assert info["time_s"] == pytest.approx(40.0)
    assert info["model_accuracy"][0] == pytest.approx(0.8)
    assert env.sim_state().retrained[0]

"""Known answers from Ekya's 3-GPU, 2-video example (Table 1, Fig. 4; scenario ekya-table1).

The paper pins down: under the uniform scheduler (even split, 50% of each video's GPUs to
inference, always Cfg1) inference accuracy drops from 65% to 49% (video A) and from 50% to
37.5% (video B) while retraining runs in window 1, and the average over both windows is 56%;
an accuracy-optimised scheduler reaches 73%. It does not say how much a model loses between
the windows or how inference accuracy depends on the share; the scenario file fixes both (no
drift, half-rate inference keeps 75% of the accuracy). Under those assumptions the uniform
average is computed by hand below: 55.2%, 0.8 points under the paper's rounded 56%.
"""

import gymnasium as gym
import numpy as np
import pytest

import edgegym  # noqa: F401
from edgegym.baselines import make_policy
from edgegym.reproduce.ekya_inputs import TABLE1_DRIFTS

ENV_ID = "edgegym/ContinualLearning-v0"


def run(policy: str, **overrides) -> tuple[list[dict], dict]:
    env = gym.make(ENV_ID, scenario="ekya-table1", **overrides)
    pol = make_policy(policy, env)
    obs, info = env.reset(seed=0)
    infos = []
    while True:
        action, _ = pol.predict(obs)
        obs, _, terminated, _, info = env.step(action)
        infos.append(info)
        if terminated:
            return infos, info["episode_metrics"]


def uniform_by_hand(drift: float = 0.0) -> float:
    """Window averages of the uniform scheduler, from Table 1 with 0.75 GPU per job; each model
    loses ``drift`` when window 2 starts."""
    share, half, window = 0.75, 0.75, 120.0

    def window_avg(acc0: float, acc_post: float, gpu_s: float) -> float:
        t = min(gpu_s / share, window)  # retraining time at 0.75 GPU
        # During retraining: half-rate inference (75% of the accuracy); after: full rate.
        return (t * acc0 * half + (window - t) * acc_post) / window

    a1 = window_avg(0.65, 0.75, 85)
    b1 = window_avg(0.50, 0.90, 80)
    a2 = window_avg(0.75 - drift, 0.95, 90)  # window 2 starts at window 1's end, less drift
    b2 = window_avg(0.90 - drift, 0.98, 80)
    return (a1 + b1 + a2 + b2) / 4


def test_uniform_accuracy_drops_during_retraining() -> None:
    infos, _ = run("uniform-c1-50")
    first = infos[0]
    # Allocation actually applied: 1.5 GPUs per video, half to retraining, Cfg1 (index 0).
    assert first["allocation"]["share_retrain"] == pytest.approx([0.75, 0.75])
    assert first["allocation"]["share_infer"] == pytest.approx([0.75, 0.75])
    assert first["allocation"]["retrain_cfg"] == [0, 0]
    # The first decision step ends when B's Cfg1B (80 GPU-s) finishes at 106.7 s; during it
    # accuracy was 65% x 0.75 and 50% x 0.75 (paper: 49% and 37.5%).
    assert first["time_s"] == pytest.approx(80 / 0.75)
    assert first["reward_terms"]["accuracy"] * 120 / (80 / 0.75) == pytest.approx(
        (0.65 * 0.75 + 0.50 * 0.75) / 2
    )
    # (0.65 x 0.75 = 0.4875, the paper's 49%)


def test_uniform_average_matches_hand_computation_and_paper() -> None:
    _, metrics = run("uniform-c1-50")
    assert metrics["accuracy"] == pytest.approx(uniform_by_hand(), abs=1e-9)
    assert metrics["accuracy"] == pytest.approx(0.56, abs=0.01)  # paper: 56%


@pytest.mark.parametrize("drift", TABLE1_DRIFTS)
def test_uniform_average_with_drift_between_the_windows_matches_hand_computation(drift) -> None:
    """The Ekya reproduction also judges Fig. 4's claims with the models losing 4 and 16 points
    when window 2 starts: the uniform average falls by the hand computation's amount."""
    _, metrics = run("uniform-c1-50", **{"drift.drift": drift})
    assert metrics["accuracy"] == pytest.approx(uniform_by_hand(drift), abs=1e-9)
    assert metrics["accuracy"] < uniform_by_hand() - 0.01


def test_thief_beats_uniform_and_approaches_accuracy_optimised() -> None:
    _, uniform = run("uniform-c1-50")
    _, thief = run("thief:delta=0.05")
    # Paper: accuracy-optimised 73% vs uniform 56%. The thief is a heuristic over estimates
    # (exact here: profiler.error = 0); it must clearly beat uniform and come near 73%.
    assert thief["accuracy"] > uniform["accuracy"] + 0.1
    assert thief["accuracy"] == pytest.approx(0.73, abs=0.04)
    # a_MIN = 0.4 holds at all times for the thief (paper: never below a_MIN).
    assert thief["below_a_min_frac"] == 0.0


def test_thief_picks_cheaper_configs_and_prioritises_b() -> None:
    infos, _ = run("thief:delta=0.05")
    alloc = infos[0]["allocation"]
    # Table 1's asterisks: Cfg2 (index 1) for both videos; B's retraining gets more GPUs.
    assert alloc["retrain_cfg"][1] == 1
    assert alloc["share_retrain"][1] >= alloc["share_retrain"][0]
    assert np.sum(alloc["share_retrain"]) + np.sum(alloc["share_infer"]) <= 3 + 1e-9

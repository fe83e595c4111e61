"""Known answers for Ekya's mechanisms as the continual family models them.

* Incremental retraining: a job ends at ``start + (ceiling - start) * quality`` from the model
  it starts from, and a retrained model is served only where it beats the deployed one.
* The uniform baselines: Config 1 and Config 2 are the Pareto points Ekya's procedure picks on
  hold-out streams, and the inference configuration is the frame rate the static share
  sustains, fixed whatever the model's accuracy or the window's demand.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import edgegym  # noqa: F401  registers the ids
from edgegym.baselines import make_policy
from edgegym.families.continual.env import ContinualLearningEnv
from edgegym.families.continual.params import ContinualSpec
from edgegym.scenarios import load
from edgegym.workload.continual import (
    holdout_profile,
    keep_up_config,
    retrained_accuracy,
    swap_if_better,
    uniform_points,
)

ENV = "edgegym/ContinualLearning-v0"


def _one_stream(**drift) -> dict:
    """One stream, two 100 s windows, one retraining configuration of quality 0.5 (10 GPU-s),
    ceiling 0.9, never-retrained model 0.6, 0.1 lost at each window start."""
    return {
        "name": "one-stream",
        "family": "continual",
        "description": "hand-checkable incremental retraining",
        "streams": 1,
        "windows": 2,
        "window_s": 100,
        "hardware": {"gpu": "V100-16GB", "gpus": 1, "share_quantum": 0.1},
        "retrain_configs": [{"name": "a", "gpu_seconds": 10.0, "quality": 0.5}],
        "inference_configs": [{"name": "full", "share": 0.1, "accuracy_factor": 1.0}],
        "drift": {
            "kind": "generated",
            "ceiling": [0.9, 0.9],
            "floor_gap": [0.3, 0.3],
            "drift": [0.1, 0.1],
            **drift,
        },
    }


def _retrain(env: ContinualLearningEnv) -> dict:
    """Retrain stream 0 with configuration ``a`` at 0.5 GPU, inference 0.5 GPU, until the
    window's job finishes; returns the last step's info."""
    while True:
        snap = env.sim_state()
        action = np.array([0 if snap.retrained[0] else 1, 0, 5, 5])
        _, _, done, _, info = env.step(action)
        if done or env.sim_state().retrained[0] or env.sim_state().window != snap.window:
            return info


def test_retrained_accuracy_and_swap_by_hand() -> None:
    assert retrained_accuracy(0.6, 0.9, 0.5) == pytest.approx(0.75)
    assert retrained_accuracy(0.65, 0.9, 0.5) == pytest.approx(0.775)
    # A model above the window's ceiling is pulled down by retraining; it is not served.
    assert retrained_accuracy(0.95, 0.9, 0.5) == pytest.approx(0.925)
    assert swap_if_better(np.array([0.95, 0.6]), np.array([0.925, 0.75])).tolist() == [
        0.95,
        0.75,
    ]


def test_retraining_starts_from_the_deployed_model(write_scenario) -> None:
    env = ContinualLearningEnv(scenario=str(write_scenario(_one_stream())))
    env.reset(seed=0)
    assert env.sim_state().model_acc[0] == pytest.approx(0.6)  # never retrained: the floor
    # Window 0 from the never-retrained model: 0.6 + (0.9 - 0.6) * 0.5.
    assert env.sim_state().true_post_acc[0, 0] == pytest.approx(0.75)
    _retrain(env)
    assert env.sim_state().model_acc[0] == pytest.approx(0.75)
    while env.sim_state().window == 0:
        env.step(np.array([0, 0, 0, 10]))
    # Window 1: the retrained model drifts to 0.75 - 0.1 = 0.65 (above the floor 0.6), and
    # retraining goes half the way from there: 0.65 + 0.25 * 0.5 = 0.775 (a floor-based
    # rule would give 0.75 again).
    snap = env.sim_state()
    assert snap.model_acc[0] == pytest.approx(0.65)
    assert snap.true_post_acc[0, 0] == pytest.approx(0.775)
    assert snap.est_post_acc[0, 0] == pytest.approx(0.775)  # exact micro-profiler
    _retrain(env)
    assert env.sim_state().model_acc[0] == pytest.approx(0.775)


def test_no_retraining_drifts_to_the_floor(write_scenario) -> None:
    env = ContinualLearningEnv(scenario=str(write_scenario(_one_stream())))
    env.reset(seed=0)
    while env.sim_state().window == 0:
        env.step(np.array([0, 0, 0, 10]))
    assert env.sim_state().model_acc[0] == pytest.approx(0.6)  # max(0.6, 0.6 - 0.1)


# ----------------------------------------------------------------------------- uniform
def test_uniform_points_by_hand() -> None:
    cost = np.array([1.0, 2.0, 3.0, 4.0, 5.0])
    acc = np.array([0.5, 0.4, 0.6, 0.7, 0.65])
    # Frontier by cost: 0 (1, 0.5), 2 (3, 0.6), 3 (4, 0.7); 1 and 4 are dominated.
    assert uniform_points(cost, acc) == (3, 2)
    # Five frontier points: Config 1 the most accurate, Config 2 the middle one by cost.
    assert uniform_points(np.arange(1.0, 6.0), np.linspace(0.5, 0.9, 5)) == (4, 2)
    # Four: the lower of the two middle points.
    assert uniform_points(np.arange(1.0, 5.0), np.linspace(0.5, 0.8, 4)) == (3, 1)
    # Two as accurate: Config 1 is the cheaper one.
    assert uniform_points(np.array([1.0, 2.0, 3.0]), np.array([0.5, 0.8, 0.8])) == (1, 0)


@pytest.mark.parametrize("name", ["ekya-cityscapes", "ekya-waymo"])
def test_uniform_configs_come_from_the_holdout_streams(name: str) -> None:
    sc = load(name)
    spec = ContinualSpec.from_scenario(sc)
    uni = sc["uniform"]
    assert uni["holdout_streams"] == 2  # Ekya §5: two hold-out streams
    cost, acc = holdout_profile(sc["drift"], spec.retrain_configs, 2, spec.windows, 1_000_000)
    assert spec.uniform_configs == uniform_points(cost, acc)
    # Different hold-out streams (another seed) may pick other points: the seed matters.
    assert holdout_profile(sc["drift"], spec.retrain_configs, 2, spec.windows, 0)[1].tolist() != (
        acc.tolist()
    )


def test_cityscapes_uniform_configs_known_answer() -> None:
    spec = ContinualSpec.from_scenario(load("ekya-cityscapes"))
    names = [spec.retrain_configs[i].name for i in spec.uniform_configs]
    assert names == ["e30-d100-all", "e15-d50-last"]


def test_keep_up_config_by_hand() -> None:
    need = np.array([0.25, 0.125, 0.25 / 3])
    factor = np.array([1.0, 0.78, 0.64])
    assert keep_up_config(need, factor, 0.1).item() == 2
    assert keep_up_config(need, factor, 0.2).item() == 1
    assert keep_up_config(need, factor, 0.25).item() == 0
    assert keep_up_config(need, factor, 0.01).item() == 2  # none keeps up: the cheapest
    assert keep_up_config(need, factor, np.array([0.1, 0.3])).tolist() == [2, 0]


@pytest.mark.parametrize("policy", ["uniform-c2-50", "uniform-c1-90"])
def test_uniform_inference_configuration_is_fixed(policy: str) -> None:
    # As the paper evaluates the uniform baselines: no micro-profiler holding GPUs (whose
    # share changes as it prunes), so each stream's static split is the same all episode.
    env = gym.make(ENV, scenario="ekya-cityscapes", **{"profiler.cost_s": 0.0})
    u = env.unwrapped
    pol = make_policy(policy, env)
    obs, _ = env.reset(seed=0)
    fraction = float(policy.rsplit("-", 1)[1]) / 100
    seen: set[int] = set()
    done = False
    while not done:
        snap = u.sim_state()
        action, _ = pol.predict(obs)
        obs, _, done, _, info = env.step(action)
        applied = info["allocation"]
        training = (snap.job_cfg >= 0) | snap.can_retrain
        share = np.floor(snap.capacity / snap.streams * fraction / snap.quantum + 1e-9)
        want = keep_up_config(snap.nominal_infer_share, snap.infer_factor, share * snap.quantum)
        cfg = np.asarray(applied["infer_cfg"])[training]
        assert np.all(cfg == want)
        seen.update(cfg.tolist())
    # One configuration all episode long, whatever the models' accuracy and the demand.
    assert len(seen) == 1


def test_a_table_of_more_windows_serves_a_shorter_episode() -> None:
    """A measured profile table lists its windows in order: an episode of k windows runs on the
    table's first k, as an episode of k streams runs on its first k rows (the authors' profiles
    hold 10 of each). More windows than the table holds stay an error that says so."""
    name = "ekya-cityscapes-authors-profiles"
    full = gym.make(ENV, scenario=name).unwrapped
    short = gym.make(ENV, scenario=name, windows=2, streams=3).unwrapped
    full.reset(seed=4)
    short.reset(seed=4)
    for field in ("post_acc", "gpu_seconds"):
        want = getattr(full.profile, field)[:3, :2]
        np.testing.assert_array_equal(getattr(short.profile, field), want)
    np.testing.assert_array_equal(short.profile.start_acc, full.profile.start_acc[:3])
    with pytest.raises(ValueError, match=r"post_accuracy.*10 windows.*runs 12"):
        gym.make(ENV, scenario=name, windows=12)

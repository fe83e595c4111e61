"""The exact search of Algorithm 1's objective (``thief:exact=true``) and the inference-only
thief (``thief:retrain=false``): known answers by brute force over every split of the quanta,
the per-split scores against :meth:`StreamEstimator.best`, and the greedy thief's estimate as a
lower bound at every decision of an episode."""

from __future__ import annotations

import itertools

import gymnasium as gym
import numpy as np
import pytest

from edgegym.baselines import ThiefPolicy, exact_schedule, make_policy, thief_schedule
from edgegym.baselines.ekya import (
    MAX_EXACT_QUANTA,
    StreamEstimator,
    thief_floors,
)
from edgegym.families.continual import ContinualLearningEnv
from tests.baselines.test_thief_bruteforce import brute_force, instance, run_policy


def _snapshots(scenario: str, seed: int, decisions: int, **overrides):
    """The snapshots of the first ``decisions`` decisions of the thief's episode (window 0's
    wait for labels, the start of its jobs, jobs in flight, completions)."""
    env = ContinualLearningEnv(scenario, **overrides)
    env.reset(seed=seed)
    out = []
    for _ in range(decisions):
        snap = env.sim_state()
        out.append(snap)
        alloc = thief_schedule(snap, delta=snap.quantum)[0]
        _, _, terminated, _, _ = env.step(env.encode_action(alloc))
        if terminated:
            break
    return out


@pytest.mark.parametrize(
    ("scenario", "oracle", "overrides"),
    [
        ("ekya-cityscapes", False, {}),
        ("ekya-cityscapes", True, {}),
        ("ekya-table1", True, {}),
        # a concave share curve: the grid's job times come from one vectorised call
        ("ekya-waymo", False, {"streams": 4, "share_alpha": 0.7}),
    ],
)
def test_grid_is_best_for_every_split(scenario: str, oracle: bool, overrides: dict) -> None:
    snaps = _snapshots(scenario, 0, 6, **overrides)
    assert any(s.job_cfg.max() >= 0 for s in snaps)  # a job in flight is among them
    for snap in snaps:
        est = StreamEstimator(snap, oracle)
        n_quanta = int(np.floor(snap.capacity / snap.quantum + 1e-9))
        for v in sorted({0, snap.streams // 2, snap.streams - 1}):  # every one: 3x the time
            grid = est.grid(v, n_quanta)
            for rq in range(n_quanta + 1):
                for iq in range(n_quanta + 1):
                    if rq + iq > n_quanta:
                        assert grid[rq, iq] == -np.inf
                    else:
                        want = est.best(v, rq, iq)[0]
                        assert grid[rq, iq] == pytest.approx(want, abs=1e-12), (v, rq, iq)


def _brute_force_split(snap, oracle: bool) -> float:
    """The best mean score over every split of the quanta that keeps the thief's floors."""
    est = StreamEstimator(snap, oracle)
    n_quanta = int(np.floor(snap.capacity / snap.quantum + 1e-9))
    fl = thief_floors(snap, est, n_quanta)
    options = []
    for v in range(snap.streams):
        top = 0 if fl.let_go[v] else n_quanta
        options.append(
            [
                (rq + iq, est.best(v, rq, iq)[0])
                for rq in range(int(fl.train[v]), top + 1)
                for iq in range(int(fl.infer[v]), n_quanta + 1 - rq)
            ]
        )
    best = -np.inf
    for combo in itertools.product(*options):
        if sum(q for q, _ in combo) <= n_quanta:
            best = max(best, sum(score for _, score in combo))
    return best / snap.streams


@pytest.mark.parametrize("params", [(0, 1, 0.25, 2, 2), (4, 2, 0.25, 3, 2), (5, 1, 0.1, 3, 2)])
def test_exact_schedule_finds_the_brute_force_optimum(write_scenario, params) -> None:
    env = ContinualLearningEnv(str(write_scenario(instance(*params), name="inst.yaml")))
    env.reset(seed=0)
    snap = env.sim_state()
    alloc, value = exact_schedule(snap, oracle=True)
    assert value == pytest.approx(_brute_force_split(snap, True), abs=1e-12)
    est = StreamEstimator(snap, oracle=True)
    quanta = np.round((alloc.share_retrain + alloc.share_infer) / snap.quantum).astype(int)
    assert quanta.sum() <= round(snap.capacity / snap.quantum)
    scores = [
        est.best(v, round(alloc.share_retrain[v] / snap.quantum), round(
            alloc.share_infer[v] / snap.quantum))[0]
        for v in range(snap.streams)
    ]  # fmt: skip
    assert np.mean(scores) == pytest.approx(value, abs=1e-12)  # the allocation is the optimum


def test_exact_search_on_table1() -> None:
    """Table 1's worked example (3 GPUs, two streams) in quanta of 0.25 GPU: every split of
    the estimate, searched by brute force, at several decisions."""
    for snap in _snapshots("ekya-table1", 0, 4, share_quantum=0.25):
        assert exact_schedule(snap, oracle=True)[1] == pytest.approx(
            _brute_force_split(snap, True), abs=1e-12
        )


def test_exact_search_reaches_the_plateau_the_greedy_thief_stops_on(write_scenario) -> None:
    """``test_thief_bruteforce``'s documented instance where Algorithm 1 stops on a plateau
    (a job needs two more quanta before its accuracy improves): thief 0.530 against the best
    fixed allocation's 0.589; the exact search reaches it."""
    env = ContinualLearningEnv(str(write_scenario(instance(4, 2, 0.25, 3, 2), name="p.yaml")))
    brute, _ = brute_force(env)
    greedy = run_policy(env, ThiefPolicy(env, delta=0.25, oracle=True))
    exact = run_policy(env, ThiefPolicy(env, oracle=True, exact=True))
    assert greedy < brute - 0.05  # the plateau
    assert exact >= brute - 1e-9


def test_exact_estimate_bounds_the_thief_at_every_decision() -> None:
    env = ContinualLearningEnv("ekya-cityscapes", windows=3)
    env.reset(seed=1)
    terminated, decisions = False, 0
    while not terminated:
        snap = env.sim_state()
        alloc, value = exact_schedule(snap)
        assert value >= thief_schedule(snap)[1] - 1e-9
        _, _, terminated, _, info = env.step(env.encode_action(alloc))
        np.testing.assert_allclose(info["allocation"]["share_infer"], alloc.share_infer)
        decisions += 1
    assert decisions > 5


def test_inference_only_thief_never_retrains() -> None:
    env = gym.make("edgegym/ContinualLearning-v0", scenario="ekya-cityscapes", windows=3)
    for exact in (False, True):
        policy = make_policy(f"thief:retrain=false,exact={str(exact).lower()}", env)
        obs, info = env.reset(seed=0)
        done = False
        while not done:
            obs, _, terminated, truncated, info = env.step(policy.predict(obs)[0])
            assert not any(s > 0 for s in info["allocation"]["share_retrain"])
            done = terminated or truncated
        assert info["episode_metrics"]["retrainings"] == 0


def test_exact_search_refuses_more_quanta_than_it_takes() -> None:
    env = gym.make("edgegym/ContinualLearning-v0", scenario="ekya-cityscapes", gpus=16)
    assert 16 / env.unwrapped.spec_.quantum > MAX_EXACT_QUANTA
    with pytest.raises(ValueError, match=r"at most 800 quanta.*coarser hardware.share_quantum"):
        make_policy("thief:exact=true", env)
    make_policy("thief", env)  # the greedy thief takes it
    coarse = gym.make(
        "edgegym/ContinualLearning-v0", scenario="ekya-cityscapes", gpus=16, share_quantum=0.05
    )
    make_policy("thief:exact=true", coarse)

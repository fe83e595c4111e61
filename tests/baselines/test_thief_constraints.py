"""The thief's hard constraints: a_MIN for every inference job, progress for jobs in flight.

Regression: on ekya-cityscapes (1 GPU, 10 streams), seed 0, the thief used to leave stream 0
with no inference share for ~24 s in window 3 (accuracy 0, below a_MIN) and to keep
retraining jobs in flight at a zero share (stalled). a_MIN was only a flat penalty of 1 per
stream, so once the fair start left a stream below a_MIN (its model needed 13 quanta, the
fair share was 5) taking the rest of its share cost nothing more; and a running job robbed of
its last quantum was reported as "no retraining" while the engine kept it, stalled.
"""

from __future__ import annotations

import dataclasses
import time

import gymnasium as gym
import numpy as np
import pytest

import edgegym
from edgegym.baselines import thief_schedule
from edgegym.baselines.ekya import StreamEstimator, fair_allocation, thief_floors
from edgegym.hardware.mps import share_speedup

ENV = "edgegym/ContinualLearning-v0"


def _timeline(policy: str, seed: int = 0, **overrides) -> tuple[list[dict], dict]:
    res = edgegym.evaluate(
        ENV,
        [policy],
        scenario="ekya-cityscapes",
        episodes=1,
        seed=seed,
        overrides=overrides,
        progress=False,
        timeline=True,
    )
    assert res.ok, res.errors
    return res.timelines[policy], res.result(policy)["metrics"]


def _violations(timeline: list[dict], a_min: float) -> dict[str, list]:
    out: dict[str, list] = {"no_inference": [], "stalled_job": [], "below_a_min": []}
    for rec in timeline:
        si, sr = np.array(rec["share_infer"]), np.array(rec["share_retrain"])
        running = np.array(rec["retrain_cfg"]) >= 0
        acc = np.array(rec["accuracy"])
        span = (rec["window"], round(rec["t0"], 1), round(rec["t1"], 1))
        for v in np.flatnonzero(si <= 0):
            out["no_inference"].append((*span, int(v)))
        for v in np.flatnonzero(running & (sr <= 0)):
            out["stalled_job"].append((*span, int(v)))
        for v in np.flatnonzero(acc < a_min - 1e-9):
            out["below_a_min"].append((*span, int(v), float(acc[v])))
    return out


@pytest.mark.parametrize("policy", ["thief", "thief:partial=false"])
def test_cityscapes_seed0_no_starved_inference_or_stalled_job(policy):
    timeline, metrics = _timeline(policy)
    bad = _violations(timeline, a_min=0.4)
    assert bad == {"no_inference": [], "stalled_job": [], "below_a_min": []}
    assert metrics["below_a_min_frac"]["mean"] == 0.0


def test_thief_decisions_respect_a_min_and_finish_running_jobs():
    """Every decision of an episode: a_MIN held where the GPUs allow, jobs kept on course."""
    env = gym.make(ENV, scenario="ekya-cityscapes")
    u = env.unwrapped
    env.reset(seed=0)
    done, decisions, with_jobs = False, 0, 0
    while not done:
        snap = u.sim_state()
        alloc, _ = thief_schedule(snap)
        q = snap.quantum
        # a_MIN: here every stream can reach it and the floors fit (checked), so each
        # stream's chosen inference configuration reaches a_MIN and keeps up in its share.
        est = StreamEstimator(snap)
        floors = thief_floors(snap, est, int(round(snap.gpus / q)))
        assert floors.a_min_met.all() and not floors.let_go.any()
        chosen = np.arange(snap.streams), alloc.infer_cfg
        assert np.all(snap.model_acc * snap.infer_factor[alloc.infer_cfg] >= snap.a_min)
        assert np.all(snap.infer_share[chosen] <= alloc.share_infer + 1e-9)
        # Jobs in flight keep a share that finishes them within the window.
        running = np.flatnonzero(snap.job_cfg >= 0)
        if running.size:
            with_jobs += 1
            assert np.all(alloc.retrain_cfg[running] == snap.job_cfg[running])
            speed = share_speedup(
                alloc.share_retrain[running], snap.share_alpha, snap.multi_gpu_efficiency
            )
            assert np.all(speed > 0)
            assert np.all(snap.job_left[running] / speed <= snap.time_left_s + 1e-9)
        assert alloc.share_retrain.sum() + alloc.share_infer.sum() <= snap.gpus + 1e-9
        _, _, done, _, _ = env.step(u.encode_action(alloc))
        decisions += 1
    assert decisions > 50 and with_jobs > 20


def _snapshot(full_rate: float = 0.5, **overrides):
    """Window 0 of ekya-cityscapes, seed 0, in the overloaded regime these checks were written
    for: inference shares scaled so that a full-rate stream needs ``full_rate`` GPUs at nominal
    demand (0.5 by default),
    the window's labels ready and no GPU held by the micro-profiler."""
    env = gym.make(ENV, scenario="ekya-cityscapes")
    env.reset(seed=0)
    snap = env.unwrapped.sim_state()
    scale = full_rate / float(snap.nominal_infer_share.max())
    snap = dataclasses.replace(
        snap,
        infer_share=snap.infer_share * scale,
        infer_base_share=snap.nominal_infer_share * scale,
        retrain_wait_s=0.0,
        reserved=0.0,
    )
    return dataclasses.replace(snap, **overrides) if overrides else snap


def test_a_min_floors_when_not_every_stream_can_meet_it():
    """Floors over capacity: the most streams that fit meet a_MIN, every stream keeps up."""
    # 10 streams with poor models: only the full configuration (about 0.5 GPU, factor 1.0)
    # reaches a_MIN = 0.4, so at most one stream can meet it on one GPU.
    snap = _snapshot(model_acc=np.full(10, 0.41))
    n_quanta = int(round(snap.gpus / snap.quantum))
    floors = thief_floors(snap, StreamEstimator(snap), n_quanta)
    keep = np.ceil(snap.infer_share.min(axis=1) / snap.quantum - 1e-9)
    assert floors.infer.sum() <= n_quanta
    assert np.all(floors.infer >= keep) and np.all(floors.infer >= 1)
    assert floors.a_min_met.sum() == 1  # ~50 quanta each; the other 9 keep their cheapest
    # ... and it is the one whose full configuration is cheapest.
    assert floors.a_min_met[np.argmin(snap.infer_share[:, 0])]
    alloc, _ = thief_schedule(snap)
    assert np.all(alloc.share_infer > 0)
    met = np.flatnonzero(floors.a_min_met)
    assert np.all(alloc.share_infer[met] >= snap.infer_share[met, 0] - 1e-9)
    assert np.all(alloc.infer_cfg[met] == 0)


def test_stream_too_poor_for_a_min_still_served():
    # 0.3 * 1.0 < a_MIN; at the scenario's own 0.25 GPU per full-rate stream the other nine
    # fit at a_MIN together (every 4th frame, x0.6, about 7 quanta each).
    snap = _snapshot(full_rate=0.25, model_acc=np.r_[0.3, np.full(9, 0.8)])
    floors = thief_floors(snap, StreamEstimator(snap), int(round(snap.gpus / snap.quantum)))
    assert not floors.a_min_met[0] and floors.a_min_met[1:].all()
    alloc, _ = thief_schedule(snap)
    assert alloc.share_infer[0] > 0


def test_job_that_cannot_finish_is_let_go_and_one_that_can_is_carried():
    base = _snapshot(full_rate=0.25)  # the inference floors leave GPUs for retraining
    cfg = np.full(10, -1)
    cfg[:2] = 0
    left = np.zeros(10)
    # Stream 0's job needs 1000 GPU-s in a 200 s window on 1 GPU: let go. Stream 1's job
    # needs 10 GPU-s: at least 0.05 GPU.
    left[:2] = [1000.0, 10.0]
    snap = dataclasses.replace(
        base, job_cfg=cfg, job_left=left, job_target_est=np.where(cfg >= 0, 0.9, 0.0)
    )
    est = StreamEstimator(snap)
    floors = thief_floors(snap, est, int(round(snap.gpus / snap.quantum)))
    assert floors.let_go.tolist() == [True] + [False] * 9
    assert floors.train[1] == 5 and floors.train[0] == 0
    alloc, _ = thief_schedule(snap)
    # Let go: no share; its configuration is kept (the only encoding inside the mask).
    assert alloc.share_retrain[0] == 0.0 and alloc.retrain_cfg[0] == 0
    assert alloc.retrain_cfg[1] == 0 and alloc.share_retrain[1] >= 0.05 - 1e-9


def test_running_job_with_share_is_never_reported_idle():
    """A running job given quanta keeps them, even where it cannot finish at that share."""
    base = _snapshot()
    cfg = np.full(10, -1)
    cfg[0] = 3
    left = np.where(cfg >= 0, 50.0, 0.0)
    snap = dataclasses.replace(
        base, job_cfg=cfg, job_left=left, job_target_est=np.where(cfg >= 0, 0.5, 0.0)
    )
    est = StreamEstimator(snap)
    idle_score, idle_cfg, _ = est.best(0, 0, 10)
    assert idle_cfg == -1  # no share: the job waits (the thief never does this; see floors)
    # 1 quantum: 5000 s to finish, far beyond the window: it progresses but gains nothing.
    assert est.best(0, 1, 10)[:2] == (idle_score, 3)
    # 30 quanta: 167 s, it finishes and its (estimated) model counts, better or not.
    score, rcfg, _ = est.best(0, 30, 10)
    assert rcfg == 3 and score != idle_score


def test_fair_allocation_with_floors():
    jobs = [(0, 0), (1, 0), (0, 1), (1, 1)]
    assert fair_allocation(10, jobs) == {(0, 0): 3, (1, 0): 3, (0, 1): 2, (1, 1): 2}
    # Floors below the equal share change nothing.
    low = {(0, 0): 2, (1, 1): 1}
    assert fair_allocation(10, jobs, low) == fair_allocation(10, jobs)
    # A floor above it: the others share the rest equally.
    assert fair_allocation(10, jobs, {(1, 0): 6}) == {(0, 0): 2, (1, 0): 6, (0, 1): 1, (1, 1): 1}
    with pytest.raises(ValueError, match="floors"):
        fair_allocation(3, jobs, {(0, 0): 4})


def _fair_allocation_loop(
    n_quanta: int,
    jobs: list[tuple[int, int]],
    floors: dict[tuple[int, int], int] | None = None,
) -> dict[tuple[int, int], int]:
    """The reference: ``fair_allocation`` as it was, raising the level one quantum at a time
    (O(n_quanta / jobs) numpy sums: over 60 s a decision at 64 GPUs and a 1e-6 quantum)."""
    lo = np.array([(floors or {}).get(j, 0) for j in jobs], dtype=np.int64)
    if lo.sum() > n_quanta:
        raise ValueError(f"floors need {int(lo.sum())} quanta, only {n_quanta} available")
    level = 0
    while np.maximum(lo, level + 1).sum() <= n_quanta:
        level += 1
    quanta = np.maximum(lo, level)
    extra = n_quanta - int(quanta.sum())
    order = sorted(range(len(jobs)), key=lambda j: (jobs[j][1], jobs[j][0]))
    for j in [j for j in order if quanta[j] == level][:extra]:
        quanta[j] += 1
    return {job: int(q) for job, q in zip(jobs, quanta, strict=True)}


def _random_instance(
    rng: np.random.Generator,
) -> tuple[int, list[tuple[int, int]], dict[tuple[int, int], int]]:
    """A small random ``fair_allocation`` input: jobs in shuffled order (the tie-break sorts
    them), floors often 0, sometimes above the equal share, sometimes negative (the loop
    finishes on those too), and quanta from exactly the floors' sum to a few hundred more."""
    streams = int(rng.integers(1, 6))
    jobs = [(v, 0) for v in range(streams)]
    jobs += [(v, 1) for v in range(streams) if rng.random() < 0.6]
    jobs = [jobs[i] for i in rng.permutation(len(jobs))]
    floors = {}
    for job in jobs:
        kind = rng.integers(0, 4)
        if kind == 1:
            floors[job] = int(rng.integers(0, 40))
        elif kind == 2:
            floors[job] = int(rng.integers(-3, 3))
    need = sum(floors.values())
    n_quanta = need + int(rng.choice([0, 1, rng.integers(0, 10), rng.integers(0, 400)]))
    return n_quanta, jobs, floors


def test_fair_allocation_matches_the_one_quantum_loop():
    """Bit for bit the old loop's result (levels, leftovers and their tie-break) on random
    small instances, with and without floors, and the same error where floors do not fit."""
    rng = np.random.default_rng(20240607)
    for _ in range(3000):
        n_quanta, jobs, floors = _random_instance(rng)
        for given in (floors, None):
            if n_quanta < 0 and given is None:  # negative floors only: neither fits
                with pytest.raises(ValueError, match="floors"):
                    fair_allocation(n_quanta, jobs, given)
                continue
            want = _fair_allocation_loop(n_quanta, jobs, given)
            got = fair_allocation(n_quanta, jobs, given)
            assert got == want, (n_quanta, jobs, given)
            assert list(got) == list(want)
            assert all(type(q) is int for q in got.values())
        if floors and sum(floors.values()) > 0:
            short = sum(floors.values()) - 1
            with pytest.raises(ValueError, match="floors"):
                _fair_allocation_loop(short, jobs, floors)
            with pytest.raises(ValueError, match="floors"):
                fair_allocation(short, jobs, floors)


def test_fair_allocation_is_quick_on_a_fine_quantum():
    """64 GPUs in quanta of 1e-6 (64 million quanta): the level is bisected, not counted up
    (the loop took over a minute per thief decision here)."""
    jobs = [(0, 0), (1, 0), (0, 1), (1, 1), (2, 0)]
    n_quanta = 64_000_000
    start = time.perf_counter()
    got = fair_allocation(n_quanta, jobs, {(1, 0): 40_000_000, (2, 0): 3})
    assert time.perf_counter() - start < 0.5
    # 24e6 left for the four others at the level (6e6 each); (2, 0)'s floor is below it.
    assert got == {(0, 0): 6_000_000, (1, 0): 40_000_000, (0, 1): 6_000_000, (1, 1): 6_000_000,
                   (2, 0): 6_000_000}  # fmt: skip
    got = fair_allocation(n_quanta + 2, jobs)
    assert sum(got.values()) == n_quanta + 2
    # 2 left over at the level: inference jobs first, by stream.
    assert got[(0, 0)] == got[(1, 0)] == 12_800_001 and got[(2, 0)] == 12_800_000
    assert fair_allocation(n_quanta, []) == {}  # no jobs (the loop never ended)


def test_literal_variant_cannot_steal_from_jobs_holding_less_than_delta():
    """partial=false stays Algorithm 1: 20 jobs on 1 GPU hold < Delta, so nothing moves."""
    snap = _snapshot()
    n = snap.streams
    est = StreamEstimator(snap)
    n_quanta = int(round(snap.gpus / snap.quantum))
    floors = thief_floors(snap, est, n_quanta)
    jobs = [(v, 0) for v in range(n)] + [(v, 1) for v in range(n) if est.can_train[v]]
    floor = {(v, 0): int(floors.infer[v]) for v in range(n)}
    start = fair_allocation(n_quanta, jobs, floor)
    assert all(start[j] - floor.get(j, 0) < 10 for j in jobs)  # less than Delta = 0.1 spare
    alloc, _ = thief_schedule(snap, delta=0.1, partial=False)
    np.testing.assert_allclose(
        alloc.share_infer, [start[(v, 0)] * snap.quantum for v in range(n)], atol=1e-9
    )
    trained = alloc.retrain_cfg >= 0
    np.testing.assert_allclose(
        alloc.share_retrain[trained],
        [start[(v, 1)] * snap.quantum for v in np.flatnonzero(trained)],
        atol=1e-9,
    )

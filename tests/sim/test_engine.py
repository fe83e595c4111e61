"""The engine's rules on tiny hand-made profiles, checked against hand-computed values.

Two streams, two windows of 100 s, two retraining configurations, two inference
configurations (``full`` needs 0.5 GPU, ``half`` needs 0.25 GPU and keeps 80% accuracy).
"""

from __future__ import annotations

import numpy as np
import pytest

from edgegym.core.executor import SimulatedExecutor
from edgegym.core.state import Allocation, ClusterState
from edgegym.hardware.gpus import PowerModel, get_gpu
from edgegym.workload.continual import ContinualProfile
from tests.reference.engine import Engine

WINDOW_S = 100.0
GPU = get_gpu("V100-16GB")  # idle 40 W, max 300 W
INFER_SHARE = np.array([0.5, 0.25])
INFER_FACTOR = np.array([1.0, 0.8])


def make_profile(**over) -> ContinualProfile:
    base = {
        "start_acc": np.array([0.5, 0.4]),
        "floor": np.array([[0.3, 0.3], [0.3, 0.35]]),
        "drift": np.array([[0.0, 0.1], [0.0, 0.2]]),
        # post_acc[v, k, c]
        "post_acc": np.array([[[0.9, 0.7], [0.95, 0.75]], [[0.8, 0.6], [0.85, 0.65]]]),
        "gpu_seconds": np.array([[[20.0, 10.0], [30.0, 15.0]], [[40.0, 8.0], [60.0, 12.0]]]),
        "demand": np.ones((2, 2)),
    }
    base.update({k: np.asarray(v, dtype=float) for k, v in over.items()})
    return ContinualProfile(**base)


def make_engine(gpus: int = 1, share_alpha: float = 1.0, eff: float = 0.9, **profile) -> Engine:
    prof = make_profile(**profile)
    executor = SimulatedExecutor(
        prof.demand, INFER_SHARE, INFER_FACTOR, PowerModel.from_spec(GPU), share_alpha, eff
    )
    cluster = ClusterState(gpus=gpus, clock_mhz=np.full(gpus, GPU.max_clock_mhz))
    eng = Engine(prof, executor, cluster, WINDOW_S)
    eng.start_window(0)
    return eng


def alloc(retrain=(-1, -1), infer=(0, 0), r=(0.0, 0.0), i=(0.0, 0.0)) -> Allocation:
    return Allocation(
        retrain_cfg=np.array(retrain, dtype=np.int64),
        infer_cfg=np.array(infer, dtype=np.int64),
        share_retrain=np.array(r, dtype=float),
        share_infer=np.array(i, dtype=float),
    )


def run_window(eng: Engine) -> list[tuple[float, np.ndarray]]:
    """Advance the current allocation to the window end; (segment length, finished) per event."""
    end = eng.window_start_s + WINDOW_S
    events = []
    while eng.cluster.time_s < end - 1e-12:
        seg, done = eng.advance(end)
        events.append((seg.duration_s, done.copy()))
    return events


# ----------------------------------------------------------------------- completion
@pytest.mark.parametrize(
    ("cfg", "share", "expected_s"),
    [(0, 0.5, 40.0), (0, 0.25, 80.0), (1, 0.5, 20.0), (1, 0.2, 50.0), (0, 1.0, 20.0)],
)
def test_job_finishes_at_work_over_share(cfg, share, expected_s):
    eng = make_engine()
    applied = eng.apply(alloc(retrain=(cfg, -1), r=(share, 0.0), i=(0.5 - share / 2, 0.0)))
    assert applied.retrain_cfg[0] == cfg
    assert eng.tenants.job_left[0] == eng.profile.gpu_seconds[0, 0, cfg]
    seg, done = eng.advance(WINDOW_S)
    assert seg.duration_s == pytest.approx(expected_s, rel=1e-12)
    assert eng.cluster.time_s == pytest.approx(expected_s, rel=1e-12)
    np.testing.assert_array_equal(done, [True, False])
    assert eng.tenants.model_acc[0] == eng.profile.post_acc[0, 0, cfg]
    assert eng.tenants.model_acc[1] == 0.4
    assert eng.tenants.retrained[0] and not eng.tenants.running[0]
    assert eng.metrics.retrainings.tolist() == [1, 0]


def test_model_accuracy_switches_only_at_completion():
    eng = make_engine()
    eng.apply(alloc(retrain=(0, -1), r=(0.5, 0.0), i=(0.5, 0.0)))
    seg, done = eng.advance(39.0)  # stop one second early
    assert seg.duration_s == pytest.approx(39.0) and not done.any()
    assert eng.tenants.model_acc[0] == 0.5
    assert eng.tenants.job_left[0] == pytest.approx(0.5)
    assert eng.tenants.progress[0] == pytest.approx(19.5 / 20)
    seg, done = eng.advance(WINDOW_S)
    assert seg.duration_s == pytest.approx(1.0)
    assert done[0] and eng.tenants.model_acc[0] == 0.9


def test_sublinear_and_multi_gpu_speed():
    # alpha = 0.5: speed = sqrt(0.25) = 0.5 -> 20 GPU-s take 40 s at a quarter GPU.
    eng = make_engine(share_alpha=0.5)
    eng.apply(alloc(retrain=(0, -1), r=(0.25, 0.0)))
    assert eng.advance(WINDOW_S)[0].duration_s == pytest.approx(40.0)
    # 1.5 GPUs at efficiency 0.9: speed 1.45; stream 1's 40 GPU-s job takes 40 / 1.45 s.
    eng = make_engine(gpus=2)
    eng.apply(alloc(retrain=(-1, 0), r=(0.0, 1.5), i=(0.5, 0.0)))
    assert eng.advance(WINDOW_S)[0].duration_s == pytest.approx(40.0 / 1.45)


def test_two_jobs_finish_in_order():
    eng = make_engine(gpus=2)
    # Stream 0: 20 GPU-s at 0.5 -> 40 s. Stream 1: 8 GPU-s (cfg 1) at 0.1 -> 80 s.
    eng.apply(alloc(retrain=(0, 1), r=(0.5, 0.1), i=(0.5, 0.25)))
    events = run_window(eng)
    assert [round(d, 9) for d, _ in events] == [40.0, 40.0, 20.0]
    assert [e.tolist() for _, e in events] == [[True, False], [False, True], [False, False]]
    np.testing.assert_allclose(eng.tenants.model_acc, [0.9, 0.6])


# ------------------------------------------------------------------ accuracy integral
def test_accuracy_integral_is_piecewise_exact():
    eng = make_engine(gpus=2)
    # Stream 0: full config with its 0.5 share; retrains cfg 0 (20 GPU-s) at 0.5 -> 40 s.
    # Stream 1: half config (needs 0.25) with 0.125 -> half the frames; cfg 1 at 0.2 -> 40 s.
    eng.apply(alloc(retrain=(0, 1), infer=(0, 1), r=(0.5, 0.2), i=(0.5, 0.125)))
    run_window(eng)
    expected0 = 0.5 * 1.0 * 40 + 0.9 * 1.0 * 60
    expected1 = 0.4 * 0.8 * 0.5 * 40 + 0.6 * 0.8 * 0.5 * 60
    np.testing.assert_allclose(eng.metrics.acc_integral[:, 0], [expected0, expected1])
    np.testing.assert_allclose(eng.metrics.acc_integral[:, 1], 0.0)
    np.testing.assert_allclose(
        eng.metrics.window_accuracy()[:, 0], [expected0 / 100, expected1 / 100]
    )


def test_frames_dropped_scale_accuracy_by_share_over_needed():
    eng = make_engine()
    acc = eng.executor.inference_accuracy
    t = eng.tenants
    # full config needs 0.5: shares 0.5, 0.1, 0.0 keep 1, 0.2, 0 of the frames.
    np.testing.assert_allclose(acc(t, alloc(i=(0.5, 0.1))), [0.5, 0.4 * 0.2])
    np.testing.assert_allclose(acc(t, alloc(i=(0.0, 0.9))), [0.0, 0.4])  # extra share: no gain
    np.testing.assert_allclose(acc(t, alloc(infer=(1, 1), i=(0.2, 0.25))), [0.5 * 0.8 * 0.8, 0.32])
    seg = eng.executor.run(eng.cluster, t, alloc(i=(0.25, 0.5)), 10.0)
    np.testing.assert_allclose(seg.acc_integral, [0.5 * 0.5 * 10, 0.4 * 10])


def test_demand_raises_needed_share():
    # Window 1 has demand 2 for stream 0: the full config then needs 1.0 GPU.
    eng = make_engine(demand=[[1.0, 2.0], [1.0, 1.0]])
    eng.apply(alloc(i=(0.5, 0.5)))
    run_window(eng)
    eng.start_window(1)
    np.testing.assert_allclose(eng.executor.infer_share[0], [1.0, 0.5])
    eng.apply(alloc(i=(0.5, 0.5)))
    run_window(eng)
    # Window 1 accuracy: stream 0 drifted to 0.4 and keeps half its frames.
    np.testing.assert_allclose(eng.metrics.window_accuracy()[:, 1], [0.4 * 0.5, 0.35])


# ------------------------------------------------------------------- window rules
def test_unfinished_job_is_dropped_at_window_end():
    eng = make_engine()
    # Stream 1 retrains cfg 0 (40 GPU-s) at 0.25 GPU: would need 160 s > 100 s.
    eng.apply(alloc(retrain=(-1, 0), r=(0.0, 0.25), i=(0.5, 0.25)))
    events = run_window(eng)
    assert len(events) == 1 and not events[0][1].any()
    assert eng.tenants.job_left[1] == pytest.approx(15.0)
    assert eng.tenants.model_acc[1] == 0.4  # never swapped in
    eng.start_window(1)
    t = eng.tenants
    assert t.job_cfg.tolist() == [-1, -1] and t.job_left.tolist() == [0.0, 0.0]
    assert not t.retrained.any()
    assert eng.metrics.retrainings.tolist() == [0, 0]
    # Drift applies to the old model: max(0.35, 0.4 - 0.2).
    assert t.model_acc[1] == pytest.approx(0.35)
    # The dropped job does not continue into window 1.
    eng.apply(alloc(retrain=(-1, -1), i=(0.5, 0.25)))
    assert eng.advance(200.0)[0].duration_s == pytest.approx(100.0)
    assert eng.tenants.model_acc[1] == pytest.approx(0.35)


def test_drift_rule_max_floor_acc_minus_drift():
    eng = make_engine()
    # Stream 0 retrains to 0.9 in window 0; stream 1 stays at 0.4.
    eng.apply(alloc(retrain=(0, -1), r=(0.5, 0.0), i=(0.5, 0.5)))
    run_window(eng)
    eng.start_window(1)
    # Stream 0: max(0.3, 0.9 - 0.1) = 0.8; stream 1: max(0.35, 0.4 - 0.2) = 0.35 (floor binds).
    np.testing.assert_allclose(eng.tenants.model_acc, [0.8, 0.35])
    assert eng.window == 1 and eng.time_left_s == pytest.approx(100.0)
    # A new window allows retraining again.
    assert not eng.tenants.retrained.any()


def test_drift_never_raises_accuracy_above_model():
    eng = make_engine(floor=[[0.3, 0.3], [0.3, 0.3]], drift=[[0.0, 0.0], [0.0, 0.05]])
    run_window(eng)
    eng.start_window(1)
    np.testing.assert_allclose(eng.tenants.model_acc, [0.5, 0.35])


def test_at_most_one_retraining_per_window():
    eng = make_engine()
    eng.apply(alloc(retrain=(1, -1), r=(0.5, 0.0), i=(0.5, 0.5)))
    seg, done = eng.advance(WINDOW_S)
    assert seg.duration_s == pytest.approx(20.0) and done[0]
    assert eng.tenants.model_acc[0] == 0.7
    # A second request in the same window is refused: no job, no share, no progress.
    applied = eng.apply(alloc(retrain=(0, -1), r=(0.5, 0.0), i=(0.5, 0.5)))
    assert applied.retrain_cfg[0] == -1 and applied.share_retrain[0] == 0.0
    assert not eng.tenants.running[0]
    events = run_window(eng)
    assert len(events) == 1 and not events[0][1].any()
    assert eng.tenants.model_acc[0] == 0.7
    assert eng.metrics.retrainings.tolist() == [1, 0]
    # Next window: allowed again.
    eng.start_window(1)
    applied = eng.apply(alloc(retrain=(0, -1), r=(1.0, 0.0)))
    assert applied.retrain_cfg[0] == 0 and eng.tenants.running[0]


def test_running_job_keeps_its_configuration():
    eng = make_engine()
    eng.apply(alloc(retrain=(0, -1), r=(0.5, 0.0)))
    eng.advance(10.0)  # 5 of 20 GPU-s done
    applied = eng.apply(alloc(retrain=(1, -1), r=(0.25, 0.0)))
    assert applied.retrain_cfg[0] == 0 and eng.tenants.job_cfg[0] == 0
    assert eng.tenants.job_left[0] == pytest.approx(15.0)
    seg, done = eng.advance(WINDOW_S)
    assert seg.duration_s == pytest.approx(60.0) and done[0]
    assert eng.tenants.model_acc[0] == 0.9


def test_configuration_without_share_starts_no_job():
    eng = make_engine()
    applied = eng.apply(alloc(retrain=(0, 1), r=(0.0, 0.0), i=(0.5, 0.5)))
    assert applied.retrain_cfg.tolist() == [-1, -1]
    assert not eng.tenants.running.any()


# ------------------------------------------------------------------------- energy
def _power(util: float, gpus: int) -> float:
    """V100 at its top clock: P = 40 + 260 * u watts per GPU."""
    return gpus * (40.0 + 260.0 * util)


@pytest.mark.parametrize("gpus", [1, 2])
def test_energy_is_power_model_times_time(gpus):
    eng = make_engine(gpus=gpus)
    # Busy: stream 0 inference min(0.5, 0.5) + retrain 0.25 (cfg 1, 10 GPU-s -> 40 s);
    # stream 1 inference min(0.75, 0.25) = 0.25 (the surplus idles).
    eng.apply(alloc(retrain=(1, -1), infer=(0, 1), r=(0.25, 0.0), i=(0.5, 0.75)))
    events = run_window(eng)
    assert [round(d, 9) for d, _ in events] == [40.0, 60.0]
    busy1, busy2 = 1.0, 0.75  # before / after the job finishes
    expected = _power(busy1 / gpus, gpus) * 40 + _power(busy2 / gpus, gpus) * 60
    assert eng.cluster.energy_j == pytest.approx(expected)
    assert eng.metrics.energy_j[0] == pytest.approx(expected)
    assert eng.metrics.tenant_energy_j.sum() == pytest.approx(expected)
    pm = PowerModel.from_spec(GPU)
    util = np.full(gpus, busy1 / gpus)
    seg = eng.executor.run(eng.cluster, eng.tenants, alloc(i=(0.5, 0.5)), 7.0)
    idle_busy = float(pm.power(np.full(gpus, GPU.max_clock_mhz), util).sum())
    assert seg.energy_j == pytest.approx(idle_busy * 7.0)


def test_idle_cluster_draws_idle_power():
    eng = make_engine(gpus=2)
    run_window(eng)
    assert eng.cluster.energy_j == pytest.approx(2 * 40.0 * WINDOW_S)
    np.testing.assert_allclose(eng.metrics.acc_integral[:, 0], 0.0)  # no inference share

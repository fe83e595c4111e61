"""The thief's per-split score (:meth:`StreamEstimator.best`) memoises its parts (the inference
alone per inference share, the jobs' times per retraining share, PickConfigs after a job per
total share). Every split's score must equal, bit for bit, the same rules computed from scratch
with :func:`best_inference`: a memo keyed on the wrong thing, or a shortcut that reorders the
arithmetic, changes a score here."""

from __future__ import annotations

import numpy as np
import pytest

from edgegym.baselines.ekya import StreamEstimator, _window_accuracy, best_inference
from tests.baselines.test_ekya_exact import _snapshots


def reference_score(est: StreamEstimator, v: int, rq: int, iq: int) -> tuple[float, int, int]:
    """EstimateAccuracy + PickConfigs for one split, nothing memoised."""
    s = est.s
    share_i, share_r = iq * s.quantum, rq * s.quantum
    needed = s.infer_share[v : v + 1]
    icfg, f_now, ok_now = best_inference(s.model_acc[v], needed, s.infer_factor, share_i, s.a_min)
    acc_now = float(s.model_acc[v] * f_now[0])
    penalty = 0.0 if ok_now[0] else 1.0
    result = (acc_now - penalty, -1, int(icfg[0]))
    if rq > 0 and est.can_train[v] and s.time_left_s > 0:
        dur, ok = est._job_time(v, rq)
        if ok.any():
            post = np.maximum(est.post[v], s.model_acc[v])
            rows = np.broadcast_to(needed, (post.shape[0], needed.shape[1]))
            _, f_after, _ = best_inference(post, rows, s.infer_factor, share_i + share_r, s.a_min)
            score = _window_accuracy(dur, ok, acc_now, post, f_after, s.time_left_s)
            c = int(np.argmax(score))
            if score[c] > acc_now or est.running[v]:
                result = (float(score[c]) - penalty, c, int(icfg[0]))
        elif est.running[v]:
            result = (acc_now - penalty, int(s.job_cfg[v]), int(icfg[0]))
    return result


@pytest.mark.parametrize(
    ("scenario", "oracle", "configs", "overrides"),
    [
        ("ekya-cityscapes", False, None, {}),
        ("ekya-cityscapes", True, None, {"gpus": 2}),
        ("ekya-cityscapes", False, [3], {}),  # Ekya-FixedConfig's one configuration
        ("ekya-table1", False, None, {}),
        ("ekya-waymo", False, None, {"streams": 4, "share_alpha": 0.7}),
    ],
)
def test_every_split_scores_as_computed_from_scratch(
    scenario: str, oracle: bool, configs: list[int] | None, overrides: dict
) -> None:
    snaps = _snapshots(scenario, 1, 6, **overrides)
    assert any(s.job_cfg.max() >= 0 for s in snaps)  # a job in flight is among them
    rng = np.random.default_rng(0)
    for snap in snaps:
        est = StreamEstimator(snap, oracle, configs)
        n = int(np.floor(snap.capacity / snap.quantum + 1e-9))
        splits = [(rq, iq) for rq in range(n + 1) for iq in range(n + 1 - rq)]
        picked = rng.choice(len(splits), size=min(len(splits), 400), replace=False)
        for k in picked:
            rq, iq = splits[k]
            for v in range(snap.streams):
                assert est.best(v, rq, iq) == reference_score(est, v, rq, iq), (v, rq, iq)

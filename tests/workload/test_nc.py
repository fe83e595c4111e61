"""New-class schedules: the paper's structure (windows, drops) and the cost model."""

from __future__ import annotations

import numpy as np
import pytest

from edgegym.families.mig.datasets import (
    NC_DATASETS,
    dataset_with,
    get_dataset,
    nc_profile,
    retrain_gpu_seconds,
)
from edgegym.workload.models import get_model


def test_schedules_match_the_paper():
    assert {k: d.windows for k, d in NC_DATASETS.items()} == {
        "nc-cifar10": 4,
        "nc-core50": 9,
        "nc-20news": 9,
    }
    # §5.2: Bert and ViT lose 32.5% on average when new classes arrive (W1).
    assert {d.drop for d in NC_DATASETS.values()} == {0.325}


def test_profile_drop_and_gain():
    ceil = 0.97
    ds = get_dataset("nc-cifar10")
    p = nc_profile([get_model("vit")], [ds], [ceil])
    target = ceil - ds.difficulty * np.log2(ds.classes() / ds.pretrain_classes)
    # Every window starts at (1 - drop) of the accuracy on the classes seen before: the
    # ceiling in window 1, the previous window's retrained accuracy after it.
    assert p.start_acc[0] == pytest.approx(ceil * (1 - 0.325))
    np.testing.assert_allclose(p.drift[0, 1:], 0.325 * target[:-1])
    # Retraining on the whole window's data reaches the target (more classes: lower).
    np.testing.assert_allclose(p.post_acc[0, :, 0], target)
    pre = np.concatenate([[ceil], target[:-1]]) * (1 - 0.325)
    gain = p.post_acc[0, :, 0] - pre
    assert np.all((gain > 0.25) & (gain < 0.33))  # retraining restores ~30 points (§5.2)
    assert np.all(p.floor[0] <= p.post_acc[0, :, 0])
    with pytest.raises(ValueError, match="windows"):
        nc_profile([get_model("vit")], [ds], [0.97], windows=5)


def test_drop_never_below_the_pretraining_classes():
    """A drop larger than the new classes' share would leave a model below what the model that
    knows only the pre-training classes answers; the floor holds it there."""
    ds = dataset_with("nc-cifar10", {"drop": 0.9})
    p = nc_profile([get_model("vit")], [ds], [0.97])
    known = 0.97 * ds.pretrain_classes / ds.classes()
    assert p.start_acc[0] == pytest.approx(known[0])  # 0.97 / 2, not 0.97 x 0.1
    target = 0.97 - ds.difficulty * np.log2(ds.classes() / ds.pretrain_classes)
    np.testing.assert_allclose(
        p.drift[0, 1:], target[:-1] - np.maximum(0.1 * target[:-1], known[1:])
    )


def test_training_cost_is_three_times_inference():
    md, ds = get_model("resnet50"), get_dataset("nc-cifar10")
    per = float(md.latency_s(1.0, 1.0, 32)) / 32
    assert retrain_gpu_seconds(md, ds) == pytest.approx(3 * per * ds.samples() * ds.epochs)
    assert retrain_gpu_seconds(md, ds, 0.5) == pytest.approx(retrain_gpu_seconds(md, ds) / 2)

"""Real learning on the digits stream: retraining raises held-out accuracy on drifted windows."""

from __future__ import annotations

import copy

import numpy as np
import pytest

pytest.importorskip("sklearn")
torch = pytest.importorskip("torch")

from edgegym.real.data import CORRUPTIONS, DigitStream, corrupt  # noqa: E402
from edgegym.real.models import build, set_trainable  # noqa: E402
from edgegym.real.retrain import evaluate, pretrained, retrain  # noqa: E402
from edgegym.workload.continual import RetrainConfig  # noqa: E402


@pytest.fixture(autouse=True)
def _one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def test_models_forward_and_freeze():
    x = torch.zeros(4, 1, 8, 8)
    for arch in ("resnet18", "mobilenetv2"):
        model = build(arch, seed=1)
        assert model(x).shape == (4, 10)
        n = set_trainable(model, 0.25)
        groups = model.parameter_groups()
        frozen = [all(not p.requires_grad for p in g.parameters()) for g in groups]
        assert sum(not f for f in frozen) == n and not frozen[-1] and frozen[0]


def test_stream_windows_are_seeded_and_disjoint():
    s = DigitStream(windows=2, kind="nc", n_train=64, n_test=32, seed=3)
    a, b = s.window(1), s.window(1)
    np.testing.assert_array_equal(a.x_train, b.x_train)
    assert a.x_train.shape == (64, 1, 8, 8) and a.x_test.shape == (32, 1, 8, 8)
    # Window 1 introduces classes the base model never saw.
    _, y_base = s.base()
    assert set(np.unique(a.y_train)) - set(np.unique(y_base))
    rng = np.random.default_rng(0)
    img = s.base()[0][:5, 0]
    for kind in CORRUPTIONS:
        out = corrupt(img, kind, 0.8, rng)
        assert out.shape == img.shape and out.min() >= 0.0 and out.max() <= 1.0
        assert not np.allclose(out, img)


def test_retraining_raises_accuracy_on_drifted_window():
    stream = DigitStream(windows=2, kind="drift", severity=0.8, seed=0)
    window = stream.window(0)  # rotated digits
    assert window.corruption == "rotation"
    model = pretrained("resnet18", stream)
    before = evaluate(model, window.x_test, window.y_test)[0]
    # The base model is good on clean digits but loses much of it on the drifted window.
    x_clean, y_clean = stream.base()
    assert evaluate(model, x_clean, y_clean)[0] > before + 0.2
    job = retrain(copy.deepcopy(model), window, RetrainConfig("full", epochs=5), seed=0)
    assert len(job.curve) == 5
    assert job.curve[-1] > before + 0.2, (before, job.curve)
    cheap = retrain(
        copy.deepcopy(model),
        window,
        RetrainConfig("cheap", epochs=1, layers_retrained=0.2, data_fraction=0.5),
        seed=0,
    )
    assert cheap.curve[-1] < job.curve[-1]

"""A real continual-learning stream from scikit-learn's bundled digits (no downloads).

The 1,797 8x8 handwritten digits ship inside the scikit-learn package. A :class:`DigitStream`
splits them (seeded) into a *base* pool, on which the deployed model is pretrained, and a
*window* pool from which every retraining window draws disjoint train and held-out samples:

* ``kind="drift"`` (domain drift): every window applies one corruption to all its images,
  cycling through rotation, blur, brightness/contrast and noise (each stream starts at a
  different one), with the window's ``severity``.
* ``kind="nc"`` (new classes, like NC-CIFAR-10): the base pool holds the first
  ``base_classes`` digits; window k introduces the next group of classes, and its data mixes
  the new classes (half of the samples) with the classes seen before.
* ``kind="mixed"``: new classes and domain drift together.

Labels are the ground truth, standing in for Ekya's golden model.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from scipy import ndimage

#: Corruptions of the domain-drift windows, in the order a stream cycles through them.
CORRUPTIONS = ("rotation", "blur", "brightness", "noise")


@lru_cache(maxsize=1)
def load_digits_array() -> tuple[np.ndarray, np.ndarray]:
    """(N, 8, 8) float32 images in [0, 1] and (N,) int64 labels of scikit-learn's digits."""
    from sklearn.datasets import load_digits

    d = load_digits()
    return (d.images / 16.0).astype(np.float32), d.target.astype(np.int64)


def corrupt(images: np.ndarray, kind: str, severity: float, rng: np.random.Generator) -> np.ndarray:
    """Apply one corruption to (N, 8, 8) images in [0, 1].

    Args:
        images: Images to corrupt (not modified).
        kind: One of :data:`CORRUPTIONS`.
        severity: 0 (none) to 1 (strong): rotation up to +-60 degrees (each image a random
            sign), Gaussian blur up to sigma 1.2, brightness/contrast down to 30% contrast
            plus an offset of 0.5, additive Gaussian noise up to std 0.5.
        rng: Random numbers (rotation signs, noise).
    """
    x = images.astype(np.float32, copy=True)
    s = float(severity)
    if kind == "rotation":
        signs = rng.choice([-1.0, 1.0], size=len(x))
        for i in range(len(x)):
            x[i] = ndimage.rotate(x[i], signs[i] * 60.0 * s, reshape=False, order=1)
    elif kind == "blur":
        x = ndimage.gaussian_filter(x, sigma=(0.0, 1.2 * s, 1.2 * s))
    elif kind == "brightness":
        x = x * (1.0 - 0.7 * s) + 0.5 * s
    elif kind == "noise":
        x = x + rng.normal(0.0, 0.5 * s, size=x.shape).astype(np.float32)
    else:
        raise ValueError(f"unknown corruption {kind!r}; expected one of {CORRUPTIONS}")
    return np.clip(x, 0.0, 1.0)


@dataclass(frozen=True)
class Window:
    """One retraining window of one stream."""

    x_train: np.ndarray  # (N_train, 1, 8, 8) float32
    y_train: np.ndarray  # (N_train,) int64
    x_test: np.ndarray  # (N_test, 1, 8, 8) float32, held out
    y_test: np.ndarray  # (N_test,) int64
    classes: tuple[int, ...]  # labels present in the window
    corruption: str  # corruption applied ("none" if none)
    severity: float


@dataclass(frozen=True)
class DigitStream:
    """A seeded sequence of continual-learning windows for one stream.

    Args:
        windows: Number of retraining windows.
        kind: ``"drift"``, ``"nc"`` or ``"mixed"``.
        n_train: Train samples per window.
        n_test: Held-out samples per window.
        severity: Corruption severity of the drift windows (0-1).
        base_classes: Classes the base model knows (``"nc"`` and ``"mixed"``).
        stream: Stream index (offsets the corruption cycle and the seed).
        seed: Seed of the split and of the corruptions.
    """

    windows: int = 2
    kind: str = "drift"
    n_train: int = 256
    n_test: int = 200
    severity: float = 0.8
    base_classes: int = 5
    stream: int = 0
    seed: int = 0

    def __post_init__(self) -> None:
        if self.kind not in ("drift", "nc", "mixed"):
            raise ValueError(f"kind={self.kind!r}; expected 'drift', 'nc' or 'mixed'")

    def _split(self) -> tuple[np.ndarray, np.ndarray]:
        _, y = load_digits_array()
        rng = np.random.default_rng([self.seed, 7919])
        perm = rng.permutation(len(y))
        n_base = int(0.4 * len(y))
        return perm[:n_base], perm[n_base:]

    def _classes(self, k: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """(known before window k, new in window k) class labels."""
        if self.kind == "drift":
            return tuple(range(10)), ()
        per = int(np.ceil((10 - self.base_classes) / max(self.windows, 1)))
        known = tuple(range(min(10, self.base_classes + k * per)))
        new = tuple(range(len(known), min(10, len(known) + per)))
        return known, new

    def base(self) -> tuple[np.ndarray, np.ndarray]:
        """Clean pretraining data of the deployed model: (N, 1, 8, 8) images and labels."""
        x, y = load_digits_array()
        idx, _ = self._split()
        known, _ = self._classes(0)
        idx = idx[np.isin(y[idx], known)]
        return x[idx][:, None], y[idx]

    def window(self, k: int) -> Window:
        """Window ``k``'s train and held-out samples (deterministic in seed, stream, k)."""
        x, y = load_digits_array()
        _, pool = self._split()
        rng = np.random.default_rng([self.seed, self.stream, k])
        known, new = self._classes(k)
        present = known + new
        pool = pool[np.isin(y[pool], present)]
        n = self.n_train + self.n_test
        if new:
            # Half of the samples from the new classes, half from the known ones.
            is_new = np.isin(y[pool], new)
            n_new = min(n // 2, int(is_new.sum()))
            pick = np.concatenate(
                [
                    rng.choice(pool[is_new], n_new, replace=False),
                    rng.choice(pool[~is_new], n - n_new, replace=n - n_new > (~is_new).sum()),
                ]
            )
        else:
            pick = rng.choice(pool, n, replace=n > len(pool))
        pick = rng.permutation(pick)
        images = x[pick]
        corruption, severity = "none", 0.0
        if self.kind in ("drift", "mixed"):
            corruption = CORRUPTIONS[(self.stream + k) % len(CORRUPTIONS)]
            severity = self.severity
            images = corrupt(images, corruption, severity, rng)
        images = images[:, None]
        labels = y[pick]
        return Window(
            x_train=images[: self.n_train],
            y_train=labels[: self.n_train],
            x_test=images[self.n_train :],
            y_test=labels[self.n_train :],
            classes=present,
            corruption=corruption,
            severity=severity,
        )

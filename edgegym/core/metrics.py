"""Metrics computed in one place: accuracy integrals, a_MIN violations, energy, timelines."""

from __future__ import annotations

from typing import Any

import numpy as np


class Metrics:
    """Accumulates what an episode did; ``summary()`` gives the numbers the evaluator reports.

    Args:
        n_streams: Tenants.
        n_windows: Retraining windows.
        window_s: Window length in seconds.

    Set ``a_min`` (accuracy floor; time below it is counted per tenant) and ``timeline = []``
    (one record per segment, for plots; ``None`` in training) after construction.
    """

    def __init__(self, n_streams: int, n_windows: int, window_s: float) -> None:
        self.window_s = window_s
        self.acc_integral = np.zeros((n_streams, n_windows))  # (V, K) accuracy-seconds
        self.energy_j = np.zeros(n_windows)  # (K,)
        self.tenant_energy_j = np.zeros(n_streams)  # (V,)
        self.retrain_gpu_s = np.zeros(n_streams)  # (V,) GPU-seconds spent retraining
        self.retrainings = np.zeros(n_streams, dtype=np.int64)  # (V,) jobs finished
        self.a_min = 0.0
        self.below_min_s = np.zeros(n_streams)  # (V,) seconds below a_min
        self.timeline: list[dict[str, Any]] | None = None
        # Request-serving families: (V, K) requests, served in SLO, goodput, correct answers.
        self.requests = np.zeros((n_streams, n_windows))
        self.served_slo = np.zeros((n_streams, n_windows))
        self.goodput = np.zeros((n_streams, n_windows))
        self.correct = np.zeros((n_streams, n_windows))
        self.reconfigurations = 0  # instances (re)created
        self.downtime_s = 0.0  # instance-seconds of reconfiguration overhead

    def window_accuracy(self) -> np.ndarray:
        """(V, K) accuracy averaged over each window."""
        return self.acc_integral / self.window_s

    def summary(self) -> dict[str, float]:
        """Episode-level metrics (accuracy in [0, 1], energy in joules).

        Request-serving families report Goodput, SLO attainment and accuracy as fractions of
        all requests that arrived (MIGRator §5.2) instead of time-averaged accuracy.
        """
        wa = self.window_accuracy()
        total_s = self.window_s * wa.shape[1]
        if self.requests.any():
            n = max(float(self.requests.sum()), 1.0)
            per_tenant = self.goodput.sum(axis=1) / np.maximum(self.requests.sum(axis=1), 1.0)
            return {
                "goodput": float(self.goodput.sum() / n),
                "slo_attainment": float(self.served_slo.sum() / n),
                "accuracy": float(self.correct.sum() / n),
                "min_tenant_goodput": float(per_tenant.min()),
                "requests": float(self.requests.sum()),
                "energy_j": float(self.energy_j.sum()),
                "retrainings": float(self.retrainings.sum()),
                "reconfigurations": float(self.reconfigurations),
                "downtime_s": float(self.downtime_s),
            }
        return {
            "accuracy": float(wa.mean()),
            "min_stream_accuracy": float(wa.mean(axis=1).min()),
            "energy_j": float(self.energy_j.sum()),
            "retrain_gpu_s": float(self.retrain_gpu_s.sum()),
            "retrainings": float(self.retrainings.sum()),
            "below_a_min_frac": float(self.below_min_s.sum() / (total_s * wa.shape[0])),
        }

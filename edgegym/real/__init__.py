"""Real execution: torch models, a real continual-learning stream, NVML energy, a real executor.

* :mod:`edgegym.real.models`: compact ResNet-18- and MobileNetV2-style networks in plain torch.
* :mod:`edgegym.real.data`: continual-learning windows built from scikit-learn's bundled digits
  (new-class windows and domain-drift windows), each with train and held-out samples.
* :mod:`edgegym.real.retrain`: real SGD retraining under a retraining configuration and
  accuracy on held-out samples.
* :mod:`edgegym.real.energy`: NVML energy meter (counter, sampling fallback, or unavailable).
* :mod:`edgegym.real.executor`: :class:`RealExecutor`, the engine's executor that runs the work
  of ``edgegym/ContinualLearning-v0``; :mod:`edgegym.real.mig`: :class:`RealMIGExecutor`, the
  same for ``edgegym/MIGReconfig-v0``; :mod:`edgegym.real.timeslice` for
  ``edgegym/EnergyFairShare-v0``; :mod:`edgegym.real.dag`: :class:`RealDAGExecutor` for
  ``edgegym/DAGOffload-v0``.
* :mod:`edgegym.real.profile` and :mod:`edgegym.real.profile_families`: ``edgegym profile``,
  measured scenarios of the continual family and of the MIG, energy and DAG families.

Heavy imports (torch, scikit-learn) happen in the submodules, not here.
"""

from pathlib import Path

#: A tiny continual scenario (two streams, two windows) for the real backend.
TINY_SCENARIO = str(Path(__file__).with_name("real-digits-tiny.yaml"))
#: A tiny MIG scenario (two tenants, two 150 s windows) for the real backend.
TINY_MIG_SCENARIO = str(Path(__file__).with_name("real-mig-tiny.yaml"))
#: A tiny DAG scenario (two servers, two applications, 8 requests in 20 s) for the real backend.
TINY_DAG_SCENARIO = str(Path(__file__).with_name("real-dag-tiny.yaml"))
#: :data:`TINY_SCENARIO` profiled by ``edgegym profile --device cuda`` on an NVIDIA H100 80GB
#: HBM3 (2026-11-24, docs/real-gpu.md): measured GPU-seconds, accuracies and latency.
MEASURED_H100_SCENARIO = str(Path(__file__).with_name("measured-h100.yaml"))

__all__ = ["MEASURED_H100_SCENARIO", "TINY_DAG_SCENARIO", "TINY_MIG_SCENARIO", "TINY_SCENARIO"]

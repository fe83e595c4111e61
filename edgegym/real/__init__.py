"""Real execution: torch models, a real continual-learning stream, NVML energy, a real executor.

* :mod:`edgegym.real.models`: compact ResNet-18- and MobileNetV2-style networks in plain torch.
* :mod:`edgegym.real.data`: continual-learning windows built from scikit-learn's bundled digits
  (new-class windows and domain-drift windows), each with train and held-out samples.
* :mod:`edgegym.real.retrain`: real SGD retraining under a retraining configuration and
  accuracy on held-out samples.
* :mod:`edgegym.real.energy`: NVML energy meter (counter, sampling fallback, or unavailable).
* :mod:`edgegym.real.executor`: :class:`RealExecutor`, the engine's executor that runs the work
  of ``edgegym/ContinualLearning-v0``; :mod:`edgegym.real.mig`: :class:`RealMIGExecutor`, the
  same for ``edgegym/MIGReconfig-v0``.

Heavy imports (torch, scikit-learn) happen in the submodules, not here.
"""

from pathlib import Path

#: A tiny continual scenario (two streams, two windows) for the real backend.
TINY_SCENARIO = str(Path(__file__).with_name("real-digits-tiny.yaml"))
#: A tiny MIG scenario (two tenants, two 60 s windows) for the real backend.
TINY_MIG_SCENARIO = str(Path(__file__).with_name("real-mig-tiny.yaml"))

__all__ = ["TINY_MIG_SCENARIO", "TINY_SCENARIO"]

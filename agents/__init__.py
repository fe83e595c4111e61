"""Learned agents (PPO / MaskablePPO) for the environment families, on two backends.

* :mod:`edgegym.agents.config`: the hyperparameter files (``agents/hyperparams/<family>.yaml``)
  both backends read;
* :mod:`edgegym.agents.run`: the training run both backends share (its folder, ``config.yaml``,
  checkpoints and resume, evaluation during training, logs);
* :mod:`edgegym.agents.sb3`: Stable-Baselines3, ``edgegym train``
  (:func:`edgegym.agents.sb3.train.train`);
* :mod:`edgegym.agents.rllib`: RLlib, ``edgegym train --backend rllib``
  (:func:`edgegym.agents.rllib.train.train_rllib`; needs ``pip install -e ".[ray]"``, docs/ray.md);
* :mod:`edgegym.agents.policies`: the size-free policy networks, used by both;
* :mod:`edgegym.agents.policy`: a trained model behind the baselines' policy protocol
  (``predict``), so the evaluator scores it as ``ppo`` (shipped) or ``ppo:PATH``
  (:class:`edgegym.agents.rllib.RLlibPolicy` does the same for ``rllib:PATH``);
* tools: ``python -m edgegym.agents.ship`` (ship a trained policy) and ``python -m
  edgegym.agents.curves`` (draw learning curves).

Saved models name the classes they hold by module path: SB3 cloudpickles the policy class
(and a ``linear`` learning-rate schedule) into ``model.zip``, RLlib pickles its RLModule class
into every checkpoint. The modules those files name moved; :data:`MOVED` maps each former path
to its module, so models saved before the move still load, through edgegym's loaders and through
plain ``PPO.load`` / ``MaskablePPO.load`` / ``RLModule.from_checkpoint`` alike (unpickling a
class imports this package first, which installs the mapping). Code should import the new paths.

Model and weights files are read only as regular files of at most :data:`MAX_WEIGHTS_BYTES`
(the ``weights`` kind of :data:`edgegym.inputs.LIMITS`).

This package imports nothing else: the submodules import Stable-Baselines3 and torch (and Ray,
for the RLlib ones, lazily).
"""

from __future__ import annotations

import importlib
import sys
from importlib.machinery import ModuleSpec
from types import ModuleType

from edgegym.inputs import LIMITS

#: Largest model or weights file loaded, checked before such a file is opened.
MAX_WEIGHTS_BYTES = LIMITS["weights"]

#: Former module path -> the module that holds its classes now. Only the modules that saved
#: models name (policy classes, the learning-rate schedule, the RLModule class) are mapped.
MOVED: dict[str, str] = {
    "edgegym.agents.tenants": "edgegym.agents.policies.tenants",
    "edgegym.agents.signatures": "edgegym.agents.policies.signatures",
    "edgegym.agents.graph": "edgegym.agents.policies.graph",
    "edgegym.agents.train": "edgegym.agents.sb3.train",
    "edgegym.agents.rllib_module": "edgegym.agents.rllib.module",
}


class _MovedModules:
    """An import finder that answers a former path of :data:`MOVED` with the module itself
    (the same module object, so a class loaded either way is the same class)."""

    def find_spec(
        self, fullname: str, path: object = None, target: object = None
    ) -> ModuleSpec | None:
        """A spec for a former module path; ``None`` for every other name."""
        if fullname not in MOVED:
            return None
        return ModuleSpec(fullname, self)

    def create_module(self, spec: ModuleSpec) -> None:
        """The import system's default (an empty module, replaced in :meth:`exec_module`)."""
        return None

    def exec_module(self, module: ModuleType) -> None:
        """Put the moved module under its former name (the import system then returns it)."""
        sys.modules[module.__name__] = importlib.import_module(MOVED[module.__name__])


if not any(isinstance(finder, _MovedModules) for finder in sys.meta_path):
    sys.meta_path.insert(0, _MovedModules())

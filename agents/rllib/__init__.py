"""The RLlib backend: PPO with action masking on RLlib's new API stack.

Ray is optional: ``pip install -e ".[ray]"``.

* :mod:`~edgegym.agents.rllib.ppo`: :func:`masked_ppo_config` (any edgegym id with RLlib's
  action-masking RLModule, no user code) and the hyperparameter file mapped onto RLlib's
  settings;
* :mod:`~edgegym.agents.rllib.train`: ``train_rllib``, the driver of ``edgegym train --backend
  rllib`` (on the run layer, :mod:`edgegym.agents.run`, shared with the SB3 backend);
* :mod:`~edgegym.agents.rllib.module`: ``SizeFreeTorchRLModule``, the size-free policies as an
  RLModule (importing it imports Ray);
* :mod:`~edgegym.agents.rllib.policy`: :class:`RLlibPolicy` and the ``rllib:PATH`` loaders.

Importing this package does not import Ray: a call that needs it says what to install.
"""

from edgegym.agents.rllib.policy import (
    MODULE_SUBDIR,
    RLlibPolicy,
    load_rllib_module,
    load_rllib_policy,
    make_rllib_policy,
)
from edgegym.agents.rllib.ppo import masked_ppo_config, register_masked
from edgegym.parallel import RAY_HINT, RayMissingError

__all__ = [
    "MODULE_SUBDIR",
    "RAY_HINT",
    "RLlibPolicy",
    "RayMissingError",
    "load_rllib_module",
    "load_rllib_policy",
    "make_rllib_policy",
    "masked_ppo_config",
    "register_masked",
]

"""The size-free policies as an RLlib RLModule: ``edgegym train --backend rllib`` with
``PerTenantPolicy``, ``PooledPolicy``, ``SignaturePolicy`` or ``GraphPolicy``.

:class:`SizeFreeTorchRLModule` holds one of the SB3 policies of :data:`~edgegym.agents.policies.
SIZE_FREE` (the same class, the same layers) and answers RLlib's PPO with it:

* RLlib's environments are :func:`edgegym.wrappers.make_masked` (or its vector form): a flat
  ``Box`` observation with the action mask beside it. The module cuts the flat vector back
  into the environment's own observation (the ``Dict`` of tenant tables or of the request's
  graph: :class:`edgegym.wrappers.DictFlattener`'s slices and shapes), so the policy sees
  the structure it was built for;
* the policy's features extractor, heads and value head give the logits and the value; masked
  actions get ``FLOAT_MIN`` added to their logits (as RLlib's ``ActionMaskingTorchRLModule``),
  so they are never sampled; a ``MultiDiscrete`` action is RLlib's ``TorchMultiCategorical``
  over the concatenated logits, the layout SB3's masked distribution uses too.

The module's ``policy`` is the SB3 policy object, so a trained RLlib module acts through
:class:`~edgegym.agents.policy.PPOPolicy` like an SB3 model, ``rebind`` to other tenant,
GPU and server counts included (:func:`edgegym.agents.rllib.load_rllib_policy`).

``model_config``: ``policy`` (the class name), ``policy_kwargs`` (its keyword arguments for the
environment, ``kwargs_for``'s result) and ``observation_space`` (the environment's own).
:func:`module_config` builds it from a run's hyperparameters. Importing this module imports
Ray; the rest of :mod:`edgegym.agents.rllib` imports it only when a run asks for a size-free
policy. RLlib's checkpoints name the class by this module's path; the former one,
``edgegym.agents.rllib_module``, maps here (:data:`edgegym.agents.MOVED`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from gymnasium import spaces
from ray.rllib.core.columns import Columns
from ray.rllib.core.distribution.torch.torch_distribution import (
    TorchCategorical,
    TorchMultiCategorical,
)
from ray.rllib.core.rl_module.apis.value_function_api import ValueFunctionAPI
from ray.rllib.core.rl_module.torch.torch_rl_module import TorchRLModule
from ray.rllib.utils.torch_utils import FLOAT_MIN

from edgegym.wrappers import DictFlattener


def module_config(
    env_id: str,
    scenario: str,
    overrides: Mapping[str, Any] | None,
    hyperparams: Mapping[str, Any],
) -> dict[str, Any]:
    """The ``model_config`` of a run whose ``policy`` is a size-free one: the policy's
    keyword arguments for the environment SB3 would build (``kwargs_for`` on the base id with
    the run's ``discrete_actions``) and that environment's own observation space.

    Raises:
        ValueError: The policy does not fit the environment (its message says why).
    """
    from edgegym.agents.policies import sb3_policy_kwargs, size_free_class
    from edgegym.agents.sb3.envs import wrap
    from edgegym.evaluation import make_env

    name = str(hyperparams["policy"])
    cls = size_free_class(name)
    probe = wrap(make_env(env_id, scenario, dict(overrides or {})), hyperparams["wrappers"])
    try:
        kwargs = cls.kwargs_for(probe, sb3_policy_kwargs(hyperparams["policy_kwargs"]))
        return {
            "policy": name,
            "policy_kwargs": kwargs,
            "observation_space": probe.observation_space,
        }
    finally:
        probe.close()


class SizeFreeTorchRLModule(TorchRLModule, ValueFunctionAPI):
    """A size-free SB3 policy behind RLlib's RLModule API, with action masking (module
    docstring). The observation space RLlib passes is the masked one (``action_mask`` and
    the flat ``observations``)."""

    def setup(self) -> None:
        from edgegym.agents.policies import size_free_class

        cfg = self.model_config
        inner = cfg["observation_space"]
        self._flat = DictFlattener(inner)
        cls = size_free_class(str(cfg["policy"]))
        self.policy = cls(inner, self.action_space, lambda _: 0.0, **dict(cfg["policy_kwargs"]))
        self.policy.optimizer = None  # RLlib's learner builds its own over these parameters
        space = self.action_space
        if isinstance(space, spaces.Discrete):
            self._dist: Any = TorchCategorical
        elif isinstance(space, spaces.MultiDiscrete):
            lens = [int(n) for n in np.asarray(space.nvec).ravel()]
            self._dist = TorchMultiCategorical.get_partial_dist_cls(input_lens=lens)
        else:
            raise ValueError(f"SizeFreeTorchRLModule: unsupported action space {space}")

    # ------------------------------------------------------------------ the policy's view
    def _split(self, batch: Mapping[str, Any]) -> tuple[torch.Tensor, Any]:
        """``(action mask, the environment's own observation)`` of a batch."""
        obs = batch[Columns.OBS]
        flat = obs["observations"].float()
        lead = flat.shape[:-1]
        if not self._flat.keys:
            return obs["action_mask"], flat
        own = {
            key: flat[..., self._flat.slices[key]].reshape(*lead, *self._flat.shapes[key])
            for key in self._flat.keys
        }
        return obs["action_mask"], own

    def _latents(self, own: Any) -> tuple[torch.Tensor, torch.Tensor]:
        features = self.policy.extract_features(own)
        mlp = self.policy.mlp_extractor
        if isinstance(features, tuple):  # separate extractors for policy and value
            return mlp.forward_actor(features[0]), mlp.forward_critic(features[1])
        return mlp(features)

    def _outputs(self, batch: Mapping[str, Any], train: bool) -> dict[str, Any]:
        mask, own = self._split(batch)
        latent_pi, latent_vf = self._latents(own)
        logits = self.policy.action_net(latent_pi)
        logits = logits + torch.clamp(torch.log(mask.float()), min=FLOAT_MIN)
        out: dict[str, Any] = {Columns.ACTION_DIST_INPUTS: logits}
        if train:
            out[Columns.EMBEDDINGS] = latent_vf
        return out

    def _forward(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return self._outputs(batch, train=False)

    def _forward_train(self, batch: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        return self._outputs(batch, train=True)

    def compute_values(self, batch: dict[str, Any], embeddings: Any = None) -> torch.Tensor:
        """The value head's estimate per row (``embeddings``: the value latents of
        ``_forward_train``, when RLlib passes them back)."""
        if embeddings is None:
            _, own = self._split(batch)
            embeddings = self._latents(own)[1]
        return self.policy.value_net(embeddings).squeeze(-1)

    # ------------------------------------------------------------------ distributions
    def get_inference_action_dist_cls(self) -> Any:
        return self._dist

    def get_exploration_action_dist_cls(self) -> Any:
        return self._dist

    def get_train_action_dist_cls(self) -> Any:
        return self._dist


__all__ = ["SizeFreeTorchRLModule", "module_config"]

"""The policy networks of the learned agents (SB3 policy classes, used by both backends).

The size-free policies: their weights do not depend on the scenario's sizes (tenants, GPUs,
servers), so one agent plays every size of its family:

* :mod:`~edgegym.agents.policies.tenants`: ``PerTenantPolicy`` (one encoder and one action
  head shared by every tenant) and ``PooledPolicy`` (the encoder pooled into a context, then
  an MLP over a ``Discrete`` catalogue); ``Aligned`` shows a scenario through another's spaces;
* :mod:`~edgegym.agents.policies.signatures`: ``SignaturePolicy``, MIG's allocation signatures
  scored from the tenants they serve;
* :mod:`~edgegym.agents.policies.graph`: ``GraphPolicy``, message passing over a DAG request.

Every one has ``kwargs_for(env, policy_kwargs)`` (its keyword arguments for an environment) and
``rebind(env, action_space)`` (the same weights on another scenario's spaces). The RLlib
backend holds the same classes inside an RLModule (:mod:`edgegym.agents.rllib.module`).

Importing this package imports nothing; :func:`size_free_class` imports the class's module.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any

#: The size-free policy classes by name: the module of this package that defines each.
SIZE_FREE = {
    "PerTenantPolicy": "tenants",
    "PooledPolicy": "tenants",
    "SignaturePolicy": "signatures",
    "GraphPolicy": "graph",
}


def size_free_class(name: str) -> type:
    """The size-free policy class called ``name`` (a key of :data:`SIZE_FREE`)."""
    return getattr(importlib.import_module(f"{__name__}.{SIZE_FREE[name]}"), name)


def sb3_policy_kwargs(pk: Mapping[str, Any]) -> dict[str, Any]:
    """SB3's ``policy_kwargs`` of a hyperparameter file's ``policy_kwargs`` section (the
    activation's name -> its class)."""
    import torch.nn as nn

    act = {"tanh": nn.Tanh, "relu": nn.ReLU, "elu": nn.ELU, "leaky_relu": nn.LeakyReLU}
    arch = pk["net_arch"]
    return {
        "net_arch": dict(arch) if isinstance(arch, Mapping) else list(arch),
        "activation_fn": act[pk["activation_fn"]],
        "ortho_init": bool(pk["ortho_init"]),
    }


__all__ = ["SIZE_FREE", "sb3_policy_kwargs", "size_free_class"]

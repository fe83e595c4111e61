"""RLlib glue: train any edgegym id with RLlib's PPO and action masking, no user code.

RLlib (Ray) is optional: ``pip install -e ".[ray]"``. This module imports it only inside its
functions, so importing it without Ray works and a call says what to install.

:func:`register_masked` registers an id with Ray Tune as ``"<id>:masked"``, built by
:func:`edgegym.wrappers.make_masked` (flat observation plus the action mask inside it), and
:func:`masked_ppo_config` returns a ``PPOConfig`` on that environment with RLlib's own
action-masking RLModule (``ActionMaskingTorchRLModule`` from RLlib's examples, shipped inside
the ``ray`` package), so masked actions are never sampled::

    from edgegym.agents.rllib import masked_ppo_config

    config = masked_ppo_config("edgegym/MIGReconfig-v0", {"scenario": "migrator-w5"})
    algo = config.build_algo()
    print(algo.train()["env_runners"]["episode_return_mean"])
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

RAY_HINT = 'RLlib support needs Ray: pip install -e ".[ray]" (installs ray[rllib])'


class RayMissingError(ImportError):
    """Ray / RLlib is not installed; the message says what to install."""


def _require_ray() -> None:
    try:
        import ray.rllib  # noqa: F401
    except ImportError:
        raise RayMissingError(RAY_HINT) from None


def _make(env_id: str, config: Mapping[str, Any]) -> Any:
    from edgegym.wrappers import make_masked

    return make_masked(env_id, **dict(config))


def register_masked(env_id: str) -> str:
    """Register ``env_id`` with Ray Tune as ``"<env_id>:masked"`` (idempotent) and return the
    name; its ``env_config`` holds the scenario and overrides.

    Raises:
        RayMissingError: Ray is not installed.
        ValueError: ``env_id`` is not an edgegym id.
    """
    _require_ray()
    from functools import partial

    from ray.tune.registry import register_env

    from edgegym.evaluation import check_env_id

    check_env_id(env_id)
    name = f"{env_id}:masked"
    register_env(name, partial(_make, env_id))
    return name


def masked_ppo_config(
    env_id: str,
    env_config: Mapping[str, Any] | None = None,
    hiddens: tuple[int, ...] = (64, 64),
) -> Any:
    """RLlib ``PPOConfig`` (new API stack) on ``env_id`` with action masking.

    Args:
        env_id: Any edgegym id (base or ``-Flat-v0``).
        env_config: Scenario and overrides, as keyword arguments of ``gymnasium.make``.
        hiddens: Hidden layer sizes of the policy and value heads.

    Returns:
        A ``PPOConfig``; set training, env-runner and resource options on it as usual.

    Raises:
        RayMissingError: Ray is not installed.
    """
    _require_ray()
    from ray.rllib.algorithms.ppo import PPOConfig
    from ray.rllib.core.rl_module.rl_module import RLModuleSpec
    from ray.rllib.examples.rl_modules.classes.action_masking_rlm import (
        ActionMaskingTorchRLModule,
    )

    name = register_masked(env_id)
    return (
        PPOConfig()
        .environment(name, env_config=dict(env_config or {}))
        .rl_module(
            rl_module_spec=RLModuleSpec(
                module_class=ActionMaskingTorchRLModule,
                model_config={
                    "head_fcnet_hiddens": list(hiddens),
                    "head_fcnet_activation": "tanh",
                },
            )
        )
    )


__all__ = ["RAY_HINT", "RayMissingError", "masked_ppo_config", "register_masked"]

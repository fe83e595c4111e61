"""RLlib's PPO on edgegym: masked environments, ``masked_ppo_config``, the hyperparameter mapping.

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

For ``edgegym train --backend rllib``, :func:`rllib_settings` maps a run's hyperparameter file
onto RLlib's settings (:data:`MAPPING`, recorded in ``config.yaml``) and :func:`ppo_config`
builds the ``PPOConfig`` of those settings.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
from gymnasium import spaces

from edgegym.agents.config import ConfigError, dotted
from edgegym.agents.policies import SIZE_FREE
from edgegym.core.registry import FAMILIES
from edgegym.evaluation import make_env
from edgegym.parallel import require_ray


def _require_ray() -> None:
    require_ray(rllib=True)


def _make(env_id: str, config: Mapping[str, Any]) -> Any:
    """RLlib's env creator: :func:`~edgegym.wrappers.make_masked`, or, when RLlib asks for a
    vector env (``gym_env_vectorize_mode=VECTOR_ENTRY_POINT`` puts ``num_envs`` into the
    config), :func:`~edgegym.wrappers.make_masked_vector` on the id's native vector env."""
    from edgegym.wrappers import make_masked, make_masked_vector

    kwargs = dict(config)
    num_envs = kwargs.pop("num_envs", None)
    if num_envs is None:
        return make_masked(env_id, **kwargs)
    return make_masked_vector(env_id, int(num_envs), **kwargs)


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
    model_config: Mapping[str, Any] | None = None,
    module_class: type | None = None,
) -> Any:
    """RLlib ``PPOConfig`` (new API stack) on ``env_id`` with action masking.

    The registered environment builds :func:`~edgegym.wrappers.make_masked` envs; with
    ``config.env_runners(gym_env_vectorize_mode=gymnasium.VectorizeMode.VECTOR_ENTRY_POINT,
    num_envs_per_env_runner=N)`` it builds the id's native vector env instead
    (:class:`~edgegym.wrappers.MaskedVectorEnv`, the same N envs in one batch).

    Args:
        env_id: Any edgegym id (base or ``-Flat-v0``).
        env_config: Scenario and overrides, as keyword arguments of ``gymnasium.make``.
        hiddens: Hidden layer sizes of the policy and value heads.
        model_config: RLlib ``model_config`` of the RLModule instead (``hiddens`` is then
            ignored), e.g. ``{"fcnet_hiddens": [64, 64], "head_fcnet_hiddens": []}``.
        module_class: Another action-masking RLModule class (default RLlib's
            ``ActionMaskingTorchRLModule``), such as
            :class:`edgegym.agents.rllib.module.SizeFreeTorchRLModule` with the
            ``model_config`` of :func:`edgegym.agents.rllib.module.module_config`.

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
                module_class=module_class or ActionMaskingTorchRLModule,
                model_config=dict(model_config)
                if model_config is not None
                else {
                    "head_fcnet_hiddens": list(hiddens),
                    "head_fcnet_activation": "tanh",
                },
            )
        )
    )


# ----------------------------------------------------------------------------- mapping
#: ``ppo.<key>`` of the hyperparameter file -> RLlib ``PPOConfig.training`` argument.
PPO_MAP: dict[str, str] = {
    "learning_rate": "lr",
    "batch_size": "minibatch_size",
    "n_epochs": "num_epochs",
    "gamma": "gamma",
    "gae_lambda": "lambda_",
    "clip_range": "clip_param",
    "ent_coef": "entropy_coeff",
    "vf_coef": "vf_loss_coeff",
    "max_grad_norm": "grad_clip",
}

#: The whole mapping, as recorded in ``config.yaml`` (``rllib.mapping``).
MAPPING: dict[str, str] = {
    **{f"ppo.{k}": v for k, v in PPO_MAP.items()},
    "ppo.n_steps * train.n_envs": "train_batch_size_per_learner",
    "ppo.lr_schedule": "constant: lr; linear: lr=[[0, learning_rate], [timesteps, 0]]",
    "ppo.target_kl": "null: use_kl_loss=False; a number: use_kl_loss=True, kl_target (RLlib's "
    "adaptive KL penalty, not SB3's early stop)",
    "ppo.normalize_advantage": "not mapped (RLlib standardises advantages)",
    "(SB3 clip_range_vf=None)": "vf_clip_param=inf",
    "(SB3 clips the global gradient norm)": "grad_clip_by=global_norm",
    "policy": "auto, MlpPolicy, MultiInputPolicy: RLlib's ActionMaskingTorchRLModule; a "
    "size-free policy (PerTenantPolicy, PooledPolicy, SignaturePolicy, GraphPolicy): "
    "edgegym's SizeFreeTorchRLModule holding that policy, policy_kwargs as for SB3",
    "policy_kwargs.net_arch": "(RLlib's module) model_config.fcnet_hiddens (separate policy "
    "and value encoders, vf_share_layers=False) with linear heads (head_fcnet_hiddens=[])",
    "policy_kwargs.activation_fn": "(RLlib's module) model_config.fcnet_activation",
    "policy_kwargs.ortho_init": "(RLlib's module) not mapped (RLlib's default initialisers)",
    "algo": "not mapped (always action masking)",
    "wrappers.flatten_obs": "not mapped (the masked view always flattens; "
    "SizeFreeTorchRLModule cuts the flat vector back into the env's own observation)",
    "wrappers.discrete_actions": "the family's -Flat-v0 id (max_actions in env_config)",
    "train.n_envs": "num_envs_per_env_runner",
    "train.vec_env": "gym_env_vectorize_mode (auto/native: vector_entry_point where the id "
    "has a native vector env; dummy: sync; subproc: async)",
    "train.torch_threads": "torch.set_num_threads of the learner (this process)",
    "train.device": "num_gpus_per_learner (cpu: 0, cuda: 1)",
}

#: Set before the user's ``--hp``: the family files name the SB3 backend's scenario mixtures
#: and strong starts (``agents/hyperparams/mig.yaml``'s MIGRator as an action, cloning it),
#: which the RLlib backend does not have; the same keys given explicitly are still refused
#: (:func:`rllib_settings`). The files' size-free policies train as
#: :class:`~edgegym.agents.rllib.module.SizeFreeTorchRLModule`.
RLLIB_BASE = ["train.scenarios=[]", "bc.teacher=null", "wrappers.teacher=null"]

#: The RLModule of a run whose ``policy`` is one of :data:`SIZE_FREE` (its module path: this
#: string names the class without importing Ray).
SIZE_FREE_MODULE = "edgegym.agents.rllib.module.SizeFreeTorchRLModule"
#: RLlib's own action-masking MLP, for ``policy: auto`` (and the MLP policies).
MASKING_MODULE = (
    "ray.rllib.examples.rl_modules.classes.action_masking_rlm.ActionMaskingTorchRLModule"
)


def rllib_hyperparams(
    hyperparams: Sequence[str] | Mapping[str, Any] | None,
) -> list[str] | dict[str, Any]:
    """A new run's hyperparameter overrides: :data:`RLLIB_BASE`, then the user's own (the
    family file's SB3-only choices give way; the user's do not)."""
    if isinstance(hyperparams, Mapping):
        return _deep_merge(dotted(RLLIB_BASE), dotted(hyperparams))
    return [*RLLIB_BASE, *(hyperparams or [])]


def _deep_merge(base: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        old = out.get(key)
        both = isinstance(value, Mapping) and isinstance(old, Mapping)
        out[key] = _deep_merge(old, value) if both else value
    return out


_ACTIVATIONS = {"tanh": "tanh", "relu": "relu", "elu": "elu", "leaky_relu": "LeakyReLU"}


# ----------------------------------------------------------------------------- settings
def rllib_settings(cfg: Mapping[str, Any], num_env_runners: int = 0) -> dict[str, Any]:
    """The RLlib settings of a run's configuration (recorded as ``config.yaml``'s ``rllib``).

    Returns:
        ``{"env", "env_config", "vectorize", "num_env_runners", "num_envs_per_env_runner",
        "module", "training", "model_config", "num_gpus_per_learner", "mapping"}``.

    Raises:
        ConfigError: A setting RLlib cannot express (an SB3-only key; different policy and
            value widths; a ``discrete_actions`` run on a family without a flat view;
            ``vec_env: native`` on an id without a native vector env).
    """
    hp = cfg["hyperparams"]
    _refuse_sb3_only(hp)
    run_id, env_config, vectorize = _env_settings(cfg)
    size_free = hp["policy"] in SIZE_FREE
    model_config = (
        _size_free_settings(cfg, env_config) if size_free else _mlp_settings(hp["policy_kwargs"])
    )
    device = str(hp["train"]["device"])
    if device == "auto":
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    return {
        "env": run_id,
        "env_config": env_config,
        "vectorize": vectorize,
        "num_env_runners": int(num_env_runners),
        "num_envs_per_env_runner": int(hp["train"]["n_envs"]),
        "module": SIZE_FREE_MODULE if size_free else MASKING_MODULE,
        "training": _training_settings(hp["ppo"], int(hp["train"]["n_envs"]), cfg["timesteps"]),
        "model_config": model_config,
        "num_gpus_per_learner": 1 if device.startswith("cuda") else 0,
        "mapping": dict(MAPPING),
    }


def _refuse_sb3_only(hp: Mapping[str, Any]) -> None:
    """Refuse the hyperparameters only the SB3 backend has (given explicitly: the family
    files' own give way, :data:`RLLIB_BASE`).

    Raises:
        ConfigError: A scenario mixture, behaviour cloning or a teacher action.
    """
    for key, unsupported in (
        ("train.scenarios", bool(hp["train"].get("scenarios"))),
        ("bc.teacher", bool(hp.get("bc", {}).get("teacher"))),
        ("wrappers.teacher", bool(hp["wrappers"].get("teacher"))),
    ):
        if unsupported:
            raise ConfigError(
                f"{key}: the RLlib backend trains on one scenario from scratch; scenario "
                "mixtures, behaviour cloning and a scheduler's decision as an action are the "
                "SB3 backend's (--backend sb3)"
            )


def _env_settings(cfg: Mapping[str, Any]) -> tuple[str, dict[str, Any], str]:
    """``(id, env_config, vectorize mode)`` RLlib trains on: the run's id, or its family's
    ``-Flat-v0`` view for ``wrappers.discrete_actions`` on a ``MultiDiscrete`` action.

    Raises:
        ConfigError: No flat view to train on; ``vec_env: native`` without a native vector env.
    """
    wrappers = cfg["hyperparams"]["wrappers"]
    probe = make_env(cfg["env_id"], cfg["scenario"], cfg["overrides"])
    try:
        multi = isinstance(probe.action_space, spaces.MultiDiscrete)
    finally:
        probe.close()
    env_config: dict[str, Any] = {"scenario": cfg["scenario"], **dict(cfg["overrides"] or {})}
    run_id = cfg["env_id"]
    if bool(wrappers["discrete_actions"]) and multi:
        flat = FAMILIES[cfg["family"]].flat_id
        if not flat:
            raise ConfigError(
                f"wrappers.discrete_actions: family {cfg['family']!r} has no -Flat-v0 view "
                "for RLlib to train on; set wrappers.discrete_actions=false"
            )
        run_id = flat
        env_config["max_actions"] = int(wrappers["max_actions"])
    native = gym.spec(run_id).vector_entry_point is not None
    kind = cfg["hyperparams"]["train"]["vec_env"]
    if kind == "native" and not native:
        raise ConfigError(f"train.vec_env=native: {run_id} has no native vector env")
    vectorize = {
        "auto": "vector_entry_point" if native else "sync",
        "native": "vector_entry_point",
        "dummy": "sync",
        "subproc": "async",
    }[kind]
    return run_id, env_config, vectorize


def _training_settings(ppo: Mapping[str, Any], n_envs: int, timesteps: int) -> dict[str, Any]:
    """``PPOConfig.training``'s arguments of the file's ``ppo`` section (:data:`MAPPING`)."""
    training: dict[str, Any] = {v: ppo[k] for k, v in PPO_MAP.items()}
    if ppo.get("lr_schedule") == "linear":  # RLlib's piecewise-linear schedule over env steps
        training["lr"] = [[0, float(ppo["learning_rate"])], [int(timesteps), 0.0]]
    batch = int(ppo["n_steps"]) * int(n_envs)
    training["train_batch_size_per_learner"] = batch
    training["minibatch_size"] = min(int(ppo["batch_size"]), batch)
    training["grad_clip_by"] = "global_norm"
    training["vf_clip_param"] = math.inf
    if ppo["target_kl"] is None:
        training["use_kl_loss"] = False
    else:
        training["use_kl_loss"] = True
        training["kl_target"] = float(ppo["target_kl"])
    return training


def _size_free_settings(cfg: Mapping[str, Any], env_config: Mapping[str, Any]) -> dict[str, Any]:
    """The recorded ``model_config`` of a size-free policy (name, base id, ``policy_kwargs``,
    wrappers), checked against the scenario before Ray starts.

    Raises:
        ConfigError: The policy does not fit the scenario.
    """
    hp = cfg["hyperparams"]
    recorded = {
        "policy": hp["policy"],
        "env_id": cfg["env_id"],
        "policy_kwargs": dict(hp["policy_kwargs"]),
        "wrappers": {**dict(hp["wrappers"]), "flatten_obs": False, "teacher": None},
    }
    try:
        size_free_config(recorded, env_config)
    except ValueError as exc:
        raise ConfigError(f"policy {hp['policy']} on {cfg['env_id']}: {exc}") from None
    return recorded


def _mlp_settings(policy_kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """RLlib's masked MLP ``model_config`` for the file's ``policy_kwargs`` (SB3's layout).

    Raises:
        ConfigError: Different policy and value widths (RLlib builds them alike).
    """
    arch = policy_kwargs["net_arch"]
    if isinstance(arch, Mapping):
        pi, vf = list(arch.get("pi", [])), list(arch.get("vf", []))
        if pi != vf:
            raise ConfigError(
                f"policy_kwargs.net_arch {dict(arch)}: RLlib's PPO module builds policy and "
                "value networks of the same widths; give one list"
            )
        arch = pi
    return {
        "fcnet_hiddens": [int(w) for w in arch],
        "fcnet_activation": _ACTIVATIONS[policy_kwargs["activation_fn"]],
        "head_fcnet_hiddens": [],
        "vf_share_layers": False,
    }


def size_free_config(
    model_config: Mapping[str, Any], env_config: Mapping[str, Any]
) -> dict[str, Any]:
    """The :class:`~edgegym.agents.rllib.module.SizeFreeTorchRLModule` ``model_config`` of the
    recorded one (policy, base id, ``policy_kwargs``, wrappers) on ``env_config``'s scenario."""
    from edgegym.agents.rllib.module import module_config

    overrides = {k: v for k, v in env_config.items() if k not in ("scenario", "max_actions")}
    return module_config(
        str(model_config["env_id"]), str(env_config["scenario"]), overrides, model_config
    )


def ppo_config(settings: Mapping[str, Any], seed: int) -> Any:
    """The RLlib ``PPOConfig`` of :func:`rllib_settings`."""
    model_config, module_class = settings["model_config"], None
    if settings["module"] == SIZE_FREE_MODULE:
        from edgegym.agents.rllib.module import SizeFreeTorchRLModule

        model_config = size_free_config(model_config, settings["env_config"])
        module_class = SizeFreeTorchRLModule
    return (
        masked_ppo_config(
            settings["env"],
            settings["env_config"],
            model_config=model_config,
            module_class=module_class,
        )
        .env_runners(
            num_env_runners=int(settings["num_env_runners"]),
            num_envs_per_env_runner=int(settings["num_envs_per_env_runner"]),
            gym_env_vectorize_mode=gym.VectorizeMode(settings["vectorize"]),
        )
        .learners(num_learners=0, num_gpus_per_learner=settings["num_gpus_per_learner"])
        .training(**settings["training"])
        .debugging(seed=int(seed))
    )


__all__ = [
    "MAPPING",
    "PPO_MAP",
    "RLLIB_BASE",
    "SIZE_FREE_MODULE",
    "masked_ppo_config",
    "ppo_config",
    "register_masked",
    "rllib_hyperparams",
    "rllib_settings",
    "size_free_config",
]

"""RLlib modules behind the evaluator's policy protocol: ``--policy rllib:PATH``.

:func:`load_rllib_module` reads the RLModule of an ``edgegym train --backend rllib`` run (its
folder, ``model/``, ``best_model/``, a checkpoint, or the module folder inside one) with the
run's ``config.yaml``; :class:`RLlibPolicy` answers ``predict`` on the environment's own
observations through :class:`~edgegym.agents.policy.PPOPolicy`'s wrappers, so it is scored
like an SB3 model (:func:`make_rllib_policy` is the ``rllib:PATH`` spec of
:func:`edgegym.baselines.make_policy`). Ray is imported only when a module is loaded.
"""

from __future__ import annotations

import copy
import pickle
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from edgegym.agents.policies import SIZE_FREE
from edgegym.agents.policy import (
    PolicyLoadError,
    PPOPolicy,
    check_env_field,
    check_family,
    first_line,
    open_weights,
    read_config,
)
from edgegym.agents.shapes import NetworkMismatch, check_fits, network_shapes, stored_shapes
from edgegym.inputs import InputError
from edgegym.parallel import RayMissingError, require_ray

#: Where an Algorithm checkpoint keeps its (single) RLModule.
MODULE_SUBDIR = Path("learner_group", "learner", "rl_module", "default_policy")
#: edgegym's tensor copy of a checkpoint's module weights, beside RLlib's own files.
WEIGHTS_NAME = "edgegym_weights.pt"


class _ModuleModel:
    """An RLlib RLModule (action-masking PPO) with the bits of SB3's model API that
    :class:`~edgegym.agents.policy.PPOPolicy` uses: the spaces it was built for (the flat
    observation without the mask) and ``predict(obs, deterministic, action_masks)``."""

    def __init__(self, module: Any) -> None:
        self.module = module
        space = module.observation_space
        if not (isinstance(space, spaces.Dict) and "observations" in space.spaces):
            raise PolicyLoadError(
                f"the RLModule's observation space {space} is not an action-masking one "
                "(Dict of 'action_mask' and 'observations')"
            )
        self.observation_space = space["observations"]
        self.action_space = module.action_space
        if isinstance(self.action_space, spaces.Discrete):
            self.sizes = [int(self.action_space.n)]
        elif isinstance(self.action_space, spaces.MultiDiscrete):
            self.sizes = [int(n) for n in np.asarray(self.action_space.nvec).ravel()]
        else:
            raise PolicyLoadError(f"unsupported RLModule action space {self.action_space}")

    def predict(
        self, observation: Any, deterministic: bool = True, action_masks: Any = None
    ) -> tuple[np.ndarray, None]:
        import torch
        from ray.rllib.core.columns import Columns

        n = sum(self.sizes)
        mask = np.ones(n, dtype=np.float32) if action_masks is None else action_masks
        batch = {
            Columns.OBS: {
                "action_mask": torch.as_tensor(np.asarray(mask, dtype=np.float32))[None],
                "observations": torch.as_tensor(np.asarray(observation, dtype=np.float32))[None],
            }
        }
        with torch.no_grad():
            logits = self.module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS][0]
        picks = []
        for part in torch.split(logits, self.sizes):
            if deterministic:
                picks.append(int(torch.argmax(part)))
            else:
                picks.append(int(torch.distributions.Categorical(logits=part).sample()))
        if isinstance(self.action_space, spaces.Discrete):
            return np.asarray(picks[0]), None
        return np.asarray(picks, dtype=np.int64), None


class _PolicyModel:
    """The SB3 policy inside a :class:`~edgegym.agents.rllib.module.SizeFreeTorchRLModule`
    with the bits of SB3's model API that :class:`~edgegym.agents.policy.PPOPolicy` uses, so
    the module acts on the environment's own observations and rebinds to other sizes."""

    def __init__(self, policy: Any) -> None:
        self.policy = policy
        self.observation_space = policy.observation_space
        self.action_space = policy.action_space

    def predict(
        self, observation: Any, deterministic: bool = True, action_masks: Any = None
    ) -> tuple[np.ndarray, None]:
        return self.policy.predict(
            observation, deterministic=deterministic, action_masks=action_masks
        )


class RLlibPolicy(PPOPolicy):
    """An RLlib action-masking PPO module behind the evaluator's policy protocol, on the
    environment's *own* observations (like :class:`~edgegym.agents.policy.PPOPolicy`): a
    ``Dict`` observation is flattened, the env's current mask (translated onto the joint
    actions when the run used ``wrappers.discrete_actions``) goes in beside it, and the action
    is the argmax of the masked logits (per component for ``MultiDiscrete``), decoded back to
    the env's action. A :class:`~edgegym.agents.rllib.module.SizeFreeTorchRLModule` acts
    through its SB3 policy instead, on the env's own observation, so it rebinds to other
    tenant, GPU and server counts as the SB3 models do.

    Args:
        module: The RLModule (``RLModule.from_checkpoint`` or ``algo.get_module()``).
        env: The environment the evaluator steps.
        config: The run's ``config.yaml`` (``hyperparams.wrappers``, ``spaces``).
        name: Name reported by the evaluator.
        source: Where the module came from (for messages).

    Raises:
        PolicyLoadError: The module's spaces do not fit the environment.
    """

    def __init__(
        self,
        module: Any,
        env: gym.Env,
        config: dict[str, Any],
        name: str = "rllib",
        source: str = "the RLlib module",
    ) -> None:
        view = copy.deepcopy(config)
        view["hyperparams"]["algo"] = "maskable_ppo"  # always masked
        model: Any
        if config.get("policy_class") in SIZE_FREE and hasattr(module, "policy"):
            model = _PolicyModel(module.policy)  # a SizeFreeTorchRLModule: its SB3 policy
        else:
            view["hyperparams"]["wrappers"]["flatten_obs"] = True  # the module reads a flat Box
            model = _ModuleModel(module)
        super().__init__(model, env, view, name=name, source=source)
        self.config = config
        self.module = module


def _find_checkpoint(path: Path) -> tuple[Path, Path]:
    """``(module folder, the checkpoint folder the user meant)`` of an ``rllib:PATH``."""
    p = path.expanduser()
    if not p.exists():
        raise PolicyLoadError(f"RLlib checkpoint {p} does not exist")
    if p.is_dir() and (p / "model").is_dir() and not (p / "rllib_checkpoint.json").exists():
        p = p / "model"  # a run folder
    if (p / MODULE_SUBDIR).is_dir():
        return p / MODULE_SUBDIR, p
    if (p / "module_state.pkl").exists() or (p / "module_state.pt").exists():
        return p, p  # an RLModule checkpoint itself
    sb3 = p.suffix == ".zip" or (p / "model.zip").is_file() or p.with_suffix(".zip").is_file()
    raise PolicyLoadError(
        f"{p} is not an RLlib checkpoint (expected a run folder with model/, an Algorithm "
        f"checkpoint with {MODULE_SUBDIR.as_posix()}/, or an RLModule checkpoint)"
        + ("; it holds an SB3 model: score it with ppo:PATH" if sb3 else "")
    )


def _find_config(ckpt: Path) -> Path:
    for folder in [ckpt, *list(ckpt.parents)[:6]]:
        if (folder / "config.yaml").is_file():
            return folder / "config.yaml"
    raise PolicyLoadError(
        f"RLlib checkpoint {ckpt}: no config.yaml beside it (or in a parent folder); the "
        "training configuration says which environment and wrappers the policy needs"
    )


def _rebuilt_module(config: dict[str, Any], ckpt: Path) -> Any:
    """The run's RLModule built from its ``config.yaml`` (the RLlib settings training used),
    with the weights of edgegym's tensor copy (``torch.load(weights_only=True)``): nothing of
    RLlib's pickled files (the module's constructor arguments, its state) is read.

    Raises:
        PolicyLoadError: ``rllib.env`` is not an edgegym id (checked before anything is made:
            ``gymnasium.make("module:Id")`` imports ``module``), no tensor copy (a checkpoint
            edgegym did not write, or an older one) or one that is not a regular file within
            ``MAX_WEIGHTS_BYTES``, or weights that do not fit the module the config describes
            (checked on the ``meta`` device before the module is built).
    """
    import torch

    from edgegym.agents.rllib.ppo import ppo_config
    from edgegym.wrappers import make_masked

    settings = {**config["rllib"], "num_env_runners": 0}
    # gymnasium.make("module:Id") imports module: only edgegym's own ids are made.
    check_env_field(settings.get("env"), "rllib.env", f"RLlib checkpoint {ckpt}")
    weights = ckpt / WEIGHTS_NAME
    try:
        fh = open_weights(weights, "RLlib weights file")
    except FileNotFoundError:
        raise PolicyLoadError(
            f"RLlib checkpoint {ckpt} has no {WEIGHTS_NAME} (edgegym's tensor copy of its "
            "weights); loading RLlib's own files unpickles them, which runs whatever they "
            "hold. Pass --trust-artifact if you trust its source"
        ) from None
    except InputError as exc:  # a FIFO, a device, a folder, over MAX_WEIGHTS_BYTES
        raise PolicyLoadError(str(exc)) from None
    try:
        with fh:
            state = torch.load(fh, map_location="cpu", weights_only=True)
    except pickle.UnpicklingError:
        raise PolicyLoadError(
            f"{weights}: holds pickled Python objects other than tensors; loading them would "
            "run whatever they hold. Pass --trust-artifact if you trust its source"
        ) from None
    probe = make_masked(settings["env"], **settings["env_config"])
    try:
        spec = ppo_config(settings, 0).get_rl_module_spec(env=probe)
        # The layers config.yaml describes (fcnet_hiddens, a size-free policy's widths) are
        # checked against the stored tensors on the meta device first: a description of
        # layers 30,000 wide allocated 7.5 GB before load_state_dict found it did not fit.
        try:
            check_fits(network_shapes(spec.build), stored_shapes(state, WEIGHTS_NAME), WEIGHTS_NAME)
        except NetworkMismatch as exc:
            raise PolicyLoadError(
                f"RLlib checkpoint {ckpt}: {exc}; refused before building it"
            ) from None
        module = spec.build()
    finally:
        probe.close()
    module.load_state_dict(state)
    return module


def load_rllib_module(path: str | Path) -> tuple[Any, dict[str, Any], Path]:
    """The RLModule of an ``edgegym train --backend rllib`` run and its training config.

    Args:
        path: The run folder, its ``model/`` or ``best_model/``, a ``checkpoints/ckpt_*``
            folder, or the RLModule folder inside one.

    Returns:
        ``(module, config, checkpoint folder)``.

    Raises:
        RayMissingError: Ray is not installed.
        PolicyLoadError: No checkpoint there, no or a non-RLlib ``config.yaml``, a checkpoint
            that cannot be loaded (the message names the file).
    """
    require_ray(rllib=True)
    module_dir, ckpt = _find_checkpoint(Path(path))
    config_path = _find_config(ckpt)
    config = read_config(config_path)
    if config.get("backend") != "rllib":
        raise PolicyLoadError(
            f"{config_path} is a Stable-Baselines3 run (no 'backend: rllib'); score it with "
            "--policy ppo:PATH"
        )
    import torch
    from ray.rllib.core.rl_module.rl_module import RLModule

    from edgegym.agents.sb3.artifacts import trusted

    torch.set_num_threads(1)  # tiny networks; see edgegym.agents.policy.load_model
    try:
        if trusted():
            # Absolute: RLlib reads the folder through pyarrow's filesystem, which takes a
            # relative path for a URI without a scheme and fails ("URI has empty scheme").
            module = RLModule.from_checkpoint(str(module_dir.resolve()))
        else:
            module = _rebuilt_module(config, ckpt)
    except PolicyLoadError:
        raise
    except Exception as exc:  # pickle, torch, file and key errors alike
        raise PolicyLoadError(
            f"RLlib checkpoint {module_dir} cannot be loaded: {type(exc).__name__}: "
            f"{first_line(exc)}"
        ) from None
    module.eval()
    return module, config, ckpt


def load_rllib_policy(path: str | Path, env: gym.Env, name: str | None = None) -> RLlibPolicy:
    """An :class:`RLlibPolicy` for ``env`` from a run folder or checkpoint.

    Raises:
        RayMissingError: Ray is not installed.
        PolicyLoadError: Missing or corrupt files, another family, spaces that do not fit.
    """
    module, config, ckpt = load_rllib_module(path)
    check_family(env, config, f"RLlib checkpoint {ckpt}")
    return RLlibPolicy(module, env, config, name=name or "rllib", source=f"RLlib checkpoint {ckpt}")


def make_rllib_policy(spec: str, env: gym.Env) -> RLlibPolicy:
    """``rllib:PATH`` (see :func:`load_rllib_module` for PATH), for
    :func:`edgegym.baselines.make_policy`.

    Raises:
        PolicyLoadError: No PATH, Ray missing (the one-line message says what to install),
            or a bad checkpoint.
    """
    name, _, path = spec.partition(":")
    if name.strip() != "rllib" or not path.strip():
        raise PolicyLoadError(
            f"{spec!r}: an RLlib policy is rllib:PATH (a folder of 'edgegym train --backend "
            "rllib', its model/ or a checkpoint)"
        )
    try:
        return load_rllib_policy(path.strip(), env, name=spec.strip())
    except RayMissingError as exc:
        raise PolicyLoadError(f"policy {spec.strip()!r}: {exc}") from None


__all__ = [
    "MODULE_SUBDIR",
    "RLlibPolicy",
    "load_rllib_module",
    "load_rllib_policy",
    "make_rllib_policy",
]

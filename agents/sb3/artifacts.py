"""Stable-Baselines3 model files are untrusted: load them without unpickling anything.

SB3 keeps a model's settings in the zip's ``data`` entry as JSON, and every value JSON cannot
hold (the policy class, its keyword arguments, the spaces, the schedules, the last observation,
the episode buffers) as a cloudpickled blob that ``PPO.load`` unpickles: a crafted blob runs
code the moment the file is loaded. SB3 leaves a key alone when ``custom_objects`` names it,
and reads the weights (``*.pth``) with ``torch.load(weights_only=True)``. So :func:`load`
rebuilds every pickled value from edgegym's own training config (``config.yaml``, read as plain
YAML) and the environment that config names, and passes them all: nothing in the zip is
unpickled. A pickled key edgegym cannot rebuild is refused in one line, unless the user trusts
the file (``--trust-artifact``, or :data:`TRUST_ENV` set to 1 for worker processes).
"""

from __future__ import annotations

import contextlib
import copy
import inspect
import json
import os
import pickle
import zipfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from edgegym.inputs import InputError, check_file

#: Set to 1 (``--trust-artifact`` does) to let SB3 and RLlib unpickle what a file holds.
TRUST_ENV = "EDGEGYM_TRUST_ARTIFACTS"

#: Largest ``data`` entry read from a model zip (a real one is a few kB to a few hundred kB).
MAX_DATA_BYTES = 64 << 20


class UntrustedArtifact(ValueError):
    """A model file that would need arbitrary unpickling, or that cannot be read safely."""


def trusted() -> bool:
    """Whether the user allowed unpickling artifacts (:data:`TRUST_ENV`)."""
    return os.environ.get(TRUST_ENV, "").strip() not in ("", "0")


@contextlib.contextmanager
def trusting(allow: bool = True) -> Iterator[None]:
    """Inside (with ``allow``): unpickling allowed in this process and the worker processes
    it starts (``--trust-artifact``); the setting before comes back after."""
    before = os.environ.get(TRUST_ENV)
    if allow:
        os.environ[TRUST_ENV] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(TRUST_ENV, None)
        else:
            os.environ[TRUST_ENV] = before


def zip_data(path: str | Path) -> dict[str, Any]:
    """The JSON ``data`` entry of an SB3 model zip, read without unpickling.

    Raises:
        UntrustedArtifact: Not a zip, no ``data`` entry, too large, or not a JSON mapping.
    """
    try:
        check_file(path, "model file", "weights")  # a FIFO would block, a device never end
    except (FileNotFoundError, InputError) as exc:
        raise UntrustedArtifact(str(exc)) from None
    try:
        with zipfile.ZipFile(path) as z:
            info = z.getinfo("data")
            if info.file_size > MAX_DATA_BYTES:
                raise UntrustedArtifact(f"{path}: its data entry is over {MAX_DATA_BYTES >> 20} MB")
            data = json.loads(z.read(info))
    except KeyError:
        raise UntrustedArtifact(f"{path}: not an SB3 model (no data entry)") from None
    except (OSError, zipfile.BadZipFile, ValueError) as exc:
        if isinstance(exc, UntrustedArtifact):
            raise
        raise UntrustedArtifact(f"{path}: not an SB3 model zip ({type(exc).__name__})") from None
    if not isinstance(data, dict):
        raise UntrustedArtifact(f"{path}: its data entry is not a mapping")
    return data


def pickled_keys(data: Mapping[str, Any]) -> list[str]:
    """The keys of a model's ``data`` that SB3 would unpickle."""
    return sorted(k for k, v in data.items() if isinstance(v, dict) and ":serialized:" in v)


def num_timesteps(path: str | Path) -> int:
    """The timesteps a model zip records, read without unpickling."""
    value = zip_data(path).get("num_timesteps", 0)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise UntrustedArtifact(f"{path}: num_timesteps is not a count")
    return value


def _default(cls: type, name: str) -> Any:
    return inspect.signature(cls.__init__).parameters[name].default


def rebuilt_objects(cfg: Mapping[str, Any], cls: type) -> dict[str, Any]:
    """Every value SB3 pickles into a model of ``cls``, rebuilt from the training config
    ``cfg`` (the policy class and keyword arguments and the spaces from the environment the
    config names, the schedules from its ``ppo`` section, the run-time buffers empty: SB3 makes
    them again when training starts)."""
    from stable_baselines3.common.utils import FloatSchedule

    from edgegym.agents.sb3.envs import make_env, policy_for, wrap
    from edgegym.agents.sb3.train import ppo_arguments

    cfg = copy.deepcopy(dict(cfg))
    hp = cfg["hyperparams"]
    probe = wrap(
        make_env(cfg["env_id"], cfg.get("scenario"), cfg.get("overrides") or {}), hp["wrappers"]
    )
    try:
        policy, policy_kwargs = policy_for(cfg, probe)
        obs_space, act_space = probe.observation_space, probe.action_space
    finally:
        probe.close()
    if isinstance(policy, str):
        policy = cls.policy_aliases[policy]
    args = ppo_arguments(hp["ppo"])
    learning_rate = args.get("learning_rate", _default(cls, "learning_rate"))
    clip_range = args.get("clip_range", _default(cls, "clip_range"))
    clip_range_vf = args.get("clip_range_vf", _default(cls, "clip_range_vf"))
    return {
        "policy_class": policy,
        "policy_kwargs": policy_kwargs,
        "observation_space": obs_space,
        "action_space": act_space,
        "learning_rate": learning_rate,
        "lr_schedule": FloatSchedule(learning_rate),
        "clip_range": FloatSchedule(clip_range),
        "clip_range_vf": None if clip_range_vf is None else FloatSchedule(clip_range_vf),
        "target_kl": args.get("target_kl", _default(cls, "target_kl")),
        "rollout_buffer_class": None,
        "rollout_buffer_kwargs": {},
        "action_noise": None,
        "_last_obs": None,
        "_last_episode_starts": None,
        "_last_original_obs": None,
        "ep_info_buffer": None,
        "ep_success_buffer": None,
    }


def load(
    path: str | Path,
    cfg: Mapping[str, Any],
    cls: type,
    *,
    env: Any = None,
    device: str = "cpu",
) -> Any:
    """``cls.load(path)`` with nothing in the file unpickled (see the module docstring), or
    SB3's own load when the user trusts artifacts (:func:`trusted`).

    Raises:
        UntrustedArtifact: The file pickles a value edgegym does not rebuild (naming it), or
            it is not a readable model zip.
    """
    if trusted():
        return cls.load(str(path), env=env, device=device)
    keys = pickled_keys(zip_data(path))
    objects = rebuilt_objects(cfg, cls)
    unknown = [k for k in keys if k not in objects]
    if unknown:
        raise UntrustedArtifact(  # how many only: the names are the file's content
            f"{path}: holds {len(unknown)} pickled Python "
            f"{'object' if len(unknown) == 1 else 'objects'} edgegym does not rebuild; loading "
            "it would run whatever they hold. Pass --trust-artifact if you trust its source"
        )
    try:
        return cls.load(
            str(path), env=env, device=device, custom_objects={k: objects[k] for k in keys}
        )
    except pickle.UnpicklingError:  # torch.load(weights_only=True) met something else
        raise UntrustedArtifact(
            f"{path}: its weights hold pickled Python objects other than tensors; loading "
            "them would run whatever they hold. Pass --trust-artifact if you trust its source"
        ) from None


__all__ = [
    "TRUST_ENV",
    "UntrustedArtifact",
    "load",
    "num_timesteps",
    "pickled_keys",
    "rebuilt_objects",
    "trusted",
    "trusting",
    "zip_data",
]

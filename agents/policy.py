"""Trained PPO / MaskablePPO models behind the policy protocol of the baselines.

A trained policy is a folder with ``model.zip`` (Stable-Baselines3's format) and
``config.yaml`` (the exact training configuration, :mod:`edgegym.agents.run.record`). The
evaluator names it ``ppo`` (the policy shipped for the environment's family, in
``agents/trained/<family>/``) or ``ppo:PATH`` (a ``model.zip``, a checkpoint, or a folder
holding ``model.zip``)::

    edgegym evaluate edgegym/EnergyFairShare-v0 --policy ppo:runs/energy/model.zip --policy etf

:class:`PPOPolicy` answers ``predict(observation, ...)`` on the *environment's own*
observation: it applies the observation and action wrappers the model was trained with (read
from ``config.yaml``): flattening a ``Dict`` observation, translating the environment's
``MultiDiscrete`` mask into the ``Discrete`` mask of the joint actions and the chosen index
back into a ``MultiDiscrete`` action. A missing or unreadable file gives a
:class:`PolicyLoadError` (a ``ValueError``) that names it.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO

import gymnasium as gym
import numpy as np
import torch
import yaml
from gymnasium import spaces

from edgegym.agents import MAX_WEIGHTS_BYTES
from edgegym.agents.policies import SIZE_FREE
from edgegym.inputs import (
    LIMITS,
    InputError,
    check_file,
    load_yaml,
    quoted,
    read_text,
    token,
    yaml_problem,
)
from edgegym.wrappers import DictFlattener, JointActions, TeacherHint, family_of, joint_actions

#: Folder of the shipped policies: ``trained/<family>/model.zip`` + ``config.yaml``.
TRAINED_DIR = Path(__file__).resolve().parent / "trained"

#: The fields of a training config that name an environment id (dotted paths).
ENV_FIELDS = ("env_id", "rllib.env", "rllib.model_config.env_id")
#: The fields of a training config that name a scheduler that loading (or resuming) builds.
SCHEDULER_FIELDS = (
    "hyperparams.wrappers.teacher",
    "hyperparams.bc.teacher",
    "hyperparams.eval.baseline",
    "rllib.model_config.wrappers.teacher",
)


class PolicyLoadError(ValueError):
    """A policy file that is missing, unreadable, or does not fit the environment."""


def shipped_path(family: str) -> Path:
    """Where the shipped policy of a family lives (``agents/trained/<family>/model.zip``)."""
    return TRAINED_DIR / family / "model.zip"


def algo_class(name: object) -> type:
    """The SB3 algorithm class of a config's ``algo`` (``ppo`` / ``maskable_ppo``)."""
    if name == "ppo":
        from stable_baselines3 import PPO

        return PPO
    if name == "maskable_ppo":
        from sb3_contrib import MaskablePPO

        return MaskablePPO
    raise PolicyLoadError(f"unknown algorithm {quoted(name)} (ppo or maskable_ppo)")


def config_algo(config: Mapping[str, Any], path: Path) -> type:
    """The SB3 algorithm class a training config (read from ``path``) names.

    Raises:
        PolicyLoadError: It names none, or another one, in one line naming the file.
    """
    try:
        return algo_class(config["hyperparams"].get("algo"))
    except PolicyLoadError as exc:
        raise PolicyLoadError(f"training config {path}: hyperparams.algo: {exc}") from None


def resolve_model_path(path: str | Path) -> Path:
    """``path`` itself, or ``path/model.zip`` for a folder.

    Raises:
        PolicyLoadError: Nothing there.
    """
    p = Path(path).expanduser()
    if p.is_dir():
        p = p / "model.zip"
    try:
        check_file(p, "policy file", "weights")
    except FileNotFoundError:
        raise PolicyLoadError(f"policy file {p} does not exist") from None
    except InputError as exc:  # a FIFO, a device, a folder named model.zip, too large
        raise PolicyLoadError(str(exc)) from None
    return p


def open_weights(path: Path, what: str) -> BinaryIO:
    """``path`` opened for reading, a regular file within :data:`MAX_WEIGHTS_BYTES`: checked
    before it is opened (opening a FIFO blocks) and again on the open file (it may have been
    replaced in between; opened without blocking, so a FIFO there cannot hang).

    Raises:
        FileNotFoundError: ``path`` does not exist.
        InputError: Not a regular file, or over the cap.
    """
    check_file(path, what, "weights")
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        raise InputError(f"{path}: {what} cannot be read ({exc.strerror})") from None
    fh = os.fdopen(fd, "rb")
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_size > LIMITS["weights"]:
        fh.close()
        raise InputError(f"{path}: {what} was replaced by another kind of file while opened")
    return fh


def config_path_for(model_path: Path) -> Path:
    """``config.yaml`` beside the model, or in its parent folder (for checkpoints).

    Raises:
        PolicyLoadError: Neither exists.
    """
    for folder in (model_path.parent, model_path.parent.parent):
        candidate = folder / "config.yaml"
        if candidate.is_file():
            return candidate
    raise PolicyLoadError(
        f"policy file {model_path}: no config.yaml beside it (or in its parent folder); the "
        "training configuration says which wrappers the policy needs"
    )


def read_config(path: Path, *, loading: bool = True) -> dict[str, Any]:
    """A training ``config.yaml``, checked (``loading``, the default) for what loading or
    resuming its model would build from it (:func:`check_artifact_config`). Only a reader
    that builds nothing from the config (the learning curves) passes ``loading=False``.

    Raises:
        PolicyLoadError: Unreadable, not YAML, without the keys a policy needs, or naming an
            environment or a scheduler that loading it would import code for.
    """
    try:
        cfg = load_yaml(read_text(path, "training config", "config"))
    except (OSError, InputError) as exc:
        raise PolicyLoadError(str(exc)) from None
    except yaml.YAMLError as exc:
        raise PolicyLoadError(
            f"training config {path} cannot be read: not valid YAML, {yaml_problem(exc)}"
        ) from None
    except RecursionError:
        raise PolicyLoadError(f"training config {path} is nested too deeply") from None
    if not isinstance(cfg, dict) or not isinstance(cfg.get("hyperparams"), dict):
        raise PolicyLoadError(f"training config {path} is not an edgegym training config")
    if loading:
        check_artifact_config(cfg, path)
    return cfg


def _field(cfg: Mapping[str, Any], dotted: str) -> Any:
    """The value at a dotted path of ``cfg`` (``None`` where a level is missing)."""
    node: Any = cfg
    for key in dotted.split("."):
        if not isinstance(node, Mapping):
            return None
        node = node.get(key)
    return node


def check_env_field(value: Any, field: str, source: str | Path) -> None:
    """Refuse an environment id read from a file unless it is one of edgegym's own (a base
    or a ``-Flat`` id): ``gymnasium.make("module:Id")`` imports ``module`` first, and a
    foreign registered id runs its own package's code. ``None`` (absent) passes.

    Raises:
        PolicyLoadError: One line naming ``source`` and ``field`` (never the value itself
            beyond :func:`edgegym.inputs.token`).
    """
    if value is None:
        return
    from edgegym.core.registry import ENV_IDS, FLAT_IDS, register_all

    register_all()
    if isinstance(value, str) and (value in ENV_IDS or value in FLAT_IDS):
        return
    raise PolicyLoadError(
        f"{source}: {field} is {token(value)}, not an edgegym environment id (one of "
        f"{', '.join([*ENV_IDS, *FLAT_IDS])}); a trained agent is loaded only on those"
    )


def check_scheduler_field(value: Any, field: str, source: str | Path) -> None:
    """Refuse a scheduler spec read from a file unless it is one of edgegym's built-in
    schedulers (``thief``, ``etf:phi=0.5``): a ``FILE.py:NAME`` or ``MODULE:NAME`` spec
    imports and runs that code, and ``ppo``/``rllib`` load another artifact. Under
    ``--trust-artifact`` (:func:`edgegym.agents.sb3.artifacts.trusted`) any spec passes.
    ``None`` or empty (no scheduler) passes.

    Raises:
        PolicyLoadError: One line naming ``source`` and ``field``.
    """
    if value is None or value == "":
        return
    from edgegym.agents.sb3.artifacts import trusted

    if trusted():
        return
    from edgegym.baselines import POLICIES, check_parameters, is_user_spec, parse_policy

    if not (
        isinstance(value, str)
        and not is_user_spec(value)
        and value.partition(":")[0].strip() in POLICIES
    ):
        raise PolicyLoadError(
            f"{source}: {field} is {token(value)}, not one of edgegym's built-in schedulers: "
            "a trained agent's config may name only those (your own FILE.py:NAME or "
            "MODULE:NAME, ppo or rllib would be imported or loaded with it). Pass "
            "--trust-artifact if you trust its source"
        )
    try:
        name, kwargs = parse_policy(value)
        check_parameters(value, POLICIES[name][0], kwargs)
    except ValueError:
        raise PolicyLoadError(
            f"{source}: {field} is not a valid spec of a built-in scheduler (NAME or "
            "NAME:key=value,...: parameters it takes, of their types)"
        ) from None


def check_artifact_config(cfg: Mapping[str, Any], source: str | Path) -> None:
    """Refuse a training config (a trained agent's, a checkpoint's, a run to resume) that
    names code loading it would import: every environment id of :data:`ENV_FIELDS` must be
    edgegym's (:func:`check_env_field`), every scheduler of :data:`SCHEDULER_FIELDS` a
    built-in one (:func:`check_scheduler_field`).

    Raises:
        PolicyLoadError: One line naming ``source`` and the field.
    """
    for field in ENV_FIELDS:
        check_env_field(_field(cfg, field), field, source)
    for field in SCHEDULER_FIELDS:
        check_scheduler_field(_field(cfg, field), field, source)


class PPOPolicy:
    """A trained model bound to an environment, with SB3's ``predict`` on the env's own
    observations (see the module docstring).

    Args:
        model: A loaded ``PPO`` or ``MaskablePPO``.
        env: The environment the evaluator steps (its raw spaces).
        config: The training config (``hyperparams.algo`` and ``hyperparams.wrappers`` are
            used; ``spaces.joint_actions.fingerprint`` is checked when present).
        name: Name reported by the evaluator.
        source: Where the model came from (for messages).

    Raises:
        PolicyLoadError: The model's spaces do not fit the environment after the wrappers.
    """

    def __init__(
        self,
        model: Any,
        env: gym.Env,
        config: dict[str, Any],
        name: str = "ppo",
        source: str = "the model",
    ) -> None:
        self.model = model
        self.env = env
        self.unwrapped = env.unwrapped
        self.config = config
        self.name = name
        hp = config["hyperparams"]
        _check_flat_view(env, model, config, name, source)
        self.maskable = hp["algo"] == "maskable_ppo"
        wrappers = hp["wrappers"]
        obs_space, act_space = env.observation_space, env.action_space
        self.flattener: DictFlattener | None = None
        if wrappers["flatten_obs"] and not (
            isinstance(obs_space, spaces.Box) and len(obs_space.shape) == 1
        ):
            self.flattener = DictFlattener(obs_space)
            obs_space = self.flattener.space
        self.joint: JointActions | None = None
        #: Trained index -> index in :attr:`joint` (-1: not here), when the policy's
        #: catalogue is another size of the same rule (:meth:`JointActions.translate`).
        self.action_map: np.ndarray | None = None
        if wrappers["discrete_actions"] and isinstance(act_space, spaces.MultiDiscrete):
            self.joint = joint_actions(env, int(wrappers["max_actions"]))
            act_space = spaces.Discrete(len(self.joint))
            want = (config.get("spaces") or {}).get("joint_actions") or {}
            if want.get("fingerprint") and want["fingerprint"] != self.joint.fingerprint():
                self._match_catalogue(want, config, source)
                if self.action_map is not None:
                    act_space = spaces.Discrete(len(self.action_map))
        #: The scheduler behind the extra last index (``wrappers.teacher``), or ``None``.
        self.hint: TeacherHint | None = None
        if wrappers.get("teacher") and isinstance(act_space, spaces.Discrete):
            self.hint = TeacherHint(env, str(wrappers["teacher"]))
            act_space = spaces.Discrete(int(act_space.n) + 1)
        #: What answers ``predict``: the model, or its size-free policy rebound to this
        #: environment's sizes (tenants, share grid, servers: ``policy.rebind``).
        self.predictor: Any = model
        if config.get("policy_class") in SIZE_FREE and not (
            _same_space(obs_space, model.observation_space)
            and _same_space(act_space, model.action_space)
        ):
            try:
                self.predictor = model.policy.rebind(env, act_space)
            except ValueError as exc:
                raise PolicyLoadError(
                    f"{source} (a {config['policy_class']}, trained on "
                    f"{config.get('scenario')} with overrides {config.get('overrides') or {}}) "
                    f"cannot act here: {exc}"
                ) from None
        else:
            _check_spaces(model, obs_space, act_space, config, source)

    def _match_catalogue(self, want: dict[str, Any], config: dict[str, Any], source: str) -> None:
        """This environment's catalogue differs from the training one: accept it when a
        size-free policy's rule is the same (same number of actions: taken as the same
        meaning; another number: matched by label against the training scenario's list,
        :attr:`action_map`), refuse it otherwise."""
        assert self.joint is not None
        have = (self.joint.rule, len(self.joint))
        same_rule = want.get("rule") == self.joint.rule
        if config.get("policy_class") in SIZE_FREE and same_rule:
            if want.get("n") == len(self.joint):
                return  # a pooled policy's catalogue means the same at every size
            trained = _training_catalogue(config)
            if (
                trained is not None
                and trained.fingerprint() == want["fingerprint"]
                and trained.labels is not None
                and self.joint.labels is not None
            ):
                self.action_map = trained.translate(self.joint)
                return
        if (want.get("rule"), want.get("n")) == have:
            # Same rule and size: only the contents can say what differs.
            what = (
                "have the rule and number of those the policy was trained on "
                f"({self.joint.rule}, {len(self.joint)}) but different contents "
                f"(catalogue fingerprint {self.joint.fingerprint()[:12]} here, "
                f"{str(want['fingerprint'])[:12]} in training)"
            )
        else:
            what = (
                f"({self.joint.rule}, {len(self.joint)}) differ from those the policy "
                f"was trained on ({want.get('rule')}, {want.get('n')})"
            )
        raise PolicyLoadError(
            f"{source}: the joint actions of this environment {what}; evaluate it on "
            f"its training scenario ({config.get('scenario')}, overrides "
            f"{config.get('overrides') or {}})"
        )

    def reset(self, seed: int | None = None) -> None:
        """Episode start: the teacher behind a hint index reseeds (the model is stateless)."""
        if self.hint is not None:
            self.hint.reset(seed)

    def _md_mask(self) -> np.ndarray:
        return np.asarray(self.env.get_wrapper_attr("action_masks")(), dtype=bool)

    def predict(
        self,
        observation: Any,
        state: Any = None,
        episode_start: Any = None,
        deterministic: bool = True,
    ) -> tuple[np.ndarray, Any]:
        """SB3 protocol on the environment's own observation: ``(action, state)``."""
        obs = self.flattener(observation) if self.flattener is not None else observation
        md_mask = (
            self._md_mask() if (self.maskable or self.joint is not None or self.hint) else None
        )
        kwargs: dict[str, Any] = {}
        if self.maskable:
            mask = self.joint.mask(md_mask) if self.joint else md_mask
            if self.action_map is not None:
                mask = JointActions.mask_through(mask, self.action_map)
            kwargs["action_masks"] = mask if self.hint is None else np.append(mask, True)
        action, _ = self.predictor.predict(obs, deterministic=deterministic, **kwargs)
        if self.joint is not None:
            index = int(np.asarray(action).item())
            n = len(self.joint) if self.action_map is None else len(self.action_map)
            if self.hint is not None and index == n:
                return self.hint.act(), state
            if self.action_map is not None:
                index = int(self.action_map[index])  # -1 only where the mask was ignored
                if index < 0:
                    index = 0
            return self.joint.decode(index, md_mask), state
        if self.hint is not None and int(np.asarray(action).item()) == len(md_mask):
            return self.hint.act(), state  # TeacherAction's index: after the env's own
        return np.asarray(action), state


def _flat_view(env: gym.Env) -> str | None:
    """The base id when ``env`` is a flat view of an edgegym environment (a ``-Flat`` id, or
    :func:`edgegym.wrappers.make_flat`: spaces that are not its base environment's)."""
    base = env.unwrapped
    if env.action_space == base.action_space and env.observation_space == base.observation_space:
        return None
    from edgegym.core.registry import family_of_entry_point

    cls = type(base)
    family = family_of_entry_point(f"{cls.__module__}:{cls.__name__}")
    return family.env_id if family is not None else cls.__name__


def _check_flat_view(
    env: gym.Env, model: Any, config: dict[str, Any], name: str, source: str
) -> None:
    """Refuse a model that acts on its environment's own spaces, not on the flat view ``env``
    is: one trained through wrappers on the native id (a size-free policy, a teacher's hint
    index) that would need them again on top of the view.

    A model plays a ``-Flat`` view when it was trained on a flat ``Box`` observation and a
    ``Discrete`` action without a teacher (``policy: MlpPolicy``, ``wrappers.flatten_obs`` and
    ``wrappers.discrete_actions`` true); the shipped agents are all size-free.

    Raises:
        PolicyLoadError: One line naming the model, the native id and what to do.
    """
    base = _flat_view(env)
    if base is None:
        return
    hp = config["hyperparams"]
    policy_class = config.get("policy_class") or hp.get("policy")
    obs = model.observation_space
    fits = (
        policy_class not in SIZE_FREE
        and not hp["wrappers"].get("teacher")
        and isinstance(model.action_space, spaces.Discrete)
        and isinstance(obs, spaces.Box)
        and len(obs.shape) == 1
    )
    if fits:
        return
    what = "ppo (the shipped agent)" if name == "ppo" else f"{source} (a {policy_class})"
    raise PolicyLoadError(
        f"{what} acts on {base}, not on its -Flat view: evaluate it on {base}; on the view, "
        "use ppo:PATH of a model trained with --hp policy=MlpPolicy --hp "
        "wrappers.flatten_obs=true --hp wrappers.discrete_actions=true (no teacher; "
        "docs/agents.md)"
    )


def _training_catalogue(config: dict[str, Any]) -> JointActions | None:
    """The joint-action list of the training scenario recorded in ``config`` (``None`` when
    it cannot be built here)."""
    from edgegym.scenarios import ScenarioError

    try:
        train_env = gym.make(
            str(config["env_id"]),
            scenario=config.get("scenario"),
            disable_env_checker=True,
            **(config.get("overrides") or {}),
        )
    except (KeyError, ScenarioError, TypeError, ValueError):
        return None
    try:
        return joint_actions(
            train_env.unwrapped, int(config["hyperparams"]["wrappers"]["max_actions"])
        )
    finally:
        train_env.close()


def _space_text(space: gym.Space) -> str:
    if isinstance(space, spaces.Dict):
        return "Dict(" + ", ".join(f"{k}: {v.shape}" for k, v in space.spaces.items()) + ")"
    if isinstance(space, spaces.Box):
        return f"Box{space.shape}"
    return str(space)


def _same_space(a: gym.Space, b: gym.Space) -> bool:
    if isinstance(a, spaces.Dict) and isinstance(b, spaces.Dict):
        return list(a.spaces) == list(b.spaces) and all(_same_space(a[k], b[k]) for k in a.spaces)
    if isinstance(a, spaces.Box) and isinstance(b, spaces.Box):
        return a.shape == b.shape
    if isinstance(a, spaces.Discrete) and isinstance(b, spaces.Discrete):
        return int(a.n) == int(b.n)
    if isinstance(a, spaces.MultiDiscrete) and isinstance(b, spaces.MultiDiscrete):
        return np.array_equal(a.nvec, b.nvec)
    return False


def space_difference(env: Any, like: Any) -> tuple[str, str, str] | None:
    """``(what, env's, like's)`` of the first of the observation and action spaces in which
    two environments (or models) differ, as text; ``None`` when both agree."""
    for what in ("observation_space", "action_space"):
        a, b = getattr(env, what), getattr(like, what)
        if not _same_space(a, b):
            return what.replace("_", " "), _space_text(a), _space_text(b)
    return None


def _check_spaces(
    model: Any, obs_space: gym.Space, act_space: gym.Space, config: dict[str, Any], source: str
) -> None:
    for what, have, want in (
        ("observation", obs_space, model.observation_space),
        ("action", act_space, model.action_space),
    ):
        if not _same_space(have, want):
            raise PolicyLoadError(
                f"{source}: trained on {what} space {_space_text(want)}, but this environment "
                f"gives {_space_text(have)}; evaluate it on its training scenario "
                f"({config.get('scenario')}, overrides {config.get('overrides') or {}})"
            )


def first_line(exc: BaseException) -> str:
    """An exception's message cut to its first line (libraries' messages run to paragraphs,
    edgegym's errors are one line)."""
    lines = str(exc).strip().splitlines()
    return lines[0] if lines else type(exc).__name__


def load_model(path: str | Path) -> tuple[Any, dict[str, Any], Path]:
    """Load ``model.zip`` and its training config.

    Returns:
        ``(model, config, model_path)``.

    Raises:
        PolicyLoadError: A missing or corrupt model or config (the message names the file).
    """
    model_path = resolve_model_path(path)
    config_path = config_path_for(model_path)
    config = read_config(config_path)
    cls = config_algo(config, config_path)
    # One thread: these networks are tiny, and torch's default thread pool spin-waits; beside
    # another busy process it made each prediction ~10x slower on a 2-core machine.
    torch.set_num_threads(1)
    from edgegym.agents.sb3 import artifacts  # the SB3 backend, loaded when a model is

    try:
        model = artifacts.load(model_path, config, cls)
    except artifacts.UntrustedArtifact as exc:
        raise PolicyLoadError(f"policy file cannot be loaded: {exc}") from None
    except Exception as exc:  # SB3 raises zipfile, pickle, torch and key errors alike
        raise PolicyLoadError(
            f"policy file {model_path} cannot be loaded as {cls.__name__}: "
            f"{type(exc).__name__}: {first_line(exc)}"
        ) from None
    return model, config, model_path


def check_family(env: gym.Env, config: dict[str, Any], source: str) -> None:
    """Refuse a policy trained on another family than ``env``'s.

    Raises:
        PolicyLoadError: The families differ (the message names ``source``).
    """
    family = family_of(env)
    trained = config.get("family")
    if family is not None and trained is not None and trained != family:
        raise PolicyLoadError(
            f"{source} was trained on family {trained!r} ({config.get('env_id')}); this "
            f"environment is family {family!r}"
        )


def load_policy(path: str | Path, env: gym.Env, name: str | None = None) -> PPOPolicy:
    """A :class:`PPOPolicy` for ``env`` from a model file or folder.

    Raises:
        PolicyLoadError: Missing or corrupt files, another family, spaces that do not fit.
    """
    model, config, model_path = load_model(path)
    check_family(env, config, f"policy file {model_path}")
    return PPOPolicy(model, env, config, name=name or "ppo", source=f"policy file {model_path}")


def make_ppo_policy(spec: str, env: gym.Env) -> PPOPolicy:
    """``ppo`` (the shipped policy of the env's family) or ``ppo:PATH``.

    Raises:
        PolicyLoadError: No shipped policy, or a bad file.
    """
    name, _, path = spec.partition(":")
    if name.strip() != "ppo":
        raise PolicyLoadError(f"not a PPO policy spec: {spec!r} (ppo or ppo:PATH)")
    path = path.strip()
    if path:
        return load_policy(path, env, name=spec)
    family = family_of(env)
    if family is None:
        raise PolicyLoadError(f"no shipped PPO policy for {env}; pass ppo:PATH")
    shipped = shipped_path(family)
    if not shipped.is_file():
        raise PolicyLoadError(
            f"no trained PPO policy is shipped for family {family!r} yet (expected {shipped}); "
            "train one with 'edgegym train ENV_ID --out DIR' and evaluate it with "
            "--policy ppo:DIR/model.zip"
        )
    return load_policy(shipped, env, name="ppo")


__all__ = [
    "ENV_FIELDS",
    "MAX_WEIGHTS_BYTES",
    "SCHEDULER_FIELDS",
    "TRAINED_DIR",
    "PPOPolicy",
    "PolicyLoadError",
    "algo_class",
    "check_artifact_config",
    "check_env_field",
    "check_family",
    "check_scheduler_field",
    "load_model",
    "load_policy",
    "make_ppo_policy",
    "open_weights",
    "read_config",
    "shipped_path",
    "space_difference",
]

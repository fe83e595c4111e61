"""Hyperparameter files of the learned agents: schema, loading, dotted overrides.

One YAML file per environment family in ``agents/hyperparams/<family>.yaml``. Every key is
optional; a missing one takes the default of :data:`DEFAULTS`, an unknown one is an error that
names the file and the key. Sections:

``algo``
    ``maskable_ppo`` (sb3-contrib's MaskablePPO, uses the environment's ``action_masks()``)
    or ``ppo`` (Stable-Baselines3's PPO, ignores masks; the environment projects).
``policy``
    SB3 policy class name: ``MlpPolicy`` for a ``Box`` observation, ``MultiInputPolicy`` for a
    ``Dict`` one (``auto`` picks by the observation space after the wrappers), or
    ``PerTenantPolicy`` (:mod:`edgegym.agents.policies.tenants`: one encoder and action head
    shared by every tenant; continual and energy, MaskablePPO on the native
    ``MultiDiscrete``; ``net_arch[0]`` is the tenant code width), or ``PooledPolicy`` (the
    same encoder pooled into a context, then an MLP over the action, e.g. the ``Discrete``
    catalogue: it plays every number of tenants and GPUs; ``net_arch[0]`` is the code width,
    the rest the MLP), ``SignaturePolicy`` (:mod:`edgegym.agents.policies.signatures`: MIG,
    scores every allocation signature from the per-tenant features of the tasks it sizes) or
    ``GraphPolicy`` (:mod:`edgegym.agents.policies.graph`: DAG, message passing over the
    request's graph, a server scorer and per-node retraining heads). :data:`STRUCTURED` says
    what each needs.
``wrappers``
    ``flatten_obs`` (one-level ``Dict`` -> flat ``Box``), ``discrete_actions``
    (``MultiDiscrete`` -> ``Discrete`` joint actions), ``max_actions`` (see
    :mod:`edgegym.wrappers`) and ``teacher`` (a baseline spec such as ``thief``, or null:
    with ``discrete_actions``, or on a family that acts through ``Discrete`` already
    (:data:`DISCRETE_FAMILIES`: mig, with :class:`~edgegym.wrappers.TeacherAction`), one more
    ``Discrete`` index plays that scheduler's decision, so the agent learns when to deviate
    from it). The trained policy applies the same wrappers when it is loaded.
``policy_kwargs``
    ``net_arch`` (list of layer widths, or ``{pi: [...], vf: [...]}``), ``activation_fn``
    (``tanh``, ``relu``, ``elu``, ``leaky_relu``), ``ortho_init``.
``ppo``
    PPO's arguments: ``learning_rate``, ``n_steps``, ``batch_size``, ``n_epochs``, ``gamma``,
    ``gae_lambda``, ``clip_range``, ``ent_coef``, ``vf_coef``, ``max_grad_norm``,
    ``normalize_advantage``, ``target_kl``; and ``lr_schedule``: ``constant`` (default) or
    ``linear`` (``learning_rate`` at step 0, falling linearly to 0 at the run's
    ``timesteps``; a resume to more timesteps stretches the rest of the line).
``train``
    ``timesteps``, ``n_envs``, ``vec_env`` (``auto``: the id's native vector env where it
    has one, else subprocesses when ``n_envs > 1`` and the machine has more than one core;
    ``native``: the native vector env (:mod:`edgegym.agents.sb3.vecenv`), an error where there
    is none; ``dummy``; ``subproc``), ``torch_threads``, ``device``.
    ``scenarios``: more scenarios to train on beside the run's own (a list of scenario names
    or ``{scenario: NAME, overrides: {KEY: VALUE}}``): environment ``i`` plays element
    ``i mod k`` of [the run's scenario, these...], so one agent learns a distribution of
    scenarios (``n_envs >= k``; their spaces must agree: pad tenants with ``max_streams``).
``bc``
    A strong start: ``teacher`` (a baseline spec such as ``thief`` or ``etf``;
    ``null`` = none) plays ``episodes`` episodes per training scenario (seeds ``seed, ...``)
    and the policy is first fitted to its actions (and its value to the discounted return)
    for ``epochs`` passes in batches of ``batch_size`` at ``learning_rate``
    (:mod:`edgegym.agents.sb3.bc`); PPO then starts from those weights. Needs the environment's
    own action (``wrappers.discrete_actions: false``), or ``wrappers.teacher`` the same
    scheduler: then every decision's label is the hint index, so PPO starts from a policy that
    plays the teacher (how sure it is: ``epochs``). ``balance: true`` weighs the decisions
    where the teacher changes its action as much as those where it repeats it.
``eval``
    ``freq`` (timesteps between evaluations, 0 = off), ``episodes``, ``seed`` (first episode
    seed), ``baseline`` (the family's best baseline, a :func:`edgegym.baselines.make_policy`
    spec, ``null`` = none).
``checkpoint``
    ``freq`` (timesteps between checkpoints, 0 = only at the end), ``keep`` (newest kept).

Overrides are ``section.key=value`` strings (``ppo.learning_rate=1e-3``,
``policy_kwargs.net_arch=[128,128]``); values are parsed as YAML, numbers like ``1e-3``
included.
"""

from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from edgegym.inputs import InputError, load_yaml, quoted, read_text, yaml_problem

#: Folder of the per-family hyperparameter files.
HYPERPARAMS_DIR = Path(__file__).resolve().parent / "hyperparams"

#: Every key a hyperparameter file may set, with its default.
DEFAULTS: dict[str, Any] = {
    "algo": "maskable_ppo",
    "policy": "auto",
    "wrappers": {
        "flatten_obs": False,
        "discrete_actions": False,
        "max_actions": 1024,
        "teacher": None,
    },
    "policy_kwargs": {"net_arch": [64, 64], "activation_fn": "tanh", "ortho_init": True},
    "ppo": {
        "learning_rate": 3.0e-4,
        "n_steps": 256,
        "batch_size": 64,
        "n_epochs": 10,
        "gamma": 0.99,
        "gae_lambda": 0.95,
        "clip_range": 0.2,
        "ent_coef": 0.0,
        "vf_coef": 0.5,
        "max_grad_norm": 0.5,
        "normalize_advantage": True,
        "target_kl": None,
        "lr_schedule": "constant",
    },
    "train": {
        "timesteps": 100_000,
        "n_envs": 1,
        "vec_env": "auto",
        "torch_threads": 1,
        "device": "cpu",
        "scenarios": [],
    },
    "bc": {
        "teacher": None,
        "episodes": 20,
        "epochs": 30,
        "batch_size": 256,
        "learning_rate": 1.0e-3,
        "seed": 20_000,
        "balance": False,
    },
    "eval": {"freq": 10_000, "episodes": 3, "seed": 10_000, "baseline": None},
    "checkpoint": {"freq": 10_000, "keep": 3},
}

ALGOS = ("ppo", "maskable_ppo")
#: The structured policies (size-free: their weights do not depend on the scenario's sizes):
#: what each reads, and the wrapper settings it needs (always with algo maskable_ppo).
STRUCTURED: dict[str, tuple[str, dict[str, bool]]] = {
    "PerTenantPolicy": (
        "the tenants of the env's own observation and acts on its MultiDiscrete entries",
        {"flatten_obs": False, "discrete_actions": False},
    ),
    "PooledPolicy": ("the tenants of the env's own observation", {"flatten_obs": False}),
    "SignaturePolicy": (
        "the MIG tenants of the env's own observation and scores its Discrete signatures",
        {"flatten_obs": False, "discrete_actions": False},
    ),
    "GraphPolicy": (
        "the DAG of the env's own Dict observation and acts on its MultiDiscrete entries",
        {"flatten_obs": False, "discrete_actions": False},
    ),
}
POLICIES = ("auto", "MlpPolicy", "MultiInputPolicy", *STRUCTURED)
ACTIVATIONS = ("tanh", "relu", "elu", "leaky_relu")
LR_SCHEDULES = ("constant", "linear")
VEC_ENVS = ("auto", "native", "dummy", "subproc")


#: Widest layer ``policy_kwargs.net_arch`` may give (the shipped agents use 64 to 256).
MAX_LAYER_WIDTH = 65_536
#: Most weights between consecutive layers of ``policy_kwargs.net_arch`` (the sum of
#: ``w[i] * w[i + 1]`` over its list, or over each of ``pi`` and ``vf``): 2^26, 256 MB of
#: float32 and as much again for each of Adam's two moments (``[8192, 8192]`` is at it).
MAX_HIDDEN_WEIGHTS = 1 << 26
#: Most transitions one rollout holds, ``ppo.n_steps x train.n_envs`` (and most of
#: ``ppo.batch_size``, ``bc.batch_size``): SB3 allocates its rollout buffer (observations,
#: actions, masks) for all of them when the model is made. 2^22: 2,048 steps on 2,048 envs.
MAX_ROLLOUT = 1 << 22
#: Most environments one run steps (``train.n_envs``): each is a process or a vector slot.
MAX_ENVS = 1024


class ConfigError(ValueError):
    """A bad hyperparameter file or override (the message names the file and the key)."""


def hyperparams_path(family: str) -> Path:
    """``agents/hyperparams/<family>.yaml``."""
    return HYPERPARAMS_DIR / f"{family}.yaml"


def families() -> list[str]:
    """Families that have a hyperparameter file."""
    return sorted(p.stem for p in HYPERPARAMS_DIR.glob("*.yaml"))


def parse_value(text: str) -> Any:
    """A command-line value: int, float (``1e-3`` too), else YAML (lists, ``null``, bools)."""
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def _key_text(path: str, key: Any) -> str:
    """``path + key`` as a message quotes it: ``'ppo.learnin_rate'``; a key that is no short
    name (the file's content) by its length only (``ppo.<a 40-character text>``)."""
    text = quoted(key)
    return repr(f"{path}{key}") if text == repr(key) else f"{path}{text}"


def _merge(base: dict[str, Any], extra: Mapping[str, Any], source: str, path: str = "") -> None:
    for key, value in extra.items():
        if key not in base:
            allowed = ", ".join(base)
            raise ConfigError(
                f"{source}: unknown key {_key_text(path, key)} (allowed here: {allowed})"
            )
        where = f"{path}{key}"
        if isinstance(base[key], dict) and key != "net_arch":
            if not isinstance(value, Mapping):
                raise ConfigError(f"{source}: {where} must be a mapping, got {quoted(value)}")
            _merge(base[key], value, source, where + ".")
        else:
            base[key] = copy.deepcopy(value)


#: Families whose environments act through ``Discrete`` already (``wrappers.teacher`` then adds
#: its index without ``discrete_actions``: :class:`edgegym.wrappers.TeacherAction`).
DISCRETE_FAMILIES = frozenset({"mig"})


def _check(cfg: dict[str, Any], source: str, family: str | None = None) -> None:
    def bad(key: str, what: str) -> ConfigError:
        return ConfigError(f"{source}: {key} {what}")

    _check_policy(cfg, bad)
    _check_wrappers(cfg, bad, family)
    _check_numbers(cfg, bad)
    _check_scenarios(cfg["train"]["scenarios"], bad)
    _check_bc(cfg["bc"], cfg["wrappers"], bad)
    ev = cfg["eval"]
    if ev["baseline"] is not None and not isinstance(ev["baseline"], str):
        raise bad("eval.baseline", f"must be a policy name or null, got {quoted(ev['baseline'])}")


#: ``bad(key, what)``: the error naming the file, the key and what is wrong.
Bad = Callable[[str, str], ConfigError]


def _check_policy(cfg: dict[str, Any], bad: Bad) -> None:
    """``algo``, ``policy`` and ``policy_kwargs``."""
    if not isinstance(cfg["algo"], str) or cfg["algo"] not in ALGOS:
        raise bad("algo", f"must be one of {', '.join(ALGOS)}, got {quoted(cfg['algo'])}")
    if not isinstance(cfg["policy"], str) or cfg["policy"] not in POLICIES:
        raise bad("policy", f"must be one of {', '.join(POLICIES)}, got {quoted(cfg['policy'])}")
    pk = cfg["policy_kwargs"]
    if not isinstance(pk["activation_fn"], str) or pk["activation_fn"] not in ACTIVATIONS:
        raise bad("policy_kwargs.activation_fn", f"must be one of {', '.join(ACTIVATIONS)}")
    _check_net_arch(pk["net_arch"], bad)


def _check_net_arch(arch: Any, bad: Bad) -> None:
    """``policy_kwargs.net_arch``: a list of layer widths (or ``{pi: [...], vf: [...]}``),
    each in ``[1, MAX_LAYER_WIDTH]``, with at most :data:`MAX_HIDDEN_WEIGHTS` weights between
    consecutive layers of each list."""
    key = "policy_kwargs.net_arch"
    if isinstance(arch, dict) and set(arch) <= {"pi", "vf"}:
        lists = [arch.get("pi", []), arch.get("vf", [])]
    else:
        lists = [arch]
    for widths in lists:
        if not isinstance(widths, list) or not all(
            isinstance(w, int) and not isinstance(w, bool) and w > 0 for w in widths
        ):
            raise bad(key, f"must list positive layer widths, got {quoted(arch)}")
        if any(w > MAX_LAYER_WIDTH for w in widths):
            raise bad(
                key,
                f"must list layer widths in [1, {MAX_LAYER_WIDTH}], got {max(widths):,}",
            )
        weights = sum(a * b for a, b in itertools.pairwise(widths))
        if weights > MAX_HIDDEN_WEIGHTS:
            raise bad(
                key,
                f"gives {weights:,} weights between its layers, over the {MAX_HIDDEN_WEIGHTS:,} "
                "allowed (the sum of each width times the next); narrow its layers",
            )


def _check_wrappers(cfg: dict[str, Any], bad: Bad, family: str | None) -> None:
    """``wrappers``, and the wrappers a structured policy needs."""
    w = cfg["wrappers"]
    for key in ("flatten_obs", "discrete_actions"):
        if not isinstance(w[key], bool):
            raise bad(f"wrappers.{key}", f"must be true or false, got {quoted(w[key])}")
    if w["teacher"] is not None:
        if not isinstance(w["teacher"], str) or not w["teacher"]:
            teacher = quoted(w["teacher"])
            raise bad("wrappers.teacher", f"must be a policy name or null, got {teacher}")
        if not w["discrete_actions"] and family not in DISCRETE_FAMILIES:
            raise bad(
                "wrappers.teacher", "adds a Discrete action: needs wrappers.discrete_actions true"
            )
    needs = STRUCTURED.get(cfg["policy"])
    if needs is not None:
        what, flags = needs
        if cfg["algo"] != "maskable_ppo" or any(w[k] != v for k, v in flags.items()):
            raise bad(
                "policy",
                f"{cfg['policy']} reads {what}: it needs algo maskable_ppo and "
                + " and ".join(f"wrappers.{k} {str(v).lower()}" for k, v in flags.items()),
            )


#: The PPO coefficients' ranges: ``(low, high or None, low excluded)``. Outside them PPO
#: diverges or fails inside torch (a discount above 1 overflows the returns, a NaN learning
#: rate is refused by the optimiser only after the run folder is written), so they are refused
#: with the rest of the file. A learning rate of 0 is allowed: it keeps the starting weights
#: (``--init-from``'s or the behaviour clone's) while the run evaluates them.
PPO_RANGES: dict[str, tuple[float, float | None, bool]] = {
    "learning_rate": (0.0, None, False),
    "gamma": (0.0, 1.0, False),
    "gae_lambda": (0.0, 1.0, False),
    "clip_range": (0.0, None, True),
    "ent_coef": (0.0, None, False),
    "vf_coef": (0.0, None, False),
    "max_grad_norm": (0.0, None, True),
}


def _check_range(
    key: str,
    value: Any,
    lo: float,
    hi: float | None,
    open_lo: bool,
    bad: Bad,
    extra: str = "",
) -> None:
    """``value`` a finite number in ``[lo, hi]`` (``(lo, ...`` when ``open_lo``; no upper
    bound when ``hi`` is ``None``), else ``bad(key, ...)`` naming the range (and ``extra``:
    what else it may be, e.g. ``or null``)."""
    number = not isinstance(value, bool) and isinstance(value, int | float)
    ok = (
        number
        and math.isfinite(value)
        and (value > lo if open_lo else value >= lo)
        and (hi is None or value <= hi)
    )
    if not ok:
        if hi is not None:
            where = f"in {'(' if open_lo else '['}{lo:g}, {hi:g}]"
        else:
            where = f"{'>' if open_lo else '>='} {lo:g}"
        what = f"must be a finite number {where}" + (f" {extra}" if extra else "")
        raise bad(key, f"{what}, got {quoted(value)}")


def _check_numbers(cfg: dict[str, Any], bad: Bad) -> None:
    """The counts, frequencies and PPO coefficients, and the named choices among them."""
    w, ppo, train, ev, ck = (
        cfg["wrappers"],
        cfg["ppo"],
        cfg["train"],
        cfg["eval"],
        cfg["checkpoint"],
    )
    positive_ints = {
        "wrappers.max_actions": w["max_actions"],
        "ppo.n_steps": ppo["n_steps"],
        "ppo.batch_size": ppo["batch_size"],
        "ppo.n_epochs": ppo["n_epochs"],
        "train.timesteps": train["timesteps"],
        "train.n_envs": train["n_envs"],
        "train.torch_threads": train["torch_threads"],
        "eval.episodes": ev["episodes"],
        "checkpoint.keep": ck["keep"],
    }
    non_negative_ints = {
        "eval.freq": ev["freq"],
        "eval.seed": ev["seed"],
        "checkpoint.freq": ck["freq"],
    }
    for key, value in positive_ints.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise bad(key, f"must be an integer >= 1, got {quoted(value)}")
    for key, value in non_negative_ints.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise bad(key, f"must be an integer >= 0, got {quoted(value)}")
    _check_rollout(ppo, train, bad)
    for key, (lo, hi, open_lo) in PPO_RANGES.items():
        _check_range(f"ppo.{key}", ppo[key], lo, hi, open_lo, bad)
    if not isinstance(ppo["normalize_advantage"], bool):
        got = quoted(ppo["normalize_advantage"])
        raise bad("ppo.normalize_advantage", f"must be true or false, got {got}")
    if ppo["target_kl"] is not None:
        _check_range("ppo.target_kl", ppo["target_kl"], 0.0, None, True, bad, "or null")
    if ppo["lr_schedule"] not in LR_SCHEDULES:
        raise bad("ppo.lr_schedule", f"must be one of {', '.join(LR_SCHEDULES)}")
    if train["vec_env"] not in VEC_ENVS:
        raise bad("train.vec_env", f"must be one of {', '.join(VEC_ENVS)}")


def _check_rollout(ppo: Mapping[str, Any], train: Mapping[str, Any], bad: Bad) -> None:
    """The counts that size the rollout buffer (checked as integers >= 1 before):
    ``train.n_envs`` at most :data:`MAX_ENVS`; ``ppo.n_steps x train.n_envs`` and
    ``ppo.batch_size`` at most :data:`MAX_ROLLOUT`."""
    n_steps, n_envs = ppo["n_steps"], train["n_envs"]
    if n_envs > MAX_ENVS:
        raise bad("train.n_envs", f"must be an integer in [1, {MAX_ENVS}], got {n_envs:,}")
    if n_steps * n_envs > MAX_ROLLOUT:
        raise bad(
            "ppo.n_steps",
            f"x train.n_envs must be at most {MAX_ROLLOUT:,} (the transitions of one rollout, "
            f"all kept in memory), got {n_steps:,} x {n_envs:,}",
        )
    if ppo["batch_size"] > MAX_ROLLOUT:
        raise bad(
            "ppo.batch_size",
            f"must be an integer in [1, {MAX_ROLLOUT:,}], got {ppo['batch_size']:,}",
        )


def _check_scenarios(scenarios: Any, bad: Bad) -> None:
    """``train.scenarios``: names, or ``{scenario, overrides}`` mappings."""
    if not isinstance(scenarios, list):
        raise bad("train.scenarios", f"must be a list, got {quoted(scenarios)}")
    for i, item in enumerate(scenarios):
        ok = isinstance(item, str) or (
            isinstance(item, Mapping)
            and isinstance(item.get("scenario"), str)
            and set(item) <= {"scenario", "overrides"}
            and isinstance(item.get("overrides", {}), Mapping)
        )
        if not ok:
            raise bad(
                f"train.scenarios[{i}]",
                "must be a scenario name or {scenario: NAME, overrides: {...}}, got "
                + quoted(item),
            )


def _check_bc(bc: dict[str, Any], w: dict[str, Any], bad: Bad) -> None:
    """``bc``: the teacher (and how it fits the wrappers) and the cloning settings."""
    if bc["teacher"] is not None:
        if not isinstance(bc["teacher"], str):
            raise bad("bc.teacher", f"must be a policy name or null, got {quoted(bc['teacher'])}")
        if w["discrete_actions"] and bc["teacher"] != w["teacher"]:
            raise bad(
                "bc.teacher",
                "needs the environment's own action (wrappers.discrete_actions false), or the "
                "same scheduler as wrappers.teacher (then cloning teaches its hint action)",
            )
    if not isinstance(bc["balance"], bool):
        raise bad("bc.balance", f"must be true or false, got {quoted(bc['balance'])}")
    for key in ("episodes", "epochs", "batch_size"):
        value = bc[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise bad(f"bc.{key}", f"must be an integer >= 1, got {quoted(value)}")
    if bc["batch_size"] > MAX_ROLLOUT:
        raise bad(
            "bc.batch_size", f"must be an integer in [1, {MAX_ROLLOUT:,}], got {bc['batch_size']:,}"
        )
    _check_range("bc.learning_rate", bc["learning_rate"], 0.0, None, False, bad)
    seed = bc["seed"]
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise bad("bc.seed", f"must be an integer >= 0, got {quoted(seed)}")


def dotted(items: Sequence[str] | Mapping[str, Any] | None) -> dict[str, Any]:
    """``["ppo.n_steps=128", ...]`` (or a mapping) -> nested mapping ``{"ppo": {"n_steps": 128}}``.

    Raises:
        ConfigError: An item that is not ``key=value``.
    """
    pairs: list[tuple[str, Any]] = []
    if isinstance(items, Mapping):
        pairs = list(items.items())
    else:
        for item in items or []:
            key, eq, value = item.partition("=")
            if not eq or not key.strip():
                raise ConfigError(f"malformed hyperparameter {item!r} (expected key=value)")
            pairs.append((key.strip(), parse_value(value.strip())))
    out: dict[str, Any] = {}
    for key, value in pairs:
        node = out
        parts = key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise ConfigError(f"hyperparameter {key!r} conflicts with another override")
        node[parts[-1]] = value
    return out


def load_hyperparams(
    family: str | None = None,
    path: str | Path | None = None,
    overrides: Sequence[str] | Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Defaults, then the family's file (or ``path``), then dotted ``overrides``; validated.

    Raises:
        ConfigError: No file for the family, unreadable YAML, unknown keys, bad values.
    """
    cfg = copy.deepcopy(DEFAULTS)
    if path is None:
        if family is None:
            raise ConfigError("need a family or a hyperparameter file")
        path = hyperparams_path(family)
        if not path.is_file():
            have = ", ".join(families()) or "none"
            raise ConfigError(
                f"no hyperparameter file for family {family!r} ({path}); families with one: "
                f"{have}; pass a file of your own"
            )
    path = Path(path)
    try:
        data = load_yaml(read_text(path, "hyperparameter file", "config")) or {}
    except (OSError, InputError) as exc:
        raise ConfigError(str(exc)) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: not valid YAML: {yaml_problem(exc)}") from None
    except RecursionError:
        raise ConfigError(f"{path}: nested too deeply (not a hyperparameter file)") from None
    if not isinstance(data, Mapping):
        raise ConfigError(f"{path}: a hyperparameter file must be a mapping")
    data = dict(data)
    family = family or data.get("family")
    if family is not None and not isinstance(family, str):
        raise ConfigError(f"{path}: family must be a family name, got {quoted(family)}")
    data.pop("family", None)  # informational
    try:
        _merge(cfg, data, str(path))
        _check(cfg, str(path), family)
        extra = dotted(overrides)
        if extra:
            _merge(cfg, extra, "hyperparameter override")
            _check(cfg, "hyperparameter override", family)
    except RecursionError:  # a value nested too deeply for copying or quoting
        raise ConfigError(f"{path}: a value is nested too deeply") from None
    return cfg


#: The keys every saved run's ``hyperparams`` holds (those of the first edgegym that saved
#: runs; later keys such as ``bc`` or ``train.scenarios`` are read with their defaults).
SAVED_KEYS: dict[str, tuple[str, ...]] = {
    "algo": (),
    "policy": (),
    "wrappers": ("flatten_obs", "discrete_actions", "max_actions"),
    "policy_kwargs": ("net_arch", "activation_fn", "ortho_init"),
    "ppo": tuple(k for k in DEFAULTS["ppo"] if k != "lr_schedule"),
    "train": ("timesteps", "n_envs", "vec_env", "torch_threads", "device"),
    "eval": ("freq", "episodes", "seed", "baseline"),
    "checkpoint": ("freq", "keep"),
}


def check_saved(hp: Any, source: str | Path, family: str | None = None) -> None:
    """Check the ``hyperparams`` of a saved run of ``family`` (``--resume``): every key of
    :data:`SAVED_KEYS` there, and the values as :func:`load_hyperparams` checks a file's
    (keys it lacks count at their defaults).

    Raises:
        ConfigError: One line naming ``source`` and the first missing or bad key.
    """
    if not isinstance(hp, Mapping):
        raise ConfigError(f"{source}: hyperparams is not a mapping")
    for section, keys in SAVED_KEYS.items():
        if section not in hp:
            raise ConfigError(
                f"{source}: hyperparams has no {section} (not a complete edgegym training config)"
            )
        value = hp[section]
        if keys and not isinstance(value, Mapping):
            raise ConfigError(f"{source}: hyperparams.{section} is not a mapping")
        for key in keys:
            if key not in value:
                raise ConfigError(
                    f"{source}: hyperparams.{section} has no {key} (not a complete edgegym "
                    "training config)"
                )
    cfg = copy.deepcopy(DEFAULTS)
    family = family if isinstance(family, str) else None
    try:
        _merge(cfg, hp, f"{source}: hyperparams")
        _check(cfg, f"{source}: hyperparams", family)
    except RecursionError:
        raise ConfigError(f"{source}: hyperparams is nested too deeply") from None


__all__ = [
    "DEFAULTS",
    "HYPERPARAMS_DIR",
    "MAX_ENVS",
    "MAX_HIDDEN_WEIGHTS",
    "MAX_LAYER_WIDTH",
    "MAX_ROLLOUT",
    "PPO_RANGES",
    "SAVED_KEYS",
    "ConfigError",
    "check_saved",
    "dotted",
    "families",
    "hyperparams_path",
    "load_hyperparams",
    "parse_value",
]

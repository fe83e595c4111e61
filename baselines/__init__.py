"""Analytic schedulers from the papers, behind one policy protocol (SB3's ``predict``).

``make_policy("thief", env)`` or with parameters ``make_policy("thief:delta=0.2,oracle=1", env)``.
"""

from __future__ import annotations

import inspect
import math
import types
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import gymnasium as gym

from edgegym.baselines.base import Policy
from edgegym.baselines.custom import build as build_user_policy
from edgegym.baselines.custom import is_user_spec, load_object, user_failure
from edgegym.baselines.dag import (
    AdaInfPolicy,
    EkyaDAGPolicy,
    ListPolicy,
    MRSPolicy,
    PASSPolicy,
    SRSPolicy,
)
from edgegym.baselines.ekya import (
    FixedConfigPolicy,
    FixedResPolicy,
    NoRetrainPolicy,
    ThiefPolicy,
    UniformPolicy,
    exact_schedule,
    thief_schedule,
)
from edgegym.baselines.etf import ETFPolicy
from edgegym.baselines.mig import AstraeaPolicy, EkyaMIGPolicy, ParisPolicy, StaticHalfPolicy
from edgegym.baselines.migrator import MIGRatorPolicy
from edgegym.baselines.random import RandomPolicy
from edgegym.core.registry import FAMILIES, family_of_entry_point


def _uniform(config: int, infer: float) -> Callable[..., Policy]:
    def build(env: gym.Env) -> Policy:
        return UniformPolicy(env, config=config, infer=infer)

    build.paper_setup = UniformPolicy.paper_setup  # type: ignore[attr-defined]
    return build


def _uniform_text(config: int, infer: float) -> str:
    return f"uniform, Config {config}, {round(100 * infer)}% inference; no micro-profiler"


def _etf(phi: float) -> Callable[..., Policy]:
    def build(env: gym.Env, **kw: Any) -> Policy:
        return ETFPolicy(env, **{"phi": phi, **kw})

    return build


class AnyFamily(tuple):
    """The families of a policy that schedules every family, those registered later too
    (``random``): contains every name, shows as ``every family``."""

    def __new__(cls) -> AnyFamily:
        return super().__new__(cls, ("every family",))

    def __contains__(self, family: object) -> bool:
        return True


#: Policy name -> (factory, families it applies to, one-line description).
POLICIES: dict[str, tuple[Callable[..., Policy], tuple[str, ...], str]] = {
    "thief": (
        ThiefPolicy,
        ("continual",),
        "Ekya's thief scheduler (Alg. 1-2), delta=0.1 (on the quantum grid)",
    ),
    "uniform": (UniformPolicy, ("continual",), _uniform_text(1, 0.5)),
    **{
        f"uniform-c{c}-{round(100 * infer)}": (
            _uniform(c, infer),
            ("continual",),
            _uniform_text(c, infer),
        )
        for c in (1, 2)
        for infer in (0.3, 0.5, 0.9)
    },
    "ekya-fixedres": (
        FixedResPolicy,
        ("continual",),
        "Ekya-FixedRes: uniform split, adaptive configs",
    ),
    "ekya-fixedconfig": (
        FixedConfigPolicy,
        ("continual",),
        "Ekya-FixedConfig: thief shares, Config 1 (profiles only it)",
    ),
    "no-retrain": (
        NoRetrainPolicy,
        ("continual",),
        "never retrain, even inference shares; no micro-profiler",
    ),
    "random": (RandomPolicy, AnyFamily(), "uniformly random valid actions"),
    "migrator": (
        MIGRatorPolicy,
        ("mig",),
        "MIGRator: Goodput plan per window from a seasonal forecast (B&B + Viterbi, proven "
        "within gap=0.01; forecaster=level, solver=milp)",
    ),
    "paris": (ParisPolicy, ("mig",), "PARIS: static MIG split by compute intensity"),
    "ekya-mig": (EkyaMIGPolicy, ("mig",), "Ekya on MPS shares: reallocate at retraining start/end"),
    "astraea": (
        AstraeaPolicy,
        ("mig",),
        "Astraea on MPS shares: per-step SLO chasing, no retraining value",
    ),
    "static-half": (StaticHalfPolicy, ("mig",), "fixed half of the GPU per tenant"),
    "etf": (ETFPolicy, ("energy",), "Energy-Time Fairness, Algorithm 1 (phi=0.7)"),
    "tf": (_etf(1.0), ("energy",), "time fairness (ETF with phi = 1)"),
    "ef": (_etf(0.0), ("energy",), "energy fairness (ETF with phi = 0, max-min energy)"),
    "list": (ListPolicy, ("dag",), "list scheduling (SRS Alg. 1), retrain only below A_min"),
    "mrs": (MRSPolicy, ("dag",), "MRS (Alg. 3): SRS retraining, earliest finish per node"),
    "srs": (SRSPolicy, ("dag",), "SRS (Alg. 2) per request: Delta-P retraining, planned list"),
    "pass": (PASSPolicy, ("dag",), "PASS: priority scheduling, every model retrained per period"),
    "ekya-dag": (
        EkyaDAGPolicy,
        ("dag",),
        "Ekya on the DAG: each model's retraining decided once per 200 s window",
    ),
    "adainf": (
        AdaInfPolicy,
        ("dag",),
        "AdaInf: retraining within the request's SLO slack, split by impact degree",
    ),
}


def _parse_value(text: str) -> Any:
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    return text


def parse_policy(spec: str) -> tuple[str, dict[str, Any]]:
    """Split ``"name:key=value,key=value"`` into the name and keyword arguments.

    Values are integers, floats, ``true``/``false`` (any case) or text. A parameter given
    twice is an error (which one was meant is not knowable).

    Raises:
        ValueError: A parameter that is not ``key=value``, or one given twice.
    """
    if not isinstance(spec, str):
        raise ValueError(
            f"a policy spec is a string such as 'thief' or 'etf:phi=0.5', got {spec!r}"
        )
    name, _, params = spec.partition(":")
    kwargs: dict[str, Any] = {}
    for item in filter(None, params.split(",")):
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise ValueError(f"policy {spec!r}: parameter {item!r} is not key=value")
        if key.strip() in kwargs:
            raise ValueError(f"policy {spec!r}: parameter {key.strip()!r} is given twice")
        kwargs[key.strip()] = _parse_value(value.strip())
    return name.strip(), kwargs


#: What a parameter of each plain type accepts, as the messages word it.
_ACCEPTS: dict[type, str] = {bool: "true or false", int: "a whole number", float: "a finite number"}


def _signature(factory: Callable[..., Any]) -> inspect.Signature:
    """``factory``'s signature with its annotations evaluated where they can be (a user's file
    may annotate with names it does not import: then they stay text)."""
    try:
        return inspect.signature(factory, eval_str=True)
    except Exception:  # an annotation that does not evaluate
        return inspect.signature(factory)


def _kind(param: inspect.Parameter) -> type | None:
    """The plain type a parameter takes (``bool``, ``int`` or ``float``), from its annotation
    (``float | None`` is ``float``), else from its default; ``None`` when neither says one
    (text, lists, unannotated parameters without a default)."""
    ann = param.annotation
    if ann is not param.empty and not isinstance(ann, str):
        union = typing.get_origin(ann) in (typing.Union, types.UnionType)
        args = [a for a in (typing.get_args(ann) if union else (ann,)) if a is not type(None)]
        return args[0] if len(args) == 1 and args[0] in _ACCEPTS else None
    default = param.default
    return type(default) if type(default) in _ACCEPTS else None


def _fits(kind: type, value: Any) -> bool:
    if kind is bool:
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    if kind is int:
        return isinstance(value, int)
    return isinstance(value, int | float) and math.isfinite(value)


def check_parameters(spec: str, factory: Callable[..., Any], kwargs: Mapping[str, Any]) -> None:
    """Check a spec's ``key=value`` parameters against the signature of the class or factory
    they go to, the built-ins' and a user's alike: each must be one it takes, and of the plain
    type it declares (by annotation, else by default): ``true``/``false`` for a flag, a whole
    number for an ``int``, a finite number for a ``float``.

    Raises:
        ValueError: Naming the spec, the parameter and what it accepts (``delta must be a
            finite number, got 'abc'``), or the parameters the factory takes.
    """
    params = list(_signature(factory).parameters.values())[1:]  # after env
    takes_any = any(p.kind is p.VAR_KEYWORD for p in params)
    named = {p.name: p for p in params if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}
    unknown = sorted(set(kwargs) - set(named))
    if unknown and not takes_any:
        raise ValueError(
            f"policy {spec!r}: unknown parameter {unknown[0]!r} (parameters of "
            f"{getattr(factory, '__name__', spec)}: {', '.join(named) or 'none'})"
        )
    for key, value in kwargs.items():
        kind = _kind(named[key]) if key in named else None
        if kind is not None and not _fits(kind, value):
            raise ValueError(f"policy {spec!r}: {key} must be {_ACCEPTS[kind]}, got {value!r}")


class _DefaultPolicies(Mapping[str, str]):
    """Family -> its ``Family.default_policy``, read live from the registry."""

    def __getitem__(self, family: str) -> str:
        return FAMILIES[family].default_policy

    def __iter__(self) -> Iterator[str]:
        return iter(FAMILIES)

    def __len__(self) -> int:
        return len(FAMILIES)

    def __repr__(self) -> str:
        return repr(dict(self))


#: Each family's flagship published scheduler: ``edgegym evaluate``'s default policy and the
#: baseline the agents' periodic evaluation compares against (``Family.default_policy``).
DEFAULT_POLICY: Mapping[str, str] = _DefaultPolicies()


def env_family(env: gym.Env) -> str | None:
    """The edgegym family of ``env`` (through any wrappers), or ``None`` for a foreign env."""
    cls = type(env.unwrapped)
    fam = family_of_entry_point(f"{cls.__module__}:{cls.__name__}")
    return fam.name if fam is not None else None


def _env_name(env: gym.Env) -> str:
    spec = env.spec or env.unwrapped.spec
    return spec.id if spec is not None else type(env.unwrapped).__name__


def policies_for(env_id: str) -> list[str]:
    """Every built-in policy that schedules ``env_id``: its family's published schedulers,
    baselines and ``random`` (on a ``-Flat`` view ``random`` alone, where the others do not
    act); none outside edgegym. What ``all`` stands for in a list of policies."""
    from edgegym.core.registry import FLAT_IDS, family_of_id

    family = family_of_id(env_id)
    if family is None:
        return []
    flat = env_id in FLAT_IDS
    return [
        n
        for n, (_, fams, _) in POLICIES.items()
        if family.name in fams and (n == "random" or not flat)
    ]


def expand_all(specs: Iterable[Any], env_id: str) -> list[Any]:
    """``specs`` with each ``"all"`` replaced by :func:`policies_for` ``env_id``, minus the
    names already listed (other specs, objects included, stay as they are, in order).

    Raises:
        ValueError: ``"all"`` for an environment outside edgegym (no built-in policy
            schedules it; the message says what does).
    """
    out: list[Any] = []
    for spec in specs:
        if isinstance(spec, str) and spec.strip() == "all":
            names = policies_for(env_id)
            if not names:
                raise ValueError(not_edgegym(env_id))
            out += [n for n in names if n not in out]
        else:
            out.append(spec)
    return out


def not_edgegym(env_id: str, policy: str | None = None) -> str:
    """Why ``policy`` (a built-in or ``ppo``; ``None``: all of them) does not run on
    ``env_id``, an environment outside edgegym, and what does."""
    who = f"policy {policy!r} schedules" if policy else "the built-in policies and ppo schedule"
    return (
        f"{env_id} is not an edgegym environment: {who} edgegym's ids only (edgegym envs); "
        "on another Gymnasium environment evaluate your own scheduler, --policy FILE.py:NAME "
        "or MODULE:NAME (docs/own-scheduler.md)"
    )


def unknown_policy(spec: str) -> str:
    """The message for a spec whose name is no policy: the names, and how a spec names the
    user's own code (``mysched:Greedy`` reads as the unknown name ``mysched``)."""
    name, colon, rest = spec.strip().partition(":")
    name = name.strip()
    text = f"unknown policy {name!r}"
    if "," in name:  # thief,uniform: two policies meant
        text += " (one policy per --policy: repeat it for more, --policy thief --policy uniform)"
    attr = rest.partition(":")[0].strip()
    if colon and attr and "=" not in attr:  # NAME:Attr: meant as a module spec
        text += " (a module spec is pkg.module:NAME or FILE.py:NAME"
        if Path(f"{name}.py").is_file():
            text += f"; here that is {name}.py:{attr}"
        text += ")"
    return f"{text}; available: {', '.join(POLICIES)}, ppo, ppo:PATH, rllib:PATH"


def make_policy(spec: str, env: gym.Env) -> Policy:
    """Build a policy by name (with optional ``:key=value`` parameters) for ``env``.

    ``ppo`` (the trained policy shipped for the env's family) and ``ppo:PATH`` (a model file
    or folder) load a learned agent (:mod:`edgegym.agents.policy`) behind the same protocol;
    ``rllib:PATH`` one trained with ``edgegym train --backend rllib``
    (:mod:`edgegym.agents.rllib`, needs Ray). ``path/to/file.py:Name`` and
    ``package.module:Name`` build the user's own scheduler (:mod:`edgegym.baselines.custom`).
    """
    if not isinstance(spec, str):
        raise ValueError(
            f"a policy spec is a string such as 'thief' or 'etf:phi=0.5', got {spec!r}"
        )
    if is_user_spec(spec):
        obj, kwargs = load_object(spec)
        return build_user_policy(obj, env, kwargs, spec.strip())
    head = spec.partition(":")[0].strip()
    if head not in (*POLICIES, "ppo", "rllib"):
        raise ValueError(unknown_policy(spec))
    if env_family(env) is None:
        raise ValueError(not_edgegym(_env_name(env), head))
    if spec.strip() == "ppo" or spec.strip().startswith("ppo:"):
        from edgegym.agents.policy import make_ppo_policy

        return make_ppo_policy(spec.strip(), env)
    if spec.strip() == "rllib" or spec.strip().startswith("rllib:"):
        from edgegym.agents.rllib import make_rllib_policy

        return make_rllib_policy(spec.strip(), env)
    name, kwargs = parse_policy(spec)
    factory, families, _ = POLICIES[name]
    if name != "random" and env.action_space != env.unwrapped.action_space:
        from edgegym.core.registry import FLAT_IDS

        shown = env.unwrapped.spec.id if env.unwrapped.spec else type(env.unwrapped).__name__
        base = FLAT_IDS.get(shown, shown)
        raise ValueError(
            f"policy {name!r} acts in {base}'s own action space, not in this wrapped view's "
            f"{env.action_space}; evaluate it on {base} (the -Flat ids are views for your own "
            "RL code; random and ppo:PATH run on them)"
        )
    family = env_family(env)
    if family is not None and family not in families:
        mine = [n for n, (_, fams, _) in POLICIES.items() if family in fams]
        raise ValueError(
            f"policy {name!r} schedules the {'/'.join(families)} family, but "
            f"{env.unwrapped.spec.id if env.unwrapped.spec else type(env.unwrapped).__name__} "
            f"is {family}: use one of {', '.join(mine)} or ppo"
        )
    return call_factory(spec, factory, env, kwargs)


def paper_setup(spec: Any, scenario: str, given: Mapping[str, Any]) -> dict[str, Any]:
    """The scenario overrides that run policy ``spec`` where its paper evaluates it, on top of
    the user's ``given`` ones (:meth:`Policy.paper_setup`): for example no micro-profiler for
    Ekya's uniform baselines, MPS shares for MIGRator's Ekya and Astraea. Your own scheduler's
    class (``FILE.py:NAME``, ``MODULE:NAME`` or the class itself) may declare one the same way
    (docs/own-scheduler.md). Empty for every other policy: the published schedulers themselves,
    ``ppo``/``rllib`` agents, factories and policy objects run the scenario as given.

    Raises:
        ValueError: A malformed spec (as :func:`parse_policy`), or a user spec that does not
            load (as :func:`edgegym.baselines.custom.load_object`).
    """
    if inspect.isclass(spec):
        obj, kwargs = spec, {}
    elif not isinstance(spec, str):
        return {}  # a factory or a ready object (bound to an environment of its own)
    elif is_user_spec(spec):
        obj, kwargs = load_object(spec)
        if not inspect.isclass(obj):
            return {}
    elif spec.partition(":")[0].strip() in POLICIES:
        name, kwargs = parse_policy(spec)
        obj = POLICIES[name][0]
        check_parameters(spec, obj, kwargs)  # as make_policy will: before its setup reads them
    else:
        return {}  # ppo, rllib, or an unknown name that make_policy reports
    setup = getattr(obj, "paper_setup", None)
    if not callable(setup):
        return {}
    if isinstance(spec, str) and is_user_spec(spec):
        try:
            return dict(setup(scenario, given, **kwargs))
        except Exception as exc:  # the user's code: one line naming it
            raise ValueError(user_failure(spec, "its paper_setup", exc, setup)) from exc
    return dict(setup(scenario, given, **kwargs))


def call_factory(
    spec: str, factory: Callable[..., Any], env: gym.Env, kwargs: dict[str, Any]
) -> Any:
    """``factory(env, **kwargs)`` after checking the parameters against its signature (the
    built-ins' and a user's class or factory alike).

    Raises:
        ValueError: A parameter the factory does not take or of the wrong type
            (:func:`check_parameters`), or the factory's own ``TypeError``/``ValueError`` on a
            bad value.
    """
    check_parameters(spec, factory, kwargs)
    try:
        return factory(env, **kwargs)
    except (TypeError, ValueError) as exc:  # a parameter of the wrong type or out of range
        raise ValueError(f"policy {spec!r}: {exc}") from None


__all__ = [
    "DEFAULT_POLICY",
    "POLICIES",
    "AdaInfPolicy",
    "AstraeaPolicy",
    "ETFPolicy",
    "EkyaDAGPolicy",
    "EkyaMIGPolicy",
    "FixedConfigPolicy",
    "FixedResPolicy",
    "ListPolicy",
    "MIGRatorPolicy",
    "NoRetrainPolicy",
    "PASSPolicy",
    "ParisPolicy",
    "Policy",
    "RandomPolicy",
    "SRSPolicy",
    "StaticHalfPolicy",
    "ThiefPolicy",
    "UniformPolicy",
    "call_factory",
    "check_parameters",
    "env_family",
    "exact_schedule",
    "make_policy",
    "not_edgegym",
    "paper_setup",
    "parse_policy",
    "thief_schedule",
    "unknown_policy",
]

"""Analytic schedulers from the papers, behind one policy protocol (SB3's ``predict``).

``make_policy("thief", env)`` or with parameters ``make_policy("thief:delta=0.2,oracle=1", env)``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import gymnasium as gym

from edgegym.baselines.base import Policy
from edgegym.baselines.custom import build as build_user_policy
from edgegym.baselines.custom import is_user_spec, load_object
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


def _check_flags(spec: str, factory: Any, kwargs: dict[str, Any]) -> None:
    """Boolean parameters (a ``bool`` default) take only true or false: ``oracle=no`` or
    ``always=2`` is an error, not a truthy value."""
    params = inspect.signature(factory).parameters
    for key, value in kwargs.items():
        p = params.get(key)
        if p is not None and isinstance(p.default, bool) and not isinstance(value, bool):
            raise ValueError(f"policy {spec!r}: {key} must be true or false, got {value!r}")


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
    if spec.strip() == "ppo" or spec.strip().startswith("ppo:"):
        from edgegym.agents.policy import make_ppo_policy

        return make_ppo_policy(spec.strip(), env)
    if spec.strip() == "rllib" or spec.strip().startswith("rllib:"):
        from edgegym.agents.rllib import make_rllib_policy

        return make_rllib_policy(spec.strip(), env)
    if is_user_spec(spec):
        obj, kwargs = load_object(spec)
        return build_user_policy(obj, env, kwargs, spec.strip())
    name, kwargs = parse_policy(spec)
    if name not in POLICIES:
        raise ValueError(f"unknown policy {name!r}; available: {', '.join(POLICIES)}")
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
    else:
        return {}  # ppo, rllib, or an unknown name that make_policy reports
    setup = getattr(obj, "paper_setup", None)
    return dict(setup(scenario, given, **kwargs)) if callable(setup) else {}


def call_factory(
    spec: str, factory: Callable[..., Any], env: gym.Env, kwargs: dict[str, Any]
) -> Any:
    """``factory(env, **kwargs)`` after checking the parameters against its signature (the
    built-ins' and a user's class or factory alike).

    Raises:
        ValueError: A parameter the factory does not take, a flag that is not true/false, or
            the factory's own ``TypeError``/``ValueError`` on a bad value.
    """
    sig = inspect.signature(factory)
    takes_any = any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())
    known = [p.name for p in list(sig.parameters.values())[1:] if p.kind is not p.VAR_KEYWORD]
    unknown = sorted(set(kwargs) - set(known))
    if unknown and not takes_any:
        raise ValueError(
            f"policy {spec!r}: unknown parameter {unknown[0]!r} "
            f"(parameters of {getattr(factory, '__name__', spec)}: {', '.join(known) or 'none'})"
        )
    _check_flags(spec, factory, kwargs)
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
    "env_family",
    "make_policy",
    "paper_setup",
    "parse_policy",
    "thief_schedule",
]

"""Your own scheduler behind ``--policy`` and the Python API (docs/own-scheduler.md).

A policy spec ``path/to/file.py:Name`` or ``package.module:Name`` names a class, a factory
``env -> policy`` or an object with ``predict``; parameters follow the built-ins' syntax,
``file.py:Name:key=value,key=value``, and reach the class or factory as keyword arguments.
Loading it runs the code the user names on their own command line, on purpose. Data
artifacts (model files, checkpoints, scenarios, traces) never run code (docs/security.md).

The evaluator passes the current action mask to a policy whose ``predict`` declares an
``action_masks`` parameter (sb3-contrib's convention): ``predict(obs, state, episode_start,
deterministic, action_masks=mask)``.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import sys
from pathlib import Path
from typing import Any

import gymnasium as gym

__all__ = ["build", "is_user_spec", "load_object", "takes_masks"]


def is_user_spec(spec: str) -> bool:
    """Whether ``spec`` names the user's code (``file.py:Name``, ``pkg.module:Name``) rather
    than a built-in (``thief``, ``etf:phi=0.5``, ``ppo:PATH``): its first part ends in
    ``.py`` or holds a dot or a slash, which no built-in name does."""
    head = spec.split(":", 1)[0].strip()
    return head.endswith(".py") or "." in head or "/" in head


def _module(source: str, spec: str) -> Any:
    if source.endswith(".py") or "/" in source:
        path = Path(source).expanduser()
        if not path.is_file():
            raise ValueError(f"policy {spec!r}: no such file {str(path)!r}")
        resolved = path.resolve()
        digest = hashlib.sha1(str(resolved).encode()).hexdigest()[:10]
        name = f"edgegym_user_{resolved.stem}_{digest}"
        if name in sys.modules:
            return sys.modules[name]
        loader = importlib.util.spec_from_file_location(name, resolved)
        if loader is None or loader.loader is None:
            raise ValueError(f"policy {spec!r}: {str(path)!r} is not a Python file")
        module = importlib.util.module_from_spec(loader)
        sys.modules[name] = module  # so the file's dataclasses and pickles find it
        try:
            loader.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
        return module
    try:
        return importlib.import_module(source)
    except ModuleNotFoundError as exc:
        raise ValueError(f"policy {spec!r}: cannot import {source!r} ({exc})") from None


def _offered(name: str, value: Any, module: str) -> bool:
    """A public class, function or policy object defined in ``module`` itself."""
    if name.startswith("_") or getattr(value, "__module__", module) != module:
        return False
    return inspect.isclass(value) or callable(value) or hasattr(value, "predict")


def load_object(spec: str) -> tuple[Any, dict[str, Any]]:
    """The class, factory or policy object a user spec names, and its parameters.

    Raises:
        ValueError: A missing file or module, a missing name (the message lists what the
            module defines), or a parameter that is not ``key=value``.
    """
    from edgegym.baselines import parse_policy

    source, _, rest = spec.strip().partition(":")
    attr, _, params = rest.partition(":")
    if not attr.strip():
        raise ValueError(
            f"policy {spec!r}: name the class or factory after the colon, e.g. {source}:MyPolicy"
        )
    module = _module(source.strip(), spec)
    obj = getattr(module, attr.strip(), None)
    if obj is None:
        found = sorted(n for n, v in vars(module).items() if _offered(n, v, module.__name__))
        raise ValueError(
            f"policy {spec!r}: {source} has no {attr.strip()!r}; it defines "
            f"{', '.join(found) or 'no class or function'}"
        )
    _, kwargs = parse_policy(f"user:{params}")
    return obj, kwargs


def build(obj: Any, env: gym.Env, kwargs: dict[str, Any], spec: str) -> Any:
    """A policy from a class (``obj(env, **kwargs)``), a factory (the same call) or an object
    with ``predict`` (no parameters).

    Raises:
        ValueError: Parameters the class or factory does not take, parameters given to a
            ready object, or a factory that returns something without ``predict``.
    """
    from edgegym.baselines import call_factory

    if inspect.isclass(obj) or (callable(obj) and not hasattr(obj, "predict")):
        policy = call_factory(spec, obj, env, kwargs)
        if not hasattr(policy, "predict"):
            raise ValueError(f"policy {spec!r} returned {policy!r}, which has no predict()")
        return policy
    if hasattr(obj, "predict"):
        if kwargs:
            raise ValueError(f"policy {spec!r}: a ready policy object takes no parameters")
        return obj
    raise ValueError(
        f"policy {spec!r} is neither a class, a factory env -> policy, nor an object with predict()"
    )


def takes_masks(policy: Any) -> bool:
    """Whether ``policy.predict`` declares an ``action_masks`` parameter."""
    try:
        params = inspect.signature(policy.predict).parameters
    except (TypeError, ValueError):
        return False
    return "action_masks" in params

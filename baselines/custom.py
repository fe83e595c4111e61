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

import contextlib
import hashlib
import importlib
import importlib.util
import inspect
import os
import sys
import traceback
from pathlib import Path
from typing import Any

import gymnasium as gym

__all__ = ["build", "is_user_spec", "load_object", "takes_masks", "user_failure"]


def is_user_spec(spec: str) -> bool:
    """Whether ``spec`` names the user's code (``file.py:Name``, ``pkg.module:Name``) rather
    than a built-in (``thief``, ``etf:phi=0.5``, ``ppo:PATH``): its first part ends in
    ``.py`` or holds a dot or a slash, which no built-in name does."""
    head = spec.split(":", 1)[0].strip()
    return head.endswith(".py") or "." in head or "/" in head


def _shown(path: str) -> str:
    """``path`` relative to the working folder when it lies inside it, else as it is."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except (OSError, ValueError):
        return path


#: This package's own files: never the place a user's exception is reported at.
_OWN = {os.path.realpath(__file__), os.path.realpath(Path(__file__).with_name("__init__.py"))}


def _where(exc: BaseException, code: Any = None) -> str | None:
    """``file:line`` of the user's code an exception came from: a ``SyntaxError``'s own place;
    else the innermost frame in ``code``'s file (``code``: that file's path, or the object
    called, whose source file it is); else where that object is defined (a call that failed
    before entering it, such as a wrong signature); else the innermost frame outside edgegym's
    loader and Python's import machinery."""
    if isinstance(exc, SyntaxError) and exc.filename and exc.lineno:
        return f"{_shown(exc.filename)}:{exc.lineno}"
    frames = [
        f
        for f in traceback.extract_tb(exc.__traceback__)
        if not f.filename.startswith("<") and os.path.realpath(f.filename) not in _OWN
    ]
    obj = None if code is None or isinstance(code, str | Path) else inspect.unwrap(code)
    file = code if isinstance(code, str | Path) else None
    if obj is not None:
        with contextlib.suppress(TypeError, OSError):
            file = inspect.getsourcefile(obj)
    if file is not None:
        mine = [f for f in frames if os.path.realpath(f.filename) == os.path.realpath(file)]
        if mine:
            return f"{_shown(mine[-1].filename)}:{mine[-1].lineno}"
        if obj is not None:
            with contextlib.suppress(TypeError, OSError):
                return f"{_shown(str(file))}:{inspect.getsourcelines(obj)[1]}"
    return f"{_shown(frames[-1].filename)}:{frames[-1].lineno}" if frames else None


def user_failure(spec: str, what: str, exc: BaseException, code: Any = None) -> str:
    """One line for an exception raised by the user's code: the spec, what was being done
    (``loading mysched.py``, ``building it``), the exception and ``file:line``
    (:func:`_where`; ``code`` is the file or the object that was called)."""
    text = exc.msg if isinstance(exc, SyntaxError) else str(exc)
    lines = text.strip().splitlines()
    message = f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__
    where = _where(exc, code)
    return f"policy {spec!r}: {what} raised {message}" + (f" ({where})" if where else "")


def _module(source: str, spec: str) -> Any:
    """The module a user spec names, loaded (a file) or imported (a module name).

    Raises:
        ValueError: A missing file or module, or one whose code raises as it loads (a
            ``SyntaxError``, a missing import, any exception: :func:`user_failure`).
    """
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
        except (Exception, SystemExit) as exc:
            del sys.modules[name]
            raise ValueError(user_failure(spec, f"loading {source}", exc, resolved)) from exc
        except BaseException:  # Ctrl-C: as it is
            del sys.modules[name]
            raise
        return module
    try:
        return importlib.import_module(source)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (source == exc.name or source.startswith(exc.name + ".")):
            raise ValueError(
                f"policy {spec!r}: cannot import {source!r} ({exc}){_in_working_folder(source)}"
            ) from None
        raise ValueError(user_failure(spec, f"importing {source}", exc)) from exc
    except (Exception, SystemExit) as exc:
        raise ValueError(user_failure(spec, f"importing {source}", exc)) from exc


def _in_working_folder(source: str) -> str:
    """A hint where the module ``source`` lies in the working folder, which a console script
    (``edgegym``) does not search, unlike ``python -m``; else nothing."""
    top = Path(source.split(".")[0])
    here = (top / "__init__.py").is_file() or top.with_suffix(".py").is_file()
    if not here or "" in sys.path or str(Path.cwd()) in sys.path:
        return ""
    as_file = Path(*source.split(".")).with_suffix(".py")
    return (
        f"; {str(top)!r} is in the working folder, which is not searched for modules: run "
        f"with PYTHONPATH=. or name the file ({as_file.as_posix()}:NAME)"
    )


def _offered(name: str, value: Any, module: str) -> bool:
    """A public class, function or policy object defined in ``module`` itself."""
    if name.startswith("_") or getattr(value, "__module__", module) != module:
        return False
    return inspect.isclass(value) or callable(value) or hasattr(value, "predict")


def load_object(spec: str) -> tuple[Any, dict[str, Any]]:
    """The class, factory or policy object a user spec names, and its parameters.

    Raises:
        ValueError: A missing file or module, code that raises as it loads (the exception
            and ``file:line``), a missing name (the message lists what the module defines), or
            a parameter that is not ``key=value``.
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
        ValueError: Parameters the class or factory does not take or of the wrong type
            (:func:`edgegym.baselines.check_parameters`), any exception the class or factory
            raises (:func:`user_failure`: the spec, the exception and ``file:line``), parameters
            given to a ready object, or a factory that returns something without ``predict``.
    """
    from edgegym.baselines import check_parameters

    if inspect.isclass(obj) or (callable(obj) and not hasattr(obj, "predict")):
        check_parameters(spec, obj, kwargs)
        try:
            policy = obj(env, **kwargs)
        except Exception as exc:  # any exception of the user's code: one line naming it
            raise ValueError(user_failure(spec, "building it", exc, obj)) from exc
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

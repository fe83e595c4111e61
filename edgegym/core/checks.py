"""What every environment adapter does first: load its scenario, check family and render mode,
and check the keyword arguments that are not scenario fields (``record_timeline``, ``backend``,
``time_scale``, ``real_options``, ...).

Keyword arguments arrive as Python values from ``gym.make`` and as strings from the command
line (``--set record_timeline=true``): a string is read as YAML, as a scenario override's is
(:func:`edgegym.scenarios.parse_value`), and the value must then have the argument's type.
"""

from __future__ import annotations

import copy
import inspect
from typing import Any

import numpy as np
from gymnasium import spaces

from edgegym.core.registry import ENV_IDS
from edgegym.core.render import RENDER_MODES
from edgegym.scenarios import (
    Scenario,
    ScenarioError,
    UnknownOverrideError,
    load,
    parse_value,
    shown,
)

#: What Gymnasium's ``make`` appends to a ``TypeError`` it re-raises from an env's constructor.
_GYM_WRAP = " was raised from the environment creator for "


def env_arguments(cls: type) -> list[str]:
    """The keyword arguments of an environment class other than ``scenario`` and its
    scenario overrides (``**overrides``), in signature order."""
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]  # self
    return [
        p.name
        for p in params
        if p.name != "scenario" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)
    ]


def scenario_for(
    env_id: str,
    scenario: str | Scenario,
    overrides: dict[str, Any],
    arguments: list[str] | None = None,
) -> Scenario:
    """Load ``scenario`` (name, path or loaded) with overrides; it must be ``env_id``'s family.

    Args:
        env_id: The environment's registered id.
        scenario: A bundled name, a path, or a loaded scenario.
        overrides: Scenario field overrides (the keyword arguments the environment does not
            take itself).
        arguments: The environment's own keyword arguments, listed when an override names no
            field (:func:`env_arguments`).

    Raises:
        UnknownOverrideError: An override that names no field; a ``ScenarioError`` and a
            ``TypeError`` with Python's "unexpected keyword argument 'X'" wording.
        ScenarioError: On a bad file or override, a scenario of another family, or a
            ``family`` override naming another family.
    """
    family = ENV_IDS[env_id][1]
    if "family" in overrides:  # before loading: the other family's schema is no help
        given = parse_value(overrides["family"], "family")
        if given != family:
            raise ScenarioError(
                f"family {shown(given)} does not fit {env_id} (needs family: {family}); a "
                "scenario's family cannot be overridden"
            )
    try:
        if isinstance(scenario, Scenario):
            sc = scenario.with_overrides(**overrides) if overrides else scenario
        else:
            sc = load(scenario, **overrides)
    except UnknownOverrideError as exc:
        # Keyword arguments are overrides: say it the way Python says it of a bad keyword
        # (the standard wording is what callers that probe optional keywords match on).
        args = list(arguments or [])
        raise UnknownOverrideError(
            f"{env_id}: __init__() got an unexpected keyword argument {exc.key!r}: neither an "
            f"argument of the environment ({', '.join(['scenario', *args])}) nor a scenario "
            f"field (fields: {', '.join(exc.allowed)})",
            exc.key,
            exc.allowed,
            arguments=["scenario", *args],
        ) from None
    if sc["family"] != family:
        raise ScenarioError(
            f"{sc.source}: family {sc['family']!r} does not fit {env_id} (needs family: {family})"
        )
    return sc


def creator_error(env_id: str, exc: TypeError) -> Exception:
    """The error to report for a ``TypeError`` from ``gym.make(env_id, ...)``: Gymnasium
    re-raises an environment constructor's ``TypeError`` with its own words and every keyword
    argument appended (" was raised from the environment creator for ... with kwargs (...)",
    once per ``make``: a ``-Flat`` id makes its base id). The constructor's own error is what
    the user needs: an unknown keyword names it and the valid ones; any other says it is a bad
    argument of ``env_id``.

    Returns:
        An :class:`UnknownOverrideError` (also a ``ScenarioError`` and a ``TypeError``) for an
        unknown keyword, else a ``ValueError``.
    """
    cause: BaseException = exc
    while isinstance(cause.__context__, TypeError) and (
        _GYM_WRAP in str(cause)  # (a rewrapped UnknownOverrideError's key is lost, its words cut)
        or (isinstance(cause, UnknownOverrideError) and not cause.key)
    ):
        cause = cause.__context__
    if isinstance(cause, UnknownOverrideError) and cause.key:
        return UnknownOverrideError(
            f"{env_id}: unknown setting {cause.key!r}: neither an argument of the environment "
            f"({', '.join(cause.arguments)}) nor a scenario field ({', '.join(cause.allowed)})",
            cause.key,
            cause.allowed,
            arguments=cause.arguments,
        )
    text = str(cause).split(_GYM_WRAP)[0]
    return ValueError(f"{env_id}: bad environment argument: {text}")


def check_flag(value: Any, name: str) -> bool:
    """A boolean keyword argument (``record_timeline``): ``True``/``False`` (a NumPy bool too),
    or from the command line ``true``/``false``.

    Raises:
        ValueError: Anything else (``"maybe"``, ``1``), naming the argument.
    """
    value = parse_value(value, name)
    if isinstance(value, bool | np.bool_):
        return bool(value)
    raise ValueError(f"{name}: must be true or false, got {shown(value)}")


def check_real_options(options: Any, backend: str, defaults: str) -> dict[str, Any]:
    """``real_options`` of an environment: ``None`` or a mapping of option names to values (a
    string is read as YAML: ``--set 'real_options={width: 16}'``), checked at construction
    against the family's real executor's defaults (names and value types:
    :func:`edgegym.real.executor.merge_options`), not at the first reset.

    Args:
        options: What the caller gave.
        backend: The environment's backend (``"sim"`` has no options).
        defaults: ``module:NAME`` of the family's default options (imported with the real
            backend only: it imports torch).

    Raises:
        ValueError: Not a mapping with string keys, an unknown name or a value of the wrong
            type, or options given with the simulator backend (they would be ignored without
            a word).
    """
    options = parse_value(options, "real_options")
    if options is None:
        return {}
    if not isinstance(options, dict) or not all(isinstance(k, str) for k in options):
        raise ValueError(
            f"real_options: must be a mapping of option names to values (e.g. {{width: 16}}) "
            f"or null, got {shown(options)}"
        )
    if options and backend != "real":
        raise ValueError(
            f"real_options: options of the real backend; backend is {backend!r} (give "
            "backend=real, or leave real_options out)"
        )
    if options:
        import importlib

        from edgegym.real.executor import merge_options

        module, _, name = defaults.partition(":")
        merge_options(options, getattr(importlib.import_module(module), name))
    return dict(options)


def check_max_episode_steps(steps: Any) -> int | None:
    """``max_episode_steps`` of a vector env: ``None`` or an integer >= 1.

    Raises:
        ValueError: On anything else, naming it.
    """
    if steps is None:
        return None
    if isinstance(steps, bool) or not isinstance(steps, int | np.integer) or steps < 1:
        raise ValueError(f"max_episode_steps must be an integer >= 1 or None, got {steps!r}")
    return int(steps)


def check_render_mode(render_mode: str | None) -> str | None:
    """Every edgegym environment renders ``"ansi"`` text, ``"rgb_array"`` frames, a
    ``"human"`` window (:mod:`edgegym.core.render`) or nothing (``None``).

    Raises:
        ValueError: On any other ``render_mode``.
    """
    if render_mode is not None and render_mode not in RENDER_MODES:
        allowed = ", ".join(["None", *map(repr, RENDER_MODES)])
        raise ValueError(f"render_mode must be one of {allowed}; got {render_mode!r}")
    return render_mode


def check_backend(
    backend: str, device: str, time_scale: float | None = None
) -> tuple[str, str, float | None]:
    """Validate ``backend`` (``"sim"`` or ``"real"``), the real one's torch device and pacing.

    Fails at construction rather than at the first reset (CUDA asked for without a GPU).
    """
    if backend not in ("sim", "real"):
        raise ValueError(f"backend={shown(backend)}; expected 'sim' or 'real'")
    time_scale = parse_value(time_scale, "time_scale")  # a string from --set time_scale=2
    if time_scale is not None and (
        isinstance(time_scale, bool)
        or not isinstance(time_scale, int | float)
        or not time_scale > 0
    ):
        raise ValueError(
            f"time_scale={shown(time_scale)}; expected scenario seconds per wall second > 0, or "
            "None to run as fast as the work allows"
        )
    if backend == "real":
        from edgegym.real.executor import check_device

        check_device(device)
    return backend, device, time_scale


def check_reset_options(options: Any, accepted: frozenset[str] = frozenset()) -> None:
    """Refuse ``reset(options=...)`` keys the environment does not read: a misspelt or
    unsupported option would otherwise be ignored silently and the episode run as if it were
    not given. ``None`` and an empty mapping (what SB3 and Gymnasium's wrappers pass) are fine.

    Raises:
        ValueError: Naming the unknown keys and the accepted ones.
    """
    if options is None:
        return
    if not isinstance(options, dict):
        raise ValueError(f"reset(options=...) must be a dict or None, got {type(options).__name__}")
    unknown = sorted(str(k) for k in options if k not in accepted)
    if unknown:
        takes = ", ".join(sorted(accepted)) if accepted else "none"
        raise ValueError(
            f"reset(options=...): unknown option(s) {', '.join(map(repr, unknown))}; this "
            f"environment takes {takes} (scenario settings go to gym.make as keywords)"
        )


def real_seed(np_random: np.random.Generator) -> int:
    """Seed of a real backend's work, drawn from a *copy* of the episode's generator.

    The episode's own random stream (arrivals, profiles, estimates) then stays exactly the
    simulator's, so sim and real runs of one seed see the same workload.
    """
    return int(copy.deepcopy(np_random).integers(2**31 - 1))


def unapplied_clock(clock_mhz: float, max_clock_mhz: float, modelled_in: str) -> list[str]:
    """The real backend's note for a DVFS clock it does not set (clocks are never changed)."""
    if not clock_mhz or clock_mhz == max_clock_mhz:
        return []
    return [
        f"clock {clock_mhz:.0f} MHz: not applied (clocks are never changed); "
        f"modelled in {modelled_in}"
    ]


def _space_text(space: spaces.Space) -> str:
    if isinstance(space, spaces.Discrete):
        start = int(space.start)
        return f"Discrete({int(space.n)})" + (f" starting at {start}" if start else "")
    if isinstance(space, spaces.MultiDiscrete):
        nvec = np.asarray(space.nvec)
        if nvec.size <= 12:
            return f"MultiDiscrete({nvec.tolist()})"
        return f"MultiDiscrete of shape {nvec.shape}"
    return f"Box({space.dtype}, shape {space.shape})"  # a batched MultiDiscrete


def check_action(space: spaces.Space, action: Any, what: str = "action", hint: str = "") -> Any:
    """``action`` as an int64 array of ``space``'s shape, or one ``ValueError`` naming the space.

    A ``Discrete`` action is one integer (a Python ``int``, a NumPy integer, or an integer
    array with one element); a ``MultiDiscrete`` action is an integer array of the space's
    shape. Every value must lie inside the space: ``start <= a < start + n`` (``Discrete``),
    ``0 <= a[i] < nvec[i]`` (``MultiDiscrete``). Floats (3.7, and 3.0 too), NaN, booleans,
    other shapes and out-of-range values are a caller's bug and raise, as Gymnasium's and
    SB3's ``space.contains`` would reject them. (Masked but in-space actions are not checked
    here: the environments project them, as documented.) Batched spaces (a vector env's
    ``action_space``: ``MultiDiscrete``, or the integer ``Box`` Gymnasium's ``batch_space``
    makes of a ``MultiDiscrete``) are checked the same way, entry by entry.

    Args:
        space: A ``Discrete``, ``MultiDiscrete`` or integer ``Box`` space (other spaces pass
            through unchecked).
        action: What the caller passed.
        what: How the message names it ("action", "actions").
        hint: Appended to the message (what one action holds).

    Raises:
        ValueError: The action is not an element of ``space``.
    """
    int_box = isinstance(space, spaces.Box) and np.dtype(space.dtype).kind in "iu"
    if not (int_box or isinstance(space, spaces.Discrete | spaces.MultiDiscrete)):
        return action
    name = _space_text(space)
    if action is None:
        wanted = "one integer" if isinstance(space, spaces.Discrete) else f"shape {space.shape}"
        raise ValueError(f"{what} is None; {name} expects {wanted}{hint}")
    try:
        a = np.asarray(action)
    except Exception:
        raise ValueError(f"{what} {action!r} is not an element of {name}{hint}") from None
    if isinstance(space, spaces.Discrete):
        if a.size != 1:
            raise ValueError(f"{what} must be one integer of {name}, got shape {a.shape}{hint}")
        a = a.reshape(())
    elif a.shape != space.shape:
        raise ValueError(f"{what} has shape {a.shape}; {name} expects {space.shape}{hint}")
    if a.dtype.kind == "O" and all(
        isinstance(v, int) and not isinstance(v, bool) for v in a.reshape(-1).tolist()
    ):  # Python integers past int64
        raise ValueError(f"{what} holds an integer outside {name} (past 64 bits){hint}")
    if a.dtype.kind not in "iu":
        raise ValueError(
            f"{what} must hold integers for {name}, got dtype {a.dtype}"
            + (f" ({_first_bad(a)})" if a.dtype.kind == "f" else "")
            + hint
        )
    if isinstance(space, spaces.Discrete):
        lo, hi = int(space.start), int(space.start) + int(space.n)
        if not lo <= int(a) < hi:
            raise ValueError(f"{what} {int(a)} is outside {name} (valid: {lo} .. {hi - 1}){hint}")
        return a.astype(np.int64)
    if int_box:
        low, high = np.broadcast_to(space.low, a.shape), np.broadcast_to(space.high, a.shape)
    else:
        low = np.broadcast_to(np.asarray(getattr(space, "start", 0)), a.shape)
        high = low + np.asarray(space.nvec) - 1
    out = (a < low) | (a > high)
    if out.any():
        idx = tuple(int(i) for i in np.argwhere(out)[0])
        at = ", ".join(str(i) for i in idx)
        raise ValueError(
            f"{what}[{at}] = {int(a[idx])} is outside {name} (entry {at} takes "
            f"{int(low[idx])} .. {int(high[idx])}){hint}"
        )
    return a.astype(np.int64)


def _first_bad(a: np.ndarray) -> str:
    flat = a.ravel()
    bad = flat[~np.isfinite(flat)] if not np.isfinite(flat).all() else flat[flat != np.round(flat)]
    return f"e.g. {bad[0]!r}" if bad.size else "integral floats are not accepted either"

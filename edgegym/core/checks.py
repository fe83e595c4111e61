"""What every environment adapter does first: load its scenario, check family and render mode."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
from gymnasium import spaces

from edgegym.core.registry import ENV_IDS
from edgegym.core.render import RENDER_MODES
from edgegym.scenarios import Scenario, ScenarioError, UnknownOverrideError, load


def scenario_for(env_id: str, scenario: str | Scenario, overrides: dict[str, Any]) -> Scenario:
    """Load ``scenario`` (name, path or loaded) with overrides; it must be ``env_id``'s family.

    Raises:
        UnknownOverrideError: An override that names no field; a ``ScenarioError`` and a
            ``TypeError`` with Python's "unexpected keyword argument 'X'" wording.
        ScenarioError: On a bad file or override, or a scenario of another family.
    """
    try:
        if isinstance(scenario, Scenario):
            sc = scenario.with_overrides(**overrides) if overrides else scenario
        else:
            sc = load(scenario, **overrides)
    except UnknownOverrideError as exc:
        # Keyword arguments are overrides: say it the way Python says it of a bad keyword
        # (the standard wording is what callers that probe optional keywords match on).
        raise UnknownOverrideError(
            f"{env_id}: __init__() got an unexpected keyword argument {exc.key!r}: neither an "
            f"argument of the environment nor a scenario field (fields: "
            f"{', '.join(exc.allowed)})",
            exc.key,
            exc.allowed,
        ) from None
    family = ENV_IDS[env_id][1]
    if sc["family"] != family:
        raise ScenarioError(
            f"{sc.source}: family {sc['family']!r} does not fit {env_id} (needs family: {family})"
        )
    return sc


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
        raise ValueError(f"backend={backend!r}; expected 'sim' or 'real'")
    if time_scale is not None and (
        isinstance(time_scale, bool)
        or not isinstance(time_scale, int | float)
        or not time_scale > 0
    ):
        raise ValueError(
            f"time_scale={time_scale!r}; expected scenario seconds per wall second > 0, or "
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

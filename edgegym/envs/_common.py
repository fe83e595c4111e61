"""What every environment adapter does first: load its scenario, check family and render mode."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from edgegym.envs import ENV_IDS
from edgegym.envs.render import RENDER_MODES
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
    ``"human"`` window (:mod:`edgegym.envs.render`) or nothing (``None``).

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

"""What every environment adapter does first: load its scenario, check family and render mode."""

from __future__ import annotations

from typing import Any

from edgegym.envs import ENV_IDS
from edgegym.scenarios import Scenario, ScenarioError, load


def scenario_for(env_id: str, scenario: str | Scenario, overrides: dict[str, Any]) -> Scenario:
    """Load ``scenario`` (name, path or loaded) with overrides; it must be ``env_id``'s family.

    Raises:
        ScenarioError: On a bad file or override, or a scenario of another family.
    """
    if isinstance(scenario, Scenario):
        sc = scenario.with_overrides(**overrides) if overrides else scenario
    else:
        sc = load(scenario, **overrides)
    family = ENV_IDS[env_id][1]
    if sc["family"] != family:
        raise ScenarioError(
            f"{sc.source}: family {sc['family']!r} does not fit {env_id} (needs family: {family})"
        )
    return sc


def check_render_mode(render_mode: str | None) -> str | None:
    """Every edgegym environment renders ``"ansi"`` text or nothing."""
    if render_mode not in (None, "ansi"):
        raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
    return render_mode


def check_backend(backend: str, device: str) -> tuple[str, str]:
    """Validate ``backend`` (``"sim"`` or ``"real"``) and, for the real one, the torch device.

    Fails at construction rather than at the first reset (CUDA asked for without a GPU).
    """
    if backend not in ("sim", "real"):
        raise ValueError(f"backend={backend!r}; expected 'sim' or 'real'")
    if backend == "real":
        from edgegym.real.executor import check_device

        check_device(device)
    return backend, device

"""What every edgegym environment shares (HighwayEnv-style template hooks), so a family's
adapter writes only its own parts.

:class:`EdgeEnv` owns: loading the scenario of the family's id with the keyword overrides
(:meth:`_setup`: an unknown keyword is Python's ``TypeError``), the render mode and the
timeline flag, rendering (``"ansi"`` from :meth:`_render_text`; ``"rgb_array"`` and
``"human"`` from :meth:`_frame_panels` through :mod:`edgegym.envs.render`) and ``close()``.
A family implements ``reset``, ``step``, ``action_masks`` and the two render hooks.

Every family's single environment stands on it, as the batch of one of the family's
dynamics (:mod:`edgegym.sim.core`); :class:`edgegym.envs.vector.EdgeVectorEnv` is the batch
of N.
"""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from edgegym.envs._common import check_render_mode, scenario_for
from edgegym.envs.render import RENDER_MODES, Panel, release, render_frame
from edgegym.scenarios import Scenario


class EdgeEnv(gym.Env):
    """Base of the edgegym environments (see the module docstring)."""

    #: The registered id whose family's scenarios this environment takes.
    env_id: ClassVar[str]
    metadata: ClassVar[dict[str, Any]] = {"render_modes": list(RENDER_MODES), "render_fps": 4}

    def _setup(
        self,
        scenario: str | Scenario,
        overrides: dict[str, Any],
        *,
        render_mode: str | None,
        record_timeline: bool,
    ) -> Scenario:
        """Load the scenario (with ``overrides``), check and keep the render mode and the
        timeline flag; returns the validated scenario.

        Raises:
            ScenarioError: A bad scenario or override (an unknown one is also a TypeError).
            ValueError: A render mode not in ``metadata["render_modes"]``.
        """
        sc = scenario_for(self.env_id, scenario, overrides)
        self.render_mode = check_render_mode(render_mode)
        self.record_timeline = bool(record_timeline)
        return sc

    # ------------------------------------------------------------------ rendering
    def render(self) -> str | np.ndarray | None:
        """Text (``"ansi"``), the frame of :meth:`_frame_panels` (``"rgb_array"``), or that
        frame shown in a window (``"human"``, returns ``None``)."""
        if self.render_mode in ("rgb_array", "human"):
            return render_frame(self, *self._frame_panels())
        if self.render_mode == "ansi":
            return self._render_text()
        return None

    def _render_text(self) -> str | None:
        """The ``"ansi"`` text of the current state (``None`` before ``reset``)."""
        raise NotImplementedError

    def _frame_panels(self) -> tuple[str, list[Panel]]:
        """Title and panels of the ``"rgb_array"`` frame (a title and ``[]`` before reset)."""
        raise NotImplementedError

    def close(self) -> None:
        """Close the ``"human"`` window, if one is open."""
        release(self)
        super().close()


__all__ = ["EdgeEnv"]

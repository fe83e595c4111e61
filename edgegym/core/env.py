"""What every edgegym environment shares (HighwayEnv-style template hooks), so a family's
adapter writes only its own parts.

:class:`EdgeEnv` owns: loading the scenario of the family's id with the keyword overrides
(:meth:`_setup`: an unknown keyword is Python's ``TypeError``), the render mode and the
timeline flag; the episode on the family's dynamics (:mod:`edgegym.core.dynamics`) as its batch
of one (:meth:`_use` installs params, dynamics and spaces): ``reset`` (seeded from
``np_random``), ``step`` (the reset guard, the action's check against the space, the reward
as the sum of weight x term of the scenario's ``objective``, ``info`` with ``action_mask``,
``reward_terms`` and ``energy_j``, ``episode_metrics`` when the episode ends, the timeline),
``action_masks`` (memoised per state), ``episode_metrics``; rendering (``"ansi"`` from
:meth:`_render_text`; ``"rgb_array"`` and ``"human"`` from :meth:`_frame_panels` through
:mod:`edgegym.core.render`) and ``close()``.

A family fills in the hooks it needs: :meth:`_state_info` (``info`` entries of the state),
:meth:`_record_info` (``info`` entries of a step's :class:`~edgegym.core.dynamics.Record`),
:meth:`_reset_info`, :meth:`_on_reset`, :meth:`_before_step` / :meth:`_timeline_add` (the
timeline), :attr:`action_help`, and the two render hooks.
:class:`edgegym.core.vector.EdgeVectorEnv` is the batch of N on the same dynamics.
"""

from __future__ import annotations

from typing import Any, ClassVar

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from edgegym.core.checks import (
    check_action,
    check_flag,
    check_render_mode,
    check_reset_options,
    env_arguments,
    scenario_for,
)
from edgegym.core.dynamics import Dynamics, Record, weighted_reward
from edgegym.core.render import RENDER_MODES, Panel, release, render_frame
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
            ValueError: A render mode not in ``metadata["render_modes"]``, a timeline flag
                that is not true or false.
        """
        self.record_timeline = check_flag(record_timeline, "record_timeline")
        sc = scenario_for(self.env_id, scenario, overrides, env_arguments(type(self)))
        self.render_mode = check_render_mode(render_mode)
        return sc

    def _use(
        self,
        params: Any,
        dynamics: Dynamics,
        observation_space: spaces.Space,
        action_space: spaces.Space,
    ) -> None:
        """Install the family's core: params (whose ``term_weights`` weigh the reward's
        terms), dynamics and spaces."""
        self.params, self.dynamics = params, dynamics
        self.observation_space, self.action_space = observation_space, action_space
        self.state: Any = None
        self.timeline: list[dict[str, Any]] | None = None
        self._mask: np.ndarray | None = None
        self._ended = False

    # ------------------------------------------------------------------ episode
    #: What one action holds, appended to the message of a malformed action.
    action_help: ClassVar[str] = ""

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Start an episode: the dynamics' initial state drawn from ``np_random``."""
        check_reset_options(options)
        super().reset(seed=seed)
        self.state = self.dynamics.initial(self.params, [self.np_random])
        self._mask = None
        self._ended = False
        self.timeline = [] if self.record_timeline else None
        self._on_reset()
        return self._obs(), self._info(self._reset_info())

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """Apply ``action`` and run to the next decision epoch."""
        if self.state is None:
            raise RuntimeError("call reset() before step()")
        if self._ended:
            raise RuntimeError("the episode has ended; call reset()")
        batch = self._action_batch(action)
        before = None if self.timeline is None else self._before_step()
        self.state, rec = self.dynamics.step(self.params, self.state, batch)
        self._mask = None
        reward = float(weighted_reward(rec.terms, self.params.term_weights)[0])
        info = self._info(self._record_info(rec))
        info["reward_terms"] = {name: float(v[0]) for name, v in rec.terms.items()}
        info["energy_j"] = float(rec.energy_j[0])
        if self.timeline is not None:
            self._timeline_add(before, rec)
        terminated = self._ended = bool(self.dynamics.done(self.params, self.state)[0])
        if terminated:
            info["episode_metrics"] = self.episode_metrics()
        return self._obs(), reward, terminated, False, info

    def _action_batch(self, action: Any) -> np.ndarray:
        """The action as a batch of one, checked against the action space
        (:func:`edgegym.core.checks.check_action`: one ``ValueError`` naming the space)."""
        return check_action(self.action_space, action, hint=self.action_help)[None]

    def action_masks(self) -> np.ndarray:
        """The flat boolean action mask of the current state (sb3-contrib's convention; all
        actions before ``reset``)."""
        if self.state is None:
            space = self.action_space
            width = int(space.n) if isinstance(space, spaces.Discrete) else int(space.nvec.sum())
            return np.ones(width, dtype=bool)
        if self._mask is None:
            self._mask = self.dynamics.mask(self.params, self.state)[0]
        return self._mask.copy()

    def episode_metrics(self) -> dict[str, Any]:
        """Whole-episode numbers so far (the dynamics' ``metrics`` of this env)."""
        if self.state is None:
            raise RuntimeError("call reset() first")
        return self.dynamics.metrics(self.params, self.state, 0)

    def _obs(self) -> Any:
        obs = self.dynamics.observation(self.params, self.state)
        return {k: v[0] for k, v in obs.items()} if isinstance(obs, dict) else obs[0]

    def _info(self, extra: dict[str, Any]) -> dict[str, Any]:
        info = {"action_mask": self.action_masks(), **self._state_info()}
        info.update(extra)
        return info

    # ------------------------------------------------------------------ family hooks
    def _state_info(self) -> dict[str, Any]:
        """``info`` entries of the current state (every ``reset`` and ``step``)."""
        return {}

    def _record_info(self, rec: Record) -> dict[str, Any]:
        """``info`` entries of a step's record (default: every ``rec.info`` entry of env 0,
        0-d values as Python scalars)."""
        rows = {name: v[0] for name, v in rec.info.items()}
        return {name: r.item() if r.ndim == 0 else r for name, r in rows.items()}

    def _reset_info(self) -> dict[str, Any]:
        """``info`` entries of ``reset`` beyond the state's."""
        return {}

    def _on_reset(self) -> None:
        """After the initial state is drawn (a real backend starts its episode here)."""

    def _before_step(self) -> Any:
        """What :meth:`_timeline_add` needs of the state before a step (timeline only)."""
        return None

    def _timeline_add(self, before: Any, rec: Record) -> None:
        """Append the step to ``self.timeline`` (recorded only with ``record_timeline``)."""

    def allocation_timeline(self) -> list[dict[str, Any]] | None:
        """The episode's allocations over time as the evaluator plots them: one record per
        stretch of constant allocation (``t0``, ``t1``, ``window``, per tenant ``accuracy``,
        ``share_retrain``, ``share_infer``), or ``None`` (the family keeps none, or
        ``record_timeline`` is off)."""
        return None

    def plot_info(self) -> dict[str, Any]:
        """Facts the evaluator's figures read besides the timeline: what a tenant is called
        (``unit``) and, where the family has them, ``a_min``, ``gpus``, ``window_s``,
        ``windows``, ``streams``, ``n_tenants``, ``basis_s``, ``batch`` (its static spec's
        fields of those names)."""
        spec = getattr(self, "spec_", None)
        fields = {"a_min": float, "gpus": int, "window_s": float, "windows": int, "streams": int,
                  "n_tenants": int, "basis_s": float, "batch": int}  # fmt: skip
        info: dict[str, Any] = {
            k: cast(getattr(spec, k)) for k, cast in fields.items() if hasattr(spec, k)
        }
        info["unit"] = "stream" if "streams" in info else "tenant"
        return info

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

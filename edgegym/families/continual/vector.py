"""Native vector environment of ``edgegym/ContinualLearning-v0``: N envs as one batch of numpy.

:class:`ContinualLearningVectorEnv` is the base :class:`~edgegym.core.vector.EdgeVectorEnv`
over the family's :class:`~edgegym.families.continual.dynamics.ContinualDynamics`; env ``i`` of a
vector env reset with ``seed=s`` steps exactly as a single
:class:`~edgegym.families.continual.env.ContinualLearningEnv` reset with ``seed=s + i``.
``gymnasium.make_vec("edgegym/ContinualLearning-v0", num_envs=N)`` builds it. The vector env
is simulated only (the real backend runs one env on a device).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode

from edgegym.core.vector import EdgeVectorEnv
from edgegym.families.continual.dynamics import ContinualDynamics
from edgegym.families.continual.env import continual_spaces
from edgegym.families.continual.params import ContinualParams, make_params
from edgegym.families.continual.reward import TERMS
from edgegym.scenarios import Scenario


class ContinualLearningVectorEnv(EdgeVectorEnv):
    """``num_envs`` continual-learning environments stepped as one batch (see
    :class:`~edgegym.core.vector.EdgeVectorEnv` for the layout and autoreset modes).

    Observations are the single env's ``Dict`` batched: ``streams`` (N, V, 9 + 2C),
    ``stream_mask`` (N, V), ``globals`` (N, 6). ``info`` holds, batched, what the single env's
    holds: ``action_mask`` (N, V * (C + 1 + L + 2 levels)), ``stream_accuracy`` and
    ``model_accuracy`` (N, V), ``window`` and ``time_s`` (N,), ``reward_terms`` and ``energy_j``
    (zeros at reset, as the single env), and after a step the allocation actually applied as
    ``retrain_cfg``, ``infer_cfg``, ``share_retrain`` and ``share_infer`` (N, V) (the single
    env's ``info["allocation"]``). V is ``max_streams`` where it is given.

    Args:
        num_envs: N (>= 1).
        scenario: As for the single env (default: the family's default scenario).
        autoreset_mode: ``AutoresetMode.NEXT_STEP`` or ``AutoresetMode.SAME_STEP``.
        max_streams: Stream slots, as for the single env (:func:`make_params`; padding beyond
            the scenario's streams; default: the scenario's streams).
        max_episode_steps, render_mode: As for :class:`~edgegym.core.vector.EdgeVectorEnv`.
        **overrides: Scenario overrides, as for the single env.
    """

    env_id = "edgegym/ContinualLearning-v0"
    params: ContinualParams

    def __init__(
        self,
        num_envs: int = 1,
        scenario: str | Scenario | None = None,
        autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
        max_streams: int | None = None,
        max_episode_steps: int | None = None,
        render_mode: str | None = None,
        **overrides: Any,
    ) -> None:
        self._slots = max_streams  # read by _build, which the base class's __init__ calls
        super().__init__(
            num_envs, scenario, autoreset_mode, max_episode_steps, render_mode, **overrides
        )
        self.max_streams = self.params.max_streams

    def _build(
        self, scenario: Scenario
    ) -> tuple[ContinualParams, ContinualDynamics, spaces.Space, spaces.Space]:
        p = make_params(scenario, self._slots)
        obs_space, act_space = continual_spaces(p)
        return p, ContinualDynamics(), obs_space, act_space

    def _mask_before_reset(self) -> np.ndarray:
        # As the single env: what every slot may always choose.
        return self.dynamics.base_mask(self.params, 1).reshape(-1)

    def _reset_info(self) -> dict[str, Any]:
        # As the single env: zero reward terms and energy at reset.
        n = self.num_envs
        return {"reward_terms": {t: np.zeros(n) for t in TERMS}, "energy_j": np.zeros(n)}

    def _state_info(self) -> dict[str, Any]:
        st = self.state
        return {
            "stream_accuracy": self.dynamics.stream_accuracy(self.params, st),
            "model_accuracy": st.model_acc.copy(),
            "window": st.window.copy(),
            "time_s": st.time_s.copy(),
        }


__all__ = ["ContinualLearningVectorEnv"]

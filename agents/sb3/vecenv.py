"""Stable-Baselines3's ``VecEnv`` over edgegym's native vector environments.

:class:`SB3VecEnv` lets SB3 (PPO, sb3-contrib's MaskablePPO) train on
``gymnasium.make_vec(id, N)`` (an :class:`edgegym.core.vector.EdgeVectorEnv`, or its flat view
:class:`edgegym.wrappers.FlatVectorEnv`) in one process, with no subprocesses and no N Python
copies. It follows SB3's conventions exactly as ``DummyVecEnv`` of N single envs does: the
vector env runs in Gymnasium's ``SameStep`` autoreset mode, so an env that ends returns its
next episode's reset observation and keeps its last one in ``infos[i]["terminal_observation"]``
(with ``"TimeLimit.truncated"``); ``seed(s)`` then ``reset()`` seeds env ``i`` with ``s + i``;
``env_method("action_masks")`` gives each env's mask, as MaskablePPO asks for it.

Example::

    from sb3_contrib import MaskablePPO
    from edgegym.agents.sb3.vecenv import make_sb3_vec_env

    venv = make_sb3_vec_env("edgegym/EnergyFairShare-Flat-v0", n_envs=64, quanta=50)
    MaskablePPO("MlpPolicy", venv, n_steps=64).learn(20_000)
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.vector import AutoresetMode
from stable_baselines3.common.vec_env.base_vec_env import VecEnv, VecEnvIndices, VecEnvStepReturn

from edgegym.core.vector import env_info


class SB3VecEnv(VecEnv):
    """SB3 ``VecEnv`` over a Gymnasium vector env in ``SameStep`` autoreset mode.

    Args:
        venv: The vector env (``metadata["autoreset_mode"]`` must be ``SameStep``).

    Raises:
        ValueError: ``venv`` autoresets in another mode.
    """

    def __init__(self, venv: gym.vector.VectorEnv) -> None:
        mode = venv.metadata.get("autoreset_mode")
        if mode != AutoresetMode.SAME_STEP:
            raise ValueError(
                f"SB3VecEnv needs a vector env in SameStep autoreset mode, got {mode}; make it "
                "with gymnasium.make_vec(id, n, autoreset_mode=AutoresetMode.SAME_STEP)"
            )
        self.venv = venv
        super().__init__(venv.num_envs, venv.single_observation_space, venv.single_action_space)
        self._actions: np.ndarray | None = None
        self._episode_returns = np.zeros(self.num_envs)
        self._episode_lengths = np.zeros(self.num_envs, dtype=np.int64)
        self._t0 = time.time()

    # ------------------------------------------------------------------ SB3 VecEnv API
    def reset(self) -> Any:
        seeds = list(self._seeds) if any(s is not None for s in self._seeds) else None
        obs, info = self.venv.reset(seed=seeds, options=self._options[0] or None)
        self._reset_seeds()
        self._reset_options()
        self._episode_returns[:] = 0.0
        self._episode_lengths[:] = 0
        self.reset_infos = [env_info(info, i) for i in range(self.num_envs)]
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = np.asarray(actions)

    def step_wait(self) -> VecEnvStepReturn:
        if self._actions is None:
            raise RuntimeError("step_async() must come before step_wait()")
        obs, rewards, terminated, truncated, info = self.venv.step(self._actions)
        self._actions = None
        dones = terminated | truncated
        self._episode_returns += rewards
        self._episode_lengths += 1
        infos: list[dict[str, Any]] = []
        for i in range(self.num_envs):
            if dones[i]:
                row = env_info(info.get("final_info", {}), i)
                row["terminal_observation"] = info["final_obs"][i]
                row["TimeLimit.truncated"] = bool(truncated[i] and not terminated[i])
                row["episode"] = {  # as SB3's Monitor writes it
                    "r": round(float(self._episode_returns[i]), 6),
                    "l": int(self._episode_lengths[i]),
                    "t": round(time.time() - self._t0, 6),
                }
                self._episode_returns[i] = 0.0
                self._episode_lengths[i] = 0
            else:
                row = env_info(info, i)
            infos.append(row)
        return obs, rewards.astype(np.float32), dones, infos

    def close(self) -> None:
        self.venv.close()

    def action_masks(self) -> np.ndarray:
        """(N, K) bool: every env's action mask."""
        return np.asarray(self.venv.action_masks(), dtype=bool)

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        value = getattr(self.venv.unwrapped, attr_name)
        return [value for _ in self._get_indices(indices)]

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        raise AttributeError(
            f"cannot set {attr_name!r} per env: the envs of a native vector env share one "
            "object; set it on the vector env itself"
        )

    def has_attr(self, attr_name: str) -> bool:
        return attr_name == "action_masks" or hasattr(self.venv.unwrapped, attr_name)

    def env_method(
        self, method_name: str, *method_args: Any, indices: VecEnvIndices = None, **kwargs: Any
    ) -> list[Any]:
        idx = list(self._get_indices(indices))
        if method_name == "action_masks":
            masks = self.action_masks()
            return [masks[i] for i in idx]
        raise AttributeError(
            f"{method_name!r} is not a per-env method of a native vector env (action_masks is)"
        )

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        # SB3's evaluate_policy asks for Monitor; episode stats come from infos["episode"].
        return [False for _ in self._get_indices(indices)]

    def get_images(self) -> Sequence[np.ndarray | None]:
        return [None for _ in range(self.num_envs)]


def make_sb3_vec_env(env_id: str, n_envs: int, **kwargs: Any) -> SB3VecEnv:
    """SB3 ``VecEnv`` of ``gymnasium.make_vec(env_id, n_envs, **kwargs)`` through the id's
    native ``vector_entry_point`` (``SameStep`` autoreset).

    Raises:
        ValueError: ``env_id`` has no native vector env.
    """
    if gym.spec(env_id).vector_entry_point is None:
        raise ValueError(
            f"{env_id} has no native vector env yet; use SB3's make_vec_env (DummyVecEnv or "
            "SubprocVecEnv of single envs)"
        )
    venv = gym.make_vec(
        env_id,
        n_envs,
        vectorization_mode="vector_entry_point",
        autoreset_mode=AutoresetMode.SAME_STEP,
        **kwargs,
    )
    return SB3VecEnv(venv)


__all__ = ["SB3VecEnv", "make_sb3_vec_env"]

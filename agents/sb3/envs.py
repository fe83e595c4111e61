"""The training environments of the Stable-Baselines3 backend.

:func:`wrap` applies a hyperparameter file's ``wrappers`` section to an environment (the same
view a loaded policy takes, :class:`edgegym.agents.policy.PPOPolicy`); :class:`EnvFactory`
builds one wrapped training environment (picklable, for ``SubprocVecEnv``), and
:func:`vec_env` the ``VecEnv`` of ``train.n_envs`` of them: the id's native vector env
(:class:`~edgegym.agents.sb3.vecenv.SB3VecEnv`) where it has one, else SB3's ``DummyVecEnv``
or ``SubprocVecEnv`` (``train.vec_env`` decides). A mixture of scenarios
(``train.scenarios``, :func:`training_scenarios`) plays every scenario through the spaces of
the run's own (:func:`check_mixture`, :class:`edgegym.agents.policies.tenants.Aligned`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

import gymnasium as gym
from gymnasium import spaces

from edgegym.agents.config import ConfigError
from edgegym.agents.policies import SIZE_FREE, sb3_policy_kwargs, size_free_class
from edgegym.agents.policy import space_difference
from edgegym.evaluation import make_env
from edgegym.wrappers import flatten_env, joint_actions


class EnvFactory:
    """Picklable builder of one wrapped training environment (for ``SubprocVecEnv``).

    Args:
        env_id: The environment id.
        scenario: Its scenario.
        overrides: Its scenario overrides.
        wrappers: The hyperparameter file's ``wrappers`` section.
        like: The run's own ``(scenario, overrides)``, whose spaces this environment takes
            (:func:`wrap_like`), or ``None``.
    """

    def __init__(
        self,
        env_id: str,
        scenario: str | None,
        overrides: Mapping[str, Any],
        wrappers: Mapping[str, Any],
        like: tuple[str | None, Mapping[str, Any]] | None = None,
    ) -> None:
        self.env_id = env_id
        self.scenario = scenario
        self.overrides = dict(overrides)
        self.wrappers = dict(wrappers)
        self.like = None if like is None else (like[0], dict(like[1]))

    def __call__(self) -> gym.Env:
        from stable_baselines3.common.monitor import Monitor

        env = make_env(self.env_id, self.scenario, self.overrides)
        if self.like is None or self.like == (self.scenario, self.overrides):
            return Monitor(wrap(env, self.wrappers))
        ref = wrap(make_env(self.env_id, *self.like), self.wrappers)
        try:
            return Monitor(wrap_like(env, self.wrappers, ref))
        finally:
            ref.close()


def policy_for(cfg: dict[str, Any], probe: gym.Env) -> tuple[Any, dict[str, Any]]:
    """The file's ``policy`` for the probe's spaces (``auto``: by the observation space) and
    its keyword arguments (a size-free policy's for this environment): what training builds
    and what loading a model rebuilds (:mod:`edgegym.agents.sb3.artifacts`). Records
    ``tenant_view`` in ``cfg``.

    Raises:
        ConfigError: A size-free policy that does not fit the environment.
    """
    hp = cfg["hyperparams"]
    policy: Any = hp["policy"]
    policy_kwargs = sb3_policy_kwargs(hp["policy_kwargs"])
    if policy in SIZE_FREE:
        cls = size_free_class(policy)
        try:
            policy_kwargs = cls.kwargs_for(probe, policy_kwargs)
        except ValueError as exc:
            raise ConfigError(f"policy {policy} on {cfg['env_id']}: {exc}") from None
        if "view" in policy_kwargs:
            cfg["tenant_view"] = policy_kwargs["view"]
        return cls, policy_kwargs
    if policy == "auto":
        policy = (
            "MultiInputPolicy" if isinstance(probe.observation_space, spaces.Dict) else "MlpPolicy"
        )
    return policy, policy_kwargs


def wrap(env: gym.Env, wrappers: Mapping[str, Any]) -> gym.Env:
    """Apply a config's ``wrappers`` section to an environment."""
    flat_obs = bool(wrappers["flatten_obs"]) and not (
        isinstance(env.observation_space, spaces.Box) and len(env.observation_space.shape) == 1
    )
    discrete = bool(wrappers["discrete_actions"]) and isinstance(
        env.action_space, spaces.MultiDiscrete
    )
    return flatten_env(
        env, flat_obs, discrete, int(wrappers["max_actions"]), wrappers.get("teacher")
    )


def wrap_like(env: gym.Env, wrappers: Mapping[str, Any], like: gym.Env) -> gym.Env:
    """:func:`wrap`, then, where the spaces differ from ``like``'s (the run's own scenario,
    wrapped) only by the number of retraining configurations, seen through ``like``'s
    spaces (:class:`edgegym.agents.policies.tenants.Aligned`).

    Raises:
        ValueError: The spaces differ otherwise (the message says how).
    """
    from edgegym.agents.policies.tenants import Aligned

    env = wrap(env, wrappers)
    if space_difference(env, like) is None:
        return env
    try:
        return Aligned(env, like)
    except (ValueError, AttributeError) as exc:
        env.close()
        raise ValueError(str(exc)) from None


def native_vec_env(factory: EnvFactory, n_envs: int) -> Any | None:
    """The SB3 ``VecEnv`` of the factory's id on its native vector env, with the flat view the
    ``wrappers`` ask for (:class:`edgegym.wrappers.FlatVectorEnv`), or ``None`` where the id
    has no native vector env or the wrappers ask for a view it does not offer (flattened
    observations without ``Discrete`` actions, or the reverse)."""
    from gymnasium.vector import AutoresetMode

    from edgegym.agents.sb3.vecenv import SB3VecEnv
    from edgegym.wrappers import FlatVectorEnv

    if gym.spec(factory.env_id).vector_entry_point is None or factory.wrappers.get("teacher"):
        return None  # no native vector env; or a teacher hint (a scheduler per environment)
    probe = make_env(factory.env_id, factory.scenario, factory.overrides)
    try:
        obs_space, act_space = probe.observation_space, probe.action_space
        flat_obs = bool(factory.wrappers["flatten_obs"]) and not (
            isinstance(obs_space, spaces.Box) and len(obs_space.shape) == 1
        )
        discrete = bool(factory.wrappers["discrete_actions"]) and isinstance(
            act_space, spaces.MultiDiscrete
        )
        if flat_obs and not discrete:
            return None
        if discrete and isinstance(obs_space, spaces.Dict) and not flat_obs:
            return None  # FlatVectorEnv flattens the Dict too; the policy reads it whole
        if discrete and not isinstance(obs_space, spaces.Box | spaces.Dict):
            return None
        joint = (
            joint_actions(probe.unwrapped, int(factory.wrappers["max_actions"]))
            if discrete
            else None
        )
    finally:
        probe.close()
    kwargs = dict(factory.overrides)
    if factory.scenario is not None:
        kwargs["scenario"] = factory.scenario
    venv = gym.make_vec(
        factory.env_id,
        n_envs,
        vectorization_mode="vector_entry_point",
        autoreset_mode=AutoresetMode.SAME_STEP,
        **kwargs,
    )
    if discrete:
        venv = FlatVectorEnv(venv, joint=joint)
    return SB3VecEnv(venv)


def vec_env(factories: Sequence[EnvFactory], kind: str) -> Any:
    """The training ``VecEnv``: environment ``i`` built by ``factories[i]``. One scenario for
    all (one distinct factory) may use the id's native vector env; a mixture of scenarios
    runs single environments.

    Raises:
        ValueError: ``kind`` is ``native`` and there is no native vector env for these
            environments.
    """
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    n_envs = len(factories)
    mixed = len({(f.scenario, repr(sorted(f.overrides.items()))) for f in factories}) > 1
    if kind in ("auto", "native"):
        venv = None if mixed else native_vec_env(factories[0], n_envs)
        if venv is not None:
            return venv
        if kind == "native":
            why = "a mixture of scenarios (train.scenarios)" if mixed else "these wrappers"
            raise ValueError(
                f"train.vec_env=native: {factories[0].env_id} has no native vector env for "
                f"{why}; use auto, dummy or subproc"
            )
        kind = "subproc" if n_envs > 1 and (os.cpu_count() or 1) > 1 else "dummy"
    if kind == "subproc" and n_envs > 1:
        return SubprocVecEnv(list(factories))
    return DummyVecEnv(list(factories))


def close_vec_env(venv: Any, interrupted: bool) -> None:
    """Close the vector environment. After Ctrl-C, ``SubprocVecEnv`` workers have had the
    SIGINT too and are gone, so talking to them fails (EOFError, BrokenPipeError); that must
    not mask the KeyboardInterrupt. Leftover workers are then stopped directly."""
    try:
        venv.close()
    except (EOFError, BrokenPipeError, ConnectionResetError):
        if not interrupted:
            raise
        for process in getattr(venv, "processes", ()):
            process.join(timeout=1)
            if process.is_alive():
                process.terminate()
                process.join(timeout=1)
        venv.closed = True


def training_scenarios(cfg: Mapping[str, Any]) -> list[tuple[str | None, dict[str, Any]]]:
    """``[(scenario, overrides), ...]``: the run's own, then ``train.scenarios``, each with
    the run's overrides (``--set``) under its own."""
    base = dict(cfg["overrides"])
    out: list[tuple[str | None, dict[str, Any]]] = [(cfg["scenario"], base)]
    for item in cfg["hyperparams"]["train"].get("scenarios") or []:
        if isinstance(item, str):
            out.append((item, dict(base)))
        else:
            out.append((item["scenario"], {**base, **dict(item.get("overrides") or {})}))
    return out


def check_mixture(cfg: Mapping[str, Any], probe: gym.Env, mixture: Sequence[Any]) -> None:
    """Every scenario of a mixture builds, and gives the spaces of the run's own (``probe``)
    or can be seen through them (:class:`edgegym.agents.policies.tenants.Aligned`).

    Raises:
        ConfigError: Too few environments for the scenarios, or a scenario whose spaces
            differ otherwise.
    """
    from edgegym.agents.policies.tenants import Aligned

    wrappers = cfg["hyperparams"]["wrappers"]
    n_envs = int(cfg["hyperparams"]["train"]["n_envs"])
    alone = "or --hp 'train.scenarios=[]' to train on the run's scenario alone"
    if len(mixture) > n_envs:
        raise ConfigError(
            f"train.scenarios: {len(mixture)} scenarios need train.n_envs >= {len(mixture)} "
            f"(one environment per scenario at least), got {n_envs}: pass --n-envs "
            f"{len(mixture)} (n_envs= in Python), {alone}"
        )
    for j, (scenario, overrides) in enumerate(mixture[1:]):
        try:
            env = wrap(make_env(cfg["env_id"], scenario, overrides), wrappers)
        except ValueError as exc:  # a ScenarioError: the run's --set does not fit it
            raise ConfigError(
                f"train.scenarios[{j}] ({scenario}) with the run's overrides does not build "
                f"({exc}); drop it from the mixture, {alone}"
            ) from None
        try:
            diff = space_difference(env, probe)
            if diff is None:
                continue
            try:
                Aligned(env, probe)
            except (ValueError, AttributeError) as exc:
                what, have, want = diff
                raise ConfigError(
                    f"train.scenarios[{j}] ({scenario}, overrides {overrides}): its {what} "
                    f"{have} differs from {want} of the run's scenario ({cfg['scenario']}) "
                    f"({exc}); every scenario of a mixture needs the same spaces (pad the "
                    "streams with max_streams; a pooled policy's catalogue may differ in its "
                    f"configurations), {alone}"
                ) from None
        finally:
            env.close()


__all__ = [
    "EnvFactory",
    "check_mixture",
    "close_vec_env",
    "native_vec_env",
    "training_scenarios",
    "vec_env",
    "wrap",
    "wrap_like",
]

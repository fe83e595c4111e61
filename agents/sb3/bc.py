"""Behaviour cloning from a published scheduler: a strong start for PPO.

:func:`collect` lets a teacher (a baseline spec: ``thief``, ``etf``, ``mrs``, ...) play whole
episodes of each training scenario and keeps, per decision, the observation the model reads,
the environment's action mask, the teacher's action and the discounted return from there on.
:func:`clone` then fits the model's policy to those actions (their log-likelihood under the
masked distribution) and its value head to the returns, in minibatches. PPO continues from
the cloned weights; the run's ``config.yaml`` records what was cloned and how well
(``bc``), and the leaderboard says so.

Used by ``edgegym train`` through the hyperparameter file's ``bc`` section
(:mod:`edgegym.agents.config`): :func:`strong_start` clones ``bc.teacher`` on every training
scenario before PPO starts (:func:`check_teacher` first, so a bad teacher fails before any
work).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

from edgegym.progress import progress_bar


@dataclass
class Demonstrations:
    """What the teacher did: per decision, the model's observation, mask, action and return."""

    observations: list[Any]
    masks: np.ndarray | None
    actions: np.ndarray
    returns: np.ndarray
    episode_returns: list[float]
    #: Per decision: the teacher's action differs from its previous one in the episode (the
    #: first decision of an episode counts as a change).
    changes: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.actions)


def _stack(items: Sequence[Any]) -> Any:
    if isinstance(items[0], Mapping):
        return {key: np.stack([item[key] for item in items]) for key in items[0]}
    return np.stack(items)


def collect(
    make_env: Sequence[Callable[[], gym.Env]],
    teacher: str,
    episodes: int,
    seed: int,
    gamma: float,
    observe: Callable[[Any], Any] | None = None,
    progress: bool = True,
    hint: bool = False,
) -> Demonstrations:
    """Let ``teacher`` play ``episodes`` episodes of each environment ``make_env[j]()``.

    Args:
        make_env: Builders of the raw environments (one per training scenario).
        teacher: A :func:`edgegym.baselines.make_policy` spec.
        episodes: Episodes per environment, seeds ``seed, seed + 1, ...``.
        seed: First episode seed.
        gamma: Discount of the returns the value head is fitted to.
        observe: The model's view of a raw observation (a flattener), or ``None``.
        progress: Show a progress bar (hidden when not on a terminal).
        hint: The environments are wrapped with ``teacher`` as their last ``Discrete`` action
            (``DiscreteActions(teacher=...)``): the teacher plays through that index, which is
            every decision's label.

    Raises:
        ValueError: The teacher is unknown for the family, or took an action its environment
            masks out (cloning it would teach an action the model can never take).
    """
    rec = _Recorder()
    bar = progress_bar(len(make_env) * episodes, f"bc: {teacher} plays", "episode", progress)
    for build in make_env:
        env = build()
        try:
            policy = _teacher_policy(env, teacher, hint)
            masked = hasattr(env.unwrapped, "action_masks")
            for k in range(episodes):
                rewards = _play(env, policy, seed + k, masked, observe, teacher, rec)
                rec.returns.extend(_returns_to_go(rewards, gamma).tolist())
                rec.episode_returns.append(float(sum(rewards)))
                bar.update()
        finally:
            env.close()
    bar.close()
    return Demonstrations(
        observations=rec.observations,
        masks=np.stack(rec.masks) if rec.masks else None,
        actions=np.stack(rec.actions),
        returns=np.asarray(rec.returns, dtype=np.float32),
        episode_returns=rec.episode_returns,
        changes=np.asarray(rec.changes, dtype=bool),
    )


@dataclass
class _Recorder:
    """The demonstrations as they are collected, one entry per decision (per episode for
    ``episode_returns``)."""

    observations: list[Any] = field(default_factory=list)
    masks: list[np.ndarray] = field(default_factory=list)
    actions: list[np.ndarray] = field(default_factory=list)
    returns: list[float] = field(default_factory=list)
    changes: list[bool] = field(default_factory=list)
    episode_returns: list[float] = field(default_factory=list)


def _teacher_policy(env: gym.Env, teacher: str, hint: bool) -> Any:
    """The teacher on ``env``: the baseline itself, or (``hint``) the hint action that plays
    it through :class:`DiscreteActions`."""
    from edgegym.baselines import make_policy

    if hint:
        hinted = env.get_wrapper_attr("hint")
        if hinted is None or hinted.spec != teacher:
            raise ValueError(f"bc: the environment has no {teacher!r} hint action")
        return _HintPolicy(int(env.action_space.n) - 1)
    return make_policy(teacher, env)


def _play(
    env: gym.Env,
    policy: Any,
    seed: int,
    masked: bool,
    observe: Callable[[Any], Any] | None,
    teacher: str,
    rec: _Recorder,
) -> list[float]:
    """One episode of the teacher, each decision recorded in ``rec``; its rewards."""
    obs, _ = env.reset(seed=seed)
    policy.reset(seed)
    rewards: list[float] = []
    done = False
    last = None
    while not done:
        action, _ = policy.predict(obs, deterministic=True)
        action = np.asarray(action, dtype=np.int64)
        rec.changes.append(last is None or not np.array_equal(action, last))
        last = action
        if masked:
            mask = np.asarray(env.get_wrapper_attr("action_masks")(), dtype=bool)
            _check_in_mask(action, mask, env.action_space, teacher)
            rec.masks.append(mask)
        rec.observations.append(observe(obs) if observe is not None else obs)
        rec.actions.append(action)
        obs, reward, terminated, truncated, _ = env.step(action)
        rewards.append(float(reward))
        done = terminated or truncated
    return rewards


def _returns_to_go(rewards: list[float], gamma: float) -> np.ndarray:
    """The discounted return from each decision of an episode on."""
    togo = np.zeros(len(rewards))
    acc = 0.0
    for i in range(len(rewards) - 1, -1, -1):
        acc = rewards[i] + gamma * acc
        togo[i] = acc
    return togo


class _HintPolicy:
    """Always the hint index (the teacher's decision through :class:`DiscreteActions`)."""

    def __init__(self, index: int) -> None:
        self.index = np.int64(index)

    def reset(self, seed: int | None = None) -> None:
        """Nothing to reset."""

    def predict(self, observation: Any, deterministic: bool = True) -> tuple[np.ndarray, None]:
        """``(hint index, None)``."""
        return np.asarray(self.index), None


def _check_in_mask(action: np.ndarray, mask: np.ndarray, space: gym.Space, teacher: str) -> None:
    if isinstance(space, gym.spaces.Discrete):
        ok = bool(mask[int(action)])
    else:
        offsets = np.concatenate([[0], np.cumsum(space.nvec)[:-1]])
        ok = bool(mask[offsets + action.reshape(-1)].all())
    if not ok:
        raise ValueError(
            f"bc: the teacher {teacher!r} took an action its environment masks out ({action}); "
            "it cannot be cloned"
        )


def clone(
    model: Any,
    demos: Demonstrations,
    epochs: int,
    batch_size: int,
    learning_rate: float,
    vf_coef: float = 0.5,
    seed: int = 0,
    progress: bool = True,
    balance: bool = False,
) -> dict[str, Any]:
    """Fit ``model.policy`` to the demonstrations; returns what was reached.

    The loss of a minibatch is the mean negative log-likelihood of the teacher's actions under
    the masked policy plus ``vf_coef`` times the mean squared error of the value; with
    ``balance``, the decisions where the teacher changes its action and those where it repeats
    it weigh half the log-likelihood each. Returns ``{"decisions", "epochs", "balance",
    "nll", "agreement", "changes", "agreement_on_changes", "value_rmse", "wall_s"}``:
    ``agreement`` is
    the fraction of decisions whose greedy (masked) action equals the teacher's in every
    entry, on the demonstrations themselves.
    """
    import torch

    policy = model.policy
    policy.set_training_mode(True)
    optimizer = torch.optim.Adam(policy.parameters(), lr=learning_rate)
    rng = np.random.default_rng(seed)
    n = len(demos)
    batch = _batcher(policy, demos)
    t0 = time.perf_counter()
    changed = demos.changes if demos.changes is not None else np.ones(n, dtype=bool)
    weights = torch.as_tensor(_weights(changed, balance), device=policy.device)

    bar = progress_bar(epochs, "bc: fit", "epoch", progress)
    nll = value_mse = float("nan")
    for _ in range(epochs):
        nll, value_mse = _epoch(policy, optimizer, batch, rng.permutation(n), batch_size,
                                weights, vf_coef)  # fmt: skip
        bar.update()
        bar.set_postfix_str(f"nll {nll:.3f}", refresh=False)
    bar.close()
    policy.set_training_mode(False)
    agree, agree_changes = _agreement(policy, batch, n, batch_size, changed)
    return {
        "decisions": n,
        "epochs": epochs,
        "balance": bool(balance),
        "nll": round(nll, 4),
        "agreement": round(agree / n, 4),
        "changes": int(changed.sum()),
        "agreement_on_changes": round(agree_changes / max(1, int(changed.sum())), 4),
        "value_rmse": round(float(np.sqrt(value_mse)), 4),
        "wall_s": round(time.perf_counter() - t0, 1),
    }


Batch = Callable[[np.ndarray], tuple[Any, Any, Any, Any]]


def _batcher(policy: Any, demos: Demonstrations) -> Batch:
    """``batch(idx)``: the demonstrations at ``idx`` as the policy's tensors (observations,
    actions, returns) and their masks."""
    import torch

    obs_all = _stack(demos.observations)

    def batch(idx: np.ndarray) -> tuple[Any, Any, Any, Any]:
        obs = {k: v[idx] for k, v in obs_all.items()} if isinstance(obs_all, dict) else obs_all[idx]
        obs_t, _ = policy.obs_to_tensor(obs)
        act = torch.as_tensor(demos.actions[idx], device=policy.device)
        ret = torch.as_tensor(demos.returns[idx], device=policy.device)
        masks = None if demos.masks is None else demos.masks[idx]
        return obs_t, act, ret, masks

    return batch


def _weights(changed: np.ndarray, balance: bool) -> np.ndarray:
    """Each decision's weight in the log-likelihood (all 1 unless ``balance``)."""
    n = len(changed)
    weight = np.ones(n, dtype=np.float32)
    if balance and 0 < changed.sum() < n:
        # Changes and repeats carry half the loss each (a scheduler that keeps its allocation
        # for most decisions would otherwise be cloned as one that never changes it).
        frac = changed.mean()
        weight = np.where(changed, 0.5 / frac, 0.5 / (1.0 - frac)).astype(np.float32)
    return weight


def _epoch(
    policy: Any,
    optimizer: Any,
    batch: Batch,
    order: np.ndarray,
    batch_size: int,
    weights: Any,
    vf_coef: float,
) -> tuple[float, float]:
    """One pass over the demonstrations in ``order``; the mean log-likelihood loss and value
    error of its minibatches."""
    import torch

    losses, errors = [], []
    for start in range(0, len(order), batch_size):
        idx = order[start : start + batch_size]
        obs_t, act, ret, masks = batch(idx)
        kwargs = {} if masks is None else {"action_masks": masks}
        values, log_prob, _ = policy.evaluate_actions(obs_t, act, **kwargs)
        policy_loss = -(weights[idx] * log_prob).mean()
        value_loss = torch.nn.functional.mse_loss(values.flatten(), ret)
        loss = policy_loss + vf_coef * value_loss
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(policy.parameters(), 0.5)
        optimizer.step()
        losses.append(policy_loss.item())
        errors.append(value_loss.item())
    return float(np.mean(losses)), float(np.mean(errors))


def _agreement(
    policy: Any, batch: Batch, n: int, batch_size: int, changed: np.ndarray
) -> tuple[int, int]:
    """Decisions whose greedy (masked) action is the teacher's, in all and among changes."""
    import torch

    agree = agree_changes = 0
    with torch.no_grad():
        for start in range(0, n, batch_size):
            idx = np.arange(start, min(n, start + batch_size))
            obs_t, act, _, masks = batch(idx)
            kwargs = {} if masks is None else {"action_masks": masks}
            dist = policy.get_distribution(obs_t, **kwargs)
            greedy = dist.get_actions(deterministic=True).reshape(act.shape)
            same = (greedy == act).reshape(len(idx), -1).all(dim=1).numpy()
            agree += int(same.sum())
            agree_changes += int(same[changed[idx]].sum())
    return agree, agree_changes


def check_teacher(cfg: Mapping[str, Any]) -> None:
    """A ``bc.teacher`` that does not build on the run's scenario fails before any work.

    Raises:
        ConfigError: The teacher is unknown for the family or cannot play the scenario.
    """
    from edgegym.agents.config import ConfigError
    from edgegym.baselines import make_policy
    from edgegym.evaluation import make_env

    env = make_env(cfg["env_id"], cfg["scenario"], cfg["overrides"])
    try:
        make_policy(str(cfg["hyperparams"]["bc"]["teacher"]), env)
    except ValueError as exc:
        raise ConfigError(f"bc.teacher: {exc}") from None
    finally:
        env.close()


def strong_start(
    model: Any,
    cfg: Mapping[str, Any],
    mixture: Sequence[tuple[str | None, dict[str, Any]]],
    progress: bool,
) -> dict[str, Any]:
    """Clone ``bc.teacher`` into ``model`` on every training scenario of ``mixture``;
    return the record ``config.yaml`` keeps under ``bc``."""
    from edgegym.agents.sb3.envs import EnvFactory
    from edgegym.evaluation import make_env
    from edgegym.wrappers import DictFlattener

    env_id = cfg["env_id"]
    hp = cfg["hyperparams"]
    bc = hp["bc"]
    # A hint teacher plays through its index of the wrapped environment; any other teacher
    # plays the raw one (its own action is the label).
    hint = bool(hp["wrappers"].get("teacher"))
    probe = make_env(env_id, *mixture[0])
    flatten = (
        not hint
        and bool(hp["wrappers"]["flatten_obs"])
        and isinstance(probe.observation_space, gym.spaces.Dict)
    )
    observe = DictFlattener(probe.observation_space) if flatten else None
    probe.close()

    def build(scenario: str | None, overrides: dict[str, Any]) -> gym.Env:
        if hint:  # the environments PPO trains on, in the run's own spaces
            return EnvFactory(env_id, scenario, overrides, hp["wrappers"], like=mixture[0])()
        return make_env(env_id, scenario, overrides)

    t0 = time.perf_counter()
    demos = collect(
        [lambda sc=sc, ov=ov: build(sc, ov) for sc, ov in mixture],
        str(bc["teacher"]),
        int(bc["episodes"]),
        int(bc["seed"]),
        float(hp["ppo"]["gamma"]),
        observe=observe,
        progress=progress,
        hint=hint,
    )
    fit = clone(
        model,
        demos,
        int(bc["epochs"]),
        int(bc["batch_size"]),
        float(bc["learning_rate"]),
        vf_coef=float(hp["ppo"]["vf_coef"]),
        seed=int(cfg["seed"]),
        progress=progress,
        balance=bool(bc["balance"]),
    )
    return {
        "teacher": bc["teacher"],
        "episodes_per_scenario": int(bc["episodes"]),
        "teacher_mean_return": round(float(np.mean(demos.episode_returns)), 4),
        **fit,
        "wall_s": round(time.perf_counter() - t0, 1),
    }


__all__ = ["Demonstrations", "check_teacher", "clone", "collect", "strong_start"]

"""Environment step throughput: edgegym against Gymnasium's ``CartPole-v1`` yardstick.

Actions are drawn in advance from a seeded ``action_space.sample()`` (random, and always valid
after the environment's deterministic projection), so that only ``step`` and ``reset`` are
timed. Each measurement runs a fixed number of steps, resetting whenever an episode ends; it is
repeated and the median taken.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field
from typing import Any

import gymnasium as gym

from benchmarks.common import median

EDGEGYM_ID = "edgegym/ContinualLearning-v0"
YARDSTICK_ID = "CartPole-v1"


@dataclass
class ThroughputResult:
    """Steps per second of one environment (median over repeats)."""

    env_id: str
    steps: int  # steps per repeat
    repeats: int
    steps_per_s: float  # median over repeats
    steps_per_s_all: list[float] = field(default_factory=list)  # one per repeat
    episodes: int = 0  # episodes finished in the median repeat
    sim_s_per_wall_s: float | None = None  # simulated seconds per wall second (edgegym only)

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form for JSON."""
        return asdict(self)


def _run(env: gym.Env, actions: list[Any], seed: int, sim_time: bool) -> tuple[float, int, float]:
    """Step through ``actions``; return (wall seconds, episodes finished, simulated seconds)."""
    step, reset = env.step, env.reset
    sim_s = 0.0
    episodes = 0
    t_prev = 0.0
    ep_seed = seed
    start = time.perf_counter()
    reset(seed=ep_seed)
    for action in actions:
        _, _, terminated, truncated, info = step(action)
        if sim_time:
            t_now = info["time_s"]
            sim_s += t_now - t_prev
            t_prev = t_now
        if terminated or truncated:
            episodes += 1
            ep_seed += 1
            reset(seed=ep_seed)
            t_prev = 0.0
    wall = time.perf_counter() - start
    return wall, episodes, sim_s


def measure_throughput(
    env_id: str,
    steps: int,
    repeats: int = 5,
    warmup: int = 200,
    seed: int = 0,
    sim_time: bool = False,
    **make_kwargs: Any,
) -> ThroughputResult:
    """Median steps per second of ``gymnasium.make(env_id, **make_kwargs)`` under random actions.

    Args:
        env_id: Registered environment id.
        steps: Steps per repeat (resets in between episodes are included in the time).
        repeats: Timed repeats; the median is reported.
        warmup: Untimed steps first (caches, first-step checker, allocator).
        seed: Seed of the action sampler and of the first episode.
        sim_time: Also measure simulated seconds per wall second from ``info["time_s"]``.
        **make_kwargs: Passed to ``gymnasium.make``.

    Returns:
        The :class:`ThroughputResult`.
    """
    env = gym.make(env_id, **make_kwargs)
    env.action_space.seed(seed)
    actions = [env.action_space.sample() for _ in range(steps)]
    _run(env, actions[: max(1, min(warmup, steps))], seed, sim_time)
    rates, eps, sims = [], [], []
    for r in range(repeats):
        wall, episodes, sim_s = _run(env, actions, seed + 1000 * (r + 1), sim_time)
        rates.append(steps / wall)
        eps.append(episodes)
        sims.append(sim_s / wall)
    env.close()
    mid = sorted(range(repeats), key=rates.__getitem__)[repeats // 2]
    return ThroughputResult(
        env_id=env_id,
        steps=steps,
        repeats=repeats,
        steps_per_s=median(rates),
        steps_per_s_all=rates,
        episodes=eps[mid],
        sim_s_per_wall_s=median(sims) if sim_time else None,
    )


def compare(steps: int, yardstick_steps: int, repeats: int, warmup: int) -> dict[str, Any]:
    """edgegym (default scenario) and CartPole-v1 in this process, and their ratio."""
    edge = measure_throughput(EDGEGYM_ID, steps, repeats, warmup, sim_time=True)
    pole = measure_throughput(YARDSTICK_ID, yardstick_steps, repeats, warmup)
    return {
        "edgegym": edge.to_dict(),
        "cartpole": pole.to_dict(),
        "ratio_edgegym_over_cartpole": edge.steps_per_s / pole.steps_per_s,
    }

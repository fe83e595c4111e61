"""``edgegym/DAGOffload-v0``'s native vector env beyond the generic check in test_vector.py: the
family's own ``info`` entries and its reward weights (theta weights the accuracy term)."""

from __future__ import annotations

import numpy as np

from edgegym.envs.dag import DAGOffloadEnv
from edgegym.envs.dag.vector import DAGOffloadVectorEnv
from edgegym.envs.vector import env_info


def _random(rng: np.random.Generator, nvec: np.ndarray, n: int) -> np.ndarray:
    return rng.integers(0, nvec, size=(n, nvec.size))


def test_vector_info_and_theta_weighted_rewards_equal_single_envs() -> None:
    kwargs = {"requests": 12, "theta": 3.0, "objective.energy": 0.5, "count": 3}
    n = 3
    vec = DAGOffloadVectorEnv(num_envs=n, **kwargs)
    assert vec.reward_weights == {"completion": 1.0, "accuracy": 3.0, "energy": 0.5}
    singles = [DAGOffloadEnv(**kwargs) for _ in range(n)]
    _, info = vec.reset(seed=5)
    for i, env in enumerate(singles):
        _, inf = env.reset(seed=5 + i)
        assert info["time_s"][i] == inf["time_s"]
    rng = np.random.default_rng(0)
    alive = np.ones(n, dtype=bool)
    kinds = set()
    while alive.any():
        # Unmasked random actions: the projection must agree too.
        actions = _random(rng, vec.single_action_space.nvec, n)
        _, rew, term, _, info = vec.step(actions)
        for i, env in enumerate(singles):
            if not alive[i]:
                continue
            _, r, t, _, inf = env.step(actions[i])
            assert rew[i] == r and term[i] == t
            got = env_info(info, i)
            for key in ("epoch", "request", "time_s", "node", "server", "energy_j"):
                if key in inf:
                    assert got[key] == inf[key], key
            assert list(got["utilisation"]) == inf["utilisation"]
            for key in ("accuracy", "completion_s", "objective"):
                if key in inf:
                    assert got[key] == inf[key], key
                else:
                    assert np.isnan(got[key]), key
            assert list(got["retrained"]) == inf.get("retrained", [])
            kinds.add(inf["epoch"])
            if t:
                alive[i] = False
                assert got["episode_metrics"] == inf["episode_metrics"]
                assert len(env.records) == 12
    assert kinds == {"admit", "place"}

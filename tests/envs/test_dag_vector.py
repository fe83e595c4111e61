"""``edgegym/DAGOffload-v0``'s native vector env beyond the generic check in test_vector.py: the
family's own ``info`` entries and its reward weights (theta weights the accuracy term), and the
batched paths of the array dynamics (N envs) against the single env's batch of one over long
episodes, several episodes per env (both autoreset modes) and growing array widths. The single
env against the object oracle: ``test_dag_reference.py``."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode
from test_vector import _row, _same, masked_random  # same folder (pytest prepends it)

from edgegym.core.vector import env_info
from edgegym.families.dag import DAGOffloadEnv
from edgegym.families.dag.vector import DAGOffloadVectorEnv


def _random(rng: np.random.Generator, nvec: np.ndarray, n: int) -> np.ndarray:
    return rng.integers(0, nvec, size=(n, nvec.size))


@pytest.mark.parametrize("n", [1, 3])  # 1: a vector env of one runs the batch-of-one paths too
def test_vector_info_and_theta_weighted_rewards_equal_single_envs(n: int) -> None:
    kwargs = {"requests": 12, "theta": 3.0, "objective.energy": 0.5, "count": 3}
    vec = DAGOffloadVectorEnv(num_envs=n, **kwargs)
    assert vec.params.term_weights == {"completion": 1.0, "accuracy": 3.0, "energy": 0.5}
    singles = [DAGOffloadEnv(record_timeline=True, **kwargs) for _ in range(n)]
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


@pytest.mark.parametrize("mode", [AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP])
def test_vector_env_equals_single_envs_across_episodes_while_its_arrays_grow(mode) -> None:
    """Tiny starting widths (4 breakpoints, 1 request slot) make the arrays grow many times,
    and short, busy episodes end at different steps, so sub-batches are stepped and fresh envs
    written back while they do; every env still steps exactly as a single env that resets
    (unseeded, as the vector env does) when its episode ends."""
    kwargs = {"requests": 14, "duration_s": 4.0, "count": 3}
    n = 3
    vec = DAGOffloadVectorEnv(num_envs=n, autoreset_mode=mode, **kwargs)
    vec.dynamics.breakpoints, vec.dynamics.slots = 4, 1
    singles = [DAGOffloadEnv(**kwargs) for _ in range(n)]
    obs, _ = vec.reset(seed=11)
    for i, env in enumerate(singles):
        o, _ = env.reset(seed=11 + i)
        assert _same(_row(obs, i), o)
    rng = np.random.default_rng(1)
    episodes = np.zeros(n, dtype=int)
    waiting = np.zeros(n, dtype=bool)  # NextStep: ended, reset by the vector env's next step
    while episodes.min() < 3:
        actions = masked_random(rng, vec.action_masks(), vec.single_action_space)
        obs, rew, term, _, info = vec.step(actions)
        for i, env in enumerate(singles):
            if waiting[i]:
                o, inf = env.reset()
                assert _same(_row(obs, i), o) and rew[i] == 0.0 and not term[i]
                np.testing.assert_array_equal(info["action_mask"][i], inf["action_mask"])
                waiting[i] = False
                continue
            o, r, t, _, inf = env.step(actions[i])
            assert rew[i] == r and term[i] == t
            # SameStep: an env that ended has its step entries in `final_info` only; the others
            # keep theirs in `info`.
            got = env_info(info["final_info"] if t and "final_info" in info else info, i)
            assert got["energy_j"] == inf["energy_j"] and got["epoch"] == inf["epoch"]
            assert got["reward_terms"] == inf["reward_terms"]
            if not t:
                assert _same(_row(obs, i), o)
                np.testing.assert_array_equal(info["action_mask"][i], inf["action_mask"])
                continue
            episodes[i] += 1
            assert got["episode_metrics"] == inf["episode_metrics"]
            if mode == AutoresetMode.SAME_STEP:
                assert _same(info["final_obs"][i], o)
                o, inf = env.reset()
                assert _same(_row(obs, i), o)
                np.testing.assert_array_equal(info["action_mask"][i], inf["action_mask"])
            else:
                assert _same(_row(obs, i), o)
                waiting[i] = True
    # The widths grew from the tiny start (and the dynamics remembers them for fresh envs).
    assert vec.state.timelines.width > 4 and vec.state.requests.width > 1
    assert (vec.dynamics.breakpoints, vec.dynamics.slots) == (
        vec.state.timelines.width,
        vec.state.requests.width,
    )
    vec.close()


@pytest.mark.parametrize(
    "kwargs",
    [
        {"requests": 150},  # deep timelines, many pending requests
        {"requests": 40, "max_nodes": 12, "count": 2},  # more node rows than extended nodes
    ],
)
def test_long_episodes_equal_single_envs(kwargs) -> None:
    """Every observation, reward and mask equals the single envs'."""
    n = 4
    vec = DAGOffloadVectorEnv(num_envs=n, **kwargs)
    singles = [DAGOffloadEnv(**kwargs) for _ in range(n)]
    obs, _ = vec.reset(seed=3)
    for i, env in enumerate(singles):
        env.reset(seed=3 + i)
    rng = np.random.default_rng(3)
    alive = np.ones(n, dtype=bool)
    longest = 0
    while alive.any():
        actions = masked_random(rng, vec.action_masks(), vec.single_action_space)
        obs, rew, term, _, info = vec.step(actions)
        longest = max(longest, int(vec.state.timelines.size.max()))
        for i in np.flatnonzero(alive):
            o, r, t, _, inf = singles[i].step(actions[i])
            assert _same(_row(obs, i), o) and rew[i] == r and term[i] == t
            np.testing.assert_array_equal(info["action_mask"][i], inf["action_mask"])
            alive[i] = not t
    assert longest > 8  # earliest_starts' long scans ran


def test_a_step_never_changes_the_array_widths() -> None:
    """observation() widens the state for the next step, so a step (which a vector env may
    run on a sub-batch and write back) never has to: here from 4 breakpoints and 1 slot."""
    vec = DAGOffloadVectorEnv(num_envs=4, requests=40, duration_s=4.0)
    dyn, p = vec.dynamics, vec.params
    dyn.breakpoints, dyn.slots = 4, 1
    state = dyn.initial(p, [np.random.default_rng(s) for s in range(4)])
    rng = np.random.default_rng(0)
    grew = 0
    while not dyn.done(p, state).any():
        before = (state.timelines.width, state.requests.width)
        dyn.observation(p, state)
        widths = (state.timelines.width, state.requests.width)
        grew += widths != before
        actions = masked_random(rng, dyn.mask(p, state), vec.single_action_space)
        state, _ = dyn.step(p, state, actions)
        assert (state.timelines.width, state.requests.width) == widths
    assert grew >= 3

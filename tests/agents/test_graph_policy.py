"""The DAG graph policy (edgegym.agents.policies.graph): one policy on 5 and 3 servers
(rebind), server permutation equivariance, the adjacency it passes messages along, cloning
MRS, a small learning sanity check, save/load and seeded determinism."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from sb3_contrib import MaskablePPO

import edgegym  # noqa: F401  (registers the ids)
from edgegym.agents.policies import SIZE_FREE, size_free_class
from edgegym.agents.policies.graph import GraphExtractor, GraphPolicy
from edgegym.agents.sb3.bc import clone, collect
from edgegym.baselines import make_policy

DAG = "edgegym/DAGOffload-v0"
SMALL = {"requests": 30}


@pytest.fixture(autouse=True)
def _one_thread():
    """One torch thread: small models, and several threads on a busy machine are slow."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def _env(scenario="srs-edge-5apps", **kw):
    return gym.make(DAG, scenario=scenario, **{**SMALL, **kw})


def _model(env, seed=0, hidden=16, rounds=2, **ppo):
    kwargs = GraphPolicy.kwargs_for(env, {"net_arch": [hidden] * (rounds + 1)})
    ppo = {"n_steps": 64, "batch_size": 32, **ppo}
    return MaskablePPO(GraphPolicy, env, policy_kwargs=kwargs, seed=seed, **ppo)


def _tensor(policy, obs):
    return policy.obs_to_tensor(obs)[0]


def _logits(policy, obs):
    """Per-entry logits (list of arrays) of one observation."""
    with torch.no_grad():
        dist = policy.get_distribution(_tensor(policy, obs))
        return [d.logits[0].numpy() for d in dist.distributions]


def _place_obs(env, seed=0, skip=6):
    """An observation at a place epoch, a few epochs into an episode played by MRS."""
    mrs = make_policy("mrs", env)
    obs, _ = env.reset(seed=seed)
    n = 0
    while True:
        if obs["globals"][3] < 0.5:
            n += 1
            if n > skip:
                return obs
        obs, *_ = env.step(mrs.predict(obs)[0])


def _play(policy, env, seed, steps=None):
    """Play (greedy) and check every action is inside the env's masks; the return."""
    obs, _ = env.reset(seed=seed)
    nvec = env.action_space.nvec
    offsets = np.concatenate([[0], np.cumsum(nvec)[:-1]])
    total, done, k = 0.0, False, 0
    while not done and (steps is None or k < steps):
        mask = env.unwrapped.action_masks()
        action, _ = policy.predict(obs, action_masks=mask, deterministic=True)
        assert action.shape == nvec.shape
        assert mask[offsets + action].all(), (action, mask)
        obs, reward, terminated, truncated, _ = env.step(action)
        total += reward
        done = terminated or truncated
        k += 1
    return total


def test_kwargs_registry_and_bad_envs():
    assert size_free_class("GraphPolicy") is GraphPolicy and "GraphPolicy" in SIZE_FREE
    env = _env()
    kw = GraphPolicy.kwargs_for(env, {"net_arch": [32, 32], "ortho_init": False})
    assert kw == {
        "hidden": 32,
        "rounds": 1,
        "n_node_features": 13,
        "n_server_features": 5,
        "n_globals": 5,
        "n_options": 3,
        "ortho_init": False,
    }
    with pytest.raises(ValueError, match="dag family"):
        GraphPolicy.kwargs_for(gym.make("edgegym/EnergyFairShare-v0"), {})
    with pytest.raises(ValueError, match="Dict observation"):
        GraphPolicy.kwargs_for(gym.make("edgegym/DAGOffload-Flat-v0", **SMALL), {})
    with pytest.raises(ValueError, match="same width"):
        GraphPolicy.kwargs_for(env, {"net_arch": [32, 16]})
    with pytest.raises(ValueError, match="n_options=4"):
        GraphPolicy(env.observation_space, env.action_space, lambda _: 0.0, n_options=4)


def test_adjacency_follows_the_masked_edges():
    env = _env()
    ext = GraphExtractor(env.observation_space, hidden=4, rounds=1)
    obs = {k: torch.as_tensor(v[None]) for k, v in env.observation_space.sample().items()}
    nodes = torch.zeros(1, 6, 13)
    nodes[0, :4, 0] = 1.0  # 4 valid nodes
    edges = torch.full((1, 8, 2), -1.0)
    edges[0, :4] = torch.tensor([[0, 1], [0, 2], [1, 3], [2, 5]])  # 2 -> 5: 5 is padding
    mask = torch.zeros(1, 8)
    mask[0, :4] = 1.0
    obs.update(nodes=nodes, edges=edges, edge_mask=mask)
    adj = ext.adjacency(obs)[0]
    want = torch.zeros(6, 6)
    want[1, 0] = want[2, 0] = want[3, 1] = 1.0  # A[dst, src]
    torch.testing.assert_close(adj, want)
    mask[0, 2] = 0.0  # drop 1 -> 3
    want[3, 1] = 0.0
    torch.testing.assert_close(ext.adjacency(obs)[0], want)


def test_one_policy_acts_on_five_and_three_servers():
    five, three = _env(), _env("srs-edge-3servers")
    model = _model(five)
    model.learn(64)
    assert model.action_space.nvec[0] == 5 and three.action_space.nvec[0] == 3
    _play(model.policy, five, seed=0, steps=150)
    rebound = model.policy.rebind(three)
    assert not rebound.training
    _play(rebound, three, seed=0, steps=150)
    obs = _place_obs(three)
    logits = _logits(rebound, obs)
    assert logits[0].shape == (3,) and len(logits) == 1 + 6
    assert all(x.shape == (4,) for x in logits[1:])
    # rebinding back gives the original policy's outputs
    obs5 = _place_obs(five)
    back = rebound.rebind(five)
    for a, b in zip(_logits(back, obs5), _logits(model.policy, obs5), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    with pytest.raises(ValueError, match="retraining configurations"):
        bad = gym.spaces.MultiDiscrete([3] + [3] * 6)
        rebound.rebind(three, bad)


def test_permuting_servers_permutes_their_logits():
    env = _env()
    policy = _model(env, hidden=32).policy
    for p in policy.action_net.server_net.parameters():  # leave the near-zero start
        torch.nn.init.normal_(p, std=0.5)
    obs = _place_obs(env)
    perm = np.array([3, 0, 4, 1, 2])
    swapped = dict(obs, servers=obs["servers"][perm])
    a, b = _logits(policy, obs), _logits(policy, swapped)
    np.testing.assert_allclose(b[0], a[0][perm], rtol=1e-5, atol=1e-6)
    assert np.ptp(a[0]) > 1e-3  # the servers differ, so the test can fail
    for x, y in zip(a[1:], b[1:], strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-5, atol=1e-6)
    with torch.no_grad():
        va = policy.predict_values(_tensor(policy, obs))
        vb = policy.predict_values(_tensor(policy, swapped))
    torch.testing.assert_close(va, vb)


def test_cloning_mrs_matches_its_choices():
    """Per-server scoring can express MRS's earliest-finish placements: a short clone agrees
    with most of its decisions, which the unfitted policy does not."""
    env = _env()
    model = _model(env, hidden=32)
    demos = collect([_env], "mrs", 2, seed=0, gamma=0.9, progress=False)
    before = clone(model, demos, 0, 64, 1e-3, progress=False)
    after = clone(model, demos, 15, 64, 3e-3, progress=False)
    assert before["agreement"] < 0.5
    assert after["agreement"] > 0.9


def test_ppo_improves_over_random():
    """2k PPO steps on a 30-request scenario: the greedy policy beats its start and random."""
    seeds = (100, 101, 102)
    model = _model(_env(), hidden=32, n_steps=512, batch_size=128, learning_rate=1e-3, gamma=0.9)
    start = np.mean([_play(model.policy, _env(), s) for s in seeds])
    model.learn(2048)
    trained = np.mean([_play(model.policy, _env(), s) for s in seeds])
    rand_returns = []
    for s in seeds:
        env = _env()
        rand = make_policy("random", env)  # a policy reads the masks of the env it is bound to
        obs, _ = env.reset(seed=s)
        rand.reset(s)
        total, done = 0.0, False
        while not done:
            obs, r, te, tr, _ = env.step(rand.predict(obs)[0])
            total, done = total + r, te or tr
        rand_returns.append(total)
    assert trained > start + 5.0  # about -111 -> -85 (seed 0)
    assert trained > np.mean(rand_returns) + 2.0  # random about -91


def test_save_load_and_seeded_training_are_reproducible(tmp_path):
    a = _model(_env(), seed=5)
    a.learn(128)
    b = _model(_env(), seed=5)
    b.learn(128)
    for pa, pb in zip(a.policy.parameters(), b.policy.parameters(), strict=True):
        torch.testing.assert_close(pa, pb)
    untrained = _model(_env(), seed=5)  # the same start: learn() moved the weights from it
    moved = zip(a.policy.parameters(), untrained.policy.parameters(), strict=True)
    assert any(not torch.equal(pa, pu) for pa, pu in moved)
    a.save(tmp_path / "m.zip")
    loaded = MaskablePPO.load(tmp_path / "m.zip")
    assert isinstance(loaded.policy, GraphPolicy)
    env = _env()
    obs = _place_obs(env, seed=2)
    for x, y in zip(_logits(loaded.policy, obs), _logits(a.policy, obs), strict=True):
        np.testing.assert_allclose(x, y, rtol=1e-6)
    mask = env.unwrapped.action_masks()
    act_a = a.predict(obs, action_masks=mask, deterministic=True)[0]
    act_l = loaded.predict(obs, action_masks=mask, deterministic=True)[0]
    np.testing.assert_array_equal(act_a, act_l)

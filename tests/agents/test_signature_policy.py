"""The MIG signature scorer (edgegym.agents.policies.signatures): its signature table, tenant
permutation equivariance, one policy on 2 and 3 tenants, cloning a baseline, save/load."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
import yaml
from sb3_contrib import MaskablePPO

import edgegym  # noqa: F401  (registers the ids)
from edgegym.agents.policies import SIZE_FREE, size_free_class
from edgegym.agents.policies.signatures import SIG_FEATURES, SignaturePolicy, signature_table
from edgegym.agents.sb3.bc import clone, collect
from edgegym.baselines import make_policy
from edgegym.hardware.migalloc import catalogue
from edgegym.scenarios import resolve

MIG = "edgegym/MIGReconfig-v0"


def _model(env, seed=0, hidden=16):
    kwargs = SignaturePolicy.kwargs_for(env, {"net_arch": [hidden]})
    return MaskablePPO(SignaturePolicy, env, policy_kwargs=kwargs, n_steps=64, seed=seed)


def _logits(policy, obs):
    with torch.no_grad():
        t = torch.as_tensor(np.asarray(obs, dtype=np.float32)[None])
        return policy.get_distribution(t).distribution.logits[0].numpy()


def test_signature_table_describes_what_each_tenant_gets():
    cat = catalogue("A100-40GB", 2)
    table = signature_table("A100-40GB", 2)
    assert table.shape == (len(cat), 2, SIG_FEATURES)
    s = cat.index(((4, 2), (1,), (), ()))  # I0 = 4g + 2g, I1 = 1g, no retraining
    # tenant 0: inference one 2g and one 4g (counts / 3), 6 GPCs, 2 instances; no retraining
    np.testing.assert_allclose(table[s, 0, :7], [0, 1 / 3, 0, 1 / 3, 0, 6 / 7, 2 / 7])
    np.testing.assert_allclose(table[s, 0, 7:14], 0.0)
    np.testing.assert_allclose(table[s, 1, :7], [1 / 3, 0, 0, 0, 0, 1 / 7, 1 / 7])
    np.testing.assert_allclose(table[s, :, 14], 0.0)  # all 7 GPCs assigned
    s = cat.index(((1,), (1,), (3,), ()))  # tenant 0 retrains on a 3g instance
    np.testing.assert_allclose(table[s, 0, 7:14], [0, 0, 1 / 3, 0, 0, 3 / 7, 1 / 7])
    np.testing.assert_allclose(table[s, :, 14], 2 / 7)


def test_scores_permute_with_the_tenants():
    """Swapping the two tenants' features swaps the scores of mirrored signatures."""
    env = gym.make(MIG)
    policy = _model(env).policy
    obs, _ = env.reset(seed=3)
    for _ in range(5):
        obs, *_ = env.step(int(np.flatnonzero(env.unwrapped.action_masks())[-1]))
    per = 14
    swapped = np.concatenate([obs[per : 2 * per], obs[:per], obs[2 * per :]])
    a, b = _logits(policy, obs), _logits(policy, swapped)
    cat = catalogue("A100-40GB", 2)
    mirror = [cat.index((sig[1], sig[0], sig[3], sig[2])) for sig in cat.signatures]
    np.testing.assert_allclose(b[mirror], a, rtol=1e-5, atol=1e-6)
    assert not np.allclose(a, a[mirror])  # the tenants differ, so the test can fail


def _three_tenants(tmp_path):
    data = yaml.safe_load(resolve("migrator-w1").read_text())
    data["name"] = "migrator-w1-3tenants"
    data.pop("provenance", None)
    third = dict(data["tenants"][0], name="bert2")
    data["tenants"].append(third)
    path = tmp_path / "three.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_one_policy_scores_two_and_three_tenants(tmp_path):
    """Trained on 2 tenants (496 signatures), the same weights act on 3 (ppo:PATH rebinds)."""
    from edgegym.agents.sb3.train import train

    hp = ["policy=SignaturePolicy", "eval.freq=0", "checkpoint.freq=0", "train.n_envs=1"]
    hp += ["policy_kwargs.net_arch=[16]", "ppo.n_steps=64", "ppo.batch_size=32"]
    hp += ["wrappers.teacher=null", "bc.teacher=null"]  # the signatures alone
    out = tmp_path / "run"
    train(MIG, timesteps=64, out=out, hyperparams=hp, progress=False)
    env = gym.make(MIG, scenario=str(_three_tenants(tmp_path)))
    assert env.action_space.n > 496
    agent = make_policy(f"ppo:{out}", env)
    obs, _ = env.reset(seed=0)
    for _ in range(30):
        action, _ = agent.predict(obs)
        assert env.unwrapped.action_masks()[int(action)]
        obs, _, _, _, info = env.step(action)
        assert not info.get("projected")
    two = gym.make(MIG)
    rebound = agent.predictor
    base = rebound.rebind(two)
    obs2, _ = two.reset(seed=0)
    np.testing.assert_allclose(
        _logits(base, obs2), _logits(MaskablePPO.load(out / "model.zip").policy, obs2), rtol=1e-6
    )


def test_size_free_registry_and_bad_envs():
    assert size_free_class("SignaturePolicy") is SignaturePolicy
    assert set(SIZE_FREE) >= {"PerTenantPolicy", "PooledPolicy", "SignaturePolicy"}
    with pytest.raises(ValueError, match="mig family"):
        SignaturePolicy.kwargs_for(gym.make("edgegym/EnergyFairShare-v0"), {})
    env = gym.make(MIG)
    kwargs = SignaturePolicy.kwargs_for(env, {"net_arch": [8]})
    with pytest.raises(ValueError, match="496 signatures"):
        SignaturePolicy(env.observation_space, gym.spaces.Discrete(10), lambda _: 0.0, **kwargs)
    shares = gym.make(MIG, **{"mps.shares": 14, "preinit": False})
    with pytest.raises(ValueError, match="holds MPS shares"):
        SignaturePolicy.kwargs_for(shares, {})


def test_cloning_a_baseline_fits_its_choices():
    """The scorer can express a baseline's allocations: cloning static-half from one episode
    reaches most of its decisions, which the unfitted policy does not."""
    scenario = {"window_s": 40}
    model = _model(gym.make(MIG, **scenario), hidden=32)
    demos = collect(
        [lambda: gym.make(MIG, **scenario)], "static-half", 1, seed=0, gamma=0.95, progress=False
    )
    before = clone(model, demos, 0, 64, 1e-3, progress=False)
    after = clone(model, demos, 40, 64, 3e-3, progress=False)
    assert before["agreement"] < 0.5
    assert after["agreement"] > 0.9


def test_save_load_and_seeded_training_are_reproducible(tmp_path):
    env = gym.make(MIG, window_s=40)
    a = _model(env, seed=5)
    a.learn(64)
    b = _model(gym.make(MIG, window_s=40), seed=5)  # built and trained after a: same seed
    b.learn(64)
    for pa, pb in zip(a.policy.parameters(), b.policy.parameters(), strict=True):
        torch.testing.assert_close(pa, pb)
    untrained = _model(gym.make(MIG, window_s=40), seed=5)  # learn() moved the weights
    moved = zip(a.policy.parameters(), untrained.policy.parameters(), strict=True)
    assert any(not torch.equal(pa, pu) for pa, pu in moved)
    a.save(tmp_path / "m.zip")
    loaded = MaskablePPO.load(tmp_path / "m.zip")
    obs, _ = env.reset(seed=2)
    np.testing.assert_allclose(_logits(loaded.policy, obs), _logits(a.policy, obs), rtol=1e-6)

"""PerTenantPolicy (edgegym.agents.policies.tenants): permutation equivariance, weights
independent of the number of tenants, a tiny-budget learning sanity check, determinism and
save/load."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from sb3_contrib import MaskablePPO
from stable_baselines3.common.monitor import Monitor

import edgegym  # noqa: F401  (registers the ids)
from edgegym.agents.config import ConfigError, load_hyperparams
from edgegym.agents.policies.tenants import PerTenantPolicy, per_tenant_kwargs, tenant_view
from edgegym.agents.policy import PPOPolicy
from edgegym.evaluation import evaluate

ENERGY = ("edgegym/EnergyFairShare-v0", {"quanta": 20})
CFG = {
    "hyperparams": {
        "algo": "maskable_ppo",
        "wrappers": {"flatten_obs": False, "discrete_actions": False, "max_actions": 1024},
    }
}


def _model(env_id, overrides, seed=0, hidden=16):
    env = gym.make(env_id, **overrides)
    kwargs = per_tenant_kwargs(env, {"net_arch": [hidden]})
    torch.set_num_threads(1)
    return MaskablePPO(
        PerTenantPolicy, Monitor(env), policy_kwargs=kwargs, n_steps=256, batch_size=64,
        learning_rate=1e-3, gamma=0.9, seed=seed, verbose=0,
    )  # fmt: skip


def _heads(policy, obs):
    with torch.no_grad():
        obs_t, _ = policy.obs_to_tensor(obs)
        latent = policy.extract_features(obs_t)
        return policy.action_net(latent)[0].numpy(), float(policy.value_net(latent)[0, 0])


def test_views_of_the_continual_and_energy_families():
    cont = tenant_view(gym.make("edgegym/ContinualLearning-v0"))
    assert (cont.kind, cont.n_tenants, cont.per_tenant) == ("dict", 10, 45)
    assert cont.entries == (19, 12, 101, 101)
    energy = tenant_view(gym.make(ENERGY[0]))
    assert (energy.kind, energy.n_tenants, energy.per_tenant, energy.entries) == (
        "flat",
        8,
        9,
        (61,),
    )
    with pytest.raises(ValueError, match="continual and energy"):
        tenant_view(gym.make("edgegym/DAGOffload-v0"))
    with pytest.raises(ValueError, match="MultiDiscrete"):
        tenant_view(gym.make("edgegym/MIGReconfig-v0"))


def test_permuting_tenants_permutes_the_logits_and_keeps_the_value():
    model = _model("edgegym/ContinualLearning-v0", {"scenario": "ekya-table1"})
    env = gym.make("edgegym/ContinualLearning-v0", scenario="ekya-table1")
    obs, _ = env.reset(seed=3)
    obs["streams"][0] += 0.3  # make the two streams differ
    logits, value = _heads(model.policy, obs)
    swapped = {**obs, "streams": obs["streams"][::-1].copy()}
    swapped["stream_mask"] = obs["stream_mask"][::-1].copy()
    logits2, value2 = _heads(model.policy, swapped)
    per = len(logits) // 2
    assert not np.allclose(logits[:per], logits[per:])
    np.testing.assert_allclose(logits2, np.concatenate([logits[per:], logits[:per]]), atol=1e-5)
    assert value2 == pytest.approx(value, abs=1e-5)


def test_the_same_weights_act_on_any_number_of_tenants():
    """A 10-slot policy on 6 streams: the 6-row table alone gives the same per-stream logits
    and value as the 10-slot one with 4 masked slots holding anything."""
    model = _model("edgegym/ContinualLearning-v0", {})
    obs, _ = gym.make("edgegym/ContinualLearning-v0").reset(seed=0)
    padded = {k: torch.as_tensor(v)[None].float() for k, v in obs.items()}
    padded["stream_mask"][:, 6:] = 0.0
    padded["streams"][:, 6:] = torch.rand(1, 4, padded["streams"].shape[-1])
    six = {
        **padded,
        "streams": padded["streams"][:, :6],
        "stream_mask": padded["stream_mask"][:, :6],
    }
    with torch.no_grad():
        latent10 = model.policy.features_extractor(padded)
        latent6 = model.policy.features_extractor(six)
        logits10, logits6 = model.policy.action_net(latent10), model.policy.action_net(latent6)
        v10, v6 = model.policy.value_net(latent10), model.policy.value_net(latent6)
    per = sum(tenant_view(gym.make("edgegym/ContinualLearning-v0")).entries)
    assert logits6.shape == (1, 6 * per) and logits10.shape == (1, 10 * per)
    torch.testing.assert_close(logits6, logits10[:, : 6 * per])
    torch.testing.assert_close(v6, v10)


def test_tiny_budget_learns_is_deterministic_and_survives_save_load(tmp_path):
    env_id, overrides = ENERGY
    a = _model(env_id, overrides, hidden=32).learn(4096)
    b = _model(env_id, overrides, hidden=32).learn(4096)
    for pa, pb in zip(a.policy.parameters(), b.policy.parameters(), strict=True):
        assert torch.equal(pa, pb)
    a.save(tmp_path / "m.zip")
    loaded = MaskablePPO.load(tmp_path / "m.zip", device="cpu")
    assert isinstance(loaded.policy, PerTenantPolicy)
    res = evaluate(
        env_id,
        {
            "trained": lambda env: PPOPolicy(a, env, CFG),
            "loaded": lambda env: PPOPolicy(loaded, env, CFG),
            "untrained": lambda env: PPOPolicy(_model(env_id, overrides, hidden=32), env, CFG),
            "random": "random",
        },
        episodes=3,
        seed=100,
        overrides=overrides,
        progress=False,
    )
    ret = {r["policy"]: r["mean_return"] for r in res.results}
    assert ret["loaded"] == ret["trained"]
    assert ret["trained"] > ret["random"] and ret["trained"] > ret["untrained"]


def test_the_hyperparameter_file_checks_what_the_policy_needs():
    with pytest.raises(ConfigError, match="PerTenantPolicy reads the tenants"):
        load_hyperparams("energy", None, ["wrappers.discrete_actions=true"])
    per_tenant = ["policy=PerTenantPolicy", "wrappers.discrete_actions=false"]
    with pytest.raises(ConfigError, match=r"wrappers\.teacher"):  # the file's thief hint
        load_hyperparams("continual", None, per_tenant)
    per_tenant += ["wrappers.teacher=null", "bc.teacher=null"]
    hp = load_hyperparams("continual", None, per_tenant)
    assert hp["policy"] == "PerTenantPolicy"


def test_edgegym_train_writes_a_per_tenant_run_that_ppo_path_loads(tmp_path):
    from edgegym.agents.sb3.train import train
    from edgegym.baselines import make_policy

    out = tmp_path / "run"
    hp = ["policy=PerTenantPolicy", "wrappers.discrete_actions=false", "eval.freq=0"]
    hp += ["policy_kwargs.net_arch=[16]", "train.n_envs=1", "checkpoint.freq=0"]
    hp += ["train.scenarios=[]"]
    res = train(ENERGY[0], overrides=ENERGY[1], timesteps=256, out=out, hyperparams=hp,
                progress=False)  # fmt: skip
    assert res.timesteps >= 256
    env = gym.make(ENERGY[0], **ENERGY[1])
    policy = make_policy(f"ppo:{out}", env)
    assert isinstance(policy.model.policy, PerTenantPolicy)
    obs, _ = env.reset(seed=0)
    action, _ = policy.predict(obs)
    assert env.action_space.contains(np.asarray(action))

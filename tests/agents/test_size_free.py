"""One agent, many sizes (issue 16): the per-tenant and pooled policies rebound to other
numbers of tenants and GPUs (edgegym.agents.policies.tenants.rebind), the share grid resampled, and
training on a mixture of scenarios (train.scenarios)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
from sb3_contrib import MaskablePPO

import edgegym  # noqa: F401  (registers the ids)
from edgegym.agents.config import ConfigError, load_hyperparams
from edgegym.agents.policies.tenants import PooledPolicy, rebind, resample_matrix
from edgegym.agents.policy import PolicyLoadError
from edgegym.agents.sb3.train import train
from edgegym.baselines import make_policy

CONT = "edgegym/ContinualLearning-v0"
SMALL = {"windows": 2, "streams": 3}  # ekya-cityscapes, cut down


def test_resample_matrix_reads_the_same_fraction():
    np.testing.assert_array_equal(resample_matrix(5, 5), np.eye(5))
    m = resample_matrix(201, 101)  # shares at 2 GPUs from a head trained at 1 GPU
    logits = np.random.default_rng(0).normal(size=101)
    out = m @ logits
    np.testing.assert_allclose(out[::2], logits)  # value 2k = k on the 1-GPU grid
    np.testing.assert_allclose(out[1::2], (logits[:-1] + logits[1:]) / 2)
    np.testing.assert_allclose(m.sum(axis=1), 1.0)
    m = resample_matrix(3, 5)  # coarser grid: 0, 1/2 and 1 of the whole
    np.testing.assert_allclose(m @ np.arange(5.0), [0.0, 2.0, 4.0])


def _trained(tmp_path, policy, extra=()):
    hp = [f"policy={policy}", "eval.freq=0", "checkpoint.freq=0", "train.n_envs=1"]
    hp += ["train.scenarios=[]"]
    hp += ["policy_kwargs.net_arch=[16, 16]", "ppo.n_steps=64", *extra]
    if policy == "PerTenantPolicy":
        hp += ["wrappers.discrete_actions=false", "policy_kwargs.net_arch=[16]"]
        hp += ["wrappers.teacher=null", "bc.teacher=null"]
    out = tmp_path / policy
    train(CONT, overrides=SMALL, timesteps=64, out=out, hyperparams=hp, progress=False)
    return out


@pytest.mark.parametrize("policy", ["PerTenantPolicy", "PooledPolicy"])
def test_one_agent_acts_on_other_stream_and_gpu_counts(tmp_path, policy):
    """Trained on 3 streams at 1 GPU, it plays 5 streams at 2 GPUs through ppo:PATH (the
    evaluator's route), inside the masks."""
    out = _trained(tmp_path, policy)
    for overrides in ({"windows": 2, "streams": 5, "gpus": 2}, {"windows": 2, "streams": 2}):
        env = gym.make(CONT, **overrides)
        agent = make_policy(f"ppo:{out}", env)
        obs, _ = env.reset(seed=1)
        done = False
        while not done:
            action, _ = agent.predict(obs)
            mask = env.unwrapped.action_masks()
            md = np.asarray(action).reshape(-1)
            offsets = np.concatenate([[0], np.cumsum(env.action_space.nvec)[:-1]])
            assert mask[offsets + md].all()
            obs, _, terminated, truncated, _ = env.step(action)
            done = terminated or truncated
    # Another number of retraining configurations (ekya-table1: 2): the pooled policy reads
    # the missing ones as pruned and chooses among the catalogue actions of the same label
    # (test_pooled_policy_plays_another_configuration_count); the per-tenant policy, whose
    # heads have one logit per configuration, is refused with a message naming the file.
    if policy == "PerTenantPolicy":
        with pytest.raises(PolicyLoadError, match=r"cannot act here"):
            make_policy(f"ppo:{out}", gym.make(CONT, scenario="ekya-table1"))


def _play(agent, env, seed):
    """One episode of ``agent`` on ``env``: every action inside the masks; the return."""
    obs, _ = env.reset(seed=seed)
    agent.reset(seed)
    done, total = False, 0.0
    while not done:
        action, _ = agent.predict(obs)
        mask = env.unwrapped.action_masks()
        offsets = np.concatenate([[0], np.cumsum(env.action_space.nvec)[:-1]])
        assert mask[offsets + np.asarray(action).reshape(-1)].all()
        obs, reward, terminated, truncated, _ = env.step(action)
        total += float(reward)
        done = terminated or truncated
    return total


def test_catalogue_labels_match_actions_across_configuration_counts():
    from edgegym.wrappers import joint_actions

    big = joint_actions(gym.make(CONT, **SMALL).unwrapped, 1024)
    small_env = gym.make(CONT, scenario="ekya-table1").unwrapped
    small = joint_actions(small_env, 1024)
    n_cfg = len(small_env.spec_.retrain_configs)
    assert len(big) > len(small) == 1 + 5 * n_cfg
    where = big.translate(small)
    for i, label in enumerate(big.labels):
        if where[i] < 0:  # only configurations the small scenario lacks are missing
            assert int(label[1 : label.index("@")]) >= n_cfg
        else:
            assert small.labels[where[i]] == label
            retrain = small.vector(where[i])[0]
            assert retrain == (0 if label == "none" else 1 + int(label[1 : label.index("@")]))
    np.testing.assert_array_equal(small.translate(small), np.arange(len(small)))
    with pytest.raises(ValueError, match="labels"):
        from edgegym.wrappers import JointActions

        JointActions(np.array([2, 2]), np.array([[0, 1], [1, 0]]), labels=["a", "a"])


def test_pooled_policy_plays_another_configuration_count(tmp_path):
    """Trained on 18 retraining configurations, the pooled policy plays ekya-table1 (2)
    through ppo:PATH: the missing configurations' columns read as zeros (pruned), every
    action inside the masks, and an observation whose extra columns are zero gets the
    features it gets on the training layout."""
    out = _trained(tmp_path, "PooledPolicy")
    env = gym.make(CONT, scenario="ekya-table1")
    agent = make_policy(f"ppo:{out}", env)
    assert agent.action_map is not None and (agent.action_map >= 0).sum() == 11
    assert np.isfinite(_play(agent, env, seed=0))
    # The rebound extractor reads table1's rows as the trained layout.
    view = agent.predictor.features_extractor.view
    obs, _ = env.reset(seed=3)
    rows = torch.as_tensor(obs["streams"])[None]
    read = view._read(rows)[0].numpy()
    c = 2
    np.testing.assert_array_equal(read[:, :9], obs["streams"][:, :9])
    np.testing.assert_array_equal(read[:, 9 : 9 + c], obs["streams"][:, 9 : 9 + c])
    trained_c = (read.shape[1] - 9) // 2
    np.testing.assert_array_equal(
        read[:, 9 + trained_c : 9 + trained_c + c], obs["streams"][:, 9 + c :]
    )
    assert not read[:, 9 + c : 9 + trained_c].any() and not read[:, 9 + trained_c + c :].any()


def test_aligned_environment_takes_the_reference_spaces():
    """A mixture member with fewer configurations, seen through the reference's spaces:
    each index plays the action of its label, the teacher's index the teacher's decision,
    and a label the scenario lacks is masked out."""
    from edgegym.agents.policies.tenants import Aligned
    from edgegym.agents.sb3.envs import wrap, wrap_like

    wrappers = {"flatten_obs": False, "discrete_actions": True, "max_actions": 1024,
                "teacher": "thief"}  # fmt: skip
    ref = wrap(gym.make(CONT, **SMALL, max_streams=4), wrappers)
    env = wrap_like(gym.make(CONT, scenario="ekya-table1", max_streams=4), wrappers, ref)
    assert isinstance(env, Aligned)
    assert env.observation_space == ref.observation_space
    assert env.action_space == ref.action_space
    obs, info = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    mask = env.action_masks()
    np.testing.assert_array_equal(info["action_mask"], mask)
    ref_joint, own = ref.get_wrapper_attr("joint"), env.get_wrapper_attr("joint")
    missing = [i for i, lab in enumerate(ref_joint.labels) if lab not in own.labels]
    assert missing and not mask[missing].any() and mask[-1]
    # The label "c1@0.5" plays table1's own c1@0.5 joint action.
    i = ref_joint.labels.index("c1@0.5")
    _, _, _, _, info = env.step(i)
    want = own.decode(own.labels.index("c1@0.5"), None)
    assert info["joint_action"][0] == want[0] == 2
    with pytest.raises(ValueError, match="outside"):
        env.step(len(ref_joint) + 1)


def test_rebinding_keeps_the_weights_and_resamples_the_shares(tmp_path):
    """The per-tenant policy at 2 GPUs gives, on every even share value, the logit it gives
    the same fraction at 1 GPU (and the same value)."""
    out = _trained(tmp_path, "PerTenantPolicy")
    model = MaskablePPO.load(out / "model.zip", device="cpu")
    env1 = gym.make(CONT, windows=2, streams=3)
    env2 = gym.make(CONT, windows=2, streams=3, gpus=2)
    obs, _ = env1.reset(seed=0)
    obs["globals"] = obs["globals"].copy()
    policy2 = rebind(model.policy, env2)
    with torch.no_grad():
        lat1 = model.policy.extract_features(model.policy.obs_to_tensor(obs)[0])
        lat2 = policy2.extract_features(policy2.obs_to_tensor(obs)[0])
        l1 = model.policy.action_net(lat1)[0].reshape(3, -1).numpy()
        l2 = policy2.action_net(lat2)[0].reshape(3, -1).numpy()
        v1, v2 = model.policy.value_net(lat1), policy2.value_net(lat2)
    assert l1.shape[1] == 19 + 12 + 101 + 101 and l2.shape[1] == 19 + 12 + 201 + 201
    np.testing.assert_allclose(l2[:, :31], l1[:, :31], atol=1e-6)
    np.testing.assert_allclose(l2[:, 31:232:2], l1[:, 31:132], atol=1e-6)
    np.testing.assert_allclose(l2[:, 232::2], l1[:, 132:], atol=1e-6)
    torch.testing.assert_close(v1, v2)


def test_pooled_policy_is_independent_of_the_tenant_count(tmp_path):
    out = _trained(tmp_path, "PooledPolicy")
    model = MaskablePPO.load(out / "model.zip", device="cpu")
    assert isinstance(model.policy, PooledPolicy)
    obs, _ = gym.make(CONT, **SMALL, max_streams=6).reset(seed=0)
    padded = {k: torch.as_tensor(v)[None].float() for k, v in obs.items()}
    padded["streams"][:, 3:] = torch.rand(1, 3, padded["streams"].shape[-1])  # masked slots
    three = {k: (v[:, :3] if k != "globals" else v) for k, v in padded.items()}
    with torch.no_grad():
        f6 = model.policy.features_extractor(padded)
        f3 = model.policy.features_extractor(three)
    torch.testing.assert_close(f6, f3)


def test_training_on_a_mixture_of_scenarios(tmp_path):
    hp = ["policy=PooledPolicy", "eval.freq=0", "checkpoint.freq=0", "train.n_envs=2"]
    hp += ["train.scenarios=[]"]
    hp += ["policy_kwargs.net_arch=[16, 16]", "ppo.n_steps=32", "train.vec_env=dummy"]
    waymo = "{windows: 2, streams: 2, max_streams: 3}"
    mix = f"train.scenarios=[{{scenario: ekya-waymo, overrides: {waymo}}}]"
    out = tmp_path / "mix"
    res = train(CONT, overrides=SMALL, timesteps=64, out=out, hyperparams=[*hp, mix],
                progress=False)  # fmt: skip
    assert res.timesteps >= 64
    # A scenario with other configurations joins the mixture in the run's spaces (Aligned).
    table1 = "train.scenarios=[{scenario: ekya-table1, overrides: {streams: 2, max_streams: 3}}]"
    res = train(CONT, overrides=SMALL, timesteps=64, out=tmp_path / "t1",
                hyperparams=[*hp, table1], progress=False)  # fmt: skip
    assert res.timesteps >= 64
    # Spaces that differ otherwise are refused before any work, naming the scenario.
    bad = "train.scenarios=[{scenario: ekya-waymo, overrides: {windows: 2, streams: 2}}]"
    with pytest.raises(ConfigError, match=r"train.scenarios\[0\].*max_streams"):
        train(CONT, overrides=SMALL, timesteps=64, out=tmp_path / "bad", hyperparams=[*hp, bad],
              progress=False)  # fmt: skip
    assert not (tmp_path / "bad").exists()
    few = [*hp[:3], "train.n_envs=1", mix]
    with pytest.raises(ConfigError, match=r"n_envs >= 2.*--n-envs 2.*train.scenarios=\[\]"):
        train(CONT, overrides=SMALL, timesteps=64, out=tmp_path / "few", hyperparams=few,
              progress=False)  # fmt: skip
    # A mixture scenario that the run's --set cannot build is named, with the way out (it was
    # the scenario's own message, naming a file the user never chose).
    small_table = "train.scenarios=[{scenario: ekya-table1}]"
    with pytest.raises(ConfigError, match=r"train.scenarios\[0\] \(ekya-table1\) with the "
                       r"run's overrides does not build.*train.scenarios=\[\]"):  # fmt: skip
        train(CONT, overrides={**SMALL, "streams": 3}, timesteps=64, out=tmp_path / "t",
              hyperparams=[*hp, small_table], progress=False)  # fmt: skip


def test_mixture_environments_play_their_own_scenarios():
    from edgegym.agents.sb3.envs import EnvFactory, vec_env

    wrappers = {"flatten_obs": False, "discrete_actions": False, "max_actions": 1024}
    factories = [
        EnvFactory(CONT, None, {**SMALL, "max_streams": 4}, wrappers),
        EnvFactory(CONT, None, {"windows": 2, "streams": 4}, wrappers),
    ]
    venv = vec_env(factories, "dummy")
    try:
        assert [e.unwrapped.spec_.streams for e in venv.envs] == [3, 4]
    finally:
        venv.close()


def test_hyperparameter_checks_of_mixtures_and_pooled_policies():
    with pytest.raises(ConfigError, match=r"train\.scenarios"):
        load_hyperparams("continual", None, ["train.scenarios=ekya-waymo"])
    with pytest.raises(ConfigError, match=r"train.scenarios\[0\]"):
        load_hyperparams("continual", None, ["train.scenarios=[{name: ekya-waymo}]"])
    with pytest.raises(ConfigError, match="PooledPolicy reads"):
        load_hyperparams("continual", None, ["policy=PooledPolicy", "wrappers.flatten_obs=true"])

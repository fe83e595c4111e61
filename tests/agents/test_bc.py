"""Behaviour cloning from a published scheduler (edgegym.agents.sb3.bc): the strong start of
issue 16."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch
import yaml
from sb3_contrib import MaskablePPO

import edgegym  # noqa: F401  (registers the ids)
from edgegym.agents.config import ConfigError, load_hyperparams
from edgegym.agents.policies.tenants import PerTenantPolicy, per_tenant_kwargs
from edgegym.agents.policy import PPOPolicy, load_policy
from edgegym.agents.sb3.bc import _check_in_mask, clone, collect
from edgegym.agents.sb3.train import train
from edgegym.evaluation import evaluate, make_env
from edgegym.scenarios import resolve

ENERGY = "edgegym/EnergyFairShare-v0"
SMALL = {"quanta": 20}
CFG = {
    "policy_class": "PerTenantPolicy",
    "hyperparams": {
        "algo": "maskable_ppo",
        "wrappers": {"flatten_obs": False, "discrete_actions": False, "max_actions": 1024},
    },
}


def test_collect_keeps_the_teachers_decisions_and_returns():
    demos = collect([lambda: make_env(ENERGY, None, SMALL)], "etf", 2, 7, gamma=0.5,
                    progress=False)  # fmt: skip
    env = make_env(ENERGY, None, SMALL)
    rewards, ends = [], []
    for k in range(2):
        env.reset(seed=7 + k)
        done = False
        while not done:
            _, r, te, tr, _ = env.step(demos.actions[len(rewards)])
            rewards.append(r)
            done = te or tr
        ends.append(len(rewards))
    assert len(rewards) == len(demos) == len(demos.observations) == len(demos.masks)
    # The teacher's actions replay its episodes, and the return to go is discounted:
    # G_t = r_t + 0.5 G_{t+1} within an episode, G = r at its last step.
    for start, end in zip([0, ends[0]], ends, strict=True):
        np.testing.assert_allclose(demos.returns[end - 1], rewards[end - 1], rtol=1e-6)
        np.testing.assert_allclose(
            demos.returns[start : end - 1],
            np.asarray(rewards[start : end - 1]) + 0.5 * demos.returns[start + 1 : end],
            rtol=1e-5,
        )
        assert sum(rewards[start:end]) == pytest.approx(demos.episode_returns[int(start > 0)])


def test_a_masked_out_teacher_action_is_refused():
    space = gym.spaces.MultiDiscrete([3, 2])
    mask = np.array([True, False, True, True, True])
    _check_in_mask(np.array([0, 1]), mask, space, "t")
    with pytest.raises(ValueError, match="masks out"):
        _check_in_mask(np.array([1, 0]), mask, space, "t")


def test_cloning_etf_reaches_etfs_return():
    """A per-tenant policy fitted to ETF's decisions on 4 episodes agrees with them and plays
    ETF's return on other seeds; the same network unfitted does not."""
    torch.set_num_threads(1)
    env = make_env(ENERGY, None, SMALL)
    kwargs = per_tenant_kwargs(env, {"net_arch": [32]})

    def model():
        return MaskablePPO(PerTenantPolicy, env, policy_kwargs=kwargs, seed=0, verbose=0)

    demos = collect([lambda: make_env(ENERGY, None, SMALL)], "etf", 4, 500, gamma=0.9,
                    progress=False)  # fmt: skip
    cloned = model()
    fit = clone(cloned, demos, epochs=300, batch_size=64, learning_rate=3e-3, progress=False)
    assert fit["decisions"] == len(demos) and fit["agreement"] > 0.9
    res = evaluate(
        ENERGY,
        {
            "cloned": lambda e: PPOPolicy(cloned, e, CFG),
            "unfitted": lambda e: PPOPolicy(model(), e, CFG),
            "etf": "etf",
        },
        episodes=2,
        seed=0,
        overrides=SMALL,
        progress=False,
    )
    ret = {r["policy"]: r["mean_return"] for r in res.results}
    assert ret["cloned"] == pytest.approx(ret["etf"], rel=0.02)
    assert ret["unfitted"] < ret["etf"] * 0.95


def test_train_with_a_strong_start_records_it_and_scores_the_cloned_weights(tmp_path):
    out = tmp_path / "run"
    hp = ["policy=PerTenantPolicy", "wrappers.discrete_actions=false", "train.n_envs=1"]
    hp += ["train.scenarios=[]"]
    hp += ["policy_kwargs.net_arch=[16]", "checkpoint.freq=0", "eval.freq=10000"]
    hp += ["eval.episodes=1", "bc.teacher=etf", "bc.episodes=1", "bc.epochs=2"]
    train(ENERGY, overrides=SMALL, timesteps=64, out=out, hyperparams=hp, progress=False)
    cfg = yaml.safe_load((out / "config.yaml").read_text())
    assert cfg["bc"]["teacher"] == "etf" and cfg["bc"]["decisions"] > 0
    assert cfg["bc"]["teacher_mean_return"] > 0
    evals = cfg["last_evaluation"], yaml.safe_load((out / "evaluations.json").read_text())
    assert evals[1][0]["timesteps"] == 0  # the cloned weights, before any PPO update
    assert (out / "best_model.zip").is_file()


def test_bc_settings_are_checked(tmp_path):
    hp = ["train.scenarios=[]", "train.n_envs=1", "bc.teacher=thief"]
    with pytest.raises(ConfigError, match=r"bc\.teacher"):
        train(ENERGY, overrides=SMALL, timesteps=64, out=tmp_path / "r", hyperparams=hp,
              progress=False)  # fmt: skip
    assert not (tmp_path / "r").exists()  # refused before the run folder is made
    with pytest.raises(ConfigError, match="discrete_actions"):
        load_hyperparams("continual", None, ["bc.teacher=uniform"])
    with pytest.raises(ConfigError, match=r"bc\.epochs"):
        load_hyperparams("energy", None, ["bc.epochs=0"])


def test_balanced_cloning_learns_the_rare_changes():
    """ekya-mig changes its MIG allocation about once a window and keeps it otherwise: on a
    short budget (10 epochs) plain cloning leans to "keep" and misses the changes (none of 16
    on the default W1 with 40 s windows), balanced cloning (changes and repeats weigh half
    each) learns some of them (half). With 30 epochs both learn all 16 there; earlier inputs
    (before the 2026-11-30 new-class drop) left plain cloning short at 30 epochs too."""
    from edgegym.agents.policies.signatures import SignaturePolicy

    torch.set_num_threads(1)
    mig, small = "edgegym/MIGReconfig-v0", {"window_s": 40}
    demos = collect([lambda: gym.make(mig, **small)], "ekya-mig", 2, 0, 0.95, progress=False)
    # The change flags: the first decision of each episode, then every new action.
    steps = len(demos) // 2
    for k in range(2):
        acts = demos.actions[k * steps : (k + 1) * steps]
        want = np.concatenate([[True], acts[1:] != acts[:-1]])
        np.testing.assert_array_equal(demos.changes[k * steps : (k + 1) * steps], want)
    assert 0 < demos.changes.mean() < 0.1
    fits = {}
    for balance in (False, True):
        env = gym.make(mig, **small)
        kwargs = SignaturePolicy.kwargs_for(env, {"net_arch": [32]})
        model = MaskablePPO(SignaturePolicy, env, policy_kwargs=kwargs, seed=0)
        fits[balance] = clone(model, demos, 10, 64, 3e-3, progress=False, balance=balance)
    assert fits[True]["balance"] and fits[True]["changes"] == int(demos.changes.sum())
    assert fits[False]["agreement_on_changes"] < 0.25  # plain cloning misses the changes
    assert fits[True]["agreement_on_changes"] >= fits[False]["agreement_on_changes"] + 0.25


CONT = "edgegym/ContinualLearning-v0"
CONT_SMALL = {"streams": 3, "windows": 3}


def _always(env: gym.Env, index: int) -> float:
    """The return of playing ``index`` at every step until the episode ends."""
    total, done = 0.0, False
    while not done:
        _, r, te, tr, _ = env.step(index)
        total += r
        done = te or tr
    return total


def test_the_hint_index_plays_the_teacher_and_the_others_are_unchanged():
    from edgegym.wrappers import DiscreteActions

    plain = DiscreteActions(make_env(CONT, None, CONT_SMALL))
    hinted = DiscreteActions(make_env(CONT, None, CONT_SMALL), teacher="thief")
    k = plain.action_space.n
    assert hinted.action_space.n == k + 1
    res = evaluate(CONT, ["thief"], overrides=CONT_SMALL, episodes=1, seed=3, progress=False)
    hinted.reset(seed=3)
    plain.reset(seed=3)
    assert hinted.action_masks()[-1] and (hinted.action_masks()[:-1] == plain.action_masks()).all()
    total = _always(hinted, k)
    # Always the hint index: the thief's episode, reward for reward.
    assert total == pytest.approx(res.result("thief")["mean_return"], rel=1e-12)
    # Catalogue indices decode as without the hint.
    hinted.reset(seed=4)
    plain.reset(seed=4)
    for idx in (0, k - 1):
        np.testing.assert_array_equal(hinted.action(idx), plain.action(idx))
    with pytest.raises(ValueError, match=rf"outside Discrete\({k + 1}\)"):
        hinted.step(k + 1)


def test_cloning_the_hint_gives_an_agent_that_plays_the_teacher(tmp_path):
    out = tmp_path / "run"
    hp = ["train.scenarios=[]", "train.n_envs=1", "policy_kwargs.net_arch=[16, 16]"]
    hp += ["wrappers.teacher=thief", "bc.teacher=thief", "bc.episodes=1", "bc.epochs=10"]
    hp += ["checkpoint.freq=0", "eval.freq=0", "ppo.n_steps=32", "ppo.batch_size=32"]
    hp += ["ppo.learning_rate=0"]  # the cloned weights, loaded back through PPOPolicy
    train(CONT, overrides=CONT_SMALL, timesteps=32, out=out, hyperparams=hp, progress=False)
    cfg = yaml.safe_load((out / "config.yaml").read_text())
    assert cfg["bc"]["teacher"] == "thief" and cfg["bc"]["agreement"] == 1.0
    assert cfg["spaces"]["action"] == f"Discrete({cfg['spaces']['joint_actions']['n'] + 1})"
    res = evaluate(CONT, {"ppo": f"ppo:{out / 'model.zip'}", "thief": "thief"},
                   overrides=CONT_SMALL, episodes=2, seed=11, progress=False)  # fmt: skip
    assert res.result("ppo")["mean_return"] == pytest.approx(res.result("thief")["mean_return"])


def test_a_teacher_hint_needs_discrete_actions_and_the_same_bc_teacher():
    with pytest.raises(ConfigError, match=r"wrappers\.teacher.*discrete_actions"):
        load_hyperparams("energy", None, ["wrappers.teacher=etf"])
    with pytest.raises(ConfigError, match=r"bc\.teacher"):
        load_hyperparams("continual", None, ["wrappers.teacher=thief", "bc.teacher=uniform"])
    with pytest.raises(ConfigError, match=r"wrappers\.teacher"):
        load_hyperparams("continual", None, ["wrappers.teacher=[1]"])


MIG = "edgegym/MIGReconfig-v0"
MIG_SMALL = {"windows": 1, "window_s": 30}


def test_the_teacher_index_of_a_discrete_env_plays_the_teacher():
    """MIG acts through Discrete signatures already: TeacherAction adds index n, which plays
    MIGRator's decision (its episode, reward for reward); the others are the env's own."""
    from edgegym.wrappers import TeacherAction, flatten_env

    env = make_env(MIG, None, MIG_SMALL)
    n = int(env.action_space.n)
    hinted = flatten_env(env, flatten_obs=False, discrete_actions=False, teacher="migrator")
    assert isinstance(hinted, TeacherAction) and hinted.action_space.n == n + 1
    res = evaluate(MIG, ["migrator"], overrides=MIG_SMALL, episodes=1, seed=5, progress=False)
    _, info = hinted.reset(seed=5)
    assert info["action_mask"][-1] and len(info["action_mask"]) == n + 1
    total = _always(hinted, n)
    assert total == pytest.approx(res.result("migrator")["mean_return"], rel=1e-12)
    hinted.reset(seed=5)
    _, _, _, _, info = hinted.step(3)
    assert int(info["joint_action"]) == 3
    with pytest.raises(ValueError, match=rf"outside Discrete\({n + 1}\)"):
        hinted.step(n + 1)
    with pytest.raises(ValueError, match="needs Discrete actions"):
        flatten_env(make_env(ENERGY, None, SMALL), flatten_obs=False, teacher="etf",
                    discrete_actions=False)  # fmt: skip
    load_hyperparams("mig", None, ["wrappers.teacher=migrator"])  # no discrete_actions needed


def test_a_signature_agent_with_the_teacher_index_clones_it_and_plays_other_sizes(tmp_path):
    """SignaturePolicy with MIGRator's decision as one more index: cloned, it plays MIGRator
    (loaded back through PPOPolicy), and its weights act on a one-tenant scenario too."""
    out = tmp_path / "run"
    hp = ["policy=SignaturePolicy", "policy_kwargs.net_arch=[16]", "train.n_envs=1"]
    hp += ["wrappers.teacher=migrator", "bc.teacher=migrator", "bc.episodes=1", "bc.epochs=30"]
    hp += ["checkpoint.freq=0", "eval.freq=0", "ppo.n_steps=32", "ppo.batch_size=32"]
    hp += ["ppo.learning_rate=0"]
    train(MIG, overrides=MIG_SMALL, timesteps=32, out=out, hyperparams=hp, progress=False)
    cfg = yaml.safe_load((out / "config.yaml").read_text())
    assert cfg["bc"]["agreement"] == 1.0 and cfg["spaces"]["action"] == "Discrete(497)"
    res = evaluate(MIG, {"ppo": f"ppo:{out / 'model.zip'}", "migrator": "migrator"},
                   overrides=MIG_SMALL, episodes=2, seed=21, progress=False)  # fmt: skip
    assert res.result("ppo")["mean_return"] == pytest.approx(res.result("migrator")["mean_return"])
    one = tmp_path / "one.yaml"
    raw = yaml.safe_load(resolve("migrator-w1").read_text())
    raw["tenants"] = raw["tenants"][:1]
    one.write_text(yaml.safe_dump(raw))
    env = make_env(MIG, str(one), MIG_SMALL)
    policy = load_policy(out / "model.zip", env)
    assert policy.hint is not None and policy.predictor is not policy.model  # rebound
    obs, _ = env.reset(seed=0)
    policy.reset(0)
    action, _ = policy.predict(obs)
    assert env.action_space.contains(np.asarray(action).item())

"""The size-free policies as an RLlib RLModule (``SizeFreeTorchRLModule``): on RLlib's flat
masked observation the module computes exactly what its SB3 policy computes on the
environment's own observation (log-probabilities, greedy actions, values), masked actions
never win, and ``edgegym train --backend rllib`` trains the family file's policy, which the
evaluator then plays on other sizes."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest
import torch
import yaml

pytest.importorskip("ray.rllib")

from ray.rllib.core.columns import Columns

import edgegym
from edgegym.agents.config import load_hyperparams
from edgegym.agents.rllib.module import SizeFreeTorchRLModule, module_config
from edgegym.cli import main
from edgegym.core.registry import FAMILIES
from edgegym.wrappers import make_masked

#: (family, base id, scenario, overrides): small scenarios of every size-free policy.
CASES = [
    ("energy", "edgegym/EnergyFairShare-v0", "etf-dynamic-3", {"quanta": 10}),  # PerTenant
    ("continual", "edgegym/ContinualLearning-v0", "ekya-cityscapes", {"windows": 2}),  # Pooled
    ("mig", "edgegym/MIGReconfig-v0", "migrator-w5", {"window_s": 12, "windows": 2}),  # Signature
    ("dag", "edgegym/DAGOffload-v0", "srs-edge-3servers", {"requests": 30}),  # Graph
]


def _module(family: str, env_id: str, scenario: str, overrides: dict) -> tuple:
    hp = load_hyperparams(family)
    hp["wrappers"]["teacher"] = None  # the RLlib backend trains without a teacher action
    cfg = module_config(env_id, scenario, overrides, hp)
    run_id = FAMILIES[family].flat_id if hp["wrappers"]["discrete_actions"] else env_id
    kwargs = dict(overrides, scenario=scenario)
    if hp["wrappers"]["discrete_actions"]:
        kwargs["max_actions"] = hp["wrappers"]["max_actions"]
    masked = make_masked(run_id, **kwargs)
    module = SizeFreeTorchRLModule(
        observation_space=masked.observation_space,
        action_space=masked.action_space,
        model_config=cfg,
    )
    module.eval()
    from edgegym.agents.sb3.envs import wrap
    from edgegym.evaluation import make_env

    own = wrap(make_env(env_id, scenario, overrides), hp["wrappers"])
    return module, masked, own, hp


def _sizes(space: gym.Space) -> list[int]:
    if isinstance(space, gym.spaces.Discrete):
        return [int(space.n)]
    return [int(n) for n in np.asarray(space.nvec).ravel()]


@pytest.mark.parametrize(("family", "env_id", "scenario", "overrides"), CASES)
def test_the_module_computes_what_its_sb3_policy_computes(family, env_id, scenario, overrides):
    module, masked, own, _ = _module(family, env_id, scenario, overrides)
    policy = module.policy
    obs_m, _ = masked.reset(seed=3)
    obs_o, _ = own.reset(seed=3)
    rng = np.random.default_rng(0)
    dist_cls = module.get_inference_action_dist_cls()
    for _ in range(12):
        batch = {Columns.OBS: {k: torch.as_tensor(v)[None] for k, v in obs_m.items()}}
        with torch.no_grad():
            logits = module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS]
            values = module.compute_values(batch)
            mask = np.asarray(own.get_wrapper_attr("action_masks")(), dtype=bool)
            tensor, _ = policy.obs_to_tensor(obs_o)
            sb3 = policy.get_distribution(tensor, action_masks=mask[None])
            sb3_value = policy.predict_values(tensor)
        assert np.array_equal(obs_m["action_mask"].astype(bool), mask)  # the same mask
        greedy = [int(torch.argmax(p)) for p in torch.split(logits[0], _sizes(masked.action_space))]
        want = policy.predict(obs_o, deterministic=True, action_masks=mask)[0]
        assert greedy == np.atleast_1d(want).tolist()
        offsets = np.concatenate([[0], np.cumsum(_sizes(masked.action_space))[:-1]])
        assert all(mask[o + g] for o, g in zip(offsets, greedy, strict=True))  # never masked
        action = np.atleast_1d(masked.action_space.sample(mask=None))
        for j, (o, n) in enumerate(zip(offsets, _sizes(masked.action_space), strict=True)):
            allowed = np.flatnonzero(mask[o : o + n])
            action[j] = rng.choice(allowed)
        a = torch.as_tensor(action)[None]
        a_rllib = a if len(action) > 1 else a[:, 0]
        logp = dist_cls.from_logits(logits).logp(a_rllib)
        logp_sb3 = sb3.log_prob(a if len(action) > 1 else a[:, 0])
        assert float(logp) == pytest.approx(float(logp_sb3), abs=1e-4)
        assert float(values[0]) == pytest.approx(float(sb3_value[0, 0]), abs=1e-5)
        step = action if len(action) > 1 else int(action[0])
        obs_m, _, term, trunc, _ = masked.step(step)
        obs_o, _, term_o, trunc_o, _ = own.step(step)
        assert (term, trunc) == (term_o, trunc_o)
        if term or trunc:
            break


@pytest.fixture(scope="module")
def energy_run(ray_cluster, tmp_path_factory):
    """A tiny RLlib run of the energy family's file (``PerTenantPolicy``) on two tenants."""
    out = tmp_path_factory.mktemp("rllib-size-free") / "run"
    argv = ["train", "edgegym/EnergyFairShare-v0", "--set", "quanta=10", "--backend", "rllib"]
    argv += ["--timesteps", "512", "--n-envs", "2", "--seed", "0", "--out", str(out)]
    argv += ["--hp", "ppo.n_steps=128", "--hp", "eval.freq=512", "--hp", "eval.episodes=2"]
    assert main([*argv, "--no-progress"]) == 0
    return out


def test_rllib_trains_the_family_files_size_free_policy(energy_run):
    cfg = yaml.safe_load((energy_run / "config.yaml").read_text())
    assert cfg["policy_class"] == "PerTenantPolicy" == cfg["hyperparams"]["policy"]
    assert cfg["rllib"]["module"] == "edgegym.agents.rllib.module.SizeFreeTorchRLModule"
    assert cfg["rllib"]["model_config"]["policy"] == "PerTenantPolicy"
    assert cfg["hyperparams"]["train"]["scenarios"] == []  # the file's mixture gives way
    res = edgegym.evaluate(
        "edgegym/EnergyFairShare-v0",
        [f"rllib:{energy_run}"],
        overrides={"quanta": 10},
        episodes=2,
        seed=10_000,
        progress=False,
    )
    assert res.ok, res.errors
    last = json.loads((energy_run / "evaluations.json").read_text())[-1]
    assert res.result(f"rllib:{energy_run}")["mean_return"] == pytest.approx(last["ppo_return"])


def test_an_rllib_size_free_agent_plays_another_tenant_count(energy_run):
    from edgegym.baselines import make_policy

    env = gym.make("edgegym/EnergyFairShare-v0", scenario="etf-dynamic-3", quanta=10)
    assert env.unwrapped.action_space.shape != (2,)  # three tenants here, two in training
    policy = make_policy(f"rllib:{energy_run}", env)
    obs, _ = env.reset(seed=0)
    for _ in range(20):
        action, _ = policy.predict(obs)
        assert env.action_space.contains(action)
        obs, reward, term, trunc, _ = env.step(action)
        assert np.isfinite(reward)
        if term or trunc:
            obs, _ = env.reset()


def test_a_policy_that_does_not_fit_is_refused_before_ray_starts(tmp_path, capsys):
    argv = ["train", "edgegym/EnergyFairShare-v0", "--backend", "rllib", "--hp"]
    argv += ["policy=SignaturePolicy", "--out", str(tmp_path / "run"), "--no-progress"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "policy SignaturePolicy" in err and err.count("\n") == 1
    assert not (tmp_path / "run" / "model").exists()


def test_rllib_starts_from_a_shipped_sb3_agent(ray_cluster, tmp_path):
    """--init-from: at learning rate 0 the RLlib run's evaluation is the shipped agent's."""
    from edgegym.agents.policy import shipped_path

    out = tmp_path / "run"
    argv = ["train", "edgegym/EnergyFairShare-v0", "--backend", "rllib", "--timesteps", "128"]
    argv += ["--init-from", str(shipped_path("energy")), "--out", str(out), "--no-progress"]
    argv += ["--hp", "ppo.n_steps=128", "--hp", "ppo.learning_rate=0", "--hp", "eval.freq=128"]
    argv += ["--hp", "eval.episodes=1", "--n-envs", "1"]
    assert main(argv) == 0
    cfg = yaml.safe_load((out / "config.yaml").read_text())
    assert cfg["init_from"]["model"] == str(shipped_path("energy"))
    last = json.loads((out / "evaluations.json").read_text())[-1]
    shipped = edgegym.evaluate(
        "edgegym/EnergyFairShare-v0", ["ppo"], episodes=1, seed=last["seed"], progress=False
    )
    assert last["ppo_return"] == pytest.approx(shipped.result("ppo")["mean_return"])


def test_init_from_a_model_with_other_actions_is_refused_before_ray_starts(tmp_path, capsys):
    from edgegym.agents.policy import shipped_path

    out = tmp_path / "run"
    argv = ["train", "edgegym/MIGReconfig-v0", "--backend", "rllib", "--out", str(out)]
    argv += ["--init-from", str(shipped_path("mig")), "--no-progress"]  # MIGRator's index too
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "wrappers.teacher=migrator" in err and err.count("\n") == 1
    assert not (out / "config.yaml").exists()


def test_a_linear_learning_rate_falls_to_zero_under_rllib_too(ray_cluster, tmp_path):
    import csv

    out = tmp_path / "run"
    argv = ["train", "edgegym/EnergyFairShare-v0", "--backend", "rllib", "--timesteps", "768"]
    argv += ["--n-envs", "1", "--hp", "ppo.n_steps=256", "--hp", "ppo.lr_schedule=linear"]
    argv += ["--hp", "eval.freq=0", "--out", str(out), "--no-progress"]
    assert main(argv) == 0
    with open(out / "logs" / "run-1" / "progress.csv") as fh:
        lrs = [float(r["train/learning_rate"]) for r in csv.DictReader(fh)]
    assert lrs == pytest.approx([1e-3 * 2 / 3, 1e-3 / 3, 0.0])  # after 256, 512, 768 steps

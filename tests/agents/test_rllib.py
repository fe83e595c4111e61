"""RLlib glue (edgegym.agents.rllib, edgegym.agents.rllib.train): a clear message without Ray;
with Ray, PPO with RLlib's action-masking RLModule trains on a masked id and never prefers a
masked action; ``edgegym train --backend rllib`` writes a run that resumes and that the
evaluator scores as ``rllib:PATH``; the batched masked view equals single masked envs."""

from __future__ import annotations

import json
import shutil

import gymnasium as gym
import numpy as np
import pytest
import yaml

import edgegym
from edgegym.agents import rllib
from edgegym.cli import main
from edgegym.wrappers import MaskedVectorEnv, make_masked, make_masked_vector

TINY_MIG = {"scenario": "migrator-w5", "window_s": 12, "windows": 2}
MIG = "edgegym/MIGReconfig-v0"
MIG_ARGS = ["--scenario", "migrator-w5", "--set", "window_s=12", "--set", "windows=2"]
MIG_OVERRIDES = {"window_s": "12", "windows": "2"}
HP = ["--hp", "ppo.n_steps=256", "--hp", "eval.freq=1024", "--hp", "eval.episodes=2"]
HP += ["--hp", "checkpoint.freq=512", "--hp", "checkpoint.keep=2"]


def test_without_ray_the_message_says_what_to_install(monkeypatch, no_ray):
    with pytest.raises(rllib.RayMissingError, match=r'pip install -e "\.\[ray\]"'):
        rllib.masked_ppo_config("edgegym/MIGReconfig-v0")
    assert isinstance(rllib.RayMissingError("x"), ImportError)


@pytest.mark.parametrize(
    "argv",
    [
        ["train", MIG, "--backend", "rllib", "--no-progress"],
        ["evaluate", MIG, "--policy", "rllib:runs/somewhere", "--no-progress"],
    ],
    ids=["train", "evaluate"],
)
def test_without_ray_the_cli_says_what_to_install_in_one_line(
    argv, monkeypatch, tmp_path, capsys, no_ray
):
    if argv[0] == "train":
        argv = [*argv, "--out", str(tmp_path / "run")]
    assert main(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1, captured.err
    assert lines[0].startswith("edgegym: error: ")
    assert 'pip install -e ".[ray]"' in lines[0]
    assert not (tmp_path / "run").exists()


def test_rllib_options_need_the_rllib_backend(tmp_path, capsys):
    argv = ["train", MIG, "--num-env-runners", "2", "--out", str(tmp_path / "run")]
    assert main(argv) == 2
    assert "need --backend rllib" in capsys.readouterr().err


# ----------------------------------------------------------------------------- vector view
@pytest.mark.parametrize(
    ("env_id", "kwargs"),
    [
        (MIG, TINY_MIG),  # flat Box observation, Discrete actions
        ("edgegym/EnergyFairShare-v0", {"quanta": 10}),  # Dict observation, MultiDiscrete
        ("edgegym/EnergyFairShare-Flat-v0", {"quanta": 10}),  # the flat view's joint actions
        ("edgegym/DAGOffload-Flat-v0", {}),
    ],
)
def test_masked_vector_env_equals_single_masked_envs(env_id, kwargs):
    n = 3
    venv = make_masked_vector(env_id, n, **kwargs)
    singles = [make_masked(env_id, **kwargs) for _ in range(n)]
    assert isinstance(venv, MaskedVectorEnv)
    assert venv.single_observation_space == singles[0].observation_space
    assert venv.single_action_space == singles[0].action_space
    obs, _ = venv.reset(seed=7)
    single_obs = [env.reset(seed=7 + i)[0] for i, env in enumerate(singles)]
    rng = np.random.default_rng(0)
    ended = [False] * n
    episodes = 0
    for _ in range(120):
        for i in range(n):
            for key in ("action_mask", "observations"):
                assert obs[key][i].dtype == single_obs[i][key].dtype
                np.testing.assert_array_equal(obs[key][i], single_obs[i][key])
        np.testing.assert_array_equal(venv.action_masks(), obs["action_mask"].astype(bool))
        actions = []
        for i, env in enumerate(singles):  # a random valid action per env, from its mask
            mask, space = single_obs[i]["action_mask"].astype(bool), env.action_space
            sizes = [space.n] if isinstance(space, gym.spaces.Discrete) else list(space.nvec)
            parts, start = [], 0
            for size in sizes:
                parts.append(int(rng.choice(np.flatnonzero(mask[start : start + size]))))
                start += size
            actions.append(parts[0] if isinstance(space, gym.spaces.Discrete) else parts)
        obs, reward, terminated, truncated, _ = venv.step(np.asarray(actions))
        for i, env in enumerate(singles):
            if ended[i]:  # NextStep autoreset: the vector env resets it on this step
                single_obs[i], _ = env.reset()
                ended[i] = False
                assert reward[i] == 0.0 and not terminated[i]
                continue
            single_obs[i], r, term, trunc, _ = env.step(actions[i])
            assert reward[i] == pytest.approx(r)
            assert (terminated[i], truncated[i]) == (term, trunc)
            ended[i] = term or trunc
            episodes += int(ended[i])
    if env_id == MIG:
        assert episodes >= n  # autoreset was exercised
    venv.close()


def test_masked_vector_env_needs_a_native_vector_env():
    gym.register(
        "edgegym-test/NoVector-v0", entry_point="gymnasium.envs.classic_control:CartPoleEnv"
    )
    try:
        with pytest.raises(ValueError, match="no native vector env"):
            make_masked_vector("edgegym-test/NoVector-v0", 2)
    finally:
        gym.registry.pop("edgegym-test/NoVector-v0")


# ----------------------------------------------------------------------------- with Ray
def test_rllib_ppo_with_masks_trains_and_respects_the_mask(ray_cluster):
    pytest.importorskip("ray.rllib")
    import torch
    from ray.rllib.core.columns import Columns

    config = (
        rllib.masked_ppo_config("edgegym/MIGReconfig-v0", TINY_MIG)
        .env_runners(num_env_runners=0)
        .training(train_batch_size_per_learner=256, minibatch_size=64, num_epochs=2)
    )
    algo = config.build_algo()
    result = algo.train()
    assert np.isfinite(result["env_runners"]["episode_return_mean"])
    module = algo.get_module()
    env = make_masked("edgegym/MIGReconfig-v0", **TINY_MIG)
    obs, _ = env.reset(seed=0)
    for _ in range(30):
        batch = {
            Columns.OBS: {k: torch.as_tensor(v, dtype=torch.float32)[None] for k, v in obs.items()}
        }
        with torch.no_grad():
            logits = module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS][0]
        action = int(torch.argmax(logits))
        assert obs["action_mask"][action] == 1.0  # masked logits never win
        obs, _, term, trunc, _ = env.step(action)
        if term or trunc:
            obs, _ = env.reset()
    algo.stop()


@pytest.fixture(scope="module")
def rllib_run(ray_cluster, tmp_path_factory):
    """One tiny ``edgegym train --backend rllib`` run (2048 steps on native vector envs,
    a few seconds) shared by the tests below, with RLlib's masked MLP (``policy=auto``; the
    family file's ``SignaturePolicy`` as an RLModule: ``test_rllib_module.py``)."""
    out = tmp_path_factory.mktemp("rllib") / "run"
    argv = ["train", MIG, *MIG_ARGS, "--backend", "rllib", "--timesteps", "2048"]
    argv += ["--hp", "policy=auto"]
    rc = main([*argv, "--n-envs", "2", "--seed", "0", "--out", str(out), *HP, "--no-progress"])
    assert rc == 0
    return out


def test_cli_rllib_train_writes_config_checkpoints_evaluations_and_logs(rllib_run):
    cfg = yaml.safe_load((rllib_run / "config.yaml").read_text())
    assert cfg["backend"] == "rllib" and cfg["env_id"] == MIG and cfg["family"] == "mig"
    assert cfg["overrides"] == MIG_OVERRIDES and cfg["trained_timesteps"] == 2048
    assert cfg["hyperparams"]["ppo"]["n_steps"] == 256  # the override, merged
    hp = cfg["hyperparams"]
    training = cfg["rllib"]["training"]
    assert training["train_batch_size_per_learner"] == 512  # n_steps * n_envs
    assert training["lr"] == cfg["hyperparams"]["ppo"]["learning_rate"]
    assert training["lambda_"] == cfg["hyperparams"]["ppo"]["gae_lambda"]
    assert cfg["rllib"]["vectorize"] == "vector_entry_point"  # the native vector env
    assert cfg["rllib"]["model_config"]["fcnet_hiddens"] == hp["policy_kwargs"]["net_arch"]
    assert hp["policy"] == "auto" and hp["wrappers"]["teacher"] is None  # not SB3-only keys
    assert cfg["policy_class"] == "ActionMaskingTorchRLModule"
    assert cfg["rllib"]["mapping"]["ppo.clip_range"] == "clip_param"
    assert cfg["spaces"]["observation"] == {"action_mask": "Box(496,)", "observations": "Box(32,)"}
    assert {"ray", "torch", "edgegym"} <= set(cfg["versions"])
    assert (rllib_run / "model" / "rllib_checkpoint.json").is_file()
    assert (rllib_run / "best_model" / "rllib_checkpoint.json").is_file()
    ckpts = sorted(p.name for p in (rllib_run / "checkpoints").iterdir())
    assert ckpts == ["ckpt_0000001536", "ckpt_0000002048"]  # the newest checkpoint.keep
    evals = json.loads((rllib_run / "evaluations.json").read_text())
    assert [e["timesteps"] for e in evals] == [1024, 2048]
    assert evals[0]["baseline"] == "migrator" and evals[0]["baseline_return"] is not None
    assert set(evals[0]) >= {"ppo_return", "ppo_std", "baseline_return", "episodes", "seed", "gap"}
    logs = rllib_run / "logs" / "run-1"
    assert (logs / "progress.csv").is_file() and any(logs.glob("events.out.tfevents.*"))
    assert "rollout/ep_rew_mean" in (logs / "progress.csv").read_text().splitlines()[0]


def test_rllib_policy_beats_random_through_the_evaluator(rllib_run):
    specs = [f"rllib:{rllib_run}", f"rllib:{rllib_run / 'checkpoints' / 'ckpt_0000002048'}"]
    res = edgegym.evaluate(
        MIG,
        [*specs, "random"],
        scenario="migrator-w5",
        overrides=MIG_OVERRIDES,
        episodes=2,
        seed=10_000,
        progress=False,
    )
    assert res.ok, res.errors
    learned, ckpt, rand = (res.result(name)["mean_return"] for name in [*specs, "random"])
    assert learned == pytest.approx(ckpt)  # model/ and the last checkpoint hold the same weights
    assert learned > rand
    # The training evaluation scored the same greedy policy on the same seeds.
    last = json.loads((rllib_run / "evaluations.json").read_text())[-1]
    assert last["ppo_return"] == pytest.approx(learned)


def test_resume_continues_to_more_timesteps(rllib_run, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(rllib_run, run)
    argv = ["train", MIG, "--backend", "rllib", "--out", str(run), "--resume"]
    assert main([*argv, "--timesteps", "2560", "--no-progress"]) == 0
    cfg = yaml.safe_load((run / "config.yaml").read_text())
    assert cfg["trained_timesteps"] == 2560 and len(cfg["runs"]) == 2
    assert cfg["runs"][1]["resumed_from"].endswith("ckpt_0000002048")
    assert json.loads((run / "model" / "edgegym_checkpoint.json").read_text())["timesteps"] == 2560
    ckpts = sorted(p.name for p in (run / "checkpoints").iterdir())
    assert ckpts == ["ckpt_0000002048", "ckpt_0000002560"]
    evals = json.loads((run / "evaluations.json").read_text())
    assert [e["timesteps"] for e in evals] == [1024, 2048, 2560]
    assert (run / "logs" / "run-2" / "progress.csv").is_file()
    # Already there: nothing changes; another backend: refused.
    assert main([*argv, "--timesteps", "2560", "--no-progress"]) == 2
    assert main(["train", MIG, "--out", str(run), "--resume", "--no-progress"]) == 2


def test_a_new_run_into_a_finished_run_of_the_other_backend_names_it(rllib_run, capsys):
    """It said the run "stopped before its first checkpoint" and to delete it."""
    assert main(["train", MIG, "--out", str(rllib_run), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "already holds a training run of --backend rllib" in err and "delete" not in err


def test_rllib_policy_errors_name_the_file(rllib_run, tmp_path, monkeypatch):
    from edgegym.agents.policy import PolicyLoadError
    from edgegym.baselines import make_policy

    energy = gym.make("edgegym/EnergyFairShare-v0", quanta=10)
    with pytest.raises(PolicyLoadError, match=r"trained on family 'mig'.*energy"):
        make_policy(f"rllib:{rllib_run}", energy)
    module, cfg, _ = rllib.load_rllib_module(rllib_run / "model")
    with pytest.raises(PolicyLoadError, match=r"observation space Box\(32,\)"):
        rllib.RLlibPolicy(module, energy, cfg)  # the spaces do not fit
    mig = gym.make(MIG, **TINY_MIG)
    with pytest.raises(PolicyLoadError, match="does not exist"):
        make_policy(f"rllib:{tmp_path / 'nothing'}", mig)
    with pytest.raises(PolicyLoadError, match="not an RLlib checkpoint"):
        make_policy(f"rllib:{tmp_path}", mig)
    sb3 = tmp_path / "sb3"
    shutil.copytree(rllib_run / "model", sb3 / "model")
    cfg_sb3 = {k: v for k, v in cfg.items() if k not in ("backend", "rllib")}
    (sb3 / "config.yaml").write_text(yaml.safe_dump(cfg_sb3))
    with pytest.raises(PolicyLoadError, match=r"config\.yaml is a Stable-Baselines3 run"):
        make_policy(f"rllib:{sb3}", mig)
    policy = make_policy(f"rllib:{rllib_run / 'model'}", mig)
    # The relative form README and docs/ray.md show (rllib:runs/mig-rllib) loads too.
    monkeypatch.chdir(rllib_run.parent)
    make_policy(f"rllib:{rllib_run.name}", mig)
    obs, _ = mig.reset(seed=0)
    for _ in range(20):  # greedy actions are always valid
        action, _ = policy.predict(obs)
        assert mig.unwrapped.action_masks()[int(action)]
        obs, _, term, trunc, _ = mig.step(action)
        if term or trunc:
            obs, _ = mig.reset()


class _Payload:
    """Unpickling it creates the canary folder."""

    def __init__(self, canary):
        self.canary = str(canary)

    def __reduce__(self):
        import os

        return (os.mkdir, (self.canary,))


def test_rllib_checkpoints_are_loaded_without_unpickling_them(rllib_run, tmp_path):
    """Every pickle of the checkpoint booby-trapped: ``rllib:PATH`` rebuilds the module from
    config.yaml and reads edgegym's tensor copy only; with --trust-artifact RLlib unpickles
    them (the payload is live); without the tensor copy or with a payload in it: refused."""
    import pickle

    import torch

    from edgegym.agents.policy import PolicyLoadError
    from edgegym.agents.rllib.policy import WEIGHTS_NAME
    from edgegym.agents.sb3.artifacts import trusting
    from edgegym.baselines import make_policy

    run = tmp_path / "run"
    shutil.copytree(rllib_run, run)
    canary = tmp_path / "canary"
    pickles = sorted((run / "model").rglob("*.pkl"))
    assert any(p.name == "class_and_ctor_args.pkl" for p in pickles)
    for path in pickles:
        path.write_bytes(pickle.dumps(_Payload(canary)))
    mig = gym.make(MIG, **TINY_MIG)
    safe = make_policy(f"rllib:{run}", mig)
    reference = make_policy(f"rllib:{rllib_run}", mig)
    obs, _ = mig.reset(seed=0)
    for _ in range(10):  # the rebuilt module acts as the one RLlib loads
        action, _ = safe.predict(obs)
        assert action == reference.predict(obs)[0]
        obs, _, term, trunc, _ = mig.step(action)
        if term or trunc:
            obs, _ = mig.reset()
    assert not canary.exists()
    with trusting(), pytest.raises(PolicyLoadError):
        make_policy(f"rllib:{run}", mig)
    assert canary.exists()  # the payload was live
    canary.rmdir()
    weights = run / "model" / WEIGHTS_NAME
    torch.save({"w": _Payload(canary)}, weights)
    with pytest.raises(PolicyLoadError, match="other than tensors"):
        make_policy(f"rllib:{run}", mig)
    weights.unlink()
    with pytest.raises(PolicyLoadError, match=f"no {WEIGHTS_NAME}.*--trust-artifact"):
        make_policy(f"rllib:{run}", mig)
    assert not canary.exists()

"""``edgegym train`` end to end: train, save, load, evaluate, resume; hyperparameter files;
clear errors for missing or corrupt policy files."""

from __future__ import annotations

import json
import shutil
import sys

import gymnasium as gym
import pytest
import torch
import yaml

import edgegym
from edgegym.agents.config import ConfigError, load_hyperparams
from edgegym.agents.policy import PolicyLoadError, load_policy, make_ppo_policy, shipped_path
from edgegym.agents.sb3.checkpoints import ModelFiles
from edgegym.cli import main

ENV = "edgegym/EnergyFairShare-v0"
SMALL = ["--set", "quanta=10"]
HP = ["--hp", "ppo.n_steps=64", "--hp", "eval.freq=128", "--hp", "eval.episodes=1"]
HP += ["--hp", "checkpoint.freq=128", "--hp", "train.vec_env=dummy", "--hp", "train.scenarios=[]"]
# The flat MLP on the Discrete catalogue (the energy file's policy is per-tenant since issue
# 16): these tests check the catalogue's record and its refusal of other spaces.
HP += ["--hp", "policy=auto", "--hp", "wrappers.discrete_actions=true"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """One tiny CLI training run shared by the tests below (256 steps, ~5 s)."""
    out = tmp_path_factory.mktemp("train") / "run"
    argv = ["train", ENV, *SMALL, "--timesteps", "256", "--n-envs", "1", "--seed", "0"]
    rc = main([*argv, "--out", str(out), *HP, "--no-progress"])
    assert rc == 0
    return out


def test_train_writes_model_config_checkpoints_logs_and_evaluations(trained):
    assert (trained / "model.zip").is_file() and (trained / "best_model.zip").is_file()
    cfg = yaml.safe_load((trained / "config.yaml").read_text())
    assert cfg["env_id"] == ENV and cfg["family"] == "energy"
    assert cfg["scenario"] == "etf-tx2-resnet50-mobilenetv2"
    assert cfg["overrides"] == {"quanta": "10"} and cfg["seed"] == 0
    assert cfg["trained_timesteps"] == 256
    assert cfg["hyperparams"]["ppo"]["n_steps"] == 64  # the override, merged
    assert cfg["hyperparams"]["ppo"]["gamma"] == load_hyperparams("energy")["ppo"]["gamma"]
    assert cfg["hyperparam_overrides"]["ppo"] == {"n_steps": 64}
    assert cfg["hyperparams"]["wrappers"]["discrete_actions"] is True
    assert cfg["spaces"]["joint_actions"]["n"] == 61
    assert {"edgegym", "stable_baselines3", "sb3_contrib", "torch"} <= set(cfg["versions"])
    steps = [s for s, _ in ModelFiles(trained).listing()]
    assert steps and steps[-1] == 256 and len(steps) <= 3
    evals = json.loads((trained / "evaluations.json").read_text())
    assert [e["timesteps"] for e in evals] == [128, 256]
    assert evals[0]["baseline"] == "etf" and evals[0]["baseline_return"] is not None
    assert evals[1]["baseline_return"] == evals[0]["baseline_return"]  # computed once
    assert (trained / "logs" / "run-1" / "progress.csv").is_file()
    assert any((trained / "logs" / "run-1").glob("events.out.tfevents.*"))


def test_cli_evaluates_the_trained_policy_beside_baselines(trained, tmp_path, capsys):
    out = tmp_path / "eval.json"
    argv = ["evaluate", ENV, *SMALL, "--policy", f"ppo:{trained / 'model.zip'}", "--policy"]
    rc = main([*argv, "etf", "--episodes", "2", "--json", str(out), "--no-progress"])
    assert rc == 0, capsys.readouterr().err
    data = json.loads(out.read_text())
    names = [r["policy"] for r in data["results"]]
    assert names == [f"ppo:{trained / 'model.zip'}", "etf"]
    assert all(r["episodes"] == 2 and "error" not in r for r in data["results"])
    # A folder works too, and the Python evaluator scores it the same way.
    res = edgegym.evaluate(
        ENV, [f"ppo:{trained}"], overrides={"quanta": "10"}, episodes=2, progress=False
    )
    assert res.results[0]["mean_return"] == pytest.approx(data["results"][0]["mean_return"])


def test_resume_continues_from_the_newest_checkpoint(trained, tmp_path):
    run = tmp_path / "run"
    shutil.copytree(trained, run)
    argv = ["train", ENV, "--out", str(run), "--resume", "--timesteps", "384", "--no-progress"]
    assert main(argv) == 0
    cfg = yaml.safe_load((run / "config.yaml").read_text())
    assert cfg["trained_timesteps"] == 384
    assert len(cfg["runs"]) == 2 and cfg["runs"][1]["resumed_from"].endswith("0000000256.zip")
    assert (run / "logs" / "run-2" / "progress.csv").is_file()
    assert json.loads((run / "evaluations.json").read_text())[-1]["timesteps"] == 384


def test_resume_falls_back_past_a_truncated_checkpoint(trained, tmp_path, capsys):
    """A newest checkpoint cut short (a kill mid-write on an older edgegym, a full disk) is
    skipped with a note: the run resumes from the one before it."""
    run = tmp_path / "run"
    shutil.copytree(trained, run)
    (run / "model.zip").unlink()
    found = ModelFiles(run).listing()
    assert len(found) >= 2
    newest = found[-1][1]
    newest.write_bytes(newest.read_bytes()[:200])
    argv = ["train", ENV, "--out", str(run), "--resume", "--timesteps", "320", "--no-progress"]
    assert main(argv) == 0
    assert "is damaged; using the checkpoint before it" in capsys.readouterr().err
    cfg = yaml.safe_load((run / "config.yaml").read_text())
    assert cfg["runs"][-1]["resumed_from"].endswith(found[-2][1].name)
    assert not list((run / "checkpoints").glob(".tmp-*"))  # saves go through a rename
    # Every checkpoint damaged: the last note and the error say so (they said "using the
    # checkpoint before it" where there was none, and that the run had no checkpoint).
    (run / "model.zip").unlink()
    for _, path in ModelFiles(run).listing():
        path.write_bytes(path.read_bytes()[:200])
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-2].endswith("is damaged; no older checkpoint")
    assert "checkpoint(s) cannot be used, as said above" in err[-1]


def test_a_run_that_stopped_before_its_first_checkpoint_says_how_to_restart(
    trained, tmp_path, capsys
):
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(trained / "config.yaml", run / "config.yaml")
    rc = main(["train", ENV, "--out", str(run), "--resume", "--no-progress"])
    assert rc == 2 and f"delete {run} to start it again" in capsys.readouterr().err
    rc = main(["train", ENV, *SMALL, "--out", str(run), "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and "stopped before its first checkpoint" in err


def test_init_from_starts_a_new_run_from_trained_weights(trained, tmp_path, capsys):
    """--init-from copies the policy (the new run's first evaluation acts as the source
    does), skips nothing else, records the source; another policy is refused before any
    folder is made, as is --resume with it."""
    from edgegym.agents.policy import load_model

    run = tmp_path / "ft"
    argv = ["train", ENV, *SMALL, "--timesteps", "64", "--n-envs", "1", "--out", str(run)]
    hp = [*HP, "--hp", "ppo.learning_rate=0", "--hp", "eval.freq=0", "--hp", "ppo.ent_coef=0"]
    assert main([*argv, *hp, "--init-from", str(trained), "--no-progress"]) == 0
    cfg = yaml.safe_load((run / "config.yaml").read_text())
    assert cfg["init_from"]["model"].endswith("model.zip")
    assert cfg["init_from"]["timesteps"] == 256
    # learning rate 0: the weights are the source's, unchanged by the 64 steps
    src, _, _ = load_model(trained)
    new, _, _ = load_model(run)
    for (k, a), (_, b) in zip(
        src.policy.state_dict().items(), new.policy.state_dict().items(), strict=True
    ):
        assert torch.equal(a, b), k
    other = ["--hp", "policy=PerTenantPolicy", "--hp", "wrappers.discrete_actions=false"]
    rc = main([*argv[:-1], str(tmp_path / "no"), *HP, *other, "--init-from", str(trained)])
    assert rc == 2 and "--init-from" in capsys.readouterr().err
    assert not (tmp_path / "no").exists()
    rc = main(["train", ENV, "--out", str(run), "--resume", "--init-from", str(trained)])
    assert rc == 2 and "not both" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        ([], "already holds a training run"),
        (["--resume", "--seed", "5"], "seed"),
        (["--resume", "--hp", "ppo.n_steps=32"], "keeps its hyperparameters"),
    ],
)
def test_train_refuses_to_overwrite_or_change_a_run(trained, extra, needle, capsys):
    rc = main(["train", ENV, *SMALL, "--out", str(trained), *extra, "--no-progress"])
    assert rc == 2
    err = capsys.readouterr().err
    assert err.startswith("edgegym: error:") and needle in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["train", "edgegym/Nope-v0"], "Nope-v0"),
        (["train", ENV, "--timesteps", "0"], "--timesteps"),
        (["train", ENV, "--set", "quanta=0"], "quanta"),
        (["train", ENV, "--hp", "ppo.nope=1"], "ppo.nope"),
        (["train", ENV, "--hp", "ppo.n_steps=-3"], "ppo.n_steps"),
        (["train", ENV, "--config", "missing-hp.yaml"], "missing-hp.yaml"),
        # Out of PPO's ranges: refused with the file, before torch fails on them.
        (
            ["train", ENV, "--hp", "ppo.gamma=2"],
            "ppo.gamma must be a finite number in [0, 1], got 2",
        ),
        (["train", ENV, "--hp", "ppo.gamma=-0.1"], "ppo.gamma must be a finite number in [0, 1]"),
        (["train", ENV, "--hp", "ppo.gae_lambda=1.5"], "ppo.gae_lambda must be a finite number in"),
        (["train", ENV, "--hp", "ppo.learning_rate=nan"], "ppo.learning_rate must be a finite"),
        (["train", ENV, "--hp", "ppo.learning_rate=-1e-3"], "ppo.learning_rate must be a finite"),
        (["train", ENV, "--hp", "ppo.clip_range=0"], "ppo.clip_range must be a finite number > 0"),
        (["train", ENV, "--hp", "ppo.ent_coef=inf"], "ppo.ent_coef must be a finite number >= 0"),
        (["train", ENV, "--hp", "ppo.vf_coef=-1"], "ppo.vf_coef must be a finite number >= 0"),
        (
            ["train", ENV, "--hp", "ppo.max_grad_norm=0"],
            "ppo.max_grad_norm must be a finite number",
        ),
        (
            ["train", ENV, "--hp", "ppo.target_kl=-1"],
            "ppo.target_kl must be a finite number > 0 or",
        ),
        (["train", ENV, "--hp", "ppo.normalize_advantage=2"], "must be true or false, got 2"),
        (["train", ENV, "--hp", "bc.learning_rate=nan"], "bc.learning_rate must be a finite"),
        (["train", ENV, "--hp", "bc.seed=1.5"], "bc.seed must be an integer >= 0, got 1.5"),
    ],
)
def test_train_bad_arguments_exit_2(argv, needle, tmp_path, capsys):
    assert main([*argv, "--out", str(tmp_path / "x"), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("edgegym: error:") and needle in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "x").exists()  # nothing written: the same command can run again


# ----------------------------------------------------------------------------- policy files
def test_missing_policy_file_is_a_clear_error(tmp_path, capsys):
    missing = tmp_path / "nope" / "model.zip"
    rc = main(["evaluate", ENV, *SMALL, "--policy", f"ppo:{missing}", "--episodes", "1"])
    assert rc == 2
    err = capsys.readouterr().err
    assert str(missing) in err and "does not exist" in err and "Traceback" not in err


def test_no_shipped_policy_is_a_clear_error(capsys, tmp_path, monkeypatch):
    import edgegym.agents.policy as agent_policy

    monkeypatch.setattr(agent_policy, "TRAINED_DIR", tmp_path)  # as if none were shipped
    rc = main(["evaluate", ENV, *SMALL, "--policy", "ppo", "--episodes", "1", "--no-progress"])
    assert rc == 2
    err = capsys.readouterr().err
    assert "no trained PPO policy is shipped for family 'energy'" in err
    assert str(shipped_path("energy")) in err


def test_corrupt_policy_file_is_a_clear_error(trained, tmp_path, capsys):
    bad = tmp_path / "bad"
    bad.mkdir()
    shutil.copy(trained / "config.yaml", bad / "config.yaml")
    (bad / "model.zip").write_bytes(b"this is not a zip file")
    rc = main(["evaluate", ENV, *SMALL, "--policy", f"ppo:{bad}", "--episodes", "1"])
    assert rc == 2
    err = capsys.readouterr().err
    assert str(bad / "model.zip") in err and "cannot be loaded" in err and "Traceback" not in err


def test_missing_or_corrupt_config_is_a_clear_error(trained, tmp_path):
    env = gym.make(ENV, quanta=10)
    lone = tmp_path / "lone"
    lone.mkdir()
    shutil.copy(trained / "model.zip", lone / "model.zip")
    with pytest.raises(PolicyLoadError, match=r"no config\.yaml beside it"):
        load_policy(lone, env)
    (lone / "config.yaml").write_text("{not: [yaml")
    with pytest.raises(PolicyLoadError, match=r"config\.yaml cannot be read"):
        load_policy(lone, env)
    (lone / "config.yaml").write_text("family: energy\nfamily: mig\n")
    with pytest.raises(PolicyLoadError, match="duplicate key 'family'"):
        load_policy(lone, env)


def test_policy_checks_family_and_spaces(trained):
    with pytest.raises(PolicyLoadError, match="family 'energy'"):
        make_ppo_policy(f"ppo:{trained}", gym.make("edgegym/MIGReconfig-v0"))
    with pytest.raises(PolicyLoadError, match="training scenario"):
        load_policy(trained, gym.make(ENV, scenario="etf-dynamic-3"))


def test_loaded_policy_acts_on_the_raw_environment(trained):
    env = gym.make(ENV, quanta=10)
    policy = load_policy(trained, env)
    obs, _ = env.reset(seed=0)
    action, _ = policy.predict(obs)
    assert env.action_space.contains(action)  # MultiDiscrete, decoded from the catalogue
    mask = env.unwrapped.action_masks()
    offsets = [i * (env.unwrapped.params.units + 1) for i in range(len(action))]
    assert all(mask[o + a] for o, a in zip(offsets, action, strict=True))


# ----------------------------------------------------------------------------- config
def test_every_family_file_loads_and_dotted_overrides_merge():
    for family in ("continual", "mig", "energy"):
        cfg = load_hyperparams(family)
        assert cfg["algo"] == "maskable_ppo" and cfg["eval"]["baseline"]
    cfg = load_hyperparams(
        "mig", overrides=["ppo.learning_rate=1e-4", "policy_kwargs.net_arch=[8]"]
    )
    assert cfg["ppo"]["learning_rate"] == 1e-4 and cfg["policy_kwargs"]["net_arch"] == [8]


def test_bad_hyperparameter_file_names_file_and_key(tmp_path):
    path = tmp_path / "hp.yaml"
    path.write_text("ppo: {learnin_rate: 0.1}\n")
    with pytest.raises(ConfigError, match=r"hp\.yaml: unknown key 'ppo\.learnin_rate'"):
        load_hyperparams(path=path)
    path.write_text("algo: dqn\n")
    with pytest.raises(ConfigError, match="algo"):
        load_hyperparams(path=path)
    path.write_text("ppo:\n  gamma: 0.9\n  gamma: 0.5\n")  # PyYAML would keep the last
    with pytest.raises(ConfigError, match=r"duplicate key 'gamma' \(first given on line 2\)"):
        load_hyperparams(path=path)


def test_logs_fall_back_to_csv_without_tensorboard(tmp_path, monkeypatch, capsys):
    from edgegym.agents.run.evaluation import open_logger

    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)
    logger = open_logger(tmp_path / "logs")
    assert "tensorboard is not installed" in capsys.readouterr().err
    logger.record("x", 1.0)
    logger.dump(0)
    logger.close()
    assert (tmp_path / "logs" / "progress.csv").is_file()


def _logged_lr(run, k: int) -> list[float]:
    import csv

    with open(run / "logs" / f"run-{k}" / "progress.csv") as fh:
        rows = list(csv.DictReader(fh))
    return [float(r["train/learning_rate"]) for r in rows if r.get("train/learning_rate")]


def test_a_linear_learning_rate_falls_to_zero_at_the_budget_and_resumes_on_the_line(tmp_path):
    run = tmp_path / "run"
    argv = ["train", ENV, *SMALL, "--timesteps", "256", "--n-envs", "1", "--seed", "0"]
    hp = ["--hp", "ppo.lr_schedule=linear", "--hp", "ppo.learning_rate=1e-3"]
    assert main([*argv, "--out", str(run), *HP, *hp, "--no-progress"]) == 0
    # SB3 updates after each 64-step rollout: progress remaining 0.75, 0.5, 0.25, 0.
    assert _logged_lr(run, 1) == pytest.approx([7.5e-4, 5e-4, 2.5e-4, 0.0])
    resume = ["train", ENV, "--out", str(run), "--resume", "--timesteps", "512", "--no-progress"]
    assert main(resume) == 0
    # The saved schedule over the new budget: at 320 of 512 steps, 1e-3 * (1 - 320 / 512).
    assert _logged_lr(run, 2)[0] == pytest.approx(1e-3 * (1 - 320 / 512))
    assert _logged_lr(run, 2)[-1] == pytest.approx(0.0)


def test_the_learning_rate_schedule_maps_onto_rllib_and_a_bad_one_is_named():
    from edgegym.agents.rllib.ppo import rllib_settings

    cfg = {
        "env_id": ENV,
        "family": "energy",
        "scenario": None,
        "overrides": {"quanta": 10},
        "timesteps": 5000,
        "hyperparams": load_hyperparams(
            "energy", overrides=["ppo.lr_schedule=linear", "policy=auto", "train.scenarios=[]"]
        ),
    }
    assert rllib_settings(cfg)["training"]["lr"] == [[0, 1e-3], [5000, 0.0]]
    with pytest.raises(ConfigError, match=r"ppo\.lr_schedule.*constant, linear"):
        load_hyperparams("energy", overrides=["ppo.lr_schedule=cosine"])


def test_sigterm_stops_training_as_ctrl_c_does(tmp_path):
    """SIGTERM (a batch scheduler's stop): one line, exit 143, a checkpoint and the step it
    stopped at in config.yaml; --resume goes on from it."""
    import signal
    import subprocess
    import time

    run = tmp_path / "run"
    argv = [sys.executable, "-m", "edgegym", "train", ENV, *SMALL, "--timesteps", "10000000"]
    argv += ["--n-envs", "1", "--out", str(run), *HP, "--no-progress"]
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while not (run / "evaluations.json").exists() and time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()[1]
        time.sleep(0.5)  # training has started once the first evaluation is written
    started = (run / "evaluations.json").exists()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert started, f"no evaluation within 300 s; stderr: {err}"
    assert proc.returncode == 143, err
    cfg = yaml.safe_load((run / "config.yaml").read_text())
    stopped_at = cfg["runs"][-1]["interrupted_at"]
    assert stopped_at > 0 and ModelFiles(run).listing()[-1][0] == stopped_at
    checkpoint = ModelFiles(run).path(stopped_at)
    again = f"edgegym train {ENV} --out {run} --resume"
    assert err.strip().splitlines() == [
        f"edgegym: terminated; saved checkpoint {checkpoint} at {stopped_at:,} timesteps; "
        f"continue with: {again}"
    ], err
    resume = ["train", ENV, "--out", str(run), "--resume", "--timesteps", str(stopped_at + 64)]
    assert main([*resume, "--no-progress"]) == 0


def _interrupt_after(monkeypatch, steps: int) -> None:
    """Ctrl-C once training has run ``steps`` timesteps (a callback raising it)."""
    from stable_baselines3.common.callbacks import BaseCallback, CallbackList

    import edgegym.agents.sb3.callbacks as callbacks

    class CtrlC(BaseCallback):
        def _on_step(self) -> bool:
            if self.num_timesteps >= steps:
                raise KeyboardInterrupt
            return True

    made = callbacks.training_callbacks
    monkeypatch.setattr(
        callbacks, "training_callbacks", lambda *a, **k: CallbackList([made(*a, **k), CtrlC()])
    )


def test_ctrl_c_names_the_checkpoint_and_the_command_that_resumes(tmp_path, monkeypatch, capsys):
    import shlex

    run = tmp_path / "run"
    argv = ["train", ENV, *SMALL, "--timesteps", "100000", "--n-envs", "1", "--out", str(run)]
    _interrupt_after(monkeypatch, 100)
    assert main([*argv, *HP, "--hp", "eval.freq=0", "--no-progress"]) == 130
    err = capsys.readouterr().err.strip().splitlines()
    stopped_at = yaml.safe_load((run / "config.yaml").read_text())["runs"][-1]["interrupted_at"]
    checkpoint = ModelFiles(run).path(stopped_at)
    assert checkpoint.is_file() and len(err) == 1
    head, _, again = err[0].partition("; continue with: ")
    assert head == f"edgegym: interrupted; saved checkpoint {checkpoint} at {stopped_at} timesteps"
    monkeypatch.undo()
    words = shlex.split(again)
    assert words[:2] == ["edgegym", "train"] and "--resume" in words
    assert main([*words[1:], "--timesteps", str(stopped_at + 64), "--no-progress"]) == 0


def test_ctrl_c_before_the_first_checkpoint_or_before_any_file(tmp_path, monkeypatch, capsys):
    import edgegym.agents.sb3.train as sb3_train

    def ctrl_c(*args, **kwargs):
        raise KeyboardInterrupt

    run = tmp_path / "run"
    argv = ["train", ENV, *SMALL, "--timesteps", "256", "--out", str(run), *HP, "--no-progress"]
    monkeypatch.setattr(sb3_train, "_plan", ctrl_c)  # while checking: nothing written yet
    assert main(argv) == 130
    assert capsys.readouterr().err.strip() == "edgegym: interrupted" and not run.exists()
    monkeypatch.undo()
    monkeypatch.setattr(sb3_train, "_new_model", ctrl_c)  # config.yaml written, no model yet
    assert main(argv) == 130
    err = capsys.readouterr().err.strip()
    assert err == (
        "edgegym: interrupted; stopped before its first checkpoint, so there is nothing to "
        f"resume: delete {run} to start again"
    )


def test_a_flat_model_plays_a_flat_view_and_a_native_one_is_refused(trained, capsys):
    """The fixture's run is an MLP on the Discrete catalogue of the Box observation: it plays
    the -Flat view; the shipped per-tenant agent says to evaluate it on the native id."""
    flat = "edgegym/EnergyFairShare-Flat-v0"
    argv = ["evaluate", flat, *SMALL, "--episodes", "1", "--no-progress"]
    assert main([*argv, "--policy", f"ppo:{trained}"]) == 0
    assert main([*argv, "--policy", f"ppo:{shipped_path('energy')}"]) == 2
    err = capsys.readouterr().err
    assert f"(a PerTenantPolicy) acts on {ENV}, not on its -Flat view" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err

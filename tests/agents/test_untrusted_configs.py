"""A trained agent's ``config.yaml`` is untrusted: loading or resuming never imports code it
names.

Each booby-trapped config below names code that writes a marker file when imported (a
``FILE.py:NAME`` or ``MODULE:NAME`` scheduler, a ``module:Id`` environment id, which
``gymnasium.make`` imports). Every loader (``ppo:PATH``, ``--resume``, ``rllib:PATH``) must
refuse it in one line naming the file and the field, before anything is imported, and leave
the marker absent; ``--trust-artifact`` lets it through (which shows the payload is live)."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import gymnasium as gym
import pytest
import yaml

import edgegym  # noqa: F401  registers the ids
from edgegym.agents.policy import (
    SCHEDULER_FIELDS,
    TRAINED_DIR,
    PolicyLoadError,
    check_artifact_config,
    load_model,
    load_policy,
    read_config,
)
from edgegym.agents.sb3.artifacts import trusting
from edgegym.cli import main

ENV = "edgegym/ContinualLearning-v0"
TINY = ["--set", "windows=2", "--set", "streams=2", "--episodes", "1", "--no-progress"]
SHIPPED = sorted(p.parent.name for p in TRAINED_DIR.glob("*/model.zip"))


def _payload(folder: Path, module: str, marker: Path) -> None:
    """``folder/module.py``: importing it writes ``marker``; it defines a scheduler and an
    environment class, so either kind of spec would resolve."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{module}.py").write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\n\n"
        "class Evil:\n    def __init__(self, env, **kw):\n        self.env = env\n\n"
        "    def predict(self, obs, state=None, episode_start=None, deterministic=True):\n"
        "        return self.env.action_space.sample(), state\n"
    )


def _set(cfg: dict, dotted: str, value: object) -> None:
    *parents, last = dotted.split(".")
    node = cfg
    for key in parents:
        node = node.setdefault(key, {})
    node[last] = value


def _evil_agent(tmp_path: Path, field: str, value: str, family: str = "continual") -> Path:
    """A copy of a shipped agent whose config's ``field`` is ``value``."""
    folder = tmp_path / "agent"
    shutil.copytree(TRAINED_DIR / family, folder)
    cfg = yaml.safe_load((folder / "config.yaml").read_text())
    _set(cfg, field, value)
    (folder / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    return folder


@pytest.fixture
def evil_file(tmp_path):
    """``(spec of a scheduler in a .py file, marker)``."""
    marker = tmp_path / "marker"
    _payload(tmp_path / "x", "evil", marker)
    return f"{tmp_path / 'x' / 'evil.py'}:Evil", marker


@pytest.fixture
def evil_module(tmp_path, monkeypatch):
    """``(name of an importable module on sys.path, marker)``."""
    marker = tmp_path / "marker"
    _payload(tmp_path / "path", "edgegym_evil_mod", marker)
    monkeypatch.syspath_prepend(str(tmp_path / "path"))
    return "edgegym_evil_mod", marker


def test_a_teacher_in_a_file_is_refused_and_never_imported(tmp_path, evil_file):
    spec, marker = evil_file
    agent = _evil_agent(tmp_path, "hyperparams.wrappers.teacher", spec)
    with pytest.raises(PolicyLoadError) as err:
        load_policy(agent, gym.make(ENV, windows=2, streams=2))
    text = str(err.value)
    assert "hyperparams.wrappers.teacher" in text and str(agent / "config.yaml") in text
    assert "--trust-artifact" in text and "evil" not in text.replace(str(tmp_path), "")
    assert "\n" not in text and not marker.exists()
    # The payload is live: trusting the file imports it.
    with trusting():
        try:
            load_policy(agent, gym.make(ENV, windows=2, streams=2))
        except Exception:
            pass
    assert marker.exists()


def test_the_cli_refuses_a_teacher_module_in_one_line(tmp_path, evil_module, capsys):
    module, marker = evil_module
    agent = _evil_agent(tmp_path, "hyperparams.wrappers.teacher", f"{module}:Evil")
    rc = main(["evaluate", ENV, *TINY, "--policy", f"ppo:{agent}"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert "hyperparams.wrappers.teacher" in err and "built-in schedulers" in err
    assert not marker.exists()


@pytest.mark.parametrize("field", SCHEDULER_FIELDS)
@pytest.mark.parametrize("value", ["file", "module", "ppo", "rllib:x", "thief:delta=abc"])
def test_every_scheduler_field_takes_only_a_built_in(tmp_path, request, field, value):
    marker = None
    if value == "file":
        value, marker = request.getfixturevalue("evil_file")
    elif value == "module":
        module, marker = request.getfixturevalue("evil_module")
        value = f"{module}:Evil"
    cfg = yaml.safe_load((TRAINED_DIR / "continual" / "config.yaml").read_text())
    _set(cfg, field, value)
    with pytest.raises(PolicyLoadError, match=field.replace(".", r"\.")):
        check_artifact_config(cfg, "config.yaml")
    assert marker is None or not marker.exists()
    _set(cfg, field, "thief:delta=0.2")  # a built-in with parameters is fine
    check_artifact_config(cfg, "config.yaml")


@pytest.mark.parametrize("field", ["env_id", "rllib.env", "rllib.model_config.env_id"])
def test_an_env_id_naming_a_module_is_refused_and_never_imported(tmp_path, evil_module, field):
    module, marker = evil_module
    agent = _evil_agent(tmp_path, field, f"{module}:Evil")
    with pytest.raises(PolicyLoadError, match=f"{field.replace('.', '[.]')} is .*not an edgegym"):
        load_model(agent)
    assert not marker.exists()
    cfg = yaml.safe_load((agent / "config.yaml").read_text())
    _set(cfg, field, "CartPole-v1")  # registered, but not edgegym's
    with pytest.raises(PolicyLoadError, match="not an edgegym environment id"):
        check_artifact_config(cfg, "config.yaml")


def test_resume_refuses_a_baseline_naming_code(tmp_path, evil_file, capsys):
    spec, marker = evil_file
    run = _evil_agent(tmp_path, "hyperparams.eval.baseline", spec)
    rc = main(["train", ENV, "--out", str(run), "--resume", "--no-progress"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "--resume" in err
    assert "hyperparams.eval.baseline" in err and not marker.exists()


def test_the_curves_read_a_config_without_checking_what_it_names(tmp_path, evil_file):
    """Reading a config to draw its curve builds nothing from it: not refused."""
    spec, marker = evil_file
    agent = _evil_agent(tmp_path, "hyperparams.wrappers.teacher", spec)
    assert read_config(agent / "config.yaml", loading=False)["hyperparams"]
    from edgegym.agents.curves import load_curve

    assert load_curve(agent).timesteps and not marker.exists()


@pytest.mark.parametrize("family", SHIPPED)
def test_the_shipped_agents_pass_the_checks_and_load(family):
    cfg = read_config(TRAINED_DIR / family / "config.yaml")
    check_artifact_config(cfg, family)
    model, _, path = load_model(TRAINED_DIR / family)
    assert path == TRAINED_DIR / family / "model.zip" and model.policy is not None


# ----------------------------------------------------------------------------- RLlib
def _rllib_checkpoint(tmp_path: Path, env: str) -> tuple[Path, dict]:
    """A run folder of the RLlib layout (``model/`` with the module folder) whose config's
    ``rllib.env`` is ``env``; no weights."""
    from edgegym.agents.rllib.policy import MODULE_SUBDIR

    run = tmp_path / "rllib-run"
    (run / "model" / MODULE_SUBDIR).mkdir(parents=True)
    cfg = yaml.safe_load((TRAINED_DIR / "mig" / "config.yaml").read_text())
    cfg["backend"] = "rllib"
    cfg["rllib"] = {"env": env, "env_config": {"scenario": cfg["scenario"]}}
    (run / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    return run, cfg


def test_an_rllib_env_naming_a_module_is_refused_and_never_imported(tmp_path, evil_module):
    pytest.importorskip("ray")
    from edgegym.agents.rllib.policy import _rebuilt_module, load_rllib_module

    module, marker = evil_module
    run, cfg = _rllib_checkpoint(tmp_path, f"{module}:Evil")
    with pytest.raises(PolicyLoadError, match=r"rllib[.]env is .*not an edgegym environment"):
        load_rllib_module(run)
    # The module builder checks it too, whoever passes it the config.
    with pytest.raises(PolicyLoadError, match=r"rllib[.]env is .*not an edgegym environment"):
        _rebuilt_module(cfg, run / "model")
    assert not marker.exists()


def test_rllib_weights_that_are_a_fifo_are_refused_without_blocking(tmp_path):
    pytest.importorskip("ray")
    from edgegym.agents.rllib.policy import WEIGHTS_NAME, load_rllib_module

    run, _ = _rllib_checkpoint(tmp_path, "edgegym/MIGReconfig-v0")
    os.mkfifo(run / "model" / WEIGHTS_NAME)
    outcome: list[BaseException] = []

    def load() -> None:
        try:
            load_rllib_module(run)
        except BaseException as exc:
            outcome.append(exc)

    worker = threading.Thread(target=load, daemon=True)
    worker.start()
    worker.join(60)
    assert not worker.is_alive(), "loading blocked on the FIFO"
    assert isinstance(outcome[0], PolicyLoadError) and "FIFO" in str(outcome[0])

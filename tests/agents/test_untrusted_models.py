"""Model files are untrusted: loading one never runs code it carries.

Each booby-trapped file below carries a payload that would create a canary folder when
unpickled; every loader (``ppo:PATH``, ``--init-from``, ``--resume``, ``ship``) must leave the
canary absent, refuse what it cannot load safely in one line with no traceback, and unpickle
only under ``--trust-artifact`` (which shows the payload is live)."""

from __future__ import annotations

import base64
import json
import os
import shutil
import zipfile
from pathlib import Path

import cloudpickle
import gymnasium as gym
import pytest

from edgegym.agents.policy import PolicyLoadError, load_policy
from edgegym.agents.sb3.artifacts import pickled_keys, zip_data
from edgegym.cli import main

ENV = "edgegym/EnergyFairShare-v0"
SHIPPED = Path(__file__).resolve().parents[2] / "agents" / "trained" / "energy"
SMALL = ["--set", "quanta=10", "--episodes", "1", "--no-progress"]
HP = ["--hp", "ppo.n_steps=64", "--hp", "eval.freq=0", "--hp", "train.scenarios=[]"]


class Payload:
    """Unpickling it creates the canary folder."""

    def __init__(self, canary: Path) -> None:
        self.canary = str(canary)

    def __reduce__(self):
        return (os.mkdir, (self.canary,))


def _blob(canary: Path) -> dict[str, str]:
    return {
        ":type:": "<class 'abc.ABCMeta'>",
        ":serialized:": base64.b64encode(cloudpickle.dumps(Payload(canary))).decode(),
    }


def _rewrite(zip_path: Path, **entries: bytes) -> None:
    """Replace entries of a zip file (the others copied as they are)."""
    tmp = zip_path.with_suffix(".tmp")
    with zipfile.ZipFile(zip_path) as src, zipfile.ZipFile(tmp, "w") as dst:
        for item in src.infolist():
            dst.writestr(item, entries.pop(item.filename, None) or src.read(item))
        for name, data in entries.items():
            dst.writestr(name, data)
    tmp.replace(zip_path)


def _evil_model(folder: Path, canary: Path, key: str) -> Path:
    """A copy of the shipped energy agent whose ``data[key]`` is the payload."""
    shutil.copytree(SHIPPED, folder)
    model = folder / "model.zip"
    data = zip_data(model)
    data[key] = _blob(canary)
    _rewrite(model, data=json.dumps(data).encode())
    return model


def _evil_weights(folder: Path, canary: Path) -> Path:
    import io

    import torch

    shutil.copytree(SHIPPED, folder)
    buf = io.BytesIO()
    torch.save({"weights": Payload(canary)}, buf)
    _rewrite(folder / "model.zip", **{"policy.pth": buf.getvalue()})
    return folder / "model.zip"


@pytest.mark.parametrize("key", pickled_keys(zip_data(SHIPPED / "model.zip")))
def test_a_payload_in_any_pickled_entry_is_never_unpickled(tmp_path, key):
    canary = tmp_path / "canary"
    _evil_model(tmp_path / "evil", canary, key)
    env = gym.make(ENV, quanta=10)
    policy = load_policy(tmp_path / "evil", env)
    obs, _ = env.reset(seed=0)
    env.step(policy.predict(obs)[0])
    assert not canary.exists()


def test_an_entry_edgegym_does_not_rebuild_is_refused_in_one_line(tmp_path, capsys):
    canary = tmp_path / "canary"
    _evil_model(tmp_path / "evil", canary, "my_extra_state")
    rc = main(["evaluate", ENV, *SMALL, "--policy", f"ppo:{tmp_path / 'evil'}"])
    err = capsys.readouterr().err
    assert rc == 2 and not canary.exists()
    assert err.count("\n") == 1 and "--trust-artifact" in err
    # How many only: the key names are the file's content.
    assert "holds 1 pickled Python object " in err and "my_extra_state" not in err
    # The payload is live: trusting the file runs it.
    rc = main(["evaluate", ENV, *SMALL, "--policy", f"ppo:{tmp_path / 'evil'}", "--trust-artifact"])
    assert canary.exists()
    assert os.environ.get("EDGEGYM_TRUST_ARTIFACTS") is None  # the trust ends with the command


def test_a_payload_in_the_weights_is_refused_in_one_line(tmp_path, capsys):
    canary = tmp_path / "canary"
    _evil_weights(tmp_path / "evil", canary)
    rc = main(["evaluate", ENV, *SMALL, "--policy", f"ppo:{tmp_path / 'evil'}"])
    err = capsys.readouterr().err
    assert rc == 2 and not canary.exists()
    assert err.count("\n") == 1 and "Traceback" not in err and "cannot be loaded" in err


@pytest.mark.parametrize(
    "data", [b"{not json", b"[1, 2]", json.dumps({"num_timesteps": "many"}).encode()]
)
def test_a_corrupt_data_entry_is_one_line(tmp_path, data):
    shutil.copytree(SHIPPED, tmp_path / "bad")
    _rewrite(tmp_path / "bad" / "model.zip", data=data)
    with pytest.raises(PolicyLoadError, match="cannot be loaded"):
        load_policy(tmp_path / "bad", gym.make(ENV, quanta=10))


def test_init_from_never_unpickles_the_source(tmp_path):
    canary = tmp_path / "canary"
    _evil_model(tmp_path / "evil", canary, "policy_class")
    argv = ["train", ENV, "--set", "quanta=10", "--timesteps", "64", "--n-envs", "1", *HP]
    rc = main([*argv, "--out", str(tmp_path / "run"), "--init-from", str(tmp_path / "evil")])
    assert rc == 0 and not canary.exists()


def test_resume_never_unpickles_a_checkpoint(tmp_path, capsys):
    """Every saved model of the run replaced by a booby-trapped one: their digests are not the
    ones config.yaml records, so --resume refuses them all, unpickling nothing."""
    canary = tmp_path / "canary"
    run = tmp_path / "run"
    argv = ["train", ENV, "--set", "quanta=10", "--n-envs", "1", "--out", str(run), "--no-progress"]
    assert main([*argv, *HP, "--hp", "checkpoint.freq=64", "--timesteps", "128"]) == 0
    models = [run / "model.zip", *sorted((run / "checkpoints").glob("*.zip"))]
    assert len(models) >= 2
    for model in models:  # whichever the resumed run would continue from
        data = zip_data(model)
        data["lr_schedule"] = _blob(canary)
        _rewrite(model, data=json.dumps(data).encode())
    assert main([*argv, "--timesteps", "192", "--resume"]) == 2
    err = capsys.readouterr().err
    assert "is not a model this run saved" in err and "no intact checkpoint" in err
    assert not canary.exists()


def test_resume_skips_a_checkpoint_another_run_saved(tmp_path, capsys):
    """A checkpoint copied in from another run (newer by its name) is skipped for the run's
    own; the run's own models are recorded by digest in config.yaml."""
    import yaml

    argv = ["train", ENV, "--set", "quanta=10", "--n-envs", "1", "--no-progress"]
    hp = [*HP, "--hp", "checkpoint.freq=64", "--hp", "checkpoint.keep=5"]
    for name in ("run", "other"):
        assert main([*argv, *hp, "--timesteps", "128", "--out", str(tmp_path / name)]) == 0
    run = tmp_path / "run"
    digests = yaml.safe_load((run / "config.yaml").read_text())["checkpoint_digests"]
    assert "model.zip" in digests and "checkpoints/ckpt_0000000128.zip" in digests
    foreign = run / "checkpoints" / "ckpt_0000000999.zip"
    shutil.copy(tmp_path / "other" / "checkpoints" / "ckpt_0000000128.zip", foreign)
    (run / "model.zip").unlink()  # so the newest checkpoint decides
    assert main([*argv, "--timesteps", "192", "--resume", "--out", str(run)]) == 0
    err = capsys.readouterr().err
    assert f"{foreign} is not a model this run saved" in err
    cfg = yaml.safe_load((run / "config.yaml").read_text())
    assert cfg["runs"][-1]["resumed_from"].endswith("ckpt_0000000128.zip")

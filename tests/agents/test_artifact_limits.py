"""A small untrusted file must not cost unbounded memory or time, and a bad one is one line.

Each hostile file is built here from the shipped energy agent: a model whose ``data`` gives
``policy_kwargs`` as plain JSON, a config describing layers that do not fit the stored weights
(SB3 and RLlib), zip entries SB3 does not write or that unpack far past their packed size,
``data`` nested too deeply, hyperparameter files nested too deeply or sizing a network or a
rollout no machine holds, and a run to resume whose ``config.yaml`` lacks a section. The sizes
are kept small (the checks are the same at any size), so each case takes a few seconds."""

from __future__ import annotations

import io
import json
import shutil
import zipfile
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import torch
import yaml

from edgegym.agents.config import MAX_HIDDEN_WEIGHTS, ConfigError, load_hyperparams
from edgegym.agents.policy import PolicyLoadError, load_model, load_policy
from edgegym.agents.sb3 import artifacts
from edgegym.agents.sb3.artifacts import UntrustedArtifact, num_timesteps, zip_data
from edgegym.agents.sb3.checkpoints import intact
from edgegym.cli import main

ENV = "edgegym/EnergyFairShare-v0"
SHIPPED = Path(__file__).resolve().parents[2] / "agents" / "trained" / "energy"
SMALL = ["--set", "quanta=10", "--episodes", "1", "--no-progress"]


def _rewrite(zip_path: Path, drop: tuple[str, ...] = (), **entries: bytes) -> None:
    """Replace, add (deflated) or drop entries of a zip file; the others are copied."""
    tmp = zip_path.with_suffix(".tmp")
    with zipfile.ZipFile(zip_path) as src, zipfile.ZipFile(tmp, "w") as dst:
        for item in src.infolist():
            if item.filename in drop or item.filename in entries:
                continue
            dst.writestr(item, src.read(item))
        for name, data in entries.items():
            dst.writestr(name, data, compress_type=zipfile.ZIP_DEFLATED)
    tmp.replace(zip_path)


def _copy(tmp_path: Path, name: str = "agent") -> Path:
    folder = tmp_path / name
    shutil.copytree(SHIPPED, folder)
    return folder


def _with_data(folder: Path, **changes: object) -> Path:
    model = folder / "model.zip"
    data = zip_data(model)
    data.update(changes)
    _rewrite(model, data=json.dumps(data).encode())
    return model


def _n_params(model) -> int:
    return sum(p.numel() for p in model.policy.parameters())


class _BigLayers:
    """Counts the linear layers of over a million weights built with storage (not on the
    meta device) while installed: a refused network must build none."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        real = torch.nn.Linear.reset_parameters

        def spy(layer: torch.nn.Linear) -> None:
            if not layer.weight.is_meta and layer.weight.numel() > 1_000_000:
                self.count += 1
            real(layer)

        monkeypatch.setattr(torch.nn.Linear, "reset_parameters", spy)


def _one_line(err: str) -> str:
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


# ----------------------------------------------------------------------------- SB3 models
@pytest.mark.parametrize("how", ["json", "absent"])
def test_policy_kwargs_is_always_the_rebuilt_one(tmp_path, how):
    """``policy_kwargs`` as plain JSON (a wider network than the weights) or left out: SB3
    took the JSON as it was (16,000 wide took minutes and gigabytes) and the defaults for an
    absent one; edgegym's rebuilt value is used either way, so the model loads as shipped."""
    folder = _copy(tmp_path)
    reference, _, _ = load_model(SHIPPED)
    data = zip_data(folder / "model.zip")
    if how == "json":
        kwargs = {"view": reference.policy_kwargs["view"], "hidden": 512, "ortho_init": True}
        _with_data(folder, policy_kwargs=kwargs)
    else:
        del data["policy_kwargs"]
        _rewrite(folder / "model.zip", data=json.dumps(data).encode())
    model, _, _ = load_model(folder)
    assert _n_params(model) == _n_params(reference)
    assert model.policy_kwargs["hidden"] == reference.policy_kwargs["hidden"]


def test_a_network_that_does_not_fit_its_weights_is_refused_before_it_is_built(
    tmp_path, monkeypatch, capsys
):
    folder = _copy(tmp_path)
    path = folder / "config.yaml"
    cfg = yaml.safe_load(path.read_text())
    cfg["hyperparams"]["policy_kwargs"]["net_arch"] = [2048]  # the tenant code width
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    big = _BigLayers(monkeypatch)
    rc = main(["evaluate", ENV, *SMALL, "--policy", f"ppo:{folder}"])
    err = _one_line(capsys.readouterr().err)
    assert rc == 2 and big.count == 0
    assert "does not fit the weights in policy.pth" in err and "refused before building" in err
    assert "2048x13 described, 64x13 stored" in err


@pytest.mark.parametrize("key", ["n_steps", "n_envs"])
def test_a_rollout_no_machine_holds_is_refused(tmp_path, key):
    folder = _copy(tmp_path)
    _with_data(folder, **{key: 10**7})
    with pytest.raises(PolicyLoadError, match=r"n_steps x n_envs is .* over the 4,194,304"):
        load_model(folder)


def test_an_entry_sb3_does_not_write_is_refused_unread(tmp_path, capsys):
    """A ``zzbomb.pth`` beside the real entries: SB3 reads every ``.pth`` with torch (a
    gigabyte of zeros packed in 1 MB kept it busy for minutes); it is refused by its name."""
    folder = _copy(tmp_path)
    _rewrite(folder / "model.zip", **{"zzbomb.pth": b"PK\x03\x04" + bytes(2 << 20)})
    rc = main(["evaluate", ENV, *SMALL, "--policy", f"ppo:{folder}"])
    err = _one_line(capsys.readouterr().err)
    assert rc == 2 and "holds 1 entry an SB3 model does not" in err and "zzbomb" not in err
    assert not intact(folder / "model.zip")  # --resume skips such a checkpoint unpacked
    with pytest.raises(UntrustedArtifact, match="an SB3 model does not"):
        num_timesteps(folder / "model.zip")


def test_an_entry_packed_past_the_ratio_is_refused(tmp_path):
    folder = _copy(tmp_path)
    _rewrite(folder / "model.zip", **{"policy.pth": bytes(4 << 20)})  # 4 MB of zeros: ~4 kB
    with pytest.raises(PolicyLoadError, match=r"policy\.pth entry unpacks .* a zip bomb\?"):
        load_model(folder)
    assert not intact(folder / "model.zip")


def test_an_entry_over_its_cap_is_refused(tmp_path, monkeypatch):
    folder = _copy(tmp_path)
    monkeypatch.setitem(artifacts.ENTRY_LIMITS, "policy.pth", 64 << 10)  # the real one: 122 kB
    with pytest.raises(PolicyLoadError, match=r"policy\.pth entry unpacks to .* over the"):
        load_model(folder)
    with pytest.raises(UntrustedArtifact, match=r"over the 65,536 bytes read for it"):
        zip_data(folder / "model.zip")  # the directory is checked before data is read


def test_data_nested_too_deeply_is_one_line(tmp_path, capsys):
    """A checkpoint whose ``data`` nests 100,000 lists: a RecursionError traceback under
    ``--resume`` before (``zip_data`` caught ValueError only)."""
    folder = _copy(tmp_path)
    model = folder / "model.zip"
    raw = json.dumps(zip_data(model))[:-1] + ', "deep": ' + "[" * 100_000 + "]" * 100_000 + "}"
    _rewrite(model, data=raw.encode())
    with pytest.raises(UntrustedArtifact, match="data entry is nested too deeply"):
        num_timesteps(model)
    # --resume of a run (no digests recorded) whose checkpoint is that model
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    shutil.copy(folder / "config.yaml", run / "config.yaml")
    shutil.copy(model, run / "checkpoints" / "ckpt_0000000100.zip")
    rc = main(["train", ENV, "--resume", "--out", str(run), "--timesteps", "2000000"])
    err = _one_line(capsys.readouterr().err)
    assert rc == 2 and "nested too deeply" in err


def test_the_shipped_agents_still_load_and_act(tmp_path):
    """The four shipped agents pass every check (entries, caps, network fit)."""
    for family, env_id in [
        ("continual", "edgegym/ContinualLearning-v0"),
        ("mig", "edgegym/MIGReconfig-v0"),
        ("energy", ENV),
        ("dag", "edgegym/DAGOffload-v0"),
    ]:
        env = gym.make(env_id)
        policy = load_policy(SHIPPED.parent / family, env)
        obs, _ = env.reset(seed=0)
        action = policy.predict(obs, deterministic=True)[0]
        assert env.action_space.contains(np.asarray(action, dtype=np.int64).reshape(
            env.action_space.shape)), (family, action)  # fmt: skip
        again = policy.predict(obs, deterministic=True)[0]
        np.testing.assert_array_equal(action, again)  # greedy: the same action twice
        env.step(action)


# ----------------------------------------------------------------------------- RLlib
def _rllib_run(tmp_path: Path, hiddens: list[int]) -> Path:
    """A run folder of ``--backend rllib`` (config.yaml, model/ with edgegym's tensor copy of
    a 64 x 64 module's weights) whose config describes ``hiddens``."""
    pytest.importorskip("ray.rllib")
    from edgegym.agents.rllib.policy import WEIGHTS_NAME
    from edgegym.agents.rllib.ppo import ppo_config, rllib_hyperparams, rllib_settings
    from edgegym.agents.rllib.train import AlgorithmFiles
    from edgegym.agents.run.record import TrainRequest, new_config
    from edgegym.wrappers import make_masked

    run = tmp_path / "run"
    hp = rllib_hyperparams(["policy=auto", "policy_kwargs.net_arch=[64,64]"])
    request = TrainRequest(env_id=ENV, overrides={"quanta": 10}, out=run, hyperparams=hp)
    cfg = {"backend": "rllib", **new_config(request, "energy", AlgorithmFiles(run))}
    settings = rllib_settings(cfg)
    probe = make_masked(settings["env"], **settings["env_config"])
    module = ppo_config(settings, 0).get_rl_module_spec(env=probe).build()
    probe.close()
    (run / "model").mkdir(parents=True)
    (run / "model" / "module_state.pt").write_bytes(b"")
    torch.save(module.state_dict(), run / "model" / WEIGHTS_NAME)
    settings["model_config"]["fcnet_hiddens"] = hiddens
    cfg["rllib"] = {k: v for k, v in settings.items() if k != "num_env_runners"}
    (run / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    return run


def test_rllib_layers_that_do_not_fit_the_weights_are_refused_before_they_are_built(
    tmp_path, monkeypatch
):
    """``fcnet_hiddens: [30000, 30000]`` allocated 7.5 GB before load_state_dict refused it;
    4096 keeps this test small on the code before the fix, where it also failed late."""
    from edgegym.agents.rllib.policy import load_rllib_module

    run = _rllib_run(tmp_path, [4096, 4096])
    big = _BigLayers(monkeypatch)
    with pytest.raises(PolicyLoadError, match="refused before building it") as info:
        load_rllib_module(run)
    assert big.count == 0
    assert "does not fit the weights in edgegym_weights.pt" in str(info.value)
    assert "4096x76 described, 64x76 stored" in str(info.value)
    run.rename(tmp_path / "old")
    module, _, _ = load_rllib_module(_rllib_run(tmp_path, [64, 64]))  # the weights' own
    assert module is not None


# ----------------------------------------------------------------------------- configs
def _hp(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "hp.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    "text",
    ["ppo: " + "[" * 5000 + "]" * 5000, "ppo: " + "{a: " * 2000 + "1" + "}" * 2000],
    ids=["lists", "mappings"],
)
def test_a_hyperparameter_file_nested_too_deeply_is_one_line(tmp_path, capsys, text):
    path = _hp(tmp_path, text)
    with pytest.raises(ConfigError, match="nested too deeply"):
        load_hyperparams("energy", path)
    rc = main(["train", ENV, "--config", str(path), "--out", str(tmp_path / "run")])
    err = _one_line(capsys.readouterr().err)
    assert rc == 2 and str(path) in err


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("policy_kwargs: {net_arch: [100000000, 100000000]}", r"widths in \[1, 65536\]"),
        ("policy_kwargs: {net_arch: [65536, 65536]}", f"over the {MAX_HIDDEN_WEIGHTS:,}"),
        ("policy_kwargs: {net_arch: {pi: [64], vf: [60000, 60000]}}", "weights between"),
        ("ppo: {n_steps: 1000000000}", r"ppo\.n_steps x train\.n_envs must be at most"),
        ("ppo: {n_steps: 65536}\ntrain: {n_envs: 128}", "got 65,536 x 128"),
        ("train: {n_envs: 100000}", r"train\.n_envs must be an integer in \[1, 1024\]"),
        ("ppo: {batch_size: 100000000}", r"ppo\.batch_size must be an integer in"),
        ("bc: {batch_size: 100000000}", r"bc\.batch_size must be an integer in"),
    ],
)
def test_sizes_no_machine_holds_are_refused_naming_the_field_and_range(tmp_path, text, message):
    with pytest.raises(ConfigError, match=message):
        load_hyperparams("energy", _hp(tmp_path, text))


@pytest.mark.parametrize(
    "text",
    [
        "policy_kwargs: {net_arch: [8192, 8192]}",
        "policy_kwargs: {net_arch: {pi: [1024, 1024, 1024], vf: [4096, 4096]}}",
        "ppo: {n_steps: 2048, batch_size: 65536}\ntrain: {n_envs: 1024}",
        "ppo: {n_steps: 4194304}",
    ],
)
def test_large_realistic_sizes_are_accepted(tmp_path, text):
    load_hyperparams("energy", _hp(tmp_path, text))


def test_resume_of_a_config_without_a_section_is_one_line(tmp_path, capsys):
    """``config.yaml`` without ``hyperparams.train``: a KeyError traceback before."""
    run = tmp_path / "run"
    run.mkdir()
    cfg = yaml.safe_load((SHIPPED / "config.yaml").read_text())
    del cfg["hyperparams"]["train"]
    (run / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    rc = main(["train", ENV, "--resume", "--out", str(run)])
    err = _one_line(capsys.readouterr().err)
    assert rc == 2 and "hyperparams has no train" in err and str(run) in err
    cfg = yaml.safe_load((SHIPPED / "config.yaml").read_text())
    cfg["hyperparams"]["ppo"]["n_steps"] = 10**9
    (run / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    assert main(["train", ENV, "--resume", "--out", str(run)]) == 2
    err = _one_line(capsys.readouterr().err)
    assert "ppo.n_steps x train.n_envs must be at most" in err


def test_a_lying_zip_directory_is_one_line(tmp_path):
    """An entry whose directory size is smaller than what it unpacks to is read only to that
    size (and then fails its checksum): it never unpacks past what the caps were checked on."""
    folder = _copy(tmp_path)
    model = folder / "model.zip"
    raw = bytearray(model.read_bytes())
    with zipfile.ZipFile(io.BytesIO(bytes(raw))) as z:
        size = z.getinfo("policy.pth").file_size
    at = 0  # policy.pth's central directory header: its unpacked size is at offset 24
    while True:
        at = raw.find(b"PK\x01\x02", at + 1)
        name_len = int.from_bytes(raw[at + 28 : at + 30], "little")
        if raw[at + 46 : at + 46 + name_len] == b"policy.pth":
            break
    raw[at + 24 : at + 28] = (size - 1000).to_bytes(4, "little")
    model.write_bytes(bytes(raw))
    with pytest.raises(PolicyLoadError, match="not an SB3 model zip"):
        load_model(folder)


def test_an_sb3_run_named_as_rllib_says_to_score_it_with_ppo(tmp_path):
    from edgegym.agents.rllib.policy import _find_checkpoint

    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "model.zip").write_bytes(b"")
    with pytest.raises(PolicyLoadError, match=r"not an RLlib checkpoint.*score it with ppo:PATH"):
        _find_checkpoint(tmp_path / "run")
    (tmp_path / "empty").mkdir()
    with pytest.raises(PolicyLoadError) as info:
        _find_checkpoint(tmp_path / "empty")
    assert "ppo:PATH" not in str(info.value)


@pytest.mark.parametrize("algo", [None, "a2c"])
def test_a_config_naming_no_known_algorithm_names_the_file(tmp_path, algo):
    folder = _copy(tmp_path)
    config = yaml.safe_load((folder / "config.yaml").read_text())
    if algo is None:
        del config["hyperparams"]["algo"]
    else:
        config["hyperparams"]["algo"] = algo
    (folder / "config.yaml").write_text(yaml.safe_dump(config))
    with pytest.raises(PolicyLoadError) as info:
        load_model(folder)
    assert f"training config {folder / 'config.yaml'}: hyperparams.algo: unknown algorithm" in (
        str(info.value)
    )

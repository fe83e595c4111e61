"""Learning curves (``python -m edgegym.agents.curves``): ``ship`` keeps every periodic
evaluation, and the figure is drawn from a run folder or a shipped folder alike."""

from __future__ import annotations

import json

import pytest
import yaml

from edgegym.agents.curves import curve_record, load_curve, main
from edgegym.agents.policy import TRAINED_DIR, PolicyLoadError
from edgegym.agents.ship import ship
from edgegym.outputs import is_edgegym_output


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """A 96-step energy run evaluated every 32 steps (one episode against ETF)."""
    from edgegym.agents.sb3.train import train

    out = tmp_path_factory.mktemp("curves") / "run"
    hp = ["ppo.n_steps=32", "ppo.batch_size=32", "eval.freq=32", "eval.episodes=1"]
    hp += ["checkpoint.freq=0", "train.vec_env=dummy", "train.scenarios=[]"]
    train(
        "edgegym/EnergyFairShare-v0",
        overrides={"quanta": 6},
        timesteps=96,
        n_envs=1,
        out=out,
        hyperparams=hp,
        progress=False,
    )
    return out


def test_ship_keeps_every_evaluation_as_the_curve(run, tmp_path):
    evals = json.loads((run / "evaluations.json").read_text())
    assert len(evals) >= 3  # at 32, 64 and 96 steps
    shipped = ship(run, model="best_model.zip", dest=tmp_path / "shipped").parent
    curve = yaml.safe_load((shipped / "config.yaml").read_text())["shipped"]["curve"]
    assert curve["timesteps"] == [e["timesteps"] for e in evals]
    assert curve["returns"] == pytest.approx([e["ppo_return"] for e in evals], abs=1e-4)
    assert curve["baseline"] == "etf"
    assert curve["baseline_return"] == pytest.approx(evals[-1]["baseline_return"], abs=1e-4)
    from_run, from_shipped = load_curve(run), load_curve(shipped)
    assert from_shipped.timesteps == from_run.timesteps
    assert from_shipped.returns == pytest.approx(from_run.returns, abs=1e-4)
    assert from_shipped.selected in from_shipped.timesteps  # best_model.zip's evaluation
    assert from_run.selected is None  # a run folder has not been shipped


def test_the_figure_is_an_edgegym_output_and_a_foreign_file_stays(run, tmp_path, capsys):
    png = tmp_path / "curves.png"
    assert main([str(run), str(run), "--out", str(png)]) == 0
    assert is_edgegym_output(png, "figure")
    assert main([str(run), "--out", str(png)]) == 0  # its own figure is replaced
    foreign = tmp_path / "mine.png"
    foreign.write_bytes(b"a figure of someone else")
    assert main([str(run), "--out", str(foreign)]) == 2
    assert foreign.read_bytes() == b"a figure of someone else"
    assert "--out" in capsys.readouterr().err


def test_a_folder_without_a_curve_is_named(run, tmp_path, capsys):
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "config.yaml").write_text((run / "config.yaml").read_text())
    with pytest.raises(PolicyLoadError, match=r"no evaluations\.json and no shipped\.curve"):
        load_curve(bare)
    assert main([str(bare), "--out", str(tmp_path / "x.png")]) == 2
    err = capsys.readouterr().err
    assert str(bare) in err and err.count("\n") == 1
    assert not (tmp_path / "x.png").exists()


def test_curve_record_skips_evaluations_without_a_return():
    evals = [
        {"timesteps": 10, "ppo_return": 1.0, "baseline": "b", "baseline_return": 2.0},
        {"timesteps": 20, "ppo_return": None},
        {"timesteps": 30, "ppo_return": 3.0, "baseline": "b", "baseline_return": 2.5},
    ]
    assert curve_record(evals) == {
        "timesteps": [10, 30],
        "returns": [1.0, 3.0],
        "baseline": "b",
        "baseline_return": 2.5,
    }
    assert curve_record([{"timesteps": 5, "ppo_return": None}]) is None


@pytest.mark.parametrize("family", ["continual", "mig", "energy", "dag"])
def test_every_shipped_policy_keeps_its_curve(family):
    curve = load_curve(TRAINED_DIR / family)
    assert len(curve.timesteps) >= 2 and curve.timesteps == sorted(curve.timesteps)
    assert curve.baseline_return is not None and curve.selected in curve.timesteps

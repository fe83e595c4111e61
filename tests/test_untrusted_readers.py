"""Results, run records and model files read back are untrusted inputs: each reader takes only
a regular file of bounded size, and a FIFO, a device or an oversize file gives one clear error
line at once (before, ``EvalResult.from_json`` on a FIFO blocked forever, and every reader
here read a device without bound)."""

from __future__ import annotations

import json
import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from edgegym.evaluation import EvalResult
from edgegym.inputs import LIMITS, InputError
from edgegym.outputs import is_edgegym_output


def _quickly(call: Callable[[], Any], seconds: float = 30) -> Any:
    """``call()``'s result, or the exception it raised; fails if it is still running after
    ``seconds`` (it would be blocked on a FIFO: the daemon thread is left behind)."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = call()
        except BaseException as exc:
            outcome["error"] = exc

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), "the reader blocked"
    return outcome.get("error", outcome.get("value"))


def _device(path: Path) -> None:
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 5))  # the same node as /dev/zero
    except PermissionError:
        pytest.skip("making a device node needs root")


def _one_line(exc: object, *words: str) -> None:
    assert isinstance(exc, ValueError), exc
    text = str(exc)
    assert "\n" not in text and all(w in text for w in words), text


@pytest.mark.parametrize("node", ["fifo", "device"])
def test_eval_result_from_json_refuses_a_fifo_or_a_device_at_once(tmp_path, node):
    path = tmp_path / "res.json"
    os.mkfifo(path) if node == "fifo" else _device(path)
    what = "a FIFO" if node == "fifo" else "a character device"
    _one_line(_quickly(lambda: EvalResult.from_json(path)), str(path), what, "not a regular")


def test_eval_result_from_json_refuses_an_oversize_file_and_a_foreign_json(tmp_path, monkeypatch):
    path = tmp_path / "res.json"
    path.write_text(json.dumps({"env": "x", "results": []}) + " " * 200)
    monkeypatch.setitem(LIMITS, "result", 100)
    _one_line(_quickly(lambda: EvalResult.from_json(path)), "over the")
    monkeypatch.undo()
    path.write_text('{"password": "hunter2"}')
    exc = _quickly(lambda: EvalResult.from_json(path))
    _one_line(exc, "not an edgegym evaluation result")
    assert "hunter2" not in str(exc)


def test_eval_result_from_json_still_reads_its_own_output(tmp_path):
    res = EvalResult(env="edgegym/ContinualLearning-v0", scenario=None, overrides={}, seeds=[0])
    res.results = [{"policy": "thief", "metrics": {}, "per_episode": []}]
    res.to_json(tmp_path / "res.json")
    back = EvalResult.from_json(tmp_path / "res.json")
    assert back.results[0]["policy"] == "thief" and back.seeds == [0]


@pytest.mark.parametrize("suffix", [".json", ".jsonl", ".md", ".png"])
def test_is_edgegym_output_is_false_for_a_fifo_at_once(tmp_path, suffix):
    path = tmp_path / f"out{suffix}"
    os.mkfifo(path)
    assert _quickly(lambda: is_edgegym_output(path, "evaluation")) is False


def test_the_train_error_report_skips_a_fifo_config(tmp_path):
    from edgegym.cli import _run_records

    os.mkfifo(tmp_path / "config.yaml")
    assert _quickly(lambda: _run_records(str(tmp_path))) == []


# ----------------------------------------------------------------------------- agents
def test_resumed_evaluations_refuse_a_fifo(tmp_path):
    from edgegym.agents.config import ConfigError
    from edgegym.agents.run.evaluation import Evaluations

    os.mkfifo(tmp_path / "evaluations.json")
    exc = _quickly(lambda: Evaluations(tmp_path, {}, resume=True))
    assert isinstance(exc, ConfigError) and "--resume" in str(exc) and "FIFO" in str(exc)


def test_resumed_evaluations_refuse_a_list_of_other_things(tmp_path):
    from edgegym.agents.config import ConfigError
    from edgegym.agents.run.evaluation import Evaluations

    (tmp_path / "evaluations.json").write_text('["hunter2-secret"]')
    exc = _quickly(lambda: Evaluations(tmp_path, {}, resume=True))
    assert isinstance(exc, ConfigError) and "hunter2" not in str(exc)


def test_ship_refuses_evaluations_that_are_a_fifo(tmp_path):
    from edgegym.agents.policy import PolicyLoadError
    from edgegym.agents.ship import read_evaluations

    os.mkfifo(tmp_path / "evaluations.json")
    exc = _quickly(lambda: read_evaluations(tmp_path))
    assert isinstance(exc, PolicyLoadError) and "FIFO" in str(exc)


def test_an_rllib_checkpoint_marker_that_is_a_fifo_is_no_checkpoint(tmp_path):
    pytest.importorskip("ray")
    from edgegym.agents.rllib.train import MARKER, _marker

    (tmp_path / "rllib_checkpoint.json").write_text("{}")
    os.mkfifo(tmp_path / MARKER)
    assert _quickly(lambda: _marker(tmp_path)) is None


def test_a_model_file_that_is_a_fifo_or_a_device_is_refused(tmp_path):
    from edgegym.agents.policy import PolicyLoadError, load_model
    from edgegym.agents.sb3.artifacts import UntrustedArtifact, zip_data

    os.mkfifo(tmp_path / "model.zip")
    exc = _quickly(lambda: load_model(tmp_path))
    assert isinstance(exc, PolicyLoadError) and "FIFO" in str(exc)
    exc = _quickly(lambda: zip_data(tmp_path / "model.zip"))
    assert isinstance(exc, UntrustedArtifact) and "FIFO" in str(exc)
    _device(tmp_path / "dev.zip")
    exc = _quickly(lambda: zip_data(tmp_path / "dev.zip"))
    assert isinstance(exc, UntrustedArtifact) and "character device" in str(exc)


def test_weights_over_the_cap_are_refused_before_reading(tmp_path, monkeypatch):
    from edgegym.agents import MAX_WEIGHTS_BYTES
    from edgegym.agents.policy import open_weights

    assert LIMITS["weights"] == MAX_WEIGHTS_BYTES >= 1 << 30
    (tmp_path / "w.pt").write_bytes(b"\0" * 200)
    monkeypatch.setitem(LIMITS, "weights", 100)
    with pytest.raises(InputError, match="over the"):
        open_weights(tmp_path / "w.pt", "weights file")
    monkeypatch.undo()
    with open_weights(tmp_path / "w.pt", "weights file") as fh:
        assert len(fh.read()) == 200


# ------------------------------------------------------------------ caps in proportion
ROOT = Path(__file__).resolve().parents[1]


def _largest(*patterns: str) -> int:
    return max(p.stat().st_size for pattern in patterns for p in ROOT.glob(pattern))


def test_scenario_and_config_caps_are_in_proportion_to_real_files():
    """PyYAML parses in pure Python (a 1 MB scenario of short values took 27-45 s and about
    0.5 GB): the caps were 16 MB, minutes and gigabytes of parsing."""
    assert 10 * _largest("scenarios/*.yaml") <= LIMITS["scenario"] <= 2 << 20
    assert 10 * _largest("agents/**/*.yaml", "agents/**/*.yml") <= LIMITS["config"] <= 2 << 20


def test_a_scenario_over_the_cap_is_refused_before_it_is_read(tmp_path):
    from edgegym.scenarios import ScenarioError, load

    path = tmp_path / "big.yaml"
    with open(path, "wb") as fh:
        fh.truncate(LIMITS["scenario"] + 1)  # sparse; PyYAML would refuse its NULs
    with pytest.raises(ScenarioError) as err:
        load(path)
    _one_line(err.value, str(path), "over the 1 MB read for a scenario file")


def test_reading_a_small_input_does_not_allocate_its_kinds_cap(tmp_path):
    """Before, every read asked for ``cap + 1`` bytes up front: 1 GB for a 1 kB trace."""
    import tracemalloc

    from edgegym.inputs import read_text

    path = tmp_path / "t.csv"
    path.write_text("1\n" * 500)
    tracemalloc.start()
    try:
        assert read_text(path, "arrival trace file", "trace") == "1\n" * 500
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


def test_a_file_that_grows_after_its_check_is_read_to_the_cap_only(tmp_path, monkeypatch):
    from edgegym import inputs

    path = tmp_path / "t.csv"
    path.write_bytes(b"1\n" * 25)  # 50 bytes; the check saw 10
    monkeypatch.setattr(inputs, "check_file", lambda *args: 10)
    monkeypatch.setitem(LIMITS, "trace", 64)
    assert inputs.read_bytes(path, "trace", "trace") == b"1\n" * 25
    path.write_bytes(b"1\n" * 40)  # 80 bytes: over the cap
    with pytest.raises(InputError, match="over the 64 bytes read for a trace file"):
        inputs.read_bytes(path, "trace", "trace")

"""``edgegym profile --base FILE`` reads the base scenario as an untrusted input: a FIFO, an
alias bomb, deep nesting or bytes that are not UTF-8 are refused at once in one line naming
the file, before any measuring (before, a FIFO blocked forever, an alias bomb ended in a
``StrictYAMLError`` traceback and the others in messages that named no file)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from edgegym.real.profile import _read_base
from edgegym.scenarios import ScenarioError

BOMB = "".join(
    f"{b}: &{b} [{', '.join([f'*{a}'] * 9)}]\n" for a, b in zip("abcdef", "bcdefg", strict=True)
)
CASES = {
    "bomb": 'a: &a ["x", "x", "x", "x", "x", "x", "x", "x", "x"]\n'
    + BOMB
    + "family: continual\nname: *g\n",
    "deep": "name: t\nfamily: continual\nstreams: " + "[" * 20_000 + "]" * 20_000 + "\n",
    "deep-map": "name: t\nfamily: continual\nstreams: " + "{a: " * 20_000 + "1" + "}" * 20_000,
}


def _refused(path: Path, *words: str) -> None:
    outcome: dict[str, BaseException] = {}

    def read() -> None:
        try:
            _read_base(path)
        except BaseException as exc:  # handed back to the test
            outcome["error"] = exc

    worker = threading.Thread(target=read, daemon=True)
    worker.start()
    worker.join(30)
    assert not worker.is_alive(), "the reader blocked"
    exc = outcome.get("error")
    assert isinstance(exc, ScenarioError), repr(exc)
    text = str(exc)
    assert "\n" not in text and str(path) in text and all(w in text for w in words), text


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_hostile_base_yaml_is_one_line_naming_it(tmp_path, case):
    path = tmp_path / f"{case}.yaml"
    path.write_text(CASES[case])
    says = "alias bomb" if case == "bomb" else "nested too deeply"
    _refused(path, says)


def test_a_base_that_is_not_utf8_or_a_fifo_is_refused_at_once(tmp_path):
    path = tmp_path / "bytes.yaml"
    path.write_bytes(b"\xff\xfename: t\n")
    _refused(path, "not a text file")
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    _refused(fifo, "FIFO")


def test_the_tiny_real_scenario_is_still_a_base():
    from edgegym.real import TINY_SCENARIO

    assert _read_base(TINY_SCENARIO)["family"] == "continual"


def test_a_base_of_another_family_names_the_flag_that_takes_it():
    """It said "the profiler writes continual scenarios", where --family mig profiles it."""
    with pytest.raises(ValueError, match=r"not a continual scenario.*; pass --family mig$"):
        _read_base("migrator-w1")

"""Paths are untrusted: outputs only ever replace regular files, inputs must be regular files
of bounded size, and error messages never repeat what an input file holds.

Every writer renames a new file over its target; over a device, a FIFO or a socket that swaps
a system object for a plain file, and over a symbolic link it leaves the link's target stale.
Every reader reads the whole file; ``/dev/zero`` would never end and a FIFO would block."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from edgegym import cli
from edgegym.inputs import LIMITS, InputError, read_text, token
from edgegym.outputs import check_output_path, save_figure, write_atomic, write_json, write_text

ENV = "edgegym/ContinualLearning-v0"
TINY = ["--set", "windows=2", "--set", "streams=2", "--episodes", "1", "--no-progress"]


def _fifo(path: Path) -> Callable[[], bool]:
    os.mkfifo(path)
    return lambda: stat.S_ISFIFO(os.lstat(path).st_mode)


def _symlink(path: Path) -> Callable[[], bool]:
    target = path.parent / f"target-of-{path.name}"
    target.write_text('{"edgegym_output": "evaluation"}\n')
    before = target.read_text()
    path.symlink_to(target)
    return lambda: path.is_symlink() and target.read_text() == before


def _socket(path: Path) -> Callable[[], bool]:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    sock.close()
    return lambda: stat.S_ISSOCK(os.lstat(path).st_mode)


def _device(path: Path) -> Callable[[], bool]:
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # the same node as /dev/null
    except PermissionError:
        pytest.skip("making a device node needs root")
    return lambda: stat.S_ISCHR(os.lstat(path).st_mode)


NODES = {"fifo": _fifo, "symlink": _symlink, "socket": _socket, "device": _device}


def _figure():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([0, 1])
    return fig


WRITERS: dict[str, Callable[[Path], object]] = {
    "write_atomic": lambda p: write_atomic(p, "x"),
    "write_json": lambda p: write_json(p, {"a": 1}, "evaluation"),
    "write_text": lambda p: write_text(p, "x", "report"),
    "save_figure": lambda p: save_figure(_figure(), p),
}


@pytest.mark.parametrize("node", sorted(NODES))
@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_every_writer_leaves_a_path_that_is_not_a_regular_file_as_it_is(tmp_path, node, writer):
    path = tmp_path / ("out.png" if writer == "save_figure" else "out.json")
    intact = NODES[node](path)
    with pytest.raises(ValueError, match="writes only regular files"):
        WRITERS[writer](path)
    assert intact()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp left


@pytest.mark.parametrize("node", sorted(NODES))
def test_check_output_path_refuses_them_even_with_force(tmp_path, node):
    path = tmp_path / "out.json"
    intact = NODES[node](path)
    with pytest.raises(ValueError, match=r"--json .*out\.json: is a"):
        check_output_path(path, flag="--json", kind="evaluation", force=True)
    assert intact()


@pytest.mark.parametrize("node", ["fifo", "symlink", "device"])
@pytest.mark.parametrize("flag", ["--json", "--plot"])
def test_the_cli_refuses_them_before_any_work_in_one_line(tmp_path, capsys, node, flag):
    path = tmp_path / ("out.png" if flag == "--plot" else "out.json")
    intact = NODES[node](path)
    rc = cli.main(["evaluate", ENV, *TINY, flag, str(path), "--force"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "writes only regular files" in err
    assert intact()


def test_a_writer_refuses_a_node_made_while_it_was_writing(tmp_path):
    """The check runs again just before the rename, so a FIFO put in place meanwhile stays."""
    from edgegym.outputs import replacing

    path = tmp_path / "out.json"
    with pytest.raises(ValueError, match="FIFO"), replacing(path) as tmp:
        Path(tmp).write_text("new\n")
        os.mkfifo(path)
    assert stat.S_ISFIFO(os.lstat(path).st_mode)
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]  # the temporary file is gone


# ------------------------------------------------------------------------------------- inputs
@pytest.mark.parametrize("special", ["/dev/zero", "fifo", "folder"])
def test_a_scenario_that_is_not_a_regular_file_is_one_line_and_never_read(tmp_path, special):
    if special == "fifo":
        path = tmp_path / "scenario.yaml"
        os.mkfifo(path)
    elif special == "folder":
        path = tmp_path / "scenario.yaml"
        path.mkdir()
    else:
        path = Path(special)
    # In a subprocess with a timeout: reading a FIFO would block, /dev/zero would never end.
    proc = subprocess.run(
        [sys.executable, "-m", "edgegym", "evaluate", ENV, "--scenario", str(path), *TINY],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert str(path) in proc.stderr


def test_an_input_over_its_cap_is_refused_before_reading(tmp_path, monkeypatch):
    big = tmp_path / "big.yaml"
    big.write_text("name: x\n" * 100)
    monkeypatch.setitem(LIMITS, "scenario", 64)
    with pytest.raises(InputError, match=r"big\.yaml: scenario file is .* over the"):
        read_text(big, "scenario file", "scenario")
    from edgegym.scenarios import ScenarioError, load

    with pytest.raises(ScenarioError, match="over the"):
        load(big)


SECRET = "AKIA_SECRET_TOKEN_123"


@pytest.mark.parametrize(
    "content",
    [
        f"root:{SECRET}:20228:0:99999:7:::\n",  # a header line
        f"count\n{SECRET}\n",  # a count
        f"1\n2\n{SECRET}\n",  # a plain line
        f"# interval_s: {SECRET}\n1\n",  # an interval
    ],
)
def test_a_trace_path_naming_any_file_never_echoes_its_content(tmp_path, content):
    from edgegym.scenarios import ScenarioError, load, resolve

    victim = tmp_path / "shadow"
    victim.write_text(content)
    text = resolve("migrator-w1").read_text()
    arrival = "{kind: alibaba, rate: 120, recur_s: 200, persistence: 0.5}"
    assert arrival in text
    scenario = tmp_path / "w1.yaml"
    scenario.write_text(text.replace(arrival, f"{{kind: trace, path: {victim}}}"))
    with pytest.raises(ScenarioError) as err:
        load(scenario)
    message = str(err.value)
    assert "shadow" in message and SECRET not in message and "root:" not in message


def test_yaml_errors_name_the_place_not_the_line(tmp_path):
    from edgegym.scenarios import ScenarioError, load

    bad = tmp_path / "bad.yaml"
    bad.write_text(f"name: x\nfamily: energy\n{SECRET}: [unclosed\n")
    with pytest.raises(ScenarioError, match=r"bad\.yaml: not valid YAML: line \d+") as err:
        load(bad)
    assert SECRET not in str(err.value)


@pytest.mark.parametrize(
    ("value", "shown"),
    [("-3", "'-3'"), ("1.5e3", "'1.5e3'"), ("abc", "'abc'"), ("", "''")],
)
def test_token_shows_short_plain_values(value, shown):
    assert token(value) == shown


@pytest.mark.parametrize("value", [SECRET, "root:x:0:0", "a b", "x" * 9, "é"])
def test_token_hides_anything_else(value):
    assert token(value) == f"a {len(value)}-character value"

"""One writer per output folder: a second ``train`` (or leaderboard) writing into a folder
another process is writing into is refused in one line naming the holder's PID, and a holder
that was killed leaves no lock behind (the operating system releases it)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from edgegym.cli import main
from edgegym.outputs import FolderLocked, folder_lock

ENV = "edgegym/EnergyFairShare-v0"
TRAIN = ["train", ENV, "--set", "quanta=10", "--timesteps", "64", "--n-envs", "1"]
HP = ["--hp", "ppo.n_steps=64", "--hp", "eval.freq=0", "--hp", "train.scenarios=[]"]


@pytest.fixture
def holder(tmp_path):
    """Another process holding ``tmp_path/run``'s lock until it is killed."""
    folder = tmp_path / "run"
    code = textwrap.dedent(
        """
        import sys, time
        from edgegym.outputs import folder_lock
        with folder_lock(sys.argv[1], "train"):
            print("held", flush=True)
            time.sleep(600)
        """
    )
    proc = subprocess.Popen([sys.executable, "-c", code, str(folder)], stdout=subprocess.PIPE)
    assert proc.stdout.readline().strip() == b"held"
    yield folder, proc
    proc.kill()
    proc.wait()


def test_a_second_writer_is_refused_while_the_first_runs_and_allowed_after_it_is_killed(
    holder, capsys
):
    folder, proc = holder
    argv = [*TRAIN, *HP, "--out", str(folder), "--no-progress"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"PID {proc.pid}" in err and "writing into this folder" in err
    assert not (folder / "config.yaml").exists()  # refused before anything was written
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert main(argv) == 0  # the killed holder's lock went with it
    assert (folder / "model.zip").is_file()


def test_the_leaderboard_holds_its_folder_too(holder, capsys):
    folder, proc = holder
    rc = main(["leaderboard", "--render-only", "--out", str(folder)])
    assert rc == 2 and f"PID {proc.pid}" in capsys.readouterr().err


def test_the_lock_is_per_folder_and_reentrant_after_release(tmp_path):
    with folder_lock(tmp_path / "a", "x"), folder_lock(tmp_path / "b", "x"):
        with pytest.raises(FolderLocked, match=f"PID {os.getpid()}"):
            # flock locks are per open file: a second open in the same process conflicts too
            with folder_lock(tmp_path / "a", "x"):
                pass
    with folder_lock(tmp_path / "a", "x"):
        pass


def test_a_reproduction_holds_its_folder_until_it_ends(holder, capsys, monkeypatch):
    from edgegym.outputs import release_folders
    from edgegym.reproduce import etf

    monkeypatch.setattr(etf, "SWEEP", (etf.BASE,))  # the lock, not the sweep, is tested here
    folder, proc = holder
    assert etf.main(["--out", str(folder)]) == 2
    assert f"PID {proc.pid}" in capsys.readouterr().err
    proc.kill()
    proc.wait()
    try:
        assert etf.main(["--out", str(folder)]) == 0  # the killed holder's lock went with it
        assert (folder / "etf.md").is_file()
    finally:
        release_folders()


def test_a_folder_that_cannot_be_made_is_one_valueerror_naming_it(tmp_path):
    """An OSError while making the folder or its lock file was a chained traceback (audit
    item 9); the leaderboard and the reproductions print a ValueError in one line."""
    long = tmp_path / ("a" * 300)
    with pytest.raises(
        ValueError, match=r"cannot create the output folder \(File name too long\)$"
    ):
        with folder_lock(long, "x"):
            pass
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match=r"file/sub: cannot create the output folder \(Not a"):
        with folder_lock(tmp_path / "file" / "sub", "x"):
            pass


@pytest.mark.parametrize(
    "argv",
    [
        ["edgegym", "leaderboard", "--families", "energy", "--quick", "--out", "/proc/lb"],
        ["edgegym", "leaderboard", "--render-only", "--out", "{tmp}/" + "a" * 300],
        ["python -m edgegym.reproduce.migrator", "--render-only", "--out", "/proc/x"],
        ["python -m edgegym.reproduce.srs", "--render-only", "--out", "/proc/x"],
    ],
)
def test_an_out_folder_that_cannot_be_made_is_one_line(tmp_path, capsys, argv):
    """As root os.access says /proc is writable, so the folder lock's mkdir was the first to
    fail; a 300-character name failed in the pre-flight check. Both are one line, exit 2."""
    import importlib

    from edgegym.outputs import release_folders

    prog, *args = (a.format(tmp=tmp_path) for a in argv)
    try:
        if prog == "edgegym":
            rc = main(args)
        else:
            rc = importlib.import_module(prog.split()[-1]).main(args)
    finally:
        release_folders()
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and err.startswith(f"{prog}: error: "), err
    assert "cannot" in err

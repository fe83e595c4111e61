"""Outputs never destroy a file edgegym did not write, never an input of the same command,
and are written atomically (issue 17, part 2); bad policy specs and scenario paths are one
line (part 2b)."""

from __future__ import annotations

import errno
import json
import os
import re
from pathlib import Path

import gymnasium as gym
import pytest
import yaml

from edgegym import cli
from edgegym.baselines import make_policy, parse_policy
from edgegym.outputs import check_output_path, is_edgegym_output, write_atomic, write_json
from edgegym.scenarios import resolve

ENV = "edgegym/ContinualLearning-v0"
TINY = ["--set", "windows=2", "--set", "streams=2", "--episodes", "1", "--no-progress"]


def _no_work(monkeypatch):
    import edgegym.evaluation as ev

    def boom(*args, **kwargs):
        raise AssertionError("the evaluation ran although an output path was refused")

    monkeypatch.setattr(ev, "evaluate", boom)


def test_a_foreign_json_is_kept_unless_forced(tmp_path, capsys):
    mine = tmp_path / "keep.json"
    mine.write_text('{"mine": 1}\n')
    assert cli.main(["evaluate", ENV, *TINY, "--json", str(mine)]) == 2
    assert "not an edgegym evaluation output" in capsys.readouterr().err
    assert mine.read_text() == '{"mine": 1}\n'
    # Its own output is rewritten without --force; a foreign one with --force.
    ours = tmp_path / "ours.json"
    assert cli.main(["evaluate", ENV, *TINY, "--json", str(ours)]) == 0
    assert cli.main(["evaluate", ENV, *TINY, "--json", str(ours)]) == 0
    assert json.loads(ours.read_text())["edgegym_output"] == "evaluation"
    assert cli.main(["evaluate", ENV, *TINY, "--json", str(mine), "--force"]) == 0
    assert json.loads(mine.read_text())["env"] == ENV


def test_an_input_is_never_an_output_and_bad_paths_fail_before_work(tmp_path, monkeypatch, capsys):
    scenario = tmp_path / "good.yaml"
    scenario.write_text(resolve("ekya-table1").read_text())
    before = scenario.read_text()
    _no_work(monkeypatch)
    for extra in (
        ["--scenario", str(scenario), "--json", str(scenario), "--force"],
        ["--plot", str(tmp_path / "x.zzz")],
        ["--plot", str(tmp_path / "img.png")],  # a foreign image (written below)
    ):
        (tmp_path / "img.png").write_bytes(b"\x89PNG not ours")
        assert cli.main(["evaluate", ENV, *TINY, *extra]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "error:" in err
    assert scenario.read_text() == before
    assert (tmp_path / "img.png").read_bytes() == b"\x89PNG not ours"


def test_figures_carry_the_marker_and_json_the_kind(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from edgegym.outputs import save_figure

    for ext in ("png", "pdf", "svg"):
        path = tmp_path / f"f.{ext}"
        save_figure(plt.figure(), path)
        assert is_edgegym_output(path, "figure")
        check_output_path(path, kind="figure")  # ours: may be rewritten
    plt.close("all")
    legacy = tmp_path / "legacy.json"  # an evaluation written before the marker existed
    legacy.write_text(json.dumps({"env": ENV, "scenario": "s", "seeds": [0], "results": []}))
    assert is_edgegym_output(legacy, "evaluation")
    write_json(tmp_path / "r.json", {"x": 1}, "fidelity")
    assert is_edgegym_output(tmp_path / "r.json", "fidelity")
    assert not is_edgegym_output(tmp_path / "r.json", "evaluation")
    with pytest.raises(ValueError, match="not an edgegym evaluation output"):
        check_output_path(tmp_path / "r.json", kind="evaluation")


def test_an_interrupted_write_leaves_the_old_file(tmp_path, monkeypatch):
    path = tmp_path / "out.json"
    path.write_text("old")

    def fail(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", fail)
    with pytest.raises(KeyboardInterrupt):
        write_atomic(path, "new" * 1000)
    assert path.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]  # no temp file left
    monkeypatch.undo()
    write_atomic(path, "new")
    assert path.read_text() == "new"


def test_policy_specs_are_strict():
    env = gym.make(ENV, windows=2, streams=2)
    with pytest.raises(ValueError, match="oracle must be true or false, got 'no'"):
        make_policy("thief:oracle=no", env)
    with pytest.raises(ValueError, match="'delta' is given twice"):
        parse_policy("thief:delta=0.1,delta=0.2")
    with pytest.raises(ValueError, match="a policy spec is a string"):
        make_policy(None, env)
    assert make_policy("thief:oracle=TRUE", env).oracle is True


def test_a_scenario_folder_is_one_line(tmp_path, capsys):
    assert cli.main(["evaluate", ENV, "--scenario", str(tmp_path), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "is a folder" in err and err.count("\n") == 1


def test_interrupted_evaluate_keeps_the_episodes_it_finished(tmp_path, monkeypatch, capsys):
    """Ctrl-C in the third episode: exit 130, one line, and --json holds the two finished
    episodes (the policy cut short says so)."""
    import json

    import edgegym.evaluation as ev
    from edgegym.cli import main

    real, calls = ev._run_episode, []

    def stop_third(env, policy, seed):
        calls.append(seed)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(env, policy, seed)

    monkeypatch.setattr(ev, "_run_episode", stop_third)
    out = tmp_path / "kept.json"
    argv = ["evaluate", "edgegym/EnergyFairShare-v0", "--policy", "etf", "--policy", "random"]
    rc = main([*argv, "--episodes", "2", "--json", str(out), "--no-progress"])
    assert rc == 130
    printed = capsys.readouterr()
    err = printed.err.strip().splitlines()
    assert err == [f"edgegym: interrupted; kept 2 finished episode(s) in {out}"]
    rows = [line.split()[0] for line in printed.out.splitlines() if line.strip()]
    assert "etf" in rows and "random" not in rows  # the finished ones' table
    # Without --json the table is all there is (it was nothing but "interrupted").
    calls.clear()
    assert main([*argv, "--episodes", "2", "--no-progress"]) == 130
    printed = capsys.readouterr()
    assert "etf" in [line.split()[0] for line in printed.out.splitlines() if line.strip()]
    assert printed.err.strip() == (
        "edgegym: interrupted; the table above holds the 2 finished episode(s) (--json keeps "
        "them in a file)"
    )
    data = json.loads(out.read_text())
    assert data["edgegym_output"] == "evaluation"
    assert [r["policy"] for r in data["results"]] == ["etf"]
    assert [e["seed"] for e in data["results"][0]["per_episode"]] == [0, 1]


def test_text_outputs_carry_the_marker_in_a_first_line_comment(tmp_path):
    from edgegym.outputs import write_text

    report = write_text(tmp_path / "r.md", "# Title\n", "report")
    assert report.read_text().splitlines() == ["<!-- edgegym_output: report -->", "# Title"]
    assert is_edgegym_output(report, "report") and not is_edgegym_output(report, "scenario")
    scen = write_text(tmp_path / "s.yaml", "name: x\n", "scenario")
    assert is_edgegym_output(scen, "scenario")
    mine = tmp_path / "notes.md"
    mine.write_text("# my notes, mentioning edgegym_output: report\n")
    assert not is_edgegym_output(mine, "report")


def test_an_output_folder_never_loses_a_file_edgegym_did_not_write(tmp_path):
    from edgegym.outputs import check_output_folder, write_text

    files = {"a.md": "report", "b.png": "figure", "c.json": "claims"}
    check_output_folder(tmp_path / "new", files)  # nothing there yet
    (tmp_path / "b.png").write_bytes(b"\x89PNG someone's plot")
    with pytest.raises(ValueError, match=r"b\.png: exists and is not an edgegym figure output"):
        check_output_folder(tmp_path, files)
    check_output_folder(tmp_path, files, force=True)
    (tmp_path / "b.png").unlink()
    write_text(tmp_path / "a.md", "x", "report")
    write_json(tmp_path / "c.json", {}, "claims")
    check_output_folder(tmp_path, files)  # edgegym's own outputs are rewritten


@pytest.mark.parametrize(
    ("argv", "victim"),
    [
        (["-m", "edgegym.leaderboard", "--render-only"], "leaderboard.md"),
        (["-m", "edgegym.leaderboard", "--render-only"], "leaderboard-dag.png"),
        (["-m", "edgegym.reproduce.etf"], "etf-phi.png"),
        (["-m", "edgegym.reproduce.srs", "--render-only"], "srs.md"),
        (["-m", "edgegym.reproduce.migrator", "--render-only"], "claims.json"),
        (["-m", "edgegym.reproduce", "all", "--quick"], "README.md"),
    ],
)
def test_report_commands_refuse_to_overwrite_a_foreign_file(tmp_path, argv, victim):
    """A file in --out named like one of the command's outputs but not written by edgegym is
    refused in one line before any work, and stays as it was."""
    import subprocess
    import sys

    (tmp_path / victim).write_text("mine\n")
    proc = subprocess.run(
        [sys.executable, *argv, "--out", str(tmp_path)], capture_output=True, text=True
    )
    assert proc.returncode == 2, proc.stderr
    assert f"{victim}: exists and is not an edgegym" in proc.stderr
    assert proc.stderr.count("\n") == 1
    assert (tmp_path / victim).read_text() == "mine\n"


def test_single_file_writers_refuse_a_foreign_file(tmp_path, capsys):
    from edgegym.reproduce.migrator_workloads import write_scenarios
    from edgegym.workload import traces

    sample = tmp_path / "azure.csv"
    sample.write_text("my real trace\n")
    assert traces.main(["--write-sample", str(sample)]) == 2
    assert "--force" in capsys.readouterr().err
    assert sample.read_text() == "my real trace\n"
    assert traces.main(["--write-sample", str(sample), "--force"]) == 0
    assert sample.read_text().startswith("HashOwner")
    (tmp_path / "migrator-w3.yaml").write_text("name: mine\n")
    with pytest.raises(ValueError, match="was not written by"):
        write_scenarios(tmp_path)
    assert (tmp_path / "migrator-w3.yaml").read_text() == "name: mine\n"
    assert not (tmp_path / "migrator-w1.yaml").exists()  # checked before any write
    mine = tmp_path / "measured.yaml"
    mine.write_text("name: mine\n")
    assert cli.main(["profile", "--out", str(mine)]) == 2
    assert "not an edgegym scenario output" in capsys.readouterr().err
    assert mine.read_text() == "name: mine\n"


def test_a_new_training_run_never_overwrites_files_it_did_not_write(tmp_path, capsys):
    (tmp_path / "evaluations.json").write_text("[]")
    rc = cli.main(["train", "edgegym/EnergyFairShare-v0", "--out", str(tmp_path)])
    assert rc == 2
    assert "holds evaluations.json but no training run" in capsys.readouterr().err
    assert (tmp_path / "evaluations.json").read_text() == "[]"


def test_an_interrupted_pool_map_keeps_the_finished_results(monkeypatch):
    from edgegym.parallel import MapInterrupted, Runner

    def three_then_stop(self, fn, jobs):
        for i in (2, 0, 3):
            yield i, fn(jobs[i])
        raise KeyboardInterrupt

    monkeypatch.setattr(Runner, "imap_unordered", three_then_stop)
    with pytest.raises(MapInterrupted) as stop:
        Runner(workers=2).map(str, range(6), progress=False)
    assert stop.value.results == ["0", None, "2", "3", None, None]


def test_a_parallel_evaluate_interrupted_keeps_each_policys_finished_prefix(monkeypatch):
    """Two policies x 3 seeds on a pool; Ctrl-C after jobs 0, 1 (etf seeds 0-1) and 4 (random
    seed 1): etf keeps seeds 0-1, random nothing (its seed 0 had not finished)."""
    import edgegym.evaluation as ev
    from edgegym.parallel import Runner

    def some_then_stop(self, fn, jobs):
        for i in (1, 4, 0):
            yield i, fn(jobs[i])
        raise KeyboardInterrupt

    monkeypatch.setattr(Runner, "imap_unordered", some_then_stop)
    with pytest.raises(ev.EvaluationInterrupted) as stop:
        ev.evaluate("edgegym/EnergyFairShare-v0", ["etf", "random"], episodes=3, workers=2,
                    progress=False)  # fmt: skip
    (entry,) = stop.value.result.results
    assert entry["policy"] == "etf" and entry["error"] == "interrupted after 2 episode(s)"
    assert [e["seed"] for e in entry["per_episode"]] == [0, 1]


def test_ctrl_c_from_a_terminal_on_a_worker_pool_is_one_line(tmp_path):
    """SIGINT to the whole process group (a terminal's Ctrl-C) while pool workers run: the
    workers leave it to the parent, which prints one line, exits 130 and keeps the finished
    episodes in --json."""
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "ev.json"
    proc = subprocess.Popen(
        [sys.executable, "-m", "edgegym", "evaluate", "edgegym/EnergyFairShare-v0",
         "--episodes", "400", "--workers", "2", "--json", str(out), "--no-progress"],
        start_new_session=True, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )  # fmt: skip
    time.sleep(12)  # imports, the spawned workers, a few episodes
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert len(err.strip().splitlines()) == 1 and "interrupted" in err, err
    assert json.loads(out.read_text())["edgegym_output"] == "evaluation"


# ------------------------------------------------------- outputs that share a path, failed writes
def _one_error(capsys) -> str:
    """The one ``edgegym: error:`` line on stderr (asserted to be the only line)."""
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("edgegym: error: "), err
    return err.strip()


def _rescued(line: str) -> Path:
    """The rescue file a failed write names (``... saved to PATH instead``)."""
    found = re.search(r"the output was saved to (\S+) instead$", line)
    assert found, line
    return Path(found.group(1))


@pytest.fixture
def full_disk(monkeypatch):
    """Writes to the paths added to the returned set fail as on a full disk (ENOSPC, the
    error naming the temporary file, as the OS does) after the pre-flight check passed."""
    full: set[Path] = set()
    real = os.replace

    def replace(src, dst, *args, **kwargs):
        if Path(dst).absolute() in full:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(src))
        return real(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "replace", replace)
    return full


@pytest.mark.parametrize(
    "pair",
    [
        ("same.png", "same.png"),
        ("same.png", "{tmp}/sub/../same.png"),
        ("same.png", "link/same.png"),
    ],
)
def test_two_outputs_sharing_one_path_are_refused_before_any_work(
    tmp_path, monkeypatch, capsys, pair
):
    """--json X --plot X wrote the figure over the JSON without a word (audit item 2)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    (tmp_path / "link").symlink_to(tmp_path)
    _no_work(monkeypatch)
    json_path, plot_path = (p.format(tmp=tmp_path) for p in pair)
    rc = cli.main(["evaluate", ENV, *TINY, "--json", json_path, "--plot", plot_path])
    assert rc == 2
    line = _one_error(capsys)
    assert line == (
        f"edgegym: error: --plot {plot_path}: is also the output of --json {json_path}; the "
        "second write would replace the first, give each output its own path"
    )
    assert not (tmp_path / "same.png").exists()


def test_check_distinct_outputs_knows_a_hard_link_and_lets_distinct_paths_pass(tmp_path):
    from edgegym.outputs import check_distinct_outputs

    (tmp_path / "a.json").write_text("{}")
    os.link(tmp_path / "a.json", tmp_path / "b.png")
    with pytest.raises(ValueError, match=r"^--plot .*b\.png: is also the output of --json"):
        check_distinct_outputs([(tmp_path / "a.json", "--json"), (tmp_path / "b.png", "--plot")])
    check_distinct_outputs([(tmp_path / "a.json", "--json"), (None, "--plot")])
    check_distinct_outputs([(tmp_path / "a.json", "--json"), (tmp_path / "c.png", "--plot")])


@pytest.mark.parametrize("failing", ["--json", "--plot"])
def test_a_write_that_fails_after_evaluating_keeps_the_output_in_a_rescue_file(
    tmp_path, monkeypatch, capsys, full_disk, failing
):
    """A full disk at the end of an evaluation was a traceback naming a temporary file, and
    the results were lost (audit item 3): now one line naming the flag and the path, the
    output saved in the current folder, and the other output still written."""
    here = tmp_path / "here"
    here.mkdir()
    monkeypatch.chdir(here)
    paths = {"--json": tmp_path / "out" / "ev.json", "--plot": tmp_path / "out" / "ev.png"}
    full_disk.add(paths[failing])
    argv = ["evaluate", ENV, *TINY, "--json", str(paths["--json"]), "--plot", str(paths["--plot"])]
    assert cli.main(argv) == 2
    line = _one_error(capsys)
    rescued = _rescued(line)
    assert line.startswith(
        f"edgegym: error: {failing} {paths[failing]}: cannot write it (No space left on device); "
    )
    assert rescued.parent == here and ".ev." not in line  # never the temporary file's name
    kind = "evaluation" if failing == "--json" else "figure"
    assert is_edgegym_output(rescued, kind)
    if failing == "--json":
        assert json.loads(rescued.read_text())["results"][0]["policy"] == "thief"
    assert not paths[failing].exists()
    other = paths["--plot" if failing == "--json" else "--json"]
    assert other.is_file()  # the other output is written all the same
    assert sorted(p.name for p in other.parent.iterdir()) == [other.name]  # no temp file left


@pytest.mark.skipif(os.geteuid() != 0, reason="root passes the pre-flight check for /proc")
def test_an_unwritable_place_found_only_when_writing_keeps_both_outputs(
    tmp_path, monkeypatch, capsys
):
    """As root, os.access says /proc is writable: the write itself fails (/proc/x.json, and
    /proc/sub/ for the figure, which cannot be made)."""
    monkeypatch.chdir(tmp_path)
    argv = ["evaluate", ENV, *TINY, "--json", "/proc/x.json", "--plot", "/proc/sub/y.png"]
    assert cli.main(argv) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert [ln.split(": cannot write it")[0] for ln in lines] == [
        "edgegym: error: --json /proc/x.json",
        "edgegym: error: --plot /proc/sub/y.png",
    ]
    json_kept, figure_kept = (_rescued(ln) for ln in lines)
    assert json_kept.parent == figure_kept.parent == tmp_path
    assert is_edgegym_output(json_kept, "evaluation") and is_edgegym_output(figure_kept, "figure")


def test_a_failed_fidelity_json_keeps_the_report(tmp_path, monkeypatch, capsys, full_disk):
    pytest.importorskip("sklearn")
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out" / "fid.json"
    full_disk.add(out)
    assert cli.main(["fidelity", ENV, "--policy", "thief", "--json", str(out)]) == 2
    line = _one_error(capsys)
    assert line.startswith(f"edgegym: error: --json {out}: cannot write it (No space left")
    report = json.loads(_rescued(line).read_text())
    assert report["edgegym_output"] == "fidelity" and report["windows"]
    assert not out.exists()


def test_a_failed_profile_out_keeps_the_measured_scenario(tmp_path, monkeypatch, capsys, full_disk):
    pytest.importorskip("torch")
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out" / "p.yaml"
    full_disk.add(out)
    tiny = ["--device", "cpu", "--repeats", "2", "--width", "4", "--power-seconds", "0.02"]
    assert cli.main(["profile", "--family", "energy", *tiny, "--out", str(out)]) == 2
    line = _one_error(capsys)
    assert line.startswith(f"edgegym: error: --out {out}: cannot write it (No space left")
    kept = _rescued(line)
    assert kept.suffix == ".yaml" and is_edgegym_output(kept, "scenario")
    assert "measured" in yaml.safe_load(kept.read_text())["provenance"]


def test_a_failed_benchmark_json_keeps_the_numbers(tmp_path, monkeypatch, capsys, full_disk):
    import benchmarks.__main__ as bench
    from edgegym.outputs import run_command

    monkeypatch.setattr(bench, "_run", lambda cfg, core: {"measured": 42})
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "b.json"
    full_disk.add(out)
    argv = ["--quick", "--no-pin", "--json", str(out)]
    assert run_command(lambda: bench.main(argv), bench.PROG) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(f"python -m benchmarks: error: --json {out}: cannot write it (")
    kept = json.loads(_rescued(err.strip()).read_text())
    assert kept["edgegym_output"] == "benchmark" and kept["measured"] == 42


def test_a_rescue_goes_to_the_temp_folder_then_to_stdout(tmp_path, monkeypatch, capsys, full_disk):
    """The current folder first; a folder that does not take the file is skipped; with no
    folder left, text is printed on stdout so it is still not lost."""
    from edgegym import outputs
    from edgegym.outputs import OutputWriteError

    out = tmp_path / "r.json"
    full_disk.add(out)
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(outputs, "rescue_folders", lambda: [tmp_path / "gone", temp])
    with pytest.raises(OutputWriteError) as failed:
        write_json(out, {"x": 1}, "fidelity", flag="--json")
    assert failed.value.rescued is not None and failed.value.rescued.parent == temp
    assert str(failed.value) == (
        f"--json {out}: cannot write it (No space left on device); the output was saved to "
        f"{failed.value.rescued} instead"
    )
    assert json.loads(failed.value.rescued.read_text())["x"] == 1
    monkeypatch.setattr(outputs, "rescue_folders", lambda: [tmp_path / "gone"])
    capsys.readouterr()
    with pytest.raises(OutputWriteError, match="printed on stdout instead"):
        write_json(out, {"x": 2}, "fidelity")
    assert json.loads(capsys.readouterr().out)["x"] == 2


def test_a_name_too_long_is_one_line_before_any_work(tmp_path, monkeypatch, capsys):
    """ENAMETOOLONG in the pre-flight check was a traceback (audit item 9)."""
    _no_work(monkeypatch)
    for flag, ext in (("--json", ".json"), ("--plot", ".png")):
        path = tmp_path / ("a" * 300 + ext)
        assert cli.main(["evaluate", ENV, *TINY, flag, str(path)]) == 2
        assert (
            _one_error(capsys)
            == f"edgegym: error: {flag} {path}: cannot be used (File name too long)"
        )
    with pytest.raises(ValueError, match=r"^--out .*: cannot be used \(File name too long\)$"):
        check_output_path(tmp_path / ("a" * 300), folder=True, flag="--out")


def test_a_timeline_of_a_failed_policy_says_so_and_the_figure_is_still_drawn(
    tmp_path, monkeypatch, capsys
):
    """--timeline NAME where NAME raised: no figure at all and a message that did not say why
    (audit item 20); now the ranked figure is drawn and the line says the policy failed."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sched.py").write_text(
        "class Raises:\n"
        "    def __init__(self, env):\n"
        "        pass\n\n"
        "    def predict(self, obs, **kwargs):\n"
        "        raise KeyError('oops')\n"
    )
    fig, out = tmp_path / "fig.png", tmp_path / "ev.json"
    argv = ["evaluate", ENV, *TINY, "--policy", "thief", "--policy", "sched.py:Raises"]
    rc = cli.main([*argv, "--json", str(out), "--plot", str(fig), "--timeline", "sched.py:Raises"])
    assert rc == 1  # a policy failed; the arguments were fine
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-2].startswith("edgegym: error: policy 'sched.py:Raises' failed: KeyError")
    assert err[-1] == (
        "edgegym: error: --timeline sched.py:Raises: the policy failed, so the --plot figure "
        "was drawn without its time panels"
    )
    assert is_edgegym_output(fig, "figure") and is_edgegym_output(out, "evaluation")

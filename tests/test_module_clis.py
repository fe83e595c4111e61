"""The ``python -m`` helpers reject bad input with one ``<prog>: error:`` line and exit code 2.

Covers ``python -m edgegym.reproduce.{ekya,etf,migrator,srs}``, ``python -m
edgegym.workload.traces`` and ``python -m benchmarks``. The checks must run before any work:
the in-process tests replace each module's work with a function that fails the test, so a check
that moved after the work (or went away) fails here at once instead of starting a long run.
"""

from __future__ import annotations

import string
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from edgegym.reproduce import ekya, ekya_inputs, etf, migrator, srs, srs_report
from edgegym.scenarios import ScenarioError, load
from edgegym.workload import traces
from edgegym.workload.continual import sample_profile

REPO = Path(__file__).resolve().parents[1]


def _no_work(*_args, **_kwargs):
    raise AssertionError("the command started work before rejecting its arguments")


@pytest.fixture(autouse=True)
def no_work(monkeypatch):
    """Every module's long work fails the test if it is reached."""
    monkeypatch.setattr(ekya, "evaluate", _no_work)
    monkeypatch.setattr(etf, "run", _no_work)
    monkeypatch.setattr(etf, "load", _no_work)
    monkeypatch.setattr(migrator, "run_one", _no_work)
    monkeypatch.setattr(srs, "run_one", _no_work)
    monkeypatch.setattr(traces, "write_azure_functions_sample", _no_work)
    monkeypatch.setattr(traces, "_stats_table", _no_work)


@pytest.fixture
def a_file(tmp_path) -> Path:
    """An existing file, so that ``<a_file>/x`` cannot be created."""
    path = tmp_path / "a-file.txt"
    path.write_text("not a folder\n")
    return path


def _error_line(rc: int | None, err: str, prog: str) -> str:
    """Check exit code 2, no traceback and exactly one ``<prog>: error:`` line; return it."""
    assert rc == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"{prog}: error: "), err
    return lines[0]


# ----------------------------------------------------------------------------- ekya
@pytest.mark.parametrize("episodes", ["0", "-2"])
def test_ekya_rejects_episodes_below_one(capsys, tmp_path, episodes):
    rc = ekya.main(["--episodes", episodes, "--out", str(tmp_path / "out")])
    line = _error_line(rc, capsys.readouterr().err, ekya.PROG)
    assert f"--episodes must be >= 1, got {episodes}" in line
    assert not (tmp_path / "out").exists()


def test_ekya_rejects_an_unknown_scenario_naming_the_ones_that_fit(capsys, tmp_path):
    rc = ekya.main(["--scenario", "nope", "--out", str(tmp_path)])
    line = _error_line(rc, capsys.readouterr().err, ekya.PROG)
    assert "--scenario nope: unknown scenario" in line
    assert "ekya-cityscapes" in line and "ekya-waymo" in line
    assert "migrator-w1" not in line  # only the scenarios this reproduction can run


def test_ekya_rejects_a_scenario_without_10_streams(capsys, tmp_path):
    rc = ekya.main(["--scenario", "ekya-table1", "--out", str(tmp_path)])
    line = _error_line(rc, capsys.readouterr().err, ekya.PROG)
    assert "--scenario ekya-table1: has 2 streams, not 10" in line
    bundled = (
        "ekya-cityscapes, ekya-cityscapes-authors-profiles, ekya-cityscapes-fig2c-drift, "
        "ekya-cityscapes-interpolated-rates, ekya-cityscapes-mps-interference, "
        "ekya-cityscapes-peak-throughput"
    )
    assert f"bundled: {bundled}, ekya-waymo" in line


def test_ekya_rejects_other_families(capsys, tmp_path):
    rc = ekya.main(["--scenario", "migrator-w1", "--out", str(tmp_path)])
    line = _error_line(rc, capsys.readouterr().err, ekya.PROG)
    assert "is a mig scenario, not a continual-learning one" in line


def test_ekya_runs_10_stream_tables_on_their_first_streams(table_scenario, write_scenario):
    """Per-stream tables of 10 serve the 1..10 stream sweep: k streams are the table's first k
    (Ekya §6.1 adds streams in a fixed order); fewer rows than streams stay an error."""
    drift = table_scenario["drift"]
    table_scenario["streams"] = 10
    table_scenario.pop("profiler_noise", None)  # the sections override profiler.error
    drift["start_accuracy"] = [0.5 + 0.01 * v for v in range(10)]
    drift["post_accuracy"] = [[[0.9, 0.7]]] + [[[0.8, 0.7]]] * 9
    drift["gpu_seconds"] = [[[40 + v, 10]] for v in range(10)]
    path = write_scenario(table_scenario)
    assert ekya.scenario_problem(str(path)) is None
    prof = sample_profile(drift, [None, None], 3, 1, np.random.default_rng(0))
    assert prof.start_acc.tolist() == [0.5, 0.51, 0.52]
    assert prof.gpu_seconds[:, 0, 0].tolist() == [40, 41, 42]
    assert prof.post_acc[:, 0, 0].tolist() == [0.9, 0.8, 0.8]
    drift["start_accuracy"] = [0.5, 0.6]  # two rows for ten streams
    with pytest.raises(ScenarioError, match=r"drift\.start_accuracy"):
        load(str(write_scenario(table_scenario)))


def test_ekya_rejects_a_quantum_its_exact_search_cannot_take(capsys, tmp_path):
    """The exact search of sections (d) and (h) takes at most 800 quanta: 4 GPUs in quanta of
    0.001 are refused before any section runs."""
    sc = yaml.safe_load((REPO / "scenarios" / "ekya-cityscapes.yaml").read_text())
    sc["hardware"]["share_quantum"] = 0.001
    path = tmp_path / "fine.yaml"
    path.write_text(yaml.safe_dump(sc))
    assert "the exact search of (d) and (h) takes at most 800" in ekya.scenario_problem(str(path))
    rc = ekya.main(["--scenario", str(path), "--out", str(tmp_path / "out")])
    assert "4000 quanta of GPU on 4 GPUs" in _error_line(rc, capsys.readouterr().err, ekya.PROG)


def test_ekya_accepts_its_default_scenarios():
    assert ekya.scenario_problem("ekya-cityscapes") is None
    assert ekya.scenario_problem("ekya-waymo") is None


def test_ekya_rejects_an_output_folder_under_a_file(capsys, a_file):
    rc = ekya.main(["--episodes", "1", "--out", str(a_file / "x")])
    line = _error_line(rc, capsys.readouterr().err, ekya.PROG)
    assert f"--out {a_file / 'x'}: cannot be created" in line and "is a file" in line


def test_ekya_report_names_the_real_seed_range():
    assert ekya._seeds_text(3) == "3 seeded episodes per point, seeds 0..2"
    assert ekya._seeds_text(1) == "1 seeded episode per point, seed 0"
    fields = {f for _, f, _, _ in string.Formatter().parse(ekya.REPORT) if f}
    text = ekya.REPORT.format(**{**dict.fromkeys(fields, 0), "seeds": ekya._seeds_text(3)})
    intro = text.split("\n\n")[1]
    assert "seeds 0..2;" in intro and "-1" not in intro


# ----------------------------------------------------------------------------- etf
def test_etf_rejects_an_output_folder_under_a_file(capsys, a_file):
    rc = etf.main(["--out", str(a_file / "x")])
    line = _error_line(rc, capsys.readouterr().err, etf.PROG)
    assert f"--out {a_file / 'x'}: cannot be created" in line


def test_etf_rejects_a_file_as_output_folder(capsys, a_file):
    rc = etf.main(["--out", str(a_file)])
    line = _error_line(rc, capsys.readouterr().err, etf.PROG)
    assert "exists and is a file, expected a folder" in line


# ----------------------------------------------------------------------------- migrator, srs
@pytest.mark.parametrize("module", [migrator, srs], ids=["migrator", "srs"])
@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--seeds", "0"], "--seeds must be >= 1, got 0"),
        (["--workers", "0"], "--workers must be >= 1, got 0"),
        (["--workers", "-3", "--quick"], "--workers must be >= 1, got -3"),
    ],
)
def test_runners_reject_counts_below_one(capsys, tmp_path, module, args, needle):
    rc = module.main([*args, "--out", str(tmp_path / "out")])
    assert needle in _error_line(rc, capsys.readouterr().err, module.PROG)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("module", [migrator, srs], ids=["migrator", "srs"])
def test_runners_reject_an_output_folder_under_a_file(capsys, a_file, module):
    rc = module.main(["--quick", "--out", str(a_file / "x")])
    line = _error_line(rc, capsys.readouterr().err, module.PROG)
    assert f"--out {a_file / 'x'}: cannot be created" in line


@pytest.mark.parametrize(
    ("module", "runs", "no_run"),
    [
        (migrator, "migrator-runs.json", "migrator-runs.json: has no 'seeds'"),
        (srs, "srs-runs.json", "cannot read the saved runs"),
    ],
)
def test_render_only_without_or_with_bad_saved_runs(capsys, tmp_path, module, runs, no_run):
    rc = module.main(["--render-only", "--out", str(tmp_path)])
    line = _error_line(rc, capsys.readouterr().err, module.PROG)
    assert f"--render-only: {tmp_path / runs} does not exist" in line
    (tmp_path / runs).write_text("{not json")
    rc = module.main(["--render-only", "--out", str(tmp_path)])
    line = _error_line(rc, capsys.readouterr().err, module.PROG)
    assert "cannot read the saved runs" in line and "JSONDecodeError" in line
    (tmp_path / runs).write_text('{"rows": {}}')
    rc = module.main(["--render-only", "--out", str(tmp_path)])
    line = _error_line(rc, capsys.readouterr().err, module.PROG)
    assert no_run in line  # the shape's missing field, or the reader's KeyError


def test_srs_report_header_reads_sensibly():
    meta = {"seeds": 3, "sweep_seeds": 2, "quick": False, "elapsed": 1.0}
    head = srs_report._header({**meta, "date": "d", "machine": "m"})
    assert head[0] == "# SRS/MRS reproduction (INFOCOM'25, Fig. 8-15)"
    assert "3 seeds (0..2) for the default scenario and 2 seeds (0..1) per sweep" in head[2]
    assert "1 seed (0)" in srs_report._header({**meta, "seeds": 1, "date": "d", "machine": "m"})[2]


@pytest.mark.parametrize("module", [ekya, etf, migrator, srs], ids=lambda m: m.__name__)
def test_reproduce_progs_are_python_dash_m(module):
    assert module.PROG == module.__name__.replace("edgegym", "python -m edgegym", 1)


# ----------------------------------------------------------------------------- traces
TRACES = "python -m edgegym.workload.traces"


def test_traces_rejects_a_sample_path_under_a_file(capsys, a_file):
    rc = traces.main(["--write-sample", str(a_file / "x.csv")])
    line = _error_line(rc, capsys.readouterr().err, TRACES)
    assert f"--write-sample {a_file / 'x.csv'}: cannot be created" in line


def test_traces_rejects_a_folder_as_sample_path(capsys, tmp_path):
    rc = traces.main(["--write-sample", str(tmp_path)])
    line = _error_line(rc, capsys.readouterr().err, TRACES)
    assert "is a folder, expected a file path" in line


@pytest.mark.parametrize("seconds", ["0", "1", "-5"])
def test_traces_rejects_too_short_stats(capsys, seconds):
    rc = traces.main(["--stats", "--seconds", seconds])
    assert "--seconds must be >= 2" in _error_line(rc, capsys.readouterr().err, TRACES)


@pytest.mark.parametrize("mode", [["--stats"], ["--write-sample", "unused.csv"]])
def test_traces_rejects_a_negative_seed(capsys, mode):
    rc = traces.main([*mode, "--seed", "-1"])
    assert "--seed must be >= 0, got -1" in _error_line(rc, capsys.readouterr().err, TRACES)


# ----------------------------------------------------------------------------- as commands
def _command(*args: str, timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.mark.parametrize(
    ("args", "prog", "needle"),
    [
        (
            ["edgegym.reproduce.ekya", "--episodes", "0"],
            "python -m edgegym.reproduce.ekya",
            "--episodes must be >= 1",
        ),
        (
            ["edgegym.reproduce.ekya", "--quick", "--episodes", "0"],
            "python -m edgegym.reproduce.ekya",
            "--episodes must be >= 1",
        ),
        (
            ["edgegym.workload.traces", "--stats", "--seconds", "-5"],
            TRACES,
            "--seconds must be >= 2",
        ),
    ],
    ids=["ekya", "ekya-quick", "traces"],
)
def test_commands_exit_2_with_one_error_line(args, prog, needle):
    res = _command(*args)
    assert needle in _error_line(res.returncode, res.stderr, prog)


def test_benchmarks_check_the_json_path_before_measuring(a_file):
    res = _command("benchmarks", "--quick", "--json", str(a_file / "x.json"), timeout=120)
    line = _error_line(res.returncode, res.stderr, "python -m benchmarks")
    assert f"--json {a_file / 'x.json'}: cannot be created" in line
    # nothing was measured: a measurement prints its table (no wall-clock bound here, which a
    # loaded machine breaks)
    assert res.stdout == ""


def test_benchmarks_help_names_every_benchmark():
    res = _command("benchmarks", "--help")
    assert res.returncode == 0
    text = " ".join(res.stdout.split())
    names = ("throughput", "vector env", "N = 1, 16, 256", "thief", "MIGRator", "MRS", "W1-W16")
    for name in names:
        assert name in text


def test_benchmarks_soak_runs_every_family_and_writes_its_numbers(tmp_path):
    """``python -m benchmarks soak`` at a tiny size: every family, finite rates, RSS sampled,
    the JSON marked as a benchmark output; a bad size is one line before any work."""
    import json

    out = tmp_path / "soak.json"
    res = _command("benchmarks", "soak", "--steps", "2000", "--num-envs", "16", "--json",
                   str(out), timeout=300)  # fmt: skip
    assert res.returncode in (0, 1), res.stderr  # 1: a growth over 5 % (noise at this size)
    data = json.loads(out.read_text())
    assert data["edgegym_output"] == "benchmark"
    assert [r["env_id"].split("/")[1] for r in data["soak"]] == [
        "ContinualLearning-v0", "MIGReconfig-v0", "EnergyFairShare-v0", "DAGOffload-v0"
    ]  # fmt: skip
    for r in data["soak"]:
        assert r["steps"] >= 2000 and r["steps_per_s"] > 0 and r["samples"]
        assert r["rss_warm_mb"] > 0
    res = _command("benchmarks", "soak", "--num-envs", "0")
    assert "--num-envs" in _error_line(res.returncode, res.stderr, "python -m benchmarks soak")


def test_ekya_sweep_scales_what_a_table_scenario_runs_on():
    """Section (g) scales the costs an episode uses: on table drift the per-window table."""
    sc = load("ekya-cityscapes-authors-profiles")
    scaled = ekya_inputs._scaled_costs(sc, 2.0)
    assert np.allclose(scaled["drift.gpu_seconds"], np.asarray(sc["drift"]["gpu_seconds"]) * 2)
    assert ekya_inputs._scaled_drift(sc, 0.5) == {"drift.drift": 0.5}
    # the scenario's drift [0.04, 0.16] x 8, clipped to an accuracy of 1
    assert ekya_inputs._scaled_drift(load("ekya-cityscapes"), 8.0)["drift.drift"] == [0.32, 1.0]


def test_ekya_report_names_the_command_that_regenerates_it():
    assert ekya.regenerate_command("ekya-cityscapes", 3, "docs/reproduction") == ekya.PROG
    cmd = ekya.regenerate_command("ekya-waymo", 2, "docs/reproduction/waymo")
    assert cmd == f"{ekya.PROG} --scenario ekya-waymo --episodes 2 --out docs/reproduction/waymo"


def test_every_python_dash_m_entry_ends_through_run_command():
    """A module run as ``python -m`` ends through :func:`edgegym.outputs.run_command`, so an
    output it cannot write (kept in a rescue file), Ctrl-C and SIGTERM are one line each; the
    ``edgegym`` console script (``cli.main``) has its own handler. Found with
    ``python -m edgegym.workload.traces --write-sample`` to an unwritable place: a traceback."""
    missing = []
    for folder in ("edgegym", "agents", "baselines", "benchmarks"):
        for path in sorted((REPO / folder).rglob("*.py")):
            text = path.read_text()
            main_block = text.partition('if __name__ == "__main__":')[2]
            if main_block and "run_command(" not in main_block and path.name != "cli.py":
                missing.append(str(path.relative_to(REPO)))
    assert not missing, missing

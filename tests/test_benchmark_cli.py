"""The benchmark commands (``python -m benchmarks``, ``... soak``, ``benchmarks.parallel``,
``benchmarks.migrator_sweep``, ``benchmarks.vector_envs``) reject bad arguments with one
``<prog>: error:`` line and exit code 2 before any work, and an interrupted run keeps what it
finished in ``--json``, marked partial.

Every module's measuring is replaced by :func:`_no_work` (or a fake), so a check that moved
after the work fails here at once instead of starting a long run.
"""

from __future__ import annotations

import contextlib
import json

import pytest

import benchmarks.__main__ as bench
from benchmarks import env_throughput, migrator_sweep, parallel, soak, thief, vector_envs
from edgegym.outputs import run_command
from tests.test_module_clis import _error_line as error_line
from tests.test_module_clis import _no_work

#: The real functions the autouse fixture replaces, for the tests that run them.
REAL_SWEEP_RUN = migrator_sweep.run
REAL_BENCH_RUN = bench._run
REAL_VECTOR_RUN = vector_envs.run


@pytest.fixture(autouse=True)
def no_work(monkeypatch):
    monkeypatch.setattr(soak, "soak", _no_work)
    monkeypatch.setattr(parallel, "_board", _no_work)
    monkeypatch.setattr(migrator_sweep, "run", _no_work)
    monkeypatch.setattr(migrator_sweep, "window_problems", _no_work)
    monkeypatch.setattr(vector_envs, "run", _no_work)
    monkeypatch.setattr(bench, "_run", _no_work)


def _error_line(err: str, prog: str) -> str:
    """Exactly one ``<prog>: error:`` line and no traceback; return it (the exit code is
    checked where it is known)."""
    return error_line(2, err, prog)


def _exit_2(main, argv, capsys, prog: str) -> str:
    """``main(argv)`` ends with code 2 (returned or raised) and one error line; the line."""
    try:
        rc = main(argv)
    except SystemExit as exc:
        rc = exc.code
    assert rc == 2
    out, err = capsys.readouterr()
    assert out == ""  # no table, no progress: nothing was run
    return _error_line(err, prog)


def _interrupted(main, *args) -> int | str | None:
    """The exit code of ``main(*args)`` (returned or raised as ``SystemExit``), which the test
    stops with a ``KeyboardInterrupt``; one that escapes fails the test (nothing was kept)
    rather than ending the test session."""
    try:
        return main(*args)
    except SystemExit as exc:
        return exc.code
    except KeyboardInterrupt:
        pytest.fail("the interrupt escaped: the finished work was not kept")


# ----------------------------------------------------------------------------- soak
@pytest.mark.parametrize("families", ["nosuch", "nosuch,energy", "energy,nosuch"])
def test_soak_rejects_an_unknown_family(capsys, families):
    line = _exit_2(soak.main, ["--families", families], capsys, soak.PROG)
    assert "unknown family 'nosuch'" in line
    assert "known: continual, mig, energy, dag" in line


@pytest.mark.parametrize(("families", "needle"), [(",", "names no family"),
                                                  ("dag,dag", "'dag' is named twice")])  # fmt: skip
def test_soak_rejects_an_empty_or_repeated_family(capsys, families, needle):
    assert needle in _exit_2(soak.main, ["--families", families], capsys, soak.PROG)


def test_soak_runs_the_named_families_only(monkeypatch, capsys, tmp_path):
    ran = []

    def fake(env_id, steps, num_envs, seed=0):
        ran.append(env_id)
        return {"env_id": env_id, "steps": steps, "episodes": 1, "steps_per_s": 1.0,
                "rss_warm_mb": 1.0, "growth_pct": 0.0}  # fmt: skip

    monkeypatch.setattr(soak, "soak", fake)
    assert soak.main(["--families", "energy, dag", "--steps", "10"]) == 0
    assert ran == ["edgegym/EnergyFairShare-v0", "edgegym/DAGOffload-v0"]


def test_an_interrupted_soak_keeps_its_finished_families(monkeypatch, capsys, tmp_path):
    def fake(env_id, steps, num_envs, seed=0):
        if env_id != "edgegym/ContinualLearning-v0":
            raise KeyboardInterrupt
        return {"env_id": env_id, "steps": steps, "episodes": 1, "steps_per_s": 1.0,
                "rss_warm_mb": 1.0, "growth_pct": 0.0}  # fmt: skip

    monkeypatch.setattr(soak, "soak", fake)
    out = tmp_path / "soak.json"
    assert _interrupted(soak.main, ["--steps", "10", "--json", str(out)]) == 130
    err = capsys.readouterr().err.strip()
    assert err == (
        f"{soak.PROG}: interrupted; kept 1 finished family in {out} (not finished: "
        "edgegym/MIGReconfig-v0, edgegym/EnergyFairShare-v0, edgegym/DAGOffload-v0)"
    )
    data = json.loads(out.read_text())
    assert data["edgegym_output"] == "benchmark"
    assert [r["env_id"] for r in data["soak"]] == ["edgegym/ContinualLearning-v0"]
    assert data["partial"]["stopped"] == "interrupted"
    assert data["partial"]["missing"][0] == "edgegym/MIGReconfig-v0"


# ----------------------------------------------------------------------------- parallel
@pytest.mark.parametrize(
    ("scenarios", "needle"),
    [
        ("nosuch", "--scenarios nosuch: unknown scenario 'nosuch'; bundled: ekya-cityscapes"),
        ("migrator-w1,nosuch", "unknown scenario 'nosuch'"),
        ("migrator-w1@foo", "'foo' is not KEY=VALUE"),
        (",", "--scenarios ',': names no scenario"),
    ],
)
def test_parallel_rejects_an_unknown_scenario(capsys, scenarios, needle):
    line = _exit_2(parallel.main, ["--scenarios", scenarios, "--no-ray"], capsys, parallel.PROG)
    assert needle in line


@pytest.mark.parametrize("flag", ["--workers", "--episodes"])
@pytest.mark.parametrize("value", ["0", "x"])
def test_parallel_rejects_a_bad_count(capsys, flag, value):
    assert flag in _exit_2(parallel.main, [flag, value], capsys, parallel.PROG)


def test_an_interrupted_parallel_run_keeps_the_serial_run(monkeypatch, capsys, tmp_path):
    def board(cells, episodes, out, **where):
        if where:
            raise KeyboardInterrupt
        return 2.0, {"cells": [{"score": 1}]}

    monkeypatch.setattr(parallel, "_board", board)
    out = tmp_path / "p.json"
    assert (
        _interrupted(
            parallel.main, ["--scenarios", "migrator-w1", "--workers", "2", "--json", str(out)]
        )
        == 130
    )
    err = capsys.readouterr().err.strip()
    assert err == (
        f"{parallel.PROG}: interrupted; kept 1 finished run in {out} (not finished: pool, ray)"
    )
    data = json.loads(out.read_text())
    assert data["runs"] == {"serial": {"wall_s": 2.0, "speedup": 1.0, "same_numbers": True}}
    assert data["partial"] == {"stopped": "interrupted", "missing": ["pool", "ray"]}


# ----------------------------------------------------------------------------- migrator_sweep
SWEEP = migrator_sweep.PROG


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--windows", "99", "--workloads", "1"], "--windows 99: migrator-w1 has 4 windows (0-3)"),
        (["--windows", "5", "--workloads", "9,1"], "migrator-w1 has 4 windows (0-3), no window 5"),
        (["--milp-windows", "9", "--workloads", "9"], "--milp-windows 9: migrator-w9 has 9"),
        (["--windows", "0", "--milp-windows", "1"], "window 1 is not among --windows 0"),
        (["--windows", "none"], "--windows none: selects no window"),
        (["--workloads", "1-3,2"], "workload 2 is listed twice"),
        (["--seeds", "0,0"], "seed 0 is listed twice"),
        (["--workloads", "17"], "workloads are 1..16"),
        (["--milp-time-limit", "nan"], "--milp-time-limit must be positive"),
    ],
)
def test_migrator_sweep_rejects_bad_windows_before_any_work(capsys, argv, needle):
    assert needle in _exit_2(migrator_sweep.main, argv, capsys, SWEEP)


def test_migrator_sweep_window_counts_are_the_scenarios():
    counts = migrator_sweep.window_counts(range(1, 17))
    assert [counts[w] for w in (1, 8, 9, 16)] == [4, 4, 9, 9]


def test_an_interrupted_sweep_keeps_its_finished_workloads(monkeypatch, capsys, tmp_path):
    row = {"seed": 0, "window": 0, "dec_s": 0.1, "dec_value": 1.0, "dec_bound": 1.0,
           "dec_gap": 0.0, "dec_capped": False, "milp_s": None, "milp_value": None}  # fmt: skip
    monkeypatch.setattr(migrator_sweep, "run", REAL_SWEEP_RUN)

    def problems(seed, scenario):
        if scenario == "migrator-w2":
            raise KeyboardInterrupt
        return ["problem"]

    monkeypatch.setattr(migrator_sweep, "window_problems", problems)
    monkeypatch.setattr(migrator_sweep, "solve_window", lambda *a, **k: dict(row))
    out = tmp_path / "sweep.json"
    argv = ["--workloads", "1-3", "--windows", "0", "--milp-windows", "none", "--json", str(out)]
    assert _interrupted(migrator_sweep.main, argv) == 130
    err = capsys.readouterr().err.strip().splitlines()
    kept = f"kept 1 finished workload in {out} (not finished: W2, W3)"
    assert err[-1] == f"{SWEEP}: interrupted; {kept}"
    data = json.loads(out.read_text())
    assert list(data["workloads"]) == ["W1"]
    assert data["partial"] == {"stopped": "interrupted", "missing": ["W2", "W3"]}


# ----------------------------------------------------------------------------- vector_envs
@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["--families", "nosuch"], "--families nosuch: unknown family 'nosuch'; known: continual"),
        (["--families", "mig,nosuch"], "unknown family 'nosuch'"),
        (["--sizes", "0"], "--sizes must be >= 1"),
        (["--sizes", "a"], "--sizes must be comma-separated integers"),
        (["--env-steps", "0"], "--env-steps"),
    ],
)
def test_vector_envs_rejects_bad_arguments(capsys, argv, needle):
    assert needle in _exit_2(vector_envs.main, argv, capsys, vector_envs.PROG)


def test_an_interrupted_vector_env_run_prints_its_finished_families(monkeypatch, capsys):
    """No --json here: the table of the families finished before Ctrl-C is printed, then the
    interrupt goes on to ``run_command`` (its one line, exit code 130)."""
    monkeypatch.setattr(vector_envs, "run", REAL_VECTOR_RUN)
    monkeypatch.setattr(vector_envs, "vector_rate", lambda *a: (100.0, "native"))
    monkeypatch.setattr(vector_envs, "cartpole_rate", lambda *a: 1000.0)

    def single(env_id, steps, repeats):
        if "DAG" in env_id:
            raise KeyboardInterrupt
        return 50.0

    monkeypatch.setattr(vector_envs, "single_rate", single)
    monkeypatch.setattr(vector_envs, "pinned_to_one_core", contextlib.nullcontext)
    argv = ["--families", "mig,dag", "--sizes", "1"]
    assert run_command(lambda: vector_envs.main(argv), vector_envs.PROG) == 130
    out, err = capsys.readouterr()
    assert "| mig | 1 | native | 100 | 1,000 | 0.1000 | 2.0x |" in out
    assert "| dag |" not in out
    assert err.strip() == f"{vector_envs.PROG}: interrupted"


# ----------------------------------------------------------------------------- python -m benchmarks
def test_benchmarks_rejects_an_unknown_option_in_one_line(capsys):
    line = _exit_2(bench.main, ["--bogus"], capsys, bench.PROG)
    assert "unrecognized arguments: --bogus" in line


@pytest.fixture
def first_section_only(monkeypatch):
    """The real ``_run`` with the throughput section faked and the thief (the second) stopped
    by Ctrl-C."""
    monkeypatch.setattr(bench, "_run", REAL_BENCH_RUN)
    monkeypatch.setattr(env_throughput, "compare", lambda *a: {"measured": 42})
    monkeypatch.setattr(bench, "_format_throughput", lambda res: "throughput table")

    def stop(*_args, **_kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(thief, "run_all", stop)


def test_an_interrupted_benchmark_keeps_its_finished_sections(first_section_only, capsys, tmp_path):
    out = tmp_path / "bq.json"
    assert _interrupted(bench.main, ["--quick", "--no-pin", "--json", str(out)]) == 130
    printed, err = capsys.readouterr()
    assert "throughput table" in printed
    missing = "thief, vector_envs, migrator, mrs, migrator_sweep"
    assert err.strip() == (
        f"{bench.PROG}: interrupted; kept 1 finished section in {out} (not finished: {missing})"
    )
    data = json.loads(out.read_text())
    assert data["edgegym_output"] == "benchmark"
    assert data["throughput"] == {"measured": 42}
    assert "thief" not in data
    assert data["partial"] == {"stopped": "interrupted", "missing": missing.split(", ")}
    assert data["settings"]["quick"] is True and "machine" in data


def test_an_interrupted_benchmark_through_run_command(first_section_only, capsys, tmp_path):
    """As ``python -m benchmarks`` runs it (``sys.exit(run_command(main, PROG))``): exit code
    130 and only the one line (``run_command`` adds no second "interrupted")."""
    out = tmp_path / "bq.json"
    argv = ["--quick", "--no-pin", "--json", str(out)]
    assert _interrupted(run_command, lambda: bench.main(argv), bench.PROG) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"{bench.PROG}: interrupted; kept 1 finished")
    assert json.loads(out.read_text())["partial"]["missing"][0] == "thief"


def test_an_interrupted_benchmark_without_json_says_interrupted(first_section_only, capsys):
    assert _interrupted(bench.main, ["--quick", "--no-pin"]) == 130
    assert capsys.readouterr().err.strip() == f"{bench.PROG}: interrupted"

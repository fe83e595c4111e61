"""Trace files at the edges of their numbers: a small file must not make edgegym allocate
without bound or overflow, and bad input gets one line naming the file (never its content).

Each test here failed on the code before its fix: a 29-byte request log of two requests 10^8 s
apart allocated 2.5 GB (10^12 s: a ``MemoryError`` traceback), a count past int64 was Python's
``OverflowError`` (two of int64's largest wrapped to a negative sum), a counts trace was held
as a Python list of lines and ints (30 bytes of memory per byte of file), and an unknown
``function`` hash was quoted whole with three hashes of the file.

The inputs are sized so that the code before the fixes stays bounded too: a request log's
huge spans are read (:func:`read_request_log`) but never binned, and the spans that are binned
are just over the cap (10^7 one-second bins, 80 MB)."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import yaml

import edgegym  # noqa: F401  (registers the environments)
from edgegym.scenarios import ScenarioError, load, resolve
from edgegym.workload import tracefiles
from edgegym.workload.tracefiles import (
    AZURE_FUNCTIONS_MINUTES,
    MAX_COUNT,
    MAX_REQUEST_LOG_SPAN_S,
    AzureFunctionsTable,
    load_counts_trace,
    read_azure_functions,
    read_request_log,
    request_counts,
)

ENERGY = "edgegym/EnergyFairShare-v0"
INT64_MAX = str(np.iinfo(np.int64).max)
HUGE = "9" * 23


def _file(tmp_path: Path, text: str, name: str = "t.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _one_line(message: str, path: Path) -> None:
    assert "\n" not in message and str(path) in message


# ------------------------------------------------------------------ request logs: their span
@pytest.mark.parametrize(
    ("fmt", "text"),
    [
        ("alibaba-callgraph", "traceid,timestamp\na,0\nb,1e11\n"),  # 10^8 s: 2.5 GB before
        ("alibaba-callgraph", "traceid,timestamp\na,0\nb,1e15\n"),  # 10^12 s: MemoryError
        ("alibaba-callgraph", "traceid,timestamp\na,-1e300\nb,1e300\n"),  # numpy's message
        ("alibaba-callgraph", "traceid,timestamp\na,-1.7e308\nb,1.7e308\n"),
        ("azure-llm", "TIMESTAMP\n0001-01-01 00:00:00\n9999-12-31 23:59:59\n"),
        ("azure-llm", "TIMESTAMP\n2023-11-16 18:15:46\n2024-03-11 12:02:27\n"),  # 10^7 + 1 s
    ],
)
def test_a_request_log_spanning_more_than_the_cap_is_refused(tmp_path, fmt, text):
    path = _file(tmp_path, text)
    with pytest.raises(ValueError, match="a request log may cover") as err:
        read_request_log(path, fmt)
    _one_line(str(err.value), path)
    assert f"{MAX_REQUEST_LOG_SPAN_S:,} s" in str(err.value)


def test_a_request_log_at_the_cap_is_read_and_counted(tmp_path):
    path = _file(tmp_path, "TIMESTAMP\n2023-11-16 18:15:46\n2024-03-11 12:02:26\n")
    t = read_request_log(path, "azure-llm")
    assert t.tolist() == [0.0, float(MAX_REQUEST_LOG_SPAN_S)]
    counts = request_counts(t)
    assert counts.size == MAX_REQUEST_LOG_SPAN_S + 1 and counts.sum() == 2


@pytest.mark.parametrize(
    ("times", "interval_s"),
    [
        ([0.0, MAX_REQUEST_LOG_SPAN_S + 1.0], 1.0),  # 10^7 + 2 bins: 160 MB before
        ([0.0, 1.0], 1e-320),  # t / interval_s is inf: cast to int64 before
    ],
)
def test_request_counts_refuse_more_intervals_than_the_cap(times, interval_s):
    with pytest.raises(ValueError, match=f"at most {MAX_REQUEST_LOG_SPAN_S:,} intervals"):
        request_counts(np.array(times), interval_s)


def test_a_long_request_log_through_a_scenario_is_one_line(tmp_path):
    _file(tmp_path, "traceid,timestamp\na,0\nb,1e15\n", "log.csv")
    raw = yaml.safe_load(resolve("etf-tx2-resnet50-mobilenetv2").read_text())
    raw["tenants"][0]["demand"] = {
        "kind": "request-log",
        "format": "alibaba-callgraph",
        "path": "log.csv",
    }
    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump(raw))
    with pytest.raises(
        ScenarioError, match=r"tenants\[0\]\.demand\.path: .*log\.csv: the requests"
    ):
        load(scenario)


# ------------------------------------------------------------------ counts: bounded, no wrap
@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (f"{HUGE}\n1\n", "line 1: count a 23-character value is too large"),  # OverflowError
        (f"# interval_s: 1\n1\n{INT64_MAX}\n", "line 3: count a 19-character value is too large"),
        (f"{MAX_COUNT + 1}\n", f"line 1: count '{MAX_COUNT + 1}' is too large"),
        ("count\n1e300\n", "line 2: count '1e300' is too large"),
        (f"{MAX_COUNT}\n{MAX_COUNT}\n", "the counts add up to 1.8e+16 requests"),
    ],
)
def test_a_counts_trace_over_int64_or_2_53_is_refused(tmp_path, text, needle):
    path = _file(tmp_path, text)
    with pytest.raises(ValueError, match="2\\*\\*53") as err:
        load_counts_trace(path)
    _one_line(str(err.value), path)
    assert needle in str(err.value)


def test_the_largest_count_is_read_exactly(tmp_path):
    trace = load_counts_trace(_file(tmp_path, f"{MAX_COUNT}\n0\n"))
    assert trace.counts.tolist() == [MAX_COUNT, 0] and trace.counts.dtype == np.int64


def _functions(tmp_path: Path, rows: list[list[str]]) -> Path:
    header = ",".join(
        ["HashOwner", "HashApp", "HashFunction", "Trigger"]
        + [str(m) for m in range(1, AZURE_FUNCTIONS_MINUTES + 1)]
    )
    lines = [header]
    for i, minutes in enumerate(rows):
        counts = minutes + ["1"] * (AZURE_FUNCTIONS_MINUTES - len(minutes))
        lines.append(",".join([f"o{i}", f"a{i}", f"{i:064x}", "http", *counts]))
    return _file(tmp_path, "\n".join(lines) + "\n", "functions.csv")


@pytest.mark.parametrize(
    ("rows", "needle"),
    [
        ([[HUGE]], "line 2, minute 1: count a 23-character value is too large"),
        ([["1", INT64_MAX]], "line 2, minute 2: count a 19-character value is too large"),
        ([["1", "1e18"]], "line 2, minute 2: count '1e18' is too large"),
        ([[str(MAX_COUNT)], [str(MAX_COUNT)]], "the counts add up to"),  # wrapped negative
    ],
)
def test_an_azure_functions_count_over_2_53_is_refused(tmp_path, rows, needle):
    path = _functions(tmp_path, rows)
    with pytest.raises(ValueError, match="2\\*\\*53") as err:
        read_azure_functions(path)
    _one_line(str(err.value), path)
    assert needle in str(err.value)


def test_two_rows_of_int64_max_are_refused_through_gymnasium(tmp_path):
    """Before: the sum of the two rows wrapped to -2 per minute."""
    _functions(tmp_path, [[INT64_MAX] * 3, [INT64_MAX] * 3])
    raw = yaml.safe_load(resolve("etf-tx2-resnet50-mobilenetv2").read_text())
    raw["tenants"][0]["demand"] = {"kind": "azure-functions", "path": "functions.csv"}
    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump(raw))
    with pytest.raises(ScenarioError, match=r"minute 1: count .* is too large") as err:
        gym.make(ENERGY, scenario=str(scenario))
    assert "\n" not in str(err.value)


def test_a_counts_overflow_through_gymnasium_is_a_scenario_error(tmp_path):
    _file(tmp_path, f"# interval_s: 1\n{HUGE}\n1\n", "c.csv")
    raw = yaml.safe_load(resolve("etf-tx2-resnet50-mobilenetv2").read_text())
    raw["tenants"][0]["demand"] = {"kind": "trace", "path": "c.csv"}
    scenario = tmp_path / "s.yaml"
    scenario.write_text(yaml.safe_dump(raw))
    with pytest.raises(ScenarioError, match=r"demand\.path: .*c\.csv, line 2: count"):
        gym.make(ENERGY, scenario=str(scenario))


def test_a_sum_of_rows_built_by_hand_is_checked():
    n = 2
    table = AzureFunctionsTable(
        path=Path("by-hand.csv"),
        owners=("o",) * n,
        apps=("a",) * n,
        functions=("f",) * n,
        triggers=("http",) * n,
        counts=np.full((n, AZURE_FUNCTIONS_MINUTES), np.iinfo(np.int64).max, dtype=np.int64),
        lines=(2, 3),
    )
    with pytest.raises(ValueError, match=r"function: the rows of by-hand\.csv: the counts add"):
        table.select(None, "sum")
    assert table.select(None, "row").shape == (n, AZURE_FUNCTIONS_MINUTES)


# ------------------------------------------------------------------ messages quote no content
def test_an_unknown_function_hash_quotes_neither_it_nor_the_files_hashes(tmp_path):
    path = _functions(tmp_path, [["1"], ["2"], ["3"], ["4"]])
    table = read_azure_functions(path)
    wanted = "deadbeef" * 8
    with pytest.raises(ValueError) as err:
        table.select(wanted)
    msg = str(err.value)
    assert msg.startswith("function: unknown function hash <a 64-character text>: no row of ")
    assert wanted not in msg and not any(h in msg for h in table.functions)
    with pytest.raises(ValueError) as err:
        table.select(["x" * 40])  # type: ignore[arg-type]
    assert "x" * 40 not in str(err.value)


def test_a_short_unknown_hash_is_still_named(tmp_path):
    table = read_azure_functions(_functions(tmp_path, [["1"]]))
    with pytest.raises(ValueError, match=r"unknown function hash 'abc123': .* \(column 3; 1 row\)"):
        table.select("abc123")


# ------------------------------------------------------------------ counts traces: frugal
def test_a_counts_trace_takes_a_few_bytes_of_memory_per_byte_of_file(tmp_path):
    """Before, a list of its lines and a list of Python ints: 30 bytes per byte of file
    (a 20 MB trace took 34 s and 357 MB); now pieces of it at a time and 8 bytes a count."""
    rng = np.random.default_rng(0)
    values = rng.integers(0, 1000, 200_000)
    path = _file(tmp_path, "# interval_s: 1\n" + "\n".join(map(str, values.tolist())) + "\n")
    size = path.stat().st_size
    tracemalloc.start()
    try:
        trace = load_counts_trace(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert np.array_equal(trace.counts, values) and trace.interval_s == 1.0
    assert peak < 8 * size, f"peak {peak / size:.1f} bytes per byte of file"


TRICKY = (
    "# a trace\r\n# interval_s: 10\n\n007\n12\r\n\r\n3\r4\n  5  \n+6\n1_000\n7.0\n"
    + "".join(f"{i % 997}\n" for i in range(3000))
    + "# a comment between\n"
    + "".join(f"{i % 13}\r\n" for i in range(3000))
    + "\n\n123456789012345\n"
    + "".join(f"{i}\r" for i in range(500))
    + "9"
)


@pytest.mark.parametrize("piece", [1, 7, 64, 1 << 16])
@pytest.mark.parametrize("header", ["", "count\n"])
def test_the_bulk_read_gives_what_the_line_by_line_read_gives(tmp_path, monkeypatch, piece, header):
    path = tmp_path / "t.csv"
    path.write_bytes((header + TRICKY).encode())  # \r and \r\n as they are
    monkeypatch.setattr(tracefiles, "_PIECE", piece)
    bulk = load_counts_trace(path)
    monkeypatch.setattr(tracefiles._CountsParser, "digits_only", lambda self, piece: False)
    by_line = load_counts_trace(path)
    assert bulk.counts.dtype == by_line.counts.dtype == np.int64
    assert bulk.counts.tobytes() == by_line.counts.tobytes() and bulk.interval_s == 10.0
    assert by_line.counts.size == 8 + 3000 + 3000 + 1 + 500 + 1


@pytest.mark.parametrize("piece", [1, 64, 1 << 16])
def test_line_numbers_after_a_bulk_read_are_the_files(tmp_path, monkeypatch, piece):
    lines = ["# interval_s: 1", *["5"] * 2000, "", "7\r8", *["6\r"] * 2000, "oops"]
    path = tmp_path / "t.csv"
    path.write_bytes("\n".join(lines).encode())  # "7\r8" is two lines, "6\r\n" one
    monkeypatch.setattr(tracefiles, "_PIECE", piece)
    with pytest.raises(ValueError, match=rf"line {len(lines) + 1}: count 'oops' is not an int"):
        load_counts_trace(path)

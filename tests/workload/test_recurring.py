"""Arrivals whose per-second structure recurs across windows, and the replay of
per-request logs (the real Azure LLM and Alibaba call-graph traces) -- known answers."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from edgegym.workload import make_arrival
from edgegym.workload.generators import (
    AlibabaLike,
    AzureLike,
    Recurring,
    trace_stats,
    window_correlation,
)
from edgegym.workload.tracefiles import read_request_log, request_counts

DATA = Path(__file__).parent / "data"


def _pooled_corr(proc, seeds: int, windows: int = 4, period: int = 200) -> float:
    """Correlation of the counts at the same second of consecutive windows, pooled over seeds."""
    a, b = [], []
    for s in range(seeds):
        c = proc.counts(windows * period, 1.0, np.random.default_rng(s)).reshape(windows, period)
        a.append(c[:-1].ravel())
        b.append(c[1:].ravel())
    return float(np.corrcoef(np.concatenate(a), np.concatenate(b))[0, 1])


@pytest.mark.parametrize("p", [0.5, 1.0])
def test_recurring_profile_correlates_across_windows_as_stated(p):
    proc = make_arrival({"kind": "azure", "rate": 120, "recur_s": 200, "persistence": p})
    assert isinstance(proc, Recurring)
    want = proc.window_correlation()  # closed form from the base's count statistics
    assert want == pytest.approx({0.5: 0.481, 1.0: 0.963}[p], abs=0.002)
    assert _pooled_corr(proc, 300) == pytest.approx(want, abs=0.05)


def test_stationary_generators_do_not_recur_and_recurrence_grows_with_persistence():
    base = _pooled_corr(make_arrival({"kind": "azure", "rate": 120}), 100)
    assert abs(base) < 0.05
    corr = [
        _pooled_corr(
            make_arrival({"kind": "alibaba", "rate": 120, "recur_s": 200, "persistence": p}), 100
        )
        for p in (0.25, 0.5, 1.0)
    ]
    assert corr[0] < corr[1] < corr[2]
    assert corr[2] > 0.85


def test_recurring_keeps_the_mean_rate_and_the_default_specs_unchanged():
    proc = Recurring(AzureLike(120.0), 200, 0.5)
    c = np.concatenate([proc.counts(1000, 1.0, np.random.default_rng(s)) for s in range(60)])
    assert c.mean() == pytest.approx(120.0, rel=0.03)
    # persistence 0 (the default) builds the stationary generator itself: same paths, bitwise
    plain = make_arrival({"kind": "alibaba", "rate": 120})
    assert type(plain) is AlibabaLike
    same = make_arrival({"kind": "alibaba", "rate": 120, "persistence": 0.0})
    r1, r2 = np.random.default_rng(3), np.random.default_rng(3)
    assert np.array_equal(plain.counts(500, 1.0, r1), same.counts(500, 1.0, r2))


@pytest.mark.parametrize("kind", ["azure", "alibaba"])
def test_recurring_keeps_the_base_per_second_statistics(kind):
    """The recurrence moves the correlation across windows, not the per-second CV or lag-1
    autocorrelation the generators are documented at (a convex mix of the two paths would
    shrink the CV by sqrt(p^2 + (1 - p)^2): 0.71x at persistence 0.5)."""
    proc = make_arrival({"kind": kind, "rate": 120, "recur_s": 200, "persistence": 0.5})
    want = proc.base.target_stats()
    c = np.concatenate([proc.counts(1000, 1.0, np.random.default_rng(s)) for s in range(200)])
    got = trace_stats(c)
    assert got["mean"] == pytest.approx(120.0, rel=0.03)
    assert got["cv"] == pytest.approx(want["cv"], abs=0.03)
    assert got["lag1_autocorr"] == pytest.approx(want["lag1_autocorr"], abs=0.03)


def test_window_correlation_statistic():
    x = np.tile(np.arange(10.0), 5)
    assert window_correlation(x, 10) == pytest.approx(1.0)
    assert np.isnan(window_correlation(x[:15], 10))


@pytest.mark.parametrize(
    "spec, message",
    [
        ({"kind": "azure", "rate": 1, "persistence": 0.5}, "recur_s"),
        ({"kind": "azure", "rate": 1, "recur_s": 200, "persistence": 1.5}, "persistence"),
        ({"kind": "alibaba", "rate": 1, "recur_s": 200.5, "persistence": 0.5}, "recur_s"),
    ],
)
def test_recurring_spec_errors_name_the_field(spec, message):
    with pytest.raises(ValueError, match=message):
        make_arrival(spec)


def test_azure_llm_log_reads_requests_per_second():
    t = read_request_log(DATA / "azure-llm-sample.csv", "azure-llm")
    assert t[0] == 0.0 and np.all(np.diff(t) >= 0) and t.size == 5
    # the sample's last minus first timestamp (48.9999999 - 46.68059 s)
    assert t[-1] == pytest.approx(2.3194099, abs=1e-5)
    assert request_counts(t).tolist() == [2, 2, 1]
    proc = make_arrival(
        {"kind": "request-log", "path": "azure-llm-sample.csv", "format": "azure-llm"}, DATA
    )
    assert proc.counts(4, 1.0, np.random.default_rng(0)).tolist() == [2, 2, 1, 2]  # loops


def test_alibaba_callgraph_counts_each_trace_once_at_its_first_call():
    t = read_request_log(DATA / "alibaba-callgraph-sample.csv", "alibaba-callgraph")
    assert t.tolist() == pytest.approx([0.0, 0.1, 1.5])  # t3 at 0.9 s, t1 at 1.0 s, t2 at 2.4 s
    proc = make_arrival(
        {
            "kind": "request-log",
            "path": str(DATA / "alibaba-callgraph-sample.csv"),
            "format": "alibaba-callgraph",
            "scale": 2.0,
            "loop": False,
        }
    )
    assert proc.counts(3, 1.0, np.random.default_rng(0)).tolist() == [4, 2, 0]


def test_missing_request_log_names_the_path():
    missing = DATA / "AzureLLMInferenceTrace_code.csv"
    with pytest.raises(FileNotFoundError, match=r"AzureLLMInferenceTrace_code\.csv"):
        make_arrival({"kind": "request-log", "path": str(missing), "format": "azure-llm"})


@pytest.mark.parametrize(
    "text, fmt, message",
    [
        ("", "azure-llm", "empty file"),
        ("time,x\n1,2\n", "azure-llm", "no 'TIMESTAMP' column"),
        ("TIMESTAMP,a\n2023-13-40 10:00:00,1\n", "azure-llm", "line 2: TIMESTAMP"),
        ("TIMESTAMP,a\nyesterday,1\n", "azure-llm", "line 2: TIMESTAMP"),
        ("TIMESTAMP,a\n", "azure-llm", "no request rows"),
        ("timestamp,rt\n1,2\n", "alibaba-callgraph", "no 'traceid' column"),
        ("traceid,timestamp\nt1,soon\n", "alibaba-callgraph", "line 2: timestamp"),
        ("traceid,timestamp\nt1\n", "alibaba-callgraph", "line 2: expected at least 2"),
    ],
)
def test_bad_request_log_is_a_clear_error(tmp_path, text, fmt, message):
    path = tmp_path / "log.csv"
    path.write_text(text)
    with pytest.raises(ValueError, match=message) as info:
        read_request_log(path, fmt)
    assert str(path) in str(info.value)

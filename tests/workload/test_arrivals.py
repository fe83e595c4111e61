"""Tests for the arrival processes and the scenario ``arrival`` specs."""

from __future__ import annotations

import math
import pickle
from pathlib import Path

import numpy as np
import pytest

from edgegym.workload.arrival_specs import make_arrival
from edgegym.workload.processes import MMPP, ArrivalProcess, Diurnal, Poisson, TraceReplay
from edgegym.workload.tracefiles import load_counts_trace

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
SAMPLE = SCENARIOS / "traces" / "sample-counts.csv"


def _processes() -> dict[str, ArrivalProcess]:
    return {
        "poisson": Poisson(30.0),
        "mmpp": MMPP([10.0, 80.0], [20.0, 5.0]),
        "mmpp3": MMPP([1.0, 5.0, 20.0], [10.0, 5.0, 2.0]),
        "mmpp-matrix": MMPP(
            [1.0, 5.0, 20.0],
            switch_rates=[[0.0, 0.1, 0.05], [0.2, 0.0, 0.1], [0.5, 0.5, 0.0]],
        ),
        "diurnal": Diurnal(30.0, 0.5, 2000.0, phase=0.3),
        "trace": TraceReplay([5, 0, 12, 7, 3, 9], 60.0),
        "trace-scaled": TraceReplay([5, 0, 12, 7, 3, 9], 60.0, scale=1.5),
    }


PROCESSES = _processes()


# ------------------------------------------------------------------ shapes and determinism


@pytest.mark.parametrize("name", sorted(PROCESSES))
def test_counts_shape_dtype_and_nonnegative(name: str) -> None:
    proc = PROCESSES[name]
    c = proc.counts(257, 0.7, np.random.default_rng(1))
    assert c.shape == (257,)
    assert c.dtype == np.int64
    assert (c >= 0).all()
    assert proc.counts(0, 1.0, np.random.default_rng(1)).shape == (0,)
    r = proc.rates(257, 0.7, np.random.default_rng(1))
    assert r.shape == (257,) and r.dtype == np.float64 and (r >= 0).all()


@pytest.mark.parametrize("name", sorted(PROCESSES))
def test_same_seed_identical_counts(name: str) -> None:
    proc = PROCESSES[name]
    a = proc.counts(5000, 0.5, np.random.default_rng(123))
    b = proc.counts(5000, 0.5, np.random.default_rng(123))
    c = proc.counts(5000, 0.5, np.random.default_rng(124))
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


@pytest.mark.parametrize("name", sorted(PROCESSES))
def test_pickle_roundtrip_keeps_behaviour(name: str) -> None:
    proc = PROCESSES[name]
    clone = pickle.loads(pickle.dumps(proc))
    np.testing.assert_array_equal(
        proc.counts(1000, 1.0, np.random.default_rng(5)),
        clone.counts(1000, 1.0, np.random.default_rng(5)),
    )


# ------------------------------------------------------------------ long-run means


@pytest.mark.parametrize("name", sorted(PROCESSES))
def test_long_run_mean_matches_mean_rate(name: str) -> None:
    proc = PROCESSES[name]
    dt = 0.5
    n = 400_000  # 100 diurnal periods, 555 trace loops, ~10^4 MMPP switches
    c = proc.counts(n, dt, np.random.default_rng(7))
    assert c.sum() / (n * dt) == pytest.approx(proc.mean_rate, rel=0.03)


def test_mean_rate_values() -> None:
    assert Poisson(30).mean_rate == 30
    # stationary distribution is proportional to dwell times for uniform jumps
    assert MMPP([10, 80], [20, 5]).mean_rate == pytest.approx((10 * 20 + 80 * 5) / 25)
    assert MMPP([10, 80], switch_rates=[1 / 20, 1 / 5]).mean_rate == pytest.approx(24.0)
    assert MMPP([1, 5, 20], [10, 5, 2]).mean_rate == pytest.approx((10 + 25 + 40) / 17)
    assert Diurnal(30, 0.5, 2000).mean_rate == 30
    assert TraceReplay([1, 2, 3], 10.0, scale=2.0).mean_rate == pytest.approx(12 / 30)


def test_mmpp_matrix_stationary_solves_balance() -> None:
    q = np.array([[0.0, 0.1, 0.05], [0.2, 0.0, 0.1], [0.5, 0.5, 0.0]])
    m = MMPP([1.0, 5.0, 20.0], switch_rates=q)
    gen = q - np.diag(q.sum(axis=1))
    np.testing.assert_allclose(m.stationary @ gen, 0.0, atol=1e-12)
    assert m.stationary.sum() == pytest.approx(1.0)


def test_mmpp_time_in_state_matches_stationary() -> None:
    # with rates (0, 1) the integrated rate over the horizon is the time spent in state 1
    m = MMPP([0.0, 1.0], [30.0, 10.0])
    frac = m.rates(100_000, 1.0, np.random.default_rng(3)).mean()
    assert frac == pytest.approx(0.25, rel=0.05)


def test_mmpp_dwell_times_are_exponential() -> None:
    # with rates (0, 1) and a fine grid, runs of "on" intervals are the state-1 visits
    m = MMPP([0.0, 1.0], [2.0, 2.0])
    dt = 0.01
    on = m.rates(200_000, dt, np.random.default_rng(8)) > 0.5
    edges = np.flatnonzero(np.diff(on.astype(np.int8)))
    runs = np.diff(edges)[int(on[edges[0] + 1]) == 0 :: 2] * dt  # lengths of on-runs
    assert runs.size > 300
    assert runs.mean() == pytest.approx(2.0, rel=0.12)
    assert runs.std() / runs.mean() == pytest.approx(1.0, abs=0.15)  # exponential: CV = 1


def test_diurnal_rates_integrate_exactly() -> None:
    d = Diurnal(30.0, 0.5, 2000.0, phase=0.0)
    # whole periods average to the mean rate exactly
    assert d.rates(2000, 1.0).mean() == pytest.approx(30.0, rel=1e-12)
    # peak around t = period/4, trough around 3/4
    r = d.rates(4, 500.0)
    assert r[0] == pytest.approx(30.0 + 15.0 * 2 / math.pi * 1.0, rel=1e-9)
    assert r[0] > 30.0 > r[2]
    fine = d.rates(20000, 0.1)
    assert fine.max() == pytest.approx(45.0, rel=1e-4)
    assert fine.min() == pytest.approx(15.0, rel=1e-4)
    # start_s shifts the phase
    np.testing.assert_allclose(d.rates(10, 1.0, start_s=2000.0), d.rates(10, 1.0), rtol=1e-9)


# ------------------------------------------------------------------ burstiness


def _dispersion(c: np.ndarray) -> float:
    return float(c.var() / c.mean())


def test_mmpp_is_burstier_than_poisson() -> None:
    rng = np.random.default_rng(11)
    mmpp = MMPP([10.0, 80.0], [20.0, 5.0])
    pois = Poisson(mmpp.mean_rate)
    d_mmpp = _dispersion(mmpp.counts(50_000, 1.0, rng))
    d_pois = _dispersion(pois.counts(50_000, 1.0, rng))
    assert d_mmpp > 1.5
    assert d_pois == pytest.approx(1.0, abs=0.05)
    assert d_mmpp > d_pois


def test_mmpp_switches_inside_intervals() -> None:
    # with intervals much longer than the dwell times the integrated rate is a blend, not a
    # pure state rate: a per-interval (not continuous-time) simulation would fail this
    m = MMPP([0.0, 100.0], [1.0, 1.0])
    r = m.rates(1000, 10.0, np.random.default_rng(2))
    inner = (r > 1.0) & (r < 99.0)
    assert inner.mean() > 0.9


# ------------------------------------------------------------------ trace replay


TRACE = np.array([5, 0, 12, 7, 3, 9, 40, 1], dtype=np.int64)  # 8 intervals of 60 s


@pytest.mark.parametrize("dt", [1.0, 0.25, 7.5, 60.0])
def test_trace_finer_dt_splits_each_interval_exactly(dt: float) -> None:
    tr = TraceReplay(TRACE, 60.0)
    per = round(60.0 / dt)
    c = tr.counts(TRACE.size * per, dt, np.random.default_rng(0))
    np.testing.assert_array_equal(c.reshape(TRACE.size, per).sum(axis=1), TRACE)


@pytest.mark.parametrize("factor", [2, 4, 8])
def test_trace_coarser_dt_sums_exactly(factor: int) -> None:
    tr = TraceReplay(TRACE, 60.0)
    c = tr.counts(TRACE.size // factor, 60.0 * factor, np.random.default_rng(0))
    np.testing.assert_array_equal(c, TRACE.reshape(-1, factor).sum(axis=1))


@pytest.mark.parametrize("dt", [9.6, 45.0, 90.0, 160.0, 0.3])
def test_trace_unaligned_dt_preserves_total(dt: float) -> None:
    tr = TraceReplay(TRACE, 60.0)
    horizon = 480.0 * 3  # three loops; a whole number of dt for every dt above
    n = round(horizon / dt)
    assert n * dt == pytest.approx(horizon)
    c = tr.counts(n, dt, np.random.default_rng(4))
    assert c.sum() == 3 * TRACE.sum()
    assert tr.rates(n, dt).sum() * dt == pytest.approx(3 * TRACE.sum())


def test_trace_finer_dt_spreads_randomly_not_evenly() -> None:
    tr = TraceReplay([600], 60.0)
    c = tr.counts(60, 1.0, np.random.default_rng(9))
    assert c.sum() == 600
    assert len(set(c.tolist())) > 1  # multinomial, not an even 10 per second


def test_trace_loop_and_no_loop() -> None:
    rng = np.random.default_rng(0)
    looped = TraceReplay(TRACE, 60.0, loop=True).counts(16, 60.0, rng)
    np.testing.assert_array_equal(looped, np.concatenate([TRACE, TRACE]))
    once = TraceReplay(TRACE, 60.0, loop=False).counts(16, 60.0, rng)
    np.testing.assert_array_equal(once, np.concatenate([TRACE, np.zeros(8, np.int64)]))
    # start_s is an offset into the trace
    shifted = TraceReplay(TRACE, 60.0).counts(8, 60.0, rng, start_s=180.0)
    np.testing.assert_array_equal(shifted, np.roll(TRACE, -3))


def test_trace_scale() -> None:
    rng = np.random.default_rng(0)
    doubled = TraceReplay(TRACE, 60.0, scale=2.0).counts(8, 60.0, rng)
    np.testing.assert_array_equal(doubled, 2 * TRACE)
    zero = TraceReplay(TRACE, 60.0, scale=0.0).counts(8, 60.0, rng)
    assert zero.sum() == 0
    half = TraceReplay(TRACE, 60.0, scale=0.5).counts(8 * 2000, 60.0, rng)
    assert half.sum() == pytest.approx(0.5 * 2000 * TRACE.sum(), rel=0.02)


def _slow_trace_rates(counts: np.ndarray, interval_s: float, n: int, dt: float, start: float):
    """Obviously-correct reference: loop over bins and trace intervals, sum overlaps."""
    out = np.zeros(n)
    for j in range(n):
        a, b = start + j * dt, start + (j + 1) * dt
        k = math.floor(a / interval_s)
        while k * interval_s < b:
            lo, hi = max(a, k * interval_s), min(b, (k + 1) * interval_s)
            out[j] += counts[k % counts.size] * max(hi - lo, 0.0) / interval_s
            k += 1
    return out / dt


@pytest.mark.parametrize(
    ("dt", "start"), [(1.0, 0.0), (7.3, 13.1), (61.0, 0.0), (250.0, 1000.0), (0.7, 59.9)]
)
def test_trace_rates_match_slow_reference(dt: float, start: float) -> None:
    tr = TraceReplay(TRACE, 60.0)
    n = 97
    np.testing.assert_allclose(
        tr.rates(n, dt, start_s=start),
        _slow_trace_rates(TRACE, 60.0, n, dt, start),
        rtol=1e-9,
        atol=1e-9,
    )


def test_trace_counts_mean_matches_rates() -> None:
    tr = TraceReplay(TRACE, 60.0)
    n, dt, start = 40, 17.0, 5.0
    reps = np.stack([tr.counts(n, dt, np.random.default_rng(s), start_s=start) for s in range(400)])
    expected = tr.rates(n, dt, start_s=start) * dt
    assert (np.abs(reps.mean(axis=0) - expected) <= 0.5 + 0.1 * expected).all()


# ------------------------------------------------------------------ trace files


def test_sample_trace_loads_and_is_marked_synthetic() -> None:
    trace = load_counts_trace(SAMPLE)
    assert trace.interval_s == 10.0
    assert 100 <= trace.counts.size <= 500
    assert trace.counts.dtype == np.int64 and (trace.counts >= 0).all()
    assert "synthetic" in SAMPLE.read_text().lower()
    # generated from an MMPP with mean 4 req/s and bursts: bursty relative to Poisson
    assert _dispersion(trace.counts) > 1.5


def test_load_plain_integers(tmp_path: Path) -> None:
    f = tmp_path / "plain.txt"
    f.write_text("3\n\n  4  \n# comment\n0 # inline comment\n")
    trace = load_counts_trace(f)
    np.testing.assert_array_equal(trace.counts, [3, 4, 0])
    assert trace.interval_s is None


def test_load_csv_with_interval_column(tmp_path: Path) -> None:
    f = tmp_path / "t.csv"
    f.write_text("t_s,Count,interval_s\n0,5,60\n60,7,60\n120,2,60\n")
    trace = load_counts_trace(f)
    np.testing.assert_array_equal(trace.counts, [5, 7, 2])
    assert trace.interval_s == 60.0


def test_load_csv_with_interval_comment(tmp_path: Path) -> None:
    f = tmp_path / "t.csv"
    f.write_text("# interval_s: 30\ncount\n1\n2\n")
    assert load_counts_trace(f).interval_s == 30.0


def test_missing_file_names_file(tmp_path: Path) -> None:
    f = tmp_path / "nope.csv"
    with pytest.raises(FileNotFoundError, match=r"nope\.csv"):
        load_counts_trace(f)


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("1\n2\nabc\n", 3, "not an integer"),
        ("1\n2.5\n", 2, "not an integer"),
        ("count\n4\n-1\n", 3, "negative"),
        ("when,value\n1,2\n", 1, "'count' column"),
        ("count,interval_s\n1,60\n2,30\n", 3, "interval_s"),
        ("count,x\n1,2\n3\n", 3, "columns"),
        ("1\n2,3\n", 2, "one integer per line"),
        ("# interval_s: -5\n1\n", 1, "interval_s"),
    ],
)
def test_bad_file_message_names_file_and_line(
    tmp_path: Path, text: str, line: int, words: str
) -> None:
    f = tmp_path / "bad-trace.csv"
    f.write_text(text)
    with pytest.raises(ValueError, match=r"bad-trace\.csv") as info:
        load_counts_trace(f)
    assert f"line {line}" in str(info.value)
    assert words in str(info.value)


@pytest.mark.parametrize("text", ["", "\n# only a comment\n", "count\n"])
def test_empty_file_rejected(tmp_path: Path, text: str) -> None:
    f = tmp_path / "empty.csv"
    f.write_text(text)
    with pytest.raises(ValueError, match=r"empty\.csv.*no counts"):
        load_counts_trace(f)


def test_from_file_needs_interval(tmp_path: Path) -> None:
    f = tmp_path / "plain.txt"
    f.write_text("1\n2\n")
    with pytest.raises(ValueError, match="interval_s"):
        TraceReplay.from_file(f)
    assert TraceReplay.from_file(f, interval_s=5.0).mean_rate == pytest.approx(0.3)


# ------------------------------------------------------------------ make_arrival


def test_make_arrival_builds_each_kind() -> None:
    p = make_arrival({"kind": "poisson", "rate": 30})
    assert isinstance(p, Poisson) and p.mean_rate == 30
    m = make_arrival({"kind": "mmpp", "rates": [10, 80], "dwell_s": [20, 5]})
    assert isinstance(m, MMPP) and m.mean_rate == pytest.approx(24.0)
    m2 = make_arrival({"kind": "mmpp", "rates": [10, 80], "switch_rates": [0.05, 0.2]})
    assert m2.mean_rate == pytest.approx(24.0)
    d = make_arrival({"kind": "diurnal", "rate": 30, "amplitude": 0.5, "period_s": 2000})
    assert isinstance(d, Diurnal) and d.mean_rate == 30 and d.peak_rate == 45
    t = make_arrival({"kind": "trace", "path": "traces/sample-counts.csv"}, base_dir=SCENARIOS)
    assert isinstance(t, TraceReplay) and t.interval_s == 10.0
    assert t.mean_rate == pytest.approx(load_counts_trace(SAMPLE).counts.sum() / 3600.0)
    t2 = make_arrival({"kind": "trace", "path": str(SAMPLE), "scale": 2.0, "loop": False})
    assert t2.mean_rate == pytest.approx(2 * t.mean_rate) and not t2.loop
    inline = make_arrival({"kind": "trace", "counts": [1, 2, 3], "interval_s": 1.0})
    assert inline.mean_rate == pytest.approx(2.0)


@pytest.mark.parametrize(
    ("spec", "pattern"),
    [
        ({"kind": "gamma", "rate": 1}, r"arrival\.kind.*'gamma'.*poisson, mmpp, diurnal, trace"),
        ({"rate": 1}, r"arrival\.kind: missing"),
        ([1, 2], r"arrival: must be a mapping"),
        ({"kind": "poisson"}, r"arrival\.rate: missing"),
        ({"kind": "poisson", "rate": -1}, r"arrival\.rate: .*in \[0\.0, 1000000\.0\], got -1"),
        ({"kind": "poisson", "rate": "30"}, r"arrival\.rate: must be a finite number"),
        ({"kind": "poisson", "rate": True}, r"arrival\.rate"),
        ({"kind": "poisson", "rate": 1, "rat": 2}, r"unknown field 'rat'.*kind, rate"),
        ({"kind": "mmpp", "rates": [1, 2]}, r"dwell_s.*switch_rates.*exactly one"),
        (
            {"kind": "mmpp", "rates": [1, 2], "dwell_s": [1, 2], "switch_rates": [1, 1]},
            r"exactly one",
        ),
        ({"kind": "mmpp", "rates": [1, 2], "dwell_s": [1]}, r"arrival\.dwell_s: .*one value"),
        ({"kind": "mmpp", "rates": [1, 2], "dwell_s": [1, 0]}, r"arrival\.dwell_s: .*> 0"),
        ({"kind": "mmpp", "rates": [1, -2], "dwell_s": [1, 1]}, r"arrival\.rates: .*got -2\.0"),
        ({"kind": "mmpp", "rates": [], "dwell_s": []}, r"arrival\.rates: .*non-empty"),
        (
            {"kind": "mmpp", "rates": [1, 2], "switch_rates": [[0, 1], [0, 0]]},
            r"arrival\.switch_rates: state 1",
        ),
        (
            {"kind": "mmpp", "rates": [1, 2, 3], "switch_rates": [[0, 1, 0], [1, 0, 0], [0, 0]]},
            r"arrival\.switch_rates",
        ),
        (
            {"kind": "diurnal", "rate": 30, "amplitude": 1.0, "period_s": 10},
            r"arrival\.amplitude: .*\[0, 1\)",
        ),
        ({"kind": "diurnal", "rate": 30, "amplitude": 0.5}, r"arrival\.period_s: missing"),
        (
            {"kind": "diurnal", "rate": 30, "amplitude": 0.5, "period_s": 0},
            r"arrival\.period_s: .*> 0",
        ),
        ({"kind": "trace"}, r"path.*counts.*exactly one"),
        ({"kind": "trace", "counts": [1, 2]}, r"arrival\.interval_s: missing"),
        ({"kind": "trace", "counts": [1, -2], "interval_s": 1}, r"arrival\.counts"),
        ({"kind": "trace", "counts": [1, 2.5], "interval_s": 1}, r"arrival\.counts.*integer"),
        ({"kind": "trace", "counts": [1], "interval_s": 1, "scale": -1}, r"arrival\.scale"),
        ({"kind": "trace", "counts": [1], "interval_s": 1, "loop": "yes"}, r"arrival\.loop"),
    ],
)
def test_make_arrival_validation(spec: object, pattern: str) -> None:
    with pytest.raises(ValueError, match=pattern):
        make_arrival(spec)  # type: ignore[arg-type]


def test_make_arrival_where_prefix_and_trace_errors(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"^s\.yaml: tenants\[0\]\.arrival\.rate"):
        make_arrival({"kind": "poisson", "rate": -1}, where="s.yaml: tenants[0].arrival")
    with pytest.raises(FileNotFoundError, match=r"arrival\.path: .*missing\.csv"):
        make_arrival({"kind": "trace", "path": "missing.csv"}, base_dir=tmp_path)
    (tmp_path / "bad.csv").write_text("1\nx\n")
    with pytest.raises(ValueError, match=r"arrival\.path: .*bad\.csv, line 2"):
        make_arrival({"kind": "trace", "path": "bad.csv", "interval_s": 1}, base_dir=tmp_path)
    (tmp_path / "plain.csv").write_text("1\n2\n")
    with pytest.raises(ValueError, match=r"arrival\.interval_s: missing"):
        make_arrival({"kind": "trace", "path": "plain.csv"}, base_dir=tmp_path)


# ------------------------------------------------------------------ argument checks


def test_grid_and_rng_arguments_validated() -> None:
    p = Poisson(1.0)
    with pytest.raises(ValueError, match="dt"):
        p.counts(10, 0.0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="n_intervals"):
        p.counts(-1, 1.0, np.random.default_rng(0))
    with pytest.raises(TypeError, match="Generator"):
        p.counts(10, 1.0, 0)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Generator"):
        MMPP([1.0, 2.0], [1.0, 1.0]).rates(10, 1.0)

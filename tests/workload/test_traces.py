"""Tests of the trace workloads (synthetic MIGRator traces, Azure Functions 2019 format) and
the ``python -m edgegym.workload.traces`` command line."""

from __future__ import annotations

import functools
import math
import pickle
from pathlib import Path

import numpy as np
import pytest

from edgegym.workload.arrival_specs import ARRIVAL_KINDS, make_arrival
from edgegym.workload.generators import AlibabaLike, AzureLike, trace_stats
from edgegym.workload.processes import ArrivalProcess, AzureFunctionsReplay
from edgegym.workload.tracefiles import (
    AZURE_FUNCTIONS_MINUTES,
    load_azure_functions,
    read_azure_functions,
    write_azure_functions_sample,
)
from edgegym.workload.traces import main

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"
SAMPLE = SCENARIOS / "traces" / "azure-functions-2019-sample.csv"
SAMPLE_REL = "traces/azure-functions-2019-sample.csv"

# Documented (class docstrings, docs/traces.md) statistics of the defaults that have no closed
# form, measured with trace_stats on 1 s counts: (value, tolerance).
DOC_MEASURED = {
    "AzureLike": {"p99_over_mean": (2.85, 0.2), "bursts_per_min": (1.85, 0.2)},
    "AlibabaLike": {"p99_over_mean": (2.0, 0.1), "bursts_per_min": (0.17, 0.1)},
}
DOC_PEAK_RATIO = {"AzureLike": (2.4, 0.15), "AlibabaLike": (1.8, 0.15)}


def _processes() -> dict[str, ArrivalProcess]:
    return {
        "azure": AzureLike(),
        "azure-custom": AzureLike(
            60.0, sigma=0.4, corr_s=8.0, jitter=0.1, bursts_per_min=4.0, burst_s=3.0
        ),
        "azure-no-bursts": AzureLike(100.0, bursts_per_min=0.0),
        "alibaba": AlibabaLike(),
        "alibaba-custom": AlibabaLike(
            200.0, level_sigma=0.35, level_dwell_s=20.0, sigma=0.2, corr_s=10.0, amplitude=0.3
        ),
        "functions": AzureFunctionsReplay(load_azure_functions(SAMPLE), scale=2.0),
    }


PROCESSES = _processes()


# ------------------------------------------------------------------ shapes and determinism


@pytest.mark.parametrize("name", sorted(PROCESSES))
def test_counts_shape_dtype_and_seed_determinism(name: str) -> None:
    proc = PROCESSES[name]
    a = proc.counts(3000, 0.7, np.random.default_rng(123), start_s=5.3)
    b = proc.counts(3000, 0.7, np.random.default_rng(123), start_s=5.3)
    c = proc.counts(3000, 0.7, np.random.default_rng(124), start_s=5.3)
    assert a.shape == (3000,) and a.dtype == np.int64 and (a >= 0).all()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)
    assert proc.counts(0, 1.0, np.random.default_rng(1)).shape == (0,)
    r = proc.rates(3000, 0.7, np.random.default_rng(9))
    np.testing.assert_array_equal(r, proc.rates(3000, 0.7, np.random.default_rng(9)))
    assert r.shape == (3000,) and r.dtype == np.float64 and (r >= 0).all()
    np.testing.assert_array_equal(proc.rates(50, 1.0), proc.rates(50, 1.0))  # rng=None
    clone = pickle.loads(pickle.dumps(proc))
    np.testing.assert_array_equal(
        clone.counts(3000, 0.7, np.random.default_rng(123), start_s=5.3), a
    )


@pytest.mark.parametrize("name", sorted(PROCESSES))
def test_long_run_mean_on_unaligned_grid(name: str) -> None:
    proc = PROCESSES[name]
    dt, n = 0.37, 200_000  # 74,000 s: whole days of the replay are not needed at this tolerance
    c = proc.counts(n, dt, np.random.default_rng(7), start_s=12.3)
    assert c.sum() / (n * dt) == pytest.approx(proc.mean_rate, rel=0.04)


@pytest.mark.parametrize("cls", [AzureLike, AlibabaLike])
@pytest.mark.parametrize(("n", "dt"), [(80, 2.5), (40, 5.0), (8, 25.0), (1, 200.0)])
def test_sampled_rate_integrates_one_path_on_any_grid(cls: type, n: int, dt: float) -> None:
    # the same seed and horizon draw the same 1 s latent path; other grids integrate it exactly
    proc = cls()
    fine = proc.rates(200, 1.0, np.random.default_rng(3))
    half = proc.rates(400, 0.5, np.random.default_rng(3))
    np.testing.assert_allclose(half.reshape(-1, 2).mean(axis=1), fine, rtol=1e-12)
    np.testing.assert_allclose(half[0::2], half[1::2], rtol=1e-12)  # constant over each tick
    coarse = proc.rates(n, dt, np.random.default_rng(3))
    np.testing.assert_allclose(coarse, half.reshape(n, -1).mean(axis=1), rtol=1e-9)


def test_mean_profile_without_rng() -> None:
    np.testing.assert_allclose(AzureLike(80.0).rates(100, 0.3), np.full(100, 80.0), rtol=1e-12)
    ali = AlibabaLike(100.0, amplitude=0.3, period_s=50.0, phase=0.4)
    prof = ali.rates(1000, 1.0)
    assert prof.mean() == pytest.approx(100.0, rel=1e-12)  # whole periods
    assert prof.max() == pytest.approx(100.0 * (1 + 0.3), rel=0.01)
    np.testing.assert_allclose(ali.rates(50, 1.0, start_s=50.0), prof[:50], rtol=1e-9)
    # the sampled paths average to the profile, phase by phase
    c = AlibabaLike(100.0, amplitude=0.3, period_s=50.0, phase=0.4, level_dwell_s=5.0).counts(
        50 * 4000, 1.0, np.random.default_rng(2)
    )
    np.testing.assert_allclose(c.reshape(4000, 50).mean(axis=0), prof[:50], rtol=0.03)


def test_zero_rate_and_degenerate_parameters() -> None:
    rng = np.random.default_rng(0)
    assert AzureLike(0.0).counts(100, 1.0, rng).sum() == 0
    flat = AzureLike(50.0, sigma=0.0, jitter=0.0, bursts_per_min=0.0)
    np.testing.assert_array_equal(flat.rates(20, 1.0, rng), np.full(20, 50.0))
    flat_ali = AlibabaLike(50.0, level_sigma=0.0, sigma=0.0, amplitude=0.0)
    np.testing.assert_allclose(flat_ali.rates(20, 1.0, rng), np.full(20, 50.0))
    # rates(rng=None) never needs a generator, counts always does
    with pytest.raises(TypeError, match=r"numpy\.random\.Generator"):
        AzureLike().counts(10, 1.0, None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("make", "pattern"),
    [
        (lambda: AzureLike(-1.0), r"rate: .*>= 0"),
        (lambda: AzureLike(sigma=-0.1), r"sigma: .*\[0, 2\]"),
        (lambda: AzureLike(corr_s=0.0), r"corr_s: .*> 0"),
        (lambda: AzureLike(jitter=3.0), r"jitter"),
        (lambda: AzureLike(bursts_per_min=-1.0), r"bursts_per_min"),
        (lambda: AzureLike(burst_s=0.5), r"burst_s: .*>= 1"),
        (lambda: AzureLike(burst_height=0.9), r"burst_height: .*>= 1"),
        (lambda: AlibabaLike(level_sigma=math.nan), r"level_sigma"),
        (lambda: AlibabaLike(level_dwell_s=0.0), r"level_dwell_s: .*> 0"),
        (lambda: AlibabaLike(amplitude=1.0), r"amplitude: .*\[0, 1\)"),
        (lambda: AlibabaLike(period_s=-5.0), r"period_s"),
        (lambda: AlibabaLike(rate="10"), r"rate: must be a finite number"),  # type: ignore[arg-type]
    ],
)
def test_generator_parameters_validated(make, pattern: str) -> None:
    with pytest.raises(ValueError, match=pattern):
        make()


def test_peak_rate_is_rarely_exceeded() -> None:
    for proc in (AzureLike(), AlibabaLike()):
        r = proc.rates(100_000, 1.0, np.random.default_rng(4))
        assert proc.peak_rate > proc.mean_rate
        assert (r > proc.peak_rate).mean() < 0.002


# ------------------------------------------------------------------ statistics targets


@functools.cache
def _measured(name: str) -> dict[str, float]:
    """trace_stats of 10^5 s of 1 s counts (about 28 h: ~10^3 slow-level correlation times)."""
    return trace_stats(PROCESSES[name].counts(100_000, 1.0, np.random.default_rng(11)))


@pytest.mark.parametrize("name", ["azure", "azure-custom", "alibaba", "alibaba-custom"])
def test_generators_hit_their_target_stats(name: str) -> None:
    proc = PROCESSES[name]
    got = _measured(name)
    want = proc.target_stats()  # type: ignore[attr-defined]
    assert want["mean"] == proc.mean_rate
    assert got["mean"] == pytest.approx(want["mean"], rel=0.03)
    assert got["cv"] == pytest.approx(want["cv"], abs=0.03)
    assert got["lag1_autocorr"] == pytest.approx(want["lag1_autocorr"], abs=0.03)


@pytest.mark.parametrize("cls", [AzureLike, AlibabaLike])
def test_defaults_match_documented_stats(cls: type) -> None:
    proc = cls()
    doc = cls.__doc__ or ""
    want = proc.target_stats()
    # the exact targets are the ones written in the docstring table
    assert f"{want['cv']:.3f}" in doc and f"{want['lag1_autocorr']:.3f}" in doc
    got = _measured("azure" if cls is AzureLike else "alibaba")
    for key, (value, tol) in DOC_MEASURED[cls.__name__].items():
        assert got[key] == pytest.approx(value, abs=tol), key
    value, tol = DOC_PEAK_RATIO[cls.__name__]
    assert got["burst_peak_ratio"] == pytest.approx(value, abs=tol)
    assert 50 <= want["mean"] <= 250  # Fig. 3's rate level


def test_azure_is_spikier_and_alibaba_smoother() -> None:
    az, al = _measured("azure"), _measured("alibaba")
    assert az["cv"] > al["cv"]
    assert az["p99_over_mean"] > al["p99_over_mean"] + 0.5
    assert az["bursts_per_min"] > 5 * al["bursts_per_min"]
    assert az["lag1_autocorr"] < al["lag1_autocorr"] - 0.2


def test_two_tenants_take_turns_being_higher() -> None:
    # Fig. 3: over a 200 s window each trace is above the other for stretches of seconds
    a = AzureLike().rates(200 * 50, 1.0, np.random.default_rng(5)).reshape(50, 200)
    b = AlibabaLike().rates(200 * 50, 1.0, np.random.default_rng(6)).reshape(50, 200)
    smooth = np.ones(10) / 10
    share = []
    for x, y in zip(a, b, strict=True):
        above = np.convolve(x - y, smooth, mode="valid") > 0
        share.append(above.mean())
    share_arr = np.array(share)
    assert ((share_arr > 0.05) & (share_arr < 0.95)).mean() > 0.7


def test_trace_stats_on_known_series() -> None:
    flat = trace_stats(np.full(100, 50.0))
    assert flat["mean"] == 50.0 and flat["std"] == 0.0 and flat["cv"] == 0.0
    assert math.isnan(flat["lag1_autocorr"]) and flat["bursts_per_min"] == 0.0
    assert math.isnan(flat["burst_peak_ratio"])
    alt = trace_stats([0, 2] * 50)
    assert alt["mean"] == 1.0 and alt["cv"] == 1.0
    assert alt["lag1_autocorr"] == pytest.approx(-0.99)
    spiky = np.full(600, 100.0)
    spiky[[50, 51, 300, 450]] = [300.0, 250.0, 200.0, 400.0]  # three bursts in 10 minutes
    s = trace_stats(spiky)
    assert s["bursts_per_min"] == pytest.approx(0.3)
    assert s["burst_peak_ratio"] == pytest.approx((3.0 + 2.0 + 4.0) / 3)
    assert s["p99"] == pytest.approx(np.percentile(spiky, 99))
    assert trace_stats(spiky, interval_s=2.0)["bursts_per_min"] == pytest.approx(0.15)
    low = trace_stats([0, 1, 0, 0, 2, 0, 0, 1] * 20)  # Poisson noise on a zero baseline
    assert low["bursts_per_min"] == 0.0
    assert math.isnan(trace_stats([0, 0, 0])["cv"])


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"counts": [1.0]}, r"counts: needs at least 2"),
        ({"counts": [1, -1, 2]}, r"counts: .*>= 0"),
        ({"counts": [[1, 2], [3, 4]]}, r"counts: .*1-d"),
        ({"counts": [1, math.inf]}, r"counts"),
        ({"counts": [1, 2], "window": 4}, r"window: .*odd"),
        ({"counts": [1, 2], "burst_factor": 1.0}, r"burst_factor: .*> 1"),
        ({"counts": [1, 2], "interval_s": 0}, r"interval_s: .*> 0"),
    ],
)
def test_trace_stats_rejects_bad_input(kwargs: dict, pattern: str) -> None:
    with pytest.raises(ValueError, match=pattern):
        trace_stats(**kwargs)


# ------------------------------------------------------------------ Azure Functions format


def _header(minutes: int = AZURE_FUNCTIONS_MINUTES) -> str:
    return "HashOwner,HashApp,HashFunction,Trigger," + ",".join(
        str(m) for m in range(1, minutes + 1)
    )


def _row(fn: str = "f0", counts: list[str] | None = None, trigger: str = "http") -> str:
    if counts is None:
        counts = ["1"] * AZURE_FUNCTIONS_MINUTES
    return ",".join(["o0", "a0", fn, trigger, *counts])


def _write(tmp_path: Path, lines: list[str], name: str = "bad-functions.csv") -> Path:
    f = tmp_path / name
    f.write_text("\n".join(lines) + "\n")
    return f


def test_sample_file_reads() -> None:
    table = read_azure_functions(SAMPLE)
    assert table.counts.shape == (6, AZURE_FUNCTIONS_MINUTES)
    assert table.counts.dtype == np.int64 and (table.counts >= 0).all()
    assert set(table.triggers) == {"http", "timer", "queue", "event"}
    assert all(len(h) == 64 and int(h, 16) >= 0 for h in table.functions)
    assert len(set(table.functions)) == 6 and len(set(table.owners)) == 3
    assert table.lines == (2, 3, 4, 5, 6, 7)
    assert SAMPLE.stat().st_size < 100_000
    total = load_azure_functions(SAMPLE)
    np.testing.assert_array_equal(total, table.counts.sum(axis=0))
    assert 20 <= total.mean() <= 100  # ~50 invocations per minute in all


def test_load_selects_functions(tmp_path: Path) -> None:
    table = read_azure_functions(SAMPLE)
    np.testing.assert_array_equal(load_azure_functions(SAMPLE, 2), table.counts[2])
    np.testing.assert_array_equal(
        load_azure_functions(SAMPLE, table.functions[4].upper()), table.counts[4]
    )
    rows = load_azure_functions(SAMPLE, aggregate="row")
    np.testing.assert_array_equal(rows, table.counts)
    assert load_azure_functions(SAMPLE, 0, aggregate="row").shape == (1, 1440)
    # a function hash shared by two rows (different apps) selects both
    f = _write(tmp_path, [_header(), _row("dup"), _row("other"), _row("dup")], "dup.csv")
    np.testing.assert_array_equal(load_azure_functions(f, "dup"), np.full(1440, 2))
    assert load_azure_functions(f, "dup", aggregate="row").shape == (2, 1440)


@pytest.mark.parametrize(
    ("function", "aggregate", "pattern"),
    [
        ("feedface", "sum", r"unknown function hash 'feedface'.*azure-functions-2019-sample\.csv"),
        (6, "sum", r"row index 6 out of range.*6 function rows"),
        (-1, "sum", r"row index -1 out of range"),
        (True, "sum", r"function: must be a HashFunction string"),
        (1.0, "sum", r"function: must be"),
        ("", "sum", r"function: must be"),
        (None, "mean", r"aggregate: must be 'sum' or 'row'"),
    ],
)
def test_load_rejects_bad_selection(function: object, aggregate: str, pattern: str) -> None:
    with pytest.raises(ValueError, match=pattern):
        load_azure_functions(SAMPLE, function, aggregate)  # type: ignore[arg-type]


def test_missing_file_names_path(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"nope-functions\.csv"):
        read_azure_functions(tmp_path / "nope-functions.csv")
    with pytest.raises(ValueError, match="not a regular file"):
        read_azure_functions(tmp_path)


def _with(counts_at: dict[int, str]) -> list[str]:
    counts = ["1"] * AZURE_FUNCTIONS_MINUTES
    for minute, text in counts_at.items():
        counts[minute - 1] = text
    return counts


BAD_FILES = {
    "missing Trigger": (
        ["HashOwner,HashApp,HashFunction," + ",".join(map(str, range(1, 1441))), _row()],
        1,
        "expected 'Trigger'",
    ),
    "missing all ids": (["1,2,3", _row()], 1, "expected 'HashOwner'"),
    "no header": ([_row(), _row()], 1, "header column 1 is 'o0', expected 'HashOwner'"),
    "short header": (["HashOwner,HashApp"], 1, "column 3 is missing"),
    "header 1439 minutes": ([_header(1439), _row()], 1, "1439 minute columns, expected 1440"),
    "header 1441 minutes": ([_header(1441), _row()], 1, "1441 minute columns, expected 1440"),
    "header minute order": (
        [_header().replace(",1,2,3,", ",1,3,2,"), _row()],
        1,
        "minute column 6 is '3', expected '2'",
    ),
    "row 1439 minutes": (
        [_header(), _row(), _row(counts=["1"] * 1439)],
        3,
        "got 1443 (1439 minute columns)",
    ),
    "row 1441 minutes": ([_header(), _row(counts=["1"] * 1441)], 2, "1441 minute columns"),
    "not an integer": (
        [_header(), _row(counts=_with({7: "abc"}))],
        2,
        "minute 7: count 'abc' is not an integer",
    ),
    "fraction": (
        [_header(), _row(), _row(counts=_with({1440: "2.5"}))],
        3,
        "minute 1440: count '2.5' is not an integer",
    ),
    "empty count": (
        [_header(), _row(counts=_with({3: ""}))],
        2,
        "minute 3: count '' is not an integer",
    ),
    "negative": ([_header(), _row(counts=_with({12: "-4"}))], 2, "minute 12: count -4 is negative"),
    "negative float": ([_header(), _row(counts=_with({2: "-4.0"}))], 2, "count -4.0 is negative"),
}


@pytest.mark.parametrize("case", sorted(BAD_FILES))
def test_malformed_file_message_names_file_line_and_problem(tmp_path: Path, case: str) -> None:
    lines, line, words = BAD_FILES[case]
    f = _write(tmp_path, lines)
    with pytest.raises(ValueError, match=r"bad-functions\.csv") as info:
        read_azure_functions(f)
    assert f"line {line}" in str(info.value)
    assert words in str(info.value)


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("", "empty file"),
        ("\n\n  \n", "empty file"),
        ("# just a comment\n", "empty file"),
        (_header() + "\n", "no function rows after the header on line 1"),
    ],
)
def test_empty_file_rejected(tmp_path: Path, text: str, words: str) -> None:
    f = tmp_path / "empty-functions.csv"
    f.write_text(text)
    with pytest.raises(ValueError, match=r"empty-functions\.csv") as info:
        read_azure_functions(f)
    assert words in str(info.value)


def test_tolerated_variations(tmp_path: Path) -> None:
    f = tmp_path / "ok.csv"
    lines = [_header().lower(), "", "# comment", _row(counts=_with({1: "3.0", 2: " 7 "}))]
    f.write_text("\ufeff" + "\r\n".join(lines) + "\r\n")
    counts = load_azure_functions(f)
    assert counts[:3].tolist() == [3, 7, 1]
    assert read_azure_functions(f).lines == (4,)


# ------------------------------------------------------------------ per-minute -> per-second


def test_expansion_preserves_every_minute_exactly() -> None:
    minutes = load_azure_functions(SAMPLE)
    replay = AzureFunctionsReplay(minutes)
    c = replay.counts(AZURE_FUNCTIONS_MINUTES * 60, 1.0, np.random.default_rng(0))
    np.testing.assert_array_equal(c.reshape(-1, 60).sum(axis=1), minutes)
    # multinomial spread, not an even split
    busy = int(np.argmax(minutes))
    assert len(set(c[busy * 60 : (busy + 1) * 60].tolist())) > 1
    # rates spread each minute uniformly
    r = replay.rates(AZURE_FUNCTIONS_MINUTES * 60, 1.0)
    np.testing.assert_allclose(r, np.repeat(minutes / 60.0, 60), rtol=1e-12)
    # half-second grid, start_minute, integer scale: still exact per minute
    shifted = AzureFunctionsReplay(minutes, start_minute=100, scale=3)
    c2 = shifted.counts(120 * 20, 0.5, np.random.default_rng(1))
    np.testing.assert_array_equal(c2.reshape(-1, 120).sum(axis=1), 3 * minutes[100:120])
    # coarser and unaligned grids keep the day's total
    c3 = replay.counts(AZURE_FUNCTIONS_MINUTES, 60.0, np.random.default_rng(2))
    np.testing.assert_array_equal(c3, minutes)
    c4 = replay.counts(86_400 // 45, 45.0, np.random.default_rng(3), start_s=60.0 * 1440)
    assert c4.sum() == minutes.sum()


def test_replay_loop_and_start_minute() -> None:
    minutes = np.arange(1440, dtype=np.int64) % 7
    rng = np.random.default_rng(0)
    looped = AzureFunctionsReplay(minutes, start_minute=1430)
    np.testing.assert_array_equal(
        looped.counts(20, 60.0, rng), np.concatenate([minutes[1430:], minutes[:10]])
    )
    once = AzureFunctionsReplay(minutes, start_minute=1430, loop=False)
    np.testing.assert_array_equal(
        once.counts(20, 60.0, rng), np.concatenate([minutes[1430:], np.zeros(10, np.int64)])
    )
    assert once.mean_rate == pytest.approx(minutes.sum() / 86_400)
    half = AzureFunctionsReplay(minutes, scale=0.5).counts(1440 * 50, 60.0, rng)
    assert half.sum() == pytest.approx(0.5 * 50 * minutes.sum(), rel=0.02)
    assert "start_minute=1430" in repr(looped)


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [
        ({"start_minute": 1440}, r"start_minute: .*\[0, 1440\)"),
        ({"start_minute": -1}, r"start_minute"),
        ({"start_minute": 2.0}, r"start_minute"),
        ({"start_minute": True}, r"start_minute"),
        ({"scale": -1}, r"scale: .*>= 0"),
        ({"loop": "yes"}, r"loop"),
    ],
)
def test_replay_parameters_validated(kwargs: dict, pattern: str) -> None:
    with pytest.raises(ValueError, match=pattern):
        AzureFunctionsReplay(np.ones(1440, np.int64), **kwargs)


def test_replay_counts_validated() -> None:
    with pytest.raises(ValueError, match=r"per_minute_counts: .*integer.*at 1"):
        AzureFunctionsReplay([1, 2.5, 3])
    with pytest.raises(ValueError, match=r"per_minute_counts: .*>= 0"):
        AzureFunctionsReplay([1, -2])


def test_from_csv() -> None:
    table = read_azure_functions(SAMPLE)
    rep = AzureFunctionsReplay.from_csv(SAMPLE, table.functions[0], scale=2.0, start_minute=60)
    assert rep.mean_rate == pytest.approx(2.0 * table.counts[0].sum() / 86_400)
    assert rep.start_minute == 60 and rep.interval_s == 60.0


# ------------------------------------------------------------------ make_arrival


def test_make_arrival_builds_trace_kinds() -> None:
    assert {"azure", "alibaba", "azure-functions"} <= set(ARRIVAL_KINDS)
    az = make_arrival({"kind": "azure", "rate": 150})
    assert isinstance(az, AzureLike) and az.mean_rate == 150 and az.burst_height == 2.0
    az2 = make_arrival(
        {"kind": "Azure", "rate": 80, "sigma": 0.3, "corr_s": 10, "jitter": 0.1,
         "bursts_per_min": 1, "burst_s": 3, "burst_height": 2.5}
    )  # fmt: skip
    assert isinstance(az2, AzureLike) and (az2.sigma, az2.burst_s) == (0.3, 3.0)
    al = make_arrival({"kind": "alibaba", "rate": 90, "amplitude": 0.1, "period_s": 100})
    assert isinstance(al, AlibabaLike) and al.mean_rate == 90 and al.period_s == 100
    table = read_azure_functions(SAMPLE)
    fn = make_arrival({"kind": "azure-functions", "path": SAMPLE_REL}, base_dir=SCENARIOS)
    assert isinstance(fn, AzureFunctionsReplay)
    assert fn.mean_rate == pytest.approx(table.counts.sum() / 86_400)
    one = make_arrival(
        {
            "kind": "azure-functions",
            "path": str(SAMPLE),
            "function": table.functions[1],
            "scale": 120,
            "start_minute": 600,
            "loop": False,
        }
    )
    assert isinstance(one, AzureFunctionsReplay)
    assert one.mean_rate == pytest.approx(120 * table.counts[1].sum() / 86_400)
    assert one.start_minute == 600 and not one.loop
    by_index = make_arrival({"kind": "azure-functions", "path": str(SAMPLE), "function": 1})
    np.testing.assert_array_equal(by_index.trace_counts, table.counts[1])  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("spec", "pattern"),
    [
        ({"kind": "gamma"}, r"arrival\.kind.*'gamma'.*azure, alibaba, azure-functions"),
        ({"kind": "azure"}, r"arrival\.rate: missing"),
        ({"kind": "alibaba", "rate": -3}, r"arrival\.rate: .*in \[0\.0, 1000000\.0\], got -3"),
        ({"kind": "azure", "rate": 10, "sigma": -1}, r"arrival\.sigma: .*\[0, 2\]"),
        ({"kind": "azure", "rate": 10, "burst_s": "2"}, r"arrival\.burst_s: must be a finite"),
        ({"kind": "azure", "rate": 10, "period_s": 5}, r"unknown field 'period_s'.*burst_height"),
        ({"kind": "alibaba", "rate": 10, "amplitude": 1.5}, r"arrival\.amplitude: .*\[0, 1\)"),
        ({"kind": "alibaba", "rate": 10, "jitter": 1}, r"unknown field 'jitter'.*level_sigma"),
        ({"kind": "azure-functions"}, r"arrival\.path: missing"),
        ({"kind": "azure-functions", "path": 3}, r"arrival\.path: must be a file path"),
        ({"kind": "azure-functions", "path": SAMPLE_REL, "rate": 1}, r"unknown field 'rate'"),
        ({"kind": "azure-functions", "path": SAMPLE_REL, "scale": -1}, r"arrival\.scale"),
        ({"kind": "azure-functions", "path": SAMPLE_REL, "loop": 1}, r"arrival\.loop"),
        ({"kind": "azure-functions", "path": SAMPLE_REL, "function": True}, r"arrival\.function"),
        ({"kind": "azure-functions", "path": SAMPLE_REL, "function": -2}, r"arrival\.function"),
        ({"kind": "azure-functions", "path": SAMPLE_REL, "function": 0.5}, r"arrival\.function"),
        ({"kind": "azure-functions", "path": SAMPLE_REL, "function": " "}, r"arrival\.function"),
        (
            {"kind": "azure-functions", "path": SAMPLE_REL, "function": "abc123"},
            r"arrival\.function: unknown function hash 'abc123'",
        ),
        (
            {"kind": "azure-functions", "path": SAMPLE_REL, "function": 6},
            r"arrival\.function: row index 6 out of range",
        ),
        (
            {"kind": "azure-functions", "path": SAMPLE_REL, "start_minute": 1440},
            r"arrival\.start_minute: .*\[0, 1440\)",
        ),
        (
            {"kind": "azure-functions", "path": SAMPLE_REL, "start_minute": 1.5},
            r"arrival\.start_minute",
        ),
    ],
)
def test_make_arrival_rejects_bad_trace_specs(spec: dict, pattern: str) -> None:
    with pytest.raises(ValueError, match=pattern):
        make_arrival(spec, base_dir=SCENARIOS)


def test_make_arrival_azure_functions_file_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"tenants\[1\]\.arrival\.path: .*missing\.csv"):
        make_arrival(
            {"kind": "azure-functions", "path": "missing.csv"},
            base_dir=tmp_path,
            where="s.yaml: tenants[1].arrival",
        )
    _write(tmp_path, [_header(1439), _row()], "short.csv")
    with pytest.raises(ValueError, match=r"arrival\.path: .*short\.csv, line 1: .*1439 minute"):
        make_arrival({"kind": "azure-functions", "path": "short.csv"}, base_dir=tmp_path)


# ------------------------------------------------------------------ bundled sample


def test_sample_file_is_what_the_command_writes(tmp_path: Path, capsys) -> None:
    out = tmp_path / "sub" / "sample.csv"
    assert main(["--write-sample", str(out)]) == 0
    assert str(out) in capsys.readouterr().out
    assert out.read_bytes() == SAMPLE.read_bytes()
    other = write_azure_functions_sample(tmp_path / "seed1.csv", seed=1)
    assert other.read_bytes() != SAMPLE.read_bytes()
    assert read_azure_functions(other).counts.shape == (6, 1440)
    with pytest.raises(ValueError, match="seed"):
        write_azure_functions_sample(tmp_path / "x.csv", seed=-1)


def test_stats_command_prints_table(capsys) -> None:
    assert main(["--stats", "--seconds", "2000"]) == 0
    text = capsys.readouterr().out
    assert "| AzureLike |" in text and "| AlibabaLike |" in text and "target" in text

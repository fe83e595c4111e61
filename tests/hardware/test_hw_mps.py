"""Tests for MPS share quantisation and the share -> speed curve."""

from fractions import Fraction

import numpy as np
import pytest

from edgegym.hardware import quantize_shares, share_speedup


def _reference(shares, quantum, capacity):
    """Slow exact version of the documented rule, in Fractions."""
    q = [int(Fraction(x) / Fraction(quantum) + Fraction(1, 10**9)) for x in shares]
    cap = int(Fraction(capacity) / Fraction(quantum) + Fraction(1, 10**9))
    total = sum(q)
    if total <= cap:
        return q
    t = [Fraction(qi * cap, total) for qi in q]
    base = [int(ti) for ti in t]
    order = sorted(range(len(q)), key=lambda i: (-(t[i] - base[i]), i))
    for i in order[: cap - sum(base)]:
        base[i] += 1
    return base


def test_examples():
    # by hand: floor(0.35 / 0.1) = 3 quanta each, 9 <= C = 10: on the grid, returned as is
    np.testing.assert_allclose(quantize_shares([0.35, 0.35, 0.35], 0.1), [0.3, 0.3, 0.3])
    np.testing.assert_array_equal(quantize_shares([0.3, 0.7], 0.1, as_quanta=True), [3, 7])
    np.testing.assert_array_equal(quantize_shares([0.6, 0.6], 0.1, as_quanta=True), [5, 5])
    # t = (4.17, 2.5, 3.33): floors (4, 2, 3), one leftover to the largest remainder
    np.testing.assert_array_equal(quantize_shares([0.5, 0.3, 0.4], 0.1, as_quanta=True), [4, 3, 3])
    # ties go to the lower index
    np.testing.assert_array_equal(quantize_shares([0.5, 0.5, 0.5], 0.1, as_quanta=True), [4, 3, 3])
    np.testing.assert_array_equal(quantize_shares([3.0, 1.0], 0.5, 2.0, as_quanta=True), [3, 1])
    assert quantize_shares([], 0.1).shape == (0,)
    np.testing.assert_array_equal(quantize_shares([0.5, 0.5], 0.1, 0.05), [0.0, 0.0])


def test_random_properties_against_reference():
    rng = np.random.default_rng(1234)
    for _ in range(400):
        n = int(rng.integers(1, 12))
        quantum = float(rng.choice([0.05, 0.1, 0.125, 0.2, 0.25, 0.5]))
        capacity = float(rng.choice([0.5, 1.0, 2.0, 3.0, rng.uniform(0, 3)]))
        shares = rng.uniform(0, 1.5, n) * (rng.uniform(size=n) < 0.8)
        if rng.uniform() < 0.3:  # exactly on-grid requests
            shares = rng.integers(0, 6, n) * quantum
        quanta = quantize_shares(shares, quantum, capacity, as_quanta=True)
        out = quantize_shares(shares, quantum, capacity)
        cap_q = int(np.floor(capacity / quantum + 1e-9))
        floored = np.floor(shares / quantum + 1e-9).astype(np.int64)

        assert quanta.dtype == np.int64 and np.all(quanta >= 0)
        np.testing.assert_allclose(out, quanta * quantum)  # on the grid
        assert quanta.sum() <= cap_q and out.sum() <= capacity + 1e-9
        assert np.all(quanta <= floored)  # never more than requested
        np.testing.assert_array_equal(
            quanta, quantize_shares(shares, quantum, capacity, as_quanta=True)
        )
        if floored.sum() <= cap_q:
            np.testing.assert_array_equal(quanta, floored)  # feasible: unchanged
        else:
            assert quanta.sum() == cap_q  # infeasible: capacity filled exactly
        assert quanta.tolist() == _reference(shares.tolist(), quantum, capacity)


def test_feasible_grid_request_returned_unchanged():
    shares = np.array([0.1, 0.2, 0.3, 0.4])
    np.testing.assert_allclose(quantize_shares(shares, 0.1, 1.0), shares)


def test_quantize_validation():
    with pytest.raises(ValueError):
        quantize_shares([-0.1], 0.1)
    with pytest.raises(ValueError):
        quantize_shares([np.nan], 0.1)
    with pytest.raises(ValueError):
        quantize_shares([0.1], 0.0)
    with pytest.raises(ValueError):
        quantize_shares([0.1], 0.1, -1.0)
    with pytest.raises(ValueError):
        quantize_shares([[0.1]], 0.1)


def test_share_speedup():
    s = np.array([0.0, 0.25, 0.5, 1.0, 1.5, 3.0])
    # by hand: min(s, 1) + max(s - 1, 0) x 0.9 (the default multi-GPU efficiency)
    np.testing.assert_allclose(share_speedup(s), [0.0, 0.25, 0.5, 1.0, 1.45, 2.8])
    np.testing.assert_allclose(share_speedup(s, alpha=0.5)[:4], [0.0, 0.5, np.sqrt(0.5), 1.0])
    np.testing.assert_allclose(share_speedup(s, multi_gpu_efficiency=1.0)[4:], [1.5, 3.0])
    grid = np.linspace(0, 4, 401).reshape(401, 1)  # any shape works
    out = share_speedup(grid, alpha=0.7)
    assert out.shape == (401, 1) and np.all(np.diff(out[:, 0]) >= 0)
    with pytest.raises(ValueError):
        share_speedup(-0.1)
    with pytest.raises(ValueError):
        share_speedup(0.5, alpha=0.0)


def _reference_largest_remainder(row: list[int], total: int) -> list[int]:
    """Obviously-correct rule with exact fractions: floor, then one unit each for the
    largest remainders, ties to the lower index."""
    from fractions import Fraction

    s = sum(row)
    exact = [Fraction(v * total, s) for v in row]
    base = [int(e) for e in exact]
    order = sorted(range(len(row)), key=lambda i: (-(exact[i] - base[i]), i))
    for i in order[: total - sum(base)]:
        base[i] += 1
    return base


def test_largest_remainder_matches_exact_fractions_up_and_down() -> None:
    from edgegym.hardware.mps import largest_remainder

    rng = np.random.default_rng(0)
    for _ in range(300):
        n = int(rng.integers(1, 6))
        rows = rng.integers(0, 50, size=(8, n))
        rows[:, 0] += 1  # positive sums
        total = int(rng.integers(0, 120))  # scales up as well as down
        got = largest_remainder(rows, total)
        want = [_reference_largest_remainder(r.tolist(), total) for r in rows]
        np.testing.assert_array_equal(got, want)
        assert (got.sum(axis=1) == total).all()
    # Ties go to the lower index: 3 equal requests onto 2 units.
    np.testing.assert_array_equal(largest_remainder([[1, 1, 1]], 2), [[1, 1, 0]])
    # 7 chunks of [1, 2, 4] onto 60 units: exact 8.57, 17.14, 34.29 -> 9, 17, 34.
    np.testing.assert_array_equal(largest_remainder([[1, 2, 4]], 60), [[9, 17, 34]])


def test_largest_remainder_with_a_total_per_row_equals_one_call_per_row() -> None:
    from edgegym.hardware.mps import largest_remainder

    rng = np.random.default_rng(1)
    rows = rng.integers(0, 40, size=(200, 7))
    rows[:, 0] += 1
    totals = rng.integers(0, 90, size=200)
    got = largest_remainder(rows, totals)
    pairs = zip(rows, totals, strict=True)
    want = np.concatenate([largest_remainder(r[None], int(t)) for r, t in pairs])
    np.testing.assert_array_equal(got, want)
    assert (got.sum(axis=1) == totals).all()

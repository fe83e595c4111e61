"""Allocation catalogue: signatures cross-checked by brute force over physical assignments."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from edgegym.hardware.mig import MIGLayout, valid_layouts
from edgegym.hardware.migalloc import ABSENT, IDLE, catalogue


def _physical_signatures(gpu: str, m: int) -> set[tuple[tuple[int, ...], ...]]:
    """Every signature by assigning each instance of each maximal layout to a task or idle."""
    out = set()
    for lay in valid_layouts(gpu, maximal_only=True):
        sizes = [p.gpcs for p, _ in lay.instances]
        for a in itertools.product(range(2 * m + 1), repeat=len(sizes)):
            per = [
                tuple(sorted((sizes[i] for i in range(len(a)) if a[i] == t + 1), reverse=True))
                for t in range(2 * m)
            ]
            if all(per[t] for t in range(m)) and all(len(per[m + t]) <= 1 for t in range(m)):
                out.add(tuple(per))
    return out


@pytest.mark.parametrize(("gpu", "m"), [("A100-40GB", 1), ("A100-40GB", 2), ("H100-80GB", 2)])
def test_catalogue_equals_brute_force(gpu, m):
    cat = catalogue(gpu, m)
    assert set(cat.signatures) == _physical_signatures(gpu, m)
    assert len(set(cat.signatures)) == len(cat)
    assert np.all(cat.gpcs.sum(axis=1) <= 7)


def test_catalogue_size_two_tenants():
    assert len(catalogue("A100-40GB", 2)) == 496


def _check_physical(cat, n, phys):
    """The physical allocation is a valid layout hosting exactly signature n."""
    places = np.flatnonzero(phys != ABSENT)
    MIGLayout(tuple(cat.placements[p] for p in places))  # raises if invalid
    for t in range(cat.n_tasks):
        got = sorted((int(cat.placement_size[p]) for p in np.flatnonzero(phys == t)), reverse=True)
        assert tuple(got) == cat.signatures[n][t]


def test_realise_keeps_running_instance_and_minimises_changes():
    cat = catalogue("A100-40GB", 2)
    rng = np.random.default_rng(0)
    prev = np.full(len(cat.placements), ABSENT)
    for _ in range(60):
        n = int(rng.integers(len(cat)))
        keep = [(int(p), int(prev[p])) for p in np.flatnonzero(prev >= 2)]
        ok = cat.feasible(keep)
        if not ok[n]:
            continue
        _, phys = cat.realise(n, prev, keep)
        _check_physical(cat, n, phys)
        for p, t in keep:
            assert phys[p] == t
        # Brute force: no layout hosting n keeps more (placement, task) pairs.
        kept = int(np.sum((phys == prev) & (prev >= 0)))
        best = 0
        for li in range(len(cat.layouts)):
            if not cat.hosts[n, li] or any(not cat.layout_place[li, p] for p, _ in keep):
                continue
            score = 0
            for t in range(cat.n_tasks):
                for z in set(cat.signatures[n][t]):
                    need = cat.signatures[n][t].count(z)
                    have = sum(
                        1
                        for p in np.flatnonzero(cat.layout_place[li])
                        if prev[p] == t and cat.placement_size[p] == z
                    )
                    score += min(need, have)
            best = max(best, score)
        assert kept == best
        prev = phys


def test_unrealisable_signature_raises():
    cat = catalogue("A100-40GB", 2)
    prev = np.full(len(cat.placements), ABSENT)
    _, a = cat.realise(cat.index(((4,), (2,), (1,), ())), prev)
    keep = [(int(np.flatnonzero(a == 2)[0]), 2)]
    bad = cat.index(((3,), (2, 1), (1,), ()))
    assert not cat.feasible(keep)[bad]
    with pytest.raises(ValueError, match="no layout"):
        cat.realise(bad, a, keep)
    assert IDLE == -1


@pytest.mark.parametrize(("gpu", "m"), [("A100-40GB", 1), ("A100-40GB", 3), ("H100-80GB", 2)])
def test_batched_realisation_equals_the_per_env_one(gpu, m):
    """Random walks of allocations (running jobs kept, some instances idled, some restarts from
    nothing) realised one by one and as one batch give the same layouts and tasks."""
    cat = catalogue(gpu, m)
    rng = np.random.default_rng(7)
    n_place = len(cat.placements)
    sigs, prevs, keeps, want = [], [], [], []
    prev = np.full(n_place, ABSENT)
    while len(sigs) < 1500:
        n = int(rng.integers(len(cat)))
        keep = (prev >= m) & (rng.random(n_place) < 0.7)
        pairs = [(int(p), int(prev[p])) for p in np.flatnonzero(keep)]
        if not cat.feasible(pairs)[n]:
            continue
        got = cat.realise(n, prev, pairs)
        sigs.append(n)
        prevs.append(prev)
        keeps.append(keep)
        want.append(got)
        prev = got[1].copy()
        prev[(prev >= 0) & (rng.random(n_place) < 0.15)] = IDLE
        if rng.random() < 0.05:
            prev = np.full(n_place, ABSENT)
    lay, phys = cat.realise_batch(np.array(sigs), np.array(prevs), np.array(keeps))
    np.testing.assert_array_equal(lay, [w[0] for w in want])
    np.testing.assert_array_equal(phys, np.array([w[1] for w in want]))
    one_lay, one = cat.realise_batch(np.array(sigs[:1]), np.array(prevs[:1]), np.array(keeps[:1]))
    assert one_lay[0] == want[0][0] and np.array_equal(one[0], want[0][1])


def test_batched_realisation_raises_like_the_per_env_one():
    cat = catalogue("A100-40GB", 2)
    prev = np.full(len(cat.placements), ABSENT)
    _, a = cat.realise(cat.index(((4,), (2,), (1,), ())), prev)
    bad = cat.index(((3,), (2, 1), (1,), ()))
    good = cat.index(((4,), (2,), (1,), ()))
    with pytest.raises(ValueError, match="no layout"):
        cat.realise_batch(np.array([good, bad]), np.stack([a, a]), np.stack([a == 2, a == 2]))


def test_popcount_without_bitwise_count(monkeypatch):
    """The 16-bit table that stands in for ``np.bitwise_count`` (numpy < 2) counts the same."""
    from edgegym.hardware import migalloc

    rng = np.random.default_rng(3)
    x = np.concatenate([rng.integers(0, 1 << 62, 500), [0, 1, (1 << 62) - 1, 1 << 40]])
    want = np.array([bin(int(v)).count("1") for v in x])
    monkeypatch.setattr(migalloc, "_BITWISE_COUNT", None)
    np.testing.assert_array_equal(migalloc._popcount(x), want)

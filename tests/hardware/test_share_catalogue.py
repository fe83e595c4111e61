"""The MPS share catalogue: one share per task, every signature its only allocation."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from edgegym.hardware.migalloc import ABSENT, MAX_SHARE_SIGNATURES, share_catalogue


@pytest.mark.parametrize(("m", "units"), [(1, 4), (2, 5), (2, 7), (3, 6)])
def test_the_signatures_are_every_share_vector_by_brute_force(m: int, units: int) -> None:
    """Every assignment of shares with each inference task holding one unit at least, each
    task at most one share and the shares within the GPU, exactly once (and the stars and bars
    count of them)."""
    cat = share_catalogue("A100-40GB", m, units)
    brute = {
        c
        for c in itertools.product(range(units + 1), repeat=2 * m)
        if sum(c) <= units and min(c[:m]) >= 1
    }
    got = [tuple(int(x) for x in row) for row in cat.gpcs]
    assert len(got) == len(set(got)) == len(brute) == math.comb(units + m, 2 * m)
    assert set(got) == brute
    for n, sig in enumerate(cat.signatures):  # the signature, counts and index agree
        assert tuple(sum(t) for t in sig) == got[n]
        assert cat.index(sig) == n
        assert (cat.counts[n].sum(axis=1) == (cat.gpcs[n] > 0)).all()


def test_each_signature_has_one_allocation_holding_each_share_once() -> None:
    """A task with share s sits on placement (s, task); nothing else is placed, so a task is
    moved exactly when its share changes."""
    cat = share_catalogue("A100-40GB", 2, 14)
    assert len(cat) == 1820 and cat.units == 14 and not cat.layouts
    for n in (0, 7, 500, 1819):
        alloc = cat.alloc[n]
        placed = np.flatnonzero(alloc != ABSENT)
        assert sorted(alloc[placed].tolist()) == np.flatnonzero(cat.gpcs[n]).tolist()
        for p in placed:
            prof, task = cat.placements[p]
            assert task == alloc[p] and prof.gpcs == cat.gpcs[n, task]
            assert prof.mem_slices == 0  # MPS partitions no memory
        lay, again = cat.realise(n, np.full(len(cat.placements), ABSENT))
        assert lay == n and (again == alloc).all()


def test_a_running_job_keeps_its_share() -> None:
    """``feasible`` keeps exactly the signatures giving the kept task the kept share, and
    realising one that moves it is refused."""
    cat = share_catalogue("A100-40GB", 2, 7)
    m = 2
    n = cat.index(((2,), (1,), (3,), ()))
    p = int(np.flatnonzero(cat.alloc[n] == m)[0])  # R0's placement
    ok = cat.feasible([(p, m)])
    assert ok.any() and (cat.gpcs[ok, m] == 3).all()
    assert ok.sum() == (cat.gpcs[:, m] == 3).sum()
    other = cat.index(((2,), (1,), (2,), ()))
    keep = np.zeros((1, len(cat.placements)), dtype=bool)
    keep[0, p] = True
    with pytest.raises(ValueError, match="running job's share"):
        cat.realise_batch(np.array([other]), cat.alloc[[n]], keep)
    with pytest.raises(ValueError, match="does not keep task 2"):
        cat.realise(other, cat.alloc[n], [(p, m)])


def test_bad_counts_are_refused_with_the_reason() -> None:
    with pytest.raises(ValueError, match=r"units must be in \[2, 28\]"):
        share_catalogue("A100-40GB", 2, 1)
    with pytest.raises(ValueError, match="n_tenants must be in"):
        share_catalogue("A100-40GB", 5, 4)
    with pytest.raises(ValueError, match=f"more than {MAX_SHARE_SIGNATURES:,}"):
        share_catalogue("A100-40GB", 2, 28)

"""MIGRator planner's bounds: never below the exact value of a retraining plan.

The branch and bound prunes a plan when its bound is within the gap of the best value found,
so a bound below the plan's exact value could prune the optimum. Each bound is checked against
brute force on tiny problems (every signature sequence enumerated and credited to the
retraining plan it carries out) and against the exact per-plan Viterbi on a real window.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from edgegym.baselines import migrator_plan as mp
from edgegym.baselines.migrator import build_problem
from edgegym.families.mig import MIGReconfigEnv


def _bounds(p: mp.PlanProblem) -> tuple[dict, np.ndarray, np.ndarray, np.ndarray]:
    """Every plan of ``p`` (start stride 1) with its scalar bound, its chained bound and its
    exact value (the Viterbi of the solver)."""
    served, loss = p.served(), p.loss()
    tab = mp._option_tables(p, served, loss)
    _, start, size, end = mp._retraining_plans(p, 10**9)
    trans = mp._TransitionCache(p, loss, tab.joint)
    assert trans.enter is not None
    cut, key = mp._segments(p, start, end, size, tab)
    paths = mp._path_bounds(p, tab, trans, loss, cut, key)
    scalar = mp._upper_bounds(p, cut, key, tab, paths)
    n_f = tab.best.shape[1]
    gain_cum = np.concatenate(
        [np.zeros((*tab.gain.shape[:2], 1)), np.cumsum(tab.gain, axis=2)], axis=2
    )
    breaks = np.ones(p.shape[1], dtype=bool)  # one step at a time: plans solve together
    exact = np.array(
        [v for v, _ in mp._viterbi(p, start, end, size, gain_cum, trans, loss, tab, breaks)]
    )
    if paths is None:  # no stretch of any plan has an occupancy a signature allows
        chained = np.full_like(scalar, mp.NEG)
    else:
        row = np.where(key >= 0, paths.row[np.maximum(key, 0)], -1)
        chained, below = paths.chain(trans, cut, row, key % n_f)
        bad = (below > exact + 1e-6) & (exact > mp.NEG / 2)  # a path the plan can follow
        assert not bad.any(), (below[bad], exact[bad], cut[:, bad], key[:, bad])
        # the exact solve the search runs: the middle step by step, the ends from the passes
        mid = mp._mid_values(p, tab, trans, paths, cut, key)
        ok = exact > mp.NEG / 2
        np.testing.assert_allclose(mid[ok], exact[ok], rtol=1e-9, atol=1e-6)
    plans = {
        tuple((int(start[i, k]), int(size[i, k])) for i in range(p.shape[0])): k
        for k in range(start.shape[1])
    }
    return plans, scalar, chained, exact


def _plan_of(p: mp.PlanProblem, seq: np.ndarray) -> tuple[tuple[int, int], ...]:
    out = []
    for i in range(p.shape[0]):
        run = np.flatnonzero(p.sig_r[seq, i] >= 0)
        out.append((int(run[0]), int(p.sig_r[seq[run[0]], i])) if run.size else (-1, -1))
    return tuple(out)


@pytest.mark.parametrize("seed", range(30))
def test_bounds_are_at_least_every_plans_brute_force_optimum(seed, tiny_plan_problem):
    p = tiny_plan_problem(seed, eq11=True)
    if mp.change_classes(p, p.loss()) is None:
        pytest.skip("no class structure")
    plans, scalar, chained, exact = _bounds(p)
    best: dict[tuple, float] = {}
    n, t_n = p.sig_u.shape[0], p.shape[1]
    for idx in itertools.product(range(n), repeat=t_n):
        seq = np.array(idx)
        if p.feasible(seq):
            plan = _plan_of(p, seq)
            best[plan] = max(best.get(plan, mp.NEG), p.value(seq))
    assert best or not np.any(exact > mp.NEG / 2)
    for plan, value in best.items():
        k = plans[plan]
        assert exact[k] == pytest.approx(value, abs=1e-6)
        assert scalar[k] >= value - 1e-9
        assert chained[k] >= value - 1e-9


def test_bounds_hold_and_chain_is_tighter_on_a_real_window():
    """A 36 s W1 window whose arrivals change every step: thousands of plans, each bounded
    from above by both bounds, and the chained bound (the switches between stretches priced)
    is tight on some plans and tighter than the scalar one on most (the solver takes the
    smaller of the two)."""
    env = MIGReconfigEnv("migrator-w1", window_s=36, windows=1, data_fraction=0.2)
    env.reset(seed=1)
    snap = env.sim_state(oracle=True)
    p = build_problem(snap, snap.window_arrivals)
    _, scalar, chained, exact = _bounds(p)
    ok = exact > mp.NEG / 2
    assert ok.sum() > 1000
    assert np.all(scalar[ok] >= exact[ok] - 1e-9)
    assert np.all(chained[ok] >= exact[ok] - 1e-9)
    assert np.mean(chained[ok] < scalar[ok]) > 0.5
    assert np.any(np.isclose(chained[ok], exact[ok], rtol=0, atol=1e-6))


def test_path_bounds_change_the_search_not_the_optimum():
    """With and without the path bounds the solver proves the same optimum (gap 0) on a real
    window; the path bounds solve fewer plans exactly."""
    env = MIGReconfigEnv("migrator-w1", window_s=30, windows=1, data_fraction=0.2)
    env.reset(seed=1)
    snap = env.sim_state(oracle=True)
    p = build_problem(snap, snap.window_arrivals)
    fast = mp.solve(p, gap=0.0)
    slow = mp.solve(p, gap=0.0, path_bounds=False)
    assert fast.value == pytest.approx(slow.value, rel=1e-12)
    assert fast.plans_solved <= slow.plans_solved


def test_grouped_switch_step_is_the_dense_one_bit_for_bit():
    """Under Eq. 11's shape the Viterbi step takes grouped maxima instead of the (J, J) table
    of switch costs; into an option (one step, one step per plan) and onward from it, every
    value equals the dense maximum's exactly."""
    env = MIGReconfigEnv("migrator-w1", window_s=30, windows=1, data_fraction=0.2)
    env.reset(seed=1)
    snap = env.sim_state(oracle=True)
    p = build_problem(snap, snap.window_arrivals)
    loss = p.loss()
    tab = mp._option_tables(p, p.served(), loss)
    trans = mp._TransitionCache(p, loss, tab.joint)
    assert trans.enter is not None
    rng = np.random.default_rng(0)
    n_j, m = tab.joint.shape
    v = rng.normal(1000.0, 50.0, size=(9, n_j))
    v[:, rng.random(n_j) < 0.2] = mp.NEG  # options a stretch does not allow
    flags = rng.integers(0, 2**m, size=9)
    steps = rng.integers(0, p.shape[1], size=9)

    def dense(t: int, f: int) -> np.ndarray:  # (J, J) accuracy-weighted cost from j' to j
        tr, acc = trans.at(t), trans.acc(f)
        out = acc[0] * tr[0]
        for i in range(1, m):  # weighted_at's order
            out = out + acc[i] * tr[i]
        return out

    for t in np.unique(steps):
        into = np.stack([(v[b][:, None] - dense(t, f)).max(axis=0) for b, f in enumerate(flags)])
        onward = np.stack([(v[b][None, :] - dense(t, f)).max(axis=1) for b, f in enumerate(flags)])
        np.testing.assert_array_equal(trans.best_into(v, int(t), flags), into)
        np.testing.assert_array_equal(trans.best_onward(v, int(t), flags), onward)
    at = np.stack([(v[b][:, None] - dense(t, f)).max(axis=0)
                   for b, (t, f) in enumerate(zip(steps, flags, strict=True))])  # fmt: skip
    np.testing.assert_array_equal(trans.best_into_at(v, steps, flags), at)


def _group_bounds(p, length: int):
    """Each tenant's plan options, the plans grouped by blocks of ``length`` starts, and every
    group's bound, as the planner computes them."""
    loss = p.loss()
    tab = mp._option_tables(p, p.served(), loss)
    trans = mp._TransitionCache(p, loss, tab.joint)
    _, opts = mp._tenant_options(p, 10**9)
    paths = mp._path_bounds(p, tab, trans, loss, keys=mp._combinations(p, tab))
    groups = mp._Groups(p, opts, length)
    return opts, groups, groups.bounds(tab, paths)


@pytest.mark.parametrize("length", [2, 3])
@pytest.mark.parametrize("seed", range(30))
def test_group_bounds_are_at_least_their_plans_brute_force_optima(seed, length, tiny_plan_problem):
    """Plans grouped by blocks of consecutive starts: a group's bound, computed without its
    plans, is at least the brute-force optimum of each of its plans."""
    p = tiny_plan_problem(seed, eq11=True)
    if mp.change_classes(p, p.loss()) is None:
        pytest.skip("no class structure")
    plans, _, _, exact = _bounds(p)
    opts, groups, gb = _group_bounds(p, length)
    covered = 0
    for g in range(len(groups)):
        idx = groups.plans(np.array([g]))
        for col in idx.T:
            plan = tuple((int(opts[i][c, 0]), int(opts[i][c, 1])) for i, c in enumerate(col))
            value = exact[plans[plan]]
            if value > mp.NEG / 2:
                assert gb[g] >= value - 1e-9
            covered += 1
    assert covered == len(plans)  # the groups list every plan once


def test_group_bounds_hold_on_a_real_window():
    env = MIGReconfigEnv("migrator-w1", window_s=36, windows=1, data_fraction=0.2)
    env.reset(seed=1)
    snap = env.sim_state(oracle=True)
    p = build_problem(snap, snap.window_arrivals)
    plans, _, _, exact = _bounds(p)
    opts, groups, gb = _group_bounds(p, 8)
    idx = groups.plans(np.arange(len(groups)))
    owner = np.repeat(np.arange(len(groups)), [groups.plans(np.array([g])).shape[1]
                                               for g in range(len(groups))])  # fmt: skip
    ks = np.array(
        [plans[tuple((int(opts[i][c, 0]), int(opts[i][c, 1])) for i, c in enumerate(col))]
         for col in idx.T]
    )  # fmt: skip
    ok = exact[ks] > mp.NEG / 2
    assert ok.sum() > 1000 and len(groups) < len(ks) / 10
    assert np.all(gb[owner][ok] >= exact[ks][ok] - 1e-9)


def test_a_plan_best_from_below_is_solved_at_once_and_can_end_the_search():
    """The search solves the plan with the best bound from below as soon as a refined batch
    shows it; when its value is within the gap of every bound left, the search stops there
    instead of refining every plan whose scalar bound is above the best chained bound."""
    n = 2000
    scalar = np.linspace(105.0, 100.0, n)  # the plans' scalar bounds, best first
    refined: list[int] = []

    def expand(gs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return np.arange(n), scalar.copy()

    def refine(ks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        refined.append(len(ks))
        return scalar[ks] - 2.0, np.where(ks == 7, 99.0, 50.0)  # plan 7: a path worth 99

    def viterbi(ks: np.ndarray) -> list:
        return [(99.5 if k == 7 else 50.0, lambda: np.zeros(3, dtype=np.int64)) for k in ks]

    val, seq, plan, solved, bound = mp._grouped_best_first(
        np.array([106.0]), expand, refine, viterbi, gap=0.1, max_plans=100
    )
    assert (plan, val, solved) == (7, 99.5, 1)
    assert np.array_equal(seq, np.zeros(3))  # its sequence, backtracked
    assert refined == [64]  # one batch; best-first alone refined 960, down to the chained bounds
    assert val <= bound <= val + 0.1 * abs(bound)  # the certificate: every bound left
    assert bound >= scalar[64] - 1e-12  # the pool's next plan is still among them

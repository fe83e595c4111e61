"""MIGRator's planning model as one MILP on HiGHS (``baselines/migrator_milp.py``): equal to
brute force on tiny problems and to the decomposition on real windows; refuses what it cannot
linearise."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

from edgegym.baselines.migrator import (
    PlanProblem,
    brute_force,
    build_problem,
    change_classes,
    solve,
)
from edgegym.baselines.migrator_milp import _fits_exactly, solve_milp
from edgegym.families.mig import MIGReconfigEnv


def _assert_milp_equals_brute_force(p: PlanProblem) -> None:
    """The MILP's plan is feasible and worth brute force's optimum; where brute force finds no
    feasible sequence the MILP says so too."""
    try:
        best, _ = brute_force(p)
    except ValueError:
        with pytest.raises(ValueError, match="no feasible"):
            solve_milp(p)
        return
    plan = solve_milp(p, gap=0.0)
    assert p.feasible(plan.signatures)
    assert plan.value == pytest.approx(best, abs=1e-6)
    assert plan.upper_bound >= best - 1e-6


@pytest.mark.parametrize("seed", range(25))
def test_milp_equals_brute_force_on_tiny_problems(seed, tiny_plan_problem):
    _assert_milp_equals_brute_force(tiny_plan_problem(seed, eq11=True))


@pytest.mark.parametrize("seed", range(6))
def test_the_option_held_before_the_window_shares_the_class_of_its_free_switches(
    seed, tiny_plan_problem
):
    # Tenant 0 held option 1 before the window, which none of this window's signatures use;
    # options 1 and 2 have the same counts (Eq. 11: switching between them is free). Option 1
    # must join option 2's class, or the MILP charges an entry into 2 at step 0 that the model
    # (loss[0, 0, 1, 2] = 0) does not.
    p = tiny_plan_problem(seed, eq11=True)
    cls = np.array([[0, 1, 1], [0, 0, 1]])
    added = np.where(cls[:, :, None] != cls[:, None, :], p.cap[:, None, :], 0.0)
    sig_u = p.sig_u.copy()
    sig_u[sig_u[:, 0] == 1, 0] = 2
    sig_u[0, 0] = 2
    p = dataclasses.replace(p, added=added, sig_u=sig_u, prev_u=np.array([1, p.prev_u[1]]))
    classes, _ = change_classes(p, p.loss())
    assert classes[0, 1] == classes[0, 2] != classes[0, 0]
    _assert_milp_equals_brute_force(p)


def _layout_problem(seed: int, tiny_plan_problem) -> PlanProblem:
    """A tiny problem whose allowed signatures are every combination of the tenants' options
    and retraining sizes whose instances fit one of two random layouts (as on a MIG GPU)."""
    rng = np.random.default_rng(seed)
    while True:
        p = tiny_plan_problem(seed, eq11=True)
        m, n_u, n_z = 2, p.cap.shape[1], p.dur.shape[1]
        sizes = rng.integers(0, 2, (m, n_u, n_z))
        sizes[:, :, 0] += sizes.sum(axis=2) == 0  # every option holds an instance
        layouts = rng.integers(1, 4, (2, n_z))
        sigs = []
        for u0, u1 in itertools.product(range(n_u), repeat=2):
            for r0, r1 in itertools.product(range(-1, n_z), repeat=2):
                used = sizes[0, u0] + sizes[1, u1]
                used = used + sum(np.eye(n_z, dtype=int)[r] for r in (r0, r1) if r >= 0)
                if np.any(np.all(used <= layouts, axis=1)):
                    sigs.append((u0, u1, r0, r1))
        if 2 <= len(sigs) <= 9 and len(sigs) ** p.shape[1] <= 20_000:
            sig = np.array(sigs)
            q = dataclasses.replace(p, sig_u=sig[:, :2], sig_r=sig[:, 2:], option_sizes=sizes,
                                    layouts=layouts)  # fmt: skip
            if _without_one(q) is not None:
                return q
        seed += 1000


def _without_one(p: PlanProblem) -> np.ndarray | None:
    """Signature indices less one whose every tenant's option and retraining size some other
    signature still uses (so the per-tenant choices are the same, their combinations not)."""
    both = np.concatenate([p.sig_u, p.sig_r], axis=1)
    for k in range(len(both)):
        rest = np.delete(both, k, axis=0)
        if all(np.isin(both[:, j], rest[:, j]).all() for j in range(both.shape[1])):
            return np.delete(np.arange(len(both)), k)
    return None


@pytest.mark.parametrize("seed", range(12))
def test_the_per_tenant_encoding_equals_brute_force(seed, tiny_plan_problem):
    """Where the allowed signatures are exactly the combinations that fit a layout the MILP
    writes the allocation per tenant; with one signature taken away it must not (the fit then
    allows a signature the problem forbids) and falls back to one column per signature. Both
    reach brute force's optimum."""
    p = _layout_problem(seed, tiny_plan_problem)
    assert _fits_exactly(p)
    keep = _without_one(p)
    fewer = dataclasses.replace(p, sig_u=p.sig_u[keep], sig_r=p.sig_r[keep])
    assert not _fits_exactly(fewer)
    for q in (p, fewer):
        _assert_milp_equals_brute_force(q)


def test_a_real_window_is_written_per_tenant_and_both_encodings_agree():
    """Every W1-W16 problem's signatures are the combinations that fit an A100 layout, so the
    MILP takes the compact encoding; forcing one column per signature gives the same optimum."""
    env = MIGReconfigEnv("migrator-w5", window_s=12, windows=1, data_fraction=0.05)
    env.reset(seed=3)
    snap = env.sim_state(oracle=True)
    p = build_problem(snap, snap.window_arrivals)
    assert _fits_exactly(p)
    compact = solve_milp(p, gap=1e-9)
    per_signature = solve_milp(dataclasses.replace(p, layouts=None), gap=1e-9)
    assert compact.value == pytest.approx(per_signature.value, rel=1e-9)
    assert compact.gap < 1e-6 and per_signature.gap < 1e-6


def test_highs_started_from_the_decomposition_certifies_its_plan():
    """Started from the decomposition's plan, HiGHS keeps it (or finds better) and proves a
    bound the plan is within 1% of; a plan of the wrong length is refused."""
    pytest.importorskip("highspy")
    env = MIGReconfigEnv("migrator-w5", window_s=12, windows=1, data_fraction=0.05)
    env.reset(seed=3)
    snap = env.sim_state(oracle=True)
    p = build_problem(snap, snap.window_arrivals)
    dec = solve(p, gap=0.01)
    plan = solve_milp(p, gap=0.01, start=dec.signatures)
    assert p.feasible(plan.signatures)
    assert plan.value >= dec.value - 1e-6
    assert dec.value >= plan.upper_bound * 0.99 - 1e-6
    assert plan.upper_bound >= dec.value - 1e-6
    with pytest.raises(ValueError, match="steps"):
        solve_milp(p, start=dec.signatures[:-1])


def test_a_started_solve_without_highspy_says_what_to_install(monkeypatch, tiny_plan_problem):
    import sys

    monkeypatch.setitem(sys.modules, "highspy", None)
    p = tiny_plan_problem(0, eq11=True)
    with pytest.raises(ImportError, match="pip install highspy"):
        solve_milp(p, start=np.zeros(p.shape[1], dtype=int))


def test_milp_equals_the_decomposition_on_a_real_window():
    """A 16-second window of W5 with every allowed signature (361): both prove the optimum
    (docs/benchmarks.md has 20, 40, 60 and 200 s windows)."""
    env = MIGReconfigEnv("migrator-w5", window_s=16, windows=1, data_fraction=0.05)
    env.reset(seed=3)
    snap = env.sim_state(oracle=True)
    p = build_problem(snap, snap.window_arrivals)
    exact = solve(p, gap=0.0, max_plans=10**6)
    plan = solve_milp(p, gap=1e-9)
    assert p.feasible(plan.signatures)
    assert plan.value == pytest.approx(exact.value, rel=1e-9)
    assert plan.gap < 1e-6


def test_the_planner_sweep_cross_checks_both_solvers_on_a_window():
    """``benchmarks.migrator_sweep``'s cross-check on a 16-second W5 window: each solver's
    objective is at least the other's bound x 0.99; a window HiGHS did not solve in its time
    limit stays out of the MILP's columns."""
    from benchmarks.migrator_sweep import format_result, solve_window, summarise

    env = MIGReconfigEnv("migrator-w5", window_s=16, windows=1, data_fraction=0.05)
    env.reset(seed=3)
    snap = env.sim_state(oracle=True)
    row = solve_window(build_problem(snap, snap.window_arrivals), milp_time_limit=60.0)
    assert row["agree"] and row["ratio"] == pytest.approx(1.0, abs=0.011)
    assert row["dec_gap"] <= 0.01 + 1e-12 and not row["dec_capped"]
    assert row["consistent"]
    unsolved = {**row, "milp_value": None}
    skipped = {**row, "milp_s": None, "milp_value": None}  # a window HiGHS was not run on
    s = summarise([row, unsolved, skipped])
    assert (s["windows"], s["milp_windows"], s["milp_solved"], s["agree"]) == (3, 2, 1, 1)
    table = format_result({"gap": 0.01, "max_plans": 2000, "milp_time_limit": 60.0,
                           "milp_windows": [2], "workloads": {"W5": {"summary": s}},
                           "all": s})  # fmt: skip
    assert "| W5 | 3 |" in table and "| 1 / 1 | 1 / 1 |" in table and "windows 2 of" in table


def test_classes_follow_eq11_and_other_rules_are_refused(tiny_plan_problem):
    p = tiny_plan_problem(1, eq11=True)
    cls, enter = change_classes(p, p.loss())
    for i in range(2):  # two used options are in one class exactly when switching is free
        used = np.unique(p.sig_u[:, i])
        free = (p.added[i] == 0) & (p.added[i].T == 0)
        same = cls[i][:, None] == cls[i][None, :]
        want = free | np.eye(p.cap.shape[1], dtype=bool)
        assert np.array_equal(same[np.ix_(used, used)], want[np.ix_(used, used)])
    assert enter.shape == (2, p.shape[1], p.cap.shape[1]) and np.all(enter >= 0)
    rng = np.random.default_rng(0)
    per_instance = rng.uniform(1, 20, p.added.shape)  # the cost depends on the option left
    with pytest.raises(ValueError, match="per-instance"):
        solve_milp(PlanProblem(**{**p.__dict__, "added": per_instance}))


def test_a_problem_where_retraining_lowers_accuracy_is_refused(tiny_plan_problem):
    p = tiny_plan_problem(2, eq11=True)
    with pytest.raises(ValueError, match="post >= pre"):
        solve_milp(PlanProblem(**{**p.__dict__, "post": p.pre - 0.1}))


def test_the_policy_plans_with_the_milp_when_asked():
    """``migrator:solver=milp`` plans the window with HiGHS, to the decomposition's optimum."""
    from edgegym.baselines import make_policy

    values = {}
    for spec in ("migrator:oracle=true,gap=0", "migrator:oracle=true,gap=0,solver=milp"):
        env = MIGReconfigEnv("migrator-w5", window_s=16, windows=1, data_fraction=0.05)
        env.reset(seed=3)
        policy = make_policy(spec, env)
        env.step(policy.predict(None)[0])
        values[spec] = policy.plans[0].value
    assert values["migrator:oracle=true,gap=0,solver=milp"] == pytest.approx(
        values["migrator:oracle=true,gap=0"], rel=1e-9
    )
    env = MIGReconfigEnv("migrator-w5", window_s=16, windows=1)
    with pytest.raises(ValueError, match="solver='gurobi' is unknown"):
        make_policy("migrator:solver=gurobi", env)


def test_the_sweep_runs_the_decomposition_alone_and_saves_as_it_goes():
    """``--milp-windows`` with no window: the decomposition on every window of the episode,
    HiGHS on none; the results so far are handed to ``save`` after each workload."""
    from benchmarks.migrator_sweep import _windows, format_result, run

    saved = []
    res = run(workloads=[7], seeds=[0], milp_windows=[], progress=False, save=saved.append)
    s = res["workloads"]["W7"]["summary"]
    assert s["windows"] == 4 and s["milp_windows"] == 0 and s["milp_solved"] == 0
    assert s["dec_worst_gap"] <= 0.01 + 1e-12
    assert len(saved) == 1 and saved[0]["workloads"]["W7"]["summary"] == s
    table = format_result(res)
    assert "| W7 | 4 |" in table and "MILP on no window" in table and "| - / - |" in table
    assert _windows("none") == []  # the command line's way to ask for no HiGHS window
    with pytest.raises(Exception, match="0 or more"):
        _windows("-1")


def test_sweeps_run_apart_merge_into_one_table():
    """``--merge``: two sweeps' rows per workload, summarised again; sweeps with other settings
    or the same window twice are refused."""
    from benchmarks.migrator_sweep import merge, summarise

    def row(seed, window, agree=True):
        return {"seed": seed, "window": window, "dec_s": 0.1, "dec_value": 10.0,
                "dec_bound": 10.05, "dec_gap": 0.005, "dec_capped": False, "milp_s": 30.0,
                "milp_value": 10.0, "milp_bound": 10.08, "milp_gap": 0.008, "ratio": 1.0,
                "agree": agree, "consistent": True}  # fmt: skip

    def sweep(rows, limit=300.0):
        return {"gap": 0.01, "max_plans": 2000, "milp_time_limit": limit,
                "milp_start": "decomposition",
                "workloads": {"W3": {"summary": summarise(rows), "rows": rows}}}  # fmt: skip

    both = merge([sweep([row(0, 2)]), sweep([row(1, 2, agree=False), row(0, 0)])])
    s = both["workloads"]["W3"]["summary"]
    assert (s["windows"], s["agree"], s["consistent"]) == (3, 2, 3)
    assert [(r["seed"], r["window"]) for r in both["workloads"]["W3"]["rows"]] == [
        (0, 0), (0, 2), (1, 2)]  # fmt: skip
    with pytest.raises(ValueError, match="milp_time_limit"):
        merge([sweep([row(0, 2)]), sweep([row(1, 2)], limit=10.0)])
    with pytest.raises(ValueError, match="more than one sweep"):
        merge([sweep([row(0, 2)]), sweep([row(0, 2)])])

"""MIGRator's planning model as one MILP on HiGHS (``baselines/migrator_milp.py``): equal to
brute force on tiny problems and to the decomposition on real windows; refuses what it cannot
linearise."""

from __future__ import annotations

import numpy as np
import pytest

from edgegym.baselines.migrator import (
    PlanProblem,
    brute_force,
    build_problem,
    change_classes,
    solve,
)
from edgegym.baselines.migrator_milp import solve_milp
from edgegym.families.mig import MIGReconfigEnv


@pytest.mark.parametrize("seed", range(25))
def test_milp_equals_brute_force_on_tiny_problems(seed, tiny_plan_problem):
    p = tiny_plan_problem(seed, eq11=True)
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
    unsolved = {**row, "milp_value": None}
    s = summarise([row, unsolved])
    assert (s["windows"], s["milp_solved"], s["agree"]) == (2, 1, 1)
    table = format_result({"gap": 0.01, "max_plans": 2000, "milp_time_limit": 60.0,
                           "workloads": {"W5": {"summary": s}}, "all": s})  # fmt: skip
    assert "| W5 | 2 |" in table and "| 1 / 1 |" in table


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

"""MIGRator's planning model against answers computed by hand (arXiv 2407.13126, §4.1).

The other planner tests compare :func:`solve` with :func:`brute_force`, and both score plans
with the same :meth:`PlanProblem.served` / :meth:`PlanProblem.loss` / :meth:`PlanProblem.value`,
so a wrong term would pass them. Here every expected number is derived by hand, in the
comments, from the paper's rules and the problem's inputs:

* Goodput (Eq. 6-9): per step and tenant, requests processed times the model's accuracy, the
  accuracy being ``pre`` until the retraining job has finished *before* the step
  (Formula 12: finished during step t-1 if running at t-1 and not at t) and ``post`` after;
* processed (§4.1.4): ``min(arrivals, capability)`` with capability ``cap * dt``;
* reconfiguration (Eq. 10-11): when the number of instances or GPCs of a tenant's inference
  task changes, the whole new capacity is down for the tenant's Psi seconds, and the arrivals
  of those seconds that the capacity still up cannot serve are lost. Where arrivals saturate
  the capacity this is Eq. 10's ``cap * dt - Psi * cap``, and the main problem only
  reconfigures there;
* constraints 3-4: a pending job runs on one size for exactly its duration, uninterrupted,
  inside the window, and must launch (Formula 4); a tenant with nothing pending does not
  retrain.

Constraint 5 (every inference task always deployed) is not a check of ``feasible()``: every
allowed signature gives each tenant an inference option, so it is enforced by the signature
catalogue that :func:`edgegym.baselines.migrator.build_problem` draws from.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from edgegym.baselines.migrator_plan import PlanProblem, brute_force, solve

# ----------------------------------------------------------------------------- the problem
#
# 2 tenants, 3 steps of dt = [1, 2, 2] s (non-uniform, so cap * dt matters).
# Each tenant has two inference options: 0 = "small" (10 req/s), 1 = "big" (20 req/s); they
# differ in GPCs, so by Eq. 11 a switch between them is a reconfiguration and by Eq. 10 the
# whole new capacity is down for Psi: added[i, u', u] = cap[i, u] for u' != u, else 0.
# Psi = 0.5 s for both tenants (shorter than every step).
#
# Tenant 0 has a pending retraining job: one size (z = 0), 2 steps; pre 0.5, post 1.0.
# Tenant 1 has nothing pending (dur = T + 1 = 4: cannot); accuracy 0.5 throughout.
#
# Allowed signatures (sig_u per tenant, sig_r per tenant):
#   n = 0: tenant 0 big,   tenant 1 small, no job
#   n = 1: tenant 0 small, tenant 1 small, tenant 0 retrains on size 0
#   n = 2: tenant 0 small, tenant 1 big,   no job
# Before the window tenant 0 was on big and tenant 1 on small (prev_u = [1, 0]).
#
# Arrivals (requests per step): tenant 0 [15, 60, 60], tenant 1 [20, 40, 40]. Tenant 0's 15 in
# step 0 is below big's cap * dt = 20 (arrivals bind there: sequence C), but no sequence switches
# into big at step 0; every reconfiguration the sequences below make is in a step whose arrivals
# saturate the new option (where Eq. 10 and the documented rule agree).

DT = np.array([1.0, 2.0, 2.0])
CAP = np.array([[10.0, 20.0], [10.0, 20.0]])


def _problem(**changes) -> PlanProblem:
    added = np.array([[[0.0, 20.0], [10.0, 0.0]], [[0.0, 20.0], [10.0, 0.0]]])
    p = PlanProblem(
        arrivals=np.array([[15.0, 60.0, 60.0], [20.0, 40.0, 40.0]]),
        dt=DT.copy(),
        sig_u=np.array([[1, 0], [0, 0], [0, 1]]),
        sig_r=np.array([[-1, -1], [0, -1], [-1, -1]]),
        cap=CAP.copy(),
        added=added,
        psi=np.array([0.5, 0.5]),
        pre=np.array([0.5, 0.5]),
        post=np.array([1.0, 0.5]),
        dur=np.array([[2], [4]]),
        pending=np.array([True, False]),
        prev_u=np.array([1, 0]),
        must_launch=True,
    )
    return dataclasses.replace(p, **changes)


# The feasible sequences: tenant 0's job (signature 1) runs on steps {0, 1} or {1, 2}, the
# other step takes signature 0 or 2.
A = [1, 1, 0]  # retrain early, then tenant 0 back to big (reconfigures twice)
B = [1, 1, 2]  # retrain early, then tenant 1 to big
C = [0, 1, 1]  # tenant 0 keeps big for step 0, retrains late (post never reached)
D = [2, 1, 1]  # tenant 1 on big for step 0, back to small at step 1
FEASIBLE = (A, B, C, D)


def test_served_is_min_of_arrivals_and_capacity_times_step_length():
    # served[i, u, t] = min(a[i, t], cap[i, u] * dt[t]); cap * dt:
    #   small: 10 * [1, 2, 2] = [10, 20, 20];  big: 20 * [1, 2, 2] = [20, 40, 40]
    # tenant 0, a = [15, 60, 60]: small [10, 20, 20], big [15, 40, 40] (arrivals bind)
    # tenant 1, a = [20, 40, 40]: small [10, 20, 20], big [20, 40, 40]
    expected = np.array(
        [
            [[10.0, 20.0, 20.0], [15.0, 40.0, 40.0]],
            [[10.0, 20.0, 20.0], [20.0, 40.0, 40.0]],
        ]
    )
    np.testing.assert_allclose(_problem().served(), expected)


def test_loss_is_eq10_capacity_down_for_psi_seconds():
    # Psi covers half of step 0 or a quarter of step 1 or 2, and the whole new capacity is
    # down then, so loss[i, t, u', u] = cover * min(a, cap[u] * dt):
    #   into small: 0.5 * 10 = 0.25 * 20 = 5 everywhere (Eq. 10: Psi * cap = 5, the same);
    #   into big: 0.25 * 40 = 10, except tenant 0 at step 0: 0.5 * min(15, 20) = 7.5 (its
    #   arrivals, not big's capacity, bind there; Eq. 10 read literally would give
    #   min(15, 20) - min(15, 20 - 10) = 5: see test_unsaturated_switch_loses_the_arrivals_of_
    #   the_overhead; no sequence below takes this entry); tenant 1 at step 0: 0.5 * 20 = 10;
    #   staying: 0.
    loss = _problem().loss()
    assert loss.shape == (2, 3, 2, 2)
    np.testing.assert_allclose(loss[:, :, 1, 0], 5.0)
    np.testing.assert_allclose(loss[:, :, 0, 1], [[7.5, 10.0, 10.0], [10.0, 10.0, 10.0]])
    np.testing.assert_allclose(loss[:, :, 0, 0], 0.0)
    np.testing.assert_allclose(loss[:, :, 1, 1], 0.0)


def test_loss_spreads_an_overhead_longer_than_a_step_over_the_next_step():
    # Tenant 0 with Psi = 2 s and arrivals [30, 60, 60] (documented: "spread over the seconds it
    # lasts instead of clipped to one step"). From the start of step 0 (t = 0 s) the overhead
    # covers step 0 ([0, 1): all of it, 30 requests) and half of step 1 ([1, 3): 1 s of 2,
    # 60 * 1/2 = 30): during = 60. Into big: min(20 * 2, 60) = 40 (clipped to step 0 it would be
    # min(40, 30) = 30); into small: min(10 * 2, 60) = 20.
    # From step 1 (t = 1 s, horizon 3 s): step 1 whole, 60; step 2 starts at 3 s, not inside:
    # during = 60, into big min(40, 60) = 40.
    arrivals = np.array([[30.0, 60.0, 60.0], [20.0, 40.0, 40.0]])
    loss = _problem(psi=np.array([2.0, 0.5]), arrivals=arrivals).loss()
    assert loss[0, 0, 0, 1] == pytest.approx(40.0)
    assert loss[0, 0, 1, 0] == pytest.approx(20.0)
    assert loss[0, 1, 0, 1] == pytest.approx(40.0)


# Values of the four feasible sequences (Goodput, Eq. 6-9, with Eq. 10's loss):
#
# A = [1, 1, 0]: tenant 0 options [small, small, big], from big; job on steps 0-1, so post
#   accuracy (1.0) from step 2, pre (0.5) on steps 0-1.
#     step 0: small, switch big->small: min(15, 10) - 5 = 5, * 0.5 = 2.5
#     step 1: small, no switch:         20,          * 0.5 = 10
#     step 2: big, switch small->big:   40 - 10 = 30, * 1.0 = 30      tenant 0: 42.5
#   tenant 1 small throughout from small: 10 + 20 + 20 = 50, * 0.5 = 25
#   A = 67.5
# B = [1, 1, 2]: tenant 0 small throughout, from big; post from step 2.
#     step 0: min(15, 10) - 5 = 5, * 0.5 = 2.5; step 1: 20 * 0.5 = 10; step 2: 20 * 1.0 = 20
#     tenant 0: 32.5
#   tenant 1 [small, small, big] from small: 10 + 20 + (40 - 10) = 60, * 0.5 = 30
#   B = 62.5
# C = [0, 1, 1]: tenant 0 [big, small, small] from big; job on steps 1-2: pre throughout.
#     step 0: big, no switch, min(15, 20) = 15, * 0.5 = 7.5 (arrivals bind);
#     step 1: 20 - 5 = 15, * 0.5 = 7.5; step 2: 20 * 0.5 = 10          tenant 0: 25
#   tenant 1 small throughout: 25
#   C = 50
# D = [2, 1, 1]: tenant 0 small throughout from big, pre throughout:
#     (10 - 5) + 20 + 20 = 45, * 0.5 = 22.5
#   tenant 1 [big, small, small] from small: (20 - 10) + (20 - 5) + 20 = 45, * 0.5 = 22.5
#   D = 45
# The best is A = 67.5.
VALUES = {"A": (A, 67.5), "B": (B, 62.5), "C": (C, 50.0), "D": (D, 45.0)}


@pytest.mark.parametrize("name", sorted(VALUES))
def test_value_of_named_sequences(name):
    seq, expected = VALUES[name]
    assert _problem().value(np.array(seq)) == pytest.approx(expected, abs=1e-9)


def test_retraining_switches_accuracy_the_step_after_the_job_ends():
    # With post = pre = 0.5 for tenant 0 (no gain), A's step 2 counts 30 * 0.5 = 15 instead of
    # 30: A = 67.5 - 15 = 52.5. The job of C ends on the last step, so C stays 50.
    p = _problem(post=np.array([0.5, 0.5]))
    assert p.value(np.array(A)) == pytest.approx(52.5)
    assert p.value(np.array(C)) == pytest.approx(50.0)


def test_feasible_accepts_the_valid_sequences():
    p = _problem()
    for seq in FEASIBLE:
        assert p.feasible(np.array(seq)), seq


@pytest.mark.parametrize(
    "seq, why",
    [
        ([1, 0, 1], "job split in two (steps 0 and 2): constraint 3, no interruption"),
        ([1, 0, 0], "job runs 1 step, needs exactly 2"),
        ([0, 0, 1], "job runs 1 step at the window end: not finished inside it (Formula 4)"),
        ([1, 1, 1], "job runs 3 steps, needs exactly 2"),
        ([0, 0, 0], "pending job never launched although it fits (Formula 4)"),
        ([2, 0, 2], "pending job never launched although it fits (Formula 4)"),
    ],
)
def test_feasible_rejects_broken_constraints(seq, why):
    assert not _problem().feasible(np.array(seq)), why


def test_feasible_without_formula_4_allows_no_launch():
    p = _problem(must_launch=False)
    assert p.feasible(np.array([0, 0, 0]))
    assert p.feasible(np.array([0, 2, 0]))
    assert not p.feasible(np.array([1, 0, 1]))  # still no interruption


def test_feasible_rejects_a_resized_job_and_a_job_of_a_tenant_with_nothing_pending():
    # Two more signatures: n = 3 retrains tenant 0 on size 1 (also 2 steps), n = 4 would
    # retrain tenant 1, which has nothing pending.
    p = _problem(
        sig_u=np.array([[1, 0], [0, 0], [0, 1], [0, 0], [0, 0]]),
        sig_r=np.array([[-1, -1], [0, -1], [-1, -1], [1, -1], [-1, 0]]),
        dur=np.array([[2, 2], [4, 4]]),
    )
    assert p.feasible(np.array([3, 3, 0]))  # one size for the whole run
    assert not p.feasible(np.array([1, 3, 0]))  # resized mid-run: constraint 3
    assert not p.feasible(np.array([1, 1, 4]))  # tenant 1 retrains with nothing pending


def test_the_solver_optimum_is_the_hand_computed_best():
    # Exactly four sequences are feasible (A-D, see above), so the optimum is A = 67.5.
    p = _problem()
    plan = solve(p, gap=0.0)
    assert plan.value == pytest.approx(67.5, abs=1e-9)
    np.testing.assert_array_equal(plan.signatures, A)
    best, arg = brute_force(p)
    assert best == pytest.approx(67.5, abs=1e-9)
    np.testing.assert_array_equal(arg, A)


# ------------------------------------------------------------ where the model leaves Eq. 10
#
# One tenant, one step of 1 s, switching from small (10 req/s) to big (20 req/s), Psi = 0.5 s.


def _one_step(arrivals: float, psi: float, dt: float = 1.0, steps: int = 1) -> PlanProblem:
    return PlanProblem(
        arrivals=np.full((1, steps), arrivals),
        dt=np.full(steps, dt),
        sig_u=np.array([[0], [1]]),
        sig_r=np.array([[-1], [-1]]),
        cap=np.array([[10.0, 20.0]]),
        added=np.array([[[0.0, 20.0], [10.0, 0.0]]]),
        psi=np.array([psi]),
        pre=np.array([1.0]),
        post=np.array([1.0]),
        dur=np.array([[steps + 1]]),
        pending=np.array([False]),
        prev_u=np.array([0]),
    )


def test_saturated_switch_matches_eq10():
    # a = 30 >= 20: Eq. 10 capability = 20 * 1 - 0.5 * 20 = 10, processed = min(30, 10) = 10.
    # Documented rule: min(30, 20) - min(20 * 0.5, 30 * 0.5) = 20 - 10 = 10.
    assert _one_step(30.0, 0.5).value(np.array([1])) == pytest.approx(10.0)


def test_unsaturated_switch_loses_the_arrivals_of_the_overhead():
    # a = 10 < 20: the whole of big is down for the first 0.5 s, so the 5 requests arriving then
    # find no ready instance (the environment admits a request only if a ready instance can
    # serve it within its SLO: rate and slack 0) and the other 5 are served. Loss
    # 0.5 * (min(10, 20) - min(10, 0)) = 5, value 5. Eq. 10 read literally lets those 5 wait
    # (min(10, 20 - 0.5 * 20) = 10 processed); the model prices what the environment executes.
    p = _one_step(10.0, 0.5)
    assert p.loss()[0, 0, 0, 1] == pytest.approx(5.0)
    assert p.value(np.array([1])) == pytest.approx(5.0)


def test_part_of_the_option_down_loses_only_what_the_rest_cannot_serve():
    # Per-instance rule: 10 of big's 20 req/s is down for 0.5 s. At a = 10 the 10 req/s still
    # ready serve every arrival: loss 0.5 * (min(10, 20) - min(10, 10)) = 0. At a = 16:
    # 0.5 * (16 - 10) = 3.
    half = np.array([[[0.0, 10.0], [10.0, 0.0]]])
    p = dataclasses.replace(_one_step(10.0, 0.5), added=half)
    assert p.loss()[0, 0, 0, 1] == pytest.approx(0.0)
    p = dataclasses.replace(p, arrivals=np.array([[16.0]]))
    assert p.loss()[0, 0, 0, 1] == pytest.approx(3.0)


def test_loss_never_exceeds_what_the_option_serves_during_the_overhead():
    # Two 1 s steps, arrivals [30, 5], switch to big (20 req/s) at step 0 with Psi = 2 s: big
    # is down for both steps, so it loses exactly what it would have served there,
    # min(30, 20) + min(5, 20) = 25 (not min(20 * 2, 30 + 5) = 35, which would make the two
    # steps worth -10 requests). A switch at step 1 is down for step 1 only (the window ends):
    # loss 5.
    p = dataclasses.replace(_one_step(0.0, 2.0, steps=2), arrivals=np.array([[30.0, 5.0]]))
    np.testing.assert_allclose(p.loss()[0, :, 0, 1], [25.0, 5.0])
    assert p.value(np.array([1, 1])) == pytest.approx(0.0)


def test_a_forecast_distribution_prices_the_switch_with_its_own_expectation():
    # Samples of one 1 s step: 10 and 30 requests (mean 20). Big (20 req/s) serves
    # E[min(A, 20)] = (10 + 20) / 2 = 15; down for 0.5 s it loses 0.5 * 15 = 7.5, the same
    # expectation the gain uses, not 0.5 * min(20, 20) = 10 from the mean.
    p = dataclasses.replace(_one_step(20.0, 0.5), samples=np.array([[[10.0], [30.0]]]))
    assert p.served()[0, 1, 0] == pytest.approx(15.0)
    assert p.loss()[0, 0, 0, 1] == pytest.approx(7.5)

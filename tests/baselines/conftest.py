"""Shared test inputs of the baselines' tests."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

import numpy as np
import pytest

from edgegym.baselines.migrator import PlanProblem


def _tiny_plan_problem(seed: int, eq11: bool = False) -> PlanProblem:
    """A random tiny MIGRator planning problem (2 tenants, 3-5 steps, 4-8 signatures) small
    enough for brute force. ``eq11``: switch costs with Eq. 11's shape instead of arbitrary
    ones (options fall into classes, and entering an option from another class costs that
    option's capacity), the shape the MILP linearises."""
    rng = np.random.default_rng(seed)
    m, t_n, n_u, n_z = 2, int(rng.integers(3, 6)), 3, 2
    added = rng.uniform(0, 20, (m, n_u, n_u))
    for i in range(m):
        np.fill_diagonal(added[i], 0.0)
    n = int(rng.integers(4, 9))
    p = PlanProblem(
        arrivals=rng.uniform(0, 40, (m, t_n)),
        dt=np.ones(t_n),
        sig_u=rng.integers(0, n_u, (n, m)),
        sig_r=rng.integers(-1, n_z, (n, m)),
        cap=rng.uniform(5, 30, (m, n_u)),
        added=added,
        psi=rng.uniform(0.5, 3.0, m),
        pre=rng.uniform(0.3, 0.6, m),
        post=rng.uniform(0.7, 0.95, m),
        dur=rng.integers(1, t_n + 1, (m, n_z)),
        pending=rng.random(m) < 0.8,
        prev_u=rng.integers(-1, n_u, m),
        must_launch=bool(rng.random() < 0.5),
    )
    if eq11:
        cls = np.random.default_rng(seed + 10_000).integers(0, 2, (m, n_u))
        eq11_added = np.where(cls[:, :, None] != cls[:, None, :], p.cap[:, None, :], 0.0)
        p = dataclasses.replace(p, added=eq11_added)
    return p


@pytest.fixture
def tiny_plan_problem() -> Callable[..., PlanProblem]:
    """:func:`_tiny_plan_problem`: ``tiny_plan_problem(seed, eq11=False)``."""
    return _tiny_plan_problem

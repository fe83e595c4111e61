"""The energy family's executor seam, and its batched dynamics against the one-env reference.

:class:`edgegym.families.energy.timeslice.TimeSliceExecutor` states a quantum of time slices plainly
(one env, one quantum); :class:`edgegym.families.energy.dynamics.EnergyDynamics` runs the same rule
batched. With ``make_executor`` every env's quantum runs on its own executor instead (where a real
backend plugs in): with the reference executor there, every record and every state array must equal
the batched simulator's over whole episodes of every bundled energy scenario.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from edgegym.families.energy.dynamics import EnergyDynamics
from edgegym.families.energy.params import make_params
from edgegym.families.energy.timeslice import TimeSliceExecutor
from edgegym.scenarios import bundled, load

ENERGY_SCENARIOS = [name for name in bundled() if name.startswith("etf-")]


def random_units(mask: np.ndarray, units: int, rng: np.random.Generator) -> np.ndarray:
    """(N, n) a random allowed number of units per slot (masks are (N, n * (U + 1)))."""
    grid = mask.reshape(mask.shape[0], -1, units + 1)
    pick = rng.random(grid.shape) * grid
    return pick.argmax(axis=2)


@pytest.mark.parametrize("scenario", ENERGY_SCENARIOS)
def test_batched_quanta_equal_the_reference_executor(scenario):
    sc = load(scenario)
    built: list[TimeSliceExecutor] = []

    def reference(sim: TimeSliceExecutor, rng: np.random.Generator) -> TimeSliceExecutor:
        built.append(sim)
        return sim

    fast, ref = make_params(sc), make_params(sc, make_executor=reference)
    dyn, n_envs = EnergyDynamics(), 3
    s_fast = dyn.initial(fast, [np.random.default_rng(s) for s in range(n_envs)])
    s_ref = dyn.initial(ref, [np.random.default_rng(s) for s in range(n_envs)])
    assert len(built) == n_envs and s_fast.executors == [None] * n_envs
    rng = np.random.default_rng(0)
    while not dyn.done(fast, s_fast).all():
        a = random_units(dyn.mask(fast, s_fast), fast.units, rng)
        s_fast, r_fast = dyn.step(fast, s_fast, a)
        s_ref, r_ref = dyn.step(ref, s_ref, a)
        np.testing.assert_allclose(r_ref.energy_j, r_fast.energy_j, rtol=1e-12)
        for name, v in r_fast.terms.items():
            np.testing.assert_allclose(r_ref.terms[name], v, rtol=1e-12, atol=1e-15)
        for name, v in r_fast.info.items():
            np.testing.assert_allclose(r_ref.info[name], v, rtol=1e-12, atol=1e-15)
    for f in dataclasses.fields(s_fast):
        if f.name != "executors":
            np.testing.assert_allclose(getattr(s_ref, f.name), getattr(s_fast, f.name), rtol=1e-12)
    np.testing.assert_allclose(built[0].vruntime, s_fast.vruntime[0], rtol=1e-12)

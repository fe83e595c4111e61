"""The MPS share counts a MIG scenario can take (``mps.shares``): one limit
(:func:`edgegym.hardware.migalloc.share_count_problem`) that the schema validates, the share
catalogue and the environment enforce, and MIGRator's MPS baselines read for their setup."""

from __future__ import annotations

import math
import re

import pytest

from edgegym.families.mig import MIGReconfigEnv
from edgegym.families.mig.params import _mask_radix
from edgegym.hardware.migalloc import (
    KEY_LIMIT,
    MAX_SHARE_SIGNATURES,
    share_catalogue,
    share_count_problem,
    share_counts,
)
from edgegym.scenarios import ScenarioError, load

MODELS = ("resnet18", "mobilenetv2", "resnet50", "resnet18")

#: The counts the fuzzing audit found each tenant count can be built on (first, last).
BUILDS = {1: (2, 28), 2: (2, 23), 3: (3, 13), 4: (4, 8)}


def _tenants(m: int) -> list[dict]:
    return [
        {
            "model": MODELS[i],
            "dataset": "nc-core50",
            "slo_ms": 50,
            "arrival": {"kind": "poisson", "rate": 50},
        }
        for i in range(m)
    ]


def _load(m: int, shares: int):
    return load("migrator-w1", tenants=_tenants(m), preinit=False, **{"mps.shares": shares})


@pytest.mark.parametrize("m", [1, 2, 3, 4])
def test_the_counts_that_work_are_one_run_computed_without_a_catalogue(m):
    lo, hi = BUILDS[m]
    assert share_counts(m) == tuple(range(lo, hi + 1))
    for units in (lo, hi):  # the limit is what the catalogue and the environment's keys allow
        cat = share_catalogue("A100-40GB", m, units)
        assert len(cat) == math.comb(units + m, 2 * m) <= MAX_SHARE_SIGNATURES
        assert _mask_radix(cat) ** m < KEY_LIMIT
    for units in (lo - 1, hi + 1):
        if 2 <= units <= 28:
            problem = share_count_problem(m, units)
            assert problem
            with pytest.raises(ValueError, match=re.escape(problem)):
                share_catalogue("A100-40GB", m, units)


@pytest.mark.parametrize("m", [1, 2, 3, 4])
def test_the_schema_takes_exactly_the_counts_the_environment_builds(m):
    """Every count 0-28: 0 (MIG) and the buildable ones validate; the others are a
    ScenarioError naming mps.shares, the tenant count and the counts that work (before, 28
    for two tenants or 14 for three passed validation and failed at gym.make)."""
    lo, hi = BUILDS[m]
    for shares in range(29):
        if shares == 0 or lo <= shares <= hi:
            assert _load(m, shares)["mps"]["shares"] == shares
            continue
        who = f"{m} tenant{'s' if m > 1 else ''}"
        with pytest.raises(ScenarioError, match=rf"mps\.shares.*{lo} to {hi} MPS shares for {who}"):
            _load(m, shares)


@pytest.mark.parametrize(("m", "shares"), [(2, 23), (3, 13), (4, 8)])
def test_the_largest_count_validated_builds_an_environment(m, shares):
    env = MIGReconfigEnv(_load(m, shares))
    assert env.spec_.catalogue.units == shares
    env.reset(seed=0)
    assert env.action_masks().any()


def test_the_audits_gym_make_case_is_a_scenario_error():
    with pytest.raises(ScenarioError, match=r"mps\.shares: .*2 to 23 MPS shares.*got 28"):
        MIGReconfigEnv("migrator-w1", preinit=False, **{"mps.shares": 28})

"""Golden trajectories (fast subset): today's code must reproduce the recorded episodes exactly.

Checks every random-masked case (all seven env ids) and the published scheduler on each
family's default scenario, for the first :data:`TEST_STEPS` decision steps, against the files in
``tests/golden/data`` (or ``$EDGEGYM_GOLDEN_DIR``). A missing file fails the test with the
command that records it. The whole set: ``python -m tests.golden.record --check``; see
``tests/golden/README.md``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

try:
    from tests.golden import record
except ImportError:  # pytest run without the repository root on sys.path
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.golden import record

#: Decision steps checked per case: whole episodes but the DAG one; this file takes about 15 s
#: on two cores.
TEST_STEPS = 1000

CASES = record.fast_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_golden(case: record.Case) -> None:
    outcome = record.check_case(case, record.data_dir(), TEST_STEPS)
    if not outcome.ok:
        pytest.fail(f"{case.name}: {outcome.status}: {outcome.message}", pytrace=False)


def test_compare_reports_first_difference() -> None:
    """The comparison itself: equal runs match; a one-ulp reward change is found and located
    when comparing bitwise (``--exact``)."""
    case = next(c for c in CASES if c.policy == record.RANDOM)
    a = record.run_case(case)
    b = record.run_case(case)
    n = a["meta"]["steps"]
    assert n > 2
    assert record.compare(a, b, n) == []
    b["reward"][2] = np.nextafter(b["reward"][2], np.inf)
    diffs = record.compare(a, b, n, tolerance=0)
    assert diffs and diffs[0].startswith("first difference at step 2, field reward:")
    assert any(d.startswith("reward differs at 1/") for d in diffs)


def test_tolerance_is_for_ulps_not_for_changes() -> None:
    """A 2-ulp reward difference matches (other CPUs' SIMD math); ``--exact`` and any change of
    1e-12 do not."""
    case = next(c for c in CASES if c.policy == record.RANDOM)
    a = record.run_case(case)
    b = record.run_case(case)
    n = a["meta"]["steps"]
    b["reward"][1] = np.nextafter(np.nextafter(b["reward"][1], np.inf), np.inf)
    near: list[int] = []
    assert record.compare(a, b, n, near=near) == [] and near == [1]
    assert record.compare(a, b, n, tolerance=0)
    b["reward"][1] += 1e-12
    assert record.compare(a, b, n)[0].startswith("first difference at step 1, field reward:")

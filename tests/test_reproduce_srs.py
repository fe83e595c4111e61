"""The SRS reproduction's episode runner and report on tiny runs (the full run is a command)."""

from __future__ import annotations

import numpy as np
import pytest

from edgegym.reproduce import srs


@pytest.fixture(scope="module")
def rows():
    jobs = [
        ("srs-edge-8apps", {"requests": 15, "duration_s": 5.0, "apps": 2}, p, 0)
        for p in ("mrs", "pass")
    ]
    return [srs.run_one(j) for j in jobs]


def test_run_one_applies_changes_and_keeps_every_request(rows):
    for r in rows:
        bins = {k: np.array(v) for k, v in r["bins"].items()}
        assert bins["count"].sum() == 15
        # the per-request values binned by arrival average to the episode metrics
        assert bins["completion_s"].sum() / 15 == pytest.approx(r["completion_s"])
        assert bins["accuracy"].sum() / 15 == pytest.approx(r["accuracy"])
        assert r["changes"]["apps"] == 2 and r["decide_ms"] > 0


def test_report_renders_every_section(rows):
    def tagged(key, values):
        return [{**r, "changes": {**r["changes"], key: v}} for v in values for r in rows]

    table = {
        "main": rows,
        "apps": tagged("apps", srs.APPS),
        "servers": tagged("count", srs.SERVERS),
        "theta": tagged("theta", srs.THETAS),
        "light": rows,
        "fixed": rows,
    }
    meta = {
        "seeds": 1,
        "sweep_seeds": 1,
        "quick": True,
        "elapsed": 1.0,
        "date": "d",
        "machine": "m",
    }
    text = srs._report(table, meta)
    for needle in ("Fig. 8, 9", "Fig. 10-13", "Fig. 14", "Fig. 15", "*+25%*", "first runs"):
        assert needle in text
    assert "MRS has the best objective at" in text


def test_claims_have_held_out_rows_with_rules_and_reasons(rows):
    table = {
        "main": rows,
        "apps": [{**r, "changes": {**r["changes"], "apps": v}} for v in srs.APPS for r in rows],
        "servers": [
            {**r, "changes": {**r["changes"], "count": v}} for v in srs.SERVERS for r in rows
        ],
        "theta": [{**r, "changes": {**r["changes"], "theta": v}} for v in srs.THETAS for r in rows],
    }
    claims = srs._claims(table)
    held = [c for c in claims if c.role == "held-out"]
    assert len(held) >= 3 and {c.paper for c in claims} == {"srs"}
    assert all(c.test for c in claims) and all(c.why for c in claims if not c.holds)
    assert any(c.role == "calibration" and c.holds for c in claims)

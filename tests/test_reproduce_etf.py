"""The ETF reproduction: its report and its claims (the full run takes a few seconds)."""

from __future__ import annotations

from pathlib import Path

from edgegym.reproduce import etf
from edgegym.reproduce.claims import load, smoke_run


def test_report_and_claims(tmp_path: Path) -> None:
    assert etf.main(["--out", str(tmp_path)]) == 0
    text = (tmp_path / "etf.md").read_text()
    assert "should read 35%" in text and "## Claims" in text
    claims = [c for c in load(tmp_path) if c.paper == "etf"]
    held = [c for c in claims if c.role == "held-out"]
    assert len(held) >= 3 and any(c.role == "calibration" for c in claims)
    assert all(c.why for c in claims if not c.holds)
    assert "etf.md" in (tmp_path / "README.md").read_text()


def test_inside_a_smoke_run_the_report_counts_nothing(tmp_path: Path) -> None:
    """``all --quick`` runs ETF inside a smoke run: its report and records say so."""
    with smoke_run():
        assert etf.main(["--out", str(tmp_path)]) == 0
    text = (tmp_path / "etf.md").read_text()
    claims = load(tmp_path)
    assert claims and all(c.smoke for c in claims)
    assert f"Smoke run: {len(claims)} claims checked on a reduced sample; not counted." in text
    assert "held-out claims hold" not in text and "| yes |" not in text

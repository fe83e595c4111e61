"""``python -m edgegym.reproduce.migrator --render-only``: report and claims from saved runs."""

from __future__ import annotations

import shutil
from pathlib import Path

from edgegym.reproduce import migrator
from edgegym.reproduce.claims import load

SAVED = Path(__file__).resolve().parents[1] / "docs" / "reproduction" / "migrator-runs.json"


def test_render_only_writes_the_report_and_the_claims(tmp_path: Path) -> None:
    shutil.copy(SAVED, tmp_path / "migrator-runs.json")
    assert migrator.main(["--render-only", "--out", str(tmp_path)]) == 0
    report = (tmp_path / "migrator.md").read_text()
    assert "## Pre-initialisation" in report and "## Claims" in report
    claims = [c for c in load(tmp_path) if c.paper == "migrator"]
    held = [c for c in claims if c.role == "held-out"]
    assert len(held) >= 3
    assert any(c.role == "calibration" for c in claims)
    assert all(c.holds or c.why for c in claims)
    figures = {c.figure for c in held}
    assert {"Fig. 7", "§5.2", "Fig. 9", "Fig. 10"} <= figures

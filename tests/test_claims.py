"""The claims table: records, merging per paper, rendering, and the held-out counts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from edgegym.reproduce import __main__ as reproduce_main
from edgegym.reproduce.claims import Claim, load, update


def _claim(paper: str, holds: bool, value: float = 1.0, role: str = "held-out") -> Claim:
    return Claim(
        paper=paper,
        figure="Fig. 1",
        claim=f"{paper} claim {value}",
        metric="points",
        paper_value=2.0,
        edgegym_value=value,
        role=role,  # type: ignore[arg-type]
        holds=holds,
        test="same sign",
        why="" if holds else "sweep in the report: the gap closes at 4 GPUs",
    )


def test_update_replaces_one_papers_records_and_renders(tmp_path: Path) -> None:
    update("etf", [_claim("etf", True), _claim("etf", False)], tmp_path)
    update("ekya", [_claim("ekya", True, role="calibration")], tmp_path)
    update("etf", [_claim("etf", True, 3.0)], tmp_path)
    claims = load(tmp_path)
    assert [(c.paper, c.edgegym_value) for c in claims] == [("ekya", 1.0), ("etf", 3.0)]
    data = json.loads((tmp_path / "claims.json").read_text())
    assert set(data["claims"][0]) >= {
        "paper",
        "figure",
        "claim",
        "metric",
        "paper_value",
        "edgegym_value",
        "role",
        "holds",
        "why",
    }
    readme = (tmp_path / "README.md").read_text()
    assert "| [Energy-Time Fairness (SEC'23)](etf.md) | 1 | 1 | 0 | 0 |" in readme
    assert "| [Ekya (NSDI'22)](ekya.md) | 0 | 0 | 1 | 1 |" in readme


def test_a_claim_that_fails_must_say_why() -> None:
    with pytest.raises(ValueError, match="say why"):
        Claim("srs", "Fig. 3", "c", "m", 1.0, 0.0, "held-out", False)
    with pytest.raises(ValueError, match="paper must be one of"):
        Claim("decima", "Fig. 3", "c", "m", 1.0, 0.0, "held-out", True)
    with pytest.raises(ValueError, match="finite"):
        Claim("srs", "Fig. 3", "c", "m", 1.0, float("nan"), "held-out", True)
    with pytest.raises(ValueError, match="another paper"):
        update("srs", [_claim("etf", True)], "/nonexistent-never-written")


def test_a_broken_table_is_named_not_overwritten(tmp_path: Path) -> None:
    (tmp_path / "claims.json").write_text("{not json")
    with pytest.raises(ValueError, match="not a claims table"):
        update("etf", [_claim("etf", True)], tmp_path)
    assert (tmp_path / "claims.json").read_text() == "{not json"


def test_all_keeps_going_when_one_reproduction_fails(tmp_path, monkeypatch, capsys) -> None:
    ran: list[str] = []

    def fake(paper: str):
        def main(argv: list[str]) -> int:
            ran.append(paper)
            if paper == "ekya":
                raise RuntimeError("boom")
            update(paper, [_claim(paper, True)], argv[argv.index("--out") + 1])
            return 0

        return type("M", (), {"main": staticmethod(main), "OUTPUTS": {f"{paper}.md": "report"}})

    def import_module(name: str):
        return fake(name.rsplit(".", 1)[1])

    monkeypatch.setattr(reproduce_main.importlib, "import_module", import_module)
    code = reproduce_main.main(["all", "--out", str(tmp_path), "--quick"])
    assert code == 1 and ran == ["etf", "ekya", "srs", "migrator"]
    err = capsys.readouterr()
    assert "ekya failed: RuntimeError: boom" in err.err and "migrator: 1/1" in err.out
    assert {c.paper for c in load(tmp_path)} == {"etf", "srs", "migrator"}

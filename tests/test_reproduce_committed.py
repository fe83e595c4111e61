"""The committed reproductions are what their saved runs render to.

Each folder of ``docs/reproduction`` that holds a paper's saved runs (``<paper>-runs.json``)
is rendered again with ``--render-only``, which runs nothing: the report and the paper's
claims must come out as committed, byte for byte, and every figure must be drawn. A change to
a report's text, a claim's rule or the saved runs' format that was not re-rendered (``python
-m edgegym.reproduce all --render-only``) fails here; so does a committed report that no run
wrote. etf saves no runs: none of its inputs is random, so it is run whole (about 20 s) and its
report and claims must come out as committed, which also catches a change to the energy
family's dynamics or to ETF that was not rerun.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from edgegym.outputs import is_edgegym_output
from edgegym.reproduce import ekya, etf, migrator, srs
from edgegym.reproduce.claims import load

DOCS = Path(__file__).resolve().parents[1] / "docs" / "reproduction"
MODULES = {"ekya": ekya, "migrator": migrator, "srs": srs}
SAVED = sorted(
    (paper, str(path.parent.relative_to(DOCS)))
    for paper in MODULES
    for path in DOCS.glob(f"**/{paper}-runs.json")
)


def test_every_seeded_paper_has_a_committed_saved_run() -> None:
    assert {paper for paper, folder in SAVED if folder == "."} == set(MODULES)


@pytest.mark.parametrize(("paper", "folder"), SAVED)
def test_render_only_rewrites_the_committed_report_claims_and_figures(
    tmp_path: Path, monkeypatch, paper: str, folder: str
) -> None:
    module = MODULES[paper]
    committed = DOCS / folder
    if paper == "ekya":

        def no_work(*_args, **_kwargs):
            raise AssertionError("--render-only ran an evaluation")

        monkeypatch.setattr(ekya, "evaluate", no_work)
        # main sets the run's first seed and a_MIN readings in module state: keep them here
        monkeypatch.setattr(ekya, "PARALLEL", dict(ekya.PARALLEL))
        monkeypatch.setattr(ekya, "BELOW_A_MIN", {})
    shutil.copy(committed / f"{paper}-runs.json", tmp_path / f"{paper}-runs.json")
    assert module.main(["--render-only", "--out", str(tmp_path)]) == 0
    report = f"{paper}.md"
    assert (tmp_path / report).read_text() == (committed / report).read_text()
    ours = [c for c in load(tmp_path) if c.paper == paper]
    assert ours and ours == [c for c in load(committed) if c.paper == paper]
    figures = sorted(name for name, kind in module.OUTPUTS.items() if kind == "figure")
    assert figures and all(is_edgegym_output(tmp_path / name, "figure") for name in figures)


def test_a_fresh_etf_run_writes_the_committed_report_and_claims(tmp_path: Path) -> None:
    assert etf.main(["--out", str(tmp_path)]) == 0
    assert (tmp_path / "etf.md").read_text() == (DOCS / "etf.md").read_text()
    ours = [c for c in load(tmp_path) if c.paper == "etf"]
    assert ours and ours == [c for c in load(DOCS) if c.paper == "etf"]
    figures = sorted(name for name, kind in etf.OUTPUTS.items() if kind == "figure")
    assert figures and all(is_edgegym_output(tmp_path / name, "figure") for name in figures)

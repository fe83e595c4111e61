"""The claims table: each paper's numbers next to edgegym's, one record per claim.

Every reproduction (``python -m edgegym.reproduce.<paper>``) ends by calling :func:`update`
with its claims; that replaces the paper's records in ``<out>/claims.json`` and re-renders
``<out>/README.md``, the one table of all papers. ``python -m edgegym.reproduce all`` runs the
four reproductions and so regenerates both.

``role`` is ``calibration`` for an input fitted to a measurement of the paper (the two should
agree by construction: the record shows that they do) and ``held-out`` for an evaluation result
of the paper, compared only after the fact. A held-out claim that does not hold says ``why``,
from a measurement in the report (a sweep or an ablation).
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Literal

from edgegym.outputs import check_output_folder, write_json, write_text

PAPERS = ("ekya", "migrator", "etf", "srs")
TITLES = {
    "ekya": "Ekya (NSDI'22)",
    "migrator": "MIGRator (arXiv 2407.13126)",
    "etf": "Energy-Time Fairness (SEC'23)",
    "srs": "SRS/MRS (INFOCOM'25)",
}
REPORTS = {"ekya": "ekya.md", "migrator": "migrator.md", "etf": "etf.md", "srs": "srs.md"}
Value = float | int | str | bool | None


@dataclass(frozen=True)
class Claim:
    """One claim of a paper and edgegym's measured value for it.

    Attributes:
        paper: One of :data:`PAPERS`.
        figure: Where the paper states it ("Fig. 6a", "§6.4", "Table 1").
        claim: The claim in one sentence, as the paper makes it.
        metric: What is compared, with its unit ("accuracy gain over best uniform, points").
        paper_value: The paper's number (or a short text where it gives a shape, not a number).
        edgegym_value: edgegym's measured number (from the run that wrote the report).
        role: ``held-out`` (an evaluation result) or ``calibration`` (an input fitted to it).
        holds: Whether edgegym's value bears the claim out, by the rule in ``test``.
        test: The rule ``holds`` was decided by ("same sign", "within 0.8 points", ...).
        why: Where it does not hold: the measured reason (a sweep or an ablation in the report).
    """

    paper: str
    figure: str
    claim: str
    metric: str
    paper_value: Value
    edgegym_value: Value
    role: Literal["held-out", "calibration"]
    holds: bool
    test: str = ""
    why: str = ""

    def __post_init__(self) -> None:
        if self.paper not in PAPERS:
            raise ValueError(f"claim paper must be one of {', '.join(PAPERS)}, got {self.paper!r}")
        if self.role not in ("held-out", "calibration"):
            raise ValueError(f"claim role must be 'held-out' or 'calibration', got {self.role!r}")
        for name in ("paper_value", "edgegym_value"):
            v = getattr(self, name)
            if isinstance(v, float) and not math.isfinite(v):
                raise ValueError(f"claim {self.claim!r}: {name} must be finite, got {v}")
        if not isinstance(self.holds, bool):
            object.__setattr__(self, "holds", bool(self.holds))
        if not self.holds and not self.why:
            raise ValueError(f"claim {self.claim!r} does not hold: say why (a measured reason)")


#: Files every reproduction writes into its folder besides its own: the claims table.
CLAIMS_OUTPUTS = {"claims.json": "claims", "README.md": "report"}


def add_output_arguments(ap: argparse.ArgumentParser, help: str = "report directory") -> None:
    """A reproduction's ``--out`` and ``--force``."""
    ap.add_argument("--out", default="docs/reproduction", help=help)
    ap.add_argument(
        "--force",
        action="store_true",
        help="overwrite files in --out named like this reproduction's outputs that edgegym "
        "did not write",
    )


def rendered_outputs(outputs: Mapping[str, str]) -> dict[str, str]:
    """What ``--render-only`` writes of ``outputs``: all but the saved runs it reads."""
    return {name: kind for name, kind in outputs.items() if not name.endswith("-runs.json")}


def check_out(path: str | Path, outputs: Mapping[str, str], force: bool = False) -> Path:
    """The reproduction's ``--out`` folder, checked before any work: a folder can be made
    there, and each file it will write (``outputs``, name -> kind, plus the claims table) is
    new or an edgegym output of that kind (or ``force``).

    Raises:
        ValueError: Naming the folder or file.
    """
    return check_output_folder(path, {**outputs, **CLAIMS_OUTPUTS}, force=force)


def load(out: str | Path) -> list[Claim]:
    """The claims recorded in ``<out>/claims.json`` (none when the file is absent)."""
    path = Path(out) / "claims.json"
    if not path.exists():
        return []
    try:
        data = json.loads(path.read_text())
        names = {f.name for f in fields(Claim)}
        return [Claim(**{k: v for k, v in rec.items() if k in names}) for rec in data["claims"]]
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: not a claims table ({exc}); delete it to start afresh") from exc


def update(paper: str, claims: Sequence[Claim], out: str | Path) -> Path:
    """Replace ``paper``'s records in ``<out>/claims.json`` and re-render ``<out>/README.md``."""
    if paper not in PAPERS:
        raise ValueError(f"paper must be one of {', '.join(PAPERS)}, got {paper!r}")
    wrong = [c.claim for c in claims if c.paper != paper]
    if wrong:
        raise ValueError(f"claims of another paper passed as {paper!r}: {wrong}")
    out = Path(out)
    kept = [c for c in load(out) if c.paper != paper] + list(claims)
    kept.sort(key=lambda c: PAPERS.index(c.paper))
    path = out / "claims.json"
    write_json(path, {"claims": [asdict(c) for c in kept]}, "claims", indent=1)
    write_text(out / "README.md", render(kept), "report")
    return path


def _fmt(v: Value) -> str:
    if isinstance(v, bool) or v is None:
        return str(v)
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) < 1000 else f"{v:,.0f}"
    return str(v)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render(claims: Sequence[Claim]) -> str:
    """The Markdown of docs/reproduction/README.md: counts per paper, then one table."""
    lines = [
        "# Reproductions: the papers' claims against edgegym",
        "",
        "Generated by `python -m edgegym.reproduce all` from [claims.json](claims.json); do not",
        "edit by hand. `held-out` rows are the papers' evaluation results, compared after the",
        "fact and never used to set an input; `calibration` rows are inputs set from a",
        "measurement of the paper, shown to agree. Each paper's report explains its rows.",
        "",
        "| paper | held-out claims | hold | calibration rows | agree |",
        "| --- | --- | --- | --- | --- |",
    ]
    for paper in PAPERS:
        mine = [c for c in claims if c.paper == paper]
        if not mine:
            continue
        held = [c for c in mine if c.role == "held-out"]
        cal = [c for c in mine if c.role == "calibration"]
        lines.append(
            f"| [{TITLES[paper]}]({REPORTS[paper]}) | {len(held)} | "
            f"{sum(c.holds for c in held)} | {len(cal)} | {sum(c.holds for c in cal)} |"
        )
    lines += [
        "",
        "| paper | where | claim | metric | paper | edgegym | role | holds | why not / rule |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for c in claims:
        note = c.why if not c.holds else c.test
        lines.append(
            "| "
            + " | ".join(
                _cell(x)
                for x in (
                    c.paper,
                    c.figure,
                    c.claim,
                    c.metric,
                    _fmt(c.paper_value),
                    _fmt(c.edgegym_value),
                    c.role,
                    "yes" if c.holds else "**no**",
                    note,
                )
            )
            + " |"
        )
    return "\n".join(lines) + "\n"

"""The claims table: each paper's numbers next to edgegym's, one record per claim.

Every reproduction (``python -m edgegym.reproduce.<paper>``) ends by calling :func:`update`
with its claims; that replaces the paper's records in ``<out>/claims.json`` and re-renders
``<out>/README.md``, the one table of all papers. ``python -m edgegym.reproduce all`` runs the
four reproductions and so regenerates both.

``role`` is ``calibration`` for an input fitted to a measurement of the paper (the two should
agree by construction: the record shows that they do) and ``held-out`` for an evaluation result
of the paper, compared only after the fact. A held-out claim that does not hold says ``why``,
from a measurement in the report (a sweep or an ablation).

A quick run (``--quick``) is a smoke run: it checks that every reproduction runs to its end on
a reduced sample, not what the papers' claims come to. Every claim made inside
:func:`smoke_run` is marked ``smoke``; the reports, the table and ``all``'s summary say
"smoke run: N claims checked on a reduced sample; not counted" instead of counting them. A
smoke run writes to :data:`QUICK_OUT` unless told otherwise and refuses a folder whose
``claims.json`` holds a full run's claims (the committed ``docs/reproduction`` one).

A seed check (``--first-seed N``, N > 0) is a full run on seeds the committed one did not use
(N, N+1, ...): it writes to ``docs/reproduction/seeds-N`` unless told otherwise, and the table's
README lists, for each such run (and each run on another scenario), the claims whose verdict
differs from the committed run's.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

import numpy as np

from edgegym.inputs import load_json, quoted, read_text
from edgegym.jsonshape import (
    BOOL,
    LONG_TEXT,
    NULL,
    NUM,
    TEXT,
    Choice,
    ListOf,
    MapOf,
    OneOf,
    Record,
    Shape,
    ShapeError,
    check,
    check_depth,
)
from edgegym.outputs import (
    OutputWriteError,
    check_output_folder,
    hold_folder,
    save_figure,
    write_json,
    write_text,
)

PAPERS = ("ekya", "migrator", "etf", "srs")
TITLES = {
    "ekya": "Ekya (NSDI'22)",
    "migrator": "MIGRator (arXiv 2407.13126)",
    "etf": "Energy-Time Fairness (SEC'23)",
    "srs": "SRS/MRS (INFOCOM'25)",
}
REPORTS = {"ekya": "ekya.md", "migrator": "migrator.md", "etf": "etf.md", "srs": "srs.md"}
Value = float | int | str | bool | None
#: Where the reproductions write by default: the committed reports and claims table.
DEFAULT_OUT = "docs/reproduction"
#: Where a smoke run (``--quick``) writes by default: outside the committed docs.
QUICK_OUT = "runs/reproduction-quick"
#: ``--quick``'s help where a reproduction has no reduced sample of its own to name.
QUICK_HELP = (
    f"a smoke run on a reduced sample, written to {QUICK_OUT} unless --out says otherwise: "
    "every claim marked smoke and none counted"
)

#: ``--first-seed``'s help: the episodes' seeds start there.
FIRST_SEED_HELP = (
    "seed of the first episode (default 0): episodes use seeds N, N+1, ...; a full run from "
    "N > 0 checks the claims on seeds the committed run did not use and writes to "
    f"{DEFAULT_OUT}/seeds-N unless --out says otherwise"
)

_SMOKE = [False]  # whether claims made now belong to a smoke run (see smoke_run)


@contextmanager
def smoke_run(on: bool = True) -> Iterator[None]:
    """Inside, every :class:`Claim` made is a smoke check (``smoke=True``), and
    :func:`check_out` refuses a folder holding a full run's claims. ``on=False`` changes
    nothing (a full run), so callers can pass their ``--quick`` flag."""
    before = _SMOKE[0]
    _SMOKE[0] = before or on
    try:
        yield
    finally:
        _SMOKE[0] = before


def in_smoke_run() -> bool:
    """Whether the code runs inside :func:`smoke_run`."""
    return _SMOKE[0]


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
        smoke: Judged in a smoke run (a reduced sample): shown, never counted as holding. By
            default, whether the claim is made inside :func:`smoke_run`.
        points: Where the claim is judged across a robustness sweep, its verdict at each
            point by the same rule (:data:`DEFAULT_POINT` for the inputs as given), in the
            sweep's order; a claim that holds holds at every point. Empty where the claim is
            judged at one point (calibration rows, claims whose inputs are not swept).
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
    smoke: bool = field(default_factory=in_smoke_run)
    points: dict[str, bool] = field(default_factory=dict, hash=False)

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
        if not all(isinstance(k, str) and isinstance(v, bool) for k, v in self.points.items()):
            raise ValueError(f"claim {self.claim!r}: points must map point names to booleans")
        if self.holds and not all(self.points.values()):
            bad = ", ".join(k for k, v in self.points.items() if not v)
            raise ValueError(f"claim {self.claim!r} holds but fails at sweep points: {bad}")
        if not self.holds and not self.why:
            raise ValueError(f"claim {self.claim!r} does not hold: say why (a measured reason)")


#: The name of the inputs as given among a claim's ``points``.
DEFAULT_POINT = "default"

#: The claims table's figure: each held-out claim's verdict at each sweep point
#: (:func:`plot_robustness`).
ROBUSTNESS_FIGURE = "robustness.png"

#: Files every reproduction writes into its folder besides its own: the claims table and its
#: figure.
CLAIMS_OUTPUTS = {"claims.json": "claims", "README.md": "report", ROBUSTNESS_FIGURE: "figure"}


def add_output_arguments(
    ap: argparse.ArgumentParser, help: str = "report directory", quick: bool = False
) -> None:
    """A reproduction's ``--out`` and ``--force``.

    With ``quick`` (the command has ``--quick``), ``--out`` defaults to ``None``:
    :func:`out_folder` then picks :data:`QUICK_OUT` for a quick run and :data:`DEFAULT_OUT`
    otherwise.
    """
    if quick:
        help += f" (default {DEFAULT_OUT}; with --quick {QUICK_OUT})"
    ap.add_argument("--out", default=None if quick else DEFAULT_OUT, help=help)
    ap.add_argument(
        "--force",
        action="store_true",
        help="overwrite files in --out named like this reproduction's outputs that edgegym "
        "did not write",
    )


def rendered_outputs(outputs: Mapping[str, str]) -> dict[str, str]:
    """What ``--render-only`` writes of ``outputs``: all but the saved runs it reads and the
    journal of a run in progress."""
    return {n: k for n, k in outputs.items() if k != "journal" and not n.endswith("-runs.json")}


def run_parser(
    prog: str, doc: str, seeds: int, seeds_help: str, quick_help: str, runs_file: str
) -> argparse.ArgumentParser:
    """The command line of a reproduction that saves its runs (``runs_file``): ``--seeds``,
    ``--first-seed``, ``--quick``, ``--out``, ``--force``, ``--render-only`` (rewrite the
    report from the saved runs) and the parallel options; :func:`open_run` checks them."""
    from edgegym.parallel import add_parallel_arguments

    ap = argparse.ArgumentParser(prog=prog, description=doc.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=seeds, help=seeds_help)
    add_first_seed_argument(ap)
    ap.add_argument("--quick", action="store_true", help=quick_help)
    add_output_arguments(ap, quick=True)
    ap.add_argument(
        "--render-only",
        action="store_true",
        help=f"rewrite the report from the saved {runs_file} without running anything",
    )
    add_parallel_arguments(ap, "episode", workers=2)
    return ap


def open_run(
    prog: str,
    args: argparse.Namespace,
    outputs: Mapping[str, str],
    load_runs: Callable[[Path], Any],
) -> tuple[Path, Any] | None:
    """The ``--out`` folder of a :func:`run_parser` command, checked with its other arguments
    before any work (:func:`check_out`; a quick run is a smoke run), and with
    ``--render-only`` the saved runs (``load_runs(folder)``, which raises ``ValueError``).

    Returns:
        ``(folder, saved runs or None)``, or ``None`` after printing ``prog: error: ...``.
    """
    from edgegym.parallel import ray_problem

    try:
        for flag, value in (("--seeds", args.seeds), ("--workers", args.workers)):
            if value < 1:
                raise ValueError(f"{flag} must be >= 1, got {value}")
        if problem := first_seed_problem(args.first_seed):
            raise ValueError(problem)
        if not args.render_only and (problem := ray_problem(args.ray)):
            raise ValueError(problem)
        written = rendered_outputs(outputs) if args.render_only else outputs
        out = check_out(out_folder(args), written, args.force, smoke=args.quick)
        return out, (load_runs(out) if args.render_only else None)
    except ValueError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return None


class SavedRunsError(ValueError):
    """Saved runs that ``--render-only`` cannot read or draw a report from (one line naming
    the file, never its content)."""


class ClaimsTableError(ValueError):
    """A ``claims.json`` that is not a claims table, or one a smoke run may not write over
    (one line naming the file, never its content)."""


def _why(exc: BaseException) -> str:
    """What went wrong with a saved runs file, without its content: a JSON parser's error
    with its position, a missing key by name where it is a short one, else the kind of
    error only (a ``ValueError``'s text may quote a value of the file)."""
    if isinstance(exc, json.JSONDecodeError):
        return f"{type(exc).__name__}: {exc}"  # a position, never the content
    if isinstance(exc, KeyError) and exc.args:
        return f"KeyError: {quoted(exc.args[0])}"
    return type(exc).__name__


def read_runs(
    path: Path,
    pick: Callable[[Any], Any],
    object_pairs_hook: Callable | None = None,
    shape: Shape | None = None,
) -> Any:
    """``pick(runs)`` of a saved runs file, for ``--render-only`` (its objects built by
    ``object_pairs_hook`` where given, as :func:`json.loads` takes it). The file is an
    untrusted input: a regular file within the cap of a result
    (:func:`edgegym.inputs.read_text`), nested at most
    :data:`~edgegym.jsonshape.MAX_DEPTH` deep and, where ``shape`` is given, of that
    shape (:func:`edgegym.jsonshape.check`) before ``pick`` sees it.

    Raises:
        SavedRunsError: The file is missing, or not a saved run (``pick`` fails on it), with
            the one-line message to print.
    """
    if not path.exists():
        raise SavedRunsError(f"--render-only: {path} does not exist; run without it first")
    try:
        text = read_text(path, "saved runs file", "result")
    except (OSError, ValueError) as exc:  # InputError: a FIFO, too large, not UTF-8
        raise SavedRunsError(f"--render-only: {exc}") from None
    cannot = f"--render-only: cannot read the saved runs in {path}"
    try:
        data = json.loads(text, object_pairs_hook=object_pairs_hook)
    except RecursionError:
        raise SavedRunsError(f"{cannot} (nested too deeply)") from None
    except ValueError as exc:
        raise SavedRunsError(f"{cannot} ({_why(exc)})") from None
    try:
        check_depth(data, path)
        if shape is not None:
            check(data, shape, path)
    except ShapeError as exc:
        raise SavedRunsError(f"--render-only: {exc}") from None
    try:
        return pick(data)
    except (LookupError, TypeError, ValueError, AttributeError, ArithmeticError) as exc:
        raise SavedRunsError(f"{cannot} ({_why(exc)})") from None


@contextmanager
def rendering(path: Path, saved: bool = True) -> Iterator[None]:
    """Around drawing a report from the saved runs in ``path`` (``saved``: with
    ``--render-only``): values of the right kinds that do not make a run (a policy's rows
    missing, lists of unequal lengths) end in one :class:`SavedRunsError` line naming the
    file, not a traceback from deep in the report. A run's own results pass through."""
    if not saved:
        yield
        return
    try:
        yield
    except (OutputWriteError, ClaimsTableError):  # a message of its own, naming its file
        raise
    except (LookupError, TypeError, ValueError, AttributeError, ArithmeticError) as exc:
        raise SavedRunsError(
            f"--render-only: cannot draw the report from the saved runs in {path} ({_why(exc)})"
        ) from None


def write_report(prog: str, path: Path, saved: bool, write: Callable[[], None]) -> int:
    """``write()`` the report of a run, under :func:`rendering` from the saved runs in
    ``path`` where ``saved``; returns 0, or 2 after one ``prog: error:`` line where the saved
    runs make no report or the claims table cannot be read."""
    try:
        with rendering(path, saved):
            write()
    except (SavedRunsError, ClaimsTableError) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    return 0


def out_folder(args: argparse.Namespace) -> str:
    """``--out`` as given, else :data:`QUICK_OUT` for a quick run, else
    ``DEFAULT_OUT/seeds-N`` for a run from ``--first-seed N`` > 0 (a seed check), else
    :data:`DEFAULT_OUT`."""
    if args.out is not None:
        return args.out
    if getattr(args, "quick", False):
        return QUICK_OUT
    return default_out(getattr(args, "first_seed", 0))


def default_out(first_seed: int = 0) -> str:
    """Where a full run writes by default: :data:`DEFAULT_OUT`, or its ``seeds-N`` folder for
    a run from ``--first-seed N`` > 0 (a seed check)."""
    return f"{DEFAULT_OUT}/seeds-{first_seed}" if first_seed else DEFAULT_OUT


def seed_options(seeds: int, default: int, first_seed: int, flag: str = "--seeds") -> list[str]:
    """A regenerate command's seed options where they are not the defaults: ``flag seeds``
    (the episodes per point; ``default`` when not given) and ``--first-seed N``."""
    out = [flag, str(seeds)] if seeds != default else []
    return out + (["--first-seed", str(first_seed)] if first_seed else [])


def add_first_seed_argument(ap: argparse.ArgumentParser) -> None:
    """A reproduction's ``--first-seed`` (:data:`FIRST_SEED_HELP`; checked by
    :func:`first_seed_problem`)."""
    ap.add_argument("--first-seed", type=int, default=0, metavar="N", help=FIRST_SEED_HELP)


def first_seed_problem(first: int) -> str | None:
    """What is wrong with ``--first-seed``'s value, or ``None``."""
    if first < 0:
        return f"--first-seed must be >= 0, got {first}"
    if first > 2**31:
        return f"--first-seed must be at most 2**31, got {first}"
    return None


def seeds_text(first: int, n: int) -> str:
    """``"seed 0"``, ``"seeds 0..2"``, ``"seeds 100..102"``: the seeds of ``n`` episodes from
    ``first``."""
    return f"seed {first}" if n == 1 else f"seeds {first}..{first + n - 1}"


def check_out(
    path: str | Path, outputs: Mapping[str, str], force: bool = False, smoke: bool = False
) -> Path:
    """The reproduction's ``--out`` folder, checked before any work: a folder can be made
    there, and each file it will write (``outputs``, name -> kind, plus the claims table) is
    new or an edgegym output of that kind (or ``force``). A smoke run (``smoke``, or inside
    :func:`smoke_run`) may not write where a full run's claims are (``force`` or not). The
    folder's lock is held from here to the end of the command (:func:`hold_folder`).

    Raises:
        ValueError: Naming the folder or file.
    """
    folder = check_output_folder(path, {**outputs, **CLAIMS_OUTPUTS}, force=force)
    if smoke or in_smoke_run():
        _refuse_full_table(folder)
    return hold_folder(folder, "reproduce")  # one writer per folder until the command ends


def _refuse_full_table(out: Path) -> None:
    """A smoke run may not replace records of a full run (the committed table)."""
    full = [c for c in load(out) if not c.smoke]
    if full:
        raise ClaimsTableError(
            f"{out / 'claims.json'} holds the claims of a full run ({len(full)} records); a "
            "quick (smoke) run does not overwrite them: pass another --out (--quick writes to "
            f"{QUICK_OUT} by default)"
        )


#: What :func:`load` reads of a ``claims.json`` record (:func:`record` writes them; MIGRator
#: keeps its calibration rows so in its saved runs).
_VALUE = OneOf(NUM, LONG_TEXT, BOOL, NULL)
CLAIM_SHAPE = Record(
    {
        "paper": Choice(*PAPERS),
        "role": Choice("held-out", "calibration"),
        **{k: TEXT for k in ("figure", "claim", "metric")},
        **{k: LONG_TEXT for k in ("test", "why")},
        "paper_value": _VALUE,
        "edgegym_value": _VALUE,
        "holds": BOOL,
        "smoke": BOOL,
        "points": MapOf(BOOL),
    },
    required=tuple(
        f.name for f in fields(Claim) if f.default is MISSING and f.default_factory is MISSING
    ),
)
_TABLE = Record({"claims": ListOf(CLAIM_SHAPE)}, required=("claims",))


def load(out: str | Path) -> list[Claim]:
    """The claims recorded in ``<out>/claims.json`` (none when the file is absent), read as an
    untrusted input: a regular file within the cap of a result, of the shape :func:`record`
    writes.

    Raises:
        ClaimsTableError: Not a claims table, in one line naming the file and the field.
    """
    path = Path(out) / "claims.json"
    if not path.exists():
        return []
    again = "delete it to start afresh"
    try:
        data = load_json(read_text(path, "claims table", "result"), path)
        check(check_depth(data, path), _TABLE, path)
    except (OSError, ValueError) as exc:  # InputError and ShapeError are ValueErrors
        raise ClaimsTableError(f"{exc} (not a claims table; {again})") from None
    names = {f.name for f in fields(Claim)}
    claims = []
    for i, rec in enumerate(data["claims"]):
        try:
            claims.append(Claim(**{"smoke": False, **{k: v for k, v in rec.items() if k in names}}))
        except ValueError:  # its message quotes the claim
            raise ClaimsTableError(
                f"{path}: claims[{i}]: not a claims table record (it holds but fails at a "
                f"sweep point, or fails without saying why); {again}"
            ) from None
    return claims


def record(claim: Claim) -> dict[str, Any]:
    """``claim`` as a JSON record; ``smoke`` and ``points`` only where they are set (a full
    run's records stay as they were before smoke runs were marked)."""
    rec = asdict(claim)
    for key in ("smoke", "points"):
        if not rec[key]:
            del rec[key]
    return rec


def update(paper: str, claims: Sequence[Claim], out: str | Path) -> Path:
    """Replace ``paper``'s records in ``<out>/claims.json`` and re-render ``<out>/README.md``
    and its figure (:data:`ROBUSTNESS_FIGURE`)."""
    if paper not in PAPERS:
        raise ValueError(f"paper must be one of {', '.join(PAPERS)}, got {paper!r}")
    wrong = [c.claim for c in claims if c.paper != paper]
    if wrong:
        raise ValueError(f"claims of another paper passed as {paper!r}: {wrong}")
    out = Path(out)
    if any(c.smoke for c in claims):
        _refuse_full_table(out)
    before = load(out)
    if changes := verdict_changes([c for c in before if c.paper == paper], claims):
        print(f"{paper} claims in {out / 'claims.json'}: {changes}", file=sys.stderr, flush=True)
    kept = [c for c in before if c.paper != paper] + list(claims)
    kept.sort(key=lambda c: PAPERS.index(c.paper))
    path = out / "claims.json"
    write_json(path, {"claims": [record(c) for c in kept]}, "claims", indent=1)
    write_text(out / "README.md", render(kept, variant_runs(out)), "report")
    plot_robustness(kept, out / ROBUSTNESS_FIGURE)
    return path


def verdict_changes(before: Sequence[Claim], after: Sequence[Claim]) -> str:
    """What a run changed in one paper's claims against its records in the table (``before``):
    the claims whose verdict flipped, those new and those gone, or ``""`` where the table had
    none of the paper's claims or a smoke run is involved (nothing to compare)."""
    if not before or any(c.smoke for c in (*before, *after)):
        return ""
    notes = [
        f"'{c.claim}' is new ({'holds' if c.holds else 'fails'})"
        if old is None
        else f"'{c.claim}' {'holds now' if c.holds else 'no longer holds'}"
        for c, old in _verdicts_differing(before, after)
    ]
    kept = {c.claim for c in after}
    notes += [f"'{c.claim}' is gone" for c in before if c.claim not in kept]
    old_values = {c.claim: c.edgegym_value for c in before}
    moved = sum(1 for c in after if old_values.get(c.claim, c.edgegym_value) != c.edgegym_value)
    values = f"{moved} value{'s' if moved != 1 else ''} changed"
    if not notes:
        return f"every verdict as before this run ({values})"
    count = f"{len(notes)} verdict change{'s' if len(notes) != 1 else ''}"
    return f"{count} against the records before this run ({values}): " + "; ".join(notes)


def _verdicts_differing(
    base: Sequence[Claim], other: Sequence[Claim]
) -> list[tuple[Claim, Claim | None]]:
    """The claims of ``other`` whose record in ``base`` (same paper and claim) has the other
    verdict, each with that record, and those ``base`` has no record of, with ``None``; in
    ``other``'s order. A pair with a smoke check in it is left out (not a verdict)."""
    records = {(c.paper, c.claim): c for c in base}
    pairs = [(c, records.get((c.paper, c.claim))) for c in other]
    return [
        (c, old)
        for c, old in pairs
        if old is None or (not (old.smoke or c.smoke) and old.holds != c.holds)
    ]


def variant_runs(out: str | Path) -> list[tuple[str, list[Claim]]]:
    """The reproductions run on another scenario into a folder of ``out`` (``--out
    <out>/<name>``): each folder's name and its claims, by name."""
    found = []
    for path in sorted(Path(out).glob("*/claims.json")):
        claims = load(path.parent)
        if claims:
            found.append((path.parent.name, claims))
    return found


def _fmt(v: Value) -> str:
    if isinstance(v, bool) or v is None:
        return str(v)
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) < 1000 else f"{v:,.0f}"
    return str(v)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def smoke_line(claims: Sequence[Claim]) -> str:
    """What a smoke run's claims come to: ``"smoke run: N claims checked on a reduced sample;
    not counted"``."""
    n = len(claims)
    return f"smoke run: {n} claim{'s' if n != 1 else ''} checked on a reduced sample; not counted"


def summary(claims: Sequence[Claim]) -> str:
    """One paper's count: ``"H/N held-out claims hold"``, or :func:`smoke_line` when its
    claims come from a smoke run."""
    if any(c.smoke for c in claims):
        return smoke_line(claims)
    held = [c for c in claims if c.role == "held-out"]
    return f"{sum(c.holds for c in held)}/{len(held)} held-out claims hold"


def held_count(claims: Sequence[Claim]) -> str:
    """A report's count: ``"H of N held-out claims hold"``, or for a smoke run
    ``"Smoke run: N claims checked on a reduced sample; not counted"``."""
    if any(c.smoke for c in claims):
        line = smoke_line(claims)
        return line[0].upper() + line[1:]
    held = [c for c in claims if c.role == "held-out"]
    return f"{sum(c.holds for c in held)} of {len(held)} held-out claims hold"


def count_sentence(claims: Sequence[Claim], rest: str = "") -> str:
    """A report's count in a sentence: ``"H of N held-out claims hold, by the rule each
    states; " + rest``, or for a smoke run ``"Smoke run: ...; not counted. " + Rest``."""
    count = held_count(claims)
    if any(c.smoke for c in claims):
        return f"{count}. {rest[0].upper()}{rest[1:]}" if rest else f"{count}."
    lead = f"{count}, by the rule each states"
    return f"{lead}; {rest}" if rest else lead


def holds_cell(claim: Claim) -> str:
    """A report's ``holds`` cell: ``yes``, ``**no**``, or ``smoke`` (judged on a reduced
    sample, not counted)."""
    if claim.smoke:
        return "smoke"
    return "yes" if claim.holds else "**no**"


def _differences(claims: Sequence[Claim], other: Sequence[Claim]) -> str:
    """The held-out claims of ``other`` (another run of one paper) whose verdict differs from
    their record in ``claims``: ``"differs on: 'claim' (holds here: no, there: yes); ..."``,
    or that none does; a claim with no record in ``claims`` is named as such."""
    notes = [
        f"'{c.claim}' (not in the table below)"
        if base is None
        else f"'{c.claim}' ({'yes' if c.holds else 'no'}; below: {'yes' if base.holds else 'no'})"
        for c, base in _verdicts_differing(claims, other)
    ]
    if not notes:
        return "the same verdict as below on every one"
    return f"a different verdict on {len(notes)}: " + "; ".join(notes)


def render(claims: Sequence[Claim], variants: Sequence[tuple[str, Sequence[Claim]]] = ()) -> str:
    """The Markdown of docs/reproduction/README.md: counts per paper, the runs on other
    scenarios (``variants``: folder name and claims), then one table."""
    lines = [
        "# Reproductions: the papers' claims against edgegym",
        "",
        "Generated by `python -m edgegym.reproduce all` from [claims.json](claims.json); do not",
        "edit by hand (`all --render-only` rewrites it and every report from the saved runs).",
        "`held-out` rows are the papers' evaluation results, compared after the",
        "fact and never used to set an input; `calibration` rows are inputs set from a",
        "measurement of the paper, shown to agree. Each paper's report explains its rows.",
        "`python -m edgegym.reproduce all --quick` is a smoke run: it writes to",
        f"`{QUICK_OUT}`, never here, marks every row `smoke` and counts none.",
        "",
    ]
    smoke = [c for c in claims if c.smoke]
    if smoke:
        lines += [f"**{count_sentence(smoke)}**", ""]
    lines += [
        "| paper | held-out claims | hold | calibration rows | agree |",
        "| --- | --- | --- | --- | --- |",
    ]
    for paper in PAPERS:
        mine = [c for c in claims if c.paper == paper]
        if not mine:
            continue
        held = [c for c in mine if c.role == "held-out"]
        cal = [c for c in mine if c.role == "calibration"]
        hold, agree = (
            ("smoke", "smoke")
            if any(c.smoke for c in mine)
            else (sum(c.holds for c in held), sum(c.holds for c in cal))
        )
        lines.append(
            f"| [{TITLES[paper]}]({REPORTS[paper]}) | {len(held)} | {hold} | {len(cal)} | {agree} |"
        )
    if any(c.role == "held-out" for c in claims):
        lines += [
            "",
            f"![Each held-out claim at each point of its robustness sweep]({ROBUSTNESS_FIGURE})",
            "",
            "Each held-out claim at each point of its robustness sweep (the inputs as given "
            "first): green where it holds there by its rule, red where it fails, grey where it "
            "is not judged at that point; a claim holds only where its whole row is green. "
            "`points` in [claims.json](claims.json) holds the same verdicts.",
        ]
    if variants:
        lines += [
            "",
            "The same reproductions run on other scenarios or seeds (`seeds-N`: a full run on "
            "seeds N, N+1, ..., `--first-seed N`; each folder's report names its scenario, "
            "seeds and command; not counted above), with the held-out claims whose verdict "
            "differs from the table below:",
            "",
        ]
        for name, vc in variants:
            for paper in PAPERS:
                held = [c for c in vc if c.paper == paper and c.role == "held-out"]
                if held:
                    report = f"{name}/{REPORTS[paper]}"
                    hold = "smoke" if any(c.smoke for c in held) else sum(c.holds for c in held)
                    lines.append(
                        f"- [{name}]({report}): {TITLES[paper]}, {hold} of {len(held)} "
                        f"held-out claims hold; {_differences(claims, held)}"
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
                    holds_cell(c),
                    note,
                )
            )
            + " |"
        )
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------- the figure
# Every held-out claim's verdict at each point of its robustness sweep, one panel per paper
# (:data:`ROBUSTNESS_FIGURE`). A row is a claim, a column a sweep point (the inputs as given
# first); a cell is green where the claim holds there by its rule, red where it fails, grey
# where the claim is not judged at that point (its inputs are not swept there, or it is judged
# at one point only). A claim counts as holding only where its whole row is green.

_LABEL_CHARS = 64  # a row label's width: a longer claim loses its middle


def verdict_grid(claims: Sequence[Claim]) -> tuple[list[str], np.ndarray]:
    """One paper's held-out ``claims`` as a grid: the sweep points (the inputs as given first,
    then in the order the claims name them) and a (claims, points) array of 1 (holds there),
    0 (fails there) and NaN (not judged there). A claim judged at one point has its verdict
    under :data:`DEFAULT_POINT`."""
    verdicts = [c.points or {DEFAULT_POINT: c.holds} for c in claims]
    names = list(dict.fromkeys([DEFAULT_POINT, *(n for v in verdicts for n in v)]))
    grid = np.full((len(claims), len(names)), np.nan)
    for i, v in enumerate(verdicts):
        for j, name in enumerate(names):
            if name in v:
                grid[i, j] = float(v[name])
    return names, grid


def row_label(c: Claim) -> str:
    """A claim's row: its verdict, where the paper makes it (up to the first comma) and the
    claim, its middle cut where it is long, so that claims that differ at their end (1 or 2
    GPUs) stay apart."""
    text = f"{c.figure.split(',')[0]}: {c.claim}"
    if len(text) > _LABEL_CHARS:
        half = (_LABEL_CHARS - 3) // 2
        text = f"{text[:half].rstrip()}...{text[-half:].lstrip()}"
    verdict = "smoke" if c.smoke else "holds" if c.holds else "fails"
    return f"{verdict} | {text}"


def panel_title(paper: str, held: Sequence[Claim]) -> str:
    """The title of one paper's grid: how many of its held-out claims hold at every point, or,
    in a smoke run, that none is counted."""
    if any(c.smoke for c in held):
        return f"{TITLES[paper]}: {len(held)} held-out claims, smoke run (not counted)"
    count = sum(c.holds for c in held)
    return f"{TITLES[paper]}: {count} of {len(held)} held-out claims hold at every point"


def plot_robustness(claims: Sequence[Claim], path: str | Path) -> Path | None:
    """Draw the grid of every paper's held-out ``claims`` to ``path``; ``None`` (nothing
    drawn) where there is no held-out claim."""
    fig = robustness_figure(claims)
    if fig is None:
        return None
    import matplotlib.pyplot as plt

    out = save_figure(fig, path, dpi=110)
    plt.close(fig)
    return out


def robustness_figure(claims: Sequence[Claim]) -> Any:
    """The figure of :func:`plot_robustness` (a matplotlib ``Figure``), or ``None``."""
    panels = []
    for paper in PAPERS:
        held = [c for c in claims if c.paper == paper and c.role == "held-out"]
        if held:
            panels.append((paper, held, *verdict_grid(held)))
    if not panels:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap

    cmap = ListedColormap(["#d62728", "#2ca02c"])
    cmap.set_bad("#dddddd")
    smoke = any(c.smoke for _, held, _, _ in panels for c in held)
    suptitle = (
        "Each held-out claim at each robustness point: green holds, red fails, grey not judged"
        + (" (smoke run: not counted)" if smoke else "")
    )
    titles = [panel_title(paper, held) for paper, held, _, _ in panels]
    widest = max(len(names) for _, _, names, _ in panels)
    # inches: the row labels (4.2) beside a grid of 0.26 a column, wide enough for the titles
    # (about 0.085 in a character at 10 pt, 0.075 at 9 pt; a panel's title starts where its
    # grid does, right of the labels)
    width = max(
        4.2 + 0.26 * widest, 0.085 * len(suptitle) + 0.4, 4.2 + 0.075 * max(map(len, titles))
    )
    # a panel's height in rows: its claims, its title and its column labels (a character of
    # a label at 7 pt is about a fifth of a row)
    heights = [len(held) + 2 + 0.2 * max(map(len, names)) for _, held, names, _ in panels]
    fig = plt.figure(figsize=(width, 0.24 * sum(heights) + 0.6), layout="constrained")
    subfigs = fig.subfigures(len(panels), 1, height_ratios=heights, squeeze=False)[:, 0]
    axes = [sub.add_subplot() for sub in subfigs]
    for ax, title, (_, held, names, grid) in zip(axes, titles, panels, strict=True):
        ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, vmin=0, vmax=1, aspect="auto")
        ax.set_xlim(-0.5, widest - 0.5)
        ax.set_xticks(range(len(names)), names, rotation=90, fontsize=7)
        ax.set_yticks(
            range(len(held)),
            [row_label(c) for c in held],
            fontsize=7,
        )
        ax.set_xticks(np.arange(-0.5, len(names)), minor=True)
        ax.set_yticks(np.arange(-0.5, len(held)), minor=True)
        ax.grid(which="minor", color="white", linewidth=1)
        ax.tick_params(which="minor", length=0)
        for side in ("top", "right", "bottom", "left"):
            ax.spines[side].set_visible(False)
        ax.set_title(title, fontsize=9, loc="left")
    fig.suptitle(suptitle, fontsize=10)
    return fig

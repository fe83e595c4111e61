"""``python -m edgegym.reproduce all``: every reproduction, its report and the claims table.

Runs the four reproductions in turn (etf, ekya, srs, migrator); each writes its report under
``--out`` and its records into ``<out>/claims.json``, and ``<out>/README.md`` renders them as one
table. ``--quick`` is a smoke run on a reduced sample: it writes to ``runs/reproduction-quick``
unless ``--out`` says otherwise (never over a full run's claims table), marks every claim
``smoke`` and counts none. A reproduction that fails does not stop the others, and what they
wrote is kept; the exit code is then 1 and the failing ones are named. ``--first-seed N`` is a
seed check: ekya, srs and migrator rerun on seeds N, N+1, ... into ``docs/reproduction/seeds-N``
(etf's episodes do not depend on the seed: its scenarios have no random input, so it is not
rerun there). ``--render-only`` rewrites every report and the claims table from the runs saved
beside them (``ekya-runs.json``, ``srs-runs.json``, ``migrator-runs.json``) without running
those three, in ``--out`` and in every folder inside it that holds saved runs (first, so the
table lists them as rendered now); etf saves none and reruns (about 20 s; with no random
input its report is a function of the code, so it comes out as committed unless the code
changed).
``python -m edgegym.reproduce PAPER ...`` runs one (the same as
``python -m edgegym.reproduce.PAPER ...``).
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from edgegym.outputs import run_command
from edgegym.parallel import add_parallel_arguments, ray_problem
from edgegym.reproduce.claims import (
    PAPERS,
    add_first_seed_argument,
    add_output_arguments,
    check_out,
    first_seed_problem,
    load,
    out_folder,
    rendered_outputs,
    smoke_run,
    summary,
)

PROG = "python -m edgegym.reproduce"
#: Cheapest first, so a quick failure shows early.
ORDER = ("etf", "ekya", "srs", "migrator")
#: The papers whose episodes depend on the seed (what ``--first-seed`` reruns): etf's
#: scenarios have no random input (saturated tenants, no arrival process).
SEEDED = ("ekya", "srs", "migrator")
#: The papers that save their runs beside the report (``<paper>-runs.json``), so
#: ``--render-only`` rewrites them without running anything; etf reruns instead.
SAVED = ("ekya", "srs", "migrator")


def _argv(paper: str, args: argparse.Namespace) -> list[str]:
    """The arguments of one reproduction's ``main`` for ``all``'s options."""
    argv = ["--out", args.out, *(["--force"] if args.force else [])]
    if paper in ("srs", "migrator"):
        argv += ["--workers", str(args.workers)]
    if paper != "etf" and args.ray is not None:  # etf: under a minute, section after section
        argv += ["--ray", args.ray]
    if args.quick:
        argv.append("--quick")
    if args.render_only and paper in SAVED:
        argv.append("--render-only")
    if args.first_seed:
        argv += ["--first-seed", str(args.first_seed)]
    return argv


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``all`` or one paper's reproduction; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in PAPERS:
        module = importlib.import_module(f"edgegym.reproduce.{argv[0]}")
        return int(module.main(argv[1:]))
    ap = argparse.ArgumentParser(
        prog=PROG,
        description=__doc__.splitlines()[0],
        epilog="With one paper (python -m edgegym.reproduce PAPER ...) the arguments after its "
        "name go to that paper's own command, whose options differ: see python -m "
        "edgegym.reproduce PAPER --help (etf takes neither --workers nor --ray, ekya takes --ray "
        "but not --workers). With all, --workers reaches srs and migrator and --ray every paper "
        "but etf.",
    )
    ap.add_argument("what", choices=["all", *PAPERS], help="'all', or one paper")
    add_output_arguments(ap, quick=True)
    add_parallel_arguments(ap, "episode", workers=2)
    add_first_seed_argument(ap)
    ap.add_argument(
        "--quick",
        action="store_true",
        help="a smoke run of every reproduction: a reduced sample, every claim marked smoke "
        "and none counted",
    )
    ap.add_argument(
        "--render-only",
        action="store_true",
        help="rewrite the reports and the claims table from the runs saved in --out "
        f"({', '.join(f'{p}-runs.json' for p in SAVED)}) without running those papers, and "
        "those of every folder inside it that holds saved runs (other scenarios, seeds); etf "
        "saves none and reruns (about a minute)",
    )
    args = ap.parse_args(argv)
    args.out = out_folder(args)
    if args.workers < 1:
        print(f"{PROG}: error: --workers must be >= 1, got {args.workers}", file=sys.stderr)
        return 2
    if problem := ray_problem(args.ray) or first_seed_problem(args.first_seed):
        print(f"{PROG}: error: {problem}", file=sys.stderr)
        return 2
    with smoke_run(args.quick):  # every claim of a quick run is a smoke check
        return _all(args)


def _all(args: argparse.Namespace) -> int:
    """Every reproduction into ``args.out``, then each paper's count."""
    papers = [p for p in ORDER if p in SEEDED] if args.first_seed else list(ORDER)
    outputs = {}
    for paper in papers:
        written = importlib.import_module(f"edgegym.reproduce.{paper}").OUTPUTS
        render = args.render_only and paper in SAVED
        outputs.update(rendered_outputs(written) if render else written)
    inner = _saved_folders(args.out) if args.render_only else []
    try:  # every paper's files, and with --render-only the saved runs, before any paper runs
        check_out(args.out, outputs, args.force)
        if args.render_only:
            _check_saved(args.out, [p for p in papers if p in SAVED])
        for folder, saved in inner:
            written = {}
            for paper in saved:
                module = importlib.import_module(f"edgegym.reproduce.{paper}")
                written.update(rendered_outputs(module.OUTPUTS))
            check_out(folder, written, args.force)
    except ValueError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    failed: list[str] = []
    for folder, saved in inner:  # first, so the table's README lists them as rendered now
        for paper in saved:
            force = ["--force"] if args.force else []
            argv = ["--render-only", "--out", folder, *force]
            if not _run_paper(paper, argv, f"{paper} in {folder}"):
                failed.append(f"{paper} in {folder}")
    for paper in papers:
        if not _run_paper(paper, _argv(paper, args), paper):
            failed.append(paper)
    for folder, saved in inner:
        here = load(folder)
        for paper in saved:
            print(f"{paper} in {folder}: {summary([c for c in here if c.paper == paper])}")
    claims = load(args.out)
    for paper in PAPERS:  # a paper that failed has no records of this run to count
        if paper not in papers:
            print(f"{paper}: not rerun (its episodes do not depend on the seed)")
            continue
        text = (
            "failed (above)"
            if paper in failed
            else summary([c for c in claims if c.paper == paper])
        )
        print(f"{paper}: {text}")
    if failed:
        print(f"{PROG}: error: failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def _run_paper(paper: str, argv: list[str], name: str) -> bool:
    """One paper's reproduction with ``argv``, between lines naming it (``name``) and its
    exit; an exception is named, not raised (the others' results are kept). Whether it
    succeeded."""
    print(f"== {name}", file=sys.stderr, flush=True)
    t0 = time.time()
    try:
        module = importlib.import_module(f"edgegym.reproduce.{paper}")
        code = int(module.main(argv))
    except Exception as exc:  # keep the others' results; name the failure
        print(f"{PROG}: {name} failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        code = 1
    print(f"== {name}: exit {code} in {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
    return code == 0


def _saved_folders(out: str) -> list[tuple[str, list[str]]]:
    """The folders inside ``out`` that hold saved runs (the runs on other scenarios or seeds
    that the claims table lists beside it), each with its papers whose runs are saved there."""
    root = Path(out)
    found = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else ():
        saved = [p for p in SAVED if (folder / f"{p}-runs.json").is_file()]
        if saved:
            found.append((str(folder), saved))
    return found


def _check_saved(out: str, papers: Sequence[str]) -> None:
    """``--render-only``'s saved runs, before any paper runs (each paper's own
    ``--render-only`` then reads its file and names what is wrong inside it).

    Raises:
        ValueError: Naming the missing files and the command that writes them.
    """
    missing = [
        f"{out}/{p}-runs.json" for p in papers if not (Path(out) / f"{p}-runs.json").is_file()
    ]
    if missing:
        raise ValueError(
            f"--render-only: no saved runs in {', '.join(missing)}; run without --render-only "
            "first (each full run saves its runs beside its report)"
        )


if __name__ == "__main__":
    sys.exit(run_command(main, PROG))

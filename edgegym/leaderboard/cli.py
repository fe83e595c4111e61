"""The leaderboard's command line (``python -m edgegym.leaderboard``, ``edgegym leaderboard``)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from edgegym.leaderboard.render import duration_text, render
from edgegym.leaderboard.runner import load_results, output_files, run
from edgegym.leaderboard.selection import (
    DEFAULT_OVERRIDES,
    JSON_NAME,
    MD_NAME,
    QUICK_EPISODES,
    QUICK_OVERRIDES,
    LeaderboardError,
    parse_family_sets,
    plan,
    split_names,
)
from edgegym.outputs import check_output_folder, folder_lock


# ----------------------------------------------------------------------------- command line
def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The leaderboard's options (shared by ``python -m edgegym.leaderboard`` and the CLI)."""
    parser.add_argument(
        "--families",
        action="append",
        metavar="F[,F]",
        help="families to run (continual, mig, energy, dag; default: all)",
    )
    parser.add_argument(
        "--scenarios",
        action="append",
        metavar="S[,S]",
        help="scenarios to run, or 'all' for every bundled one (default: every bundled "
        "scenario, mig: migrator-w1..w8)",
    )
    parser.add_argument(
        "--episodes", type=int, help="episodes per policy and scenario (default 5; --quick 2)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the first episode (0)")
    parser.add_argument(
        "--set",
        action="append",
        metavar="FAMILY:KEY=VALUE",
        help="scenario override for one family, e.g. dag:requests=200; repeatable",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="default scenario per family, 2 episodes, dag:requests=200, "
        "out runs/leaderboard-quick",
    )
    parser.add_argument("--out", metavar="DIR", help="output folder (default docs)")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="keep scenarios already done with these settings; where only the shipped agent "
        "changed, rerun its rows alone",
    )
    parser.add_argument(
        "--fresh", action="store_true", help="discard the existing leaderboard.json"
    )
    parser.add_argument(
        "--render-only",
        action="store_true",
        help="rewrite leaderboard.md and the figures from leaderboard.json",
    )
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    parser.add_argument(
        "--force",
        action="store_true",
        help="overwrite files in --out named like the leaderboard's outputs that edgegym did "
        "not write",
    )
    from edgegym.parallel import add_parallel_arguments

    add_parallel_arguments(parser, "(scenario, policy, seed) episode")


def run_args(args: argparse.Namespace, argv: Sequence[str] | None = None) -> int:
    """Run the leaderboard for parsed arguments; returns the exit code.

    Raises:
        LeaderboardError: Bad arguments.
    """
    out = Path(args.out or ("runs/leaderboard-quick" if args.quick else "docs"))
    try:
        check_output_folder(out, output_files(), force=args.force)
    except ValueError as exc:
        raise LeaderboardError(str(exc)) from None
    with folder_lock(out, "leaderboard"):  # one writer per output folder
        return _run_in(out, args, argv)


def _run_in(out: Path, args: argparse.Namespace, argv: Sequence[str] | None) -> int:
    """:func:`run_args` writing into ``out``, holding its lock."""
    if args.render_only:
        data = load_results(out / JSON_NAME)
        if not data["cells"]:
            raise LeaderboardError(f"{out / JSON_NAME}: no results to render")
        md = render(data, out)
        print(f"wrote {md}")
        return 0
    episodes = args.episodes if args.episodes is not None else (QUICK_EPISODES if args.quick else 5)
    if episodes < 1:
        raise LeaderboardError(f"--episodes must be >= 1, got {episodes}")
    if args.seed < 0:
        raise LeaderboardError(f"--seed must be >= 0, got {args.seed}")
    if args.workers < 1:
        raise LeaderboardError(f"--workers must be >= 1, got {args.workers}")
    if args.resume and args.fresh:
        raise LeaderboardError("--resume keeps leaderboard.json and --fresh discards it: give one")
    for flag in ("families", "scenarios"):  # given, but only commas or blanks
        if getattr(args, flag) and not split_names(getattr(args, flag)):
            raise LeaderboardError(f"--{flag} names nothing (leave it out for the default)")
    cells = plan(split_names(args.families), split_names(args.scenarios) or None, args.quick)
    overrides: dict[str, dict[str, Any]] = {
        f: dict(v) for f, v in (QUICK_OVERRIDES if args.quick else DEFAULT_OVERRIDES).items()
    }
    for fam, sets in parse_family_sets(args.set).items():
        overrides.setdefault(fam, {}).update(sets)
    from edgegym.scenarios import load

    for fam, scen in cells:  # bad overrides fail before any work
        if overrides.get(fam):
            load(scen, **overrides[fam])
    from edgegym.parallel import ray_problem

    if problem := ray_problem(args.ray):
        raise LeaderboardError(problem)
    data = run(
        cells,
        out=out,
        episodes=episodes,
        seed=args.seed,
        overrides=overrides,
        resume=args.resume,
        fresh=args.fresh,
        progress=not args.no_progress,
        argv=argv,
        workers=args.workers,
        ray=args.ray,
    )
    wall = data["runs"][-1].get("wall_s")
    print(f"wrote {out / MD_NAME}, {out / JSON_NAME} and the figures ({duration_text(wall)})")
    failed = data["runs"][-1].get("failed") or []
    errors = [
        f"{k}: {r['policy']}"
        for k in (f"{f}/{s}" for f, s in cells)
        for r in data["cells"].get(k, {}).get("results", [])
        if "error" in r
    ]
    for item in failed + errors:
        print(f"edgegym leaderboard: error: {item} failed (see {out / MD_NAME})", file=sys.stderr)
    return 1 if failed or errors else 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m edgegym.leaderboard``; exit code 0, 1 (a scenario or policy failed), 2."""
    parser = argparse.ArgumentParser(
        prog="python -m edgegym.leaderboard",
        description="Evaluate every policy of every family on its bundled scenarios over the "
        "same seeds and write docs/leaderboard.md, leaderboard.json and one figure per family.",
    )
    add_arguments(parser)
    argv = list(argv) if argv is not None else sys.argv[1:]
    args = parser.parse_args(argv)
    try:
        return run_args(args, ["python", "-m", "edgegym.leaderboard", *argv])
    except ValueError as exc:  # LeaderboardError, ScenarioError
        print(f"edgegym leaderboard: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("edgegym leaderboard: interrupted (results so far are saved)", file=sys.stderr)
        return 130

"""The leaderboard run three ways on this machine: serially, in a local process pool and on a
local Ray cluster, with the same cells, episodes and seeds; wall times as ratios to the serial
run of the same invocation, and a check that all three wrote the same numbers.

Run ``python -m benchmarks.parallel [--workers N] [--episodes E] [--scenarios S,...]
[--json PATH]`` from the repository root (Ray: ``pip install -e ".[ray]"``; without it the Ray
row is left out with the reason). By default the cells are ``--quick``'s (each family's default
scenario, DAG at 200 requests) with 2 episodes. Ctrl-C (or SIGTERM) keeps the runs finished
so far in ``--json``, marked ``"partial"``. Results: docs/ray.md.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import Parser, add_json_arguments, json_problem, keep_partial, machine_info
from edgegym import leaderboard as lb
from edgegym.outputs import run_command, write_json
from edgegym.parallel import RayMissingError, init_ray

PROG = "python -m benchmarks.parallel"


def _numbers(data: Any) -> Any:
    if isinstance(data, dict):
        skip = {"decision_time_s", "wall_s", "finished"}
        return {k: _numbers(v) for k, v in data.items() if k not in skip}
    if isinstance(data, list):
        return [_numbers(v) for v in data]
    return data


def _board(cells: list[tuple[str, str]], episodes: int, out: Path, **where: Any) -> tuple:
    t0 = time.perf_counter()
    data = lb.run(
        cells,
        out=out,
        episodes=episodes,
        overrides=lb.QUICK_OVERRIDES,
        progress=False,
        fresh=True,
        **where,
    )
    return time.perf_counter() - t0, data


def _runs(result: dict[str, Any], runs: dict[str, tuple[float, dict[str, Any]]]) -> None:
    """Each finished run's wall time, speed-up over the serial run and agreement with it."""
    if "serial" not in runs:
        return
    serial_s, serial = runs["serial"]
    for name, (wall, data) in runs.items():
        result["runs"][name] = {
            "wall_s": round(wall, 2),
            "speedup": round(serial_s / wall, 2),
            "same_numbers": _numbers(data["cells"]) == _numbers(serial["cells"]),
        }


def _parse(argv: Sequence[str] | None) -> tuple[Any, list[tuple[str, str]]]:
    """The arguments and the leaderboard's cells; bad ones: one ``error:`` line, exit 2."""
    from edgegym.cli import int_in

    ap = Parser(prog=PROG, description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--workers", type=int_in(1), default=os.cpu_count() or 1, help="processes / CPUs"
    )
    ap.add_argument(
        "--episodes", type=int_in(1), default=2, help="episodes per policy and scenario"
    )
    ap.add_argument(
        "--scenarios", help="comma-separated bundled scenarios, or 'all' (default: --quick's)"
    )
    ap.add_argument("--no-ray", action="store_true", help="leave the Ray run out")
    add_json_arguments(ap)
    args = ap.parse_args(argv)
    if problem := json_problem(args):
        ap.error(problem)
    names = [s.strip() for s in (args.scenarios or "").split(",") if s.strip()]
    if args.scenarios is not None and not names:
        ap.error(f"--scenarios {args.scenarios!r}: names no scenario")
    try:
        cells = lb.plan(None, names or None, quick=not names)
    except ValueError as exc:  # LeaderboardError: an unknown scenario, a bad variant
        ap.error(f"--scenarios {args.scenarios}: {exc}")
    return args, cells


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the leaderboard serially, in a pool and on Ray; print and return the comparison.

    Bad arguments (an unknown scenario, an unusable ``--json`` path) print one ``error:`` line
    and raise ``SystemExit(2)`` before any work. Ctrl-C or SIGTERM writes the runs finished
    so far to ``--json`` (``"partial": {"stopped": ..., "missing": [runs]}``), says so in one
    line and raises ``SystemExit`` (130, or 143 for SIGTERM).
    """
    args, cells = _parse(argv)
    result: dict[str, Any] = {
        "machine": machine_info(),
        "cells": [f"{f}/{s}" for f, s in cells],
        "episodes": args.episodes,
        "workers": args.workers,
        "runs": {},
    }
    runs: dict[str, tuple[float, dict[str, Any]]] = {}
    planned = ["serial", "pool"] + ([] if args.no_ray else ["ray"])
    try:
        with tempfile.TemporaryDirectory() as tmp:
            runs["serial"] = _board(cells, args.episodes, Path(tmp, "serial"))
            runs["pool"] = _board(cells, args.episodes, Path(tmp, "pool"), workers=args.workers)
            if not args.no_ray:
                try:
                    t0 = time.perf_counter()
                    init_ray(num_cpus=args.workers)
                    result["ray_start_s"] = round(time.perf_counter() - t0, 2)
                    runs["ray"] = _board(cells, args.episodes, Path(tmp, "ray"), ray="local")
                except RayMissingError as exc:
                    result["ray_left_out"] = str(exc)
                    planned.remove("ray")
    except KeyboardInterrupt:
        _runs(result, runs)
        missing = [name for name in planned if name not in runs]
        code = keep_partial(PROG, args.json, result, len(runs), missing, ("run", "runs"))
        raise SystemExit(code) from None
    _runs(result, runs)
    lines = [
        f"leaderboard of {len(cells)} scenario(s), {args.episodes} episode(s), "
        f"{args.workers} worker(s), {result['machine'].get('cpu_count')} CPU(s)",
        f"{'run':8s} {'wall s':>8s} {'speed-up':>9s}  same numbers",
    ]
    for name, r in result["runs"].items():
        lines.append(f"{name:8s} {r['wall_s']:8.1f} {r['speedup']:8.2f}x  {r['same_numbers']}")
    if "ray_left_out" in result:
        lines.append(f"ray: left out ({result['ray_left_out']})")
    print("\n".join(lines))
    if args.json:
        write_json(args.json, result, "benchmark", flag="--json")
        print(f"wrote {args.json}")
    if not all(r["same_numbers"] for r in result["runs"].values()):
        print(f"{PROG}: error: the runs wrote different numbers", file=sys.stderr)
    return result


if __name__ == "__main__":
    sys.exit(run_command(main, PROG))

"""Timing helpers, CPU pinning and machine information shared by the benchmarks."""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
import platform
import statistics
import sys
from collections.abc import Iterator, Sequence
from typing import Any

import gymnasium
import numpy as np


def median(values: Sequence[float]) -> float:
    """Median of a non-empty sequence of numbers."""
    return float(statistics.median(values))


@contextlib.contextmanager
def pinned_to_one_core() -> Iterator[int | None]:
    """Pin this process to a single CPU core for the duration of the block.

    Yields the core used, or ``None`` where the platform has no ``sched_setaffinity``. The
    previous affinity is restored on exit.
    """
    if not hasattr(os, "sched_setaffinity"):
        yield None
        return
    before = os.sched_getaffinity(0)
    core = min(before)
    os.sched_setaffinity(0, {core})
    try:
        yield core
    finally:
        os.sched_setaffinity(0, before)


def machine_info() -> dict[str, Any]:
    """Platform, interpreter and library versions, CPU count and today's date."""
    try:
        from importlib.metadata import version

        edgegym_version = version("edgegym")
    except Exception:  # metadata is informational only
        edgegym_version = "unknown"
    cpu_model = platform.processor()
    with contextlib.suppress(OSError):
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu_model = line.split(":", 1)[1].strip()
                    break
    return {
        "date": _dt.date.today().isoformat(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_model": cpu_model,
        "cpu_count": os.cpu_count(),
        "python": sys.version.split()[0],
        "implementation": platform.python_implementation(),
        "numpy": np.__version__,
        "gymnasium": gymnasium.__version__,
        "edgegym": edgegym_version,
    }


def add_json_arguments(parser: Any) -> None:
    """``--json PATH`` and ``--force`` of every benchmark."""
    from pathlib import Path

    parser.add_argument("--json", type=Path, metavar="PATH", help="write the numbers here")
    parser.add_argument(
        "--force", action="store_true", help="overwrite a --json file edgegym did not write"
    )


def json_problem(args: Any) -> str | None:
    """Why ``args.json`` cannot take the benchmark's numbers (checked before any measuring,
    so a bad path never costs a run), or ``None``."""
    from edgegym.outputs import check_output_path

    if args.json is None:
        return None
    try:
        check_output_path(args.json, flag="--json", kind="benchmark", force=args.force)
    except ValueError as exc:
        return str(exc)
    return None

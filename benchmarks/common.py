"""Timing helpers, CPU pinning and machine information shared by the benchmarks."""

from __future__ import annotations

import argparse
import contextlib
import datetime as _dt
import os
import platform
import statistics
import sys
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, NoReturn

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


class Parser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose bad arguments print one ``PROG: error:`` line and raise
    ``SystemExit(2)`` (no usage block), as every edgegym command does."""

    def error(self, message: str) -> NoReturn:
        fail(self.prog, message)


def fail(prog: str, message: str) -> NoReturn:
    """Print ``PROG: error: MESSAGE`` (one line) and raise ``SystemExit(2)``."""
    print(f"{prog}: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def names_in(flag: str, text: str, known: Iterable[str], what: str) -> list[str]:
    """The comma-separated names of ``text`` (``--families mig,dag``), each of ``known``, in
    the order given and each once.

    Raises:
        ValueError: Naming the flag, the first unknown name (or a name given twice, or no name
            at all) and the known ones, for a one-line ``error:``.
    """
    known = list(known)
    names = [n.strip() for n in text.split(",") if n.strip()]
    listed = ", ".join(known)
    if not names:
        raise ValueError(f"{flag} {text!r}: names no {what}; known: {listed}")
    for n in names:
        if n not in known:
            raise ValueError(f"{flag} {text}: unknown {what} {n!r}; known: {listed}")
        if names.count(n) > 1:
            raise ValueError(f"{flag} {text}: {what} {n!r} is named twice")
    return names


class Interrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM, :func:`edgegym.outputs.sigterm_as_interrupt`) in the middle of a
    benchmark: ``done`` holds what was measured before it, ``missing`` names the parts (sections,
    families, runs) that were not finished."""

    def __init__(self, done: dict[str, Any], missing: Sequence[str]) -> None:
        super().__init__("benchmark interrupted")
        self.done = done
        self.missing = list(missing)


def keep_partial(
    prog: str,
    path: Path | None,
    data: dict[str, Any],
    kept: int,
    missing: Sequence[str],
    what: tuple[str, str],
) -> int:
    """What an interrupted benchmark does: write ``data`` (``kept`` finished ``what``, named
    singular and plural: ``("section", "sections")``) to ``--json`` ``path``, marked
    ``"partial": {"stopped": "interrupted", "missing": [...]}``, and print one line saying what
    was kept (``PROG: interrupted; kept 2 finished sections in b.json (not finished: ...)``);
    return the exit code (130 for Ctrl-C, 143 for SIGTERM, :func:`edgegym.outputs.stopped`).
    Nothing finished, or no ``--json``: the line alone. A write that fails keeps the numbers in
    the rescue file the line names."""
    from edgegym.outputs import OutputWriteError, stopped, write_json

    word, code = stopped()
    if path is None or not kept:
        print(f"{prog}: {word}", file=sys.stderr)
        return code
    partial = {**data, "partial": {"stopped": word, "missing": list(missing)}}
    try:
        write_json(path, partial, "benchmark", flag="--json")
    except OutputWriteError as exc:  # the numbers are in the rescue file it names
        print(f"{prog}: {word}; {exc}", file=sys.stderr)
        return code
    left = f" (not finished: {', '.join(missing)})" if missing else ""
    noun = what[0] if kept == 1 else what[1]
    print(f"{prog}: {word}; kept {kept} finished {noun} in {path}{left}", file=sys.stderr)
    return code

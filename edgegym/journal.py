"""A run's finished jobs on disk, so that a long run that stops (Ctrl-C, a crash, a session
that ends) resumes where it stopped instead of starting over.

:meth:`edgegym.parallel.Runner.map` takes ``journal=PATH``: every finished job's result is
appended to ``PATH`` as one JSON line (flushed and synced before the next), and a later map
with the same journal runs only the jobs it does not hold. A job is named by a hash of its
JSON form, so the same job in another experiment or another order is found too. The first
line names the code that wrote the results (:func:`code_fingerprint`: every source and data
file of the installed package); a journal of other code is refused, because its results would
mix two versions of the simulator in one report. The journal is plain JSON: reading one never
runs code.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from edgegym.inputs import InputError, read_text
from edgegym.outputs import MARKER, CommandError, check_output_path

#: The :data:`edgegym.outputs.MARKER` kind of a journal's first line.
KIND = "journal"
#: Files whose content decides results (the fingerprint reads these).
SOURCE_SUFFIXES = (".py", ".yaml", ".yml", ".csv", ".json")
#: The packages whose files the fingerprint reads (the mapped folders of pyproject.toml too).
PACKAGES = ("edgegym", "edgegym.baselines", "edgegym.agents", "edgegym.scenario_data")


def _files(root: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__" and not d.startswith("."))
        for name in sorted(filenames):
            if name.endswith(SOURCE_SUFFIXES):
                yield Path(dirpath, name)


def code_fingerprint() -> str:
    """A hash of every source and data file of the installed edgegym (its own folders and the
    mapped ``baselines``, ``agents`` and ``scenarios``): equal exactly when they are."""
    import importlib

    h = hashlib.sha256()
    seen: set[Path] = set()
    for name in PACKAGES:
        for root in importlib.import_module(name).__path__:
            root = Path(root).resolve()
            for f in _files(root):
                real = f.resolve()
                if real in seen:  # a mapped folder reached through a link as well
                    continue
                seen.add(real)
                h.update(f"{name}/{f.relative_to(root).as_posix()}\0".encode())
                h.update(real.read_bytes())
                h.update(b"\0")
    return h.hexdigest()[:16]


def job_key(job: Any) -> str:
    """The name of a job in a journal: a hash of its JSON form (keys sorted)."""
    text = json.dumps(job, sort_keys=True, default=repr, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def _plain(value: Any) -> Any:
    """numpy scalars and arrays as Python numbers and lists (for ``json.dumps``)."""
    if hasattr(value, "tolist"):
        return value.tolist()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


class JournalError(CommandError):
    """A journal a run cannot resume from (one line: the file, why, and to remove it)."""


class Journal:
    """The finished jobs of one run in ``path`` (JSON lines; the first names the code).

    Args:
        path: The journal file (created on the first result).

    Raises:
        JournalError: ``path`` is not a place for a journal (a folder, a FIFO, a file edgegym
            did not write as a journal), or a journal of other code or an unreadable one (the
            message says to remove it to start over).
    """

    def __init__(self, path: str | Path) -> None:
        try:
            self.path = check_output_path(path, kind=KIND, flag="journal")
        except ValueError as exc:
            raise JournalError(str(exc)) from None
        self.fingerprint = code_fingerprint()
        self.done: dict[str, Any] = self._read() if self.path.exists() else {}

    def _read(self) -> dict[str, Any]:
        done: dict[str, Any] = {}
        try:
            lines = read_text(self.path, "journal", "journal").splitlines()
        except InputError as exc:
            raise JournalError(
                f"cannot resume from {exc}; remove it to start the run over"
            ) from None
        try:
            head = json.loads(lines[0]) if lines else {}
            if not isinstance(head, dict) or head.get(MARKER) != KIND:
                raise ValueError("its first line is not a journal's")
            if head.get("code") != self.fingerprint:
                raise ValueError(
                    f"it was written by other code (fingerprint {head.get('code')}, this "
                    f"code {self.fingerprint}); its results would mix two versions"
                )
            for n, line in enumerate(lines[1:], start=2):
                try:
                    entry = json.loads(line)
                    done[str(entry["key"])] = entry["result"]
                except (ValueError, KeyError, TypeError):
                    if n == len(lines):  # a last line cut short by a crash: run that job again
                        self._drop_last_line()
                        break
                    raise ValueError(f"line {n} is not a journal entry") from None
        except ValueError as exc:
            raise JournalError(
                f"cannot resume from {self.path}: {exc}; remove it to start the run over"
            ) from None
        return done

    def _drop_last_line(self) -> None:
        """Cut the file after its last complete line, so new entries start on a line."""
        data = self.path.read_bytes()
        with self.path.open("r+b") as fh:
            fh.truncate(data.rstrip(b"\n").rfind(b"\n") + 1)

    def __len__(self) -> int:
        return len(self.done)

    def get(self, job: Any) -> tuple[bool, Any]:
        """``(True, result)`` for a job the journal holds, else ``(False, None)``."""
        key = job_key(job)
        return (True, self.done[key]) if key in self.done else (False, None)

    def add(self, job: Any, result: Any) -> Any:
        """Append one finished job (synced to disk before returning); returns the result as
        the journal holds it (JSON data), so a resumed run and a fresh one see the same."""
        key = job_key(job)
        line = json.dumps({"key": key, "result": result}, default=_plain) + "\n"
        fresh = not self.path.exists() or self.path.stat().st_size == 0
        with self.path.open("a", encoding="utf-8") as fh:
            if fresh:
                fh.write(json.dumps({MARKER: KIND, "code": self.fingerprint}) + "\n")
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())
        self.done[key] = json.loads(line)["result"]
        return self.done[key]

    def remove(self) -> None:
        """Delete the journal (its run's results are saved elsewhere now)."""
        self.path.unlink(missing_ok=True)


__all__ = ["Journal", "code_fingerprint", "job_key"]

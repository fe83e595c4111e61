"""Trace file formats: reading counts-per-interval traces and Azure Functions 2019 files, and
writing the bundled synthetic Azure Functions sample.

* :func:`load_counts_trace` reads a counts-per-interval file (one integer per line, or a CSV
  with a ``count`` column) into a :class:`CountsTrace`;
* :func:`read_azure_functions` reads the public Azure Functions 2019 per-minute format
  (``invocations_per_function_md.anon.dNN.csv``) into an :class:`AzureFunctionsTable`, and
  :func:`load_azure_functions` selects and sums its rows;
* :func:`read_request_log` reads a per-request log (the Azure LLM inference trace 2023 that
  MIGRator cites as its Azure trace, or an Alibaba microservices call-graph table) into request
  times, and :func:`request_counts` bins them into counts per second;
* :func:`write_azure_functions_sample` writes the small synthetic file bundled as
  ``scenarios/traces/azure-functions-2019-sample.csv``.

The processes that replay them (:class:`~edgegym.workload.processes.TraceReplay`,
:class:`~edgegym.workload.processes.AzureFunctionsReplay`) live in
:mod:`edgegym.workload.processes`. Of edgegym this module imports only
:mod:`edgegym.workload.checks`.

Units: time in seconds, counts in requests.
"""

from __future__ import annotations

import array
import hashlib
import math
import numbers
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Annotated, NamedTuple

import numpy as np

from edgegym.inputs import quoted, read_text, token
from edgegym.workload.checks import Range, check

__all__ = [
    "AZURE_FUNCTIONS_ID_COLUMNS",
    "AZURE_FUNCTIONS_MINUTES",
    "MAX_COUNT",
    "MAX_REQUEST_LOG_SPAN_S",
    "REQUEST_LOG_FORMATS",
    "AzureFunctionsTable",
    "CountsTrace",
    "load_azure_functions",
    "load_counts_trace",
    "read_azure_functions",
    "read_request_log",
    "request_counts",
    "write_azure_functions_sample",
]


class CountsTrace(NamedTuple):
    """A counts-per-interval trace as read by :func:`load_counts_trace`."""

    counts: np.ndarray
    """int64, shape (n_trace_intervals,): requests in each trace interval."""
    interval_s: float | None
    """Trace interval length in seconds, or None when the file does not say."""


#: The identifying columns that start an Azure Functions 2019 invocation-count file.
AZURE_FUNCTIONS_ID_COLUMNS: tuple[str, ...] = ("HashOwner", "HashApp", "HashFunction", "Trigger")
#: Minute columns (``1`` .. ``1440``) of an Azure Functions 2019 invocation-count file.
AZURE_FUNCTIONS_MINUTES = 1440
#: Most requests a trace file may give, in one interval and over the whole file (counts
#: traces, Azure Functions files): 2**53, the largest count float64 holds exactly. No trace
#: is near it (replays are capped at 10^6 requests/s), and with it every int64 sum of a
#: trace's counts is exact (larger counts wrapped to negative sums, or failed with Python's
#: ``OverflowError``).
MAX_COUNT = 2**53
#: Longest time a per-request log may span, first to last request, in seconds: 10^7 s (about
#: 116 days; the public Azure and Alibaba logs cover hours to two weeks). Its requests are
#: counted per second in memory, so a span bounds that array (80 MB): a 29-byte log of two
#: requests 10^8 s apart took 2.5 GB, 10^12 s apart failed allocating terabytes.
MAX_REQUEST_LOG_SPAN_S = 10_000_000


def _check_total(counts: np.ndarray, where: str) -> None:
    """Refuse counts (each at most :data:`MAX_COUNT`) that add up to more than
    :data:`MAX_COUNT` (summed in float64, which cannot wrap)."""
    total = float(counts.sum(dtype=np.float64))
    if total > MAX_COUNT:
        raise ValueError(
            f"{where}: the counts add up to {total:.3g} requests, over the {MAX_COUNT:,} "
            "(2**53) a trace may hold"
        )


def _short(number: str) -> str:
    """A text that parsed as a number, as it is if short, else its length (:func:`token`)."""
    return number if len(number) <= 16 else token(number)


def _too_large(text: str, where: str) -> ValueError:
    """The error of a count over :data:`MAX_COUNT`."""
    return ValueError(
        f"{where}: count {token(text)} is too large (counts must be whole numbers from 0 to "
        f"2**53 = {MAX_COUNT:,})"
    )


# --------------------------------------------------------------------------------------------
# counts-per-interval traces
# --------------------------------------------------------------------------------------------

_INTERVAL_COMMENT = re.compile(r"^#\s*interval_s\s*[:=]\s*(\S+)\s*$", re.IGNORECASE)
_COUNT_COLUMNS = ("count", "counts")


def _parse_count(text: str, path: Path, lineno: int) -> int:
    try:
        value = int(text)
    except ValueError:
        try:
            as_float = float(text)
        except ValueError:
            as_float = math.nan
        if not (math.isfinite(as_float) and as_float.is_integer()):
            raise ValueError(
                f"{path}, line {lineno}: count {token(text)} is not an integer "
                "(counts must be whole numbers >= 0)"
            ) from None
        value = int(as_float)
    if value < 0:
        raise ValueError(
            f"{path}, line {lineno}: count {_short(str(value))} is negative (counts must be >= 0)"
        )
    if value > MAX_COUNT:
        raise _too_large(text, f"{path}, line {lineno}")
    return value


def _parse_interval(text: str, path: Path, lineno: int) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise ValueError(
            f"{path}, line {lineno}: interval_s {token(text)} is not a number of seconds > 0"
        )
    return value


def load_counts_trace(path: str | os.PathLike[str]) -> CountsTrace:
    """Read a counts-per-interval trace file.

    Two layouts are accepted (UTF-8 text; blank lines and ``#`` comments are ignored):

    * one non-negative integer per line;
    * CSV with a header row that has a ``count`` column, and optionally an ``interval_s``
      column (the same value on every row); other columns are ignored.

    The interval length may also be given by a comment line ``# interval_s: 60``.

    Args:
        path: The file.

    Returns:
        The counts (int64, shape ``(n,)``) and the interval length in seconds, or None if the
        file does not give one.

    Raises:
        FileNotFoundError: If the file does not exist (the message names it).
        ValueError: On a malformed file: non-integer or negative count, wrong number of columns,
            no ``count`` column, inconsistent ``interval_s``, or no counts at all; a count over
            :data:`MAX_COUNT`, or counts adding up to more. The message names the file and
            the line.
    """
    p = Path(path)
    text = read_text(p, "arrival trace file", "trace")
    parser = _CountsParser(p)
    lineno = 0
    for piece in _pieces(text):
        if parser.digits_only(piece):  # the bulk of a trace: whole lines of digits
            lineno += parser.bulk(piece)
            continue
        for raw in piece.splitlines():
            lineno += 1
            parser.line(raw.strip(), lineno)
    if not parser.counts:
        raise ValueError(
            f"{p}: no counts found (expected one integer per line, or a CSV with a header row "
            "containing a 'count' column)"
        )
    counts = np.array(parser.counts, dtype=np.int64)
    _check_total(counts, str(p))
    return CountsTrace(counts, parser.interval)


#: Characters per piece :func:`load_counts_trace` reads at a time.
_PIECE = 1 << 16
#: A piece of a counts trace that is whole lines of digits, each a count under 10**15.
_DIGIT_LINES = re.compile(r"[0-9\r\n]*")
_LONG_DIGITS = re.compile(r"[0-9]{16}")


def _pieces(text: str) -> Iterator[str]:
    """``text`` in pieces of about :data:`_PIECE` characters, each but the last ending with a
    ``\\n``: the lines of the pieces (``str.splitlines``) are the lines of ``text``."""
    start = 0
    while start < len(text):
        end = text.find("\n", start + _PIECE)
        end = len(text) if end < 0 else end + 1
        yield text[start:end]
        start = end


class _CountsParser:
    """The state of :func:`load_counts_trace` line by line: the layout (plain, or a CSV's
    columns from its header), the interval length and where it was given, the counts."""

    def __init__(self, p: Path) -> None:
        self.p = p
        self.interval: float | None = None
        self.interval_line = 0
        self.count_col: int | None = None  # None: plain layout (one integer per line)
        self.interval_col: int | None = None
        self.n_cols = 1
        self.first_data = True
        self.counts = array.array("q")  # int64, 8 bytes a count (a list of ints takes 36)

    def set_interval(self, value: float, lineno: int) -> None:
        if self.interval is not None and not math.isclose(value, self.interval, rel_tol=1e-9):
            raise ValueError(
                f"{self.p}, line {lineno}: interval_s {value:g} differs from {self.interval:g} "
                f"given on line {self.interval_line}; a trace has one interval length"
            )
        if self.interval is None:
            self.interval, self.interval_line = value, lineno

    def digits_only(self, piece: str) -> bool:
        """Whether ``piece`` is lines of digits only (each a count under 10**15, or blank)
        in a one-column layout: :meth:`bulk` reads it as :meth:`line` would, line by line."""
        return (
            not self.first_data
            and self.n_cols == 1
            and _DIGIT_LINES.fullmatch(piece) is not None
            and _LONG_DIGITS.search(piece) is None
        )

    def bulk(self, piece: str) -> int:
        """Add the counts of a :meth:`digits_only` piece; the number of its lines."""
        self.counts.extend(map(int, piece.split()))
        breaks = piece.count("\n") + piece.count("\r") - piece.count("\r\n")
        return breaks + (not piece.endswith(("\n", "\r")))

    def line(self, line: str, lineno: int) -> None:
        """One stripped line: blank, a comment (maybe giving the interval), a header or a row."""
        if not line:
            return
        if line.startswith("#"):
            match = _INTERVAL_COMMENT.match(line)
            if match:
                self.set_interval(_parse_interval(match.group(1), self.p, lineno), lineno)
            return
        line = line.split("#", 1)[0].strip()
        fields = [f.strip() for f in line.split(",")]
        if self.first_data:
            self.first_data = False
            try:
                float(fields[0])
            except ValueError:
                self.header(fields, lineno)
                return
        self.row(fields, lineno)

    def header(self, fields: list[str], lineno: int) -> None:
        """A CSV header: where the count (and the interval) columns are."""
        names = [f.lower() for f in fields]
        found = [c for c in _COUNT_COLUMNS if c in names]
        if not found:
            raise ValueError(
                f"{self.p}, line {lineno}: the header has no 'count' column "
                "(expected one integer per line, or a CSV header with a 'count' column)"
            )
        self.count_col = names.index(found[0])
        self.interval_col = names.index("interval_s") if "interval_s" in names else None
        self.n_cols = len(names)

    def row(self, fields: list[str], lineno: int) -> None:
        """A data row of the plain or the CSV layout."""
        p = self.p
        if self.count_col is None:
            if len(fields) != 1:
                raise ValueError(
                    f"{p}, line {lineno}: expected one integer per line, got {len(fields)} fields "
                    "(a CSV needs a header row with a 'count' column)"
                )
            self.counts.append(_parse_count(fields[0], p, lineno))
            return
        if len(fields) != self.n_cols:
            raise ValueError(
                f"{p}, line {lineno}: expected {self.n_cols} comma-separated columns as in the "
                f"header, got {len(fields)}"
            )
        self.counts.append(_parse_count(fields[self.count_col], p, lineno))
        if self.interval_col is not None:
            self.set_interval(_parse_interval(fields[self.interval_col], p, lineno), lineno)


# --------------------------------------------------------------------------------------------
# Azure Functions 2019 invocation counts
# --------------------------------------------------------------------------------------------

_FORMAT_HINT = "HashOwner,HashApp,HashFunction,Trigger,1,2,...,1440"
_DIGITS_ROW = re.compile(r"[0-9]+(?:,[0-9]+)*\Z")
_DIGITS = re.compile(r"[0-9]+\Z")
_SMALL_COUNT = re.compile(r"[0-9]{1,15}\Z")  # under 10**15 < MAX_COUNT


class AzureFunctionsTable(NamedTuple):
    """The rows of an Azure Functions 2019 invocation-count file (:func:`read_azure_functions`)."""

    path: Path
    """The file read."""
    owners: tuple[str, ...]
    """HashOwner of each row."""
    apps: tuple[str, ...]
    """HashApp of each row."""
    functions: tuple[str, ...]
    """HashFunction of each row."""
    triggers: tuple[str, ...]
    """Trigger of each row (http, timer, queue, event, storage, orchestration, others)."""
    counts: np.ndarray
    """int64, shape ``(n_rows, 1440)``: invocations in each minute of the day, per row."""
    lines: tuple[int, ...]
    """Line number (1-based) of each row in the file."""

    def select(self, function: int | str | None = None, aggregate: str = "sum") -> np.ndarray:
        """Per-minute counts of some rows.

        Args:
            function: None for every row; an ``int`` for one row (0-based, in file order); a
                ``str`` for the rows whose HashFunction equals it (case-insensitive; several
                rows may share a function hash across apps).
            aggregate: ``"sum"``: add the selected rows into one series, shape ``(1440,)``;
                ``"row"``: keep them, shape ``(n_selected, 1440)``.

        Returns:
            int64 per-minute counts.

        Raises:
            ValueError: On an unknown hash, an index out of range, a ``function`` of another
                type, an unknown ``aggregate``, or (``"sum"``) rows adding up to more than
                :data:`MAX_COUNT`.
        """
        n = len(self.functions)
        if aggregate not in ("sum", "row"):
            raise ValueError(f"aggregate: must be 'sum' or 'row', got {quoted(aggregate)}")
        if function is None:
            rows = self.counts
        elif isinstance(function, numbers.Integral) and not isinstance(function, bool):
            i = int(function)
            if not 0 <= i < n:
                raise ValueError(
                    f"function: row index {i} out of range; {self.path} has {n} function rows "
                    f"(0 to {n - 1})"
                )
            rows = self.counts[i : i + 1]
        elif isinstance(function, str) and function.strip():
            want = function.strip().lower()
            hit = [i for i, h in enumerate(self.functions) if h.lower() == want]
            if not hit:
                raise ValueError(
                    f"function: unknown function hash {quoted(function)}: no row of {self.path} "
                    f"has that HashFunction (column 3; {n} row{'s' * (n != 1)})"
                )
            rows = self.counts[hit]
        else:
            raise ValueError(
                "function: must be a HashFunction string, a row index >= 0, or None for all "
                f"rows, got {quoted(function)}"
            )
        if aggregate == "row":
            return rows.copy()
        _check_total(rows, f"function: the rows of {self.path}")
        return rows.sum(axis=0)


def _bad_count(text: str, path: Path, lineno: int, minute: int) -> int:
    """Parse a count that failed the fast path, or raise naming the file, line and minute."""
    where = f"{path}, line {lineno}, minute {minute}"
    if re.fullmatch(r"-[0-9]+", text):
        raise ValueError(f"{where}: count {_short(text)} is negative (counts must be >= 0)")
    if _DIGITS.match(text):
        number = int(text)
        if number > MAX_COUNT:
            raise _too_large(text, where)
        return number
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value.is_integer() and value >= 0):
        if math.isfinite(value) and value < 0:
            raise ValueError(f"{where}: count {_short(text)} is negative (counts must be >= 0)")
        raise ValueError(
            f"{where}: count {token(text)} is not an integer (counts must be whole numbers >= 0)"
        )
    if value > MAX_COUNT:
        raise _too_large(text, where)
    return int(value)


def read_azure_functions(path: str | os.PathLike[str]) -> AzureFunctionsTable:
    """Read an Azure Functions 2019 invocation-count file (``invocations_per_function_md``).

    The format: a CSV header ``HashOwner,HashApp,HashFunction,Trigger,1,2,...,1440`` and one row
    per function with its four ids and 1440 per-minute invocation counts (one day). Blank lines
    and lines starting with ``#`` are skipped (an extension; the public files have none).

    Args:
        path: The file.

    Returns:
        The table of rows.

    Raises:
        FileNotFoundError: If the file does not exist (the message names it).
        ValueError: On an empty file, a header without the four id columns or without exactly
            the minute columns ``1`` .. ``1440``, a row with the wrong number of columns, a count
            that is not a whole number >= 0 or is over :data:`MAX_COUNT` (or counts adding up
            to more), or no rows. The message names the file and line.
    """
    p = Path(path)
    text = read_text(p, "Azure Functions trace file", "trace")

    n_id = len(AZURE_FUNCTIONS_ID_COLUMNS)
    n_cols = n_id + AZURE_FUNCTIONS_MINUTES
    header_line = 0
    ids: list[list[str]] = []
    rows: list[list[int]] = []
    lines: list[int] = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        fields = [f.strip() for f in line.split(",")]
        if not header_line:
            _check_header(fields, p, lineno)
            header_line = lineno
            continue
        if len(fields) != n_cols:
            raise ValueError(
                f"{p}, line {lineno}: expected {n_cols} comma-separated columns (4 ids and "
                f"{AZURE_FUNCTIONS_MINUTES} minute counts, as in the header), got {len(fields)} "
                f"({len(fields) - n_id} minute columns)"
            )
        minutes = fields[n_id:]
        row = list(map(int, minutes)) if _DIGITS_ROW.match(",".join(minutes)) else None
        if row is None or max(row) > MAX_COUNT:
            row = [
                int(f) if _SMALL_COUNT.match(f) else _bad_count(f, p, lineno, m)
                for m, f in enumerate(minutes, start=1)
            ]
        rows.append(row)
        ids.append(fields[:n_id])
        lines.append(lineno)
    if not header_line:
        raise ValueError(
            f"{p}: empty file (expected a header row {_FORMAT_HINT} and one row per function)"
        )
    if not rows:
        raise ValueError(f"{p}: no function rows after the header on line {header_line}")
    cols = list(zip(*ids, strict=True))
    counts = np.asarray(rows, dtype=np.int64)
    _check_total(counts, str(p))
    return AzureFunctionsTable(
        path=p,
        owners=tuple(cols[0]),
        apps=tuple(cols[1]),
        functions=tuple(cols[2]),
        triggers=tuple(cols[3]),
        counts=counts,
        lines=tuple(lines),
    )


def _check_header(fields: list[str], path: Path, lineno: int) -> None:
    where = f"{path}, line {lineno}"
    for i, want in enumerate(AZURE_FUNCTIONS_ID_COLUMNS):
        got = fields[i] if i < len(fields) else None
        if got is None or got.lower() != want.lower():
            found = "missing" if got is None else token(got)
            raise ValueError(
                f"{where}: header column {i + 1} is {found}, expected {want!r} (missing header "
                f"column {want!r}; the header must be {_FORMAT_HINT})"
            )
    minutes = fields[len(AZURE_FUNCTIONS_ID_COLUMNS) :]
    if len(minutes) != AZURE_FUNCTIONS_MINUTES:
        raise ValueError(
            f"{where}: header has {len(minutes)} minute columns, expected "
            f"{AZURE_FUNCTIONS_MINUTES} (1 to {AZURE_FUNCTIONS_MINUTES}, one per minute of the "
            "day)"
        )
    for m, name in enumerate(minutes, start=1):
        if name != str(m):
            raise ValueError(
                f"{where}: header minute column {len(AZURE_FUNCTIONS_ID_COLUMNS) + m} is "
                f"{token(name)}, expected '{m}' (minute columns must be 1 to "
                f"{AZURE_FUNCTIONS_MINUTES} in order)"
            )


def load_azure_functions(
    path: str | os.PathLike[str],
    function: int | str | None = None,
    aggregate: str = "sum",
) -> np.ndarray:
    """Per-minute invocation counts from an Azure Functions 2019 file.

    Args:
        path: The file (see :func:`read_azure_functions` for the format).
        function: None for every function, a row index (0-based, in file order) or a
            HashFunction (case-insensitive).
        aggregate: ``"sum"``: one series, shape ``(1440,)``; ``"row"``: one series per selected
            row, shape ``(n_selected, 1440)``.

    Returns:
        int64 per-minute counts.

    Raises:
        FileNotFoundError: If the file does not exist.
        ValueError: If the file is malformed (the message names the file and line), or the
            function is unknown (the message names the file and the hash or index).
    """
    return read_azure_functions(path).select(function, aggregate)


# --------------------------------------------------------------------------------------------
# the bundled sample
# --------------------------------------------------------------------------------------------

# (owner, app, trigger, kind) of the sample's six functions; see _sample_minutes.
_SAMPLE_FUNCTIONS: tuple[tuple[int, int, str, str], ...] = (
    (0, 0, "http", "api"),
    (0, 0, "http", "api-small"),
    (0, 1, "timer", "cron-5min"),
    (1, 2, "timer", "cron-1min"),
    (1, 2, "queue", "bursty"),
    (2, 3, "event", "sparse"),
)


def _fake_hash(seed: int, what: str, index: int) -> str:
    """A 64-hex-digit id like the public trace's, derived (sha256) from the seed: not real."""
    return hashlib.sha256(
        f"edgegym synthetic sample seed={seed} {what}={index}".encode()
    ).hexdigest()


def _poisson_inverse(mean: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Poisson draws by CDF inversion of uniforms (stable across numpy versions)."""
    k_max = int(np.ceil(mean.max() + 12.0 * np.sqrt(mean.max()) + 12.0))
    pmf = np.exp(-mean)
    cdf = pmf.copy()
    out = np.zeros(mean.shape, dtype=np.int64)
    for k in range(k_max):
        out += u > cdf
        pmf = pmf * mean / (k + 1)
        cdf = cdf + pmf
    return out


def _sample_minutes(kind: str, rng: np.random.Generator) -> np.ndarray:
    """One synthetic function's 1440 per-minute counts, from uniform draws only."""
    minute = np.arange(AZURE_FUNCTIONS_MINUTES, dtype=np.float64)
    # diurnal shape: low at 04:00, high at 16:00 (mean 1 over the day)
    day = 1.0 + 0.6 * np.sin(2.0 * math.pi * (minute - 600.0) / AZURE_FUNCTIONS_MINUTES)
    u = rng.random(AZURE_FUNCTIONS_MINUTES)
    if kind == "api":
        return _poisson_inverse(30.0 * day, u)
    if kind == "api-small":
        return _poisson_inverse(8.0 * day, u)
    if kind == "cron-5min":
        return ((minute + 1) % 5 == 0).astype(np.int64)
    if kind == "cron-1min":
        return 1 + (u < 0.02).astype(np.int64)  # a retry now and then
    if kind == "bursty":
        # on/off queue drain: bursts start with prob 1/90 per minute and last ~12 minutes
        v = rng.random(AZURE_FUNCTIONS_MINUTES)
        on = np.zeros(AZURE_FUNCTIONS_MINUTES, dtype=bool)
        state = False
        for m in range(AZURE_FUNCTIONS_MINUTES):
            state = (v[m] >= 1.0 / 12.0) if state else (v[m] < 1.0 / 90.0)
            on[m] = state
        return _poisson_inverse(np.where(on, 45.0, 0.5), u)
    if kind == "sparse":
        batch = (minute >= 120) & (minute < 135)  # nightly batch at 02:00
        return _poisson_inverse(np.where(batch, 25.0, 0.3), u)
    raise ValueError(f"unknown sample function kind {kind!r}")


def write_azure_functions_sample(path: str | os.PathLike[str], seed: int = 0) -> Path:
    """Write a small synthetic file in the Azure Functions 2019 invocation-count format.

    Six functions of four apps of three owners (two http APIs with a diurnal load, two timers,
    a bursty queue consumer and a sparse event handler with a nightly batch), 1440 minutes
    each, about 43 invocations per minute in all. The ids are sha256 digests of the seed, not
    real hashes, and the counts are made up: the file only exercises the format. Only uniform
    draws of ``numpy.random.default_rng(seed)`` are used, so the bytes do not depend on numpy's
    samplers.

    Args:
        path: Output file (overwritten; parent directories are created).
        seed: Seed of the counts and the ids.

    Returns:
        The path written.
    """
    rng = np.random.default_rng(check(seed, Annotated[int, Range(0)], "seed"))
    header = ",".join(
        [*AZURE_FUNCTIONS_ID_COLUMNS, *(str(m) for m in range(1, AZURE_FUNCTIONS_MINUTES + 1))]
    )
    out = [header]
    for i, (owner, app, trigger, kind) in enumerate(_SAMPLE_FUNCTIONS):
        counts = _sample_minutes(kind, rng)
        ids = [
            _fake_hash(seed, "owner", owner),
            _fake_hash(seed, "app", app),
            _fake_hash(seed, "function", i),
            trigger,
        ]
        out.append(",".join([*ids, *map(str, counts.tolist())]))
    from edgegym.outputs import write_atomic

    return write_atomic(path, "\n".join(out) + "\n")


# --------------------------------------------------------------------------------------------
# per-request logs: replay the real Azure and Alibaba traces when a user has them
# --------------------------------------------------------------------------------------------

#: Per-request log formats :func:`read_request_log` reads -> (time column, what it holds).
REQUEST_LOG_FORMATS: dict[str, tuple[str, str]] = {
    "azure-llm": (
        "TIMESTAMP",
        "a date and time 'YYYY-MM-DD HH:MM:SS[.fraction]' per request (Azure LLM inference "
        "trace 2023, AzurePublicDataset AzureLLMInferenceTrace_code.csv / _conv.csv: header "
        "TIMESTAMP,ContextTokens,GeneratedTokens; MIGRator's Azure trace [88])",
    ),
    "alibaba-callgraph": (
        "timestamp",
        "milliseconds from the trace start per call, with a traceid column; a request is a "
        "traceid, counted once at its earliest call (Alibaba clusterdata "
        "cluster-trace-microservices-v2021 MSCallGraph: header "
        "[,]traceid,timestamp,rpcid,um,rpctype,dm,interface,rt; MIGRator's Alibaba trace [87])",
    ),
}

_DATETIME = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?$")


def _parse_datetime(text: str, path: Path, lineno: int) -> float:
    """Seconds since the epoch (UTC, naive) of ``YYYY-MM-DD HH:MM:SS[.fraction]``."""
    import datetime as _dt

    m = _DATETIME.match(text.strip().strip('"'))
    if m is None:
        raise ValueError(
            f"{path}, line {lineno}: TIMESTAMP {token(text)} is not a date and time "
            "'YYYY-MM-DD HH:MM:SS[.fraction]'"
        )
    y, mo, d, h, mi, sec = (int(g) for g in m.groups()[:6])
    try:
        base = _dt.datetime(y, mo, d, h, mi, sec, tzinfo=_dt.timezone.utc).timestamp()
    except ValueError:
        raise ValueError(
            f"{path}, line {lineno}: TIMESTAMP {token(text)} is not a valid date and time"
        ) from None
    frac = m.group(7)
    return base + (int(frac) / 10 ** len(frac) if frac else 0.0)


def read_request_log(path: str | os.PathLike[str], fmt: str) -> np.ndarray:
    """Request times of a per-request log, in seconds from its first request, sorted.

    Formats (:data:`REQUEST_LOG_FORMATS`): ``azure-llm`` (a ``TIMESTAMP`` column of dates and
    times; every row is a request) and ``alibaba-callgraph`` (a ``timestamp`` column in
    milliseconds and a ``traceid`` column; every distinct traceid is a request, at its earliest
    timestamp). Other columns are ignored; blank lines and ``#`` lines are skipped. Files are
    read whole (up to 1 GiB): cut a large Alibaba table to the services and hours you replay
    first.

    Args:
        path: The file.
        fmt: ``"azure-llm"`` or ``"alibaba-callgraph"``.

    Returns:
        float64 seconds, shape (requests,), starting at 0.

    Raises:
        FileNotFoundError: If the file does not exist (the message names the path).
        ValueError: On an unknown format, an empty file, a header without the format's columns,
            a row with too few columns, a time that does not parse, no rows, or requests
            spanning more than :data:`MAX_REQUEST_LOG_SPAN_S`; the message names the file (and
            the line).
    """
    if fmt not in REQUEST_LOG_FORMATS:
        raise ValueError(
            f"format: unknown request log format {fmt!r}; allowed: "
            + ", ".join(REQUEST_LOG_FORMATS)
        )
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{p}: request log file not found ({fmt} format)")
    text = read_text(p, "request log file", "trace")
    column, what = REQUEST_LOG_FORMATS[fmt]
    header: list[str] | None = None
    col = trace_col = -1
    times: list[float] = []
    traces: list[str] = []
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        fields = [f.strip().strip('"') for f in line.split(",")]
        if header is None:
            header = fields
            col, trace_col = _log_columns(fields, fmt, f"{p}, line {lineno}")
            continue
        need = max(col, trace_col) + 1
        if len(fields) < need:
            raise ValueError(
                f"{p}, line {lineno}: expected at least {need} comma-separated columns (as in "
                f"the header), got {len(fields)}"
            )
        if fmt == "azure-llm":
            times.append(_parse_datetime(fields[col], p, lineno))
        else:
            try:
                ms = float(fields[col])
            except ValueError:
                ms = math.nan
            if not math.isfinite(ms):
                raise ValueError(
                    f"{p}, line {lineno}: timestamp {token(fields[col])} is not a number of "
                    "milliseconds"
                )
            times.append(ms / 1000.0)
            traces.append(fields[trace_col])
    if header is None:
        raise ValueError(
            f"{p}: empty file (expected a header with {column!r} and one row per "
            f"request; the {fmt} format: {what})"
        )
    if not times:
        raise ValueError(f"{p}: no request rows after the header")
    t = np.asarray(times, dtype=np.float64)
    if fmt == "alibaba-callgraph":
        t = _first_of_each_trace(t, np.asarray(traces))
    t = np.sort(t)
    span = float(t[-1] - t[0])
    if not span <= MAX_REQUEST_LOG_SPAN_S:  # an infinite span too
        raise ValueError(
            f"{p}: the requests span {_seconds(span)}, over the {MAX_REQUEST_LOG_SPAN_S:,} s "
            f"({MAX_REQUEST_LOG_SPAN_S / 86400:.0f} days) a request log may cover; cut it to "
            "the days you replay"
        )
    return t - t[0]


def _seconds(span: float) -> str:
    """A time span in a message: ``1e+08 s (1.16e+03 days)``."""
    if not math.isfinite(span):
        return "more than 1e308 s"
    return f"{span:.3g} s ({span / 86400:.3g} days)"


def _log_columns(header: list[str], fmt: str, where: str) -> tuple[int, int]:
    """The time column of a request log's header and its trace-id column (-1 where the format
    has none).

    Raises:
        ValueError: A column the format needs is missing (``where`` names file and line).
    """
    column, what = REQUEST_LOG_FORMATS[fmt]
    needed = [column, "traceid"] if fmt == "alibaba-callgraph" else [column]
    for name in needed:
        if name not in header:
            raise ValueError(
                f"{where}: the header has no {name!r} column (the {fmt} format: {what})"
            )
    return header.index(column), header.index("traceid") if len(needed) > 1 else -1


def _first_of_each_trace(t: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """The earliest time of every distinct trace id: one request per trace."""
    order = np.lexsort((t, ids))  # by traceid, then time
    first = np.ones(order.size, dtype=bool)
    first[1:] = ids[order][1:] != ids[order][:-1]
    return t[order][first]


def request_counts(times: np.ndarray, interval_s: float = 1.0) -> np.ndarray:
    """Requests per interval of request times (seconds from 0), as int64 counts; the last
    interval is the one that holds the last request.

    Raises:
        ValueError: If ``interval_s`` is not > 0, a time is negative or not finite, or the
            times span more than :data:`MAX_REQUEST_LOG_SPAN_S` intervals (the counts are an
            array of one entry per interval).
    """
    interval_s = float(check(interval_s, Annotated[float, Range(0, lo_open=True)], "interval_s"))
    t = np.asarray(times, dtype=np.float64)
    if t.size and (not np.all(np.isfinite(t)) or t.min() < 0):
        raise ValueError("times: must be finite seconds >= 0")
    if not t.size:
        return np.zeros(0, dtype=np.int64)
    last = float(t.max()) / interval_s
    if not last <= MAX_REQUEST_LOG_SPAN_S:  # checked before the cast to int64
        raise ValueError(
            f"times: the last request is {last:.3g} intervals of {interval_s:g} s after 0; at "
            f"most {MAX_REQUEST_LOG_SPAN_S:,} intervals"
        )
    bins = np.floor(t / interval_s).astype(np.int64)
    return np.bincount(bins, minlength=int(bins.max()) + 1).astype(np.int64)

"""Progress on long work: a tqdm bar on a terminal, and a plain line every 30 s elsewhere.

Training, evaluation, the leaderboard, behaviour cloning and the reproductions' parallel maps
all report through :func:`progress_bar`. On a terminal it is a tqdm bar. When stderr is a file
or a pipe (CI logs, ``nohup``, a cluster job) a bar would be one line rewritten with carriage
returns, or nothing at all, so instead one plain line is printed every
:data:`INTERVAL_S` seconds (``EDGEGYM_PROGRESS_S`` overrides it): done and total, the rate,
the time left and the latest status (for training, the latest evaluation against the
published scheduler), and a last line when the work ends if any line was printed before. Work
shorter than the interval prints nothing.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any, TextIO

__all__ = ["INTERVAL_S", "LineProgress", "progress_bar"]

#: Seconds between two progress lines when stderr is not a terminal.
INTERVAL_S = 30.0


def _interval() -> float:
    try:
        return max(0.0, float(os.environ.get("EDGEGYM_PROGRESS_S", INTERVAL_S)))
    except ValueError:
        return INTERVAL_S


def _clock(seconds: float) -> str:
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    return f"{h}:{rest // 60:02d}:{rest % 60:02d}" if h else f"{rest // 60}:{rest % 60:02d}"


class LineProgress:
    """tqdm's interface (``update``, ``set_postfix_str``, ``write``, ``close``, ``n``) printing
    one plain line every ``interval`` seconds."""

    def __init__(
        self,
        total: int | None,
        desc: str,
        unit: str,
        initial: int = 0,
        file: TextIO | None = None,
        interval: float | None = None,
    ) -> None:
        self.total, self.desc, self.unit = total, desc, unit
        self.n = self.initial = int(initial)
        self.file = file if file is not None else sys.stderr
        self.interval = _interval() if interval is None else float(interval)
        self.postfix = ""
        self.t0 = self.last = time.monotonic()
        self.printed = 0
        self.closed = False

    def __enter__(self) -> LineProgress:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def update(self, n: int = 1) -> None:
        self.n += int(n)
        now = time.monotonic()
        if now - self.last >= self.interval:
            self._line(now)

    def set_postfix_str(self, s: str = "", refresh: bool = True) -> None:
        self.postfix = str(s)

    def set_description(self, desc: str | None = None, refresh: bool = True) -> None:
        self.desc = desc or ""

    def refresh(self) -> None:
        """Nothing to redraw: lines are printed on :meth:`update`."""

    def write(self, s: str, file: TextIO | None = None, end: str = "\n") -> None:
        print(s, file=file if file is not None else self.file, end=end, flush=True)

    def close(self) -> None:
        if not self.closed and self.printed:
            self._line(time.monotonic(), last=True)
        self.closed = True

    def _line(self, now: float, last: bool = False) -> None:
        elapsed = max(now - self.t0, 1e-9)
        rate = (self.n - self.initial) / elapsed
        parts = [f"{self.n:,}" + (f"/{self.total:,}" if self.total else "") + f" {self.unit}"]
        if self.total:
            parts[0] += f" ({100 * self.n / self.total:.0f}%)"
        parts.append(f"{rate:.3g} {self.unit}/s")
        if last:
            parts.append(f"done in {_clock(elapsed)}")
        elif self.total and rate > 0:
            parts.append(
                f"{_clock(elapsed)} elapsed, about {_clock((self.total - self.n) / rate)} left"
            )
        if self.postfix:
            parts.append(self.postfix)
        print(f"{self.desc}: " + ", ".join(parts), file=self.file, flush=True)
        self.last = now
        self.printed += 1


def progress_bar(
    total: int | None,
    desc: str,
    unit: str = "it",
    progress: bool = True,
    initial: int = 0,
    file: TextIO | None = None,
    **tqdm_options: Any,
) -> Any:
    """A tqdm bar on a terminal, a :class:`LineProgress` elsewhere, nothing without ``progress``.

    Args:
        total: Units of work (``None``: unknown).
        desc: What is being done ("train", "evaluate").
        unit: The unit's name ("step", "ep").
        progress: ``False`` hides it (a disabled tqdm bar, same interface).
        initial: Units already done (a resumed run).
        file: Where it writes (default stderr).
        tqdm_options: Passed to tqdm on a terminal (``position``, ``dynamic_ncols``, ...).
    """
    from tqdm.auto import tqdm

    out = file if file is not None else sys.stderr
    if not progress:
        return tqdm(total=total, initial=initial, desc=desc, unit=unit, disable=True, file=out)
    isatty = getattr(out, "isatty", None)
    if callable(isatty) and isatty():
        return tqdm(total=total, initial=initial, desc=desc, unit=unit, file=out, **tqdm_options)
    return LineProgress(total, desc, unit, initial=initial, file=out)

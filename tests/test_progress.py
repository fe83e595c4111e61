"""Progress off a terminal (edgegym/progress.py): plain lines at the interval, none for short
work, none when hidden; a bar on a terminal."""

from __future__ import annotations

import io

from edgegym.evaluation import evaluate
from edgegym.progress import LineProgress, progress_bar


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_off_a_terminal_a_line_per_interval_with_rate_eta_and_status():
    out = io.StringIO()
    bar = LineProgress(100, "train", "step", initial=20, file=out, interval=0.0)
    bar.set_postfix_str("eval 7.51 vs thief 7.43")
    bar.update(30)
    bar.close()
    lines = out.getvalue().splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("train: 50/100 step (50%), ") and "left" in lines[0]
    assert lines[0].endswith("eval 7.51 vs thief 7.43")
    assert "done in" in lines[1]


def test_work_shorter_than_the_interval_prints_nothing():
    out = io.StringIO()
    with LineProgress(10, "evaluate", "ep", file=out, interval=3600) as bar:
        bar.update(10)
    assert out.getvalue() == ""


def test_the_choice_follows_the_stream_and_the_flag():
    assert isinstance(progress_bar(5, "x", progress=True, file=io.StringIO()), LineProgress)
    tty = progress_bar(5, "x", progress=True, file=_Tty())
    assert not isinstance(tty, LineProgress) and hasattr(tty, "update")
    hidden = progress_bar(5, "x", progress=False, file=io.StringIO())
    assert not isinstance(hidden, LineProgress) and hidden.disable


def test_evaluate_reports_lines_through_it(monkeypatch, capsys):
    monkeypatch.setenv("EDGEGYM_PROGRESS_S", "0")
    evaluate("edgegym/EnergyFairShare-v0", ["etf", "tf"], scenario="etf-tx2-arrivals",
             episodes=2, overrides={"quanta": 3})  # fmt: skip
    err = capsys.readouterr().err.splitlines()
    assert any(line.startswith("evaluate: 4/4 ep (100%)") for line in err)
    assert err[-1].startswith("evaluate: 4/4 ep") and "done in" in err[-1]

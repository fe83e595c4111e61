"""Every command in README.md and docs/ works as written: each ``bash`` and ``python`` block is
tagged ``run`` (run here), ``long`` or ``gpu`` (too long or needing a GPU: every ``edgegym`` and
``python -m`` command in it must parse: the CLI's own parser for ``edgegym ...``, ``--help`` for
a module), or, for a piece of a larger Python program, ``fragment`` (must compile).

The ``run`` blocks are kept small: together well under a minute on 2 cores (pytest's
``--durations`` shows it). ``docs/own-scheduler.md``'s ``run`` blocks are run through
``edgegym evaluate`` by ``tests/test_own_scheduler.py``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import runpy
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), ROOT / "CONTRIBUTING.md",
         ROOT / "tests" / "golden" / "README.md"]  # fmt: skip
TAGS = {"bash": ("run", "long", "gpu"), "python": ("run", "long", "gpu", "fragment")}
RUN_ELSEWHERE = {"own-scheduler.md"}  # its run blocks: tests/test_own_scheduler.py
FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```", flags=re.M | re.S)


def _blocks() -> list[tuple[str, str, str, str]]:
    """(page, language, tag, code) of every bash and python block (and of any block whose
    first line is a command, so an untagged command block is caught)."""
    out = []
    for page in PAGES:
        for info, code in FENCE.findall(page.read_text()):
            words = info.split()
            lang = words[0] if words else ""
            if not lang and re.match(r"(edgegym |python3? -m |pip )", code):
                lang = "bash"
            if lang in TAGS:
                tag = words[1] if len(words) > 1 else ""
                out.append((str(page.relative_to(ROOT)), lang, tag, code))
    return out


BLOCKS = _blocks()


def _ids(blocks):
    seen: dict[str, int] = {}
    out = []
    for page, lang, tag, _ in blocks:
        key = f"{page}:{lang}-{tag}"
        seen[key] = seen.get(key, 0) + 1
        out.append(f"{key}-{seen[key]}")
    return out


def test_every_command_block_is_tagged():
    bad = [(p, lang, tag) for p, lang, tag, _ in BLOCKS if tag not in TAGS[lang]]
    assert not bad, f"blocks without a run/long/gpu tag: {bad}"
    assert sum(tag == "run" for _, _, tag, _ in BLOCKS) >= 5


def _commands(code: str) -> list[list[str]]:
    """The shell commands of a block: continuation lines joined, heredoc bodies skipped,
    comments dropped, ``&&`` chains split."""
    out, lines, heredoc = [], code.replace("\\\n", " ").splitlines(), None
    for line in lines:
        if heredoc is not None:
            heredoc = None if line.strip() == heredoc else heredoc
            continue
        if m := re.search(r"<<\s*'?(\w+)'?", line):
            heredoc = m.group(1)
        for part in line.split("&&"):
            words = shlex.split(part, comments=True)
            if words:
                out.append(words)
    return out


class _Parsed(Exception):
    """Raised once a module's argument parser has read the documented arguments."""


def _parses(words: list[str]) -> None:
    """``edgegym ...`` through the CLI's parser; ``python -m MOD ARGS`` through MOD's own
    parser with the documented ``ARGS`` (stopped once they parse, before any work), and
    ``MOD --help`` prints a usage."""
    if words[0] == "edgegym":
        from edgegym.cli import build_parser

        build_parser().parse_args(words[1:])  # SystemExit(2) on an unknown flag or bad value
    elif words[:2] == ["python", "-m"] and len(words) > 2:
        real = argparse.ArgumentParser.parse_args

        def parsed(self, *a, **k):
            real(self, *a, **k)  # SystemExit(2) on an unknown flag or bad value
            raise _Parsed

        ours = words[2].split(".")[0] in ("edgegym", "benchmarks")  # not pytest's own
        for args in (["--help"], words[3:]) if ours else (["--help"],):
            argv, out, err = sys.argv, io.StringIO(), io.StringIO()
            sys.argv = [words[2], *args]
            try:
                with (
                    contextlib.redirect_stdout(out),
                    contextlib.redirect_stderr(err),
                    pytest.MonkeyPatch.context() as mp,
                ):
                    if args != ["--help"]:
                        mp.setattr(argparse.ArgumentParser, "parse_args", parsed)
                    runpy.run_module(words[2], run_name="__main__", alter_sys=True)
                stop: BaseException | None = None
            except (SystemExit, _Parsed) as exc:
                stop = exc
            finally:
                sys.argv = argv
            if args == ["--help"]:
                assert isinstance(stop, SystemExit) and stop.code in (0, None), words
                assert "usage" in out.getvalue().lower(), words
            else:  # parsed, or (no parser run: a bare module) nothing refused
                assert isinstance(stop, _Parsed) or stop is None, (words, err.getvalue()[-500:])


LONG = [b for b in BLOCKS if b[1] == "bash" and b[2] in ("long", "gpu")]


@pytest.mark.parametrize("block", LONG, ids=_ids(LONG))
def test_long_and_gpu_commands_parse(block):
    for words in _commands(block[3]):
        _parses(words)


FRAGMENTS = [b for b in BLOCKS if b[1] == "python" and b[2] != "run"]


@pytest.mark.parametrize("block", FRAGMENTS, ids=_ids(FRAGMENTS))
def test_python_that_is_not_run_compiles(block):
    compile(block[3], block[0], "exec")


RUN = [b for b in BLOCKS if b[2] == "run" and Path(b[0]).name not in RUN_ELSEWHERE]


@pytest.mark.parametrize("block", RUN, ids=_ids(RUN))
def test_run_blocks_run_as_written(block, tmp_path):
    page, lang, _, code = block
    if lang == "python":
        cmd = [sys.executable, "-c", code]
    else:
        cmd = ["bash", "-euo", "pipefail", "-c", code]
    done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"{page}:\n{code}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"

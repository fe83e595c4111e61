"""Input files are untrusted: read only regular files of bounded size, and never echo them.

Scenario files, trace files, hyperparameter configs and run records come from other people.
:func:`read_text` is the one way edgegym reads such a file: it refuses, before opening, a path
that is not a regular file (``/dev/zero`` would be read without bound, a FIFO would block
forever), refuses a file over its kind's cap (the whole file is read into memory), and reads
at most the cap even if the file grows meanwhile. :func:`token` is how a parser quotes a value
from such a file in an error message: short numeric-looking values as they are, anything else
by its length only, so a message never leaks a file's content (a trace ``path:`` may name any
readable file). :func:`load_yaml` is how such a file's YAML is parsed: ``yaml.safe_load``'s
types, but a key given twice in one mapping is an error (PyYAML keeps the last one silently)
and aliases may not expand to more than :data:`MAX_ALIAS_VALUES` values (a "billion laughs"
file of a few kB otherwise expands to billions of values wherever it is walked).
"""

from __future__ import annotations

import itertools
import json
import os
import re
import reprlib
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

_MB = 1 << 20

#: Largest file of each kind read, in bytes. The caps sit far above any file of that kind
#: edgegym ships or writes, and low enough that reading one whole stays cheap:
#: - scenario: the largest bundled scenario is 40 kB. YAML is parsed in pure Python at about
#:   25-45 s and 0.3-0.5 GB per MB of short values, so the cap is 1 MB (a 16 MB file took
#:   minutes and gigabytes).
#: - config: hyperparameter files and training configs are under 8 kB; a run's
#:   ``evaluations.json`` (JSON, parsed fast) grows by about 250 bytes per evaluation, so 2 MB
#:   holds some 8,000 evaluations.
#: - trace: a counts trace is parsed a piece at a time into int64 counts (about 5 bytes of
#:   memory per byte of file), an Azure Functions file into Python ints (about 30 bytes each);
#:   one day of the Azure Functions 2019 invocation counts is a few hundred MB of CSV.
#: - result: a JSON output read back (an evaluation of 16 policies over long episodes with
#:   timelines is a few MB; a leaderboard, a run's records).
#: - weights: a model or weights file (an SB3 ``model.zip``, an RLlib checkpoint's tensor
#:   copy): the shipped agents are under 500 kB; a network this large is no scheduler's.
LIMITS: dict[str, int] = {
    "scenario": 1 * _MB,
    "config": 2 * _MB,
    "trace": 1024 * _MB,
    "journal": 1024 * _MB,  # a long run's finished jobs (edgegym.journal)
    "result": 64 * _MB,
    "weights": 2048 * _MB,
}


def _megabytes(size: int) -> str:
    """A size as a message gives it: ``640 bytes``, ``1 MB``, ``1.24 MB``, ``1024 MB``."""
    if size < _MB // 10:
        return f"{size:,} bytes"
    mb = size / _MB
    return f"{mb:.3g} MB" if mb < 100 else f"{mb:.0f} MB"


class InputError(ValueError):
    """An input path that is not a readable regular file of bounded size."""


def describe(mode: int) -> str:
    """What a non-regular ``st_mode`` is, in words (``"a FIFO (named pipe)"``)."""
    for check, words in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISLNK, "a symbolic link"),
    ):
        if check(mode):
            return words
    return "not a regular file"


def check_file(path: str | Path, what: str, kind: str) -> int:
    """The size of ``path`` if it is a regular file (a link to one is fine) within the cap of
    ``kind`` (:data:`LIMITS`).

    Raises:
        FileNotFoundError: ``path`` does not exist.
        InputError: It is not a regular file, or it is over the cap.
    """
    p = Path(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise FileNotFoundError(f"{p}: {what} not found") from None
    except OSError as exc:
        raise InputError(f"{p}: {what} cannot be read ({exc.strerror})") from None
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{p}: {what} is {describe(st.st_mode)}, not a regular file")
    limit = LIMITS[kind]
    if st.st_size > limit:
        raise InputError(
            f"{p}: {what} is {_megabytes(st.st_size)}, over the {_megabytes(limit)} read for a "
            f"{kind} file (it is read into memory whole)"
        )
    return st.st_size


def read_bytes(path: str | Path, what: str, kind: str) -> bytes:
    """The bytes of a regular file within its kind's cap (:func:`check_file`)."""
    size = check_file(path, what, kind)
    limit = LIMITS[kind]
    try:
        with open(path, "rb") as fh:
            data = fh.read(size + 1)  # not read(limit + 1): that allocates the cap up front
            if len(data) > size:  # it grew after the check: read on, to the cap
                data += fh.read(limit + 1 - len(data))
    except OSError as exc:
        raise InputError(f"{path}: {what} cannot be read ({exc.strerror})") from None
    if len(data) > limit:  # it grew after the check
        raise InputError(f"{path}: {what} is over the {_megabytes(limit)} read for a {kind} file")
    return data


def _article(word: str) -> str:
    """``a`` or ``an`` before ``word`` (by its first letter)."""
    return "an" if word[:1].lower() in "aeiou" else "a"


def read_text(path: str | Path, what: str, kind: str) -> str:
    """The UTF-8 text (a byte-order mark dropped) of a regular file within its kind's cap.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        InputError: Not a regular file, over the cap, or not UTF-8 text.
    """
    data = read_bytes(path, what, kind)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"{path}: not a text file ({_article(what)} {what} is UTF-8; byte {exc.start} is not)"
        ) from None


_NUMBERISH = re.compile(r"[-+0-9.eE]{0,16}")
_SHORT_WORD = re.compile(r"[A-Za-z0-9_.-]{1,8}")


#: A text a message may quote as it is: a name of up to 16 characters (``V100-16GB``,
#: ``mobilenetv2``, a mistyped field name); longer or other texts show as their length only,
#: so a message never repeats a line of an untrusted file (a key pasted in the wrong place).
_NAME = re.compile(r"[A-Za-z0-9_.+/:-]{0,16}")
#: :func:`quoted`'s default limits: two levels of nesting, six entries, 60 characters a leaf.
_QUOTED = reprlib.Repr()
_QUOTED.maxlevel = 2
_QUOTED.maxlist = _QUOTED.maxdict = 6
_QUOTED.maxstring = _QUOTED.maxother = 60


class _Withheld:
    """Stands for a text a message does not quote: its repr is its length."""

    def __init__(self, text: str) -> None:
        self.size = len(text)

    def __repr__(self) -> str:
        return f"<a {self.size}-character text>"


def _quotable(value: Any, limits: reprlib.Repr, depth: int = 0) -> Any:
    """``value`` with every text that is not a short name replaced by :class:`_Withheld`,
    down to the depth ``limits`` prints (and one entry more per level than it prints)."""
    if isinstance(value, str):
        return value if _NAME.fullmatch(value) else _Withheld(value)
    if depth >= limits.maxlevel:
        return value
    keep = max(limits.maxlist, limits.maxdict) + 1  # one more than is printed, for the "..."
    if isinstance(value, Mapping):
        items = itertools.islice(value.items(), keep)
        return {_quotable(k, limits, depth + 1): _quotable(v, limits, depth + 1) for k, v in items}
    if isinstance(value, (list, tuple)):
        return type(value)(_quotable(v, limits, depth + 1) for v in itertools.islice(value, keep))
    return value


def quoted(value: Any, limits: reprlib.Repr | None = None, max_chars: int = 100) -> str:
    """``value`` (from a file that may be untrusted) as an error message quotes it: numbers,
    booleans, ``None`` and short names as they are, any other text as its length only
    (``{'token': <a 22-character text>}``), within ``limits`` (a :class:`reprlib.Repr`;
    default two levels, six entries) and ``max_chars`` characters. The rule of every scenario
    and setting message; :func:`token` is the stricter one of trace and config lines."""
    text = (limits or _QUOTED).repr(_quotable(value, limits or _QUOTED))
    return text if len(text) <= max_chars else f"{text[: max_chars - 3]}..."


def token(value: object) -> str:
    """``value`` as an error message may quote it: a number-like text of up to 16 characters
    or a plain word of up to 8 as it is (so ``-3``, ``1.5`` or ``abc`` shows), anything else
    as its length only (so a message built from a file that is not what it should be never
    repeats a line of it: a password entry, a key)."""
    text = str(value)
    if _NUMBERISH.fullmatch(text) or _SHORT_WORD.fullmatch(text):
        return repr(text)
    return f"a {len(text)}-character value"


def load_json(text: str, where: str | Path) -> Any:
    """``json.loads(text)`` of an untrusted input named ``where``.

    Raises:
        InputError: Not JSON (the parser's position, never the content) or nested too deeply.
    """
    try:
        return json.loads(text)
    except ValueError as exc:  # the parser's message gives a position, not the content
        raise InputError(f"{where}: not JSON ({exc})") from None
    except RecursionError:
        raise InputError(f"{where}: nested too deeply") from None


def yaml_problem(exc: Exception) -> str:
    """A YAML parser error as its position and kind, without the excerpt of the file PyYAML
    quotes (``line 3, column 5: mapping values are not allowed here``; a character the
    reader refuses, a NUL byte say, as ``character 135: unacceptable character #x0000: ...``
    where :func:`load_yaml` did not give it a line and column)."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or type(exc).__name__
    if isinstance(exc, yaml.reader.ReaderError):
        return f"character {exc.position + 1}: {_unacceptable(exc)}"
    if mark is None:
        return str(problem)
    return f"line {mark.line + 1}, column {mark.column + 1}: {problem}"


def _unacceptable(exc: yaml.reader.ReaderError) -> str:
    """What the YAML reader refused, in PyYAML's words, without the file's name or text."""
    code = exc.character
    what = f"#x{code:04x}" if isinstance(code, int) else "a byte"
    return f"unacceptable character {what}: {exc.reason}"


#: Line breaks as PyYAML counts lines.
_YAML_BREAK = re.compile("\r\n|[\n\r\x85\u2028\u2029]")


def _marked(exc: yaml.reader.ReaderError, text: str) -> yaml.MarkedYAMLError:
    """A reader error of ``text`` (it refuses a character before parsing starts, giving its
    offset only) as a parser error with that character's line and column."""
    position = min(max(int(exc.position), 0), len(text))
    line, start = 0, 0
    for match in _YAML_BREAK.finditer(text, 0, position):
        line, start = line + 1, match.end()
    mark = yaml.Mark(exc.name, position, line, position - start, None, None)
    return yaml.MarkedYAMLError(None, None, _unacceptable(exc), mark)


#: Most values (scalars, lists and mappings) that aliases (``*name``) may add to a YAML file
#: when expanded. A handful of anchors reused in a scenario add a few dozen; a YAML alias bomb
#: (each anchor a list of ten aliases of the one before) passes it at its fifth level.
MAX_ALIAS_VALUES = 10_000

_MERGE_TAG = "tag:yaml.org,2002:merge"
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,39}")


class StrictYAMLError(yaml.MarkedYAMLError):
    """A YAML file that parses but :func:`load_yaml` refuses: a duplicate key, or aliases that
    expand too far. A ``yaml.YAMLError``: :func:`yaml_problem` gives its line and column."""


def _key_text(key: Any) -> str:
    """A mapping key as a message may quote it: an identifier-like key of up to 40 characters
    as it is (``'quanta'``), anything else as :func:`token` shows it."""
    text = str(key)
    return repr(text) if _KEY.fullmatch(text) else token(text)


class _StrictLoader(yaml.SafeLoader):
    """``yaml.SafeLoader`` that refuses duplicate keys and alias bombs (see :func:`load_yaml`).

    While composing, every node's expanded size (itself and everything under it, aliases
    counted at their expanded size) is kept by node, and each alias adds its target's size
    to the document's count of alias-added values."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._sizes: dict[int, int] = {}
        self._aliased = 0

    def compose_node(self, parent: Node | None, index: Any) -> Node:
        """The node, sized; an alias counted against :data:`MAX_ALIAS_VALUES`."""
        if self.check_event(yaml.AliasEvent):
            mark = self.peek_event().start_mark
            node = super().compose_node(parent, index)
            self._aliased += self._sizes.get(id(node), 1)  # an unfinished (recursive) one: 1
            if self._aliased > MAX_ALIAS_VALUES:
                raise StrictYAMLError(
                    None,
                    None,
                    f"aliases expand to more than {MAX_ALIAS_VALUES:,} values (a YAML alias "
                    "bomb?); write the values out",
                    mark,
                )
            return node
        node = super().compose_node(parent, index)
        if isinstance(node, SequenceNode):
            size = 1 + sum(self._sizes.get(id(item), 1) for item in node.value)
        elif isinstance(node, MappingNode):
            size = 1 + sum(self._sizes.get(id(k), 1) + self._sizes.get(id(v), 1)
                           for k, v in node.value)  # fmt: skip
        else:
            size = 1
        self._sizes[id(node)] = size
        return node

    def compose_mapping_node(self, anchor: str | None) -> MappingNode:
        """The mapping; a scalar key given twice is an error naming it and both lines (merge
        keys ``<<`` are not keys: the mapping's own keys override merged ones)."""
        node = super().compose_mapping_node(anchor)
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, ScalarNode) or key_node.tag == _MERGE_TAG:
                continue
            try:
                key = self.construct_object(key_node)  # 1 and 0x1, true and yes: one key each
                hash(key)
            except (yaml.YAMLError, TypeError):
                key = (key_node.tag, key_node.value)
            line = key_node.start_mark.line + 1
            if key in seen:
                raise StrictYAMLError(
                    None,
                    None,
                    f"duplicate key {_key_text(key_node.value)} (first given on line "
                    f"{seen[key]}); a key may appear once in a mapping",
                    key_node.start_mark,
                )
            seen[key] = line
        return node


def load_yaml(text: str) -> Any:
    """Parse untrusted YAML as ``yaml.safe_load`` does (the same types; no tags that build
    Python objects), refusing a key given twice in one mapping (PyYAML would keep the last
    silently: ``quanta: 200`` then ``quanta: 300`` ran 300) and aliases that expand to more
    than :data:`MAX_ALIAS_VALUES` values.

    Raises:
        yaml.YAMLError: Not valid YAML (a character YAML does not allow, a NUL byte say,
            included); :class:`StrictYAMLError` for a duplicate key or an alias bomb (each
            with the line and column, for :func:`yaml_problem`).
        RecursionError: Nested too deeply.
    """
    try:
        loader = _StrictLoader(text)  # the reader checks every character here
    except yaml.reader.ReaderError as exc:
        raise _marked(exc, text) from None
    try:
        return loader.get_single_data()
    finally:
        loader.dispose()

"""The shape of a JSON file read back, checked before any code uses it.

A results file (``leaderboard.json``, a reproduction's saved runs, ``claims.json``, an
evaluation result) is an untrusted input: parsed, it may hold a number where a mapping should
be, a text where a list should be, or lists nested a thousand deep. The code that renders it
indexes and formats its values, so a wrong type ends in a traceback far from the file
(``AttributeError: 'int' object has no attribute 'get'``). :func:`check` walks a parsed file
against a small description of what its readers use (:class:`Record`, :class:`ListOf`,
:class:`MapOf`, :class:`Tree`, :data:`NUM`, ...) and refuses the first value of another kind
in one line that names the file and the field and says what was found, never the value itself
(``leaderboard.json: cells['energy/x']: must be a mapping, got a number``; a key that is not a
short name shows as its length and place). Keys the description does not name are left alone;
:func:`check_depth` bounds the nesting of the values it does not walk.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from edgegym.inputs import InputError, quoted

#: Deepest nesting of mappings and lists a results file may have. edgegym's own go six or
#: seven levels deep; code that walks a value recursively (writing it back as JSON, flattening
#: hyperparameter overrides) would otherwise reach Python's recursion limit.
MAX_DEPTH = 32
#: Largest magnitude of a number: formatting and plotting stay finite (a sum of two numbers
#: near the float maximum is infinite, and an axis cannot end there).
MAX_NUMBER = 1e100


class ShapeError(InputError):
    """A results file whose values are not of the kinds its readers use."""


def kind(value: Any) -> str:
    """What ``value`` is, in words, without its content (``"a text"``, ``"a list"``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a text"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, Mapping):
        return "a mapping"
    return f"a {type(value).__name__}"


def key_text(key: Any, index: int) -> str:
    """A key from the file (the ``index``-th of its mapping) as a field path shows it: a short
    name as it is (``['energy/x']``, :func:`edgegym.inputs.quoted`'s rule), any other key by
    its length and place (``[a 26-character key, entry 3]``)."""
    text = str(key)
    shown = quoted(text)
    return f"[{shown}]" if shown == repr(text) else f"[a {len(text)}-character key, entry {index}]"


class Shape:
    """What a value must be; :meth:`problem` says how one is not."""

    #: The kind in words, for a message (``"a finite number"``).
    what = "anything"

    def problem(self, value: Any, at: str) -> tuple[str, str] | None:
        """``(field path, what is wrong)`` for the first value in ``value`` (at ``at``) that is
        not of this shape, or ``None``."""
        return None if self.fits(value) else (at, f"must be {self.what}, got {kind(value)}")

    def fits(self, value: Any) -> bool:
        """Whether ``value`` itself (not what it holds) is of this shape."""
        return True


class _Scalar(Shape):
    def __init__(self, what: str, test: Any) -> None:
        self.what, self._test = what, test

    def fits(self, value: Any) -> bool:
        return bool(self._test(value))


def _number(value: Any) -> bool:
    return (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and abs(value) <= MAX_NUMBER
    )


#: Anything at all (not walked; see :func:`check_depth`).
ANY = Shape()
#: A finite number (not a boolean) of magnitude at most :data:`MAX_NUMBER`.
NUM = _Scalar("a finite number", _number)
#: An integer (not a boolean) of magnitude at most 2**63.
INT = _Scalar(
    "an integer",
    lambda v: isinstance(v, int) and not isinstance(v, bool) and abs(v) <= 2**63,
)
#: ``true`` or ``false``.
BOOL = _Scalar("true or false", lambda v: isinstance(v, bool))
#: A text of at most 1,000 characters (a name, a label).
TEXT = _Scalar(
    "a text of at most 1,000 characters", lambda v: isinstance(v, str) and len(v) <= 1000
)
#: A text of any length (a note, an error message).
LONG_TEXT = _Scalar("a text", lambda v: isinstance(v, str))
#: ``null``.
NULL = _Scalar("null", lambda v: v is None)
#: A mapping of anything (not walked).
MAP = _Scalar("a mapping", lambda v: isinstance(v, Mapping))
#: A list of anything (not walked).
LIST = _Scalar("a list", lambda v: isinstance(v, list))


class Maybe(Shape):
    """``null`` or ``shape``."""

    def __init__(self, shape: Shape) -> None:
        self.shape = shape
        self.what = f"{shape.what} or null"

    def fits(self, value: Any) -> bool:
        return value is None or self.shape.fits(value)

    def problem(self, value: Any, at: str) -> tuple[str, str] | None:
        if value is None:
            return None
        found = self.shape.problem(value, at)
        if found is not None and found[0] == at:  # the value itself: say null would do too
            return at, f"must be {self.what}, got {kind(value)}"
        return found


class OneOf(Shape):
    """Any one of ``shapes`` (each a scalar shape: tried by :meth:`Shape.fits`)."""

    def __init__(self, *shapes: Shape) -> None:
        self.shapes = shapes
        self.what = " or ".join(s.what for s in shapes)

    def fits(self, value: Any) -> bool:
        return any(s.fits(value) for s in self.shapes)


class Choice(Shape):
    """One of a few texts (``"held-out"`` or ``"calibration"``)."""

    def __init__(self, *values: str) -> None:
        self.values = values
        self.what = "one of " + ", ".join(repr(v) for v in values)

    def fits(self, value: Any) -> bool:
        return isinstance(value, str) and value in self.values


class _Each(Shape):
    """A container whose every item is ``item``; :meth:`entries` names each one's place."""

    #: The container's type, and the kind in words.
    container: type = object

    def __init__(self, item: Shape) -> None:
        self.item = item

    def fits(self, value: Any) -> bool:
        return isinstance(value, self.container)

    def entries(self, value: Any, at: str) -> Iterator[tuple[str, Any]]:
        """``(field path, item)`` of every item of ``value`` (at ``at``)."""
        raise NotImplementedError

    def problem(self, value: Any, at: str) -> tuple[str, str] | None:
        if not self.fits(value):
            return super().problem(value, at)
        for where, v in self.entries(value, at):
            if (found := self.item.problem(v, where)) is not None:
                return found
        return None


class ListOf(_Each):
    """A list whose every item is ``item``."""

    container, what = list, "a list"

    def entries(self, value: Any, at: str) -> Iterator[tuple[str, Any]]:
        return ((f"{at}[{i}]", v) for i, v in enumerate(value))


class MapOf(_Each):
    """A mapping whose every value is ``item`` (keys are texts in JSON)."""

    container, what = Mapping, "a mapping"

    def entries(self, value: Any, at: str) -> Iterator[tuple[str, Any]]:
        return ((f"{at}{key_text(k, i)}", v) for i, (k, v) in enumerate(value.items()))


class Record(Shape):
    """A mapping whose named ``fields`` are of their shapes where present; those in
    ``required`` must be present. Other keys are of the shape ``rest`` where it is given,
    else left alone."""

    def __init__(
        self,
        fields: Mapping[str, Shape],
        required: tuple[str, ...] = (),
        rest: Shape | None = None,
    ) -> None:
        self.fields, self.required, self.rest = dict(fields), required, rest
        self.what = "a mapping"

    def fits(self, value: Any) -> bool:
        return isinstance(value, Mapping)

    def problem(self, value: Any, at: str) -> tuple[str, str] | None:
        if not isinstance(value, Mapping):
            return super().problem(value, at)
        for name in self.required:
            if name not in value:
                return at, f"has no {name!r}"
        for name, shape in self.fields.items():
            if name in value:
                found = shape.problem(value[name], f"{at}.{name}" if at else name)
                if found is not None:
                    return found
        if self.rest is not None:
            others = {k: v for k, v in value.items() if k not in self.fields}
            return MapOf(self.rest).problem(others, at)
        return None


class Tree(Shape):
    """Mappings and lists nested to any depth (:func:`check_depth` bounds it) whose every
    leaf, a value that is neither, is ``leaf``: measurements kept as the code that made them
    nested them."""

    def __init__(self, leaf: Shape) -> None:
        self.leaf = leaf
        self.what = f"a mapping or list of {leaf.what}"

    def problem(self, value: Any, at: str) -> tuple[str, str] | None:
        stack = [(value, at)]
        while stack:
            v, where = stack.pop()
            if isinstance(v, Mapping):
                items = [(x, f"{where}{key_text(k, i)}") for i, (k, x) in enumerate(v.items())]
            elif isinstance(v, list):
                items = [(x, f"{where}[{i}]") for i, x in enumerate(v)]
            else:
                if (found := self.leaf.problem(v, where)) is not None:
                    return found
                continue
            stack.extend(reversed(items))  # the first bad leaf in the file's order
        return None


def check(value: Any, shape: Shape, where: str | Path) -> Any:
    """``value`` (parsed from the file ``where``) if it is of ``shape``.

    Raises:
        ShapeError: One line: the file, the field and what is wrong (``leaderboard.json:
            cells['energy/x']: must be a mapping, got a number``).
    """
    found = shape.problem(value, "")
    if found is not None:
        at, what = found
        raise ShapeError(f"{where}: {at}: {what}" if at else f"{where}: {what}")
    return value


def check_depth(value: Any, where: str | Path, limit: int = MAX_DEPTH) -> Any:
    """``value`` if its mappings and lists nest at most ``limit`` deep (walked without
    recursion).

    Raises:
        ShapeError: Nested deeper, naming ``where``.
    """
    stack = [(value, 0)]
    while stack:
        v, depth = stack.pop()
        if isinstance(v, Mapping | list):
            if depth >= limit:
                raise ShapeError(f"{where}: nested more than {limit} levels deep")
            items = v.values() if isinstance(v, Mapping) else v
            stack.extend((item, depth + 1) for item in items)
    return value

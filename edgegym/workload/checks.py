"""The one rule for checking parameters: typed pydantic fields with ranges.

Every numeric parameter in edgegym -- an arrival process's constructor argument, a field of an
``arrival`` mapping, a field of a scenario file -- is declared as an annotated type with a
:class:`Range` (or :class:`Floats` for arrays), and checked by pydantic against it. The same
declaration gives the message: ``<field>: must be a finite number in [0, 1], got nan``. NaN and
infinities are never numbers here, ``True`` is not ``1`` and ``"30"`` is not ``30``.

* :class:`Range` -- a number (``Annotated[float, Range(0, 1)]``, ints kept as ints) or an
  integer (``Annotated[int, Range(1, 64)]``) in an interval;
* :class:`Floats` -- a non-empty 1-d or 2-d array of numbers in a :class:`Range` (checked with
  numpy; the value becomes a ``float64`` array);
* :class:`OneOf` -- a string among options known at check time (the GPU catalogue, ...);
* :class:`Expect` -- wraps any type's errors into ``must be <what>``;
* :func:`check` -- check one value against such a type (constructors), raising ``ValueError``;
* :func:`error_lines` -- pydantic's ``ValidationError`` as one line per error, each naming the
  field path (``tenants[2].slo_ms``), the problem and the bad value;
* :func:`rule` -- the error a model validator raises for a rule across fields.
"""

from __future__ import annotations

import decimal
import functools
import math
import numbers
import re
import reprlib
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

import numpy as np
from annotated_types import MinLen
from pydantic import BaseModel, Strict, TypeAdapter, ValidationError
from pydantic_core import CoreSchema, PydanticCustomError, core_schema

from edgegym.inputs import quoted

__all__ = [
    "Expect",
    "Finite",
    "Flag",
    "Floats",
    "NonNegative",
    "OneOf",
    "Positive",
    "Range",
    "Text",
    "check",
    "error_lines",
    "rule",
]

_REPR = reprlib.Repr()
_REPR.maxstring = 60
_REPR.maxother = 60
_REPR.maxlist = 6
_REPR.maxlevel = 2
_MAX_LINES = 5
#: Longest quote of a bad value in a message (the repr of a few kB of YAML aliases, cut per
#: level only, was once a 144 kB line).
_MAX_GOT = 100


def _got(value: Any) -> str:
    """``value`` as a message quotes it: two levels deep, six entries, 100 characters, texts
    other than short names as their length only (:func:`edgegym.inputs.quoted`)."""
    return quoted(value, _REPR, _MAX_GOT)


@dataclass(frozen=True, eq=False)
class Range:
    """An interval a number must lie in; pydantic metadata of a ``float`` or ``int`` field.

    ``Annotated[float, Range(0, 1)]`` accepts finite ints and floats (an int stays an int) in
    ``[0, 1]``; ``Annotated[int, Range(1, 64)]`` accepts integers only. Booleans, strings, NaN
    and infinities are rejected. Bounds print as written (``Range(0.0, 1.0)`` says
    ``[0.0, 1.0]``, ``Range(0, 1)`` says ``[0, 1]``).

    Attributes:
        lo: Lower bound, or None.
        hi: Upper bound, or None.
        lo_open: The lower bound is excluded.
        hi_open: The upper bound is excluded.
    """

    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False

    def _key(self) -> tuple[Any, ...]:
        # The bounds' types count: Range(0, 1) and Range(0.0, 1.0) print differently, and
        # typing caches Annotated[...] by equality, so equal ranges would share one text.
        return (type(self.lo), self.lo, type(self.hi), self.hi, self.lo_open, self.hi_open)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Range) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def text(self) -> str:
        """The interval in words: ``in [0, 1)``, ``>= 0``, ``> 0``, ``<= 1`` or ``""``."""
        lo, hi = self.lo, self.hi
        if lo is not None and hi is not None:
            return f"in {'(' if self.lo_open else '['}{lo}, {hi}{')' if self.hi_open else ']'}"
        if lo is not None:
            return f"{'>' if self.lo_open else '>='} {lo}"
        if hi is not None:
            return f"{'<' if self.hi_open else '<='} {hi}"
        return ""

    def describe(self, integer: bool = False) -> str:
        """What a value must be: ``a finite number in [0, 1]`` or ``an integer >= 0``."""
        what = "an integer" if integer else "a finite number"
        return f"{what} {self.text()}".rstrip()

    def outside(self, arr: np.ndarray) -> np.ndarray:
        """Mask of the entries of a float array that are not finite or not in the interval."""
        bad = ~np.isfinite(arr)
        if self.lo is not None:
            bad |= (arr <= self.lo) if self.lo_open else (arr < self.lo)
        if self.hi is not None:
            bad |= (arr >= self.hi) if self.hi_open else (arr > self.hi)
        return bad

    def _constraints(self, integer: bool = False) -> dict[str, Any]:
        """Pydantic's bounds; for integers the same set with whole bounds (``x >= 0.1`` is
        ``x >= 1``, ``x > 0.5`` is ``x > 0``)."""
        out: dict[str, Any] = {}
        lo, hi = self.lo, self.hi
        if lo is not None:
            out["gt" if self.lo_open else "ge"] = (
                (math.floor(lo) if self.lo_open else math.ceil(lo)) if integer else lo
            )
        if hi is not None:
            out["lt" if self.hi_open else "le"] = (
                (math.ceil(hi) if self.hi_open else math.floor(hi)) if integer else hi
            )
        return out

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> CoreSchema:
        """Strict int (and, for ``float`` fields, finite float) schema with the bounds."""
        integer = source is int
        ints = core_schema.int_schema(strict=True, **self._constraints(integer=True))
        inner = (
            ints
            if integer
            else core_schema.union_schema(
                [
                    ints,
                    core_schema.float_schema(
                        strict=True, allow_inf_nan=False, **self._constraints()
                    ),
                ]
            )
        )
        schema = core_schema.no_info_before_validator_function(_plain_number, inner)
        return _expect(schema, self.describe(integer))


def _plain_number(value: Any) -> Any:
    """numpy scalars as Python ints/floats (bools and other types are left to fail)."""
    if isinstance(value, bool | int | float) or not isinstance(value, numbers.Real):
        return value
    return int(value) if isinstance(value, numbers.Integral) else float(value)


def _expect(schema: CoreSchema, what: str) -> CoreSchema:
    return core_schema.custom_error_schema(
        schema,
        custom_error_type="expected",
        custom_error_message="must be {expected}",
        custom_error_context={"expected": what},
    )


@dataclass(frozen=True)
class Expect:
    """Pydantic metadata: any error of the type it follows reads ``must be <what>``.

    Attributes:
        what: The words, e.g. ``"true or false"``.
    """

    what: str

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> CoreSchema:
        """The wrapped type's schema, its errors replaced."""
        return _expect(handler(source), self.what)


#: A finite number (any sign).
Finite = Annotated[float, Range()]
#: A finite number >= 0.
NonNegative = Annotated[float, Range(0)]
#: A finite number > 0.
Positive = Annotated[float, Range(0, lo_open=True)]
#: A non-empty string.
Text = Annotated[str, Strict(), MinLen(1), Expect("a non-empty string")]
#: ``true`` or ``false`` (not 0/1, not "yes").
Flag = Annotated[bool, Strict(), Expect("true or false")]


@dataclass(frozen=True)
class OneOf:
    """Pydantic metadata of a ``str`` field: one of the options ``options()`` returns when the
    value is checked (so a catalogue extended at run time is seen).

    Attributes:
        options: Returns the allowed values, in the order messages list them.
    """

    options: Callable[[], Iterable[str]]

    def _check(self, value: Any) -> str:
        opts = list(self.options())
        if not isinstance(value, str) or value not in opts:
            raise PydanticCustomError(
                "expected", "must be one of {expected}", {"expected": ", ".join(opts)}
            )
        return value

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> CoreSchema:
        """A plain validator calling :meth:`_check`."""
        return core_schema.no_info_plain_validator_function(self._check)


@dataclass(frozen=True)
class Floats:
    """Pydantic metadata: a non-empty ``ndim``-d array of finite numbers in ``range``, checked
    with numpy (one pass, however long the array); the value becomes a ``float64`` array.

    Attributes:
        range: Interval every entry must lie in.
        ndim: 1 (a list) or 2 (a matrix, list of lists).
    """

    range: Range = Range()
    ndim: int = 1

    def check(self, values: Any) -> np.ndarray:
        """The values as a float64 array.

        Raises:
            ValueError: Not numbers, ragged, of another rank, empty, or an entry out of range;
                the message says which entry.
        """
        rng_txt = self.range.text()
        what = "a list of" if self.ndim == 1 else "a matrix (list of lists) of"
        expected = f"must be {what} finite numbers {rng_txt}".rstrip()
        if isinstance(values, str | bytes | Mapping):
            raise ValueError(f"{expected}, got {_got(values)}")
        try:
            arr = np.asarray(values)
        except ValueError as exc:  # ragged nested lists
            raise ValueError(f"{expected}: {exc}") from None
        if arr.dtype == np.bool_ or not (
            np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)
        ):
            raise ValueError(f"{expected}, got {_got(values)}")
        if arr.ndim != self.ndim or arr.size == 0:
            raise ValueError(
                f"must be a non-empty {self.ndim}-d array of numbers {rng_txt}, "
                f"got shape {arr.shape}"
            )
        arr = arr.astype(np.float64)
        bad = self.range.outside(arr)
        if bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            at = idx[0] if self.ndim == 1 else list(idx)
            raise ValueError(
                f"every entry must be a finite number {rng_txt}, got {float(arr[idx])!r} at {at}"
            )
        return arr

    def _validate(self, values: Any) -> np.ndarray:
        try:
            return self.check(values)
        except ValueError as exc:
            raise PydanticCustomError("problem", "{problem}", {"problem": str(exc)}) from None

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> CoreSchema:
        """A plain validator calling :meth:`check`."""
        return core_schema.no_info_plain_validator_function(self._validate)


def rule(problem: str, field: str = "") -> PydanticCustomError:
    """The error a model validator raises when a rule across fields fails.

    Args:
        problem: What is wrong, e.g. ``"leave_s must be after arrive_s"``.
        field: Path below the model that the problem is about (``"uniform.config1"``), if
            more precise than the model itself.

    Returns:
        The error to raise.
    """
    return PydanticCustomError("problem", "{problem}", {"problem": problem, "field": field})


@functools.cache
def _adapter(annotation: Any) -> TypeAdapter[Any]:
    return TypeAdapter(annotation)


def check(value: Any, annotation: Any, name: str) -> Any:
    """Check one value against an annotated type of this module.

    Args:
        value: The value.
        annotation: E.g. ``Annotated[float, Range(0)]`` (hashable; its adapter is cached).
        name: The parameter's name, which starts the message.

    Returns:
        The validated value.

    Raises:
        ValueError: ``"<name>: must be ..., got <value>"``.
    """
    try:
        return _adapter(annotation).validate_python(value)
    except ValidationError as exc:
        raise ValueError(error_lines(exc, name)[0]) from None


def _unwrap(tp: Any) -> Any:
    """Strip ``Annotated`` and ``None`` from a type."""
    while typing.get_origin(tp) is Annotated:
        tp = typing.get_args(tp)[0]
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(members) == 1:
            return _unwrap(members[0])
    return tp


def _models(tp: Any) -> list[type[BaseModel]]:
    """The models a type is, or is a union of."""
    tp = _unwrap(tp)
    if isinstance(tp, type) and issubclass(tp, BaseModel):
        return [tp]
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        return [m for a in typing.get_args(tp) for m in _models(a)]
    return []


def _tag(model: type[BaseModel]) -> str | None:
    """A tagged union member's ``kind`` literal (pydantic puts it in error locations)."""
    field = model.model_fields.get("kind")
    args = typing.get_args(_unwrap(field.annotation)) if field is not None else ()
    return str(args[0]) if len(args) == 1 else None


def _follow(root: Any, loc: tuple[int | str, ...]) -> tuple[str, Any, Any]:
    """Path text of an error location, the type found at its parent and at it.

    Walks ``root``'s annotations so that a tagged union's tag (``drift.generated.ceiling``)
    is left out of the path (``drift.ceiling``).
    """
    path = ""
    tp: Any = root
    parent: Any = None
    for item in loc:
        parent = tp
        models = _models(tp)
        if isinstance(item, int):
            path += f"[{item}]"
            args = typing.get_args(_unwrap(tp))
            tp = args[0] if args else None
            continue
        tagged = [m for m in models if _tag(m) == item]
        if len(models) > 1 and tagged:
            tp = tagged[0]
            continue
        path += f".{item}" if path else str(item)
        if len(models) == 1 and item in models[0].model_fields:
            tp = models[0].model_fields[item].annotation
        else:
            args = typing.get_args(_unwrap(tp))
            tp = args[1] if typing.get_origin(_unwrap(tp)) is dict and len(args) == 2 else None
    return path, parent, tp


#: A number in exponent form that YAML 1.1 (PyYAML) reads as text: ``1e9``, ``5E-3``,
#: ``1.0e9`` (its floats need a dot and a signed exponent: ``1.0e+9``).
_YAML_TEXT_NUMBER = re.compile(r"([-+]?)([0-9]+)(?:\.([0-9]*))?[eE]([-+]?)([0-9]{1,3})")


def _yaml_number_hint(err: Mapping[str, Any]) -> str:
    """For a number field given a text like ``1e9`` (YAML 1.1 reads it as text), how to write
    it: `` (write 1.0e+9: YAML reads 1e9 as text)``, or for an integer field
    `` (write 1000000000: ...)``; ``""`` for any other error."""
    value = err.get("input")
    expected = str((err.get("ctx") or {}).get("expected", ""))
    if not isinstance(value, str) or len(value) > 16:
        return ""
    match = _YAML_TEXT_NUMBER.fullmatch(value)
    if match is None:
        return ""
    sign, whole, frac, exp_sign, exp = match.groups()
    if expected.startswith("an integer"):
        number = decimal.Decimal(value)
        if number != number.to_integral_value() or abs(number) >= 10**16:
            return ""
        text = str(int(number))
    elif expected.startswith("a finite number"):
        text = f"{sign}{whole}.{frac or '0'}e{exp_sign or '+'}{exp}"
    else:
        return ""
    return f" (write {text}: YAML reads {value} as text)"


def _problem(err: Mapping[str, Any], parent: Any, here: Any) -> str:
    kind = err["type"]
    got = _got(err.get("input"))
    if kind == "expected":  # the types of this module: "must be <what>, got <value>"
        return f"{err['msg']}, got {got}{_yaml_number_hint(err)}"
    if kind == "problem":
        return str(err["ctx"]["problem"])
    if kind == "missing":
        return "missing required field"
    if kind == "extra_forbidden":
        models = _models(parent)
        allowed = ", ".join(models[0].model_fields) if len(models) == 1 else ""
        name = f"unknown field {_got(err['loc'][-1])}"
        return f"{name} (allowed: {allowed})" if allowed else name
    if kind in ("model_type", "model_attributes_type", "dict_type"):
        return f"must be a mapping of fields, got {got}"
    if kind == "list_type":
        return f"must be a list, got {got}"
    if kind == "too_short":
        return f"must be a non-empty {'mapping' if isinstance(err.get('input'), dict) else 'list'}"
    if kind == "too_long":
        count = (err.get("ctx") or {}).get("actual_length")
        got = f"{count} entries" if count is not None else "more"  # never the entries themselves
        return f"must have at most {err['ctx']['max_length']} entries, got {got}"
    if kind in ("union_tag_invalid", "union_tag_not_found"):
        *first, last = [repr(_tag(m)) for m in _models(here)] or ["a known kind"]
        tags = f"{', '.join(first)} or {last}" if first else last
        value = err["ctx"].get("tag")
        return f"must be {tags}" + (
            f", got {_got(value)}" if value is not None else ", got nothing"
        )
    msg = str(err["msg"])
    return f"{msg[:1].lower()}{msg[1:]}, got {got}"


def error_lines(
    exc: ValidationError, where: str, *, model: Any = None, sep: str = "."
) -> list[str]:
    """A pydantic ``ValidationError`` as one line per error (at most five, then a count).

    Each line is ``<where><sep><field path>: <problem>``, e.g. ``my.yaml: tenants[2].slo_ms:
    must be a finite number in (0.0, 100000.0], got nan``.

    Args:
        exc: The error.
        where: What was checked: a parameter's name, ``"my.yaml"``, ``"my.yaml: arrival"``.
        model: The model or type validated (to list a record's allowed fields and to leave
            tagged-union tags out of paths).
        sep: Between ``where`` and the field path.

    Returns:
        The lines.
    """
    lines = []
    errors = exc.errors()
    for err in errors[:_MAX_LINES]:
        loc = tuple(err["loc"])
        path, parent, here = _follow(model, loc)
        if err["type"] in ("union_tag_invalid", "union_tag_not_found"):
            path = f"{path}.{str(err['ctx']['discriminator']).strip(chr(39))}"
        extra = (err.get("ctx") or {}).get("field", "") if err["type"] == "problem" else ""
        if extra:
            path = f"{path}.{extra}" if path else extra
        head = f"{where}{sep}{path}" if path else where
        lines.append(f"{head}: {_problem(err, parent, here)}")
    if len(errors) > _MAX_LINES:
        lines.append(f"{where}: ... and {len(errors) - _MAX_LINES} more errors")
    return lines

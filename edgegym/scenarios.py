"""Scenario files: schema, validation, loading and keyword overrides.

A scenario is a YAML file naming the hardware, the tenants and their models, the drift and
configuration profiles, the window length and the objective weights. Bundled scenarios live
in ``scenarios/`` (installed as ``edgegym.scenario_data``); any other path works too.
Validation happens once, at load time: a bad file raises :class:`ScenarioError` with one line
per problem, each naming the file, the field path (``tenants[2].slo_ms``), the bad value and
the allowed range. The file is parsed by :func:`edgegym.inputs.load_yaml` (a key given twice
and alias bombs are errors), ``family`` is checked before the family's model is chosen, and no
line of a message is longer than :data:`MAX_LINE` (values from the file are quoted cut short).

Each family's schema is a pydantic model (:class:`ContinualScenario`, :class:`MIGScenario`,
:class:`EnergyScenario`, :class:`DAGScenario`), one model per section and record, with the
defaults in the models, ``extra="forbid"`` (a typo is named) and the field types of
:mod:`edgegym.workload.checks` (ranges; NaN and infinities rejected). A validated scenario is
the model's ``model_dump()``: plain dicts, lists and numbers, as the simulators read them.
"""

from __future__ import annotations

import copy
import reprlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, ClassVar

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    PlainValidator,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
)
from pydantic_core import CoreSchema, PydanticCustomError, core_schema

from edgegym.core.registry import FAMILIES, Family, ScenarioSchema
from edgegym.hardware.gpus import GPUS
from edgegym.inputs import (
    InputError,
    StrictYAMLError,
    load_yaml,
    quoted,
    read_text,
    yaml_problem,
)
from edgegym.workload.arrival_specs import make_arrival
from edgegym.workload.checks import Expect, OneOf, Range, Text, check, error_lines, rule
from edgegym.workload.models import MODELS

#: Longest line of a :class:`ScenarioError` message: a key or value from an untrusted file
#: quoted in it (an unknown field, an arrival kind) is cut, however long it was.
MAX_LINE = 400


def clip_lines(message: str, limit: int = MAX_LINE) -> str:
    """``message`` with every line longer than ``limit`` characters cut, saying how long."""
    return "\n".join(
        line if len(line) <= limit else f"{line[: limit - 40]}... (cut; {len(line):,} characters)"
        for line in message.split("\n")
    )


class ScenarioError(ValueError):
    """A scenario file or override is invalid; the message names file, field and range.

    Every line of the message is cut to :data:`MAX_LINE` characters."""

    def __init__(self, message: str = "", *args: Any) -> None:
        super().__init__(clip_lines(str(message)), *args)


class UnknownOverrideError(ScenarioError, TypeError):
    """An override names no field of the scenario.

    Also a :class:`TypeError`: environments take overrides as keyword arguments, and code that
    probes a constructor with optional keywords (TorchRL's ``GymEnv`` passes ``frameskip``,
    SB3's ``make_vec_env`` passes ``render_mode``) expects Python's "unexpected keyword
    argument" ``TypeError`` for one it does not take.

    Attributes:
        key: The override's name.
        allowed: The scenario fields it could have been.
        arguments: The environment's own keyword arguments, where an environment raised it.
    """

    def __init__(
        self,
        message: str,
        key: str = "",
        allowed: list[str] | None = None,
        arguments: list[str] | None = None,
    ) -> None:
        # One-argument construction too: Gymnasium's make re-raises a creator's TypeError as
        # ``type(e)(message)``.
        super().__init__(message)
        self.key = key
        self.allowed = list(allowed or [])
        self.arguments = list(arguments or [])


# ----------------------------------------------------------------------------- field types
def _gpus() -> list[str]:
    return sorted(GPUS)


def _mig_gpus() -> list[str]:
    return sorted(name for name, g in GPUS.items() if g.mig_capable)


def _models() -> list[str]:
    return sorted(MODELS)


Gpu = Annotated[str, OneOf(_gpus)]
MigGpu = Annotated[str, OneOf(_mig_gpus)]
Model = Annotated[str, OneOf(_models)]
Unit = Annotated[float, Range(0.0, 1.0)]
UnitOpen = Annotated[float, Range(0.0, 1.0, lo_open=True)]
Weight100 = Annotated[float, Range(0.0, 100.0)]
Seconds60 = Annotated[float, Range(0.0, 60.0)]
#: A slowdown: the share of its speed co-located work loses, in [0, 1).
Slowdown = Annotated[float, Range(0.0, 1.0, hi_open=True)]
DagWeight = Annotated[float, Range(0.0, 1e6)]
ClockMHz = Annotated[float, Range(0.0, 1e4)]  # a DVFS core clock; 0: the GPU's top clock
Arrival = Annotated[dict[str, Any], Expect("an arrival mapping with a 'kind' field")]


@dataclass(frozen=True)
class Pair:
    """Pydantic metadata of a ``list[float]`` field: ``[low, high]`` with
    ``lo <= low <= high <= hi`` (a range a value is drawn from).

    Attributes:
        lo: Smallest allowed low end.
        hi: Largest allowed high end.
    """

    lo: float
    hi: float

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> CoreSchema:
        """Two numbers in ``[lo, hi]``, in order; any error reads ``must be a pair ...``."""
        item = Range(self.lo, self.hi).__get_pydantic_core_schema__(float, handler)
        pair = core_schema.list_schema(item, min_length=2, max_length=2)

        def ordered(v: list[float]) -> list[float]:
            if v[0] > v[1]:
                raise PydanticCustomError("order", "low > high")
            return v

        schema = core_schema.no_info_after_validator_function(ordered, pair)
        return core_schema.custom_error_schema(
            schema,
            custom_error_type="expected",
            custom_error_message="must be {expected}",
            custom_error_context={
                "expected": f"a pair [low, high] with {self.lo} <= low <= high <= {self.hi}"
            },
        )


#: A clock schedule's step: ``[time_s >= 0, MHz >= 0]`` (0 MHz: the GPU's top clock, as the
#: tenant's default ``clock_mhz: 0``).
_STEP = (Annotated[float, Range(0)], Annotated[float, Range(0)])


def _clock(v: Any) -> Any:
    """An energy tenant's clock: MHz, or a schedule ``[[time_s >= 0, MHz], ...]``; MHz >= 0,
    where 0 is the GPU's top clock (the default; whether a clock > 0 is one the GPU can run is
    the family's cross-section check)."""
    try:
        if not isinstance(v, list):
            return check(v, _STEP[1], "clock_mhz")
        if not v:
            raise ValueError
        for step in v:
            if not isinstance(step, list | tuple) or len(step) != 2:
                raise ValueError
            for x, tp in zip(step, _STEP, strict=True):
                check(x, tp, "clock_mhz")
    except ValueError:
        raise PydanticCustomError(
            "expected",
            "must be {expected}",
            {"expected": "MHz >= 0 (0: the top clock) or a list of [time_s, MHz] pairs"},
        ) from None
    return v


#: An energy tenant's clock: MHz >= 0 (0: the top clock), or ``[[time_s, MHz], ...]`` (kept as
#: written).
ClockSchedule = Annotated[Any, PlainValidator(_clock)]


def clock_problem(gpu: str, mhz: float) -> str | None:
    """Why a DVFS clock is not one the GPU can run (0: its top clock), or None."""
    try:
        GPUS[gpu].resolve_clock(mhz)
    except ValueError as exc:
        return str(exc)
    return None


_SHOWN = reprlib.Repr()
_SHOWN.maxlevel = 2
_SHOWN.maxlist = _SHOWN.maxdict = 4
_SHOWN.maxstring = _SHOWN.maxother = 40
#: Longest quote of an input value in a message (a value from a file is untrusted: a few kB
#: of YAML aliases expand to billions of values, whose repr was once a 144 kB line).
MAX_SHOWN = 80


def shown(value: Any) -> str:
    """``value`` as a message quotes it (:func:`edgegym.inputs.quoted`): its repr, cut to two
    levels of nesting, four entries and :data:`MAX_SHOWN` characters (``'energy'``,
    ``['energy']``, ``[[1, 2, 3, 4, ...], ...]``), texts other than short names as their length.
    """
    return quoted(value, _SHOWN, MAX_SHOWN)


def unique_names(records: list[Any], field: str) -> None:
    """Refuse two records of one list with the same ``name``: names key lookups (a
    configuration named by ``uniform.config1``) and results (per-tenant metrics, figures'
    legends), where a second record of a name would hide the first.

    Call it after index defaults are filled in (``A2`` given explicitly clashes with the
    second tenant's default name).

    Raises:
        PydanticCustomError: ``<field>: duplicate name 'A1' (entries 0 and 1)``.
    """
    first: dict[Any, int] = {}
    for i, r in enumerate(records):
        if r.name in first:
            raise rule(
                f"duplicate name {shown(r.name)} (entries {first[r.name]} and {i}); names "
                "must be unique, as results and lookups are keyed by them",
                field=field,
            )
        first[r.name] = i


# ----------------------------------------------------------------------------- models
class Record(BaseModel):
    """Base of every section and record: unknown fields are errors."""

    model_config = ConfigDict(extra="forbid")


class ScenarioModel(Record):
    """Base of a family's scenario: the fields every family has.

    Class attributes:
        SECTIONS: Fields that are sections or lists of records (``section.field`` overrides).
        HARDWARE: The section whose fields overrides may name bare (``gpus=4``).
    """

    SECTIONS: ClassVar[frozenset[str]] = frozenset()
    HARDWARE: ClassVar[str] = "hardware"
    #: Free-text fields, kept as written (and left out when absent).
    FREE: ClassVar[frozenset[str]] = frozenset({"provenance", "notes", "paper"})

    name: Text
    description: Text = ""
    provenance: Any = None
    notes: Any = None
    paper: Any = None

    @model_serializer(mode="wrap")
    def _as_written(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        """Fields, then the free text given, then the sections (absent free text left out)."""
        data = handler(self)
        head = ["name", "family", "description"]
        order = [
            *head,
            *(k for k in data if k not in head and k not in self.SECTIONS and k not in self.FREE),
            *(k for k in ("provenance", "notes", "paper") if k in self.model_fields_set),
            *(k for k in data if k in self.SECTIONS),
        ]
        return {k: data[k] for k in order}


class ModelOverride(Record):
    """A tenant's ``profile``: numbers of its model that replace the catalogue's
    (:func:`edgegym.workload.models.model_with`; ``edgegym profile`` writes them from a
    device's measurements). Every field is optional; a missing one keeps the catalogue's."""

    latency_ms: Annotated[float, Range(0.0, 1e5, lo_open=True)] | None = None
    batch_exponent: Annotated[float, Range(0.0, 2.0)] | None = None
    share_alpha: Annotated[float, Range(0.0, 4.0, lo_open=True)] | None = None
    train_factor: Annotated[float, Range(0.0, 1e4, lo_open=True)] | None = None
    power_activity: Annotated[float, Range(0.0, 1.0)] | None = None


# ----------------------------------------------------------------------------- family schemas
def family_schema(
    model: type[ScenarioModel],
    hardware: type[Record],
    arrivals: Callable[[dict[str, Any]], list[tuple[str, Any]]],
) -> ScenarioSchema:
    """A family's :class:`~edgegym.core.registry.ScenarioSchema`: its model validates a file,
    then each arrival spec is built once (trace files resolved beside the scenario), so a bad
    trace is named at load time too.

    Args:
        model: The family's scenario model (``families/<name>/schema.py``).
        hardware: Its hardware section's model, whose fields overrides may name bare.
        arrivals: ``data -> [(field path, arrival mapping), ...]`` of a validated scenario.
    """

    def validate(raw: Mapping[str, Any], src: str, base_dir: Path | None) -> dict[str, Any]:
        try:
            data = model.model_validate(raw).model_dump()
        except ValidationError as exc:
            raise ScenarioError("\n".join(error_lines(exc, src, model=model, sep=": "))) from None
        for where, spec in arrivals(data):
            try:
                make_arrival(spec, base_dir, where=f"{src}: {where}")
            except (ValueError, FileNotFoundError) as exc:
                raise ScenarioError(str(exc)) from None
        return data

    top = {
        k: f
        for k, f in model.model_fields.items()
        if k not in model.SECTIONS and k not in model.FREE
    }
    return ScenarioSchema(
        validate, top, dict(hardware.model_fields), model.SECTIONS, hardware_key=model.HARDWARE
    )


def _family(raw: Mapping[str, Any], src: str) -> Family:
    """The registered family a parsed scenario names.

    Raises:
        ScenarioError: ``family`` is missing, not a string, or no registered family's name.
    """
    name = raw.get("family")
    family = FAMILIES.get(name) if isinstance(name, str) else None
    if family is None:
        got = shown(name) if "family" in raw else "nothing"
        raise ScenarioError(f"{src}: family: must be one of {', '.join(FAMILIES)}, got {got}")
    return family


@dataclass
class Scenario:
    """A validated scenario: the raw mapping plus where it came from."""

    name: str
    data: dict[str, Any]
    source: str

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def get(self, key: str, default: Any = None) -> Any:
        """Mapping-style access."""
        return self.data.get(key, default)

    def with_overrides(self, **overrides: Any) -> Scenario:
        """A validated copy with field overrides (as :func:`load` applies them)."""
        path = Path(self.source)
        src = _source(path)
        raw = apply_overrides(copy.deepcopy(self.data), overrides, src)
        return Scenario(self.name, validate(raw, src, path.parent), self.source)


def validate(raw: Any, src: str, base_dir: Path | None = None) -> dict[str, Any]:
    """Validate a scenario mapping and fill defaults; raise :class:`ScenarioError` if bad.

    Args:
        raw: The parsed file.
        src: Name used in messages.
        base_dir: Directory relative trace paths resolve against (the file's directory).

    Returns:
        The validated scenario: plain dicts, lists and numbers, defaults filled in.
    """
    if not isinstance(raw, Mapping):
        raise ScenarioError(f"{src}: the file must hold a mapping of fields at the top level")
    return _family(raw, src).schema.validate(raw, src, base_dir)


# ----------------------------------------------------------------------------- loading
def bundled_dir() -> Path:
    """The folder of the bundled scenario files (``edgegym.scenario_data``)."""
    return Path(str(resources.files("edgegym.scenario_data")))


def bundled() -> list[str]:
    """Names of the bundled scenarios."""
    return sorted(p.stem for p in bundled_dir().glob("*.yaml"))


def resolve(name_or_path: str | Path) -> Path:
    """Path of a bundled scenario name or of a scenario file."""
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml") or p.exists():
        if not p.exists():
            raise ScenarioError(f"{p}: scenario file not found")
        if p.is_dir():
            raise ScenarioError(f"{p}: is a folder; give a scenario .yaml file")
        return p
    candidate = bundled_dir() / f"{name_or_path}.yaml"
    if not candidate.exists():
        raise ScenarioError(
            f"unknown scenario {str(name_or_path)!r}; bundled: {', '.join(bundled())} "
            "(or give a path to a .yaml file)"
        )
    return candidate


def parse_value(value: Any, what: str) -> Any:
    """An override's value: a string (``--set`` passes strings) parsed as YAML, anything else
    as it is; text that is not YAML stays a string (``name=a: b``).

    Args:
        value: The value given.
        what: How a message names it (``"override 'quanta'"``).

    Raises:
        ScenarioError: YAML that parses but is refused (a duplicate key, an alias bomb;
            :func:`edgegym.inputs.load_yaml`), or nested too deeply.
    """
    if not isinstance(value, str):
        return value
    try:
        return load_yaml(value)
    except StrictYAMLError as exc:
        raise ScenarioError(f"{what}: {yaml_problem(exc)}") from None
    except yaml.YAMLError:
        return value
    except RecursionError:
        raise ScenarioError(f"{what}: nested too deeply") from None


def _override_path(key: str) -> list[str | int]:
    """The parts of an override key: ``tenants[1].slo_ms`` and ``tenants.1.slo_ms`` both give
    ``["tenants", 1, "slo_ms"]`` (a whole number is a list entry's index)."""
    path: list[str | int] = []
    for part in key.split("."):
        name, *indices = part.replace("]", "").split("[")
        for text in [name, *indices] if name else indices:
            path.append(int(text) if text.isdigit() else text)
    return path


def _entry(node: list[Any], index: str | int, key: str, src: str, where: str) -> int:
    """``index`` as an index of the list ``node`` (the entries of ``where``), or the error."""
    if not isinstance(index, int) or index >= len(node):
        raise ScenarioError(
            f"{src}: override {key!r}: {where} is a list of {len(node)} entries; name one by "
            f"its index, 0 to {len(node) - 1} ({where}[0].field or {where}.0.field)"
        )
    return index


def apply_overrides(raw: dict[str, Any], overrides: Mapping[str, Any], src: str) -> dict[str, Any]:
    """Apply ``key=value`` overrides: dotted paths, list entries by index (``tenants[1].slo_ms``
    or ``tenants.1.slo_ms``); bare hardware keys such as ``gpus`` work."""
    out = copy.deepcopy(raw)
    schema = _family(out, src).schema
    top, hardware, sections = schema.top, schema.hardware, schema.sections
    for key, value in overrides.items():
        path = _override_path(key)
        if len(path) == 1 and path[0] not in out and path[0] in hardware:
            path = [schema.hardware_key, path[0]]
        if len(path) == 1 and path[0] not in top and path[0] not in sections:
            allowed = [*top, *hardware, "section.field"]
            raise UnknownOverrideError(
                f"{src}: override {key!r}: unknown field (allowed: {', '.join(allowed)})",
                key,
                allowed,
            )
        node: Any = out
        for depth, part in enumerate(path[:-1]):
            where = ".".join(map(str, path[:depth]))
            if isinstance(node, list):
                node = node[_entry(node, part, key, src, where)]
            else:
                node = node.setdefault(str(part), {})
            if not isinstance(node, (dict, list)):
                raise ScenarioError(f"{src}: override {key!r}: {part} is not a section")
        parsed = parse_value(value, f"{src}: override {key!r}")
        if path == ["family"] and parsed != out["family"]:
            raise ScenarioError(
                f"{src}: override 'family': a scenario's family cannot be changed (it is "
                f"{out['family']!r}, got {shown(parsed)}); load a scenario of that family"
            )
        if isinstance(node, list):
            node[_entry(node, path[-1], key, src, ".".join(map(str, path[:-1])))] = parsed
        else:
            node[str(path[-1])] = parsed
    return out


#: The field of a scenario file that derives it from a bundled scenario (:func:`read_raw`).
EXTENDS = "extends"
#: Longest chain of derivations (a file extending one that extends another, ...).
MAX_EXTENDS = 8


def merge_patch(base: Any, patch: Any) -> Any:
    """``patch`` applied to ``base`` as a JSON Merge Patch (RFC 7386): mappings merge key by
    key, recursively; a key set to null (``~``) is removed; anything else (a number, a text, a
    list) replaces the base's value whole. Neither argument is changed."""
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    out = dict(base) if isinstance(base, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = merge_patch(out.get(key), value)
    return out


def _source(path: Path) -> str:
    """How messages name a scenario file: a bundled one by its file name, others by path."""
    return path.name if path.parent == bundled_dir() else str(path)


def _parse(path: Path) -> Any:
    """A scenario file's YAML, parsed as untrusted input (nothing validated yet)."""
    src = _source(path)
    try:
        return load_yaml(read_text(path, "scenario file", "scenario"))
    except (InputError, FileNotFoundError) as exc:
        raise ScenarioError(str(exc)) from None
    except StrictYAMLError as exc:  # a duplicate key, an alias bomb
        raise ScenarioError(f"{src}: {yaml_problem(exc)}") from None
    except yaml.YAMLError as exc:
        raise ScenarioError(f"{src}: not valid YAML: {yaml_problem(exc)}") from None
    except RecursionError:
        raise ScenarioError(f"{src}: nested too deeply to be a scenario file") from None


def read_raw(name_or_path: str | Path) -> Any:
    """A scenario file's mapping as written, with its ``extends`` resolved; not validated.

    A file may derive from a bundled scenario: ``extends: ekya-cityscapes`` takes that
    scenario's mapping and applies the rest of the file to it as a merge patch
    (:func:`merge_patch`: sections and ``provenance`` merge field by field, a list replaces the
    base's list whole, ``~`` removes a field). A derived file names itself (``name``); it may
    extend only a bundled scenario, by name, so a file never makes edgegym read a path it
    names. Chains are followed up to :data:`MAX_EXTENDS` deep; a cycle is an error. A relative
    trace ``path`` resolves beside the file loaded, inherited or not (no bundled scenario
    names a trace file).

    Raises:
        ScenarioError: The file is missing or not YAML, or its ``extends`` names no bundled
            scenario, forms a cycle or chains too deep, or it gives no ``name`` of its own.
    """
    path = resolve(name_or_path)
    raw = _parse(path)
    chain = [_source(path)]
    patches = []
    while isinstance(raw, dict) and EXTENDS in raw:
        src = chain[-1]
        base = raw[EXTENDS]
        names = bundled()
        if not isinstance(base, str) or base not in names:
            raise ScenarioError(
                f"{src}: {EXTENDS}: must name a bundled scenario ({', '.join(names)}), got "
                f"{shown(base)}"
            )
        if "name" not in raw:
            raise ScenarioError(f"{src}: a scenario that extends {base!r} needs a name of its own")
        if f"{base}.yaml" in chain:
            raise ScenarioError(
                f"{src}: {EXTENDS}: a cycle ({' -> '.join([*chain, f'{base}.yaml'])})"
            )
        if len(chain) > MAX_EXTENDS:
            raise ScenarioError(
                f"{chain[0]}: {EXTENDS}: more than {MAX_EXTENDS} derivations ({' -> '.join(chain)})"
            )
        patches.append({k: v for k, v in raw.items() if k != EXTENDS})
        chain.append(f"{base}.yaml")
        raw = _parse(bundled_dir() / f"{base}.yaml")
    for patch in reversed(patches):
        raw = merge_patch(raw, patch)
    return raw


def load(name_or_path: str | Path, **overrides: Any) -> Scenario:
    """Load, override and validate a scenario.

    Args:
        name_or_path: A bundled name (see :func:`bundled`) or a path to a YAML file (which may
            extend a bundled scenario: :func:`read_raw`).
        **overrides: Field overrides, e.g. ``gpus=4`` or ``drift.drift=[0.1, 0.2]``.

    Raises:
        ScenarioError: The file is missing, unparsable (a duplicate key and an alias bomb
            included), extends no bundled scenario, or a field is out of range.
    """
    path = resolve(name_or_path)
    src = _source(path)
    raw = read_raw(path)
    try:
        if overrides:
            raw = apply_overrides(raw if isinstance(raw, dict) else {}, overrides, src)
        data = validate(raw, src, path.parent)
    except RecursionError:
        raise ScenarioError(f"{src}: a value is nested too deeply to be a scenario") from None
    return Scenario(name=data["name"], data=data, source=str(path))

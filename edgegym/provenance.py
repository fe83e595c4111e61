"""Where each scenario input comes from: the ``provenance`` map of a scenario file.

A bundled scenario names the source of every input. Its ``provenance`` is a mapping from a
field path to one line that says where the value comes from::

    provenance:
      streams: "paper: Ekya §6.1, 10 video streams per GPU cluster"
      hardware.gpu: "paper: Ekya §6.1, p3 instances (V100)"
      retrain_configs: "paper: Ekya Fig. 3b, 18 configurations spanning ~200x in GPU-seconds"
      tenants.slo_ms: "synthesised: MIGRator publishes no SLOs; 5x the 7g latency"

A path is dotted; list items are addressed without an index (``tenants.slo_ms`` covers every
tenant's ``slo_ms``). An entry covers its field and everything under it, so a whole block can
have one source. Each source starts with its kind, then a colon:

``code``         the authors' released code or data, named by repository, path and commit;
``paper``        a measurement of the paper named by figure, table or section;
``hardware``     a public hardware fact (a datasheet, a published benchmark);
``measured``     an edgegym measurement on real hardware (docs/real-gpu.md);
``synthesised``  the paper publishes no number: how the value follows the paper's ranges;
``choice``       an experiment or modelling choice (seeds, objective weights, units);
``derived``      computed from measured values by a stated rule (``edgegym profile``'s MIG
                 instance latencies scaled from a whole-device measurement).

A profiled file (``edgegym profile``) also keeps the record of its measurements under the key
``measured`` (a mapping, not a source).

Scheduler results of the papers (their evaluation figures) are never a source: they are the
held-out claims of ``docs/reproduction/claims.json``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

KINDS = ("code", "paper", "hardware", "measured", "synthesised", "choice", "derived")

#: Fields that are not inputs: names, free text and the provenance itself.
NOT_INPUTS = frozenset({"name", "family", "description", "provenance", "notes", "paper"})


def input_paths(raw: Mapping[str, Any]) -> list[str]:
    """Dotted paths of every leaf input of a scenario mapping (list items without index)."""

    def walk(value: Any, path: str) -> Iterator[str]:
        if isinstance(value, Mapping) and value:
            for key, sub in value.items():
                yield from walk(sub, f"{path}.{key}" if path else str(key))
        elif isinstance(value, list) and value and all(isinstance(v, Mapping) for v in value):
            for item in value:
                yield from walk(item, path)
        else:
            yield path

    paths: list[str] = []
    for key, value in raw.items():
        if key in NOT_INPUTS:
            continue
        for p in walk(value, str(key)):
            if p not in paths:
                paths.append(p)
    return paths


def _covered(path: str, keys: set[str]) -> bool:
    parts = path.split(".")
    return any(".".join(parts[:i]) in keys for i in range(1, len(parts) + 1))


def provenance_problems(raw: Mapping[str, Any]) -> list[str]:
    """What is wrong with a scenario mapping's provenance (empty when every input has a source).

    Problems: no ``provenance`` mapping; an input path no entry covers; an entry that names no
    field of the scenario; a source that is empty or does not start with one of :data:`KINDS`.
    """
    prov = raw.get("provenance")
    if not isinstance(prov, Mapping):
        return ["no provenance mapping (field path -> 'kind: source')"]
    problems: list[str] = []
    paths = input_paths(raw)
    keys = {str(k) for k in prov}
    for path in paths:
        if not _covered(path, keys):
            problems.append(
                f"{path}: no source (add a provenance entry for it or a block above it)"
            )
    for key, source in prov.items():
        key = str(key)
        if key == "measured" and isinstance(source, Mapping):
            continue  # the profiler's record of its measurements
        if not any(p == key or p.startswith(key + ".") for p in paths):
            problems.append(f"provenance.{key}: names no field of this scenario")
        kind, sep, text = str(source or "").partition(":")
        if not sep or kind.strip() not in KINDS or not text.strip():
            problems.append(
                f"provenance.{key}: must read '<kind>: <source>' with kind one of "
                f"{', '.join(KINDS)}, got {source!r}"
            )
    return problems


def source_of(raw: Mapping[str, Any], path: str) -> str | None:
    """The source that covers ``path`` (the most specific entry), or None."""
    prov = raw.get("provenance")
    if not isinstance(prov, Mapping):
        return None
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        key = ".".join(parts[:i])
        if key in prov:
            return str(prov[key])
    return None

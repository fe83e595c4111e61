"""A scenario that extends a bundled one (``extends: NAME``): the base's mapping with the
file's own fields applied as a JSON Merge Patch (RFC 7386), read as untrusted input.

The bundled variants of ``ekya-cityscapes`` are written this way, so a derived file must load
to exactly what its base loads to with the same fields overridden; a file that names anything
but a bundled scenario, forms a cycle or gives no name of its own is refused in one line.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from edgegym import scenarios
from edgegym.scenarios import MAX_EXTENDS, ScenarioError, load, merge_patch, read_raw

# RFC 7386, Appendix A: (original, patch, result).
RFC_7386_EXAMPLES = [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    (["a", "b"], ["c", "d"], ["c", "d"]),
    ({"a": "b"}, ["c"], ["c"]),
    ({"a": "foo"}, None, None),
    ({"a": "foo"}, "bar", "bar"),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
]

#: Each bundled derived scenario and the overrides that turn its base into it.
DERIVED = {
    "ekya-cityscapes-fig2c-drift": {"drift.floor_gap": [0.03, 0.29]},
    "ekya-cityscapes-mps-interference": {
        "mps": {"interference": True, "inference_slowdown": 0.02, "retrain_slowdown": 0.043}
    },
    "ekya-waymo": {
        "drift.ceiling": [0.77, 0.90],
        "drift.floor_gap": [0.08, 0.26],
        "drift.drift": [0.06, 0.20],
        "drift.data_volume": [0.7, 1.3],
        "drift.demand": [0.8, 1.2],
    },
}
NOT_INPUTS = ("name", "description", "provenance", "notes", "paper")


def _write(tmp_path: Path, raw: object, name: str = "s.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


@pytest.mark.parametrize(("original", "patch", "result"), RFC_7386_EXAMPLES)
def test_merge_patch_gives_rfc_7386s_examples(original, patch, result) -> None:
    before = repr(original)
    assert merge_patch(original, patch) == result
    assert repr(original) == before  # the base is not changed


@pytest.mark.parametrize("name", sorted(DERIVED))
def test_a_bundled_derived_scenario_is_its_base_with_its_fields_overridden(name: str) -> None:
    raw = yaml.safe_load(scenarios.resolve(name).read_text())
    assert raw["extends"] == "ekya-cityscapes"
    derived, base = load(name).data, load("ekya-cityscapes", **DERIVED[name]).data
    assert {k: v for k, v in derived.items() if k not in NOT_INPUTS} == {
        k: v for k, v in base.items() if k not in NOT_INPUTS
    }
    assert derived["name"] == name and derived["description"] != base["description"]
    # provenance merges per field: the base's sources stay, the variant's replace theirs
    prov = derived["provenance"]
    assert prov["streams"] == base["provenance"]["streams"]
    assert set(prov) >= set(base["provenance"])


def test_every_bundled_derivation_names_a_bundled_base_and_reads_as_a_whole_file() -> None:
    files = {n: yaml.safe_load(scenarios.resolve(n).read_text()) for n in scenarios.bundled()}
    derived = {n: raw["extends"] for n, raw in files.items() if "extends" in raw}
    assert set(DERIVED) | {"srs-edge-3servers", "srs-edge-8apps"} <= set(derived)
    for name, base in derived.items():
        raw, whole = read_raw(name), read_raw(base)
        assert "extends" not in raw and raw["name"] == name
        assert set(raw) >= set(whole)  # the base's fields come along
        assert all(raw[k] == whole[k] for k in whole if k not in files[name])
        load(name)


def test_a_users_file_extends_a_bundled_scenario_and_removes_a_field(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        {
            "extends": "ekya-cityscapes",
            "name": "mine",
            "streams": 4,
            "hardware": {"gpus": 2},
            "mps": None,  # back to the schema's default
            "provenance": {"streams": "choice: four of my cameras"},
        },
    )
    sc = load(path)
    base = load("ekya-cityscapes")
    assert sc.name == "mine" and sc["streams"] == 4
    assert sc["hardware"] == {**base["hardware"], "gpus": 2}  # merged field by field
    assert sc["inference_configs"] == base["inference_configs"]
    assert sc["provenance"]["streams"] == "choice: four of my cameras"
    assert sc["provenance"]["window_s"] == base["provenance"]["window_s"]
    assert load(path, streams=6)["streams"] == 6  # overrides apply after the derivation


@pytest.mark.parametrize(
    ("extends", "says"),
    [
        ("no-such-scenario", "extends: must name a bundled scenario"),
        ("../scenarios/ekya-cityscapes", "extends: must name a bundled scenario"),
        ("/etc/passwd", "extends: must name a bundled scenario"),
        (["ekya-cityscapes"], "extends: must name a bundled scenario"),
        (None, "extends: must name a bundled scenario"),
    ],
)
def test_extends_names_only_a_bundled_scenario(tmp_path: Path, extends, says) -> None:
    path = _write(tmp_path, {"extends": extends, "name": "x"})
    with pytest.raises(ScenarioError) as err:
        load(path)
    message = str(err.value)
    assert message.startswith(f"{path}: {says}") and "ekya-cityscapes" in message
    assert "\n" not in message


def test_a_derived_file_needs_a_name_of_its_own(tmp_path: Path) -> None:
    path = _write(tmp_path, {"extends": "ekya-cityscapes", "streams": 4})
    with pytest.raises(ScenarioError, match="extends 'ekya-cityscapes' needs a name of its own"):
        load(path)


def test_a_derived_file_is_still_validated(tmp_path: Path) -> None:
    path = _write(tmp_path, {"extends": "ekya-cityscapes", "name": "x", "streams": -1})
    with pytest.raises(ScenarioError, match=r"streams: .*got -1"):
        load(path)


def _bundle(monkeypatch, tmp_path: Path, files: dict[str, dict]) -> None:
    for name, raw in files.items():
        _write(tmp_path, raw, f"{name}.yaml")
    monkeypatch.setattr(scenarios, "bundled_dir", lambda: tmp_path)


def test_a_cycle_of_derivations_is_refused(monkeypatch, tmp_path: Path) -> None:
    _bundle(
        monkeypatch,
        tmp_path,
        {"a": {"extends": "b", "name": "a"}, "b": {"extends": "a", "name": "b"}},
    )
    with pytest.raises(ScenarioError, match=r"b.yaml: extends: a cycle \(a.yaml -> b.yaml -> a"):
        read_raw("a")


def test_a_chain_of_derivations_is_followed_to_a_depth(monkeypatch, tmp_path: Path) -> None:
    base = yaml.safe_load(scenarios.resolve("ekya-cityscapes").read_text())
    chain = {"s0": base}
    for i in range(1, MAX_EXTENDS + 2):
        chain[f"s{i}"] = {"extends": f"s{i - 1}", "name": f"s{i}", "windows": i}
    _bundle(monkeypatch, tmp_path, chain)
    raw = read_raw(f"s{MAX_EXTENDS}")  # MAX_EXTENDS derivations: followed
    assert raw["name"] == f"s{MAX_EXTENDS}" and raw["windows"] == MAX_EXTENDS
    assert raw["streams"] == base["streams"]
    with pytest.raises(ScenarioError, match=f"more than {MAX_EXTENDS} derivations"):
        read_raw(f"s{MAX_EXTENDS + 1}")


def _trace_paths(node: object) -> list[str]:
    if isinstance(node, dict):
        own = [str(node["path"])] if "kind" in node and "path" in node else []
        return own + [p for v in node.values() for p in _trace_paths(v)]
    if isinstance(node, list):
        return [p for v in node for p in _trace_paths(v)]
    return []


def test_no_bundled_scenario_names_a_trace_file_a_derived_file_would_resolve_elsewhere() -> None:
    # A relative trace path resolves beside the file loaded (read_raw's docstring): a bundled
    # scenario with one would break every user file in another folder that extends it.
    assert _trace_paths({"kind": "trace", "path": "x.csv"}) == ["x.csv"]
    assert {n: _trace_paths(read_raw(n)) for n in scenarios.bundled()} == {
        n: [] for n in scenarios.bundled()
    }

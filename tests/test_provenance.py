"""Every bundled scenario names the source of every input (issue 14, acceptance 2)."""

from __future__ import annotations

import pytest

from edgegym import scenarios
from edgegym.provenance import input_paths, provenance_problems, source_of

RAW = {
    "name": "x",
    "family": "mig",
    "description": "d",
    "hardware": {"gpu": "A100-40GB"},
    "window_s": 200,
    "tenants": [{"name": "a", "slo_ms": 50}, {"name": "b", "slo_ms": 40}],
}


def _with(prov: dict[str, str]) -> dict:
    return {**RAW, "provenance": prov}


def test_paths_address_list_items_without_index() -> None:
    assert input_paths(RAW) == ["hardware.gpu", "window_s", "tenants.name", "tenants.slo_ms"]


def test_blocks_cover_their_fields() -> None:
    prov = {
        "hardware": "hardware: A100 datasheet",
        "window_s": "paper: MIGRator §5.1, 200 s windows",
        "tenants": "paper: Table 4",
        "tenants.slo_ms": "synthesised: 5x the 7g latency",
    }
    assert provenance_problems(_with(prov)) == []
    assert source_of(_with(prov), "tenants.slo_ms").startswith("synthesised")
    assert source_of(_with(prov), "tenants.name") == "paper: Table 4"


def test_a_field_without_source_is_named() -> None:
    prov = {"hardware.gpu": "hardware: A100", "tenants": "paper: Table 4"}
    assert provenance_problems(_with(prov)) == [
        "window_s: no source (add a provenance entry for it or a block above it)"
    ]


def test_stale_entries_and_unnamed_kinds_are_problems() -> None:
    prov = {
        "hardware": "hardware: A100",
        "window_s": "from the paper",
        "tenants": "paper: Table 4",
        "windows": "paper: §5",
    }
    problems = provenance_problems(_with(prov))
    assert any(p.startswith("provenance.window_s: must read") for p in problems)
    assert "provenance.windows: names no field of this scenario" in problems
    assert provenance_problems(RAW) == ["no provenance mapping (field path -> 'kind: source')"]


@pytest.mark.parametrize("name", scenarios.bundled())
def test_bundled_scenario_names_every_source(name: str) -> None:
    raw = scenarios.read_raw(name)  # a derived file as its base plus its own fields
    assert provenance_problems(raw) == []

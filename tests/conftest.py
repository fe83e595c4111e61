"""Shared fixtures: scenario files written to a temporary directory."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

#: A valid 2-stream, 1-window, 2-configuration table scenario (edit a deep copy, then write it).
TABLE_SCENARIO: dict[str, Any] = {
    "name": "tiny-table",
    "family": "continual",
    "hardware": {"gpu": "V100-16GB", "gpus": 1, "share_quantum": 0.25},
    "streams": 2,
    "windows": 1,
    "window_s": 100,
    "a_min": 0.0,
    "profiler_noise": 0.0,
    "retrain_configs": [{"name": "hi"}, {"name": "lo"}],
    "inference_configs": [
        {"name": "full", "share": 0.5, "accuracy_factor": 1.0},
        {"name": "half", "share": 0.25, "accuracy_factor": 0.8},
    ],
    "drift": {
        "kind": "table",
        "start_accuracy": [0.5, 0.4],
        "post_accuracy": [[[0.9, 0.7]], [[0.8, 0.6]]],
        "gpu_seconds": [[[40, 10]], [[30, 20]]],
    },
}


@pytest.fixture
def table_scenario() -> dict[str, Any]:
    """A fresh deep copy of :data:`TABLE_SCENARIO`."""
    return copy.deepcopy(TABLE_SCENARIO)


@pytest.fixture
def write_scenario(tmp_path: Path) -> Callable[..., Path]:
    """Write a mapping (or raw text) as a YAML scenario file under ``tmp_path``."""

    def write(data: dict[str, Any] | str, name: str = "scenario.yaml") -> Path:
        path = tmp_path / name
        text = data if isinstance(data, str) else yaml.safe_dump(data, sort_keys=False)
        path.write_text(text)
        return path

    return write

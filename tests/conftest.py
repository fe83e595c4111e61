"""Shared fixtures: scenario files written to a temporary directory."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, settings

# Property tests (tests/test_properties.py): CI runs a fixed, bounded set of examples (the
# same every run); `pytest --hypothesis-profile=long` searches 40x more, freshly drawn.
settings.register_profile(
    "ci",
    max_examples=12,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "long", max_examples=500, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("ci")

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


#: ``--set`` options that make each family's default scenario tiny for the leaderboard
#: (about 5 s for all four).
TINY_LEADERBOARD_SETS = ["--set", "continual:windows=2", "--set", "mig:window_s=10",
                         "--set", "energy:quanta=10", "--set", "dag:requests=20"]  # fmt: skip


@pytest.fixture(scope="session")
def tiny_sets() -> list[str]:
    """:data:`TINY_LEADERBOARD_SETS` (a fresh copy)."""
    return list(TINY_LEADERBOARD_SETS)


@pytest.fixture
def no_ray(monkeypatch):
    """Make ``import ray`` fail, as on a machine without the ``[ray]`` extra."""
    import builtins

    real_import = builtins.__import__

    def fake(name, *args, **kwargs):
        if name == "ray" or name.startswith("ray."):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake)


@pytest.fixture(scope="session")
def ray_cluster():
    """One local Ray cluster (2 CPUs) for the whole session; skips without the ``[ray]`` extra.

    Code under test that calls :func:`edgegym.parallel.init_ray` joins it."""
    pytest.importorskip("ray")
    from edgegym.parallel import init_ray

    ray = init_ray(num_cpus=2)
    yield ray
    ray.shutdown()


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


def _check_schedule(cluster, scheds) -> None:
    """Every task placed, precedence + transfer, arrival + input transfer, and capacity at
    every instant."""
    events = []
    for s in scheds:
        app = s.app
        assert sorted(s.tasks) == list(range(app.n)), "a task was not placed"
        for i, p in s.tasks.items():
            dur = cluster.exec_time(app.workload[i], app.demand[i], p.server)
            assert p.finish == pytest.approx(p.start + dur)
            earliest = s.arrival + (app.input_mb[i] / cluster.source[p.server])
            assert p.start >= earliest - 1e-9
            for u, d in app.preds(i):
                q = s.tasks[u]
                assert p.start >= q.finish + cluster.transfer(d, q.server, p.server) - 1e-9
            events.append((p.server, p.start, p.finish, app.demand[i]))
    for j in range(cluster.n):
        mine = [e for e in events if e[0] == j]
        for _, t, _, _ in mine:  # usage only rises at starts
            load = sum(c for _, s0, f0, c in mine if s0 <= t + 1e-12 < f0 - 1e-12)
            assert load <= cluster.capacity[j] + 1e-9


@pytest.fixture
def check_schedule():
    """Independent checker of DAG schedules (precedence + transfers, inputs, capacity)."""
    return _check_schedule

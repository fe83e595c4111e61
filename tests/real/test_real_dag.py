"""The DAG family for real (``DAGOffload-v0``, ``backend="real"``): the simulator's decisions
and observations, every placed node run on the CPU, and each request's completion replayed
from the measured node times (the reward's completion term), its accuracy measured."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("sklearn")
import torch

from edgegym.baselines import make_policy
from edgegym.families.dag.env import DAGOffloadEnv
from edgegym.real import TINY_DAG_SCENARIO
from edgegym.real import dag as real_dag
from tests.real.stubs import FixedMeter


def _play(env, actions=None, seed=0):
    """An episode of ``mrs`` (or of the given actions): observations, actions, steps."""
    pol = make_policy("mrs", env)
    obs, info = env.reset(seed=seed)
    pol.reset(seed)
    observations, taken, steps, done = [obs], [], [], False
    while not done:
        if actions is None:
            action, _ = pol.predict(obs, deterministic=True)
        else:
            action = actions[len(taken)]
        obs, reward, done, _, info = env.step(action)
        observations.append(obs)
        taken.append(action)
        steps.append((reward, info))
    return observations, taken, steps


def test_the_real_run_sees_the_simulators_spaces_observations_and_terms():
    sim = gym.make("edgegym/DAGOffload-v0", scenario=TINY_DAG_SCENARIO).unwrapped
    real = gym.make(
        "edgegym/DAGOffload-v0", scenario=TINY_DAG_SCENARIO, backend="real", device="cpu"
    ).unwrapped
    assert real.observation_space == sim.observation_space
    assert real.action_space == sim.action_space
    sim_obs, actions, sim_steps = _play(sim)
    real_obs, _, real_steps = _play(real, actions)
    assert len(real_obs) == len(sim_obs)
    for a, b in zip(sim_obs, real_obs, strict=True):
        assert all(np.array_equal(a[key], b[key]) for key in a)
    completion_differs = False
    for (_, s), (_, r) in zip(sim_steps, real_steps, strict=True):
        assert np.array_equal(s["action_mask"], r["action_mask"])
        assert s["epoch"] == r["epoch"] and s.get("server") == r.get("server")
        for term in ("accuracy", "energy"):  # the simulator's
            assert r["reward_terms"][term] == s["reward_terms"][term]
        completion_differs |= r["reward_terms"]["completion"] != s["reward_terms"]["completion"]
    assert completion_differs  # measured, not the profile's
    rep = real_steps[-1][1]["real"]
    assert rep["device"] == "cpu" and not rep["energy_available"]
    assert any(e.startswith("transfers:") for e in rep["emulated"])
    assert any(e.startswith("energy:") and "model" in e for e in rep["emulated"])
    assert rep["episode"]["energy_j"] == rep["episode"]["sim_energy_j"]  # no NVML: modelled
    assert rep["episode"]["requests"] == sim.n_requests
    assert rep["episode"]["sim_completion_s"] == pytest.approx(
        sim_steps[-1][1]["episode_metrics"]["completion_s"]
    )


def _retrain_all(env, server=0):
    """Actions of a one-request episode: retrain every task with configuration 0 and put
    every node on ``server``."""
    width = 1 + env.n_nodes
    admit = np.zeros(width, dtype=np.int64)
    admit[1:] = 1
    place = np.zeros(width, dtype=np.int64)
    place[0] = server
    return [admit] + [place] * 10


def test_measured_node_times_replace_the_profiles_in_the_replayed_completion():
    scale = 3.0
    env = DAGOffloadEnv(TINY_DAG_SCENARIO, requests=1, backend="real", time_scale=scale)
    _, _, steps = _play(env, _retrain_all(env))
    log = [rec for _, info in steps for rec in info["real"]["log"]]
    nodes = [rec for rec in log if rec["event"] == "node"]
    (request,) = [rec for rec in log if rec["event"] == "request"]
    app = env.apps[env.app_of[0]]
    assert len(nodes) == 2 * app.n  # every task and its retraining node
    # The replay by hand: every node on server 0 (no transfer between nodes), inputs from the
    # controller and training data from storage at their modelled time, the nodes' measured
    # seconds times the time scale; one request, so no node waits for capacity.
    arrival = float(env.times[0])
    source, storage = env.state.source_mb_s[0, 0], env.state.storage_mb_s[0, 0]
    finish = {}
    for rec in nodes:
        i, kind = rec["task"], rec["kind"]
        assert rec["server"] == 0 and rec["measured_s"] > 0
        if kind == "retrain":
            ready = arrival + env.options[0].data_mb / storage
            preds = [("infer", u) for u, _ in app.preds(i)]
        else:
            ready = arrival + app.input_mb[i] / source if app.input_mb[i] > 0 else arrival
            preds = [("infer", u) for u, _ in app.preds(i)] + [("retrain", i)]
        ready = max([ready] + [finish[p] for p in preds])
        assert rec["start_s"] == pytest.approx(ready, abs=1e-12)
        assert rec["finish_s"] == pytest.approx(ready + scale * rec["measured_s"], abs=1e-12)
        finish[(kind, i)] = rec["finish_s"]
    completion = max(finish.values()) - arrival
    assert request["completion_s"] == pytest.approx(completion, abs=1e-12)
    # The reward's completion term is the replay's: it adds up to minus the real completion.
    paid = sum(info["reward_terms"]["completion"] for _, info in steps)
    assert paid == pytest.approx(-completion, abs=1e-12)
    assert request["sim_completion_s"] == pytest.approx(steps[-1][1]["completion_s"])
    assert abs(request["sim_completion_s"] - completion) > 1e-3
    # Measured accuracy beside the simulator's.
    assert 0.0 <= request["accuracy"] <= 1.0 and len(request["task_accuracy"]) == app.n
    assert request["sim_accuracy"] == pytest.approx(steps[0][1]["accuracy"])
    assert request["retrained"] == list(range(app.n))


def test_measured_node_energy_is_put_on_the_replays_time_base(monkeypatch):
    monkeypatch.setattr(real_dag, "EnergyMeter", lambda index: FixedMeter())
    env = DAGOffloadEnv(TINY_DAG_SCENARIO, requests=1, backend="real", time_scale=3.0)
    _, _, steps = _play(env, _retrain_all(env))
    assert not any(e.startswith("energy:") for e in steps[-1][1]["real"]["emulated"])
    total = 0.0
    for _, info in steps[1:]:  # the place epochs
        (node,) = [rec for rec in info["real"]["log"] if rec["event"] == "node"]
        # 200 W (2 J over a 0.01 s window) over the node's replayed scenario seconds.
        assert node["energy_j"] == pytest.approx(2.0 / 0.01 * node["duration_s"])
        assert info["energy_j"] == pytest.approx(node["energy_j"])
        assert info["reward_terms"]["energy"] == pytest.approx(-node["energy_j"] / 1000.0)
        assert node["sim_energy_j"] != pytest.approx(node["energy_j"])
        total += node["energy_j"]
    assert steps[-1][1]["real"]["episode"]["energy_j"] == pytest.approx(total)


def test_accuracy_can_be_left_unmeasured_and_says_so():
    env = DAGOffloadEnv(TINY_DAG_SCENARIO, requests=1, backend="real",
                        real_options={"accuracy": False})  # fmt: skip
    _, _, steps = _play(env, _retrain_all(env, server=1))
    rep = steps[-1][1]["real"]
    assert rep["episode"]["accuracy"] is None
    assert any(e.startswith("accuracy: not measured") for e in rep["emulated"])


def test_a_model_version_trains_once_even_when_needed_before_its_retraining_node():
    env = DAGOffloadEnv(TINY_DAG_SCENARIO, requests=1, backend="real")
    env.reset(seed=0)
    ex = env.executor
    base = ex.current[0]
    child = real_dag.ModelVersion(0, base, window=1, steps=3, seed=1)
    # A later request's inference node measures the version before its retraining node ran.
    acc = ex._accuracy(child, 1)
    assert 0.0 <= acc <= 1.0 and child.train_s > 0
    first, net = child.train_s, child.nets["cpu"]
    assert ex._net(child, "cpu") is net and child.train_s == first  # not trained again
    before, after = base.nets["cpu"].state_dict(), net.state_dict()
    changed = any(not torch.equal(before[key], after[key]) for key in before)
    assert changed  # SGD moved the child's weights; the parent's are untouched
    assert ex._accuracy(base, 1) is not None


def test_bad_devices_and_options_are_clear_errors(monkeypatch):
    with pytest.raises(ValueError, match="expected 'cpu' or 'cuda"):
        DAGOffloadEnv(TINY_DAG_SCENARIO, backend="real", device="tpu")
    with pytest.raises(ValueError, match="backend="):
        DAGOffloadEnv(TINY_DAG_SCENARIO, backend="hardware")
    monkeypatch.setattr("torch.cuda.is_available", lambda: False)
    with pytest.raises(RuntimeError, match="torch sees no CUDA GPU"):
        gym.make("edgegym/DAGOffload-v0", scenario=TINY_DAG_SCENARIO, backend="real",
                 device="cuda:0")  # fmt: skip
    with pytest.raises(ValueError, match="unknown key"):  # at construction, not at reset
        DAGOffloadEnv(TINY_DAG_SCENARIO, backend="real", real_options={"bogus": 1})


def test_servers_get_a_gpu_each_round_robin_where_several_are_present(monkeypatch):
    monkeypatch.setattr("torch.cuda.is_available", lambda: True)
    monkeypatch.setattr("torch.cuda.device_count", lambda: 2)
    assert real_dag.server_devices("cuda", 3) == ["cuda:0", "cuda:1", "cuda:0"]
    assert real_dag.server_devices("cuda:1", 2) == ["cuda:1", "cuda:1"]  # the GPU asked for
    assert real_dag.server_devices("cpu", 2) == ["cpu", "cpu"]


def test_fidelity_compares_completion_and_accuracy_real_against_simulated():
    from edgegym.real.fidelity import fidelity, format_report

    report = fidelity("edgegym/DAGOffload-v0")
    assert report["policy"] == "mrs" and report["scenario"].endswith("real-dag-tiny.yaml")
    (row,) = report["windows"]
    assert row["window"] == "episode"
    assert set(row["sim"]) == set(row["real"]) == {"reward", "completion_s", "accuracy",
                                                    "energy_j"}  # fmt: skip
    assert row["diff"]["energy_j"] == pytest.approx(0.0)  # modelled in both
    assert row["real"]["completion_s"] > 0 and row["diff"]["completion_s"] != 0
    assert 0.0 <= row["real"]["accuracy"] <= 1.0
    requests = report["requests"]
    assert len(requests) == 8
    assert all(r["completion_s"] > 0 and r["sim_completion_s"] > 0 for r in requests)
    text = format_report(report)
    assert "| episode |" in text and "| request | app |" in text and "transfers:" in text


def test_application_scoped_models_get_their_catalogue_stand_ins():
    """Under ``model_scope: application`` a model is named "application/model"; the real run
    builds the stand-in of the catalogue model behind the name and runs a request."""
    env = DAGOffloadEnv(TINY_DAG_SCENARIO, requests=1, backend="real", model_scope="application")
    assert all("/" in name for name in env.model_names)
    env.reset(seed=0)
    _, reward, _, _, _ = env.step(np.zeros(1 + env.n_nodes, dtype=np.int64))
    assert np.isfinite(reward)

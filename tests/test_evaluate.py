"""The evaluator: seeding, result schema, SB3 protocol, error handling, table and plots."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
import types
from typing import Any

import numpy as np
import pytest

from edgegym.baselines import make_policy
from edgegym.evaluation import EvalResult, evaluate
from edgegym.scenarios import ScenarioError

ENV = "edgegym/ContinualLearning-v0"
# A generated-drift scenario shrunk to 2 streams x 2 windows: episodes differ by seed.
SMALL = {"scenario": "ekya-cityscapes", "overrides": {"streams": 2, "windows": 2}}


class Recorder:
    """Wraps a baseline; records the episode each reset() starts and the protocol calls."""

    def __init__(self, env: Any, spec: str = "uniform") -> None:
        self.env = env
        self.inner = make_policy(spec, env)
        self.profiles: list[np.ndarray] = []
        self.reset_seeds: list[int] = []
        self.starts: list[bool] = []
        self.states: list[Any] = []

    def reset(self, seed: int | None = None) -> None:
        self.reset_seeds.append(seed)
        self.profiles.append(self.env.unwrapped.profile.post_acc.copy())

    def predict(self, obs, state=None, episode_start=None, deterministic=True):
        assert isinstance(episode_start, np.ndarray) and episode_start.shape == (1,)
        self.starts.append(bool(episode_start[0]))
        self.states.append(state)
        action, _ = self.inner.predict(obs)
        return action, len(self.starts)  # a "recurrent" state the evaluator must hand back


class FailsLater:
    """Runs a baseline, then raises on the given (episode, step)."""

    def __init__(self, env: Any, episode: int, step: int) -> None:
        self.inner = make_policy("thief", env)
        self.episode, self.step, self.seen = episode, step, -1
        self.steps = 0

    def reset(self, seed: int | None = None) -> None:
        self.seen += 1
        self.steps = 0

    def predict(self, obs, state=None, episode_start=None, deterministic=True):
        if self.seen == self.episode and self.steps == self.step:
            raise RuntimeError("policy exploded")
        self.steps += 1
        return self.inner.predict(obs)


def test_same_seeds_give_identical_results():
    kw = {"episodes": 2, "seed": 5, "progress": False, **SMALL}
    a = evaluate(ENV, ["thief", "random", "uniform-c2-50"], **kw)
    b = evaluate(ENV, ["thief", "random", "uniform-c2-50"], **kw)
    assert a.seeds == b.seeds == [5, 6]
    for ra, rb in zip(a.results, b.results, strict=True):
        assert ra["policy"] == rb["policy"]
        assert ra["per_episode"] == [
            {**e, "decision_time_s": pytest.approx(e["decision_time_s"], abs=1)}
            for e in rb["per_episode"]
        ]
        assert ra["mean_return"] == rb["mean_return"] and ra["metrics"] == rb["metrics"]
    # Different seeds give different episodes (the scenario's drift is random).
    c = evaluate(ENV, ["thief"], **{**kw, "seed": 50})
    assert c.result("thief")["mean_return"] != a.result("thief")["mean_return"]


def test_policies_face_identical_episodes():
    recorders: list[Recorder] = []

    def factory(spec: str):
        def build(env):
            recorders.append(Recorder(env, spec))
            return recorders[-1]

        return build

    res = evaluate(
        ENV,
        {"a": factory("uniform"), "b": factory("thief")},
        episodes=3,
        seed=11,
        progress=False,
        **SMALL,
    )
    assert res.ok
    a, b = recorders
    assert a.reset_seeds == b.reset_seeds == [11, 12, 13]
    for pa, pb in zip(a.profiles, b.profiles, strict=True):
        np.testing.assert_array_equal(pa, pb)
    assert not np.array_equal(a.profiles[0], a.profiles[1])  # seeds differ -> episodes differ
    # The same policy under two names scores exactly the same.
    twice = evaluate(ENV, {"x": "thief", "y": "thief"}, episodes=2, progress=False, **SMALL)
    assert twice.result("x")["per_episode"][0]["return"] == pytest.approx(
        twice.result("y")["per_episode"][0]["return"], abs=0
    )


def test_sb3_protocol_state_and_episode_start():
    holder: list[Recorder] = []

    def build(env):
        holder.append(Recorder(env))
        return holder[-1]

    res = evaluate(ENV, [build], scenario="ekya-table1", episodes=2, progress=False)
    rec = holder[0]
    steps = [e["steps"] for e in res.results[0]["per_episode"]]
    assert sum(steps) == len(rec.starts)
    expected_starts = [i == 0 for n in steps for i in range(n)]
    assert rec.starts == expected_starts
    # The state returned by predict comes back on the next call, reset to None per episode.
    expected_states = [
        None if i == 0 else sum(steps[:e]) + i for e, n in enumerate(steps) for i in range(n)
    ]
    assert rec.states == expected_states
    assert res.results[0]["policy"] == "Recorder"


def test_result_schema_and_json_round_trip(tmp_path):
    res = evaluate(
        ENV, ["thief", "uniform"], scenario="ekya-table1", episodes=2, seed=1, progress=False
    )
    path = tmp_path / "out" / "r.json"
    res.to_json(path)
    data = json.loads(path.read_text())
    assert set(data) == {"edgegym_output", "env", "scenario", "overrides", "seeds", "results"}
    assert data["edgegym_output"] == "evaluation"
    assert data["env"] == ENV and data["scenario"] == "ekya-table1"
    assert data["overrides"] == {} and data["seeds"] == [1, 2]
    for r in data["results"]:
        # The uniform baseline runs as Ekya evaluates it (no micro-profiler), and says so.
        setup = {"setup"} if r["policy"] == "uniform" else set()
        assert set(r) == {
            "policy",
            "episodes",
            "mean_return",
            "std_return",
            "metrics",
            "per_episode",
            "decision_time_s",
            *setup,
        }
        assert r["episodes"] == 2 and len(r["per_episode"]) == 2
        assert r["decision_time_s"] > 0
        assert {"accuracy", "energy_j", "retrainings"} <= set(r["metrics"])
        for stats in r["metrics"].values():
            assert set(stats) == {"mean", "std"}
        returns = [e["return"] for e in r["per_episode"]]
        assert r["mean_return"] == pytest.approx(np.mean(returns))
        assert r["std_return"] == pytest.approx(np.std(returns))
        accs = [e["metrics"]["accuracy"] for e in r["per_episode"]]
        assert r["metrics"]["accuracy"]["mean"] == pytest.approx(np.mean(accs))
        for e in r["per_episode"]:
            assert {"seed", "return", "metrics"} <= set(e) and e["steps"] >= 1
            # The return is the sum of window-mean accuracies minus the a_MIN shortfall.
            assert e["return"] <= 2 * e["metrics"]["accuracy"] + 1e-9
    back = EvalResult.from_json(path)
    assert {"edgegym_output": "evaluation", **back.to_dict()} == data  # the marker is the file's
    assert back.scenario_info["a_min"] == pytest.approx(0.4)


def test_table_lists_every_policy():
    res = evaluate(
        ENV,
        ["thief", "uniform", "no-retrain"],
        scenario="ekya-table1",
        episodes=1,
        progress=False,
    )
    table = res.table()
    lines = table.splitlines()
    for name in ("thief", "uniform", "no-retrain"):
        assert any(line.startswith(name + " ") for line in lines), table
    for col in ("return", "accuracy", "energy (kJ)", "retrainings", "decision ms"):
        assert col in lines[1]
    thief = res.result("thief")
    assert f"{thief['metrics']['accuracy']['mean']:.3f} ± " in table
    assert f"{thief['metrics']['energy_j']['mean'] / 1e3:.1f}" in table
    widths = {len(line) for line in lines[1:4]}
    assert len(widths) == 1  # aligned


def test_failure_mid_run_keeps_earlier_results(tmp_path):
    res = evaluate(
        ENV,
        {
            "thief": "thief",
            "broken": lambda env: FailsLater(env, episode=1, step=1),
            "uniform": "uniform",
        },
        scenario="ekya-table1",
        episodes=3,
        progress=False,
    )
    assert not res.ok and list(res.errors) == ["broken"]
    assert "policy exploded" in res.errors["broken"] and "seed 1" in res.errors["broken"]
    assert res.result("thief")["episodes"] == 3 and "error" not in res.result("thief")
    assert res.result("uniform")["episodes"] == 3  # later policies still run
    broken = res.result("broken")
    assert broken["episodes"] == 1 and [e["seed"] for e in broken["per_episode"]] == [0]
    data = json.loads(res.to_json(tmp_path / "p.json"))
    assert data["results"][1]["error"] == res.errors["broken"]
    assert "broken (!)" in res.table() and "policy exploded" in res.table()

    first = evaluate(
        ENV,
        {"broken": lambda env: FailsLater(env, 0, 0)},
        scenario="ekya-table1",
        episodes=1,
        progress=False,
    )
    r = first.result("broken")
    assert r["episodes"] == 0 and r["mean_return"] is None and r["metrics"] == {}
    assert json.loads(first.to_json())["results"][0]["error"]


@pytest.mark.parametrize(
    ("kwargs", "exc", "needle"),
    [
        ({"env_id": "edgegym/Nope-v0"}, ValueError, "Nope-v0"),
        ({"policies": ["thief", "nope"]}, ValueError, "nope"),
        ({"policies": ["thief:bogus=1"]}, ValueError, "bogus"),
        ({"policies": [42]}, ValueError, "42"),
        ({"scenario": "no-such-scenario"}, ScenarioError, "no-such-scenario"),
        ({"overrides": {"gpus": 0}}, ScenarioError, "gpus"),
        ({"episodes": 0}, ValueError, "episodes"),
        ({"seed": -1}, ValueError, "seed"),
        ({"policies": []}, ValueError, "no policies"),
    ],
)
def test_bad_arguments_raise_before_running(kwargs, exc, needle):
    args = {"env_id": ENV, "policies": ["thief"], "scenario": "ekya-table1", "episodes": 1}
    with pytest.raises(exc, match=needle):
        evaluate(**{**args, **kwargs, "progress": False})


def test_default_scenario_and_overrides_are_recorded():
    res = evaluate(
        ENV, ["uniform"], episodes=1, overrides={"streams": 2, "windows": 1}, progress=False
    )
    assert res.scenario == "ekya-cityscapes"  # ENV_IDS default
    assert res.overrides == {"streams": 2, "windows": 1}
    assert res.scenario_info["streams"] == 2 and res.scenario_info["windows"] == 1


def test_timeline_and_plots(tmp_path):
    from edgegym.plotting import plot_evaluation, plot_lines

    res = evaluate(
        ENV,
        ["thief", "uniform"],
        scenario="ekya-table1",
        episodes=2,
        timeline=True,
        progress=False,
    )
    assert set(res.timelines) == {"thief", "uniform"}
    tl = res.timelines["thief"]
    assert tl[0]["t0"] == 0 and tl[-1]["t1"] == pytest.approx(240)  # 2 windows x 120 s
    for prev, rec in itertools.pairwise(tl):
        assert rec["t0"] == pytest.approx(prev["t1"])
    for rec in tl:
        assert {
            "window",
            "accuracy",
            "share_retrain",
            "share_infer",
            "retrain_cfg",
            "infer_cfg",
        } <= set(rec)
        assert sum(rec["share_retrain"]) + sum(rec["share_infer"]) <= 3 + 1e-9
    # The timeline is of the first episode: its time-averaged accuracy is that episode's.
    acc = sum(np.mean(r["accuracy"]) * (r["t1"] - r["t0"]) for r in tl) / 240
    first = res.result("thief")["per_episode"][0]["metrics"]["accuracy"]
    assert acc == pytest.approx(first, rel=1e-6)
    png = plot_evaluation(res, tmp_path / "eval.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000
    # Round trip through JSON keeps the timelines, so the plot can be redrawn from the file.
    back = EvalResult.from_json(res.to_json())
    assert back.timelines == res.timelines
    plot_evaluation(back, tmp_path / "again.png")
    out = plot_lines(
        {"a": ([1, 2, 4], [0.5, 0.6, 0.7], [0.01, 0.02, 0.0]), "b": ([1, 2], [0.4, 0.5], None)},
        "GPUs",
        "accuracy",
        "test",
        tmp_path / "lines.png",
    )
    assert out.exists() and out.stat().st_size > 5_000


def test_no_timeline_unless_asked():
    res = evaluate(ENV, ["thief"], scenario="ekya-table1", episodes=1, progress=False)
    assert res.timelines == {} and "timeline" not in res.to_dict()["results"][0]


def test_package_level_evaluate_stays_callable():
    import edgegym
    import edgegym.evaluation  # importing the module must not shadow the function

    assert edgegym.evaluate is edgegym.evaluation.evaluate
    assert edgegym.EvalResult is edgegym.evaluation.EvalResult
    assert not isinstance(edgegym.evaluate, types.ModuleType)
    res = edgegym.evaluate(ENV, ["thief"], scenario="ekya-table1", episodes=1, progress=False)
    assert isinstance(res, edgegym.EvalResult)
    assert res.result("thief")["episodes"] == 1


def test_import_edgegym_stays_light():
    """``import edgegym`` loads the evaluator eagerly, but not the baselines, tqdm or torch."""
    code = (
        "import sys, edgegym; "
        "print(sorted(m for m in ('edgegym.baselines', 'tqdm', 'torch', 'matplotlib') "
        "if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"


def test_the_table_shows_only_reported_columns_and_says_when_seeds_change_nothing():
    backlogged = evaluate("edgegym/EnergyFairShare-v0", ["etf"], episodes=2,
                          overrides={"quanta": 4}, progress=False)  # fmt: skip
    text = backlogged.table()
    header = text.splitlines()[1]
    assert "F_S" in header and "accuracy" not in header and "retrainings" not in header
    assert "same episode" in text  # backlogged tenants: every seed is the same episode
    random_arrivals = evaluate("edgegym/EnergyFairShare-v0", ["etf"], scenario="etf-tx2-arrivals",
                               episodes=2, overrides={"quanta": 4}, progress=False)  # fmt: skip
    assert "same episode" not in random_arrivals.table()
    one = evaluate("edgegym/EnergyFairShare-v0", ["etf"], episodes=1, overrides={"quanta": 4},
                   progress=False)  # fmt: skip
    assert "same episode" not in one.table()  # one seed says nothing about the others


def test_all_stands_for_every_builtin_policy_of_the_family_as_on_the_command_line():
    from edgegym.baselines import POLICIES

    energy = "edgegym/EnergyFairShare-v0"
    family = {n for n, (_, fams, _) in POLICIES.items() if "energy" in fams}
    result = evaluate(energy, "all", episodes=1, overrides={"quanta": 5}, progress=False)
    assert {r["policy"] for r in result.results} == family
    # Names already listed keep their place and are not run twice.
    result = evaluate(energy, ["tf", "all"], episodes=1, overrides={"quanta": 5}, progress=False)
    names = [r["policy"] for r in result.results]
    assert names[0] == "tf" and sorted(names) == sorted(family)
    # On a -Flat view only random acts.
    flat = evaluate("edgegym/EnergyFairShare-Flat-v0", ["all"], episodes=1, progress=False)
    assert [r["policy"] for r in flat.results] == ["random"]


def test_all_on_an_environment_outside_edgegym_says_what_runs_there():
    with pytest.raises(ValueError, match=r"not an edgegym environment.*own scheduler"):
        evaluate("CartPole-v1", ["all"], episodes=1, progress=False)


@pytest.mark.parametrize(
    ("joules", "label", "shown"),
    [(412.34, "energy (J)", "412.3"), (551_040.0, "energy (kJ)", "551.0")],
)
def test_the_energy_column_keeps_its_digits_in_joules_or_kilojoules(joules, label, shown) -> None:
    """An energy-family episode spends a few hundred joules: in kJ with one decimal its
    policies would read 0.4 and 0.3; the column is in J below 10 kJ, in kJ above."""
    import re

    res = EvalResult(env=ENV, scenario="x", overrides={}, seeds=[0])
    res.results = [
        {
            "policy": "a",
            "mean_return": 1.0,
            "std_return": 0.0,
            "metrics": {"energy_j": {"mean": joules, "std": 0.0}},
            "decision_time_s": 0.001,
        }
    ]
    header, _, row = res.table().splitlines()[1:4]
    cells = dict(
        zip(re.split(r"\s{2,}", header.strip()), re.split(r"\s{2,}", row.strip()), strict=True)
    )
    assert cells[label] == shown

"""The command line and the evaluator, end to end on the small Table 1 scenario."""

import json

import pytest

from edgegym.cli import main
from edgegym.evaluation import evaluate

ENV = "edgegym/ContinualLearning-v0"


def test_evaluate_writes_json_and_png(tmp_path, capsys):
    out_json, out_png = tmp_path / "r.json", tmp_path / "r.png"
    rc = main(
        [
            "evaluate",
            ENV,
            "--scenario",
            "ekya-table1",
            "--policy",
            "thief",
            "--policy",
            "uniform",
            "--episodes",
            "2",
            "--json",
            str(out_json),
            "--plot",
            str(out_png),
            "--no-progress",
        ]
    )
    assert rc == 0
    data = json.loads(out_json.read_text())
    assert data["env"] == ENV and data["scenario"] == "ekya-table1"
    names = [r["policy"] for r in data["results"]]
    assert names == ["thief", "uniform"]
    for r in data["results"]:
        assert r["episodes"] == 2
        assert {"mean_return", "std_return", "metrics"} <= set(r)
    thief, uniform = data["results"]
    assert thief["metrics"]["accuracy"]["mean"] > uniform["metrics"]["accuracy"]["mean"]
    assert out_png.stat().st_size > 10_000
    table = capsys.readouterr().out
    assert "thief" in table and "uniform" in table


def test_policy_all_covers_every_family_policy(tmp_path):
    from edgegym.baselines import POLICIES

    out = tmp_path / "all.json"
    assert (
        main(
            [
                "evaluate",
                ENV,
                "--scenario",
                "ekya-table1",
                "--policy",
                "all",
                "--episodes",
                "1",
                "--json",
                str(out),
                "--no-progress",
            ]
        )
        == 0
    )
    names = {r["policy"] for r in json.loads(out.read_text())["results"]}
    assert names == {n for n, (_, fams, _) in POLICIES.items() if "continual" in fams}


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["evaluate", ENV, "--policy", "nope", "--episodes", "1"], "nope"),
        (["evaluate", "edgegym/Nope-v0", "--episodes", "1"], "Nope-v0"),
        (["evaluate", ENV, "--set", "gpus", "--episodes", "1"], "gpus"),
        (["evaluate", ENV, "--set", "gpus=0", "--episodes", "1"], "hardware.gpus"),
        (["evaluate", ENV, "--scenario", "missing-scenario", "--episodes", "1"], "missing"),
        (["evaluate", ENV, "--episodes", "0"], "episodes"),
        (["evaluate", ENV, "--episodes", "100000000000"], "1 .. 1,000,000"),
        (["evaluate", ENV, "--episodes", "1e20"], "not a whole number"),
        (["evaluate", ENV, "--seed", "-1"], "--seed: -1 is not >= 0"),
        (["fidelity", ENV, "--seed", "-1"], "--seed: -1 is not >= 0"),
        (["train", ENV, "--n-envs", "100000"], "--n-envs: 100000 is not in 1 .. 4,096"),
        (["train", ENV, "--seed", "-2"], "--seed"),
        (["evaluate", ENV, "--policy", "thief:foo=1"], "unknown parameter 'foo'"),
        (["evaluate", ENV, "--policy", "thief:delta=abc"], "policy 'thief:delta=abc'"),
        # One parser for every baseline's parameters names the parameter and its type.
        (["evaluate", ENV, "--policy", "thief:delta=abc"], "delta must be a finite number, got"),
        (["evaluate", ENV, "--policy", "thief:delta=nan"], "delta must be a finite number"),
        (["evaluate", ENV, "--policy", "random:seed=x"], "seed must be a whole number, got 'x'"),
        (["evaluate", ENV, "--policy", "random:seed=1.5"], "seed must be a whole number"),
        (["evaluate", ENV, "--policy", "thief:oracle=maybe"], "oracle must be true or false"),
        (
            ["evaluate", "edgegym/MIGReconfig-v0", "--policy", "migrator:max_plans=many"],
            "max_plans must be a whole number, got 'many'",
        ),
        (
            ["evaluate", "edgegym/DAGOffload-v0", "--policy", "pass:period_s=soon"],
            "period_s must be a finite number, got 'soon'",
        ),
        # A one-word name before the colon is a built-in's name, not a module.
        (
            ["evaluate", ENV, "--policy", "mysched:Greedy"],
            "unknown policy 'mysched' (a module spec is pkg.module:NAME or FILE.py:NAME",
        ),
        (["evaluate", ENV, "--policy", "os:system"], "unknown policy 'os'"),
        (["evaluate", ENV, "--policy", "thief,uniform"], "repeat it for more"),
        (["evaluate", ENV, "--policy", "uniform-c1-30:x=1"], "unknown parameter 'x'"),
        (["evaluate", ENV, "--set", "gpus=abc"], "must be an integer"),
        (["evaluate", "edgegym/MIGReconfig-v0", "--policy", "migrator:gap=-1"], "gap=-1"),
        (["evaluate", ENV, "--timeline", "thief"], "give --plot too"),
        (["evaluate", ENV, "--plot", "x.png", "--timeline", "random"], "--timeline random: not"),
    ],
)
def test_bad_arguments_exit_2_with_a_clear_message(argv, needle, capsys):
    assert main([*argv, "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("edgegym: error:") and needle in err
    assert "Traceback" not in err


def test_listing_commands(capsys):
    assert main(["envs"]) == 0
    assert ENV in capsys.readouterr().out
    assert main(["scenarios"]) == 0
    out = capsys.readouterr().out
    assert "ekya-cityscapes" in out and "ekya-table1" in out
    srs = next(line for line in out.splitlines() if line.startswith("srs-edge-5apps "))
    assert "5 apps" in srs and "5 servers x 2 x A100-80GB" in srs and "1000 requests" in srs
    assert main(["policies", "--env", ENV]) == 0
    assert "thief" in capsys.readouterr().out


def test_scenarios_show_prints_a_derived_scenario_whole_and_it_loads_back(capsys, tmp_path):
    from edgegym.scenarios import load

    argv = ["scenarios", "--show", "ekya-cityscapes-fig2c-drift", "--set", "gpus=2"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith("# ") and "\nextends:" not in out
    shown = tmp_path / "shown.yaml"
    shown.write_text(out)
    expected = load("ekya-cityscapes-fig2c-drift", gpus=2).data
    assert load(shown).data == expected  # the base's fields, the variant's and the override
    assert expected["hardware"]["gpus"] == 2 and expected["drift"]["floor_gap"] == [0.03, 0.29]
    assert expected["inference_configs"] == load("ekya-cityscapes")["inference_configs"]


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["scenarios", "--show", "no-such-scenario"], "unknown scenario 'no-such-scenario'"),
        (["scenarios", "--show", "ekya-waymo", "--set", "streams=-1"], "streams"),
        (["scenarios", "--set", "gpus=2"], "--set needs --show NAME"),
    ],
)
def test_scenarios_show_refuses_bad_input_in_one_line(argv, needle, capsys):
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and needle in captured.err and "Traceback" not in captured.err


def test_evaluation_is_reproducible_and_numbers_episodes_from_its_seed():
    """(That policies face the same episodes: test_evaluate.py::test_policies_face_identical_
    episodes.)"""
    a = evaluate(
        ENV,
        ["thief", "random"],
        scenario="ekya-cityscapes",
        episodes=2,
        seed=3,
        overrides={"streams": 3, "windows": 2},
        progress=False,
    )
    b = evaluate(
        ENV,
        ["thief", "random"],
        scenario="ekya-cityscapes",
        episodes=2,
        seed=3,
        overrides={"streams": 3, "windows": 2},
        progress=False,
    )
    for ra, rb in zip(a.results, b.results, strict=True):
        assert ra["mean_return"] == rb["mean_return"]
        assert [e["seed"] for e in ra["per_episode"]] == [3, 4]


class _Exploding:
    def predict(self, obs, state=None, episode_start=None, deterministic=True):
        raise RuntimeError("boom")


def test_a_failing_policy_keeps_the_other_results(tmp_path, capsys):
    res = evaluate(
        ENV,
        {"thief": "thief", "broken": _Exploding()},
        scenario="ekya-table1",
        episodes=1,
        progress=False,
    )
    assert not res.ok
    assert "boom" in res.errors["broken"]
    assert res.result("thief")["episodes"] == 1


def test_mid_run_failure_writes_partial_json_and_exits_nonzero(tmp_path, monkeypatch, capsys):
    from edgegym import baselines

    class Boom(baselines.Policy):
        def act(self):
            raise RuntimeError("kaboom")

    monkeypatch.setitem(baselines.POLICIES, "boom", (Boom, ("continual",), "always raises"))
    out = tmp_path / "partial.json"
    argv = ["evaluate", ENV, "--scenario", "ekya-table1", "--policy", "thief", "--policy"]
    rc = main([*argv, "boom", "--episodes", "1", "--json", str(out), "--no-progress"])
    assert rc == 1
    data = json.loads(out.read_text())
    thief, boom = data["results"]
    assert thief["episodes"] == 1 and "error" not in thief
    assert boom["episodes"] == 0 and "kaboom" in boom["error"]
    captured = capsys.readouterr()
    assert "thief" in captured.out and "kaboom" in captured.err
    assert "Traceback" not in captured.err


def test_set_overrides_reach_the_environment(tmp_path):
    out = tmp_path / "o.json"
    argv = ["evaluate", ENV, "--scenario", "ekya-table1", "--policy", "uniform", "--episodes"]
    assert main([*argv, "1", "--set", "gpus=1", "--json", str(out), "--no-progress"]) == 0
    one = json.loads(out.read_text())
    assert one["overrides"] == {"gpus": "1"}
    assert main([*argv, "1", "--json", str(out), "--no-progress"]) == 0
    three = json.loads(out.read_text())
    energy = [d["results"][0]["metrics"]["energy_j"]["mean"] for d in (one, three)]
    assert energy[0] < energy[1]  # one GPU draws less power than three


def test_policies_filtered_by_env_and_bad_env(capsys):
    assert main(["policies", "--env", "edgegym/Nope-v0"]) == 2
    assert "Nope-v0" in capsys.readouterr().err
    assert main(["policies"]) == 0
    listed = capsys.readouterr().out
    assert "random" in listed and "ppo:PATH" in listed and "rllib:PATH" in listed


def test_a_policy_of_another_family_is_a_clear_error(capsys):
    assert main(["evaluate", "edgegym/MIGReconfig-v0", "--policy", "thief", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "'thief' schedules the continual family" in err and "migrator" in err


@pytest.mark.parametrize(
    ("env_id", "expected"),
    [
        ("edgegym/ContinualLearning-v0", "thief"),
        ("edgegym/MIGReconfig-v0", "migrator"),
        ("edgegym/EnergyFairShare-v0", "etf"),
        ("edgegym/DAGOffload-v0", "mrs"),
    ],
)
def test_default_policy_is_the_family_scheduler(env_id, expected, monkeypatch):
    import edgegym.evaluation

    seen = {}

    def fake_evaluate(env_id, policies, **kwargs):
        seen["policies"] = policies
        raise ValueError("stop here")

    monkeypatch.setattr(edgegym.evaluation, "evaluate", fake_evaluate)
    assert main(["evaluate", env_id, "--no-progress"]) == 2
    assert seen["policies"] == [expected]


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["evaluate", ENV, "--json", "{file}/x.json"], "is a file, not a folder"),
        (["evaluate", ENV, "--plot", "{dir}"], "is a folder, expected a file path"),
        # a folder not made yet: the slash was dropped and a file of the folder's name written
        (["evaluate", ENV, "--json", "{dir}/new/"], "names a folder (it ends in '/')"),
        (["profile", "--out", "{file}/p.yaml"], "is a file, not a folder"),
        (["fidelity", "edgegym/ContinualLearning-v0", "--json", "{dir}"], "is a folder"),
        (["train", "edgegym/MIGReconfig-v0", "--out", "{file}"], "expected a folder"),
    ],
)
def test_unusable_output_paths_fail_before_any_work(argv, needle, tmp_path, monkeypatch, capsys):
    import edgegym.evaluation
    import edgegym.real.fidelity
    import edgegym.real.profile

    def no_work(*args, **kwargs):
        raise AssertionError("work started before the output path was checked")

    for module, name in [
        (edgegym.evaluation, "evaluate"),
        (edgegym.real.profile, "profile"),
        (edgegym.real.fidelity, "fidelity"),
    ]:
        monkeypatch.setattr(module, name, no_work)
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    argv = [a.format(file=a_file, dir=tmp_path) for a in argv]
    assert main([*argv, "--no-progress"] if argv[0] in ("evaluate", "train") else argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("edgegym: error:") and needle in err, err


def test_check_output_path_accepts_new_nested_paths(tmp_path):
    from edgegym.outputs import check_output_path

    nested = tmp_path / "new" / "deeper" / "x.json"
    assert check_output_path(nested) == nested
    assert check_output_path(tmp_path / "run", folder=True) == tmp_path / "run"
    with pytest.raises(ValueError, match="--out"):
        check_output_path(tmp_path, flag="--out")


def test_flat_views_evaluate_random_and_refuse_the_published_schedulers(tmp_path, capsys):
    out = tmp_path / "flat.json"
    argv = ["evaluate", "edgegym/EnergyFairShare-Flat-v0", "--episodes", "1", "--no-progress"]
    assert main([*argv, "--set", "quanta=20", "--json", str(out)]) == 0
    data = json.loads(out.read_text())
    assert [r["policy"] for r in data["results"]] == ["random"]  # the default on a view
    assert data["scenario"] == "etf-tx2-resnet50-mobilenetv2"  # the base id's default
    assert data["results"][0]["episodes"] == 1 and "error" not in data["results"][0]
    assert main([*argv, "--policy", "etf"]) == 2
    err = capsys.readouterr().err
    assert "evaluate it on edgegym/EnergyFairShare-v0" in err
    assert main(["policies", "--env", "edgegym/DAGOffload-Flat-v0"]) == 0
    listed = capsys.readouterr().out
    assert "random" in listed and "mrs" not in listed
    assert main(["train", "edgegym/DAGOffload-Flat-v0", "--no-progress"]) == 2
    assert "train on edgegym/DAGOffload-v0" in capsys.readouterr().err


def test_unknown_ids_list_the_flat_views_and_max_streams_is_continual_only(capsys):
    assert main(["evaluate", "edgegym/Nope-v0", "--no-progress"]) == 2
    assert "edgegym/DAGOffload-Flat-v0" in capsys.readouterr().err
    assert main(["evaluate", "edgegym/MIGReconfig-v0", "--max-streams", "5", "--no-progress"]) == 2
    assert "max_streams applies to edgegym/ContinualLearning-v0 only" in capsys.readouterr().err


def test_a_one_word_module_spec_points_at_the_file_beside_it(tmp_path, monkeypatch, capsys):
    (tmp_path / "mysched.py").write_text("class Greedy:\n    pass\n")
    monkeypatch.chdir(tmp_path)
    assert main(["evaluate", ENV, "--policy", "mysched:Greedy", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "unknown policy 'mysched'" in err and "here that is mysched.py:Greedy" in err


def test_a_missing_gpu_for_the_real_backend_is_one_line_in_evaluate_and_train(
    tmp_path, monkeypatch, capsys
):
    """``--set backend=real --set device=cuda`` without a GPU: the one line profile and
    fidelity give, exit code 2, nothing written (evaluate serial and with workers, train)."""
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    real = ["--set", "backend=real", "--set", "device=cuda", "--no-progress"]
    energy = "edgegym/EnergyFairShare-v0"
    runs = [
        ["evaluate", energy, "--episodes", "1", *real],
        ["evaluate", energy, "--episodes", "1", "--workers", "2", *real],
        ["evaluate", ENV, "--episodes", "1", *real],
        ["train", energy, "--timesteps", "64", "--out", str(tmp_path / "run"), *real],
    ]
    for argv in runs:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith("edgegym: error:") and len(err.strip().splitlines()) == 1, err
        assert "device='cuda' was requested but torch sees no CUDA GPU" in err
    assert not (tmp_path / "run").exists()


def test_a_foreign_id_refuses_the_built_in_policies_and_runs_your_own(tmp_path, capsys):
    """``evaluate CartPole-v1``: the default, ``random`` and ``ppo`` are one line saying what
    runs there (your own scheduler), which does."""
    for extra in ([], ["--policy", "random"], ["--policy", "ppo"], ["--policy", "thief"]):
        assert main(["evaluate", "CartPole-v1", "--episodes", "1", *extra, "--no-progress"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("edgegym: error: CartPole-v1 is not an edgegym environment"), err
        assert "--policy FILE.py:NAME" in err and "Traceback" not in err
    assert main(["policies", "--env", "CartPole-v1"]) == 0
    assert "is not an edgegym environment" in capsys.readouterr().out
    (tmp_path / "left.py").write_text(
        "class Left:\n    def __init__(self, env):\n        pass\n\n"
        "    def predict(self, obs, state=None, episode_start=None, deterministic=True):\n"
        "        return 0, state\n"
    )
    out = tmp_path / "cp.json"
    spec = f"{tmp_path / 'left.py'}:Left"
    argv = ["evaluate", "CartPole-v1", "--policy", spec, "--episodes", "2", "--json", str(out)]
    assert main([*argv, "--no-progress"]) == 0
    row = json.loads(out.read_text())["results"][0]
    assert row["episodes"] == 2 and "error" not in row


@pytest.mark.parametrize(
    "env_id",
    [
        "edgegym/ContinualLearning-Flat-v0",
        "edgegym/EnergyFairShare-Flat-v0",
        "edgegym/DAGOffload-Flat-v0",
    ],
)
def test_the_shipped_agent_on_a_flat_view_says_where_it_acts(env_id, capsys):
    base = env_id.replace("-Flat", "")
    assert main(["evaluate", env_id, "--policy", "ppo", "--episodes", "1", "--no-progress"]) == 2
    err = capsys.readouterr().err
    head = f"edgegym: error: ppo (the shipped agent) acts on {base}, not on its -Flat view"
    assert err.startswith(head), err
    assert "wrappers.discrete_actions=true" in err and "thief" not in err
    assert len(err.strip().splitlines()) == 1 and len(err) < 400, err


def test_train_says_when_it_ran_more_timesteps_than_asked(tmp_path, capsys):
    """PPO trains whole rollouts: 100 asked with rollouts of 64 steps in one env trains 128,
    and the run says why; a request that is a whole number of rollouts says nothing more."""
    hp = ["--hp", "ppo.n_steps=64", "--hp", "eval.freq=0", "--hp", "train.scenarios=[]"]
    base = ["train", "edgegym/EnergyFairShare-v0", "--set", "quanta=10", "--n-envs", "1"]
    for asked, trained in ((100, 128), (64, 64)):
        out = tmp_path / f"run{asked}"
        argv = [*base, "--timesteps", str(asked), *hp, "--out", str(out), "--no-progress"]
        assert main(argv) == 0
        line = next(s for s in capsys.readouterr().out.splitlines() if s.startswith("trained"))
        assert line.startswith(f"trained {trained} timesteps in ")
        assert ("asked for 100: training runs whole rollouts" in line) == (asked != trained)

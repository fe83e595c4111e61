"""Episodes as independent jobs (edgegym.parallel): the same numbers whether an episode runs
after others on the same environment and policy (the serial evaluator), alone on fresh objects
(a worker), in a local process pool or as a Ray task; a one-line message without Ray."""

from __future__ import annotations

import json
import math
import socket

import pytest

from edgegym import leaderboard as lb
from edgegym.cli import main as cli_main
from edgegym.evaluation import EpisodeJob, evaluate, run_episode_job, summarise_outcomes
from edgegym.parallel import (
    RAY_HINT,
    RayMissingError,
    Runner,
    _probe,
    ray_problem,
    require_ray,
)

#: A small scenario per family, and overrides that keep its episodes short.
SMALL = {
    "continual": ("edgegym/ContinualLearning-v0", "ekya-cityscapes", {"windows": 2}),
    "mig": ("edgegym/MIGReconfig-v0", "migrator-w5", {"window_s": 12, "windows": 2}),
    "energy": ("edgegym/EnergyFairShare-v0", "etf-tx2-resnet50-mobilenetv2", {"quanta": 20}),
    "dag": ("edgegym/DAGOffload-v0", "srs-edge-5apps", {"requests": 25}),
}


def _numbers(data):
    """A result without what may differ between runs: timings and dates."""
    if isinstance(data, dict):
        skip = {"decision_time_s", "wall_s", "finished", "runs"}
        return {k: _numbers(v) for k, v in data.items() if k not in skip}
    if isinstance(data, list):
        return [_numbers(v) for v in data]
    return data


# ----------------------------------------------------------------------------- independence
@pytest.mark.parametrize("family", list(SMALL))
def test_an_episode_does_not_depend_on_the_episodes_before_it(family):
    """Every policy of the family: episode seed 1 played after seed 0 on the same objects (the
    serial evaluator) equals seed 1 played alone on fresh ones (what a worker does)."""
    env_id, scenario, overrides = SMALL[family]
    policies = lb.family_policies(family)
    serial = evaluate(
        env_id, policies, scenario=scenario, episodes=2, overrides=overrides, progress=False
    )
    assert serial.ok, serial.errors
    for name in policies:
        alone = run_episode_job(EpisodeJob(env_id, scenario, overrides, None, name, 1))
        assert alone["episode"]["return"] == serial.result(name)["per_episode"][1]["return"]
        assert alone["episode"]["metrics"] == serial.result(name)["per_episode"][1]["metrics"]


class _FailsOnSeed:
    """A policy factory whose policy raises on one episode seed."""

    def __init__(self, bad_seed):
        self.bad_seed = bad_seed

    def __call__(self, env):
        from edgegym.baselines import make_policy

        inner = make_policy("random", env)
        bad_seed = self.bad_seed

        class Policy:
            name = "flaky"

            def reset(self, seed=None):
                self.seed = seed
                inner.reset(seed)

            def predict(self, obs, state=None, episode_start=None, deterministic=True):
                if self.seed == bad_seed:
                    raise RuntimeError("boom")
                return inner.predict(obs, state, episode_start, deterministic)

        return Policy()


def test_a_failing_episode_keeps_the_episodes_before_it_as_the_serial_run_does():
    env_id, scenario, overrides = SMALL["energy"]
    flaky = _FailsOnSeed(bad_seed=1)
    serial = evaluate(
        env_id, {"flaky": flaky}, scenario=scenario, episodes=3, overrides=overrides,
        progress=False,
    )  # fmt: skip
    outcomes = [
        run_episode_job(EpisodeJob(env_id, scenario, overrides, None, flaky, s)) for s in range(3)
    ]
    assert "error" in outcomes[1] and "episode" in outcomes[2]  # seed 2 ran in its worker
    jobs = summarise_outcomes("flaky", outcomes)
    assert jobs["error"] == serial.result("flaky")["error"] == "RuntimeError: boom (episode seed 1)"
    assert _numbers(jobs) == _numbers(serial.result("flaky"))
    assert jobs["episodes"] == 1


# ----------------------------------------------------------------------------- runner
def test_runner_keeps_the_jobs_order_and_checks_its_arguments():
    jobs = [(3, 4), (1, 2), (5, 6)]  # (jobs' functions are importable in every worker)
    assert Runner().map(math.prod, jobs, progress=False) == [12, 2, 30]
    assert Runner(workers=2).map(math.prod, jobs, progress=False) == [12, 2, 30]
    assert Runner().kind == "serial" and Runner(workers=2).kind == "pool"
    for bad in (0, -1, True):
        with pytest.raises(ValueError, match="workers must be >= 1"):
            Runner(workers=bad)


def test_process_pool_evaluation_equals_the_serial_one():
    env_id, scenario, overrides = SMALL["energy"]
    kwargs = dict(scenario=scenario, episodes=3, overrides=overrides, progress=False)
    serial = evaluate(env_id, ["etf", "random"], **kwargs)
    pooled = evaluate(env_id, ["etf", "random"], workers=2, **kwargs)
    assert _numbers(pooled.to_dict()) == _numbers(serial.to_dict())


def test_leaderboard_with_workers_writes_the_serial_numbers(tmp_path, tiny_sets):
    common = ["--quick", "--episodes", "2", "--no-progress", "--families", "energy,dag"]
    assert lb.main([*common, *tiny_sets, "--out", str(tmp_path / "a")]) == 0
    argv = [*common, *tiny_sets, "--out", str(tmp_path / "b"), "--workers", "2"]
    assert lb.main(argv) == 0
    a = json.loads((tmp_path / "a" / lb.JSON_NAME).read_text())
    b = json.loads((tmp_path / "b" / lb.JSON_NAME).read_text())
    assert (
        list(a["cells"])
        == list(b["cells"])
        == ["energy/etf-tx2-resnet50-mobilenetv2", "dag/srs-edge-5apps"]
    )
    assert _numbers(a["cells"]) == _numbers(b["cells"])
    assert b["runs"][-1]["runner"] == "2 local processes"


# ----------------------------------------------------------------------------- without Ray
def test_without_ray_every_command_says_what_to_install(no_ray, capsys, tmp_path):
    with pytest.raises(RayMissingError, match=r'pip install -e "\.\[ray\]"'):
        require_ray()
    with pytest.raises(RayMissingError):
        Runner(ray="local")
    assert ray_problem(None) is None
    assert ray_problem("local") == f"--ray: {RAY_HINT}"
    from edgegym.reproduce import ekya, migrator, srs

    commands = [
        (cli_main, ["evaluate", "edgegym/EnergyFairShare-v0", "--ray"]),
        (lb.main, ["--quick", "--ray", "--out", str(tmp_path / "lb")]),
        (ekya.main, ["--ray", "--out", str(tmp_path / "ekya")]),
        (srs.main, ["--ray", "auto", "--out", str(tmp_path / "srs")]),
        (migrator.main, ["--ray", "--out", str(tmp_path / "mig")]),
    ]
    for main, argv in commands:
        capsys.readouterr()
        assert main(argv) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].endswith(f"--ray: {RAY_HINT}"), err
    assert not any((tmp_path / d).exists() for d in ("lb", "ekya", "srs", "mig"))


# ----------------------------------------------------------------------------- on Ray
def test_ray_runner_keeps_order_and_raises_the_jobs_error(ray_cluster):
    runner = Runner(ray="local")
    assert runner.map(math.prod, [(2, 3), (4, 5), (6, 7)], progress=False) == [6, 20, 42]
    with pytest.raises(TypeError):  # 'a' * 'b'
        runner.map(math.prod, [(1, 2), ("a", "b")], progress=False)
    assert runner.describe().startswith("Ray (local, 2 CPUs)")


def test_evaluate_on_ray_gives_the_local_json(ray_cluster, tmp_path):
    env_id, scenario, _ = SMALL["mig"]
    argv = ["evaluate", env_id, "--scenario", scenario, "--set", "window_s=12"]
    argv += ["--set", "windows=2", "--policy", "all", "--episodes", "2", "--no-progress"]
    assert cli_main([*argv, "--json", str(tmp_path / "local.json")]) == 0
    assert cli_main([*argv, "--json", str(tmp_path / "ray.json"), "--ray"]) == 0
    local = json.loads((tmp_path / "local.json").read_text())
    on_ray = json.loads((tmp_path / "ray.json").read_text())
    assert len(local["results"]) >= 5
    assert _numbers(on_ray) == _numbers(local)


def test_leaderboard_on_ray_writes_the_serial_numbers(ray_cluster, tmp_path, tiny_sets):
    common = ["--quick", "--episodes", "1", "--no-progress", *tiny_sets]
    assert lb.main([*common, "--out", str(tmp_path / "a")]) == 0
    assert lb.main([*common, "--out", str(tmp_path / "b"), "--ray"]) == 0
    a = json.loads((tmp_path / "a" / lb.JSON_NAME).read_text())
    b = json.loads((tmp_path / "b" / lb.JSON_NAME).read_text())
    assert len(a["cells"]) == 4
    assert _numbers(a["cells"]) == _numbers(b["cells"])
    assert b["runs"][-1]["runner"].startswith("Ray (local")


def test_reproduction_jobs_on_ray_give_the_local_rows(ray_cluster):
    """The SRS and MIGRator reproductions map their episode jobs with the runner: on Ray the
    rows equal the in-process ones (timings aside)."""
    from edgegym.reproduce import migrator, srs

    for run_one, jobs in (
        (srs.run_one, [("srs-edge-8apps", {"requests": 15, "duration_s": 5.0, "apps": 2}, p, s)
                       for p in ("mrs", "pass") for s in (0, 1)]),
        (migrator.run_one, [("w5", p, {"window_s": 12, "windows": 2}, 0)
                            for p in ("migrator", "paris")]),
    ):  # fmt: skip
        local = Runner().map(run_one, jobs, progress=False)
        on_ray = Runner(ray="local").map(run_one, jobs, progress=False)
        skip = {"decide_ms", "wall_s", "solve_s"}  # timings
        strip = [{k: v for k, v in r.items() if k not in skip} for r in local]
        assert [{k: v for k, v in r.items() if k not in skip} for r in on_ray] == strip


def test_an_address_where_nothing_answers_is_refused_at_once():
    """Ray itself retries a dead host:port for minutes; the probe says so in one line."""
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]  # closed below: nothing listens there
    for address in (f"127.0.0.1:{port}", f"ray://127.0.0.1:{port}"):
        with pytest.raises(
            ValueError, match=rf"no Ray cluster at .*nothing answers at 127.0.0.1:{port}"
        ):
            _probe(address)
    with socket.socket() as listening:
        listening.bind(("127.0.0.1", 0))
        listening.listen()
        _probe(f"127.0.0.1:{listening.getsockname()[1]}")  # something answers: Ray's turn
    _probe("auto")  # resolved by Ray


def test_policy_objects_bound_to_one_env_are_refused_in_parallel():
    import gymnasium as gym

    from edgegym.baselines import make_policy

    env_id, scenario, _ = SMALL["energy"]
    bound = make_policy("etf", gym.make(env_id, scenario=scenario))
    with pytest.raises(ValueError, match="not policy objects: 'mine'"):
        evaluate(env_id, {"mine": bound}, scenario=scenario, workers=2, progress=False)


# ----------------------------------------------------------------------------- journal
CALLS: list[int] = []


def _square_or_fail(job):
    """``job["x"]`` squared (as numpy, which the journal stores as a number); fails where
    ``job["fail"]``."""
    import numpy as np

    CALLS.append(job["x"])
    if job.get("fail"):
        raise RuntimeError("stopped here")
    return {"y": np.int64(job["x"] ** 2), "v": np.arange(2) * job["x"]}


def test_a_stopped_map_resumes_from_its_journal_running_only_what_is_left(tmp_path):
    from edgegym.journal import Journal

    path = tmp_path / "run-journal.jsonl"
    jobs = [{"x": x} for x in range(5)]
    CALLS.clear()
    with pytest.raises(RuntimeError, match="stopped here"):
        Runner().map(_square_or_fail, [*jobs[:3], {"x": 9, "fail": True}], progress=False,
                     journal=path)  # fmt: skip
    assert len(Journal(path)) == 3  # the finished jobs are on disk
    CALLS.clear()
    out = Runner().map(_square_or_fail, jobs, progress=False, journal=path)
    assert CALLS == [3, 4]  # only the jobs the journal does not hold ran
    assert out == [{"y": x * x, "v": [0, x]} for x in range(5)]
    # A cut-short last line (a crash mid-write) is run again; a damaged earlier line refused.
    text = path.read_text()
    path.write_text(text + '{"key": "abc", "res')
    assert len(Journal(path)) == 5
    assert path.read_text() == text  # cut back to its last whole line, so appends stay lines
    Journal(path).add({"x": 7}, {"y": 49})
    assert len(Journal(path)) == 6
    lines = text.splitlines()
    path.write_text("\n".join([lines[0], "not json", *lines[2:]]) + "\n")
    with pytest.raises(ValueError, match=r"line 2 is not a journal entry.*remove it"):
        Journal(path)


def test_a_reproduction_resuming_from_a_journal_of_other_code_is_one_line(tmp_path, capsys):
    """Found resuming an interrupted run after the code changed: a traceback and exit 1."""
    from edgegym.outputs import run_command
    from edgegym.reproduce import srs

    head = {"edgegym_output": "journal", "code": "0" * 16}
    (tmp_path / "srs-journal.jsonl").write_text(json.dumps(head) + "\n")
    argv = ["--quick", "--out", str(tmp_path), "--workers", "1"]
    assert run_command(lambda: srs.main(argv), srs.PROG) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    (line,) = [x for x in err.splitlines() if "error:" in x]
    assert line.startswith(f"{srs.PROG}: error: cannot resume from") and "remove it" in line


def test_a_journal_of_other_code_or_not_a_journal_is_refused(tmp_path):
    import json as json_

    from edgegym.journal import Journal, code_fingerprint

    path = tmp_path / "j.jsonl"
    Journal(path).add({"x": 1}, {"y": 1})
    head, entry = path.read_text().splitlines()
    assert json_.loads(head)["code"] == code_fingerprint()
    path.write_text(json_.dumps({**json_.loads(head), "code": "0" * 16}) + "\n" + entry + "\n")
    with pytest.raises(ValueError, match="written by other code"):
        Runner().map(_square_or_fail, [{"x": 1}], progress=False, journal=path)
    other = tmp_path / "notes.jsonl"
    other.write_text('{"mine": 1}\n')
    with pytest.raises(ValueError, match="not an edgegym journal output"):
        Journal(other)


def test_rllibs_harmless_noise_is_dropped_and_the_rest_kept():
    import logging

    from edgegym.parallel import quiet_rllib

    quiet_rllib()
    quiet_rllib()  # idempotent
    noise = {
        "ray._common.deprecation": "DeprecationWarning: `RLModule(config=[RLModuleConfig "
        "object])` has been deprecated.",
        "ray.rllib.algorithms.algorithm_config": "You are running PPO on the new API stack!",
        "ray.tune.utils.util": "Install gputil for GPU system monitoring.",
    }
    kept = {"ray._common.deprecation": "DeprecationWarning: `my_fn` has been deprecated.",
            "ray.rllib.algorithms.algorithm_config": "lr schedule ignored"}  # fmt: skip
    seen: list[str] = []

    class Collect(logging.Handler):  # on each logger itself: Ray may stop propagation to root
        def emit(self, record):
            seen.append(record.getMessage())

    handler = Collect(logging.WARNING)
    loggers = [logging.getLogger(name) for name in noise]
    for logger in loggers:
        logger.addHandler(handler)
    try:
        for name, msg in [*noise.items(), *kept.items()]:
            logging.getLogger(name).warning(msg)
    finally:
        for logger in loggers:
            logger.removeHandler(handler)
    assert seen == list(kept.values())

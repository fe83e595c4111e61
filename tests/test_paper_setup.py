"""Each published scheduler's baselines run where its paper evaluates them (``paper_setup``):
the evaluator applies it by default, reports it, and drops it with ``setup=False``."""

from __future__ import annotations

import pytest

from edgegym.baselines import paper_setup
from edgegym.baselines.ekya import WITHOUT_PROFILER
from edgegym.baselines.mig import MPS_SHARES
from edgegym.cli import main
from edgegym.evaluation import evaluate
from edgegym.families.continual.params import ContinualSpec
from edgegym.scenarios import load

ENV = "edgegym/ContinualLearning-v0"
# Ten streams on one GPU, two windows: the micro-profiler's share is one the others need.
SMALL = {"windows": 2}


@pytest.mark.parametrize("spec", ["uniform", "uniform-c2-90", "uniform:config=2", "no-retrain"])
def test_ekya_uniform_baselines_run_without_the_micro_profiler(spec):
    assert paper_setup(spec, "ekya-cityscapes", {}) == WITHOUT_PROFILER
    assert WITHOUT_PROFILER == {"profiler.cost_s": 0.0, "profiler.checkpoint_epochs": 0}


@pytest.mark.parametrize(
    "spec", ["thief", "thief:delta=0.2", "ekya-fixedres", "migrator", "paris", "etf", "mrs"]
)
def test_published_schedulers_and_the_others_run_the_scenario_as_given(spec):
    assert paper_setup(spec, "ekya-cityscapes", {}) == {}


@pytest.mark.parametrize("spec", ["ppo", "ppo:agents/trained/continual", "rllib:runs/x"])
def test_agents_get_no_setup(spec):
    assert paper_setup(spec, "ekya-cityscapes", {}) == {}


@pytest.mark.parametrize("config", [1, 2])
def test_fixedconfig_profiles_its_one_configuration(config):
    given = {"streams": 4}
    setup = paper_setup(f"ekya-fixedconfig:config={config}", "ekya-cityscapes", given)
    spec = ContinualSpec.from_scenario(load("ekya-cityscapes", **given))
    cfg = spec.uniform_configs[config - 1]
    assert setup["profiler.prune_every"] == 0
    assert setup["profiler.cost_s"] == pytest.approx(
        spec.profile_cost_s * float(spec.profile_weight[cfg])
    )
    assert 0 < setup["profiler.cost_s"] < spec.profile_cost_s  # one of many configurations


def test_migrators_mps_baselines_run_on_mps_shares_unless_told_otherwise():
    want = {"mps.interference": True, "mps.shares": MPS_SHARES, "preinit": False}
    for spec in ("ekya-mig", "astraea", "astraea:hysteresis=0.1"):
        assert paper_setup(spec, "migrator-w1", {}) == want
    # The user's choice wins: on MIG instances (shares 0) pre-initialisation stays as given.
    for zero in (0, "0"):  # "0": as the command line's --set passes it
        on_mig = paper_setup("ekya-mig", "migrator-w1", {"mps.shares": zero})
        assert on_mig == {"mps.interference": True}
    assert paper_setup("astraea", "migrator-w1", {"mps.shares": 7, "mps.interference": False}) == {
        "preinit": False
    }


def test_evaluate_applies_the_setup_and_reports_it():
    kw = {"scenario": "ekya-cityscapes", "episodes": 2, "progress": False}
    paper = evaluate(ENV, ["uniform-c1-90", "thief"], overrides=SMALL, **kw)
    same = evaluate(ENV, ["uniform-c1-90", "thief"], overrides=SMALL, setup=False, **kw)
    by_hand = evaluate(
        ENV, ["uniform-c1-90"], overrides={**SMALL, **WITHOUT_PROFILER}, setup=False, **kw
    )
    assert paper.result("uniform-c1-90")["setup"] == WITHOUT_PROFILER
    assert "setup" not in paper.result("thief") and "setup" not in same.result("uniform-c1-90")
    runs = {"paper": paper, "same": same, "hand": by_hand}
    acc = {k: r.result("uniform-c1-90")["metrics"]["accuracy"]["mean"] for k, r in runs.items()}
    assert acc["paper"] == acc["hand"]
    # The micro-profiler's GPU share costs the uniform split accuracy it never uses.
    assert acc["paper"] > acc["same"]
    # The published scheduler itself runs the scenario as given either way.
    thief = [[e["return"] for e in r.result("thief")["per_episode"]] for r in (paper, same)]
    assert thief[0] == thief[1]
    assert "as their paper evaluates them: uniform-c1-90 with profiler.cost_s=0" in paper.table()
    assert "as their paper evaluates them" not in same.table()


def test_workers_apply_the_same_setup():
    kw = {"scenario": "ekya-cityscapes", "episodes": 2, "progress": False, "overrides": SMALL}
    serial = evaluate(ENV, ["no-retrain", "ekya-fixedconfig"], **kw)
    pooled = evaluate(ENV, ["no-retrain", "ekya-fixedconfig"], workers=2, **kw)
    for p in ("no-retrain", "ekya-fixedconfig"):
        assert pooled.result(p)["setup"] == serial.result(p)["setup"]
        returns = [[e["return"] for e in r.result(p)["per_episode"]] for r in (serial, pooled)]
        assert returns[0] == returns[1]


def test_cli_same_setup_runs_every_policy_on_the_scenario_as_given(capsys):
    argv = ["evaluate", ENV, "--scenario", "ekya-table1", "--policy", "uniform"]
    argv += ["--episodes", "1", "--no-progress"]
    assert main(argv) == 0
    assert "as their paper evaluates them: uniform with" in capsys.readouterr().out
    assert main([*argv, "--same-setup"]) == 0
    assert "as their paper evaluates them" not in capsys.readouterr().out


OWN = '''
from edgegym.baselines.ekya import WITHOUT_PROFILER


class InferenceOnly:
    """Every stream's inference at an even share; it runs no micro-profiler."""

    @classmethod
    def paper_setup(cls, scenario, given, **params):
        return dict(WITHOUT_PROFILER)

    def __init__(self, env):
        self.env = env

    def predict(self, obs, state=None, episode_start=None, deterministic=True):
        from edgegym.baselines.ekya import NoRetrainPolicy  # the built-in no-retrain's rule

        return NoRetrainPolicy(self.env).act(), state


def factory(env):
    return InferenceOnly(env)
'''


def test_your_own_scheduler_declares_its_setup_the_same_way(tmp_path):
    path = tmp_path / "own.py"
    path.write_text(OWN)
    spec = f"{path}:InferenceOnly"
    assert paper_setup(spec, "ekya-cityscapes", {}) == WITHOUT_PROFILER
    assert paper_setup(f"{path}:factory", "ekya-cityscapes", {}) == {}  # not a class
    kw = {"scenario": "ekya-cityscapes", "episodes": 1, "progress": False, "overrides": SMALL}
    res = evaluate(ENV, {"own": spec, "no-retrain": "no-retrain"}, **kw)
    assert res.result("own")["setup"] == WITHOUT_PROFILER
    own, builtin = (res.result(p)["per_episode"][0]["return"] for p in ("own", "no-retrain"))
    assert own == builtin  # the same decisions in the same setup
    # the class itself, passed from Python, too
    from edgegym.baselines.custom import load_object

    cls, _ = load_object(spec)
    assert evaluate(ENV, [cls], **kw).results[0]["setup"] == WITHOUT_PROFILER


MIG = "edgegym/MIGReconfig-v0"
MIG_SHORT = {"windows": 1, "window_s": 20}


def _mig_tenants(m):
    models = ("resnet18", "resnet50", "mobilenetv2", "resnet18")
    return [
        {"model": models[i], "dataset": "nc-core50", "slo_ms": 50,
         "arrival": {"kind": "poisson", "rate": 100}}
        for i in range(m)
    ]  # fmt: skip


@pytest.mark.parametrize(("m", "shares"), [(1, MPS_SHARES), (2, MPS_SHARES), (3, 13), (4, 8)])
def test_mps_baselines_ask_for_a_share_count_the_tenants_can_have(m, shares):
    """Fourteenths where the environment can build them (one or two tenants: every bundled
    scenario), else the most it can (13 for three tenants, 8 for four), counted in the
    scenario with the overrides, a command line's text included."""
    import yaml

    for tenants in (_mig_tenants(m), yaml.safe_dump(_mig_tenants(m))):
        setup = paper_setup("ekya-mig", "migrator-w1", {"tenants": tenants})
        assert setup == {"mps.interference": True, "mps.shares": shares, "preinit": False}
    assert load("migrator-w1", tenants=_mig_tenants(m), **setup)["mps"]["shares"] == shares
    if m == 2:  # the bundled scenarios' two tenants, with no override
        assert paper_setup("astraea", "migrator-w9", {})["mps.shares"] == MPS_SHARES


@pytest.mark.parametrize("m", [3, 4])
def test_mps_baselines_run_on_three_or_four_tenants(m):
    """The fuzzing audit's case: ekya-mig and astraea made evaluate raise on every 3- or
    4-tenant scenario, losing migrator's and paris's results too."""
    policies = ["migrator", "ekya-mig", "astraea", "paris"]
    over = {**MIG_SHORT, "tenants": _mig_tenants(m)}
    res = evaluate(MIG, policies, scenario="migrator-w1", episodes=1, overrides=over,
                   progress=False)  # fmt: skip
    assert res.ok and [r["policy"] for r in res.results] == policies
    assert res.result("astraea")["setup"]["mps.shares"] == {3: 13, 4: 8}[m]


BAD_SETUP = '''
from edgegym.baselines.mig import AstraeaPolicy


class TooManyShares(AstraeaPolicy):
    """Astraea, its setup asking for more shares than two tenants can have."""

    name = "too-many"

    @classmethod
    def paper_setup(cls, scenario, given, **params):
        return {"mps.shares": 28, "preinit": False}
'''


@pytest.mark.parametrize("workers", [1, 2])
def test_a_setup_the_environment_refuses_fails_that_policy_alone(tmp_path, workers):
    """As a policy that raises in ``predict``: its entry has no episode and an error naming
    the setup, the other policies run (serial and in a process pool alike)."""
    path = tmp_path / "bad_setup.py"
    path.write_text(BAD_SETUP)
    spec = f"{path}:TooManyShares"
    res = evaluate(MIG, ["paris", spec, "astraea"], scenario="migrator-w1", episodes=2,
                   overrides=MIG_SHORT, progress=False, workers=workers)  # fmt: skip
    assert [r["policy"] for r in res.results] == ["paris", spec, "astraea"]
    assert list(res.errors) == [spec]
    assert res.errors[spec].startswith("paper setup failed: ScenarioError:")
    assert "mps.shares" in res.errors[spec]
    assert res.result(spec)["episodes"] == 0 and res.result(spec)["setup"]["mps.shares"] == 28
    for p in ("paris", "astraea"):
        assert res.result(p)["episodes"] == 2
    assert f"(!) {spec}: paper setup failed" in res.table()


def test_a_scenario_that_does_not_build_as_given_is_still_an_error():
    """Bad overrides are the caller's, not a setup's: evaluate raises before any episode."""
    from edgegym.scenarios import ScenarioError

    over = {**MIG_SHORT, "tenants": _mig_tenants(3), "mps.shares": 14}
    with pytest.raises(ScenarioError, match=r"mps\.shares.*3 to 13 MPS shares for 3 tenants"):
        evaluate(MIG, ["ekya-mig", "paris"], scenario="migrator-w1", episodes=1, overrides=over,
                 progress=False)  # fmt: skip


def test_cli_evaluates_every_mig_policy_on_three_tenants(capsys):
    import yaml

    argv = ["evaluate", MIG, "--scenario", "migrator-w1", "--policy", "all", "--episodes", "1"]
    argv += ["--no-progress", "--set", "windows=1", "--set", "window_s=20"]
    argv += ["--set", f"tenants={yaml.safe_dump(_mig_tenants(3), default_flow_style=True)}"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "ekya-mig, astraea with mps.interference=True, mps.shares=13" in out
    for p in ("migrator", "ekya-mig", "astraea", "paris"):
        assert f"\n{p} " in out

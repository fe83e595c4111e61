"""Policy parameters out of range are refused when the policy is made, in one ValueError naming
the parameter (never a traceback, a ZeroDivisionError mid-episode, or scores from a meaningless
value), and the edge values of each range still build: the thief's Delta (at most the GPUs),
the DAG baselines' triggers (the ranges of the scenario's ``baselines.*`` fields, read from the
schema), Ekya-FixedRes's inference fraction and Astraea's hysteresis."""

from __future__ import annotations

import pytest

from edgegym.baselines import make_policy
from edgegym.families.continual import ContinualLearningEnv
from edgegym.families.dag import DAGOffloadEnv
from edgegym.families.dag.schema import DAGBaselines
from edgegym.families.mig import MIGReconfigEnv


@pytest.fixture(scope="module")
def continual():
    """One GPU on a 0.01 grid; the micro-profiler holds part of it (capacity < 1 GPU)."""
    return ContinualLearningEnv("ekya-cityscapes", gpus=1, windows=2)


@pytest.fixture(scope="module")
def dag():
    return DAGOffloadEnv("srs-edge-5apps", requests=20)


@pytest.fixture(scope="module")
def mig():
    return MIGReconfigEnv("migrator-w1", window_s=60, windows=1, data_fraction=0.3)


def _refused(spec: str, env, *words: str) -> str:
    with pytest.raises(ValueError) as info:
        make_policy(spec, env)
    msg = str(info.value)
    for word in words:
        assert word in msg, (spec, msg)
    return msg


# ------------------------------------------------------------------ thief's Delta
@pytest.mark.parametrize("delta", ["1e308", "-1e308", "1.01", "2", "1e20"])
@pytest.mark.parametrize("name", ["thief", "ekya-fixedconfig"])
def test_a_delta_beyond_the_gpus_is_refused_in_one_message(continual, name, delta):
    """1e308 once overflowed ``int(round(delta / quantum))``; anything above the GPUs is a
    steal larger than all they hold."""
    msg = _refused(f"{name}:delta={delta}", continual, "delta=")
    assert "OverflowError" not in msg
    if not delta.startswith("-"):
        assert "out of range (allowed: a multiple of the quantum 0.01 in (0, 1]" in msg


def test_a_delta_of_all_the_gpus_plays_an_episode_whose_capacity_is_less(continual):
    """Delta = the GPUs is allowed, and the thief does not refuse it mid-episode where the
    micro-profiler's share leaves less than that to allocate."""
    pol = make_policy("thief:delta=1", continual)
    assert pol.delta == 1.0
    obs, _ = continual.reset(seed=0)
    pol.reset(0)
    done, reserved = False, []
    while not done:
        reserved.append(continual.sim_state().reserved)
        obs, _, term, trunc, _ = continual.step(pol.predict(obs)[0])
        done = term or trunc
    assert max(reserved) > 0  # the capacity was below Delta
    assert make_policy("thief:delta=0.01", continual).delta == 0.01


# ------------------------------------------------------------------ Ekya-FixedRes, uniform
@pytest.mark.parametrize("infer", ["2", "-1", "1.5", "-0.01"])
@pytest.mark.parametrize("name", ["ekya-fixedres", "uniform"])
def test_an_inference_fraction_outside_0_1_is_refused(continual, name, infer):
    _refused(f"{name}:infer={infer}", continual, "infer must be a fraction in [0, 1]", infer)


@pytest.mark.parametrize("infer", [0, 1, 0.3])
def test_fixedres_builds_at_the_edges_of_its_fraction(continual, infer):
    assert make_policy(f"ekya-fixedres:infer={infer}", continual).infer == infer


# ------------------------------------------------------------------ DAG baselines
DAG_PARAMS = [
    ("pass", "period_s", "pass_period_s"),
    ("ekya-dag", "window_s", "ekya_window_s"),
    ("adainf", "slo_factor", "adainf_slo_factor"),
]


def _bounds(field: str) -> tuple[float, float]:
    (rng,) = DAGBaselines.model_fields[field].metadata
    assert rng.lo_open and not rng.hi_open
    return rng.lo, rng.hi


@pytest.mark.parametrize(("name", "param", "field"), DAG_PARAMS)
@pytest.mark.parametrize("bad", ["zero", "negative", "above"])
def test_a_dag_trigger_outside_its_schema_range_is_refused_when_made(dag, name, param, field, bad):
    """0 once divided by zero mid-episode; a negative period or factor played to the end."""
    lo, hi = _bounds(field)
    value = {"zero": lo, "negative": -5, "above": hi * 10}[bad]
    msg = _refused(f"{name}:{param}={value!r}", dag, f"{param}: must be", f"baselines.{field}")
    assert f"({lo}, {hi}]" in msg  # the schema's range, as the scenario's own check says it


@pytest.mark.parametrize(("name", "param", "field"), DAG_PARAMS)
def test_a_dag_trigger_at_its_upper_bound_builds(dag, name, param, field):
    _, hi = _bounds(field)
    pol = make_policy(f"{name}:{param}={hi!r}", dag)
    assert getattr(pol, param) == hi
    assert getattr(make_policy(f"{name}:{param}=0.5", dag), param) == 0.5


def test_the_dag_range_is_the_scenario_files(dag):
    """The same field in a scenario is refused with the same range."""
    with pytest.raises(ValueError, match=r"baselines\.pass_period_s: must be .* \(0\.0, "):
        DAGOffloadEnv("srs-edge-5apps", requests=20, baselines={"pass_period_s": 0})


# ------------------------------------------------------------------ Astraea
@pytest.mark.parametrize("hysteresis", ["-1", "-0.01"])
def test_a_negative_hysteresis_is_refused(mig, hysteresis):
    _refused(f"astraea:hysteresis={hysteresis}", mig, f"hysteresis={hysteresis}", ">= 0")


@pytest.mark.parametrize("hysteresis", [0, 0.05, 10])
def test_astraea_builds_with_a_non_negative_hysteresis(mig, hysteresis):
    assert make_policy(f"astraea:hysteresis={hysteresis}", mig).hysteresis == hysteresis

"""The ETF reproduction: its report and its claims (the full run takes a few seconds)."""

from __future__ import annotations

import re
from pathlib import Path

import gymnasium as gym
import pytest

from edgegym.baselines import make_policy
from edgegym.reproduce import etf, etf_claims
from edgegym.reproduce.claims import Claim, load, smoke_run


def test_report_and_claims(tmp_path: Path, monkeypatch) -> None:
    # two sweep variants instead of eight: the report's shape, not the sweep (tested below)
    monkeypatch.setattr(etf, "SWEEP", (etf.BASE, etf.SWEEP[1], etf.SWEEP[-1]))
    assert etf.main(["--out", str(tmp_path)]) == 0
    text = (tmp_path / "etf.md").read_text()
    assert "should read 35%" in text and "## Claims" in text and "## Robustness sweep" in text
    assert (tmp_path / "etf-sweep.png").stat().st_size > 0
    claims = [c for c in load(tmp_path) if c.paper == "etf"]
    held = [c for c in claims if c.role == "held-out"]
    assert len(held) >= 3 and any(c.role == "calibration" for c in claims)
    assert all(c.why for c in claims if not c.holds)
    assert not any(c.why for c in claims if c.holds)  # a claim that holds has no reason
    assert "etf.md" in (tmp_path / "README.md").read_text()


def test_inside_a_smoke_run_the_report_counts_nothing(tmp_path: Path) -> None:
    """``all --quick`` runs ETF inside a smoke run: its report and records say so."""
    with smoke_run():
        assert etf.main(["--out", str(tmp_path)]) == 0
    text = (tmp_path / "etf.md").read_text()
    claims = load(tmp_path)
    assert claims and all(c.smoke for c in claims)
    assert f"Smoke run: {len(claims)} claims checked on a reduced sample; not counted." in text
    assert "held-out claims hold" not in text and "| yes |" not in text


def test_a_sweep_variant_scales_only_the_swept_inputs() -> None:
    base = etf._scenario("etf-tx2-resnet50-mobilenetv2")
    with etf._under(etf.Variant("q", quantum=0.5, unit=2.0)):
        sc = etf._scenario("etf-tx2-resnet50-mobilenetv2")
    assert sc["quantum_s"] == base["quantum_s"] * 0.5 and sc["unit_s"] == base["unit_s"] * 2
    assert sc["quanta"] == 2 * base["quanta"]  # the same seconds of run
    assert sc["tenants"] == base["tenants"]  # the paper's models and clocks are not swept
    dyn0 = etf._scenario("etf-dynamic-3")
    with etf._under(etf.Variant("t", timeline=2.0)):
        dyn = etf._scenario("etf-dynamic-3")
    assert [t.get("arrive_s") for t in dyn["tenants"]] == [
        None if t.get("arrive_s") is None else 2 * t["arrive_s"] for t in dyn0["tenants"]
    ]
    assert dyn["quanta"] == 2 * dyn0["quanta"]
    assert [(a, b, n) for a, b, n in etf._phases(dyn0)][1:3] == [(15.0, 30.0, 2), (30.0, 60.0, 3)]


def test_a_larger_memory_bound_fraction_slows_a_low_clock_tenant_less() -> None:
    sc = etf._scenario("etf-tx2-resnet50-mobilenetv2")  # A2 at 726 MHz, A1 at the top clock
    base = etf.run(sc, 0.7)["service"]
    with etf._under(etf.Variant("m", memory_bound=2.0)):
        more = etf.run(sc, 0.7)["service"]
    assert more[0] == base[0]  # at the top clock the fraction changes nothing
    assert more[1] < base[1]  # below it, less of the work slows with the clock


def test_a_held_out_claim_holds_only_across_the_whole_sweep() -> None:
    def claim(holds: bool, role: str = "held-out") -> Claim:
        return Claim("etf", "Fig. 0", "c", "m", 1.0, 1.0, role, holds, test="rule", why="w")

    base = [claim(True), claim(True), claim(False), claim(True, "calibration")]
    swept = {"x0.5": [claim(True), claim(False), claim(False), claim(False, "calibration")]}
    judged = etf_claims.judge_across(base, swept)
    assert [c.holds for c in judged] == [True, False, False, True]
    assert "fails under x0.5" in judged[1].why and judged[2].why == "w"
    assert "all 1 sweep variants" in judged[0].test and judged[3].test == "rule"


def test_perfect_energy_fairness_is_efs_own_on_the_unit_grid() -> None:
    """ETF counts as perfectly energy-fair where its F_E is EF's (phi = 0), whatever EF's own
    F_E is after Algorithm 1 rounds to whole time units: on 30 units a quantum (the quantum x0.5
    variant) EF reaches 0.914 and ETF keeps EF's allocation up to phi_fair."""
    with etf._under(etf.Variant("q", quantum=0.5)):
        sc = etf._scenario("etf-tx2-resnet50-mobilenetv2")
        rows = [(phi, etf.run(sc, phi, quanta=20)) for phi in (0.0, 0.2, 0.3, 0.6, 1.0)]
    assert rows[0][1]["F_E"] < 0.98  # the grid keeps EF itself below a fixed bar
    perfect = etf.perfectly_energy_fair(rows)
    assert 0.0 in perfect and 0.2 in perfect and 0.6 not in perfect and 1.0 not in perfect
    # a sweep must start at EF
    with pytest.raises(ValueError, match="phi = 0"):
        etf.perfectly_energy_fair(rows[1:])


def test_the_etf_reproductions_episodes_do_not_depend_on_the_seed() -> None:
    """Why ``reproduce all --first-seed N`` does not rerun etf: every scenario its report runs
    gives the same episode at any seed (no random input)."""
    names = sorted(set(re.findall(r'_scenario\("([a-z0-9-]+)"', Path(etf.__file__).read_text())))
    assert len(names) >= 4
    for name in names:
        metrics = []
        for seed in (0, 3):
            env = gym.make("edgegym/EnergyFairShare-v0", scenario=name)
            pol = make_policy("etf", env.unwrapped)
            obs, _ = env.reset(seed=seed)
            pol.reset(seed)
            done = False
            while not done:
                obs, _, term, trunc, info = env.step(pol.predict(obs)[0])
                done = term or trunc
            metrics.append(info["episode_metrics"])
            env.close()
        assert metrics[0] == metrics[1], name

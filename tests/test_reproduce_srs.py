"""The SRS reproduction's episode runner and report on tiny runs (the full run is a command)."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from edgegym.reproduce import srs, srs_claims, srs_report


@pytest.fixture(scope="module")
def rows():
    jobs = [
        ("srs-edge-8apps", {"requests": 15, "duration_s": 5.0, "apps": 2}, p, 0)
        for p in ("mrs", "pass")
    ]
    return [srs.run_one(j) for j in jobs]


def test_run_one_applies_changes_and_keeps_every_request(rows):
    for r in rows:
        bins = {k: np.array(v) for k, v in r["bins"].items()}
        assert bins["count"].sum() == 15
        # the per-request values binned by arrival average to the episode metrics
        assert bins["completion_s"].sum() / 15 == pytest.approx(r["completion_s"])
        assert bins["accuracy"].sum() / 15 == pytest.approx(r["accuracy"])
        assert r["changes"]["apps"] == 2 and r["decide_ms"] > 0


def test_report_renders_every_section(rows):
    def tagged(key, values):
        return [{**r, "changes": {**r["changes"], key: v}} for v in values for r in rows]

    table = {
        "main": rows,
        "apps": tagged("apps", srs.APPS),
        "servers": tagged("count", srs.SERVERS),
        "theta": tagged("theta", srs.THETAS),
        "light": rows,
        "fixed": rows,
    }
    meta = {
        "seeds": 1,
        "sweep_seeds": 1,
        "quick": True,
        "elapsed": 1.0,
        "date": "d",
        "machine": "m",
    }
    text = srs_report.report(table, meta)
    for needle in ("Fig. 8, 9", "Fig. 10-13", "Fig. 14", "Fig. 15", "*+25%*", "first runs"):
        assert needle in text
    assert "MRS has the best objective at" in text


def test_claims_have_held_out_rows_with_rules_and_reasons(rows):
    table = {
        "main": rows,
        "apps": [{**r, "changes": {**r["changes"], "apps": v}} for v in srs.APPS for r in rows],
        "servers": [
            {**r, "changes": {**r["changes"], "count": v}} for v in srs.SERVERS for r in rows
        ],
        "theta": [{**r, "changes": {**r["changes"], "theta": v}} for v in srs.THETAS for r in rows],
    }
    claims = srs._claims(table)
    held = [c for c in claims if c.role == "held-out"]
    assert len(held) >= 3 and {c.paper for c in claims} == {"srs"}
    assert all(c.test for c in claims) and all(c.why for c in claims if not c.holds)
    assert any(c.role == "calibration" and c.holds for c in claims)


# ------------------------------------------------------------- robustness sweeps
def _data(name="srs-edge-5apps"):
    import copy

    from edgegym.scenarios import load

    return copy.deepcopy(load(name).data)


def test_every_robustness_sweep_builds_a_valid_environment():
    from edgegym.families.dag import DAGOffloadEnv

    for key, (_, _, factors) in srs.ROBUST.items():
        for f in factors:
            sc, left = srs._scenario("srs-edge-5apps", {"sweep": [key, f], "point": "p"})
            assert left == {}
            DAGOffloadEnv(sc, requests=5)


def test_sweeps_scale_what_they_name_and_stay_in_range():
    base = _data()
    d = _data()
    srs._sweep_scenario(d, "drift", 2.0)
    m = next(iter(d["models"]))
    assert d["models"][m]["drift_per_s"] == pytest.approx(2 * base["models"][m]["drift_per_s"])
    d = _data()
    srs._sweep_scenario(d, "headroom", 2.0)
    for name, mod in d["models"].items():
        gap = base["models"][name]["ceiling"] - base["models"][name]["start_accuracy"]
        assert mod["ceiling"] == pytest.approx(min(0.99, mod["start_accuracy"] + 2 * gap))
    d = _data()
    srs._sweep_scenario(d, "cfg_gain", 2.0)
    assert max(c["gain"] for c in d["retrain_configs"]) == 1.0
    d = _data()
    srs._sweep_scenario(d, "demand", 2.0)
    units = d["servers"]["gpus_per_server"] * d["servers"]["units_per_gpu"]
    assert max(t["demand"] for a in d["applications"] for t in a["tasks"]) == units
    d = _data()
    srs._sweep_scenario(d, "length", 0.5)
    assert (d["requests"], d["duration_s"]) == (base["requests"] // 2, base["duration_s"] / 2)
    d = _data()
    srs._sweep_scenario(d, "adainf_slo", 0.5)
    assert d["baselines"]["adainf_slo_factor"] == base["baselines"]["adainf_slo_factor"] / 2
    with pytest.raises(ValueError):
        srs._sweep_scenario(_data(), "nothing", 2.0)


def test_applications_bring_their_own_requests():
    sc, _ = srs._scenario("srs-edge-8apps", {"apps": 8, "per_app": True})
    assert sc["requests"] == 1000 * 8 // srs.DEFAULT_APPS and len(sc["applications"]) == 8
    sc, _ = srs._scenario("srs-edge-8apps", {"apps": 2})
    assert sc["requests"] == 1000  # the same rate, the earlier reading of the sweep


def test_a_claim_holds_only_across_the_robustness_sweeps(monkeypatch):
    from edgegym.reproduce.claims import Claim

    def fake(rows):
        ok = rows["ok"]
        return [
            Claim("srs", "f", "c", "m", 1, 1, "held-out", ok, "rule", "" if ok else "cause"),
            Claim("srs", "f", "k", "m", 1, 1, "calibration", True, "rule"),
        ]

    monkeypatch.setattr(srs_claims, "_claims", fake)
    rows = {"ok": True, "robust": {"drift x2": {"ok": True}, "load x0.5": {"ok": False}}}
    held, cal = srs_claims._judged(rows)
    assert not held.holds and "load x0.5" in held.why and "drift x2" not in held.why
    assert cal.holds
    rows["robust"]["load x0.5"]["ok"] = True
    held, _ = srs_claims._judged(rows)
    assert held.holds and "2 robustness points" in held.test


def test_every_sweep_point_runs_as_many_episodes_as_the_default(monkeypatch):
    """A claim that must hold at every point is judged at each on the default's seeds: the
    figure sweeps and every part of every robustness point run the same seeds as the default
    scenario."""
    import argparse

    ran: dict[str, list[tuple]] = {}

    class Recording:
        def __init__(self, **_):
            pass

        def map(self, fn, jobs, label, journal=None):
            ran[label] = list(jobs)
            return []

        def describe(self):
            return "recording"

    monkeypatch.setattr(srs, "Runner", Recording)
    args = argparse.Namespace(seeds=3, first_seed=7, quick=False, workers=1, ray=False)
    srs._run_all(args)
    seeds = {7, 8, 9}
    for label, jobs in ran.items():
        settings: dict[tuple, set[int]] = {}
        for name, changes, policy, seed in jobs:
            key = (name, tuple(sorted((k, repr(v)) for k, v in changes.items())), policy)
            settings.setdefault(key, set()).add(seed)
        assert settings and all(s == seeds for s in settings.values()), label
    parts = {c["part"] for _, c, _, _ in ran["robustness"]}
    assert parts == {"main", "apps", "servers", "theta"}


def test_the_report_names_the_seeds_each_part_of_the_robustness_points_ran():
    def part(seeds):
        return [{"seed": s} for s in seeds]

    same = {"p": {k: part([4, 5, 6]) for k in ("main", "apps", "servers", "theta")}}
    assert srs_report._robust_seeds_text(same) == "each on 3 seeds (4..6)"
    older = {"p": {"main": part([0, 1]), **{k: part([0]) for k in ("apps", "servers", "theta")}}}
    assert srs_report._robust_seeds_text(older) == (
        "the default scenario on 2 seeds (0..1), the sweeps' ends on 1 seed (0)"
    )


def test_the_theta_sweep_spans_where_algorithm_2_trades_accuracy_for_time(monkeypatch):
    """Fig. 14's sweep must reach the exchange rate at which Eq. 11's accuracy term changes
    Algorithm 2's choice; below it every theta picks the same configurations (the first sweep,
    0.5-10, lay wholly below it). Per priced task: the least theta at which a more accurate
    configuration's Delta P undercuts the quickest one's."""
    from edgegym.baselines import dag

    priced = []  # (base schedule, task, time terms of Delta P, accuracy gain)
    plain = dag.delta_p

    def record(cluster, app, base, i, opt, acc_now, acc_after, theta, chain=True):
        dp = plain(cluster, app, base, i, opt, acc_now, acc_after, theta, chain)
        priced.append((base, i, dp + theta * (acc_after - acc_now), acc_after - acc_now))
        return dp

    monkeypatch.setattr(dag, "delta_p", record)
    # the default scenario's request rate (1000 in 300 s), fewer requests
    srs.run_one(("srs-edge-5apps", {"requests": 150, "duration_s": 45.0}, "mrs", 0))
    groups: dict[tuple[int, int], list[tuple[float, float]]] = {}
    for base, i, t, g in priced:
        groups.setdefault((id(base), i), []).append((t, g))
    switch = []
    for opts in groups.values():
        t0, g0 = min(opts, key=lambda o: (o[0], -o[1]))
        rates = [(t - t0) / (g - g0) for t, g in opts if g > g0]
        switch.append(min(rates, default=np.inf))
    assert len(switch) > 100
    mid = float(np.median(switch))
    below = [t for t in srs.THETAS if t < mid]
    above = [t for t in srs.THETAS if t > mid]
    assert below and above, (mid, srs.THETAS)


def test_the_theta_note_says_the_headline_stands_only_where_mrs_plays_alike() -> None:
    """The robustness section's theta note: the headline claims stand at the Fig. 14 points
    either side of the scenario's theta (2: 0.5 and 10) only where MRS's accuracy and
    completion there are the default's; otherwise it gives the numbers and no conclusion."""
    from edgegym.reproduce.srs_report import _theta_note
    from edgegym.reproduce.srs_setup import THETAS

    def rows(acc_at_10: float) -> dict:
        acc = {t: 0.788 for t in THETAS} | {10.0: acc_at_10}
        return {
            "theta": [
                {"policy": "mrs", "changes": {"theta": t}, "accuracy": a, "completion_s": 1.15}
                for t, a in acc.items()
            ]
        }

    alike = _theta_note(rows(0.790))
    assert "stand there as at the default" in alike and "at theta 0.5 and 10" in alike
    moved = _theta_note(rows(0.80))
    assert "stand" not in moved and "0.800 / 1.15 s at 10" in moved


def test_every_synthesised_input_of_the_scenario_is_swept_or_said_why_not() -> None:
    """Each input the default scenario's provenance calls synthesised or a choice is named
    among the robustness sweeps' provenance fields (``ROBUST``) or listed in ``NOT_SWEPT``
    with the reason, which the report prints; no stale entry."""
    import re

    from edgegym.provenance import source_of
    from edgegym.reproduce.srs_setup import NOT_SWEPT, ROBUST
    from edgegym.scenarios import load

    raw = load("srs-edge-5apps").data
    swept = ", ".join(fields for _, fields, _ in ROBUST.values())
    for key in raw["provenance"]:
        kind = (source_of(raw, key) or "").split(":")[0]
        if kind in ("synthesised", "choice"):
            named = re.search(rf"(^|[ ,]){re.escape(key)}($|[ ,(])", swept)
            assert named or key in NOT_SWEPT, key
    assert set(NOT_SWEPT) <= set(raw["provenance"])


def test_the_arrival_rate_point_rescales_the_pattern_not_the_load() -> None:
    """``arrival_rate`` scales the Alibaba-like pattern's rate (how many of its ticks the run
    spans) and leaves the requests and the duration alone."""
    from edgegym.scenarios import load

    data = load("srs-edge-5apps").data
    for f in (0.5, 2.0):
        scaled = copy.deepcopy(data)
        srs._sweep_scenario(scaled, "arrival_rate", f)
        assert scaled["arrival"] == {**data["arrival"], "rate": data["arrival"]["rate"] * f}
        assert (scaled["requests"], scaled["duration_s"]) == (data["requests"], data["duration_s"])

"""The SRS/MRS reproduction's measured facts and claims, from its runs
(:mod:`edgegym.reproduce.srs` runs them): per-policy means, the headline, the sweeps' wins and
the slides' records of the claims table, each decided by the rule in its ``test``."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from edgegym.reproduce.claims import DEFAULT_POINT, Claim
from edgegym.reproduce.srs_setup import (
    ACC_TOL,
    BASELINES,
    BINS,
    LABEL,
    POLICIES,
    SWEEP_POLICIES,
    VARIANT,
)


def _mean(rows, policy, metric, **match) -> float:
    vals = [
        r[metric]
        for r in rows
        if r["policy"] == policy and all(r["changes"].get(k) == v for k, v in match.items())
    ]
    return float(np.mean(vals)) if vals else float("nan")


def _std(rows, policy, metric) -> float:
    vals = [r[metric] for r in rows if r["policy"] == policy]
    return float(np.std(vals)) if vals else float("nan")


def _series(rows, policy, metric: str) -> np.ndarray:
    """(BINS,) mean of a per-request metric (``completion_s``, ``accuracy``) by arrival time."""
    sums, counts = np.zeros(BINS), np.zeros(BINS)
    for r in rows:
        if r["policy"] == policy:
            sums += np.array(r["bins"][metric])
            counts += np.array(r["bins"]["count"])
    return sums / np.maximum(counts, 1)


def _pct(a: float, b: float) -> str:
    return f"{100.0 * (a - b) / b:+.1f}%"


def scenario_facts(name: str = "srs-edge-8apps") -> dict[str, float]:
    """Numbers of a scenario the claims compare with the slides: the range of the data an
    inference task receives (inputs and edges, MB) and of the task workloads, and the accuracy
    ceiling: the mean over requests (applications by weight) of the mean ceiling of their
    tasks' models, i.e. the accuracy if every model were at its ceiling at every request."""
    from edgegym.scenarios import load

    sc = load(name)
    apps = sc["applications"][:5] if name == "srs-edge-8apps" else sc["applications"]
    data = [t["input_mb"] for a in sc["applications"] for t in a["tasks"] if t["input_mb"] > 0]
    data += [e[2] for a in sc["applications"] for e in a["edges"]]
    work = [t["workload"] for a in sc["applications"] for t in a["tasks"]]
    weights = np.array([a["weight"] for a in apps])
    ceil = [np.mean([sc["models"][t["model"]]["ceiling"] for t in a["tasks"]]) for a in apps]
    return {
        "data_min": float(min(data)),
        "data_max": float(max(data)),
        "work_min": float(min(work)),
        "work_max": float(max(work)),
        "ceiling": float(np.dot(weights, ceil) / weights.sum()),
    }


def work_per_request(n_apps: int, name: str = "srs-edge-8apps") -> float:
    """Mean inference work of a request (sum of its tasks' workloads, GPU time units) when
    requests come from the first ``n_apps`` applications (by weight): the load per request
    the applications sweep offers."""
    from edgegym.scenarios import load

    apps = load(name)["applications"][:n_apps]
    w = np.array([a["weight"] for a in apps])
    work = [sum(t["workload"] for t in a["tasks"]) for a in apps]
    return float(np.dot(w, work) / w.sum())


def _num(x: float, digits: int = 3) -> float | None:
    """``x`` rounded for the claims table, ``None`` where it was not measured (NaN)."""
    return round(float(x), digits) if np.isfinite(x) else None


def _headline(rows: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The default scenario's means per policy, and MRS against the baselines' mean."""
    main_rows = rows["main"]
    keys = ("objective", "completion_s", "accuracy", "retrainings", "decide_ms", "energy_j")
    m = {p: {k: _mean(main_rows, p, k) for k in keys} for p in POLICIES}
    base_acc = float(np.mean([m[p]["accuracy"] for p in BASELINES]))
    base_comp = float(np.mean([m[p]["completion_s"] for p in BASELINES]))
    return {
        "m": m,
        "base_acc": base_acc,
        "base_comp": base_comp,
        "acc_gain": m["mrs"]["accuracy"] / base_acc - 1.0,
        "comp_cut": 1.0 - m["mrs"]["completion_s"] / base_comp,
    }


def _sweep_wins(rows_k: list[dict[str, Any]], key: str, xs: list[Any]) -> tuple[int, int, int]:
    """At how many points of a sweep MRS has the best objective, the shortest completion
    time, and both the shortest completion time and an accuracy within ``ACC_TOL`` of the best."""
    obj = comp = both = 0
    for v in xs:
        o = {p: _mean(rows_k, p, "objective", **{key: v}) for p in SWEEP_POLICIES}
        c = {p: _mean(rows_k, p, "completion_s", **{key: v}) for p in SWEEP_POLICIES}
        a = {p: _mean(rows_k, p, "accuracy", **{key: v}) for p in SWEEP_POLICIES}
        obj += int(min(o, key=o.get) == "mrs")
        fastest = min(c, key=c.get) == "mrs"
        comp += int(fastest)
        both += int(fastest and a["mrs"] >= max(a.values()) - ACC_TOL)
    return obj, comp, both


def _claims(rows: dict[str, list[dict[str, Any]]]) -> list[Claim]:
    """The slides' claims with this run's values: calibration rows for the inputs set from the
    slides' ranges, held-out rows for their evaluation results (each with its rule, and where
    it does not hold the measured reason from this report)."""
    h = _headline(rows)
    facts = scenario_facts()
    return [
        *_calibration_claims(facts),
        *_headline_claims(h, facts),
        *_sweep_claims(rows, h["m"]),
        *_trend_claims(rows),
        _decision_time_claim(h["m"]),
    ]


def _point_claims(rows: dict[str, Any]) -> dict[str, list[Claim]]:
    """Every robustness point's claims, judged there alone."""
    return {pid: _claims(sub) for pid, sub in rows.get("robust", {}).items()}


def _judged(rows: dict[str, Any]) -> list[Claim]:
    """The claims as the table counts them: a held-out claim holds only if it holds on the
    default scenario and at every robustness point; where it fails at a
    point, ``why`` names the point and the value there."""
    base = _claims(rows)
    points = _point_claims(rows)
    out = []
    for i, c in enumerate(base):
        if c.role != "held-out" or not points:
            out.append(c)
            continue
        fails = [(pid, cl[i]) for pid, cl in points.items() if not cl[i].holds]
        why = c.why if not c.holds else ""
        if fails:
            where = "; ".join(f"{pid}: {cl.edgegym_value}" for pid, cl in fails)
            why = (why + ". " if why else "") + (
                f"Across the robustness sweeps it fails at {len(fails)} of {len(points)} "
                f"points ({where}; the robustness section names the cause)"
            )
        out.append(
            dataclasses.replace(
                c,
                holds=c.holds and not fails,
                why=why,
                points={DEFAULT_POINT: c.holds} | {pid: cl[i].holds for pid, cl in points.items()},
                test=f"{c.test}; on the default scenario and at each of the {len(points)} "
                "robustness points",
            )
        )
    return out


def _calibration_claims(facts: dict[str, float]) -> list[Claim]:
    """The scenario's data sizes and workloads against the slides' ranges."""
    return [
        Claim(
            paper="srs",
            figure="实验设置 (setup)",
            claim="Inference task data sizes lie in [0.8, 1.6] MB",
            metric="smallest / largest input or edge data of the scenarios' tasks, MB",
            paper_value="0.8-1.6",
            edgegym_value=f"{facts['data_min']:g}-{facts['data_max']:g}",
            role="calibration",
            holds=facts["data_min"] >= 0.8 and facts["data_max"] <= 1.6,
            test="every value in the slides' range",
        ),
        Claim(
            paper="srs",
            figure="实验设置 (setup)",
            claim="Inference workloads lie in 0.1-0.5 GPU time units",
            metric="smallest / largest task workload (placed by the models' multiply-adds)",
            paper_value="0.1-0.5",
            edgegym_value=f"{facts['work_min']:g}-{facts['work_max']:g}",
            role="calibration",
            holds=facts["work_min"] >= 0.1 and facts["work_max"] <= 0.5,
            test="every value in the slides' range",
        ),
    ]


def _headline_claims(h: dict[str, Any], facts: dict[str, float]) -> list[Claim]:
    """The abstract's +25% accuracy and -45% completion time against the baselines."""
    m = h["m"]
    bound = facts["ceiling"] / h["base_acc"] - 1.0
    return [
        Claim(
            paper="srs",
            figure="abstract, Fig. 8",
            claim="MRS raises inference accuracy by 25% against AdaInf, Ekya and PASS",
            metric="MRS accuracy / mean of the three baselines' - 1",
            paper_value=0.25,
            edgegym_value=_num(h["acc_gain"]),
            role="held-out",
            holds=bool(h["acc_gain"] >= 0.125),
            test="at least half the slides' gain (+12.5%)",
            why=f"headroom: every model at its ceiling at every request would give accuracy "
            f"{facts['ceiling']:.3f}, {bound:+.1%} over the baselines' mean "
            f"{h['base_acc']:.3f}"
            + (", so +25% is out of reach of any policy in this scenario" if bound < 0.25 else "")
            + f"; MRS reaches {m['mrs']['accuracy']:.3f} and List (Algorithm 1 alone, "
            f"{m['list']['retrainings']:.0f} retrainings per episode where A_min forces them) "
            f"{m['list']['accuracy']:.3f}. With a pool of each model's drifted samples, a "
            "model's accuracy settles where the data it pools offsets its drift, whoever "
            "retrains it how often, as long as the pool does not outgrow the configuration's "
            "data; the baselines lose accuracy only by retraining less often than that "
            "(headline table: retrainings per episode)",
        ),
        Claim(
            paper="srs",
            figure="abstract, Fig. 9",
            claim="MRS cuts request completion time by 45% against AdaInf, Ekya and PASS",
            metric="1 - MRS completion / mean of the three baselines'",
            paper_value=0.45,
            edgegym_value=_num(h["comp_cut"]),
            role="held-out",
            holds=bool(h["comp_cut"] >= 0.30),
            test="at least two thirds of the slides' cut (30%)",
            why=f"MRS completes in {m['mrs']['completion_s']:.2f} s against the baselines' "
            f"{h['base_comp']:.2f} s (headline table)",
        ),
    ]


def _xs(rows_k: list[dict[str, Any]], key: str) -> list[Any]:
    """The points of a sweep present in its rows, in order."""
    return sorted({r["changes"][key] for r in rows_k if key in r["changes"]})


def _sweep_claims(rows: dict[str, list[dict[str, Any]]], m: dict[str, Any]) -> list[Claim]:
    """Fig. 10-13: MRS best at every point of the applications and servers sweeps."""
    xa, xsv = _xs(rows["apps"], "apps"), _xs(rows["servers"], "count")
    wins_a = _sweep_wins(rows["apps"], "apps", xa)
    wins_s = _sweep_wins(rows["servers"], "count", xsv)
    claims = []
    for fig, what, wins, xs, key, rk in (
        ("Fig. 10-11", "number of applications", wins_a, xa, "apps", "apps"),
        ("Fig. 12-13", "number of edge servers", wins_s, xsv, "count", "servers"),
    ):
        n = len(xs)
        lost = []
        for v in xs:
            c = {p: _mean(rows[rk], p, "completion_s", **{key: v}) for p in SWEEP_POLICIES}
            a = {p: _mean(rows[rk], p, "accuracy", **{key: v}) for p in SWEEP_POLICIES}
            fast, acc = min(c, key=c.get), max(a, key=a.get)
            why = []
            if fast != "mrs":
                why.append(f"fastest {LABEL[fast]} {c[fast]:.2f} s vs MRS {c['mrs']:.2f} s")
            if a["mrs"] < a[acc] - ACC_TOL:
                why.append(f"most accurate {LABEL[acc]} {a[acc]:.3f} vs MRS {a['mrs']:.3f}")
            if why:
                lost.append(f"{v}: " + ", ".join(why))
        claims.append(
            Claim(
                paper="srs",
                figure=fig,
                claim=f"MRS has the highest accuracy and the shortest completion time at every "
                f"{what}",
                metric=f"sweep points where MRS is fastest with accuracy within {ACC_TOL} of the "
                "best",
                paper_value=f"{n} of {n}",
                edgegym_value=f"{wins[2]} of {n}",
                role="held-out",
                holds=wins[2] == n,
                test=f"all points (MRS also has the best Eq. 9 objective at {wins[0]} of {n})",
                why=f"{what} sweep, where MRS is not both: " + "; ".join(lost),
            )
        )
    return claims


def _trend_claims(rows: dict[str, list[dict[str, Any]]]) -> list[Claim]:
    """Fig. 10-14: which way MRS moves with applications, servers and theta."""
    apps, srv, th = rows["apps"], rows["servers"], rows["theta"]
    xa, xsv, xt = _xs(apps, "apps"), _xs(srv, "count"), _xs(th, "theta")
    a_acc = [_mean(apps, "mrs", "accuracy", apps=v) for v in (xa[0], xa[-1])]
    a_comp = [_mean(apps, "mrs", "completion_s", apps=v) for v in (xa[0], xa[-1])]
    s_comp = [_mean(srv, "mrs", "completion_s", count=v) for v in xsv]
    t_acc = [_mean(th, "mrs", "accuracy", theta=t) for t in (xt[0], xt[-1])]
    t_comp = [_mean(th, "mrs", "completion_s", theta=t) for t in (xt[0], xt[-1])]
    v_acc = [_mean(th, VARIANT, "accuracy", theta=t) for t in (xt[0], xt[-1])]
    a_why = []
    if not a_acc[1] < a_acc[0] - ACC_TOL:
        a_why.append(
            f"accuracy does not fall by more than {ACC_TOL}: each application brings its own "
            "requests (the slides take each application's requests from its own request type of "
            "the trace) and trains its own models (model_scope: application), so each model's "
            "pool of drifted samples fills at the same rate whatever the number of applications, "
            "and MRS retrains on every request whatever the load (Algorithm 2 as written); with "
            "one model per name shared by the applications, accuracy rose instead (docs/design-"
            "notes.md)"
        )
    if not a_comp[1] > a_comp[0]:
        a_why.append("completion time does not rise")
    v_text = (
        f"; edgegym's variant, which adds a node only where Delta P < 0, goes "
        f"{v_acc[0]:.3f} -> {v_acc[1]:.3f}"
        if np.isfinite(v_acc[0])
        else ""
    )
    return [
        Claim(
            paper="srs",
            figure="Fig. 10-11",
            claim="With more applications accuracy falls and completion time rises",
            metric=f"MRS accuracy and completion, {xa[0]} -> {xa[-1]} applications",
            paper_value="falls / rises",
            edgegym_value=f"{a_acc[0]:.3f} -> {a_acc[1]:.3f} / {a_comp[0]:.2f} -> "
            f"{a_comp[1]:.2f} s",
            role="held-out",
            holds=bool(a_acc[1] < a_acc[0] - ACC_TOL and a_comp[1] > a_comp[0]),
            test=f"accuracy lower by more than {ACC_TOL} and completion longer at the most "
            "applications",
            why="applications sweep: " + "; ".join(a_why),
        ),
        Claim(
            paper="srs",
            figure="Fig. 12-13",
            claim="With more edge resources completion time falls",
            metric=f"MRS completion, {xsv[0]} -> {xsv[-1]} servers, s",
            paper_value="falls",
            edgegym_value=" -> ".join(f"{c:.2f}" for c in s_comp),
            role="held-out",
            holds=bool(np.all(np.diff(s_comp) < 0)),
            test="falls at every step",
            why="servers sweep: completion per server count as given",
        ),
        Claim(
            paper="srs",
            figure="Fig. 14",
            claim="A larger theta buys accuracy with completion time",
            metric=f"MRS accuracy and completion at theta = {xt[0]:g} -> {xt[-1]:g}",
            paper_value="accuracy up, completion up",
            edgegym_value=f"{t_acc[0]:.3f} -> {t_acc[1]:.3f} / {t_comp[0]:.2f} -> "
            f"{t_comp[1]:.2f} s",
            role="held-out",
            holds=bool(t_acc[1] > t_acc[0] + ACC_TOL and t_comp[1] >= t_comp[0]),
            test=f"accuracy up by more than {ACC_TOL}, completion not shorter",
            why="Algorithm 2 as written puts a node on every task and theta only picks its "
            "configuration by Delta P, whose accuracy term outweighs the time term only where "
            "theta exceeds a node's retraining time over the accuracy it adds (theta sweep: "
            f"MRS's accuracy {t_acc[0]:.3f} -> {t_acc[1]:.3f})" + v_text,
        ),
    ]


def _decision_time_claim(m: dict[str, Any]) -> Claim:
    """Fig. 15: MRS's decision time per request."""
    return Claim(
        paper="srs",
        figure="Fig. 15",
        claim="MRS decides in milliseconds",
        metric="MRS decision time per request (all its epochs), ms",
        paper_value="ms",
        edgegym_value=_num(m["mrs"]["decide_ms"], 2),
        role="held-out",
        holds=bool(m["mrs"]["decide_ms"] < 10.0),
        test="under 10 ms per request",
        why="execution-time table: MRS's decision time per request",
    )

"""Reproduce MIGRator's evaluation (arXiv 2407.13126 §5) and write its report.

Run ``python -m edgegym.reproduce.migrator [--seeds N] [--workers K] [--quick]`` (``--quick``: a
smoke run on W1, W5 and W9, written to ``runs/reproduction-quick`` with its claims marked
``smoke`` and not counted). Every number in the report comes from this run; the paper's
claims stand beside them. Sections: the inputs calibrated to the paper's characterisation
measurements (Fig. 2, Fig. 5, §5.2), Goodput per workload W1-W16 (Fig. 7), SLO attainment and
accuracy (Fig. 8), batch size 4 (Fig. 9), the reconfiguration basis (Fig. 10),
pre-initialisation's reduction of reconfiguration overhead (§5.2, 83%), two ablations (the
baselines without pre-initialisation; the per-instance cost rule instead of Eq. 10), forecast
vs oracle arrivals, and the planner's solve times and proven optimality gaps. The run ends by
writing MIGRator's records into ``<out>/claims.json`` (:func:`edgegym.reproduce.claims.update`):
the calibration rows and the held-out claims, each decided by the rule in its ``test``.
"""

from __future__ import annotations

import datetime as dt
import platform
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from edgegym.outputs import run_command, save_figure, write_json, write_text
from edgegym.parallel import Runner
from edgegym.reproduce.claims import (
    Claim,
    count_sentence,
    holds_cell,
    open_run,
    read_runs,
    record,
    run_parser,
    smoke_run,
    update,
)
from edgegym.reproduce.migrator_workloads import WORKLOADS

PROG = "python -m edgegym.reproduce.migrator"
#: The files this reproduction writes into --out (besides the claims table) -> kind.
OUTPUTS = {
    "migrator.md": "report",
    "migrator-runs.json": "migrator-runs",
    "migrator-journal.jsonl": "journal",  # finished episodes while the run goes on (resume)
    "migrator-goodput.png": "figure",
    "migrator-goodput-batch4.png": "figure",
    "migrator-sweeps.png": "figure",
}
ENV_ID = "edgegym/MIGReconfig-v0"
POLICIES = ["migrator", "ekya-mig", "astraea", "paris", "static-half"]
LABELS = {
    "migrator": "MIGRator",
    "ekya-mig": "Ekya",
    "astraea": "Astraea",
    "paris": "PARIS",
    "static-half": "static half",
    "migrator:oracle=true": "MIGRator (oracle arrivals)",
    "migrator:forecaster=level": "MIGRator (level forecaster)",
}
PAPER_GAIN = {"ekya-mig": 17, "astraea": 21, "paris": 20}  # Goodput gain of MIGRator, %
PAPER_SLO_GAIN = {"ekya-mig": 17, "astraea": 6, "paris": 13}  # SLO attainment gain, %
PAPER_ACC_GAIN = {"ekya-mig": 0, "astraea": 19, "paris": 12}  # accuracy gain, % (Ekya: similar)
PAPER_PREINIT = 83  # % less reconfiguration overhead with pre-initialisation (§5.2)
BASELINES = ["ekya-mig", "astraea", "paris", "static-half"]
BASES = [0.5, 1.0, 3.0, 5.0, 10.0]
BASIS_WORKLOADS = list(WORKLOADS)  # Fig. 10 shows every workload
ORACLE_WORKLOADS = ["w1", "w4", "w5", "w8"]
#: The paper's MPS-based baselines (§5.1): their runs have MPS interference on (scenario ``mps``).
MPS_POLICIES = ("ekya-mig", "astraea")
#: Robustness sweeps of the inputs that stay synthesised or unstated (a held-out claim must hold at
#: all of them): name -> reproduction overrides (:func:`scenario_overrides`). ``load_x`` scales both
#: traces' level (the paper states none), ``persistence`` sets how much of the per-second shape
#: recurs (synthesised), ``mps_x`` scales the measured MPS slowdowns and ``mps_abs`` sets both to a
#: published memory-contention value (the MPS points rerun only the MPS-based baselines).
SWEEPS: dict[str, dict[str, float]] = {
    "load x0.5": {"load_x": 0.5},
    "load x2": {"load_x": 2.0},
    "persistence x0.5": {"persistence": 0.25},
    "persistence x2": {"persistence": 1.0},
    "MPS x0.5": {"mps_x": 0.5},
    "MPS x2": {"mps_x": 2.0},
    "MPS 30%": {"mps_abs": 0.30},
}
#: Sweep points that rerun every policy (the others rerun only :data:`MPS_POLICIES`).
ALL_POLICY_SWEEPS = ("load x0.5", "load x2", "persistence x0.5", "persistence x2")
#: Sweep points of the batch-4 claim (Fig. 9) and of the basis claims (Fig. 10, on
#: :data:`ORACLE_WORKLOADS`: the 0.5 s basis costs about 7x a 1 s run).
BATCH4_SWEEPS = ALL_POLICY_SWEEPS
BASIS_SWEEPS = ALL_POLICY_SWEEPS


def scenario_overrides(workload: str, policy: str, overrides: dict[str, Any]) -> dict[str, Any]:
    """The environment overrides of one job: the reproduction's own keys (``load_x``,
    ``persistence``, ``mps_x``, ``mps_abs``) turned into scenario fields, and MPS interference
    on for the MPS-based baselines unless the job says otherwise (``mps.interference``)."""
    from edgegym.reproduce import migrator_workloads as mw

    out = {
        k: v for k, v in overrides.items() if k not in ("load_x", "persistence", "mps_x", "mps_abs")
    }
    if "load_x" in overrides or "persistence" in overrides:
        out["tenants"] = mw.tenants(
            workload,
            rate=mw.RATE * float(overrides.get("load_x", 1.0)),
            persistence=float(overrides.get("persistence", mw.PERSISTENCE)),
        )
    base = policy.split(":")[0]
    if base in MPS_POLICIES:
        out.setdefault("mps.interference", True)
        if "mps_x" in overrides:
            f = float(overrides["mps_x"])
            out["mps.inference_slowdown"] = mw.MPS["inference_slowdown"] * f
            out["mps.retrain_slowdown"] = mw.MPS["retrain_slowdown"] * f
        if "mps_abs" in overrides:
            out["mps.inference_slowdown"] = out["mps.retrain_slowdown"] = float(
                overrides["mps_abs"]
            )
    return out


def run_one(job: tuple[str, str, dict[str, Any], int]) -> dict[str, Any]:
    """One episode: ``(workload, policy spec, overrides, seed)`` -> metrics."""
    from edgegym.baselines import make_policy
    from edgegym.families.mig import MIGReconfigEnv

    workload, policy, overrides, seed = job
    env = MIGReconfigEnv(f"migrator-{workload}", **scenario_overrides(workload, policy, overrides))
    pol = make_policy(policy, env)
    obs, _ = env.reset(seed=seed)
    pol.reset(seed)
    t0 = time.perf_counter()
    term = False
    projected = steps = 0
    idle = 0.0
    gpcs = env.params.gpcs
    while not term:
        action, _ = pol.predict(obs)
        obs, _, term, _, info = env.step(action)
        projected += int(info["projected"])
        steps += 1
        idle += 1.0 - float(gpcs[env.state.task[0] >= 0].sum()) / 7.0
    out = dict(info["episode_metrics"])
    out["idle_gpc_frac"] = idle / max(steps, 1)
    out.update(
        workload=workload,
        policy=policy,
        seed=seed,
        overrides=overrides,
        wall_s=time.perf_counter() - t0,
        projected=projected,
    )
    weights = getattr(pol, "weights", None)
    if weights:
        out["shape_weight"] = float(np.mean(weights))
    plans = getattr(pol, "plans", None)
    if plans:
        out["solve_s"] = [p.seconds for p in plans]
        out["gap"] = [p.gap for p in plans]
        out["plans_solved"] = [p.plans_solved for p in plans]
    return out


def _jobs(policies, workloads, overrides, seeds):
    return [(w, p, dict(overrides), s) for w in workloads for p in policies for s in range(seeds)]


def _cost(job: tuple[str, str, dict[str, Any], int]) -> float:
    """A rough relative cost of a job (longest first packs a pool best)."""
    workload, policy, overrides, _ = job
    windows = 4 if "nc-cifar10" in WORKLOADS[workload] else 9
    plan = 30.0 / float(overrides.get("basis_s", 1.0)) if policy.startswith("migrator") else 0.1
    return windows * (1.0 + plan)


def _run_all(
    experiments: dict[str, list], runner: Runner, journal: Path | None = None
) -> dict[str, list[dict[str, Any]]]:
    """Run every experiment's jobs in one pool, costliest first; results per experiment in
    the order of its jobs. ``journal`` keeps the finished ones (a stopped run resumes)."""
    flat = [(name, k, job) for name, jobs in experiments.items() for k, job in enumerate(jobs)]
    flat.sort(key=lambda x: -_cost(x[2]))
    results = runner.map(run_one, [x[2] for x in flat], label="episodes", journal=journal)
    out: dict[str, list[dict[str, Any]]] = {
        name: [None] * len(j) for name, j in experiments.items()
    }
    for (name, k, _), res in zip(flat, results, strict=True):
        out[name][k] = res
    return out


def _table(rows, metric: str, policies, workloads) -> dict[str, dict[str, float]]:
    """policy -> workload -> mean metric over seeds (plus 'avg')."""
    out: dict[str, dict[str, float]] = {}
    for p in policies:
        out[p] = {}
        for w in workloads:
            vals = [r[metric] for r in rows if r["policy"] == p and r["workload"] == w]
            out[p][w] = float(np.mean(vals)) if vals else float("nan")
        out[p]["avg"] = float(np.mean([out[p][w] for w in workloads]))
    return out


def _md_table(tab, policies, workloads, scale=100.0, digits=1) -> str:
    head = "| policy | " + " | ".join(w.upper() for w in workloads) + " | Avg |"
    sep = "|---" * (len(workloads) + 2) + "|"
    lines = [head, sep]
    for p in policies:
        cells = [f"{tab[p][w] * scale:.{digits}f}" for w in [*workloads, "avg"]]
        lines.append(f"| {LABELS.get(p, p)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _gain(tab, a: str, b: str) -> float:
    return 100.0 * (tab[a]["avg"] / tab[b]["avg"] - 1.0)


def _plot(tab, policies, workloads, path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(12, 3.6))
    cols = [*workloads, "avg"]
    x = np.arange(len(cols))
    w = 0.8 / len(policies)
    for i, p in enumerate(policies):
        ax.bar(x + i * w - 0.4 + w / 2, [tab[p][c] * 100 for c in cols], w, label=LABELS.get(p, p))
    ax.set_xticks(x, [c.upper() if c != "avg" else "Avg" for c in cols])
    ax.set_ylabel("Goodput (%)")
    ax.set_ylim(0, 100)
    ax.set_title(title)
    ax.legend(ncol=len(policies), fontsize=8, loc="upper right")
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
    plt.close(fig)


def _load_runs(out: Path) -> dict[str, Any]:
    """The saved ``migrator-runs.json`` in ``out``, for ``--render-only``: what ran (seeds,
    workers, workloads, elapsed) and its rows (:func:`edgegym.reproduce.claims.read_runs`)."""

    def pick(saved: dict[str, Any]) -> dict[str, Any]:
        return {
            "seeds": saved["seeds"],
            "workers": saved["workers"],
            "workloads": saved["workloads"],
            "basis_workloads": saved["basis_workloads"],
            "elapsed": saved["elapsed"],
            "oracle_workloads": saved.get("oracle_workloads", ORACLE_WORKLOADS),
            "quick": bool(saved.get("quick", False)),
            "rows": saved["rows"],
        }

    return read_runs(out / "migrator-runs.json", pick)


def _experiments(workloads, basis_w, oracle_w, seeds: int) -> dict[str, list]:
    """Every experiment's jobs: the main table, batch 4, oracle arrivals, the ablations, the
    basis sweep, and the robustness sweeps."""
    sweeps: dict[str, list] = {}
    for name, ov in SWEEPS.items():
        pols = POLICIES if name in ALL_POLICY_SWEEPS else list(MPS_POLICIES)
        sweeps[f"sweep:{name}"] = _jobs(pols, workloads, ov, seeds)
    for name in BATCH4_SWEEPS:
        sweeps[f"batch4:{name}"] = _jobs(POLICIES, workloads, {**SWEEPS[name], "batch": 4}, seeds)
    for name in BASIS_SWEEPS:
        sweeps[f"basis:{name}"] = [
            j
            for b in BASES
            for j in _jobs(["migrator"], oracle_w, {**SWEEPS[name], "basis_s": b}, seeds)
        ]
    return {
        "main": _jobs(POLICIES, workloads, {}, seeds),
        "batch4": _jobs(POLICIES, workloads, {"batch": 4}, seeds),
        "oracle": _jobs(["migrator:oracle=true,max_plans=400,gap=0.02"], oracle_w, {}, seeds),
        "preinit_off": _jobs(["migrator"], workloads, {"preinit": False}, seeds),
        "baselines_nopre": _jobs(BASELINES, workloads, {"preinit": False}, seeds),
        "rule": _jobs(POLICIES, workloads, {"overhead.rule": "per-instance"}, seeds),
        "basis": [j for b in BASES for j in _jobs(["migrator"], basis_w, {"basis_s": b}, seeds)],
        "no_mps": _jobs(list(MPS_POLICIES), workloads, {"mps.interference": False}, seeds),
        "level": _jobs(["migrator:forecaster=level"], workloads, {}, seeds),
        **sweeps,
    }


def _run_and_save(args, workloads, basis_w, oracle_w, runs_path: Path) -> tuple[dict, float]:
    """Run every experiment and the calibration, save them to ``runs_path``; the rows and
    the seconds it took."""
    t_start = time.time()
    runner = Runner(workers=args.workers, ray=args.ray)
    journal = runs_path.with_name("migrator-journal.jsonl")
    rows = _run_all(_experiments(workloads, basis_w, oracle_w, args.seeds), runner, journal)
    from edgegym.reproduce.migrator_calibration import calibration_claims

    cal_claims, fig2 = calibration_claims()
    rows["calibration"] = {
        "claims": [record(c) for c in cal_claims],
        "fig2": {k: v.tolist() for k, v in fig2.items()},
    }
    elapsed = time.time() - t_start
    write_json(
        runs_path,
        {
            "seeds": args.seeds,
            "workers": args.workers,
            "workloads": workloads,
            "basis_workloads": basis_w,
            "oracle_workloads": oracle_w,
            "quick": args.quick,
            "elapsed": elapsed,
            "date": dt.date.today().isoformat(),
            "rows": rows,
        },
        "migrator-runs",
        indent=1,
    )
    journal.unlink(missing_ok=True)  # its episodes are in the runs file now
    return rows, elapsed


def _plots(rows, workloads, out: Path) -> None:
    """The Goodput figures at batch 1 (Fig. 7) and batch 4 (Fig. 9)."""
    for key, name, title in (
        ("main", "migrator-goodput.png", "Goodput per workload (batch 1), cf. MIGRator Fig. 7"),
        (
            "batch4",
            "migrator-goodput-batch4.png",
            "Goodput per workload (batch 4), cf. MIGRator Fig. 9",
        ),
    ):
        tab = _table(rows[key], "goodput", POLICIES, workloads)
        _plot(tab, POLICIES, workloads, out / name, title)
    _plot_sweeps(rows, workloads, out / "migrator-sweeps.png")


def _plot_sweeps(rows, workloads, path: Path) -> None:
    """MIGRator's average Goodput gain over each baseline at every sweep point."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sweeps = _sweep_facts(rows, workloads, [])
    good = _table(rows["main"], "goodput", POLICIES, workloads)
    pts = [("default", good), *((n, pt["good"]) for n, pt in sweeps.items())]
    fig, ax = plt.subplots(figsize=(10, 3.6))
    x = np.arange(len(pts))
    w = 0.8 / len(PAPER_GAIN)
    for i, p in enumerate(PAPER_GAIN):
        gains = [_gain(t, "migrator", p) for _, t in pts]
        ax.bar(x + i * w - 0.4 + w / 2, gains, w, label=f"vs {LABELS[p]} (paper +{PAPER_GAIN[p]}%)")
    ax.axhline(0, color="k", lw=0.8)
    ax.set_xticks(x, [n for n, _ in pts], fontsize=8)
    ax.set_ylabel("MIGRator Goodput gain (%)")
    ax.set_title("Robustness sweeps: x0.5 / x2 of the unstated inputs")
    ax.legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    """Run every experiment and write the report.

    Returns:
        The exit code: 0 success, 2 bad arguments (one ``error:`` line on stderr, checked
        before any work starts).
    """
    args = run_parser(
        PROG, __doc__, 1, "episodes per (workload, policy) (>= 1)",
        "W1, W5, W9 only (a smoke run)", "migrator-runs.json",
    ).parse_args(argv)  # fmt: skip
    opened = open_run(PROG, args, OUTPUTS, _load_runs)
    if opened is None:
        return 2
    out, saved = opened
    workloads = ["w1", "w5", "w9"] if args.quick else list(WORKLOADS)
    basis_w = [w for w in BASIS_WORKLOADS if w in workloads] or workloads[:1]
    oracle_w = [w for w in ORACLE_WORKLOADS if w in workloads] or workloads[:1]
    if saved is not None:
        args.seeds, args.workers = saved["seeds"], saved["workers"]
        workloads, basis_w = saved["workloads"], saved["basis_workloads"]
        oracle_w, rows, elapsed = saved["oracle_workloads"], saved["rows"], saved["elapsed"]
        args.quick = saved["quick"]
    out.mkdir(parents=True, exist_ok=True)
    with smoke_run(args.quick):  # a quick run's claims are smoke checks, not results
        if not args.render_only:
            runs_path = out / "migrator-runs.json"
            rows, elapsed = _run_and_save(args, workloads, basis_w, oracle_w, runs_path)
        report = _report(args, workloads, basis_w, oracle_w, rows, elapsed)
        _plots(rows, workloads, out)
        write_text(out / "migrator.md", report, "report")
        update("migrator", _claims(workloads, basis_w, oracle_w, rows), out)
    print(f"wrote {out / 'migrator.md'} and the claims in {elapsed:.0f} s")
    return 0


def _sum(rows, metric: str, workloads) -> float:
    """Sum over workloads of the per-workload mean of ``metric``."""
    return float(sum(np.mean([r[metric] for r in rows if r["workload"] == w]) for w in workloads))


def _basis_avgs(basis_rows, basis_w) -> dict[float, float]:
    """basis -> MIGRator's average Goodput over the basis workloads."""
    out = {}
    for b in BASES:
        rows = [r for r in basis_rows if r["overrides"].get("basis_s") == b]
        out[b] = float(
            np.mean([np.mean([r["goodput"] for r in rows if r["workload"] == w]) for w in basis_w])
        )
    return out


def _facts(workloads, basis_w, oracle_w, rows) -> dict[str, Any]:
    """The measured numbers the report and the claims share."""
    main_rows = rows["main"]
    mig = [r for r in main_rows if r["policy"] == "migrator"]
    good = _table(main_rows, "goodput", POLICIES, workloads)
    f: dict[str, Any] = {
        "good": good,
        "slo": _table(main_rows, "slo_attainment", POLICIES, workloads),
        "acc": _table(main_rows, "accuracy", POLICIES, workloads),
        "good4": _table(rows["batch4"], "goodput", POLICIES, workloads),
        "rule": _table(rows["rule"], "goodput", POLICIES, workloads),
        "rule_slo": _table(rows["rule"], "slo_attainment", POLICIES, workloads),
        "nopre": _table(rows["baselines_nopre"], "goodput", BASELINES, workloads),
        "basis": _basis_avgs(rows["basis"], basis_w),
    }
    f["ov"] = _sum(mig, "overhead_s", workloads)
    f["ov_plain"] = _sum(mig, "overhead_without_preinit_s", workloads)
    f["ov_off"] = _sum(rows["preinit_off"], "overhead_s", workloads)
    f["down"] = _sum(mig, "downtime_s", workloads)
    f["down_off"] = _sum(rows["preinit_off"], "downtime_s", workloads)
    f["red_paired"] = 100.0 * (1.0 - f["ov"] / f["ov_plain"]) if f["ov_plain"] > 0 else 0.0
    f["red_runs"] = 100.0 * (1.0 - f["ov"] / f["ov_off"]) if f["ov_off"] > 0 else 0.0
    f["gp_on"] = float(np.mean([r["goodput"] for r in mig]))
    f["gp_off"] = float(np.mean([r["goodput"] for r in rows["preinit_off"]]))
    f["oracle"] = {
        w: float(np.mean([r["goodput"] for r in rows["oracle"] if r["workload"] == w]))
        for w in oracle_w
    }
    f["oracle_gain"] = 100.0 * float(
        np.mean([f["oracle"][w] - good["migrator"][w] for w in oracle_w])
    )
    f["events"] = {
        p: float(np.mean([r["reconfig_events"] for r in main_rows if r["policy"] == p]))
        for p in POLICIES
    }
    f["wins4"] = _wins(f["good4"], workloads)
    f["idle"] = float(np.mean([r.get("idle_gpc_frac", 0.0) for r in mig]))
    f["sweeps"] = _sweep_facts(rows, workloads, oracle_w)
    if rows.get("no_mps"):
        f["no_mps"] = _table(rows["no_mps"], "goodput", list(MPS_POLICIES), workloads)
        f["no_mps_slo"] = _table(rows["no_mps"], "slo_attainment", list(MPS_POLICIES), workloads)
    if rows.get("level"):
        lv = rows["level"]
        f["level"] = _table(lv, "goodput", ["migrator:forecaster=level"], workloads)
        f["shape_weight"] = float(np.mean([r.get("shape_weight", 0.0) for r in mig]))
    return f


def _sweep_facts(rows, workloads, oracle_w) -> dict[str, dict[str, Any]]:
    """Per sweep point that ran: its Goodput, SLO and accuracy tables (the MPS points take
    the policies that do not share by MPS from the main table), the pre-initialisation
    reduction, the batch-4 wins and the basis averages where they ran."""
    out: dict[str, dict[str, Any]] = {}
    for name in SWEEPS:
        srows = rows.get(f"sweep:{name}")
        if not srows:
            continue
        if name not in ALL_POLICY_SWEEPS:
            srows = [r for r in rows["main"] if r["policy"] not in MPS_POLICIES] + srows
        pt: dict[str, Any] = {
            "good": _table(srows, "goodput", POLICIES, workloads),
            "slo": _table(srows, "slo_attainment", POLICIES, workloads),
            "acc": _table(srows, "accuracy", POLICIES, workloads),
        }
        mig = [r for r in srows if r["policy"] == "migrator"]
        ov, plain = (
            _sum(mig, "overhead_s", workloads),
            _sum(mig, "overhead_without_preinit_s", workloads),
        )
        pt["red_paired"] = 100.0 * (1.0 - ov / plain) if plain > 0 else 0.0
        pt["idle"] = float(np.mean([r.get("idle_gpc_frac", 0.0) for r in mig]))
        if rows.get(f"batch4:{name}"):
            pt["good4"] = _table(rows[f"batch4:{name}"], "goodput", POLICIES, workloads)
            pt["wins4"] = _wins(pt["good4"], workloads)
        if rows.get(f"basis:{name}") and oracle_w:
            pt["basis"] = _basis_avgs(rows[f"basis:{name}"], oracle_w)
        out[name] = pt
    return out


def _half_rule(paper: float, ours: float) -> bool:
    return ours > 0 and ours >= paper / 2.0


def _claims(workloads, basis_w, oracle_w, rows) -> list[Claim]:
    """MIGRator's records of the claims table: the calibration rows of the run, then the
    held-out claims, each decided by the rule in its ``test``; a claim that does not hold
    names the measured ablations of the report in ``why``."""
    f = _facts(workloads, basis_w, oracle_w, rows)
    scope = "W1-W16" if len(workloads) == len(WORKLOADS) else "+".join(workloads).upper()
    return [
        *(Claim(**c) for c in rows["calibration"]["claims"]),
        *_gain_claims(f, scope),
        *_accuracy_claims(f, scope),
        _preinit_claim(f),
        _batch4_claim(f, workloads),
        *_basis_claims(f),
    ]


#: The rule of a claimed gain.
HALF = "edgegym's gain > 0 and at least half the paper's"


#: How a claim is judged across the robustness sweeps.
SWEPT = "; at the default inputs and at every sweep point that ran (robustness table)"


def _points(f: dict[str, Any], key: str) -> list[tuple[str, Any]]:
    """(label, value of ``key``) at the default inputs, then at every sweep point that has it."""
    pts = [("default", f[key])]
    pts += [(n, pt[key]) for n, pt in f["sweeps"].items() if key in pt]
    return pts


def _across(f: dict[str, Any], key: str, judge) -> tuple[bool, str, bool]:
    """Judge ``judge(value)`` at every point: (holds everywhere, where it fails, swept)."""
    pts = _points(f, key)
    fails = [name for name, v in pts if not judge(v)]
    return not fails, ", ".join(fails), len(pts) > 1


def _not_swept(swept: bool) -> str:
    return "" if swept else "; not swept in this run (the saved runs predate the sweeps)"


def _gain_claims(f: dict[str, Any], scope: str) -> list[Claim]:
    """Fig. 7 and 8a: MIGRator's Goodput and SLO attainment gains over each baseline."""
    good = f["good"]

    def why_gain(key, rule_tab, what: str, p: str, fails: str) -> str:
        tab = f[key]
        per_point = "; ".join(
            f"{name} {_gain(t, 'migrator', p):+.1f}%" for name, t in _points(f, key)
        )
        return (
            f"fails at: {fails}. Measured gain over {LABELS[p]} per point: {per_point}. "
            f"At the default inputs MIGRator's {what} is "
            f"{_gain(tab, 'migrator', 'static-half'):+.1f}% over a static half split "
            f"({LABELS[p]} vs static half: {_gain(tab, p, 'static-half'):+.1f}%); a perfect "
            f"forecast adds {f['oracle_gain']:+.1f} Goodput points (oracle table); under the "
            f"per-instance rule the gain is {_gain(rule_tab, 'migrator', p):+.1f}% and against "
            f"baselines without pre-initialisation {_gain_vs(good, f['nopre'], p):+.1f}% "
            "(ablations)"
        )

    claims = []
    gain_claims = (
        ("good", PAPER_GAIN, "Fig. 7", "Goodput", " on average", "rule"),
        ("slo", PAPER_SLO_GAIN, "Fig. 8a", "SLO attainment", "", "rule_slo"),
    )
    for key, gains, figure, what, how, rule in gain_claims:
        for p, paper in gains.items():
            ours = _gain(f[key], "migrator", p)
            ok, fails, swept = _across(
                f, key, lambda t, p=p, paper=paper: _half_rule(paper, _gain(t, "migrator", p))
            )
            ok = ok and swept
            claims.append(
                Claim(
                    paper="migrator",
                    figure=figure,
                    claim=f"MIGRator improves {what} over {LABELS[p]} by {paper}%{how}",
                    metric=f"average {what} gain over {LABELS[p]}, {scope} (%)",
                    paper_value=float(paper),
                    edgegym_value=round(ours, 1),
                    role="held-out",
                    holds=ok,
                    test=HALF + SWEPT,
                    why=""
                    if ok
                    else (why_gain(key, f[rule], what, p, fails or "-") + _not_swept(swept)),
                )
            )
    return claims


def _accuracy_claims(f: dict[str, Any], scope: str) -> list[Claim]:
    """Fig. 8b: MIGRator's accuracy against each baseline's."""
    acc = f["acc"]
    base_acc = [acc[p]["avg"] * 100 for p in BASELINES]
    claims = []
    for p, paper in PAPER_ACC_GAIN.items():
        ours = _gain(acc, "migrator", p)
        if paper == 0:
            judge = lambda t, p=p: abs(_gain(t, "migrator", p)) <= 3.0  # noqa: E731
            test = "within 3% (the paper: similar)"
        else:
            judge = lambda t, p=p, paper=paper: _half_rule(paper, _gain(t, "migrator", p))  # noqa: E731
            test = HALF
        ok, fails, swept = _across(f, "acc", judge)
        ok = ok and swept
        per_point = "; ".join(f"{n} {_gain(t, 'migrator', p):+.1f}%" for n, t in _points(f, "acc"))
        claims.append(
            Claim(
                paper="migrator",
                figure="Fig. 8b",
                claim=(
                    f"MIGRator's inference accuracy is similar to {LABELS[p]}'s"
                    if paper == 0
                    else f"MIGRator improves inference accuracy over {LABELS[p]} by {paper}%"
                ),
                metric=f"average accuracy gain over {LABELS[p]}, {scope} (%)",
                paper_value=float(paper),
                edgegym_value=round(ours, 1),
                role="held-out",
                holds=ok,
                test=test + SWEPT,
                why=(
                    ""
                    if ok
                    else f"fails at: {fails or '-'}. Measured gain per point: {per_point}. "
                    "Every baseline here launches each window's retraining at its start and "
                    "finishes it (baselines/mig.py), so at the default inputs their average "
                    f"accuracies lie within {max(base_acc) - min(base_acc):.1f} points of each "
                    f"other and {acc['migrator']['avg'] * 100 - max(base_acc):.1f} of MIGRator's; "
                    "on MIG, not valuing retraining only changes the size of the retraining "
                    "instance" + _not_swept(swept)
                ),
            )
        )
    return claims


def _preinit_claim(f: dict[str, Any]) -> Claim:
    """§5.2: pre-initialisation's reduction of the reconfiguration overhead."""
    ok, fails, swept = _across(f, "red_paired", lambda v: abs(v - PAPER_PREINIT) <= 10.0)
    ok = ok and swept
    per_point = "; ".join(f"{n} {v:.0f}%" for n, v in _points(f, "red_paired"))
    idle = "; ".join(f"{n} {v * 100:.1f}%" for n, v in _points(f, "idle"))
    return Claim(
        paper="migrator",
        figure="§5.2",
        claim="pre-initialisation reduces MIG reconfiguration overheads by 83%",
        metric="measured overhead of MIGRator's reconfigurations with vs without it (% less)",
        paper_value=float(PAPER_PREINIT),
        edgegym_value=round(f["red_paired"], 1),
        role="held-out",
        holds=ok,
        test="within 10 points" + SWEPT,
        why=(
            ""
            if ok
            else f"fails at: {fails or '-'} (reduction per point: {per_point}; GPCs left "
            f"unassigned by MIGRator per point: {idle}). "
            "Only an instance built on memory slices that were idle before the switch "
            "can be pre-initialised (§4.2); measured: the overhead of MIGRator's "
            f"reconfigurations falls from {f['ov_plain']:.0f} s to {f['ov']:.0f} s (runs "
            f"without it: {f['ov_off']:.0f} s); its allocations leave "
            f"{f['idle'] * 100:.1f}% of the GPCs unassigned on average, so most new "
            "instances start on slices a running task has just given up" + _not_swept(swept)
        ),
    )


def _batch4_claim(f: dict[str, Any], workloads) -> Claim:
    """Fig. 9: MIGRator highest in every workload at batch 4."""
    n = len(workloads)
    ok, fails, swept = _across(f, "wins4", lambda v: v == n)
    ok = ok and swept
    per_point = "; ".join(f"{name} {v}" for name, v in _points(f, "wins4"))
    return Claim(
        paper="migrator",
        figure="Fig. 9",
        claim="at batch size 4 MIGRator has the highest Goodput in every workload",
        metric=f"workloads where MIGRator's Goodput is highest, of {n}",
        paper_value=n,
        edgegym_value=f["wins4"],
        role="held-out",
        holds=ok,
        test="all of them" + SWEPT,
        why=""
        if ok
        else f"fails at: {fails or '-'} (workloads won per point: {per_point}); at the default "
        "inputs, batch-4 table of the report: "
        + _losses(f["good4"], workloads)
        + _not_swept(swept),
    )


def _basis_claims(f: dict[str, Any]) -> list[Claim]:
    """Fig. 10: the best reconfiguration basis, and the cost of a coarse one."""
    b = f["basis"]
    best = max(b, key=lambda k: b[k])
    ok_best, fails_best, swept = _across(f, "basis", lambda v: v[0.5] >= max(v.values()) - 0.001)
    ok_best = ok_best and swept
    drop = 100.0 * (b[1.0] - b[10.0])
    ok_drop, fails_drop, _ = _across(f, "basis", lambda v: 100.0 * (v[1.0] - v[10.0]) >= 1.0)
    ok_drop = ok_drop and swept
    pts = _points(f, "basis")
    best_pp = "; ".join(f"{n} {max(v, key=lambda k: v[k]):g} s" for n, v in pts)
    drop_pp = "; ".join(f"{n} {100.0 * (v[1.0] - v[10.0]):.2f}" for n, v in pts)
    sweep_note = " (sweep points on " + ", ".join(w.upper() for w in ORACLE_WORKLOADS) + ")"
    return [
        Claim(
            paper="migrator",
            figure="Fig. 10",
            claim="a 0.5 s basis gives the highest Goodput",
            metric="basis with the highest average Goodput (s)",
            paper_value=0.5,
            edgegym_value=best,
            role="held-out",
            holds=ok_best,
            test="0.5 s highest (ties within 0.1 point count)" + SWEPT + sweep_note,
            why=(
                ""
                if ok_best
                else f"fails at: {fails_best or '-'} (best basis per point: {best_pp}); basis "
                "table of the report: a finer basis follows the forecast more finely only where "
                "the forecast has per-second structure, and costs more reconfigurations"
                + _not_swept(swept)
            ),
        ),
        Claim(
            paper="migrator",
            figure="Fig. 10",
            claim="a 10 s basis gives a significantly lower Goodput than 1 s",
            metric="average Goodput at 1 s minus at 10 s (points)",
            paper_value="significant",
            edgegym_value=round(drop, 2),
            role="held-out",
            holds=ok_drop,
            test="at least 1 point" + SWEPT + sweep_note,
            why=(
                ""
                if ok_drop
                else f"fails at: {fails_drop or '-'} (1 s minus 10 s per point, points: "
                f"{drop_pp}); basis table of the report: where the allocation changes mostly at "
                "retraining starts and ends, a 10 s basis delays them by a few seconds at most"
                + _not_swept(swept)
            ),
        ),
    ]


def _gain_vs(good, other, p: str) -> float:
    """MIGRator's average Goodput gain over policy ``p`` of another table (%)."""
    return 100.0 * (good["migrator"]["avg"] / other[p]["avg"] - 1.0)


def _losses(tab, workloads) -> str:
    """Workloads where MIGRator is not the highest, with the winner."""
    parts = []
    for w in workloads:
        top = max(POLICIES, key=lambda p: tab[p][w])
        if tab["migrator"][w] < tab[top][w] - 1e-12:
            parts.append(
                f"{w.upper()} ({LABELS[top]} {tab[top][w] * 100:.1f} vs "
                f"{tab['migrator'][w] * 100:.1f})"
            )
    return "MIGRator is not highest in " + ", ".join(parts)


def _claims_table(claims: list[Claim]) -> list[str]:
    lines = [
        "| where | claim | paper | edgegym | role | holds | rule / why not |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in claims:
        note = c.test if c.holds else c.why
        lines.append(
            f"| {c.figure} | {c.claim} | {c.paper_value} | {c.edgegym_value} | {c.role} | "
            f"{holds_cell(c)} | {note} |"
        )
    return lines


def _report(args, workloads, basis_w, oracle_w, rows, elapsed):
    """The report's Markdown: the setup, one section per figure, the ablations, the planner,
    the claims and why edgegym's gains differ."""
    f = _facts(workloads, basis_w, oracle_w, rows)
    claims = _claims(workloads, basis_w, oracle_w, rows)
    lines = [
        *_intro(args, elapsed),
        *_calibration_section(rows, claims),
        *_goodput_section(f, workloads),
        *_slo_accuracy_section(f, workloads),
        *_batch4_section(f, workloads),
        *_basis_section(rows["basis"], basis_w),
        *_preinit_section(f, workloads),
        *_ablations_section(f, workloads),
        *_oracle_section(f, oracle_w),
        *_mps_section(f, workloads),
        *_sweep_section(f),
        *_planner_section(rows["main"], workloads),
        "## Claims",
        "",
        *([count_sentence(claims), ""] if any(c.smoke for c in claims) else []),
        *_claims_table([c for c in claims if c.role == "held-out"]),
        "",
        *_differences_section(f, oracle_w),
    ]
    return "\n".join(lines)


def _intro(args, elapsed: float) -> list[str]:
    """The title, what ran, the policies and the environment's cost model."""
    return [
        "# MIGRator reproduction (edgegym/MIGReconfig-v0)",
        "",
        "Regenerate with `python -m edgegym.reproduce.migrator` "
        f"(this run: {args.seeds} seed(s) per cell, {args.workers} worker(s), "
        f"{elapsed / 60:.1f} min on {platform.processor() or platform.machine()}, "
        f"{dt.date.today().isoformat()}). Every edgegym number below comes from that run; the "
        "paper's claims stand beside them, and its records are in "
        "[claims.json](claims.json) ([README](README.md)). Scenario files: "
        "`scenarios/migrator-w*.yaml`, written by `python -m "
        "edgegym.reproduce.migrator_workloads`; each names the source of every input in its "
        "`provenance`.",
        "",
        "Policies: MIGRator (`migrator`: B&B + Viterbi plan per window from a seasonal forecast "
        "learned from the past windows, proven within 1% of its model's optimum unless the cap "
        "on exact solves stops it first), Ekya (`ekya-mig`), Astraea (`astraea`), PARIS "
        "(`paris`) and `static-half`, all on the same simulated GPU (see `baselines/mig.py` for "
        "how the MPS systems are mapped onto MIG instances). Ekya and Astraea share the GPU by "
        "MPS in the paper (§5.1), so their runs have MPS interference on (`mps.interference`: "
        "co-located inference 2.0% and retraining 4.3% slower, measured on an H200; see the "
        "scenario provenance); MIGRator, PARIS and static-half run on isolated MIG instances.",
        "",
        "Inputs: both traces at 120 req/s (the paper states no rate; §5.1 points to "
        "Fig. 3, whose curves lie mostly within 50-250 req/s), half of each trace's per-second "
        "shape recurring every 200 s window (synthesised), batch 1, one A100. Every input that "
        "stays synthesised or unstated is swept (robustness section), and a held-out claim holds "
        "only if it holds at every sweep point.",
        "",
        "The environment as the paper models it: a task whose instance or GPC count changes loses "
        "its whole capacity for Psi, its mean reconfiguration overhead measured over the last "
        "window (Eq. 10-11, `overhead.rule: eq10`); pre-initialisation on (§4.2, evaluated with "
        "MIGRator in §5.2); the planner uses the same cost rule.",
        "",
    ]


def _calibration_section(rows, claims: list[Claim]) -> list[str]:
    """Fig. 2's splits re-measured against the paper, and the calibration rows."""
    from edgegym.reproduce import migrator_workloads as mw
    from edgegym.reproduce.migrator_calibration import FIG2_ACC, FIG2_SLO, SPLITS

    fig2 = {k: np.array(v) for k, v in rows["calibration"]["fig2"].items()}
    lines = [
        "## Inputs calibrated to the paper's measurements (Fig. 2, Fig. 5, §5.2)",
        "",
        f"Fig. 2 measures ResNet50 alone under four static inference-retraining splits. Two "
        f"inputs of that experiment are fitted to it by `python -m "
        f"edgegym.reproduce.migrator_calibration`: its trace level ({mw.FIG2_RATE} req/s, to the "
        f"SLO attainment; Fig. 2's experiment only: the W1-W16 workloads run at {mw.RATE} req/s "
        f"from §5.1 and Fig. 3) and the retraining cost (`retrain_scale` {mw.RETRAIN_SCALE}, to "
        "the accuracy, used by every workload). This run re-measures the fit (3 seeds):",
        "",
        "| split | SLO paper (W1-W4) | SLO edgegym | accuracy paper | accuracy edgegym |",
        "|---|---|---|---|---|",
    ]
    for sp in SPLITS:
        fmt = lambda xs: " / ".join(f"{x:.1f}" for x in xs)  # noqa: E731
        lines.append(
            f"| {sp} | {fmt(FIG2_SLO[sp])} | {fmt(fig2[sp][0])} | {fmt(FIG2_ACC[sp])} | "
            f"{fmt(fig2[sp][1])} |"
        )
    lines += [
        "",
        "One level cannot follow every window: the paper's windows differ in their arrivals, "
        "the synthesised trace's do not, and its tail is lighter (6 GPCs of inference leave "
        "fewer requests unserved than in the paper). The accuracy model drops more in window 1 "
        "than ResNet50 does in Fig. 2 (its 1/n loss of accuracy is calibrated to §5.2's Bert and "
        "ViT).",
        "",
        *_claims_table([c for c in claims if c.role == "calibration"]),
        "",
    ]
    return lines


def _goodput_section(f: dict[str, Any], workloads) -> list[str]:
    """Fig. 7: Goodput per workload and MIGRator's gains."""
    good = f["good"]
    best_avg = max(POLICIES, key=lambda p: good[p]["avg"])
    lines = [
        "## Goodput per workload (Fig. 7)",
        "",
        "Goodput (%) = requests served within their SLO *and* answered correctly / all requests.",
        "",
        _md_table(good, POLICIES, workloads),
        "",
        "![Goodput per workload](migrator-goodput.png)",
        "",
        "| MIGRator vs | paper | edgegym |",
        "|---|---|---|",
    ]
    for p, g in PAPER_GAIN.items():
        lines.append(f"| {LABELS[p]} | +{g}% | {_gain(good, 'migrator', p):+.1f}% |")
    lines += [
        f"| static half | - | {_gain(good, 'migrator', 'static-half'):+.1f}% |",
        "",
        f"Highest average Goodput: **{LABELS[best_avg]}** ({good[best_avg]['avg'] * 100:.1f}%).",
        "",
    ]
    return lines


def _slo_accuracy_section(f: dict[str, Any], workloads) -> list[str]:
    """Fig. 8: SLO attainment and accuracy, and the reconfigurations per episode."""
    slo, acc = f["slo"], f["acc"]
    lines = [
        "## SLO attainment and accuracy (Fig. 8)",
        "",
        "SLO attainment (%):",
        "",
        _md_table(slo, POLICIES, workloads),
        "",
        "Inference accuracy (%) (requests answered correctly / all requests):",
        "",
        _md_table(acc, POLICIES, workloads),
        "",
        "| MIGRator vs | SLO gain paper | SLO gain edgegym | accuracy gain paper | "
        "accuracy gain edgegym |",
        "|---|---|---|---|---|",
    ]
    for p in PAPER_SLO_GAIN:
        acc_paper = "similar" if PAPER_ACC_GAIN[p] == 0 else f"+{PAPER_ACC_GAIN[p]}%"
        lines.append(
            f"| {LABELS[p]} | +{PAPER_SLO_GAIN[p]}% | {_gain(slo, 'migrator', p):+.1f}% | "
            f"{acc_paper} | {_gain(acc, 'migrator', p):+.1f}% |"
        )
    lines += [
        "",
        "Reconfigurations per episode (tasks whose instance or GPC count changed, Eq. 11): "
        + ", ".join(f"{LABELS[p]} {f['events'][p]:.0f}" for p in POLICIES)
        + ".",
        "",
    ]
    return lines


def _batch4_section(f: dict[str, Any], workloads) -> list[str]:
    """Fig. 9: Goodput at batch size 4."""
    good4 = f["good4"]
    return [
        "## Batch size 4 (Fig. 9)",
        "",
        _md_table(good4, POLICIES, workloads),
        "",
        "![Goodput at batch 4](migrator-goodput-batch4.png)",
        "",
        "Paper: MIGRator has the highest Goodput in every workload at batch 4. edgegym: "
        f"MIGRator is highest in {f['wins4']} of {len(workloads)} workloads; "
        + ", ".join(f"{_gain(good4, 'migrator', p):+.1f}% vs {LABELS[p]}" for p in PAPER_GAIN)
        + " on average.",
        "",
    ]


def _basis_section(basis_rows, basis_w) -> list[str]:
    """Fig. 10: MIGRator's Goodput and solve time per reconfiguration basis."""
    lines = [
        "## Reconfiguration basis (Fig. 10)",
        "",
        f"MIGRator's Goodput (%) on {', '.join(w.upper() for w in basis_w)} with a decision "
        "every 0.5 to 10 s (paper: 0.5 s is best, 1 s is close, 10 s clearly worse).",
        "",
        "| basis (s) | " + " | ".join(w.upper() for w in basis_w) + " | Avg | solve s/window |",
        "|---" * (len(basis_w) + 3) + "|",
    ]
    for b in BASES:
        brows = [r for r in basis_rows if r["overrides"].get("basis_s") == b]
        vals = [np.mean([r["goodput"] for r in brows if r["workload"] == w]) for w in basis_w]
        st = np.median([x for r in brows for x in r.get("solve_s", [])])
        lines.append(
            f"| {b:g} | "
            + " | ".join(f"{v * 100:.1f}" for v in vals)
            + f" | {np.mean(vals) * 100:.1f} | {st:.2f} |"
        )
    lines.append("")
    return lines


def _preinit_section(f: dict[str, Any], workloads) -> list[str]:
    """§4.2, §5.2: pre-initialisation's effect on the reconfiguration overhead."""
    return [
        "## Pre-initialisation (§4.2, §5.2)",
        "",
        "Pre-initialisation is part of MIGRator's runtime (§4.2: after every solve the "
        "allocation sequence is traversed for instances that unused slices can host ahead of "
        "time) and §5.2 evaluates MIGRator with it, so it is on in every scenario. Its effect "
        "is measured as the paper reports it, on the reconfiguration overhead:",
        "",
        f"- **The same reconfigurations** (MIGRator's runs, summed over {len(workloads)} "
        f"workloads): measured overhead {f['ov']:.0f} s with pre-initialisation against "
        f"{f['ov_plain']:.0f} s had the same instances been built only when needed: "
        f"**{f['red_paired']:.0f}% less** (paper: {PAPER_PREINIT}%).",
        f"- **Runs without it** (`preinit=false`): {f['ov_off']:.0f} s of measured overhead "
        f"({f['red_runs']:.0f}% more with it off than on, the plans differ), downtime "
        f"{f['down_off']:.0f} instance-seconds against {f['down']:.0f}; Goodput "
        f"{f['gp_off'] * 100:.1f}% without, {f['gp_on'] * 100:.1f}% with.",
        "",
        "Only an instance built on memory slices that were idle before the switch can be "
        f"pre-initialised (§4.2); MIGRator's allocations leave {f['idle'] * 100:.1f}% of the "
        "GPCs unassigned on average. Under Eq. 10 the overhead it saves reaches the cost model "
        "one window later, through Psi (the mean measured overhead of the last window).",
        "",
    ]


def _ablations_section(f: dict[str, Any], workloads) -> list[str]:
    """The baselines without pre-initialisation, and the per-instance cost rule."""
    good = f["good"]
    lines = [
        "## Ablations",
        "",
        "**The baselines without pre-initialisation** (the paper's Ekya and Astraea run on MPS "
        "and PARIS is static: none of them pre-initialises). MIGRator as in the main table:",
        "",
        "| MIGRator vs | paper | baselines with pre-init (main) | without |",
        "|---|---|---|---|",
    ]
    for p, g in PAPER_GAIN.items():
        lines.append(
            f"| {LABELS[p]} | +{g}% | {_gain(good, 'migrator', p):+.1f}% | "
            f"{_gain_vs(good, f['nopre'], p):+.1f}% |"
        )
    lines += [
        "",
        "**The per-instance cost rule** (`overhead.rule: per-instance`, the environment's "
        "default before the scenarios were recalibrated to Eq. 10: each instance that gets a "
        "new task is down for its own "
        "destroy/create/library/model-load overhead, a task's other instances keep serving):",
        "",
        _md_table(f["rule"], POLICIES, workloads),
        "",
        "| MIGRator vs | paper | Eq. 10 (main) | per-instance |",
        "|---|---|---|---|",
    ]
    for p, g in PAPER_GAIN.items():
        lines.append(
            f"| {LABELS[p]} | +{g}% | {_gain(good, 'migrator', p):+.1f}% | "
            f"{_gain(f['rule'], 'migrator', p):+.1f}% |"
        )
    lines.append("")
    return lines


def _oracle_section(f: dict[str, Any], oracle_w) -> list[str]:
    """MIGRator planning from its forecast against planning from the true arrivals."""
    good = f["good"]
    lines = [
        "## Forecast vs oracle arrivals",
        "",
        "MIGRator plans a whole window from a forecast (the paper uses an Informer model; here "
        "a simple seasonal forecaster learned from the past windows: the mean per-second shape "
        "of the past windows, weighted by how well it predicted the last one (least squares), "
        "times the last window's level, `seasonal_forecast` in `baselines/migrator.py`; the "
        "first forecaster, the previous window's level and per-second distribution, "
        "is `migrator:forecaster=level`). Planning with the true arrivals of the window "
        "(oracle, gap 0.02, at most 400 exact plan solves) gives:",
        "",
        "| workload | MIGRator (seasonal) | MIGRator (level) | MIGRator (oracle) | Ekya |",
        "|---|---|---|---|---|",
    ]
    lv = f.get("level", {}).get("migrator:forecaster=level", {})
    for w in oracle_w:
        lvl = f"{lv[w] * 100:.1f}" if w in lv else "-"
        lines.append(
            f"| {w.upper()} | {good['migrator'][w] * 100:.1f} | {lvl} | "
            f"{f['oracle'][w] * 100:.1f} | {good['ekya-mig'][w] * 100:.1f} |"
        )
    lines.append("")
    if lv:
        lines += [
            f"Over all workloads: seasonal {good['migrator']['avg'] * 100:.1f}%, level "
            f"{lv['avg'] * 100:.1f}% Goodput; the learned weight of the recurring shape averages "
            f"{f['shape_weight']:.2f} (0: the level alone, 1: the shape).",
            "",
        ]
    return lines


def _mps_section(f: dict[str, Any], workloads) -> list[str]:
    """MPS interference on the MPS-based baselines: their Goodput with and without it."""
    if "no_mps" not in f:
        return []
    good = f["good"]
    lines = [
        "## MPS interference (§5.1, §5.2)",
        "",
        "The paper's Ekya and Astraea share the GPU by MPS and lose SLO attainment to "
        "interference that MIG removes (§5.2). Their runs here have `mps.interference` on: "
        "whenever two or more tasks hold the GPU, inference serves 2.0% and retraining "
        "progresses 4.3% slower (H200 measurement of 2026-11-27, ResNet18; the scenario "
        "provenance has the numbers). Without it:",
        "",
        "| policy | Goodput with MPS interference (main) | without | SLO with | SLO without |",
        "|---|---|---|---|---|",
    ]
    for p in MPS_POLICIES:
        lines.append(
            f"| {LABELS[p]} | {good[p]['avg'] * 100:.1f} | {f['no_mps'][p]['avg'] * 100:.1f} | "
            f"{f['slo'][p]['avg'] * 100:.1f} | {f['no_mps_slo'][p]['avg'] * 100:.1f} |"
        )
    lines += [
        "",
        "MIGRator's Goodput gain without interference on the baselines: "
        + ", ".join(f"{_gain_vs(good, f['no_mps'], p):+.1f}% ({LABELS[p]})" for p in MPS_POLICIES)
        + ".",
        "",
    ]
    return lines


def _sweep_section(f: dict[str, Any]) -> list[str]:
    """The robustness sweeps: MIGRator's gains at every point, and the figure."""
    if not f["sweeps"]:
        return [
            "## Robustness sweeps",
            "",
            "Not in this run (the saved runs predate the sweeps): no held-out claim is "
            "counted as holding.",
            "",
        ]
    lines = [
        "## Robustness sweeps",
        "",
        "Inputs the paper does not state are swept: the trace level (x0.5, x2 around 120 "
        "req/s), the share of the per-second shape that recurs (x0.5: 0.25, x2: 1.0 around "
        "0.5) and the MPS slowdowns of Ekya and Astraea (x0.5, x2 around the measured 2.0% / "
        "4.3%, and 30% for both: the memory-contention value of Villarrubia et al., arXiv "
        "2604.22430). The MPS points rerun Ekya and Astraea only. MIGRator's gains (%):",
        "",
        "| point | Goodput vs Ekya | vs Astraea | vs PARIS | SLO vs Ekya | vs Astraea | vs PARIS | "
        "accuracy vs Ekya | vs Astraea | vs PARIS | pre-init reduction | batch-4 wins |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    pts = [("default", f), *f["sweeps"].items()]
    for name, pt in pts:
        cells = [
            f"{_gain(pt[k], 'migrator', p):+.1f}"
            for k in ("good", "slo", "acc")
            for p in PAPER_GAIN
        ]
        wins = f"{pt['wins4']}" if "wins4" in pt else "-"
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {pt['red_paired']:.0f}% | {wins} |")
    lines += ["", "![MIGRator's Goodput gains across the sweeps](migrator-sweeps.png)", ""]
    return lines


def _planner_section(main_rows, workloads) -> list[str]:
    """The planner's solve times and proven optimality gaps."""
    mig_rows = [r for r in main_rows if r["policy"] == "migrator"]
    solve = np.concatenate([r["solve_s"] for r in mig_rows if "solve_s" in r])
    gaps = np.concatenate([r["gap"] for r in mig_rows if "gap" in r])
    first = workloads[0]
    w_first = [s for r in mig_rows if r["workload"] == first for s in r["solve_s"]]
    return [
        "## The planner",
        "",
        f"Solve time per window over all workloads (batch 1, basis 1 s): median "
        f"{np.median(solve):.2f} s, 90th percentile {np.percentile(solve, 90):.2f} s, max "
        f"{solve.max():.2f} s; {first.upper()}: {', '.join(f'{x:.2f}' for x in w_first)} s. "
        f"Proven gap to the optimum of the model: median {np.median(gaps) * 100:.2f}%, "
        f"{np.mean(gaps <= 0.01 + 1e-12) * 100:.0f}% of windows within 1%, max "
        f"{gaps.max() * 100:.2f}% (a gap above 1% means the cap of 2,000 exact plan solves "
        "stopped the search: Eq. 10 charges a switch the task's whole capacity, which the "
        "transition-free bound of branch and bound ignores, so more plans stay open). Eq. 10's "
        "costs can violate the triangle inequality (a switch to an option with the same counts "
        "is free), so the Viterbi runs step by step wherever they do and stays exact. The "
        "paper: its ILP solves within 1% of the 200 s window with Gurobi.",
        "",
    ]


def _differences_section(f: dict[str, Any], oracle_w) -> list[str]:
    """Why edgegym's gains differ from the paper's: what is measured, what is not, and what
    was not tuned."""
    good = f["good"]
    return [
        "## Why edgegym's gains differ from the paper's",
        "",
        "Measured in this report:",
        "",
        f"- **Forecast**: planning with the true arrivals adds {f['oracle_gain']:+.1f} Goodput "
        "points on average on "
        + ", ".join(w.upper() for w in oracle_w)
        + " (oracle table): the part of each second that does not recur cannot be planned "
        "for from the past windows. Forecaster history: a seasonal-naive per-second forecast "
        "was tried earlier, on the stationary traces, and lost to Ekya on W1 and W5 "
        "(`docs/design-notes.md`); the seasonal forecaster learns the weight of the "
        "shape from the past windows, so on stationary arrivals it falls back to the level "
        "(`tests/baselines/test_migrator_forecast.py`), and the level forecaster's Goodput "
        "stands beside it in the oracle table.",
        "- **Pre-initialisation for everyone**: the main table gives the baselines MIGRator's "
        "runtime, pre-initialisation included; without it MIGRator's gains are "
        + ", ".join(f"{_gain_vs(good, f['nopre'], p):+.1f}% ({LABELS[p]})" for p in PAPER_GAIN)
        + " (ablation).",
        "- **The cost rule**: under the per-instance rule the gains are "
        + ", ".join(f"{_gain(f['rule'], 'migrator', p):+.1f}% ({LABELS[p]})" for p in PAPER_GAIN)
        + " (ablation); Eq. 10 punishes a policy that switches often: Astraea makes "
        f"{f['events']['astraea']:.0f} task reconfigurations an episode against MIGRator's "
        f"{f['events']['migrator']:.0f}.",
        f"- **Headroom of dynamic allocation**: MIGRator beats a static half split by "
        f"{_gain(good, 'migrator', 'static-half'):+.1f}%.",
        "",
        "Latency per instance size, SLOs and accuracy ceilings are synthesised (the paper "
        "publishes none; see each scenario's provenance). MPS interference is applied as a "
        "uniform slowdown of co-located work measured with ResNet18 on an H200; the paper's "
        "larger models may suffer more (the 30% sweep point).",
        "",
        "Not tuned to the claims: the inputs come from the sources in the scenario files; "
        "`retrain_scale` was fitted to Fig. 2 (a characterisation, not an evaluation result); "
        "the 2026-11-27 workloads replaced the Fig. 2 trace level by the §5.1 / Fig. 3 reading "
        "and added the recurrence and the MPS slowdown before any run of the new scenarios; "
        "no input was changed after the held-out results were seen. "
        "Two baseline fixes followed the first runs (before that recalibration), both toward "
        "the papers: "
        "Ekya-on-MIG first could skip retraining (the paper's Ekya always retrains), and PARIS / "
        "static-half could give a tenant only instances that miss its SLO at batch 4.",
        "",
    ]


def _wins(tab, workloads) -> int:
    return sum(
        1 for w in workloads if tab["migrator"][w] >= max(tab[p][w] for p in POLICIES) - 1e-12
    )


if __name__ == "__main__":
    sys.exit(run_command(main, PROG))

"""Reproduce MIGRator's evaluation (arXiv 2407.13126 §5) and write its report.

Run ``python -m edgegym.reproduce.migrator [--seeds N] [--first-seed N] [--workers K] [--quick]``
(``--quick``: a smoke run on W1, W5 and W9, written to ``runs/reproduction-quick`` with its
claims marked ``smoke`` and not counted; ``--first-seed N``: a seed check on seeds N, N+1, ...,
written to ``docs/reproduction/seeds-N``). Every number in the report comes from this run;
the paper's claims stand beside them. Sections: the inputs calibrated to the paper's
characterisation measurements (Fig. 2, Fig. 5, §5.2), Goodput per workload W1-W16 (Fig. 7),
SLO attainment and accuracy (Fig. 8), batch size 4 (Fig. 9), the reconfiguration basis (Fig. 10),
pre-initialisation's reduction of reconfiguration overhead (§5.2, 83%), the ablations (the
baselines without pre-initialisation; the per-instance cost rule instead of Eq. 10; the MPS
baselines without interference; Astraea's retraining at a share below one GPC), forecast vs
oracle arrivals, and the planner's solve times and proven optimality gaps. The run ends by
writing MIGRator's records into ``<out>/claims.json`` (:func:`edgegym.reproduce.claims.update`):
the calibration rows and the held-out claims, each decided by the rule in its ``test``.
"""

from __future__ import annotations

import datetime as dt
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from edgegym.baselines import paper_setup
from edgegym.hardware.mig import MIG_TOTAL_GPCS
from edgegym.jsonshape import BOOL, INT, NUM, TEXT, ListOf, MapOf, Maybe, OneOf, Record
from edgegym.outputs import run_command, save_figure, write_json, write_text
from edgegym.parallel import Runner
from edgegym.reproduce.claims import (
    CLAIM_SHAPE,
    open_run,
    read_runs,
    record,
    run_parser,
    smoke_run,
    update,
    write_report,
)
from edgegym.reproduce.migrator_claims import _claims, _gain, _sweep_facts, _table
from edgegym.reproduce.migrator_report import report
from edgegym.reproduce.migrator_setup import (
    ALL_POLICY_SWEEPS,
    BASELINES,
    BASES,
    BASIS_SWEEPS,
    BASIS_WORKLOADS,
    BATCH4_SWEEPS,
    LABELS,
    MPS_POLICIES,
    ORACLE_WORKLOADS,
    PAPER_GAIN,
    POLICIES,
    PROG,
    SEEDS,
    STATIC_PARIS,
    SWEEPS,
)
from edgegym.reproduce.migrator_workloads import WORKLOADS
from edgegym.workload.models import get_model

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


def scenario_overrides(workload: str, policy: str, overrides: dict[str, Any]) -> dict[str, Any]:
    """The environment overrides of one job: the reproduction's own keys (``load_x``,
    ``persistence``, ``share_alpha_x``, ``slo_x``, ``ceiling_error_x``, ``dispersion_x``,
    ``mps_x``, ``mps_abs``)
    turned into scenario fields;
    then the policy's paper setup (:func:`edgegym.baselines.paper_setup`, as
    :func:`edgegym.evaluate` applies it): the MPS-based baselines hold :data:`MPS_SHARES` MPS
    shares (no pre-initialisation, which builds MIG instances) with MPS interference on, unless
    the job says otherwise (``mps.shares``, ``mps.interference``; ``mps.shares: 0`` puts them on
    MIG instances)."""
    from edgegym.reproduce import migrator_workloads as mw

    per_tenant = (
        "load_x",
        "persistence",
        "share_alpha_x",
        "slo_x",
        "ceiling_error_x",
        "dispersion_x",
    )
    own = (*per_tenant, "mps_x", "mps_abs")
    out = {k: v for k, v in overrides.items() if k not in own}
    if set(per_tenant) & set(overrides):
        out["tenants"] = mw.tenants(
            workload,
            rate=mw.RATE * float(overrides.get("load_x", 1.0)),
            persistence=float(overrides.get("persistence", mw.PERSISTENCE)),
            slo_x=float(overrides.get("slo_x", 1.0)),
            ceiling_error_x=float(overrides.get("ceiling_error_x", 1.0)),
            dispersion_x=float(overrides.get("dispersion_x", 1.0)),
        )
        if "share_alpha_x" in overrides:
            x = float(overrides["share_alpha_x"])
            for t in out["tenants"]:
                t["profile"] = {"share_alpha": min(1.0, get_model(t["model"]).share_alpha * x)}
    out.update(paper_setup(policy, f"migrator-{workload}", out))
    if policy.split(":")[0] in MPS_POLICIES:
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
    spec = env.params.spec
    gpcs = env.params.gpcs * MIG_TOTAL_GPCS / spec.catalogue.units  # GPCs under MPS shares too
    m, window_s = spec.n_tenants, spec.window_s
    finish_s: list[float] = []  # seconds into its window at which each retraining job ended
    job_gpcs: list[float] = []  # GPCs of each running job's instance, per step
    while not term:
        running = env.state.running[0].copy()
        window = int(env.state.window[0])
        action, _ = pol.predict(obs)
        obs, _, term, _, info = env.step(action)
        projected += int(info["projected"])
        steps += 1
        task = env.state.task[0]
        idle += 1.0 - float(gpcs[task >= 0].sum()) / MIG_TOTAL_GPCS
        ended = running & ~env.state.running[0]
        # A job ends inside the step; the step's end stands for it (a 1 s basis by default).
        finish_s += [float(env.state.time_s[0]) - window * window_s] * int(ended.sum())
        job_gpcs += [float(gpcs[task == m + i].sum()) for i in np.flatnonzero(running & ~ended)]
    out = dict(info["episode_metrics"])
    out["idle_gpc_frac"] = idle / max(steps, 1)
    out["retrain_finish_s"] = float(np.mean(finish_s)) if finish_s else None
    out["retrain_gpcs"] = float(np.mean(job_gpcs)) if job_gpcs else None
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


def _jobs(policies, workloads, overrides, seeds: Sequence[int]):
    return [(w, p, dict(overrides), s) for w in workloads for p in policies for s in seeds]


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


#: One episode's row of ``migrator-runs.json`` (:func:`run_one`): what it ran, its episode
#: metrics (named by the family's dynamics) and other values numbers or null (a mean over no
#: retraining job), the planner's statistics lists.
_ROW = Record(
    {
        **{k: TEXT for k in ("workload", "policy")},
        **{k: INT for k in ("seed", "projected")},
        "overrides": MapOf(OneOf(NUM, BOOL, TEXT)),
        **{k: ListOf(NUM) for k in ("solve_s", "gap")},
        "plans_solved": ListOf(INT),
    },
    required=("workload", "policy", "seed", "overrides"),
    rest=Maybe(NUM),
)
#: What the report reads of ``migrator-runs.json``: the run's facts, the calibration (its
#: claims and Fig. 2's measurements) and every experiment's rows.
_SAVED = Record(
    {
        **{k: INT for k in ("seeds", "first_seed", "workers")},
        **{k: ListOf(TEXT) for k in ("workloads", "basis_workloads", "oracle_workloads")},
        "quick": BOOL,
        "elapsed": NUM,
        "elapsed_parts": MapOf(NUM),
        "date": Maybe(TEXT),
        "rows": Record(
            {
                "calibration": Record(
                    {"claims": ListOf(CLAIM_SHAPE), "fig2": MapOf(ListOf(ListOf(NUM)))},
                    required=("claims", "fig2"),
                )
            },
            required=("calibration",),
            rest=ListOf(_ROW),
        ),
    },
    required=("seeds", "workers", "workloads", "basis_workloads", "elapsed", "rows"),
)


def _load_runs(out: Path) -> dict[str, Any]:
    """The saved ``migrator-runs.json`` in ``out``, for ``--render-only``: what ran (seeds,
    workers, workloads, elapsed) and its rows (:func:`edgegym.reproduce.claims.read_runs`, of
    the shape the report reads, :data:`_SAVED`)."""

    def pick(saved: dict[str, Any]) -> dict[str, Any]:
        return {
            "seeds": saved["seeds"],
            "first_seed": int(saved.get("first_seed", 0)),
            "workers": saved["workers"],
            "workloads": saved["workloads"],
            "basis_workloads": saved["basis_workloads"],
            "elapsed": saved["elapsed"],
            "elapsed_parts": saved.get("elapsed_parts", {}),
            "oracle_workloads": saved.get("oracle_workloads", ORACLE_WORKLOADS),
            "quick": bool(saved.get("quick", False)),
            "date": saved.get("date"),
            "rows": saved["rows"],
        }

    return read_runs(out / "migrator-runs.json", pick, shape=_SAVED)


def _experiments(workloads, basis_w, oracle_w, seeds: Sequence[int]) -> dict[str, list]:
    """Every experiment's jobs on episodes of ``seeds``: the main table, batch 4, oracle
    arrivals, the ablations, the basis sweep, and the robustness sweeps."""
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
        "on_mig": _jobs(list(MPS_POLICIES), workloads, {"mps.shares": 0}, seeds),
        "paris_static": _jobs([STATIC_PARIS], workloads, {}, seeds),
        **sweeps,
    }


def _run_and_save(args, workloads, basis_w, oracle_w, runs_path: Path) -> tuple[dict, dict]:
    """Run every experiment and the calibration, save them to ``runs_path``; the rows and
    the seconds it took (``total`` and per part: ``experiments``, ``sweeps``,
    ``calibration``)."""
    t_start = time.time()
    runner = Runner(workers=args.workers, ray=args.ray)
    journal = runs_path.with_name("migrator-journal.jsonl")
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    experiments = _experiments(workloads, basis_w, oracle_w, seeds)
    # the main experiments and ablations first, then the robustness sweeps: each part's time
    # is its own (the sweeps' names hold a colon)
    rows = _run_all({k: v for k, v in experiments.items() if ":" not in k}, runner, journal)
    t_main = time.time()
    rows.update(_run_all({k: v for k, v in experiments.items() if ":" in k}, runner, journal))
    t_sweeps = time.time()
    from edgegym.reproduce.migrator_calibration import calibration_claims

    cal_claims, fig2 = calibration_claims()
    rows["calibration"] = {
        "claims": [record(c) for c in cal_claims],
        "fig2": {k: v.tolist() for k, v in fig2.items()},
    }
    elapsed = time.time() - t_start
    parts = {
        "experiments": t_main - t_start,
        "sweeps": t_sweeps - t_main,
        "calibration": time.time() - t_sweeps,
    }
    write_json(
        runs_path,
        {
            "seeds": args.seeds,
            "first_seed": args.first_seed,
            "workers": args.workers,
            "workloads": workloads,
            "basis_workloads": basis_w,
            "oracle_workloads": oracle_w,
            "quick": args.quick,
            "elapsed": elapsed,
            "elapsed_parts": parts,
            "date": args.date,
            "rows": rows,
        },
        "migrator-runs",
        indent=1,
    )
    journal.unlink(missing_ok=True)  # its episodes are in the runs file now
    return rows, {"total": elapsed, **parts}


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
    fig, ax = plt.subplots(figsize=(12, 4.2))
    x = np.arange(len(pts))
    w = 0.8 / len(PAPER_GAIN)
    for i, p in enumerate(PAPER_GAIN):
        gains = [_gain(t, "migrator", p) for _, t in pts]
        ax.bar(x + i * w - 0.4 + w / 2, gains, w, label=f"vs {LABELS[p]} (paper +{PAPER_GAIN[p]}%)")
    ax.axhline(0, color="k", lw=0.8)
    ax.set_xticks(x, [n for n, _ in pts], fontsize=8, rotation=30, ha="right")
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
        PROG, __doc__, SEEDS, "episodes per (workload, policy) (>= 1)",
        "W1, W5, W9 only (a smoke run)", "migrator-runs.json",
    ).parse_args(argv)  # fmt: skip
    args.date = dt.date.today().isoformat()  # a saved run's own date replaces it below
    opened = open_run(PROG, args, OUTPUTS, _load_runs)
    if opened is None:
        return 2
    out, saved = opened
    workloads = ["w1", "w5", "w9"] if args.quick else list(WORKLOADS)
    basis_w = [w for w in BASIS_WORKLOADS if w in workloads] or workloads[:1]
    oracle_w = [w for w in ORACLE_WORKLOADS if w in workloads] or workloads[:1]
    if saved is not None:
        args.seeds, args.workers = saved["seeds"], saved["workers"]
        args.first_seed = saved["first_seed"]
        workloads, basis_w = saved["workloads"], saved["basis_workloads"]
        oracle_w, rows = saved["oracle_workloads"], saved["rows"]
        timing = {"total": saved["elapsed"], **saved["elapsed_parts"]}
        args.quick, args.date = saved["quick"], saved["date"] or args.date
    out.mkdir(parents=True, exist_ok=True)
    with smoke_run(args.quick):  # a quick run's claims are smoke checks, not results
        if not args.render_only:
            runs_path = out / "migrator-runs.json"
            rows, timing = _run_and_save(args, workloads, basis_w, oracle_w, runs_path)

        def write() -> None:
            text = report(args, workloads, basis_w, oracle_w, rows, timing)
            _plots(rows, workloads, out)
            write_text(out / "migrator.md", text, "report")
            update("migrator", _claims(workloads, basis_w, oracle_w, rows), out)

        if write_report(PROG, out / "migrator-runs.json", saved is not None, write):
            return 2
    print(f"wrote {out / 'migrator.md'} and the claims in {timing['total']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(run_command(main, PROG))

"""Reproduce the SRS/MRS evaluation (INFOCOM'25, Fig. 8-15) and write ``docs/reproduction/srs.md``.

Run ``python -m edgegym.reproduce.srs [--seeds 3] [--first-seed N] [--workers 2] [--out DIR]``
(about 32 minutes on two cores; ``--quick`` for a smoke run, written to
``runs/reproduction-quick`` with its claims marked ``smoke`` and not counted; ``--first-seed N``
for a seed check on seeds N, N+1, ..., written to ``docs/reproduction/seeds-N``;
``--render-only`` to rewrite the report from the saved ``srs-runs.json``). Every number in the
report comes from the run; the slides' claims stand beside them. Sections: MRS against the
baselines, with Algorithm 2 as written and edgegym's variant (headline), accuracy and
normalised completion time over time (Fig. 8-9), versus the number of applications (Fig. 10-11)
and edge resources (Fig. 12-13), the theta sweep (Fig. 14), the algorithms' execution time
(Fig. 15), the settings of the first runs, and the claims. It ends by writing the slides'
records of ``claims.json`` (:func:`edgegym.reproduce.claims.update`).
"""

from __future__ import annotations

import argparse
import copy
import datetime as dt
import os
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np

from edgegym.jsonshape import BOOL, INT, NUM, TEXT, ListOf, MapOf, Maybe, Record
from edgegym.outputs import run_command, save_figure, write_json, write_text
from edgegym.parallel import Runner
from edgegym.reproduce.claims import (
    open_run,
    read_runs,
    run_parser,
    smoke_run,
    update,
    write_report,
)
from edgegym.reproduce.srs_claims import _claims, _headline, _judged, _mean, _point_claims, _series
from edgegym.reproduce.srs_report import report
from edgegym.reproduce.srs_setup import (
    APPS,
    BINS,
    DEFAULT_APPS,
    EIGHT_APPS,
    LABEL,
    POLICIES,
    PROG,
    ROBUST,
    ROBUST_APPS,
    ROBUST_SERVERS,
    ROBUST_THETAS,
    SCENARIO,
    SERVERS,
    SWEEP_POLICIES,
    THETA_POLICIES,
    THETAS,
)

#: The files this reproduction writes into --out (besides the claims table) -> kind.
OUTPUTS = {
    "srs.md": "report",
    "srs-runs.json": "srs-runs",
    "srs-journal.jsonl": "journal",  # finished episodes while the run goes on (resume)
    **{f"srs-{f}.png": "figure" for f in ("time", "sweeps", "theta", "robustness")},
}


def _point_id(key: str, factor: float) -> str:
    """``"drift x0.5"``: a robustness point's name."""
    return key if key == "arrival" else f"{key} x{factor:g}"


def _sweep_scenario(data: dict[str, Any], key: str, f: float) -> None:
    """Scale the inputs of robustness sweep ``key`` (:data:`ROBUST`) by ``f``, in place."""
    units = data["servers"]["gpus_per_server"] * data["servers"]["units_per_gpu"]
    models, cfgs, apps = data["models"].values(), data["retrain_configs"], data["applications"]
    if key == "drift":
        for m in models:
            m["drift_per_s"] *= f
    elif key == "headroom":
        for m in models:
            m["ceiling"] = min(0.99, m["start_accuracy"] + f * (m["ceiling"] - m["start_accuracy"]))
    elif key in ("cfg_data", "cfg_work", "cfg_gain"):
        field, top = {"cfg_data": ("data_mb", 1e6), "cfg_work": ("workload", 1e6)}.get(
            key, ("gain", 1.0)
        )
        for c in cfgs:
            c[field] = min(top, c[field] * f)
    elif key == "demand":
        for c in cfgs:
            c["demand"] = min(units, c["demand"] * f)
        for a in apps:
            for t in a["tasks"]:
                t["demand"] = min(units, t["demand"] * f)
    elif key == "task_work":
        for a in apps:
            for t in a["tasks"]:
                t["workload"] *= f
    elif key == "data_mb":
        for a in apps:
            for t in a["tasks"]:
                t["input_mb"] *= f
            a["edges"] = [[u, v, mb * f] for u, v, mb in a["edges"]]
    elif key == "load":
        data["requests"] = max(1, round(data["requests"] * f))
    elif key == "length":
        data["requests"] = max(1, round(data["requests"] * f))
        data["duration_s"] *= f
    elif key == "arrival":
        data["arrival"] = {"kind": "poisson", "rate": data["requests"] / data["duration_s"]}
    elif key == "arrival_rate":  # the pattern is time-scaled to the run's requests
        data["arrival"]["rate"] *= f
    elif key == "a_min":
        data["a_min"] *= f
    elif key == "pass_period":
        data["baselines"]["pass_period_s"] *= f
    elif key == "adainf_slo":
        data["baselines"]["adainf_slo_factor"] *= f
    else:
        raise ValueError(f"unknown robustness sweep {key!r}")


def _scenario(name: str, changes: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The scenario of a job and the environment overrides left: ``changes`` may hold
    ``requests`` and ``duration_s`` (set before the rest), ``sweep: [key, factor]`` (a
    robustness point, :func:`_sweep_scenario`), ``apps: n`` (the first n applications) with
    ``per_app: True`` (the requests scale with the applications: the slides take each
    application's requests from its own request type of the trace, so n applications bring
    n / 5 times the default scenario's requests), and labels ``point`` and ``part``."""
    from edgegym.scenarios import Scenario, load

    changes = dict(changes)
    for label in ("point", "part"):
        changes.pop(label, None)
    sc = load(name)
    data = copy.deepcopy(sc.data)
    for key in ("requests", "duration_s"):
        if key in changes:
            data[key] = changes.pop(key)
    sweep = changes.pop("sweep", None)
    if sweep is not None:
        _sweep_scenario(data, sweep[0], float(sweep[1]))
    n_apps = changes.pop("apps", None)
    per_app = changes.pop("per_app", False)
    if n_apps is not None:
        if per_app:
            data["requests"] = max(1, round(data["requests"] * n_apps / DEFAULT_APPS))
        data["applications"] = data["applications"][:n_apps]
    return Scenario(sc.name, data, sc.source), changes


def run_one(job: tuple[str, dict[str, Any], str, int]) -> dict[str, Any]:
    """One episode: ``(scenario, changes, policy, seed)`` -> metrics, per-request values binned.

    ``changes`` are scenario overrides, plus what :func:`_scenario` reads.
    """
    from edgegym.baselines import make_policy
    from edgegym.families.dag import DAGOffloadEnv

    name, changes, policy, seed = job
    sc, overrides = _scenario(name, changes)
    env = DAGOffloadEnv(sc, record_timeline=True, **overrides)  # per-request records
    pol = make_policy(policy, env)
    obs, _ = env.reset(seed=seed)
    pol.reset(seed)
    decide = 0.0
    term = False
    t0 = time.perf_counter()
    while not term:
        t1 = time.perf_counter()
        action, _ = pol.predict(obs)
        decide += time.perf_counter() - t1
        obs, _, term, _, info = env.step(action)
    out = dict(info["episode_metrics"])
    out.update(
        scenario=name,
        changes=job[1],
        policy=policy,
        seed=seed,
        wall_s=time.perf_counter() - t0,
        decide_ms=1000.0 * decide / env.n_requests,
        duration_s=env.duration,
        bins=_bin_records(env.records, env.duration),
    )
    return out


def _bin_records(records: list[dict[str, Any]], duration: float) -> dict[str, list[float]]:
    """Per-request completion and accuracy summed in BINS bins of arrival time (+ counts)."""
    arrival = np.array([r["arrival_s"] for r in records])
    b = np.minimum((arrival / duration * BINS).astype(int), BINS - 1)
    out = {"count": np.bincount(b, minlength=BINS).astype(float).tolist()}
    for key in ("completion_s", "accuracy"):
        vals = np.array([r[key] for r in records])
        out[key] = np.bincount(b, weights=vals, minlength=BINS).tolist()
    return out


def _jobs(name, changes_list, policies, seeds: int, first: int = 0):
    """Every ``(scenario, changes, policy, seed)`` job, on ``seeds`` seeds from ``first``."""
    seed_list = range(first, first + seeds)
    return [(name, dict(c), p, s) for c in changes_list for p in policies for s in seed_list]


# ---------------------------------------------------------------------------- plots
def _plot_time(rows, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 2, figsize=(11, 3.6))
    x = (np.arange(BINS) + 0.5) / BINS * rows[0]["duration_s"]
    comp = {p: _series(rows, p, "completion_s") for p in SWEEP_POLICIES}
    top = np.max(np.stack(list(comp.values())), axis=0)
    for p in SWEEP_POLICIES:
        ax[0].plot(x, _series(rows, p, "accuracy"), marker="o", label=LABEL[p])
        ax[1].plot(x, comp[p] / top, marker="o", label=LABEL[p])
    ax[0].set(xlabel="time (s)", ylabel="average inference accuracy", title="cf. Fig. 8")
    ax[1].set(xlabel="time (s)", ylabel="completion / slowest", title="cf. Fig. 9")
    ax[0].legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)


def _plot_sweeps(apps_rows, srv_rows, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 4, figsize=(16, 3.6))
    for col, (rows, key, xs, xl, fig_no) in enumerate(
        [(apps_rows, "apps", APPS, "applications", 10), (srv_rows, "count", SERVERS, "servers", 12)]
    ):
        comp = {p: [_mean(rows, p, "completion_s", **{key: v}) for v in xs] for p in SWEEP_POLICIES}
        top = np.max(np.array(list(comp.values())), axis=0)
        for p in SWEEP_POLICIES:
            acc = [_mean(rows, p, "accuracy", **{key: v}) for v in xs]
            ax[2 * col].plot(xs, acc, marker="o", label=LABEL[p])
            ax[2 * col + 1].plot(xs, np.array(comp[p]) / top, marker="o", label=LABEL[p])
        ax[2 * col].set(xlabel=xl, ylabel="average accuracy", title=f"cf. Fig. {fig_no}")
        ax[2 * col + 1].set(
            xlabel=xl, ylabel="completion / slowest", title=f"cf. Fig. {fig_no + 1}"
        )
    ax[0].legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)


def _plot_theta(rows, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(1, 3, figsize=(12, 3.4))
    for k, (metric, label) in enumerate(
        [
            ("accuracy", "average accuracy"),
            ("completion_s", "completion (s)"),
            ("objective", "objective per request (log)"),
        ]
    ):
        for p in THETA_POLICIES:
            ax[k].plot(
                THETAS,
                [_mean(rows, p, metric, theta=t) for t in THETAS],
                marker="o",
                label=LABEL[p],
            )
        ax[k].set(xscale="log", xlabel="theta", ylabel=label)
    ax[2].set_yscale("log")  # theta scales it over three decades
    ax[0].set_title("cf. Fig. 14")
    ax[0].legend(fontsize=8)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)


# ---------------------------------------------------------------------------- main
#: What the report reads of a saved run's episode (:func:`run_one`).
_ROW = Record(
    {
        **{k: NUM for k in ("objective", "completion_s", "accuracy", "retrainings")},
        **{k: NUM for k in ("energy_j", "wall_s", "decide_ms", "duration_s")},
        "scenario": TEXT,
        "policy": TEXT,
        "seed": INT,
        # the swept values are compared, sorted and looked up
        "changes": Record({"apps": NUM, "count": NUM, "theta": NUM}),
        "bins": Record(
            {k: ListOf(NUM) for k in ("count", "completion_s", "accuracy")},
            required=("count", "completion_s", "accuracy"),
        ),
    },
    required=(
        "objective", "completion_s", "accuracy", "retrainings", "decide_ms", "duration_s",
        "policy", "seed", "changes", "bins",
    ),
)  # fmt: skip
_PARTS = ("main", "apps", "servers", "theta")
#: What the report reads of ``srs-runs.json`` (a missing part is the pick's ``KeyError``).
_SAVED = Record(
    {
        "rows": Record(
            {
                **{k: ListOf(_ROW) for k in (*_PARTS, "apps_same", "light", "fixed")},
                "robust": MapOf(Record({k: ListOf(_ROW) for k in _PARTS}, required=_PARTS)),
            }
        ),
        "meta": Record(
            {
                **{k: INT for k in ("seeds", "first_seed", "sweep_seeds")},
                "cores": Maybe(INT),
                "quick": BOOL,
                "elapsed": NUM,
            },
        ),
    }
)


def _load_runs(out: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The rows and meta of the saved ``srs-runs.json`` in ``out``, for ``--render-only``
    (:func:`edgegym.reproduce.claims.read_runs`; the rows and meta of the shape the report
    reads, :data:`_SAVED`)."""

    def pick(saved: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        rows, meta = saved["rows"], saved["meta"]
        for key in _PARTS:
            rows[key]  # a missing one: not a saved run
        for key in ("seeds", "sweep_seeds", "quick", "elapsed", "date", "machine"):
            meta[key]
        return rows, meta

    return read_runs(out / "srs-runs.json", pick, shape=_SAVED)


def _run_all(
    args: argparse.Namespace, journal: Path | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Every experiment's episodes (rows per experiment) and what the run was (meta);
    ``journal`` keeps the finished ones (a stopped run resumes)."""
    base = {"requests": 300, "duration_s": 90.0} if args.quick else {}
    t0 = time.time()
    runner = Runner(workers=args.workers, ray=args.ray)

    def runs(
        name: str, changes: list[dict[str, Any]], policies: list[str], seeds: int, label: str
    ) -> list[dict[str, Any]]:
        jobs = _jobs(name, changes, policies, seeds, args.first_seed)
        return runner.map(run_one, jobs, label=label, journal=journal)

    five, eight = SCENARIO, EIGHT_APPS
    rows = {
        "main": runs(five, [base], POLICIES, args.seeds, "default"),
        "apps": runs(
            eight,
            [{**base, "apps": n, "per_app": True} for n in APPS],
            SWEEP_POLICIES,
            args.seeds,
            "applications",
        ),
        "apps_same": runs(
            eight, [{**base, "apps": n} for n in ROBUST_APPS], ["mrs"], args.seeds, "same rate"
        ),
        "servers": runs(
            five, [{**base, "count": n} for n in SERVERS], SWEEP_POLICIES, args.seeds, "servers"
        ),
        "theta": runs(
            five, [{**base, "theta": t} for t in THETAS], THETA_POLICIES, args.seeds, "theta"
        ),
        "light": runs(
            five,
            [{"requests": 200, "duration_s": 600.0}],
            SWEEP_POLICIES,
            args.seeds,
            "light load",
        ),
        "fixed": runs(
            five, [{**base, "pool_from_inputs": False}], SWEEP_POLICIES, args.seeds, "fixed configs"
        ),
    }
    keys = list(ROBUST)[:2] if args.quick else list(ROBUST)
    rows["robust"] = _robustness(runner, base, keys, args.seeds, journal, args.first_seed)
    meta = {
        "seeds": args.seeds,
        "first_seed": args.first_seed,
        "sweep_seeds": args.seeds,  # every point runs the default's seeds (older runs: fewer)
        "workers": args.workers,
        "runner": runner.describe(),
        "quick": args.quick,
        "elapsed": time.time() - t0,
        "date": dt.date.today().isoformat(),
        "machine": f"{platform.machine()}, {platform.python_version()}",
        "cores": os.cpu_count(),
    }
    return rows, meta


def _robustness(
    runner: Any,
    base: dict[str, Any],
    keys: list[str],
    seeds: int,
    journal: Path | None = None,
    first: int = 0,
) -> dict[str, dict[str, list[dict[str, Any]]]]:
    """Every robustness point's episodes (one map over all of them): point -> part -> rows.
    Per point, the default scenario with MRS and the three baselines and the ends of the
    applications, servers and theta sweeps, each on ``seeds`` seeds from ``first``."""
    five, eight = SCENARIO, EIGHT_APPS
    jobs = []
    for key in keys:
        for f in ROBUST[key][2]:
            pid = _point_id(key, f)
            at = {**base, "sweep": [key, f], "point": pid}
            jobs += _jobs(five, [{**at, "part": "main"}], SWEEP_POLICIES, seeds, first)
            apps = [{**at, "part": "apps", "apps": n, "per_app": True} for n in ROBUST_APPS]
            jobs += _jobs(eight, apps, SWEEP_POLICIES, seeds, first)
            srv = [{**at, "part": "servers", "count": n} for n in ROBUST_SERVERS]
            jobs += _jobs(five, srv, SWEEP_POLICIES, seeds, first)
            thetas = [{**at, "part": "theta", "theta": t} for t in ROBUST_THETAS]
            jobs += _jobs(five, thetas, ["mrs"], seeds, first)
    out: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for r in runner.map(run_one, jobs, label="robustness", journal=journal):
        parts = out.setdefault(
            r["changes"]["point"], {"main": [], "apps": [], "servers": [], "theta": []}
        )
        parts[r["changes"]["part"]].append(r)
    return out


def main(argv: list[str] | None = None) -> int:
    """Run every experiment and write the report.

    Returns:
        The exit code: 0 success, 2 bad arguments (one ``error:`` line on stderr, checked
        before any work starts).
    """
    args = run_parser(
        PROG, __doc__, 3, "episodes per setting and policy (>= 1)",
        "300 requests per run (a smoke run)", "srs-runs.json",
    ).parse_args(argv)  # fmt: skip
    opened = open_run(PROG, args, OUTPUTS, _load_runs)
    if opened is None:
        return 2
    out, saved = opened
    if saved is not None:
        rows, meta = saved
    out.mkdir(parents=True, exist_ok=True)
    if not args.render_only:
        journal = out / "srs-journal.jsonl"
        rows, meta = _run_all(args, journal)
        write_json(out / "srs-runs.json", {"meta": meta, "rows": rows}, "srs-runs", indent=0)
        journal.unlink(missing_ok=True)  # its episodes are in the runs file now
    runs = out / "srs-runs.json"
    if write_report(PROG, runs, saved is not None, lambda: _write_report(out, rows, meta)):
        return 2
    print(f"wrote {out / 'srs.md'} ({meta['elapsed']:.0f} s of runs) and {out / 'claims.json'}")
    return 0


def _write_report(out: Path, rows: dict[str, Any], meta: dict[str, Any]) -> None:
    """The figures, the report and the paper's claims, from the runs' rows and meta."""
    _plot_time(rows["main"], out / "srs-time.png")
    _plot_sweeps(rows["apps"], rows["servers"], out / "srs-sweeps.png")
    _plot_theta(rows["theta"], out / "srs-theta.png")
    if rows.get("robust"):
        _plot_robustness(rows, out / "srs-robustness.png")

    with smoke_run(meta["quick"]):  # a quick run's claims are smoke checks, not results
        write_text(out / "srs.md", report(rows, meta), "report")
        update("srs", _judged(rows), out)


def _plot_robustness(rows: dict[str, Any], path: Path) -> None:
    """The headline's two numbers at every robustness point, and which claims hold where."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = _point_claims(rows)
    base = _claims(rows)
    names = ["default", *points]
    claims = [base, *points.values()]
    held = [i for i, c in enumerate(base) if c.role == "held-out"]
    heads = [_headline(rows), *(_headline(rows["robust"][p]) for p in points)]
    fig, ax = plt.subplots(3, 1, figsize=(max(8, 0.45 * len(names) + 3), 10))
    x = np.arange(len(names))
    ax[0].bar(x, [100 * h["acc_gain"] for h in heads], color="tab:blue")
    ax[0].axhline(12.5, color="k", ls="--", lw=1, label="rule: +12.5% (half the slides' +25%)")
    ax[0].set(
        ylabel="MRS accuracy vs baselines (%)",
        title="robustness sweeps (x0.5 / x2 of each synthesised input)",
    )
    ax[1].bar(x, [100 * h["comp_cut"] for h in heads], color="tab:orange")
    ax[1].axhline(30, color="k", ls="--", lw=1, label="rule: 30% (two thirds of the slides' 45%)")
    ax[1].set(ylabel="MRS completion cut (%)")
    for a in ax[:2]:
        a.legend(fontsize=8, loc="best")
        a.set_xticks(x, [])
        a.set_xlim(-0.5, len(names) - 0.5)
    grid = np.array([[float(cl[i].holds) for cl in claims] for i in held])
    ax[2].imshow(grid, cmap="RdYlGn", vmin=0, vmax=1, aspect="auto")
    ax[2].set_yticks(
        range(len(held)), [f"{base[i].figure}: {base[i].claim[:40]}" for i in held], fontsize=7
    )
    ax[2].set_xticks(x, names, rotation=60, ha="right", fontsize=8)
    ax[2].set_title("held-out claim holds (green) / fails (red) at each point", fontsize=9)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(run_command(main, PROG))

"""Reproduce the SRS/MRS evaluation (INFOCOM'25, Fig. 8-15) and write ``docs/reproduction/srs.md``.

Run ``python -m edgegym.reproduce.srs [--seeds 3] [--first-seed N] [--workers 2] [--out DIR]``
(about 25 minutes on two cores; ``--quick`` for a smoke run, written to
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
import dataclasses
import datetime as dt
import os
import platform
import time
from pathlib import Path
from typing import Any

import numpy as np

from edgegym.outputs import run_command, save_figure, write_json, write_text
from edgegym.parallel import Runner
from edgegym.reproduce.claims import (
    Claim,
    open_run,
    read_runs,
    run_parser,
    smoke_run,
    update,
)

PROG = "python -m edgegym.reproduce.srs"
#: The files this reproduction writes into --out (besides the claims table) -> kind.
OUTPUTS = {
    "srs.md": "report",
    "srs-runs.json": "srs-runs",
    "srs-journal.jsonl": "journal",  # finished episodes while the run goes on (resume)
    **{f"srs-{f}.png": "figure" for f in ("time", "sweeps", "theta", "robustness")},
}

#: The paper's comparison: MRS against AdaInf, Ekya and PASS (+ edgegym's SRS and list), then
#: ablations of Algorithm 2's rule inside MRS: pricing on the DAG instead of the chain of line
#: 2, a node only where Delta P < 0 (on the chain), and both (edgegym's variant).
VARIANT = "mrs:always=false,chain=false"
ABLATIONS = ["mrs:chain=false", "mrs:always=false", VARIANT]
POLICIES = ["mrs", "srs", "pass", "ekya-dag", "adainf", "list", *ABLATIONS]
BASELINES = ["pass", "ekya-dag", "adainf"]
SWEEP_POLICIES = ["mrs", *BASELINES]
LABEL = {
    "mrs": "MRS",
    "srs": "SRS",
    "pass": "PASS",
    "ekya-dag": "Ekya",
    "adainf": "AdaInf",
    "list": "List (Alg. 1)",
    "mrs:chain=false": "MRS, Delta P priced on the DAG",
    "mrs:always=false": "MRS, node only if Delta P < 0",
    VARIANT: "MRS, edgegym's variant",
}
THETA_POLICIES = ["mrs", VARIANT, "pass"]
#: Accuracy differences below this count as equal in the sweeps' claims (their rules say so).
ACC_TOL = 0.005
#: Applications of the default scenario (srs-edge-5apps): its requests are this many
#: applications' streams.
DEFAULT_APPS = 5
APPS = [2, 4, 6, 8]
SERVERS = [3, 4, 5, 6, 7]
#: theta's sweep (Fig. 14). The slides give no values; Eq. 9's theta prices a task's lost
#: accuracy in seconds of completion, so the sweep spans the exchange rate at which Delta P's
#: accuracy term (Eq. 11) can outweigh its time term. Pricing every Delta P that MRS computes
#: on srs-edge-5apps (2026-11-29, docs/design-notes.md) puts that rate at 20-100 (a task's
#: choice changes at theta 70 at the median): a node's time term is about 0.02 s, the accuracy
#: a configuration adds about 1e-3. The sweep runs from well below it to well above it (a
#: test checks that it brackets the median). The first sweep, 0.5-10, lay wholly below it, so
#: Algorithm 2 chose the same configurations at every point of it.
THETAS = [0.5, 2.0, 10.0, 50.0, 200.0, 1000.0]
BINS = 10

#: The robustness sweeps: every input of ``scenarios/srs-*.yaml`` whose
#: provenance says synthesised (or a choice), scaled by each factor. ``key -> (label, the
#: provenance entries it scales, factors)``; :func:`_sweep_scenario` applies them.
ROBUST: dict[str, tuple[str, str, tuple[float, ...]]] = {
    "drift": ("models' drift per second", "models (drift_per_s)", (0.5, 2.0)),
    "headroom": (
        "models' headroom (ceiling - start accuracy; ceiling at most 0.99)",
        "models (ceiling)",
        (0.5, 2.0),
    ),
    "cfg_data": ("retraining data b_h", "retrain_configs (data_mb)", (0.5, 2.0)),
    "cfg_work": ("retraining work n_h", "retrain_configs (workload)", (0.5, 2.0)),
    "cfg_gain": ("retraining gain (at most 1)", "retrain_configs (gain)", (0.5, 2.0)),
    "demand": (
        "resource units of tasks and configurations o_h (at most a server's)",
        "applications.tasks.demand, retrain_configs (demand)",
        (0.5, 2.0),
    ),
    "task_work": ("inference workloads", "applications.tasks.workload", (0.5, 2.0)),
    "data_mb": (
        "inference data (inputs and edges)",
        "applications.tasks.input_mb, applications.edges",
        (0.5, 2.0),
    ),
    "load": ("requests in the run (the load)", "requests", (0.5, 2.0)),
    "length": (
        "the run's length (requests and duration together: the same load)",
        "requests, duration_s",
        (0.5, 2.0),
    ),
    "arrival": ("Poisson arrivals instead of the Alibaba-like shape", "arrival.kind", (1.0,)),
    "a_min": ("A_min (x1.5 = 0.75; x2 = 1 is above every ceiling)", "a_min", (0.5, 1.5)),
    "pass_period": ("PASS's retraining period", "baselines.pass_period_s", (0.5, 2.0)),
    "adainf_slo": ("AdaInf's SLO factor", "baselines.adainf_slo_factor", (0.5, 2.0)),
}
#: At each robustness point: the default scenario with the four policies (the headline
#: claims), and the ends of the applications, servers and theta sweeps (the other claims).
ROBUST_APPS = [APPS[0], APPS[-1]]
ROBUST_SERVERS = [SERVERS[0], SERVERS[-1]]
ROBUST_THETAS = [THETAS[0], THETAS[-1]]


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
def _load_runs(out: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The rows and meta of the saved ``srs-runs.json`` in ``out``, for ``--render-only``
    (:func:`edgegym.reproduce.claims.read_runs`)."""
    return read_runs(out / "srs-runs.json", lambda saved: (saved["rows"], saved["meta"]))


def _run_all(
    args: argparse.Namespace, journal: Path | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Every experiment's episodes (rows per experiment) and what the run was (meta);
    ``journal`` keeps the finished ones (a stopped run resumes)."""
    base = {"requests": 300, "duration_s": 90.0} if args.quick else {}
    sweep_seeds = max(1, args.seeds - 1)
    t0 = time.time()
    runner = Runner(workers=args.workers, ray=args.ray)

    def runs(
        name: str, changes: list[dict[str, Any]], policies: list[str], seeds: int, label: str
    ) -> list[dict[str, Any]]:
        jobs = _jobs(name, changes, policies, seeds, args.first_seed)
        return runner.map(run_one, jobs, label=label, journal=journal)

    five, eight = "srs-edge-5apps", "srs-edge-8apps"
    rows = {
        "main": runs(five, [base], POLICIES, args.seeds, "default"),
        "apps": runs(
            eight,
            [{**base, "apps": n, "per_app": True} for n in APPS],
            SWEEP_POLICIES,
            sweep_seeds,
            "applications",
        ),
        "apps_same": runs(
            eight, [{**base, "apps": n} for n in ROBUST_APPS], ["mrs"], sweep_seeds, "same rate"
        ),
        "servers": runs(
            five, [{**base, "count": n} for n in SERVERS], SWEEP_POLICIES, sweep_seeds, "servers"
        ),
        "theta": runs(
            five, [{**base, "theta": t} for t in THETAS], THETA_POLICIES, sweep_seeds, "theta"
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
    rows["robust"] = _robustness(runner, base, keys, sweep_seeds, journal, args.first_seed)
    meta = {
        "seeds": args.seeds,
        "first_seed": args.first_seed,
        "sweep_seeds": sweep_seeds,
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
    Per point, the default scenario with MRS and the three baselines (``seeds`` seeds from
    ``first``) and the ends of the applications, servers and theta sweeps (seed ``first``)."""
    five, eight = "srs-edge-5apps", "srs-edge-8apps"
    jobs = []
    for key in keys:
        for f in ROBUST[key][2]:
            pid = _point_id(key, f)
            at = {**base, "sweep": [key, f], "point": pid}
            jobs += _jobs(five, [{**at, "part": "main"}], SWEEP_POLICIES, seeds, first)
            apps = [{**at, "part": "apps", "apps": n, "per_app": True} for n in ROBUST_APPS]
            jobs += _jobs(eight, apps, SWEEP_POLICIES, 1, first)
            srv = [{**at, "part": "servers", "count": n} for n in ROBUST_SERVERS]
            jobs += _jobs(five, srv, SWEEP_POLICIES, 1, first)
            thetas = [{**at, "part": "theta", "theta": t} for t in ROBUST_THETAS]
            jobs += _jobs(five, thetas, ["mrs"], 1, first)
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
    _plot_time(rows["main"], out / "srs-time.png")
    _plot_sweeps(rows["apps"], rows["servers"], out / "srs-sweeps.png")
    _plot_theta(rows["theta"], out / "srs-theta.png")
    if rows.get("robust"):
        _plot_robustness(rows, out / "srs-robustness.png")
    from edgegym.reproduce.srs_report import report  # the text, written from the runs

    with smoke_run(meta["quick"]):  # a quick run's claims are smoke checks, not results
        write_text(out / "srs.md", report(rows, meta), "report")
        update("srs", _judged(rows), out)
    print(f"wrote {out / 'srs.md'} ({meta['elapsed']:.0f} s of runs) and {out / 'claims.json'}")
    return 0


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

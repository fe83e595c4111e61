"""MIGRator's two planners on every window of W1-W16: decision time, proven gap, agreement.

For each workload and seed, the planning problem of every window is built exactly as the
``migrator`` policy builds it (:func:`benchmarks.migrator.window_problems`: its seasonal
forecast from the past windows) and solved by both solvers at the policy's proven gap of 1%:

* the decomposition (``solve``: branch and bound over retraining plans with an exact Viterbi
  per plan, at most ``max_plans`` plans, as the policy runs it);
* the MILP on HiGHS (``solve_milp``, ``mip_rel_gap`` 1%) under a time limit per window.

Reported per workload: the median and worst window time of each solver, the largest proven
gap of each (a solver stopped by its plan cap or time limit proves less than 1%), and the
smallest ratio of the decomposition's objective to the MILP's. The cross-check holds on a
window when each solver's objective is at least the other's proven bound times (1 - 1%)
(``agree``); a window where HiGHS found no plan inside its time limit counts as unsolved. Two
correct solvers that each stop at a 1% gap can miss that by up to 1% (each plan may be 1% below
the optimum, each bound 1% above it), so ``consistent`` also counts the windows where neither
has a plan above the other's proven bound, which correct solvers always meet.

``--milp-start decomposition`` starts HiGHS from the decomposition's plan (needs ``highspy``):
it then has only to prove the bound that certifies that plan, which took a third to a half of
an unstarted solve's time on the four windows measured both ways; HiGHS's own plan is then no
independent check.

Run: ``python -m benchmarks.migrator_sweep [--workloads 1-16] [--seeds 0,1] [--windows K,K]
[--milp-windows K,K] [--milp-start decomposition] [--milp-time-limit S] [--json PATH]`` (one
core; ``--merge A.json B.json`` prints sweeps run apart, say one per core, as one table).
HiGHS takes half a minute to a few minutes a window (its root LP alone 25-35 s), so the full
sweep of both seeds, 208 windows, takes hours: ``--milp-windows`` runs it on a sample of each
episode's windows and the decomposition on all of them. Window indices are checked against
each workload's window count (W1-W8: 4, W9-W16: 9) before any work. With ``--json`` the results
so far are written after every workload (marked ``"partial"`` until the sweep ends), so Ctrl-C
or SIGTERM keeps every finished workload.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks.common import (
    Parser,
    add_json_arguments,
    json_problem,
    keep_partial,
    median,
    pinned_to_one_core,
)
from benchmarks.migrator import window_problems
from edgegym.outputs import run_command, write_json

PROG = "python -m benchmarks.migrator_sweep"
#: The sweep of ``python -m benchmarks``: the decomposition on every window of both seeds, HiGHS
#: on the third window of each episode (one to a few minutes a window), started from the
#: decomposition's plan where highspy is installed.
BENCHMARK = {
    "seeds": (0, 1),
    "milp_windows": (2,),
    "milp_time_limit": 300.0,
    "seeded": importlib.util.find_spec("highspy") is not None,
}
GAP = 0.01
MAX_PLANS = 2000  # the policy's cap (MIGRatorPolicy)


def _time(fn: Any) -> tuple[Any, float]:
    t0 = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t0


def solve_window(
    prob: Any, milp_time_limit: float, seeded: bool = False, milp: bool = True
) -> dict[str, Any]:
    """Both solvers on one window's problem: times, values, bounds, gaps and the cross-check.
    ``seeded``: HiGHS starts from the decomposition's plan (``highspy``), so it has only to
    prove a bound: the check of the decomposition's plan against HiGHS's bound stays
    independent, HiGHS's own plan then does not. ``milp=False``: the decomposition alone
    (``milp_s`` None)."""
    from edgegym.baselines.migrator import NoFeasiblePlan, solve
    from edgegym.baselines.migrator_milp import solve_milp

    dec, dec_s = _time(lambda: solve(prob, gap=GAP, max_plans=MAX_PLANS))
    row = {
        "dec_s": dec_s,
        "dec_value": dec.value,
        "dec_bound": dec.upper_bound,
        "dec_gap": dec.gap,
        "dec_capped": dec.gap > GAP + 1e-12,
    }
    if not milp:
        return {**row, "milp_s": None, "milp_value": None}
    t0 = time.perf_counter()
    try:
        start = dec.signatures if seeded else None
        plan = solve_milp(prob, gap=GAP, time_limit=milp_time_limit, start=start)
    except NoFeasiblePlan:  # HiGHS found no plan inside the time limit
        return {**row, "milp_s": time.perf_counter() - t0, "milp_value": None}
    agree = (
        dec.value >= plan.upper_bound * (1 - GAP) - 1e-9
        and plan.value >= dec.upper_bound * (1 - GAP) - 1e-9
    )
    consistent = (  # neither solver has a plan above the other's proven bound
        dec.value <= plan.upper_bound * (1 + 1e-9) + 1e-9
        and plan.value <= dec.upper_bound * (1 + 1e-9) + 1e-9
    )
    return {
        **row,
        "milp_s": time.perf_counter() - t0,
        "milp_value": plan.value,
        "milp_bound": plan.upper_bound,
        "milp_gap": plan.gap,
        "ratio": dec.value / plan.value if plan.value else float("nan"),
        "agree": agree,
        "consistent": consistent,
    }


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """One workload's windows in one row (the MILP's times over the windows it ran on:
    ``milp_windows``; its gap, ratio and agreement over those where it found a plan in its time
    limit: ``milp_solved``)."""
    tried = [r for r in rows if r["milp_s"] is not None]
    solved = [r for r in tried if r["milp_value"] is not None]
    return {
        "windows": len(rows),
        "dec_median_s": median([r["dec_s"] for r in rows]),
        "dec_worst_s": max(r["dec_s"] for r in rows),
        "dec_worst_gap": max(r["dec_gap"] for r in rows),
        "dec_capped": sum(r["dec_capped"] for r in rows),
        "milp_windows": len(tried),
        "milp_median_s": median([r["milp_s"] for r in tried]) if tried else float("nan"),
        "milp_worst_s": max((r["milp_s"] for r in tried), default=float("nan")),
        "milp_solved": len(solved),
        "milp_worst_gap": max((r["milp_gap"] for r in solved), default=float("nan")),
        "min_ratio": min((r["ratio"] for r in solved), default=float("nan")),
        "agree": sum(r["agree"] for r in solved),
        "consistent": sum(r.get("consistent", True) for r in solved),
    }


def run(
    workloads: Sequence[int] = tuple(range(1, 17)),
    seeds: Sequence[int] = (0,),
    milp_time_limit: float = 10.0,
    progress: bool = True,
    windows: Sequence[int] | None = None,
    seeded: bool = False,
    milp_windows: Sequence[int] | None = None,
    save: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Every window of every workload and seed (or the ``windows`` of each episode) under the
    decomposition, and under the MILP too where the window is one of ``milp_windows`` (None:
    all); per-workload summaries. ``save`` gets the results so far after every workload (a
    sweep of hours keeps what it measured if it is stopped)."""
    out: dict[str, Any] = {"gap": GAP, "max_plans": MAX_PLANS, "milp_time_limit": milp_time_limit,
                           "windows": None if windows is None else list(windows),
                           "milp_windows": None if milp_windows is None else list(milp_windows),
                           "milp_start": "decomposition" if seeded else None}  # fmt: skip
    per: dict[str, Any] = {}
    every: list[dict[str, Any]] = []
    for w in workloads:
        rows = []
        for seed in seeds:
            for k, prob in enumerate(window_problems(seed, f"migrator-w{w}")):
                if windows is not None and k not in windows:
                    continue
                both = milp_windows is None or k in milp_windows
                row = {"seed": seed, "window": k,
                       **solve_window(prob, milp_time_limit, seeded, milp=both)}  # fmt: skip
                rows.append(row)
                if progress and both:
                    print(f"    W{w} seed {seed} window {k}: decomposition {row['dec_s']:.2f} s, "
                          f"MILP {row['milp_s']:.1f} s, agree {row.get('agree', False)}",
                          file=sys.stderr, flush=True)  # fmt: skip
        per[f"W{w}"] = {"summary": summarise(rows), "rows": rows}
        every += rows
        if save is not None:
            save({**out, "workloads": per, "all": summarise(every)})
        if progress:
            s = per[f"W{w}"]["summary"]
            print(
                f"  W{w}: {s['windows']} windows, decomposition median {s['dec_median_s']:.2f} s "
                f"worst {s['dec_worst_s']:.2f} s, MILP median {s['milp_median_s']:.2f} s",
                file=sys.stderr,
                flush=True,
            )
    out["workloads"] = per
    out["all"] = summarise(every)
    return out


def format_result(res: dict[str, Any]) -> str:
    """The per-workload table (markdown)."""
    started = " started from the decomposition's plan" if res.get("milp_start") else ""
    sample = res.get("milp_windows")
    where = ""  # None: every window
    if sample is not None:
        listed = ", ".join(map(str, sample))
        where = f" on windows {listed} of each episode" if sample else " on no window"
    lines = [
        f"MIGRator planners on W1-W16 (gap {100 * res['gap']:.0f}%, decomposition capped at "
        f"{res['max_plans']} plans; MILP{where}{started}, limited to "
        f"{res['milp_time_limit']:g} s per window)",
        "",
        "| workload | windows | decomposition median / worst s | its worst gap | capped "
        "| MILP windows | MILP median / worst s | MILP found a plan | its worst gap "
        "| min objective ratio | agree | consistent |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    items = [*res["workloads"].items(), ("all", {"summary": res["all"]})]

    def num(x: float, spec: str, unit: str = "") -> str:  # "-": the MILP ran on no window
        return "-" if x != x else format(x, spec) + unit

    for name, item in items:
        s = item["summary"]
        lines.append(
            f"| {name} | {s['windows']} | {s['dec_median_s']:.2f} / {s['dec_worst_s']:.2f} "
            f"| {100 * s['dec_worst_gap']:.2f}% | {s['dec_capped']} "
            f"| {s.get('milp_windows', s['windows'])} "
            f"| {num(s['milp_median_s'], '.2f')} / {num(s['milp_worst_s'], '.2f')} "
            f"| {s['milp_solved']} | {num(100 * s['milp_worst_gap'], '.2f', '%')} "
            f"| {num(s['min_ratio'], '.4f')} "
            f"| {s['agree']} / {s['milp_solved']} "
            f"| {s.get('consistent', s['agree'])} / {s['milp_solved']} |"
        )
    return "\n".join(lines)


#: What must be equal in sweeps that :func:`merge` puts in one table.
SETTINGS = ("gap", "max_plans", "milp_time_limit", "milp_start")


def merge(parts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Sweeps of other windows or seeds (the JSON of :func:`run`, for example one process per
    core) as one: their rows per workload, each window once, summarised again.

    Raises:
        ValueError: the sweeps ran with other settings, or two ran the same window.
    """
    first = parts[0]
    for other in parts[1:]:
        differ = [k for k in SETTINGS if other.get(k) != first.get(k)]
        if differ:
            raise ValueError(f"the sweeps differ in {', '.join(differ)}: not one table")
    per: dict[str, list[dict[str, Any]]] = {}
    for part in parts:
        for name, item in part["workloads"].items():
            per.setdefault(name, []).extend(item["rows"])
    out: dict[str, Any] = {k: first.get(k) for k in SETTINGS}
    out["merged"] = len(parts)
    every: list[dict[str, Any]] = []
    workloads: dict[str, Any] = {}
    for name in sorted(per, key=lambda w: int(w[1:])):
        rows = sorted(per[name], key=lambda r: (r["seed"], r["window"]))
        keys = [(r["seed"], r["window"]) for r in rows]
        if len(set(keys)) != len(keys):
            raise ValueError(f"{name}: a window is in more than one sweep")
        workloads[name] = {"summary": summarise(rows), "rows": rows}
        every += rows
    out["workloads"] = workloads
    out["all"] = summarise(every)
    return out


def _read_sweep(path: Path) -> dict[str, Any]:
    """One sweep's JSON (plain data: nothing in it runs), checked to be a sweep."""
    data = json.loads(path.read_text())
    if not isinstance(data, dict) or not isinstance(data.get("workloads"), dict):
        raise ValueError(f"{path} is not the JSON of {PROG}")
    return data


def _workloads(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        try:
            first, last = int(lo), int(hi or lo)
        except ValueError:
            msg = f"not a workload list: {text!r} (e.g. 1-16 or 1,5,9)"
            raise argparse.ArgumentTypeError(msg) from None
        if not 1 <= first <= last <= 16:
            raise argparse.ArgumentTypeError(f"workloads are 1..16, got {part!r}")
        out += range(first, last + 1)
    _once(out, text, "workload")
    return out


def _once(items: list[int], text: str, what: str) -> None:
    """Refuse an item listed twice (its windows would be solved and counted twice)."""
    twice = sorted({k for k in items if items.count(k) > 1})
    if twice:
        raise argparse.ArgumentTypeError(f"{what} {twice[0]} is listed twice in {text!r}")


def _seeds(text: str) -> list[int]:
    return _ints(text, "seed")


def _windows(text: str) -> list[int]:
    return [] if text == "none" else _ints(text, "window")


def _ints(text: str, what: str) -> list[int]:
    try:
        out = [int(s) for s in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a {what} list: {text!r} (e.g. 0,1)") from None
    if any(k < 0 for k in out):
        raise argparse.ArgumentTypeError(f"{what}s are 0 or more, got {text!r}")
    _once(out, text, what)
    return out


def window_counts(workloads: Sequence[int]) -> dict[int, int]:
    """How many windows an episode of each workload has (its scenario's ``windows``)."""
    from edgegym.scenarios import load

    return {w: int(load(f"migrator-w{w}")["windows"]) for w in workloads}


def windows_problem(args: argparse.Namespace) -> str | None:
    """Why ``--windows`` / ``--milp-windows`` would select a window that no episode of a
    selected workload has (no rows: no table; or HiGHS silently run on no window), or
    ``None``."""
    counts = window_counts(args.workloads)
    for flag, chosen in (("--windows", args.windows), ("--milp-windows", args.milp_windows)):
        if chosen is None:
            continue
        for k in chosen:
            short = [w for w, n in counts.items() if k >= n]
            if short:
                n = counts[short[0]]
                return (
                    f"{flag} {','.join(map(str, chosen))}: migrator-w{short[0]} has {n} windows "
                    f"(0-{n - 1}), no window {k}"
                )
        if flag == "--windows" and not chosen:
            return "--windows none: selects no window (leave --windows out for every window)"
    if args.windows is not None and args.milp_windows:
        outside = [k for k in args.milp_windows if k not in args.windows]
        if outside:
            return (
                f"--milp-windows {','.join(map(str, args.milp_windows))}: window {outside[0]} "
                f"is not among --windows {','.join(map(str, args.windows))}, so HiGHS would "
                "never run on it"
            )
    return None


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Parse, run pinned to one core, print the table, write JSON on request."""
    parser = Parser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--workloads",
        type=_workloads,
        default=list(range(1, 17)),
        metavar="N-M,K",
        help="MIGRator workloads, 1..16 (default: 1-16)",
    )
    parser.add_argument(
        "--seeds", type=_seeds, default=[0], metavar="S,S", help="episode seeds (default: 0)"
    )
    parser.add_argument(
        "--windows",
        type=_windows,
        default=None,
        metavar="K,K",
        help="only these window indices of each episode, from 0 (W1-W8 have 4 windows, "
        "W9-W16 9; default: every one)",
    )
    parser.add_argument(
        "--milp-windows",
        type=_windows,
        default=None,
        metavar="K,K",
        help="run HiGHS only on these window indices, or 'none' (the decomposition on every "
        "window)",
    )
    parser.add_argument(
        "--milp-time-limit",
        type=float,
        default=10.0,
        metavar="S",
        help="HiGHS's time limit per window, seconds (default: 10)",
    )
    parser.add_argument(
        "--milp-start",
        choices=("none", "decomposition"),
        default="none",
        help="start HiGHS from the decomposition's plan (needs highspy; default: none)",
    )
    parser.add_argument(
        "--merge",
        nargs="+",
        type=Path,
        metavar="JSON",
        help="print (and with --json write) these sweeps' results as one table; runs nothing",
    )
    add_json_arguments(parser)
    args = parser.parse_args(argv)
    if problem := json_problem(args):
        parser.error(problem)
    if args.merge:
        try:
            res = merge([_read_sweep(path) for path in args.merge])
        except (OSError, ValueError, KeyError) as exc:
            parser.error(f"--merge: {exc}")
        print(format_result(res))
        if args.json is not None:
            write_json(args.json, res, "benchmark", flag="--json")
            print(f"wrote {args.json}")
        return res
    if not args.milp_time_limit > 0:  # nan too
        parser.error(f"--milp-time-limit must be positive, got {args.milp_time_limit}")
    if problem := windows_problem(args):
        parser.error(problem)
    names = [f"W{w}" for w in args.workloads]
    saved: dict[str, Any] = {}

    def save(so_far: dict[str, Any]) -> None:
        saved.clear()
        saved.update(so_far, workloads=dict(so_far["workloads"]))
        missing = [n for n in names if n not in saved["workloads"]]
        if args.json is not None and missing:  # the end writes the whole sweep unmarked
            write_json(args.json, {**saved, "partial": {"missing": missing}}, "benchmark",
                       flag="--json")  # fmt: skip

    try:
        with pinned_to_one_core():
            seeded = args.milp_start == "decomposition"
            res = run(args.workloads, args.seeds, args.milp_time_limit, windows=args.windows,
                      seeded=seeded, milp_windows=args.milp_windows, save=save)  # fmt: skip
    except KeyboardInterrupt:
        done = list(saved.get("workloads", {}))
        missing = [n for n in names if n not in done]
        code = keep_partial(PROG, args.json, saved, len(done), missing, ("workload", "workloads"))
        raise SystemExit(code) from None
    print(format_result(res))
    if args.json is not None:
        write_json(args.json, res, "benchmark", flag="--json")
        print(f"wrote {args.json}")
    return res


if __name__ == "__main__":
    sys.exit(run_command(main, PROG))

"""Command line: ``python -m benchmarks [--json PATH] [--quick]`` (run from the repo root);
``python -m benchmarks soak`` runs the soak instead (:mod:`benchmarks.soak`).

Runs the environment throughput benchmark (edgegym vs CartPole-v1), the vector env throughput
of every family at N = 1, 16, 256 beside CartPole's numpy vector env
(:mod:`benchmarks.vector_envs`), the thief decision-time benchmark, the MIGRator planner
benchmark (decision time and optimality on W1), the MRS scheduling time for 1000 DAG requests
and the MIGRator decomposition on every window of W1-W16 with HiGHS's MILP on a sample of them
(:mod:`benchmarks.migrator_sweep`; not with ``--quick``), prints readable tables and optionally
writes every number with machine information to a JSON file. Ctrl-C (or SIGTERM) keeps the
sections finished so far in that file, marked ``"partial"``.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks import env_throughput, migrator, migrator_sweep, mrs, thief, vector_envs
from benchmarks.common import (
    Interrupted,
    Parser,
    add_json_arguments,
    fail,
    json_problem,
    keep_partial,
    machine_info,
    pinned_to_one_core,
)
from edgegym.outputs import run_command, write_json

PROG = "python -m benchmarks"
DELTAS = (1.0, 0.5, 0.2, 0.1, 0.05)
GPU_COUNTS = (1, 2, 4, 8, 16)


@dataclass(frozen=True)
class Settings:
    """Sizes of one benchmark run."""

    env_steps: int
    yardstick_steps: int
    repeats: int
    warmup: int
    thief_seeds: tuple[int, ...]
    thief_repeats: int


FULL = Settings(
    env_steps=10_000,
    yardstick_steps=100_000,
    repeats=5,
    warmup=500,
    thief_seeds=(0, 1, 2, 3, 4),
    thief_repeats=3,
)
QUICK = Settings(
    env_steps=2_000,
    yardstick_steps=20_000,
    repeats=3,
    warmup=50,
    thief_seeds=(0, 1),
    thief_repeats=1,
)


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = Parser(
        prog=PROG,
        description="edgegym speed benchmarks: environment step throughput (against "
        "CartPole-v1), vector env throughput per family at N = 1, 16, 256 (against CartPole's "
        "vector env), Ekya's thief decision time, the MIGRator planner's decision time and "
        "optimality on W1, MRS scheduling time for 1000 DAG requests (200 with --quick), and both "
        "MIGRator planners on every window of W1-W16 (not with --quick).",
    )
    add_json_arguments(parser)
    parser.add_argument(
        "--quick", action="store_true", help="small sizes for a smoke test (under a minute)"
    )
    parser.add_argument(
        "--no-pin",
        action="store_true",
        help="do not pin the process to one CPU core (pinned by default where supported)",
    )
    args = parser.parse_args(argv)
    if problem := json_problem(args):
        fail(PROG, problem)
    return args


def _format_throughput(res: dict[str, Any]) -> str:
    edge, pole = res["edgegym"], res["cartpole"]
    lines = [
        "Environment step throughput (random actions, median of repeats)",
        f"  {'environment':<32} {'steps/s':>12} {'steps x repeats':>16}",
        f"  {edge['env_id']:<32} {edge['steps_per_s']:>12,.0f} "
        f"{edge['steps']:>8} x {edge['repeats']:<5}",
        f"  {pole['env_id']:<32} {pole['steps_per_s']:>12,.0f} "
        f"{pole['steps']:>8} x {pole['repeats']:<5}",
        f"  ratio edgegym / CartPole: {res['ratio_edgegym_over_cartpole']:.4f}"
        f"  (CartPole is {1 / res['ratio_edgegym_over_cartpole']:.1f}x faster per step)",
        f"  simulated seconds per wall second (edgegym): {edge['sim_s_per_wall_s']:,.0f}",
    ]
    return "\n".join(lines)


def _format_thief(res: dict[str, Any]) -> str:
    head = res["headline"]

    def rows(items: list[dict[str, Any]]) -> list[str]:
        out = [f"  {'GPUs':>5} {'Delta':>6} {'median ms':>10} {'max ms':>9} {'est. acc':>9}"]
        for t in items:
            acc = sum(t["est_accuracy"]) / len(t["est_accuracy"])
            delta = "exact" if t.get("exact") else f"{t['delta']:g}"
            out.append(
                f"  {t['gpus']:>5} {delta:>6} {1e3 * t['median_s']:>10.1f} "
                f"{1e3 * t['max_s']:>9.1f} {acc:>9.3f}"
            )
        return out

    verdict = "meets" if res["meets_target"] else "MISSES"
    lines = [
        f"Thief decision time ({head['streams']} streams, {head['retrain_configs']} retraining "
        f"configurations, window 0 once labelled, seeds {head['seeds']})",
        f"  headline {head['gpus']} GPUs, Delta {head['delta']:g}: median "
        f"{1e3 * head['median_s']:.1f} ms, max {1e3 * head['max_s']:.1f} ms "
        f"(paper {res['paper_s']} s: {res['speedup_vs_paper']:.0f}x faster; "
        f"{verdict} the {1e3 * res['target_s']:.0f} ms target)",
        f"  Delta sweep at {head['gpus']} GPUs:",
        *rows(res["delta_sweep"]),
        f"  GPU sweep at Delta {head['delta']:g}:",
        *rows(res["gpu_sweep"]),
        "  The exact search of the same objective (thief:exact=true; its estimate is never below "
        "the steals'):",
        *rows(res["exact_sweep"]),
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the benchmarks, print the tables and optionally write JSON; return the numbers.

    Bad arguments (an unusable ``--json`` path included) print one ``error:`` line and raise
    ``SystemExit(2)`` before anything is measured. A ``--json`` write that fails after the
    measuring (a full disk) keeps the numbers in a rescue file and raises
    :class:`~edgegym.outputs.OutputWriteError`, which ``run_command`` prints as one ``error:``
    line naming the rescue file (exit code 2). Ctrl-C or SIGTERM in the middle writes the
    sections finished so far to ``--json``, with ``"partial": {"stopped": ..., "missing":
    [sections]}``, says so in one line and raises ``SystemExit`` (130, or 143 for SIGTERM).
    """
    args = _parse(argv)
    cfg = QUICK if args.quick else FULL
    started = time.perf_counter()
    info = machine_info()
    print(
        f"edgegym benchmarks ({'quick' if args.quick else 'full'}) on {info['cpu_model']}, "
        f"{info['cpu_count']} CPUs, Python {info['python']}, numpy {info['numpy']}, "
        f"{info['date']}"
    )
    try:
        if args.no_pin:
            results = _run(cfg, core=None)
        else:
            with pinned_to_one_core() as core:
                results = _run(cfg, core)
    except Interrupted as stop:
        done = {**stop.done, **_about(info, cfg, args.quick, started)}
        kept = len(SECTIONS) - len(stop.missing)
        raise SystemExit(
            keep_partial(PROG, args.json, done, kept, stop.missing, ("section", "sections"))
        ) from None
    results.update(_about(info, cfg, args.quick, started))
    print(f"\ntotal {results['wall_s']:.1f} s")
    if args.json is not None:
        write_json(args.json, results, "benchmark", flag="--json")
        print(f"wrote {args.json}")
    return results


def _about(info: dict[str, Any], cfg: Settings, quick: bool, started: float) -> dict[str, Any]:
    """The machine, the settings and the wall time of a run (finished or not)."""
    return {
        "machine": info,
        "settings": {**cfg.__dict__, "quick": quick},
        "wall_s": time.perf_counter() - started,
    }


#: The sections of a run, in the order they run (the keys of their numbers in the JSON).
SECTIONS = ("throughput", "thief", "vector_envs", "migrator", "mrs", "migrator_sweep")


def _sections(
    cfg: Settings, so_far: dict[str, Any]
) -> dict[str, tuple[Callable[[], Any], Callable[[Any], str]]]:
    """Each section's measuring and its table, by :data:`SECTIONS` name. The W1-W16 sweep
    keeps its finished workloads in ``so_far`` as it goes (it takes about 20 minutes)."""

    def sweep() -> dict[str, Any] | None:
        if cfg is QUICK:
            return None

        def save(part: dict[str, Any]) -> None:  # a copy: the sweep goes on adding workloads
            so_far.update(part, workloads=dict(part["workloads"]))

        return migrator_sweep.run(**migrator_sweep.BENCHMARK, save=save)

    def sweep_table(res: dict[str, Any] | None) -> str:
        if res is None:
            return f"MIGRator planners on W1-W16: skipped by --quick ({migrator_sweep.PROG})"
        return migrator_sweep.format_result(res)

    return {
        "throughput": (
            lambda: env_throughput.compare(
                cfg.env_steps, cfg.yardstick_steps, cfg.repeats, cfg.warmup
            ),
            _format_throughput,
        ),
        "thief": (
            lambda: thief.run_all(cfg.thief_seeds, cfg.thief_repeats, DELTAS, GPU_COUNTS),
            _format_thief,
        ),
        "vector_envs": (
            lambda: vector_envs.run(env_steps=cfg.env_steps * 2, repeats=cfg.repeats),
            vector_envs.format_result,
        ),
        "migrator": (
            lambda: migrator.run(seeds=cfg.thief_seeds[:2], repeats=min(cfg.thief_repeats, 3)),
            migrator.format_result,
        ),
        "mrs": (lambda: mrs.run(requests=200 if cfg is QUICK else 1000), mrs.format_result),
        "migrator_sweep": (sweep, sweep_table),
    }


def _run(cfg: Settings, core: int | None) -> dict[str, Any]:
    """Every section in turn, its table printed as it finishes; their numbers.

    Raises:
        Interrupted: Ctrl-C or SIGTERM; it holds the finished sections' numbers (and the
            finished workloads of a W1-W16 sweep cut short, still named as missing).
    """
    print("pinned to CPU core", core if core is not None else "(not pinned)")
    results: dict[str, Any] = {"pinned_core": core}
    sweep_so_far: dict[str, Any] = {}
    sections = _sections(cfg, sweep_so_far)
    try:
        for name in SECTIONS:
            measure, table = sections[name]
            results[name] = measure()
            print()
            print(table(results[name]))
    except KeyboardInterrupt:
        missing = [n for n in SECTIONS if n not in results]
        if sweep_so_far and "migrator_sweep" not in results:
            results["migrator_sweep"] = sweep_so_far
        raise Interrupted(results, missing) from None
    return results


if __name__ == "__main__":
    if sys.argv[1:2] == ["soak"]:  # python -m benchmarks soak ...: the long-run memory check
        from benchmarks import soak

        sys.exit(run_command(lambda: soak.main(sys.argv[2:]), soak.PROG))
    sys.exit(run_command(main, PROG))

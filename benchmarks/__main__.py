"""Command line: ``python -m benchmarks [--json PATH] [--quick]`` (run from the repo root);
``python -m benchmarks soak`` runs the soak instead (:mod:`benchmarks.soak`).

Runs the environment throughput benchmark (edgegym vs CartPole-v1), the vector env throughput
of every family at N = 1, 16, 256 beside CartPole's numpy vector env
(:mod:`benchmarks.vector_envs`), the thief decision-time benchmark, the MIGRator planner
benchmark (decision time and optimality on W1), the MRS scheduling time for 1000 DAG requests
and the MIGRator decomposition on every window of W1-W16 with HiGHS's MILP on a sample of them
(:mod:`benchmarks.migrator_sweep`; not with ``--quick``), prints readable tables and optionally
writes every number with machine information to a JSON file.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks import env_throughput, migrator, migrator_sweep, mrs, thief, vector_envs
from benchmarks.common import add_json_arguments, json_problem, machine_info, pinned_to_one_core
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
    parser = argparse.ArgumentParser(
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
        print(f"{PROG}: error: {problem}", file=sys.stderr)
        raise SystemExit(2)
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
    line naming the rescue file (exit code 2).
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
    if args.no_pin:
        results = _run(cfg, core=None)
    else:
        with pinned_to_one_core() as core:
            results = _run(cfg, core)
    results["machine"] = info
    results["settings"] = {**cfg.__dict__, "quick": args.quick}
    results["wall_s"] = time.perf_counter() - started
    print(f"\ntotal {results['wall_s']:.1f} s")
    if args.json is not None:
        write_json(args.json, results, "benchmark", flag="--json")
        print(f"wrote {args.json}")
    return results


def _run(cfg: Settings, core: int | None) -> dict[str, Any]:
    print("pinned to CPU core", core if core is not None else "(not pinned)")
    throughput = env_throughput.compare(cfg.env_steps, cfg.yardstick_steps, cfg.repeats, cfg.warmup)
    print()
    print(_format_throughput(throughput))
    thief_res = thief.run_all(cfg.thief_seeds, cfg.thief_repeats, DELTAS, GPU_COUNTS)
    print()
    print(_format_thief(thief_res))
    vec = vector_envs.run(env_steps=cfg.env_steps * 2, repeats=cfg.repeats)
    print()
    print(vector_envs.format_result(vec))
    mig = migrator.run(seeds=cfg.thief_seeds[:2], repeats=min(cfg.thief_repeats, 3))
    print()
    print(migrator.format_result(mig))
    mrs_res = mrs.run(requests=200 if cfg is QUICK else 1000)
    print()
    print(mrs.format_result(mrs_res))
    sweep: dict[str, Any] | None = None
    print()
    if cfg is QUICK:
        print(f"MIGRator planners on W1-W16: skipped by --quick ({migrator_sweep.PROG})")
    else:
        sweep = migrator_sweep.run(**migrator_sweep.BENCHMARK)
        print(migrator_sweep.format_result(sweep))
    return {
        "pinned_core": core,
        "mrs": mrs_res,
        "migrator_sweep": sweep,
        "throughput": throughput,
        "thief": thief_res,
        "migrator": mig,
        "vector_envs": vec,
    }


if __name__ == "__main__":
    if sys.argv[1:2] == ["soak"]:  # python -m benchmarks soak ...: the long-run memory check
        from benchmarks import soak

        sys.exit(run_command(lambda: soak.main(sys.argv[2:]), soak.PROG))
    sys.exit(run_command(main, PROG))

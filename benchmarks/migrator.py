"""MIGRator planner decision time and optimality on W1 (the 2 s per window target).

For each window of ``migrator-w1`` (basis 1 s, batch 1) the planning problem is built exactly as
the ``migrator`` policy builds it (its seasonal forecast from the past windows), then solved (a)
as the policy does, with the proven gap 0.01, and (b) by a long solve with gap 0 (branch and
bound run to the end: the exact optimum of the same model). Reported: solve time of (a) against
the 2 s target on one core, and ``value(a) / value(b)`` (must be >= 0.99). MIG environment step
throughput is measured against CartPole-v1 in the same run.
"""

from __future__ import annotations

import time
from typing import Any

from benchmarks.common import median
from benchmarks.env_throughput import YARDSTICK_ID, measure_throughput

TARGET_S = 2.0
MIG_ID = "edgegym/MIGReconfig-v0"


def window_problems(seed: int = 0, scenario: str = "migrator-w1") -> list[Any]:
    """The planning problem of every window of one episode, exactly as the ``migrator`` policy
    builds it (its default seasonal forecaster; the first window from the level forecast)."""
    from edgegym.baselines import migrator as planner
    from edgegym.families.mig import MIGReconfigEnv

    problems = []
    build = planner.build_problem

    def recording(*args: Any, **kwargs: Any) -> Any:
        problems.append(build(*args, **kwargs))
        return problems[-1]

    env = MIGReconfigEnv(scenario)
    pol = planner.MIGRatorPolicy(env)
    obs, _ = env.reset(seed=seed)
    pol.reset(seed)
    planner.build_problem = recording
    try:
        term = False
        while not term:
            action, _ = pol.predict(obs)
            obs, _, term, _, _ = env.step(action)
    finally:
        planner.build_problem = build
    return problems


def run(seeds: tuple[int, ...] = (0, 1), repeats: int = 3) -> dict[str, Any]:
    """Time the policy's solve and compare it with the exact optimum, window by window."""
    from edgegym.baselines.migrator import solve

    rows = []
    for seed in seeds:
        for k, prob in enumerate(window_problems(seed)):
            times = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                plan = solve(prob, gap=0.01, max_plans=2000)
                times.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            exact = solve(prob, gap=0.0, max_plans=10**7)
            exact_s = time.perf_counter() - t0
            rows.append(
                {
                    "seed": seed,
                    "window": k,
                    "median_s": median(times),
                    "value": plan.value,
                    "exact_value": exact.value,
                    "ratio": plan.value / exact.value,
                    "proven_gap": plan.gap,
                    "plans_total": plan.plans_total,
                    "plans_solved": plan.plans_solved,
                    "exact_plans_solved": exact.plans_solved,
                    "exact_s": exact_s,
                }
            )
    worst = max(r["median_s"] for r in rows)
    mig = measure_throughput(MIG_ID, 2000, 3, 50, sim_time=True)
    pole = measure_throughput(YARDSTICK_ID, 20_000, 3, 50)
    return {
        "windows": rows,
        "worst_s": worst,
        "target_s": TARGET_S,
        "meets_target": worst <= TARGET_S,
        "min_ratio": min(r["ratio"] for r in rows),
        "env": mig.to_dict(),
        "cartpole": pole.to_dict(),
        "ratio_mig_over_cartpole": mig.steps_per_s / pole.steps_per_s,
    }


def format_result(res: dict[str, Any]) -> str:
    """Readable table."""
    lines = [
        "MIGRator planner on migrator-w1 (200 s window, 1 s basis; policy solve vs exact solve)",
        f"  {'seed':>4} {'win':>4} {'solve s':>8} {'value/exact':>12} {'gap':>7} "
        f"{'plans':>7} {'exact plans':>12} {'exact s':>8}",
    ]
    for r in res["windows"]:
        lines.append(
            f"  {r['seed']:>4} {r['window']:>4} {r['median_s']:>8.2f} {r['ratio']:>12.5f} "
            f"{100 * r['proven_gap']:>6.2f}% {r['plans_solved']:>7} "
            f"{r['exact_plans_solved']:>12} {r['exact_s']:>8.2f}"
        )
    verdict = "meets" if res["meets_target"] else "MISSES"
    lines += [
        f"  worst window {res['worst_s']:.2f} s ({verdict} the {res['target_s']:.0f} s target); "
        f"worst value / exact optimum {res['min_ratio']:.5f} (>= 0.99 required)",
        f"  {MIG_ID} steps/s {res['env']['steps_per_s']:,.0f} (random actions), "
        f"CartPole {res['cartpole']['steps_per_s']:,.0f}: "
        f"ratio {res['ratio_mig_over_cartpole']:.4f}",
    ]
    return "\n".join(lines)

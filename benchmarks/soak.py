"""Soak: a long run of every family's native vector environment, memory sampled (issue 17).

``python -m benchmarks soak [--steps N] [--num-envs N] [--json PATH]`` steps each family's
native vector env (``gym.make_vec(id, N, vectorization_mode="vector_entry_point")``, next-step
autoreset) for ``--steps`` environment steps in all (default 10^6) with random valid actions
drawn from ``info["action_mask"]``, samples the process's resident memory (RSS) every
``--steps / 50`` steps, and reports steps/s, the RSS after a warm-up (the first 10 % of the
steps) and the largest RSS after it, as growth in percent. Many episodes end and restart on
the way, so memory that grows per episode or per request shows as growth. Ctrl-C (or SIGTERM)
keeps the families finished so far in ``--json``, marked ``"partial"``.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

import edgegym  # noqa: F401  (registers the ids)
from benchmarks.common import (
    Parser,
    add_json_arguments,
    json_problem,
    keep_partial,
    machine_info,
    names_in,
)
from edgegym.core.registry import ENV_IDS
from edgegym.outputs import run_command, write_json

PROG = "python -m benchmarks soak"
#: Share of the steps before the memory baseline is taken.
WARMUP = 0.1
#: RSS samples per family.
SAMPLES = 50


def rss_mb() -> float:
    """Resident memory of this process, MiB (``/proc/self/statm``; peak RSS elsewhere)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    import os

    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def _sampler(space: gym.Space, num_envs: int) -> Any:
    """``(mask (N, K) bool, rng) -> (N, ...) actions``: uniform among each entry's valid
    values (every value where an entry has none)."""
    single = space
    if isinstance(single, gym.spaces.Discrete):
        sizes = [int(single.n)]
    else:
        sizes = [int(n) for n in np.asarray(single.nvec).ravel()]
    cuts = np.cumsum([0, *sizes])

    def sample(mask: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        out = np.empty((num_envs, len(sizes)), dtype=np.int64)
        for j, (a, b) in enumerate(itertools.pairwise(cuts)):
            m = mask[:, a:b]
            m = np.where(m.any(axis=1, keepdims=True), m, True)
            out[:, j] = np.argmax(rng.random(m.shape) * m, axis=1)
        return out[:, 0] if isinstance(single, gym.spaces.Discrete) else out

    return sample


def soak(env_id: str, steps: int, num_envs: int, seed: int = 0) -> dict[str, Any]:
    """Run ``env_id``'s native vector env for ``steps`` environment steps; the numbers."""
    env = gym.make_vec(env_id, num_envs, vectorization_mode="vector_entry_point")
    try:
        rng = np.random.default_rng(seed)
        sample = _sampler(env.single_action_space, num_envs)
        _, info = env.reset(seed=seed)
        batches = max(1, -(-steps // num_envs))
        every = max(1, batches // SAMPLES)
        warm = max(1, int(batches * WARMUP))
        samples: list[tuple[int, float]] = []
        episodes = 0
        baseline = None
        t0 = time.perf_counter()
        for k in range(batches):
            action = sample(np.asarray(info["action_mask"], dtype=bool), rng)
            _, reward, term, trunc, info = env.step(action)
            if not np.all(np.isfinite(reward)):
                raise RuntimeError(f"{env_id}: a non-finite reward at batch {k}")
            episodes += int(np.sum(term | trunc))
            if k + 1 == warm:
                baseline = rss_mb()
            if (k + 1) % every == 0:
                samples.append(((k + 1) * num_envs, rss_mb()))
        wall = time.perf_counter() - t0
    finally:
        env.close()
    after = [mb for n, mb in samples if n >= warm * num_envs] or [rss_mb()]
    base = baseline if baseline is not None else after[0]
    return {
        "env_id": env_id,
        "steps": batches * num_envs,
        "num_envs": num_envs,
        "episodes": episodes,
        "wall_s": wall,
        "steps_per_s": batches * num_envs / wall,
        "rss_warm_mb": base,
        "rss_max_after_mb": max(after),
        "growth_pct": 100.0 * (max(after) - base) / base,
        "samples": samples,
    }


def families() -> list[str]:
    """The families of the registered ids, in registry order."""
    return list(dict.fromkeys(family for _, family, *_ in ENV_IDS.values()))


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    from edgegym.cli import int_in

    ap = Parser(prog=PROG, description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int_in(1), default=1_000_000, help="steps per family")
    ap.add_argument("--num-envs", type=int_in(1, 4096), default=64, help="vector size")
    ap.add_argument(
        "--families", help=f"comma-separated families (default: all: {','.join(families())})"
    )
    add_json_arguments(ap)
    args = ap.parse_args(argv)
    if args.families is not None:
        try:
            args.families = names_in("--families", args.families, families(), "family")
        except ValueError as exc:
            ap.error(str(exc))
    if problem := json_problem(args):
        ap.error(problem)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Soak every family (or ``--families``); print a table; 0 when every growth is under 5 %.

    Bad arguments (an unknown family, an unusable ``--json`` path) print one ``error:`` line
    and return 2 before any work. Ctrl-C or SIGTERM writes the families finished so far to
    ``--json`` (``"partial": {"stopped": ..., "missing": [ids]}``), says so in one line and
    returns 130 (143 for SIGTERM).
    """
    try:
        args = _parse(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    wanted = args.families
    ids = [i for i, (_, family, *_) in ENV_IDS.items() if wanted is None or family in wanted]
    rows: list[dict[str, Any]] = []
    print(f"{'env':34} {'steps':>9} {'episodes':>8} {'steps/s':>9} {'RSS MiB':>8} {'growth':>7}")
    try:
        for env_id in ids:
            r = soak(env_id, args.steps, args.num_envs)
            rows.append(r)
            print(
                f"{env_id:34} {r['steps']:>9,} {r['episodes']:>8,} {r['steps_per_s']:>9,.0f} "
                f"{r['rss_warm_mb']:>8.1f} {r['growth_pct']:>6.2f}%",
                flush=True,
            )
    except KeyboardInterrupt:
        missing = ids[len(rows) :]
        data = {"soak": rows, "machine": machine_info()}
        return keep_partial(PROG, args.json, data, len(rows), missing, ("family", "families"))
    if args.json is not None:
        write_json(args.json, {"soak": rows, "machine": machine_info()}, "benchmark", flag="--json")
        print(f"wrote {args.json}")
    return 0 if all(r["growth_pct"] < 5.0 for r in rows) else 1


if __name__ == "__main__":
    sys.exit(run_command(main, PROG))

"""Aggregate env-steps/s of every family's vector env at N = 1, 16, 256, beside CartPole's.

Run ``python -m benchmarks.vector_envs [--families F,..] [--sizes 1,16,256]`` (pinned to one
core where the platform allows). For each family: ``gymnasium.make_vec(id, N)`` on its default
scenario (the native vector env where the family registers one; otherwise Gymnasium's
``SyncVectorEnv`` of N single envs, marked ``sync``) stepped with random *masked* actions,
beside ``gym.make_vec("CartPole-v1", N, vectorization_mode="vector_entry_point")`` (Gymnasium's
numpy-batched CartPole, random actions) timed in the same process, and the family's single env
(``gymnasium.make(id)``, masked random actions). Only the time inside the environments'
``step`` (and the single env's ``reset``) is counted: drawing the random actions is the
policy's cost, not the environment's (for the continual family's 40-entry MultiDiscrete it
costs about as much as the step at N = 256). Nothing is asserted (DESIGN §6); the numbers go
to ``docs/benchmarks.md``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import gymnasium as gym
import numpy as np

import edgegym  # noqa: F401  (registers the ids)
from benchmarks.common import Parser, machine_info, median, names_in, pinned_to_one_core
from edgegym.core.registry import FAMILIES
from edgegym.outputs import run_command

PROG = "python -m benchmarks.vector_envs"
SIZES = (1, 16, 256)


def masked_actions(rng: np.random.Generator, mask: np.ndarray, space: gym.Space) -> np.ndarray:
    """(N, ...) random actions among the allowed ones: uniform over the mask-true indices of a
    ``Discrete``; per entry of a ``MultiDiscrete``, uniform over that entry's allowed values.
    Vectorised over envs (the policy's cost should not hide the env's)."""
    n_envs = mask.shape[0]
    if isinstance(space, gym.spaces.Discrete):
        return _pick(rng, mask)
    nvec = space.nvec.ravel()
    out = np.zeros((n_envs, nvec.size), dtype=np.int64)
    offset = 0
    for j, n in enumerate(nvec):
        out[:, j] = _pick(rng, mask[:, offset : offset + int(n)])
        offset += int(n)
    return out.reshape(n_envs, *space.nvec.shape)


def _pick(rng: np.random.Generator, mask: np.ndarray) -> np.ndarray:
    """(N,) a uniformly random True column per row (0 for a row with none)."""
    noise = rng.random(mask.shape)
    return np.argmax(np.where(mask, noise, -1.0), axis=1).astype(np.int64)


def _rate(run: Callable[[int], float], steps: int, per_step: int, repeats: int) -> float:
    """Median env-steps/s over ``repeats`` timings (after a warm-up) of ``run(steps)``, which
    returns the seconds spent inside the environment's ``step`` (and ``reset``)."""
    run(min(steps, 10))
    return median([steps * per_step / run(steps) for _ in range(repeats)])


def vector_rate(env_id: str, n_envs: int, steps: int, repeats: int) -> tuple[float, str]:
    """Env-steps/s of ``make_vec(env_id, n_envs)`` and the vectorisation mode it used."""
    spec = gym.spec(env_id)
    mode = "vector_entry_point" if spec.vector_entry_point else "sync"
    vec = gym.make_vec(env_id, n_envs, vectorization_mode=mode)
    vec.reset(seed=0)
    rng = np.random.default_rng(0)
    if mode == "sync":
        masks = lambda: np.stack(vec.call("action_masks"))  # noqa: E731
    else:
        masks = vec.action_masks

    def run(k: int) -> float:
        spent = 0.0
        for _ in range(k):
            actions = masked_actions(rng, masks(), vec.single_action_space)
            t0 = time.perf_counter()
            vec.step(actions)
            spent += time.perf_counter() - t0
        return spent

    rate = _rate(run, steps, n_envs, repeats)
    vec.close()
    return rate, "native" if mode != "sync" else "sync"


def cartpole_rate(n_envs: int, steps: int, repeats: int) -> float:
    """Env-steps/s of CartPole-v1's numpy vector env with ``n_envs`` envs."""
    vec = gym.make_vec("CartPole-v1", n_envs, vectorization_mode="vector_entry_point")
    vec.reset(seed=0)
    rng = np.random.default_rng(0)

    def run(k: int) -> float:
        spent = 0.0
        for _ in range(k):
            actions = rng.integers(0, 2, n_envs)
            t0 = time.perf_counter()
            vec.step(actions)
            spent += time.perf_counter() - t0
        return spent

    return _rate(run, steps, n_envs, repeats)


def single_rate(env_id: str, steps: int, repeats: int) -> float:
    """Env-steps/s of one ``gymnasium.make(env_id)`` with random masked actions."""
    env = gym.make(env_id, disable_env_checker=True)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    u = env.unwrapped

    def run(k: int) -> float:
        spent = 0.0
        for _ in range(k):
            a = masked_actions(rng, u.action_masks()[None], env.action_space)[0]
            t0 = time.perf_counter()
            _, _, term, trunc, _ = env.step(a)
            if term or trunc:
                env.reset()
            spent += time.perf_counter() - t0
        return spent

    return _rate(run, steps, 1, repeats)


def run(
    families: Sequence[str] | None = None,
    sizes: Sequence[int] = SIZES,
    env_steps: int = 20_000,
    repeats: int = 3,
    out: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Measure every family (or ``families``) at every N; returns the numbers by family.

    ``env_steps`` env-steps per timing (divided by N for the step count, at least 20 steps, and
    by 20 for families stepped as sync copies, which are slow at large N). ``out``: the dict
    the finished families are put in as they finish (what an interrupted run still has).
    """
    out = {} if out is None else out
    pole: dict[int, float] = {}
    for name in families or list(FAMILIES):
        fam = FAMILIES[name]
        rows = []
        for n in sizes:
            native = bool(gym.spec(fam.env_id).vector_entry_point)
            budget = env_steps if native else max(env_steps // 20, 200)
            steps = max(budget // n, 20)
            rate, mode = vector_rate(fam.env_id, n, steps, repeats)
            if n not in pole:
                pole[n] = cartpole_rate(n, max(env_steps * 5 // n, 50), repeats)
            rows.append({"N": n, "steps_per_s": rate, "mode": mode, "cartpole": pole[n]})
        single = single_rate(fam.env_id, min(env_steps, 3000), repeats)
        out[name] = {"env_id": fam.env_id, "single_steps_per_s": single, "rows": rows}
    return out


def format_result(res: dict[str, Any]) -> str:
    """The table of :func:`run`'s numbers (markdown)."""
    lines = [
        "Vector env throughput (aggregate env-steps/s, random masked actions, default scenario)",
        "| family | N | mode | edgegym env-steps/s | CartPole vector env-steps/s | ratio |"
        " vs own single env |",
        "|---|---:|---|---:|---:|---:|---:|",
    ]
    for name, fam in res.items():
        for r in fam["rows"]:
            lines.append(
                f"| {name} | {r['N']} | {r['mode']} | {r['steps_per_s']:,.0f} | "
                f"{r['cartpole']:,.0f} | {r['steps_per_s'] / r['cartpole']:.4f} | "
                f"{r['steps_per_s'] / fam['single_steps_per_s']:.1f}x |"
            )
    lines.append(
        "single envs (steps/s): "
        + ", ".join(f"{k} {v['single_steps_per_s']:,.0f}" for k, v in res.items())
    )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Command line: measure, print the table, return the numbers.

    Bad arguments print one ``error:`` line and raise ``SystemExit(2)`` before any work.
    Ctrl-C or SIGTERM prints the table of the families finished so far, then ends as
    ``run_command`` ends it (130, or 143 for SIGTERM).
    """
    from edgegym.cli import int_in

    ap = Parser(prog=PROG, description=__doc__.splitlines()[0])
    ap.add_argument("--families", help=f"comma-separated (default: {','.join(FAMILIES)})")
    ap.add_argument("--sizes", default="1,16,256", help="comma-separated N (default 1,16,256)")
    ap.add_argument("--env-steps", type=int_in(1), default=20_000, help="env-steps per timing")
    args = ap.parse_args(argv)
    families = None
    if args.families is not None:
        try:
            families = names_in("--families", args.families, FAMILIES, "family")
        except ValueError as exc:
            ap.error(str(exc))
    try:
        sizes = [int(s) for s in args.sizes.split(",")]
    except ValueError:
        ap.error(f"--sizes must be comma-separated integers, got {args.sizes!r}")
    if any(s < 1 for s in sizes):
        ap.error(f"--sizes must be >= 1, got {args.sizes!r}")
    info = machine_info()
    res: dict[str, Any] = {}
    with pinned_to_one_core() as core:
        try:
            run(families, sizes, args.env_steps, out=res)
        except KeyboardInterrupt:
            if res:  # the families measured before it (the message is run_command's)
                print(format_result(res), flush=True)
            raise
    print(f"{info['cpu_model']}, pinned to core {core}, numpy {info['numpy']}, {info['date']}")
    print(format_result(res))
    return {"machine": info, "core": core, "families": res}


if __name__ == "__main__":
    sys.exit(run_command(main, PROG))

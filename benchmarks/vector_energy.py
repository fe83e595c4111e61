"""Env-steps/s of the energy family's native vector env against CartPole's, at the same N.

Run ``python -m benchmarks.vector_energy`` (pin it to one core with ``taskset -c 0``). Prints
a table: for N = 1, 16, 256, the env-steps/s of
:class:`edgegym.envs.energy.vector.EnergyFairShareVectorEnv` (random masked actions, default
scenario, NEXT_STEP autoreset) beside ``gym.make_vec("CartPole-v1", N,
vectorization_mode="vector_entry_point")`` (random actions) in the same process, and the
single env (:class:`~edgegym.envs.energy.env.EnergyFairShareEnv`, and with ``--old`` the
environment of git ``HEAD`` loaded into a temporary module, for a before/after). Nothing is
asserted (DESIGN §6); the numbers go to ``docs/benchmarks.md``.
"""

from __future__ import annotations

import argparse
import importlib.util
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from benchmarks.common import machine_info, median, pinned_to_one_core
from edgegym.envs.energy.env import EnergyFairShareEnv
from edgegym.envs.energy.vector import EnergyFairShareVectorEnv

SIZES = (1, 16, 256)


def _masked_actions(rng: np.random.Generator, mask: np.ndarray, n: int) -> np.ndarray:
    """(N, n): per slot uniform among 0 .. the largest allowed unit count (the mask is a
    prefix 0 .. demand per slot)."""
    d = mask.reshape(mask.shape[0], n, -1).sum(axis=2) - 1
    return np.floor(rng.random(d.shape) * (d + 1)).astype(np.int64)


def _rate(run: Callable[[int], None], steps: int, per_step: int, repeats: int) -> float:
    """Median env-steps/s of ``run(steps)`` over ``repeats`` timings."""
    run(min(steps, 20))  # warm up
    rates = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        run(steps)
        rates.append(steps * per_step / (time.perf_counter() - t0))
    return median(rates)


def vector_energy_rate(n_envs: int, steps: int, repeats: int = 3) -> float:
    """Env-steps/s of the energy vector env with ``n_envs`` envs."""
    vec = EnergyFairShareVectorEnv(num_envs=n_envs)
    vec.reset(seed=0)
    rng = np.random.default_rng(0)
    n = vec.params.n

    def run(k: int) -> None:
        for _ in range(k):
            vec.step(_masked_actions(rng, vec.action_masks(), n))

    return _rate(run, steps, n_envs, repeats)


def cartpole_vector_rate(n_envs: int, steps: int, repeats: int = 3) -> float:
    """Env-steps/s of CartPole-v1's numpy vector env with ``n_envs`` envs."""
    vec = gym.make_vec("CartPole-v1", n_envs, vectorization_mode="vector_entry_point")
    vec.reset(seed=0)
    rng = np.random.default_rng(0)

    def run(k: int) -> None:
        for _ in range(k):
            vec.step(rng.integers(0, 2, n_envs))

    return _rate(run, steps, n_envs, repeats)


def single_rate(env: Any, steps: int, repeats: int = 3) -> float:
    """Env-steps/s of one single (non-vector) energy env with random masked actions."""
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    n = env.n

    def run(k: int) -> None:
        for _ in range(k):
            a = _masked_actions(rng, env.action_masks()[None], n)[0]
            _, _, term, _, _ = env.step(a)
            if term:
                env.reset()

    return _rate(run, steps, 1, repeats)


def old_env_class() -> type | None:
    """``EnergyFairShareEnv`` of git ``HEAD`` (before the dynamics), or None outside git."""
    root = Path(__file__).resolve().parents[1]
    try:
        src = subprocess.run(
            ["git", "show", "HEAD:edgegym/envs/energy/env.py"],
            cwd=root,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    path = Path(tempfile.mkdtemp()) / "energy_env_head.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("energy_env_head", path)
    if spec is None or spec.loader is None:
        return None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["energy_env_head"] = mod
    spec.loader.exec_module(mod)
    return mod.EnergyFairShareEnv


def main(argv: list[str] | None = None) -> dict[str, Any]:
    """Measure and print the table; returns the numbers."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--env-steps", type=int, default=20000, help="env-steps per timing")
    ap.add_argument("--old", action="store_true", help="also time git HEAD's single env")
    args = ap.parse_args(argv)
    out: dict[str, Any] = {"machine": machine_info(), "rows": []}
    with pinned_to_one_core() as core:
        out["core"] = core
        for n_envs in SIZES:
            steps = max(args.env_steps // n_envs, 20)
            e = vector_energy_rate(n_envs, steps)
            c = cartpole_vector_rate(n_envs, steps)
            out["rows"].append({"N": n_envs, "energy": e, "cartpole": c, "ratio": e / c})
        steps = min(args.env_steps, 3000)
        out["single_new"] = single_rate(EnergyFairShareEnv(), steps)
        old = old_env_class() if args.old else None
        out["single_old"] = single_rate(old(), steps) if old is not None else None
    print(f"pinned to core: {out['core']}")
    print("|    N | energy vector env-steps/s | CartPole vector env-steps/s | ratio |")
    print("|-----:|--------------------------:|----------------------------:|------:|")
    for r in out["rows"]:
        print(f"| {r['N']:4d} | {r['energy']:25,.0f} | {r['cartpole']:27,.0f} | {r['ratio']:.4f} |")
    print(f"single env (this tree): {out['single_new']:,.0f} steps/s")
    if out["single_old"] is not None:
        print(f"single env (git HEAD):  {out['single_old']:,.0f} steps/s")
    return out


if __name__ == "__main__":
    main()

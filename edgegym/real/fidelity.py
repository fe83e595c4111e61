"""Sim-vs-real fidelity: the same scenario, policy and seed under both backends, per window.

:func:`fidelity` runs one episode with ``backend="sim"`` and one with ``backend="real"`` and
returns, for every retraining window, the reward and each reward term under both and their
difference (real minus sim). Policies decide from the state they see, so where the measured
accuracies differ from the profile's, decisions may differ too; that is part of what the
report measures.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from edgegym.real import TINY_MIG_SCENARIO, TINY_SCENARIO

#: The ids with a real backend and the tiny scenario each runs by default.
REAL_ENVS: dict[str, str] = {
    "edgegym/ContinualLearning-v0": TINY_SCENARIO,
    "edgegym/MIGReconfig-v0": TINY_MIG_SCENARIO,
}


def _episode(env: Any, policy_spec: str, seed: int) -> list[dict[str, float]]:
    from edgegym.baselines import make_policy

    policy = make_policy(policy_spec, env)
    obs, _ = env.reset(seed=seed)
    policy.reset(seed)
    windows: list[dict[str, float]] = [{} for _ in range(env.spec_.windows)]
    terminated = False
    while not terminated:
        k = env.engine.window
        action, _ = policy.predict(obs, deterministic=True)
        obs, rew, terminated, _, info = env.step(action)
        row = windows[k]
        row["reward"] = row.get("reward", 0.0) + float(rew)
        for name, value in info["reward_terms"].items():
            row[name] = row.get(name, 0.0) + float(value)
        row["energy_j"] = row.get("energy_j", 0.0) + float(info["energy_j"])
    return windows


def fidelity(
    env_id: str,
    scenario: str | None = None,
    policy: str | None = None,
    seed: int = 0,
    device: str = "cpu",
    time_scale: float | None = None,
    real_options: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Run ``policy`` on ``scenario`` in sim and real mode; per-window terms and differences.

    Args:
        env_id: An id of :data:`REAL_ENVS`.
        scenario: Scenario name or path (default: the id's tiny real scenario).
        policy: Policy spec (default: the family's published scheduler).
        seed: Episode seed (the same in both runs).
        device: Torch device of the real run.
        time_scale: Real run pacing (scenario seconds per wall second).
        real_options: Real backend options.

    Raises:
        ValueError: ``env_id`` has no real backend.
    """
    if env_id not in REAL_ENVS:
        known = ", ".join(REAL_ENVS)
        raise ValueError(f"{env_id} has no real backend; real mode exists for {known}")
    import gymnasium as gym

    from edgegym.baselines import DEFAULT_POLICY
    from edgegym.envs import ENV_IDS

    scenario = scenario or REAL_ENVS[env_id]
    policy = policy or DEFAULT_POLICY[ENV_IDS[env_id][1]]
    sim = _episode(gym.make(env_id, scenario=scenario).unwrapped, policy, seed)
    real_env = gym.make(
        env_id,
        scenario=scenario,
        backend="real",
        device=device,
        time_scale=time_scale,
        real_options=real_options,
    ).unwrapped
    real = _episode(real_env, policy, seed)
    rows = []
    for k, (s, r) in enumerate(zip(sim, real, strict=True)):
        keys = sorted(set(s) | set(r))
        rows.append(
            {
                "window": k,
                "sim": {key: s.get(key, 0.0) for key in keys},
                "real": {key: r.get(key, 0.0) for key in keys},
                "diff": {key: r.get(key, 0.0) - s.get(key, 0.0) for key in keys},
            }
        )
    total = {key: float(np.sum([row["diff"][key] for row in rows])) for key in rows[0]["diff"]}
    return {
        "env_id": env_id,
        "scenario": scenario,
        "policy": policy,
        "seed": seed,
        "device": device,
        "emulated": real_env.engine.executor.emulated,
        "energy": real_env.engine.executor.meter.message or real_env.engine.executor.meter.method,
        "windows": rows,
        "total_diff": total,
    }


def format_report(report: dict[str, Any]) -> str:
    """Markdown table of the per-window reward and terms under both backends."""
    keys = list(report["windows"][0]["diff"])
    lines = [
        f"Fidelity of {report['env_id']} on {report['scenario']} with {report['policy']} "
        f"(seed {report['seed']}, real on {report['device']})",
        "",
        "| window | " + " | ".join(f"{k} sim / real / diff" for k in keys) + " |",
        "| --- | " + " | ".join("---" for _ in keys) + " |",
    ]
    for row in report["windows"]:
        cells = [
            f"{row['sim'][k]:.4g} / {row['real'][k]:.4g} / {row['diff'][k]:+.4g}" for k in keys
        ]
        lines.append(f"| {row['window']} | " + " | ".join(cells) + " |")
    lines += ["", "Emulated: " + "; ".join(report["emulated"]), f"Energy: {report['energy']}"]
    return "\n".join(lines)

"""Sim-vs-real fidelity: the same scenario, policy and seed under both backends, per window.

:func:`fidelity` runs one episode with ``backend="sim"`` and one with ``backend="real"`` and
returns, for every retraining window, the reward and each reward term under both and their
difference (real minus sim); for the energy family, which has no windows, the episode's
F_T, F_E, F_S, mean power, throughput and energy; for the DAG family, the episode's reward,
mean completion time (replayed from the measured node times), mean accuracy (measured on the
stand-ins) and energy, and every request's completion and accuracy under both. Policies decide
from the state they see, so where the measured accuracies differ from the profile's, decisions
may differ too; that is part of what the report measures.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from edgegym.real import TINY_DAG_SCENARIO, TINY_MIG_SCENARIO, TINY_SCENARIO

#: The ids with a real backend and the scenario each runs by default (tiny, but for energy).
REAL_ENVS: dict[str, str] = {
    "edgegym/ContinualLearning-v0": TINY_SCENARIO,
    "edgegym/MIGReconfig-v0": TINY_MIG_SCENARIO,
    "edgegym/EnergyFairShare-v0": "etf-tx2-resnet50-mobilenetv2",
    "edgegym/DAGOffload-v0": TINY_DAG_SCENARIO,
}


def _energy_episode(env: Any, policy_spec: str, seed: int) -> dict[str, float]:
    """One episode of the energy family: its fairness, mean power, throughput and energy."""
    from edgegym.baselines import make_policy

    policy = make_policy(policy_spec, env)
    obs, _ = env.reset(seed=seed)
    policy.reset(seed)
    done = False
    while not done:
        action, _ = policy.predict(obs, deterministic=True)
        obs, _, done, _, info = env.step(action)
    m = info["episode_metrics"]
    seconds = env.params.quanta * env.params.quantum_s
    out = {key: float(m[key]) for key in ("F_T", "F_E", "F_S", "throughput_rps", "energy_j")}
    out["mean_power_w"] = out["energy_j"] / seconds
    return out


def _dag_episode(env: Any, policy_spec: str, seed: int) -> tuple[dict[str, float], list]:
    """One episode of the DAG family: its reward, mean completion time and accuracy and
    energy (the real run's completion replayed from measured node times, its accuracy
    measured, its energy NVML's where it reads), and the real run's finished requests (empty
    in sim)."""
    from edgegym.baselines import make_policy

    policy = make_policy(policy_spec, env)
    obs, _ = env.reset(seed=seed)
    policy.reset(seed)
    done, total = False, 0.0
    while not done:
        action, _ = policy.predict(obs, deterministic=True)
        obs, rew, done, _, info = env.step(action)
        total += float(rew)
    m = info["episode_metrics"]
    out = {"reward": total, "completion_s": float(m["completion_s"]),
           "accuracy": float(m["accuracy"]), "energy_j": float(m["energy_j"])}  # fmt: skip
    if env.executor is None:
        return out, []
    real = env.executor.summary()
    out["completion_s"] = real["completion_s"]
    out["energy_j"] = real["energy_j"]
    out["accuracy"] = float("nan") if real["accuracy"] is None else real["accuracy"]
    keys = ("request", "app", "completion_s", "sim_completion_s", "accuracy", "sim_accuracy")
    requests = [{key: row[key] for key in (*keys, "retrained")} for row in env.executor.finished]
    return out, requests


def _episode(
    env: Any, policy_spec: str, seed: int
) -> tuple[list[dict[str, float]], list[dict[str, Any]]]:
    """One episode: per-window reward and terms, and the real backend's log (empty in sim)."""
    from edgegym.baselines import make_policy

    policy = make_policy(policy_spec, env)
    obs, info = env.reset(seed=seed)
    policy.reset(seed)
    log = list(info.get("real", {}).get("log", []))
    windows: list[dict[str, float]] = [{} for _ in range(env.spec_.windows)]
    terminated = False
    while not terminated:
        k = env.window
        action, _ = policy.predict(obs, deterministic=True)
        obs, rew, terminated, _, info = env.step(action)
        log += info.get("real", {}).get("log", [])
        row = windows[k]
        row["reward"] = row.get("reward", 0.0) + float(rew)
        for name, value in info["reward_terms"].items():
            row[name] = row.get(name, 0.0) + float(value)
        row["energy_j"] = row.get("energy_j", 0.0) + float(info["energy_j"])
    return windows, log


def _accuracies(log: list[dict[str, Any]], profile: Any) -> list[dict[str, Any]]:
    """Per window: measured accuracy of the deployed and the retrained models vs the profile's.

    The profile's deployed accuracy is its start accuracy in window 0 (later windows depend on
    what was retrained, so only the measured value is given); its retrained accuracy is
    ``post_acc`` of the job's tenant, window and configuration.
    """
    rows: dict[int, dict[str, Any]] = {}
    window = 0
    for rec in log:
        if rec["event"] == "window":
            window = rec["window"]
            row = rows.setdefault(window, {"window": window, "jobs": []})
            row["deployed_measured"] = rec["measured_accuracy"]
            if window == 0:
                row["deployed_profile"] = [round(float(a), 4) for a in profile.start_acc]
        elif rec["event"] == "segment":
            for job in rec["finished"]:
                v, cfg = job["stream"], job["config_index"]
                rows.setdefault(window, {"window": window, "jobs": []})["jobs"].append(
                    {
                        "tenant": v,
                        "config": job["config"],
                        "measured": round(float(job["accuracy"]), 4),
                        "profile": round(float(profile.post_acc[v, window, cfg]), 4),
                    }
                )
    return [rows[k] for k in sorted(rows)]


def _latencies(log: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per tenant: sampled inference latency at its instance vs the profile's, and the SLO."""
    per: dict[int, dict[str, list[float]]] = {}
    for rec in log:
        if rec["event"] != "segment" or "profile_latency_ms" not in rec:
            continue
        for v, ms in enumerate(rec["infer_latency_ms"]):
            if ms is None:
                continue
            d = per.setdefault(v, {"measured": [], "profile": [], "within": []})
            d["measured"].append(ms)
            d["profile"].append(rec["profile_latency_ms"][v])
            d["within"].append(float(rec["latency_within_slo"][v]))
    return [
        {
            "tenant": v,
            "stretches": len(d["measured"]),
            "measured_ms": round(float(np.mean(d["measured"])), 4),
            "profile_ms": round(float(np.mean(d["profile"])), 4),
            "within_slo": round(float(np.mean(d["within"])), 4),
        }
        for v, d in sorted(per.items())
    ]


def hardware_note(scenario: str, device: str) -> str:
    """What the real run's device is beside the GPU the scenario models ("" on the CPU, or
    where they are the same catalogue GPU): power, energy and speed compare different hardware
    otherwise, and the way to compare like with like is to profile the device first."""
    if not device.startswith("cuda"):
        return ""
    from edgegym.real.profile import _hardware
    from edgegym.scenarios import load

    sc = load(scenario)
    modelled = (sc.get("hardware") or sc.get("servers") or {}).get("gpu")
    measured = _hardware({}, device)
    if modelled is None or measured.gpu == modelled:
        return ""
    family = sc.get("family", "")
    return (
        f"the scenario models {modelled}, the run measured {measured.device_name}"
        f"{f' ({measured.gpu})' if measured.gpu else ''}: power, energy and speed compare "
        "different hardware; `edgegym profile"
        f"{f' --family {family}' if family in ('mig', 'energy', 'dag') else ''} --device "
        f"{device}` writes a scenario of this device to pass as --scenario"
    )


#: Segments shorter than this many wall seconds read the NVML energy counter unreliably. On an
#: H200 (2026-11-28, docs/real-gpu.md) unpaced continual segments of 32-35 ms read 0 J or
#: carried the joules of the segment before, so the converted window power came out at 52 and
#: 253 W against 122 and 151 W of wall power; paced (--time-scale 20, shortest 0.17 s) every
#: segment read and the two agreed within 0.1 W.
SHORTEST_RELIABLE_SEGMENT_S = 0.1


def energy_segments(log: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per window: how the NVML joules of its segments became the simulator's time base.

    ``window_mean_w`` is the counter's joules over the wall seconds the window ran;
    ``scenario_mean_w`` the converted joules over its scenario seconds. The executor converts
    segment by segment (each at its own scenario-to-wall ratio), so where the two differ, short
    segments carried uneven joules: ``zero_j`` counts segments whose counter did not move,
    ``shortest_wall_s`` is the shortest segment. Empty where no segment was measured.
    """
    per: dict[int, dict[str, float]] = {}
    for rec in log:
        if rec.get("event") != "segment" or rec.get("measured_j") is None:
            continue
        d = per.setdefault(
            int(rec["window"]),
            {"segments": 0, "zero_j": 0, "wall_s": 0.0, "duration_s": 0.0, "measured_j": 0.0,
             "scenario_j": 0.0, "shortest_wall_s": np.inf},
        )  # fmt: skip
        d["segments"] += 1
        d["zero_j"] += int(rec["measured_j"] <= 0.0)
        d["wall_s"] += float(rec["wall_s"])
        d["duration_s"] += float(rec["duration_s"])
        d["measured_j"] += float(rec["measured_j"])
        d["scenario_j"] += float(rec["scenario_j"] or 0.0)
        d["shortest_wall_s"] = min(d["shortest_wall_s"], float(rec["wall_s"]))
    out = []
    for k, d in sorted(per.items()):
        row = {"window": k, **{key: round(float(v), 4) for key, v in d.items()}}
        row["segments"], row["zero_j"] = int(d["segments"]), int(d["zero_j"])
        row["window_mean_w"] = round(d["measured_j"] / d["wall_s"], 3) if d["wall_s"] else None
        row["scenario_mean_w"] = (
            round(d["scenario_j"] / d["duration_s"], 3) if d["duration_s"] else None
        )
        out.append(row)
    return out


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
        scenario: Scenario name or path (default: the id's tiny real scenario; for energy
            the bundled ``etf-tx2-resnet50-mobilenetv2``).
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
    from edgegym.core.checks import check_backend
    from edgegym.core.registry import ENV_IDS

    check_backend("real", device, time_scale)  # before the simulated run, not after it
    scenario = scenario or REAL_ENVS[env_id]
    policy = policy or DEFAULT_POLICY[ENV_IDS[env_id][1]]
    family = ENV_IDS[env_id][1]
    energy = family == "energy"
    play = {"energy": _energy_episode, "dag": _dag_episode}.get(family, _episode)
    sim = play(gym.make(env_id, scenario=scenario).unwrapped, policy, seed)
    real_env = gym.make(
        env_id,
        scenario=scenario,
        backend="real",
        device=device,
        time_scale=time_scale,
        real_options=real_options,
    ).unwrapped
    real = play(real_env, policy, seed)
    if energy:  # one row: the episode
        report = _report(env_id, scenario, policy, seed, device, real_env, [sim], [real], [], [])
        report["windows"][0]["window"] = "episode"
        return report
    if family == "dag":  # one row, the episode; then every request
        (sim_row, _), (real_row, requests) = sim, real
        report = _report(
            env_id, scenario, policy, seed, device, real_env, [sim_row], [real_row], [], []
        )
        report["windows"][0]["window"] = "episode"
        report["requests"] = requests
        return report
    (sim_rows, _), (real_rows, log) = sim, real
    report = _report(env_id, scenario, policy, seed, device, real_env, sim_rows, real_rows,
                     _accuracies(log, real_env.profile), _latencies(log))  # fmt: skip
    report["energy_segments"] = energy_segments(log)
    return report


def _report(
    env_id: str,
    scenario: str,
    policy: str,
    seed: int,
    device: str,
    real_env: Any,
    sim: list[dict[str, float]],
    real: list[dict[str, float]],
    accuracy: list[dict[str, Any]],
    latency: list[dict[str, Any]],
) -> dict[str, Any]:
    """The fidelity report: per window (the energy family: the episode) sim, real and diff."""
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
        "emulated": real_env.executor.emulated,
        "hardware": hardware_note(scenario, device),
        "energy": real_env.executor.meter.message or real_env.executor.meter.method,
        "windows": rows,
        "total_diff": total,
        "accuracy": accuracy,
        "latency": latency,
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
    if report.get("accuracy"):
        lines += [
            "",
            "Accuracy, measured (real) vs the scenario's profile (sim):",
            "",
            "| window | deployed at window start | retrained (tenant, configuration) |",
            "| --- | --- | --- |",
        ]
        for row in report["accuracy"]:
            deployed = ", ".join(f"{a:.3f}" for a in row.get("deployed_measured", []))
            if "deployed_profile" in row:
                deployed += " vs " + ", ".join(f"{a:.3f}" for a in row["deployed_profile"])
            jobs = "; ".join(
                f"{j['tenant']} {j['config']}: {j['measured']:.3f} vs {j['profile']:.3f}"
                for j in row["jobs"]
            )
            lines.append(f"| {row['window']} | {deployed} | {jobs or '-'} |")
    if report.get("latency"):
        lines += [
            "",
            "Inference latency per batch at the tenant's instance (sampled stretches):",
            "",
            "| tenant | stretches | measured ms | profile ms | within SLO |",
            "| --- | --- | --- | --- | --- |",
        ]
        for row in report["latency"]:
            lines.append(
                f"| {row['tenant']} | {row['stretches']} | {row['measured_ms']:.3f} | "
                f"{row['profile_ms']:.3f} | {row['within_slo']:.0%} |"
            )
    if report.get("requests"):
        lines += [
            "",
            "Requests: completion replayed from measured node times (real) vs simulated, "
            "accuracy measured on the stand-ins (real) vs the scenario's profile (sim):",
            "",
            "| request | app | completion s real / sim | accuracy real / sim | retrained tasks |",
            "| --- | --- | --- | --- | --- |",
        ]
        for row in report["requests"]:
            acc = "-" if row["accuracy"] is None else f"{row['accuracy']:.3f}"
            lines.append(
                f"| {row['request']} | {row['app']} | {row['completion_s']:.4g} / "
                f"{row['sim_completion_s']:.4g} | {acc} / {row['sim_accuracy']:.3f} | "
                f"{', '.join(map(str, row['retrained'])) or '-'} |"
            )
    if report.get("energy_segments"):
        lines += [
            "",
            "Energy on the simulator's time base (NVML joules per wall second, converted per "
            "segment to scenario seconds):",
            "",
            "| window | segments (0 J) | shortest s | wall s / J / W | scenario s / J / W |",
            "| --- | --- | --- | --- | --- |",
        ]
        for row in report["energy_segments"]:
            lines.append(
                f"| {row['window']} | {row['segments']} ({row['zero_j']}) | "
                f"{row['shortest_wall_s']:.3g} | {row['wall_s']:.3g} / {row['measured_j']:.4g} / "
                f"{row['window_mean_w']} | {row['duration_s']:.4g} / {row['scenario_j']:.4g} / "
                f"{row['scenario_mean_w']} |"
            )
        shortest = min(row["shortest_wall_s"] for row in report["energy_segments"])
        if shortest < SHORTEST_RELIABLE_SEGMENT_S:
            lines += [
                "",
                f"Warning: segments as short as {shortest:.3g} s are below the NVML counter's "
                f"reliable span ({SHORTEST_RELIABLE_SEGMENT_S} s): their joules land in the wrong "
                "segment, so the scenario-second energy above is not a measurement; rerun with "
                "--time-scale (20 on an H200 gave every segment its joules).",
            ]
    lines += ["", "Emulated: " + "; ".join(report["emulated"]), f"Energy: {report['energy']}"]
    if report.get("hardware"):
        lines.append(f"Hardware: {report['hardware']}")
    return "\n".join(lines)

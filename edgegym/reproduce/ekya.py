"""Reproduce Ekya's evaluation (NSDI'22 §6) and write ``docs/reproduction/ekya.md``.

Run ``python -m edgegym.reproduce.ekya [--episodes N] [--first-seed N] [--scenario NAME]
[--out DIR] [--quick] [--render-only]`` (``--quick``: a smoke run of one episode per point,
written to ``runs/reproduction-quick``; ``--first-seed N``: a seed check on seeds N, N+1, ...;
``--render-only``: the report, its figures and the claims rewritten from the saved
``ekya-runs.json``).
Every number in the report comes from this run; the paper's numbers stand beside them.
Sections:
(a) accuracy vs number of streams at 1 and 2 GPUs (Fig. 6) and the capacity table (Table 2);
(b) 10 streams on 1-16 GPUs (Fig. 8) and the GPU-saving factor, also in the authors'
simulator's setting (:data:`SIMULATOR`), in which Fig. 8's claims are judged; (c)
FixedRes / FixedConfig (Fig. 10a); (d) Delta sensitivity: accuracy and decision time (§6.2,
in the simulator's setting); (e) micro-profiler noise sensitivity (Fig. 11b); (f) the
micro-profiler's mechanics, one at a time; (g) the synthesised inputs swept (x0.5, x2): a held-out
claim judged on the scenario (Fig. 6, 8, 10a, 11b) holds only if it holds across the sweep, and
Fig. 4's claims on ``ekya-table1`` are judged also at ``table1_variants``; (h)
the thief's steals against the exact search of its objective, each with and without
retraining (:data:`SEARCH`); then Table 1's worked example (Fig. 4). It ends by writing the
paper's records of ``<out>/claims.json`` (:mod:`edgegym.reproduce.claims`).

Each scheduler runs in the setup the paper evaluates it in (:func:`edgegym.evaluate`'s
default, :meth:`edgegym.baselines.Policy.paper_setup`): the uniform baselines and
no-retraining use neither the micro-profiler (no GPU share held for it) nor Ekya's
checkpointing; Ekya-FixedConfig profiles its one configuration only.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from edgegym.baselines.ekya import MAX_EXACT_QUANTA
from edgegym.evaluation import evaluate
from edgegym.families.continual.dynamics import sample_estimates
from edgegym.families.continual.params import ContinualSpec
from edgegym.jsonshape import BOOL, INT, NUM, TEXT, MapOf, Maybe, OneOf, Record, Tree
from edgegym.outputs import run_command, write_json, write_text
from edgegym.parallel import add_parallel_arguments, ray_problem
from edgegym.reproduce import claims as claims_table
from edgegym.reproduce.claims import Claim
from edgegym.reproduce.ekya_claims import FIXEDCONFIG, UNIFORMS, judge, noise_drop
from edgegym.reproduce.ekya_figures import LABELS, draw, figure_inputs
from edgegym.reproduce.ekya_inputs import (
    SCENARIO_POINT,
    SWEEP_FACTORS,
    SYNTHESISED,
    table1_variants,
)
from edgegym.reproduce.ekya_report import REPORT
from edgegym.reproduce.ekya_tables import section_texts, table
from edgegym.scenarios import (
    ScenarioError,
    apply_overrides,
    bundled,
    load,
    read_raw,
    validate,
)
from edgegym.workload.continual import MAE_PER_STD

PROG = "python -m edgegym.reproduce.ekya"
#: The files this reproduction writes into --out (besides the claims table) -> kind.
OUTPUTS = {
    "ekya.md": "report",
    "ekya-runs.json": "ekya-runs",  # what the sections measured, for --render-only
    **{
        f"ekya-{f}.png": "figure"
        for f in ("fig6-1gpu", "fig6-2gpu", "fig7", "fig8", "fig10", "fig11b", "sweep")
    },
}
ENV_ID = "edgegym/ContinualLearning-v0"
STREAMS = 10  # sections (b)-(g) run the scenario's 10 streams
STREAM_COUNTS = tuple(range(1, STREAMS + 1))  # (a) sweeps 1..10 streams
SWEEP_GPUS = (1, 2)  # (a) at 1 and 2 GPUs
GPU_COUNTS = (1, 2, 4, 8, 16)  # (b, c)
DELTAS = (1.0, 0.5, 0.2, 0.1, 0.05)  # (d), at DELTA_GPUS
NOISE_STDS = (0.0, 0.05, 0.1, 0.2, 0.3)  # (e), Gaussian noise of this deviation, at DELTA_GPUS
DELTA_GPUS = 4  # (d) and (e)
ABLATION_GPUS = (1, 4, 8)  # (f)
REGIME_GPUS = (1, 2)  # (g)
CALIBRATION_SEEDS = 300  # sample episodes of the calibration rows
CAPACITY_TARGET = 0.75
#: (f): the micro-profiler's mechanics, each switched off alone, then all of them.
ABLATIONS: dict[str, dict[str, Any]] = {
    SCENARIO_POINT: {},
    "exact estimates (error 0)": {"profiler.error": 0.0},
    "no pruning": {"profiler.prune_every": 0},
    "no profiling cost": {"profiler.cost_s": 0.0},
    "no labelling delay": {"profiler.annotation_s": 0.0},
    "no checkpoints": {"profiler.checkpoint_epochs": 0},
    "all off": {
        "profiler.error": 0.0,
        "profiler.prune_every": 0,
        "profiler.cost_s": 0.0,
        "profiler.annotation_s": 0.0,
        "profiler.checkpoint_epochs": 0,
    },
}
#: (h): Algorithm 1's steals against the exact search of the same objective
#: (``thief:exact=true``), each with and without retraining, and the exact search with the true
#: profiles, at 10 streams on :data:`REGIME_GPUS`: how much of the thief's accuracy is
#: retraining, and how much a better search of the same objective gains.
SEARCH = (
    "thief",
    "thief:retrain=false",
    "thief:exact=true",
    "thief:exact=true,retrain=false",
    "thief:exact=true,oracle=true",
)
#: The most GPUs the exact search runs on ((d) and (h)).
EXACT_GPUS = max(DELTA_GPUS, *REGIME_GPUS)
#: (b) Fig. 8 ran in the authors' simulator (§6.1: "To scale to more GPUs, we use the
#: simulator"), whose released code (edge-video-services/ekya, ``ekya/simulation``) schedules
#: on the measured profiles themselves: ``run.py`` keeps ``use_oracle_modes = [True]`` and
#: writes the measured accuracies as the predictions (``generate_meta_profiles(...,
#: use_predictions=False)``). Nothing is micro-profiled (no profiling cost, no pruning of the
#: grid), the golden model's delay defaults to 0 (``parser.py --delay``) and a model is replaced
#: only when its job ends (``constants.py INSTA_CHECKPOINT = False``: no checkpoints). Fig. 8's
#: claims are judged in this setting, every policy run on the scenario with these overrides;
#: the testbed's (the scenario's micro-profiler) stays beside them.
SIMULATOR: dict[str, Any] = ABLATIONS["all off"]


#: Worst fraction of stream-time below a_MIN seen per policy family in this run at the
#: scenario's inputs (filled by :func:`_run`; (g)'s scaled inputs are left out): the thief
#: treats a_MIN as a constraint, the uniform baselines do not.
BELOW_A_MIN: dict[str, float] = {}

_FAMILY_LABELS = {"uniform": "Uniform (all 4 variants)", "ekya-fixedconfig": LABELS[FIXEDCONFIG]}

#: A run's results: policy -> its result entry (:meth:`edgegym.evaluation.EvalResult.result`).
Results = dict[str, dict[str, Any]]


def _family(policy: str) -> str:
    name = policy.partition(":")[0]
    return "uniform" if name.startswith("uniform") else name


#: Where :func:`_run`'s episodes run (here, or as Ray tasks: ``--ray``) and the seed of the
#: first (``--first-seed``): :func:`edgegym.evaluate`'s ``ray`` and ``seed``.
PARALLEL: dict[str, Any] = {"ray": None, "seed": 0}


def _run(
    policies: Sequence[str],
    scenario: str,
    episodes: int,
    track_a_min: bool = True,
    **overrides: Any,
) -> Results:
    """Evaluate ``policies`` on ``scenario`` with ``overrides``, each in its paper setup
    (:func:`edgegym.evaluate`'s default); unless ``track_a_min`` is false (inputs scaled by
    (g)), fold their time below a_MIN into :data:`BELOW_A_MIN`."""
    res = evaluate(
        ENV_ID,
        list(policies),
        scenario=scenario,
        episodes=episodes,
        overrides=overrides,
        progress=False,
        **PARALLEL,
    )
    if not res.ok:
        raise RuntimeError(f"evaluation failed: {res.errors}")
    out: Results = {p: res.result(p) for p in policies}
    for p, r in out.items() if track_a_min else ():
        below = max(e["metrics"].get("below_a_min_frac", 0.0) for e in r["per_episode"])
        fam = _family(p)
        BELOW_A_MIN[fam] = max(BELOW_A_MIN.get(fam, 0.0), below)
    return out


def _acc(res: Results, policy: str) -> tuple[float, float]:
    m = res[policy]["metrics"]["accuracy"]
    return m["mean"], m["std"]


def _best_uniform(acc: dict[str, tuple[float, float]]) -> tuple[str, float]:
    """The uniform variant with the highest mean accuracy, and that accuracy."""
    best = max(UNIFORMS, key=lambda u: acc[u][0])
    return best, acc[best][0]


def streams_sweep(scenario: str, episodes: int, log: Any) -> dict[str, Any]:
    """(a) Fig. 6 and Table 2."""
    policies = ["thief", *UNIFORMS]
    acc: dict[int, dict[str, dict[int, tuple[float, float]]]] = {}
    for gpus in SWEEP_GPUS:
        acc[gpus] = {p: {} for p in policies}
        for n in STREAM_COUNTS:
            res = _run(policies, scenario, episodes, gpus=gpus, streams=n)
            for p in policies:
                acc[gpus][p][n] = _acc(res, p)
            log(f"  (a) {gpus} GPU(s), {n} streams: thief {acc[gpus]['thief'][n][0]:.3f}")
    gains = {
        g: max(
            acc[g]["thief"][n][0] - max(acc[g][u][n][0] for u in UNIFORMS) for n in STREAM_COUNTS
        )
        for g in SWEEP_GPUS
    }
    capacity = {  # Table 2: the most streams each keeps at accuracy >= 0.75, 1 and 2 GPUs
        p: tuple(
            max([n for n in STREAM_COUNTS if acc[g][p][n][0] >= CAPACITY_TARGET], default=0)
            for g in SWEEP_GPUS
        )
        for p in policies
    }
    return {"gain_1gpu": gains[1], "gain_2gpu": gains[2], "capacity": capacity, "acc": acc}


def _fig8(acc: dict[str, dict[int, tuple[float, float]]]) -> dict[str, Any]:
    """Fig. 8's readings from one setting's accuracies on 1-16 GPUs: the GPU saving (16 / the
    fewest GPUs on which the thief reaches the best uniform at 16) and the thief's margin over
    the best uniform variant at each GPU count (positive: it beats every one)."""
    best_uniform_16 = max(acc[u][16][0] for u in UNIFORMS)
    reach = [g for g in GPU_COUNTS if acc["thief"][g][0] >= best_uniform_16]
    return {
        "saving": 16 / reach[0] if reach else None,
        "best_uniform_16": best_uniform_16,
        "margin": {g: acc["thief"][g][0] - max(acc[u][g][0] for u in UNIFORMS) for g in GPU_COUNTS},
        "acc": acc,
    }


def gpus_sweep(scenario: str, episodes: int, log: Any) -> dict[str, Any]:
    """(b) Fig. 8 and (c) Fig. 10a: 10 streams on 1-16 GPUs, with the ablations; Fig. 8's
    schedulers again in the authors' simulator's setting (:data:`SIMULATOR`)."""
    policies = ["thief", *UNIFORMS, "ekya-fixedres", FIXEDCONFIG, "no-retrain"]
    sim_policies = ["thief", *UNIFORMS, "no-retrain"]
    acc: dict[str, dict[int, tuple[float, float]]] = {p: {} for p in policies}
    sim: dict[str, dict[int, tuple[float, float]]] = {p: {} for p in sim_policies}
    for g in GPU_COUNTS:
        res = _run(policies, scenario, episodes, gpus=g)
        res_sim = _run(sim_policies, scenario, episodes, gpus=g, **SIMULATOR)
        for p in policies:
            acc[p][g] = _acc(res, p)
        for p in sim_policies:
            sim[p][g] = _acc(res_sim, p)
        log(f"  (b) {g} GPUs: thief {acc['thief'][g][0]:.3f} (simulator {sim['thief'][g][0]:.3f})")
    return {**_fig8(acc), "sim": _fig8(sim)}


def delta_sweep(scenario: str, episodes: int, log: Any) -> dict[str, Any]:
    """(d) §6.2: Delta vs accuracy and decision time (10 streams, 4 GPUs), in the authors'
    simulator's setting (:data:`SIMULATOR`): the arXiv version runs it "with the same setting
    as Figure 7" (the NSDI version's Fig. 8).

    Run twice: edgegym's default (a victim holding less than Delta gives up what it holds)
    and the literal Algorithm 1 (``partial=false``), where a Delta larger than a job's share
    cannot be stolen at all; then the exact search of the same objective
    (``thief:exact=true``), which no Delta's steals can pass in their own estimate.
    """
    variants = {"default": "", "literal Alg. 1": ",partial=false"}
    acc: dict[str, list[tuple[float, float]]] = {name: [] for name in variants}
    decision_ms: dict[str, list[float]] = {name: [] for name in variants}
    for d in DELTAS:
        for name, suffix in variants.items():
            spec = f"thief:delta={d}{suffix}"
            res = _run([spec], scenario, episodes, gpus=DELTA_GPUS, **SIMULATOR)
            acc[name].append(_acc(res, spec))
            decision_ms[name].append(1000 * res[spec]["decision_time_s"])
        log(f"  (d) delta {d}: " + ", ".join(f"{n} {a[-1][0]:.3f}" for n, a in acc.items()))
    exact = _run(["thief:exact=true"], scenario, episodes, gpus=DELTA_GPUS, **SIMULATOR)
    log(f"  (d) exact search: {_acc(exact, 'thief:exact=true')[0]:.3f}")
    i01 = DELTAS.index(0.1)
    return {
        "gain": acc["default"][i01][0] - acc["default"][0][0],
        "gain_literal": acc["literal Alg. 1"][i01][0] - acc["literal Alg. 1"][0][0],
        "deltas": list(DELTAS),
        "acc": acc,
        "decision_ms": decision_ms,
        "exact": _acc(exact, "thief:exact=true"),
        "exact_ms": 1000 * exact["thief:exact=true"]["decision_time_s"],
    }


def noise_sweep(scenario: str, episodes: int, log: Any) -> dict[str, Any]:
    """(e) Fig. 11b: Gaussian estimation noise of a given deviation (10 streams, 4 GPUs).

    The scenario's input is the median absolute error; a deviation ``s`` is run as
    ``profiler.error = MAE_PER_STD * s`` (the deviation the env then derives is ``s`` where
    clipping does not matter, a little more where it does: shown in the table).
    """
    acc, errors, used = [], [], []
    for s in NOISE_STDS:
        error = round(MAE_PER_STD * s, 6)
        res = _run(["thief"], scenario, episodes, gpus=DELTA_GPUS, **{"profiler.error": error})
        spec = ContinualSpec.from_scenario(load(scenario, **{"profiler.error": error}))
        acc.append(_acc(res, "thief"))
        errors.append(error)
        used.append(spec.profiler_noise)
        log(f"  (e) noise {s}: {acc[-1][0]:.3f}")
    return {
        "noise": list(NOISE_STDS),
        "error": errors,  # the median absolute error each level was given
        "std_used": used,  # the deviation the environment derived from it
        "acc": acc,  # the thief's accuracy (mean, std) at each level
    }


def profiler_ablation(scenario: str, episodes: int, log: Any) -> dict[str, Any]:
    """(f) The micro-profiler's mechanics, one at a time (10 streams; the thief, the oracle
    thief and the best uniform variant for reference)."""
    acc: dict[int, dict[str, float]] = {}
    for g in ABLATION_GPUS:
        acc[g] = {}
        for name, ov in ABLATIONS.items():
            acc[g][name] = _acc(_run(["thief"], scenario, episodes, gpus=g, **ov), "thief")[0]
            log(f"  (f) {g} GPU(s), {name}: {acc[g][name]:.3f}")
        res = _run(["thief:oracle=true", *UNIFORMS], scenario, episodes, gpus=g)
        acc[g]["oracle"] = _acc(res, "thief:oracle=true")[0]
        acc[g]["best uniform"] = _best_uniform({u: _acc(res, u) for u in UNIFORMS})[1]
    return {"acc": acc}


def synthesised_sweep(scenario: str, episodes: int, log: Any) -> dict[str, Any]:
    """(g) The thief against the best uniform variant and no retraining at 10 streams on 1 and
    2 GPUs, with each synthesised input scaled by x0.5 and x2 (one at a time); the thief's gain
    again in the authors' simulator's setting (Fig. 8's, :data:`SIMULATOR`) on each of Fig. 8's
    GPU counts wherever the input is not one of the micro-profiler's, which that setting does
    not have."""
    sc = load(scenario)
    variants: dict[str, dict[str, Any]] = {SCENARIO_POINT: {}}
    swept: dict[str, list[str]] = {}  # input -> its variants' names, x0.5 first
    for label, scale in SYNTHESISED.items():
        for factor in SWEEP_FACTORS:
            ov = scale(sc, factor)
            if ov is not None:
                variants[f"{label} x{factor:g}"] = ov
                swept.setdefault(label, []).append(f"{label} x{factor:g}")
    gain: dict[str, dict[int, float]] = {}
    worth: dict[str, dict[int, float]] = {}  # the thief above no retraining
    gain_sim: dict[str, dict[int, float]] = {}
    acc: dict[str, dict[int, dict[str, Any]]] = {}  # the table's accuracies
    for name, ov in variants.items():
        gain[name], worth[name], acc[name] = {}, {}, {}
        in_sim = not ov or not all(k.startswith("profiler.") for k in ov)
        for g in REGIME_GPUS:
            res = _run(
                ["thief", *UNIFORMS, "no-retrain"],
                scenario,
                episodes,
                track_a_min=not ov,  # scaled inputs may put a_MIN out of reach
                gpus=g,
                **ov,
            )
            u, best = _best_uniform({p: _acc(res, p) for p in UNIFORMS})
            thief, none = _acc(res, "thief")[0], _acc(res, "no-retrain")[0]
            gain[name][g], worth[name][g] = thief - best, thief - none
            acc[name][g] = {"thief": thief, "best": best, "best_uniform": u, "none": none}
            log(f"  (g) {name}, {g} GPU(s): thief {thief:.3f}, best uniform {best:.3f}")
        for g in GPU_COUNTS if in_sim else ():  # Fig. 8's claim: at every GPU count
            res = _run(
                ["thief", *UNIFORMS],
                scenario,
                episodes,
                track_a_min=False,
                gpus=g,
                **{**ov, **SIMULATOR},
            )
            best = _best_uniform({p: _acc(res, p) for p in UNIFORMS})[1]
            gain_sim.setdefault(name, {})[g] = _acc(res, "thief")[0] - best
    lo = {g: min(v[g] for v in gain.values()) for g in REGIME_GPUS}
    hi = {g: max(v[g] for v in gain.values()) for g in REGIME_GPUS}
    lo_sim = {g: min(v[g] for v in gain_sim.values()) for g in GPU_COUNTS}
    return {
        "acc": acc,
        "gain": gain,
        "worth": worth,
        "min": lo,
        "max": hi,
        "gain_sim": gain_sim,
        "min_sim": lo_sim,
        "swept": swept,
        **_testbed_claims_swept(scenario, episodes, variants, log),
    }


def _testbed_claims_swept(
    scenario: str, episodes: int, variants: dict[str, dict[str, Any]], log: Any
) -> dict[str, dict[str, float]]:
    """(g) for the claims judged on :data:`DELTA_GPUS` GPUs with the scenario's
    micro-profiler, at every sweep point: Fig. 10a's margin of the thief over the better of
    Ekya-FixedRes and Ekya-FixedConfig ((c)'s rule) and Fig. 11b's drop from exact estimates
    to noise of std 20% ((e)'s rule)."""
    ablation: dict[str, float] = {}
    noise: dict[str, float] = {}
    at20 = round(MAE_PER_STD * 0.2, 6)
    for name, ov in variants.items():
        kw = {"track_a_min": not ov, "gpus": DELTA_GPUS}
        res = _run(["thief", "ekya-fixedres", FIXEDCONFIG], scenario, episodes, **kw, **ov)
        ablation[name] = _acc(res, "thief")[0] - max(
            _acc(res, "ekya-fixedres")[0], _acc(res, FIXEDCONFIG)[0]
        )
        exact = _run(["thief"], scenario, episodes, **kw, **{**ov, "profiler.error": 0.0})
        noisy = _run(["thief"], scenario, episodes, **kw, **{**ov, "profiler.error": at20})
        noise[name] = _acc(exact, "thief")[0] - _acc(noisy, "thief")[0]
        log(
            f"  (g) {name}, {DELTA_GPUS} GPUs: Fig. 10a margin {100 * ablation[name]:+.1f}, "
            f"Fig. 11b drop {100 * noise[name]:.1f} points"
        )
    return {"ablation": ablation, "noise_drop": noise}


def search_sweep(scenario: str, episodes: int, log: Any) -> dict[str, Any]:
    """(h) The thief's steals and the exact search of its objective, with and without
    retraining (:data:`SEARCH`), at 10 streams on 1 and 2 GPUs."""
    acc: dict[int, dict[str, tuple[float, float]]] = {}
    for g in REGIME_GPUS:
        res = _run(SEARCH, scenario, episodes, track_a_min=False, gpus=g)
        acc[g] = {p: _acc(res, p) for p in SEARCH}
        log(f"  (h) {g} GPU(s): " + ", ".join(f"{p} {acc[g][p][0]:.3f}" for p in SEARCH))
    return {"acc": acc}


# ----------------------------------------------------------------------------- calibration
def calibration(scenario: str, seeds: int = CALIBRATION_SEEDS) -> dict[str, float]:
    """The inputs set from the paper's measurements, measured back from the environment:
    the micro-profiler's median absolute error (sampled estimator, ``seeds`` episodes), the
    accuracy lost without retraining (best post-retraining accuracy minus the never-retrained
    model's, per stream and window), the spread of retraining costs and the profiling cost of
    all streams in the first window."""
    sc = load(scenario)
    spec = ContinualSpec.from_scenario(sc)
    errors, gaps = [], []
    for seed in range(seeds):
        prof, est = sample_estimates(spec, np.random.default_rng(seed))
        errors.append(np.abs(est - prof.post_acc).ravel())
        gaps.append((prof.post_acc.max(axis=2) - prof.floor).ravel())
    gap = np.concatenate(gaps)
    cost = np.array([c.gpu_seconds for c in spec.retrain_configs])
    env = gym.make(ENV_ID, scenario=scenario).unwrapped
    env.reset(seed=0)
    snap = env.sim_state()
    return {
        "mae": float(np.median(np.concatenate(errors))),
        "mae_estimates": float(sum(e.size for e in errors)),
        "gap_max": float(gap.max()),
        "gap_mean": float(gap.mean()),
        "cost_spread": float(cost.max() / cost.min()),
        "profile_s": snap.reserved * spec.window_s,
        "quantum_s": spec.quantum * spec.window_s,
        "episodes": seeds,
    }


def table1_example(log: Any) -> dict[str, Any]:
    """Fig. 4 / Table 1 (scenario ekya-table1): the uniform scheduler and the thief on the
    scenario as given and at each point of :func:`table1_variants` (``sweep``: label -> the
    same two accuracies; as (g)'s, those runs stay out of the a_MIN table)."""
    table1 = load("ekya-table1")
    out: dict[str, Any] = {"sweep": {}}
    for label, ov in (("as given", {}), *table1_variants(table1).items()):
        policies = ["uniform-c1-50", "thief:delta=0.05"]
        res = _run(policies, "ekya-table1", 1, track_a_min=not ov, **ov)
        got = {"uniform": _acc(res, policies[0])[0], "thief": _acc(res, policies[1])[0]}
        if ov:
            out["sweep"][label] = got
        else:
            out.update(got)
        log(f"  Table 1 example, {label}: uniform {got['uniform']:.3f}, thief {got['thief']:.3f}")
    return out


def _scenario_overrides() -> list[dict[str, Any]]:
    """The scenario overrides the sections run with (besides the policies' own settings)."""
    return [
        *({"gpus": g, "streams": n} for g in SWEEP_GPUS for n in STREAM_COUNTS),
        *({"gpus": g} for g in GPU_COUNTS),
        *({"gpus": g, **SIMULATOR} for g in GPU_COUNTS),
        *({"gpus": DELTA_GPUS, "profiler.error": round(MAE_PER_STD * s, 6)} for s in NOISE_STDS),
        *({"gpus": g, **ov} for g in ABLATION_GPUS for ov in ABLATIONS.values()),
    ]


def scenario_problem(name: str) -> str | None:
    """Why scenario ``name`` (bundled name or YAML path) cannot run this reproduction, or None.

    Every section needs a continual-learning scenario with 10 streams (sections (b)-(e) run
    them as they are) whose profiles also fit 1-10 streams at 1 and 2 GPUs (section (a)) and
    the other overrides the sections apply; checked by validation only, without running.
    """
    path = Path(name)
    if path.suffix not in (".yaml", ".yml") and not path.exists() and name not in bundled():
        return "unknown scenario"
    try:
        sc = load(name)
    except ScenarioError as exc:
        return str(exc)
    if sc["family"] != "continual":
        return f"is a {sc['family']} scenario, not a continual-learning one"
    if sc["streams"] != STREAMS:
        return f"has {sc['streams']} streams, not {STREAMS}"
    src = Path(sc.source)
    raw = read_raw(src)  # validated below as load() does with overrides
    for overrides in _scenario_overrides():
        try:
            validate(apply_overrides(raw, overrides, src.name), src.name, src.parent)
        except ScenarioError as exc:
            setting = ", ".join(f"{k}={v}" for k, v in overrides.items())
            return f"does not fit {setting} ({exc})"
    quanta = EXACT_GPUS / ContinualSpec.from_scenario(sc).quantum
    if quanta > MAX_EXACT_QUANTA + 1e-9:
        return (
            f"has {quanta:.0f} quanta of GPU on {EXACT_GPUS} GPUs; the exact search of (d) and "
            f"(h) takes at most {MAX_EXACT_QUANTA} (a coarser hardware.share_quantum)"
        )
    return None


def _scenario_error(name: str, problem: str) -> str:
    fits = [n for n in bundled() if n != name and scenario_problem(n) is None]
    return (
        f"--scenario {name}: {problem}; this reproduction needs a continual-learning scenario "
        f"with {STREAMS} streams whose profiles also fit 1 to {STREAMS} streams "
        f"(bundled: {', '.join(fits) or 'none'}, or such a .yaml file)"
    )


def _seeds_text(episodes: int) -> str:
    """``"3 seeded episodes per point, seeds 0..2"``: the seeds :func:`_run` evaluates."""
    seeds = claims_table.seeds_text(PARALLEL["seed"], episodes)
    return f"{episodes} seeded episode{'s' if episodes > 1 else ''} per point, {seeds}"


def _arguments(argv: list[str] | None) -> tuple[argparse.Namespace, Path] | str:
    """The parsed arguments and the checked output folder, or the problem with them."""
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__)
    ap.add_argument(
        "--scenario",
        default="ekya-cityscapes",
        help="a continual-learning scenario with 10 streams (default ekya-cityscapes; "
        "ekya-waymo also fits)",
    )
    ap.add_argument("--episodes", type=int, default=3, help="seeded episodes per point (>= 1)")
    claims_table.add_first_seed_argument(ap)
    ap.add_argument(
        "--quick", action="store_true", help=claims_table.QUICK_HELP + " (one episode per point)"
    )
    claims_table.add_output_arguments(ap, "report and figure folder", quick=True)
    ap.add_argument(
        "--render-only",
        action="store_true",
        help="rewrite the report, its figures and the claims from the saved ekya-runs.json "
        "without running anything",
    )
    add_parallel_arguments(ap, "episode", workers=None)
    args = ap.parse_args(argv)
    args.out = claims_table.out_folder(args)
    if args.episodes < 1:  # checked before --quick sets it, so a bad value is never hidden
        return f"--episodes must be >= 1, got {args.episodes}"
    if problem := claims_table.first_seed_problem(args.first_seed):
        return problem
    if args.quick:
        args.episodes = 1
    if problem := ray_problem(args.ray):
        return problem
    written = claims_table.rendered_outputs(OUTPUTS) if args.render_only else OUTPUTS
    try:
        out = claims_table.check_out(args.out, written, args.force, smoke=args.quick)
    except ValueError as exc:
        return str(exc)
    if args.render_only:
        return args, out
    problem = scenario_problem(args.scenario)
    if problem is not None:
        return _scenario_error(args.scenario, problem)
    return args, out


def _sections(sc: str, ep: int, log: Any) -> dict[str, Any]:
    """Every section's measurements, in the report's order (their tables are written from
    them, :func:`edgegym.reproduce.ekya_tables.section_texts`)."""
    r: dict[str, Any] = {}
    log("calibration")
    r["c"] = calibration(sc)
    log("(a) streams sweep")
    r["a"] = streams_sweep(sc, ep, log)
    log("(b, c) GPU sweep")
    r["b"] = gpus_sweep(sc, ep, log)
    log("(d) Delta sweep")
    r["d"] = delta_sweep(sc, ep, log)
    log("(e) noise sweep")
    r["e"] = noise_sweep(sc, ep, log)
    log("(f) micro-profiler mechanics")
    r["f"] = profiler_ablation(sc, ep, log)
    log("(g) synthesised inputs swept")
    r["g"] = synthesised_sweep(sc, ep, log)
    log("(h) the thief's search, with and without retraining")
    r["h"] = search_sweep(sc, ep, log)
    r["t1"] = table1_example(log)
    return r


def _claims_text(claims: list[Claim]) -> str:
    return table(
        ["where", "claim", "paper", "edgegym", "role", "holds", "rule / why not"],
        [
            [
                x.figure,
                x.claim,
                str(x.paper_value),
                str(x.edgegym_value),
                x.role,
                claims_table.holds_cell(x),
                (x.test if x.holds else x.why).replace("|", "/"),
            ]
            for x in claims
        ],
    )


def regenerate_command(scenario: str, episodes: int, out: str | Path, first_seed: int = 0) -> str:
    """The command that writes this report again: the module with the options a run was
    given where they are not the defaults."""
    parts = [PROG]
    if scenario != "ekya-cityscapes":
        parts += ["--scenario", scenario]
    parts += claims_table.seed_options(episodes, 3, first_seed, "--episodes")
    if Path(out) != Path(claims_table.default_out(first_seed)):
        parts += ["--out", str(out)]
    return " ".join(parts)


def _report(
    r: dict[str, Any], texts: dict[str, str], claims: list[Claim], run: dict[str, Any]
) -> str:
    """The report: :data:`REPORT` filled from the sections' results and their tables
    (``texts``, :func:`edgegym.reproduce.ekya_tables.section_texts`), the claims and what
    :func:`_run_facts` recorded of the run."""
    a, b, c, d, e = r["a"], r["b"], r["c"], r["d"], r["e"]

    def saving(fig8: dict) -> str:
        return f"{fig8['saving']:.0f}x" if fig8["saving"] else "not reached within 16 GPUs"

    def beats(fig8: dict) -> str:
        return ", ".join(
            f"{k} GPU{'s' if k > 1 else ''}: {'yes' if v > 0 else 'NO'}"
            for k, v in fig8["margin"].items()
        )

    return REPORT.format(
        command=run["command"],
        date=run["date"],
        machine=run["machine"],
        cores=run["cores"],
        minutes=run["minutes"],
        scenario=run["scenario"],
        seeds=_seeds_text(run["episodes"]),
        mae=100 * c["mae"],
        gap_max=100 * c["gap_max"],
        gap_mean=100 * c["gap_mean"],
        profile_s=c["profile_s"],
        held_count=claims_table.held_count(claims),
        claims_text=_claims_text(claims),
        a_text=texts["a"],
        gain1=100 * a["gain_1gpu"],
        gain2=100 * a["gain_2gpu"],
        b_text=texts["b"],
        b_sim_text=texts["b_sim"],
        saving=saving(b),
        saving_sim=saving(b["sim"]),
        beats=beats(b),
        beats_sim=beats(b["sim"]),
        d_text=texts["d"],
        dgain=100 * d["gain"],
        dgain_literal=100 * d["gain_literal"],
        dexact=100 * (d["exact"][0] - d["acc"]["default"][0][0]),
        e_text=texts["e"],
        drop20=100 * noise_drop(e)[2],
        f_text=texts["f"],
        g_text=texts["g"],
        h_text=texts["h"],
        t1_text=texts["t1"],
        below_a_min=table(
            ["scheduler", "worst episode: stream-time below a_MIN (%)"],
            [
                [_FAMILY_LABELS.get(k, LABELS.get(k, k)), f"{100 * v:.2f}"]
                for k, v in sorted(BELOW_A_MIN.items(), key=lambda kv: kv[0] != "thief")
            ],
        ),
    )


#: What :func:`_run_facts` records of a run (``ekya-runs.json``'s ``run``).
RUN_KEYS = (
    "scenario",
    "episodes",
    "first_seed",
    "quick",
    "command",
    "date",
    "machine",
    "cores",
    "minutes",
)


def _run_facts(args: argparse.Namespace, minutes: float) -> dict[str, Any]:
    """What the report says of a run besides its measurements: its scenario, episodes and
    seeds, whether it was a smoke run, the command that repeats it, and where, when and how
    long it ran."""
    return {
        "scenario": args.scenario,
        "episodes": args.episodes,
        "first_seed": args.first_seed,
        "quick": bool(args.quick),
        "command": regenerate_command(args.scenario, args.episodes, args.out, args.first_seed),
        "date": dt.date.today().isoformat(),
        "machine": f"{platform.machine()}, {platform.system()}",
        "cores": os.cpu_count(),
        "minutes": minutes,
    }


def _int_keys(pairs: list[tuple[str, Any]]) -> dict[Any, Any]:
    """A JSON object with its integer keys (GPU and stream counts) back as ints."""
    return {int(k) if k.isdigit() else k: v for k, v in pairs}


#: The sections of a run (:func:`_sections`; ``t1``: Table 1's example).
SECTIONS = (*"abcdefgh", "t1")
#: What the report reads of ``ekya-runs.json``: the run's facts (:func:`_run_facts`), the
#: time below a_MIN per policy and each section's measurements, nested as the section keeps
#: them, every leaf a number (the sweep's, ``g``, also names its points and best variants).
_SAVED = Record(
    {
        "run": Record(
            {
                **{k: TEXT for k in ("scenario", "command", "date", "machine")},
                **{k: INT for k in ("episodes", "first_seed")},
                "cores": Maybe(INT),
                "quick": BOOL,
                "minutes": NUM,
            },
            required=RUN_KEYS,
        ),
        "below_a_min": MapOf(NUM),
        "sections": Record({"g": Tree(OneOf(NUM, TEXT))}, required=SECTIONS, rest=Tree(NUM)),
    },
    required=("run", "below_a_min", "sections"),
)


def _load_runs(out: Path) -> dict[str, Any]:
    """The saved ``ekya-runs.json`` in ``out``, for ``--render-only``: the run's facts, the
    time below a_MIN, every section's measurements and the tables and figures drawn from them
    (JSON text only, read by :func:`edgegym.reproduce.claims.read_runs`, of the shape the
    report reads, :data:`_SAVED`)."""

    def pick(saved: dict[str, Any]) -> dict[str, Any]:
        run = {k: saved["run"][k] for k in RUN_KEYS}  # a missing one: not a saved run
        sections = saved["sections"]
        sections["t1"]["sweep"]  # the claims read it (a run of an older version has none)
        return {
            "run": run,
            "below_a_min": saved["below_a_min"],
            "sections": sections,
            "texts": section_texts(sections),  # read before anything is written
            "figures": figure_inputs(sections),
        }

    return claims_table.read_runs(
        out / "ekya-runs.json", pick, object_pairs_hook=_int_keys, shape=_SAVED
    )


def main(argv: list[str] | None = None) -> int:
    """Run every section (or read them, ``--render-only``), draw the figures, write the report
    and the paper's claims records.

    Returns:
        The exit code: 0 success, 2 bad arguments (one ``error:`` line on stderr, checked
        before any work starts).
    """
    parsed = _arguments(argv)
    if isinstance(parsed, str):
        print(f"{PROG}: error: {parsed}", file=sys.stderr)
        return 2
    args, out = parsed

    def log(msg: str) -> None:
        print(msg, file=sys.stderr, flush=True)

    BELOW_A_MIN.clear()
    if args.render_only:
        try:
            saved = _load_runs(out)
        except ValueError as exc:
            print(f"{PROG}: error: {exc}", file=sys.stderr)
            return 2
        run, r, texts, figures = saved["run"], saved["sections"], saved["texts"], saved["figures"]
        PARALLEL["seed"] = run["first_seed"]
        BELOW_A_MIN.update(saved["below_a_min"])
    else:
        PARALLEL["ray"], PARALLEL["seed"] = args.ray, args.first_seed
        out.mkdir(parents=True, exist_ok=True)
        t0 = time.time()
        with claims_table.smoke_run(args.quick):  # all of a quick run's work is a smoke run
            r = _sections(args.scenario, args.episodes, log)
        run = _run_facts(args, (time.time() - t0) / 60)
        runs = {"run": run, "below_a_min": BELOW_A_MIN, "sections": r}
        write_json(out / "ekya-runs.json", runs, "ekya-runs", indent=0)
        texts, figures = section_texts(r), figure_inputs(r)

    def write() -> None:
        draw(figures, run["scenario"], out)
        with claims_table.smoke_run(run["quick"]):  # a quick run's claims are smoke checks
            seeds = _seeds_text(run["episodes"])
            a, b, c, d, e, f, g, h = (r[k] for k in "abcdefgh")
            claims = judge(run["scenario"], seeds, a, b, c, d, e, f, g, h, r["t1"])
            write_text(out / "ekya.md", _report(r, texts, claims, run), "report")
            claims_table.update("ekya", claims, out)

    if claims_table.write_report(PROG, out / "ekya-runs.json", args.render_only, write):
        return 2
    minutes = run["minutes"]
    took = f"from the saved run of {minutes:.1f} min" if args.render_only else f"{minutes:.1f} min"
    log(f"wrote {out / 'ekya.md'} and the ekya claims in {out / 'claims.json'} ({took})")
    return 0


if __name__ == "__main__":
    raise SystemExit(run_command(main, PROG))

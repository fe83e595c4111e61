"""Leaderboard: every policy of every family on its bundled scenarios, same seeds, one report.

``python -m edgegym.leaderboard`` (or ``edgegym leaderboard``) evaluates, per family, every
registered baseline of the family (:data:`edgegym.baselines.POLICIES`), ``random`` and the
shipped PPO policy (``agents/trained/<family>/model.zip``, when there is one) on the family's
scenarios over the same seeded episodes, and writes to ``--out`` (default ``docs/``)::

    leaderboard.md             per family and scenario: mean ± std of the return (the
                               environment's objective) and of the family's headline metrics,
                               the PPO's gap to the best baseline, its training budget and wall
                               time; a summary of PPO against random / no-retrain / the best
                               baseline on each family's default scenario
    leaderboard.json           every result (written after each scenario, so a failure or
                               Ctrl-C midway loses nothing; ``--resume`` skips what is done,
                               ``--render-only`` rewrites the report from it)
    leaderboard-<family>.png   one figure per family: mean return ± std per policy and scenario

Scenarios: every bundled scenario of the family, except ``mig`` (:data:`DEFAULT_SCENARIOS`:
the eight four-window workloads W1-W8; ``--scenarios all`` runs all sixteen). ``--quick`` runs
each family's default scenario only, two episodes, DAG at 200 requests
(:data:`QUICK_OVERRIDES`), and writes to ``runs/leaderboard-quick`` unless ``--out`` says
otherwise.

``--workers N`` runs every (scenario, policy, seed) episode as a job of a local process pool,
``--ray [ADDR]`` as a Ray task (a local cluster, or ``auto`` / ``host:port``; docs/ray.md);
the numbers are those of the serial run.

A run merges into an existing ``leaderboard.json``: the scenarios it evaluates are replaced,
the others kept (so ``--families dag`` refreshes one family); ``--fresh`` starts over.

Example::

    python -m edgegym.leaderboard                       # all families, 5 episodes
    python -m edgegym.leaderboard --families dag --set dag:requests=200
    python -m edgegym.leaderboard --scenarios ekya-cityscapes,migrator-w1 --episodes 3
    python -m edgegym.leaderboard --render-only         # rewrite docs/leaderboard.md
    python -m edgegym.leaderboard --ray auto            # on the cluster of `ray start --head`
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import json
import math
import os
import platform
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from edgegym.core.registry import FAMILIES
from edgegym.outputs import MARKER, check_output_folder, save_figure, write_json, write_text

#: Scenarios per family when ``--scenarios`` is not given (``None``: every bundled one).
#: MIGRator plans every window with branch and bound, so the mig family runs its eight
#: four-window workloads (W1-W8, one per model pair) rather than all sixteen.
DEFAULT_SCENARIOS: dict[str, tuple[str, ...] | None] = {
    "continual": None,
    "mig": tuple(f"migrator-w{k}" for k in range(1, 9)),
    "energy": None,
    "dag": None,
}

#: Scenario overrides per family in a default run (none: the scenarios as bundled).
DEFAULT_OVERRIDES: dict[str, dict[str, Any]] = {}

#: Held-out variants per family, run after its bundled scenarios in a default run: bundled
#: scenarios at sizes the shipped agents were not trained on (issue 16), named
#: ``SCENARIO@KEY=VALUE,...`` (``--scenarios`` takes such names too).
HELD_OUT: dict[str, tuple[str, ...]] = {
    "continual": ("ekya-waymo@streams=6,gpus=2", "ekya-cityscapes@streams=14,gpus=2"),
    "energy": ("etf-dynamic-3@unit_s=0.0075", "etf-tx2-resnet50-mobilenetv2@unit_s=0.0025"),
    "dag": ("srs-edge-5apps@count=4",),
}

#: ``--quick``: scenario overrides per family (the DAG family at 200 of its 1000 requests).
QUICK_OVERRIDES: dict[str, dict[str, Any]] = {"dag": {"requests": 200}}
QUICK_EPISODES = 2

#: Reference policies named in the summary (beside the best baseline), where a family has them.
REFERENCES = ("random", "no-retrain")

JSON_NAME = "leaderboard.json"
MD_NAME = "leaderboard.md"
SCHEMA = 1


class LeaderboardError(ValueError):
    """Bad leaderboard arguments (unknown family or scenario, malformed override)."""


# ----------------------------------------------------------------------------- selection


def _repo_relative(text: str) -> str:
    """``text`` with the repository's (and the working folder's) absolute prefix removed.

    Reasons quote file paths; stored relative, the JSON and the page read the same from any
    checkout.
    """
    root = str(Path(__file__).resolve().parent.parent) + os.sep
    return text.replace(root, "").replace(str(Path.cwd().resolve()) + os.sep, "")


def families() -> dict[str, str]:
    """Family -> environment id, in registration order."""
    from edgegym.core.registry import ENV_IDS

    return {fam: env_id for env_id, (_, fam, _, _) in ENV_IDS.items()}


def default_scenario_of(family: str) -> str:
    """The default scenario of a family's environment."""
    from edgegym.core.registry import ENV_IDS

    return ENV_IDS[families()[family]][2]


def bundled_scenarios(family: str) -> list[str]:
    """The bundled scenarios of a family: its default first, then by name."""
    from edgegym.scenarios import _bundled_dir, bundled

    out = []
    for name in bundled():
        try:
            data = yaml.safe_load((_bundled_dir() / f"{name}.yaml").read_text())
        except (OSError, yaml.YAMLError):
            continue
        if isinstance(data, dict) and data.get("family") == family:
            out.append(name)
    default = default_scenario_of(family)
    return sorted(out, key=lambda n: (n != default, _natural(n)))


def _natural(name: str) -> tuple[Any, ...]:
    """Sort key with numbers compared as numbers (migrator-w2 before migrator-w10)."""
    import re

    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name))


def family_policies(family: str) -> list[str]:
    """The registered policies of a family (baselines and ``random``), in registry order."""
    from edgegym.baselines import POLICIES

    return [name for name, (_, fams, _) in POLICIES.items() if family in fams]


def shipped_info(family: str) -> dict[str, Any] | None:
    """What the leaderboard reports about a family's shipped PPO, or ``None`` if none.

    Keys: ``path``, ``sha256``, ``algo``, ``scenario``, ``overrides``, ``seed``,
    ``timesteps``, ``wall_s``, ``n_envs``, ``hyperparams_file``, ``hyperparam_overrides``,
    ``net_arch``, ``size_bytes``, ``notes`` (from the ``shipped`` record that
    ``python -m edgegym.agents.ship`` writes, else from the training runs).
    """
    from edgegym.agents.policy import shipped_path

    path = shipped_path(family)
    if not path.is_file():
        return None
    info: dict[str, Any] = {
        "path": _display_path(path),
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "size_bytes": path.stat().st_size,
    }
    cfg_path = path.parent / "config.yaml"
    try:
        cfg = yaml.safe_load(cfg_path.read_text())
    except (OSError, yaml.YAMLError):
        cfg = None
    if not isinstance(cfg, dict):
        info["error"] = f"no readable {_display_path(cfg_path)}"
        return info
    from edgegym.agents.ship import training_record

    record = training_record(cfg)
    shipped = cfg.get("shipped") if isinstance(cfg.get("shipped"), dict) else {}
    hp = cfg.get("hyperparams") or {}
    info.update(
        {
            "algo": hp.get("algo"),
            "scenario": cfg.get("scenario"),
            "overrides": cfg.get("overrides") or {},
            "seed": cfg.get("seed"),
            "timesteps": shipped.get("timesteps", record["timesteps"]),
            "wall_s": shipped.get("wall_s", record["wall_s"]),
            "n_envs": shipped.get("n_envs", record["n_envs"]),
            "hyperparams_file": cfg.get("hyperparams_file"),
            "hyperparam_overrides": cfg.get("hyperparam_overrides") or {},
            "net_arch": (hp.get("policy_kwargs") or {}).get("net_arch"),
            "model": shipped.get("model", "model.zip"),
            "selected": shipped.get("selected"),
            "notes": list(shipped.get("notes") or []),
            "policy_class": cfg.get("policy_class"),
            "strong_start": (cfg.get("bc") or {}).get("teacher"),
            "teacher_action": (hp.get("wrappers") or {}).get("teacher"),
            "trained_on": [cfg.get("scenario")]
            + [
                s if isinstance(s, str) else s.get("scenario")
                for s in (hp.get("train") or {}).get("scenarios") or []
            ],
        }
    )
    return info


def _display_path(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def parse_family_sets(items: Sequence[str] | None) -> dict[str, dict[str, str]]:
    """``FAMILY:KEY=VALUE`` items -> ``{family: {key: value}}``.

    Raises:
        LeaderboardError: An item without a known family prefix or without ``key=value``.
    """
    out: dict[str, dict[str, str]] = {}
    known = families()
    for item in items or []:
        fam, colon, rest = item.partition(":")
        key, eq, value = rest.partition("=")
        if not colon or not eq or not key.strip() or not value.strip():
            raise LeaderboardError(
                f"malformed --set {item!r} (expected FAMILY:KEY=VALUE, e.g. dag:requests=200)"
            )
        if fam.strip() not in known:
            raise LeaderboardError(
                f"--set {item!r}: unknown family {fam.strip()!r} ({', '.join(known)})"
            )
        out.setdefault(fam.strip(), {})[key.strip()] = value.strip()
    return out


def split_variant(name: str) -> tuple[str, dict[str, Any]]:
    """``"ekya-waymo@streams=6,gpus=2"`` -> ``("ekya-waymo", {"streams": 6, "gpus": 2})``.

    Raises:
        LeaderboardError: An override that is not ``KEY=VALUE``.
    """
    base, _, spec = name.partition("@")
    extra: dict[str, Any] = {}
    for item in spec.split(",") if spec else []:
        key, eq, value = item.partition("=")
        if not eq or not key.strip():
            raise LeaderboardError(f"scenario variant {name!r}: {item!r} is not KEY=VALUE")
        extra[key.strip()] = yaml.safe_load(value)
    return base, extra


def _cell_inputs(scenario: str, overrides: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The bundled scenario and the overrides a cell (maybe a variant) is evaluated with."""
    base, extra = split_variant(scenario)
    return base, {**dict(overrides), **extra}


def _split(items: Sequence[str] | None) -> list[str]:
    return [p.strip() for item in items or [] for p in item.split(",") if p.strip()]


def plan(
    family_names: Sequence[str] | None = None,
    scenarios: Sequence[str] | None = None,
    quick: bool = False,
) -> list[tuple[str, str]]:
    """The ``(family, scenario)`` cells of a run, in report order.

    Args:
        family_names: Families to run (default: all).
        scenarios: Scenario names (default: :data:`DEFAULT_SCENARIOS`; ``["all"]``: every
            bundled scenario). Named scenarios also pick their families.
        quick: Only each family's default scenario (unless ``scenarios`` says otherwise).

    Raises:
        LeaderboardError: An unknown family or scenario.
    """
    known = families()
    fams = list(family_names or [])
    for f in fams:
        if f not in known:
            raise LeaderboardError(f"unknown family {f!r}; families: {', '.join(known)}")
    by_family = {f: bundled_scenarios(f) for f in known}
    cells: list[tuple[str, str]] = []
    if scenarios and list(scenarios) != ["all"]:
        owner = {s: f for f, names in by_family.items() for s in names}
        for s in scenarios:
            base = split_variant(s)[0]
            if base not in owner:
                raise LeaderboardError(
                    f"unknown scenario {base!r}; bundled: {', '.join(sorted(owner, key=_natural))}"
                )
            if fams and owner[base] not in fams:
                raise LeaderboardError(f"scenario {s!r} is of family {owner[base]!r}, not selected")
        for f in known:
            cells += [(f, s) for s in by_family[f] if s in scenarios]
            cells += [(f, s) for s in scenarios if "@" in s and owner[split_variant(s)[0]] == f]
        return cells
    for f in [k for k in known if not fams or k in fams]:  # report order
        if quick and not scenarios:
            names = [default_scenario_of(f)]
        elif scenarios == ["all"] or DEFAULT_SCENARIOS.get(f) is None:
            names = by_family[f]
        else:
            wanted = DEFAULT_SCENARIOS[f] or ()
            names = [s for s in by_family[f] if s in wanted]
        if not quick:
            names = [*names, *HELD_OUT.get(f, ())]
        cells += [(f, s) for s in names]
    return cells


# ----------------------------------------------------------------------------- running
def _slim(result_dict: dict[str, Any]) -> dict[str, Any]:
    """An evaluation result without per-episode metrics (seed, return, steps kept)."""
    out = dict(result_dict)
    out["results"] = []
    for r in result_dict["results"]:
        r = dict(r)
        r["per_episode"] = [
            {"seed": e["seed"], "return": e["return"], "steps": e["steps"]}
            for e in r.get("per_episode", [])
        ]
        out["results"].append(r)
    return out


def _usable(
    family: str,
    scenario: str,
    overrides: Mapping[str, Any],
    ppo: dict[str, Any] | None,
    only: Sequence[str] | None = None,
) -> tuple[str, list[str], list[str], dict[str, str]]:
    """``(env_id, wanted, usable, skipped)``: the policies of a cell (those in ``only``, if
    given), those that build on its scenario, and why the others do not."""
    from edgegym.baselines import make_policy
    from edgegym.evaluation import make_env

    env_id = families()[family]
    wanted = family_policies(family) + (["ppo"] if ppo is not None else [])
    if only is not None:
        wanted = [p for p in wanted if p in only]
    usable, skipped = [], {}
    probe = make_env(env_id, *_cell_inputs(scenario, overrides))
    try:
        for spec in wanted:
            try:
                make_policy(spec, probe)
            except ValueError as exc:  # PolicyLoadError, bad parameters
                skipped[spec] = _repo_relative(str(exc))
            else:
                usable.append(spec)
    finally:
        probe.close()
    return env_id, wanted, usable, skipped


def _cell(
    res: Any,
    family: str,
    wanted: list[str],
    skipped: dict[str, str],
    ppo: dict[str, Any] | None,
    episodes: int,
    wall_s: float,
) -> dict[str, Any]:
    cell = _slim(res.to_dict())
    cell.update(
        {
            "family": family,
            "policies": wanted,
            "skipped": skipped,
            "ppo": ppo,
            "episodes": episodes,
            "wall_s": round(wall_s, 2),
            "finished": _dt.datetime.now().isoformat(timespec="seconds"),
        }
    )
    return cell


def run_cell(
    family: str,
    scenario: str,
    episodes: int = 5,
    seed: int = 0,
    overrides: Mapping[str, Any] | None = None,
    progress: bool = True,
    ppo: dict[str, Any] | None = None,
    only: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Evaluate every policy of ``family`` (or those in ``only``) on one scenario.

    A policy that cannot be built on this scenario (a PPO trained on other spaces, a baseline
    that refuses the scenario) is listed under ``skipped`` with the reason; one that raises
    mid-episode keeps its finished episodes and an ``error`` (as in
    :func:`edgegym.evaluate`).

    Returns:
        The cell: the evaluator's JSON (per-episode metrics dropped) plus ``family``,
        ``policies``, ``skipped``, ``ppo`` (the shipped policy's record or ``None``),
        ``episodes``, ``wall_s`` and ``finished``.
    """
    from edgegym.evaluation import evaluate

    overrides = dict(overrides or {})
    env_id, wanted, usable, skipped = _usable(family, scenario, overrides, ppo, only)
    if not usable and only is not None:
        # Rerunning some rows, none of which can play here (an agent this scenario's spaces
        # refuse): the skip reasons are the new rows.
        finished = _dt.datetime.now().isoformat(timespec="seconds")
        return {"results": [], "skipped": skipped, "ppo": ppo, "wall_s": 0.0, "finished": finished}
    base, merged = _cell_inputs(scenario, overrides)
    t0 = time.perf_counter()
    res = evaluate(
        env_id,
        usable,
        scenario=base,
        episodes=episodes,
        seed=seed,
        overrides=merged,
        progress=progress,
    )
    res.scenario = scenario
    return _cell(res, family, wanted, skipped, ppo, episodes, time.perf_counter() - t0)


def _timed_episode(job: Any) -> tuple[dict[str, Any], float]:
    """:func:`edgegym.evaluation.run_episode_job` and its wall time (a worker's task)."""
    from edgegym.evaluation import run_episode_job

    t0 = time.perf_counter()
    outcome = run_episode_job(job)
    return outcome, time.perf_counter() - t0


def _error_cell(
    family: str, scenario: str, overrides: Mapping[str, Any], episodes: int, seed: int, exc: Any
) -> dict[str, Any]:
    return {
        "family": family,
        "scenario": scenario,
        "overrides": dict(overrides),
        "episodes": int(episodes),
        "seeds": [int(seed) + i for i in range(int(episodes))],
        "error": f"{type(exc).__name__}: {exc}",
        "finished": _dt.datetime.now().isoformat(timespec="seconds"),
    }


def run_cells_parallel(
    cells: Sequence[tuple[str, str]],
    runner: Any,
    episodes: int,
    seed: int,
    overrides: Mapping[str, Mapping[str, Any]],
    ppo: Mapping[str, dict[str, Any] | None],
) -> Any:
    """Yield ``(family, scenario, cell)`` as each cell's last episode finishes, with every
    (cell, policy, seed) episode a job of ``runner`` (:class:`edgegym.parallel.Runner`).

    The cells equal :func:`run_cell`'s (the episodes are seeded alike; see
    :func:`edgegym.evaluate`), except ``wall_s``: the sum of the cell's episode times.
    A cell whose policies cannot even be built comes first, as an error cell.
    """
    from edgegym.evaluation import EpisodeJob, EvalResult, summarise_outcomes

    seeds = [int(seed) + i for i in range(int(episodes))]
    jobs: list[tuple[int, int, int]] = []  # (cell, policy, seed index) per job
    episode_jobs: list[Any] = []
    plans: dict[int, tuple[str, list[str], list[str], dict[str, str]]] = {}
    for c, (family, scenario) in enumerate(cells):
        fam_over = dict(overrides.get(family, {}))
        try:
            plans[c] = _usable(family, scenario, fam_over, ppo[family])
        except Exception as exc:  # keep going: the other cells are still worth having
            yield family, scenario, _error_cell(family, scenario, fam_over, episodes, seed, exc)
            continue
        env_id, _, usable, _ = plans[c]
        base, merged = _cell_inputs(scenario, fam_over)
        for p, spec in enumerate(usable):
            for k, s in enumerate(seeds):
                jobs.append((c, p, k))
                episode_jobs.append(EpisodeJob(env_id, base, merged, None, spec, s))
    # Costliest first (MIGRator plans every window), so the slowest jobs do not come last.
    order = sorted(
        range(len(jobs)),
        key=lambda j: not str(episode_jobs[j].policy).startswith("migrator"),
    )
    left = {c: len(plans[c][2]) * len(seeds) for c in plans}
    outcomes: dict[int, dict[tuple[int, int], Any]] = {c: {} for c in plans}
    spent = dict.fromkeys(plans, 0.0)
    for c in [c for c, n in left.items() if n == 0]:  # no usable policy: an empty cell
        family, scenario = cells[c]
        env_id, wanted, _, skipped = plans[c]
        res = EvalResult(
            env_id, scenario, _cell_inputs(scenario, overrides.get(family, {}))[1], seeds
        )
        yield family, scenario, _cell(res, family, wanted, skipped, ppo[family], episodes, 0)
    for i, (outcome, seconds) in runner.imap_unordered(
        _timed_episode, [episode_jobs[j] for j in order]
    ):
        c, p, k = jobs[order[i]]
        outcomes[c][(p, k)] = outcome
        spent[c] += seconds
        left[c] -= 1
        if left[c]:
            continue
        family, scenario = cells[c]
        env_id, wanted, usable, skipped = plans[c]
        res = EvalResult(
            env_id, scenario, _cell_inputs(scenario, overrides.get(family, {}))[1], seeds
        )
        for p, name in enumerate(usable):
            mine = [outcomes[c][(p, k)] for k in range(len(seeds))]
            res.results.append(summarise_outcomes(name, mine))
        yield family, scenario, _cell(res, family, wanted, skipped, ppo[family], episodes, spent[c])


def _settings_key(
    family: str, episodes: int, seed: int, overrides: Mapping[str, Any], ppo: dict | None
) -> dict[str, Any]:
    return {
        "episodes": episodes,
        "seed": seed,
        "overrides": {k: str(v) for k, v in overrides.items()},
        "policies": family_policies(family) + (["ppo"] if ppo is not None else []),
        "ppo_sha256": None if ppo is None else ppo.get("sha256"),
    }


def _cell_key(cell: Mapping[str, Any]) -> dict[str, Any]:
    ppo = cell.get("ppo")
    return {
        "episodes": cell.get("episodes"),
        "seed": (cell.get("seeds") or [None])[0],
        "overrides": {k: str(v) for k, v in (cell.get("overrides") or {}).items()},
        "policies": list(cell.get("policies") or []),
        "ppo_sha256": None if ppo is None else ppo.get("sha256"),
    }


def _agent_only(have: Mapping[str, Any], want: Mapping[str, Any]) -> bool:
    """Whether two cell keys differ only in the shipped agent (its file's sha256)."""
    return {**have, "ppo_sha256": None} == {**want, "ppo_sha256": None}


def _with_agent(old: Mapping[str, Any], new: Mapping[str, Any]) -> dict[str, Any]:
    """``old`` (a finished cell) with its ``ppo`` row, skip reason and record replaced by
    those of ``new`` (the same cell, ``ppo`` alone, for a retrained agent); the baselines'
    rows are kept, since their settings and seeds are the same."""
    cell = dict(old)
    cell["results"] = [r for r in old["results"] if r["policy"] != "ppo"] + [
        r for r in new["results"] if r["policy"] == "ppo"
    ]
    cell["skipped"] = {k: v for k, v in old.get("skipped", {}).items() if k != "ppo"}
    cell["skipped"].update(new.get("skipped", {}))
    cell["ppo"] = new["ppo"]
    cell["wall_s"] = round(float(old.get("wall_s", 0.0)) + float(new.get("wall_s", 0.0)), 2)
    cell["finished"] = new["finished"]
    cell["agent_refreshed"] = new["finished"]
    return cell


def load_results(path: Path) -> dict[str, Any]:
    """A ``leaderboard.json`` (an empty one if the file does not exist).

    Raises:
        LeaderboardError: The file exists but is not a leaderboard.
    """
    if not path.is_file():
        return {"edgegym_leaderboard": SCHEMA, "cells": {}, "runs": []}
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise LeaderboardError(f"{path}: not readable as JSON: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), dict):
        raise LeaderboardError(f"{path}: not a leaderboard.json (no 'cells')")
    data.setdefault("runs", [])
    return data


def save_results(path: Path, data: Mapping[str, Any]) -> None:
    """Write ``leaderboard.json`` atomically (non-finite numbers become ``null``)."""
    from edgegym.evaluation import _jsonable

    write_json(path, _jsonable({k: v for k, v in data.items() if k != MARKER}), "leaderboard",
               indent=1)  # fmt: skip


def output_files() -> dict[str, str]:
    """Every file the leaderboard writes into its folder -> its kind of output."""
    figures = {f"leaderboard-{fam}.png": "figure" for fam in families()}
    return {JSON_NAME: "leaderboard", MD_NAME: "report", **figures}


def run(
    cells: Sequence[tuple[str, str]],
    out: str | Path = "docs",
    episodes: int = 5,
    seed: int = 0,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    resume: bool = False,
    fresh: bool = False,
    progress: bool = True,
    argv: Sequence[str] | None = None,
    workers: int = 1,
    ray: str | None = None,
) -> dict[str, Any]:
    """Evaluate ``cells``, saving ``leaderboard.json`` after each, then render the report.

    Args:
        cells: ``(family, scenario)`` pairs (see :func:`plan`).
        out: Output folder.
        episodes: Episodes per policy and scenario (seeds ``seed .. seed + episodes - 1``).
        seed: Seed of the first episode.
        overrides: Scenario overrides per family (``{"dag": {"requests": 200}}``).
        resume: Keep cells already in the JSON with the same settings, policies and PPO;
            where only the shipped agent changed (its file's sha256), rerun its rows alone
            and keep the baselines'.
        fresh: Discard the cells of an existing JSON (default: merge into it).
        progress: Progress bars (hidden when not on a terminal).
        argv: The command line, recorded in the JSON.
        workers: Local processes; with more than one (or ``ray``), every (scenario, policy,
            seed) episode is a job (:func:`run_cells_parallel`), and a cell is saved when
            its last episode finishes.
        ray: Run the episodes as Ray tasks on the cluster at this address (``"local"``,
            ``"auto"``, ``host:port``).

    Returns:
        The leaderboard data (as in ``leaderboard.json``).
    """
    from tqdm.auto import tqdm

    if isinstance(episodes, bool) or int(episodes) < 1:
        raise LeaderboardError(f"episodes must be >= 1, got {episodes}")
    if isinstance(seed, bool) or int(seed) < 0:
        raise LeaderboardError(f"seed must be >= 0, got {seed}")
    out = Path(out)
    path = out / JSON_NAME
    data = load_results(path)
    if fresh:
        data["cells"] = {}
    overrides = {f: dict(v) for f, v in (overrides or {}).items()}
    ppo = {f: shipped_info(f) for f in dict.fromkeys(f for f, _ in cells)}
    record = {
        "started": _dt.datetime.now().isoformat(timespec="seconds"),
        "argv": list(argv) if argv is not None else None,
        "cells": [f"{f}/{s}" for f, s in cells],
        "episodes": int(episodes),
        "seed": int(seed),
        "overrides": overrides,
        "machine": {
            "platform": platform.platform(),
            "cpu_count": os.cpu_count(),
            "python": platform.python_version(),
        },
    }
    data["runs"].append(record)
    t_run = time.perf_counter()
    failed: list[str] = []
    bar = tqdm(
        total=len(cells),
        desc="leaderboard",
        unit="scenario",
        disable=None if progress else True,
        file=sys.stderr,
        position=0,
    )
    todo: list[tuple[str, str]] = []
    refresh: list[tuple[str, str]] = []  # only the shipped agent changed: rerun its rows
    for family, scenario in cells:
        done = data["cells"].get(f"{family}/{scenario}")
        fam_over = overrides.get(family, {})
        want = _settings_key(family, int(episodes), int(seed), fam_over, ppo[family])
        have = _cell_key(done) if resume and done and "error" not in done else None
        if have == want:
            bar.update(1)
        elif have is not None and want["ppo_sha256"] and _agent_only(have, want):
            refresh.append((family, scenario))
        else:
            todo.append((family, scenario))

    def finish(family: str, scenario: str, cell: dict[str, Any]) -> None:
        key = f"{family}/{scenario}"
        if "error" in cell:
            failed.append(key)
        data["cells"][key] = cell
        record["wall_s"] = round(time.perf_counter() - t_run, 1)
        save_results(path, data)
        bar.write(f"  {key}: {_cell_line(cell)}", file=sys.stderr)
        bar.update(1)

    try:
        for family, scenario in refresh:
            bar.set_postfix_str(f"{family}/{scenario} (ppo)", refresh=True)
            key, fam_over = f"{family}/{scenario}", overrides.get(family, {})
            try:
                new = run_cell(
                    family, scenario, int(episodes), int(seed), fam_over, progress, ppo[family],
                    only=["ppo"],
                )  # fmt: skip
            except Exception as exc:  # keep going: the other cells are still worth having
                cell = _error_cell(family, scenario, fam_over, episodes, seed, exc)
            else:
                cell = _with_agent(data["cells"][key], new)
            finish(family, scenario, cell)
        if ray is not None or workers != 1:
            from edgegym.parallel import Runner

            runner = Runner(workers=workers, ray=ray)
            record["runner"] = runner.describe()
            bar.set_postfix_str(record["runner"], refresh=True)
            for family, scenario, cell in run_cells_parallel(
                todo, runner, int(episodes), int(seed), overrides, ppo
            ):
                finish(family, scenario, cell)
        else:
            for family, scenario in todo:
                bar.set_postfix_str(f"{family}/{scenario}", refresh=True)
                fam_over = overrides.get(family, {})
                try:
                    cell = run_cell(
                        family, scenario, int(episodes), int(seed), fam_over, progress, ppo[family]
                    )
                except Exception as exc:  # keep going: the other cells are still worth having
                    cell = _error_cell(family, scenario, fam_over, episodes, seed, exc)
                finish(family, scenario, cell)
        record["finished"] = _dt.datetime.now().isoformat(timespec="seconds")
    finally:
        bar.close()
        record["wall_s"] = round(time.perf_counter() - t_run, 1)
        if failed:
            record["failed"] = failed
        save_results(path, data)
        render(data, out)
    return data


def _cell_line(cell: Mapping[str, Any]) -> str:
    if "error" in cell:
        return f"failed: {cell['error']}"
    rows = _rows(cell)
    best = _best_baseline(rows)
    text = f"{cell.get('wall_s', 0):.0f} s"
    if best:
        text += f", best baseline {best['policy']} {best['mean_return']:.3f}"
    ppo = next((r for r in rows if r["policy"] == "ppo"), None)
    if ppo and ppo.get("mean_return") is not None:
        text += f", ppo {ppo['mean_return']:.3f}"
    return text


# ----------------------------------------------------------------------------- rendering
def _rows(cell: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The cell's results that have a return, best first."""
    rows = [r for r in cell.get("results", []) if r.get("mean_return") is not None]
    return sorted(rows, key=lambda r: -r["mean_return"])


def _best_baseline(rows: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    for r in rows:
        if r["policy"] not in ("ppo", "random") and "error" not in r:
            return r
    return None


def _fmt(x: float | None, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "–"
    return f"{x:.{digits}f}"


def _pm(m: Mapping[str, Any] | None, digits: int = 3, scale: float = 1.0) -> str:
    """``mean ± std``; one decimal when the mean is 100 or more in magnitude."""
    if not m or m.get("mean") is None:
        return "–"
    mean = m["mean"] * scale
    std = m.get("std")
    spread = None if std is None else std * scale
    if abs(mean) >= 100:
        digits = min(digits, 1)
    return f"{_fmt(mean, digits)} ± {_fmt(spread, digits)}"


def _gap(ppo: float, best: float) -> str:
    diff = ppo - best
    rel = f" ({100 * diff / abs(best):+.1f} %)" if best else ""
    return f"{diff:+.{1 if abs(best) >= 100 else 3}f}{rel}"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "–"
    seconds = float(seconds)
    if seconds < 120:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min"


def _metric_columns(cell: Mapping[str, Any]) -> list[tuple[str, str, float, int]]:
    """(metric key, column label, scale, digits) of the metrics any policy of the cell has."""
    from edgegym.evaluation import headline_metrics

    present: set[str] = set()
    for r in cell.get("results", []):
        present |= set((r.get("metrics") or {}).keys())
    cols = [(k, label, 1.0, 3) for k, label in headline_metrics() if k in present]
    for key, label, scale, digits in (
        ("accuracy", "accuracy", 1.0, 3),
        ("energy_j", "energy (kJ)", 1e-3, 3),
        ("retrainings", "retrainings", 1.0, 1),
    ):
        if key in present:
            cols.append((key, label, scale, digits))
    return cols


def _seeds_text(seeds: Sequence[int]) -> str:
    if not seeds:
        return "–"
    if len(seeds) > 1:
        return f"{seeds[0]}..{seeds[-1]}"
    return str(seeds[0])


def _overrides_text(overrides: Mapping[str, Any] | None) -> str:
    if not overrides:
        return "none"
    return ", ".join(f"`{k}={v}`" for k, v in overrides.items())


def _ppo_text(info: Mapping[str, Any] | None) -> str:
    if info is None:
        return "not shipped"
    return (
        f"{int(info.get('timesteps') or 0):,} timesteps, {info.get('n_envs', 1)} env(s), "
        f"{_duration(info.get('wall_s'))} wall time"
    )


def _stale(info: Mapping[str, Any] | None, family: str) -> bool:
    """True when the shipped model changed (or appeared) since the cell was evaluated."""
    now = shipped_info(family)
    then_sha = None if info is None else info.get("sha256")
    now_sha = None if now is None else now.get("sha256")
    return then_sha != now_sha


def _cell_table(cell: Mapping[str, Any], family: str) -> list[str]:
    rows = _rows(cell)
    cols = _metric_columns(cell)
    best = _best_baseline(rows)
    header = ["#", "policy", "return", *(label for _, label, _, _ in cols), "decision ms"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for rank, r in enumerate(rows, 1):
        name = r["policy"]
        label = f"**{name}**" if name == "ppo" else name
        if best is not None and name == best["policy"]:
            label += " (best baseline)"
        if "error" in r:
            label += " (!)"
        metrics = r.get("metrics") or {}
        dt = r.get("decision_time_s")
        lines.append(
            "| "
            + " | ".join(
                [
                    str(rank),
                    label,
                    _pm({"mean": r["mean_return"], "std": r.get("std_return")}),
                    *(_pm(metrics.get(k), d, s) for k, _, s, d in cols),
                    _fmt(None if dt is None else 1e3 * dt, 3),
                ]
            )
            + " |"
        )
    if cell.get("ppo") is None:
        blank = ["–"] * (len(header) - 2)
        lines.append("| " + " | ".join(["–", "ppo: not shipped", *blank]) + " |")
    notes = []
    ppo = next((r for r in rows if r["policy"] == "ppo"), None)
    if ppo is not None and best is not None:
        gap = _gap(ppo["mean_return"], best["mean_return"])
        notes.append(f"PPO − best baseline ({best['policy']}): {gap}.")
    for r in cell.get("results", []):
        if "error" in r:
            notes.append(f"(!) {r['policy']} failed after {r['episodes']} episode(s): {r['error']}")
    for name, why in (cell.get("skipped") or {}).items():
        why = _repo_relative(why)
        short = why if len(why) <= 400 else why[:399] + "…"
        notes.append(f"Not evaluated here: {name}: {short}")
    if _stale(cell.get("ppo"), family):
        notes.append(
            "The shipped PPO changed since this scenario was evaluated; re-run the leaderboard."
        )
    if notes:
        lines.append("")
        lines += [f"- {n}" for n in notes]
    return lines


def _summary(data: Mapping[str, Any], fams: Sequence[str]) -> list[str]:
    header = [
        "family",
        "default scenario",
        "PPO",
        "random",
        "no-retrain",
        "best baseline",
        "PPO − best",
        "PPO − published",
        "PPO beats random / no-retrain",
        "policy (strong start)",
        "training budget",
        "training wall time",
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for fam in fams:
        default = default_scenario_of(fam)
        cell = data["cells"].get(f"{fam}/{default}")
        if cell is None or "error" in cell:
            status = "not evaluated" if cell is None else "failed"
            lines.append(f"| {fam} | {default} | {status} |" + " |" * (len(header) - 3))
            continue
        rows = {r["policy"]: r for r in _rows(cell)}
        best = _best_baseline(_rows(cell))
        ppo = rows.get("ppo")
        info = cell.get("ppo")
        now = shipped_info(fam) if info is not None else None
        if now is not None and now.get("sha256") == info.get("sha256"):
            info = now  # the same model: its record as it reads now (fields added since)

        def ret(name: str, rows: Mapping[str, Any] = rows) -> str:
            r = rows.get(name)
            return "–" if r is None else _pm({"mean": r["mean_return"], "std": r["std_return"]})

        beats = []
        for ref in REFERENCES:
            if ref in rows and ppo is not None:
                beats.append("yes" if ppo["mean_return"] > rows[ref]["mean_return"] else "**no**")
            elif ref in rows:
                beats.append("–")
        lines.append(
            "| "
            + " | ".join(
                [
                    fam,
                    default,
                    ("**" + ret("ppo") + "**") if ppo else "not shipped",
                    ret("random"),
                    ret("no-retrain"),
                    "–" if best is None else f"{best['policy']} {ret(best['policy'])}",
                    "–"
                    if ppo is None or best is None
                    else _gap(ppo["mean_return"], best["mean_return"]),
                    _published_gap(fam, rows),
                    " / ".join(beats) if beats else "–",
                    _policy_text(info),
                    "–" if info is None else f"{int(info.get('timesteps') or 0):,} steps",
                    "–" if info is None else _duration(info.get("wall_s")),
                ]
            )
            + " |"
        )
    return lines


def _published_gap(family: str, rows: Mapping[str, Mapping[str, Any]]) -> str:
    """PPO against the family's published scheduler (its ``Family.default_policy``)."""
    fam = FAMILIES.get(family)
    name = fam.default_policy if fam is not None else None
    if name not in rows or "ppo" not in rows:
        return "–"
    return f"{_gap(rows['ppo']['mean_return'], rows[name]['mean_return'])} vs {name}"


def _policy_text(info: Mapping[str, Any] | None) -> str:
    if info is None:
        return "–"
    cls = info.get("policy_class") or "MLP"
    cls = {"MlpPolicy": "MLP", "MultiInputPolicy": "MLP"}.get(cls, cls)
    start, hint = info.get("strong_start"), info.get("teacher_action")
    parts = [f"{hint}'s decision as one action"] if hint else []
    parts += [f"BC from {start}"] if start else []
    return f"{cls} ({'; '.join(parts) or 'none'})"


def _dotted_items(tree: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """``{"ppo": {"ent_coef": 0.01}, "policy": "X"}`` -> ``[("ppo.ent_coef", 0.01),
    ("policy", "X")]`` (any depth)."""
    out: list[tuple[str, Any]] = []
    for key, value in tree.items():
        if isinstance(value, Mapping) and value:
            out += _dotted_items(value, f"{prefix}{key}.")
        else:
            out.append((f"{prefix}{key}", value))
    return out


def _family_header(fam: str, cells: Sequence[Mapping[str, Any]]) -> list[str]:
    info = next((c.get("ppo") for c in cells if c.get("ppo") is not None), None)
    now = shipped_info(fam) if info is not None else None
    if now is not None and now.get("sha256") == info.get("sha256"):
        info = {**info, "notes": now.get("notes") or []}  # same model, current notes
    if info is None:
        return [
            f"**Shipped PPO**: not shipped (no `agents/trained/{fam}/model.zip` when this family "
            "was evaluated).",
        ]
    over_text = _overrides_text(dict(_dotted_items(info.get("hyperparam_overrides") or {})))
    lines = [
        f"**Shipped PPO**: `{info.get('path')}` ({info.get('algo')}, "
        f"net {info.get('net_arch')}, {int(info.get('size_bytes') or 0) / 1e3:.0f} kB), trained "
        f"on `{info.get('scenario')}` (overrides: {_overrides_text(info.get('overrides'))}) "
        f"with seed {info.get('seed')}: {_ppo_text(info)} on this machine; hyperparameters "
        f"`agents/hyperparams/{info.get('hyperparams_file')}` with overrides {over_text}.",
    ]
    sel = info.get("selected")
    if isinstance(sel, dict):
        first = int(sel.get("seed") or 0)
        last = first + max(1, int(sel.get("episodes") or 1)) - 1
        lines[-1] += (
            f" Its weights are the run's `{info.get('model')}`: the best periodic evaluation, "
            f"at {int(sel.get('timesteps') or 0):,} timesteps (return {_fmt(sel.get('return'))} "
            f"on the held-out seeds {first}..{last}, not the seeds below)."
        )
    if info.get("notes"):
        lines += ["", "What was tried:", ""]
        lines += [f"- {n}" for n in info["notes"]]
    return lines


def render(data: Mapping[str, Any], out: str | Path = "docs") -> Path:
    """Write ``leaderboard.md`` and the figures from leaderboard data.

    Returns:
        The markdown path.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    known = families()
    cells_by_fam: dict[str, list[dict[str, Any]]] = {}
    for key, cell in data["cells"].items():
        fam = cell.get("family") or key.split("/", 1)[0]
        cells_by_fam.setdefault(fam, []).append(cell)
    fams = [f for f in known if f in cells_by_fam]
    for fam in fams:
        cells_by_fam[fam].sort(
            key=lambda c, f=fam: (
                c.get("scenario") != default_scenario_of(f),
                _natural(c["scenario"]),
            )
        )
    runs = [r for r in data.get("runs", []) if isinstance(r, dict)]
    last = runs[-1] if runs else {}
    total = sum(float(c.get("wall_s") or 0.0) for cs in cells_by_fam.values() for c in cs)
    machine = last.get("machine") or {}
    lines = [
        "# Leaderboard",
        "",
        "Every registered policy of each family — the published schedulers, `random`, and the "
        "shipped PPO agent (`agents/trained/<family>/`) — on the family's bundled scenarios, "
        "every policy on the same seeded episodes. **Return** is the environment's objective "
        "(higher is better; the DAG family's is minus its objective), mean ± std over "
        "episodes; the other columns are the family's headline metrics from the evaluator "
        "(`edgegym.evaluation.headline_metrics()`, then accuracy, energy, retrainings), and the "
        "policy's mean decision time. Policies are ranked by mean return.",
        "",
        "Generated by `python -m edgegym.leaderboard` from `leaderboard.json` (re-render with "
        "`--render-only`). Evaluation time of the scenarios below: "
        f"{_duration(total)} on {machine.get('cpu_count', '?')} CPU core(s) "
        f"({machine.get('platform', '?')}). Reproduce, train and ship: "
        "[agents.md](agents.md).",
        "",
        "## Shipped PPO on each family's default scenario",
        "",
        *_summary(data, fams),
        "",
        "*PPO − best* is the PPO's mean return minus the best baseline's (best registered "
        "policy other than `random` and `ppo`), relative to the latter in brackets; "
        "negative means the baseline wins; *PPO − published* the same against the family's "
        "published scheduler (thief, migrator, etf, mrs). *Policy*: `MLP` (flat, one "
        "scenario's spaces), `PerTenantPolicy` (shared per-tenant encoder and action heads on "
        "the full `MultiDiscrete`), `PooledPolicy` (shared per-tenant encoder, pooled, over "
        "the joint-action catalogue) or `GraphPolicy` (message passing over the DAG, a server "
        "scorer and per-task retraining heads); these play any number of tenants, GPUs or "
        "servers "
        "([agents.md](agents.md#agents-of-any-size)); the strong start is behaviour cloning "
        "from a baseline before PPO, where used. Training budget and wall time are those "
        "recorded in the shipped `config.yaml` (training on this 2-core machine, `nice`d, "
        "beside other jobs). An MLP agent plays the scenarios whose spaces match its training "
        "scenario (a transfer test); a per-tenant one every scenario whose configurations "
        "match, a pooled one any number of configurations too (missing ones read as pruned); "
        "elsewhere it is listed as not evaluated, with the reason. Scenarios named "
        "`SCENARIO@KEY=VALUE` are held-out variants (`HELD_OUT` in "
        "`edgegym/leaderboard.py`): sizes no shipped agent was trained on.",
    ]
    for fam in fams:
        env_id = known[fam]
        cells = cells_by_fam[fam]
        lines += ["", f"## {fam} — `{env_id}`", "", *_family_header(fam, cells), ""]
        figure = plot_family(fam, cells, out / f"leaderboard-{fam}.png")
        if figure is not None:
            lines += [f"![{fam}: mean return per policy and scenario]({figure.name})", ""]
        for cell in cells:
            scen = cell["scenario"]
            tag = " (default)" if scen == default_scenario_of(fam) else ""
            lines += [f"### {scen}{tag}", ""]
            seeds = cell.get("seeds") or []
            lines += [
                f"{len(seeds)} episode(s), seeds {_seeds_text(seeds)}; overrides: "
                f"{_overrides_text(cell.get('overrides'))}; evaluated {cell.get('finished', '?')}"
                f" in {_duration(cell.get('wall_s'))}.",
                "",
            ]
            if "error" in cell:
                lines += [f"Evaluation failed: {cell['error']}", ""]
                continue
            lines += [*_cell_table(cell, fam), ""]
    return write_text(out / MD_NAME, "\n".join(lines).rstrip() + "\n", "report")


def _zoom(means: np.ndarray, stds: np.ndarray, names: Sequence[str]) -> tuple[float, float]:
    """X limits that show the contenders' differences: policies far below the rest (random,
    typically) are left out of the range and marked at its edge instead."""
    lo_all, hi_all = means - stds, means + stds
    hi = float(hi_all.max())
    body = np.sort(means)[len(means) // 2 :]  # the better half decides the scale
    spread = max(float(body.max() - body.min()), 1e-9)
    inside = means >= body.min() - 4 * spread - float(stds.max())
    lo = float(lo_all[inside].min()) if inside.any() else float(lo_all.min())
    pad = 0.06 * max(hi - lo, 1e-9)
    return lo - pad, hi + pad


def plot_family(fam: str, cells: Sequence[Mapping[str, Any]], path: Path) -> Path | None:
    """Mean return ± std per policy (points), one panel per scenario; PPO and the best
    baseline coloured; a policy far below the others is marked at the panel's left edge."""
    cells = [c for c in cells if "error" not in c and _rows(c)]
    if not cells:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(cells)
    ncols = min(4, n)
    nrows = math.ceil(n / ncols)
    n_pol = max(len(_rows(c)) for c in cells)
    fig, axes = plt.subplots(
        nrows,
        ncols,
        figsize=(max(6.0, 4.2 * ncols), (0.26 * n_pol + 1.1) * nrows + 0.5),
        squeeze=False,
        layout="constrained",
    )
    for ax, cell in zip(axes.flat, cells, strict=False):
        rows = _rows(cell)[::-1]
        best = _best_baseline(_rows(cell))
        names = [r["policy"] for r in rows]
        means = np.array([r["mean_return"] for r in rows], dtype=float)
        stds = np.nan_to_num(np.array([r.get("std_return") or 0.0 for r in rows], dtype=float))
        lo, hi = _zoom(means, stds, names)
        for k, (name, m, sd) in enumerate(zip(names, means, stds, strict=True)):
            color = (
                "tab:orange"
                if name == "ppo"
                else "tab:green"
                if best is not None and name == best["policy"]
                else "0.55"
                if name == "random"
                else "tab:blue"
            )
            if m < lo:  # off the zoomed range: an arrow at the edge with the value
                ax.annotate(
                    f"◀ {m:.3g}",
                    (lo, k),
                    xytext=(2, 0),
                    textcoords="offset points",
                    va="center",
                    fontsize=6,
                    color=color,
                )
                continue
            ax.errorbar(m, k, xerr=sd, fmt="o", color=color, markersize=4, capsize=2, lw=1)
        ax.set_xlim(lo, hi)
        ax.set_ylim(-0.7, len(rows) - 0.3)
        ax.set_yticks(np.arange(len(rows)))
        labels = ax.set_yticklabels(names, fontsize=7)
        for label in labels:
            if label.get_text() == "ppo":
                label.set_fontweight("bold")
        ax.tick_params(axis="x", labelsize=7)
        scen = cell["scenario"]
        tag = " (default)" if scen == default_scenario_of(fam) else ""
        ax.set_title(f"{scen}{tag}", fontsize=9)
        ax.set_xlabel(f"return (mean ± std, {len(cell.get('seeds') or [])} ep.)", fontsize=7)
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    fig.suptitle(
        f"{fam} ({families()[fam]})\norange: shipped PPO, green: best baseline, grey: random",
        fontsize=9,
    )
    save_figure(fig, path, dpi=110)
    plt.close(fig)
    return path


# ----------------------------------------------------------------------------- command line
def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The leaderboard's options (shared by ``python -m edgegym.leaderboard`` and the CLI)."""
    parser.add_argument(
        "--families",
        action="append",
        metavar="F[,F]",
        help="families to run (continual, mig, energy, dag; default: all)",
    )
    parser.add_argument(
        "--scenarios",
        action="append",
        metavar="S[,S]",
        help="scenarios to run, or 'all' for every bundled one (default: every bundled "
        "scenario, mig: migrator-w1..w8)",
    )
    parser.add_argument(
        "--episodes", type=int, help="episodes per policy and scenario (default 5; --quick 2)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the first episode (0)")
    parser.add_argument(
        "--set",
        action="append",
        metavar="FAMILY:KEY=VALUE",
        help="scenario override for one family, e.g. dag:requests=200; repeatable",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="default scenario per family, 2 episodes, dag:requests=200, "
        "out runs/leaderboard-quick",
    )
    parser.add_argument("--out", metavar="DIR", help="output folder (default docs)")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="keep scenarios already done with these settings; where only the shipped agent "
        "changed, rerun its rows alone",
    )
    parser.add_argument(
        "--fresh", action="store_true", help="discard the existing leaderboard.json"
    )
    parser.add_argument(
        "--render-only",
        action="store_true",
        help="rewrite leaderboard.md and the figures from leaderboard.json",
    )
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    parser.add_argument(
        "--force",
        action="store_true",
        help="overwrite files in --out named like the leaderboard's outputs that edgegym did "
        "not write",
    )
    from edgegym.parallel import add_parallel_arguments

    add_parallel_arguments(parser, "(scenario, policy, seed) episode")


def run_args(args: argparse.Namespace, argv: Sequence[str] | None = None) -> int:
    """Run the leaderboard for parsed arguments; returns the exit code.

    Raises:
        LeaderboardError: Bad arguments.
    """
    out = Path(args.out or ("runs/leaderboard-quick" if args.quick else "docs"))
    try:
        check_output_folder(out, output_files(), force=args.force)
    except ValueError as exc:
        raise LeaderboardError(str(exc)) from None
    if args.render_only:
        data = load_results(out / JSON_NAME)
        if not data["cells"]:
            raise LeaderboardError(f"{out / JSON_NAME}: no results to render")
        md = render(data, out)
        print(f"wrote {md}")
        return 0
    episodes = args.episodes if args.episodes is not None else (QUICK_EPISODES if args.quick else 5)
    if episodes < 1:
        raise LeaderboardError(f"--episodes must be >= 1, got {episodes}")
    if args.seed < 0:
        raise LeaderboardError(f"--seed must be >= 0, got {args.seed}")
    if args.workers < 1:
        raise LeaderboardError(f"--workers must be >= 1, got {args.workers}")
    cells = plan(_split(args.families), _split(args.scenarios) or None, args.quick)
    overrides: dict[str, dict[str, Any]] = {
        f: dict(v) for f, v in (QUICK_OVERRIDES if args.quick else DEFAULT_OVERRIDES).items()
    }
    for fam, sets in parse_family_sets(args.set).items():
        overrides.setdefault(fam, {}).update(sets)
    from edgegym.scenarios import load

    for fam, scen in cells:  # bad overrides fail before any work
        if overrides.get(fam):
            load(scen, **overrides[fam])
    from edgegym.parallel import ray_problem

    if problem := ray_problem(args.ray):
        raise LeaderboardError(problem)
    data = run(
        cells,
        out=out,
        episodes=episodes,
        seed=args.seed,
        overrides=overrides,
        resume=args.resume,
        fresh=args.fresh,
        progress=not args.no_progress,
        argv=argv,
        workers=args.workers,
        ray=args.ray,
    )
    wall = data["runs"][-1].get("wall_s")
    print(f"wrote {out / MD_NAME}, {out / JSON_NAME} and the figures ({_duration(wall)})")
    failed = data["runs"][-1].get("failed") or []
    errors = [
        f"{k}: {r['policy']}"
        for k in (f"{f}/{s}" for f, s in cells)
        for r in data["cells"].get(k, {}).get("results", [])
        if "error" in r
    ]
    for item in failed + errors:
        print(f"edgegym leaderboard: error: {item} failed (see {out / MD_NAME})", file=sys.stderr)
    return 1 if failed or errors else 0


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m edgegym.leaderboard``; exit code 0, 1 (a scenario or policy failed), 2."""
    parser = argparse.ArgumentParser(
        prog="python -m edgegym.leaderboard",
        description="Evaluate every policy of every family on its bundled scenarios over the "
        "same seeds and write docs/leaderboard.md, leaderboard.json and one figure per family.",
    )
    add_arguments(parser)
    argv = list(argv) if argv is not None else sys.argv[1:]
    args = parser.parse_args(argv)
    try:
        return run_args(args, ["python", "-m", "edgegym.leaderboard", *argv])
    except ValueError as exc:  # LeaderboardError, ScenarioError
        print(f"edgegym leaderboard: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("edgegym leaderboard: interrupted (results so far are saved)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())

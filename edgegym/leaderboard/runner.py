"""Running the leaderboard's cells (scenario x policy x seeds) here, in a process pool or on
Ray, and merging them into ``leaderboard.json``."""

from __future__ import annotations

import datetime as _dt
import os
import platform
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from edgegym.evaluation import RESULT_ROW
from edgegym.inputs import load_json
from edgegym.jsonshape import (
    INT,
    LIST,
    LONG_TEXT,
    MAP,
    NUM,
    TEXT,
    ListOf,
    MapOf,
    Maybe,
    Record,
    check,
    check_depth,
)
from edgegym.leaderboard.render import best_baseline, cell_rows, render
from edgegym.leaderboard.selection import (
    JSON_NAME,
    MD_NAME,
    SCHEMA,
    LeaderboardError,
    cell_inputs,
    families,
    leaderboard_policies,
    repo_relative,
    shipped_info,
)
from edgegym.outputs import MARKER, read_output, write_json


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
    wanted = leaderboard_policies(family) + (["ppo"] if ppo is not None else [])
    if only is not None:
        wanted = [p for p in wanted if p in only]
    usable, skipped = [], {}
    probe = make_env(env_id, *cell_inputs(scenario, overrides))
    try:
        for spec in wanted:
            try:
                make_policy(spec, probe)
            except ValueError as exc:  # PolicyLoadError, bad parameters
                skipped[spec] = repo_relative(str(exc))
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
    base, merged = cell_inputs(scenario, overrides)
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
        base, merged = cell_inputs(scenario, fam_over)
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
            env_id, scenario, cell_inputs(scenario, overrides.get(family, {}))[1], seeds
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
            env_id, scenario, cell_inputs(scenario, overrides.get(family, {}))[1], seeds
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
        "policies": leaderboard_policies(family) + (["ppo"] if ppo is not None else []),
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
    cell["results"] = [r for r in old.get("results", []) if r["policy"] != "ppo"] + [
        r for r in new["results"] if r["policy"] == "ppo"
    ]
    cell["skipped"] = {k: v for k, v in (old.get("skipped") or {}).items() if k != "ppo"}
    cell["skipped"].update(new.get("skipped", {}))
    cell["ppo"] = new["ppo"]
    cell["wall_s"] = round(float(old.get("wall_s") or 0.0) + float(new.get("wall_s", 0.0)), 2)
    cell["finished"] = new["finished"]
    cell["agent_refreshed"] = new["finished"]
    return cell


#: What the renderer and ``--resume`` read of a ``leaderboard.json``
#: (:func:`edgegym.jsonshape.check`): the fields they index or format, by kind; a cell's rows
#: are an evaluation's (:data:`edgegym.evaluation.RESULT_ROW`).
_SELECTED = Record({k: Maybe(NUM) for k in ("seed", "episodes", "timesteps", "return")})
_PPO = Record(
    {
        "policy_class": Maybe(TEXT),
        **{k: Maybe(NUM) for k in ("timesteps", "init_from", "size_bytes", "wall_s")},
        "overrides": Maybe(MAP),
        "hyperparam_overrides": Maybe(MAP),
        "selected": Maybe(_SELECTED),
        "notes": Maybe(LIST),
    }
)
_CELL = Record(
    {
        "scenario": TEXT,
        "family": Maybe(TEXT),
        "results": ListOf(RESULT_ROW),
        "seeds": Maybe(ListOf(INT)),
        "overrides": Maybe(MAP),
        "skipped": Maybe(MapOf(LONG_TEXT)),
        "policies": Maybe(LIST),
        "ppo": Maybe(_PPO),
        "wall_s": Maybe(NUM),
    },
    required=("scenario",),
)
_LEADERBOARD = Record(
    {"cells": MapOf(_CELL), "runs": ListOf(Record({"machine": Maybe(MAP)}))},
    required=("cells",),
)


def load_results(path: Path) -> dict[str, Any]:
    """A ``leaderboard.json`` (an empty one if the file does not exist), read as an untrusted
    input: a regular file within the cap of a result (:func:`edgegym.outputs.read_output`),
    its fields of the kinds the renderer uses (:data:`_LEADERBOARD`).

    Raises:
        LeaderboardError: The file exists but is not a leaderboard (one line naming the file
            and the field, never its content).
    """
    if not os.path.lexists(path):
        return {"edgegym_leaderboard": SCHEMA, "cells": {}, "runs": []}
    try:
        data = load_json(read_output(path, "leaderboard"), path)
        check(check_depth(data, path), _LEADERBOARD, path)
    except (OSError, ValueError) as exc:  # InputError and ShapeError are ValueErrors
        raise LeaderboardError(str(exc)) from None  # it names the file
    data.setdefault("runs", [])
    return data


def save_results(path: Path, data: Mapping[str, Any]) -> None:
    """Write ``leaderboard.json`` atomically (non-finite numbers become ``null``)."""
    from edgegym.evaluation import jsonable

    write_json(path, jsonable({k: v for k, v in data.items() if k != MARKER}), "leaderboard",
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
    _check_settings(episodes, seed)
    out = Path(out)
    path = out / JSON_NAME
    data = load_results(path)
    if fresh:
        data["cells"] = {}
    overrides = {f: dict(v) for f, v in (overrides or {}).items()}
    ppo = {f: shipped_info(f) for f in dict.fromkeys(f for f, _ in cells)}
    record = _run_record(cells, episodes, seed, overrides, argv)
    data["runs"].append(record)
    t_run = time.perf_counter()
    failed: list[str] = []
    bar = _bar(len(cells), progress)
    todo, refresh, kept = _sort_cells(cells, data, overrides, episodes, seed, ppo, resume)
    bar.update(kept)

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
        _refresh_agents(refresh, data, episodes, seed, overrides, progress, ppo, finish, bar)
        _run_todo(todo, episodes, seed, overrides, progress, ppo, workers, ray, record, finish,
                  bar)  # fmt: skip
        record["finished"] = _dt.datetime.now().isoformat(timespec="seconds")
    finally:
        bar.close()
        record["wall_s"] = round(time.perf_counter() - t_run, 1)
        if failed:
            record["failed"] = failed
        save_results(path, data)
        render(data, out)
    return data


def _check_settings(episodes: int, seed: int) -> None:
    if isinstance(episodes, bool) or int(episodes) < 1:
        raise LeaderboardError(f"episodes must be >= 1, got {episodes}")
    if isinstance(seed, bool) or int(seed) < 0:
        raise LeaderboardError(f"seed must be >= 0, got {seed}")


def _bar(total: int, progress: bool) -> Any:
    """The run's progress over scenarios (on stderr; a line every 30 s off a terminal)."""
    from edgegym.progress import progress_bar

    return progress_bar(total, "leaderboard", "scenario", progress, position=0)


Finish = Callable[[str, str, dict[str, Any]], None]


def _refresh_agents(
    refresh: Sequence[tuple[str, str]],
    data: Mapping[str, Any],
    episodes: int,
    seed: int,
    overrides: Mapping[str, dict[str, Any]],
    progress: bool,
    ppo: Mapping[str, Any],
    finish: Finish,
    bar: Any,
) -> None:
    """Rerun only the shipped agent's rows of the cells whose agent changed (``--resume``)."""
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


def _run_todo(
    todo: Sequence[tuple[str, str]],
    episodes: int,
    seed: int,
    overrides: Mapping[str, dict[str, Any]],
    progress: bool,
    ppo: Mapping[str, Any],
    workers: int,
    ray: str | None,
    record: dict[str, Any],
    finish: Finish,
    bar: Any,
) -> None:
    """Evaluate the cells to run: one at a time here, or every episode as a job of a
    :class:`~edgegym.parallel.Runner` (more than one worker, or Ray)."""
    if ray is not None or workers != 1:
        from edgegym.parallel import Runner

        runner = Runner(workers=workers, ray=ray)
        record["runner"] = runner.describe()
        bar.set_postfix_str(record["runner"], refresh=True)
        for family, scenario, cell in run_cells_parallel(
            todo, runner, int(episodes), int(seed), overrides, ppo
        ):
            finish(family, scenario, cell)
        return
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


def _run_record(
    cells: Sequence[tuple[str, str]],
    episodes: int,
    seed: int,
    overrides: Mapping[str, Any],
    argv: Sequence[str] | None,
) -> dict[str, Any]:
    """The record of one run in ``leaderboard.json``'s ``runs``."""
    return {
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


def _sort_cells(
    cells: Sequence[tuple[str, str]],
    data: Mapping[str, Any],
    overrides: Mapping[str, Mapping[str, Any]],
    episodes: int,
    seed: int,
    ppo: Mapping[str, Any],
    resume: bool,
) -> tuple[list[tuple[str, str]], list[tuple[str, str]], int]:
    """``(to run, to refresh, kept)``: with ``resume``, a cell already in ``data`` with the
    same settings is kept; one where only the shipped agent changed (its file's sha256) is
    refreshed (its PPO rows rerun); every other cell runs."""
    todo: list[tuple[str, str]] = []
    refresh: list[tuple[str, str]] = []
    kept = 0
    for family, scenario in cells:
        done = data["cells"].get(f"{family}/{scenario}")
        fam_over = overrides.get(family, {})
        want = _settings_key(family, int(episodes), int(seed), fam_over, ppo[family])
        have = _cell_key(done) if resume and done and "error" not in done else None
        if have == want:
            kept += 1
        elif have is not None and want["ppo_sha256"] and _agent_only(have, want):
            refresh.append((family, scenario))
        else:
            todo.append((family, scenario))
    return todo, refresh, kept


def _cell_line(cell: Mapping[str, Any]) -> str:
    if "error" in cell:
        return f"failed: {cell['error']}"
    rows = cell_rows(cell)
    best = best_baseline(rows)
    text = f"{cell.get('wall_s', 0):.0f} s"
    if best:
        text += f", best baseline {best['policy']} {best['mean_return']:.3f}"
    ppo = next((r for r in rows if r["policy"] == "ppo"), None)
    if ppo and ppo.get("mean_return") is not None:
        text += f", ppo {ppo['mean_return']:.3f}"
    return text

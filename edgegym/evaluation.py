"""One evaluator for every policy: analytic baselines, learned agents and random play.

Every policy answers Stable-Baselines3's ``predict(observation, state, episode_start,
deterministic)`` protocol. :func:`evaluate` runs each policy on the same seeded episodes
(seed, seed + 1, ...), so policies face identical drift profiles, and returns an
:class:`EvalResult` with per-episode metrics, their mean and spread, the policies' decision
times and, optionally, the timeline of the first episode (for plots).

The module is ``edgegym.evaluation``; ``edgegym`` re-exports :func:`evaluate` and
:class:`EvalResult`, so ``edgegym.evaluate(...)`` is the function.

Example:
    >>> import edgegym
    >>> res = edgegym.evaluate("edgegym/ContinualLearning-v0", ["thief", "uniform"],
    ...                        scenario="ekya-table1", episodes=2, progress=False)
    >>> print(res.table())  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
import inspect
import itertools
import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from edgegym.core.registry import ENV_IDS, FAMILIES, FLAT_IDS, register_all
from edgegym.jsonshape import (
    INT,
    LIST,
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

#: A policy: a spec string for :func:`edgegym.baselines.make_policy`, an object with SB3's
#: ``predict``, or a factory ``env -> object with predict`` (for policies bound to an env).
PolicyLike = str | Any


def headline_metrics() -> tuple[tuple[str, str], ...]:
    """The registered families' headline metrics (``episode_metrics`` key, column label), in
    registration order (``Family.headline_metrics``): Goodput and SLO attainment (mig), the
    fairness indices F_T, F_E, F_S (energy), the objective and completion time (dag). The
    evaluator's table and the leaderboard show those that any policy reports, before
    accuracy, energy and retrainings."""
    out: list[tuple[str, str]] = []
    for fam in FAMILIES.values():
        out += [m for m in fam.headline_metrics if m not in out]
    return tuple(out)


# ----------------------------------------------------------------------------- result
@dataclass
class EvalResult:
    """What :func:`evaluate` measured.

    Attributes:
        env: Environment id.
        scenario: Scenario name (or path) the environments were made with.
        overrides: Scenario overrides passed to the environment.
        seeds: Episode seeds, the same for every policy.
        results: One entry per policy (see :meth:`to_dict` for the keys).
        timelines: Policy name -> timeline records of its first episode (``timeline=True``).
        scenario_info: Facts the plots need (``a_min``, ``gpus``, ``window_s``, ``windows``,
            ``streams``); not part of the JSON, re-derived by :meth:`from_json`.
    """

    env: str
    scenario: str | None
    overrides: dict[str, Any]
    seeds: list[int]
    results: list[dict[str, Any]] = field(default_factory=list)
    timelines: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    scenario_info: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when no policy raised during evaluation."""
        return not any("error" in r for r in self.results)

    @property
    def errors(self) -> dict[str, str]:
        """Policy name -> error message, for the policies that raised."""
        return {r["policy"]: r["error"] for r in self.results if "error" in r}

    def result(self, policy: str) -> dict[str, Any]:
        """The result entry of one policy (by name)."""
        for r in self.results:
            if r["policy"] == policy:
                return r
        raise KeyError(
            f"no result for policy {policy!r}; have: {[r['policy'] for r in self.results]}"
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping.

        Schema: ``{"env", "scenario", "overrides", "seeds", "results": [{"policy",
        "episodes", "mean_return", "std_return", "metrics": {name: {"mean", "std"}},
        "per_episode": [{"seed", "return", "metrics", "steps", "decision_time_s"}],
        "decision_time_s"}]}``; a result also has ``"error"`` when its policy raised,
        ``"timeline"`` when timelines were kept and ``"setup"`` (the scenario overrides its
        paper's setup added, :func:`policy_setup`) when there were any.
        """
        results = []
        for r in self.results:
            entry = dict(r)
            if r["policy"] in self.timelines:
                entry["timeline"] = self.timelines[r["policy"]]
            results.append(entry)
        return {
            "env": self.env,
            "scenario": self.scenario,
            "overrides": dict(self.overrides),
            "seeds": list(self.seeds),
            "results": results,
        }

    def to_json(self, path: str | Path | None = None, indent: int = 2, *, flag: str = "") -> str:
        """Serialise to JSON (non-finite numbers become ``null``; ``"edgegym_output":
        "evaluation"`` first); write to ``path`` if given, atomically (an interrupted write
        leaves the old file; a failed one keeps the results in a rescue file and raises
        :class:`~edgegym.outputs.OutputWriteError`, naming ``flag`` and ``path``)."""
        from edgegym.outputs import MARKER, write_atomic

        text = json.dumps({MARKER: "evaluation", **jsonable(self.to_dict())}, indent=indent)
        if path is not None:
            write_atomic(path, text + "\n", flag=flag)
        return text

    @classmethod
    def from_json(cls, path_or_text: str | Path) -> EvalResult:
        """Load a result written by :meth:`to_json` (a path, or the JSON text itself). A path
        is read as an untrusted input: a regular file of bounded size
        (:func:`edgegym.outputs.read_output`).

        Raises:
            FileNotFoundError: No such file.
            ValueError: Not a regular file (a FIFO, a device), too large, not JSON, or not an
                evaluation result (one line; :class:`edgegym.inputs.InputError` for the file),
                a field of another kind than :meth:`table` reads included
                (:class:`edgegym.jsonshape.ShapeError`: ``res.json:
                results[0].policy: must be a text ..., got a mapping``).
        """
        from edgegym.inputs import load_json
        from edgegym.outputs import read_output

        text = str(path_or_text)
        where = "the JSON text"
        if not text.lstrip().startswith("{"):
            text = read_output(path_or_text, "evaluation result")
            where = str(path_or_text)
        data = load_json(text, where)  # an InputError (a ValueError) names where
        if not (
            isinstance(data, dict)
            and isinstance(data.get("results"), list)
            and all(isinstance(r, dict) and "policy" in r for r in data["results"])
            and "env" in data
        ):
            raise ValueError(f"{where}: not an edgegym evaluation result (EvalResult.to_json)")
        check(check_depth(data, where), RESULT_SHAPE, where)
        results, timelines = [], {}
        for r in data["results"]:
            r = dict(r)
            tl = r.pop("timeline", None)
            if tl is not None:
                timelines[r["policy"]] = tl
            results.append(r)
        res = cls(
            env=data["env"],
            scenario=data.get("scenario"),
            overrides=data.get("overrides") or {},
            seeds=list(data.get("seeds") or []),
            results=results,
            timelines=timelines,
        )
        try:
            res.scenario_info = _scenario_info(res.env, res.scenario, res.overrides)
        except Exception:
            res.scenario_info = {}
        return res

    def table(self) -> str:
        """Aligned text table: return, the family's headline metrics, and accuracy, energy and
        retrainings where a policy reports them, and decision time."""
        present = set().union(*(r.get("metrics", {}).keys() for r in self.results))
        energy_unit, energy_scale = _energy_unit(self.results)
        # Family-specific headline metrics, then the common ones, each shown when reported.
        columns: list[tuple[str, Callable[[dict[str, Any]], str]]] = [
            (label, lambda m, k=k: _pm(m.get(k, {}).get("mean"), m.get(k, {}).get("std"), 3))
            for k, label in headline_metrics()
            if k in present
        ]
        common = [
            ("accuracy", "accuracy", lambda m: _pm(m["accuracy"].get("mean"),
                                                   m["accuracy"].get("std"), 3)),
            ("energy_j", f"energy ({energy_unit})",
             lambda m: _num(_scale(m["energy_j"].get("mean"), energy_scale), 1)),
            ("retrainings", "retrainings", lambda m: _num(m["retrainings"].get("mean"), 1)),
        ]  # fmt: skip
        columns += [
            (label, lambda m, k=k, get=get: get(m) if k in m else "-")
            for k, label, get in common
            if k in present
        ]
        header = ["policy", "return", *(label for label, _ in columns), "decision ms"]
        rows = []
        notes = []
        for r in self.results:
            m = r.get("metrics", {})
            name = r["policy"]
            if "error" in r:
                name += " (!)"
                notes.append(f"(!) {r['policy']}: {r['error']}")
            rows.append(
                [
                    name,
                    _pm(r.get("mean_return"), r.get("std_return"), 3),
                    *(get(m) for _, get in columns),
                    _num(_scale(r.get("decision_time_s"), 1e3), 3),
                ]
            )
        notes += _setup_notes(self.results)
        if _same_episode_every_seed(self.results, len(self.seeds)):
            notes.append(
                f"Every one of the {len(self.seeds)} seeds gave each policy the same episode: "
                "nothing random in this scenario is seeded (for example backlogged tenants), "
                "so the ± is 0; a scenario with random arrivals differs per seed."
            )
        widths = [max(len(str(row[i])) for row in [header, *rows]) for i in range(len(header))]
        align = ["<"] + [">"] * (len(header) - 1)

        def fmt(row: list[str]) -> str:
            return "  ".join(f"{c:{a}{w}}" for c, a, w in zip(row, align, widths, strict=True))

        lines = [
            f"{self.env}  scenario={self.scenario}  episodes={len(self.seeds)}  "
            f"seeds={_seed_span(self.seeds)}"
            + (f"  overrides={self.overrides}" if self.overrides else ""),
            fmt(header),
            "  ".join("-" * w for w in widths),
            *(fmt(row) for row in rows),
            *notes,
        ]
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.table()


_STAT = Record({"mean": Maybe(NUM), "std": Maybe(NUM)})
#: What :meth:`EvalResult.table`, the plots and the leaderboard read of one policy's row of a
#: result (:meth:`EvalResult.to_dict`), by kind (:mod:`edgegym.jsonshape`).
RESULT_ROW = Record(
    {
        "policy": TEXT,
        **{k: Maybe(NUM) for k in ("mean_return", "std_return", "decision_time_s")},
        "metrics": MapOf(_STAT),
        "per_episode": Maybe(ListOf(Record({"return": Maybe(NUM)}, required=("return",)))),
        "setup": Maybe(MAP),
        "timeline": Maybe(LIST),
    },
    required=("policy",),
)
#: What :meth:`EvalResult.from_json` reads of a result file.
RESULT_SHAPE = Record(
    {
        "env": TEXT,
        "scenario": Maybe(TEXT),
        "overrides": Maybe(MAP),
        "seeds": Maybe(ListOf(INT)),
        "results": ListOf(RESULT_ROW),
    }
)


def _energy_unit(results: list[dict[str, Any]]) -> tuple[str, float]:
    """The energy column's unit and the scale from joules: kJ where the largest mean energy
    is 10 kJ or more, J below (an energy-family episode of a few hundred joules keeps its
    digits)."""
    means = [
        m["energy_j"].get("mean")
        for r in results
        if isinstance(m := r.get("metrics", {}), dict) and isinstance(m.get("energy_j"), dict)
    ]
    largest = max((abs(v) for v in means if isinstance(v, int | float)), default=0.0)
    return ("kJ", 1e-3) if largest >= 1e4 else ("J", 1.0)


def _setup_notes(results: list[dict[str, Any]]) -> list[str]:
    """One line per distinct paper setup: the policies that ran with it and its overrides."""
    groups: dict[str, list[str]] = {}
    for r in results:
        if r.get("setup"):
            text = ", ".join(
                f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}"
                for k, v in r["setup"].items()
            )
            groups.setdefault(text, []).append(r["policy"])
    return [
        f"as their paper evaluates them: {', '.join(names)} with {text}"
        for text, names in groups.items()
    ]


def jsonable(obj: Any) -> Any:
    """``obj`` as JSON data: mappings with string keys, lists, numbers (numpy values included),
    non-finite numbers as ``None``."""
    if isinstance(obj, Mapping):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def _scale(x: float | None, k: float) -> float | None:
    return None if x is None else x * k


def _num(x: float | None, digits: int) -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    return f"{x:.{digits}f}"


def _pm(mean: float | None, std: float | None, digits: int) -> str:
    if mean is None:
        return "-"
    return f"{_num(mean, digits)} ± {_num(std, digits)}"


def _same_episode_every_seed(results: list[dict[str, Any]], seeds: int) -> bool:
    """More than one seed, and each policy's episodes all returned exactly the same."""
    episodes = [r.get("per_episode") or [] for r in results]
    if seeds < 2 or not any(episodes):
        return False
    return all(len({e["return"] for e in eps}) <= 1 for eps in episodes)


def _seed_span(seeds: list[int]) -> str:
    if not seeds:
        return "[]"
    if len(seeds) > 1 and seeds == list(range(seeds[0], seeds[0] + len(seeds))):
        return f"{seeds[0]}..{seeds[-1]}"
    return ",".join(map(str, seeds))


# ----------------------------------------------------------------------------- helpers
def check_env_id(env_id: str) -> None:
    """Raise ``ValueError`` naming ``env_id`` if it is not a registered environment."""
    register_all()
    if env_id not in ENV_IDS and env_id not in gym.registry:
        known = ", ".join([*ENV_IDS, *FLAT_IDS])
        raise ValueError(f"unknown environment id {env_id!r}; registered: {known}")


def default_scenario(env_id: str) -> str | None:
    """The default scenario of an edgegym environment id (``None`` for foreign ids)."""
    env_id = FLAT_IDS.get(env_id, env_id)
    return ENV_IDS[env_id][2] if env_id in ENV_IDS else None


def _ids_taking(keyword: str) -> list[str]:
    """The registered environment ids whose class takes ``keyword`` (``max_streams``: the
    families with padded tenant slots)."""
    out = []
    for env_id, (entry_point, *_) in ENV_IDS.items():
        module, _, name = entry_point.partition(":")
        cls = getattr(importlib.import_module(module), name)
        if keyword in inspect.signature(cls.__init__).parameters:
            out.append(env_id)
    return out


def _check_device(env_id: str, kwargs: Mapping[str, Any]) -> None:
    """Refuse a real backend's device that is not there (``device="cuda"`` without a GPU) as a
    bad argument, before the environment is made.

    Raises:
        ValueError: Naming the id and the device (the real backend's own message).
    """
    device = kwargs.get("device", "cpu")
    if kwargs.get("backend") != "real" or not isinstance(device, str):
        return  # the environment checks everything else itself
    from edgegym.real.executor import check_device

    try:
        check_device(device)
    except RuntimeError as exc:  # no CUDA GPU: a bad argument here, as profile says it
        raise ValueError(f"{env_id}: {exc}") from None


def make_env(
    env_id: str,
    scenario: str | None = None,
    overrides: Mapping[str, Any] | None = None,
    max_streams: int | None = None,
    record_timeline: bool = False,
) -> gym.Env:
    """Make an environment the way the evaluator does (``ValueError``/``ScenarioError`` if bad;
    a ``ValueError`` too for ``backend="real"`` on a CUDA device torch does not see, which the
    environment itself raises as a ``RuntimeError``)."""
    check_env_id(env_id)
    kwargs: dict[str, Any] = dict(overrides or {})
    if max_streams is not None and env_id not in (slotted := _ids_taking("max_streams")):
        raise ValueError(f"max_streams applies to {', '.join(slotted)} only, not {env_id}")
    if env_id in ENV_IDS:
        kwargs["scenario"] = scenario if scenario is not None else default_scenario(env_id)
        if "record_timeline" in kwargs:  # --set record_timeline=...: checked, then kept too
            from edgegym.core.checks import check_flag

            record_timeline = check_flag(kwargs["record_timeline"], "record_timeline") or (
                record_timeline
            )
        kwargs["record_timeline"] = record_timeline
        if max_streams is not None:
            kwargs["max_streams"] = max_streams
    elif env_id in FLAT_IDS:
        kwargs["scenario"] = scenario if scenario is not None else default_scenario(env_id)
    elif scenario is not None:
        kwargs["scenario"] = scenario
    if env_id in ENV_IDS or env_id in FLAT_IDS:
        _check_device(env_id, kwargs)
    try:
        return gym.make(env_id, **kwargs)
    except TypeError as exc:  # Gymnasium's rewording of the constructor's, undone
        from edgegym.core.checks import creator_error

        raise creator_error(env_id, exc) from None


def _plot_info(env: gym.Env) -> dict[str, Any]:
    """What the figures read of an environment (``plot_info()``; ``{}`` for a foreign env)."""
    plot_info = getattr(env.unwrapped, "plot_info", None)
    return plot_info() if callable(plot_info) else {}


def _scenario_info(
    env_id: str, scenario: str | None, overrides: Mapping[str, Any] | None
) -> dict[str, Any]:
    env = make_env(env_id, scenario, overrides)
    try:
        return _plot_info(env)
    finally:
        env.close()


def _policy_name(policy: Any, spec: Any) -> str:
    if isinstance(spec, str):
        return spec
    name = getattr(policy, "name", None)
    if isinstance(name, str) and name and name != "policy":
        return name
    return type(policy).__name__


def _build_policy(spec: PolicyLike, env: gym.Env) -> Any:
    """A policy from a spec string, a class, a factory ``env -> policy`` or a policy object."""
    from edgegym.baselines import make_policy
    from edgegym.baselines.custom import build

    if isinstance(spec, str):
        return make_policy(spec, env)
    return build(spec, env, {}, getattr(spec, "__name__", repr(spec)))


def _masks(env: gym.Env) -> np.ndarray | None:
    """The current action mask (``action_masks()`` anywhere in the wrapper stack), or None."""
    try:
        return np.asarray(env.get_wrapper_attr("action_masks")())
    except AttributeError:
        return None


def _mean_std(values: Sequence[float]) -> tuple[float | None, float | None]:
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        return None, None
    return float(arr.mean()), float(arr.std())


def _summarise(
    name: str, per_episode: list[dict[str, Any]], setup: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    mean_ret, std_ret = _mean_std([e["return"] for e in per_episode])
    metric_names: list[str] = []
    for e in per_episode:
        metric_names += [k for k in e["metrics"] if k not in metric_names]
    metrics = {}
    for key in metric_names:
        mean, std = _mean_std([e["metrics"][key] for e in per_episode if key in e["metrics"]])
        metrics[key] = {"mean": mean, "std": std}
    steps = sum(e["steps"] for e in per_episode)
    total_t = sum(e["decision_time_s"] * e["steps"] for e in per_episode)
    entry = {
        "policy": name,
        "episodes": len(per_episode),
        "mean_return": mean_ret,
        "std_return": std_ret,
        "metrics": metrics,
        "per_episode": per_episode,
        "decision_time_s": total_t / steps if steps else None,
    }
    if setup:
        entry["setup"] = dict(setup)
    return entry


def _run_episode(env: gym.Env, policy: Any, seed: int) -> dict[str, Any]:
    from edgegym.baselines.custom import takes_masks

    obs, _info = env.reset(seed=seed)
    env.action_space.seed(seed)
    if hasattr(policy, "reset"):
        policy.reset(seed)
    state = None
    episode_start = np.array([True])
    masks = takes_masks(policy)
    total, steps, spent = 0.0, 0, 0.0
    info: dict[str, Any] = {}
    done = False
    while not done:
        extra = {"action_masks": _masks(env)} if masks else {}  # the env's work, not timed
        t0 = time.perf_counter()
        action, state = policy.predict(
            obs, state=state, episode_start=episode_start, deterministic=True, **extra
        )
        spent += time.perf_counter() - t0
        episode_start = np.array([False])
        obs, reward, terminated, truncated, info = env.step(action)
        total += float(reward)
        steps += 1
        done = bool(terminated or truncated)
    metrics = info.get("episode_metrics", {})
    return {
        "seed": seed,
        "return": total,
        "metrics": {k: float(v) for k, v in metrics.items()},
        "steps": steps,
        "decision_time_s": spent / steps if steps else 0.0,
    }


# ----------------------------------------------------------------------------- evaluate
def _check_arguments(
    env_id: str,
    policies: Sequence[PolicyLike] | Mapping[str, PolicyLike],
    episodes: int,
    seed: int,
    workers: int,
    ray: str | None,
) -> tuple[list[tuple[Any, PolicyLike]], list[int]]:
    """The ``(name or None, spec)`` pairs and the seeds of :func:`evaluate`'s arguments.

    Raises:
        ValueError: As :func:`evaluate` documents.
    """
    if isinstance(episodes, bool) or not isinstance(episodes, int | np.integer) or episodes < 1:
        raise ValueError(f"episodes must be an integer >= 1, got {episodes!r}")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0, got {seed!r}")
    check_env_id(env_id)
    if isinstance(policies, str | bytes) or (
        not isinstance(policies, Mapping | Sequence) and hasattr(policies, "predict")
    ):
        policies = [policies]
    if isinstance(policies, Mapping):
        items = list(policies.items())
    else:
        from edgegym.baselines import expand_all

        items = [(None, p) for p in expand_all(policies, env_id)]
    if not items:
        raise ValueError("no policies to evaluate")
    seeds = [int(seed) + i for i in range(int(episodes))]
    if ray is not None or workers != 1:
        bound = [repr(g or p) for g, p in items if not isinstance(p, str) and hasattr(p, "predict")]
        if bound:
            raise ValueError(
                f"with workers or ray every policy is built afresh per episode, so give specs "
                f"or factories (env -> policy), not policy objects: {', '.join(bound)}"
            )
    return items, seeds


def policy_setup(
    spec: PolicyLike, scenario: str | None, overrides: Mapping[str, Any], setup: bool = True
) -> dict[str, Any]:
    """The overrides ``spec``'s paper adds for its episodes on top of ``overrides`` (none when
    ``setup`` is false or ``scenario`` is unset; :func:`edgegym.baselines.paper_setup`)."""
    if not setup or scenario is None:
        return {}
    from edgegym.baselines import paper_setup

    return paper_setup(spec, scenario, overrides)


def _build_all(
    env_id: str,
    scenario: str | None,
    overrides: Mapping[str, Any],
    max_streams: int | None,
    timeline: bool,
    items: list[tuple[Any, PolicyLike]],
    setup: bool = True,
) -> list[tuple[str, gym.Env | None, Any, dict[str, Any]]]:
    """Every policy's environment (with its paper's setup, :func:`policy_setup`), policy and
    setup, named uniquely, before any episode runs (so bad arguments fail before any work); on
    a failure the environments built are closed.

    A policy whose paper setup gives an environment that cannot be built, where the scenario
    as given builds, is not built: its entry holds ``None`` for the environment and the error
    text for the policy, and it is reported as failed (:func:`_setup_failed`) while the others
    run."""
    built: list[tuple[str, gym.Env | None, Any, dict[str, Any]]] = []
    names: set[str] = set()
    try:
        for given, spec in items:
            extra = policy_setup(spec, scenario, overrides, setup)
            try:
                env = make_env(
                    env_id, scenario, {**overrides, **extra}, max_streams, record_timeline=timeline
                )
            except Exception as exc:
                if not extra:
                    raise
                # The setup's fault only if the scenario as given builds (else: bad arguments).
                make_env(env_id, scenario, overrides, max_streams).close()
                env, policy = None, f"paper setup failed: {type(exc).__name__}: {exc}"
                name = str(given) if given is not None else _spec_name(spec)
            else:
                policy = _build_policy(spec, env)
                name = str(given) if given is not None else _policy_name(policy, spec)
            base, n = name, 2
            while name in names:
                name, n = f"{base}#{n}", n + 1
            names.add(name)
            built.append((name, env, policy, extra))
    except BaseException:
        for _, env, _, _ in built:
            if env is not None:
                env.close()
        raise
    return built


def _spec_name(spec: PolicyLike) -> str:
    """The name a policy built from ``spec`` would report (:func:`_policy_name`), unbuilt."""
    if isinstance(spec, str):
        return spec
    name = getattr(spec, "name", None)
    if isinstance(name, str) and name and name != "policy":
        return name
    return str(getattr(spec, "__name__", type(spec).__name__))


def _setup_failed(name: str, error: str, extra: Mapping[str, Any]) -> dict[str, Any]:
    """The result entry of a policy whose paper setup could not be built: no episodes, and
    the error (as a policy that raises in its first episode)."""
    entry = _summarise(name, [], extra)
    entry["error"] = error
    return entry


def _evaluate_parallel(
    result: EvalResult,
    job: Any,
    items: list[tuple[Any, PolicyLike]],
    names: list[str],
    seeds: list[int],
    timeline: bool,
    workers: int,
    ray: str | None,
    progress: bool,
    failed: Mapping[str, dict[str, Any]] | None = None,
) -> EvalResult:
    """Every (policy, seed) episode as a job of a process pool or a Ray task (``job(spec,
    seed, keep_timeline)`` builds its :class:`EpisodeJob`); results in ``result``. The
    policies in ``failed`` (name -> entry: their paper setup did not build) run no job."""
    from edgegym.parallel import MapInterrupted, Runner

    runner = Runner(workers=workers, ray=ray)
    failed = failed or {}
    run = [k for k, name in enumerate(names) if name not in failed]  # setups that built
    jobs = [job(items[k][1], s, timeline and i == 0) for k in run for i, s in enumerate(seeds)]
    try:
        outcomes = runner.map(run_episode_job, jobs, label="evaluate", progress=progress)
    except MapInterrupted as stop:
        outcomes, interrupted = stop.results, True
    else:
        interrupted = False
    for k, name in enumerate(names):
        if name in failed:
            result.results.append(failed[name])
            continue
        j = run.index(k)
        mine = outcomes[j * len(seeds) : (j + 1) * len(seeds)]
        done = list(itertools.takewhile(lambda o: o is not None, mine))
        if not done:  # interrupted before this policy's first seed finished
            continue
        entry = summarise_outcomes(name, done)
        if len(done) < len(mine) and "error" not in entry:
            entry["error"] = f"interrupted after {len(done)} episode(s)"
        if timeline and done[0].get("timeline") is not None:
            result.timelines[name] = done[0]["timeline"]
        result.results.append(entry)
    if interrupted:
        raise EvaluationInterrupted(result)
    return result


def _evaluate_serial(
    result: EvalResult,
    built: list[tuple[str, gym.Env | None, Any, dict[str, Any]]],
    seeds: list[int],
    timeline: bool,
    progress: bool,
) -> EvalResult:
    """Every policy's episodes here, one after the other, with a progress bar; results in
    ``result``; the environments are closed at the end."""
    from edgegym.progress import progress_bar

    bar = progress_bar(len(built) * len(seeds), "evaluate", "ep", progress)
    try:
        for name, env, policy, extra in built:
            if env is None:  # its paper setup did not build: reported failed, the others run
                result.results.append(_setup_failed(name, policy, extra))
                bar.update(len(seeds))
                continue
            per_episode: list[dict[str, Any]] = []
            error: str | None = None
            bar.set_postfix_str(name, refresh=False)
            for i, s in enumerate(seeds):
                try:
                    per_episode.append(_run_episode(env, policy, s))
                except KeyboardInterrupt:
                    if per_episode:  # keep what this policy finished
                        entry = _summarise(name, per_episode, extra)
                        entry["error"] = f"interrupted after {len(per_episode)} episode(s)"
                        result.results.append(entry)
                    raise EvaluationInterrupted(result) from None
                except Exception as exc:
                    error = _error_text(exc, s)
                    bar.update(len(seeds) - i)
                    break
                if timeline and i == 0:
                    tl = _timeline_of(env)
                    if tl is not None:
                        result.timelines[name] = tl
                    if hasattr(env.unwrapped, "record_timeline"):
                        env.unwrapped.record_timeline = False  # later episodes need no timeline
                bar.update(1)
            entry = _summarise(name, per_episode, extra)
            if error is not None:
                entry["error"] = error
            result.results.append(entry)
    finally:
        bar.close()
        for _, env, _, _ in built:
            if env is not None:
                env.close()
    return result


def evaluate(
    env_id: str,
    policies: Sequence[PolicyLike] | Mapping[str, PolicyLike],
    scenario: str | None = None,
    episodes: int = 5,
    seed: int = 0,
    overrides: Mapping[str, Any] | None = None,
    progress: bool = True,
    timeline: bool = False,
    max_streams: int | None = None,
    workers: int = 1,
    ray: str | None = None,
    setup: bool = True,
) -> EvalResult:
    """Score policies on the same seeded episodes.

    Every policy gets its own environment and runs ``episodes`` episodes with seeds
    ``seed, seed + 1, ...``; before each, the evaluator calls ``policy.reset(seed)`` if the
    policy has one. Recurrent SB3 policies get their ``state`` back and ``episode_start``
    (``np.array([True])`` on the first step of an episode). Arguments are checked, and every
    policy built, before the first episode runs; a policy that raises mid-evaluation does
    not lose the results of the others: its entry keeps the episodes it finished and gets an
    ``"error"`` string (see :attr:`EvalResult.ok`). So does a policy whose paper setup
    (``setup``) gives a scenario the environment refuses while the scenario as given builds:
    it runs no episode, its ``"error"`` says why, and the others run.

    Args:
        env_id: A registered environment id (see ``edgegym.core.registry.ENV_IDS``).
        policies: Policy specs: names with optional parameters for
            :func:`edgegym.baselines.make_policy` (``"thief:delta=0.2,oracle=true"``;
            ``"all"``: every built-in policy of the family, as on the command line),
            ``FILE.py:NAME`` / ``MODULE:NAME`` (your own scheduler, docs/own-scheduler.md),
            objects with SB3's ``predict``, classes or factories ``env -> policy``. A mapping
            gives the names to report them under. A ``predict`` that declares
            ``action_masks`` receives the current mask.
        scenario: Scenario name or path; ``None`` for the environment's default.
        episodes: Episodes per policy (>= 1).
        seed: Seed of the first episode.
        overrides: Scenario field overrides (``{"gpus": 4}``).
        progress: Show a tqdm bar over (policy, episode) (hidden when not on a terminal).
        timeline: Keep the timeline of each policy's first episode (``result.timelines``).
        max_streams: Stream slots of the environment (pad for policies trained on more).
        workers: Run the episodes in this many local processes (policies must then be
            specs or picklable factories; spec strings are).
        ray: Run each (policy, seed) episode as a Ray task on the cluster at this address
            (``"local"``, ``"auto"``, ``host:port``; :func:`edgegym.parallel.init_ray`).
        setup: Run each published scheduler's baselines where its paper evaluates them
            (:func:`edgegym.baselines.paper_setup`: Ekya's uniform baselines and no-retraining
            without the micro-profiler, MIGRator's Ekya and Astraea on MPS shares), on top of
            ``overrides``; each result's ``"setup"`` names what was added. False runs every
            policy on the scenario as given.

    With ``workers > 1`` or ``ray``, every episode gets a fresh environment and policy, built
    and seeded in the worker exactly as here, so the numbers equal those of the serial run
    (only the decision times differ). A policy that raises keeps the episodes before the
    failing seed, as in the serial run.

    Returns:
        An :class:`EvalResult`.

    Raises:
        EvaluationInterrupted: Ctrl-C (a ``KeyboardInterrupt``); its
            ``result`` keeps the finished episodes (serial, pool or Ray).
        ValueError: Unknown environment id or policy, bad episode count or seed.
        ScenarioError: Unknown scenario or invalid override (a ``ValueError`` too).
        RayMissingError: ``ray`` is set and Ray is not installed (an ``ImportError``).
    """
    items, seeds = _check_arguments(env_id, policies, episodes, seed, workers, ray)
    overrides = dict(overrides or {})
    scenario = scenario if scenario is not None else default_scenario(env_id)

    built = _build_all(env_id, scenario, overrides, max_streams, timeline, items, setup)

    result = EvalResult(env=env_id, scenario=scenario, overrides=overrides, seeds=seeds)
    envs = [env for _, env, _, _ in built if env is not None]
    result.scenario_info = (
        _plot_info(envs[0].unwrapped) if envs else _scenario_info(env_id, scenario, overrides)
    )

    if ray is not None or workers != 1:
        for env in envs:
            env.close()
        job = partial(EpisodeJob, env_id, scenario, overrides, max_streams, setup=setup)
        names = [name for name, _, _, _ in built]
        failed = {n: _setup_failed(n, p, x) for n, env, p, x in built if env is None}
        return _evaluate_parallel(
            result, job, items, names, seeds, timeline, workers, ray, progress, failed
        )
    return _evaluate_serial(result, built, seeds, timeline, progress)


class EvaluationInterrupted(KeyboardInterrupt):
    """Ctrl-C during :func:`evaluate`: ``result`` holds every finished episode (a policy cut
    short keeps its episodes up to the first unfinished seed, with an ``"error"`` saying so)."""

    def __init__(self, result: EvalResult) -> None:
        super().__init__("evaluation interrupted")
        self.result = result


def _error_text(exc: BaseException, seed: int) -> str:
    return f"{type(exc).__name__}: {exc} (episode seed {seed})"


@dataclass(frozen=True)
class EpisodeJob:
    """One episode of one policy, everything a worker needs to run it (picklable when the
    policy spec is): the environment is made and the policy built in the worker, then
    :func:`run_episode_job` plays the episode with ``seed``."""

    env_id: str
    scenario: str | None
    overrides: Mapping[str, Any]
    max_streams: int | None
    policy: PolicyLike
    seed: int
    timeline: bool = False
    setup: bool = True  # with the policy's paper setup (:func:`policy_setup`)


def run_episode_job(job: EpisodeJob) -> dict[str, Any]:
    """Play one :class:`EpisodeJob` on a fresh environment (with the policy's paper setup
    unless ``job.setup`` is false) and policy.

    Returns:
        ``{"episode": <per-episode record>}`` (and ``"timeline"`` when asked for, ``"setup"``
        when the paper setup added overrides), or ``{"error": <message>}`` when the policy or
        environment raised.
    """
    extra = policy_setup(job.policy, job.scenario, job.overrides, job.setup)
    overrides = {**job.overrides, **extra}
    env = make_env(job.env_id, job.scenario, overrides, job.max_streams, job.timeline)
    try:
        policy = _build_policy(job.policy, env)
        try:
            out: dict[str, Any] = {"episode": _run_episode(env, policy, int(job.seed))}
        except Exception as exc:
            return {"error": _error_text(exc, int(job.seed))}
        if extra:
            out["setup"] = extra
        if job.timeline:
            out["timeline"] = _timeline_of(env)
        return out
    finally:
        env.close()


def summarise_outcomes(name: str, outcomes: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A policy's result entry from its :func:`run_episode_job` outcomes in seed order: the
    episodes before the first failure, and that failure's ``error`` (as the serial run)."""
    per_episode: list[dict[str, Any]] = []
    error = None
    setup = next((o["setup"] for o in outcomes if "setup" in o), None)
    for outcome in outcomes:
        if "error" in outcome:
            error = outcome["error"]
            break
        per_episode.append(outcome["episode"])
    entry = _summarise(name, per_episode, setup)
    if error is not None:
        entry["error"] = error
    return entry


def _timeline_of(env: gym.Env) -> list[dict[str, Any]] | None:
    records = getattr(env.unwrapped, "allocation_timeline", None)
    tl = records() if callable(records) else None
    return None if tl is None else [dict(rec) for rec in tl]


__all__ = [
    "EpisodeJob",
    "EvalResult",
    "PolicyLike",
    "check_env_id",
    "default_scenario",
    "evaluate",
    "headline_metrics",
    "jsonable",
    "make_env",
    "policy_setup",
    "run_episode_job",
    "summarise_outcomes",
]

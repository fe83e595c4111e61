"""What the leaderboard evaluates: families, scenarios (and held-out variants), policies and
the shipped agents."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from edgegym.inputs import load_yaml, read_text

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
#: scenarios at sizes the shipped agents were not trained on (whether a size-free agent
#: generalises), named ``SCENARIO@KEY=VALUE,...`` (``--scenarios`` takes such names too).
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

#: Headroom references per family, evaluated beside the registered policies: searches, not
#: schedulers a paper published, so never a family's best baseline. Each shows how much of
#: the published scheduler's own objective its search leaves to a learned scheduler
#: (``thief:exact=true``: the exact optimum of the thief's estimate, docs/baselines.md).
HEADROOM: dict[str, tuple[str, ...]] = {"continual": ("thief:exact=true",)}

JSON_NAME = "leaderboard.json"
MD_NAME = "leaderboard.md"
SCHEMA = 1


class LeaderboardError(ValueError):
    """Bad leaderboard arguments (unknown family or scenario, malformed override)."""


# ----------------------------------------------------------------------------- selection


def repo_relative(text: str) -> str:
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
    from edgegym.scenarios import bundled, read_raw

    out = []
    for name in bundled():
        try:
            data = read_raw(name)
        except (OSError, ValueError):  # ScenarioError is a ValueError
            continue
        if isinstance(data, dict) and data.get("family") == family:
            out.append(name)
    default = default_scenario_of(family)
    return sorted(out, key=lambda n: (n != default, natural_key(n)))


def natural_key(name: str) -> tuple[Any, ...]:
    """Sort key with numbers compared as numbers (migrator-w2 before migrator-w10)."""
    import re

    # The split's odd items are the runs of digits (ASCII only: int() takes every one).
    parts = re.split(r"([0-9]+)", name)
    return tuple(int(t) if i % 2 else t for i, t in enumerate(parts))


def family_policies(family: str) -> list[str]:
    """The registered policies of a family (baselines and ``random``), in registry order."""
    from edgegym.baselines import POLICIES

    return [name for name, (_, fams, _) in POLICIES.items() if family in fams]


def leaderboard_policies(family: str) -> list[str]:
    """What the leaderboard runs for a family: its registered policies, then its
    :data:`HEADROOM` references."""
    return family_policies(family) + list(HEADROOM.get(family, ()))


def is_headroom(policy: str) -> bool:
    """Whether ``policy`` is a headroom reference of some family."""
    return any(policy in refs for refs in HEADROOM.values())


def shipped_info(family: str) -> dict[str, Any] | None:
    """What the leaderboard reports about a family's shipped PPO, or ``None`` if none.

    Keys: ``path``, ``sha256``, ``algo``, ``scenario``, ``overrides``, ``seed``,
    ``timesteps``, ``wall_s``, ``n_envs``, ``hyperparams_file``, ``hyperparam_overrides``,
    ``net_arch``, ``size_bytes``, ``notes`` (from the ``shipped`` record that
    ``python -m edgegym.agents.ship`` writes, else from the training runs) and
    ``init_from`` (the steps of the model a fine-tuning run started from, ``None`` for a run
    from scratch).
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
        cfg = load_yaml(read_text(cfg_path, "training config", "config"))
    except (OSError, ValueError, yaml.YAMLError):  # a copied-in agent's file is untrusted
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
            "init_from": _init_steps(cfg.get("init_from")),
            "trained_on": [cfg.get("scenario")]
            + [
                s if isinstance(s, str) else s.get("scenario")
                for s in (hp.get("train") or {}).get("scenarios") or []
            ],
        }
    )
    return info


def _init_steps(init: Any) -> int | None:
    """Steps the model a fine-tuning run (``edgegym train --init-from``) started from had
    trained, from its ``init_from`` record (0 where it is not recorded); ``None`` for none."""
    if not isinstance(init, dict):
        return None
    steps = init.get("timesteps")
    return int(steps) if isinstance(steps, int) and steps >= 0 else 0


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
        extra[key.strip()] = load_yaml(value)
    return base, extra


def cell_inputs(scenario: str, overrides: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The bundled scenario and the overrides a cell (maybe a variant) is evaluated with."""
    base, extra = split_variant(scenario)
    return base, {**dict(overrides), **extra}


def split_names(items: Sequence[str] | None) -> list[str]:
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
                known = ", ".join(sorted(owner, key=natural_key))
                raise LeaderboardError(f"unknown scenario {base!r}; bundled: {known}")
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

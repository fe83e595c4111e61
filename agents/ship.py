"""Ship a trained policy: copy a run's model into ``agents/trained/<family>/`` for ``--policy ppo``.

``python -m edgegym.agents.ship RUN_DIR`` takes ``RUN_DIR/model.zip`` (or ``--model
best_model.zip``) and its ``config.yaml`` from an ``edgegym train`` run and writes::

    agents/trained/<family>/model.zip     the weights, without the optimiser's state
    agents/trained/<family>/config.yaml   the run's configuration plus a ``shipped`` record

The optimiser state (Adam's moments, twice the size of the weights) is dropped: a shipped
policy is for acting and evaluation, and ``PPO.load`` still loads it (training it further
starts a fresh optimiser). The ``shipped`` record says where the model came from and the
training budget (``timesteps``) and wall time (``wall_s``, summed over resumed runs) the
leaderboard reports, for ``best_model.zip`` the evaluation it was ``selected`` at
(timesteps, return on the held-out evaluation seeds), the learning ``curve`` (every periodic
evaluation's return and the baseline's, drawn by :mod:`edgegym.agents.curves`), plus optional
``notes`` (what was tried).

Checkpoints, ``best_model.zip``, TensorBoard logs and ``evaluations.json`` stay in the run
folder; only the two files above are shipped.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import hashlib
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from edgegym.agents.policy import (
    TRAINED_DIR,
    PolicyLoadError,
    config_algo,
    read_config,
    resolve_model_path,
)
from edgegym.agents.sb3 import artifacts
from edgegym.agents.sb3.checkpoints import save_model
from edgegym.inputs import InputError
from edgegym.outputs import write_atomic

#: Above this size :func:`ship` warns (a shipped model should stay small).
MAX_SHIPPED_BYTES = 400_000


def sha256(path: Path) -> str:
    """Hex SHA-256 of a file."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def training_record(config: dict[str, Any]) -> dict[str, Any]:
    """Budget and wall time of a training config (timesteps, wall_s, n_envs, runs)."""
    runs = [r for r in config.get("runs") or [] if isinstance(r, dict)]
    wall = sum(float(r.get("wall_s") or 0.0) for r in runs)
    hp = config.get("hyperparams") or {}
    return {
        "timesteps": int(config.get("trained_timesteps") or config.get("timesteps") or 0),
        "wall_s": round(wall, 1),
        "n_envs": int((hp.get("train") or {}).get("n_envs") or 1),
        "runs": len(runs),
    }


def curve_record(evaluations: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The learning curve :func:`ship` stores (``shipped.curve``, drawn by
    :mod:`edgegym.agents.curves`): ``timesteps``, ``returns``, ``baseline`` and
    ``baseline_return``; ``None`` when no evaluation has a return."""
    scored = [e for e in evaluations if isinstance(e, Mapping) and e.get("ppo_return") is not None]
    if not scored:
        return None
    base = next((e for e in reversed(scored) if e.get("baseline_return") is not None), {})
    base_return = base.get("baseline_return")
    return {
        "timesteps": [int(e["timesteps"]) for e in scored],
        "returns": [round(float(e["ppo_return"]), 4) for e in scored],
        "baseline": base.get("baseline"),
        "baseline_return": None if base_return is None else round(float(base_return), 4),
    }


def read_evaluations(run: Path) -> list[dict[str, Any]]:
    """``run/evaluations.json`` as a list (a clear error when missing or not a list)."""
    from edgegym.agents.run.evaluation import read_records

    path = run / "evaluations.json"
    try:
        return read_records(path)
    except FileNotFoundError:
        raise PolicyLoadError(f"{path}: cannot be read (no such file)") from None
    except OSError as exc:
        raise PolicyLoadError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    except InputError as exc:  # not a regular file, too large, not a list of evaluations
        raise PolicyLoadError(str(exc)) from None


def _evaluations(run: Path) -> list[Any]:
    """``run/evaluations.json`` as a list; empty when missing or unreadable."""
    try:
        return read_evaluations(run)
    except PolicyLoadError:
        return []


def best_evaluation(run: Path) -> dict[str, Any] | None:
    """The periodic evaluation ``best_model.zip`` comes from (the first with the highest
    return, as the training callback keeps it): ``timesteps``, ``return``, ``episodes``,
    ``seed``; ``None`` without ``evaluations.json``."""
    scored = [
        e for e in _evaluations(run) if isinstance(e, dict) and e.get("ppo_return") is not None
    ]
    if not scored:
        return None
    best = scored[0]
    for e in scored[1:]:
        if e["ppo_return"] > best["ppo_return"]:
            best = e
    return {
        "timesteps": int(best["timesteps"]),
        "return": float(best["ppo_return"]),
        "episodes": int(best.get("episodes") or 0),
        "seed": int(best.get("seed") or 0),
    }


def strip_optimizer(model: Any) -> None:
    """Replace the policy's optimiser by a fresh one (no moments), keeping its settings."""
    policy = model.policy
    lr = float(model.lr_schedule(1.0))
    policy.optimizer = policy.optimizer_class(
        policy.parameters(), lr=lr, **(policy.optimizer_kwargs or {})
    )


def ship(
    run: str | Path,
    model: str = "model.zip",
    dest: str | Path | None = None,
    notes: Sequence[str] = (),
) -> Path:
    """Copy a trained policy into the shipped-policy folder of its family.

    Args:
        run: The ``edgegym train`` output folder.
        model: Which model of the run: ``model.zip`` (final) or ``best_model.zip``.
        dest: Destination folder (default ``agents/trained/<family>``).
        notes: Free text recorded under ``shipped.notes`` (what was tried, why these
            settings); shown by the leaderboard.

    Returns:
        The shipped ``model.zip``.

    Raises:
        PolicyLoadError: A missing or unreadable run, model or config.
    """
    run = Path(run)
    src = resolve_model_path(run / model)
    config = read_config(run / "config.yaml")
    family = config.get("family")
    if not family:
        raise PolicyLoadError(f"{run / 'config.yaml'} names no family")
    dest = Path(dest) if dest is not None else TRAINED_DIR / str(family)
    cls = config_algo(config, run / "config.yaml")
    try:
        loaded = artifacts.load(src, config, cls)
    except Exception as exc:
        raise PolicyLoadError(f"policy file {src} cannot be loaded: {exc}") from None
    strip_optimizer(loaded)
    dest.mkdir(parents=True, exist_ok=True)
    out = dest / "model.zip"
    save_model(loaded, out)
    record = training_record(config)
    config["shipped"] = {
        "from": str(run),
        "model": model,
        "date": _dt.datetime.now().isoformat(timespec="seconds"),
        "sha256": sha256(out),
        **record,
    }
    selected = best_evaluation(run) if Path(model).name == "best_model.zip" else None
    if selected is not None:
        config["shipped"]["selected"] = selected
    curve = curve_record(_evaluations(run))
    if curve is not None:
        config["shipped"]["curve"] = curve
    config["shipped"]["notes"] = [str(n) for n in notes]
    write_atomic(dest / "config.yaml", yaml.safe_dump(config, sort_keys=False))
    size = out.stat().st_size
    if size > MAX_SHIPPED_BYTES:
        print(
            f"edgegym ship: warning: {out} is {size / 1e3:.0f} kB (> {MAX_SHIPPED_BYTES / 1e3:.0f}"
            " kB); a smaller policy_kwargs.net_arch keeps the repository small",
            file=sys.stderr,
        )
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m edgegym.agents.ship RUN_DIR [--model best_model.zip] [--note TEXT]``."""
    parser = argparse.ArgumentParser(
        prog="python -m edgegym.agents.ship",
        description="Copy a trained run's model (without optimiser state) and config.yaml to "
        "agents/trained/<family>/, where --policy ppo finds it.",
    )
    parser.add_argument("run", metavar="RUN_DIR", help="an edgegym train output folder")
    parser.add_argument(
        "--model", default="model.zip", help="model.zip (default) or best_model.zip"
    )
    parser.add_argument("--dest", help="destination folder (default agents/trained/<family>)")
    parser.add_argument(
        "--note", action="append", default=[], help="note recorded in config.yaml (repeatable)"
    )
    args = parser.parse_args(list(argv) if argv is not None else None)
    try:
        out = ship(args.run, args.model, args.dest, args.note)
    except PolicyLoadError as exc:
        print(f"edgegym ship: error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {out} ({out.stat().st_size / 1e3:.0f} kB) and {out.parent / 'config.yaml'}")
    return 0


if __name__ == "__main__":
    from edgegym.outputs import run_command

    sys.exit(run_command(main, "python -m edgegym.agents.ship"))

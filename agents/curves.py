"""Learning curves: PPO's periodic evaluations against the published scheduler, per family.

``python -m edgegym.agents.curves [SOURCE ...] --out docs/learning-curves.png`` draws one
panel per source: the mean return of the deterministic policy on the evaluation seeds
(``eval.*`` in the family's file) against the timesteps trained, the baseline's return on
the same seeds as a dashed line, and the evaluation the shipped weights were selected at.

A source is a training run's folder (its ``evaluations.json`` and ``config.yaml``) or a
shipped policy's folder (``agents/trained/<family>``, whose ``config.yaml`` keeps the curve
under ``shipped.curve``: :func:`edgegym.agents.ship.ship` copies it there). Without sources
it draws the four shipped policies, so the figure in ``docs/`` can be redrawn from the
repository alone.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edgegym.agents.policy import TRAINED_DIR, PolicyLoadError, read_config
from edgegym.agents.ship import curve_record, read_evaluations, training_record
from edgegym.outputs import check_output_path, run_command

FAMILIES = ("continual", "mig", "energy", "dag")


@dataclass(frozen=True)
class Curve:
    """One training run's evaluations."""

    label: str
    timesteps: list[int]
    returns: list[float]
    baseline: str | None
    baseline_return: float | None
    selected: int | None = None  # timesteps of the shipped weights' evaluation
    wall_s: float | None = None


def load_curve(source: str | Path) -> Curve:
    """The curve of a run folder or a shipped folder (see the module's docstring).

    Raises:
        PolicyLoadError: No ``config.yaml``, or neither ``evaluations.json`` nor a shipped
            curve.
    """
    src = Path(source)
    config = read_config(src / "config.yaml", loading=False)  # read only: nothing built
    shipped = config.get("shipped") or {}
    if (src / "evaluations.json").exists():
        record = curve_record(read_evaluations(src))
        wall = training_record(config)["wall_s"] or None  # none recorded: not shown
    else:
        record = shipped.get("curve")
        wall = shipped.get("wall_s")
    if not record:
        raise PolicyLoadError(
            f"{src}: no evaluations.json and no shipped.curve in its config.yaml (ship the run "
            "again with python -m edgegym.agents.ship, or pass the run folder)"
        )
    selected = (shipped.get("selected") or {}).get("timesteps")
    return Curve(
        label=_label(config, src),
        timesteps=[int(t) for t in record["timesteps"]],
        returns=[float(r) for r in record["returns"]],
        baseline=record.get("baseline"),
        baseline_return=record.get("baseline_return"),
        selected=None if selected is None else int(selected),
        wall_s=None if wall is None else float(wall),
    )


def _label(config: Mapping[str, Any], src: Path) -> str:
    """``family: policy on scenario (+k more)``, then how it was trained: ``from a trained
    model`` (``--init-from``), the learning rate (``-> 0``: linear schedule), ``RLlib``."""
    hp = config.get("hyperparams") or {}
    extra = len((hp.get("train") or {}).get("scenarios") or [])
    more = f" (+{extra} more)" if extra else ""
    family = config.get("family") or src.name
    policy = config.get("policy_class") or "PPO"
    how = ["from a trained model"] if config.get("init_from") else []
    ppo = hp.get("ppo") or {}
    if ppo.get("learning_rate") is not None:
        line = " -> 0" if ppo.get("lr_schedule") == "linear" else ""
        how.append(f"lr {float(ppo['learning_rate']):g}{line}")
    if config.get("backend") == "rllib":
        how.append("RLlib")
    return f"{family}: {policy} on {config.get('scenario')}{more}\n{', '.join(how)}"


def _thousands(value: float, _pos: int) -> str:
    """A timestep tick as ``0``, ``250k``, ``1M``."""
    if abs(value) >= 1e6:
        return f"{value / 1e6:g}M"
    return f"{value / 1e3:g}k" if value else "0"


def plot_curves(curves: Sequence[Curve], path: str | Path) -> Path:
    """One panel per curve: return against timesteps, the baseline dashed, the selected
    evaluation circled."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    from edgegym.outputs import save_figure
    from edgegym.plotting import DPI

    n = len(curves)
    cols = min(n, 2)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(
        rows, cols, figsize=(5.6 * cols, 3.6 * rows), layout="constrained", squeeze=False
    )
    for ax, curve in zip(axes.flat, curves, strict=False):
        ax.plot(
            curve.timesteps,
            curve.returns,
            marker="o",
            markersize=3,
            linewidth=1.2,
            label="PPO (deterministic)",
        )
        if curve.baseline_return is not None:
            ax.axhline(
                curve.baseline_return,
                color="k",
                linestyle="--",
                linewidth=1,
                label=curve.baseline or "baseline",
            )
        if curve.selected is not None and curve.selected in curve.timesteps:
            i = curve.timesteps.index(curve.selected)
            ax.plot(
                [curve.selected],
                [curve.returns[i]],
                "o",
                markersize=10,
                markerfacecolor="none",
                color="C3",
                label="shipped weights",
            )
        wall = "" if not curve.wall_s else f", {curve.wall_s / 60:.1f} min"
        ax.set_title(f"{curve.label}{wall}", fontsize=9)
        ax.xaxis.set_major_formatter(FuncFormatter(_thousands))
        ax.set_xlabel("timesteps trained")
        ax.set_ylabel("mean return, evaluation seeds")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    save_figure(fig, path, dpi=DPI)
    plt.close(fig)
    return Path(path)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m edgegym.agents.curves [SOURCE ...] --out PNG [--force]``."""
    parser = argparse.ArgumentParser(
        prog="python -m edgegym.agents.curves",
        description="Plot PPO's periodic evaluations against the baseline, one panel per run "
        "folder or shipped policy folder (default: the four shipped policies).",
    )
    parser.add_argument(
        "sources",
        nargs="*",
        metavar="SOURCE",
        help="an edgegym train output folder or a shipped folder (agents/trained/<family>)",
    )
    parser.add_argument("--out", default="learning-curves.png", help="figure path (PNG, PDF, SVG)")
    parser.add_argument(
        "--force", action="store_true", help="overwrite a file edgegym did not write there"
    )
    args = parser.parse_args(list(argv) if argv is not None else None)
    prog = parser.prog
    sources = args.sources or [TRAINED_DIR / f for f in FAMILIES]
    try:
        out = check_output_path(args.out, flag="--out", kind="figure", force=args.force)
        curves = [load_curve(s) for s in sources]
    except (PolicyLoadError, ValueError) as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    plot_curves(curves, out)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(run_command(main, "python -m edgegym.agents.curves"))

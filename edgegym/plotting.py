"""Figures of an evaluation (Ekya Fig. 4/9 style) and line plots for reproductions.

Uses matplotlib's non-interactive Agg backend, so it works on headless machines.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.patches import Patch

from edgegym.outputs import save_figure

if TYPE_CHECKING:
    from edgegym.evaluation import EvalResult

DPI = 120
MAX_ROWS = 6
_MAX_LEGEND_STREAMS = 10


def _stream_colors(n: int) -> tuple[list[Any], list[Any]]:
    """(dark, light) colour per stream: retraining dark, inference light (tab20 pairs)."""
    cmap = plt.get_cmap("tab20")
    dark = [cmap((2 * v) % 20) for v in range(n)]
    light = [cmap((2 * v + 1) % 20) for v in range(n)]
    return dark, light


def _steps(timeline: Sequence[Mapping[str, Any]], key: str) -> tuple[np.ndarray, np.ndarray]:
    """Piecewise-constant series: x doubled per segment, y (n_points, V) repeated."""
    x = np.array([[rec["t0"], rec["t1"]] for rec in timeline], dtype=float).reshape(-1)
    y = np.repeat(np.array([rec[key] for rec in timeline], dtype=float), 2, axis=0)
    return x, y


def _window_lines(ax: Any, info: Mapping[str, Any], t_end: float) -> None:
    window_s = info.get("window_s")
    if not window_s:
        return
    k = 1
    while k * window_s < t_end - 1e-9:
        ax.axvline(k * window_s, color="0.35", linestyle="--", linewidth=0.8)
        k += 1


def _plot_shares(ax: Any, timeline: Sequence[Mapping[str, Any]], info: Mapping[str, Any]) -> None:
    x, r = _steps(timeline, "share_retrain")
    _, i = _steps(timeline, "share_infer")
    n = r.shape[1]
    dark, light = _stream_colors(n)
    layers, colors = [], []
    for v in range(n):
        layers += [r[:, v], i[:, v]]
        colors += [dark[v], light[v]]
    ax.stackplot(x, *layers, colors=colors, linewidth=0)
    gpus = info.get("gpus") or float(np.max(r.sum(axis=1) + i.sum(axis=1), initial=1.0))
    ax.axhline(gpus, color="k", linewidth=0.8)
    ax.set_ylim(0, gpus * 1.05)
    ax.set_xlim(x[0], x[-1])
    _window_lines(ax, info, x[-1])
    ax.set_ylabel("GPU share (GPUs)")
    shown = min(n, _MAX_LEGEND_STREAMS)
    handles = [
        Patch(color="0.3", label="retraining (dark)"),
        Patch(color="0.75", label="inference (light)"),
    ]
    unit = info.get("unit", "stream")
    handles += [Patch(color=dark[v], label=f"{unit} {v}") for v in range(shown)]
    if n > shown:
        handles.append(Patch(color="none", label=f"+{n - shown} more"))
    ax.legend(
        handles=handles,
        fontsize=6,
        loc="upper left",
        bbox_to_anchor=(1.0, 1.0),
        frameon=False,
        handlelength=1.2,
    )


def _plot_accuracy(ax: Any, timeline: Sequence[Mapping[str, Any]], info: Mapping[str, Any]) -> None:
    x, acc = _steps(timeline, "accuracy")
    n = acc.shape[1]
    dark, _ = _stream_colors(n)
    for v in range(n):
        ax.plot(
            x, acc[:, v], color=dark[v], linewidth=1.2, label=f"{info.get('unit', 'stream')} {v}"
        )
    a_min = info.get("a_min")
    if a_min:
        ax.axhline(a_min, color="red", linestyle=":", linewidth=1.2, label=f"a_MIN = {a_min:g}")
    _window_lines(ax, info, x[-1])
    ax.set_xlim(x[0], x[-1])
    ax.set_ylim(0, 1.0)
    ax.set_ylabel("inference accuracy")
    handles, labels = ax.get_legend_handles_labels()
    unit = info.get("unit", "stream")
    keep = [j for j, lab in enumerate(labels) if not lab.startswith(f"{unit} ") or n <= 4]
    if keep:
        ax.legend(
            [handles[j] for j in keep],
            [labels[j] for j in keep],
            fontsize=6,
            loc="lower right",
            frameon=True,
            framealpha=0.7,
        )


def _plot_bars(ax: Any, result: EvalResult) -> None:
    names, means, stds, colors = [], [], [], []
    # Each family's headline metric: Goodput (MIG), system fairness (energy), accuracy (others).
    present = set().union(*(r.get("metrics", {}).keys() for r in result.results))
    key = next((k for k in ("goodput", "F_S", "accuracy") if k in present), "accuracy")
    for r in result.results:
        acc = r.get("metrics", {}).get(key, {})
        mean = acc.get("mean")
        names.append(r["policy"] + (" (error)" if "error" in r else ""))
        means.append(np.nan if mean is None else mean)
        stds.append(acc.get("std") or 0.0)
        colors.append("tab:red" if "error" in r else "tab:blue")
    pos = np.arange(len(names))
    ax.bar(pos, np.nan_to_num(means), yerr=stds, capsize=4, color=colors, alpha=0.85)
    for p, m, sd in zip(pos, means, stds, strict=True):
        if np.isfinite(m):
            ax.text(p + 0.02, m + sd + 0.015, f"{m:.3f}", ha="center", va="bottom", fontsize=8)
    a_min = result.scenario_info.get("a_min")
    if a_min:
        ax.axhline(a_min, color="red", linestyle=":", linewidth=1.2, label=f"a_MIN = {a_min:g}")
        ax.legend(fontsize=7, loc="upper right")
    ax.set_xticks(pos)
    ax.set_xticklabels(
        names,
        rotation=20 if len(names) > 4 else 0,
        ha="right" if len(names) > 4 else "center",
        fontsize=8,
    )
    ax.set_ylim(0, 1.0)
    label = {"goodput": "Goodput", "F_S": "system fairness F_S"}.get(key, "inference accuracy")
    ax.set_ylabel(f"mean {label.lower()} (± std)")
    ax.set_title(f"mean {label} over {len(result.seeds)} episode(s)", fontsize=10)
    ax.grid(axis="y", alpha=0.3)


def plot_evaluation(result: EvalResult, path: str | Path) -> Path:
    """Draw allocations and accuracy over time per policy, and mean accuracy per policy.

    One row per policy with a timeline (at most six): left, the GPU shares of retraining
    (dark) and inference (light) per stream, stacked; right, each stream's inference
    accuracy over time; dashed lines mark retraining windows, the dotted red line a_MIN.
    A final panel compares the policies' mean accuracy (± std over episodes).

    Args:
        result: An :class:`~edgegym.evaluation.EvalResult` (run with ``timeline=True`` for the
            time panels; without timelines only the bar panel is drawn).
        path: Output PNG path.

    Returns:
        The path written.
    """
    path = Path(path)
    info = result.scenario_info or {}
    all_names = [r["policy"] for r in result.results if result.timelines.get(r["policy"])]
    names = all_names[:MAX_ROWS]
    rows = len(names)
    fig = plt.figure(figsize=(12, 2.6 * rows + 3.2), layout="constrained")
    grid = fig.add_gridspec(rows + 1, 2, height_ratios=[1.0] * rows + [1.1])
    first_left = None
    for row, name in enumerate(names):
        tl = result.timelines[name]
        left = fig.add_subplot(grid[row, 0], sharex=first_left)
        right = fig.add_subplot(grid[row, 1], sharex=left)
        first_left = first_left or left
        _plot_shares(left, tl, info)
        _plot_accuracy(right, tl, info)
        left.set_title(
            f"{name}: GPU allocation (first episode, seed {result.seeds[0]})", fontsize=10
        )
        right.set_title(f"{name}: inference accuracy", fontsize=10)
        for ax in (left, right):
            ax.grid(alpha=0.25)
            if row == rows - 1:
                ax.set_xlabel("time (s)")
    _plot_bars(fig.add_subplot(grid[rows, :]), result)
    scen = result.scenario or "default scenario"
    title = f"{result.env} — {scen}"
    if len(all_names) > len(names):
        title += f" (time panels: the first {len(names)} of {len(all_names)} policies)"
    fig.suptitle(title, fontsize=12)
    path.parent.mkdir(parents=True, exist_ok=True)
    save_figure(fig, path, dpi=DPI)
    plt.close(fig)
    return path


def plot_lines(
    series: Mapping[str, tuple[Sequence[float], Sequence[float], Sequence[float] | None]],
    xlabel: str,
    ylabel: str,
    title: str,
    path: str | Path,
) -> Path:
    """Line plot with error bars, one line per series (for reproduction figures).

    Args:
        series: Label -> ``(x, y, yerr)``; ``yerr`` may be ``None``.
        xlabel: X-axis label (with units).
        ylabel: Y-axis label (with units).
        title: Figure title.
        path: Output PNG path.

    Returns:
        The path written.
    """
    path = Path(path)
    fig, ax = plt.subplots(figsize=(6.4, 4.2), layout="constrained")
    markers = "osD^vP*Xh<>"
    for j, (label, (x, y, yerr)) in enumerate(series.items()):
        ax.errorbar(
            np.asarray(x, dtype=float),
            np.asarray(y, dtype=float),
            yerr=None if yerr is None else np.asarray(yerr, dtype=float),
            marker=markers[j % len(markers)],
            markersize=5,
            capsize=3,
            linewidth=1.5,
            label=label,
        )
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    if series:
        ax.legend(fontsize=8)
    path.parent.mkdir(parents=True, exist_ok=True)
    save_figure(fig, path, dpi=DPI)
    plt.close(fig)
    return path


__all__ = ["plot_evaluation", "plot_lines"]

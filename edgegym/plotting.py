"""Figures of an evaluation (who wins, and why, over time) and line plots for reproductions.

Uses matplotlib's non-interactive Agg backend, so it works on headless machines.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
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
#: Colour of a policy by its role, the same in every family's figure.
ROLE_COLORS = {
    "published": "#d62728",  # the family's published scheduler
    "agent": "#2ca02c",  # a trained policy (ppo, rllib)
    "random": "0.55",
    "baseline": "#1f77b4",  # every other scheduler
}
#: Hatch of retraining work in every time panel (inference is solid).
RETRAIN_HATCH = "////"


@dataclass(frozen=True)
class FigurePlan:
    """What :func:`plot_evaluation` draws, decided before drawing (and checked by the tests).

    Attributes:
        metric: The ``episode_metrics`` key the policies are ranked by (the family's
            ``Family.score``).
        label: Its axis label.
        higher_better: Whether a higher value ranks first.
        order: Policies best first (those without the metric, or that failed, last).
        mean: Policy -> mean of the metric over the episodes.
        ci: Policy -> half-width of its 95% confidence interval (Student's t over episodes).
        published: The family's published scheduler's row, if it was evaluated.
        best: The first policy of ``order``.
        runner_up: The best of the others where the published scheduler is the best (its time
            panels show what it is compared with), else ``None``.
        panels: Policies with time panels: the published scheduler, the best policy (the
            runner-up too when the published scheduler is the best), then those asked for,
            each once and only where a timeline was kept.
        kind: The time panels' kind: ``shares`` (GPU shares per tenant: continual, MIG),
            ``energy`` (time shares and power per tenant), ``dag`` (server timelines and
            request completion), or ``""`` (no timelines).
    """

    metric: str
    label: str
    higher_better: bool
    order: list[str]
    mean: dict[str, float]
    ci: dict[str, float]
    published: str | None
    best: str | None
    runner_up: str | None
    panels: list[str]
    kind: str

    def role(self, name: str) -> str:
        """``published``, ``agent``, ``random`` or ``baseline``."""
        if name == self.published:
            return "published"
        base = name.split("#")[0].split(":")[0]
        if base in ("ppo", "rllib"):
            return "agent"
        return "random" if base == "random" else "baseline"


def _score(env_id: str) -> tuple[str, str, bool]:
    from edgegym.core.registry import family_of_id

    fam = family_of_id(env_id)
    return fam.score if fam is not None else ("return", "episode return", True)


def _values(r: Mapping[str, Any], metric: str) -> list[float]:
    out = []
    for ep in r.get("per_episode", []):
        v = ep.get("return") if metric == "return" else ep.get("metrics", {}).get(metric)
        if v is not None and np.isfinite(v):
            out.append(float(v))
    return out


def _ci95(values: Sequence[float]) -> float:
    n = len(values)
    if n < 2:
        return 0.0
    from scipy.stats import t

    return float(t.ppf(0.975, n - 1) * np.std(values, ddof=1) / np.sqrt(n))


def _timeline_kind(timeline: Sequence[Mapping[str, Any]]) -> str:
    if not timeline:
        return ""
    first = timeline[0]
    if "share_infer" in first:
        return "shares"
    if "units" in first:
        return "energy"
    return "dag" if "nodes" in first else ""


def figure_plan(result: EvalResult, timeline: Sequence[str] = ()) -> FigurePlan:
    """The ranking, the published scheduler and the time panels of ``result``'s figure.

    Args:
        result: The evaluation.
        timeline: Policies to give time panels besides the published scheduler and the best.

    Raises:
        ValueError: A policy of ``timeline`` was not evaluated, or has no timeline.
    """
    from edgegym.core.registry import family_of_id

    metric, label, higher = _score(result.env)
    names = [r["policy"] for r in result.results]
    mean, ci = {}, {}
    for r in result.results:
        vals = [] if "error" in r else _values(r, metric)
        if vals:
            mean[r["policy"]], ci[r["policy"]] = float(np.mean(vals)), _ci95(vals)
    sign = -1.0 if higher else 1.0
    ranked = sorted(mean, key=lambda n: (sign * mean[n], names.index(n)))
    order = ranked + [n for n in names if n not in mean]
    fam = family_of_id(result.env)
    published = None
    if fam is not None:
        published = next((n for n in names if n == fam.default_policy), None) or next(
            (n for n in names if n.split(":")[0] == fam.default_policy), None
        )
    best = ranked[0] if ranked else None
    for name in timeline:
        if name not in names:
            raise ValueError(f"--timeline {name}: not an evaluated policy ({', '.join(names)})")
        if not result.timelines.get(name):
            raise ValueError(f"--timeline {name}: no timeline was kept for it")
    # The published scheduler and the best; when they are one, the best of the others too.
    runner_up = next((n for n in ranked if n != best), None) if published == best else None
    panels: list[str] = []
    for name in (published, best, runner_up, *timeline):
        if name is not None and name not in panels and result.timelines.get(name):
            panels.append(name)
    kind = _timeline_kind(result.timelines[panels[0]]) if panels else ""
    return FigurePlan(
        metric, label, higher, order, mean, ci, published, best, runner_up, panels, kind
    )


# ----------------------------------------------------------------------------- summary
def _plot_summary(ax: Any, plan: FigurePlan, n_episodes: int) -> None:
    """Policies best at the top, mean and 95% CI on an axis spanning the data, the published
    scheduler in red with a dashed line at its mean."""
    shown = [n for n in plan.order if n in plan.mean]
    if not shown:  # every policy failed: say so instead of an empty axis
        ax.text(0.5, 0.5, f"no policy has a value of {plan.label}", ha="center",
                transform=ax.transAxes)  # fmt: skip
        ax.set_axis_off()
        return
    y = np.arange(len(shown))[::-1]
    lo = min(plan.mean[n] - plan.ci[n] for n in shown)
    hi = max(plan.mean[n] + plan.ci[n] for n in shown)
    pad = 0.1 * (hi - lo) if hi > lo else max(abs(hi) * 0.05, 0.01)
    for yy, name in zip(y, shown, strict=True):
        color = ROLE_COLORS[plan.role(name)]
        ax.errorbar(plan.mean[name], yy, xerr=plan.ci[name], fmt="o", color=color,
                    ecolor=color, capsize=3, markersize=6, linewidth=1.5)  # fmt: skip
        ax.text(plan.mean[name] + plan.ci[name] + pad * 0.15, yy, f"{plan.mean[name]:.3f}",
                va="center", fontsize=7, color="0.2")  # fmt: skip
    if plan.published in plan.mean:
        ax.axvline(plan.mean[plan.published], color=ROLE_COLORS["published"], linestyle="--",
                   linewidth=0.8, alpha=0.6)  # fmt: skip
    ax.set_yticks(y, [n + ("  (published)" if n == plan.published else "") for n in shown])
    for tick, name in zip(ax.get_yticklabels(), shown, strict=True):
        tick.set_color(ROLE_COLORS[plan.role(name)] if plan.role(name) != "baseline" else "0.1")
        if name == plan.published:
            tick.set_fontweight("bold")
    ax.set_xlim(lo - pad, hi + 2.2 * pad)
    better = "higher" if plan.higher_better else "lower"
    ax.set_xlabel(f"{plan.label} ({better} is better); mean and 95% CI over {n_episodes} episodes")
    ax.grid(axis="x", alpha=0.3)
    missing = [n for n in plan.order if n not in plan.mean]
    title = "Policies ranked by " + plan.label
    if missing:
        title += f" (no value: {', '.join(missing)})"
    ax.set_title(title, fontsize=10)


# ----------------------------------------------------------------------------- time panels
def _edges(timeline: Sequence[Mapping[str, Any]]) -> np.ndarray:
    return np.array([rec["t0"] for rec in timeline] + [timeline[-1]["t1"]], dtype=float)


def _stepped(timeline: Sequence[Mapping[str, Any]], key: str) -> np.ndarray:
    """(S + 1, V): the records' ``key`` per stretch, the last repeated (``step="post"``)."""
    y = np.array([rec[key] for rec in timeline], dtype=float)
    return np.vstack([y, y[-1:]])


def _tenant_colors(n: int) -> list[Any]:
    cmap = plt.get_cmap("tab10" if n <= 10 else "tab20")
    return [cmap(v % cmap.N) for v in range(n)]


def _window_lines(ax: Any, info: Mapping[str, Any], t_end: float) -> None:
    window_s = info.get("window_s")
    if not window_s:
        return
    k = 1
    while k * window_s < t_end - 1e-9:
        ax.axvline(k * window_s, color="0.35", linestyle="--", linewidth=0.7)
        k += 1


def _stack(ax: Any, x: np.ndarray, layers: list[tuple[np.ndarray, Any, bool]], top: float) -> None:
    """Stacked layers ``(values, colour, hatched)`` from 0, then the rest up to ``top``."""
    base = np.zeros_like(x)
    for values, color, hatched in layers:
        upper = base + values
        if np.any(values > 0):
            ax.fill_between(x, base, upper, step="post", linewidth=0,
                            facecolor=(*color[:3], 0.35) if hatched else color,
                            edgecolor=color if hatched else "none",
                            hatch=RETRAIN_HATCH if hatched else None)  # fmt: skip
        base = upper
    ax.fill_between(x, base, np.maximum(base, top), step="post", facecolor="0.93",
                    edgecolor="0.75", hatch="..", linewidth=0)  # fmt: skip
    ax.axhline(top, color="k", linewidth=0.8)
    ax.set_ylim(0, top * 1.04)
    ax.set_xlim(x[0], x[-1])


def _legend(ax: Any, names: Sequence[str], colors: Sequence[Any], what: Sequence[str],
            idle: str | None = None) -> None:  # fmt: skip
    shown = list(names[:10])
    handles = [Patch(facecolor=colors[v], label=shown[v]) for v in range(len(shown))]
    if len(names) > len(shown):
        handles.append(Patch(color="none", label=f"+{len(names) - len(shown)} more"))
    patterns = {
        "inference": Patch(facecolor="0.45", label="inference (solid)"),
        "retraining": Patch(
            facecolor=(0.45, 0.45, 0.45, 0.35),
            edgecolor="0.3",
            hatch=RETRAIN_HATCH,
            label="retraining (hatched)",
        ),
    }
    handles = [patterns[w] for w in what if w in patterns] + handles
    if idle:
        handles.insert(0, Patch(facecolor="0.93", edgecolor="0.6", hatch="..", label=idle))
    ax.legend(handles=handles, fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0),
              frameon=False, handlelength=1.6)  # fmt: skip


def _panel_shares(left: Any, right: Any, tl: Sequence[Mapping[str, Any]],
                  info: Mapping[str, Any], fig: Any) -> None:  # fmt: skip
    """Continual and MIG: GPU shares per tenant (inference solid, retraining hatched, the rest
    dotted), and inference accuracy per tenant as a heat map."""
    x = _edges(tl)
    infer, retrain = _stepped(tl, "share_infer"), _stepped(tl, "share_retrain")
    n = infer.shape[1]
    colors = _tenant_colors(n)
    layers = [(infer[:, v], colors[v], False) for v in range(n)]
    layers += [(retrain[:, v], colors[v], True) for v in range(n)]
    gpus = float(info.get("gpus") or 1.0)
    continual = "streams" in info
    idle = "idle or micro-profiler" if continual else "idle GPCs"
    _stack(left, x, layers, gpus)
    _window_lines(left, info, x[-1])
    left.set_ylabel("GPU share (GPUs)" if continual else "share of the GPU (7 GPCs)")
    unit = info.get("unit", "tenant")
    _legend(left, [f"{unit} {v}" for v in range(n)], colors, ("inference", "retraining"), idle)
    acc = np.array([rec["accuracy"] for rec in tl], dtype=float).T  # (V, S)
    mesh = right.pcolormesh(x, np.arange(n + 1), acc, vmin=0.0, vmax=1.0, cmap="viridis",
                            shading="flat")  # fmt: skip
    right.set_yticks(np.arange(n) + 0.5, [str(v) for v in range(n)], fontsize=6)
    right.set_ylabel(unit)
    _window_lines(right, info, x[-1])
    bar = fig.colorbar(mesh, ax=right, pad=0.01, fraction=0.04)
    a_min = info.get("a_min")
    bar.set_label("inference accuracy" + (" (red: a_MIN)" if a_min else ""), fontsize=7)
    if a_min:
        bar.ax.axhline(a_min, color="red", linewidth=1.5)


def _panel_energy(left: Any, right: Any, tl: Sequence[Mapping[str, Any]],
                  info: Mapping[str, Any], fig: Any) -> None:  # fmt: skip
    """ETF: each tenant's share of every quantum (the rest idle) and its power over time."""
    x = _edges(tl)
    dt = np.diff(x)
    dt = np.r_[dt, dt[-1]][:, None]
    used = np.flatnonzero(np.any([rec["active"] for rec in tl], axis=0))  # slots ever filled
    share = (_stepped(tl, "time_s") / dt)[:, used]
    power = (_stepped(tl, "energy_j") / dt)[:, used]
    n = len(used)
    given = list(info.get("tenants") or [])
    names = [given[v] if v < len(given) else f"tenant {v}" for v in used]
    colors = _tenant_colors(n)
    _stack(left, x, [(share[:, v], colors[v], False) for v in range(n)], 1.0)
    left.set_ylabel("share of each quantum")
    _legend(left, names, colors, (), "idle")
    for v in range(n):
        right.step(x, power[:, v], where="post", color=colors[v], linewidth=1.2, label=names[v])
    right.step(x, power.sum(axis=1), where="post", color="k", linewidth=0.9, label="all tenants")
    right.set_xlim(x[0], x[-1])
    right.set_ylim(0, None)
    right.set_ylabel("power of the tenant's slices (W)")
    right.legend(fontsize=6, loc="upper right", framealpha=0.7)


def _server_load(nodes: np.ndarray, servers: int, edges: np.ndarray) -> np.ndarray:
    """(servers, 2, bins): mean inference and retraining units in use per time bin."""
    out = np.zeros((servers, 2, len(edges) - 1))
    for j in range(servers):
        for r in (0, 1):
            mine = nodes[(nodes[:, 0] == j) & ((nodes[:, 4] > 0) == bool(r))]
            if not len(mine):
                continue
            t = np.r_[mine[:, 1], mine[:, 2]]
            order = np.argsort(t, kind="stable")
            t = t[order]
            level = np.cumsum(np.r_[mine[:, 3], -mine[:, 3]][order])  # units after each event
            area = np.r_[0.0, np.cumsum(level[:-1] * np.diff(t))]  # integral up to each event
            cum = np.interp(edges, t, area, left=0.0, right=area[-1])
            out[j, r] = np.diff(cum) / np.diff(edges)
    return out


def _panel_dag(left: Any, right: Any, tl: Sequence[Mapping[str, Any]],
               info: Mapping[str, Any], fig: Any) -> None:  # fmt: skip
    """SRS/MRS: every server's resource units in use over time (inference solid, retraining
    hatched), and each request's completion time against its arrival, by application."""
    nodes = np.array([n for rec in tl for n in rec["nodes"]], dtype=float)
    servers = int(info.get("servers") or (nodes[:, 0].max() + 1))
    cap = float(info.get("capacity") or 1.0)
    apps = list(info.get("apps") or sorted({rec["app"] for rec in tl}))
    colors = _tenant_colors(max(len(apps), 1))
    end = float(nodes[:, 2].max())
    edges = np.linspace(0.0, end, 121)
    load = _server_load(nodes, servers, edges) / cap * 0.85  # rows 0.85 high at full capacity
    x = edges
    for j in range(servers):
        inf, ret = np.r_[load[j, 0], load[j, 0, -1]], np.r_[load[j, 1], load[j, 1, -1]]
        left.fill_between(x, j, j + inf, step="post", color="#1f77b4", linewidth=0)
        left.fill_between(x, j + inf, j + inf + ret, step="post", linewidth=0,
                          facecolor=(0.84, 0.15, 0.16, 0.3), edgecolor="#d62728",
                          hatch=RETRAIN_HATCH)  # fmt: skip
        left.axhline(j + 0.85, color="0.6", linewidth=0.5, linestyle=":")
    left.set_yticks(np.arange(servers) + 0.42, [f"server {j}" for j in range(servers)], fontsize=6)
    left.set_ylim(0, servers)
    left.set_xlim(0, end)
    left.set_ylabel(f"mean units in use per {end / 120:.2g} s (dotted: capacity)", fontsize=8)
    left.legend(handles=[Patch(facecolor="#1f77b4", label="inference (solid)"),
                         Patch(facecolor=(0.84, 0.15, 0.16, 0.3), edgecolor="#d62728",
                               hatch=RETRAIN_HATCH, label="retraining (hatched)")],
                fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)  # fmt: skip
    arrival = np.array([rec["arrival_s"] for rec in tl])
    completion = np.array([rec["completion_s"] for rec in tl])
    for a, name in enumerate(apps):
        mine = [k for k, rec in enumerate(tl) if rec["app"] == name]
        if mine:
            right.scatter(arrival[mine], completion[mine], s=6, color=colors[a], label=name,
                          alpha=0.7, linewidths=0)  # fmt: skip
    right.set_ylabel("request completion time (s)")
    right.set_xlim(0, max(float(arrival.max()), 1.0))
    right.set_ylim(0, None)
    right.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False,
                 markerscale=2)  # fmt: skip


_PANELS = {
    "shares": (_panel_shares, "GPU shares over time", "inference accuracy"),
    "energy": (_panel_energy, "time shares per quantum", "power per tenant"),
    "dag": (_panel_dag, "server timelines", "request completion"),
}


def draw_evaluation(result: EvalResult, timeline: Sequence[str] = ()) -> tuple[Any, FigurePlan]:
    """The evaluation figure (a matplotlib ``Figure``) and its :class:`FigurePlan`: the
    policies ranked with 95% confidence intervals, then a row of time panels for the
    published scheduler, the best policy and each of ``timeline`` (their first episode)."""
    plan = figure_plan(result, timeline)
    info = result.scenario_info or {}
    rows = len(plan.panels) if plan.kind else 0
    summary_h = max(2.2, 0.28 * len(plan.order) + 1.0)
    fig = plt.figure(figsize=(12, summary_h + 2.7 * rows), layout="constrained")
    grid = fig.add_gridspec(1 + rows, 2, height_ratios=[summary_h] + [2.7] * rows)
    _plot_summary(fig.add_subplot(grid[0, :]), plan, len(result.seeds))
    draw, left_what, right_what = _PANELS.get(plan.kind, (None, "", ""))
    first = None
    for row, name in enumerate(plan.panels if draw else []):
        left = fig.add_subplot(grid[1 + row, 0], sharex=first)
        right = fig.add_subplot(grid[1 + row, 1], sharex=left)
        first = first or left
        draw(left, right, result.timelines[name], info, fig)
        why = {plan.published: "published", plan.best: "best", plan.runner_up: "runner-up"}.get(
            name, "asked for"
        )
        if name == plan.published == plan.best:
            why = "published, best"
        color = ROLE_COLORS[plan.role(name)]
        left.set_title(f"{name} ({why}): {left_what}", fontsize=9, color=color)
        right.set_title(f"{name}: {right_what}", fontsize=9, color=color)
        for ax in (left, right):
            ax.grid(alpha=0.2)
            if row == rows - 1:
                ax.set_xlabel("time (s), first episode" if plan.kind != "dag" else "time (s)")
        if plan.kind == "dag":
            right.set_xlabel("request arrival (s)")
    scen = result.scenario or "default scenario"
    fig.suptitle(f"{result.env} — {scen}, seeds {result.seeds[0]}..{result.seeds[-1]}",
                 fontsize=11)  # fmt: skip
    return fig, plan


def plot_evaluation(result: EvalResult, path: str | Path, timeline: Sequence[str] = ()) -> Path:
    """Write the evaluation figure (:func:`draw_evaluation`) to ``path``.

    Args:
        result: An :class:`~edgegym.evaluation.EvalResult` (run with ``timeline=True`` for the
            time panels; without timelines only the ranking is drawn).
        path: Output image path.
        timeline: Policies to give time panels besides the published scheduler and the best.

    Returns:
        The path written.

    Raises:
        ValueError: A policy of ``timeline`` was not evaluated or kept no timeline.
        edgegym.outputs.OutputWriteError: The figure could not be written to ``path``; it
            was saved to the rescue file the message names.
    """
    path = Path(path)
    fig, _ = draw_evaluation(result, timeline)
    try:
        save_figure(fig, path, dpi=DPI)  # makes missing parents; a failed write is rescued
    finally:
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
    try:
        save_figure(fig, path, dpi=DPI)  # makes missing parents; a failed write is rescued
    finally:
        plt.close(fig)
    return path


__all__ = ["FigurePlan", "draw_evaluation", "figure_plan", "plot_evaluation", "plot_lines"]

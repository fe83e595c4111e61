"""Rendering ``leaderboard.json`` as ``leaderboard.md`` and one figure per family."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from edgegym.core.registry import FAMILIES
from edgegym.leaderboard.selection import (
    HEADROOM,
    MD_NAME,
    REFERENCES,
    default_scenario_of,
    families,
    is_headroom,
    natural_key,
    repo_relative,
    shipped_info,
)
from edgegym.outputs import save_figure, write_text


# ----------------------------------------------------------------------------- rendering
def cell_rows(cell: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The cell's results that have a return, best first."""
    rows = [r for r in cell.get("results", []) if r.get("mean_return") is not None]
    return sorted(rows, key=lambda r: -r["mean_return"])


def best_baseline(rows: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The best row other than ``ppo``, ``random`` and the headroom references."""
    for r in rows:
        name = r["policy"]
        if name not in ("ppo", "random") and not is_headroom(name) and "error" not in r:
            return r
    return None


def headroom_row(family: str, rows: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The family's first headroom reference that has a result in ``rows``, if any."""
    by_name = {r["policy"]: r for r in rows if "error" not in r}
    return next((by_name[n] for n in HEADROOM.get(family, ()) if n in by_name), None)


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


def duration_text(seconds: float | None) -> str:
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
        f"{_budget_text(info, 'timesteps')}, {info.get('n_envs', 1)} env(s), "
        f"{duration_text(info.get('wall_s'))} wall time"
    )


def _budget_text(info: Mapping[str, Any], unit: str) -> str:
    """The shipped run's steps, and those of the model a fine-tuning run started from."""
    text = f"{int(info.get('timesteps') or 0):,} {unit}"
    before = info.get("init_from")
    if before:
        text += f" (after {int(before):,} in the model it was fine-tuned from)"
    return text


def _stale(info: Mapping[str, Any] | None, family: str) -> bool:
    """True when the shipped model changed (or appeared) since the cell was evaluated."""
    now = shipped_info(family)
    then_sha = None if info is None else info.get("sha256")
    now_sha = None if now is None else now.get("sha256")
    return then_sha != now_sha


def _cell_table(cell: Mapping[str, Any], family: str) -> list[str]:
    rows = cell_rows(cell)
    cols = _metric_columns(cell)
    best = best_baseline(rows)
    header = ["#", "policy", "return", *(label for _, label, _, _ in cols), "decision ms"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for rank, r in enumerate(rows, 1):
        name = r["policy"]
        label = f"**{name}**" if name == "ppo" else name
        if best is not None and name == best["policy"]:
            label += " (best baseline)"
        elif is_headroom(name):
            label += " (headroom reference)"
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
    ref = headroom_row(family, rows)
    if ref is not None and ppo is not None:
        gap = _gap(ppo["mean_return"], ref["mean_return"])
        notes.append(f"PPO − headroom reference ({ref['policy']}): {gap}.")
    for r in cell.get("results", []):
        if "error" in r:
            done = r.get("episodes", "?")
            notes.append(f"(!) {r['policy']} failed after {done} episode(s): {r['error']}")
    for name, why in (cell.get("skipped") or {}).items():
        why = repo_relative(why)
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
        "headroom reference",
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
        rows = {r["policy"]: r for r in cell_rows(cell)}
        best = best_baseline(cell_rows(cell))
        headroom = headroom_row(fam, cell_rows(cell))
        ppo = rows.get("ppo")
        info = cell.get("ppo")
        now = shipped_info(fam) if info is not None else None
        if now is not None and now.get("sha256") == info.get("sha256"):
            info = now  # the same model: its record as it reads now (fields added since)

        def ret(name: str, rows: Mapping[str, Any] = rows) -> str:
            r = rows.get(name)
            return "–" if r is None else _pm({"mean": r["mean_return"], "std": r.get("std_return")})

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
                    "–" if headroom is None else f"{headroom['policy']} {ret(headroom['policy'])}",
                    "–"
                    if ppo is None or best is None
                    else _gap(ppo["mean_return"], best["mean_return"]),
                    _published_gap(fam, rows),
                    " / ".join(beats) if beats else "–",
                    _policy_text(info),
                    "–" if info is None else _budget_text(info, "steps"),
                    "–" if info is None else duration_text(info.get("wall_s")),
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
    parts += ["fine-tuned from an earlier agent"] if info.get("init_from") is not None else []
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
    cells_by_fam = _cells_by_family(data, known)
    fams = list(cells_by_fam)
    lines = [*_intro(data, cells_by_fam), *_summary(data, fams), "", *_SUMMARY_NOTE]
    for fam in fams:
        lines += _family_section(fam, known[fam], cells_by_fam[fam], out)
    return write_text(out / MD_NAME, "\n".join(lines).rstrip() + "\n", "report")


def _cells_by_family(
    data: Mapping[str, Any], known: Mapping[str, str]
) -> dict[str, list[dict[str, Any]]]:
    """The evaluated cells per known family (in the families' order), the default scenario
    first, then by name."""
    cells_by_fam: dict[str, list[dict[str, Any]]] = {}
    for key, cell in data["cells"].items():
        fam = cell.get("family") or key.split("/", 1)[0]
        cells_by_fam.setdefault(fam, []).append(cell)
    fams = [f for f in known if f in cells_by_fam]
    for fam in fams:
        cells_by_fam[fam].sort(
            key=lambda c, f=fam: (
                c.get("scenario") != default_scenario_of(f),
                natural_key(c["scenario"]),
            )
        )
    return {fam: cells_by_fam[fam] for fam in fams}


def _intro(data: Mapping[str, Any], cells_by_fam: Mapping[str, list[dict[str, Any]]]) -> list[str]:
    """The title, what the tables show, how long the evaluation took and on what."""
    runs = [r for r in data.get("runs", []) if isinstance(r, dict)]
    last = runs[-1] if runs else {}
    total = sum(float(c.get("wall_s") or 0.0) for cs in cells_by_fam.values() for c in cs)
    machine = last.get("machine") or {}
    return [
        "# Leaderboard",
        "",
        "Every registered policy of each family — the published schedulers, `random`, and the "
        "shipped PPO agent (`agents/trained/<family>/`), with a headroom reference where a "
        "family has one — on the family's bundled scenarios, "
        "every policy on the same seeded episodes. **Return** is the environment's objective "
        "(higher is better; the DAG family's is minus its objective), mean ± std over "
        "episodes; the other columns are the family's headline metrics from the evaluator "
        "(`edgegym.evaluation.headline_metrics()`, then accuracy, energy, retrainings), and the "
        "policy's mean decision time. Policies are ranked by mean return. Each baseline runs "
        "where its paper evaluates it (Ekya's uniform baselines and no-retrain without the "
        "micro-profiler, MIGRator's `ekya-mig` and `astraea` on MPS shares: "
        "[baselines.md](baselines.md)).",
        "",
        "Generated by `python -m edgegym.leaderboard` from `leaderboard.json` (re-render with "
        "`--render-only`). Evaluation time of the scenarios below: "
        f"{duration_text(total)} on {machine.get('cpu_count', '?')} CPU core(s) "
        f"({machine.get('platform', '?')}). Reproduce, train and ship: "
        "[agents.md](agents.md).",
        "",
        "## Shipped PPO on each family's default scenario",
        "",
    ]


#: What the summary table's columns mean.
_SUMMARY_NOTE = [
    "*PPO − best* is the PPO's mean return minus the best baseline's (best registered "
    "policy other than `random` and `ppo`), relative to the latter in brackets; "
    "negative means the baseline wins; *PPO − published* the same against the family's "
    "published scheduler (thief, migrator, etf, mrs). *Headroom reference*: a search run "
    "beside the baselines but never counted as one (`HEADROOM` in "
    "`edgegym/leaderboard/selection.py`): `thief:exact=true` is the exact optimum of the "
    "thief's own estimate over every split of the GPUs, so its lead over the thief is what "
    "Algorithm 1's greedy steals leave to a learned scheduler on the same information "
    "([baselines.md](baselines.md)). *Policy*: `MLP` (flat, one "
    "scenario's spaces), `PerTenantPolicy` (shared per-tenant encoder and action heads on "
    "the full `MultiDiscrete`), `PooledPolicy` (shared per-tenant encoder, pooled, over "
    "the joint-action catalogue) or `GraphPolicy` (message passing over the DAG, a server "
    "scorer and per-task retraining heads); these play any number of tenants, GPUs or "
    "servers "
    "([agents.md](agents.md#agents-of-any-size)); the strong start is behaviour cloning "
    "from a baseline before PPO, where used, or the weights of an earlier agent "
    "(`edgegym train --init-from`, fine-tuning). Training budget and wall time are those of "
    "the run recorded in the shipped `config.yaml` (training on this 2-core machine, `nice`d, "
    "beside other jobs). An MLP agent plays the scenarios whose spaces match its training "
    "scenario (a transfer test); a per-tenant one every scenario whose configurations "
    "match, a pooled one any number of configurations too (missing ones read as pruned); "
    "elsewhere it is listed as not evaluated, with the reason. Scenarios named "
    "`SCENARIO@KEY=VALUE` are held-out variants (`HELD_OUT` in "
    "`edgegym/leaderboard/selection.py`): sizes no shipped agent was trained on.",
]


def _family_section(fam: str, env_id: str, cells: list[dict[str, Any]], out: Path) -> list[str]:
    """One family: its header, its figure (written here) and a table per scenario."""
    lines = ["", f"## {fam} — `{env_id}`", "", *_family_header(fam, cells), ""]
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
            f" in {duration_text(cell.get('wall_s'))}.",
            "",
        ]
        if "error" in cell:
            lines += [f"Evaluation failed: {cell['error']}", ""]
            continue
        lines += [*_cell_table(cell, fam), ""]
    return lines


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
    cells = [c for c in cells if "error" not in c and cell_rows(c)]
    if not cells:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(cells)
    ncols = min(4, n)
    nrows = math.ceil(n / ncols)
    n_pol = max(len(cell_rows(c)) for c in cells)
    fig, axes = plt.subplots(
        nrows,
        ncols,
        figsize=(max(6.0, 4.2 * ncols), (0.26 * n_pol + 1.1) * nrows + 0.5),
        squeeze=False,
        layout="constrained",
    )
    for ax, cell in zip(axes.flat, cells, strict=False):
        rows = cell_rows(cell)[::-1]
        best = best_baseline(cell_rows(cell))
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
                else "tab:purple"
                if is_headroom(name)
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
        f"{fam} ({families()[fam]})\norange: shipped PPO, green: best baseline, grey: random"
        + (", purple: headroom reference" if HEADROOM.get(fam) else ""),
        fontsize=9,
    )
    save_figure(fig, path, dpi=110)
    plt.close(fig)
    return path

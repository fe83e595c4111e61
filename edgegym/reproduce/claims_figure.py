"""The claims table's figure: every held-out claim's verdict at each point of its robustness
sweep, one panel per paper (``docs/reproduction/robustness.png``).

A row is a claim, a column a sweep point (the inputs as given first); a cell is green where the
claim holds there by its rule, red where it fails, grey where the claim is not judged at that
point (its inputs are not swept there, or it is judged at one point only). A claim counts as
holding only where its whole row is green (:class:`~edgegym.reproduce.claims.Claim`'s
``points``).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from edgegym.outputs import save_figure
from edgegym.reproduce.claims import DEFAULT_POINT, PAPERS, TITLES, Claim

_LABEL_CHARS = 64  # a row label's width: a longer claim loses its middle


def verdict_grid(claims: Sequence[Claim]) -> tuple[list[str], np.ndarray]:
    """One paper's held-out ``claims`` as a grid: the sweep points (the inputs as given first,
    then in the order the claims name them) and a (claims, points) array of 1 (holds there),
    0 (fails there) and NaN (not judged there). A claim judged at one point has its verdict
    under :data:`DEFAULT_POINT`."""
    verdicts = [c.points or {DEFAULT_POINT: c.holds} for c in claims]
    names = list(dict.fromkeys([DEFAULT_POINT, *(n for v in verdicts for n in v)]))
    grid = np.full((len(claims), len(names)), np.nan)
    for i, v in enumerate(verdicts):
        for j, name in enumerate(names):
            if name in v:
                grid[i, j] = float(v[name])
    return names, grid


def row_label(c: Claim) -> str:
    """A claim's row: its verdict, where the paper makes it (up to the first comma) and the
    claim, its middle cut where it is long, so that claims that differ at their end (1 or 2
    GPUs) stay apart."""
    text = f"{c.figure.split(',')[0]}: {c.claim}"
    if len(text) > _LABEL_CHARS:
        half = (_LABEL_CHARS - 3) // 2
        text = f"{text[:half].rstrip()}...{text[-half:].lstrip()}"
    return f"{'holds' if c.holds else 'fails'} | {text}"


def plot_robustness(claims: Sequence[Claim], path: str | Path) -> Path | None:
    """Draw the grid of every paper's held-out ``claims`` to ``path``; ``None`` (nothing
    drawn) where there is no held-out claim."""
    panels = []
    for paper in PAPERS:
        held = [c for c in claims if c.paper == paper and c.role == "held-out"]
        if held:
            panels.append((paper, held, *verdict_grid(held)))
    if not panels:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.colors import ListedColormap

    cmap = ListedColormap(["#d62728", "#2ca02c"])
    cmap.set_bad("#dddddd")
    widest = max(len(names) for _, _, names, _ in panels)
    # a panel's height in rows: its claims, its title and its column labels (a character of
    # a label at 7 pt is about a fifth of a row)
    heights = [len(held) + 2 + 0.2 * max(map(len, names)) for _, held, names, _ in panels]
    fig = plt.figure(figsize=(4.2 + 0.26 * widest, 0.24 * sum(heights) + 0.6), layout="constrained")
    subfigs = fig.subfigures(len(panels), 1, height_ratios=heights, squeeze=False)[:, 0]
    axes = [sub.add_subplot() for sub in subfigs]
    smoke = any(c.smoke for _, held, _, _ in panels for c in held)
    for ax, (paper, held, names, grid) in zip(axes, panels, strict=True):
        ax.imshow(np.ma.masked_invalid(grid), cmap=cmap, vmin=0, vmax=1, aspect="auto")
        ax.set_xlim(-0.5, widest - 0.5)
        ax.set_xticks(range(len(names)), names, rotation=90, fontsize=7)
        ax.set_yticks(
            range(len(held)),
            [row_label(c) for c in held],
            fontsize=7,
        )
        ax.set_xticks(np.arange(-0.5, len(names)), minor=True)
        ax.set_yticks(np.arange(-0.5, len(held)), minor=True)
        ax.grid(which="minor", color="white", linewidth=1)
        ax.tick_params(which="minor", length=0)
        for side in ("top", "right", "bottom", "left"):
            ax.spines[side].set_visible(False)
        count = sum(c.holds for c in held)
        ax.set_title(
            f"{TITLES[paper]}: {count} of {len(held)} held-out claims hold at every point",
            fontsize=9,
            loc="left",
        )
    fig.suptitle(
        "Each held-out claim at each robustness point: green holds, red fails, grey not judged"
        + (" (smoke run: not counted)" if smoke else ""),
        fontsize=10,
    )
    out = save_figure(fig, path, dpi=110)
    plt.close(fig)
    return out

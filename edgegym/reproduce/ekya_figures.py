"""The Ekya reproduction's figures, drawn from what its sections measured.

A full run and ``--render-only`` draw them alike: :func:`figure_inputs` takes from the sections'
measurements (``ekya-runs.json``'s ``sections``) exactly what the figures show, and raises
``KeyError`` or ``TypeError`` on a saved run that lacks it (read before anything is written);
:func:`draw` writes the seven PNGs. The grids (stream counts, GPU counts, Deltas, noise levels,
swept inputs) come from the measurements themselves.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from edgegym.outputs import save_figure
from edgegym.plotting import plot_lines
from edgegym.reproduce.ekya_claims import FIXEDCONFIG, UNIFORMS
from edgegym.reproduce.ekya_inputs import SCENARIO_POINT, SWEEP_FACTORS

#: How the schedulers are named in the report's tables and figures.
LABELS = {
    "thief": "Ekya (thief)",
    "uniform-c1-50": "Uniform (Cfg 1, 50%)",
    "uniform-c2-90": "Uniform (Cfg 2, 90%)",
    "uniform-c2-50": "Uniform (Cfg 2, 50%)",
    "uniform-c2-30": "Uniform (Cfg 2, 30%)",
    "ekya-fixedres": "Ekya-FixedRes",
    FIXEDCONFIG: "Ekya-FixedConfig (Cfg 2)",
    "no-retrain": "No retraining",
}
#: The baseline lines of Fig. 8 (``ekya-fig7.png``) and of Fig. 10a (``ekya-fig8.png``).
FIG8_POLICIES = ("thief", *UNIFORMS, "no-retrain")
FIG10A_POLICIES = ("thief", "ekya-fixedres", FIXEDCONFIG, "uniform-c2-50")

#: One line of :func:`edgegym.plotting.plot_lines`: x, mean and std (or ``None``).
Line = tuple[list[float], list[float], list[float] | None]


def series(by_x: Mapping[Any, Sequence[float]]) -> Line:
    """One line from ``x -> (mean, std)``."""
    return list(by_x), [float(v[0]) for v in by_x.values()], [float(v[1]) for v in by_x.values()]


def figure_inputs(sections: Mapping[str, Any]) -> dict[str, Any]:
    """What the figures show, taken from the sections' measurements (:func:`draw`'s input).

    Raises:
        KeyError, TypeError: ``sections`` lacks a measurement a figure shows (a saved run of
            another version).
    """
    a, b, d, e, g = (sections[k] for k in "abdeg")
    sim = b["sim"]["acc"]
    gpus = list(sim["thief"])
    best_sim = [max(sim[u][n][0] for u in UNIFORMS) for n in gpus]
    fig8 = {LABELS[p]: series(b["acc"][p]) for p in FIG8_POLICIES}
    fig8["Ekya (thief), simulator's setting"] = series(sim["thief"])
    fig8["best uniform, simulator's setting"] = (gpus, best_sim, None)
    return {
        "fig6": {
            gpu_count: {LABELS[p]: series(by_n) for p, by_n in acc.items()}
            for gpu_count, acc in a["acc"].items()
        },
        "fig8": fig8,
        "fig10a": {LABELS[p]: series(b["acc"][p]) for p in FIG10A_POLICIES},
        "delta": {
            f"thief ({name})": series(dict(zip(d["deltas"], acc, strict=True)))
            for name, acc in d["acc"].items()
        },
        "noise": {"Ekya (thief)": series(dict(zip(e["noise"], e["acc"], strict=True)))},
        "sweep": {"gain": g["gain"], "swept": g["swept"]},
    }


def draw(inputs: Mapping[str, Any], scenario: str, out: Path) -> None:
    """Every figure of the report into ``out`` from :func:`figure_inputs`."""
    for gpus, lines in inputs["fig6"].items():
        plot_lines(
            lines,
            "video streams",
            "inference accuracy (window average)",
            f"Fig. 6: accuracy vs streams, {gpus} GPU(s) ({scenario})",
            out / f"ekya-fig6-{gpus}gpu.png",
        )
    plot_lines(
        inputs["fig8"],
        "GPUs",
        "inference accuracy",
        f"Fig. 8: 10 streams vs GPUs ({scenario})",
        out / "ekya-fig7.png",
    )
    plot_lines(
        inputs["fig10a"],
        "GPUs",
        "inference accuracy",
        f"Fig. 10a: 10 streams vs GPUs ({scenario})",
        out / "ekya-fig8.png",
    )
    plot_lines(
        inputs["delta"],
        "Delta (GPUs)",
        "inference accuracy",
        f"Delta sensitivity ({scenario}, 4 GPUs, simulator's setting)",
        out / "ekya-fig10.png",
    )
    plot_lines(
        inputs["noise"],
        "profiler error std (accuracy)",
        "inference accuracy",
        f"Fig. 11b: micro-profiler noise ({scenario}, 4 GPUs)",
        out / "ekya-fig11b.png",
    )
    sweep = inputs["sweep"]
    _plot_sweep(sweep["gain"], sweep["swept"], scenario, out / "ekya-sweep.png")


def _plot_sweep(
    gain: Mapping[str, Mapping[int, float]],
    swept: Mapping[str, Sequence[str]],
    scenario: str,
    path: Path,
) -> None:
    """One row per swept input: the thief's gain over the best uniform at x0.5 (circle) and x2
    (square), against the scenario's (dashed), one panel per GPU count."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = list(swept)
    gpu_counts = list(gain[SCENARIO_POINT])
    y = np.arange(len(labels))[::-1]
    fig, axes = plt.subplots(
        1, len(gpu_counts), figsize=(11, 0.42 * len(labels) + 1.6), sharey=True
    )
    axes = np.atleast_1d(axes)
    for ax, g in zip(axes, gpu_counts, strict=True):
        base = 100 * gain[SCENARIO_POINT][g]
        for yi, label in zip(y, labels, strict=True):
            pts = [100 * gain[n][g] for n in swept[label]]
            ax.plot([min(pts), max(pts)], [yi, yi], color="0.6", lw=1)
            for n, v in zip(swept[label], pts, strict=True):
                ax.plot(v, yi, "o" if n.endswith(f"x{SWEEP_FACTORS[0]:g}") else "s", color="C0")
        ax.axvline(base, color="C3", ls="--", lw=1, label=f"as in the scenario ({base:+.1f})")
        ax.axvline(0, color="k", lw=0.6)
        ax.set_title(f"{g} GPU{'s' if g > 1 else ''}, 10 streams")
        ax.set_xlabel("thief minus best uniform (points)")
        ax.grid(alpha=0.3, axis="x")
        ax.set_ylim(-1.3, len(labels) - 0.5)  # room for the legend below the last input
        ax.legend(fontsize=8, loc="lower right")
    axes[0].set_yticks(y, [lab.partition(" (")[0] for lab in labels], fontsize=8)
    fig.suptitle(
        f"Synthesised inputs swept ({scenario}): x{SWEEP_FACTORS[0]:g} circle, "
        f"x{SWEEP_FACTORS[1]:g} square",
        fontsize=10,
    )
    fig.tight_layout()
    save_figure(fig, path, dpi=120)
    plt.close(fig)

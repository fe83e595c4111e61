"""The Ekya reproduction's section tables, written from what its sections measured.

A full run and ``--render-only`` write them alike: :func:`section_texts` takes the sections'
measurements (``ekya-runs.json``'s ``sections``) and returns each section's Markdown table, and
raises ``KeyError`` or ``TypeError`` on a saved run that lacks a number a table shows (read
before anything is written). The grids (stream and GPU counts, Deltas, noise levels, ablations,
swept inputs) and the schedulers' order come from the measurements themselves.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from edgegym.reproduce.ekya_claims import UNIFORMS, gain_over_each, pct, search_worth
from edgegym.reproduce.ekya_figures import LABELS
from edgegym.reproduce.ekya_inputs import SCENARIO_POINT, table1_label

#: Table 2 (Table 3 in the arXiv version): the streams each scheduler keeps at accuracy >= 0.75
#: on 1 and 2 GPUs.
PAPER_CAPACITY = {
    "thief": (2, 8),
    "uniform-c1-50": (2, 2),
    "uniform-c2-90": (2, 4),
    "uniform-c2-50": (2, 4),
    "uniform-c2-30": (0, 2),
}
#: (f): how the rows that are not one of the thief's ablations are named.
_ABLATION_LABELS = {
    "oracle": "oracle thief (true profiles, scenario's mechanics)",
    "best uniform": "best uniform variant (no profiler)",
}


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A Markdown table."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def _plural(gpus: int) -> str:
    return f"{gpus} GPU{'s' if gpus > 1 else ''}"


def streams_text(a: Mapping[str, Any]) -> str:
    """(a) Per stream count, the thief and the best uniform variant on 1 and 2 GPUs; the
    thief's largest advantage over each uniform variant alone; then the capacity table
    (Table 2) against the paper's."""
    acc = a["acc"]
    gpus = list(acc)
    counts = list(acc[gpus[0]]["thief"])

    def best(g: int, n: int) -> str:
        return max(UNIFORMS, key=lambda u: acc[g][u][n][0])

    rows = [
        [str(n)]
        + [pct(*acc[g][p][n]) for g in gpus for p in ("thief", best(g, n))]
        + [best(g, n).removeprefix("uniform-") for g in gpus]
        for n in counts
    ]
    header = ["streams"]
    for g in gpus:
        header += [f"thief {_plural(g)}", f"best uniform {_plural(g)}"]
    header += [f"best uniform ({_plural(g)})" for g in gpus]
    each = {g: gain_over_each(acc[g]) for g in gpus}
    each_rows = [
        [LABELS[u]] + [f"{100 * each[g][u][0]:+.1f} ({each[g][u][1]} streams)" for g in gpus]
        for u in UNIFORMS
    ]
    cap_rows = []
    for p, cap in a["capacity"].items():
        paper = PAPER_CAPACITY[p]
        factor = f"{cap[1] / cap[0]:.0f}x" if cap[0] else "-"
        paper_factor = f"{paper[1] / paper[0]:.0f}x" if paper[0] else "-"
        cap_rows.append(
            [
                LABELS[p],
                f"{paper[0]} / {paper[1]} ({paper_factor})",
                f"{cap[0]} / {cap[1]} ({factor})",
            ]
        )
    cap_header = ["scheduler", "paper: 1 / 2 GPUs (scaling)", "edgegym: 1 / 2 GPUs"]
    return (
        table(header, rows)
        + "\n\nThe thief's largest advantage over each uniform variant alone, points (at the "
        "stream count where it is largest):\n\n"
        + table(["uniform variant", *[_plural(g) for g in gpus]], each_rows)
        + "\n\nCapacity (streams with accuracy >= 0.75):\n\n"
        + table(cap_header, cap_rows)
    )


def gpus_text(acc: Mapping[str, Mapping[int, Sequence[float]]]) -> str:
    """(b) Per GPU count, every scheduler's accuracy (mean ± std)."""
    gpus = list(acc["thief"])
    rows = [[str(g)] + [pct(*by_g[g]) for by_g in acc.values()] for g in gpus]
    return table(["GPUs", *[LABELS[p] for p in acc]], rows)


def delta_text(d: Mapping[str, Any]) -> str:
    """(d) Per Delta, each variant's accuracy and decision time; then the exact search."""
    variants = list(d["acc"])
    header = ["Delta"]
    for name in variants:
        header += [f"{name}: accuracy (%)", f"{name}: decision (ms)"]
    rows = []
    for i, delta in enumerate(d["deltas"]):
        row = [f"{delta:g}"]
        for name in variants:
            row += [pct(*d["acc"][name][i]), f"{d['decision_ms'][name][i]:.1f}"]
        rows.append(row)
    exact = ["exact search (`thief:exact=true`)", pct(*d["exact"]), f"{d['exact_ms']:.1f}"]
    rows.append(exact + ["-", "-"] * (len(variants) - 1))
    return table(header, rows)


def noise_text(e: Mapping[str, Any]) -> str:
    """(e) Per noise level, the error the scenario was given, the deviation the environment
    used and the thief's accuracy."""
    rows = [
        [f"{100 * s:.0f}%", f"{100 * err:.1f}", f"{100 * used:.1f}", pct(*acc)]
        for s, err, used, acc in zip(e["noise"], e["error"], e["std_used"], e["acc"], strict=True)
    ]
    header = ["noise std", "median abs. error (points)", "std used (points)", "accuracy (%)"]
    return table(header, rows)


def ablation_text(f: Mapping[str, Any]) -> str:
    """(f) Each of the micro-profiler's mechanics switched off, per GPU count."""
    acc = f["acc"]
    gpus = list(acc)
    rows = [
        [_ABLATION_LABELS.get(name, f"thief, {name}")] + [pct(acc[g][name]) for g in gpus]
        for name in acc[gpus[0]]
    ]
    return table(["variant", *[f"{_plural(g)}: accuracy (%)" for g in gpus]], rows)


def sweep_text(g: Mapping[str, Any]) -> str:
    """(g) Per swept input: the thief, the best uniform variant and no retraining on 1 and 2
    GPUs, the thief's gain, that gain in the authors' simulator's setting on each of Fig. 8's
    GPU counts ("-" where the input is one of the micro-profiler's, which that setting does not
    have), and on 4 GPUs Fig. 10a's margin and Fig. 11b's drop (points)."""
    gpus = list(g["gain"][SCENARIO_POINT])
    sim_gpus = list(g["gain_sim"][SCENARIO_POINT])
    rows = []
    for name, by_g in g["acc"].items():
        row = [name]
        for n in gpus:
            x = by_g[n]
            row += [
                pct(x["thief"]),
                f"{pct(x['best'])} ({x['best_uniform'].removeprefix('uniform-')})",
                pct(x["none"]),
                f"{100 * g['gain'][name][n]:+.1f}",
            ]
        sim = g["gain_sim"].get(name)
        row += [f"{100 * sim[n]:+.1f}" if sim else "-" for n in sim_gpus]
        row += [f"{100 * g['ablation'][name]:+.1f}", f"{100 * g['noise_drop'][name]:.1f}"]
        rows.append(row)
    header = ["inputs"]
    for n in gpus:
        header += [
            f"thief {_plural(n)}",
            f"best uniform {_plural(n)}",
            f"no retraining {_plural(n)}",
            f"gain {_plural(n)} (points)",
        ]
    header += [f"gain {_plural(n)}, simulator's setting" for n in sim_gpus]
    header += ["Fig. 10a margin, 4 GPUs", "Fig. 11b drop, 4 GPUs"]
    return table(header, rows)


#: (h)'s rows: the policies run there, as the table names them.
_SEARCH_LABELS = {
    "thief": "thief (Algorithm 1's steals)",
    "thief:retrain=false": "the same steals, inference only (`thief:retrain=false`)",
    "thief:exact=true": "exact search of the thief's objective (`thief:exact=true`)",
    "thief:exact=true,retrain=false": "exact search, inference only",
    "thief:exact=true,oracle=true": "exact search with the true profiles",
}


def search_text(h: Mapping[str, Any], g: Mapping[str, Any]) -> str:
    """(h) The thief's steals and the exact search, with and without retraining, beside no
    retraining and the best uniform variant ((g) at the scenario's inputs); then what
    retraining adds to each search and what the exact search finds above the steals."""
    gpus = list(h["acc"])
    rows = [[label] + [pct(*h["acc"][n][p]) for n in gpus] for p, label in _SEARCH_LABELS.items()]
    base = g["acc"][SCENARIO_POINT]
    rows.append(["no retraining, even split"] + [pct(base[n]["none"]) for n in gpus])
    rows.append(["best uniform variant"] + [pct(base[n]["best"]) for n in gpus])
    worth = search_worth(h)
    names = {k: f"retraining adds, {k}" for k in worth[gpus[0]]}
    names["left by the steals"] = "the exact search above the steals"
    points = [[name] + [f"{worth[n][k]:+.1f}" for n in gpus] for k, name in names.items()]
    return (
        table(["policy", *[f"{_plural(n)}: accuracy (%)" for n in gpus]], rows)
        + "\n\n"
        + table(["difference", *[f"{_plural(n)} (points)" for n in gpus]], points)
    )


def table1_text(t1: Mapping[str, Any]) -> str:
    """Fig. 4 / Table 1: the uniform scheduler and the thief on ``ekya-table1`` as given and at
    each point of its sweep, the paper's averages last."""
    rows = [("the scenario as given", t1)]
    rows += [(table1_label(k), x) for k, x in t1["sweep"].items()]
    return table(
        ["point", "uniform (Cfg 1, 50%)", "thief (Delta 0.05)"],
        [[k, pct(x["uniform"]), pct(x["thief"])] for k, x in rows]
        + [["paper (Fig. 4)", "56", "73"]],
    )


def section_texts(sections: Mapping[str, Any]) -> dict[str, str]:
    """Every section's table from the sections' measurements (:mod:`edgegym.reproduce.ekya`'s
    ``_sections``), keyed as the report's fields: ``a``, ``b``, ``b_sim``, ``d``, ``e``,
    ``f``, ``g``, ``h``, ``t1``.

    Raises:
        KeyError, TypeError: ``sections`` lacks a number a table shows (a saved run of another
            version).
    """
    a, b, d, e, f, g, h = (sections[k] for k in "abdefgh")
    return {
        "a": streams_text(a),
        "b": gpus_text(b["acc"]),
        "b_sim": gpus_text(b["sim"]["acc"]),
        "d": delta_text(d),
        "e": noise_text(e),
        "f": ablation_text(f),
        "g": sweep_text(g),
        "h": search_text(h, g),
        "t1": table1_text(sections["t1"]),
    }

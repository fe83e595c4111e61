"""Reproduce the Energy-Time Fairness evaluation (SEC'23 §6) and write ``docs/reproduction/etf.md``.

Run ``python -m edgegym.reproduce.etf [--out DIR] [--quick]`` (under a minute; ``--quick``: a smoke
run sweeping one variant, written to ``runs/reproduction-quick``). Every number in the report
comes from this run; the paper's numbers stand beside them. Sections: TF / EF / ETF on the TX2
pair (Fig. 5), the power-disparity sweep (Fig. 6), phi sweeps on TX2 and A10G (Fig. 7, 8), the
dynamic three-tenant run (Fig. 9), the efficiency incentive (Fig. 10, with an ablation that holds
the slowed tenant's speed) and weights 2:1 (Fig. 11). It ends by writing the paper's records of
``claims.json`` (:func:`edgegym.reproduce.claims.update`): the inputs fitted to the paper's
measurements (calibration) and its evaluation results (held-out), each with its rule.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import dataclasses
import itertools
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from edgegym.baselines.etf import ETFPolicy, phi_fair
from edgegym.families.energy import EnergyFairShareEnv
from edgegym.hardware.gpus import PowerModel, get_gpu
from edgegym.outputs import run_command, save_figure, write_text
from edgegym.reproduce.claims import (
    QUICK_HELP,
    Claim,
    add_output_arguments,
    check_out,
    count_sentence,
    holds_cell,
    in_smoke_run,
    out_folder,
    smoke_run,
    update,
)
from edgegym.reproduce.etf_claims import (
    Fig6Row,
    Fig9,
    Fig10,
    Power,
    calibration_claims,
    dynamic_claims,
    fairness_claims,
    judge_across,
    phi_claims,
)
from edgegym.scenarios import Scenario, load
from edgegym.workload.models import get_model

PROG = "python -m edgegym.reproduce.etf"
#: The files this reproduction writes into --out (besides the claims table) -> kind.
OUTPUTS = {
    "etf.md": "report",
    **{f"etf-{f}.png": "figure" for f in ("fig6", "phi", "fig9", "sweep")},
}
PHIS = [round(0.1 * k, 1) for k in range(11)]
QUANTA = 50


@dataclasses.dataclass(frozen=True)
class Variant:
    """One point of the robustness sweep (a held-out claim must hold at every one): the
    report's choices and the inputs that stay synthesised, scaled. The paper's own settings
    (models, clocks, phi, weights) and the calibrated power model are not swept.

    Attributes:
        name: As the report shows it.
        quantum: ``quantum_s`` x this (same seconds of run: ``quanta`` / this; same ``unit_s``).
        unit: ``unit_s`` x this (units per quantum / this).
        memory_bound: Every model's memory-bound fraction (edgegym's assumption, 0.3) x this:
            how much a lower clock slows a tenant (service times rescaled, power unchanged).
        timeline: ``etf-dynamic-3``'s arrival and leave times and its length x this.
    """

    name: str
    quantum: float = 1.0
    unit: float = 1.0
    memory_bound: float = 1.0
    timeline: float = 1.0


BASE = Variant("base")
#: The sweep every held-out claim must hold across (x0.5 and x2 of each swept input).
SWEEP = (
    BASE,
    Variant("quantum x0.5", quantum=0.5),
    Variant("quantum x2", quantum=2.0),
    Variant("unit x0.5", unit=0.5),
    Variant("unit x2", unit=2.0),
    Variant("memory-bound x0.5", memory_bound=0.5),
    Variant("memory-bound x2", memory_bound=2.0),
    Variant("arrival times x0.5", timeline=0.5),
    Variant("arrival times x2", timeline=2.0),
)
_current = BASE  # the variant the experiments below run under (set by `_under`)


@contextlib.contextmanager
def _under(variant: Variant) -> Iterator[None]:
    """Run the experiments inside the block under ``variant``."""
    global _current
    old, _current = _current, variant
    try:
        yield
    finally:
        _current = old


def _scenario(name: str, **changes: Any) -> Scenario:
    """A bundled scenario with fields changed (``clock_mhz_1=114.75``, ``weight_0=2``,
    ``quanta=50``) under the current sweep variant."""
    sc = load(name)
    data = copy.deepcopy(sc.data)
    for key, value in changes.items():
        field, _, idx = key.rpartition("_")
        if field and idx.isdigit():
            data["tenants"][int(idx)][field] = value
        else:
            data[key] = value
    v = _current
    data["quantum_s"] = data["quantum_s"] * v.quantum
    data["unit_s"] = data["unit_s"] * v.unit
    data["quanta"] = max(1, round(data["quanta"] / v.quantum))
    if any("arrive_s" in t or "leave_s" in t for t in data["tenants"]):
        for t in data["tenants"]:
            for key in ("arrive_s", "leave_s"):
                if key in t:
                    t[key] = t[key] * v.timeline
        data["quanta"] = round(data["quanta"] * v.timeline)
    return Scenario(name=sc.name, data=data, source=sc.source)


def _memory_bound_service(env: EnergyFairShareEnv, sc: Scenario, scale: float) -> None:
    """Rescale the tenants' service times as if every model's memory-bound fraction were
    ``scale`` x its own: a request at clock ratio c takes ((1 - m) / c + m) of its top-clock
    time."""
    top = get_gpu(sc["hardware"]["gpu"]).clocks_mhz[-1]
    factor = []
    for t in sc["tenants"]:
        m = get_model(t["model"]).memory_bound
        c = t["clock_mhz"] / top
        m2 = min(1.0, m * scale)
        factor.append(((1 - m2) / c + m2) / ((1 - m) / c + m))
    n = env.params.n_tenants
    tab = env.params.service_tab.copy()
    tab[:, :n] *= np.asarray(factor)
    tab.setflags(write=False)
    env.params = dataclasses.replace(env.params, service_tab=tab)


def run(
    sc: Scenario, phi: float, quanta: int | None = None, hold_speed: int | None = None
) -> dict[str, Any]:
    """One episode of ETF(phi) (phi = 1: TF, phi = 0: EF); metrics and the per-quantum timeline.

    Args:
        sc: The scenario.
        phi: The time-fair factor.
        quanta: Episode length (default: :data:`QUANTA` quanta of the base variant's length).
        hold_speed: An ablation: this tenant serves at its top-clock speed whatever its clock
            (its power still follows the clock): a model whose throughput the clock does not
            change.
    """
    data = copy.deepcopy(sc.data)
    data["quanta"] = quanta if quanta is not None else max(1, round(QUANTA / _current.quantum))
    env = EnergyFairShareEnv(Scenario(sc.name, data, sc.source), record_timeline=True)
    if _current.memory_bound != 1.0:
        _memory_bound_service(env, sc, _current.memory_bound)
    if hold_speed is not None:
        tab = env.params.service_tab.copy()
        tab[:, hold_speed] = env.params.top_service[hold_speed]
        tab.setflags(write=False)
        env.params = dataclasses.replace(env.params, service_tab=tab)
    pol = ETFPolicy(env, phi=phi)
    obs, _ = env.reset(seed=0)
    term = False
    lat = []
    while not term:
        action, _ = pol.predict(obs)
        obs, _, term, _, info = env.step(action)
        lat.append(info["latency_s"][: env.params.n_tenants])
    m = dict(info["episode_metrics"])
    lat_arr = np.array(lat)
    m["latency_s"] = [float(np.mean(c[np.isfinite(c)])) if np.isfinite(c).any() else None
                      for c in lat_arr.T]  # fmt: skip
    m["latency_steps"] = lat_arr
    m["power"] = [float(p) for p in env.profiles(0.0)[0][: env.params.n_tenants]]
    m["service"] = [float(x) for x in env.params.service_tab[0][: env.params.n_tenants]]
    m["timeline"] = env.timeline
    m["names"] = list(env.params.names)
    return m


def _shares(m: dict[str, Any]) -> tuple[list[float], list[float]]:
    names = m["names"]
    t = [m[f"time_share_{n}"] for n in names]
    e = np.array([m[f"energy_j_{n}"] for n in names])
    return t, list(e / e.sum())


def _fmt(x: float, d: int = 2) -> str:
    return f"{x:.{d}f}"


def _pyplot() -> Any:
    """matplotlib's pyplot on the file-only Agg backend (imported here: the runs need no plots)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _intro() -> list[str]:
    """The report's title and what every run shares."""
    dyn = _scenario("etf-dynamic-3")
    return [
        "# Energy-Time Fairness reproduction (edgegym/EnergyFairShare-v0)",
        "",
        "Regenerate with `python -m edgegym.reproduce.etf` (under a minute). No input is "
        "random (saturated tenants, no arrival process), so this report is a function of the "
        "code alone: no date or seed is recorded, and `tests/test_reproduce_committed.py` "
        "reruns it and compares it with the committed one. "
        "Every edgegym number comes from that run; the paper's stand beside them. Tenants are "
        f"backlogged unless said otherwise; each run is {QUANTA} quanta of 0.3 s in 60 units "
        f"of 5 ms (Fig. 9's dynamic run: {dyn['quanta']} quanta, "
        f"{dyn['quanta'] * dyn['quantum_s']:g} s; `tf` = ETF with phi = 1, `ef` = phi = 0, "
        "`etf` = phi = 0.7). Power per clock comes from edgegym's DVFS model calibrated to the "
        "paper's reported ratios (see the scenario files); the paper's own power traces are not "
        "published.",
        "",
    ]


def _three_policies(sc: Scenario) -> dict[str, dict[str, Any]]:
    """TF, EF and ETF(0.7) on ``sc``."""
    return {name: run(sc, phi) for name, phi in (("TF", 1.0), ("EF", 0.0), ("ETF", 0.7))}


def _fig5(pair: Scenario) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """Fig. 5: TF, EF and ETF on the TX2 pair; the section and the three runs."""
    res5 = _three_policies(pair)
    p = res5["TF"]["power"]
    lines = [
        "## TF, EF and ETF on the TX2 pair (Fig. 5)",
        "",
        f"A1 ResNet50 at 1300 MHz ({p[0]:.2f} W), A2 MobileNetV2 at 726 MHz ({p[1]:.2f} W): "
        f"power disparity {p[0] / p[1]:.2f} (paper: about 4).",
        "",
        "| policy | time A1 / A2 | energy A1 / A2 | F_T | F_E | F_S | paper |",
        "|---|---|---|---|---|---|---|",
    ]
    paper5 = {"TF": "F_E = 0.19", "EF": "F_S = 0.21", "ETF": "F_S = 0.42 (2x TF and EF)"}
    for name, m in res5.items():
        t, e = _shares(m)
        lines.append(
            f"| {name} | {_fmt(t[0])} / {_fmt(t[1])} | {_fmt(e[0])} / {_fmt(e[1])} | "
            f"{_fmt(m['F_T'])} | {_fmt(m['F_E'])} | {_fmt(m['F_S'])} | {paper5[name]} |"
        )
    ratio_tf = res5["ETF"]["F_S"] / res5["TF"]["F_S"]
    ratio_ef = res5["ETF"]["F_S"] / res5["EF"]["F_S"]
    lines += [
        "",
        f"ETF's system fairness is {ratio_tf:.2f}x TF's and {ratio_ef:.2f}x EF's (paper: 2x).",
        "",
    ]
    return lines, res5


def _fig6(out: Path | None, plt: Any) -> tuple[list[str], list[Fig6Row]]:
    """Fig. 6: F_S per policy as A2's clock, and so the power disparity, is swept."""
    rows6 = []
    for f in get_gpu("TX2").clocks_mhz:
        r = _three_policies(_scenario("etf-tx2-disparity", clock_mhz_1=f))
        rows6.append((f, r["TF"]["power"][0] / r["TF"]["power"][1], r))
    lines = [
        "## Power disparity (Fig. 6)",
        "",
        "Two ResNet50 tenants; A1 at 1300 MHz, A2's clock swept. F_S per policy:",
        "",
        "| A2 clock (MHz) | disparity | TF | EF | ETF | ETF / TF | ETF / EF |",
        "|---|---|---|---|---|---|---|",
    ]
    for f, disp, r in rows6:
        fs = {k: v["F_S"] for k, v in r.items()}
        lines.append(
            f"| {f:g} | 1-to-{disp:.1f} | {_fmt(fs['TF'])} | {_fmt(fs['EF'])} | "
            f"{_fmt(fs['ETF'])} | {fs['ETF'] / fs['TF']:.2f} | {fs['ETF'] / fs['EF']:.2f} |"
        )
    top = rows6[0][2]
    lines += [
        "",
        f"At the largest disparity ETF reaches {top['ETF']['F_S'] / top['TF']['F_S']:.2f}x TF "
        f"and {top['ETF']['F_S'] / top['EF']['F_S']:.2f}x EF (paper: 2x and 1.6x at 1-to-7.9); "
        "at 1-to-1 all three are equal (paper: they converge).",
        "",
        "![disparity](etf-fig6.png)",
        "",
    ]
    if plt is not None:
        _plot_fig6(rows6, out, plt)
    return lines, rows6


def _plot_fig6(rows6: list[Fig6Row], out: Path, plt: Any) -> None:
    fig, ax = plt.subplots(figsize=(6, 3.2))
    for name in ("TF", "EF", "ETF"):
        ax.plot([d for _, d, _ in rows6], [r[name]["F_S"] for *_, r in rows6], "o-", label=name)
    ax.set_xscale("log")
    ax.invert_xaxis()
    ax.set_xlabel("power disparity A1 / A2")
    ax.set_ylabel("system fairness F_S")
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    save_figure(fig, out / "etf-fig6.png", dpi=120)
    plt.close(fig)


PhiRows = list[tuple[float, dict[str, Any]]]

#: How far below EF's energy fairness ETF(phi)'s may be and still count as perfect.
PERFECT_TOL = 0.005


def perfectly_energy_fair(rows: PhiRows) -> list[float]:
    """The phis of a sweep (``rows[0]``: phi = 0, which is EF) at which ETF is perfectly
    energy-fair.

    The paper's "perfect energy fairness" is EF's allocation (§4: for phi between 0 and
    phi_fair ETF "is able to achieve perfect energy fairness while providing the minimum time
    guarantees", Eq. 15; Fig. 7 plots E_1 under EF beside ETF). Algorithm 1 hands out whole
    time units, so EF's own F_E is below 1 by the rounding of its shares (0.91-0.98 with 30-120
    units a quantum): perfect is F_E within :data:`PERFECT_TOL` of EF's in the same sweep,
    not a fixed F_E, which would turn the unit count into the verdict.
    """
    phi0, ef = rows[0]
    if phi0 != 0.0:
        raise ValueError(f"a phi sweep starts at phi = 0 (EF), not {phi0}")
    return [phi for phi, m in rows if m["F_E"] >= ef["F_E"] - PERFECT_TOL]


def _phi_sweeps(
    pair: Scenario, out: Path | None, plt: Any
) -> tuple[list[str], dict[str, float], dict[str, float]]:
    """Fig. 7, 8 and 11: phi swept on three pairs, a section and a panel each.

    Returns:
        The sections, the largest perfectly energy-fair phi per figure and phi_fair (Eq. 15)
        per figure.
    """
    sweeps = {
        "fig7": ("TX2: ResNet50 1300 MHz vs MobileNetV2 726 MHz (Fig. 7)", pair, "below 0.3"),
        "fig8": (
            "A10G: GPT-2 vs MobileNetV2 at the top clock (Fig. 8)",
            _scenario("etf-a10g-gpt2-mobilenetv2"),
            "at a higher phi than on TX2 (disparity 2.2 vs 4)",
        ),
        "fig11": (
            "TX2 pair with weights 2:1 (Fig. 11)",
            _scenario("etf-weights-2to1"),
            "phi <= 0.6",
        ),
    }
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.3), sharey=True) if plt else (None, [None] * 3)
    lines: list[str] = []
    perfect_up_to: dict[str, float] = {}
    fair_phi: dict[str, float] = {}
    for ax, (key, (title, sc, paper)) in zip(axes, sweeps.items(), strict=True):
        rows = [(phi, run(sc, phi)) for phi in PHIS]
        w = [t["weight"] for t in sc["tenants"]]
        pf = phi_fair(rows[0][1]["power"], w)
        perfect = perfectly_energy_fair(rows)
        perfect_up_to[key] = max(perfect) if perfect else 0.0
        fair_phi[key] = pf
        lines += _phi_section(title, paper, rows, w, pf, perfect)
        if ax is not None:
            _plot_phi(ax, rows, pf, title)
    if fig is None:
        return lines, perfect_up_to, fair_phi
    axes[0].set_ylabel("share")
    axes[-1].legend(fontsize=7)
    fig.tight_layout()
    save_figure(fig, out / "etf-phi.png", dpi=120)
    plt.close(fig)
    lines += ["![phi sweeps](etf-phi.png)", ""]
    return lines, perfect_up_to, fair_phi


def _phi_section(
    title: str, paper: str, rows: PhiRows, w: list[float], pf: float, perfect: list[float]
) -> list[str]:
    """One phi sweep's section: phi_fair, the perfect range and the shares per phi."""
    lines = [
        f"## phi sweep, {title}",
        "",
        f"phi_fair (Eq. 15) = {pf:.2f}; perfectly energy-fair (F_E within {PERFECT_TOL} of "
        f"EF's {rows[0][1]['F_E']:.3f}) up to phi = {max(perfect) if perfect else 'none'} "
        f"(paper: perfect {paper}).",
        "",
        "| phi | time A1 / A2 | energy A1 / A2 (weight-normalised) | F_T | F_E | F_S |",
        "|---|---|---|---|---|---|",
    ]
    for phi, m in rows:
        t, _ = _shares(m)
        en = np.array([m[f"energy_j_{n}"] for n in m["names"]]) / np.array(w)
        en = en / en.sum()
        lines.append(
            f"| {phi:.1f} | {_fmt(t[0])} / {_fmt(t[1])} | {_fmt(en[0])} / {_fmt(en[1])} | "
            f"{_fmt(m['F_T'])} | {_fmt(m['F_E'])} | {_fmt(m['F_S'])} |"
        )
    lines.append("")
    return lines


def _plot_phi(ax: Any, rows: PhiRows, pf: float, title: str) -> None:
    for i, style in ((0, "-"), (1, "--")):
        ax.plot(PHIS, [_shares(m)[0][i] for _, m in rows], "o" + style, label=f"time A{i + 1}")
        ax.plot(PHIS, [_shares(m)[1][i] for _, m in rows], "s" + style, label=f"energy A{i + 1}")
    ax.axvline(pf, color="grey", linestyle=":", label="phi_fair")
    ax.set_title(title.split(" (")[0], fontsize=9)
    ax.set_xlabel("phi")
    ax.grid(alpha=0.3)


def _phases(dyn: Scenario) -> list[tuple[float, float, int]]:
    """The dynamic run's phases: (start s, end s, tenants present), split at every arrival
    and departure."""
    end = dyn["quanta"] * dyn["quantum_s"]
    cuts = {0.0, end}
    for t in dyn["tenants"]:
        cuts |= {float(t.get("arrive_s", 0.0)), float(t.get("leave_s", end))}
    edges = sorted(c for c in cuts if 0.0 <= c <= end)
    out = []
    for a, b in itertools.pairwise(edges):
        n = sum(t.get("arrive_s", 0.0) <= a and t.get("leave_s", end) >= b for t in dyn["tenants"])
        out.append((a, b, n))
    return out


def _fig9(out: Path | None, plt: Any) -> tuple[list[str], Fig9]:
    """Fig. 9: ETF(0.7) with tenants arriving and leaving; shares and latency per phase."""
    dyn = _scenario("etf-dynamic-3")
    m9 = run(dyn, 0.7, quanta=dyn["quanta"])
    a2, a3 = dyn["tenants"][1], dyn["tenants"][2]
    lines = [
        "## Dynamic tenants (Fig. 9)",
        "",
        f"ETF(0.7), three ResNet50 tenants at 1300 / 1032 / 726 MHz; A2 present "
        f"{a2['arrive_s']:g}-{a2['leave_s']:g} s, A3 {a3['arrive_s']:g}-{a3['leave_s']:g} s. "
        "Time share (and energy share) per phase, and each tenant's mean request "
        "latency in ms (from where its slice falls in the CFS order, see Fig. 10):",
        "",
        "| phase (s) | A1 | A2 | A3 | GPU busy | latency A1 / A2 / A3 (ms) |",
        "|---|---|---|---|---|---|",
    ]
    shares9 = []
    for a, b, n in _phases(dyn):
        row, share, busy = _fig9_phase(m9, a, b)
        lines.append(row)
        shares9.append((n, share, busy))
    two = [sh[0] for n, sh, _ in shares9 if n == 2]
    three = next(sh for n, sh, _ in shares9 if n == 3)
    busy9 = min(busy for *_, busy in shares9)
    lines += [
        "",
        "Paper: with two tenants A1 is guaranteed 45% of the time, with three about 23%; the "
        "low-power A3 gets a disproportionately high time share; the GPU is always fully used. "
        'The paper\'s "50% x phi = 45%" for phi = 0.7 should read 35% (its own 33.3% x phi '
        "~ 23% for three tenants uses the same rule): ETF guarantees A1 35% with two tenants, "
        f"and A1 gets {min(two):.2f} here ({three[0]:.2f} with three).",
        "",
        "A tenant's latency moves with its place in the CFS order: A2 and A3 arrive with a "
        "virtual runtime of 0, below A1's, and run first in every quantum from then on, so "
        "A1's requests wait through their slices too.",
        "",
        "![dynamic](etf-fig9.png)",
        "",
    ]
    if plt is not None:
        _plot_fig9(m9, dyn, out, plt)
    return lines, Fig9(two=two, three=three, busy=busy9)


def _fig9_phase(m9: dict[str, Any], a: float, b: float) -> tuple[str, np.ndarray, float]:
    """One phase [a, b) s of the dynamic run: its table row, the time shares and GPU use."""
    tl = m9["timeline"]
    idx = [j for j, r in enumerate(tl) if a <= r["t0"] < b]
    recs = [tl[j] for j in idx]
    t = np.sum([r["time_s"] for r in recs], axis=0)[:3]
    e = np.sum([r["energy_j"] for r in recs], axis=0)[:3]
    span = b - a
    cells = [f"{t[i] / span:.2f} ({e[i] / max(e.sum(), 1e-12):.2f})" for i in range(3)]
    lat = []
    for i in range(3):
        col = m9["latency_steps"][idx, i]
        col = col[np.isfinite(col)]
        lat.append(f"{1000 * col.mean():.1f}" if col.size else "-")
    row = f"| {a:g}-{b:g} | " + " | ".join(cells) + f" | {t.sum() / span:.2f} | {' / '.join(lat)} |"
    return row, t / span, t.sum() / span


def _plot_fig9(m9: dict[str, Any], dyn: Scenario, out: Path, plt: Any) -> None:
    tl = m9["timeline"]
    fig, ax = plt.subplots(figsize=(7, 3))
    times = [r["t0"] for r in tl]
    shares = np.array([r["time_s"][:3] for r in tl]) / dyn["quantum_s"]
    ax.stackplot(times, shares.T, labels=m9["names"][:3])
    ax.set_xlabel("time (s)")
    ax.set_ylabel("time share per quantum")
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    save_figure(fig, out / "etf-fig9.png", dpi=120)
    plt.close(fig)


def _fig10(clocks: list[float]) -> tuple[list[str], Fig10]:
    """Fig. 10: A2 lowers its clock under ETF(0.7); its throughput and latency per clock."""
    base10 = run(_scenario("etf-tx2-disparity", clock_mhz_1=1300.5), 0.7)
    thr0 = base10["throughput_rps_A2"]
    lat0 = base10["latency_s"][1]
    lines = [
        "## Efficiency incentive (Fig. 10)",
        "",
        "Two ResNet50 tenants under ETF(0.7); A1 at 1300 MHz, A2 lowers its clock. A2's "
        f"throughput and latency relative to both at 1300 MHz ({thr0:.1f} req/s, "
        f"{lat0 * 1000:.1f} ms); the last column is an ablation in which A2 keeps its "
        "1300 MHz speed at every clock (only its power falls):",
        "",
        "| A2 clock (MHz) | A2 time share | A2 speed | A2 throughput | A2 latency | "
        "throughput, speed held |",
        "|---|---|---|---|---|---|",
    ]
    best = (0.0, 0.0, 0.0, 0.0)
    best_held = (0.0, 0.0)
    top_service = base10["service"][1]
    for f in reversed(clocks):
        sc10 = _scenario("etf-tx2-disparity", clock_mhz_1=f)
        m = run(sc10, 0.7)
        held = run(sc10, 0.7, hold_speed=1)
        thr = m["throughput_rps_A2"] / thr0
        thr_held = held["throughput_rps_A2"] / thr0
        lat = m["latency_s"][1] / lat0
        speed = top_service / m["service"][1]
        best = max(best, (thr, f, lat, speed))
        best_held = max(best_held, (thr_held, f))
        lines.append(
            f"| {f:g} | {m['time_share_A2']:.2f} | {speed:.2f}x | {thr:.2f}x | {lat:.2f}x | "
            f"{thr_held:.2f}x |"
        )
    cap = 1.0 - 0.7 / 2
    lines += _fig10_reading(best, best_held, cap)
    return lines, Fig10(best=best, best_held=best_held, cap=cap)


def _fig10_reading(
    best: tuple[float, float, float, float], best_held: tuple[float, float], cap: float
) -> list[str]:
    """What Fig. 10's table says against the paper, and how its latency is modelled."""
    return [
        "",
        f"Best: {best[0]:.2f}x throughput at {best[1]:g} MHz with {best[2]:.2f}x latency "
        "(paper: 1.3x throughput and 10% lower latency). ETF(0.7) caps the slowed tenant's "
        f"time share at 1 - 0.7 / 2 = {cap:.2f}, {cap / 0.5:.1f}x its equal half: exactly the "
        "paper's 1.3x, so the paper's gain needs a model whose speed the lower clock does not "
        "change. In edgegym's model it does (ResNet50: 30% of its runtime does not scale with "
        f"the clock; A2 runs at {best[3]:.2f}x speed where its throughput peaks). With A2's "
        f"speed held (the ablation) the gain reaches {best_held[0]:.2f}x at {best_held[1]:g} MHz.",
        "",
        "Latency comes from the simulated CFS order (`edgegym/families/energy/timeslice.py`): "
        "the tenants run back to back from the start of each quantum, lowest virtual runtime "
        "first, and a request waits through its tenant's vacation, the time between the end of "
        "its last "
        "slice and the start of this one (mean wait V^2 / (2 (V + t)) over the requests up to "
        "the slice's end, plus the service time). With the same order every quantum this is "
        "the periodic (T - t)^2 / (2T); it differs in the first quantum and when the order "
        "changes (Fig. 9).",
        "",
    ]


def _claims_section(claims: list[Claim]) -> list[str]:
    """The report's last section: the count that hold and every claim with its rule."""
    lines = [
        "## Claims",
        "",
        count_sentence(
            claims,
            "the calibration rows show the fitted inputs against the paper's "
            "measurements. All papers' rows: [README.md](README.md) (`claims.json`).",
        ),
        "",
        "| where | claim | paper | edgegym | role | holds | rule / why not |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in claims:
        lines.append(
            f"| {c.figure} | {c.claim} | {c.paper_value} | {c.edgegym_value} | {c.role} | "
            f"{holds_cell(c)} | {c.why if not c.holds else c.test} |"
        )
    return [*lines, ""]


def _power(res5: dict[str, dict[str, Any]]) -> Power:
    """The power disparities of the calibration rows: Fig. 5's TX2 pair (from its runs), the
    A10G pair at its top clock, and ResNet50's at Fig. 6's TX2 clocks (the DVFS model)."""
    p8 = run(_scenario("etf-a10g-gpt2-mobilenetv2"), 1.0)["power"]
    pm = PowerModel.from_spec(get_gpu("TX2"))
    act = get_model("resnet50").power_activity
    full = {f: float(pm.power(f, act)) for f in (1300.5, 1032.75, 726.75, 114.75)}
    return Power(
        tx2_pair=res5["TF"]["power"][0] / res5["TF"]["power"][1],
        a10g_pair=p8[0] / p8[1],
        resnet50_ratio={f: full[1300.5] / full[f] for f in full},
    )


def _experiments(out: Path | None, plt: Any) -> tuple[list[str], list[Claim]]:
    """Every section and claim under the current sweep variant (figures only where ``plt``)."""
    pair = _scenario("etf-tx2-resnet50-mobilenetv2")
    lines = _intro()
    section, res5 = _fig5(pair)
    lines += section
    section, rows6 = _fig6(out, plt)
    lines += section
    section, perfect_up_to, fair_phi = _phi_sweeps(pair, out, plt)
    lines += section
    section, fig9 = _fig9(out, plt)
    lines += section
    section, fig10 = _fig10(list(get_gpu("TX2").clocks_mhz))
    lines += section
    power = _power(res5)
    claims = [
        *calibration_claims(power),
        *fairness_claims(res5, rows6),
        *phi_claims(perfect_up_to, fair_phi, power.tx2_pair),
        *dynamic_claims(fig9, fig10),
    ]
    return lines, claims


def _sweep_section(
    claims: list[Claim], swept: dict[str, list[Claim]], out: Path, plt: Any
) -> list[str]:
    """The robustness sweep: each held-out claim's value and verdict under every variant
    (``claims``: the base run's, before :func:`judge_across`)."""
    rows = [i for i, c in enumerate(claims) if c.role == "held-out"]
    names = ["base", *swept]
    lines = [
        "## Robustness sweep",
        "",
        "The inputs that stay edgegym's choice or synthesis, each at x0.5 and x2 (the paper's "
        "models, clocks, phi and weights and the calibrated power model are not swept): the "
        "scheduling quantum (0.3 s; same seconds of run), the time unit (5 ms), every model's "
        "memory-bound fraction (0.3: how much a lower clock slows a tenant) and Fig. 9's arrival "
        "and leave times (with the run's length). A held-out claim holds only if it holds in "
        "every column. Cells: edgegym's value, and whether the claim holds there.",
        "",
        "| claim | " + " | ".join(names) + " |",
        "|---|" + "---|" * len(names),
    ]
    verdict = np.zeros((len(rows), len(names)), dtype=bool)
    for r, i in enumerate(rows):
        cells = []
        for col, name in enumerate(names):
            c = claims[i] if name == "base" else swept[name][i]
            verdict[r, col] = c.holds
            cells.append(f"{c.edgegym_value} {'yes' if c.holds else 'no'}")
        lines.append(
            f"| {claims[i].figure}: {claims[i].claim[:60]}... | " + " | ".join(cells) + " |"
        )
    ef = []
    for variant in (BASE, *(v for v in SWEEP if v.name in swept)):
        with _under(variant):
            sc = _scenario("etf-tx2-resnet50-mobilenetv2")
            m = run(sc, 0.0)
        units = round(sc["quantum_s"] / sc["unit_s"])
        ef.append(f"{variant.name} {m['F_E']:.3f} ({units} units, A1 {m['time_share_A1']:.3f})")
    lines += [
        "",
        "Algorithm 1 hands out whole time units, so EF's own energy fairness depends on how "
        "closely the quantum's unit count lets A1's energy-fair share round: the phi ranges "
        "(Fig. 7, 8, 11) count ETF(phi) as perfectly energy-fair where its F_E is EF's "
        f"(within {PERFECT_TOL}), the paper's definition (§4), not above a fixed F_E, which "
        "would turn the unit count into the verdict (with F_E >= 0.98 the Fig. 7 range fails "
        "under four of the variants, EF itself included). EF's F_E and A1's time share on "
        "the TX2 pair per variant: " + "; ".join(ef) + ".",
        "",
        "![robustness sweep](etf-sweep.png)",
        "",
    ]
    fig, ax = plt.subplots(figsize=(1.1 * len(names) + 3, 0.45 * len(rows) + 1.2))
    ax.imshow(verdict, cmap="RdYlGn", vmin=0, vmax=1, aspect="auto")
    ax.set_xticks(range(len(names)), names, rotation=35, ha="right", fontsize=8)
    ax.set_yticks(range(len(rows)), [claims[i].figure for i in rows], fontsize=8)
    for r, i in enumerate(rows):
        for col, name in enumerate(names):
            c = claims[i] if name == "base" else swept[name][i]
            ax.text(col, r, str(c.edgegym_value)[:9], ha="center", va="center", fontsize=6)
    ax.set_title("held-out claims across the sweep (green: holds)", fontsize=9)
    fig.tight_layout()
    save_figure(fig, out / "etf-sweep.png", dpi=120)
    plt.close(fig)
    return lines


def main(argv: list[str] | None = None) -> int:
    """Run every experiment, write the report and its figures.

    Returns:
        The exit code: 0 success, 2 an unusable ``--out`` (one ``error:`` line on stderr,
        checked before any work starts).
    """
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help=QUICK_HELP)
    add_output_arguments(ap, quick=True)
    args = ap.parse_args(argv)
    args.out = out_folder(args)
    try:
        out = check_out(args.out, OUTPUTS, args.force, smoke=args.quick)
    except ValueError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    with smoke_run(args.quick):  # a quick run's claims are smoke checks, not results
        return _run(out)


def _run(out: Path) -> int:
    """Every experiment and the sweep into ``out``, then the report."""
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    plt = _pyplot()
    lines, claims = _experiments(out, plt)
    swept = {}
    # a smoke run (``--quick``) sweeps one variant: enough to exercise the path
    for variant in SWEEP[1:2] if in_smoke_run() else SWEEP[1:]:
        with _under(variant):
            swept[variant.name] = _experiments(None, None)[1]
    lines += _sweep_section(claims, swept, out, plt)
    claims = judge_across(claims, swept)
    update("etf", claims, out)
    lines += _claims_section(claims)
    write_text(out / "etf.md", "\n".join(lines), "report")
    print(f"wrote {out / 'etf.md'} in {time.time() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(run_command(main, PROG))

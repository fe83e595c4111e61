"""The Energy-Time Fairness reproduction's claims, judged from what its runs measured.

:mod:`edgegym.reproduce.etf` runs the experiments and passes the measured facts here (the
runs of Fig. 5 and 6, the phi sweeps' limits, the dynamic run's shares, the efficiency
incentive's readings and the power disparities); nothing here runs an episode. A held-out
claim holds only if it holds in the base run and in every sweep variant
(:func:`judge_across`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from edgegym.reproduce.claims import DEFAULT_POINT, Claim

#: One row of the power-disparity sweep (Fig. 6): A2's clock, the disparity and the runs of
#: TF, EF and ETF(0.7).
Fig6Row = tuple[float, float, dict[str, dict[str, Any]]]


@dataclasses.dataclass(frozen=True)
class Power:
    """The power disparities the calibration rows show: the TX2 pair's (Fig. 5's tenants at
    their clocks), the A10G pair's at its top clock, and ResNet50's full-load power at
    1300.5 MHz over its power at each TX2 clock of Fig. 6."""

    tx2_pair: float
    a10g_pair: float
    resnet50_ratio: dict[float, float]


@dataclasses.dataclass(frozen=True)
class Fig9:
    """What the claims take from the dynamic run: A1's time share with two tenants (per
    two-tenant phase), all three shares with three, and the least busy phase's GPU use."""

    two: list[float]
    three: np.ndarray
    busy: float


@dataclasses.dataclass(frozen=True)
class Fig10:
    """The efficiency incentive's results: A2's best relative throughput with the clock,
    latency and speed there, the best with its speed held (the ablation), and ETF(0.7)'s cap
    on A2's time share."""

    best: tuple[float, float, float, float]  # throughput, clock, latency, speed
    best_held: tuple[float, float]  # throughput, clock
    cap: float


def _claim(**fields: Any) -> Claim:
    """One of ETF's claims; where it fails and no closer reason is given, the reason states
    the measured value against its rule (what a sweep variant's failing claim says); a claim
    that holds has no reason."""
    fields.setdefault("why", "")
    fields["paper"] = "etf"
    if not fields["why"] and not fields["holds"]:
        fields["why"] = f"measured {fields['edgegym_value']}, outside the rule: {fields['test']}"
    return Claim(**fields)


def calibration_claims(power: Power) -> list[Claim]:
    """The inputs fitted to the paper's measurements: the power disparities."""
    disp5, disp8, ratio = power.tx2_pair, power.a10g_pair, power.resnet50_ratio
    return [
        _claim(
            figure="§6.2, §6.4, Fig. 5",
            claim="ResNet50 at 1300 MHz draws about 4x the power of MobileNetV2 at 726 MHz "
            "(Fig. 5: TF's energy fairness 0.19, i.e. 1 / 5.3)",
            metric="power disparity of the TX2 pair (MobileNetV2's activity fitted)",
            paper_value="4 (§6.4) to 5.3 (Fig. 5)",
            edgegym_value=round(disp5, 2),
            role="calibration",
            holds=4.0 <= disp5 <= 5.3,
            test="between §6.4's 4 and the 5.3 that Fig. 5's F_E(TF) = 0.19 implies",
        ),
        _claim(
            figure="Fig. 6, §6.5",
            claim="ResNet50's power disparity between 1300 MHz and 114 / 1032 / 726 MHz is "
            "1-to-7.9 / 1.5 / 2.5",
            metric="TX2 power ratio 1300 MHz : 114 MHz at full load (DVFS model's voltages)",
            paper_value=7.9,
            edgegym_value=round(ratio[114.75], 2),
            role="calibration",
            holds=abs(ratio[114.75] / 7.9 - 1) <= 0.05
            and abs(ratio[1032.75] - 1.5) <= 0.1
            and abs(ratio[726.75] - 2.5) <= 0.1,
            test=f"within 5% (and 1.5, 2.5 within 0.1: {ratio[1032.75]:.2f}, {ratio[726.75]:.2f})",
        ),
        _claim(
            figure="§6.4, Fig. 8",
            claim="GPT-2 and MobileNetV2 at the A10G's top clock differ about 2.2x in power",
            metric="power disparity of the A10G pair (MobileNetV2's activity)",
            paper_value=2.2,
            edgegym_value=round(disp8, 2),
            role="calibration",
            holds=abs(disp8 / 2.2 - 1) <= 0.1,
            test="within 10%",
        ),
    ]


def fairness_claims(res5: dict[str, dict[str, Any]], rows6: list[Fig6Row]) -> list[Claim]:
    """Fig. 5 and 6: ETF's system fairness against TF's and EF's."""
    tf5, ef5, etf5 = (res5[k] for k in ("TF", "EF", "ETF"))
    low6 = rows6[0]
    return [
        _claim(
            figure="Fig. 5",
            claim="ETF(0.7) reaches system fairness F_S = 0.42 on the TX2 pair",
            metric="F_S of ETF(0.7)",
            paper_value=0.42,
            edgegym_value=round(etf5["F_S"], 3),
            role="held-out",
            holds=abs(etf5["F_S"] - 0.42) <= 0.05,
            test="within 0.05",
            why="",
        ),
        _claim(
            figure="Fig. 5, §1",
            claim="ETF's system fairness is 2x that of TF and of EF",
            metric="F_S(ETF) / F_S(TF), the smaller of it and F_S(ETF) / F_S(EF)",
            paper_value=2.0,
            edgegym_value=round(min(etf5["F_S"] / tf5["F_S"], etf5["F_S"] / ef5["F_S"]), 2),
            role="held-out",
            holds=min(etf5["F_S"] / tf5["F_S"], etf5["F_S"] / ef5["F_S"]) >= 1.6,
            test="both ratios at least 1.6 (within 20% of 2)",
        ),
        _claim(
            figure="Fig. 6",
            claim="At the largest power disparity (1-to-7.9) ETF's F_S is 2x TF's and 1.6x "
            "EF's; at 1-to-1 the three converge",
            metric="F_S(ETF) / F_S(TF) at A2 = 114 MHz",
            paper_value=2.0,
            edgegym_value=round(low6[2]["ETF"]["F_S"] / low6[2]["TF"]["F_S"], 2),
            role="held-out",
            holds=low6[2]["ETF"]["F_S"] / low6[2]["TF"]["F_S"] >= 1.6
            and low6[2]["ETF"]["F_S"] / low6[2]["EF"]["F_S"] >= 1.28
            and max(abs(rows6[-1][2][k]["F_S"] - rows6[-1][2]["TF"]["F_S"]) for k in ("EF", "ETF"))
            <= 0.01,
            test="ratios within 20% of 2 and 1.6 "
            f"(ETF / EF {low6[2]['ETF']['F_S'] / low6[2]['EF']['F_S']:.2f}); equal within 0.01 "
            "at 1-to-1",
        ),
    ]


def phi_claims(
    perfect_up_to: dict[str, float], fair_phi: dict[str, float], disp5: float
) -> list[Claim]:
    """Fig. 7, 8 and 11: up to which phi ETF stays perfectly energy-fair."""
    return [
        _claim(
            figure="Fig. 7",
            claim="On the TX2 pair ETF is perfectly energy-fair for phi below 0.3",
            metric="largest phi with F_E at EF's (0.1 steps)",
            paper_value=0.3,
            edgegym_value=perfect_up_to["fig7"],
            role="held-out",
            holds=abs(perfect_up_to["fig7"] - 0.3) <= 0.1 + 1e-9,
            test="within 0.1",
        ),
        _claim(
            figure="Fig. 8, §6.4",
            claim="On the A10G pair (disparity 2.2) energy fairness stays perfect up to a "
            "higher phi than on the TX2 (disparity 4)",
            metric="largest phi with F_E at EF's, A10G (TX2 in the rule)",
            paper_value="higher than TX2",
            edgegym_value=perfect_up_to["fig8"],
            role="held-out",
            holds=perfect_up_to["fig8"] > perfect_up_to["fig7"],
            test=f"A10G's phi above TX2's ({perfect_up_to['fig7']:.1f})",
        ),
        _claim(
            figure="Fig. 11",
            claim="With weights 2:1, ETF is perfectly energy-fair for phi <= 0.6",
            metric="largest phi with F_E at EF's (0.1 steps)",
            paper_value=0.6,
            edgegym_value=perfect_up_to["fig11"],
            role="held-out",
            holds=abs(perfect_up_to["fig11"] - 0.6) <= 0.1 + 1e-9,
            test="within 0.1",
            why=f"Eq. 15 puts the limit at phi_fair = {fair_phi['fig11']:.2f} for the fitted "
            f"disparity {disp5:.2f} (the Fig. 11 sweep above stops at "
            f"{perfect_up_to['fig11']:.1f}); by Eq. 15 a limit of 0.6 with weights 2:1 "
            "needs a disparity of 3.0 (0.6 = 3 / (2 + r)), below the 4-5.3 of §6.4 and Fig. 5",
        ),
    ]


def dynamic_claims(fig9: Fig9, fig10: Fig10) -> list[Claim]:
    """Fig. 9 and 10: shares with tenants coming and going, and the efficiency incentive."""
    two, three, busy9 = fig9.two, fig9.three, fig9.busy
    best, best_held, cap = fig10.best, fig10.best_held, fig10.cap
    return [
        _claim(
            figure="Fig. 9, §6.5",
            claim="A1 is guaranteed phi x its equal share: 50% x 0.7 = 35% with two tenants "
            "(the text's 45% is a slip), 33.3% x 0.7 ~ 23% with three",
            metric="A1's smallest time share in the two- and three-tenant phases",
            paper_value="0.35 / 0.23",
            edgegym_value=f"{min(two):.2f} / {three[0]:.2f}",
            role="held-out",
            holds=min(two) >= 0.35 - 0.01 and three[0] >= 0.7 / 3 - 0.01,
            test="A1's share at least phi / n - 0.01 in every phase",
        ),
        _claim(
            figure="Fig. 9, §6.5",
            claim="With three tenants the low-power A3 gets a disproportionately high time "
            "share, and the GPU is always fully used",
            metric="A3's time share in 30-60 s (GPU busy: smallest over the phases)",
            paper_value="largest share; 100% busy",
            edgegym_value=f"{three[2]:.2f} (busy {busy9:.2f})",
            role="held-out",
            holds=bool(three[2] > max(three[0], three[1]) and busy9 >= 0.99),
            test="A3's share above A1's and A2's, and GPU busy >= 0.99 in every phase",
        ),
        _claim(
            figure="Fig. 10, §6.6",
            claim="A tenant that lowers its clock gets a larger time share: 1.3x throughput "
            "and 10% lower latency",
            metric="A2's best throughput over its clocks, relative to both at 1300 MHz",
            paper_value=1.3,
            edgegym_value=round(best[0], 2),
            role="held-out",
            holds=best[0] >= 1.15 and best[2] < 1.0,
            test="throughput gain at least 1.15x with lower latency",
            why=f"ETF(0.7) caps A2's share at {cap:.2f} = 1.3x its half, so 1.3x needs no "
            f"slowdown; edgegym's ResNet50 runs at {best[3]:.2f}x speed where its throughput "
            f"peaks. The ablation holding A2's speed reaches {best_held[0]:.2f}x "
            f"(Fig. 10 table)",
        ),
    ]


def judge_across(base: list[Claim], swept: dict[str, list[Claim]]) -> list[Claim]:
    """A held-out claim holds only if it holds in the base run and in every sweep variant."""
    judged = []
    for i, c in enumerate(base):
        if c.role != "held-out":
            judged.append(c)
            continue
        fails = [f"{name} ({cs[i].edgegym_value})" for name, cs in swept.items() if not cs[i].holds]
        test = f"{c.test}; in the base run and all {len(swept)} sweep variants"
        points = {DEFAULT_POINT: c.holds} | {name: cs[i].holds for name, cs in swept.items()}
        if c.holds and fails:
            why = f"holds in the base run, fails under {', '.join(fails)} (robustness sweep)"
            judged.append(dataclasses.replace(c, holds=False, test=test, why=why, points=points))
        else:
            judged.append(dataclasses.replace(c, test=test, points=points))
    return judged

"""Fit MIGRator scenario inputs to the paper's characterisation measurements (never its results).

MIGRator's §3 measures ResNet50 alone on the GPU before any scheduler is involved (Fig. 2): NC-
CIFAR-10, four retraining windows, the 7 GPCs split statically between inference and retraining
(6-1, 5-2, 4-3, 3-4), SLO attainment and inference accuracy per window. Two inputs of the bundled
``migrator-w*`` scenarios are fitted to it, by :func:`fit` (``python -m
edgegym.reproduce.migrator_calibration``):

* **the trace level** (``tenants.arrival.rate``, req/s): ResNet50's SLO attainment under the four
  splits (mean over the four windows) is a function of how far the arrivals exceed each split's
  capacity; the level minimising the squared error is kept. Fig. 2 does not name its trace; the
  Alibaba-like trace is assumed (Fig. 3 serves ResNet50 with the Alibaba trace);
* **the retraining cost** (``retrain_scale``, a factor on MIGRator's estimate of 3x the
  inference time, §4.1.2): how much accuracy a retraining GPC more or less costs (the 16
  accuracies of Fig. 2) depends on how long the job runs; the scale minimising the squared
  error is kept, at the fitted level.

The level is fitted first with the scale at 1 (SLO attainment barely depends on it), then the
scale at that level. The grids and the result are printed; the generator
(:mod:`edgegym.reproduce.migrator_workloads`) holds the fitted values, and the reproduction
re-measures the fit (:func:`calibration_claims`) for the claims table's calibration rows.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from edgegym.reproduce.claims import Claim

#: Fig. 2: inference-retraining GPC split -> (inference sizes, retraining size) on an A100.
#: 6 GPCs of inference are a 4g and a 2g instance (MIG has no 6g profile), 5 a 4g and a 1g.
SPLITS: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {
    "6-1": ((4, 2), (1,)),
    "5-2": ((4, 1), (2,)),
    "4-3": ((4,), (3,)),
    "3-4": ((3,), (4,)),
}
#: Fig. 2, SLO attainment (%) of ResNet50 in retraining windows 1-4 under each split.
FIG2_SLO = {
    "6-1": (92.62, 89.63, 91.49, 94.32),
    "5-2": (90.05, 87.54, 90.76, 92.46),
    "4-3": (83.99, 77.14, 89.48, 85.52),
    "3-4": (73.64, 62.8, 82.13, 78.56),
}
#: Fig. 2, inference accuracy (%) of ResNet50 in retraining windows 1-4 under each split.
FIG2_ACC = {
    "6-1": (81.29, 73.8, 73.64, 74.88),
    "5-2": (89.4, 78.25, 78.14, 79.66),
    "4-3": (90.5, 81.61, 80.38, 81.28),
    "3-4": (91.27, 81.86, 80.99, 82.15),
}
#: Fig. 3's table: Inception (Azure trace) and ResNet50 (Alibaba trace) share the 7 GPCs; the
#: seconds of one 200 s window in which each split (Inception's GPCs - ResNet50's) gives the
#: best SLO attainment.
FIG3_BEST = {"6-1": 16, "5-2": 42, "4-3": 55, "3-4": 40, "2-5": 28, "1-6": 19}
#: The instances of k inference GPCs (MIG has no 6g or 5g profile), as in :data:`SPLITS`.
GPC_INSTANCES = {6: (4, 2), 5: (4, 1), 4: (4,), 3: (3,), 2: (2,), 1: (1,)}
#: Windows drawn for the Fig. 3 check, and the largest share of the window's seconds whose
#: best split may differ from the paper's (total variation distance) for the row to agree.
FIG3_WINDOWS = 50
FIG3_TOLERANCE = 0.15
RATE_GRID = tuple(range(150, 351, 10))
SCALE_GRID = tuple(round(x, 2) for x in np.arange(0.15, 1.001, 0.05))
SEEDS = 3


def fig2_scenario(rate: float, retrain_scale: float, dispersion_x: float = 1.0) -> dict[str, Any]:
    """Fig. 2's experiment as a one-tenant ``migrator`` scenario mapping, with every other
    input as the bundled scenarios have it (:mod:`edgegym.reproduce.migrator_workloads`); the
    trace's log-stds ``dispersion_x`` times the generator's (the reproduction's dispersion
    sweep)."""
    from edgegym.reproduce import migrator_workloads as mw

    arrival = {"kind": "alibaba", "rate": float(rate)}
    if dispersion_x != 1.0:
        arrival.update(mw.dispersion("alibaba", dispersion_x))
    return {
        "name": "migrator-fig2",
        "family": "mig",
        "window_s": mw.WINDOW_S,
        "basis_s": 1.0,
        "batch": 1,
        "preinit": mw.PREINIT,
        "retrain_scale": float(retrain_scale),
        "overhead": dict(mw.OVERHEAD),
        "tenants": [
            {
                "name": "resnet50",
                "model": "resnet50",
                "dataset": "nc-cifar10",
                "slo_ms": mw.SLO_MS["resnet50"],
                "ceiling": mw.CEILING[("resnet50", "nc-cifar10")],
                "arrival": arrival,
            }
        ],
    }


def fig2(
    rate: float, retrain_scale: float, seeds: int = SEEDS, dispersion_x: float = 1.0
) -> dict[str, np.ndarray]:
    """ResNet50 under each static split of Fig. 2: split -> (2, 4) SLO attainment and accuracy
    (%) per window, means over ``seeds`` episodes. The split holds while the job is pending or
    running; after it the retraining GPCs stay idle (released), as in the paper's experiment."""
    from edgegym.families.mig import MIGReconfigEnv

    out: dict[str, np.ndarray] = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "migrator-fig2.yaml"
        path.write_text(yaml.safe_dump(fig2_scenario(rate, retrain_scale, dispersion_x)))
        env = MIGReconfigEnv(str(path))
        cat = env.spec_.catalogue
        for name, (infer, retrain) in SPLITS.items():
            with_job, without = cat.index((infer, retrain)), cat.index((infer, ()))
            runs = []
            for seed in range(seeds):
                env.reset(seed=seed)
                term = False
                while not term:
                    a = with_job if env.status()[0] != 2 else without
                    if not env.action_masks()[a]:
                        a = without  # the job cannot start or finish on this split
                    _, _, term, _, _ = env.step(a)
                st = env.state
                req = st.requests[0, 0]
                runs.append(np.stack([st.served_slo[0, 0] / req, st.correct[0, 0] / req]))
            out[name] = 100.0 * np.mean(runs, axis=0)
    return out


def slo_error(res: dict[str, np.ndarray]) -> float:
    """RMS error (points) of the window-mean SLO attainment per split against Fig. 2."""
    return float(np.sqrt(np.mean(np.square(list(_split_errors(res).values())))))


def acc_error(res: dict[str, np.ndarray]) -> float:
    """RMS error (points) of the 16 accuracies against Fig. 2."""
    return float(np.sqrt(np.mean([(res[s][1] - np.array(FIG2_ACC[s])) ** 2 for s in SPLITS])))


def fit(seeds: int = SEEDS, verbose: bool = True) -> tuple[float, float]:
    """Grid-fit the trace level to Fig. 2's SLO attainment (scale 1), then the retraining scale
    to its accuracy (at that level). Returns ``(rate, retrain_scale)``."""
    best_rate, best = RATE_GRID[0], np.inf
    for rate in RATE_GRID:
        err = slo_error(fig2(rate, 1.0, seeds))
        if verbose:
            print(f"rate {rate:4d} req/s: SLO attainment RMS error {err:.2f} points")
        if err < best:
            best_rate, best = rate, err
    best_scale, best = SCALE_GRID[0], np.inf
    for scale in SCALE_GRID:
        err = acc_error(fig2(best_rate, scale, seeds))
        if verbose:
            print(f"retrain_scale {scale:.2f}: accuracy RMS error {err:.2f} points")
        if err < best:
            best_scale, best = scale, err
    if verbose:
        print(f"fitted: rate {best_rate} req/s, retrain_scale {best_scale}")
    return float(best_rate), float(best_scale)


def calibration_claims(seeds: int = SEEDS) -> tuple[list[Claim], dict[str, np.ndarray]]:
    """The calibration rows of the claims table (inputs fitted to or checked against the
    paper's measurements), re-measured with the bundled scenarios' values; also returns the
    Fig. 2 measurements (split -> (2, 4) %) for the report."""
    from edgegym.reproduce import migrator_workloads as mw

    res = fig2(mw.FIG2_RATE, mw.RETRAIN_SCALE, seeds)
    claims = [
        *_fig2_claims(res, seeds),
        _fig3_claim(),
        *_overhead_claims(),
        *_new_class_claims(),
    ]
    return claims, res


def fig3_best(load_x: float = 1.0, windows: int = FIG3_WINDOWS) -> dict[str, float]:
    """Fig. 3's experiment on the workloads' traces: Inception on the Azure-like trace and
    ResNet50 on the Alibaba-like trace, both at the workloads' level (times ``load_x``) and
    recurrence; for every second of ``windows`` 200 s windows the split of the 7 GPCs whose
    instances serve the most of that second's requests within the SLO (each tenant serves at
    most its instances' rate, the fluid queue's limit over a second; tied splits share the
    second). Returns split -> mean seconds per window."""
    from edgegym.families.mig import MIGReconfigEnv
    from edgegym.reproduce import migrator_workloads as mw

    tenants = [
        mw.tenant(model, "nc-cifar10", kind, rate=mw.RATE * load_x)
        for model, kind in (("inception", "azure"), ("resnet50", "alibaba"))
    ]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "migrator-fig3.yaml"
        sc = {**fig2_scenario(mw.RATE, mw.RETRAIN_SCALE), "name": "migrator-fig3"}
        path.write_text(yaml.safe_dump({**sc, "tenants": tenants}))
        spec = MIGReconfigEnv(str(path)).spec_
    size = {z: i for i, z in enumerate(spec.catalogue.sizes)}
    cap = np.array(  # (splits, 2): requests/s each tenant's instances serve within the SLO
        [
            [
                sum(spec.size_rate[0, size[z]] for z in GPC_INSTANCES[k]),
                sum(spec.size_rate[1, size[z]] for z in GPC_INSTANCES[7 - k]),
            ]
            for k in (int(sp.split("-")[0]) for sp in FIG3_BEST)
        ]
    )
    rng = np.random.default_rng(0)
    n = int(mw.WINDOW_S)
    best = np.zeros(len(FIG3_BEST))
    for _ in range(windows):
        counts = np.stack([proc.counts(n, 1.0, rng) for proc in spec.arrivals], axis=1)
        served = np.minimum(counts[:, None, :], cap[None]).sum(axis=2)  # (seconds, splits)
        top = served >= served.max(axis=1, keepdims=True) - 1e-9
        best += (top / top.sum(axis=1, keepdims=True)).sum(axis=0)
    return dict(zip(FIG3_BEST, best / windows, strict=True))


def _fig3_distance(best: dict[str, float]) -> float:
    """Total variation distance between a best-split table and Fig. 3's (share of seconds)."""
    total = sum(FIG3_BEST.values())
    return 0.5 * sum(abs(best[sp] / total - FIG3_BEST[sp] / total) for sp in FIG3_BEST)


def _fig3_claim() -> Claim:
    """Fig. 3's table: how often each split is the best, against the workloads' traces at their
    level (and at the load sweep's points, in the reason)."""
    from edgegym.reproduce import migrator_workloads as mw

    best = fig3_best()
    tv = _fig3_distance(best)
    swept = {x: _fig3_distance(fig3_best(x)) for x in mw.RATE_SWEEP}
    ok = tv <= FIG3_TOLERANCE
    return Claim(
        paper="migrator",
        figure="Fig. 3",
        claim=(
            "Inception (Azure trace) and ResNet50 (Alibaba trace): the best split of the 7 GPCs "
            "changes from second to second over all six splits"
        ),
        metric=(
            "seconds of a 200 s window each split 6-1 ... 1-6 is best (both traces at "
            f"{mw.RATE} req/s, mean of {FIG3_WINDOWS} windows)"
        ),
        paper_value=" / ".join(str(v) for v in FIG3_BEST.values()),
        edgegym_value=" / ".join(f"{v:.0f}" for v in best.values()),
        role="calibration",
        holds=ok,
        test=(
            f"at most {FIG3_TOLERANCE:.0%} of the seconds assigned differently (total "
            f"variation distance {tv:.2f}); at load "
            + ", ".join(f"x{x:g} {d:.2f}" for x, d in swept.items())
            + ": the check of the workloads' level, edgegym's reading of Fig. 3's axis"
        ),
        why="" if ok else "the workloads' traces do not spread the best split as Fig. 3 does",
    )


def _split_errors(res: dict[str, np.ndarray]) -> dict[str, float]:
    """Split -> edgegym's window-mean SLO attainment minus Fig. 2's (points)."""
    return {s: float(res[s][0].mean() - np.mean(FIG2_SLO[s])) for s in SPLITS}


def dispersion_fit(x: float, seeds: int = SEEDS) -> tuple[float, dict[str, float]]:
    """The trace level that fits Fig. 2's SLO attainment best with the Alibaba-like trace's
    log-stds ``x`` times the generator's, on :data:`RATE_GRID`: ``(rate, split -> error)``."""
    from edgegym.reproduce import migrator_workloads as mw

    runs = {rate: fig2(rate, mw.RETRAIN_SCALE, seeds, dispersion_x=x) for rate in RATE_GRID}
    rate = min(runs, key=lambda r: slo_error(runs[r]))
    return float(rate), _split_errors(runs[rate])


def _slo_miss_reason(seeds: int) -> str:
    """Why a split's SLO attainment misses Fig. 2's, measured: the fit again with the trace's
    dispersion at the reproduction's x2 point."""
    from edgegym.reproduce import migrator_workloads as mw

    x = max(mw.DISPERSION_SWEEP)
    rate, err = dispersion_fit(x, seeds)
    worst = max(abs(e) for e in err.values())
    fits = "puts every split within 5 points" if worst <= 5.0 else "still misses"
    return (
        "one trace level cannot fit every split with the generator's per-second dispersion: "
        f"with the trace's log-stds x{x:g} (the dispersion sweep's point) the best level, "
        f"{rate:g} req/s, {fits} ("
        + ", ".join(f"{s} {e:+.1f}" for s, e in err.items())
        + "), so Fig. 2's trace swings more per second than the generator, which is "
        "synthesised from Fig. 3's look"
    )


def _fig2_claims(res: dict[str, np.ndarray], seeds: int = SEEDS) -> list[Claim]:
    """Fig. 2: SLO attainment per split (the trace level's fit) and the accuracies (the
    retraining scale's fit)."""
    claims: list[Claim] = []
    errors = _split_errors(res)
    miss = _slo_miss_reason(seeds) if max(map(abs, errors.values())) > 5.0 else ""
    for s in SPLITS:
        paper, ours = float(np.mean(FIG2_SLO[s])), float(res[s][0].mean())
        claims.append(
            Claim(
                paper="migrator",
                figure="Fig. 2",
                claim=f"ResNet50 alone, split {s} (inference-retraining GPCs): SLO attainment",
                metric="SLO attainment, mean of windows 1-4 (%)",
                paper_value=round(paper, 1),
                edgegym_value=round(ours, 1),
                role="calibration",
                holds=abs(ours - paper) <= 5.0,
                test="within 5 points (trace level fitted to the four splits together)",
                why="" if abs(ours - paper) <= 5.0 else miss,
            )
        )
    err = acc_error(res)
    claims.append(
        Claim(
            paper="migrator",
            figure="Fig. 2",
            claim="ResNet50 alone: inference accuracy under the four splits in windows 1-4",
            metric="RMS error of the 16 accuracies (points)",
            paper_value=0.0,
            edgegym_value=round(err, 2),
            role="calibration",
            holds=err <= 5.0,
            test="RMS error <= 5 points (retrain_scale fitted)",
            why=(
                ""
                if err <= 5.0
                else "the new-class accuracy model leaves window 1 closer to windows 2-4 than "
                "ResNet50 does in Fig. 2 (report)"
            ),
        )
    )
    return claims


def _overhead_claims() -> list[Claim]:
    """Fig. 5 and §4.1.4: the reconfiguration overhead, and against a request's latency."""
    from edgegym.reproduce import migrator_workloads as mw
    from edgegym.workload.models import get_model

    # Fig. 5: the overhead of the three models it shows.
    totals = {
        md: mw.OVERHEAD["destroy_s"]
        + mw.OVERHEAD["create_s"]
        + mw.OVERHEAD["library_s"]
        + get_model(md).model_load_s
        for md in ("convnext", "resnet50", "mobilenetv2")
    }
    top = max(totals.values())
    lat = max(float(get_model(md).latency_s(1.0)) for md in mw.SLO_MS) * 1000.0
    return [
        Claim(
            paper="migrator",
            figure="Fig. 5, §4.1.4",
            claim="reconfiguration overheads can take more than 6,000 ms (axis to 7,000 ms)",
            metric="largest total overhead of ConvNeXt, ResNet50, MobileNet (s)",
            paper_value="6-7",
            edgegym_value=round(top, 2),
            role="calibration",
            holds=6.0 < top <= 7.0,
            test="in (6, 7] s",
            why="" if 6.0 < top <= 7.0 else "overhead components set outside Fig. 5's range",
        ),
        Claim(
            paper="migrator",
            figure="§4.1.4",
            claim="the overhead is more than 1,000 times a single request's latency",
            metric="largest batch-1 latency on a whole A100 (ms); must be below 6",
            paper_value="< 6",
            edgegym_value=round(lat, 2),
            role="calibration",
            holds=lat < 6.0,
            test="below 6,000 ms / 1,000",
            why="" if lat < 6.0 else "a model's latency is above the paper's bound",
        ),
    ]


def _new_class_claims() -> list[Claim]:
    """§5.2, W1: Bert and ViT lose 32.5% when new classes arrive; retraining adds ~30%."""
    from edgegym.families.mig.datasets import get_dataset, nc_profile
    from edgegym.reproduce import migrator_workloads as mw
    from edgegym.workload.models import get_model

    prof = nc_profile(
        [get_model("bert"), get_model("vit")],
        [get_dataset("nc-20news"), get_dataset("nc-cifar10")],
        [mw.CEILING[("bert", "nc-20news")], mw.CEILING[("vit", "nc-cifar10")]],
        retrain_scale=mw.RETRAIN_SCALE,
    )
    ceil = np.array([mw.CEILING[("bert", "nc-20news")], mw.CEILING[("vit", "nc-cifar10")]])
    prev = np.concatenate([ceil[:, None], prof.post_acc[:, :-1, 0]], axis=1)
    pre = np.maximum(prof.floor, prev - prof.drift)
    drop = float(np.mean((prev - pre) / prev) * 100.0)
    boost = float(np.mean(prof.post_acc[:, :, 0] - pre) * 100.0)
    claims = []
    for what, paper, ours, tol, note in (
        ("accuracy drop when new classes arrive", 32.5, drop, 2.0, " (the input's source)"),
        ("accuracy gain of retraining", 30.0, boost, 5.0, ""),
    ):
        ok = abs(ours - paper) <= tol
        claims.append(
            Claim(
                paper="migrator",
                figure="§5.2 (W1)",
                claim=f"Bert and ViT: {what} (mean of W1's windows)",
                metric="% (drop: relative; gain: points)",
                paper_value=paper,
                edgegym_value=round(ours, 1),
                role="calibration",
                holds=ok,
                test=f"within {tol:g}{note}",
                why="" if ok else "the new-class accuracy model misses the paper's mean",
            )
        )
    return claims


def main(argv: list[str] | None = None) -> int:
    """Print the fit (``--seeds N``)."""
    args = list(sys.argv[1:] if argv is None else argv)
    seeds = int(args[args.index("--seeds") + 1]) if "--seeds" in args else SEEDS
    fit(seeds)
    return 0


if __name__ == "__main__":
    from edgegym.outputs import run_command

    sys.exit(run_command(main, "python -m edgegym.reproduce.migrator_calibration"))

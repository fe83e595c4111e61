"""MIGRator's workloads W1-W16 (Table 4) and the writer of their scenario files.

``python -m edgegym.reproduce.migrator_workloads`` rewrites ``scenarios/migrator-w*.yaml`` from
the tables below. Every input of a file has its source in the file's ``provenance`` (the
per-field format of :mod:`edgegym.provenance`): a measurement of the paper, a public hardware
fact, or, where the paper publishes no number, how the value was synthesised.

Inputs that are not fields of the file (a model's latency on each MIG instance size, its
memory and load time: :mod:`edgegym.workload.models`; the new-class accuracy model:
:mod:`edgegym.families.mig.datasets`; the A100's MIG profiles and placements:
:mod:`edgegym.hardware.mig`) are named in the file's ``notes``.

The trace level :data:`RATE` is taken from the paper's setup: §5.1 gives no request
rate and points to Fig. 3 for the traces' characteristics, whose two curves lie mostly between
50 and 250 req/s on a 0-300 axis; edgegym reads their level as 120 req/s (the generators'
documented level, docs/traces.md) and the reproduction sweeps it (x0.5, x2). The arrivals recur
from window to window (:data:`PERSISTENCE`, synthesised, swept): MIGRator forecasts each second
of a window from the previous windows (§4.1.3), which presumes a recurring per-second structure
that the paper does not quantify. The retraining cost :data:`RETRAIN_SCALE` is fitted to a
characterisation measurement of the paper (Fig. 2: ResNet50 alone under four static splits) by
:mod:`edgegym.reproduce.migrator_calibration`, at the level that fit found for Fig. 2's own
experiment (:data:`FIG2_RATE`). MPS interference (:data:`MPS`) is written into every file,
off: the reproduction turns it on for the MPS-based baselines (Ekya, Astraea). The paper's
evaluation results (Fig. 7-10, the pre-initialisation reduction) are held-out claims and set no
input.

Choices made after seeing results (none of them against a held-out claim): the Fig. 2 level
(260 req/s) and the retraining scale replaced the earlier unsourced 100 req/s and scale 1 once
the Fig. 2 fit existed; the workloads then replaced the Fig. 2 level as the workloads' level by the
Fig. 3 reading above (Fig. 2 is one tenant alone, §5 runs two; the Fig. 2 level stays the
calibration experiment's own), before any run of the new scenarios. On 2026-11-30 the new-class
accuracy model's drop (:data:`edgegym.families.mig.datasets.DROP`) became §5.2's 32.5% in every
window instead of ``new / (seen + new)``, and :data:`RETRAIN_SCALE` was refitted with it
(0.35 to 0.45): chosen on Fig. 2's fit alone (RMS error 5.3 to 3.1 points; the calibration row
had failed), before any held-out run of the changed scenarios.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

from edgegym.families.mig.datasets import NC_DATASETS
from edgegym.outputs import write_atomic
from edgegym.workload.generators import AlibabaLike, AzureLike

#: Table 4: (model 1, dataset 1, model 2, dataset 2); model 1 uses the Alibaba trace, model 2
#: the Azure trace.
WORKLOADS: dict[str, tuple[str, str, str, str]] = {
    "w1": ("bert", "nc-20news", "vit", "nc-cifar10"),
    "w2": ("bert", "nc-20news", "convnext", "nc-cifar10"),
    "w3": ("vit", "nc-cifar10", "convnext", "nc-cifar10"),
    "w4": ("bert", "nc-20news", "inception", "nc-cifar10"),
    "w5": ("vit", "nc-cifar10", "resnet50", "nc-cifar10"),
    "w6": ("convnext", "nc-cifar10", "mobilenetv2", "nc-cifar10"),
    "w7": ("inception", "nc-cifar10", "resnet50", "nc-cifar10"),
    "w8": ("resnet50", "nc-cifar10", "mobilenetv2", "nc-cifar10"),
    "w9": ("bert", "nc-20news", "vit", "nc-core50"),
    "w10": ("bert", "nc-20news", "convnext", "nc-core50"),
    "w11": ("vit", "nc-core50", "convnext", "nc-core50"),
    "w12": ("bert", "nc-20news", "inception", "nc-core50"),
    "w13": ("vit", "nc-core50", "resnet50", "nc-core50"),
    "w14": ("convnext", "nc-core50", "mobilenetv2", "nc-core50"),
    "w15": ("inception", "nc-core50", "resnet50", "nc-core50"),
    "w16": ("resnet50", "nc-core50", "mobilenetv2", "nc-core50"),
}

#: Retraining window (s): §2.1 and §5.1.
WINDOW_S = 200
#: Decision basis (s): §4.1 (per second) and §5.3 (Fig. 10: 1 s is the default).
BASIS_S = 1.0
#: Inference batch: §5.1 (1 for the main results; 4 in §5.3, Fig. 9).
BATCH = 1
#: Pre-initialisation: part of MIGRator's runtime (§4.2) and evaluated with it (§5.2).
PREINIT = True
#: Reconfiguration cost rule and Fig. 5's per-instance components (model load is per model,
#: :mod:`edgegym.workload.models`). The figure's bar heights are not in the text; §4.1.4 says
#: the overhead can take more than 6,000 ms, on an axis to 7,000 ms: with ConvNeXt's 2.2 s
#: model load the split below gives 6.2 s, ResNet50 5.0 s, MobileNet 4.5 s.
OVERHEAD = {"rule": "eq10", "destroy_s": 0.5, "create_s": 1.5, "library_s": 2.0}
#: The split of those components swept in the reproduction: the library load (paid again when an
#: existing instance goes to another task, with the model load) x0.5 and x1.5, the instance's
#: destruction and creation taking up the rest in their 1:3 ratio, so every total (a new
#: placement's) stays the calibrated one. x2 would leave instance creation nothing.
OVERHEAD_SPLIT_SWEEP = (0.5, 1.5)


def overhead_split(library_x: float) -> dict[str, float]:
    """The scenario's ``overhead`` components with the library load times ``library_x`` and
    destruction and creation sharing the rest of :data:`OVERHEAD`'s fixed part in their ratio."""
    parts = ("destroy_s", "create_s", "library_s")
    total = sum(OVERHEAD[k] for k in parts)
    library = OVERHEAD["library_s"] * library_x
    if not 0.0 <= library < total:
        raise ValueError(f"library_x {library_x:g} leaves the instance no creation time")
    rest = OVERHEAD["destroy_s"] + OVERHEAD["create_s"]
    scale = (total - library) / rest
    return {
        "overhead.destroy_s": OVERHEAD["destroy_s"] * scale,
        "overhead.create_s": OVERHEAD["create_s"] * scale,
        "overhead.library_s": library,
    }


#: The new-class accuracy model's synthesised numbers (:mod:`edgegym.families.mig.datasets`),
#: swept by the reproduction through the scenario's ``datasets`` section: every dataset's
#: difficulty (accuracy lost per doubling of the classes known), x0.5 and x2, and the retraining
#: data the paper does not give, x0.5 and x2: NC-CORe50's frames per object (a subsample; x2 is
#: the whole training set) and NC-20-Newsgroups' epochs. NC-CIFAR-10's retraining work is not
#: swept: ``retrain_scale`` is fitted to it (Fig. 2).
DIFFICULTY_SWEEP = (0.5, 2.0)
DATA_SWEEP = (0.5, 2.0)
SYNTHESISED_DATA = {"nc-core50": "samples_per_class", "nc-20news": "epochs"}
#: The new-class drop (§5.2's W1 mean of Bert and ViT, applied to every model, dataset and
#: window), x0.5 and x2.
DROP_SWEEP = (0.5, 2.0)


def dataset_overrides(
    difficulty_x: float = 1.0, data_x: float = 1.0, drop_x: float = 1.0
) -> dict[str, float]:
    """Scenario overrides (``datasets.NAME.FIELD``) scaling every dataset's difficulty by
    ``difficulty_x``, the synthesised retraining data (:data:`SYNTHESISED_DATA`) by ``data_x``
    and the new-class drop by ``drop_x``; empty at 1, 1 and 1."""
    out: dict[str, float] = {}
    for name, ds in NC_DATASETS.items():
        if difficulty_x != 1.0:
            out[f"datasets.{name}.difficulty"] = ds.difficulty * difficulty_x
        if drop_x != 1.0:
            out[f"datasets.{name}.drop"] = ds.drop * drop_x
        field = SYNTHESISED_DATA.get(name)
        if field and data_x != 1.0:
            value = getattr(ds, field) * data_x
            whole = field == "samples_per_class"
            out[f"datasets.{name}.{field}"] = round(value) if whole else value
    return out


#: Latency SLO (ms): MIGRator publishes none. Table 3's 'High' GFLOPs models 50 ms, 'Low' 25 ms;
#: each model meets it on a 1-GPC instance at batch 1 (Fig. 3 serves Inception and ResNet50 on
#: one GPC) and on some instance at batch 4 (Fig. 9 serves every workload).
SLO_MS = {"bert": 50, "vit": 50, "convnext": 50, "inception": 25, "resnet50": 25, "mobilenetv2": 25}
#: Accuracy on the pre-training classes: MIGRator publishes none (synthesised). The resulting
#: accuracy model is checked against §5.2's W1 numbers (drop 32.5%, retraining +30%) and
#: Fig. 2's ResNet50 accuracies (calibration rows of the claims table).
CEILING = {
    ("bert", "nc-20news"): 0.90,
    ("vit", "nc-cifar10"): 0.97,
    ("convnext", "nc-cifar10"): 0.96,
    ("inception", "nc-cifar10"): 0.93,
    ("resnet50", "nc-cifar10"): 0.94,
    ("mobilenetv2", "nc-cifar10"): 0.91,
    ("vit", "nc-core50"): 0.94,
    ("convnext", "nc-core50"): 0.93,
    ("inception", "nc-core50"): 0.90,
    ("resnet50", "nc-core50"): 0.91,
    ("mobilenetv2", "nc-core50"): 0.88,
}
#: Mean request rate of both traces in the W1-W16 workloads (req/s). The paper states no request
#: rate: §5.1 says "the trace characteristics are given early in Figure 3", whose two curves
#: (Azure for Inception, Alibaba for ResNet50, batch 1, one A100) lie mostly between 50 and 250
#: req/s on a 0-300 axis; 120 req/s is edgegym's reading of their level (the level the
#: Azure-like and Alibaba-like generators are documented at, docs/traces.md). Both tenants run at
#: it (Fig. 3 plots both traces on one scale, neither above the other for long). Swept x0.5 and
#: x2 in the reproduction (:data:`RATE_SWEEP`).
RATE = 120
#: The load sweep of the reproduction: x0.5 and x2 around :data:`RATE` (x2 is near the Fig. 2
#: level, :data:`FIG2_RATE`).
RATE_SWEEP = (0.5, 2.0)
#: Mean request rate of Fig. 2's experiment (ResNet50 alone, the Alibaba-like trace): fitted to
#: its SLO attainment under the 6-1, 5-2, 4-3 and 3-4 splits by
#: ``python -m edgegym.reproduce.migrator_calibration`` (RMS error 4.3 points; grid 150-350 req/s
#: in steps of 10, 3 seeds). The calibration experiment's own level; the workloads use RATE.
FIG2_RATE = 260
#: Share of each trace's per-second rate that recurs every window (:class:`edgegym.workload.
#: generators.Recurring`). Synthesised: MIGRator predicts every second of a window from the
#: previous windows (§4.1.3, with an Informer), which presumes a recurring per-second
#: structure; how strong it is the paper does not say. 0.5 is the midpoint of "nothing recurs"
#: (0) and "the shape repeats exactly" (1); swept x0.5 (0.25) and x2 (1.0).
PERSISTENCE = 0.5
#: The persistence sweep of the reproduction.
PERSISTENCE_SWEEP = (0.25, 1.0)
#: The traces' per-second dispersion, swept x0.5 and x2: every log-std of both generators (the
#: Azure-like trace's slow level and jitter, the Alibaba-like trace's plateaus and wobble;
#: :data:`DISPERSION_FIELDS`), synthesised from Fig. 3's look (docs/traces.md). Fig. 2's SLO
#: attainment, ResNet50 alone on the Alibaba-like trace, is fitted within 5 points at every split
#: with these log-stds doubled, and not with the generator's own (the calibration rows).
DISPERSION_SWEEP = (0.5, 2.0)
#: The log-std parameters of each trace kind that :data:`DISPERSION_SWEEP` scales.
DISPERSION_FIELDS = {"alibaba": ("level_sigma", "sigma"), "azure": ("sigma", "jitter")}
#: MPS interference (scenario ``mps``): off in the files (MIG isolates; MIGRator and PARIS run on
#: MIG); the reproduction turns it on for the runs of the MPS-based baselines (Ekya, Astraea;
#: §5.1). Sizes: measured on an NVIDIA H200 on 2026-11-27 (``tools/gpu/mps_regime.py``; torch
#: 2.11, fp32, 224x224) for the two MIGRator models measured, ResNet50 and ViT-B/16: an
#: inference process (batch 8) at share 100-p beside a retraining process (batch 32) at share
#: p, p = 25/50/75%, against each alone at its share. Inference lost 39.2/24.9/14.1%
#: (ResNet50) and 4.2/5.1/4.3% (ViT), mean 15.3%; retraining 5.3/8.7/2.5% and 1.9/1.4/1.8%,
#: mean 3.6% (docs/real-gpu.md; ResNet18, not a MIGRator model, lost 2.0% and 4.3%).
MPS = {"interference": False, "inference_slowdown": 0.153, "retrain_slowdown": 0.036}
#: The MPS slowdown sweep of the reproduction (factors on both sizes): x0.5, x2, and
#: :data:`MPS_CONTENTION`.
MPS_SWEEP = (0.5, 2.0)
#: A published slowdown under memory contention: Villarrubia et al., "A comprehensive evaluation
#: of spatial co-execution on GPUs using MPS and MIG technologies" (arXiv 2604.22430, 2026):
#: "under memory contention, [MPS] suffers severe degradation, worsening performance by around
#: 30%". MIGRator §1 and §5.2 blame MPS's shared memory bandwidth, "especially in large CL
#: models", without a number; this is the large-model point of the sweep (both sizes 0.30).
MPS_CONTENTION = 0.30
#: Retraining GPU-seconds relative to MIGRator's estimate (3x the inference time, §4.1.2, with
#: edgegym's batch-32 latencies): fitted to Fig. 2's 16 accuracies of ResNet50 by the same run
#: (RMS error 3.1 points; grid 0.15-1.0 in steps of 0.05, 3 seeds; 0.35 at 5.3 points under
#: the earlier new-class drop of new / (seen + new)).
RETRAIN_SCALE = 0.45

#: Per-field sources (edgegym.provenance); ``{...}`` are filled per workload.
PROVENANCE = {
    "hardware.gpu": "paper: §5.1, an NVIDIA A100 with 40 GB (CUDA 12.1, driver 550.54.15)",
    "window_s": "paper: §2.1 and §5.1, 200 s retraining windows",
    "basis_s": "paper: §4.1 and §5.3, a decision every second (Fig. 10: 1 s is the default)",
    "batch": "paper: §5.1, inference batch size 1 for the main results",
    "preinit": (
        "paper: §4.2 and §5.2, pre-initialisation is part of MIGRator's runtime: the "
        "allocation sequence is traversed for it after every solve, and §5.2 evaluates "
        "MIGRator with it"
    ),
    "retrain_scale": (
        "paper: Fig. 2, fitted to ResNet50's accuracy under 1-4 retraining GPCs by "
        "edgegym.reproduce.migrator_calibration (a factor on §4.1.2's 3x-inference estimate)"
    ),
    "overhead.rule": (
        "paper: Eq. 10-11 and Table 2, a task whose instance or GPC count changes loses its "
        "capacity for Psi, its mean overhead over the last window"
    ),
    "overhead.destroy_s": (
        "synthesised: Fig. 5 names the components (instance destruction, initialisation, "
        "library load, model load) but its bar heights are not in the text; split chosen so "
        "ConvNeXt's total is 6.2 s, just above §4.1.4's 'more than 6,000 ms'"
    ),
    "overhead.create_s": "synthesised: as overhead.destroy_s (Fig. 5 instance initialisation)",
    "overhead.library_s": "synthesised: as overhead.destroy_s (Fig. 5 library load)",
    "objective": "paper: Eq. 7, MIGRator maximises Goodput; energy is not in its objective",
    "tenants.name": "paper: Table 4, the workload's model pair",
    "tenants.model": "paper: Table 4 (model pair) and Table 3 (GFLOPs)",
    "tenants.dataset": (
        "paper: Table 4 and §5.1, NC-CIFAR-10 (4 windows), NC-CORe50 and NC-20-Newsgroups (9)"
    ),
    "tenants.slo_ms": (
        "synthesised: MIGRator publishes no SLO; Table 3's High GFLOPs models 50 ms, Low 25 ms, "
        "met on one GPC at batch 1 (Fig. 3) and on some instance at batch 4 (Fig. 9)"
    ),
    "tenants.ceiling": (
        "synthesised: accuracy on the pre-training classes is not published; the accuracy "
        "model it sets is checked against §5.2 (W1 drop 32.5%, +30% by retraining) and Fig. 2"
    ),
    "tenants.arrival.kind": (
        "paper: Table 4 and Fig. 3, model 1 on the Alibaba trace and model 2 on the Azure trace "
        "(edgegym's Alibaba-like and Azure-like generators, docs/traces.md; their per-second "
        "dispersion is synthesised from Fig. 3's look, and the reproduction sweeps it x0.5 and "
        "x2)"
    ),
    "tenants.arrival.rate": (
        "paper: §5.1 and Fig. 3, no request rate is stated; §5.1 points to Fig. 3 for the "
        "traces' characteristics, whose curves lie mostly within 50-250 req/s on a 0-300 axis; "
        "120 req/s is edgegym's reading of that level (docs/traces.md), both tenants alike; at "
        "it the best split of the 7 GPCs per second spreads over the six splits as Fig. 3's "
        "table does (a calibration row of the reproduction); the reproduction sweeps it x0.5 "
        "and x2"
    ),
    "tenants.arrival.recur_s": (
        "paper: §2.1 and §4.1.3, the per-second structure recurs at the 200 s retraining window "
        "that MIGRator forecasts from the previous windows"
    ),
    "tenants.arrival.persistence": (
        "synthesised: §4.1.3 forecasts every second from the previous windows (Informer), which "
        "presumes recurrence, but no strength is published; 0.5 is the midpoint of none (0) and "
        "exact repetition (1); the reproduction sweeps it x0.5 and x2"
    ),
    "mps.interference": (
        "paper: §5.1, Ekya and Astraea share the GPU by MPS, MIGRator and PARIS by MIG; off here "
        "(MIG isolates), the reproduction turns it on for the Ekya and Astraea runs"
    ),
    "mps.inference_slowdown": (
        "measured: NVIDIA H200, 2026-11-27, tools/gpu/mps_regime.py (torch 2.11, fp32, "
        "224x224; docs/real-gpu.md): inference (batch 8, share 100-p) beside retraining "
        "(batch 32, share p), p = 25/50/75%, against alone at the same share: ResNet50 "
        "-39.2/-24.9/-14.1%, ViT-B/16 -4.2/-5.1/-4.3%, mean 15.3% over the two MIGRator models "
        "measured; swept x0.5, x2 and 0.30 (memory contention, arXiv 2604.22430)"
    ),
    "mps.retrain_slowdown": (
        "measured: as mps.inference_slowdown, the retraining side: ResNet50 -5.3/-8.7/-2.5%, "
        "ViT-B/16 -1.9/-1.4/-1.8%, mean 3.6%; swept x0.5, x2 and 0.30 (memory contention, "
        "arXiv 2604.22430)"
    ),
}

#: First line of every file this module writes.
HEADER = "# Generated by `python -m edgegym.reproduce.migrator_workloads`; edit the tables there."
_TEMPLATE = (
    HEADER
    + """
name: migrator-{key}
family: mig
description: >-
  MIGRator workload {upper} (Table 4): {m1} on the Alibaba-like trace retraining on {d1}, {m2}
  on the Azure-like trace retraining on {d2}; one A100-40GB in MIG mode, 200 s windows, a
  decision every second.
notes: >-
  Inputs that are not fields here: each model's latency on every MIG instance size, its memory
  and its load time (edgegym.workload.models: synthesised from Table 3's GFLOPs, below 6 ms on
  a whole GPU as §4.1.4 implies); the new-class accuracy model (edgegym.families.mig.datasets:
  a drop of §5.2's 32.5% as each window's classes arrive, the rest synthesised and checked
  against Fig. 2; a datasets section replaces its numbers, which the reproduction sweeps); the
  A100's MIG profiles, placements and 7 GPCs (edgegym.hardware.mig: NVIDIA's MIG user guide);
  retraining cost 3x inference (§4.1.2). A workload runs its shortest new-class schedule (4
  windows with NC-CIFAR-10, else 9).
provenance:
{provenance}
hardware: {{gpu: A100-40GB}}
window_s: {window_s}
basis_s: {basis_s}
batch: {batch}
preinit: {preinit}
retrain_scale: {retrain_scale}
overhead: {{rule: {rule}, destroy_s: {destroy_s}, create_s: {create_s}, library_s: {library_s}}}
mps: {{interference: {mps_on}, inference_slowdown: {mps_inf}, retrain_slowdown: {mps_ret}}}
objective: {{goodput: 1.0, energy: 0.0}}
tenants:
  - {{name: {m1}, model: {m1}, dataset: {d1}, slo_ms: {s1}, ceiling: {c1},
     arrival: {{kind: alibaba, rate: {rate}, recur_s: {window_s}, persistence: {persistence}}}}}
  - {{name: {m2}, model: {m2}, dataset: {d2}, slo_ms: {s2}, ceiling: {c2},
     arrival: {{kind: azure, rate: {rate}, recur_s: {window_s}, persistence: {persistence}}}}}
"""
)


def _provenance_block() -> str:
    """The ``provenance`` mapping as YAML lines (two-space indent, one field a line)."""
    out = []
    for key, source in PROVENANCE.items():
        text = source.replace('"', "'")
        out.append(f'  {key}: "{text}"')
    return "\n".join(out)


def render(key: str) -> str:
    """The scenario file of one workload."""
    m1, d1, m2, d2 = WORKLOADS[key]
    return _TEMPLATE.format(
        key=key,
        upper=key.upper(),
        m1=m1,
        d1=d1,
        m2=m2,
        d2=d2,
        s1=SLO_MS[m1],
        s2=SLO_MS[m2],
        c1=CEILING[(m1, d1)],
        c2=CEILING[(m2, d2)],
        rate=RATE,
        persistence=PERSISTENCE,
        mps_on="true" if MPS["interference"] else "false",
        mps_inf=MPS["inference_slowdown"],
        mps_ret=MPS["retrain_slowdown"],
        provenance=_provenance_block(),
        window_s=WINDOW_S,
        basis_s=BASIS_S,
        batch=BATCH,
        preinit="true" if PREINIT else "false",
        retrain_scale=RETRAIN_SCALE,
        **OVERHEAD,
    )


#: The SLO sweep of the reproduction: every model's :data:`SLO_MS` scaled x0.5 and x2 (at x0.5
#: the 'High' models no longer meet theirs on one GPC at batch 1).
SLO_SWEEP = (0.5, 2.0)
#: The ceiling sweep of the reproduction: the error left by every :data:`CEILING` (1 - ceiling)
#: scaled x0.5 and x2.
CEILING_ERROR_SWEEP = (0.5, 2.0)


def tenants(key: str, **knobs: float) -> list[dict]:
    """The ``tenants`` of one workload's file; ``knobs`` are :func:`tenant`'s (trace level,
    persistence, SLO scale, ceiling error scale, trace dispersion), the same for both tenants.
    The reproduction's sweeps override the whole list with it."""
    m1, d1, m2, d2 = WORKLOADS[key]
    return [tenant(m1, d1, "alibaba", **knobs), tenant(m2, d2, "azure", **knobs)]


def tenant(
    model: str,
    dataset: str,
    kind: str,
    rate: float = RATE,
    persistence: float = PERSISTENCE,
    slo_x: float = 1.0,
    ceiling_error_x: float = 1.0,
    dispersion_x: float = 1.0,
) -> dict:
    """One tenant of a workload file: ``model`` on ``dataset`` with a ``kind`` trace
    (``alibaba`` or ``azure``), at another trace level (``rate``), persistence, SLO scale,
    ceiling (its error ``1 - ceiling`` scaled) or trace dispersion (the generators' log-stds
    scaled, :data:`DISPERSION_FIELDS`)."""
    arrival: dict = {"kind": kind, "rate": float(rate)}
    if dispersion_x != 1.0:
        arrival.update(dispersion(kind, dispersion_x))
    if persistence > 0:
        arrival.update(recur_s=WINDOW_S, persistence=float(persistence))
    return {
        "name": model,
        "model": model,
        "dataset": dataset,
        "slo_ms": SLO_MS[model] * float(slo_x),
        "ceiling": 1.0 - (1.0 - CEILING[(model, dataset)]) * float(ceiling_error_x),
        "arrival": arrival,
    }


def dispersion(kind: str, x: float) -> dict[str, float]:
    """The ``arrival`` fields of a ``kind`` trace with every log-std (:data:`DISPERSION_FIELDS`)
    ``x`` times the generator's default."""
    gen = {"alibaba": AlibabaLike, "azure": AzureLike}[kind]
    defaults = inspect.signature(gen).parameters
    return {f: float(defaults[f].default) * float(x) for f in DISPERSION_FIELDS[kind]}


def write_scenarios(directory: str | Path) -> list[Path]:
    """Write ``migrator-w1.yaml`` ... ``migrator-w16.yaml`` into ``directory``."""
    paths = [Path(directory) / f"migrator-{key}.yaml" for key in WORKLOADS]
    for path in paths:  # never replace a file this generator did not write
        if path.is_file() and not path.read_text().startswith(HEADER):
            raise ValueError(f"{path}: exists and was not written by {__name__}; not replaced")
    for key, path in zip(WORKLOADS, paths, strict=True):
        write_atomic(path, render(key))
    return paths


def main(argv: list[str] | None = None) -> int:
    """Write the 16 workload files into a folder (default: the bundled ``scenarios/``)."""
    import argparse

    ap = argparse.ArgumentParser(
        prog="python -m edgegym.reproduce.migrator_workloads",
        description="Write scenarios/migrator-w1.yaml ... migrator-w16.yaml from the paper's "
        "Table 3-4 and the sources named in each file's provenance.",
    )
    default = str(Path(__file__).parents[2] / "scenarios")
    ap.add_argument(
        "folder", nargs="?", default=default, help="where to write (default: %(default)s)"
    )
    args = ap.parse_args(argv)
    try:
        for p in write_scenarios(args.folder):
            print(p)
    except (OSError, ValueError) as exc:
        print(f"{ap.prog}: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    from edgegym.outputs import run_command

    sys.exit(run_command(main, "python -m edgegym.reproduce.migrator_workloads"))

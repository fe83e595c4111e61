"""What MIGRator's reproduction runs and what the paper reports: the policies it compares, the
paper's numbers, the reconfiguration bases and the robustness sweeps. The runner
(:mod:`edgegym.reproduce.migrator`), the claims (:mod:`edgegym.reproduce.migrator_claims`) and
the report (:mod:`edgegym.reproduce.migrator_report`) read them here."""

from __future__ import annotations

from edgegym.reproduce.migrator_workloads import (
    CEILING_ERROR_SWEEP,
    DATA_SWEEP,
    DIFFICULTY_SWEEP,
    DISPERSION_SWEEP,
    DROP_SWEEP,
    OVERHEAD_SPLIT_SWEEP,
    SLO_SWEEP,
    WORKLOADS,
    dataset_overrides,
    overhead_split,
)

PROG = "python -m edgegym.reproduce.migrator"
#: Episodes per (workload, policy) cell of a full run. Two: with one, two verdicts at the edge
#: of their rule moved between seeds 0 and 100 (docs/reproduction/seeds-100), so a cell is
#: the mean of two episodes.
SEEDS = 2
POLICIES = ["migrator", "ekya-mig", "astraea", "paris", "static-half"]
LABELS = {
    "migrator": "MIGRator",
    "ekya-mig": "Ekya",
    "astraea": "Astraea",
    "paris": "PARIS",
    "static-half": "static half",
    "migrator:oracle=true": "MIGRator (oracle arrivals)",
    "migrator:forecaster=level": "MIGRator (level forecaster)",
}
PAPER_GAIN = {"ekya-mig": 17, "astraea": 21, "paris": 20}  # Goodput gain of MIGRator, %
PAPER_SLO_GAIN = {"ekya-mig": 17, "astraea": 6, "paris": 13}  # SLO attainment gain, %
PAPER_ACC_GAIN = {"ekya-mig": 0, "astraea": 19, "paris": 12}  # accuracy gain, % (Ekya: similar)
PAPER_PREINIT = 83  # % less reconfiguration overhead with pre-initialisation (§5.2)
BASELINES = ["ekya-mig", "astraea", "paris", "static-half"]
BASES = [0.5, 1.0, 3.0, 5.0, 10.0]
BASIS_WORKLOADS = list(WORKLOADS)  # Fig. 10 shows every workload
ORACLE_WORKLOADS = ["w1", "w4", "w5", "w8"]
#: The paper's MPS-based baselines (§5.1): their runs hold MPS shares of the GPU, with MPS
#: interference on (scenario ``mps``).
MPS_POLICIES = ("ekya-mig", "astraea")
#: PARIS as §5.2 also describes it, never reconfiguring during execution (an ablation; the
#: default ``paris`` follows the other description, reconfiguring at retraining start and end).
STATIC_PARIS = "paris:static=true"
#: Robustness sweeps of the inputs that stay synthesised or unstated (a held-out claim must hold at
#: all of them): name -> reproduction overrides (:func:`scenario_overrides`). ``load_x`` scales both
#: traces' level (the paper states none), ``persistence`` sets how much of the per-second shape
#: recurs (synthesised), ``dispersion_x`` scales the traces' per-second log-stds (synthesised from
#: Fig. 3's look), ``mps_x`` scales the measured MPS slowdowns and ``mps_abs`` sets both to a
#: published memory-contention value (the MPS points rerun only the MPS-based baselines).
#: ``share_alpha_x`` scales every model's synthesised inference share exponent (throughput of an
#: instance of s of the GPU is s^alpha; ``edgegym.workload.models``), capped at 1 (linear, as the
#: papers' simulators scale a share): under MPS on an H200 ViT-B/16 and ResNet50 measured 0.62x
#: and 0.45x the catalogue's at batch 1 (docs/real-gpu.md), MIG instances of an A100 likely more.
#: ``slo_x`` scales every model's synthesised SLO and ``ceiling_error_x`` the error its
#: synthesised accuracy ceiling leaves (1 - ceiling); the paper publishes neither. The
#: ``library load`` points move Fig. 5's synthesised components with their calibrated total
#: kept (:func:`~edgegym.reproduce.migrator_workloads.overhead_split`). The ``class difficulty``,
#: ``retraining data`` and ``class drop`` points scale the new-class accuracy model's
#: synthesised or extrapolated numbers
#: (:func:`~edgegym.reproduce.migrator_workloads.dataset_overrides`).
SWEEPS: dict[str, dict[str, float]] = {
    "load x0.5": {"load_x": 0.5},
    "load x2": {"load_x": 2.0},
    "persistence x0.5": {"persistence": 0.25},
    "persistence x2": {"persistence": 1.0},
    **{f"dispersion x{k:g}": {"dispersion_x": k} for k in DISPERSION_SWEEP},
    "share exponent x0.5": {"share_alpha_x": 0.5},
    "share exponent linear": {"share_alpha_x": 100.0},  # every exponent capped at 1
    "MPS x0.5": {"mps_x": 0.5},
    "MPS x2": {"mps_x": 2.0},
    "MPS 30%": {"mps_abs": 0.30},
    "MPS shares 7": {"mps.shares": 7},
    "MPS shares 21": {"mps.shares": 21},
    **{f"SLO x{k:g}": {"slo_x": k} for k in SLO_SWEEP},
    **{f"ceiling error x{k:g}": {"ceiling_error_x": k} for k in CEILING_ERROR_SWEEP},
    **{f"library load x{k:g}": overhead_split(k) for k in OVERHEAD_SPLIT_SWEEP},
    **{f"class difficulty x{k:g}": dataset_overrides(difficulty_x=k) for k in DIFFICULTY_SWEEP},
    **{f"retraining data x{k:g}": dataset_overrides(data_x=k) for k in DATA_SWEEP},
    **{f"class drop x{k:g}": dataset_overrides(drop_x=k) for k in DROP_SWEEP},
}
#: The workload files' swept inputs (every provenance entry marked synthesised or a choice, the
#: trace level, edgegym's reading of Fig. 3, and the MPS slowdowns, measured on another GPU)
#: -> the sweep points that move them;
#: ``tests/test_reproduce_migrator.py`` checks that every such entry is here and every point is
#: in :data:`SWEEPS`. Inputs that are not fields of the files (the notes name them): the
#: new-class accuracy model's numbers (``class difficulty``, ``retraining data``, ``class
#: drop``) and the latencies per instance size, which are not swept on their own (scaling them
#: moves which instances meet the SLO, the SLO sweep, and the requests an instance serves, the
#: load sweep).
SWEPT_INPUTS: dict[str, tuple[str, ...]] = {
    "overhead.destroy_s": ("library load x0.5", "library load x1.5"),
    "overhead.create_s": ("library load x0.5", "library load x1.5"),
    "overhead.library_s": ("library load x0.5", "library load x1.5"),
    "tenants.slo_ms": ("SLO x0.5", "SLO x2"),
    "tenants.ceiling": ("ceiling error x0.5", "ceiling error x2"),
    "tenants.arrival.rate": ("load x0.5", "load x2"),
    "tenants.arrival.persistence": ("persistence x0.5", "persistence x2"),
    "tenants.arrival.kind": tuple(f"dispersion x{k:g}" for k in DISPERSION_SWEEP),
    "mps.inference_slowdown": ("MPS x0.5", "MPS x2", "MPS 30%"),
    "mps.retrain_slowdown": ("MPS x0.5", "MPS x2", "MPS 30%"),
}
#: Sweep points that rerun every policy (the others rerun only :data:`MPS_POLICIES`).
ALL_POLICY_SWEEPS = (
    "load x0.5",
    "load x2",
    "persistence x0.5",
    "persistence x2",
    *(f"dispersion x{k:g}" for k in DISPERSION_SWEEP),
    "share exponent x0.5",
    "share exponent linear",
    *(f"SLO x{k:g}" for k in SLO_SWEEP),
    *(f"ceiling error x{k:g}" for k in CEILING_ERROR_SWEEP),
    *(f"library load x{k:g}" for k in OVERHEAD_SPLIT_SWEEP),
    *(f"class difficulty x{k:g}" for k in DIFFICULTY_SWEEP),
    *(f"retraining data x{k:g}" for k in DATA_SWEEP),
    *(f"class drop x{k:g}" for k in DROP_SWEEP),
)
#: Sweep points of the batch-4 claim (Fig. 9) and of the basis claims (Fig. 10, on
#: :data:`ORACLE_WORKLOADS`: the 0.5 s basis costs about 7x a 1 s run): the traces' level,
#: recurrence and dispersion, the inputs those two claims turn on.
BATCH4_SWEEPS = ALL_POLICY_SWEEPS[:6]
BASIS_SWEEPS = ALL_POLICY_SWEEPS[:6]

"""What the SRS/MRS reproduction runs: the policies it compares and labels, the sweeps of
applications, servers and theta, the robustness points and the tolerance its claims use. The
runner (:mod:`edgegym.reproduce.srs`), the claims (:mod:`edgegym.reproduce.srs_claims`) and the
report (:mod:`edgegym.reproduce.srs_report`) read them here."""

from __future__ import annotations

PROG = "python -m edgegym.reproduce.srs"
#: The default scenario (the headline claims and every sweep) and its eight-application variant.
SCENARIO, EIGHT_APPS = "srs-edge-5apps", "srs-edge-8apps"

#: The paper's comparison: MRS against AdaInf, Ekya and PASS (+ edgegym's SRS and list), then
#: ablations of Algorithm 2's rule inside MRS: pricing on the DAG instead of the chain of line
#: 2, a node only where Delta P < 0 (on the chain), and both (edgegym's variant).
VARIANT = "mrs:always=false,chain=false"
ABLATIONS = ["mrs:chain=false", "mrs:always=false", VARIANT]
POLICIES = ["mrs", "srs", "pass", "ekya-dag", "adainf", "list", *ABLATIONS]
BASELINES = ["pass", "ekya-dag", "adainf"]
SWEEP_POLICIES = ["mrs", *BASELINES]
LABEL = {
    "mrs": "MRS",
    "srs": "SRS",
    "pass": "PASS",
    "ekya-dag": "Ekya",
    "adainf": "AdaInf",
    "list": "List (Alg. 1)",
    "mrs:chain=false": "MRS, Delta P priced on the DAG",
    "mrs:always=false": "MRS, node only if Delta P < 0",
    VARIANT: "MRS, edgegym's variant",
}
THETA_POLICIES = ["mrs", VARIANT, "pass"]
#: Accuracy differences below this count as equal in the sweeps' claims (their rules say so).
ACC_TOL = 0.005
#: Applications of the default scenario (srs-edge-5apps): its requests are this many
#: applications' streams.
DEFAULT_APPS = 5
APPS = [2, 4, 6, 8]
SERVERS = [3, 4, 5, 6, 7]
#: theta's sweep (Fig. 14). The slides give no values; Eq. 9's theta prices a task's lost
#: accuracy in seconds of completion, so the sweep spans the exchange rate at which Delta P's
#: accuracy term (Eq. 11) can outweigh its time term. Pricing every Delta P that MRS computes
#: on srs-edge-5apps (2026-11-29, docs/design-notes.md) puts that rate at 20-100 (a task's
#: choice changes at theta 70 at the median): a node's time term is about 0.02 s, the accuracy
#: a configuration adds about 1e-3. The sweep runs from well below it to well above it (a
#: test checks that it brackets the median). The first sweep, 0.5-10, lay wholly below it, so
#: Algorithm 2 chose the same configurations at every point of it.
THETAS = [0.5, 2.0, 10.0, 50.0, 200.0, 1000.0]
BINS = 10

#: The robustness sweeps: every input of ``scenarios/srs-*.yaml`` whose
#: provenance says synthesised (or a choice), scaled by each factor. ``key -> (label, the
#: provenance entries it scales, factors)``; :func:`_sweep_scenario` applies them.
ROBUST: dict[str, tuple[str, str, tuple[float, ...]]] = {
    "drift": ("models' drift per second", "models (drift_per_s)", (0.5, 2.0)),
    "headroom": (
        "models' headroom (ceiling - start accuracy; ceiling at most 0.99)",
        "models (ceiling)",
        (0.5, 2.0),
    ),
    "cfg_data": ("retraining data b_h", "retrain_configs (data_mb)", (0.5, 2.0)),
    "cfg_work": ("retraining work n_h", "retrain_configs (workload)", (0.5, 2.0)),
    "cfg_gain": ("retraining gain (at most 1)", "retrain_configs (gain)", (0.5, 2.0)),
    "demand": (
        "resource units of tasks and configurations o_h (at most a server's)",
        "applications.tasks.demand, retrain_configs (demand)",
        (0.5, 2.0),
    ),
    "task_work": ("inference workloads", "applications.tasks.workload", (0.5, 2.0)),
    "data_mb": (
        "inference data (inputs and edges)",
        "applications.tasks.input_mb, applications.edges",
        (0.5, 2.0),
    ),
    "load": ("requests in the run (the load)", "requests", (0.5, 2.0)),
    "length": (
        "the run's length (requests and duration together: the same load)",
        "requests, duration_s",
        (0.5, 2.0),
    ),
    "arrival": ("Poisson arrivals instead of the Alibaba-like shape", "arrival.kind", (1.0,)),
    "arrival_rate": (
        "the Alibaba-like pattern's time scale (its ticks the run spans)",
        "arrival.rate",
        (0.5, 2.0),
    ),
    "a_min": ("A_min (x1.5 = 0.75; x2 = 1 is above every ceiling)", "a_min", (0.5, 1.5)),
    "pass_period": ("PASS's retraining period", "baselines.pass_period_s", (0.5, 2.0)),
    "adainf_slo": ("AdaInf's SLO factor", "baselines.adainf_slo_factor", (0.5, 2.0)),
}
#: The default scenario's inputs marked synthesised or a choice that :data:`ROBUST` does not
#: scale, and why (``tests/test_reproduce_srs.py`` checks that every other one is named among
#: ROBUST's provenance fields). Parts of swept entries that are not scaled (the DAG shapes of
#: ``applications.edges``, the models' floors) are named in the report.
NOT_SWEPT = {
    "theta": "its own sweep, Fig. 14",
    "servers.units_per_gpu": "the units a GPU is split into; the demand sweep scales the "
    "units a task holds, and so the share of a GPU it takes",
    "max_nodes": "observation padding: the dynamics do not read it",
    "max_edges": "observation padding: the dynamics do not read it",
}
#: At each robustness point: the default scenario with the four policies (the headline
#: claims), and the ends of the applications, servers and theta sweeps (the other claims).
ROBUST_APPS = [APPS[0], APPS[-1]]
ROBUST_SERVERS = [SERVERS[0], SERVERS[-1]]
ROBUST_THETAS = [THETAS[0], THETAS[-1]]

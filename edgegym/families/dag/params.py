"""What a DAG scenario fixes, precomputed once when an environment is built.

:class:`DAGParams` holds the edge servers, the applications' DAGs with their padded arrays,
the models' accuracy and data pools, the retraining options, the arrival process and the
reward's term weights that the dynamics (:mod:`edgegym.families.dag.dynamics`) read;
:func:`make_params` is the one way to build them (``Family.params``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from edgegym.families.dag.graph import (
    DAGApp,
    RetrainOption,
)
from edgegym.families.dag.reward import term_weights
from edgegym.hardware.gpus import PowerModel, get_gpu
from edgegym.scenarios import Scenario
from edgegym.workload.arrival_specs import make_arrival


@dataclass(frozen=True, eq=False)
class DAGParams:
    """Everything a scenario fixes, precomputed once (M models, H retraining options)."""

    e: int  # edge servers
    units: float  # resource units per server
    gpus_per_server: int
    n_nodes: int  # max_nodes: rows of the node table
    n_ext: int  # X: nodes of the largest extended DAG (its tasks, a retraining node each)
    n_edges: int  # max_edges: rows of the edge list
    theta: float
    a_min: float
    n_requests: int
    duration: float
    term_weights: dict[str, float]  # reward term -> weight (completion, accuracy = theta, energy)
    options: tuple[RetrainOption, ...]  # (H,)
    opt_gain: np.ndarray  # (H,) gain of each option
    opt_data: np.ndarray  # (H,) data MB of each option
    opt_work: np.ndarray  # (H,) workload of each option
    opt_demand: np.ndarray  # (H,) resource units of each option
    opt_fits: np.ndarray  # (H,) bool: the option's demand fits a server
    model_names: tuple[str, ...]  # (M,) sorted; "application/model" under model_scope application
    model_index: dict[str, int]  # model name -> index
    m_start: np.ndarray  # (M,) accuracy at t = 0
    m_ceiling: np.ndarray  # (M,)
    m_drift: np.ndarray  # (M,) accuracy lost per second
    m_floor: np.ndarray  # (M,)
    m_pool_rate: np.ndarray  # (M,) MB of drifted samples per second
    m_pooled: np.ndarray  # (M,) bool: retraining data is limited by a pool
    pool_from_inputs: bool
    apps: tuple[DAGApp, ...]
    app_models: tuple[np.ndarray, ...]  # per app, (V,) model index of each task
    # Per app, padded to n = max_nodes tasks / max_edges edges (the observation's tables and
    # the extended DAGs' structure):
    app_n: np.ndarray  # (A,) int64 tasks V of each app
    app_inflow: np.ndarray  # (A, n) MB each task receives (pool growth)
    app_pred: np.ndarray  # (A, n, P) int64 predecessors of each task (-1 padding)
    app_pred_mb: np.ndarray  # (A, n, P) MB from each predecessor
    app_succ: np.ndarray  # (A, n, S) int64 successors of each task (-1 padding)
    app_succ_mb: np.ndarray  # (A, n, S) MB to each successor
    app_retrain_mb: np.ndarray  # (A, n) MB a retraining node sends its task (inputs + model)
    app_height: np.ndarray  # (A,) int64 edges on the app's longest path
    app_later_same: np.ndarray  # (A, n, n) bool: task u > v runs v's model
    app_valid: np.ndarray  # (A, n) bool: a task of the app
    app_static: np.ndarray  # (A, n, 4) 1, workload, demand, input MB (0 for padding)
    app_exe: np.ndarray  # (A, n) workload / demand
    app_ceiling: np.ndarray  # (A, n) accuracy ceiling of the task's model
    app_model: np.ndarray  # (A, n) int64 model of each task (0 for padding)
    app_edges: np.ndarray  # (A, max_edges, 2) float32 edges (-1 padding)
    app_edge_mask: np.ndarray  # (A, max_edges) float32
    app_weights: np.ndarray  # (A,) probability of each application
    arrival: Any  # arrival process (time-scaled to ``n_requests``)
    speed_tflops: tuple[float, float]
    link_gbps: tuple[float, float]
    controller_gbps: tuple[float, float]
    storage_gbps: tuple[float, float]
    unit_dyn_w: float  # dynamic watts of all of a server's GPUs at full load
    power: PowerModel


#: Separates an application from its model in the model names of ``model_scope:
#: application`` ("lifelogging/mobilenetv3").
SCOPE_SEP = "/"


def base_model(name: str) -> str:
    """The catalogue model of a (possibly application-scoped) model name."""
    return name.rsplit(SCOPE_SEP, 1)[-1]


def _scoped(sc: Scenario, app: dict[str, Any], model: str) -> str:
    """A task's model name: the model itself, or the application's own copy of it."""
    return f"{app['name']}{SCOPE_SEP}{model}" if sc["model_scope"] == "application" else model


def _apps(sc: Scenario) -> list[DAGApp]:
    """The scenario's applications as :class:`DAGApp` graphs."""
    mp = sc["models"]
    apps = []
    for a in sc["applications"]:
        t = a["tasks"]
        e = a["edges"]
        apps.append(
            DAGApp(
                name=a["name"],
                models=tuple(_scoped(sc, a, x["model"]) for x in t),
                workload=np.array([x["workload"] for x in t]),
                demand=np.array([x["demand"] for x in t]),
                input_mb=np.array([x["input_mb"] for x in t]),
                edges=np.array([[x[0], x[1]] for x in e], dtype=np.int64).reshape(-1, 2),
                edge_mb=np.array([x[2] for x in e], dtype=float),
                model_mb=np.array([mp[x["model"]]["size_mb"] for x in t]),
            )
        )
    return apps


def _app_tables(
    apps: list[DAGApp], index: dict[str, int], ceilings: np.ndarray, n: int, n_edges: int
) -> dict[str, np.ndarray]:
    """Every application's nodes padded to ``n`` (and its edges to ``n_edges``): the
    ``app_*`` arrays of :class:`DAGParams`, by their names there."""
    n_apps = len(apps)
    n_pred = max(max(len(app.preds(i)) for app in apps for i in range(app.n)), 1)
    n_succ = max(max(len(app.succs(i)) for app in apps for i in range(app.n)), 1)
    t = {
        "app_pred": np.full((n_apps, n, n_pred), -1, dtype=np.int64),
        "app_pred_mb": np.zeros((n_apps, n, n_pred)),
        "app_succ": np.full((n_apps, n, n_succ), -1, dtype=np.int64),
        "app_succ_mb": np.zeros((n_apps, n, n_succ)),
        "app_retrain_mb": np.zeros((n_apps, n)),
        "app_inflow": np.zeros((n_apps, n)),
        "app_height": np.zeros(n_apps, dtype=np.int64),
        "app_later_same": np.zeros((n_apps, n, n), dtype=bool),
        "app_valid": np.zeros((n_apps, n), dtype=bool),
        "app_static": np.zeros((n_apps, n, 4)),
        "app_exe": np.zeros((n_apps, n)),
        "app_ceiling": np.zeros((n_apps, n)),
        "app_model": np.zeros((n_apps, n), dtype=np.int64),
        "app_edges": np.full((n_apps, n_edges, 2), -1.0, dtype=np.float32),
        "app_edge_mask": np.zeros((n_apps, n_edges), dtype=np.float32),
    }
    for a, app in enumerate(apps):
        _fill_app(t, a, app, np.array([index[m] for m in app.models]), ceilings, n_edges)
    return t


def _fill_app(
    t: dict[str, np.ndarray],
    a: int,
    app: DAGApp,
    idx: np.ndarray,
    ceilings: np.ndarray,
    n_edges: int,
) -> None:
    """Row ``a`` of the tables of :func:`_app_tables`: application ``app``, its tasks'
    models ``idx``."""
    v = app.n
    t["app_valid"][a, :v] = True
    t["app_static"][a, :v, 0] = 1.0
    t["app_static"][a, :v, 1] = app.workload
    t["app_static"][a, :v, 2] = app.demand
    t["app_static"][a, :v, 3] = app.input_mb
    t["app_exe"][a, :v] = app.workload / app.demand
    t["app_ceiling"][a, :v] = ceilings[idx]
    t["app_model"][a, :v] = idx
    k = min(len(app.edges), n_edges)
    t["app_edges"][a, :k] = app.edges[:k]
    t["app_edge_mask"][a, :k] = 1.0
    depth = [0] * v  # edges on the longest path from each task to an exit
    for i in reversed(app.order):
        depth[i] = max((depth[u] + 1 for u, _ in app.succs(i)), default=0)
    t["app_height"][a] = max(depth)
    for i in range(v):
        into = app.preds(i)
        for s, (u, d) in enumerate(into):
            t["app_pred"][a, i, s], t["app_pred_mb"][a, i, s] = u, d
        for s, (u, d) in enumerate(app.succs(i)):
            t["app_succ"][a, i, s], t["app_succ_mb"][a, i, s] = u, d
        # As extend_with_retraining and the pools sum them:
        t["app_retrain_mb"][a, i] = sum(d for _, d in into) + float(app.model_mb[i])
        t["app_inflow"][a, i] = app.input_mb[i] + sum(d for _, d in into)
    same = (idx[:, None] == idx[None, :]) & np.triu(np.ones((v, v), bool), 1)
    t["app_later_same"][a, :v, :v] = same


def _option_tables(options: tuple[RetrainOption, ...], units: float) -> dict[str, np.ndarray]:
    """The ``opt_*`` arrays of :class:`DAGParams`: one entry per retraining option."""
    return {
        "opt_gain": np.array([o.gain for o in options]),
        "opt_data": np.array([o.data_mb for o in options]),
        "opt_work": np.array([o.workload for o in options], dtype=float),
        "opt_demand": np.array([o.demand for o in options], dtype=float),
        "opt_fits": np.array([units >= o.demand for o in options]),
    }


def _model_tables(mp: dict[str, Any], names: tuple[str, ...], from_inputs: bool) -> dict:
    """The ``m_*`` arrays of :class:`DAGParams`: one entry per model, in ``names`` order (an
    application's own copy of a model starts from the scenario's entry for it)."""
    entry = [mp[base_model(m)] for m in names]
    pool_rate = np.array([x["pool_mb_per_s"] for x in entry])
    return {
        "m_start": np.array([x["start_accuracy"] for x in entry]),
        "m_ceiling": np.array([x["ceiling"] for x in entry]),
        "m_drift": np.array([x["drift_per_s"] for x in entry]),
        "m_floor": np.array([x["floor"] for x in entry]),
        "m_pool_rate": pool_rate,
        "m_pooled": (pool_rate > 0) | from_inputs,
    }


def make_params(sc: Scenario) -> DAGParams:
    """Precompute the :class:`DAGParams` of a loaded (and validated) scenario."""
    sv = sc["servers"]
    power = PowerModel.from_spec(get_gpu(sv["gpu"]))
    units = float(sv["gpus_per_server"] * sv["units_per_gpu"])
    theta = float(sc["theta"])
    options = tuple(RetrainOption(**c) for c in sc["retrain_configs"])
    apps = _apps(sc)
    if sc["model_scope"] == "application":
        names = tuple(sorted({m for app in apps for m in app.models}))
    else:
        names = tuple(sorted(sc["models"]))
    index = {m: k for k, m in enumerate(names)}
    pool_from_inputs = bool(sc["pool_from_inputs"])
    models = _model_tables(sc["models"], names, pool_from_inputs)
    weights = np.array([a["weight"] for a in sc["applications"]])
    n, n_edges = int(sc["max_nodes"]), int(sc["max_edges"])
    return DAGParams(
        e=int(sv["count"]),
        units=units,
        gpus_per_server=int(sv["gpus_per_server"]),
        n_nodes=n,
        n_ext=2 * max(app.n for app in apps),
        n_edges=n_edges,
        theta=theta,
        a_min=float(sc["a_min"]),
        n_requests=int(sc["requests"]),
        duration=float(sc["duration_s"]),
        term_weights=term_weights(sc["objective"], theta),
        options=options,
        **_option_tables(options, units),
        model_names=names,
        model_index=index,
        **models,
        pool_from_inputs=pool_from_inputs,
        apps=tuple(apps),
        app_models=tuple(np.array([index[m] for m in app.models]) for app in apps),
        app_n=np.array([app.n for app in apps], dtype=np.int64),
        **_app_tables(apps, index, models["m_ceiling"], n, n_edges),
        app_weights=weights / weights.sum(),
        arrival=make_arrival(sc["arrival"], Path(sc.source).parent),
        speed_tflops=tuple(map(float, sv["speed_tflops"])),
        link_gbps=tuple(map(float, sv["link_gbps"])),
        controller_gbps=tuple(map(float, sv["controller_gbps"])),
        storage_gbps=tuple(map(float, sv["storage_gbps"])),
        # Servers run at the top clock; a node's joules are the dynamic power of the units
        # it holds (linear in the utilisation), idle power is not counted.
        unit_dyn_w=float(power.dynamic_power(power.max_clock_mhz, 1.0))
        * int(sv["gpus_per_server"]),
        power=power,
    )


__all__ = ["DAGParams", "base_model", "make_params"]

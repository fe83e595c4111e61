"""Scenario schema of SRS/MRS's DAG offload (``edgegym/DAGOffload-v0``): one pydantic model per
section and record, validated by :mod:`edgegym.scenarios` (field types and ranges from
:mod:`edgegym.workload.checks`)."""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from annotated_types import Len, MinLen
from pydantic import (
    Field,
    model_validator,
)

from edgegym.families.dag.graph import DAGError, topological_order
from edgegym.families.dag.params import SCOPE_SEP
from edgegym.scenarios import (
    Arrival,
    DagWeight,
    Gpu,
    Pair,
    Record,
    ScenarioModel,
    Unit,
    UnitOpen,
    family_schema,
    shown,
    unique_names,
)
from edgegym.workload.checks import Expect, Flag, Range, Text, rule


class DAGServers(Record):
    """``servers`` of a DAG scenario (the hardware section). The defaults are the SRS slides'
    testbed: 5 servers of 2 A100 80 GB, 9.7-19.5 TFLOPS, server-server and controller-server
    links of 3-5 Gbps, storage-server links of 7-10 Gbps (each rate drawn per episode)."""

    count: Annotated[int, Range(1, 64)] = 5
    gpu: Gpu = "A100-80GB"
    gpus_per_server: Annotated[int, Range(1, 16)] = 2
    units_per_gpu: Annotated[int, Range(1, 100)] = 2
    speed_tflops: Annotated[list[float], Pair(0.1, 1e4)] = [9.7, 19.5]
    link_gbps: Annotated[list[float], Pair(0.001, 1e4)] = [3.0, 5.0]
    # The controller's link to each server (a request's input data).
    controller_gbps: Annotated[list[float], Pair(0.001, 1e4)] = [3.0, 5.0]
    # The storage cluster's link to each server (a retraining node's training data).
    storage_gbps: Annotated[list[float], Pair(0.001, 1e4)] = [7.0, 10.0]


class DAGRetrain(Record):
    """One of a DAG scenario's ``retrain_configs``."""

    name: Text
    data_mb: Annotated[float, Range(0.0, 1e6)]
    workload: Annotated[float, Range(0.0, 1e6, lo_open=True)]
    demand: Annotated[float, Range(0.0, 1e3, lo_open=True)]
    gain: Unit


class DAGModel(Record):
    """One of a DAG scenario's ``models`` (name -> accuracy profile)."""

    start_accuracy: Unit
    ceiling: UnitOpen  # an accuracy ceiling of 0 is no model (and divides the features)
    drift_per_s: Annotated[float, Range(0.0, 1.0)] = 0.0005
    floor: Unit = 0.3
    size_mb: Annotated[float, Range(0.0, 1e5)] = 20.0
    # Drifted samples collected per second (besides request inputs with pool_from_inputs);
    # with neither, configurations always have their full data.
    pool_mb_per_s: Annotated[float, Range(0.0, 1e4)] = 0.0


class DAGObjective(Record):
    """Weights of the DAG family's completion and energy terms; the accuracy term's weight is
    the paper's theta (top-level ``theta``), so Eq. 9 is the default objective."""

    completion: DagWeight = 1.0
    energy: DagWeight = 0.0


class DAGBaselines(Record):
    """Parameters of the published schedulers the SRS slides compare with (``baselines/dag.py``):
    the retraining trigger of each. They are not part of the environment's dynamics; the
    policies read them from the scenario so that each has a named source (provenance)."""

    # Ekya: the thief scheduler decides every model's retraining once per retraining window.
    ekya_window_s: Annotated[float, Range(0.0, 1e7, lo_open=True)] = 200.0
    # PASS: every model is retrained once per period (the slides' configuration of PASS).
    pass_period_s: Annotated[float, Range(0.0, 1e7, lo_open=True)] = 120.0
    # AdaInf: a request's SLO as a multiple of its inference DAG's makespan on idle servers.
    adainf_slo_factor: Annotated[float, Range(0.0, 1e3, lo_open=True)] = 2.0


class DAGTask(Record):
    """One task (node) of a DAG application."""

    model: Text
    workload: Annotated[float, Range(0.0, 1e6, lo_open=True)]
    demand: Annotated[float, Range(0.0, 1e3, lo_open=True)] = 1.0
    input_mb: Annotated[float, Range(0.0, 1e6)] = 0.0


Edge = Annotated[list[Annotated[float, Range()]], Len(3, 3), Expect("an edge [from, to, MB]")]


class DAGApplication(Record):
    """One of a DAG scenario's ``applications``: tasks and the edges between them."""

    name: Text | None = None
    tasks: Annotated[list[DAGTask], MinLen(1)]
    edges: list[Edge] = []
    weight: Annotated[float, Range(0.0, lo_open=True)] = 1.0

    @model_validator(mode="after")
    def _acyclic(self) -> DAGApplication:
        for i, (_, _, mb) in enumerate(self.edges):
            if not 0.0 <= mb <= 1e6:  # as a task's input_mb
                raise rule(f"edge {i}: MB must be in [0, 1e6], got {mb:g}", field="edges")
        try:
            topological_order(
                len(self.tasks), [(int(e[0]), int(e[1])) for e in self.edges], self.name or "dag"
            )
        except DAGError as exc:
            raise rule(str(exc), field="edges") from None
        self.weight = float(self.weight)
        return self


class DAGScenario(ScenarioModel):
    """A scenario of the DAG family (``edgegym/DAGOffload-v0``, SRS/MRS)."""

    SECTIONS: ClassVar[frozenset[str]] = frozenset(
        {
            "servers",
            "retrain_configs",
            "models",
            "applications",
            "arrival",
            "objective",
            "baselines",
        }
    )
    HARDWARE: ClassVar[str] = "servers"

    family: Literal["dag"]
    requests: Annotated[int, Range(1, 10**6)] = 200
    duration_s: Annotated[float, Range(0.0, 1e7, lo_open=True)] = 600.0
    theta: DagWeight = 1.0
    a_min: Unit = 0.0
    max_nodes: Annotated[int, Range(1, 64)] = 8
    max_edges: Annotated[int, Range(1, 256)] = 16
    # Drifted samples = the data each request sends to a model (emptied by a retraining).
    pool_from_inputs: Flag = False
    # "shared": a model name is one model (one accuracy, one pool) for every application that
    # uses it; "application": each application's tasks have models of their own (named
    # "application/model"), as applications with their own datasets train their own models.
    # Model names never contain "/", so the last "/" of such a name ends the application and two
    # applications' models never get one name.
    model_scope: Literal["shared", "application"] = "shared"
    servers: DAGServers = Field(default_factory=DAGServers)
    objective: DAGObjective = Field(default_factory=DAGObjective)
    baselines: DAGBaselines = Field(default_factory=DAGBaselines)
    retrain_configs: Annotated[list[DAGRetrain], MinLen(1)]
    models: Annotated[dict[str, DAGModel], MinLen(1)]
    arrival: Arrival = {"kind": "poisson", "rate": 1.0}
    applications: Annotated[list[DAGApplication], MinLen(1)]

    @model_validator(mode="after")
    def _across_sections(self) -> DAGScenario:
        unique_names(self.retrain_configs, "retrain_configs")
        units = self.servers.gpus_per_server * self.servers.units_per_gpu
        for h, cfg in enumerate(self.retrain_configs):
            if cfg.demand > units:
                raise rule(
                    f"{cfg.demand:g} units exceed a server's {units} (servers.gpus_per_server "
                    "x units_per_gpu): no server could run the retraining",
                    field=f"retrain_configs[{h}].demand",
                )
        for name, m in self.models.items():
            if SCOPE_SEP in name:  # the last "/" of "application/model" ends the application
                raise rule(
                    f"model names must not contain {SCOPE_SEP!r}, got {shown(name)} (it joins an "
                    "application and its model in the model names of model_scope: application; "
                    '"a" with "b/c" and "a/b" with "c" would be one model)',
                    field="models",
                )
            # Accuracy drifts down to the floor and retraining closes a gap up to the ceiling,
            # so floor <= ceiling (else a model drifts above its ceiling, the observation's gap
            # to the ceiling turns negative and a retraining lowers accuracy) and
            # start_accuracy <= ceiling. A start below the floor is the floor (drift stops there).
            if m.floor > m.ceiling:
                raise rule(
                    f"floor {m.floor:g} is above the ceiling {m.ceiling:g} of model {shown(name)} "
                    "(accuracy drifts down to the floor; retraining raises it toward the ceiling)",
                    field=f"models.{name}.floor",
                )
            if m.start_accuracy > m.ceiling:
                raise rule(
                    f"{m.start_accuracy:g} is above the model's ceiling {m.ceiling:g}",
                    field=f"models.{name}.start_accuracy",
                )
        for a, app in enumerate(self.applications):
            where = f"applications[{a}]"
            app.name = app.name or f"app{a}"
            for i, task in enumerate(app.tasks):
                if task.model not in self.models:
                    raise rule(
                        f"must be one of {', '.join(self.models)}, got {task.model!r}",
                        field=f"{where}.tasks[{i}].model",
                    )
                if task.demand > units:
                    raise rule(
                        f"{task.demand:g} units exceed a server's {units} (servers."
                        "gpus_per_server x units_per_gpu): no server could run the task",
                        field=f"{where}.tasks[{i}].demand",
                    )
            for j, edge in enumerate(app.edges):
                for end in edge[:2]:
                    if not float(end).is_integer():
                        raise rule(
                            f"task indices must be whole numbers, got {end:g}",
                            field=f"{where}.edges[{j}]",
                        )
            if len(app.tasks) > self.max_nodes:
                raise rule(
                    f"{len(app.tasks)} tasks exceed max_nodes = {self.max_nodes}", field=where
                )
            if len(app.edges) > self.max_edges:
                raise rule(
                    f"{len(app.edges)} edges exceed max_edges = {self.max_edges}", field=where
                )
        # Names key the figures' and timelines' applications and, with model_scope:
        # application, each application's own models ("app/model").
        unique_names(self.applications, "applications")
        return self


#: How :mod:`edgegym.scenarios` validates and overrides this family's scenarios.
SCHEMA = family_schema(
    DAGScenario,
    DAGServers,
    arrivals=lambda d: [("arrival", d["arrival"])],
)

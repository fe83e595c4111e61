"""The DAG-offload family (SRS/MRS): ``edgegym/DAGOffload-v0``."""

from edgegym.core.registry import Family, register_family
from edgegym.families.dag.env import DAGOffloadEnv
from edgegym.families.dag.params import make_params
from edgegym.families.dag.schema import SCHEMA


def _shape(d):
    sv = d["servers"]
    return (
        f"{len(d['applications'])} apps",
        f"{sv['count']} servers x {sv['gpus_per_server']} x {sv['gpu']}",
        f"{d['requests']} requests / {d['duration_s']:g} s",
    )


FAMILY = register_family(
    Family(
        name="dag",
        env_id="edgegym/DAGOffload-v0",
        entry_point="edgegym.families.dag.env:DAGOffloadEnv",
        vector_entry_point="edgegym.families.dag.vector:DAGOffloadVectorEnv",
        default_scenario="srs-edge-5apps",
        summary="SRS/MRS: edge server per DAG task and retraining configuration per model",
        schema=SCHEMA,
        make_params=make_params,
        score=("objective", "objective per request (s)", False),
        default_policy="mrs",
        flat_id="edgegym/DAGOffload-Flat-v0",
        catalogue="edgegym.families.dag.catalogue:catalogue",
        headline_metrics=(("objective", "objective"), ("completion_s", "completion s")),
        shape=_shape,
    )
)

__all__ = ["FAMILY", "DAGOffloadEnv"]

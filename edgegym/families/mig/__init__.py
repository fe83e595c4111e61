"""The MIG reconfiguration family (MIGRator): ``edgegym/MIGReconfig-v0``."""

from edgegym.core.registry import Family, register_family
from edgegym.families.mig.env import MIGReconfigEnv
from edgegym.families.mig.params import make_params
from edgegym.families.mig.schema import SCHEMA


def _shape(d):
    hw = d["hardware"]
    return (
        str(len(d["tenants"])),
        f"1 x {hw['gpu']}",
        f"{d['windows']} x {d['window_s']:g} s windows",
    )


FAMILY = register_family(
    Family(
        name="mig",
        env_id="edgegym/MIGReconfig-v0",
        entry_point="edgegym.families.mig.env:MIGReconfigEnv",
        vector_entry_point="edgegym.families.mig.vector:MIGVectorEnv",
        default_scenario="migrator-w1",
        summary="MIGRator: MIG layout and instance-to-task assignment every basis second",
        schema=SCHEMA,
        make_params=make_params,
        score=("goodput", "Goodput", True),
        default_policy="migrator",
        headline_metrics=(("goodput", "goodput"), ("slo_attainment", "SLO")),
        shape=_shape,
    )
)

__all__ = ["FAMILY", "MIGReconfigEnv"]

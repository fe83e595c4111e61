"""The energy fair-share family (ETF): ``edgegym/EnergyFairShare-v0``."""

from edgegym.core.registry import Family, register_family
from edgegym.families.energy.env import EnergyFairShareEnv
from edgegym.families.energy.params import make_params
from edgegym.families.energy.schema import SCHEMA


def _shape(d):
    hw = d["hardware"]
    return (
        str(len(d["tenants"])),
        f"1 x {hw['gpu']}",
        f"{d['quanta']} x {d['quantum_s']:g} s quanta",
    )


FAMILY = register_family(
    Family(
        name="energy",
        env_id="edgegym/EnergyFairShare-v0",
        entry_point="edgegym.families.energy.env:EnergyFairShareEnv",
        vector_entry_point="edgegym.families.energy.vector:EnergyFairShareVectorEnv",
        default_scenario="etf-tx2-resnet50-mobilenetv2",
        summary="ETF: time slices per quantum for tenants at their own DVFS clocks",
        schema=SCHEMA,
        make_params=make_params,
        score=("F_S", "system fairness F_S", True),
        default_policy="etf",
        flat_id="edgegym/EnergyFairShare-Flat-v0",
        catalogue="edgegym.families.energy.catalogue:catalogue",
        headline_metrics=(("F_T", "F_T"), ("F_E", "F_E"), ("F_S", "F_S")),
        shape=_shape,
    )
)

__all__ = ["FAMILY", "EnergyFairShareEnv"]

"""The energy fair-share family (ETF): ``edgegym/EnergyFairShare-v0``."""

from edgegym.envs.energy.env import EnergyFairShareEnv
from edgegym.families import Family, register_family
from edgegym.scenarios import SCHEMAS


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
        entry_point="edgegym.envs.energy.env:EnergyFairShareEnv",
        vector_entry_point="edgegym.envs.energy.vector:EnergyFairShareVectorEnv",
        default_scenario="etf-tx2-resnet50-mobilenetv2",
        summary="ETF: time slices per quantum for tenants at their own DVFS clocks",
        schema=SCHEMAS["energy"],
        default_policy="etf",
        flat_id="edgegym/EnergyFairShare-Flat-v0",
        catalogue="edgegym.wrappers:energy_catalogue",
        headline_metrics=(("F_T", "F_T"), ("F_E", "F_E"), ("F_S", "F_S")),
        shape=_shape,
    )
)

__all__ = ["FAMILY", "EnergyFairShareEnv"]

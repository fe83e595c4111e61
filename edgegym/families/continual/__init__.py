"""The continual-learning family (Ekya): ``edgegym/ContinualLearning-v0``."""

from edgegym.core.registry import Family, register_family
from edgegym.families.continual.env import ContinualLearningEnv
from edgegym.families.continual.params import make_params
from edgegym.families.continual.schema import SCHEMA
from edgegym.families.continual.snapshot import ContinualSnapshot, ContinualSpec


def _shape(d):
    hw = d["hardware"]
    return (
        str(d["streams"]),
        f"{hw['gpus']} x {hw['gpu']}",
        f"{d['windows']} x {d['window_s']:g} s windows",
    )


FAMILY = register_family(
    Family(
        name="continual",
        env_id="edgegym/ContinualLearning-v0",
        entry_point="edgegym.families.continual.env:ContinualLearningEnv",
        vector_entry_point="edgegym.families.continual.vector:ContinualLearningVectorEnv",
        default_scenario="ekya-cityscapes",
        summary="Ekya: retraining + inference configurations and GPU shares per stream",
        schema=SCHEMA,
        make_params=make_params,
        default_policy="thief",
        flat_id="edgegym/ContinualLearning-Flat-v0",
        catalogue="edgegym.families.continual.catalogue:catalogue",
        shape=_shape,
        unit="stream",
    )
)

__all__ = ["FAMILY", "ContinualLearningEnv", "ContinualSnapshot", "ContinualSpec"]

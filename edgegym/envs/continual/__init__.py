"""The continual-learning family (Ekya): ``edgegym/ContinualLearning-v0``."""

from edgegym.envs.continual.env import ContinualLearningEnv
from edgegym.envs.continual.types import ContinualSnapshot, ContinualSpec
from edgegym.families import Family, register_family
from edgegym.scenarios import SCHEMAS


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
        entry_point="edgegym.envs.continual.env:ContinualLearningEnv",
        vector_entry_point="edgegym.envs.continual.vector:ContinualLearningVectorEnv",
        default_scenario="ekya-cityscapes",
        summary="Ekya: retraining + inference configurations and GPU shares per stream",
        schema=SCHEMAS["continual"],
        default_policy="thief",
        flat_id="edgegym/ContinualLearning-Flat-v0",
        catalogue="edgegym.wrappers:continual_catalogue",
        shape=_shape,
        unit="stream",
    )
)

__all__ = ["FAMILY", "ContinualLearningEnv", "ContinualSnapshot", "ContinualSpec"]

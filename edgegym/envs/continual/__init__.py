"""The continual-learning family (Ekya): ``edgegym/ContinualLearning-v0``."""

from edgegym.envs.continual.env import ContinualLearningEnv
from edgegym.envs.continual.types import ContinualSnapshot, ContinualSpec

__all__ = ["ContinualLearningEnv", "ContinualSnapshot", "ContinualSpec"]

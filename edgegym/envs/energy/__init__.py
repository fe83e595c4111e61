"""The energy fair-share family (ETF): ``edgegym/EnergyFairShare-v0``."""

from edgegym.envs.energy.env import EnergyFairShareEnv

__all__ = ["EnergyFairShareEnv"]

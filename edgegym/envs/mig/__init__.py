"""The MIG reconfiguration family (MIGRator): ``edgegym/MIGReconfig-v0``."""

from edgegym.envs.mig.env import MIGReconfigEnv

__all__ = ["MIGReconfigEnv"]

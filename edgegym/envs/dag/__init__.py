"""The DAG-offload family (SRS/MRS): ``edgegym/DAGOffload-v0``."""

from edgegym.envs.dag.env import DAGOffloadEnv

__all__ = ["DAGOffloadEnv"]

"""The time-stepping core: the family-neutral contract (:mod:`edgegym.sim.core`), one
batched dynamics per family, and what they share (executor seam, metrics, timelines)."""

from edgegym.sim.engine import Engine
from edgegym.sim.executor import Executor, SimulatedExecutor
from edgegym.sim.metrics import Metrics
from edgegym.sim.state import Allocation, ClusterState, Segment, TenantState

__all__ = [
    "Allocation",
    "ClusterState",
    "Engine",
    "Executor",
    "Metrics",
    "Segment",
    "SimulatedExecutor",
    "TenantState",
]

"""The time-stepping core: state arrays, executors, the engine and its metrics."""

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

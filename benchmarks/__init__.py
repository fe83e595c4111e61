"""edgegym speed benchmarks (DESIGN.md §6), run with ``python -m benchmarks``.

Numbers are reported as ratios against a yardstick run in the same process (Gymnasium's
``CartPole-v1`` step) so that they can be compared across machines. Nothing here is asserted;
the measured numbers are kept in ``docs/benchmarks.md``.

Modules:
    common: timing helpers, CPU pinning and machine information.
    env_throughput: environment step throughput (edgegym vs CartPole).
    vector_envs: aggregate env-steps/s of every family's vector env at N = 1, 16, 256 (vs
        CartPole's numpy vector env at the same N).
    thief: decision time of Ekya's thief scheduler (Algorithm 1).
    migrator: decision time and optimality of the MIGRator planner on W1.
    mrs: scheduling time of MRS (SRS/MRS Algorithm 3) for 1000 DAG requests.
"""

from benchmarks.common import machine_info, median
from benchmarks.env_throughput import ThroughputResult, measure_throughput
from benchmarks.thief import ThiefTiming, time_thief

__all__ = [
    "ThiefTiming",
    "ThroughputResult",
    "machine_info",
    "measure_throughput",
    "median",
    "time_thief",
]

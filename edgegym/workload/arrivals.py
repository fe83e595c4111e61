"""Request-arrival processes and the scenario factory (the public names of one module).

The code lives by role: the processes in :mod:`edgegym.workload.processes`, the trace file
formats in :mod:`edgegym.workload.tracefiles`, and the scenario ``arrival`` specs with their
factory :func:`make_arrival` in :mod:`edgegym.workload.arrival_specs`. This module keeps the
names it always exported::

    {"kind": "poisson", "rate": 30}
    {"kind": "mmpp", "rates": [10, 80], "dwell_s": [20, 5]}
    {"kind": "diurnal", "rate": 30, "amplitude": 0.5, "period_s": 2000}
    {"kind": "trace", "path": "traces/sample-counts.csv", "scale": 1.0}
    {"kind": "azure", "rate": 120}
    {"kind": "alibaba", "rate": 120}
    {"kind": "azure-functions", "path": "traces/azure-functions-2019-sample.csv", "scale": 100}

Units: time in seconds, rates in requests per second, counts in requests.
"""

from __future__ import annotations

from edgegym.workload.arrival_specs import ARRIVAL_KINDS, make_arrival
from edgegym.workload.processes import MMPP, ArrivalProcess, Diurnal, Poisson, TraceReplay
from edgegym.workload.tracefiles import CountsTrace, load_counts_trace

__all__ = [
    "ARRIVAL_KINDS",
    "MMPP",
    "ArrivalProcess",
    "CountsTrace",
    "Diurnal",
    "Poisson",
    "TraceReplay",
    "load_counts_trace",
    "make_arrival",
]

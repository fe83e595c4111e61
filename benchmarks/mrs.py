"""MRS (SRS/MRS Algorithm 3) scheduling time for 1000 requests on ``srs-edge-5apps``.

Requests are drawn exactly as ``edgegym/DAGOffload-v0`` draws them (arrival times, applications,
model accuracies at arrival); MRS runs online: the requests that arrive within the same
``batch_s`` seconds are scheduled together (Algorithm 3's set Q), later batches see the cluster
with everything placed before. Reported: wall time for all requests and per request.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np


def run(requests: int = 1000, batch_s: float = 1.0, seed: int = 0) -> dict[str, Any]:
    """Schedule ``requests`` requests with MRS; return timings and schedule statistics."""
    from edgegym.baselines.dag import mrs_schedule

    from edgegym.envs.dag import DAGOffloadEnv

    env = DAGOffloadEnv(requests=requests)
    env.reset(seed=seed)
    cluster = env.cluster
    batches: list[list[int]] = []
    for k, t in enumerate(env.times):
        if batches and t - env.times[batches[-1][0]] < batch_s:
            batches[-1].append(k)
        else:
            batches.append([k])
    start = time.perf_counter()
    completions = []
    for batch in batches:
        reqs = []
        for k in batch:
            app = env.apps[int(env.app_of[k])]
            now, after = env._task_acc(app, float(env.times[k]))
            reqs.append((app, float(env.times[k]), now, after))
        for sched, _ in mrs_schedule(cluster, reqs, env.options, env.theta, env.a_min):
            completions.append(sched.completion)
    wall = time.perf_counter() - start
    return {
        "requests": requests,
        "batches": len(batches),
        "wall_s": wall,
        "per_request_ms": 1e3 * wall / requests,
        "mean_completion_s": float(np.mean(completions)),
    }


def format_result(res: dict[str, Any]) -> str:
    """One readable line."""
    return (
        f"MRS on srs-edge-5apps: {res['requests']} requests in {res['batches']} arrival "
        f"batches scheduled in {res['wall_s']:.2f} s ({res['per_request_ms']:.2f} ms per "
        f"request); mean completion {res['mean_completion_s']:.2f} s"
    )

"""MRS (SRS/MRS Algorithm 3) scheduling time for 1000 requests on ``srs-edge-5apps``.

Two measurements, one core:

* **online** (what the issue asks): the ``mrs`` policy drives ``edgegym/DAGOffload-v0`` through
  a whole episode of ``requests`` requests: Algorithm 2 at every arrival, earliest finish time
  for every node of every request, as Algorithm 3 orders them. Reported: the policy's decision
  time (all of its ``predict`` calls) per request, and the environment's own time beside it.
* **function**: ``mrs_schedule`` (Algorithm 3 as a function) on the same arrivals in batches
  of ``batch_s`` seconds, each batch one set Q (configurations without pools).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np


def run(requests: int = 1000, batch_s: float = 1.0, seed: int = 0) -> dict[str, Any]:
    """Schedule ``requests`` requests with MRS; return timings and schedule statistics."""
    from edgegym.baselines import make_policy
    from edgegym.baselines.dag import mrs_schedule
    from edgegym.families.dag import DAGOffloadEnv

    env = DAGOffloadEnv(requests=requests)
    pol = make_policy("mrs", env)
    obs, _ = env.reset(seed=seed)
    pol.reset(seed)
    decide = 0.0
    steps = 0
    term = False
    start = time.perf_counter()
    while not term:
        t0 = time.perf_counter()
        action, _ = pol.predict(obs)
        decide += time.perf_counter() - t0
        obs, _, term, _, info = env.step(action)
        steps += 1
    total = time.perf_counter() - start
    online = {
        "decide_s": decide,
        "env_s": total - decide,
        "decide_ms_per_request": 1e3 * decide / requests,
        "epochs": steps,
        "mean_completion_s": info["episode_metrics"]["completion_s"],
        "objective": info["episode_metrics"]["objective"],
    }

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
            now, after = env.task_accuracy(app, float(env.times[k]))
            reqs.append((app, float(env.times[k]), now, after))
        for sched, _ in mrs_schedule(cluster, reqs, env.options, env.theta, env.a_min):
            completions.append(sched.completion)
    wall = time.perf_counter() - start
    return {
        "requests": requests,
        "online": online,
        "batches": len(batches),
        "wall_s": wall,
        "per_request_ms": 1e3 * wall / requests,
        "mean_completion_s": float(np.mean(completions)),
    }


def format_result(res: dict[str, Any]) -> str:
    """Two readable lines."""
    on = res["online"]
    return (
        f"MRS policy on srs-edge-5apps: {res['requests']} requests ({on['epochs']} epochs) "
        f"decided in {on['decide_s']:.2f} s ({on['decide_ms_per_request']:.2f} ms per request; "
        f"environment {on['env_s']:.2f} s); mean completion {on['mean_completion_s']:.2f} s\n"
        f"mrs_schedule function: {res['requests']} requests in {res['batches']} arrival "
        f"batches scheduled in {res['wall_s']:.2f} s ({res['per_request_ms']:.2f} ms per "
        f"request); mean completion {res['mean_completion_s']:.2f} s"
    )

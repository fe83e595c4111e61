"""The DAG family's catalogue of joint actions for its flat view
(``edgegym/DAGOffload-Flat-v0``; :class:`edgegym.wrappers.DiscreteActions`).

``E + H`` actions. Entries ``0 .. E - 1``: the presented node's server ``j`` and no retraining
(a place epoch's whole decision; entry 0 doubles as "no retraining anywhere" at an admit
epoch). Entries ``E .. E + H - 1``: every task of the arriving request retrains with
configuration ``h`` (Algorithm 2 as written retrains every task, mostly with one
configuration). At a place epoch only the server rows are valid, at an admit epoch only row 0
and the configuration rows; a task whose configuration is masked (empty pool, below A_min) is
repaired to its nearest valid choice.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np


def catalogue(env: gym.Env, max_actions: int) -> np.ndarray:
    """The catalogue (module docstring); ``max_actions`` unused."""
    u = env.unwrapped
    e, n, h = int(u.e), int(u.n_nodes), len(u.options)
    rows = []
    for j in range(e):  # place epochs: the presented node's server
        row = np.zeros(1 + n, dtype=np.int64)
        row[0] = j
        rows.append(row)
    for v in range(1, h + 1):  # admit epochs: one configuration for every task (0: j = 0 row)
        row = np.zeros(1 + n, dtype=np.int64)
        row[1:] = v
        rows.append(row)
    return np.asarray(rows, dtype=np.int64)

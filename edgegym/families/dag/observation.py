"""The DAG family's observation (``edgegym/DAGOffload-v0``): the widths of its tables and the
``Dict`` observation of every env formed from what a dynamics gathers per env (see the env's
docstring for the columns)."""

from __future__ import annotations

from typing import Any

import numpy as np

from edgegym.families.dag.params import DAGParams

NODE_FEATURES = 13
SERVER_FEATURES = 5
GLOBALS = 5

__all__ = ["GLOBALS", "NODE_FEATURES", "SERVER_FEATURES", "tables"]


def tables(
    params: DAGParams,
    state: Any,
    t: np.ndarray,
    app_of: np.ndarray,
    acc: np.ndarray,
    acc_now: np.ndarray,
    phi: np.ndarray,
    placed: np.ndarray,
    cur: np.ndarray,
    cur_r: np.ndarray,
    servers: np.ndarray,
    admit: np.ndarray,
    pending: np.ndarray,
) -> dict[str, np.ndarray]:
    """The ``Dict`` observation of every env (see the env's docstring) from what each
    dynamics gathers per env; the node tables are formed for all envs at once.

    Args:
        params: The scenario's params.
        state: Either dynamics' state (speeds, links to storage, model retraining times).
        t: (N,) time of each env's epoch.
        app_of: (N,) int64 application of the epoch's request (-1: none).
        acc: (N, n) accuracy each task runs with.
        acc_now: (N, n) accuracy of each task's model at the arrival.
        phi: (N, n) Eq. 10 priorities.
        placed: (N, n) bool: the task is placed.
        cur: (N,) int64 presented inference node (-1: none).
        cur_r: (N,) int64 task whose model the presented node retrains (-1: none).
        servers: (N, E, SERVER_FEATURES) float32 with the backlog and finish-gap columns set
            (completed here).
        admit: (N,) bool: an admit epoch (an array or a list).
        pending: (N,) requests still being placed, / 10 (an array or a list).

    Returns:
        The observation, each entry (N, ...) float32.
    """
    m, n = len(t), params.n_nodes
    live = app_of >= 0
    ai = np.where(live, app_of, 0)
    if m == 1:  # a slice: the same rows as a view (fancy indexing copies, slower on one row)
        ai = slice(int(ai[0]), int(ai[0]) + 1)
    feats = np.empty((m, n, NODE_FEATURES))
    feats[:, :, :4] = params.app_static[ai]
    feats[:, :, 4] = acc
    feats[:, :, 5] = params.app_ceiling[ai] - acc
    if m == 1:
        base = state.base_time[:, params.app_model[ai][0]]
    else:
        base = state.base_time[np.arange(m)[:, None], params.app_model[ai]]
    feats[:, :, 6] = np.maximum(0.0, t[:, None] - base) / 100.0
    feats[:, :, 7] = params.app_exe[ai] * state.mean_inv_speed[:, None]
    feats[:, :, 8] = phi
    feats[:, :, 9] = acc - acc_now  # accuracy gained by the chosen retraining
    feats[:, :, 10] = placed
    col = np.arange(n)[None, :]
    feats[:, :, 11] = col == cur[:, None]
    feats[:, :, 12] = col == cur_r[:, None]
    feats[~(params.app_valid[ai] & live[:, None])] = 0.0
    servers[:, :, 0] = state.speed
    servers[:, :, 1] = params.units
    servers[:, :, 3] = state.storage_mb_s / 1000.0
    glob = np.empty((m, GLOBALS), dtype=np.float32)
    glob[:, 0] = state.next / params.n_requests
    glob[:, 1] = params.theta / 10
    glob[:, 2] = params.a_min
    glob[:, 3] = admit
    glob[:, 4] = pending
    return {
        "nodes": feats.astype(np.float32),
        "edges": np.where(live[:, None, None], params.app_edges[ai], np.float32(-1.0)),
        "edge_mask": np.where(live[:, None], params.app_edge_mask[ai], np.float32(0.0)),
        "servers": np.minimum(servers, 1e6),
        "globals": glob,
    }

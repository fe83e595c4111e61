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
#: Upper bound of the ``nodes``, ``servers`` and ``globals`` boxes (their lower bound is 0).
#: Valid scenarios reach far beyond it (a workload of 1e5 on 0.1 units is a mean execution time
#: of 1.6e6; slow links push the clock, and the seconds since a retraining, past 1e8), so both
#: tables are clamped into the box by :func:`in_box`.
OBS_HIGH = 1e6

__all__ = ["GLOBALS", "NODE_FEATURES", "OBS_HIGH", "SERVER_FEATURES", "in_box", "tables"]


def in_box(table: np.ndarray) -> np.ndarray:
    """``table`` clamped into ``[0, OBS_HIGH]``, the one rule of the ``nodes`` and ``servers``
    tables: larger values become ``OBS_HIGH``, negative ones 0 (an accuracy retrained with a
    gain of 1 can round one ulp above its ceiling, making the gap to the ceiling -1e-16);
    every value inside the box keeps its bits (``-0.0`` included).

    Args:
        table: Any float array.

    Returns:
        A new array of ``table``'s dtype.
    """
    out = np.minimum(table, OBS_HIGH)
    out[out < 0.0] = 0.0
    return out


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
    one = m == 1  # slices and Python values: the same numbers, fewer numpy calls on one row
    if one:
        ai = slice(int(ai[0]), int(ai[0]) + 1)
    feats = np.empty((m, n, NODE_FEATURES))
    feats[:, :, :4] = params.app_static[ai]
    feats[:, :, 4] = acc
    feats[:, :, 5] = params.app_ceiling[ai] - acc
    if one:
        base = state.base_time[:, params.app_model[ai][0]]
    else:
        base = state.base_time[np.arange(m)[:, None], params.app_model[ai]]
    feats[:, :, 6] = np.maximum(0.0, t[:, None] - base) / 100.0
    feats[:, :, 7] = params.app_exe[ai] * state.mean_inv_speed[:, None]
    feats[:, :, 8] = phi
    feats[:, :, 9] = acc - acc_now  # accuracy gained by the chosen retraining
    feats[:, :, 10] = placed
    _flags(feats, cur, cur_r, one)
    if one:  # an application's tasks are its first V rows
        feats[0, int(params.app_n[app_of[0]]) if live[0] else 0 :] = 0.0
    else:
        feats[~(params.app_valid[ai] & live[:, None])] = 0.0
    servers[:, :, 0] = state.speed
    servers[:, :, 1] = params.units
    servers[:, :, 3] = state.storage_mb_s / 1000.0
    return {
        "nodes": in_box(feats).astype(np.float32),
        "edges": _or_padding(params.app_edges[ai], live, -1.0, one),
        "edge_mask": _or_padding(params.app_edge_mask[ai], live, 0.0, one),
        "servers": in_box(servers),
        "globals": _globals(params, state, admit, pending),
    }


def _flags(feats: np.ndarray, cur: np.ndarray, cur_r: np.ndarray, one: bool) -> None:
    """Columns 11 and 12: the presented inference node, the task whose model the presented
    node retrains (one-hot; -1: none)."""
    if one:
        feats[0, :, 11:13] = 0.0
        for c, x in ((11, int(cur[0])), (12, int(cur_r[0]))):
            if x >= 0:
                feats[0, x, c] = 1.0
        return
    col = np.arange(feats.shape[1])[None, :]
    feats[:, :, 11] = col == cur[:, None]
    feats[:, :, 12] = col == cur_r[:, None]


def _or_padding(table: np.ndarray, live: np.ndarray, pad: float, one: bool) -> np.ndarray:
    """(N, ...) a copy of each env's application ``table`` row, ``pad`` where none is live."""
    if one:
        return table.copy() if live[0] else np.full_like(table, pad)
    return np.where(live.reshape(-1, *([1] * (table.ndim - 1))), table, np.float32(pad))


def _globals(params: DAGParams, state: Any, admit: Any, pending: Any) -> np.ndarray:
    """(N, GLOBALS) float32: fraction of requests admitted, theta / 10, A_min, admit epoch,
    pending requests / 10."""
    glob = np.empty((len(state.next), GLOBALS), dtype=np.float32)
    glob[:, 0] = state.next / params.n_requests
    glob[:, 1] = params.theta / 10
    glob[:, 2] = params.a_min
    glob[:, 3] = admit
    glob[:, 4] = pending
    return glob

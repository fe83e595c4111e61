"""DAG-structured multi-model applications (SRS/MRS, INFOCOM'25) and their retraining nodes.

An application is a DAG of inference tasks, each running one model. Task ``i`` has a workload
``w_i`` (GPU time units at speed 1), a resource demand ``c_i`` (GPU resource units while it runs),
its input data ``d_{0,i}`` (MB, from the controller, for entry tasks) and the data it
sends along each edge ``d_{i,i'}``. On server ``j`` with speed ``S_j`` a task runs for
``w_i / (c_i S_j)``; moving ``d`` MB over a link of ``D`` MB/s takes ``d / D`` (Eq. 5-6).
The slides' testbed has three kinds of link: server-server and controller-server (3-5 Gbps)
and storage-server (7-10 Gbps); a node's input from the controller (``input_mb``) and from
storage (``storage_mb``, a retraining node's training data) travel on the last two.

Retraining (Fig. 7 of the slides): choosing configuration ``u_h = (b_h, n_h, o_h)`` (data MB,
workload, resources) for model ``m_i`` adds node ``|V| + i`` to the request's DAG. It receives
the inputs of task ``i`` (``d_{i',|V|+i} = d_{i',i}`` from each predecessor ``i'``) and its
training data from storage (``d_{0,|V|+i} = b_h``), and sends task ``i`` the updated model
(``d_{|V|+i,i} = sum_{i'} d_{i',i} + d(m_i)``): task ``i`` then answers with accuracy
``f(u_h, m_i)`` instead of ``a_i``.

Algorithm 2 (line 2) turns the inference DAG into a single chain in topological order before
it prices a retraining node (:func:`chain_dag`): Eq. 11 names one predecessor ``i'`` per task.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "DAGApp",
    "DAGError",
    "RetrainOption",
    "chain_dag",
    "extend_with_retraining",
    "option_for",
    "topological_order",
]


class DAGError(ValueError):
    """A malformed DAG: the message names the application and the offending edge or cycle."""


def topological_order(n: int, edges: Sequence[tuple[int, int]], name: str = "dag") -> list[int]:
    """Kahn's algorithm (smallest index first among ready nodes).

    Raises:
        DAGError: On an edge to a node outside ``0 .. n-1``, a self-loop or a cycle.
    """
    succ: list[list[int]] = [[] for _ in range(n)]
    indeg = [0] * n
    for k, (u, v) in enumerate(edges):
        if not (0 <= u < n and 0 <= v < n):
            raise DAGError(f"{name}: edge {k} ({u} -> {v}) is dangling: nodes are 0 .. {n - 1}")
        if u == v:
            raise DAGError(f"{name}: edge {k} is a self-loop on node {u}")
        succ[u].append(v)
        indeg[v] += 1
    ready = sorted(i for i in range(n) if indeg[i] == 0)
    order: list[int] = []
    while ready:
        u = ready.pop(0)
        order.append(u)
        for v in succ[u]:
            indeg[v] -= 1
            if indeg[v] == 0:
                ready.append(v)
                ready.sort()
    if len(order) != n:
        stuck = sorted(i for i in range(n) if indeg[i] > 0)
        raise DAGError(f"{name}: the edges form a cycle through nodes {stuck}")
    return order


@dataclass(frozen=True)
class DAGApp:
    """One application: a DAG of model-inference tasks.

    Attributes:
        name: Application name.
        models: (V,) model of each task.
        workload: (V,) GPU time units of each task (at server speed 1 and 1 resource unit).
        demand: (V,) resource units each task holds while it runs.
        input_mb: (V,) data each task receives from the controller (entry tasks; 0 otherwise).
        edges: (E, 2) data dependencies ``(u, v)``.
        edge_mb: (E,) data sent along each edge, MB.
        model_mb: (V,) size of each task's model, MB (sent to it after a retraining).
        storage_mb: (V,) data each node receives from the storage cluster, MB (a retraining
            node's training data ``b_h``; 0 for inference tasks). ``None``: zeros.
    """

    name: str
    models: tuple[str, ...]
    workload: np.ndarray
    demand: np.ndarray
    input_mb: np.ndarray
    edges: np.ndarray
    edge_mb: np.ndarray
    model_mb: np.ndarray
    storage_mb: np.ndarray | None = None
    order: tuple[int, ...] = field(default=(), compare=False)

    def __post_init__(self) -> None:
        n = len(self.models)
        if self.storage_mb is None:
            object.__setattr__(self, "storage_mb", np.zeros(n))
        for key in ("workload", "demand", "input_mb", "model_mb", "storage_mb"):
            arr = np.asarray(getattr(self, key), dtype=float)
            if arr.shape != (n,) or np.any(arr < 0) or not np.all(np.isfinite(arr)):
                raise DAGError(f"{self.name}: {key} must be {n} non-negative numbers")
            object.__setattr__(self, key, arr)
        if np.any(self.demand <= 0) or np.any(self.workload <= 0):
            raise DAGError(f"{self.name}: workload and demand must be > 0 for every task")
        e = np.asarray(self.edges, dtype=np.int64).reshape(-1, 2)
        mb = np.asarray(self.edge_mb, dtype=float).reshape(-1)
        if mb.shape != (len(e),) or np.any(mb < 0):
            raise DAGError(f"{self.name}: edge_mb must have one non-negative size per edge")
        object.__setattr__(self, "edges", e)
        object.__setattr__(self, "edge_mb", mb)
        order = topological_order(n, [tuple(x) for x in e.tolist()], self.name)
        object.__setattr__(self, "order", tuple(order))
        preds: list[list[tuple[int, float]]] = [[] for _ in range(n)]
        succs: list[list[tuple[int, float]]] = [[] for _ in range(n)]
        for (u, v), d in zip(e.tolist(), mb.tolist(), strict=True):
            preds[v].append((int(u), float(d)))
            succs[u].append((int(v), float(d)))
        object.__setattr__(self, "_preds", tuple(map(tuple, preds)))
        object.__setattr__(self, "_succs", tuple(map(tuple, succs)))

    @property
    def n(self) -> int:
        """Tasks."""
        return len(self.models)

    def preds(self, i: int) -> tuple[tuple[int, float], ...]:
        """``(predecessor, MB)`` of task i."""
        return self._preds[i]

    def succs(self, i: int) -> tuple[tuple[int, float], ...]:
        """``(successor, MB)`` of task i."""
        return self._succs[i]


@dataclass(frozen=True)
class RetrainOption:
    """A retraining configuration ``u_h = (b_h, n_h, o_h)``.

    Attributes:
        name: Identifier.
        data_mb: Training data moved from storage, MB (b_h).
        workload: GPU time units (n_h).
        demand: Resource units while it runs (o_h).
        gain: Fraction of the gap to the model's ceiling the retraining closes (f(u_h, m)).
    """

    name: str
    data_mb: float
    workload: float
    demand: float
    gain: float


def option_for(options: Sequence[Any], i: int, h: int) -> RetrainOption:
    """Option ``h`` for task ``i``: ``options`` is one list for every task, or one per task."""
    first = options[0] if len(options) else None
    return options[h] if isinstance(first, RetrainOption) else options[i][h]


def extend_with_retraining(app: DAGApp, choice: Sequence[int], options: Sequence[Any]) -> DAGApp:
    """The extended DAG of Fig. 7: one retraining node per task whose ``choice`` is >= 0.

    Args:
        app: The inference DAG.
        choice: (V,) retraining option index per task, -1 for none.
        options: The retraining configurations (one list, or one list per task when their
            data and cost depend on the task's model, e.g. on its pool of drifted samples).

    Returns:
        A DAG with ``V + R`` nodes; node ``V + r`` retrains the model of the r-th chosen task.
        Its input from the storage cluster carries ``b_h`` MB (``storage_mb``).
    """
    models = list(app.models)
    work = list(app.workload)
    demand = list(app.demand)
    inp = list(app.input_mb)
    store = list(app.storage_mb)
    mmb = list(app.model_mb)
    edges = [tuple(e) for e in app.edges.tolist()]
    emb = list(app.edge_mb)
    for i, h in enumerate(choice):
        if h < 0:
            continue
        opt = option_for(options, i, h)
        r = len(models)
        models.append(f"retrain:{app.models[i]}")
        work.append(opt.workload)
        demand.append(opt.demand)
        inp.append(0.0)
        store.append(opt.data_mb)  # d_{0,|V|+i} = b_h, from storage
        mmb.append(0.0)
        into = app.preds(i)
        for u, d in into:  # d_{i',|V|+i} = d_{i',i}
            edges.append((u, r))
            emb.append(d)
        edges.append((r, i))  # d_{|V|+i,i} = sum d_{i',i} + d(m_i)
        emb.append(sum(d for _, d in into) + float(app.model_mb[i]))
    return DAGApp(
        name=f"{app.name}+retrain",
        models=tuple(models),
        workload=np.array(work),
        demand=np.array(demand),
        input_mb=np.array(inp),
        edges=np.array(edges, dtype=np.int64).reshape(-1, 2),
        edge_mb=np.array(emb),
        model_mb=np.array(mmb),
        storage_mb=np.array(store),
    )


def chain_dag(app: DAGApp) -> DAGApp:
    """Algorithm 2, line 2: ``app`` as a single chain in topological order (``app.order``).

    The chain has the edges ``(order[k-1], order[k])``, so every task but the first has exactly
    one predecessor, the ``i'`` of Eq. 11. The edge into task ``i`` carries all that ``i``
    receives from its DAG predecessors, ``d^{i',i} = sum_{u in pre(i)} d_{u,i}`` (0 for an
    entry task): every input of ``i`` reaches it along the chain, and Fig. 7's retraining node
    of ``i`` then sends ``i`` the same ``d^{i',i} + d(m_i)`` on the chain as on the DAG. The
    chain keeps every precedence of the DAG (a topological order does). Tasks keep their
    indices, models, workloads, demands, inputs and model sizes.

    Returns:
        The chain, a :class:`DAGApp` named ``<app>:chain`` with ``V - 1`` edges.
    """
    order = list(app.order)
    into = [sum(d for _, d in app.preds(i)) for i in range(app.n)]
    edges = [(order[k - 1], order[k]) for k in range(1, len(order))]
    return DAGApp(
        name=f"{app.name}:chain",
        models=app.models,
        workload=app.workload,
        demand=app.demand,
        input_mb=app.input_mb,
        edges=np.array(edges, dtype=np.int64).reshape(-1, 2),
        edge_mb=np.array([into[v] for _, v in edges], dtype=float),
        model_mb=app.model_mb,
        storage_mb=app.storage_mb,
    )

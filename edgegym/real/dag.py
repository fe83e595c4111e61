"""The DAG family for real: every placed node runs a compact stand-in network on the device, and
each request's completion is replayed from the measured execution times.

The simulator's dynamics (:class:`~edgegym.families.dag.dynamics.DAGDynamics`) decide what
they always decide: which requests retrain which models, each node's server, and the order in
which nodes are placed, so a policy sees exactly the simulator's observations.
:class:`RealDAGExecutor` then makes each placed node real:

* **Inference node**: a forward pass of the task's stand-in network (ResNet- or
  MobileNet-style by the scenario's model name, :mod:`edgegym.real.models`) on a batch of
  held-out digits sized by the data the node receives (``samples_per_mb`` per MB of its input
  and its predecessors' edges, at most ``max_batch``).
* **Retraining node**: SGD steps of the stand-in (``steps_per_work`` per unit of the node's
  workload, batch ``retrain_batch``) on the train samples of the drift window of the request's
  arrival; the result is the model version the request's task, and every later request, runs.
* **Servers**: on the CPU the nodes run one after another in the simulator's placement order.
  On CUDA each server gets its own CUDA stream (and, when ``device="cuda"`` and several GPUs
  are present, its own GPU, servers dealt round-robin); nodes are still issued one at a time,
  as they are placed, so each node's time is its own.
* **Transfers** (inputs from the controller, training data from storage, data and models
  between servers) are not performed: each keeps its modelled time.

**Time base**: a node's duration in scenario seconds is its measured wall seconds times
``time_scale`` (scenario seconds per wall second; ``None``: 1, the measured seconds are
scenario seconds). The executor never sleeps.

**Completion replay**: each node is put on the server the simulator chose, in the simulator's
placement order, at its earliest start there by the simulator's own rule (the server's
capacity timeline, :func:`~edgegym.families.dag.cluster.earliest_start_row`) after its real
inputs are ready (its predecessors' replayed finishes plus the modelled transfers). A request's
real completion is its latest replayed finish minus its arrival. The reward's ``completion``
term is minus the growth of the replayed latest finish at each place epoch, so a request's
place epochs add up to minus its real completion, as in the simulator.

**Accuracy**: each model's stand-in is pretrained on clean digits (once per process: the
digits split, the drift and the pretrained weights follow ``data_seed``, not the episode, so
every episode starts from the same deployed models; the episode's seed orders the SGD
batches); the scenario's duration is
split into ``windows`` drift windows (rotated, blurred, darkened or noisy digits, a different
cycle per model) and a task's measured accuracy is its model version's accuracy on the held-out
samples of the window of the request's arrival. It is reported beside the simulator's; the
reward's accuracy term stays the simulator's (it is paid when a request is admitted, before
any of its models runs).

**Energy**: where NVML reads the GPU, each node's run is one meter window, and the node's
energy is its measured mean power times its replayed duration (scenario seconds, the
simulator's time base); it replaces the modelled joules in the step's ``energy_j`` and the
reward's ``energy`` term. The GPU's whole power is measured (idle included, where the
simulator counts a node's dynamic power only). Without NVML (the CPU) the simulator's model
stays, and ``emulated`` says so.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import nn

from edgegym.core.dynamics import Record
from edgegym.real.data import DigitStream, Window
from edgegym.real.energy import EnergyMeter
from edgegym.real.executor import (
    RealReport,
    check_device,
    gpu_index,
    merge_options,
    torch_threads,
)
from edgegym.real.models import architecture_for
from edgegym.real.retrain import LR, MOMENTUM, evaluate, pretrained

if TYPE_CHECKING:  # the family sits a floor above the real executors: imported when run
    from edgegym.families.dag.dynamics import DAGState
    from edgegym.families.dag.params import DAGParams

#: Real-backend options of the DAG family (``real_options``).
DEFAULT_OPTIONS: dict[str, Any] = {
    "width": 8,  # base channels of the stand-in networks
    "samples_per_mb": 16,  # inference batch per MB a node receives
    "max_batch": 256,  # largest inference batch
    "steps_per_work": 2.0,  # SGD steps of a retraining node per unit of its workload
    "retrain_batch": 32,  # SGD batch of a retraining node
    "windows": 3,  # drift windows the scenario's duration is split into
    "n_train": 128,  # train samples per window
    "n_test": 100,  # held-out samples per window
    "severity": 0.8,  # corruption severity of the drift windows
    "data_seed": 0,  # seed of the digits split, the drift and the pretrained stand-ins
    "accuracy": True,  # measure the stand-ins' held-out accuracy
    "threads": 1,  # torch CPU threads while the executor works (restored after)
}


def server_devices(device: str, servers: int) -> list[str]:
    """The torch device of each server: ``device`` for all of them, except that
    ``device="cuda"`` with several GPUs present deals the servers round-robin over the GPUs."""
    if device == "cuda" and torch.cuda.is_available() and torch.cuda.device_count() > 1:
        count = torch.cuda.device_count()
        return [f"cuda:{j % count}" for j in range(servers)]
    return [device] * servers


@dataclass
class ModelVersion:
    """One version of a model's stand-in: pretrained (``parent`` None) or the result of one
    retraining node (``steps`` SGD steps from ``parent`` on drift window ``window``)."""

    model: int  # the scenario's model index
    parent: ModelVersion | None = None
    window: int = 0
    steps: int = 0
    seed: int = 0
    nets: dict[str, nn.Module] = field(default_factory=dict)  # device -> trained weights
    train_s: float | None = None  # wall seconds of the SGD steps (None: not trained yet)
    train_w: float | None = None  # NVML mean watts of the SGD steps (None: not measured)
    acc: dict[int, float] = field(default_factory=dict)  # window -> held-out accuracy


@dataclass
class _Request:
    """A request being placed: what the replay and the accuracy need of it."""

    k: int
    app: int
    arrival: float
    window: int
    versions: dict[int, ModelVersion]  # task -> the version it runs
    retrains: dict[int, ModelVersion]  # task -> the version its retraining node trains
    front: float  # latest replayed finish so far
    done: dict[int, tuple[int, float]] = field(default_factory=dict)  # node -> (server, finish)


class RealDAGExecutor(RealReport):
    """One episode of the DAG family run for real (see the module docstring).

    Args:
        params: The scenario's parameters.
        state: The episode's initial state (one env): its servers' links and bandwidths.
        device: ``"cpu"`` or ``"cuda[:N]"``.
        time_scale: Scenario seconds per wall second (``None``: 1).
        seed: Seed of the retraining nodes' SGD batches.
        options: :data:`DEFAULT_OPTIONS` overrides.
    """

    def __init__(
        self,
        params: DAGParams,
        state: DAGState,
        device: str = "cpu",
        time_scale: float | None = None,
        seed: int = 0,
        options: dict[str, Any] | None = None,
    ) -> None:
        self.opts = merge_options(options, DEFAULT_OPTIONS)
        self.params = params
        self.device = check_device(device)
        self.time_scale = time_scale
        self.scale = float(time_scale or 1.0)
        self.seed = int(seed)
        self.devices = server_devices(self.device, params.e)
        self.streams = [
            torch.cuda.Stream(device=d) if d.startswith("cuda") else None for d in self.devices
        ]
        self.source = state.source_mb_s[0].tolist()
        self.storage = state.storage_mb_s[0].tolist()
        self.link = state.link[0].copy()
        self.timelines = [([0.0], [0.0]) for _ in range(params.e)]
        self.requests: dict[int, _Request] = {}
        self._init_models()
        self.gpu_index = gpu_index(self.device)
        self.meter = EnergyMeter(self.gpu_index)
        self.emulated = self._emulated()
        self.energy_j = 0.0  # the nodes' joules so far (measured where NVML reads)
        self.sim_energy_j = 0.0  # the simulator's joules of the same nodes
        self.log: list[dict[str, Any]] = []
        self.finished: list[dict[str, Any]] = []  # every finished request's real and sim numbers

    def _init_models(self) -> None:
        """Each model's pretrained stand-in (version 0) and its drift stream."""
        n_windows = int(self.opts["windows"])
        self.window_s = self.params.duration / max(n_windows, 1)
        self.streams_data = [
            DigitStream(
                windows=n_windows,
                n_train=int(self.opts["n_train"]),
                n_test=int(self.opts["n_test"]),
                severity=float(self.opts["severity"]),
                stream=m,
                seed=int(self.opts["data_seed"]),
            )
            for m in range(len(self.params.model_names))
        ]
        self._windows: dict[tuple[int, int], Window] = {}
        self.current: list[ModelVersion] = []
        from edgegym.families.dag.params import base_model  # a floor above: imported when run

        with torch_threads(self.opts["threads"]):
            for m, name in enumerate(self.params.model_names):
                net = pretrained(
                    architecture_for(base_model(name)),
                    self.streams_data[m],
                    int(self.opts["width"]),
                    "cpu",
                )
                self.current.append(ModelVersion(m, nets={"cpu": net.eval()}))

    def _emulated(self) -> list[str]:
        servers = (
            f"servers: one after another on the {self.device} device, in the simulator's "
            "placement order"
        )
        if self.device.startswith("cuda"):
            servers = (
                f"servers: a CUDA stream each on {', '.join(sorted(set(self.devices)))}; nodes "
                "issued one at a time in the simulator's placement order"
            )
        out = [
            servers + "; their concurrency is the replay's (capacity timelines)",
            "transfers: not performed; each keeps its modelled time",
            "models: compact stand-ins on 8x8 digits (batch from a node's input MB, SGD steps "
            "from a retraining node's workload)",
            "accuracy term of the reward: the simulator's (paid at admission, before any model "
            "runs); measured accuracy is reported beside it",
        ]
        if not self.meter.available:
            out.append(f"energy: {self.meter.message}; the simulator's model")
        elif len(set(self.devices)) > 1:
            out.append(
                f"energy: measured on GPU {self.gpu_index} only; nodes on the other GPUs keep "
                "the simulator's model"
            )
        if not self.opts["accuracy"]:
            out.append("accuracy: not measured (real_options accuracy=False)")
        return out

    # ------------------------------------------------------------ helpers
    def window_of(self, t: float) -> int:
        """The drift window of scenario time ``t``."""
        n = int(self.opts["windows"])
        return min(n - 1, max(0, int(t / self.window_s))) if self.window_s > 0 else 0

    def _window(self, m: int, w: int) -> Window:
        key = (m, w)
        if key not in self._windows:
            self._windows[key] = self.streams_data[m].window(w)
        return self._windows[key]

    def _net(self, version: ModelVersion, device: str) -> nn.Module:
        """The version's trained network on ``device`` (trained first where it is not)."""
        if not version.nets:
            # An inference node of a later request may need a version whose retraining node
            # (of a request still pending) is not placed yet: the SGD steps run now, once, and
            # their measured seconds become that retraining node's when it is placed.
            self._train(version, device)
        if device not in version.nets:
            version.nets[device] = copy.deepcopy(next(iter(version.nets.values()))).to(device)
        return version.nets[device]

    def _timed(self, j: int, work: Any) -> tuple[float, float | None]:
        """Wall seconds of ``work()`` on server ``j`` (its CUDA stream where it has one) and
        the mean watts NVML read over it (None where energy is unavailable)."""
        stream = self.streams[j]
        if stream is None:
            self.meter.begin("node")
            t0 = time.perf_counter()
            work()
            seconds = time.perf_counter() - t0
            return seconds, self._mean_w()
        # The inputs were copied on the device's default stream: wait for them first, so
        # that the timed stretch holds the node's work only.
        torch.cuda.synchronize(stream.device)
        metered = (stream.device.index or 0) == self.gpu_index  # NVML reads one GPU
        with torch.cuda.stream(stream):
            if metered:
                self.meter.begin("node")
            t0 = time.perf_counter()
            work()
            stream.synchronize()
            seconds = time.perf_counter() - t0
            return seconds, self._mean_w() if metered else None

    def _mean_w(self) -> float | None:
        """Mean watts of the meter's node window (None where energy is unavailable)."""
        m = self.meter.end("node")
        return m.energy_j / m.seconds if m.energy_j is not None and m.seconds > 0 else None

    def _train(self, version: ModelVersion, device: str, server: int | None = None) -> None:
        """Run the version's SGD steps from its parent (timed on ``server``'s stream)."""
        net = copy.deepcopy(self._net(version.parent, device))
        w = self._window(version.model, version.window)
        x = torch.from_numpy(w.x_train).to(device)
        y = torch.from_numpy(w.y_train).to(device)
        gen = torch.Generator().manual_seed(version.seed)
        opt = torch.optim.SGD(net.parameters(), lr=LR, momentum=MOMENTUM)
        loss_fn = nn.CrossEntropyLoss()
        bs = max(2, min(int(self.opts["retrain_batch"]), len(y)))  # batch norm needs two

        def steps() -> None:
            net.train()
            for _ in range(version.steps):
                idx = torch.randperm(len(y), generator=gen)[:bs].to(device)
                opt.zero_grad(set_to_none=True)
                loss_fn(net(x[idx]), y[idx]).backward()
                opt.step()

        j = 0 if server is None else server
        version.train_s, version.train_w = self._timed(j, steps)
        version.nets = {device: net.eval()}

    def _accuracy(self, version: ModelVersion, w: int) -> float | None:
        """The version's held-out accuracy on window ``w`` (None: accuracy is not measured)."""
        if not self.opts["accuracy"]:
            return None
        if w not in version.acc:
            win = self._window(version.model, w)
            if not version.nets:  # a retraining node not placed yet (its request is pending)
                self._train(version, self.devices[0])
            device, net = next(iter(version.nets.items()))
            version.acc[w] = evaluate(net, win.x_test, win.y_test, device)[0]
        return version.acc[w]

    # ---------------------------------------------------- the dynamics' seam
    def epoch(self, state: DAGState) -> tuple[int, int, int, int]:
        """What the env's next step decides (read before it): epoch kind, request, slot, node."""
        return int(state.kind[0]), int(state.k[0]), int(state.slot[0]), int(state.node[0])

    def after_step(
        self,
        params: DAGParams,
        state: DAGState,
        rec: Record,
        epoch: tuple[int, int, int, int],
    ) -> None:
        """Make the step real: an admission creates the retrained model versions; a placement
        runs its node and replays it, and the reward's completion term becomes the replay's."""
        from edgegym.families.dag.dynamics import ADMIT

        kind, k, slot, node = epoch
        with torch_threads(self.opts["threads"]):
            if kind == ADMIT:
                self._admit(params, state, k)
            else:
                self._place(params, state, rec, k, slot, node)

    def _admit(self, params: DAGParams, state: DAGState, k: int) -> None:
        rq = state.requests
        slot = int(np.flatnonzero(rq.k[0] == k)[0])
        a = int(rq.app[0, slot])
        arrival = float(rq.arrival[0, slot])
        w = self.window_of(arrival)
        idx = params.app_models[a]
        before = [self.current[int(m)] for m in idx]
        versions, retrains = {}, {}
        for task, m in enumerate(idx.tolist()):
            h = int(rq.choice[0, slot, task])
            versions[task] = before[task]
            if h < 0:
                continue
            x = int(rq.retrain[0, slot, task])
            steps = max(1, round(float(rq.workload[0, slot, x]) * self.opts["steps_per_work"]))
            child = ModelVersion(m, before[task], w, steps, seed=self.seed * 7919 + k * 31 + task)
            versions[task] = retrains[task] = self.current[m] = child  # a later task wins
        self.requests[k] = _Request(k, a, arrival, w, versions, retrains, front=arrival)
        # Nothing starts before the earliest pending arrival: the replay forgets the past.
        from edgegym.families.dag.cluster import forget_row

        first = min(r.arrival for r in self.requests.values())
        for j, (times, used) in enumerate(self.timelines):
            cut = forget_row(times, used, first)
            if cut is not None:
                self.timelines[j] = (list(cut[0]), list(cut[1]))

    def _ready(
        self, params: DAGParams, state: DAGState, req: _Request, s: int, x: int, j: int
    ) -> float:
        """Replayed instant node ``x``'s inputs are all on server ``j`` (the simulator's Eq.
        6-7 with the replayed finishes of its predecessors and the modelled transfers)."""
        rq = state.requests
        a, task = req.app, int(rq.task[0, s, x])
        inp = float(rq.input_mb[0, s, x])
        if x < params.app_n[a]:
            rate, retrain = self.source[j], int(rq.retrain[0, s, task])
        else:
            rate, retrain = self.storage[j], -1
        preds = [*params.app_pred[a, task].tolist(), retrain]
        mbs = [*params.app_pred_mb[a, task].tolist(), float(params.app_retrain_mb[a, task])]
        t = max(req.arrival, req.arrival + inp / rate) if inp > 0 else req.arrival
        for u, d in zip(preds, mbs, strict=True):
            if u >= 0:
                src, fin = req.done[u]
                t = max(t, fin if src == j or d <= 0 else fin + d / float(self.link[src, j]))
        return t

    def _run(
        self, params: DAGParams, state: DAGState, req: _Request, s: int, x: int, j: int
    ) -> tuple[float, float | None, dict[str, Any]]:
        """Run node ``x`` on server ``j``: measured wall seconds and mean watts, what it ran."""
        rq = state.requests
        task = int(rq.task[0, s, x])
        device = self.devices[j]
        if x >= params.app_n[req.app]:  # a retraining node
            version = req.retrains[task]
            if version.train_s is None:
                self._train(version, device, j)
            return version.train_s, version.train_w, {"kind": "retrain", "steps": version.steps}
        net = self._net(req.versions[task], device)
        mb = float(params.app_inflow[req.app, task])
        batch = int(np.clip(round(mb * self.opts["samples_per_mb"]), 1, self.opts["max_batch"]))
        win = self._window(req.versions[task].model, req.window)
        reps = -(-batch // len(win.y_test))
        xb = torch.from_numpy(np.concatenate([win.x_test] * reps)[:batch]).to(device)

        def forward() -> None:
            with torch.no_grad():
                net(xb)

        return (*self._timed(j, forward), {"kind": "infer", "batch": batch})

    def _place(
        self, params: DAGParams, state: DAGState, rec: Record, k: int, s: int, x: int
    ) -> None:
        from edgegym.families.dag.cluster import commit_row, earliest_start_row

        req = self.requests[k]
        j = int(rec.info["server"][0])
        rq = state.requests
        seconds, watts, what = self._run(params, state, req, s, x, j)
        duration = seconds * self.scale
        demand = float(rq.demand[0, s, x])
        ready = self._ready(params, state, req, s, x, j)
        times, used = self.timelines[j]
        start = earliest_start_row(times, used, (params.units - demand) + 1e-9, ready, duration)
        finish = start + duration
        commit_row(times, used, start, finish, demand)
        req.done[x] = (j, finish)
        grown = max(0.0, finish - req.front)
        req.front = max(req.front, finish)
        rec.terms["completion"][0] = -grown  # the replay's, in place of the simulator's
        sim_j = float(rec.energy_j[0])
        energy = sim_j
        if watts is not None:  # the measured mean power over the replayed duration
            energy = watts * duration
            rec.energy_j[0] = energy
            rec.terms["energy"][0] = -energy / 1000.0
        self.energy_j += energy
        self.sim_energy_j += sim_j
        self.log.append(
            {
                "event": "node",
                "request": k,
                "node": x,
                "task": int(rq.task[0, s, x]),
                **what,
                "server": j,
                "demand": demand,
                "measured_s": seconds,
                "duration_s": duration,
                "ready_s": ready,
                "start_s": start,
                "finish_s": finish,
                "sim_start_s": float(rq.start[0, s, x]),
                "sim_finish_s": float(rq.finish[0, s, x]),
                "mean_w": watts,
                "energy_j": energy,
                "sim_energy_j": sim_j,
            }
        )
        if not np.isnan(rec.info["objective"][0]):
            self._finish(rec, req)

    def _finish(self, rec: Record, req: _Request) -> None:
        """Log a finished request: replayed and simulated completion, measured and simulated
        accuracy."""
        del self.requests[req.k]
        accs = [self._accuracy(v, req.window) for _, v in sorted(req.versions.items())]
        row = {
            "event": "request",
            "request": req.k,
            "app": self.params.apps[req.app].name,
            "arrival_s": req.arrival,
            "completion_s": req.front - req.arrival,
            "sim_completion_s": float(rec.info["completion_s"][0]),
            "accuracy": None if accs[0] is None else float(np.mean(accs)),
            "task_accuracy": accs,
            "sim_accuracy": float(rec.info["accuracy"][0]),
            "window": req.window,
            "retrained": sorted(req.retrains),
        }
        self.log.append(row)
        self.finished.append(row)

    def summary(self) -> dict[str, Any]:
        """The finished requests' mean replayed and simulated completion and accuracy, and the
        placed nodes' joules (measured where NVML reads) and the simulator's."""
        rows = self.finished
        out: dict[str, Any] = {
            "requests": len(rows),
            "energy_j": self.energy_j,
            "sim_energy_j": self.sim_energy_j,
        }
        for key in ("completion_s", "sim_completion_s", "accuracy", "sim_accuracy"):
            vals = [r[key] for r in rows if r[key] is not None]
            out[key] = float(np.mean(vals)) if vals else None
        return out

    def report(self) -> dict[str, Any]:
        """:meth:`RealReport.report` and the episode's real-vs-simulated means so far."""
        return {**super().report(), "episode": self.summary()}


__all__ = ["DEFAULT_OPTIONS", "ModelVersion", "RealDAGExecutor", "server_devices"]

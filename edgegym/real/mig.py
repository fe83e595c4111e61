"""The MIG family's real executor: ``edgegym/MIGReconfig-v0`` with real models and retraining.

:class:`RealMIGExecutor` wraps the simulator's :class:`~edgegym.families.mig.serving.MIGExecutor`
the way :class:`~edgegym.real.executor.RealExecutor` wraps the continual one: the engine keeps its
rules and clock, the serving queue keeps its fluid model, and what the tenants' models *are*
becomes real.

* **Models and data.** Each tenant deploys a compact network pretrained on the base classes
  of a new-class digit stream (``kind="nc"``, like NC-CIFAR-10: every window brings classes
  the deployed model never saw). At every window start the deployed models are measured on
  the window's held-out samples; that accuracy replaces the profile's pre-retraining accuracy.
* **Retraining** is real SGD (``epochs`` option, batch 32, every layer, the scenario's
  ``data_fraction`` of the window's train samples). Its length in scenario time still comes
  from the profile's GPU-seconds and the instance's training speed (the planner's view); its
  epochs run as it progresses, and when the engine finishes it the retrained model's measured
  accuracy is what requests are answered with from then on (Goodput = served x accuracy).
* **Inference.** In each stretch a tenant that served requests runs its deployed model on up
  to ``infer_cap`` held-out samples in batches of the scenario's batch size; the device
  latency per batch is measured and scaled to the tenant's largest ready instance by
  time-slicing (an instance of g GPCs gets g/7 of the device), logged beside the profile's
  latency for that instance and whether it meets the SLO. How many requests are served in the
  SLO stays the queue model's.
* **MIG instances** are emulated by time-slicing one device; edgegym never creates or destroys
  MIG instances and never changes MIG mode (the reconfiguration overheads stay modelled).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from edgegym.core.state import Allocation, ClusterState, MIGState, Segment, TenantState
from edgegym.hardware.mig import MIG_TOTAL_GPCS
from edgegym.real.executor import DEFAULT_OPTIONS, RealWork, merge_options
from edgegym.real.retrain import evaluate
from edgegym.workload.continual import RetrainConfig

if TYPE_CHECKING:
    from edgegym.families.mig.serving import MIGExecutor
    from edgegym.families.mig.snapshot import MIGSpec

#: Options of the MIG family's real backend (``real_options=`` of ``MIGReconfig-v0``).
MIG_OPTIONS: dict[str, Any] = {
    **{k: v for k, v in DEFAULT_OPTIONS.items() if k != "infer_batch"},
    "kind": "nc",  # new classes every window, as MIGRator's NC datasets
    "n_train": 512,  # train samples per window (a job uses data_fraction of them)
    "epochs": 4,  # epochs of a retraining job
    "infer_cap": 32,  # held-out samples run per tenant and stretch (a latency sample)
}


class RealMIGExecutor(RealWork):
    """Real executor of ``edgegym/MIGReconfig-v0`` (see the module docstring).

    Args:
        sim: The simulated MIG executor of the episode (queues, instance states, speeds).
        spec: The environment's static specification.
        device: ``"cpu"`` or ``"cuda[:N]"``.
        time_scale: Scenario seconds per wall second (``None``: no pacing).
        seed: Seed of the data split, corruptions, initial weights and batch order.
        requested: Descriptions of what the scenario requests that this run emulates.
        options: Overrides of :data:`MIG_OPTIONS`.
    """

    defaults = MIG_OPTIONS
    sharing = (
        "MIG instances: emulated by time-slicing one device ({device}); an instance of g GPCs "
        "gets g/7 of it (measured latency x 7/g); no MIG instance is created or destroyed and "
        "reconfiguration overheads stay modelled"
    )

    def __init__(
        self,
        sim: MIGExecutor,
        spec: MIGSpec,
        device: str = "cpu",
        time_scale: float | None = None,
        seed: int = 0,
        requested: list[str] | None = None,
        options: dict[str, Any] | None = None,
    ) -> None:
        epochs = int(merge_options(options, MIG_OPTIONS)["epochs"])  # checked: a clear message
        if epochs < 1:
            raise ValueError(f"real_options epochs={epochs}; must be >= 1")
        config = RetrainConfig(
            name="retrain", epochs=epochs, batch_size=32, data_fraction=spec.data_fraction
        )
        super().__init__(
            sim,
            (config,),
            spec.windows,
            [md.name for md in spec.models],
            device=device,
            time_scale=time_scale,
            seed=seed,
            requested=requested,
            options=options,
        )
        self.batch = int(spec.batch)
        self.slo_ms = 1000.0 * np.asarray(spec.slo_s, dtype=float)
        cap = int(self.opts["infer_cap"])
        if cap < 1:
            raise ValueError(f"real_options infer_cap={cap}; must be >= 1")
        self.emulated.append(
            f"inference: at most {cap} of a stretch's served requests per tenant run for real "
            "(a latency sample); the queue model counts requests served in the SLO"
        )
        self._slo: list[bool | None] = []
        self._profile_ms: list[float | None] = []

    @property
    def state(self) -> MIGState:
        """The simulated executor's instances and queues (the environment reads and sets it)."""
        return self.sim.state

    def capacity(self, ready_only: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """The queue model's service rate and queue bound per tenant (observation features)."""
        return self.sim.capacity(ready_only)

    def run(
        self, cluster: ClusterState, tenants: TenantState, alloc: Allocation, duration_s: float
    ) -> Segment:
        """Run the stretch for real; the log adds the profile's latency and the SLO check."""
        n = len(self.models)
        self._slo, self._profile_ms = [None] * n, [None] * n
        seg = super().run(cluster, tenants, alloc, duration_s)
        self.log[-1]["profile_latency_ms"] = self._profile_ms
        self.log[-1]["latency_within_slo"] = self._slo
        self.log[-1]["served"] = None if seg.served_slo is None else seg.served_slo.tolist()
        return seg

    def _largest_instance(self, v: int) -> int | None:
        """The placement of tenant ``v``'s largest ready inference instance (None if none)."""
        sim = self.sim
        own = (sim.state.task == v) & (sim.state.ready_s <= sim.cluster.time_s + 1e-9)
        if not np.any(own):
            return None
        idx = np.flatnonzero(own)
        return int(idx[np.argmax(sim.gpcs[idx])])

    def _infer_slice(self, v: int, alloc: Allocation, seg: Segment) -> tuple[float | None, float]:
        served = 0.0 if seg.served_slo is None else float(seg.served_slo[v])
        p = self._largest_instance(v)
        if served <= 0 or seg.duration_s <= 0 or p is None:
            return None, 0.0
        w = self.windows[v]
        count = min(int(self.opts["infer_cap"]), max(1, math.ceil(served)), len(w.y_test))
        _, seconds = evaluate(
            self.models[v], w.x_test[:count], w.y_test[:count], self.device, self.batch
        )
        batches = max(1, math.ceil(count / self.batch))
        at_instance_ms = 1000.0 * seconds / batches * MIG_TOTAL_GPCS / float(self.sim.gpcs[p])
        self._profile_ms[v] = round(1000.0 * float(self.sim.latency[v, p]), 4)
        self._slo[v] = bool(at_instance_ms <= self.slo_ms[v])
        return round(at_instance_ms, 4), seconds

"""Static specification and structured snapshot of the MIG reconfiguration family."""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from edgegym.hardware.gpus import GPUSpec, PowerModel, get_gpu, speed_factor
from edgegym.hardware.mig import MIG_TOTAL_GPCS, get_mig_profiles
from edgegym.hardware.migalloc import AllocationCatalogue, catalogue
from edgegym.scenarios import Scenario
from edgegym.workload.arrivals import ArrivalProcess, make_arrival
from edgegym.workload.models import ModelProfile, get_model
from edgegym.workload.nc import NCDataset, get_dataset, nc_profile

# Retraining job status per tenant.
PENDING, RUNNING, DONE = 0, 1, 2


#: Slack of :meth:`MIGSpec.fits_window` (seconds), so a job that ends exactly at the window's
#: end fits despite rounding.
FIT_EPS = 1e-9


@dataclass(frozen=True)
class MIGSpec:
    """Everything a MIG scenario fixes, precomputed once when the environment is built."""

    scenario: Scenario
    gpu: GPUSpec
    power: PowerModel
    clock_mhz: float
    catalogue: AllocationCatalogue
    models: tuple[ModelProfile, ...]
    datasets: tuple[NCDataset, ...]
    arrivals: tuple[ArrivalProcess, ...]
    names: tuple[str, ...]
    n_tenants: int
    windows: int
    window_s: float
    basis_s: float
    steps_per_window: int
    batch: int
    preinit: bool
    data_fraction: float
    ceilings: np.ndarray  # (M,)
    slo_s: np.ndarray  # (M,)
    rate: np.ndarray  # (M, P) requests/s of one instance at each placement
    latency: np.ndarray  # (M, P) seconds per batch at each placement
    train_speed: np.ndarray  # (M, P) GPU-seconds of retraining per second at each placement
    size_rate: np.ndarray  # (M, Z) requests/s of one instance of each size (SLO-feasible)
    size_train_speed: np.ndarray  # (M, Z) retraining speed of each instance size
    min_infer_size: np.ndarray  # (M,) smallest instance that holds the model for inference
    min_train_size: np.ndarray  # (M,) smallest instance that holds a retraining job
    overhead_new_s: np.ndarray  # (M,) overhead of a newly created instance for the model
    overhead_reload_s: np.ndarray  # (M,) overhead of reusing an instance for another task
    valid_static: np.ndarray  # (N,) signatures meeting the memory minimums
    weights: dict[str, float]

    @classmethod
    def from_scenario(cls, sc: Scenario) -> MIGSpec:
        """Build the specification from a validated ``family: mig`` scenario."""
        hw = sc["hardware"]
        gpu = get_gpu(hw["gpu"])
        tenants = sc["tenants"]
        m = len(tenants)
        cat = catalogue(gpu.name, m)
        models = tuple(get_model(t["model"]) for t in tenants)
        datasets = tuple(get_dataset(t["dataset"]) for t in tenants)
        base = Path(sc.source).parent
        arrivals = tuple(make_arrival(t["arrival"], base) for t in tenants)
        batch = int(sc["batch"])
        clock = gpu.resolve_clock(hw["clock_mhz"])  # validated at load time
        cf = clock / gpu.max_clock_mhz  # DVFS: slower clock, slower models, less power
        share = cat.placement_size / MIG_TOTAL_GPCS  # (P,)
        latency = np.stack([md.latency_s(share, cf, batch) for md in models])  # (M, P)
        rate = batch / latency
        clock_speed = np.array(
            [speed_factor(clock, gpu.max_clock_mhz, md.memory_bound) for md in models]
        )
        train_speed = np.stack([share**md.train_alpha for md in models]) * clock_speed[:, None]
        slo = np.array([t["slo_ms"] / 1000.0 for t in tenants])
        sizes = np.array(cat.sizes)
        zshare = sizes / MIG_TOTAL_GPCS
        zlat = np.stack([md.latency_s(zshare, cf, batch) for md in models])
        size_rate = np.where(zlat <= slo[:, None] + 1e-9, batch / zlat, 0.0)
        size_train = np.stack([zshare**md.train_alpha for md in models]) * clock_speed[:, None]
        prof = {p.gpcs: p for p in get_mig_profiles(gpu.name).values()}

        def smallest(mem: float) -> int:
            fit = [g for g in sorted(prof) if prof[g].memory_gb >= mem]
            return fit[0] if fit else 99

        min_inf = np.array([smallest(md.memory_gb) for md in models])
        min_train = np.array([smallest(md.train_memory_gb) for md in models])
        ov = sc["overhead"]
        load_s = np.array([md.model_load_s for md in models])
        new_s = ov["destroy_s"] + ov["create_s"] + ov["library_s"] + load_s
        reload_s = ov["library_s"] + load_s
        # Static validity: every inference task holds an instance big enough for its model;
        # every retraining instance is big enough for the job.
        ok = np.ones(len(cat), dtype=bool)
        for i in range(m):
            big = sizes >= min_inf[i]
            ok &= np.any(cat.counts[:, i, :][:, big] > 0, axis=1)
            small_train = sizes < min_train[i]
            ok &= ~np.any(cat.counts[:, m + i, :][:, small_train] > 0, axis=1)
        window_s = float(sc["window_s"])
        basis = float(sc["basis_s"])
        return cls(
            scenario=sc,
            gpu=gpu,
            power=PowerModel.from_spec(gpu),
            clock_mhz=clock,
            catalogue=cat,
            models=models,
            datasets=datasets,
            arrivals=arrivals,
            names=tuple(t["name"] for t in tenants),
            n_tenants=m,
            windows=int(sc["windows"]),
            window_s=window_s,
            basis_s=basis,
            steps_per_window=math.ceil(window_s / basis - 1e-9),
            batch=batch,
            preinit=bool(sc["preinit"]),
            data_fraction=float(sc["data_fraction"]),
            ceilings=np.array([t["ceiling"] for t in tenants]),
            slo_s=slo,
            rate=rate,
            latency=latency,
            train_speed=train_speed,
            size_rate=size_rate,
            size_train_speed=size_train,
            min_infer_size=min_inf,
            min_train_size=min_train,
            overhead_new_s=new_s,
            overhead_reload_s=reload_s,
            valid_static=ok,
            weights=dict(sc["objective"]),
        )

    def profile(self):
        """The tenants' continual-learning profile (deterministic)."""
        return nc_profile(
            self.models, self.datasets, self.ceilings, self.data_fraction, self.windows
        )

    def retrain_seconds(self, job_left: np.ndarray) -> np.ndarray:
        """(M, Z) seconds a retraining job with ``job_left`` (M,) GPU-seconds of work occupies a
        new instance of each size, its creation overhead included; ``inf`` where the size is
        too small to hold the job. The one rule behind the MIG mask, the MIG baselines and
        MIGRator's planner (a job is never resized, so it runs on one instance throughout)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            secs = self.overhead_new_s[:, None] + job_left[:, None] / self.size_train_speed
        too_small = np.asarray(self.catalogue.sizes)[None, :] < self.min_train_size[:, None]
        return np.where(too_small, np.inf, secs)

    def fits_window(self, job_left: np.ndarray, left_s: float) -> np.ndarray:
        """(M, Z) bool: a job with ``job_left`` GPU-seconds, launched now on a new instance of
        each size, finishes within the ``left_s`` seconds left in its window (MIGRator's
        constraint 4: retraining is launched and finished inside its window)."""
        return self.retrain_seconds(job_left) <= left_s + FIT_EPS

    @property
    def n_seconds(self) -> int:
        """Seconds in the episode."""
        return int(math.ceil(self.windows * self.window_s - 1e-9))


@dataclass(frozen=True)
class MIGSnapshot:
    """Structured state handed to baselines by ``env.unwrapped.sim_state()``."""

    spec: MIGSpec
    time_s: float
    window: int
    step_in_window: int  # decision index inside the window
    signature: int  # current allocation signature (-1 before the first decision)
    placement_task: np.ndarray  # (P,) current task per placement
    status: np.ndarray  # (M,) PENDING / RUNNING / DONE
    job_left: np.ndarray  # (M,) GPU-seconds of retraining left (whole job if pending)
    model_acc: np.ndarray  # (M,) accuracy of the deployed model
    post_acc: np.ndarray  # (M,) accuracy after this window's retraining
    backlog: np.ndarray  # (M,) requests queued
    past_arrivals: np.ndarray  # (M, t) per-second arrivals observed so far this episode
    mask: np.ndarray  # (N,) valid signatures now
    window_arrivals: np.ndarray | None = None  # (M, S) true arrivals of this window (oracle)

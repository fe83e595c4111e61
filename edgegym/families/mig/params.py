"""What a MIG scenario fixes, precomputed once when an environment is built.

:class:`MIGSpec` is the scenario read into typed fields (tenants, their models, SLOs and
arrivals, the GPU and its allocation catalogue, the overheads); :class:`MIGParams` adds the
tables and memos the batched dynamics (:mod:`edgegym.families.mig.dynamics`) read at every
step; :func:`make_params` is the one way to build them (``Family.params``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import repeat
from pathlib import Path
from typing import Any

import numpy as np

from edgegym.families.mig.datasets import NCDataset, dataset_with, nc_profile
from edgegym.families.mig.reward import term_weights
from edgegym.hardware.gpus import GPUSpec, PowerModel, get_gpu, speed_factor
from edgegym.hardware.mig import MIG_MEMORY_SLICES, get_mig_profiles
from edgegym.hardware.migalloc import (
    KEY_LIMIT,
    AllocationCatalogue,
    ShareCatalogue,
    catalogue,
    mask_radix,
    share_catalogue,
)
from edgegym.hardware.mps import slowdowns
from edgegym.scenarios import Scenario
from edgegym.workload.arrival_specs import make_arrival
from edgegym.workload.continual import ContinualProfile
from edgegym.workload.models import ModelProfile, model_with
from edgegym.workload.processes import ArrivalProcess

_EPS = 1e-9
#: Entries of a memo (realisations, masks) before it starts afresh (bounds its memory). The
#: soak benchmark (random actions, 10^6 steps) found 200,000 let RSS grow 32 % (about 40 MiB)
#: before the bound was reached; at 16,384 it stays within 5 % for 4 % fewer steps/s.
MEMO_LIMIT = 16_384
#: Smallest batch of keys that may skip a memo (:class:`RowMemo`), and how many batches do
#: after one in which most keys missed.
BYPASS_MIN = 32
BYPASS_CALLS = 7
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
    retrain_scale: float  # multiplies every retraining job's GPU-seconds (nc_profile)
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
    destroy_s: float  # destroying an instance (MIGRator Fig. 5's first component)
    overhead_rule: str  # "eq10" (MIGRator Eq. 10-11, measured Psi) or "per-instance"
    valid_static: np.ndarray  # (N,) signatures meeting the memory minimums
    mps_inference_slowdown: float  # co-located inference loses this share (0: MIG, no loss)
    mps_retrain_slowdown: float  # co-located retraining loses this share under MPS
    objective: dict[str, float]  # the scenario's objective weights

    @classmethod
    def from_scenario(cls, sc: Scenario) -> MIGSpec:
        """Build the specification from a validated ``family: mig`` scenario."""
        hw = sc["hardware"]
        gpu = get_gpu(hw["gpu"])
        tenants = sc["tenants"]
        m = len(tenants)
        units = int(sc["mps"]["shares"])
        cat = share_catalogue(gpu.name, m, units) if units else catalogue(gpu.name, m)
        models = tuple(model_with(t["model"], t.get("profile")) for t in tenants)
        given = sc.get("datasets") or {}
        datasets = tuple(dataset_with(t["dataset"], given.get(t["dataset"])) for t in tenants)
        base = Path(sc.source).parent
        arrivals = tuple(make_arrival(t["arrival"], base) for t in tenants)
        batch = int(sc["batch"])
        clock = gpu.resolve_clock(hw["clock_mhz"])  # validated at load time
        cf = clock / gpu.max_clock_mhz  # DVFS: slower clock, slower models, less power
        share = cat.placement_size / cat.units  # (P,)
        latency = np.stack([md.latency_s(share, cf, batch) for md in models])  # (M, P)
        rate = batch / latency
        clock_speed = np.array(
            [speed_factor(clock, gpu.max_clock_mhz, md.memory_bound) for md in models]
        )
        train_speed = np.stack([share**md.train_alpha for md in models]) * clock_speed[:, None]
        slo = np.array([t["slo_ms"] / 1000.0 for t in tenants])
        sizes = np.array(cat.sizes)
        zshare = sizes / cat.units
        zlat = np.stack([md.latency_s(zshare, cf, batch) for md in models])
        size_rate = np.where(zlat <= slo[:, None] + 1e-9, batch / zlat, 0.0)
        size_train = np.stack([zshare**md.train_alpha for md in models]) * clock_speed[:, None]
        ov = sc["overhead"]
        load_s = np.array([md.model_load_s for md in models])
        reload_s = ov["library_s"] + load_s
        destroy_s = float(ov["destroy_s"])
        if units:  # MPS: any share holds any model; a new share is a process restart
            _check_memory(gpu, models)
            min_inf = min_train = np.ones(m, dtype=np.int64)
            new_s, destroy_s = reload_s, 0.0
        else:
            min_inf, min_train = _memory_minimums(gpu.name, models)
            new_s = ov["destroy_s"] + ov["create_s"] + ov["library_s"] + load_s
        ok = _valid_static(cat, sizes, min_inf, min_train)
        window_s = float(sc["window_s"])
        basis = float(sc["basis_s"])
        mps_inf, mps_ret = slowdowns(sc["mps"])
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
            retrain_scale=float(sc["retrain_scale"]),
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
            destroy_s=destroy_s,
            overhead_rule=str(ov["rule"]),
            valid_static=ok,
            mps_inference_slowdown=mps_inf,
            mps_retrain_slowdown=mps_ret,
            objective=dict(sc["objective"]),
        )

    def profile(self):
        """The tenants' continual-learning profile (deterministic)."""
        return nc_profile(
            self.models,
            self.datasets,
            self.ceilings,
            self.data_fraction,
            self.windows,
            retrain_scale=self.retrain_scale,
        )

    def retrain_seconds(
        self, job_left: np.ndarray, overhead_s: np.ndarray | None = None
    ) -> np.ndarray:
        """(M, Z) seconds a retraining job with ``job_left`` (M,) GPU-seconds of work occupies a
        new instance of each size, its start overhead included; ``inf`` where the size is too
        small to hold the job. The one rule behind the MIG mask, the MIG baselines and
        MIGRator's planner (a job is never resized, so it runs on one instance throughout).

        Args:
            job_left: (M,) GPU-seconds of work.
            overhead_s: (M,) seconds before the job's instance serves: what the environment
                charges a retraining task now (``MIGSnapshot.overhead_s[M:]``: its Psi under
                ``eq10``); default the new-instance overhead (the ``per-instance`` rule).
        """
        ov = self.overhead_new_s if overhead_s is None else np.asarray(overhead_s, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            secs = ov[:, None] + job_left[:, None] / self.size_train_speed
        too_small = np.asarray(self.catalogue.sizes)[None, :] < self.min_train_size[:, None]
        return np.where(too_small, np.inf, secs)

    def fits_window(
        self, job_left: np.ndarray, left_s: float, overhead_s: np.ndarray | None = None
    ) -> np.ndarray:
        """(M, Z) bool: a job with ``job_left`` GPU-seconds, launched now on a new instance of
        each size, finishes within the ``left_s`` seconds left in its window (MIGRator's
        constraint 4: retraining is launched and finished inside its window); ``overhead_s``
        as in :meth:`retrain_seconds`."""
        return self.retrain_seconds(job_left, overhead_s) <= left_s + FIT_EPS

    @property
    def n_seconds(self) -> int:
        """Seconds in the episode."""
        return int(math.ceil(self.windows * self.window_s - 1e-9))


class RowMemo:
    """Rows of a pure function memoised by integer key, kept in one growing array so that a
    batch of keys is answered by one gather; it starts afresh past :data:`MEMO_LIMIT` keys
    (bounds its memory).

    With ``bypass``, a batch of at least :data:`BYPASS_MIN` keys of which most missed makes
    the next :data:`BYPASS_CALLS` such batches skip the memo (every row made afresh, nothing
    stored): where almost every key is new (random actions) the lookups cost more than they
    save. The rows are the same either way (a pure function).

    Args:
        width: Length of a row.
        dtype: Type of the rows.
        bypass: Whether large batches that mostly miss may skip the memo (``make`` must then
            accept any index array, repeats included).
    """

    def __init__(self, width: int, dtype: type, bypass: bool = False) -> None:
        self.index: dict[int, int] = {}
        self.table = np.empty((64, width), dtype=dtype)
        self.bypass = bypass
        self.skip = 0  # large batches left to skip the memo

    def __len__(self) -> int:
        return len(self.index)

    def skips(self, n_keys: int) -> bool:
        """Whether a batch of ``n_keys`` keys skips the memo (counted as one that did): a
        caller may then make every row itself without forming the keys (:meth:`rows` does
        the same)."""
        if self.bypass and n_keys >= BYPASS_MIN and self.skip > 0:
            self.skip -= 1
            return True
        return False

    def rows(self, keys: np.ndarray, make: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
        """(N, W) the rows of ``keys`` (N,); ``make(idx)`` gives the (K, W) rows of the keys
        at ``idx`` (K,), one for each distinct key missing from the memo."""
        if self.skips(len(keys)):
            return make(np.arange(len(keys)))
        large = self.bypass and len(keys) >= BYPASS_MIN
        if len(self.index) > MEMO_LIMIT:
            self.index.clear()
        at = np.fromiter(map(self.index.get, keys.tolist(), repeat(-1)), np.int64, len(keys))
        miss = np.flatnonzero(at < 0)
        if large and 2 * miss.size > len(keys):
            self.skip = BYPASS_CALLS
        if miss.size:
            new, first, inverse = np.unique(keys[miss], return_index=True, return_inverse=True)
            start = len(self.index)
            if start + len(new) > len(self.table):
                grown = np.empty((2 * (start + len(new)), self.table.shape[1]), self.table.dtype)
                grown[:start] = self.table[:start]
                self.table = grown
            self.table[start : start + len(new)] = make(miss[first])
            self.index.update(zip(new.tolist(), range(start, start + len(new)), strict=True))
            at[miss] = start + inverse
        return self.table.take(at, axis=0)


@dataclass(frozen=True, eq=False)
class MIGParams:
    """Everything a scenario fixes, precomputed once (S signatures, P placements, M tenants,
    Z instance sizes, K windows, T seconds).

    ``realised``, ``feasible`` and ``masks`` are memo tables filled as envs meet new
    allocations and states (pure functions of their keys, so they never change what a step
    does).
    """

    spec: MIGSpec
    term_weights: dict[str, float]  # reward term -> objective weight
    profile: ContinualProfile
    n_seconds: int  # T
    n_steps: int  # decisions per episode
    share: np.ndarray  # (S, 2M) fraction of the GPCs each task holds
    retrain_size: np.ndarray  # (S, M) size index of each retraining instance, Z where none
    stripped: np.ndarray  # (S, 2^M) the signature keeping only the running jobs' instances
    slices: np.ndarray  # (P, 8) bool: memory slices each placement covers
    slice_span: np.ndarray  # (2P,) int64 first and one-past-last slice of each placement
    slice_node: np.ndarray | None  # (P,) each placement's slices in a tree of slices, or None
    slices_f: np.ndarray  # (P, 8) ``slices`` as 0.0 / 1.0
    overhead_by_task: np.ndarray  # (2, 2M + 2) new / reused instance overhead by task + 2
    meets: np.ndarray  # (M, P) bool: the batch latency meets the SLO
    slack: np.ndarray  # (M, P) queue bound of one instance (0 where the SLO is missed)
    rate_slo: np.ndarray  # (M, P) requests/s of one instance within the SLO (0 where missed)
    train_too_small: np.ndarray  # (M, Z) bool: an instance of the size cannot hold the job
    gpcs: np.ndarray  # (P,) float GPCs of each placement
    speed_min: np.ndarray  # (M,) retraining speed of the smallest instance holding the job
    clock_mhz: np.ndarray  # (1,) the GPU's clock
    mask_base: np.ndarray  # (M,) int64 weights of the key of a mask
    task_base: np.ndarray  # (P,) int64 weights of the allocation in the key of a realisation
    mps: bool  # MPS shares (``mps.shares``): one allocation per signature, make before break
    realised: RowMemo = field(repr=False)  # (P,) allocation by (allocation, jobs, signature)
    masks: RowMemo = field(repr=False)  # (S,) mask by mask key (see MIGDynamics._mask)
    feasible: dict[tuple[int, ...], np.ndarray] = field(default_factory=dict, repr=False)

    @classmethod
    def from_spec(cls, spec: MIGSpec) -> MIGParams:
        """Precompute the tables of a specification."""
        cat = spec.catalogue
        m = spec.n_tenants
        z = len(cat.sizes)
        rsize = np.full((len(cat), m), z, dtype=np.int64)
        for i in range(m):
            has = cat.counts[:, m + i, :] > 0  # at most one instance
            rsize[:, i] = np.where(has.any(axis=1), np.argmax(has, axis=1), z)
        stripped = np.zeros((len(cat), 2**m), dtype=np.int64)
        for n, sig in enumerate(cat.signatures):
            for bits in range(2**m):
                s = list(sig)
                for i in range(m):
                    if not bits >> i & 1:
                        s[m + i] = ()
                stripped[n, bits] = cat.index(tuple(s))
        slices = np.zeros((len(cat.placements), MIG_MEMORY_SLICES), dtype=bool)
        span = np.zeros(2 * len(cat.placements), dtype=np.int64)
        for p, (prof, s0) in enumerate(cat.placements):
            slices[p, s0 : s0 + prof.mem_slices] = True
            span[2 * p : 2 * p + 2] = s0, s0 + prof.mem_slices
        tenant = np.concatenate([[0, 0], np.arange(2 * m) % m])  # the tenant of each task + 2
        overhead = np.stack([spec.overhead_new_s[tenant], spec.overhead_reload_s[tenant]])
        meets = spec.latency <= spec.slo_s[:, None] + _EPS
        zmin = np.searchsorted(np.array(cat.sizes), spec.min_train_size)
        zmin = np.minimum(zmin, z - 1)
        n_place = len(cat.placements)
        fixed = isinstance(cat, ShareCatalogue)  # one allocation per signature: no memo
        realise_keys = 0 if fixed else (2 * m + 2) ** n_place * 2**m * len(cat)
        if realise_keys >= KEY_LIMIT or _mask_radix(cat) ** m >= KEY_LIMIT:
            what = f"{m} tenants on {cat.units} MPS shares" if fixed else f"{cat.gpu}'s MIG"
            raise ValueError(f"{what}: too many placements to key allocations")
        rate_slo = np.where(meets, spec.rate, 0.0)
        too_small = np.asarray(cat.sizes)[None, :] < spec.min_train_size[:, None]
        slices_f = slices.astype(float)
        tables = (rsize, stripped, slices, span, meets, overhead, rate_slo, too_small, slices_f)
        for arr in tables:
            arr.setflags(write=False)
        return cls(
            spec=spec,
            term_weights=term_weights(spec.objective),
            profile=spec.profile(),
            n_seconds=spec.n_seconds,
            n_steps=spec.windows * spec.steps_per_window,
            share=cat.gpcs.astype(float) / cat.units,
            retrain_size=rsize,
            stripped=stripped,
            slices=slices,
            slice_span=span,
            slice_node=_slice_nodes(span),
            slices_f=slices_f,
            overhead_by_task=overhead,
            meets=meets,
            slack=np.where(meets, spec.rate * (spec.slo_s[:, None] - spec.latency), 0.0),
            rate_slo=rate_slo,
            train_too_small=too_small,
            gpcs=cat.placement_size.astype(float),
            speed_min=spec.size_train_speed[np.arange(m), zmin],
            clock_mhz=np.array([spec.clock_mhz]),
            mask_base=_mask_radix(cat) ** np.arange(m, dtype=np.int64),
            task_base=np.zeros(n_place, dtype=np.int64)
            if fixed
            else (2 * m + 2) ** np.arange(n_place, dtype=np.int64) * (len(cat) << m),
            mps=fixed,
            realised=RowMemo(n_place, np.int64, bypass=True),
            masks=RowMemo(len(cat), bool),
        )

    def realise(self, a: np.ndarray, task: np.ndarray, running: np.ndarray) -> np.ndarray:
        """(N, P) task per placement of signatures ``a`` (N,) realised from allocations ``task``
        (N, P), keeping the instances of the running (N, M) jobs: memoised, the envs missing
        from the memo realised together
        (:meth:`~edgegym.hardware.migalloc.AllocationCatalogue.realise_batch`; all of them
        while the memo is bypassed, see :class:`RowMemo`). Under MPS shares each signature has
        one allocation, looked up."""
        if self.mps:
            return self.spec.catalogue.alloc.take(a, axis=0)
        if self.realised.skips(len(a)):  # every env afresh: no keys, no copies
            return self.spec.catalogue.realise_batch(a, task, job_places(self, task, running))[1]
        bits = running @ (1 << np.arange(running.shape[1]))
        keys = (task + 2) @ self.task_base + (bits * len(self.spec.catalogue) + a)

        def make(idx: np.ndarray) -> np.ndarray:
            cat = self.spec.catalogue
            if len(idx) == 1:  # one env (the single env's case): the per-env call is quicker
                i = int(idx[0])
                keep = keep_pairs(self, task[i], running[i])
                return cat.realise(int(a[i]), task[i], keep)[1][None]
            keep = job_places(self, task[idx], running[idx])
            return cat.realise_batch(a[idx], task[idx], keep)[1]

        return self.realised.rows(keys, make)


def job_places(params: MIGParams, task: np.ndarray, running: np.ndarray) -> np.ndarray:
    """(N, P) bool: the placements of the envs' running retraining jobs (they must stay)."""
    m = params.spec.n_tenants
    job = task >= m
    return job & np.take_along_axis(running, np.where(job, task - m, 0), axis=1)


def _slice_nodes(span: np.ndarray) -> np.ndarray | None:
    """(P,) where each placement's memory slices lie in the tree of slices that
    :func:`slice_tree` builds (the 8 slices, then the 4 aligned pairs, the 2 aligned fours and
    all 8), or ``None`` where some placement covers a span that is not a node of it."""
    s = MIG_MEMORY_SLICES
    if s & (s - 1):
        return None  # no tree of halves
    node = []
    for start, end in span.reshape(-1, 2).tolist():
        width = end - start
        if width < 1 or width & (width - 1) or start % width or end > s:
            return None
        # The level of spans this wide starts after the narrower ones: s + s/2 + ... of them
        # (2s - 2 s/width), then the span's place in its level.
        node.append(2 * s - 2 * s // width + start // width)
    out = np.array(node, dtype=np.int64)
    out.setflags(write=False)
    return out


def slice_tree(values: np.ndarray) -> np.ndarray:
    """(N, 15) the maxima of ``values`` (N, 8) over every node of the tree of memory slices: the
    8 slices, the 4 aligned pairs, the 2 aligned fours, all 8 (:func:`_slice_nodes`)."""
    levels = [values]
    while levels[-1].shape[1] > 1:
        last = levels[-1]
        levels.append(np.maximum(last[:, 0::2], last[:, 1::2]))
    return np.concatenate(levels, axis=1)


def _mask_radix(cat: AllocationCatalogue) -> int:
    """Values of one tenant's part of a mask key: where its running job is (P: nowhere)
    times which of the Z sizes and none it may take (:func:`~edgegym.hardware.migalloc.
    mask_radix`, which the MPS share limit reads too)."""
    return mask_radix(len(cat.placements), len(cat.sizes))


def keep_pairs(params: MIGParams, task: np.ndarray, running: np.ndarray) -> list[tuple[int, int]]:
    """The (placement, task) pairs of one env's running retraining jobs: they must stay."""
    m = params.spec.n_tenants
    return [(int(p), int(task[p])) for p in np.flatnonzero(task >= m) if running[task[p] - m]]


def make_params(sc: Scenario) -> MIGParams:
    """The :class:`MIGParams` of a loaded scenario (``Family.params``)."""
    return MIGParams.from_spec(MIGSpec.from_scenario(sc))


def _check_memory(gpu: GPUSpec, models: tuple[Any, ...]) -> None:
    """Under MPS every tenant's model and its retraining job share the GPU's memory at once.

    Raises:
        ValueError: If they do not fit, naming the sizes.
    """
    need = sum(md.memory_gb + md.train_memory_gb for md in models)
    if need > gpu.memory_gb:
        raise ValueError(
            f"mps.shares: the tenants' models and retraining jobs need {need:.1f} GB together, "
            f"more than the {gpu.name}'s {gpu.memory_gb:g} GB that MPS shares unpartitioned"
        )


def _memory_minimums(gpu_name: str, models: tuple[Any, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(M,) GPCs of the smallest MIG instance whose memory holds each model for inference, and
    a retraining job of it (99 where none does)."""
    prof = {p.gpcs: p for p in get_mig_profiles(gpu_name).values()}

    def smallest(mem: float) -> int:
        fit = [g for g in sorted(prof) if prof[g].memory_gb >= mem]
        return fit[0] if fit else 99

    min_inf = np.array([smallest(md.memory_gb) for md in models])
    min_train = np.array([smallest(md.train_memory_gb) for md in models])
    return min_inf, min_train


def _valid_static(
    cat: Any, sizes: np.ndarray, min_inf: np.ndarray, min_train: np.ndarray
) -> np.ndarray:
    """(N,) the signatures valid whatever the state: every inference task holds an instance
    big enough for its model; every retraining instance is big enough for the job."""
    m = len(min_inf)
    ok = np.ones(len(cat), dtype=bool)
    for i in range(m):
        big = sizes >= min_inf[i]
        ok &= np.any(cat.counts[:, i, :][:, big] > 0, axis=1)
        small_train = sizes < min_train[i]
        ok &= ~np.any(cat.counts[:, m + i, :][:, small_train] > 0, axis=1)
    return ok


__all__ = [
    "FIT_EPS",
    "MEMO_LIMIT",
    "MIGParams",
    "MIGSpec",
    "RowMemo",
    "job_places",
    "keep_pairs",
    "make_params",
]

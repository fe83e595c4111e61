"""MIG allocations: which instance sizes each task holds, and where they sit on the GPU.

An *allocation signature* says, for each of 2M tasks (the inference task and the retraining job
of each of M tenants), the multiset of MIG instance sizes (in GPCs) it holds. It is the level at
which MIGRator's ILP reasons (instances and GPCs per task, Table 2) and the action of
``edgegym/MIGReconfig-v0``. The :class:`AllocationCatalogue` of a GPU and tenant count lists
every signature some valid layout can host, with each retraining job holding at most one
instance and each inference task at least one (MIGRator constraints 1-3, 5).

A signature becomes a physical allocation (a layout from :func:`~edgegym.hardware.mig.
valid_layouts` and the task on each of its instances) by :meth:`AllocationCatalogue.realise`:
among the layouts that can host it, the one that keeps the most (placement, task) pairs of the
current allocation, so that a reconfiguration touches as few instances as possible; a running
retraining job's instance is always kept. Ties go to the layout keeping more existing instances,
then to the lower layout index.

:func:`share_catalogue` gives the same contract for a GPU shared by MPS instead of MIG (the
paper's Ekya and Astraea): each task holds one share of the GPU's SMs in ``units`` equal parts,
and a :class:`ShareCatalogue` realises each signature on its only allocation.

Tasks are numbered ``0 .. M-1`` (inference of tenant m) and ``M .. 2M-1`` (retraining of tenant
m). Placements (profile, start slice) are numbered in :attr:`AllocationCatalogue.placements`
order; physical allocations are ``(P,)`` int arrays with the task on each placement, ``IDLE``
for an instance that exists but serves no task and ``ABSENT`` for a placement not in the layout.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cache

import numpy as np

from edgegym.hardware.mig import (
    MIG_TOTAL_GPCS,
    MIGInstance,
    MIGLayout,
    MIGProfile,
    get_mig_profiles,
    valid_layouts,
)

__all__ = [
    "ABSENT",
    "IDLE",
    "KEY_LIMIT",
    "MAX_SHARE_SIGNATURES",
    "MAX_SHARE_UNITS",
    "AllocationCatalogue",
    "ShareCatalogue",
    "catalogue",
    "mask_radix",
    "share_catalogue",
    "share_count_problem",
    "share_counts",
]

IDLE = -1
ABSENT = -2


@dataclass(frozen=True, eq=False)
class AllocationCatalogue:
    """Every allocation signature of one GPU for M tenants, with the tables to realise them.

    Attributes:
        gpu: GPU catalogue name.
        n_tenants: M.
        sizes: (Z,) distinct instance sizes in GPCs, ascending.
        signatures: N signatures; each a tuple over the 2M tasks of instance sizes, descending.
        counts: (N, 2M, Z) instances of each size per task.
        gpcs: (N, 2M) GPCs per task.
        n_instances: (N, 2M) instances per task.
        placements: (P,) every (profile, start) of the GPU.
        placement_size: (P,) GPCs of each placement.
        layouts: (L,) every valid non-empty layout.
        layout_place: (L, P) bool, layout contains placement.
        hosts: (N, L) bool, layout can host the signature (enough instances of every size).
        units: What the GPU is divided into: its 7 GPCs (sizes, ``gpcs`` and
            ``placement_size`` count them).
    """

    gpu: str
    n_tenants: int
    sizes: tuple[int, ...]
    signatures: tuple[tuple[tuple[int, ...], ...], ...]
    counts: np.ndarray
    gpcs: np.ndarray
    n_instances: np.ndarray
    placements: tuple[MIGInstance, ...]
    placement_size: np.ndarray
    layouts: tuple[MIGLayout, ...]
    layout_place: np.ndarray
    hosts: np.ndarray
    units: int = MIG_TOTAL_GPCS

    def __len__(self) -> int:
        return len(self.signatures)

    @property
    def n_tasks(self) -> int:
        """2M."""
        return 2 * self.n_tenants

    def index(self, signature: tuple[tuple[int, ...], ...]) -> int:
        """Index of a signature (tuples of sizes per task, any order within a task)."""
        key = tuple(tuple(sorted(t, reverse=True)) for t in signature)
        try:
            return self._index[key]
        except KeyError:
            raise KeyError(f"{signature} is not a valid allocation on {self.gpu}") from None

    @property
    def _index(self) -> dict[tuple[tuple[int, ...], ...], int]:
        return _signature_index(self)

    def describe(self, n: int) -> str:
        """Human-readable signature, e.g. ``"I0=4+1 I1=2 R0=- R1=-"``."""
        m = self.n_tenants
        parts = []
        for t, sizes in enumerate(self.signatures[n]):
            name = f"I{t}" if t < m else f"R{t - m}"
            parts.append(f"{name}={'+'.join(map(str, sizes)) or '-'}")
        return " ".join(parts)

    def feasible(self, keep: list[tuple[int, int]]) -> np.ndarray:
        """(N,) signatures that can keep every ``(placement, task)`` in ``keep`` in place.

        A signature qualifies when it gives each kept task exactly one instance of the kept
        placement's size (retraining is never resized) and some layout hosting it contains every
        kept placement.
        """
        ok = np.ones(len(self), dtype=bool)
        layouts = np.ones(len(self.layouts), dtype=bool)
        for p, task in keep:
            z = self.sizes.index(int(self.placement_size[p]))
            ok &= (self.n_instances[:, task] == 1) & (self.counts[:, task, z] == 1)
            layouts &= self.layout_place[:, p]
        return ok & np.any(self.hosts & layouts[None, :], axis=1)

    def realise(
        self, n: int, prev: np.ndarray, keep: list[tuple[int, int]] | None = None
    ) -> tuple[int, np.ndarray]:
        """Physical allocation of signature ``n`` that changes the fewest instances.

        Args:
            n: Signature index.
            prev: (P,) current task per placement (``IDLE``, ``ABSENT`` or a task).
            keep: ``(placement, task)`` pairs that must stay (running retraining jobs).

        Returns:
            ``(layout index, (P,) task per placement)``.

        Raises:
            ValueError: If no layout hosts the signature with the kept placements.
        """
        need = self.counts[n]  # (2M, Z)
        cand = self.hosts[n].copy()
        for p, _ in keep or ():
            cand &= self.layout_place[:, p]
        if not cand.any():
            raise ValueError(f"no layout hosts {self.describe(n)} keeping {keep}")
        onehot = np.zeros((len(self.placements), self.n_tasks))  # (P, 2M)
        has = prev >= 0
        onehot[np.flatnonzero(has), prev[has]] = 1.0
        by_size = self._size_onehot  # (P, Z)
        idx = np.flatnonzero(cand)
        lp = self.layout_place[idx].astype(float)  # (L', P)
        pair = (onehot[:, :, None] * by_size[:, None, :]).reshape(len(prev), -1)  # (P, 2M*Z)
        kept = (lp @ pair).reshape(len(idx), *need.shape)  # (L', 2M, Z)
        score = np.minimum(kept, need[None]).sum(axis=(1, 2))
        survive = lp @ (prev != ABSENT).astype(float)
        total = np.full(len(self.layouts), -1.0)
        total[idx] = score * 100.0 + survive
        lay = int(np.argmax(total))
        return lay, self._assign(lay, need, prev)

    def realise_batch(
        self, n: np.ndarray, prev: np.ndarray, keep: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`realise` of B signatures at once, in numpy, with the same results and ties.

        Row ``b`` equals ``realise(n[b], prev[b], [(p, prev[b, p]) for p in keep[b]])``. Only
        the layouts that host each signature are scored (a few per signature), as (env,
        layout) pairs. A layout's score is ``100 * kept pairs + surviving instances``, less
        1000 for each kept placement it lacks; the kept pairs of a (task, size) class are
        ``min(kept, need)``, which is one per placement where the current allocation holds no
        more instances of the class than the signature needs, and is counted apart for the
        few classes that hold more. Each count is the popcount of a set of placements (an
        int64 bitmask) intersected with the layout's; scores are integers, so the first best
        layout is exact.

        Args:
            n: (B,) signature indices.
            prev: (B, P) current task per placement (``IDLE``, ``ABSENT`` or a task).
            keep: (B, P) bool, placements whose instance must stay (running retraining jobs).

        Returns:
            ``((B,) layout indices, (B, P) task per placement)``.

        Raises:
            ValueError: If no layout hosts a signature with its kept placements.
        """
        tab = _batch_tables(self)
        n = np.asarray(n, dtype=np.int64)
        n_env = len(n)
        rows = np.arange(n_env)
        n_class = self.n_tasks * len(self.sizes)
        need = self.counts[n].reshape(n_env, n_class)  # (B, C) by (task, size) class
        held = prev >= 0
        cls = np.where(held, prev * len(self.sizes) + tab.size_index, 0)  # (B, P)
        slot = rows[:, None] * n_class + cls  # (B, P) index of each placement's class
        have = _class_counts(slot, held, need.shape)
        over = (need > 0) & (have > need)  # (B, C) classes held beyond the need
        linear = held & (have.ravel()[slot] <= need.ravel()[slot])
        # Pairs (env, hosting layout), layouts ascending within an env.
        width = tab.host_count[n]
        ends = np.cumsum(width)
        starts = ends - width
        n_pair = int(ends[-1]) if n_env else 0
        pair_env = np.repeat(rows, width)
        pair_lay = tab.host_layout[np.arange(n_pair) + np.repeat(tab.host_start[n] - starts, width)]
        # Sets of placements as bitmasks: a pair counts a set's placements in its layout by
        # the popcount of their intersection.
        bit = tab.place_bit
        lay_bits = tab.layout_bits[pair_lay]  # (Q,)
        score = _SCORE * _popcount((linear @ bit)[pair_env] & lay_bits)
        score += _popcount(((prev != ABSENT) @ bit)[pair_env] & lay_bits)
        score -= _LACK * _popcount((keep @ bit)[pair_env] & ~lay_bits)  # kept ones it lacks
        over_b, over_c = np.nonzero(over)
        if over_b.size:
            # min(kept, need) of each over class: the class's placements as one bitmask, an
            # env's over classes one below another (row j: each env's j-th over class).
            members = (held[over_b] & (cls[over_b] == over_c[:, None])) @ bit
            col = np.arange(over_b.size) - np.searchsorted(over_b, over_b)
            sets = np.zeros((int(col.max()) + 1, n_env), dtype=np.int64)
            cap = np.zeros_like(sets)
            sets[col, over_b] = members
            cap[col, over_b] = need[over_b, over_c]
            for j in range(sets.shape[0]):
                kept = _popcount(sets[j].take(pair_env) & lay_bits)
                score += _SCORE * np.minimum(kept, cap[j].take(pair_env))
        if n_env and width.min() > 0:
            best = np.maximum.reduceat(score, starts)
            stuck = np.flatnonzero(best < 0)
        else:
            best = np.zeros(n_env, dtype=np.int64)
            stuck = np.flatnonzero(width == 0)
        if stuck.size:
            b = int(stuck[0])
            pairs = [(int(p), int(prev[b, p])) for p in np.flatnonzero(keep[b])]
            raise ValueError(f"no layout hosts {self.describe(int(n[b]))} keeping {pairs}")
        first = np.where(score == best[pair_env], np.arange(n_pair), n_pair)
        lay = pair_lay[np.minimum.reduceat(first, starts)] if n_env else pair_lay[:0]
        return lay, self._assign_batch(lay, need, prev, cls, slot)

    def _assign_batch(
        self, lay: np.ndarray, need: np.ndarray, prev: np.ndarray, cls: np.ndarray, slot: np.ndarray
    ) -> np.ndarray:
        """:meth:`_assign` of B envs: (B, P) task per placement of layouts ``lay`` (B,) for
        needs ``need`` (B, C) by (task, size) class, from ``prev`` (B, P) whose placements
        are of classes ``cls`` (B, P), at ``slot`` (B, P) in ``need`` flattened."""
        tab = _batch_tables(self)
        inlay = self.layout_place[lay]  # (B, P)
        # First pass: the first need[c] placements of class c in the layout keep their task.
        keep = inlay & (prev >= 0)
        have = _class_counts(slot, keep, need.shape)
        over_b, over_c = np.nonzero(have > need)
        if over_b.size:
            members = keep[over_b] & (cls[over_b] == over_c[:, None])  # (K, P)
            drop = members & (np.cumsum(members, axis=1) > need[over_b, over_c][:, None])
            kb, kp = np.nonzero(drop)
            keep[over_b[kb], kp] = False
        left = (need - np.minimum(have, need)).reshape(len(lay), self.n_tasks, len(self.sizes))
        # Second pass: the k-th free placement of a size (placements of a size are
        # contiguous) gets the task that the k-th unit of the size's remaining need is of:
        # the number of tasks whose units, counted in task order, end at or before k.
        free = inlay & ~keep
        seen = np.zeros((len(lay), len(self.placements) + 1), dtype=np.int64)
        np.cumsum(free, axis=1, out=seen[:, 1:])
        rank = seen[:, 1:] - np.take(seen, tab.size_first[tab.size_index], axis=1) - 1  # (B, P)
        upto = np.zeros(left.shape[::2], dtype=left.dtype)  # (B, Z) units of tasks so far
        task = np.zeros(rank.shape, dtype=np.int64)
        for t in range(self.n_tasks):
            upto += left[:, t]
            task += np.take(upto, tab.size_index, axis=1) <= rank
        room = seen[:, tab.size_first + tab.size_count] - seen[:, tab.size_first]  # (B, Z)
        assert (room >= upto).all(), "layout cannot host the signature"
        filled = np.where(task < self.n_tasks, task, IDLE)
        return np.where(keep, prev, np.where(free, filled, ABSENT)).astype(np.int64)

    @property
    def _size_onehot(self) -> np.ndarray:
        return _size_onehot(self)

    def _assign(self, lay: int, need: np.ndarray, prev: np.ndarray) -> np.ndarray:
        out = np.full(len(self.placements), ABSENT, dtype=np.int64)
        places = np.flatnonzero(self.layout_place[lay])
        out[places] = IDLE
        left = need.copy()
        zi = {s: i for i, s in enumerate(self.sizes)}
        for p in places:  # keep (placement, task) pairs first
            t, z = int(prev[p]), zi[int(self.placement_size[p])]
            if t >= 0 and left[t, z] > 0:
                out[p] = t
                left[t, z] -= 1
        for p in places:  # then fill the rest in placement order, tasks in index order
            if out[p] != IDLE:
                continue
            z = zi[int(self.placement_size[p])]
            tasks = np.flatnonzero(left[:, z] > 0)
            if tasks.size:
                out[p] = int(tasks[0])
                left[tasks[0], z] -= 1
        assert not left.any(), "layout cannot host the signature"
        return out


@cache
def _signature_index(cat: AllocationCatalogue) -> dict[tuple[tuple[int, ...], ...], int]:
    return {s: i for i, s in enumerate(cat.signatures)}


@cache
def _size_onehot(cat: AllocationCatalogue) -> np.ndarray:
    out = np.zeros((len(cat.placements), len(cat.sizes)))
    for p, s in enumerate(cat.placement_size):
        out[p, cat.sizes.index(int(s))] = 1.0
    return out


#: Weight of a kept (placement, task) pair against a surviving instance in a layout's score.
_SCORE = 100

#: What a layout lacking a placement that must stay loses (more than any layout can score).
_LACK = 1000


_BITWISE_COUNT = getattr(np, "bitwise_count", None)  # numpy >= 2.0
_POP16 = np.array([bin(i).count("1") for i in range(1 << 16)], dtype=np.int64)


def _popcount(x: np.ndarray) -> np.ndarray:
    """Set bits of each element of a non-negative int64 array (int64 counts)."""
    if _BITWISE_COUNT is not None:
        return _BITWISE_COUNT(x).astype(np.int64)
    out = np.zeros(x.shape, dtype=np.int64)
    for shift in range(0, 64, 16):
        out += _POP16[(x >> shift) & 0xFFFF]
    return out


def _class_counts(slot: np.ndarray, where: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """(B, C) placements of each class among those ``where`` (B, P), the class of a placement
    being at ``slot`` (B, P) of the (B, C) result flattened."""
    return np.bincount(slot[where], minlength=shape[0] * shape[1]).reshape(shape)


@dataclass(frozen=True)
class _BatchTables:
    """Constant tables of :meth:`AllocationCatalogue.realise_batch`."""

    size_index: np.ndarray  # (P,) size index of each placement
    size_first: np.ndarray  # (Z,) first placement of each size
    size_count: np.ndarray  # (Z,) placements of each size
    host_count: np.ndarray  # (N,) layouts hosting each signature
    host_start: np.ndarray  # (N,) where each signature's layouts start in host_layout
    host_layout: np.ndarray  # the layouts hosting each signature, ascending, one after another
    place_bit: np.ndarray  # (P,) int64 the bit of each placement in a set of placements
    layout_bits: np.ndarray  # (L,) int64 the placements of each layout as a set


@cache
def _batch_tables(cat: AllocationCatalogue) -> _BatchTables:
    size_index = np.array([cat.sizes.index(int(s)) for s in cat.placement_size])
    if np.any(np.diff(size_index) < 0):
        raise ValueError(f"{cat.gpu}: placements are not ordered by size")
    host_sig, host_layout = np.nonzero(cat.hosts)
    host_count = np.bincount(host_sig, minlength=len(cat)).astype(np.int64)
    if len(cat.placements) > 62:
        raise ValueError(f"{cat.gpu}: too many MIG placements for int64 sets")
    bit = np.int64(1) << np.arange(len(cat.placements), dtype=np.int64)
    return _BatchTables(
        size_index=size_index,
        size_first=np.searchsorted(size_index, np.arange(len(cat.sizes))),
        size_count=np.bincount(size_index, minlength=len(cat.sizes)),
        host_count=host_count,
        host_start=np.cumsum(host_count) - host_count,
        host_layout=host_layout.astype(np.int64),
        place_bit=bit,
        layout_bits=cat.layout_place @ bit,
    )


@cache
def catalogue(gpu: str, n_tenants: int) -> AllocationCatalogue:
    """The allocation catalogue of a MIG GPU for ``n_tenants`` tenants (cached).

    Args:
        gpu: A MIG-capable GPU (``A100-40GB``, ``H100-80GB``).
        n_tenants: M in [1, 4].

    Returns:
        The catalogue; signatures sorted by (inference sizes, retraining sizes).
    """
    if not 1 <= n_tenants <= 4:
        raise ValueError(f"n_tenants must be in [1, 4], got {n_tenants}")
    profiles = sorted(get_mig_profiles(gpu).values(), key=lambda p: p.gpcs)
    sizes = tuple(sorted({p.gpcs for p in profiles}))
    placements = tuple((p, s) for p in profiles for s in p.starts)
    layouts = valid_layouts(gpu)
    pidx = {pl: i for i, pl in enumerate(placements)}
    layout_place = np.zeros((len(layouts), len(placements)), dtype=bool)
    layout_counts = np.zeros((len(layouts), len(sizes)), dtype=np.int64)
    for li, lay in enumerate(layouts):
        for inst in lay.instances:
            layout_place[li, pidx[inst]] = True
            layout_counts[li, sizes.index(inst[0].gpcs)] += 1
    # Every count vector some layout can host (downward closure of the layouts' counts).
    hostable: set[tuple[int, ...]] = set()
    for c in {tuple(r) for r in layout_counts}:
        for sub in np.ndindex(*(x + 1 for x in c)):
            hostable.add(tuple(sub))
    z = len(sizes)
    vectors = sorted(v for v in hostable if any(v))
    units = [tuple(int(i == j) for i in range(z)) for j in range(z)]
    m = n_tenants
    found: list[tuple[tuple[int, ...], ...]] = []

    def walk(task: int, total: tuple[int, ...], acc: list[tuple[int, ...]]) -> None:
        if task == 2 * m:
            found.append(tuple(acc))
            return
        options = vectors if task < m else [(0,) * z, *units]
        for v in options:
            t = tuple(a + b for a, b in zip(total, v, strict=True))
            if t in hostable:
                acc.append(v)
                walk(task + 1, t, acc)
                acc.pop()

    walk(0, (0,) * z, [])
    counts = np.array(found, dtype=np.int64).reshape(len(found), 2 * m, z)
    sigs = tuple(
        tuple(tuple(s for s in reversed(sizes) for _ in range(row[sizes.index(s)])) for row in c)
        for c in counts
    )
    order = sorted(range(len(sigs)), key=lambda i: sigs[i])
    counts = counts[order]
    sigs = tuple(sigs[i] for i in order)
    size_arr = np.array(sizes)
    totals = counts.sum(axis=1)  # (N, Z)
    hosts = np.all(layout_counts[None, :, :] >= totals[:, None, :], axis=2)
    return AllocationCatalogue(
        gpu=gpu,
        n_tenants=m,
        sizes=sizes,
        signatures=sigs,
        counts=counts,
        gpcs=(counts * size_arr).sum(axis=2),
        n_instances=counts.sum(axis=2),
        placements=placements,
        placement_size=np.array([p.gpcs for p, _ in placements]),
        layouts=layouts,
        layout_place=layout_place,
        hosts=hosts,
    )


#: Most signatures a share catalogue may have: the mask, Ekya's and Astraea's rules scan them
#: all at every decision (two tenants in fourteenths: 1,820; three: 12,376).
MAX_SHARE_SIGNATURES = 20_000

#: Most MPS shares a GPU may be divided into (scenario ``mps.shares``).
MAX_SHARE_UNITS = 28

#: Bound of the environment's int64 keys: a mask key (:func:`mask_radix` to the power M) and
#: a MIG realisation key must stay below it.
KEY_LIMIT = 2**63


def mask_radix(n_placements: int, n_sizes: int) -> int:
    """Values of one tenant's part of an environment's mask key: where its running job is (one
    of ``n_placements``, or nowhere) times which of the ``n_sizes`` sizes and none it may take
    (:class:`edgegym.families.mig.params.MIGParams`)."""
    return (n_placements + 1) << (n_sizes + 1)


def share_count_problem(n_tenants: int, units: int) -> str | None:
    """Why ``n_tenants`` tenants cannot share a GPU divided into ``units`` MPS shares, or None
    if they can: the one check of the limit (:func:`share_catalogue` raises it, the MIG schema
    and the MPS baselines' paper setup read it) computed without building the catalogue.

    The count must be in [2, :data:`MAX_SHARE_UNITS`], leave every inference task a share, give
    at most :data:`MAX_SHARE_SIGNATURES` signatures (``C(units + M, 2M)``) and keep the
    environment's mask keys (:func:`mask_radix` of its ``2M * units`` placements and ``units``
    sizes, to the power M) below :data:`KEY_LIMIT`.
    """
    m = n_tenants
    if not 2 <= units <= MAX_SHARE_UNITS:
        return f"units must be in [2, {MAX_SHARE_UNITS}], got {units}"
    if not 1 <= m <= units:
        return f"n_tenants must be in [1, {units}] for {units} units, got {m}"
    # Inference holds one unit at least: 2M tasks share units - M spare units (a stars and
    # bars count).
    n_sig = math.comb(units - m + 2 * m, 2 * m)
    if n_sig > MAX_SHARE_SIGNATURES:
        return (
            f"{m} tenants on {units} MPS units give {n_sig:,} signatures, more than "
            f"{MAX_SHARE_SIGNATURES:,}: use fewer units"
        )
    if mask_radix(2 * m * units, units) ** m >= KEY_LIMIT:
        return f"{m} tenants on {units} MPS shares: too many placements to key allocations"
    return None


@cache
def share_counts(n_tenants: int) -> tuple[int, ...]:
    """The MPS share counts ``n_tenants`` tenants can run on, ascending (one contiguous run:
    2-28 for one tenant, 2-23 for two, 3-13 for three, 4-8 for four;
    :func:`share_count_problem`)."""
    return tuple(
        u for u in range(2, MAX_SHARE_UNITS + 1) if share_count_problem(n_tenants, u) is None
    )


@dataclass(frozen=True, eq=False)
class ShareCatalogue(AllocationCatalogue):
    """MPS shares in place of MIG instances (:func:`share_catalogue`).

    The GPU is divided into ``units`` equal shares of its SMs; each task holds at most one
    share of one or more units (each inference task one, a retraining job none or one), the
    shares summing to ``units`` or less. A placement is a (share size, task) pair, so every
    signature has exactly one physical allocation (``alloc``): realising it needs no layout,
    and a task is reconfigured exactly when its share changes. Memory is not partitioned, so
    placements cover no memory slices and there are no layouts (``layouts`` is empty).

    Attributes:
        alloc: (N, P) task per placement of each signature (``ABSENT`` elsewhere).
    """

    alloc: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.int64))

    def feasible(self, keep: list[tuple[int, int]]) -> np.ndarray:
        """(N,) signatures that keep every ``(placement, task)`` in ``keep``: the task holds a
        share of the placement's size (and the placement is the task's)."""
        ok = np.ones(len(self), dtype=bool)
        for p, task in keep:
            ok &= self.alloc[:, p] == task
        return ok

    def realise(
        self, n: int, prev: np.ndarray, keep: list[tuple[int, int]] | None = None
    ) -> tuple[int, np.ndarray]:
        """``(n, (P,) task per placement)``: a signature's only allocation.

        Raises:
            ValueError: If the signature moves a placement in ``keep``.
        """
        out = self.alloc[n]
        for p, task in keep or ():
            if out[p] != task:
                raise ValueError(f"{self.describe(n)} does not keep task {task}'s share")
        return n, out.copy()

    def realise_batch(
        self, n: np.ndarray, prev: np.ndarray, keep: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`realise` of B signatures: ``((B,) n, (B, P) allocations)``.

        Raises:
            ValueError: If a signature moves a placement in ``keep`` (B, P).
        """
        n = np.asarray(n, dtype=np.int64)
        out = self.alloc[n]
        moved = keep & (out != prev)
        if moved.any():
            b = int(np.flatnonzero(moved.any(axis=1))[0])
            raise ValueError(f"{self.describe(int(n[b]))} does not keep a running job's share")
        return n, out


@cache
def share_catalogue(gpu: str, n_tenants: int, units: int) -> ShareCatalogue:
    """The MPS share catalogue of a GPU divided into ``units`` shares (cached).

    Args:
        gpu: GPU catalogue name (the placements' profiles carry it).
        n_tenants: M >= 1.
        units: Shares the GPU is divided into, in [2, :data:`MAX_SHARE_UNITS`].

    Returns:
        The catalogue; signatures sorted as :func:`catalogue` sorts them.

    Raises:
        ValueError: On a count the tenants cannot run on (:func:`share_count_problem`: out of
            range, more than :data:`MAX_SHARE_SIGNATURES` signatures, or mask keys too wide).
    """
    m = n_tenants
    problem = share_count_problem(m, units)
    if problem:
        raise ValueError(problem)
    sizes = tuple(range(1, units + 1))
    n_tasks = 2 * m
    shares: list[tuple[int, ...]] = []

    def walk(left: int, acc: tuple[int, ...]) -> None:
        if len(acc) == n_tasks:
            shares.append(acc)
            return
        low = 1 if len(acc) < m else 0  # inference holds a unit at least
        reserve = max(0, m - len(acc) - 1)  # one unit for each inference task still to come
        for s in range(low, left - reserve + 1):
            walk(left - s, (*acc, s))

    walk(units, ())
    sigs_unsorted = [tuple((s,) if s else () for s in c) for c in shares]
    order = sorted(range(len(shares)), key=lambda i: sigs_unsorted[i])
    share = np.array([shares[i] for i in order], dtype=np.int64).reshape(-1, n_tasks)  # (N, 2M)
    sigs = tuple(sigs_unsorted[i] for i in order)
    counts = np.zeros((len(sigs), n_tasks, units), dtype=np.int64)
    rows, tasks = np.nonzero(share)
    counts[rows, tasks, share[rows, tasks] - 1] = 1
    profiles = [
        MIGProfile(gpu, f"mps.{s}/{units}", s, 0.0, 0, 0, tuple(range(n_tasks))) for s in sizes
    ]
    placements = tuple((prof, t) for prof in profiles for t in range(n_tasks))  # by size, task
    alloc = np.full((len(sigs), len(placements)), ABSENT, dtype=np.int64)
    alloc[rows, (share[rows, tasks] - 1) * n_tasks + tasks] = tasks
    for arr in (counts, share, alloc):
        arr.setflags(write=False)
    return ShareCatalogue(
        gpu=gpu,
        n_tenants=m,
        sizes=sizes,
        signatures=sigs,
        counts=counts,
        gpcs=share,
        n_instances=(share > 0).astype(np.int64),
        placements=placements,
        placement_size=np.array([p.gpcs for p, _ in placements]),
        layouts=(),
        layout_place=np.zeros((0, len(placements)), dtype=bool),
        hosts=np.zeros((len(sigs), 0), dtype=bool),
        units=units,
        alloc=alloc,
    )

"""MIG profiles, their placements, and the valid layouts derived from them.

Where the numbers come from: NVIDIA's MIG user guide ("Supported MIG Profiles", A100 40 GB and
H100 80 GB tables, the ``nvidia-smi mig -lgipp`` placement lists). A GPU has 7 GPCs for MIG and
8 memory slices; a profile ``Ng.Mgb`` uses N GPCs and occupies a run of memory slices starting
at one of its allowed start slices:

=============  ====  =======  ======  ================
A100-40GB      GPCs  slices   SMs     starts
=============  ====  =======  ======  ================
1g.5gb         1     1        14      0, 1, ..., 6
2g.10gb        2     2        28      0, 2, 4
3g.20gb        3     4        42      0, 4
4g.20gb        4     4        56      0
7g.40gb        7     8        98      0
=============  ====  =======  ======  ================

H100-80GB has the same geometry with 1g.10gb / 2g.20gb / 3g.40gb / 4g.40gb / 7g.80gb and 16 / 32
/ 60 / 64 / 132 SMs, and H200-141GB (same GH100 die; NVIDIA's MIG user guide, H200 table) with
1g.18gb / 2g.35gb / 3g.71gb / 4g.71gb / 7g.141gb. Memory sizes are the nominal ones in the
profile names (the usable amount is slightly lower, e.g. 4.75 GB for 1g.5gb). The 1g.10gb
(A100) and 1g.20gb (H100) double-memory 1-GPC variants and the ``+me`` media-extension
profiles are left out.

Slice 7 can only be covered by a 3g instance at start 4 or by 7g: a 3g instance takes 4 memory
slices but only 3 GPCs, which is why e.g. 3g@0 + 3g@4 leaves one GPC idle. Layouts are not
listed by hand; :func:`valid_layouts` enumerates every set of non-overlapping placements whose
GPCs sum to at most 7. On both GPUs that gives 19 maximal layouts (no instance can be added),
14 distinct multisets of instance sizes (MIGRator's Figure 1 works with 12 configurations).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "MIG_MEMORY_SLICES",
    "MIG_PROFILES",
    "MIG_TOTAL_GPCS",
    "MIGInstance",
    "MIGLayout",
    "MIGProfile",
    "changed_instances",
    "get_mig_profiles",
    "is_maximal",
    "layout_sizes",
    "layouts_gpc_array",
    "layouts_slice_array",
    "make_layout",
    "valid_layouts",
]

MIG_TOTAL_GPCS = 7
MIG_MEMORY_SLICES = 8


@dataclass(frozen=True, repr=False)
class MIGProfile:
    """A GPU-instance profile.

    Attributes:
        gpu: Catalogue name of the GPU, e.g. ``"A100-40GB"``.
        name: Profile name, e.g. ``"3g.20gb"``.
        gpcs: Compute size in GPCs (of 7).
        memory_gb: Nominal memory in GB.
        mem_slices: Memory slices occupied (of 8).
        sms: Streaming multiprocessors in the instance.
        starts: Allowed start memory slices, ascending.
    """

    gpu: str
    name: str
    gpcs: int
    memory_gb: float
    mem_slices: int
    sms: int
    starts: tuple[int, ...]

    @property
    def placements(self) -> tuple[tuple[int, int], ...]:
        """Valid placements as ``(start, size)`` in memory slices."""
        return tuple((s, self.mem_slices) for s in self.starts)

    def __repr__(self) -> str:
        return f"MIGProfile({self.gpu}:{self.name})"


MIGInstance = tuple[MIGProfile, int]
"""An instance: (profile, start memory slice)."""


def _profiles(gpu: str, rows: Sequence[tuple[str, int, float, int, int, tuple[int, ...]]]):
    return {r[0]: MIGProfile(gpu, *r) for r in rows}


MIG_PROFILES: dict[str, dict[str, MIGProfile]] = {
    "A100-40GB": _profiles(
        "A100-40GB",
        [
            ("1g.5gb", 1, 5.0, 1, 14, (0, 1, 2, 3, 4, 5, 6)),
            ("2g.10gb", 2, 10.0, 2, 28, (0, 2, 4)),
            ("3g.20gb", 3, 20.0, 4, 42, (0, 4)),
            ("4g.20gb", 4, 20.0, 4, 56, (0,)),
            ("7g.40gb", 7, 40.0, 8, 98, (0,)),
        ],
    ),
    "H100-80GB": _profiles(
        "H100-80GB",
        [
            ("1g.10gb", 1, 10.0, 1, 16, (0, 1, 2, 3, 4, 5, 6)),
            ("2g.20gb", 2, 20.0, 2, 32, (0, 2, 4)),
            ("3g.40gb", 3, 40.0, 4, 60, (0, 4)),
            ("4g.40gb", 4, 40.0, 4, 64, (0,)),
            ("7g.80gb", 7, 80.0, 8, 132, (0,)),
        ],
    ),
    "H200-141GB": _profiles(
        "H200-141GB",
        [
            ("1g.18gb", 1, 18.0, 1, 16, (0, 1, 2, 3, 4, 5, 6)),
            ("2g.35gb", 2, 35.0, 2, 32, (0, 2, 4)),
            ("3g.71gb", 3, 71.0, 4, 60, (0, 4)),
            ("4g.71gb", 4, 71.0, 4, 64, (0,)),
            ("7g.141gb", 7, 141.0, 8, 132, (0,)),
        ],
    ),
}


def get_mig_profiles(gpu_name: str) -> dict[str, MIGProfile]:
    """MIG profiles of a GPU, keyed by profile name.

    Raises:
        KeyError: If the GPU has no MIG profiles here; the message lists those that do.
    """
    try:
        return MIG_PROFILES[gpu_name]
    except KeyError:
        valid = ", ".join(sorted(MIG_PROFILES))
        raise KeyError(f"no MIG profiles for {gpu_name!r}; MIG GPUs: {valid}") from None


@dataclass(frozen=True)
class MIGLayout:
    """A set of MIG instances on one GPU, always valid.

    Construction sorts the instances by start slice and checks that every start is an allowed
    placement, instances do not overlap in memory slices, all belong to one GPU and their GPCs
    sum to at most 7.

    Attributes:
        instances: ``(profile, start)`` pairs sorted by start.
    """

    instances: tuple[MIGInstance, ...]

    def __post_init__(self) -> None:
        inst = tuple(sorted(self.instances, key=lambda ps: (ps[1], ps[0].name)))
        object.__setattr__(self, "instances", inst)
        if len({p.gpu for p, _ in inst}) > 1:
            raise ValueError(f"instances from several GPUs: {self}")
        used = np.zeros(MIG_MEMORY_SLICES, dtype=np.int64)  # (8,)
        for p, s in inst:
            if s not in p.starts:
                raise ValueError(f"{p.name} cannot start at slice {s}; allowed {p.starts}")
            used[s : s + p.mem_slices] += 1
        if np.any(used > 1):
            raise ValueError(f"instances overlap in memory slices: {self}")
        if self.gpcs > MIG_TOTAL_GPCS:
            raise ValueError(f"{self} uses {self.gpcs} GPCs > {MIG_TOTAL_GPCS}")

    @property
    def gpu(self) -> str | None:
        """GPU name, or None for the empty layout."""
        return self.instances[0][0].gpu if self.instances else None

    @property
    def gpcs(self) -> int:
        """Total GPCs in use."""
        return sum(p.gpcs for p, _ in self.instances)

    @property
    def names(self) -> tuple[str, ...]:
        """Profile names in start order."""
        return tuple(p.name for p, _ in self.instances)

    def slice_map(self) -> NDArray[np.int64]:
        """Memory slice -> instance index (-1 where free), shape (8,)."""
        out = np.full(MIG_MEMORY_SLICES, -1, dtype=np.int64)
        for i, (p, s) in enumerate(self.instances):
            out[s : s + p.mem_slices] = i
        return out

    def __str__(self) -> str:
        return " + ".join(f"{p.name}@{s}" for p, s in self.instances) or "<empty>"


def make_layout(gpu_name: str, instances: Iterable[tuple[str, int]]) -> MIGLayout:
    """Build a layout from profile names, e.g. ``[("4g.20gb", 0), ("3g.20gb", 4)]``.

    Raises:
        KeyError: On an unknown GPU or profile name.
        ValueError: If the layout is invalid.
    """
    profiles = get_mig_profiles(gpu_name)
    out = []
    for name, start in instances:
        if name not in profiles:
            raise KeyError(f"unknown profile {name!r} on {gpu_name}; valid: {sorted(profiles)}")
        out.append((profiles[name], int(start)))
    return MIGLayout(tuple(out))


def _can_add(layout: MIGLayout, free: NDArray[np.bool_], profile: MIGProfile, start: int) -> bool:
    return bool(
        layout.gpcs + profile.gpcs <= MIG_TOTAL_GPCS
        and start + profile.mem_slices <= MIG_MEMORY_SLICES
        and free[start : start + profile.mem_slices].all()
    )


def is_maximal(layout: MIGLayout, gpu_name: str) -> bool:
    """True when no further instance of any profile of ``gpu_name`` fits into ``layout``."""
    free = layout.slice_map() < 0
    return not any(
        _can_add(layout, free, p, s) for p in get_mig_profiles(gpu_name).values() for s in p.starts
    )


@cache
def valid_layouts(
    gpu_name: str, maximal_only: bool = False, include_empty: bool = False
) -> tuple[MIGLayout, ...]:
    """All valid layouts of a MIG GPU, derived from the profile placements.

    Walks the memory slices left to right; at each still-undecided slice either leaves it free
    or starts an instance of a profile allowed to start there (if it fits in the remaining
    slices and the GPC budget). Each layout is produced exactly once. Cached.

    Args:
        gpu_name: A key of :data:`MIG_PROFILES`.
        maximal_only: Keep only layouts to which no further instance can be added.
        include_empty: Include the layout with no instances (never maximal).

    Returns:
        Layouts ordered by number of instances, then by (start, -slices, -GPCs) of their
        instances.
    """
    by_start: dict[int, list[MIGProfile]] = {s: [] for s in range(MIG_MEMORY_SLICES)}
    for p in get_mig_profiles(gpu_name).values():
        for s in p.starts:
            by_start[s].append(p)

    found: list[tuple[MIGInstance, ...]] = []

    def walk(pos: int, gpcs: int, acc: list[MIGInstance]) -> None:
        if pos >= MIG_MEMORY_SLICES:
            found.append(tuple(acc))
            return
        walk(pos + 1, gpcs, acc)  # slice `pos` stays free
        for p in by_start[pos]:
            if pos + p.mem_slices <= MIG_MEMORY_SLICES and gpcs + p.gpcs <= MIG_TOTAL_GPCS:
                acc.append((p, pos))
                walk(pos + p.mem_slices, gpcs + p.gpcs, acc)
                acc.pop()

    walk(0, 0, [])
    layouts = [MIGLayout(inst) for inst in found if inst or include_empty]
    if maximal_only:
        layouts = [lay for lay in layouts if is_maximal(lay, gpu_name)]
    layouts.sort(
        key=lambda lay: (
            len(lay.instances),
            [(s, -p.mem_slices, -p.gpcs) for p, s in lay.instances],
        )
    )
    return tuple(layouts)


def layout_sizes(layout: MIGLayout) -> tuple[int, ...]:
    """GPCs of each instance in start order, e.g. ``(4, 2, 1)``."""
    return tuple(p.gpcs for p, _ in layout.instances)


def layouts_slice_array(layouts: Sequence[MIGLayout]) -> NDArray[np.int64]:
    """Slice -> instance-index table for fast masking.

    Args:
        layouts: The layouts, e.g. from :func:`valid_layouts`.

    Returns:
        Array of shape (n_layouts, 8): entry ``[k, j]`` is the index (in start order) of the
        instance of layout ``k`` occupying memory slice ``j``, or -1 when the slice is free.
    """
    out = np.full((len(layouts), MIG_MEMORY_SLICES), -1, dtype=np.int64)
    for k, lay in enumerate(layouts):
        out[k] = lay.slice_map()
    return out


def layouts_gpc_array(layouts: Sequence[MIGLayout]) -> NDArray[np.int64]:
    """Instance sizes padded with zeros.

    Args:
        layouts: The layouts.

    Returns:
        Array of shape (n_layouts, 7): entry ``[k, i]`` is the GPC count of instance ``i`` (start
        order) of layout ``k``, 0 past its last instance.
    """
    out = np.zeros((len(layouts), MIG_TOTAL_GPCS), dtype=np.int64)
    for k, lay in enumerate(layouts):
        sizes = layout_sizes(lay)
        out[k, : len(sizes)] = sizes
    return out


def changed_instances(
    old: MIGLayout, new: MIGLayout
) -> tuple[tuple[MIGInstance, ...], tuple[MIGInstance, ...]]:
    """Instances a reconfiguration from ``old`` to ``new`` must destroy and create.

    An instance survives only when the same profile sits at the same start in both layouts;
    everything else in ``old`` is destroyed and everything else in ``new`` is created.

    Args:
        old: Current layout.
        new: Target layout.

    Returns:
        ``(destroyed, created)``, each sorted by start slice.
    """
    old_set, new_set = set(old.instances), set(new.instances)
    destroyed = tuple(i for i in old.instances if i not in new_set)
    created = tuple(i for i in new.instances if i not in old_set)
    return destroyed, created

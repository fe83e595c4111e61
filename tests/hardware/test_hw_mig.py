"""Tests for MIG profiles and layouts, with a brute-force cross-check of the enumeration."""

import itertools

import numpy as np
import pytest

from edgegym.hardware import (
    MIG_PROFILES,
    MIGLayout,
    MIGProfile,
    changed_instances,
    get_gpu,
    get_mig_profiles,
    is_maximal,
    layout_sizes,
    layouts_gpc_array,
    layouts_slice_array,
    make_layout,
    valid_layouts,
)

MIG_GPUS = ["A100-40GB", "H100-80GB"]


def test_a100_profiles_match_nvidia_guide():
    got = {
        n: (p.gpcs, p.memory_gb, p.mem_slices, p.placements)
        for n, p in get_mig_profiles("A100-40GB").items()
    }
    assert got == {
        "1g.5gb": (1, 5.0, 1, tuple((s, 1) for s in range(7))),
        "2g.10gb": (2, 10.0, 2, ((0, 2), (2, 2), (4, 2))),
        "3g.20gb": (3, 20.0, 4, ((0, 4), (4, 4))),
        "4g.20gb": (4, 20.0, 4, ((0, 4),)),
        "7g.40gb": (7, 40.0, 8, ((0, 8),)),
    }
    assert list(get_mig_profiles("H100-80GB")) == [
        "1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb",
    ]  # fmt: skip


@pytest.mark.parametrize("gpu", MIG_GPUS)
def test_profiles_consistent_with_gpu_spec(gpu):
    spec = get_gpu(gpu)
    profiles = get_mig_profiles(gpu)
    full = max(profiles.values(), key=lambda p: p.gpcs)
    assert full.gpcs == spec.mig_gpcs == 7 and full.memory_gb == spec.memory_gb
    assert all(p.sms <= spec.sms for p in profiles.values())


@pytest.mark.parametrize("gpu", MIG_GPUS)
def test_nineteen_maximal_layouts(gpu):
    maximal = valid_layouts(gpu, maximal_only=True)
    assert len(maximal) == 19
    assert len(set(maximal)) == 19
    assert len({tuple(sorted(layout_sizes(lay))) for lay in maximal}) == 14
    assert layout_sizes(maximal[0]) == (7,)


def test_known_a100_layouts():
    maximal = set(valid_layouts("A100-40GB", maximal_only=True))
    for spec in [
        [("1g.5gb", s) for s in range(7)],
        [("4g.20gb", 0), ("2g.10gb", 4), ("1g.5gb", 6)],
        [("3g.20gb", 0), ("3g.20gb", 4)],
        [("4g.20gb", 0), ("3g.20gb", 4)],
        [("2g.10gb", 0), ("2g.10gb", 2), ("3g.20gb", 4)],
        [("7g.40gb", 0)],
    ]:
        assert make_layout("A100-40GB", spec) in maximal
    partial = make_layout("A100-40GB", [("3g.20gb", 0), ("2g.10gb", 4)])
    assert partial in valid_layouts("A100-40GB") and partial not in maximal
    assert not is_maximal(partial, "A100-40GB")
    assert make_layout("A100-40GB", [("3g.20gb", 0), ("3g.20gb", 4)]).gpcs == 6


def test_invalid_layouts_rejected():
    with pytest.raises(ValueError, match="overlap"):
        make_layout("A100-40GB", [("4g.20gb", 0), ("2g.10gb", 2)])
    with pytest.raises(ValueError, match="start"):
        make_layout("A100-40GB", [("1g.5gb", 7)])
    with pytest.raises(ValueError, match="start"):
        make_layout("A100-40GB", [("2g.10gb", 1)])
    big = MIGProfile("A100-40GB", "fake.4g", 4, 20.0, 4, 56, (4,))
    a100 = get_mig_profiles("A100-40GB")
    with pytest.raises(ValueError, match="GPCs"):
        MIGLayout(((a100["4g.20gb"], 0), (big, 4)))
    with pytest.raises(KeyError):
        make_layout("A100-40GB", [("5g.30gb", 0)])
    with pytest.raises(KeyError, match="A100-40GB"):
        get_mig_profiles("V100-16GB")


def _brute_force(gpu):
    """Every subset of placements, checked pairwise; returns (all, maximal) as sets."""
    placements = [
        (p.name, s, p.gpcs, frozenset(range(s, s + p.mem_slices)))
        for p in MIG_PROFILES[gpu].values()
        for s in p.starts
    ]

    def ok(subset):
        slices = [x[3] for x in subset]
        disjoint = all(a.isdisjoint(b) for a, b in itertools.combinations(slices, 2))
        return disjoint and sum(x[2] for x in subset) <= 7

    valid = []
    for r in range(1, len(placements) + 1):
        for subset in itertools.combinations(placements, r):
            if ok(subset):
                valid.append(subset)
    key = lambda sub: frozenset((x[0], x[1]) for x in sub)  # noqa: E731
    maximal = {
        key(sub) for sub in valid if not any(p not in sub and ok((*sub, p)) for p in placements)
    }
    return {key(sub) for sub in valid}, maximal


@pytest.mark.parametrize("gpu", MIG_GPUS)
def test_enumeration_matches_brute_force(gpu):
    every, maximal = _brute_force(gpu)
    key = lambda lay: frozenset((p.name, s) for p, s in lay.instances)  # noqa: E731
    fast_all = [key(lay) for lay in valid_layouts(gpu)]
    assert len(fast_all) == len(set(fast_all))  # no duplicates
    assert set(fast_all) == every
    assert {key(lay) for lay in valid_layouts(gpu, maximal_only=True)} == maximal
    assert len(maximal) == 19


def test_valid_layouts_cached_and_empty_option():
    assert valid_layouts("A100-40GB") is valid_layouts("A100-40GB")
    with_empty = valid_layouts("A100-40GB", include_empty=True)
    assert len(with_empty) == len(valid_layouts("A100-40GB")) + 1
    assert with_empty[0].instances == () and str(with_empty[0]) == "<empty>"


def test_layout_arrays():
    layouts = valid_layouts("A100-40GB", maximal_only=True)
    slices = layouts_slice_array(layouts)
    gpcs = layouts_gpc_array(layouts)
    assert slices.shape == (19, 8) and gpcs.shape == (19, 7)
    for k, lay in enumerate(layouts):
        assert gpcs[k].sum() == lay.gpcs
        for i, (p, s) in enumerate(lay.instances):
            assert np.all(slices[k, s : s + p.mem_slices] == i)
            assert gpcs[k, i] == p.gpcs
        assert (slices[k] >= 0).sum() == sum(p.mem_slices for p, _ in lay.instances)
        # slice 7 is used only by 7g or a 3g at start 4
        uses_7 = any(s + p.mem_slices == 8 for p, s in lay.instances)
        assert (slices[k, 7] >= 0) == uses_7
    # every maximal layout except those with a 3g@0 uses all 7 GPCs
    three_at_0 = [lay.names[0] == "3g.20gb" and lay.instances[0][1] == 0 for lay in layouts]
    assert sum(three_at_0) == 3  # 3g@0 + {3g@4, 2g@4 + 1g@6, 3 x 1g}
    np.testing.assert_array_equal(gpcs.sum(axis=1) == 7, ~np.array(three_at_0))


def test_changed_instances():
    a = make_layout("A100-40GB", [("4g.20gb", 0), ("3g.20gb", 4)])
    b = make_layout("A100-40GB", [("4g.20gb", 0), ("2g.10gb", 4), ("1g.5gb", 6)])
    destroyed, created = changed_instances(a, b)
    assert [(p.name, s) for p, s in destroyed] == [("3g.20gb", 4)]
    assert [(p.name, s) for p, s in created] == [("2g.10gb", 4), ("1g.5gb", 6)]
    assert changed_instances(a, a) == ((), ())
    c = make_layout("A100-40GB", [("3g.20gb", 0), ("3g.20gb", 4)])
    destroyed, created = changed_instances(a, c)  # same start, different profile: rebuilt
    assert [(p.name, s) for p, s in destroyed] == [("4g.20gb", 0)]
    assert [(p.name, s) for p, s in created] == [("3g.20gb", 0)]


def test_layout_sorted_and_hashable():
    lay = make_layout("A100-40GB", [("3g.20gb", 4), ("1g.5gb", 1), ("1g.5gb", 0)])
    assert [s for _, s in lay.instances] == [0, 1, 4]
    same = make_layout("A100-40GB", [("1g.5gb", 0), ("1g.5gb", 1), ("3g.20gb", 4)])
    assert lay == same and hash(lay) == hash(same)
    assert str(lay) == "1g.5gb@0 + 1g.5gb@1 + 3g.20gb@4"

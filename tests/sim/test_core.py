"""The core contract's shared helpers: the weighted reward and batch put/take of states."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from edgegym.core.dynamics import Record, batch_put, batch_size, batch_take, weighted_reward


@dataclass
class Inner:
    x: np.ndarray  # (N, 2)


@dataclass
class State:
    k: np.ndarray  # (N,)
    rngs: list  # N generators
    inner: Inner
    units: int  # the same for every env


def _state(n: int, start: int) -> State:
    return State(
        k=np.arange(start, start + n),
        rngs=[np.random.default_rng(start + i) for i in range(n)],
        inner=Inner(np.full((n, 2), float(start))),
        units=60,
    )


def test_weighted_reward_is_the_sum_of_weighted_terms():
    terms = {"fs": np.array([0.5, 1.0]), "energy": np.array([-0.2, -0.4]), "ft": np.ones(2)}
    r = weighted_reward(terms, {"fs": 1.0, "energy": 2.0})  # ft has no weight: counts 0
    np.testing.assert_allclose(r, [0.1, 0.2])
    with pytest.raises(ValueError, match="no reward terms"):
        weighted_reward({}, {"fs": 1.0})


def test_batch_put_and_take_move_whole_envs():
    dst, src = _state(4, 0), _state(2, 10)
    assert batch_size(dst) == 4
    batch_put(dst, np.array([1, 3]), src)
    np.testing.assert_array_equal(dst.k, [0, 10, 2, 11])
    np.testing.assert_array_equal(dst.inner.x[:, 0], [0, 10, 0, 10])
    assert dst.rngs[3] is src.rngs[1] and dst.rngs[0] is not src.rngs[0]
    taken = batch_take(dst, np.array([3, 0]))
    np.testing.assert_array_equal(taken.k, [11, 0])
    taken.k[0] = -1  # a copy
    assert dst.k[3] == 11
    src.units = 30
    with pytest.raises(ValueError, match="units"):
        batch_put(dst, np.array([0, 1]), src)


def test_record_row_gives_one_envs_info():
    rec = Record(
        energy_j=np.array([1.0, 2.0]),
        duration_s=np.array([0.3, 0.3]),
        terms={"fs": np.array([0.5, 0.25])},
        info={"units": np.array([[1, 2], [3, 4]])},
    )
    row = rec.row(1)
    assert row["energy_j"] == 2.0 and row["reward_terms"] == {"fs": 0.25}
    np.testing.assert_array_equal(row["units"], [3, 4])

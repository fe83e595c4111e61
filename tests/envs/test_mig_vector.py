"""The MIG family's native vector env beyond the generic checks of ``test_vector.py``:
projection of invalid actions, the per-stretch timeline, and the memoised realisation and
masks."""

from __future__ import annotations

import numpy as np

from edgegym.families.mig import MIGReconfigEnv
from edgegym.families.mig.dynamics import _min_last, _running_total, _sum_last
from edgegym.families.mig.params import keep_pairs
from edgegym.families.mig.vector import MIGVectorEnv

SMALL = {"scenario": "migrator-w5", "window_s": 12, "windows": 2}


def test_invalid_actions_are_projected_as_in_the_single_env() -> None:
    vec = MIGVectorEnv(num_envs=3, **SMALL)
    singles = [MIGReconfigEnv(**SMALL) for _ in range(3)]
    vec.reset(seed=5)
    for i, env in enumerate(singles):
        env.reset(seed=5 + i)
    rng = np.random.default_rng(0)
    for step in range(24):
        mask = vec.action_masks()
        good = [int(rng.choice(np.flatnonzero(row))) for row in mask]
        bad = [int(np.flatnonzero(~row)[0]) if (~row).any() else -1 for row in mask]
        if step % 3 == 1 and min(bad) < 0:
            continue  # a state with every signature allowed: nothing masked to project
        actions = np.array(bad if step % 3 == 1 else good)
        obs, rew, term, _, info = vec.step(actions)
        for i, env in enumerate(singles):
            o, r, t, _, inf = env.step(actions[i])
            assert inf["projected"] == info["projected"][i] == (step % 3 == 1)
            assert np.array_equal(o, obs[i]) and r == rew[i] and t == term[i]
            assert np.array_equal(env.executor.state.task, vec.state.task[i])
            assert inf["reconfigurations"] == info["reconfigurations"][i]


def test_memoised_realisation_is_the_catalogues() -> None:
    vec = MIGVectorEnv(num_envs=4, **SMALL)
    vec.reset(seed=1)
    p = vec.params
    cat = p.spec.catalogue
    rng = np.random.default_rng(1)
    for _ in range(20):
        st = vec.state
        a = np.array([int(rng.choice(np.flatnonzero(row))) for row in vec.action_masks()])
        got = p.realise(a, st.task, st.running)
        for i in range(4):
            keep = keep_pairs(p, st.task[i], st.running[i])
            np.testing.assert_array_equal(got[i], cat.realise(int(a[i]), st.task[i], keep)[1])
        vec.step(a)


def test_bypassed_memo_gives_the_memoised_rows() -> None:
    """Random actions over a large batch: most keys miss, so the realisation memo is skipped
    for a while, then probed again; every batch equals the catalogue's realisation."""
    from edgegym.families.mig.params import BYPASS_CALLS

    n = 40
    vec = MIGVectorEnv(num_envs=n, **SMALL)
    vec.reset(seed=2)
    p = vec.params
    cat = p.spec.catalogue
    rng = np.random.default_rng(2)
    skipped = 0
    for _ in range(3 * (BYPASS_CALLS + 1)):
        st = vec.state
        a = np.array([int(rng.choice(np.flatnonzero(row))) for row in vec.action_masks()])
        skipped += p.realised.skip > 0
        got = p.realise(a, st.task, st.running)
        for i in range(n):
            keep = keep_pairs(p, st.task[i], st.running[i])
            np.testing.assert_array_equal(got[i], cat.realise(int(a[i]), st.task[i], keep)[1])
        vec.step(a)
    assert skipped > 0


def test_single_env_keeps_the_engine_timeline_of_stretches() -> None:
    env = MIGReconfigEnv(record_timeline=True, **SMALL)
    env.reset(seed=0)
    term = False
    while not term:
        _, _, term, _, _ = env.step(int(np.flatnonzero(env.action_masks())[0]))
    stretches = env.state.timeline[0]
    assert len(env.timeline) == 24 and len(stretches) >= 24
    assert stretches[-1]["t1"] == float(env.state.time_s[0]) == 24.0
    assert {"t0", "t1", "window", "accuracy", "share_infer", "share_retrain"} <= set(stretches[0])


def test_memoised_mask_is_the_rules() -> None:
    """The mask rows looked up by key equal the rules applied to each env directly."""
    vec = MIGVectorEnv(num_envs=6, **SMALL)
    vec.reset(seed=3)
    p = vec.params
    spec, cat = p.spec, p.spec.catalogue
    rng = np.random.default_rng(3)
    for _ in range(24):
        st = vec.state
        for i in range(6):
            want = spec.valid_static & cat.feasible(keep_pairs(p, st.task[i], st.running[i]))
            k = min(int(st.window[i]), spec.windows - 1)
            left = np.where(st.job_left[i] > 0, st.job_left[i], p.profile.gpu_seconds[:, k, 0])
            time_left = st.window[i] * spec.window_s + spec.window_s - st.time_s[i]
            ov = vec.dynamics.charged_overhead(p, st)[i, spec.n_tenants :]
            fits = np.c_[spec.fits_window(left, time_left, ov), np.ones(spec.n_tenants, dtype=bool)]
            for j in range(spec.n_tenants):
                rs = p.retrain_size[:, j]
                ok = rs == len(cat.sizes) if st.retrained[i, j] else fits[j, rs]
                want &= ok | st.running[i, j]
            np.testing.assert_array_equal(vec.action_masks()[i], want)
        vec.step(np.array([int(rng.choice(np.flatnonzero(row))) for row in vec.action_masks()]))


def test_short_reductions_are_numpys() -> None:
    """The column-by-column reductions of the step equal numpy's ``sum``, ``cumsum`` and
    ``min`` bit for bit, signed zeros, infinities and every short length included (numpy adds
    fewer than 8 values one after another from 0.0; a numpy that changed this would fail here
    before any golden trajectory moved)."""
    rng = np.random.default_rng(0)
    for n in range(10):
        x = rng.standard_normal((500, 3, n)) * 10.0 ** rng.integers(-12, 12, (500, 3, n))
        x[::7] = -0.0
        x[1::11, :, : n // 2] = np.inf
        pairs = [(x.sum(axis=-1), _sum_last(x))]
        if n:
            pairs.append((np.cumsum(x, axis=-1)[..., -1], _running_total(x)))
            pairs.append((x.min(axis=-1), _min_last(x)))
        for want, got in pairs:
            assert want.dtype == got.dtype and want.shape == got.shape
            assert np.array_equal(want.view(np.int64), got.view(np.int64))

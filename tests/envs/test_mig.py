"""edgegym/MIGReconfig-v0: known answers, reconfiguration overhead, pre-initialization, masks."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import yaml

from edgegym.families.mig import MIGReconfigEnv
from edgegym.families.mig.snapshot import DONE, PENDING, RUNNING
from edgegym.hardware.migalloc import ABSENT
from edgegym.workload.models import get_model


def _scenario(tmp_path, tenants, **top):
    data = {"name": "tiny", "family": "mig", "window_s": 10, "windows": 1, "tenants": tenants}
    data.update(top)
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(data))
    return str(path)


def _tenant(rate, model="resnet50", slo=25):
    return {
        "model": model,
        "dataset": "nc-cifar10",
        "slo_ms": slo,
        "ceiling": 0.9,
        "arrival": {"kind": "trace", "counts": [rate], "interval_s": 1},
    }


def _run(env, actions):
    infos = []
    for a in actions:
        *_, info = env.step(a)
        infos.append(info)
    return infos


def test_goodput_known_answer(tmp_path):
    env = MIGReconfigEnv(_scenario(tmp_path, [_tenant(50)]))
    env.reset(seed=0)
    cat = env.spec_.catalogue
    a = cat.index(((7,), ()))
    rewards = []
    for _ in range(10):
        _, r, term, _, info = env.step(a)
        rewards.append(r)
    assert term
    pre = 0.9 * (1 - 0.325)  # window 0 brings new classes: §5.2's 32.5% drop
    m = info["episode_metrics"]
    assert m["requests"] == 500
    assert m["slo_attainment"] == pytest.approx(1.0)
    assert m["goodput"] == pytest.approx(pre)
    assert np.mean(rewards) == pytest.approx(pre)  # mean reward = episode Goodput


def test_overload_serves_capacity_within_slo(tmp_path):
    env = MIGReconfigEnv(_scenario(tmp_path, [_tenant(200)]))
    env.reset(seed=0)
    a = env.spec_.catalogue.index(((1,), ()))
    infos = _run(env, [a] * 10)
    lat = float(get_model("resnet50").latency_s(1 / 7))
    # Served at capacity every second; the admitted backlog is still queued at the end.
    expected = (10 / lat) / 2000
    assert infos[-1]["episode_metrics"]["slo_attainment"] == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize(
    ("rule", "cases"),
    [
        # per-instance: only the new 3g instance is down, for its own overhead (5 s), or not at
        # all when pre-initialised. eq10: the task's instance and GPC counts change, so both of
        # its instances are down for Psi = 5 s (window 0: no measurement yet), pre-initialised
        # or not; pre-initialisation still shortens the measured overhead (and so next Psi).
        ("per-instance", ((False, 5.0, 5.0), (True, 0.0, 0.0))),
        ("eq10", ((False, 10.0, 5.0), (True, 10.0, 0.0))),
    ],
)
def test_reconfiguration_overhead_and_preinit(tmp_path, rule, cases):
    for preinit, downtime, measured in cases:
        path = _scenario(tmp_path, [_tenant(100)], preinit=preinit, overhead={"rule": rule})
        env = MIGReconfigEnv(path)
        env.reset(seed=0)
        cat = env.spec_.catalogue
        small, big = cat.index(((4,), ())), cat.index(((4, 3), ()))
        infos = _run(env, [small] * 6 + [big] * 4)
        ov = env.spec_.overhead_new_s[0]
        assert ov == pytest.approx(0.5 + 1.5 + 2.0 + get_model("resnet50").model_load_s)
        assert infos[6]["reconfigurations"] == 1  # only the new 3g instance is created
        # 3g@4's slices were free since t=0: pre-initialised, ready at max(6, 0 + 5) = 6.
        m = infos[-1]["episode_metrics"]
        assert m["downtime_s"] == pytest.approx(downtime)
        assert m["overhead_s"] == pytest.approx(measured)
        assert m["overhead_without_preinit_s"] == pytest.approx(ov)
        assert m["reconfig_events"] == 1
        # The step reports the downtime of its own reconfiguration (it used to read 0).
        assert [i["downtime_s"] for i in infos] == pytest.approx([0.0] * 6 + [downtime, 0, 0, 0])
        assert sum(i["overhead_s"] for i in infos) == pytest.approx(measured)


def test_eq10_known_answer(tmp_path):
    """MIGRator Eq. 10 by hand: ResNet50 at 100 req/s on a 4g instance (capacity 1 / (3.4 ms x
    (7/4)^0.6) = 210 req/s) for 6 s, then 4g + 3g. Eq. 11 sees the instance count go 1 -> 2 and
    the GPCs 4 -> 7, so the task's whole capacity is down for Psi = 5 s: no request of seconds
    6-9 is served within its SLO (nothing is ready to admit it), so SLO attainment is
    600 / 1000. The per-instance rule keeps the 4g instance serving: 1000 / 1000."""
    want = {"eq10": 0.6, "per-instance": 1.0}
    for rule, slo in want.items():
        env = MIGReconfigEnv(_scenario(tmp_path, [_tenant(100)], overhead={"rule": rule}))
        env.reset(seed=0)
        cat = env.spec_.catalogue
        assert 1.0 / float(get_model("resnet50").latency_s(4 / 7)) > 200
        infos = _run(env, [cat.index(((4,), ()))] * 6 + [cat.index(((4, 3), ()))] * 4)
        m = infos[-1]["episode_metrics"]
        assert m["requests"] == 1000
        assert m["slo_attainment"] == pytest.approx(slo)
        assert m["goodput"] == pytest.approx(slo * 0.9 * (1 - 0.325))  # pre-retraining accuracy


def test_psi_is_the_mean_overhead_measured_in_the_last_window(tmp_path):
    """Window 0 reconfigures the inference task twice: at t = 2 it gains a new 3g instance
    (measured: destroy 0.5 + create 1.5 + library 2.0 + ResNet50's load 1.0 = 5.0 s), at t = 5
    it gives the 3g up (measured: destroy 0.5 s). Psi of window 1 is their mean, 2.75 s; the
    retraining task was never reconfigured and keeps its prior, the new-instance overhead."""
    env = MIGReconfigEnv(_scenario(tmp_path, [_tenant(100)], windows=2))
    env.reset(seed=0)
    cat = env.spec_.catalogue
    small, big = cat.index(((4,), ())), cat.index(((4, 3), ()))
    infos = _run(env, [small] * 2 + [big] * 3 + [small] * 5)
    assert [i["overhead_s"] for i in infos[:6]] == pytest.approx([0, 0, 5.0, 0, 0, 0.5])
    assert env.state.window[0] == 1
    np.testing.assert_allclose(env.state.psi_s[0], [2.75, 5.0])
    snap = env.sim_state()
    np.testing.assert_allclose(snap.overhead_s, [2.75, 5.0])
    obs = env.dynamics.observation(env.params, env.state)
    assert obs[0, 13] == pytest.approx(0.275)
    # Window 1: growing again costs the whole task Psi = 2.75 s (two instances: 5.5 s).
    infos = _run(env, [big])
    assert infos[0]["downtime_s"] == pytest.approx(2 * 2.75)


def test_reconfigure_rule_by_hand():
    """:func:`reconfigure` on two envs with 3 placements (GPCs 4, 2, 1) and one tenant (tasks
    I0 = 0, R0 = 1) at t = 10, Psi = (3, 6), per-instance readiness 14 s."""
    from edgegym.families.mig.reconfig import reconfigure

    gpcs = np.array([4.0, 2.0, 1.0])
    old = np.array([[0, -1, -2], [0, 0, -1]])
    new = np.array([[0, 1, -2], [0, 0, 0]])  # env 0: R0 starts on the 2g; env 1: I0 gets the 1g
    ready_old = np.array([[8.0, 0.0, 0.0], [12.0, 9.0, 0.0]])
    now = np.array([10.0, 10.0])
    inst = np.full((2, 3), 14.0)
    psi = np.array([[3.0, 6.0], [3.0, 6.0]])
    args = (old, new, ready_old, now, inst, psi, gpcs, 0.5, np.array([False, False]))
    eq = reconfigure("eq10", *args)
    np.testing.assert_array_equal(eq.flagged, [[False, True], [True, False]])
    # env 0: I0 unchanged; R0's 2g serves at 10 + 6. env 1: all of I0 down until 10 + 3, but
    # the 4g was still being set up until 12 (kept: the later time wins).
    np.testing.assert_allclose(eq.ready, [[8.0, 16.0, 0.0], [13.0, 13.0, 13.0]])
    np.testing.assert_allclose(eq.measured, [[0.0, 4.0], [4.0, 0.0]])
    np.testing.assert_allclose(eq.downtime, [6.0, (3 - 2) + 3 + 3])
    pi = reconfigure("per-instance", *args)
    np.testing.assert_allclose(pi.ready, [[8.0, 14.0, 0.0], [12.0, 9.0, 14.0]])
    np.testing.assert_allclose(pi.downtime, [4.0, 4.0])
    with pytest.raises(ValueError, match="overhead rule"):
        reconfigure("bogus", *args)


def test_retraining_runs_on_its_instance_and_swaps_the_model(tmp_path):
    env = MIGReconfigEnv(_scenario(tmp_path, [_tenant(50)], window_s=200))
    env.reset(seed=0)
    spec = env.spec_
    cat = spec.catalogue
    a = cat.index(((4,), (3,)))
    work = env.profile.gpu_seconds[0, 0, 0]
    z = cat.sizes.index(3)
    finish = work / spec.size_train_speed[0, z]  # the first allocation is a warm start
    post = env.profile.post_acc[0, 0, 0]
    t = 0
    while env.status()[0] != DONE:
        env.step(a if env.status()[0] != DONE else cat.index(((4,), ())))
        t += 1
        if t < finish - 1:
            assert env.status()[0] == RUNNING
    assert t == pytest.approx(np.ceil(finish))
    assert env.state.model_acc[0, 0] == pytest.approx(post)
    assert not env.action_masks()[a]  # a finished job may not get an instance again


def _reference_mask(env):
    """Slow, rule-by-rule validity of every signature (the class docstring's list)."""
    spec = env.spec_
    cat = spec.catalogue
    m = spec.n_tenants
    status = env.status()
    task = env.executor.state.task
    time_left = env.window * spec.window_s + spec.window_s - float(env.state.time_s[0])
    keep = [(int(p), int(task[p])) for p in np.flatnonzero(task >= m) if status[task[p] - m] == 1]
    out = np.zeros(len(cat), dtype=bool)
    for n, sig in enumerate(cat.signatures):
        ok = all(max(sig[i]) >= spec.min_infer_size[i] for i in range(m))
        for i in range(m):
            r = sig[m + i]
            if status[i] == RUNNING:
                p = next(p for p, t in keep if t == m + i)
                ok &= r == (int(cat.placement_size[p]),)
            elif status[i] == DONE:
                ok &= r == ()
            elif r:
                z = cat.sizes.index(r[0])
                ov = env.sim_state().overhead_s[m + i]  # what a retraining start costs now
                dur = ov + env.state.job_left[0, i] / spec.size_train_speed[i, z]
                if status[i] == PENDING:
                    left = env.profile.gpu_seconds[i, env.window, 0]
                    dur = ov + left / spec.size_train_speed[i, z]
                ok &= r[0] >= spec.min_train_size[i] and dur <= time_left + 1e-9
        if ok:
            try:
                cat.realise(n, task, keep)
            except ValueError:
                ok = False
        out[n] = ok
    return out


@pytest.mark.parametrize(
    ("scenario", "overrides"),
    [
        ("migrator-w1", {}),
        ("migrator-w8", {}),
        ("migrator-w1", {"mps.shares": 14, "preinit": False}),  # MPS shares: no layouts
    ],
)
def test_masks_exclude_exactly_the_invalid_actions(scenario, overrides):
    env = MIGReconfigEnv(scenario, window_s=40, windows=2, **overrides)
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    checked = 0
    for step in range(80):
        mask = env.action_masks()
        if step % 7 == 0:
            np.testing.assert_array_equal(mask, _reference_mask(env))
            checked += 1
        _, _, term, _, info = env.step(int(rng.choice(np.flatnonzero(mask))))
        assert not info["projected"]
        if term:
            break
    assert checked >= 10


def test_invalid_action_keeps_current_allocation(tmp_path):
    env = MIGReconfigEnv(_scenario(tmp_path, [_tenant(50)]))
    env.reset(seed=0)
    cat = env.spec_.catalogue
    a = cat.index(((4,), ()))
    env.step(a)
    before = env.executor.state.task.copy()
    for bad in (-1, len(cat), 10**9):
        with pytest.raises(ValueError, match=rf"outside Discrete\({len(cat)}\)"):
            env.step(bad)
    for bad in np.flatnonzero(~env.action_masks())[:3]:  # masked, inside the space
        *_, info = env.step(int(bad))
        assert info["projected"]
        np.testing.assert_array_equal(env.executor.state.task, before)
    with pytest.raises(ValueError, match="integer"):
        env.step("x")


def test_snapshot_is_a_copy_and_oracle_optional():
    env = MIGReconfigEnv("migrator-w5", window_s=20, windows=1)
    env.reset(seed=0)
    snap = env.sim_state()
    assert snap.window_arrivals is None
    oracle = env.sim_state(oracle=True)
    assert oracle.window_arrivals.shape == (2, 20)
    snap.placement_task[:] = 99
    assert not np.any(env.executor.state.task == 99)
    assert np.all(env.executor.state.task == ABSENT)
    copy.deepcopy(env)  # pickle-able state


@pytest.mark.parametrize("n_tenants", [3, 4])
def test_three_and_four_tenants_with_the_planner(tmp_path, n_tenants):
    models = ["resnet50", "mobilenetv2", "inception", "vit"][:n_tenants]
    tenants = [
        {
            "model": md,
            "dataset": "nc-cifar10",
            "slo_ms": 50,
            "arrival": {"kind": "poisson", "rate": 40},
        }
        for md in models
    ]
    path = _scenario(tmp_path, tenants, window_s=30, windows=2, data_fraction=0.05)
    env = MIGReconfigEnv(path)
    from edgegym.baselines import make_policy

    pol = make_policy("migrator", env)
    obs, _ = env.reset(seed=0)
    pol.reset(0)
    assert env.observation_space.contains(obs)
    term = False
    while not term:
        a, _ = pol.predict(obs)
        obs, _, term, _, info = env.step(a)
        assert not info["projected"]
    assert info["episode_metrics"]["retrainings"] == 2 * n_tenants
    assert all(p.gap <= 0.01 + 1e-12 for p in pol.plans)


def test_lower_clock_is_slower_and_cheaper(tmp_path):
    out = {}
    for clock in (0, 810):
        env = MIGReconfigEnv(_scenario(tmp_path, [_tenant(200)]), clock_mhz=clock)
        env.reset(seed=0)
        a = env.spec_.catalogue.index(((7,), ()))
        infos = _run(env, [a] * 10)
        out[clock] = infos[-1]["episode_metrics"]
    assert out[810]["slo_attainment"] < out[0]["slo_attainment"]
    assert out[810]["energy_j"] < out[0]["energy_j"]


def test_fits_window_known_answer():
    """A job fits a size iff overhead + work / speed <= time left, on sizes that hold it."""
    spec = MIGReconfigEnv(scenario="migrator-w5").spec_
    sizes = np.array(spec.catalogue.sizes)
    work = np.array([30.0, 0.0])  # GPU-seconds left per tenant
    secs = spec.retrain_seconds(work)
    for z, size in enumerate(sizes):
        if size < spec.min_train_size[0]:
            assert secs[0, z] == np.inf
        else:
            want = spec.overhead_new_s[0] + 30.0 / spec.size_train_speed[0, z]
            assert secs[0, z] == pytest.approx(want)
    ok = np.isfinite(secs[0])
    exact = float(secs[0][ok].min())  # the fastest size finishes exactly at the window end
    assert spec.fits_window(work, exact)[0][ok].any()
    assert not spec.fits_window(work, exact - 1e-3)[0][ok & (secs[0] == exact)].any()


def test_step_slo_attainment_counts_the_queue_it_serves(tmp_path):
    """A burst queues (400 requests in second 0 against ~210/s on a 4g instance, a 2 s SLO),
    and second 1 serves the queue beside its 50 new requests: the step's SLO attainment is
    over the requests it had to serve (queued plus arriving), so it stays in [0, 1] (it
    was served / arrivals, 4.2, before), and the episode's is unchanged by the per-step
    definition."""
    t = _tenant(0, slo=2000)
    t["arrival"]["counts"] = [400, 50, 0, 0, 0, 0, 0, 0, 0, 0]
    env = MIGReconfigEnv(_scenario(tmp_path, [t]))
    env.reset(seed=0)
    infos = _run(env, [env.spec_.catalogue.index(((4,), ()))] * 10)
    per_step = [i["slo_attainment"] for i in infos]
    assert all(0.0 <= x <= 1.0 for x in per_step)
    cap = 1.0 / float(get_model("resnet50").latency_s(4 / 7))
    assert per_step[0] == pytest.approx(cap / 400, rel=1e-3)
    assert per_step[1] == pytest.approx(cap / (400 - cap + 50), rel=1e-3)
    served = sum(i["tenant_served_slo"].sum() for i in infos)
    assert infos[-1]["episode_metrics"]["slo_attainment"] == pytest.approx(served / 450)


def test_busy_gpcs_counts_served_load_and_running_retraining() -> None:
    """The one energy rule of both MIG executors, by hand: tenant 0 serves half of what its
    4-GPC instance could (2 busy GPCs); tenant 1's 2-GPC retraining instance counts while its
    job runs, not after; the 1-GPC placement holds nothing."""
    from edgegym.families.mig.serving import busy_gpcs

    gpcs = np.array([4.0, 2.0, 1.0])
    infer_own = np.array([[True, False, False], [False, False, False]])
    train_own = np.array([[False, False, False], [False, True, False]])
    served, mu, dt = np.array([5.0, 0.0]), np.array([10.0, 0.0]), 1.0
    running = busy_gpcs(infer_own, train_own, gpcs, served, mu, dt, np.array([False, True]))
    np.testing.assert_array_equal(running, [2.0, 2.0])
    idle = busy_gpcs(infer_own, train_own, gpcs, served, mu, dt, np.array([False, False]))
    np.testing.assert_array_equal(idle, [2.0, 0.0])
    # batched over envs: the same rows
    batched = busy_gpcs(
        infer_own[None].repeat(2, 0), train_own[None].repeat(2, 0), gpcs,
        served[None].repeat(2, 0), mu[None].repeat(2, 0), np.array([[1.0], [2.0]]),
        np.array([[False, True], [False, True]]),
    )  # fmt: skip
    np.testing.assert_array_equal(batched, [[2.0, 2.0], [1.0, 2.0]])


def test_an_action_outside_the_space_says_how_to_read_a_signature():
    env = MIGReconfigEnv(window_s=12, windows=2)
    env.reset(seed=0)
    cat = env.spec_.catalogue
    with pytest.raises(ValueError, match=r"describe_action\(a\)") as err:
        env.step(cat.signatures.__len__() + 5)
    assert "outside Discrete" in str(err.value)
    # the reading the message names exists, and ends with the catalogue's short form
    assert env.describe_action(5).endswith(f"({cat.describe(5)})")

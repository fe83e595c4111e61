"""edgegym/MIGReconfig-v0 with MPS shares (``mps.shares``): the same contract, shares for
instances, a process restart for a reconfiguration, clear errors where MPS cannot go."""

from __future__ import annotations

import numpy as np
import pytest

from edgegym.baselines import make_policy
from edgegym.families.mig import MIGReconfigEnv
from edgegym.hardware.migalloc import ShareCatalogue
from edgegym.scenarios import ScenarioError
from edgegym.workload.models import get_model
from tests.envs.test_mig import _scenario as mig_scenario
from tests.envs.test_mig import _tenant


def _scenario(tmp_path, tenants, **top):
    """test_mig's one-window scenario, its tenants holding 14 MPS shares unless ``mps`` says."""
    return mig_scenario(tmp_path, tenants, **{"mps": {"shares": 14}, **top})


def test_a_share_serves_as_a_mig_instance_of_the_same_fraction():
    """2k fourteenths of the GPU serve and retrain exactly as a k-GPC MIG instance (the models'
    share curves); the odd shares lie between; the action space is the share signatures."""
    mig = MIGReconfigEnv("migrator-w1").spec_
    mps = MIGReconfigEnv("migrator-w1", **{"mps.shares": 14, "preinit": False}).spec_
    assert isinstance(mps.catalogue, ShareCatalogue) and len(mps.catalogue) == 1820
    for k in mig.catalogue.sizes:
        zm, zs = mig.catalogue.sizes.index(k), mps.catalogue.sizes.index(2 * k)
        np.testing.assert_allclose(mps.size_rate[:, zs], mig.size_rate[:, zm])
        np.testing.assert_allclose(mps.size_train_speed[:, zs], mig.size_train_speed[:, zm])
    assert (np.diff(mps.size_train_speed, axis=1) > 0).all()
    # memory is not partitioned: any share holds any model and its retraining job
    assert (mps.min_infer_size == 1).all() and (mps.min_train_size == 1).all()


@pytest.mark.parametrize("rule", ["per-instance", "eq10"])
def test_a_share_change_restarts_the_process_beside_the_old_one(tmp_path, rule):
    """Growing the inference share 2 -> 14 at t = 6 starts a new process (library and model
    load, 2.0 + 1.0 s; no instance destroyed or created, nothing pre-initialised) while the
    old one serves on at 2/14 until t = 9 (make before break). ResNet50 at 100 req/s: 2/14
    serve 1 / (3.4 ms x 7^0.6) = 91 req/s, so seconds 6-8 serve what 2/14 can, and nothing
    is ever down. Going back to the share still serving cancels the restart for free."""
    env = MIGReconfigEnv(_scenario(tmp_path, [_tenant(100)], overhead={"rule": rule}))
    env.reset(seed=0)
    spec = env.spec_
    cat = spec.catalogue
    restart = 2.0 + get_model("resnet50").model_load_s
    assert spec.overhead_new_s[0] == pytest.approx(restart) and spec.destroy_s == 0.0
    small, big = cat.index(((2,), ())), cat.index(((14,), ()))
    assert env.describe_action(small).startswith("tenant 0: inference on 2/14")
    cap = float(spec.size_rate[0, cat.sizes.index(2)])
    assert 90 < cap < 100
    infos = [env.step(a)[-1] for a in [small] * 6]
    held = []
    for _ in range(4):
        infos.append(env.step(big)[-1])
        held.append(
            sorted(int(cat.placement_size[p]) for p in np.flatnonzero(env.state.task[0] >= 0))
        )
    assert held == [[2, 14], [2, 14], [14], [14]]  # the old share ends when the new serves
    assert infos[6]["layout"] == "I0:2/14 I0:14/14 (starting)"
    assert infos[-1]["layout"] == "I0:14/14"
    m = infos[-1]["episode_metrics"]
    assert [i["reconfigurations"] for i in infos] == [0] * 6 + [1, 0, 0, 0]
    assert m["downtime_s"] == 0.0
    assert m["overhead_s"] == pytest.approx(restart)
    assert m["requests"] == 1000
    served = 6 * cap + 3 * cap + 100  # 2/14 until t = 9 (queue admitted within the SLO aside)
    assert m["slo_attainment"] * 1000 >= served - 1.0
    assert m["slo_attainment"] < 1.0
    # back to the share that still serves: no new restart, and the pending one is dropped
    env.reset(seed=0)
    infos = [env.step(a)[-1] for a in [small] * 6 + [big, small, small]]
    assert [i["reconfigurations"] for i in infos] == [0] * 6 + [1, 0, 0]
    assert sorted(int(cat.placement_size[p]) for p in np.flatnonzero(env.state.task[0] >= 0)) == [2]
    assert np.isinf(env.state.retire_s[0]).all()


def test_astraea_and_ekya_run_on_shares_and_astraea_retrains_below_a_gpc():
    """The MIG baselines' rules read the catalogue, so they run on shares unchanged; Astraea's
    retraining takes the smallest share its job finishes in, less than MIG's one GPC."""
    ov = {"mps.shares": 14, "preinit": False, "windows": 2}
    for name in ("astraea", "ekya-mig"):
        env = MIGReconfigEnv("migrator-w1", **ov)
        pol = make_policy(name, env)
        env.reset(seed=0)
        pol.reset(0)
        term, shares = False, []
        while not term:
            _, _, term, _, info = env.step(pol.act())
            assert not info["projected"]
            sig = env.spec_.catalogue.gpcs[env.state.signature[0]]
            shares += [int(s) for s, r in zip(sig[2:], env.state.running[0], strict=True) if r]
        assert info["episode_metrics"]["requests"] > 0
        if name == "astraea":
            assert shares and min(shares) < 2  # under 2/14 = one GPC


def test_what_mps_cannot_do_is_refused_with_the_reason(tmp_path):
    with pytest.raises(ScenarioError, match=r"preinit.*MPS has none"):
        MIGReconfigEnv(_scenario(tmp_path, [_tenant(10)], preinit=True))
    with pytest.raises(ScenarioError, match="at least 2 MPS shares"):
        MIGReconfigEnv(_scenario(tmp_path, [_tenant(10)], mps={"shares": 1}))
    with pytest.raises(ValueError, match="no real backend"):
        MIGReconfigEnv(_scenario(tmp_path, [_tenant(10)]), backend="real")
    big = [_tenant(10, model="convnext", slo=50) for _ in range(4)]
    with pytest.raises(ValueError, match=r"44\.8 GB together.*40 GB"):
        MIGReconfigEnv(_scenario(tmp_path, big, hardware={"gpu": "A100-40GB"}, mps={"shares": 7}))

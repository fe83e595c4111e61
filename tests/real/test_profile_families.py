"""``edgegym profile --family mig|energy|dag --device cpu`` writes a scenario the simulator runs,
with measured fields marked ``measured:`` and the rest kept from the base scenario."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from types import SimpleNamespace

import gymnasium as gym
import numpy as np
import pytest
import torch
import yaml

import edgegym  # noqa: F401  (registers the ids)
from edgegym.cli import main
from edgegym.hardware.gpus import PowerModel, get_gpu
from edgegym.provenance import provenance_problems
from edgegym.real import profile_families as pf
from edgegym.real.energy import Measurement
from edgegym.real.sharing import Sharing
from edgegym.scenarios import load, resolve

IDS = {
    "mig": "edgegym/MIGReconfig-v0",
    "energy": "edgegym/EnergyFairShare-v0",
    "dag": "edgegym/DAGOffload-v0",
}
BASES = {"mig": "migrator-w1", "energy": "etf-tx2-resnet50-mobilenetv2", "dag": "srs-edge-5apps"}
#: Tiny settings: a few passes of narrow networks, so the whole file runs in seconds.
TINY = ["--device", "cpu", "--repeats", "2", "--width", "4", "--power-seconds", "0.02"]


def _run_env(env_id: str, path: Path, steps: int = 4) -> None:
    env = gym.make(env_id, scenario=str(path))
    env.reset(seed=0)
    for _ in range(steps):
        _, reward, terminated, truncated, _ = env.step(env.action_space.sample())
        assert np.isfinite(reward)
        if terminated or truncated:
            break
    env.close()


def _profiled(family: str, tmp_path: Path, capsys, *extra: str) -> tuple[dict, dict, str]:
    out = tmp_path / f"{family}.yaml"
    assert main(["profile", "--family", family, "--out", str(out), *TINY, *extra]) == 0
    printed = capsys.readouterr().out
    assert f"wrote {out}" in printed
    raw = yaml.safe_load(out.read_text())
    base = yaml.safe_load(resolve(BASES[family]).read_text())
    assert load(str(out))["family"] == family
    assert provenance_problems(raw) == []  # every input still has a source
    _run_env(IDS[family], out)
    return raw, base, printed


def test_mig_profile_runs_and_derives_instances_without_mig(tmp_path, capsys):
    raw, base, printed = _profiled("mig", tmp_path, capsys)
    assert "MIG is not enabled on cpu" in printed
    prov = raw["provenance"]
    for t in raw["tenants"]:
        assert set(t["profile"]) == {"latency_ms", "batch_exponent", "share_alpha", "train_factor"}
        assert t["profile"]["share_alpha"] == 1.0  # the compute fraction
    assert all("profile" not in t for t in base["tenants"])
    for f in ("latency_ms", "batch_exponent", "train_factor"):
        assert prov[f"tenants.profile.{f}"].startswith("measured: cpu")
    assert prov["tenants.profile.share_alpha"].startswith("derived:")
    assert prov["tenants.slo_ms"] == base["provenance"]["tenants.slo_ms"]  # kept
    rec = prov["measured"]["tenants"][0]
    assert rec["instances"] == "derived" and set(rec["latency_ms_per_instance_gpcs"]) == {
        1,
        2,
        3,
        4,
        7,
    }
    lat = rec["latency_ms_per_instance_gpcs"]
    assert lat[1] == pytest.approx(7 * lat[7], rel=1e-3)


def test_mig_required_without_mig_is_a_clear_error(tmp_path, capsys):
    out = tmp_path / "x.yaml"
    assert main(["profile", "--family", "mig", "--out", str(out), *TINY, "--mig-required"]) == 2
    err = capsys.readouterr().err
    assert "MIG is not enabled on cpu" in err and "--mig-required" in err
    assert not out.exists()


def test_mig_instances_are_measured_where_they_exist(tmp_path, monkeypatch):
    sharing = Sharing(
        mig_mode=True,
        mig_instances=(
            {"index": 0, "uuid": "MIG-a", "slices": 1, "memory_mb": 4864},
            {"index": 1, "uuid": "MIG-b", "slices": 3, "memory_mb": 19968},
        ),
    )
    calls = []

    def fake_run(uuid: str, arch: str, batch: int, s: pf.Settings) -> float:
        calls.append(uuid)
        return {"MIG-a": 14.0, "MIG-b": 14.0 * (1 / 3) ** 0.8}[uuid]

    monkeypatch.setattr(pf, "detect", lambda index: sharing)
    monkeypatch.setattr(pf, "_child_latency", fake_run)
    settings = pf.Settings(repeats=2, width=4, mig_required=True)
    sc, notes = pf.profile_family("mig", tmp_path / "m.yaml", "migrator-w1", settings)
    assert not notes and set(calls) == {"MIG-a", "MIG-b"}
    assert sc["tenants"][0]["profile"]["share_alpha"] == pytest.approx(0.8, rel=1e-3)
    assert sc["provenance"]["tenants.profile.share_alpha"].startswith("measured:")
    assert sc["provenance"]["measured"]["tenants"][0]["instances"] == "measured"
    _run_env(IDS["mig"], tmp_path / "m.yaml")


def test_energy_profile_keeps_the_catalogue_power_on_cpu(tmp_path, capsys):
    raw, base, printed = _profiled("energy", tmp_path, capsys)
    assert "no power measurement on cpu" in printed
    prov = raw["provenance"]
    assert prov["tenants.profile.latency_ms"].startswith("measured: cpu")
    assert "tenants.profile.power_activity" not in prov
    assert all("power_activity" not in t["profile"] for t in raw["tenants"])
    assert prov["measured"]["power"].startswith("catalogue:")
    assert "clock curve" in prov["hardware.gpu"] and "catalogue" in prov["hardware.gpu"]
    assert raw["hardware"]["gpu"] == base["hardware"]["gpu"] == "TX2"


class FakeMeter:
    """Power that grows linearly with the utilisation levels, read in the profiler's order."""

    available, method, message = True, "counter", ""

    def __init__(self, idle_w: float, dynamic_w: float) -> None:
        self.idle_w, self.dynamic_w, self.i = idle_w, dynamic_w, 0

    def begin(self, name: str) -> None:
        pass

    def end(self, name: str) -> Measurement:
        u = pf.UTILISATION_LEVELS[self.i % len(pf.UTILISATION_LEVELS)]
        self.i += 1
        return Measurement(name, 2.0, 2.0 * (self.idle_w + self.dynamic_w * u), "counter")


def test_energy_activity_is_fitted_where_nvml_reads_power(tmp_path, monkeypatch):
    pm = PowerModel.from_spec(get_gpu("TX2"))
    dyn = float(pm.dynamic_power(pm.max_clock_mhz, 1.0))
    monkeypatch.setattr(pf, "EnergyMeter", lambda index: FakeMeter(pm.idle_power_w, 0.6 * dyn))
    settings = pf.Settings(repeats=2, width=4, power_s=0.0)
    sc, notes = pf.profile_family("energy", tmp_path / "e.yaml", None, settings)
    assert not notes
    assert [t["profile"]["power_activity"] for t in sc["tenants"]] == [0.6, 0.6]
    assert sc["provenance"]["tenants.profile.power_activity"].startswith("measured:")
    _run_env(IDS["energy"], tmp_path / "e.yaml")


def test_a_flat_power_line_keeps_the_catalogue_activity(tmp_path, monkeypatch):
    """On an H200 the launch-bound stand-ins held 120-125 W at every duty cycle (2026-11-28):
    such a line is noise, and the catalogue's activity stays."""
    pm = PowerModel.from_spec(get_gpu("TX2"))
    dyn = float(pm.dynamic_power(pm.max_clock_mhz, 1.0))
    monkeypatch.setattr(pf, "EnergyMeter", lambda index: FakeMeter(120.0, 0.01 * dyn))
    settings = pf.Settings(repeats=2, width=4, power_s=0.0)
    sc, notes = pf.profile_family("energy", tmp_path / "e.yaml", None, settings)
    assert all("power_activity" not in t["profile"] for t in sc["tenants"])
    assert any("did not move the power clearly" in n for n in notes)
    record = sc["provenance"]["measured"]
    assert record["power"].startswith("catalogue:") and "flat" in record["power"]
    assert all(t["power_fit"]["kept"].startswith("catalogue") for t in record["tenants"])
    assert provenance_problems(yaml.safe_load((tmp_path / "e.yaml").read_text())) == []


class Counting(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        return x


def test_the_clock_is_read_while_the_stand_in_runs(monkeypatch):
    """An idle GPU reports its idle clock; the profiler reads it with work queued."""
    model = Counting()
    seen = {"calls": 0}

    def clock(handle, kind):
        busy = model.calls > seen["calls"]
        seen["calls"] = model.calls
        return 1980 if busy else 345

    fake = SimpleNamespace(
        NVML_CLOCK_SM=0,
        nvmlInit=lambda: None,
        nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetMaxClockInfo=lambda h, k: 1980,
        nvmlDeviceGetClockInfo=clock,
    )
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    s = pf.Settings(repeats=1, width=4)
    assert pf.clocks_under_load(model, s, 0, seconds=0.01) == (1980.0, 1980.0)
    assert model.calls > 0
    assert pf.clocks_under_load(model, s, None) is None  # no GPU: no clock


def test_dag_profile_measures_nodes_retraining_and_sizes(tmp_path, capsys):
    raw, base, _ = _profiled("dag", tmp_path, capsys)
    prov = raw["provenance"]
    task, base_task = raw["applications"][0]["tasks"][0], base["applications"][0]["tasks"][0]
    assert task["workload"] != base_task["workload"] and task["workload"] > 0
    assert [c["workload"] for c in raw["retrain_configs"]] != [
        c["workload"] for c in base["retrain_configs"]
    ]
    assert raw["models"]["bert"]["size_mb"] != base["models"]["bert"]["size_mb"]
    for key in ("applications.tasks.workload", "retrain_configs.workload", "models.bert.size_mb"):
        assert prov[key].startswith("measured: cpu")
    assert prov["models"] == base["provenance"]["models"]  # accuracies kept
    # More data costs more retraining.
    work = [c["workload"] for c in sorted(raw["retrain_configs"], key=lambda c: c["data_mb"])]
    assert work == sorted(work)


def test_bad_family_is_an_argparse_error(tmp_path, capsys):
    assert main(["profile", "--family", "quantum", "--out", str(tmp_path / "x.yaml")]) == 2
    assert "invalid choice: 'quantum'" in capsys.readouterr().err


def test_mig_options_belong_to_the_mig_family(tmp_path, capsys):
    out = str(tmp_path / "x.yaml")
    assert main(["profile", "--family", "dag", "--mig-required", "--out", out]) == 2
    assert "options of --family mig" in capsys.readouterr().err


def test_base_of_another_family_is_refused(tmp_path, capsys):
    out = tmp_path / "x.yaml"
    assert main(["profile", "--family", "dag", "--base", "migrator-w1", "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "a scenario of the mig family; --family dag needs one of the dag family" in err


def test_fits_recover_their_parameters():
    lat = {b: 2.0 * b**0.6 for b in (1, 4, 8)}
    assert pf.fit_batch(lat, 0.7) == pytest.approx((2.0, 0.6))
    assert pf.fit_batch({1: 3.0}, 0.7) == pytest.approx((3.0, 0.7))
    by_size = {g: 1.5 / (g / 7) ** 0.5 for g in (1, 2, 7)}
    assert pf.fit_share_alpha(by_size) == pytest.approx((1.5, 0.5))
    pm = PowerModel.from_spec(get_gpu("H100-80GB"))
    dyn = float(pm.dynamic_power(pm.max_clock_mhz, 1.0))
    fit = pf.fit_activity({u: 90.0 + 0.3 * dyn * u for u in (0.0, 0.5, 1.0)}, pm)
    assert fit["activity"] == pytest.approx(0.3) and fit["intercept_w"] == pytest.approx(90.0)


def test_the_profilers_only_read_nvml():
    """Clocks, power limits and MIG mode are never changed: only NVML queries are called,
    except the energy family's clock lock (``clocks.py``), which locks and resets the graphics
    clock and only where the user allows it (tests/real/test_real_timeslice.py)."""
    real = Path(pf.__file__).parent
    calls, locks = set(), set()
    for path in real.glob("*.py"):
        found = set(re.findall(r"\.(nvml\w+)", path.read_text()))
        if path.name == "clocks.py":
            locks |= found
        else:
            calls |= found
    query = r"nvml(Init|Device(Get\w+))$"
    assert calls and all(re.match(query, c) for c in calls), calls
    setters = {c for c in locks if not re.match(query, c)}
    assert setters == {"nvmlDeviceSetGpuLockedClocks", "nvmlDeviceResetGpuLockedClocks"}


def test_a_catalogue_gpu_is_named_and_its_clocks_mapped():
    """A profile on an H100 names it; the TX2 clocks of the base map to H100 levels."""
    from edgegym.scenarios import validate

    raw = yaml.safe_load(resolve(BASES["energy"]).read_text())
    raw["provenance"] = dict(raw["provenance"])
    st = pf.Stamp("cuda", "NVIDIA H100 80GB HBM3", "H100-80GB", "2026-11-28 00:00 UTC")
    notes = pf._retarget_gpu(raw, "hardware", st)
    assert raw["hardware"]["gpu"] == "H100-80GB" and "base: TX2" in notes[0]
    top = get_gpu("H100-80GB").max_clock_mhz
    assert raw["tenants"][0]["clock_mhz"] == top  # TX2's top clock -> H100's top clock
    assert raw["tenants"][1]["clock_mhz"] < top
    assert raw["provenance"]["hardware.gpu"].startswith("measured: NVIDIA H100")
    assert raw["provenance"]["tenants.clock_mhz"].startswith("derived:")
    validate(raw, "retargeted")  # the mapped clocks are the H100's
    mig = yaml.safe_load(resolve(BASES["mig"]).read_text())
    a10g = pf.Stamp("cuda", "NVIDIA A10G", "A10G", "2026-11-28 00:00 UTC")
    assert "kept" in pf._retarget_gpu(mig, "hardware", a10g, mig=True)[0]  # no MIG on an A10G
    assert mig["hardware"]["gpu"] == "A100-40GB"


def test_inference_beside_a_retraining_process_is_slower():
    """Two processes on one device (time-sliced on the CPU, MPS clients on a GPU with the
    daemon): each side reports its speed alone and beside the other."""
    run = pf.beside_retraining("resnet50", pf.Settings(repeats=2, width=4, beside_s=0.3))
    assert run["infer_ms_alone"] > 0 and run["train_step_ms_beside"] > 0
    assert 0.0 <= run["inference_slowdown"] <= 0.99 and 0.0 <= run["retrain_slowdown"] <= 0.99


def test_mps_slowdowns_are_written_where_asked(tmp_path, monkeypatch):
    measured = {"inference_slowdown": 0.2, "retrain_slowdown": 0.1}
    monkeypatch.setattr(pf, "beside_retraining", lambda model, s: dict(measured))
    settings = pf.Settings(repeats=2, width=4, beside_s=1.0)
    sc, notes = pf.profile_family("mig", tmp_path / "m.yaml", None, settings)
    assert sc["mps"]["inference_slowdown"] == 0.2 and sc["mps"]["retrain_slowdown"] == 0.1
    assert sc["provenance"]["mps.inference_slowdown"].startswith("measured: cpu")
    assert any("no MPS control daemon" in n for n in notes)
    assert set(sc["provenance"]["measured"]["beside_retraining"]) == {"bert", "vit"}
    _run_env(IDS["mig"], tmp_path / "m.yaml")

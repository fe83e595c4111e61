"""What the GPU offers for sharing, with pynvml patched: MIG instances, MIG off, no NVML, MPS."""

from __future__ import annotations

from types import SimpleNamespace

import pynvml
import pytest

from edgegym.real.sharing import detect, mps_daemon


def _install(monkeypatch, mig_mode=None, slots=(), init_error=None):
    """Fake NVML: ``slots`` holds (slices, memory_mb) per MIG device (None: an empty slot)."""

    def init():
        if init_error:
            raise pynvml.NVMLError(init_error)

    def mig_mode_of(handle):
        if mig_mode is None:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_SUPPORTED)
        return mig_mode, mig_mode

    def mig_handle(handle, i):
        if slots[i] is None:
            raise pynvml.NVMLError(pynvml.NVML_ERROR_NOT_FOUND)
        return i

    monkeypatch.setattr(pynvml, "nvmlInit", init)
    monkeypatch.setattr(pynvml, "nvmlDeviceGetHandleByIndex", lambda i: f"gpu{i}")
    monkeypatch.setattr(pynvml, "nvmlDeviceGetMigMode", mig_mode_of)
    monkeypatch.setattr(pynvml, "nvmlDeviceGetMaxMigDeviceCount", lambda h: len(slots))
    monkeypatch.setattr(pynvml, "nvmlDeviceGetMigDeviceHandleByIndex", mig_handle)
    monkeypatch.setattr(
        pynvml,
        "nvmlDeviceGetAttributes",
        lambda i: SimpleNamespace(gpuInstanceSliceCount=slots[i][0], memorySizeMB=slots[i][1]),
    )
    monkeypatch.setattr(pynvml, "nvmlDeviceGetUUID", lambda i: f"MIG-{i}".encode())


def test_existing_mig_instances_are_listed_and_reported_unused(monkeypatch, tmp_path):
    _install(monkeypatch, pynvml.NVML_DEVICE_MIG_ENABLE, [(3, 20 * 1024), None, (4, 20 * 1024)])
    s = detect(0, environ={"CUDA_MPS_PIPE_DIRECTORY": str(tmp_path)})
    assert s.mig_mode is True and not s.mps_daemon
    assert [(m["index"], m["uuid"], m["slices"]) for m in s.mig_instances] == [
        (0, "MIG-0", 3),
        (2, "MIG-2", 4),
    ]
    (note,) = s.notes()
    assert "2 instance(s) (3g.20gb, 4g.20gb)" in note and "CUDA_VISIBLE_DEVICES" in note


def test_mig_on_without_instances_and_mig_unsupported(monkeypatch, tmp_path):
    env = {"CUDA_MPS_PIPE_DIRECTORY": str(tmp_path)}
    _install(monkeypatch, pynvml.NVML_DEVICE_MIG_ENABLE, [None] * 7)
    s = detect(0, environ=env)
    assert s.mig_mode is True and s.mig_instances == ()
    assert "never creates one" in s.notes()[0]
    _install(monkeypatch, None)  # a GPU without MIG
    s = detect(0, environ=env)
    assert s.mig_mode is False and s.notes() == []
    _install(monkeypatch, pynvml.NVML_DEVICE_MIG_DISABLE)
    assert detect(0, environ=env).mig_mode is False


def test_no_nvml_means_unknown_and_never_raises(monkeypatch, tmp_path):
    _install(monkeypatch, init_error=pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)
    s = detect(0, environ={"CUDA_MPS_PIPE_DIRECTORY": str(tmp_path)})
    assert s.mig_mode is None and "NVML unavailable" in s.message
    assert s.notes() == [s.message]
    assert detect(None).notes() == []  # the CPU offers nothing to report


@pytest.mark.parametrize("daemon", [True, False])
def test_mps_daemon_is_found_by_its_control_pipe(daemon, tmp_path, monkeypatch):
    if daemon:
        (tmp_path / "control").touch()
    assert mps_daemon({"CUDA_MPS_PIPE_DIRECTORY": str(tmp_path)}) == (daemon, str(tmp_path))
    _install(monkeypatch, None)
    notes = detect(0, environ={"CUDA_MPS_PIPE_DIRECTORY": str(tmp_path)}).notes()
    assert any("MPS control daemon" in n for n in notes) == daemon

"""What the GPU offers for sharing: MIG instances that already exist, an MPS control daemon.

edgegym's real backends emulate every share by time-slicing the one device torch sees. This
module finds out what the machine offers beyond that, read-only, so that a run *says* what it
left unused instead of pretending the GPU has none of it:

* **MIG**: ``nvmlDeviceGetMigMode`` and the MIG devices of the GPU (size in GPU-instance
  slices, memory, UUID). edgegym never enables MIG mode and never creates or destroys an
  instance; to run on one existing instance, start the process with
  ``CUDA_VISIBLE_DEVICES=<MIG UUID>`` and torch sees it as ``cuda:0``.
* **MPS**: a control daemon is running when its pipe directory (``CUDA_MPS_PIPE_DIRECTORY``,
  default ``/tmp/nvidia-mps``) holds a ``control`` pipe. One edgegym process is one MPS client,
  so per-task thread percentages (``CUDA_MPS_ACTIVE_THREAD_PERCENTAGE``) are not applied.

Without NVML or a GPU nothing is known and the run says so; nothing here ever raises.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_MPS_PIPE_DIRECTORY = "/tmp/nvidia-mps"


@dataclass(frozen=True)
class Sharing:
    """What one GPU offers for sharing (see the module docstring).

    Attributes:
        mig_mode: MIG mode is on (``None``: unknown, NVML unreadable).
        mig_instances: One record per existing MIG device: ``index``, ``uuid``, ``slices``
            (GPU-instance slices, i.e. GPCs), ``memory_mb``.
        mps_daemon: An MPS control daemon's pipe was found.
        mps_pipe_directory: Where it was looked for.
        message: Why something is unknown, if it is.
    """

    mig_mode: bool | None = None
    mig_instances: tuple[dict[str, Any], ...] = field(default_factory=tuple)
    mps_daemon: bool = False
    mps_pipe_directory: str = DEFAULT_MPS_PIPE_DIRECTORY
    message: str = ""

    def notes(self) -> list[str]:
        """Lines for a run's list of emulated things: what the device offers and is not used."""
        out = []
        if self.mig_mode:
            if self.mig_instances:
                sizes = ", ".join(
                    f"{m['slices']}g.{m['memory_mb'] / 1024:.0f}gb" for m in self.mig_instances
                )
                out.append(
                    f"MIG mode is on with {len(self.mig_instances)} instance(s) ({sizes}); this "
                    "run time-slices the one device torch sees instead of placing tasks on them "
                    "(CUDA_VISIBLE_DEVICES=<MIG UUID> runs the whole process on one)"
                )
            else:
                out.append("MIG mode is on but no MIG instance exists; edgegym never creates one")
        if self.mps_daemon:
            out.append(
                f"an MPS control daemon is running ({self.mps_pipe_directory}); this run is "
                "one MPS client and sets no per-task CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"
            )
        if self.message:
            out.append(self.message)
        return out


def mps_daemon(environ: Mapping[str, str] | None = None) -> tuple[bool, str]:
    """Whether an MPS control daemon's pipe exists, and the directory looked in."""
    env = os.environ if environ is None else environ
    pipe_dir = env.get("CUDA_MPS_PIPE_DIRECTORY") or DEFAULT_MPS_PIPE_DIRECTORY
    return (Path(pipe_dir) / "control").exists(), pipe_dir


def _mig(device_index: int) -> tuple[bool | None, tuple[dict[str, Any], ...], str]:
    try:
        import pynvml

        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(device_index)
    except Exception as exc:
        return None, (), f"NVML unavailable ({exc}): MIG state unknown"
    try:
        current, _pending = pynvml.nvmlDeviceGetMigMode(handle)
    except Exception:  # NOT_SUPPORTED: a GPU without MIG
        return False, (), ""
    if current != pynvml.NVML_DEVICE_MIG_ENABLE:
        return False, (), ""
    instances = []
    try:
        count = int(pynvml.nvmlDeviceGetMaxMigDeviceCount(handle))
    except Exception as exc:
        return True, (), f"MIG mode is on but its devices are unreadable ({exc})"
    for i in range(count):
        try:
            mig = pynvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, i)
        except Exception:  # NOT_FOUND: an empty slot
            continue
        try:
            attrs = pynvml.nvmlDeviceGetAttributes(mig)
            uuid = pynvml.nvmlDeviceGetUUID(mig)
        except Exception as exc:
            return True, tuple(instances), f"a MIG device is unreadable ({exc})"
        instances.append(
            {
                "index": i,
                "uuid": uuid.decode() if isinstance(uuid, bytes) else str(uuid),
                "slices": int(attrs.gpuInstanceSliceCount),
                "memory_mb": int(attrs.memorySizeMB),
            }
        )
    return True, tuple(instances), ""


def detect(device_index: int | None, environ: Mapping[str, str] | None = None) -> Sharing:
    """What GPU ``device_index`` offers for sharing (``None``: the CPU, nothing to offer)."""
    if device_index is None:
        return Sharing()
    mig_mode, instances, message = _mig(device_index)
    running, pipe_dir = mps_daemon(environ)
    return Sharing(mig_mode, instances, running, pipe_dir, message)

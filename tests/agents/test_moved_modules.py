"""Saved models keep loading after their classes' modules moved (``edgegym.agents.MOVED``).

SB3 cloudpickles a model's policy class (and a ``linear`` learning-rate schedule) by module
path, RLlib pickles its RLModule class into every checkpoint: the shipped models and users'
own name ``edgegym.agents.tenants`` and the other former paths. Each must import as the very
module it moved to (the same class objects), also for a process that never imported edgegym
before unpickling (``MaskablePPO.load`` alone).
"""

from __future__ import annotations

import importlib
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

import edgegym.agents
from edgegym.agents.policy import shipped_path

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("old", "new"), sorted(edgegym.agents.MOVED.items()))
def test_a_former_module_path_is_the_moved_module(old, new):
    if new.startswith("edgegym.agents.rllib.module"):
        pytest.importorskip("ray.rllib")
    assert importlib.import_module(old) is importlib.import_module(new)
    assert sys.modules[old] is sys.modules[new]


def test_saved_classes_unpickle_by_their_former_paths():
    from edgegym.agents.policies.graph import GraphPolicy
    from edgegym.agents.policies.signatures import SignaturePolicy
    from edgegym.agents.policies.tenants import PerTenantPolicy, PooledPolicy
    from edgegym.agents.sb3.train import LinearSchedule

    for module, cls in [
        ("edgegym.agents.tenants", PerTenantPolicy),
        ("edgegym.agents.tenants", PooledPolicy),
        ("edgegym.agents.signatures", SignaturePolicy),
        ("edgegym.agents.graph", GraphPolicy),
        ("edgegym.agents.train", LinearSchedule),
    ]:
        # Protocol 0's GLOBAL opcode: what a pickle of the class saved before the move holds.
        assert pickle.loads(f"c{module}\n{cls.__name__}\n.".encode()) is cls
        assert cls.__module__.startswith(("edgegym.agents.policies.", "edgegym.agents.sb3."))


def test_plain_sb3_loads_a_shipped_model_without_edgegym_imported_first():
    """What a user's ``MaskablePPO.load`` does: unpickling imports the former module path."""
    code = (
        "import sys\n"
        "from sb3_contrib import MaskablePPO\n"
        "assert 'edgegym' not in sys.modules\n"
        f"model = MaskablePPO.load({str(shipped_path('energy'))!r}, device='cpu')\n"
        "print(type(model.policy).__module__, type(model.policy).__name__)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["edgegym.agents.policies.tenants", "PerTenantPolicy"]

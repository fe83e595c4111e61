"""Your own scheduler (docs/own-scheduler.md): the page's examples run as written through
``edgegym evaluate --policy FILE.py:NAME``, classes work from the API, and masks reach
``predict``."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import ClassVar

import numpy as np
import pytest

from edgegym.cli import main
from edgegym.evaluation import evaluate

PAGE = Path(__file__).resolve().parents[1] / "docs" / "own-scheduler.md"
#: Small episodes per id (the conformance tests' small variants).
SMALL = {
    "edgegym/ContinualLearning-v0": ["--set", "streams=3", "--set", "windows=2"],
    "edgegym/EnergyFairShare-v0": ["--scenario", "etf-tx2-arrivals", "--set", "quanta=12"],
    "edgegym/MIGReconfig-v0": [
        "--scenario",
        "migrator-w5",
        "--set",
        "window_s=12",
        "--set",
        "windows=2",
    ],
    "edgegym/DAGOffload-v0": ["--set", "requests=3"],
}


def _examples() -> list[tuple[str, str, str, str]]:
    """(file name, env id, class name, code) of every ``# file:`` block of the page."""
    out = []
    for code in re.findall(r"```python[^\n]*\n(.*?)```", PAGE.read_text(), flags=re.S):
        head = re.match(r"# file: (\S+\.py) \((\S+)\)\n", code)
        if head:
            cls = re.search(r"^class (\w+)", code, flags=re.M)
            assert cls, f"{head.group(1)} defines no class"
            out.append((head.group(1), head.group(2), cls.group(1), code))
    return out


def test_the_page_has_an_example_for_every_family():
    assert {env for _, env, _, _ in _examples()} == set(SMALL)


@pytest.mark.parametrize("example", _examples(), ids=lambda e: e[0])
def test_each_example_runs_through_the_cli_as_written(example, tmp_path, capsys):
    name, env_id, cls, code = example
    (tmp_path / name).write_text(code)
    out = tmp_path / "r.json"
    spec = f"{tmp_path / name}:{cls}"
    argv = ["evaluate", env_id, "--policy", spec, "--episodes", "1", "--json", str(out)]
    assert main([*argv, *SMALL[env_id], "--no-progress"]) == 0, capsys.readouterr().err
    row = json.loads(out.read_text())["results"][0]
    assert row["policy"] == spec and np.isfinite(row["mean_return"]) and "error" not in row


def test_parameters_reach_the_class_and_unknown_ones_are_named(tmp_path, capsys):
    code = dict((n, c) for n, _, _, c in ((e[0], 0, 0, e[3]) for e in _examples()))
    (tmp_path / "equal_split.py").write_text(code["equal_split.py"])
    base = ["evaluate", "edgegym/EnergyFairShare-v0", "--episodes", "1", "--no-progress"]
    base += SMALL["edgegym/EnergyFairShare-v0"]
    spec = f"{tmp_path / 'equal_split.py'}:EqualSplit"
    assert main([*base, "--policy", f"{spec}:cap=5"]) == 0
    assert main([*base, "--policy", f"{spec}:limit=5"]) == 2
    err = capsys.readouterr().err
    assert "unknown parameter 'limit'" in err and "cap" in err
    assert main([*base, "--policy", f"{spec}:cap=abc"]) == 2  # the page's own example message
    assert "cap must be a whole number, got 'abc'" in capsys.readouterr().err


def test_the_any_family_example_runs_without_a_mask_on_a_foreign_id(tmp_path, capsys):
    code = {e[0]: e[3] for e in _examples()}["masked_random.py"]
    (tmp_path / "masked_random.py").write_text(code)
    spec = f"{tmp_path / 'masked_random.py'}:MaskedRandom"
    assert main(["evaluate", "CartPole-v1", "--policy", spec, "--episodes", "1"]) == 0, (
        capsys.readouterr().err
    )


def test_a_module_in_the_working_folder_gets_a_hint(tmp_path, monkeypatch, capsys):
    (tmp_path / "mypkg").mkdir()
    (tmp_path / "mypkg" / "__init__.py").write_text("")
    (tmp_path / "mypkg" / "schedulers.py").write_text("class Greedy:\n    pass\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    base = ["evaluate", "edgegym/EnergyFairShare-v0", "--episodes", "1", "--no-progress"]
    assert main([*base, "--policy", "mypkg.schedulers:Greedy"]) == 2
    err = capsys.readouterr().err
    assert "PYTHONPATH=." in err and "mypkg/schedulers.py:NAME" in err
    assert main([*base, "--policy", "otherpkg.schedulers:Greedy"]) == 2
    assert "PYTHONPATH" not in capsys.readouterr().err


def test_bad_specs_say_what_is_wrong(tmp_path, capsys):
    (tmp_path / "s.py").write_text("class Greedy:\n    pass\n\ndef helper(env):\n    return 1\n")
    base = ["evaluate", "edgegym/EnergyFairShare-v0", "--episodes", "1", "--no-progress"]
    assert main([*base, "--policy", f"{tmp_path / 'missing.py'}:X"]) == 2
    assert "no such file" in capsys.readouterr().err
    assert main([*base, "--policy", f"{tmp_path / 's.py'}:Nope"]) == 2
    assert "has no 'Nope'; it defines Greedy, helper" in capsys.readouterr().err
    assert main([*base, "--policy", f"{tmp_path / 's.py'}:helper"]) == 2
    assert "which has no predict()" in capsys.readouterr().err
    assert main([*base, "--policy", "no_such_pkg.mod:X"]) == 2
    assert "cannot import 'no_such_pkg.mod'" in capsys.readouterr().err


class _Recorder:
    """Takes the first allowed option of every entry and records the masks it was given."""

    seen: ClassVar[list[np.ndarray]] = []

    def __init__(self, env):
        self.env = env
        self.nvec = env.action_space.nvec

    def predict(self, obs, state=None, episode_start=None, deterministic=True, action_masks=None):
        _Recorder.seen.append(action_masks)
        expected = self.env.get_wrapper_attr("action_masks")()
        assert np.array_equal(action_masks, expected)
        parts = np.split(np.asarray(action_masks, bool), np.cumsum(self.nvec)[:-1])
        return np.array([np.flatnonzero(p)[0] for p in parts]), state


def test_a_class_from_the_api_gets_built_and_receives_the_masks():
    _Recorder.seen = []
    res = evaluate(
        "edgegym/EnergyFairShare-v0", [_Recorder], scenario="etf-tx2-arrivals",
        episodes=1, overrides={"quanta": 5}, progress=False,
    )  # fmt: skip
    assert res.ok and len(_Recorder.seen) == 5
    assert all(m is not None and m.dtype == bool and m.size == 488 for m in _Recorder.seen)


def test_a_policy_without_action_masks_gets_none_passed():
    calls = []

    class Plain:
        def __init__(self, env):
            self.n = env.action_space.nvec.size

        def predict(self, obs, state=None, episode_start=None, deterministic=True):
            calls.append(1)
            return np.zeros(self.n, dtype=np.int64), state

    res = evaluate(
        "edgegym/EnergyFairShare-v0", {"plain": Plain}, scenario="etf-tx2-arrivals",
        episodes=1, overrides={"quanta": 3}, progress=False,
    )  # fmt: skip
    assert res.ok and len(calls) == 3


def test_describe_action_reads_an_action_in_words_and_numbers():
    from edgegym.families.continual import ContinualLearningEnv
    from edgegym.families.energy import EnergyFairShareEnv

    env = ContinualLearningEnv(streams=2, windows=2)
    env.reset(seed=0)
    a = np.zeros(env.action_space.shape, dtype=np.int64)
    a[0:4] = [3, 1, 20, 10]  # retrain with configuration 2 on 20 quanta, infer config 1 on 10
    q = env.spec_.quantum
    lines = env.describe_action(a).splitlines()
    assert len(lines) == 2 and "no retraining" in lines[1]
    assert f"configuration 2 ({env.spec_.retrain_configs[2].name}) on {20 * q:.2f} GPU" in lines[0]
    assert (
        f"configuration 1 ({env.spec_.inference_configs[1].name}) on {10 * q:.2f} GPU" in lines[0]
    )
    energy = EnergyFairShareEnv("etf-tx2-resnet50-mobilenetv2")
    energy.reset(seed=0)
    text = energy.describe_action(np.array([15, 45, 0, 0, 0, 0, 0, 0]))
    assert text.splitlines() == [
        "A1: 15 of 60 units (0.075 s, 25% of the quantum)",
        "A2: 45 of 60 units (0.225 s, 75% of the quantum)",
    ]


def test_describe_action_for_mig_and_dag():
    from edgegym.families.dag import DAGOffloadEnv
    from edgegym.families.mig import MIGReconfigEnv

    mig = MIGReconfigEnv("migrator-w5", window_s=12, windows=1)
    mig.reset(seed=0)
    cat = mig.spec_.catalogue
    n = next(k for k, sig in enumerate(cat.signatures) if sig[2] and not sig[3])
    text = mig.describe_action(n).splitlines()
    assert text[0] == (
        f"tenant 0: inference on {' + '.join(f'{g}g' for g in cat.signatures[n][0])}, "
        f"retraining on {' + '.join(f'{g}g' for g in cat.signatures[n][2])}"
    )
    assert text[1].endswith("retraining on none") and text[2] == f"({cat.describe(n)})"
    dag = DAGOffloadEnv(requests=2)
    dag.reset(seed=0)
    snap = dag.sim_state()
    assert snap.kind == "admit"
    a = np.zeros(dag.action_space.shape, dtype=np.int64)
    a[1] = 1  # task 0 retrains with configuration 0; the others do not
    lines = dag.describe_action(a).splitlines()
    assert lines[0].startswith(f"request 0 ({snap.app.name}) arrives")
    assert f"configuration 0 ({snap.options[0][0].name}" in lines[1]
    assert all(line.endswith("no retraining") for line in lines[2 : 1 + snap.app.n])
    dag.step(a)
    place = dag.sim_state()
    assert place.kind == "place"
    assert dag.describe_action(np.array([1, *[0] * (a.size - 1)])).endswith("on server 1")


#: (file text, NAME, exception type, line of the raise) of user files that fail as they load
#: or as they build the policy.
BROKEN = {
    "syntax": ("class A:\n    def __init__(self, env:\n", "A", "SyntaxError", 2),
    "import_at_load": ("import no_such_pkg_xyz\n\nclass A:\n    pass\n", "A", "ModuleNotFound", 1),
    "runtime_at_load": ("x = 1\nraise RuntimeError('no config')\n", "A", "RuntimeError", 2),
    "runtime_in_init": (
        "class A:\n    def __init__(self, env):\n        raise RuntimeError('boom')\n",
        "A",
        "RuntimeError: boom",
        3,
    ),
    "import_in_init": (
        "class A:\n    def __init__(self, env):\n        import no_such_pkg_xyz\n",
        "A",
        "ModuleNotFoundError: No module named 'no_such_pkg_xyz'",
        3,
    ),
    "value_in_factory": (
        "def make(env):\n    raise ValueError('bad thing')\n",
        "make",
        "ValueError: bad thing",
        2,
    ),
    "key_in_factory": ("def make(env):\n    return {}['k']\n", "make", "KeyError: 'k'", 2),
    "wrong_signature": ("class A:\n    def __init__(self):\n        pass\n", "A", "TypeError", 1),
}


@pytest.mark.parametrize("workers", ["1", "2"])
@pytest.mark.parametrize("case", sorted(BROKEN))
def test_any_exception_of_a_user_file_is_one_line_naming_spec_exception_and_line(
    case, workers, tmp_path, monkeypatch, capsys
):
    text, name, exc, line = BROKEN[case]
    (tmp_path / f"{case}.py").write_text(text)
    monkeypatch.chdir(tmp_path)
    spec = f"{case}.py:{name}"
    argv = ["evaluate", "edgegym/EnergyFairShare-v0", "--policy", spec, "--episodes", "1"]
    assert main([*argv, "--workers", workers, "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith(f"edgegym: error: policy {spec!r}: "), err
    assert exc in err and err.rstrip().endswith(f"({case}.py:{line})"), err


def test_a_failure_deeper_in_the_users_code_names_the_line_in_the_file(tmp_path):
    (tmp_path / "helpers.py").write_text("def load():\n    raise OSError('no weights')\n")
    (tmp_path / "deep.py").write_text(
        "import sys\nsys.path.insert(0, __file__.rsplit('/', 1)[0])\nimport helpers\n\n"
        "class A:\n    def __init__(self, env):\n        helpers.load()\n"
    )
    where = r"building it raised OSError: no weights \(.*deep\.py:7\)"
    with pytest.raises(ValueError, match=where):
        evaluate("edgegym/EnergyFairShare-v0", [f"{tmp_path / 'deep.py'}:A"], episodes=1,
                 progress=False)  # fmt: skip


def test_a_users_parameters_are_checked_against_its_annotations_and_defaults(tmp_path, capsys):
    (tmp_path / "typed.py").write_text(
        "class A:\n    def __init__(self, env, cap: int = 5, rate=0.5, on=False, label='x'):\n"
        "        pass\n\n    def predict(self, obs, **kw):\n        return None, None\n"
    )
    base = ["evaluate", "edgegym/EnergyFairShare-v0", "--episodes", "1", "--no-progress"]
    spec = f"{tmp_path / 'typed.py'}:A"
    for params, needle in [
        ("cap=abc", "cap must be a whole number, got 'abc'"),
        ("cap=2.5", "cap must be a whole number, got 2.5"),
        ("rate=fast", "rate must be a finite number, got 'fast'"),
        ("on=2", "on must be true or false, got 2"),
    ]:
        assert main([*base, "--policy", f"{spec}:{params}"]) == 2
        assert needle in capsys.readouterr().err

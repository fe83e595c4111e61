"""Determinism across processes (issue 17): the same seeded rollout of every id, under the
published scheduler and ``random``, hashes the same in two Python processes with different
hash seeds (set iteration, dict-of-set orders and the like would show here), and
``edgegym evaluate`` writes the same JSON twice apart from the policies' decision times."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from edgegym.cli import main

#: Steps per rollout: enough to cross window starts, retraining completions and DAG arrivals
#: in every family, few enough for MIGRator's ILP (about 0.03 s a step).
STEPS = 60

ROLLOUTS = textwrap.dedent(
    f"""
    import hashlib, json, sys
    import gymnasium as gym
    import numpy as np
    import edgegym
    from edgegym.baselines import make_policy
    from edgegym.core.registry import ENV_IDS, FLAT_IDS
    from edgegym.core.registry import family_of_id

    def feed(h, x):
        if isinstance(x, dict):
            for k in sorted(x):
                h.update(repr(k).encode()); feed(h, x[k])
        elif isinstance(x, (list, tuple)):
            h.update(b"[%d" % len(x))
            for v in x:
                feed(h, v)
        elif isinstance(x, np.ndarray) or isinstance(x, np.generic):
            a = np.ascontiguousarray(x)
            h.update(str((a.dtype.str, a.shape)).encode()); h.update(a.tobytes())
        else:
            h.update(repr(x).encode())

    out = {{}}
    for env_id in [*ENV_IDS, *FLAT_IDS]:
        published = family_of_id(env_id).default_policy if env_id in ENV_IDS else None
        for spec in [p for p in (published, "random") if p]:
            env = gym.make(env_id)
            pol = make_policy(spec, env)
            h = hashlib.sha256()
            obs, info = env.reset(seed=123)
            pol.reset(123)
            feed(h, obs); feed(h, info)
            for _ in range({STEPS}):
                action, _ = pol.predict(obs)
                obs, r, term, trunc, info = env.step(action)
                feed(h, [action, obs, r, term, trunc, info])
                if term or trunc:
                    obs, info = env.reset(seed=124)
                    pol.reset(124)
            out[env_id + " " + spec] = h.hexdigest()
    json.dump(out, sys.stdout)
    """
)


def _hashes(hash_seed: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    run = subprocess.run(
        [sys.executable, "-c", ROLLOUTS],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    return json.loads(run.stdout)


def test_every_id_rolls_out_the_same_in_two_processes():
    first, second = _hashes("1"), _hashes("4242")
    from edgegym.core.registry import ENV_IDS, FLAT_IDS

    assert len(first) == 2 * len(ENV_IDS) + len(FLAT_IDS)  # published + random; random
    differ = [key for key in first if first[key] != second.get(key)]
    assert not differ, f"rollouts differ across processes: {differ}"


def _canonical(path: Path) -> str:
    data = json.loads(path.read_text())
    for row in data["results"]:  # wall-clock timings, the one field allowed to differ
        for record in (row, *row["per_episode"]):
            record.pop("decision_time_s")
    return json.dumps(data, sort_keys=True)


@pytest.mark.parametrize(
    ("env_id", "policies"),
    [
        ("edgegym/EnergyFairShare-v0", ["etf", "random"]),
        ("edgegym/ContinualLearning-v0", ["thief", "random"]),
    ],
)
def test_evaluate_twice_writes_the_same_json(tmp_path, env_id, policies):
    paths = [tmp_path / "a.json", tmp_path / "b.json"]
    for path in paths:
        argv = ["evaluate", env_id, "--episodes", "2", "--json", str(path), "--no-progress"]
        for p in policies:
            argv += ["--policy", p]
        if "Continual" in env_id:
            argv += ["--set", "windows=3"]
        assert main(argv) == 0
    assert _canonical(paths[0]) == _canonical(paths[1])
    assert set(json.loads(paths[0].read_text())["results"][0]) >= {"per_episode", "metrics"}

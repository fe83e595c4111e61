"""Golden trajectories: record today's episodes, and check that the code still reproduces them.

Usage (from the repository root)::

    python -m tests.golden.record                  # record every case into tests/golden/data
    python -m tests.golden.record --check          # recompute every case and compare
    python -m tests.golden.record --check --only 'migrator-w1__*' --steps 200
    python -m tests.golden.record --out /tmp/golden  # another data folder (also for --check)

The data folder is ``tests/golden/data`` unless ``--out DIR`` or the environment variable
``EDGEGYM_GOLDEN_DIR`` names another (``--out`` wins). ``tests/test_golden.py`` reads the same
folder.

Cases (one episode each, one file ``<case>.npz`` each):

* ``<scenario>__<scheduler>__s<seed>``: every bundled scenario (all four families) on its
  family's base env id with the family's published scheduler
  (:data:`edgegym.baselines.DEFAULT_POLICY`), seeds 0 and 1.
* ``<EnvName>__random__s<seed>``: every id in ``ENV_IDS`` and ``FLAT_IDS`` (``EnvName`` is the
  id without ``edgegym/``) on its family's default scenario with the small overrides of
  :data:`FAST_OVERRIDES` (Flat ids use their base id's), seeds 0 and 1, driven by a *random
  masked* policy: a ``numpy.random.default_rng(seed)`` picks uniformly among the mask-true
  entries of ``env.unwrapped.action_masks()`` (Discrete), or per entry among the allowed
  values of that entry's slice of the flat mask (MultiDiscrete); Flat ids use
  ``env.get_wrapper_attr("action_masks")()``, the Discrete mask. An entry with no allowed value
  (an environment bug) gets value 0.

Episodes are seeded as ``edgegym.evaluation._run_episode`` seeds them: ``env.reset(seed=seed)``,
``env.action_space.seed(seed)``, ``policy.reset(seed)`` where the policy has one.

Recorded per decision step: the reward and ``info["energy_j"]`` (float64, 0 when absent),
``terminated``, ``truncated``, and digests of the observation, of ``info["action_mask"]`` and of
the action. A digest is the first 8 bytes (64 bits) of the SHA-1 of a value's canonical bytes:
for a Dict observation the keys sorted, each with its array's dtype, shape and bytes; for an
array its dtype, shape and bytes (``None``, e.g. a missing mask, has a digest of its own).
Eight bytes instead of SHA-1's twenty keep the data folder at about 1.7 MB instead of 3 MB;
an accidental 64-bit collision hiding a real change is out of reach. Actions are integers and
are digested as int64 (the dtype a scheduler returns is not simulation behaviour). Also
recorded: the digests of the reset observation and of the reset ``info["action_mask"]``, and,
when the episode ends within the recorded steps, the final ``info["episode_metrics"]`` (float64
values, keys sorted). Each file's ``meta`` (JSON) holds the case, the edgegym git commit
(``git rev-parse --short HEAD``, and ``dirty``: whether tracked files had uncommitted changes),
the date, the numpy/gymnasium/python versions, the step cap, the steps recorded and whether the
episode finished.

Step caps: none in practice. Every case records its whole episode, so every file holds the
final ``episode_metrics``: continual 83-85 steps, energy 200-300, MIG 800 (``migrator-w1`` ..
``w8``) or 1800 (``w9`` .. ``w16``), DAG about 8000 (one step per placed DAG node), the
random-masked cases 8-230. :data:`DEFAULT_CAP` (20000 steps) only guards against an episode
that never ends; :data:`STEP_CAPS` (empty) is where a scenario would get a lower cap, and
``--steps K`` caps every case at ``K`` (a capped file has no ``episode_metrics``; meta
``finished`` is false). A full record, or a full check, takes about 12 minutes on two cores
(690 s to record on 2026-11-27; most of it the MIGRator cases, whose planner runs in every
episode).

``--check`` reruns each case for the stored number of steps (or fewer with ``--steps K``) and
compares: digests and flags must be equal, and floats equal to within :data:`ULP_TOLERANCE`
units in the last place (``--exact``: bitwise, so ``-0.0`` differs from ``0.0``; NaNs with the
same bits are equal). The tolerance is for the machine, not the code: numpy's SIMD ``exp``,
``log`` and ``power`` (AVX-512 builds) differ from the C library's by an ulp or two, so the
same commit gives rewards one ulp apart on different CPUs (seen: one reward of
``ekya-cityscapes__thief__s0``, recorded on another machine, differs by 1 ulp here). A code
change that moves a float moves it by far more than a few ulps, or changes a decision (an
action digest). An ``OK`` line says how many floats matched only within the tolerance.

A differing case prints the first differing step (decision steps count from 0; ``reset`` is
the reset observation) and field with both values, then for each differing field how many
steps differ (and the maximum absolute difference for floats), a different episode length, and
differing ``episode_metrics``. A case whose code raises is ``ERROR`` with the exception and
where it was raised; a missing file is ``MISSING`` with the command that records it. The exit
code is 0 only if every case matches.
"""

from __future__ import annotations

import argparse
import datetime as _dt
import fnmatch
import hashlib
import io
import json
import os
import platform
import subprocess
import sys
import time
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

#: File format version (in every file's meta).
FORMAT = 1
#: Episode seeds of every case.
SEEDS: tuple[int, ...] = (0, 1)
#: Bytes of each SHA-1 digest kept (the first 8 of 20; see the module docstring).
DIGEST_BYTES = 8
#: Step cap of every case whose scenario is not in :data:`STEP_CAPS`: above the longest
#: episode (about 8200 steps), so whole episodes are recorded; it only stops a runaway one.
DEFAULT_CAP = 20_000
#: Lower step caps of the published-scheduler cases, by scenario (none needed today).
STEP_CAPS: dict[str, int] = {}
#: Small overrides that make each family's default scenario fast (random-masked cases).
FAST_OVERRIDES: dict[str, dict[str, Any]] = {
    "edgegym/ContinualLearning-v0": {"streams": 3, "windows": 3},
    "edgegym/EnergyFairShare-v0": {"quanta": 30},
    "edgegym/MIGReconfig-v0": {"window_s": 12, "windows": 2},
    "edgegym/DAGOffload-v0": {"requests": 30},
}
#: Scenario of the random-masked cases where it is not the family's default.
FAST_SCENARIO: dict[str, str] = {"edgegym/MIGReconfig-v0": "migrator-w5"}
#: Name of the random masked policy in case names and meta.
RANDOM = "random"

#: Per-step fields in the order a difference within one step is reported.
STEP_FIELDS: tuple[str, ...] = (
    "action",
    "obs",
    "reward",
    "terminated",
    "truncated",
    "energy_j",
    "mask",
)
FLOAT_FIELDS = frozenset({"reward", "energy_j"})
#: Units in the last place two floats may differ by and still match (see the module
#: docstring: SIMD math differs across CPUs by an ulp or two); ``--exact`` makes it 0.
ULP_TOLERANCE = 4
DIGEST_FIELDS = frozenset({"action", "obs", "mask"})
#: Differing episode metrics listed by name in a report (the rest are counted).
MAX_METRIC_LINES = 4

ROOT = Path(__file__).resolve().parents[2]
DEFAULT_DIR = Path(__file__).resolve().parent / "data"
ENV_VAR = "EDGEGYM_GOLDEN_DIR"


# ----------------------------------------------------------------------------- cases
@dataclass(frozen=True)
class Case:
    """One recorded episode."""

    name: str
    env_id: str
    scenario: str
    policy: str
    seed: int
    cap: int
    overrides: dict[str, Any] = field(default_factory=dict, hash=False)

    @property
    def filename(self) -> str:
        return f"{self.name}.npz"


def _env_name(env_id: str) -> str:
    return env_id.split("/", 1)[-1]


def published_cases() -> list[Case]:
    """Every bundled scenario with its family's published scheduler, seeds 0 and 1."""
    from edgegym.baselines import DEFAULT_POLICY
    from edgegym.core.registry import ENV_IDS
    from edgegym.scenarios import bundled, load

    family_id = {fam: env_id for env_id, (_ep, fam, *_rest) in ENV_IDS.items()}
    out = []
    for scenario in bundled():
        family = load(scenario)["family"]
        policy = DEFAULT_POLICY[family]
        cap = STEP_CAPS.get(scenario, DEFAULT_CAP)
        for seed in SEEDS:
            name = f"{scenario}__{policy}__s{seed}"
            out.append(Case(name, family_id[family], scenario, policy, seed, cap))
    return out


def random_cases() -> list[Case]:
    """Every env id (base and Flat) on its fast default scenario, random masked policy."""
    from edgegym.core.registry import ENV_IDS, FLAT_IDS

    out = []
    for env_id in [*ENV_IDS, *FLAT_IDS]:
        base = FLAT_IDS.get(env_id, env_id)
        scenario = FAST_SCENARIO.get(base, ENV_IDS[base][2])
        for seed in SEEDS:
            name = f"{_env_name(env_id)}__{RANDOM}__s{seed}"
            overrides = dict(FAST_OVERRIDES[base])
            out.append(Case(name, env_id, scenario, RANDOM, seed, DEFAULT_CAP, overrides))
    return out


def all_cases() -> list[Case]:
    """Published-scheduler cases, then random-masked cases."""
    return [*published_cases(), *random_cases()]


def fast_cases() -> list[Case]:
    """The subset ``tests/test_golden.py`` checks: every random-masked case, plus the
    published scheduler on each family's default scenario with seed 0 (``--check`` runs both
    seeds of every scenario)."""
    from edgegym.core.registry import ENV_IDS

    defaults = {scenario for _ep, _fam, scenario, _s in ENV_IDS.values()}
    published = [c for c in published_cases() if c.scenario in defaults and c.seed == 0]
    return published + random_cases()


def select(cases: Sequence[Case], only: str | None) -> list[Case]:
    """Cases whose name matches one of the comma-separated names or glob patterns."""
    if not only:
        return list(cases)
    patterns = [p.strip() for p in only.split(",") if p.strip()]
    unknown = [p for p in patterns if not any(fnmatch.fnmatchcase(c.name, p) for c in cases)]
    if unknown:
        raise SystemExit(
            f"--only: no case matches {', '.join(map(repr, unknown))}; "
            f"cases look like {cases[0].name!r} (python -m tests.golden.record --list)"
        )
    return [c for c in cases if any(fnmatch.fnmatchcase(c.name, p) for p in patterns)]


# ----------------------------------------------------------------------------- digests
def _feed(h: Any, x: Any) -> None:
    if x is None:
        h.update(b"N;")
    elif isinstance(x, Mapping):
        h.update(b"D%d;" % len(x))
        for key in sorted(x):
            h.update(str(key).encode() + b"\0")
            _feed(h, x[key])
    elif isinstance(x, tuple | list):
        h.update(b"T%d;" % len(x))
        for item in x:
            _feed(h, item)
    else:
        a = np.ascontiguousarray(np.asarray(x))
        if a.dtype.hasobject:
            raise TypeError(f"cannot digest an object array: {a!r}")
        h.update(f"A{a.dtype.str}{a.shape};".encode())
        h.update(a.tobytes())


def digest(x: Any) -> bytes:
    """SHA-1 (first :data:`DIGEST_BYTES` bytes) of ``x``'s canonical bytes."""
    h = hashlib.sha1()
    _feed(h, x)
    return h.digest()[:DIGEST_BYTES]


def action_digest(action: Any) -> bytes:
    """Digest of an action as int64 values (the dtype a policy returns is not behaviour)."""
    a = np.asarray(action)
    if a.dtype.kind in "iub":
        a = a.astype(np.int64)
    return digest(a)


# ----------------------------------------------------------------------------- policies
class RandomMasked:
    """Uniform choice among the allowed actions (see the module docstring)."""

    def __init__(self, env: gym.Env, flat: bool) -> None:
        self.env = env
        self.flat = flat
        self.rng = np.random.default_rng(0)

    def reset(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def _pick(self, mask: np.ndarray) -> int:
        allowed = np.flatnonzero(mask)
        return int(allowed[self.rng.integers(len(allowed))]) if len(allowed) else 0

    def act(self) -> Any:
        env = self.env
        if self.flat:
            mask = env.get_wrapper_attr("action_masks")()
        else:
            mask = env.unwrapped.action_masks()
        mask = np.asarray(mask, dtype=bool).ravel()
        space = env.action_space
        if isinstance(space, gym.spaces.Discrete):
            return np.int64(self._pick(mask) + int(space.start))
        if isinstance(space, gym.spaces.MultiDiscrete):
            nvec = space.nvec.ravel()
            values = np.zeros(len(nvec), dtype=np.int64)
            offset = 0
            for i, n in enumerate(nvec):
                values[i] = self._pick(mask[offset : offset + int(n)])
                offset += int(n)
            return (values + space.start.ravel()).reshape(space.nvec.shape)
        raise TypeError(f"random masked policy: unsupported action space {space}")


# ----------------------------------------------------------------------------- running
def make_case_env(case: Case) -> gym.Env:
    """The environment of a case, made the way the evaluator makes it."""
    from edgegym.evaluation import make_env

    return make_env(case.env_id, case.scenario, case.overrides or None)


def run_case(case: Case, max_steps: int | None = None) -> dict[str, Any]:
    """Run one case for at most ``max_steps`` steps (default: its cap); return its record."""
    from edgegym.core.registry import FLAT_IDS

    limit = case.cap if max_steps is None else min(case.cap, max_steps)
    t0 = time.perf_counter()
    env = make_case_env(case)
    try:
        chooser: RandomMasked | None = None
        policy: Any = None
        if case.policy == RANDOM:
            chooser = RandomMasked(env, flat=case.env_id in FLAT_IDS)
        else:
            from edgegym.baselines import make_policy

            policy = make_policy(case.policy, env)
        obs, info = env.reset(seed=case.seed)
        env.action_space.seed(case.seed)
        target = chooser if chooser is not None else policy
        if hasattr(target, "reset"):
            target.reset(case.seed)
        rec: dict[str, list[Any]] = {f: [] for f in STEP_FIELDS}
        reset_obs, reset_mask = digest(obs), digest(info.get("action_mask"))
        state = None
        episode_start = np.array([True])
        done = False
        while not done and len(rec["reward"]) < limit:
            if chooser is not None:
                action = chooser.act()
            else:
                action, state = policy.predict(
                    obs, state=state, episode_start=episode_start, deterministic=True
                )
                episode_start = np.array([False])
            obs, reward, terminated, truncated, info = env.step(action)
            done = bool(terminated or truncated)
            rec["action"].append(action_digest(action))
            rec["obs"].append(digest(obs))
            rec["reward"].append(float(reward))
            rec["terminated"].append(bool(terminated))
            rec["truncated"].append(bool(truncated))
            rec["energy_j"].append(float(info.get("energy_j", 0.0)))
            rec["mask"].append(digest(info.get("action_mask")))
        metrics = (info.get("episode_metrics") or {}) if done else None
    finally:
        env.close()
    n = len(rec["reward"])
    out: dict[str, Any] = {
        "reset_obs": np.frombuffer(reset_obs, dtype=np.uint8).copy(),
        "reset_mask": np.frombuffer(reset_mask, dtype=np.uint8).copy(),
        "reward": np.asarray(rec["reward"], dtype=np.float64),
        "energy_j": np.asarray(rec["energy_j"], dtype=np.float64),
        "terminated": np.asarray(rec["terminated"], dtype=bool),
        "truncated": np.asarray(rec["truncated"], dtype=bool),
    }
    for f in DIGEST_FIELDS:
        out[f] = np.frombuffer(b"".join(rec[f]), dtype=np.uint8).reshape(n, DIGEST_BYTES)
    keys = sorted(metrics) if metrics is not None else []
    out["metric_names"] = np.asarray(keys, dtype=str)
    out["metric_values"] = np.asarray([float(metrics[k]) for k in keys], dtype=np.float64)
    out["meta"] = {
        "format": FORMAT,
        "case": case.name,
        "env_id": case.env_id,
        "scenario": case.scenario,
        "overrides": case.overrides,
        "policy": case.policy,
        "seed": case.seed,
        "cap": limit,
        "steps": n,
        "finished": metrics is not None,
        "digest": f"sha1[:{DIGEST_BYTES}]",
        "seconds": round(time.perf_counter() - t0, 3),
    }
    return out


# ----------------------------------------------------------------------------- files
def _git(*args: str) -> str:
    try:
        return subprocess.run(
            ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True, timeout=30
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def provenance() -> dict[str, Any]:
    """Commit, date and versions stored in every file's meta."""
    return {
        "commit": _git("rev-parse", "--short", "HEAD") or "unknown",
        "dirty": bool(_git("status", "--porcelain", "--untracked-files=no")),
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "gymnasium": gym.__version__,
    }


def save(record: dict[str, Any], path: Path, extra_meta: Mapping[str, Any]) -> None:
    """Write a record as a compressed ``.npz`` (atomically)."""
    arrays = {k: v for k, v in record.items() if k != "meta"}
    meta = {**record["meta"], **extra_meta}
    arrays["meta"] = np.asarray(json.dumps(meta, sort_keys=True))
    buf = io.BytesIO()
    np.savez_compressed(buf, **arrays)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(buf.getvalue())
    tmp.replace(path)


def load(path: Path) -> dict[str, Any]:
    """Read a file written by :func:`save`."""
    with np.load(path, allow_pickle=False) as z:
        out = {k: z[k] for k in z.files}
    out["meta"] = json.loads(str(out["meta"]))
    return out


def record_command(case_names: Sequence[str] | None, out_dir: Path) -> str:
    """The command that records the given cases into ``out_dir``."""
    cmd = "python -m tests.golden.record"
    if case_names:
        cmd += f" --only {','.join(case_names)}"
    if out_dir.resolve() != DEFAULT_DIR:
        cmd += f" --out {out_dir}"
    return cmd


# ----------------------------------------------------------------------------- compare
def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64).view(np.uint64)


def ulps(a: Any, b: Any) -> np.ndarray:
    """Distance of float64 values in units in the last place, as float64 (0: bitwise equal;
    NaNs with the same bits are 0 apart; any other pair with a NaN is ``inf``)."""
    fa = np.ascontiguousarray(a, dtype=np.float64)
    fb = np.ascontiguousarray(b, dtype=np.float64)
    ia, ib = fa.view(np.int64), fb.view(np.int64)
    # Sign-magnitude bit patterns onto a monotone integer line: -0.0 and 0.0 are 1 apart.
    la = np.where(ia < 0, -(ia & np.int64(0x7FFF_FFFF_FFFF_FFFF)) - 1, ia)
    lb = np.where(ib < 0, -(ib & np.int64(0x7FFF_FFFF_FFFF_FFFF)) - 1, ib)
    same_sign = (la < 0) == (lb < 0)
    d = np.where(same_sign, np.abs(np.where(same_sign, la - lb, 0)), 0).astype(np.float64)
    # Opposite signs: the distance through zero (exact enough as a float; it is huge unless
    # both values are tiny).
    d = np.where(same_sign, d, np.abs(la.astype(np.float64)) + np.abs(lb.astype(np.float64)))
    nan = (np.isnan(fa) | np.isnan(fb)) & (ia != ib)
    return np.where(nan, np.inf, d)


def _show(fld: str, value: Any) -> str:
    if fld in DIGEST_FIELDS:
        return bytes(value).hex()[:16]
    if fld in FLOAT_FIELDS:
        return repr(float(value))
    return str(bool(value))


def compare(
    stored: dict[str, Any],
    fresh: dict[str, Any],
    expected_steps: int,
    tolerance: int = ULP_TOLERANCE,
    near: list[int] | None = None,
) -> list[str]:
    """Differences between a stored record and a fresh one; ``[]`` when they match (floats
    within ``tolerance`` ulps; 0 for bitwise).

    The first line names the first differing step and field with both values; further lines
    summarise every differing field. ``near``, when given, gets the count of floats that
    matched only within the tolerance appended.
    """
    n_near = 0
    first: tuple[int, int, str] | None = None  # (step, field order, message)
    summary: list[str] = []
    for fld, label in (("reset_obs", "obs"), ("reset_mask", "mask")):
        if not np.array_equal(stored[fld], fresh[fld]):
            msg = (
                f"first difference at reset, field {label}: "
                f"stored {_show(label, stored[fld])} now {_show(label, fresh[fld])}"
            )
            first = first or (-1, STEP_FIELDS.index(label), msg)
            summary.append(f"reset {label} differs")
    n_fresh = len(fresh["reward"])
    n = min(expected_steps, n_fresh)
    for order, fld in enumerate(STEP_FIELDS):
        s, f = stored[fld][:n], fresh[fld][:n]
        if fld in FLOAT_FIELDS:
            dist = ulps(s, f)
            diff = dist > tolerance
            n_near += int(np.count_nonzero((dist > 0) & ~diff))
        elif fld in DIGEST_FIELDS:
            diff = np.any(s != f, axis=1)
        else:
            diff = s != f
        if not diff.any():
            continue
        idx = np.flatnonzero(diff)
        i = int(idx[0])
        msg = f"first difference at step {i}, field {fld}: stored {_show(fld, s[i])} now "
        msg += _show(fld, f[i])
        line = f"{fld} differs at {len(idx)}/{n} steps"
        if fld in FLOAT_FIELDS:
            with np.errstate(invalid="ignore", over="ignore"):
                delta = np.abs(s[idx] - f[idx])
            msg += f" (|diff| {float(delta[0]):.3g})"
            line += f", max |diff| {float(np.nanmax(delta)) if np.isfinite(delta).any() else 'nan'}"
        summary.append(line)
        if first is None or (i, order) < first[:2]:
            first = (i, order, msg)
    if n_fresh != expected_steps:
        msg = (
            f"episode length differs: stored {expected_steps} steps (in this horizon), "
            f"now {n_fresh}"
        )
        summary.append(msg)
        if first is None:
            first = (n, len(STEP_FIELDS), msg)
    # Final metrics: only when the stored episode ended within the compared steps.
    if stored["meta"]["finished"] and expected_steps == stored["meta"]["steps"]:
        s_keys = [str(k) for k in stored["metric_names"]]
        f_keys = [str(k) for k in fresh["metric_names"]]
        if not fresh["meta"]["finished"]:
            summary.append("episode_metrics: stored at episode end, none now")
        elif s_keys != f_keys:
            msg = f"episode_metrics keys differ: stored {s_keys} now {f_keys}"
            summary.append(msg)
        else:
            sv, fv = stored["metric_values"], fresh["metric_values"]
            dist = ulps(sv, fv)
            n_near += int(np.count_nonzero((dist > 0) & (dist <= tolerance)))
            differ = [
                f"episode_metrics[{k}]: stored {float(a)!r} now {float(b)!r} "
                f"(|diff| {abs(float(a) - float(b)):.3g})"
                for k, a, b, d in zip(s_keys, sv, fv, dist, strict=True)
                if d > tolerance
            ]
            summary += differ[:MAX_METRIC_LINES]
            if len(differ) > MAX_METRIC_LINES:
                summary.append(f"{len(differ) - MAX_METRIC_LINES} more episode_metrics differ")
        if first is None and summary:
            first = (n, len(STEP_FIELDS) + 1, summary[0])
    if near is not None:
        near.append(n_near)
    if first is None:
        return []
    return [first[2], *(line for line in summary if line != first[2])]


@dataclass
class Outcome:
    """Result of checking one case."""

    case: Case
    status: str  # "OK", "DIFF", "MISSING", "ERROR"
    message: str
    steps: int = 0
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == "OK"

    def line(self) -> str:
        head = f"{self.status:<7} {self.case.name}"
        if self.status == "OK":
            return f"{head} ({self.steps} steps{self.message})"
        return f"{head}: {self.message}"


def check_case(
    case: Case, data_dir: Path, max_steps: int | None = None, tolerance: int = ULP_TOLERANCE
) -> Outcome:
    """Recompute one case and compare it with its stored file (floats within ``tolerance``
    ulps)."""
    path = data_dir / case.filename
    if not path.exists():
        return Outcome(
            case,
            "MISSING",
            f"golden file {path} does not exist; record it with: "
            f"{record_command([case.name], data_dir)}",
        )
    t0 = time.perf_counter()
    stored = load(path)
    meta = stored["meta"]
    if meta.get("format") != FORMAT or meta.get("digest") != f"sha1[:{DIGEST_BYTES}]":
        return Outcome(
            case,
            "ERROR",
            f"{path} has format {meta.get('format')} / digest {meta.get('digest')}, this "
            f"checker writes format {FORMAT} / sha1[:{DIGEST_BYTES}]; re-record it",
        )
    if (meta["env_id"], meta["scenario"], meta["policy"], meta["seed"]) != (
        case.env_id,
        case.scenario,
        case.policy,
        case.seed,
    ) or meta["overrides"] != case.overrides:
        return Outcome(case, "ERROR", f"{path} holds another case ({meta}); re-record it")
    expected = int(meta["steps"]) if max_steps is None else min(int(meta["steps"]), max_steps)
    try:
        fresh = run_case(case, max_steps=expected)
    except Exception as exc:  # the rebuilt code may raise: report it as this case's result
        where = traceback.extract_tb(exc.__traceback__)[-1]
        return Outcome(
            case, "ERROR", f"{type(exc).__name__}: {exc} (at {where.filename}:{where.lineno})"
        )
    seconds = time.perf_counter() - t0
    near: list[int] = []
    diffs = compare(stored, fresh, expected, tolerance, near)
    if diffs:
        note = ""
        if meta.get("numpy") != np.__version__:
            note = f" [recorded with numpy {meta.get('numpy')}, now {np.__version__}]"
        return Outcome(case, "DIFF", "; ".join(diffs) + note, expected, seconds)
    metrics = ", episode_metrics" if meta["finished"] and expected == meta["steps"] else ", capped"
    if near and near[0]:
        metrics += f", {near[0]} floats within {tolerance} ulps"
    return Outcome(case, "OK", metrics, expected, seconds)


# ----------------------------------------------------------------------------- CLI
def data_dir(out: str | Path | None = None) -> Path:
    """``out``, else ``$EDGEGYM_GOLDEN_DIR``, else ``tests/golden/data``."""
    if out is not None:
        return Path(out)
    env = os.environ.get(ENV_VAR)
    return Path(env) if env else DEFAULT_DIR


def _folder_size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.glob("*.npz"))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.golden.record",
        description="Record golden trajectories of every bundled scenario and env id, or "
        "check (--check) that the code reproduces them exactly.",
    )
    parser.add_argument(
        "--check", action="store_true", help="recompute and compare instead of recording"
    )
    parser.add_argument(
        "--only", metavar="NAME[,NAME]", help="case names or glob patterns (see --list)"
    )
    parser.add_argument(
        "--steps",
        type=int,
        metavar="K",
        help="at most K decision steps per case (default: each case's cap)",
    )
    parser.add_argument(
        "--out",
        metavar="DIR",
        help=f"data folder (default: ${ENV_VAR}, else tests/golden/data)",
    )
    parser.add_argument(
        "--exact",
        action="store_true",
        help=f"floats bitwise equal (default: within {ULP_TOLERANCE} ulps, for other CPUs)",
    )
    parser.add_argument("--list", action="store_true", help="list the case names and exit")
    args = parser.parse_args(argv)
    if args.steps is not None and args.steps < 1:
        parser.error("--steps must be >= 1")

    cases = all_cases()
    if args.list:
        for c in cases:
            print(c.name)
        return 0
    cases = select(cases, args.only)
    folder = data_dir(args.out)

    from tqdm.auto import tqdm

    t0 = time.perf_counter()
    bar = tqdm(cases, desc="check" if args.check else "record", unit="case", file=sys.stderr)
    if args.check:
        outcomes = []
        for case in bar:
            bar.set_postfix_str(case.name, refresh=True)
            outcome = check_case(case, folder, args.steps, 0 if args.exact else ULP_TOLERANCE)
            outcomes.append(outcome)
            tqdm.write(outcome.line())
        bar.close()
        bad = [o for o in outcomes if not o.ok]
        elapsed = time.perf_counter() - t0
        print(f"{len(outcomes) - len(bad)}/{len(outcomes)} cases match ({folder}, {elapsed:.1f} s)")
        missing = [o.case.name for o in bad if o.status == "MISSING"]
        if missing:
            print(f"missing files: record them with: {record_command(missing, folder)}")
        return 0 if not bad else 1

    extra = provenance()
    for case in bar:
        bar.set_postfix_str(case.name, refresh=True)
        rec = run_case(case, args.steps)
        save(rec, folder / case.filename, extra)
    bar.close()
    elapsed = time.perf_counter() - t0
    known = {c.filename for c in all_cases()}
    stale = sorted(p.name for p in folder.glob("*.npz") if p.name not in known)
    print(
        f"recorded {len(cases)} cases into {folder} in {elapsed:.1f} s; folder holds "
        f"{_folder_size(folder) / 1e6:.2f} MB (commit {extra['commit']}"
        f"{', uncommitted changes' if extra['dirty'] else ''})"
    )
    if stale:
        print(f"note: files of no current case (delete them?): {', '.join(stale)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

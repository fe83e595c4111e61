"""A training run's ``config.yaml``: what was asked, the configuration, the per-run records.

Every backend's ``train`` goes the same way through this module: :class:`TrainRequest`
holds its arguments, :func:`run_config` checks them and gives a new run's configuration (or a
resumed run's saved one, its new goal and the model it continues from), :meth:`Run.start`
writes ``config.yaml`` with a new run record, and :meth:`Run.finish` (or :meth:`Run.stop`,
on Ctrl-C) closes it. ``--init-from`` reads its model with :func:`read_init`.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gymnasium as gym
import numpy as np
import yaml
from gymnasium import spaces

from edgegym.agents.config import ConfigError, check_saved, dotted, load_hyperparams
from edgegym.core.registry import ENV_IDS
from edgegym.evaluation import check_env_id, default_scenario, make_env
from edgegym.outputs import write_atomic

if TYPE_CHECKING:
    from edgegym.agents.run.checkpoints import Checkpoints

CONFIG_NAME = "config.yaml"
EVALUATIONS_NAME = "evaluations.json"


@dataclass(frozen=True)
class TrainRequest:
    """What a ``train`` call was asked for: the arguments every backend takes, as
    :func:`edgegym.agents.sb3.train.train` documents them (``out`` as a ``Path``)."""

    env_id: str
    scenario: str | None = None
    overrides: Mapping[str, Any] | None = None
    timesteps: int | None = None
    n_envs: int | None = None
    seed: int | None = None
    out: Path = Path("runs/ppo")
    resume: bool = False
    hyperparams: Sequence[str] | Mapping[str, Any] | None = None
    hyperparams_file: str | Path | None = None
    progress: bool = True
    init_from: str | Path | None = None

    def check(self) -> str:
        """Check the arguments; return the id's family.

        Raises:
            ValueError: Unknown id; :class:`ConfigError` for a non-edgegym id, bad numbers,
                or ``init_from`` with ``resume``.
        """
        check_env_id(self.env_id)
        if self.env_id not in ENV_IDS:
            raise ConfigError(
                f"edgegym train needs an edgegym id ({', '.join(ENV_IDS)}), not {self.env_id}"
            )
        for name, value in (("timesteps", self.timesteps), ("n_envs", self.n_envs)):
            if value is not None and (isinstance(value, bool) or int(value) < 1):
                raise ConfigError(f"{name} must be >= 1, got {value}")
        if self.seed is not None and (isinstance(self.seed, bool) or int(self.seed) < 0):
            raise ConfigError(f"seed must be >= 0, got {self.seed}")
        if self.init_from is not None and self.resume:
            raise ConfigError("--init-from starts a new run; --resume continues one (not both)")
        return ENV_IDS[self.env_id][1]


@dataclass
class TrainResult:
    """What a ``train`` call produced.

    Attributes:
        out: The output folder.
        model_path: The final model (``model.zip``; RLlib: the ``model/`` folder).
        config_path: The configuration written beside it.
        timesteps: Timesteps trained in total (over resumed runs too).
        wall_s: Wall time of this run, seconds.
        evaluations: Every periodic evaluation (see ``evaluations.json``).
    """

    out: Path
    model_path: Path
    config_path: Path
    timesteps: int
    wall_s: float
    evaluations: list[dict[str, Any]] = field(default_factory=list)


# ----------------------------------------------------------------------------- configuration
def run_config(
    request: TrainRequest, backend: str, store: Checkpoints
) -> tuple[dict[str, Any], Path | None, int]:
    """``(config, source, start)`` of a run: a resumed one's saved config with its new goal,
    the model it continues from (:meth:`Checkpoints.resume_source`) and that model's
    timesteps; or a new config, ``None`` and 0.

    Args:
        request: The ``train`` call's arguments.
        backend: ``sb3`` or ``rllib`` (recorded as ``backend``, but for SB3's runs).
        store: The backend's saved models in ``request.out``.

    Raises:
        ConfigError: Bad arguments (:meth:`TrainRequest.check`), a folder that already holds
            a run (a new one) or none (a resumed one), changed settings on resume, a resumed
            run already at its goal.
    """
    family = request.check()
    if request.resume:
        cfg = _resume_config(request, backend)
        source, start = store.resume_source(cfg)
        set_goal(request.out, cfg, start, request.timesteps)
        return cfg, source, start
    cfg = new_config(request, family, store, backend)
    if backend != "sb3":
        cfg = {"edgegym_train_config": cfg.pop("edgegym_train_config"), "backend": backend, **cfg}
    return cfg, None, 0


def _other_backend(out: Path, backend: str) -> str | None:
    """The backend of the run in ``out`` where it is not ``backend`` (its ``config.yaml``
    says; ``None`` where it is the same, or the config cannot be read)."""
    from edgegym.agents.policy import PolicyLoadError, read_config

    try:
        saved = read_config(out / CONFIG_NAME, loading=False).get("backend", "sb3")
    except (PolicyLoadError, OSError, ValueError, AttributeError):
        return None
    return str(saved) if saved != backend and saved in ("sb3", "rllib") else None


def new_config(
    request: TrainRequest, family: str, store: Checkpoints, backend: str = "sb3"
) -> dict[str, Any]:
    """The configuration of a new run (the first keys of ``config.yaml``).

    Raises:
        ConfigError: ``out`` already holds a run (its config or final model), or files a new
            run would overwrite, or bad hyperparameters.
    """
    out, final = request.out, store.final_name
    if (out / CONFIG_NAME).exists() or (out / final).exists():
        other = _other_backend(out, backend)
        if other is not None:
            raise ConfigError(
                f"{out} already holds a training run of --backend {other}; choose another "
                f"--out (--resume --backend {other} continues it)"
            )
        if not (out / final).exists() and not store.listing():
            raise ConfigError(
                f"{out} holds a training run that stopped before its first checkpoint (only "
                f"{CONFIG_NAME} and logs): nothing to resume; delete {out} to start it again, "
                "or choose another --out"
            )
        raise ConfigError(
            f"{out} already holds a training run; pass --resume to continue it, or "
            "choose another --out"
        )
    foreign = [n for n in ("best_model.zip", EVALUATIONS_NAME, "checkpoints") if (out / n).exists()]
    if foreign:
        raise ConfigError(
            f"{out} holds {', '.join(foreign)} but no training run (no {CONFIG_NAME}); a new run "
            "would overwrite them: choose another --out"
        )
    hp = load_hyperparams(family, request.hyperparams_file, request.hyperparams)
    if request.timesteps is not None:
        hp["train"]["timesteps"] = int(request.timesteps)
    if request.n_envs is not None:
        hp["train"]["n_envs"] = int(request.n_envs)
    env_id, scenario = request.env_id, request.scenario
    return {
        "edgegym_train_config": 1,
        "env_id": env_id,
        "family": family,
        "scenario": scenario if scenario is not None else default_scenario(env_id),
        "overrides": dict(request.overrides or {}),
        "seed": int(request.seed or 0),
        "timesteps": int(hp["train"]["timesteps"]),
        "hyperparams_file": (
            str(request.hyperparams_file) if request.hyperparams_file else f"{family}.yaml"
        ),
        "hyperparam_overrides": dotted(request.hyperparams),
        "hyperparams": hp,
    }


def _resume_config(request: TrainRequest, backend: str) -> dict[str, Any]:
    """The saved config of the run to resume, checked against what this call asks.

    Raises:
        ConfigError: No readable config, another backend, other settings, new hyperparameters.
    """
    from edgegym.agents.policy import PolicyLoadError, read_config

    out = request.out
    try:
        cfg = read_config(out / CONFIG_NAME)
    except PolicyLoadError as exc:
        raise ConfigError(f"--resume: {exc}") from None
    try:  # every section and setting the run reads, with values in their ranges
        check_saved(cfg["hyperparams"], out / CONFIG_NAME, cfg.get("family"))
    except ConfigError as exc:
        raise ConfigError(f"--resume: {exc}") from None
    if cfg.get("backend", "sb3") != backend:
        raise ConfigError(
            f"--resume: {out} was trained with --backend {cfg.get('backend', 'sb3')}, not "
            f"{backend} (resume with the same backend or train into another folder)"
        )
    overrides = dict(request.overrides) if request.overrides else None
    given = {
        "env id": (request.env_id, cfg.get("env_id")),
        "scenario": (request.scenario, cfg.get("scenario")),
        "overrides": (overrides, cfg.get("overrides") or {}),
        "seed": (request.seed, cfg.get("seed")),
        "n_envs": (request.n_envs, cfg["hyperparams"]["train"]["n_envs"]),
    }
    for what, (new, old) in given.items():
        if new is not None and new != old:
            raise ConfigError(
                f"--resume: {out} was trained with {what} {old!r}, not {new!r} "
                "(resume with the same settings or train into another folder)"
            )
    if request.hyperparams or request.hyperparams_file:
        raise ConfigError(
            f"--resume: {out} keeps its hyperparameters ({out / CONFIG_NAME}); "
            "drop --hp / --config, or train into another folder"
        )
    return cfg


def set_goal(out: Path, cfg: dict[str, Any], start: int, timesteps: int | None) -> None:
    """Set ``cfg["timesteps"]`` of a resumed run (``timesteps``, else its recorded target).

    Raises:
        ConfigError: The run is already there (``start >= goal``).
    """
    goal = int(timesteps) if timesteps is not None else int(cfg["timesteps"])
    if start >= goal:
        given = f"--timesteps {goal}" if timesteps is not None else f"its target {goal}"
        raise ConfigError(
            f"{out} is already at {start} timesteps >= {given}; pass a larger "
            "--timesteps to continue"
        )
    cfg["timesteps"] = goal


def check_baseline(cfg: Mapping[str, Any]) -> None:
    """Build the evaluation baseline once, so a bad one fails before any training."""
    hp = cfg["hyperparams"]
    baseline = hp["eval"]["baseline"]
    if baseline and hp["eval"]["freq"]:
        from edgegym.baselines import make_policy

        make_policy(baseline, make_env(cfg["env_id"], cfg["scenario"], cfg["overrides"]))


def spaces_record(env: gym.Env) -> dict[str, Any]:
    """``config.yaml``'s ``spaces``: the observation and action spaces the policy was trained
    on and, where the actions are a joint-action catalogue, its rule, size and fingerprint
    (what a loaded policy checks its environment's catalogue against)."""
    try:
        joint = env.get_wrapper_attr("joint")
    except AttributeError:
        joint = None
    return {
        "observation": _space_record(env.observation_space),
        "action": _space_record(env.action_space),
        "joint_actions": None
        if joint is None
        else {"rule": joint.rule, "n": len(joint), "fingerprint": joint.fingerprint()},
    }


def _space_record(space: gym.Space) -> Any:
    if isinstance(space, spaces.Dict):
        return {k: _space_record(v) for k, v in space.spaces.items()}
    if isinstance(space, spaces.Box):
        return f"Box{tuple(int(s) for s in space.shape)}"
    if isinstance(space, spaces.Discrete):
        return f"Discrete({int(space.n)})"
    if isinstance(space, spaces.MultiDiscrete):
        return f"MultiDiscrete({[int(n) for n in space.nvec]})"
    return str(space)


def versions() -> dict[str, str]:
    """Versions of the packages a trained policy depends on."""
    import sb3_contrib
    import stable_baselines3
    import torch

    import edgegym

    return {
        "edgegym": edgegym.__version__,
        "stable_baselines3": stable_baselines3.__version__,
        "sb3_contrib": sb3_contrib.__version__,
        "torch": torch.__version__,
        "gymnasium": gym.__version__,
        "numpy": np.__version__,
        "python": platform.python_version(),
    }


# ----------------------------------------------------------------------------- run records
@dataclass
class Run:
    """One training run (new or resumed) in its folder: the configuration ``config.yaml``
    holds and this run's record in its ``runs`` list.

    Attributes:
        out: The run folder.
        cfg: The configuration (written to ``config.yaml`` by :meth:`save`).
        record: This run's entry of ``cfg["runs"]``.
        index: ``k`` of this run's ``logs/run-<k>`` (1 for a new run).
    """

    out: Path
    cfg: dict[str, Any]
    record: dict[str, Any]
    index: int

    @classmethod
    def start(cls, out: Path, cfg: dict[str, Any]) -> Run:
        """Record the machine and a new run in ``cfg``, create ``out`` and write
        ``config.yaml``."""
        cfg["machine"] = {
            "platform": platform.platform(),
            "machine": platform.machine(),
            "cpu_count": os.cpu_count(),
        }
        out.mkdir(parents=True, exist_ok=True)
        n_runs = len(list((out / "logs").glob("run-*"))) if (out / "logs").exists() else 0
        record = {"started": _dt.datetime.now().isoformat(timespec="seconds")}
        cfg.setdefault("runs", []).append(record)
        run = cls(out, cfg, record, n_runs + 1)
        run.save()
        return run

    @property
    def log_dir(self) -> Path:
        """``logs/run-<k>``: this run's ``progress.csv`` and TensorBoard files."""
        return self.out / "logs" / f"run-{self.index}"

    def save(self) -> None:
        """Write ``config.yaml`` (through a temporary file and a rename)."""
        write_atomic(self.out / CONFIG_NAME, yaml.safe_dump(_plain(self.cfg), sort_keys=False))

    def stop(self, store: Checkpoints, model: Any, timesteps: int, keep: int) -> None:
        """An interrupted run (Ctrl-C, SIGTERM): save a checkpoint of ``model`` where it
        stopped (``--resume`` goes on from it) and note the step in ``config.yaml``."""
        store.save(model, timesteps, keep)
        self.record["interrupted_at"] = int(timesteps)
        self.save()

    def finish(
        self,
        wall: float,
        timesteps: int,
        evaluations: Sequence[Mapping[str, Any]],
        model_path: Path,
    ) -> TrainResult:
        """Close the run record, note the timesteps and last evaluation, write
        ``config.yaml``; return the :class:`TrainResult`."""
        self.record.update(
            {
                "finished": _dt.datetime.now().isoformat(timespec="seconds"),
                "wall_s": round(wall, 2),
                "timesteps": int(timesteps),
            }
        )
        self.cfg["trained_timesteps"] = int(timesteps)
        if evaluations:
            self.cfg["last_evaluation"] = evaluations[-1]
        self.save()
        return TrainResult(
            out=self.out,
            model_path=model_path,
            config_path=self.out / CONFIG_NAME,
            timesteps=int(timesteps),
            wall_s=wall,
            evaluations=list(evaluations),
        )


def _plain(obj: Any) -> Any:
    """``obj`` as YAML's plain types (numpy scalars, paths and ``str`` subclasses too)."""
    if isinstance(obj, Mapping):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_plain(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, Path | str):
        return str(obj)  # also str subclasses such as torch's version string
    return obj


# ----------------------------------------------------------------------------- --init-from
def read_init(path: str | Path) -> tuple[Any, dict[str, Any], Path]:
    """``(model, its config, model path)`` of ``--init-from`` (an SB3 model: both backends
    start from one).

    Raises:
        ConfigError: The model or its config cannot be read (the message names the file).
    """
    from edgegym.agents.policy import PolicyLoadError, load_model

    try:
        return load_model(path)
    except PolicyLoadError as exc:
        raise ConfigError(f"--init-from: {exc}") from None


def init_record(source: Any, source_cfg: Mapping[str, Any], model_path: Path) -> dict[str, Any]:
    """What ``config.yaml`` keeps under ``init_from``: the model, its timesteps and scenario."""
    return {
        "model": str(model_path),
        "timesteps": int(source.num_timesteps),
        "scenario": source_cfg.get("scenario"),
    }


__all__ = [
    "CONFIG_NAME",
    "EVALUATIONS_NAME",
    "Run",
    "TrainRequest",
    "TrainResult",
    "check_baseline",
    "init_record",
    "new_config",
    "read_init",
    "run_config",
    "set_goal",
    "spaces_record",
    "versions",
]

"""Train PPO / MaskablePPO on an edgegym environment: the engine behind ``edgegym train``.

:func:`train` builds ``n_envs`` copies of the environment (a ``DummyVecEnv`` for one, a
``SubprocVecEnv`` for several on a multi-core machine; ``train.vec_env`` in the
hyperparameters decides), wraps them as the family's hyperparameter file says
(:mod:`edgegym.agents.config`), and trains with a progress bar, TensorBoard and CSV logs,
periodic evaluation against the family's best baseline on fixed seeds, checkpoints and
resume. The output folder holds::

    config.yaml          the exact configuration: env id, scenario, overrides, merged
                         hyperparameters, seed, spaces, versions, machine, run record
    model.zip            the final model (SB3 format; load with --policy ppo:DIR/model.zip)
    best_model.zip       the model of the best evaluation (when evaluation is on)
    evaluations.json     every evaluation: timesteps, PPO's and the baseline's mean return
    checkpoints/         ckpt_<timesteps, 10 digits>.zip (ckpt_0000000512.zip), the newest
                         ``checkpoint.keep`` kept
    logs/run-<k>/        progress.csv and TensorBoard event files of the k-th (resumed) run

**Determinism**: the same seed, hyperparameters and machine give the same policy, bit for
bit: the global and environment seeds come from ``seed`` (environment ``i`` is reset with
``seed + i``), torch runs on ``train.torch_threads`` threads (1 by default) and evaluation
draws no random numbers. Subprocess and in-process vector environments give the same result.
A resumed run continues from the newest checkpoint (weights, optimiser, timestep count); it
is not bit-identical to an uninterrupted run (environments restart their episodes).
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import platform
import re
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import yaml
from gymnasium import spaces

from edgegym.agents.config import ConfigError, dotted, load_hyperparams
from edgegym.agents.policy import SIZE_FREE, PPOPolicy, algo_class, size_free_class
from edgegym.core.registry import ENV_IDS
from edgegym.evaluation import check_env_id, default_scenario, make_env
from edgegym.outputs import replacing, write_atomic
from edgegym.wrappers import flatten_env, joint_actions

CONFIG_NAME = "config.yaml"
MODEL_NAME = "model.zip"
_CKPT = re.compile(r"ckpt_(\d+)\.zip$")


@dataclass
class TrainResult:
    """What :func:`train` produced.

    Attributes:
        out: The output folder.
        model_path: The final model.
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


# ----------------------------------------------------------------------------- envs
class EnvFactory:
    """Picklable builder of one wrapped training environment (for ``SubprocVecEnv``)."""

    def __init__(
        self,
        env_id: str,
        scenario: str | None,
        overrides: Mapping[str, Any],
        wrappers: Mapping[str, Any],
        like: tuple[str | None, Mapping[str, Any]] | None = None,
    ) -> None:
        self.env_id = env_id
        self.scenario = scenario
        self.overrides = dict(overrides)
        self.wrappers = dict(wrappers)
        #: The run's own ``(scenario, overrides)``, whose spaces this environment takes
        #: (:func:`wrap_like`), or ``None``.
        self.like = None if like is None else (like[0], dict(like[1]))

    def __call__(self) -> gym.Env:
        from stable_baselines3.common.monitor import Monitor

        env = make_env(self.env_id, self.scenario, self.overrides)
        if self.like is None or self.like == (self.scenario, self.overrides):
            return Monitor(wrap(env, self.wrappers))
        ref = wrap(make_env(self.env_id, *self.like), self.wrappers)
        try:
            return Monitor(wrap_like(env, self.wrappers, ref))
        finally:
            ref.close()


def wrap(env: gym.Env, wrappers: Mapping[str, Any]) -> gym.Env:
    """Apply a config's ``wrappers`` section to an environment."""
    flat_obs = bool(wrappers["flatten_obs"]) and not (
        isinstance(env.observation_space, spaces.Box) and len(env.observation_space.shape) == 1
    )
    discrete = bool(wrappers["discrete_actions"]) and isinstance(
        env.action_space, spaces.MultiDiscrete
    )
    return flatten_env(
        env, flat_obs, discrete, int(wrappers["max_actions"]), wrappers.get("teacher")
    )


def wrap_like(env: gym.Env, wrappers: Mapping[str, Any], like: gym.Env) -> gym.Env:
    """:func:`wrap`, then, where the spaces differ from ``like``'s (the run's own scenario,
    wrapped) only by the number of retraining configurations, seen through ``like``'s
    spaces (:class:`edgegym.agents.tenants.Aligned`).

    Raises:
        ValueError: The spaces differ otherwise (the message says how).
    """
    from edgegym.agents.tenants import Aligned

    env = wrap(env, wrappers)
    if space_difference(env, like) is None:
        return env
    try:
        return Aligned(env, like)
    except (ValueError, AttributeError) as exc:
        env.close()
        raise ValueError(str(exc)) from None


def native_vec_env(factory: EnvFactory, n_envs: int) -> Any | None:
    """The SB3 ``VecEnv`` of the factory's id on its native vector env, with the flat view the
    ``wrappers`` ask for (:class:`edgegym.wrappers.FlatVectorEnv`), or ``None`` where the id
    has no native vector env or the wrappers ask for a view it does not offer (flattened
    observations without ``Discrete`` actions, or the reverse)."""
    from gymnasium.vector import AutoresetMode

    from edgegym.agents.vecenv import SB3VecEnv
    from edgegym.wrappers import FlatVectorEnv

    if gym.spec(factory.env_id).vector_entry_point is None or factory.wrappers.get("teacher"):
        return None  # no native vector env; or a teacher hint (a scheduler per environment)
    probe = make_env(factory.env_id, factory.scenario, factory.overrides)
    try:
        obs_space, act_space = probe.observation_space, probe.action_space
        flat_obs = bool(factory.wrappers["flatten_obs"]) and not (
            isinstance(obs_space, spaces.Box) and len(obs_space.shape) == 1
        )
        discrete = bool(factory.wrappers["discrete_actions"]) and isinstance(
            act_space, spaces.MultiDiscrete
        )
        if flat_obs and not discrete:
            return None
        if discrete and isinstance(obs_space, spaces.Dict) and not flat_obs:
            return None  # FlatVectorEnv flattens the Dict too; the policy reads it whole
        if discrete and not isinstance(obs_space, spaces.Box | spaces.Dict):
            return None
        joint = (
            joint_actions(probe.unwrapped, int(factory.wrappers["max_actions"]))
            if discrete
            else None
        )
    finally:
        probe.close()
    kwargs = dict(factory.overrides)
    if factory.scenario is not None:
        kwargs["scenario"] = factory.scenario
    venv = gym.make_vec(
        factory.env_id,
        n_envs,
        vectorization_mode="vector_entry_point",
        autoreset_mode=AutoresetMode.SAME_STEP,
        **kwargs,
    )
    if discrete:
        venv = FlatVectorEnv(venv, joint=joint)
    return SB3VecEnv(venv)


def _vec_env(factories: Sequence[EnvFactory], kind: str) -> Any:
    """The training ``VecEnv``: environment ``i`` built by ``factories[i]``. One scenario for
    all (one distinct factory) may use the id's native vector env; a mixture of scenarios
    runs single environments."""
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    n_envs = len(factories)
    mixed = len({(f.scenario, repr(sorted(f.overrides.items()))) for f in factories}) > 1
    if kind in ("auto", "native"):
        venv = None if mixed else native_vec_env(factories[0], n_envs)
        if venv is not None:
            return venv
        if kind == "native":
            why = "a mixture of scenarios (train.scenarios)" if mixed else "these wrappers"
            raise ValueError(
                f"train.vec_env=native: {factories[0].env_id} has no native vector env for "
                f"{why}; use auto, dummy or subproc"
            )
        kind = "subproc" if n_envs > 1 and (os.cpu_count() or 1) > 1 else "dummy"
    if kind == "subproc" and n_envs > 1:
        return SubprocVecEnv(list(factories))
    return DummyVecEnv(list(factories))


def training_scenarios(cfg: Mapping[str, Any]) -> list[tuple[str | None, dict[str, Any]]]:
    """``[(scenario, overrides), ...]``: the run's own, then ``train.scenarios``, each with
    the run's overrides (``--set``) under its own."""
    base = dict(cfg["overrides"])
    out: list[tuple[str | None, dict[str, Any]]] = [(cfg["scenario"], base)]
    for item in cfg["hyperparams"]["train"].get("scenarios") or []:
        if isinstance(item, str):
            out.append((item, dict(base)))
        else:
            out.append((item["scenario"], {**base, **dict(item.get("overrides") or {})}))
    return out


def _check_mixture(
    env_id: str, cfg: Mapping[str, Any], probe: gym.Env, mixture: Sequence[Any]
) -> None:
    """Every scenario of a mixture builds, and gives the spaces of the run's own (or can be
    seen through them: :class:`edgegym.agents.tenants.Aligned`)."""
    from edgegym.agents.tenants import Aligned

    wrappers = cfg["hyperparams"]["wrappers"]
    n_envs = int(cfg["hyperparams"]["train"]["n_envs"])
    if len(mixture) > n_envs:
        raise ConfigError(
            f"train.scenarios: {len(mixture)} scenarios need train.n_envs >= {len(mixture)} "
            f"(one environment per scenario at least), got {n_envs}"
        )
    for j, (scenario, overrides) in enumerate(mixture[1:]):
        env = wrap(make_env(env_id, scenario, overrides), wrappers)
        try:
            diff = space_difference(env, probe)
            if diff is None:
                continue
            try:
                Aligned(env, probe)
            except (ValueError, AttributeError) as exc:
                what, have, want = diff
                raise ConfigError(
                    f"train.scenarios[{j}] ({scenario}, overrides {overrides}): its {what} "
                    f"{have} differs from {want} of the run's scenario ({cfg['scenario']}) "
                    f"({exc}); every scenario of a mixture needs the same spaces (pad the "
                    "streams with max_streams; a pooled policy's catalogue may differ in its "
                    "configurations)"
                ) from None
        finally:
            env.close()


def space_difference(env: Any, like: Any) -> tuple[str, str, str] | None:
    """``(what, env's, like's)`` of the first of the observation and action spaces in which
    two environments (or models) differ, as text; ``None`` when both agree."""
    from edgegym.agents.policy import _same_space, _space_text

    for what in ("observation_space", "action_space"):
        a, b = getattr(env, what), getattr(like, what)
        if not _same_space(a, b):
            return what.replace("_", " "), _space_text(a), _space_text(b)
    return None


# ----------------------------------------------------------------------------- config
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


def _write_yaml(path: Path, data: Mapping[str, Any]) -> None:
    write_atomic(path, yaml.safe_dump(_plain(data), sort_keys=False))


def _plain(obj: Any) -> Any:
    if isinstance(obj, Mapping):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_plain(v) for v in obj]
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, Path | str):
        return str(obj)  # also str subclasses such as torch's version string
    return obj


def checkpoints(out: Path) -> list[tuple[int, Path]]:
    """``(timesteps, path)`` of the checkpoints in ``out/checkpoints``, oldest first."""
    found = []
    for p in (out / "checkpoints").glob("ckpt_*.zip"):
        m = _CKPT.search(p.name)
        if m:
            found.append((int(m.group(1)), p))
    return sorted(found)


# ----------------------------------------------------------------------------- callbacks
def _callbacks(
    out: Path,
    cfg: dict[str, Any],
    target: int,
    progress: bool,
    evaluations: list[dict[str, Any]],
) -> Any:
    """Progress bar, checkpoints and evaluation as one SB3 callback list."""
    from stable_baselines3.common.callbacks import BaseCallback, CallbackList
    from tqdm.auto import tqdm

    hp = cfg["hyperparams"]

    class Progress(BaseCallback):
        def _on_training_start(self) -> None:
            self.bar = tqdm(
                total=target,
                initial=self.model.num_timesteps,
                desc="train",
                unit="step",
                disable=None if progress else True,
                file=sys.stderr,
                dynamic_ncols=True,
            )

        def _on_step(self) -> bool:
            self.bar.update(self.model.num_timesteps - self.bar.n)
            if evaluations and "ppo_return" in evaluations[-1]:
                last = evaluations[-1]
                text = f"eval {last['ppo_return']:.3f}"
                if last.get("baseline_return") is not None:
                    text += f" vs {last['baseline']} {last['baseline_return']:.3f}"
                self.bar.set_postfix_str(text, refresh=False)
            return True

        def _on_training_end(self) -> None:
            self.bar.close()

    class Checkpoints(BaseCallback):
        """Save at rollout starts (after a complete update) every ``checkpoint.freq`` steps."""

        def __init__(self) -> None:
            super().__init__()
            freq = int(hp["checkpoint"]["freq"])
            self.freq = freq
            self.next = 0

        def _on_training_start(self) -> None:
            if self.freq:
                self.next = (self.model.num_timesteps // self.freq + 1) * self.freq

        def _on_rollout_start(self) -> None:
            if self.freq and self.model.num_timesteps >= self.next:
                save_checkpoint(self.model, out, int(hp["checkpoint"]["keep"]))
                self.next = (self.model.num_timesteps // self.freq + 1) * self.freq

        def _on_step(self) -> bool:
            return True

    class Evaluate(BaseCallback):
        """Score the model and the family's baseline on the same seeded episodes.

        Like the checkpoints, evaluations happen at rollout starts, after a complete PPO
        update: the first rollout boundary at or past each multiple of ``eval.freq``, so an
        evaluation's ``timesteps`` is that of the weights it scored (those of the checkpoint
        of the same step). The final weights are evaluated at the end of training.
        """

        def __init__(self) -> None:
            super().__init__()
            self.freq = int(hp["eval"]["freq"])
            self.next = 0
            self.best = -np.inf
            self.baseline_return: float | None = None
            self.done_at = -1

        def _on_training_start(self) -> None:
            if self.freq:
                self.next = (self.model.num_timesteps // self.freq + 1) * self.freq
            earlier = [e["ppo_return"] for e in evaluations if e.get("ppo_return") is not None]
            self.best = max(earlier, default=-np.inf)
            if self.freq and cfg.get("bc") and self.model.num_timesteps == 0:
                self.evaluate()  # the cloned weights: best_model.zip if PPO never beats them

        def _on_rollout_start(self) -> None:
            if self.freq and self.model.num_timesteps >= self.next:
                self.evaluate()
                self.next = (self.model.num_timesteps // self.freq + 1) * self.freq

        def _on_step(self) -> bool:
            return True

        def _on_training_end(self) -> None:
            # The final update happens after the last rollout start: always score its weights
            # (done_at equals num_timesteps only if no rollout ran since the last evaluation).
            if self.freq and self.done_at != self.model.num_timesteps:
                self.evaluate()

        def evaluate(self) -> None:
            record = evaluate_model(self.model, cfg, self.baseline_return)
            self.baseline_return = record.get("baseline_return")
            self.done_at = record["timesteps"] = int(self.model.num_timesteps)
            evaluations.append(record)
            write_atomic(out / "evaluations.json", json.dumps(evaluations, indent=2) + "\n")
            self.logger.record("eval/mean_return", record["ppo_return"])
            self.logger.record("eval/std_return", record["ppo_std"])
            if record.get("baseline_return") is not None:
                self.logger.record("eval/baseline_return", record["baseline_return"])
                self.logger.record("eval/gap_to_baseline", record["gap"])
            self.logger.dump(self.model.num_timesteps)
            if record["ppo_return"] > self.best:
                self.best = record["ppo_return"]
                save_model(self.model, out / "best_model.zip")

    return CallbackList([Progress(), Checkpoints(), Evaluate()])


def save_checkpoint(model: Any, out: Path, keep: int) -> Path:
    """Save ``out/checkpoints/ckpt_<timesteps>.zip`` (10 digits, zero-padded) and drop all
    but the newest ``keep``."""
    folder = out / "checkpoints"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"ckpt_{int(model.num_timesteps):010d}.zip"
    save_model(model, path)
    for _, old in checkpoints(out)[:-keep]:
        old.unlink(missing_ok=True)
    return path


def save_model(model: Any, path: Path) -> None:
    """``model.save(path)`` through a temporary file and a rename: an interrupted or failed
    save leaves the previous file (and no half-written one under the name)."""
    with replacing(path) as tmp:
        model.save(tmp)


def intact(path: Path) -> bool:
    """Whether a saved model's zip file reads through (a truncated one does not)."""
    import zipfile

    try:
        with zipfile.ZipFile(path) as z:
            return z.testzip() is None
    except (OSError, zipfile.BadZipFile, EOFError):
        return False


def evaluate_model(
    model: Any, cfg: dict[str, Any], baseline_return: float | None = None
) -> dict[str, Any]:
    """Mean return of ``model`` (and of the family's baseline, unless already known) on the
    config's evaluation seeds."""
    return evaluate_policy(
        lambda env: PPOPolicy(model, env, cfg, source="the model in training"),
        cfg,
        baseline_return,
    )


def evaluate_policy(
    factory: Any, cfg: dict[str, Any], baseline_return: float | None = None
) -> dict[str, Any]:
    """:func:`evaluate_model` for any policy: ``factory(env)`` builds it (the RLlib backend
    passes its module's). The record's keys are ``ppo_return``, ``ppo_std``, ``baseline``,
    ``baseline_return``, ``episodes``, ``seed`` and ``gap`` (when both returns are known)."""
    from edgegym.evaluation import evaluate

    ev = cfg["hyperparams"]["eval"]
    policies: dict[str, Any] = {"ppo": factory}
    baseline = ev.get("baseline")
    if baseline and baseline_return is None:
        policies[baseline] = baseline
    res = evaluate(
        cfg["env_id"],
        policies,
        scenario=cfg["scenario"],
        episodes=int(ev["episodes"]),
        seed=int(ev["seed"]),
        overrides=cfg["overrides"],
        progress=False,
    )
    ppo = res.result("ppo")
    record: dict[str, Any] = {
        "ppo_return": ppo["mean_return"],
        "ppo_std": ppo["std_return"],
        "baseline": baseline,
        "baseline_return": baseline_return,
        "episodes": int(ev["episodes"]),
        "seed": int(ev["seed"]),
    }
    if baseline and baseline_return is None:
        record["baseline_return"] = res.result(baseline)["mean_return"]
    if record["baseline_return"] is not None and ppo["mean_return"] is not None:
        record["gap"] = ppo["mean_return"] - record["baseline_return"]
    return record


def _logger(folder: Path) -> Any:
    from stable_baselines3.common.logger import configure

    formats = ["csv"]
    try:
        from torch.utils.tensorboard import SummaryWriter  # noqa: F401
    except ImportError:
        print(
            f"edgegym train: tensorboard is not installed; logging CSV only to {folder} "
            "(pip install tensorboard)",
            file=sys.stderr,
        )
    else:
        formats.append("tensorboard")
    return configure(str(folder), formats)


# ----------------------------------------------------------------------------- train
def _resume_config(
    out: Path,
    env_id: str,
    scenario: str | None,
    overrides: Mapping[str, Any] | None,
    seed: int | None,
    n_envs: int | None,
    hp_overrides: Any,
    hp_file: str | Path | None,
    backend: str = "sb3",
) -> dict[str, Any]:
    from edgegym.agents.policy import PolicyLoadError, read_config

    try:
        cfg = read_config(out / CONFIG_NAME)
    except PolicyLoadError as exc:
        raise ConfigError(f"--resume: {exc}") from None
    if cfg.get("backend", "sb3") != backend:
        raise ConfigError(
            f"--resume: {out} was trained with --backend {cfg.get('backend', 'sb3')}, not "
            f"{backend} (resume with the same backend or train into another folder)"
        )
    given = {
        "env id": (env_id, cfg.get("env_id")),
        "scenario": (scenario, cfg.get("scenario")),
        "overrides": (dict(overrides) if overrides else None, cfg.get("overrides") or {}),
        "seed": (seed, cfg.get("seed")),
        "n_envs": (n_envs, cfg["hyperparams"]["train"]["n_envs"]),
    }
    for what, (new, old) in given.items():
        if new is not None and new != old:
            raise ConfigError(
                f"--resume: {out} was trained with {what} {old!r}, not {new!r} "
                "(resume with the same settings or train into another folder)"
            )
    if hp_overrides or hp_file:
        raise ConfigError(
            f"--resume: {out} keeps its hyperparameters ({out / CONFIG_NAME}); "
            "drop --hp / --config, or train into another folder"
        )
    return cfg


def _resume_source(out: Path, cfg: Mapping[str, Any]) -> tuple[Path, int]:
    """The newest saved model of a run and its timestep count: the newest checkpoint, or
    ``model.zip`` when it is newer (a run interrupted once, then completed, with
    ``checkpoint.freq: 0``).

    Raises:
        ConfigError: Neither exists.
    """
    found = checkpoints(out)
    while found and not intact(found[-1][1]):  # a truncated newest: the one before it
        print(
            f"edgegym train: --resume: {found[-1][1]} is damaged; using the checkpoint before it",
            file=sys.stderr,
        )
        found.pop()
    newest = found[-1] if found else None
    model = out / MODEL_NAME
    if model.is_file() and intact(model):
        steps = cfg.get("trained_timesteps")
        if steps is None:  # not recorded: read the count from the model file itself
            from stable_baselines3.common.save_util import load_from_zip_file

            try:
                data, _, _ = load_from_zip_file(str(model), device="cpu", load_data=True)
            except Exception as exc:  # zipfile, pickle, torch and key errors alike
                raise ConfigError(f"--resume: {model} cannot be read: {exc}") from None
            steps = (data or {}).get("num_timesteps", 0)
        if newest is None or int(steps) > newest[0]:
            newest = (int(steps), model)
    if newest is None:
        raise ConfigError(
            f"--resume: {out} has no intact checkpoint or model to resume from (the run "
            f"stopped before its first checkpoint); delete {out} to start it again, or train "
            "into another --out"
        )
    return newest[1], newest[0]


def check_train_args(
    env_id: str, timesteps: int | None, n_envs: int | None, seed: int | None
) -> str:
    """Check the arguments every backend shares; return the id's family.

    Raises:
        ValueError: Unknown id; :class:`ConfigError` for a non-edgegym id or bad numbers.
    """
    check_env_id(env_id)
    if env_id not in ENV_IDS:
        raise ConfigError(f"edgegym train needs an edgegym id ({', '.join(ENV_IDS)}), not {env_id}")
    for name, value in (("timesteps", timesteps), ("n_envs", n_envs)):
        if value is not None and (isinstance(value, bool) or int(value) < 1):
            raise ConfigError(f"{name} must be >= 1, got {value}")
    if seed is not None and (isinstance(seed, bool) or int(seed) < 0):
        raise ConfigError(f"seed must be >= 0, got {seed}")
    return ENV_IDS[env_id][1]


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


def run_config(
    out: Path,
    resume: bool,
    env_id: str,
    family: str,
    scenario: str | None,
    overrides: Mapping[str, Any] | None,
    timesteps: int | None,
    n_envs: int | None,
    seed: int | None,
    hyperparams: Sequence[str] | Mapping[str, Any] | None,
    hyperparams_file: str | Path | None,
    backend: str,
    model_name: str,
    resume_source: Any,
) -> tuple[dict[str, Any], Path | None, int]:
    """``(config, source, start)`` of a run: a resumed one's saved config with its new goal,
    the model ``resume_source(out, cfg)`` found and its timesteps; or a new config (``None``,
    0). Every backend's ``train`` starts here.

    Raises:
        ConfigError: See :func:`new_config`, :func:`set_goal` and ``_resume_config``.
    """
    if resume:
        cfg = _resume_config(
            out, env_id, scenario, overrides, seed, n_envs, hyperparams, hyperparams_file,
            backend,
        )  # fmt: skip
        source, start = resume_source(out, cfg)
        set_goal(out, cfg, start, timesteps)
        return cfg, source, start
    cfg = new_config(
        out, env_id, family, scenario, overrides, timesteps, n_envs, seed, hyperparams,
        hyperparams_file, model_name,
    )  # fmt: skip
    if backend != "sb3":
        cfg = {"edgegym_train_config": cfg.pop("edgegym_train_config"), "backend": backend, **cfg}
    return cfg, None, 0


def new_config(
    out: Path,
    env_id: str,
    family: str,
    scenario: str | None,
    overrides: Mapping[str, Any] | None,
    timesteps: int | None,
    n_envs: int | None,
    seed: int | None,
    hyperparams: Sequence[str] | Mapping[str, Any] | None,
    hyperparams_file: str | Path | None,
    model_name: str = MODEL_NAME,
) -> dict[str, Any]:
    """The configuration of a new run (the first keys of ``config.yaml``).

    Raises:
        ConfigError: ``out`` already holds a run (its config or ``model_name``), or bad
            hyperparameters.
    """
    if (out / CONFIG_NAME).exists() or (out / model_name).exists():
        if not (out / model_name).exists() and not checkpoints(out):
            raise ConfigError(
                f"{out} holds a training run that stopped before its first checkpoint (only "
                f"{CONFIG_NAME} and logs): nothing to resume; delete {out} to start it again, "
                "or choose another --out"
            )
        raise ConfigError(
            f"{out} already holds a training run; pass --resume to continue it, or "
            "choose another --out"
        )
    foreign = [
        n for n in ("best_model.zip", "evaluations.json", "checkpoints") if (out / n).exists()
    ]
    if foreign:
        raise ConfigError(
            f"{out} holds {', '.join(foreign)} but no training run (no {CONFIG_NAME}); a new run "
            "would overwrite them: choose another --out"
        )
    hp = load_hyperparams(family, hyperparams_file, hyperparams)
    if timesteps is not None:
        hp["train"]["timesteps"] = int(timesteps)
    if n_envs is not None:
        hp["train"]["n_envs"] = int(n_envs)
    return {
        "edgegym_train_config": 1,
        "env_id": env_id,
        "family": family,
        "scenario": scenario if scenario is not None else default_scenario(env_id),
        "overrides": dict(overrides or {}),
        "seed": int(seed or 0),
        "timesteps": int(hp["train"]["timesteps"]),
        "hyperparams_file": str(hyperparams_file) if hyperparams_file else f"{family}.yaml",
        "hyperparam_overrides": dotted(hyperparams),
        "hyperparams": hp,
    }


def check_baseline(env_id: str, cfg: Mapping[str, Any]) -> None:
    """Build the evaluation baseline once, so a bad one fails before any training."""
    hp = cfg["hyperparams"]
    baseline = hp["eval"]["baseline"]
    if baseline and hp["eval"]["freq"]:
        from edgegym.baselines import make_policy

        make_policy(baseline, make_env(env_id, cfg["scenario"], cfg["overrides"]))


def start_run(out: Path, cfg: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """Record the machine and a new run in ``cfg``, create ``out`` and write
    ``config.yaml``; return the run record and the number of earlier runs (``logs/run-*``)."""
    cfg["machine"] = {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpu_count": os.cpu_count(),
    }
    out.mkdir(parents=True, exist_ok=True)
    n_runs = len(list((out / "logs").glob("run-*"))) if (out / "logs").exists() else 0
    run = {"started": _dt.datetime.now().isoformat(timespec="seconds")}
    cfg.setdefault("runs", []).append(run)
    _write_yaml(out / CONFIG_NAME, cfg)
    return run, n_runs


def finish_run(
    out: Path,
    cfg: dict[str, Any],
    run: dict[str, Any],
    wall: float,
    timesteps: int,
    evaluations: Sequence[Mapping[str, Any]],
) -> None:
    """Close the run record, note the timesteps and last evaluation, write ``config.yaml``."""
    run.update(
        {
            "finished": _dt.datetime.now().isoformat(timespec="seconds"),
            "wall_s": round(wall, 2),
            "timesteps": int(timesteps),
        }
    )
    cfg["trained_timesteps"] = int(timesteps)
    if evaluations:
        cfg["last_evaluation"] = evaluations[-1]
    _write_yaml(out / CONFIG_NAME, cfg)


def train(
    env_id: str,
    scenario: str | None = None,
    overrides: Mapping[str, Any] | None = None,
    timesteps: int | None = None,
    n_envs: int | None = None,
    seed: int | None = None,
    out: str | Path = "runs/ppo",
    resume: bool = False,
    hyperparams: Sequence[str] | Mapping[str, Any] | None = None,
    hyperparams_file: str | Path | None = None,
    progress: bool = True,
    init_from: str | Path | None = None,
) -> TrainResult:
    """Train the family's PPO agent and write the model and its configuration to ``out``.

    Args:
        env_id: An edgegym environment id (``edgegym envs``).
        scenario: Scenario name or path (default: the environment's).
        overrides: Scenario overrides (``{"quanta": 20}``; strings are typed by the loader).
        timesteps: Total timesteps (default: the hyperparameter file's ``train.timesteps``).
            On resume, the total to reach.
        n_envs: Parallel environments (default: ``train.n_envs``).
        seed: Seed of the run (default 0).
        out: Output folder (must not hold a run unless ``resume``).
        resume: Continue the run in ``out`` from its newest checkpoint.
        hyperparams: Dotted overrides (``["ppo.learning_rate=1e-3"]`` or a mapping).
        hyperparams_file: A hyperparameter file instead of the family's.
        progress: Show a progress bar (hidden when not on a terminal).
        init_from: A trained model (``model.zip``, or its run folder) whose policy weights
            a new run starts from (fine-tuning, e.g. on more scenarios): the same algorithm,
            policy class and spaces; ``bc`` is skipped. Not with ``resume``.

    Returns:
        A :class:`TrainResult`.

    Raises:
        ValueError: Unknown env id, bad scenario or override (``ScenarioError``), bad
            hyperparameters (:class:`~edgegym.agents.config.ConfigError`), a folder that
            already holds a run (without ``resume``) or none (with it), a run to resume
            that is already at ``timesteps`` or beyond (nothing is changed then).

    Training runs whole rollouts (``ppo.n_steps * n_envs`` steps each), so the count
    reached is ``timesteps`` rounded up to a whole number of rollouts.
    """
    import torch

    family = check_train_args(env_id, timesteps, n_envs, seed)
    if init_from is not None and resume:
        raise ConfigError("--init-from starts a new run; --resume continues one (not both)")
    out = Path(out)
    cfg, source, _ = run_config(
        out, resume, env_id, family, scenario, overrides, timesteps, n_envs, seed,
        hyperparams, hyperparams_file, "sb3", MODEL_NAME,
        lambda out, cfg: _resume_source(out, cfg),
    )  # fmt: skip
    hp = cfg["hyperparams"]

    # Build one environment first: bad scenarios and baselines fail before any work.
    probe = wrap(make_env(env_id, cfg["scenario"], cfg["overrides"]), hp["wrappers"])
    try:
        check_baseline(env_id, cfg)
        joint = getattr(probe, "joint", None)
        cfg["spaces"] = {
            "observation": _space_record(probe.observation_space),
            "action": _space_record(probe.action_space),
            "joint_actions": None
            if joint is None
            else {"rule": joint.rule, "n": len(joint), "fingerprint": joint.fingerprint()},
        }
        obs_is_dict = isinstance(probe.observation_space, spaces.Dict)
        policy: Any = hp["policy"]
        policy_kwargs = sb3_policy_kwargs(hp["policy_kwargs"])
        if policy in SIZE_FREE:
            cls = size_free_class(policy)
            try:
                policy_kwargs = cls.kwargs_for(probe, policy_kwargs)
            except ValueError as exc:
                raise ConfigError(f"policy {policy} on {env_id}: {exc}") from None
            if "view" in policy_kwargs:
                cfg["tenant_view"] = policy_kwargs["view"]
            policy = cls
        mixture = training_scenarios(cfg)
        _check_mixture(env_id, cfg, probe, mixture)
        if hp["bc"]["teacher"] and init_from is None:
            _check_teacher(env_id, cfg)
        if policy == "auto":
            policy = "MultiInputPolicy" if obs_is_dict else "MlpPolicy"
        cfg["policy_class"] = policy if isinstance(policy, str) else policy.__name__
        init = None if init_from is None else _load_init(init_from, cfg, probe)
    finally:
        probe.close()
    cfg["versions"] = versions()
    run, n_runs = start_run(out, cfg)

    torch.set_num_threads(int(hp["train"]["torch_threads"]))
    n_envs = int(hp["train"]["n_envs"])
    factories = [
        EnvFactory(env_id, *mixture[i % len(mixture)], hp["wrappers"], like=mixture[0])
        for i in range(n_envs)
    ]
    venv = _vec_env(factories, hp["train"]["vec_env"])
    algo = algo_class(hp["algo"])
    evaluations: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    interrupted = False
    try:
        if resume:
            model = algo.load(str(source), env=venv, device=hp["train"]["device"])
            model.set_random_seed(int(cfg["seed"]) + int(model.num_timesteps))
            if (out / "evaluations.json").is_file():
                evaluations = json.loads((out / "evaluations.json").read_text())
            run["resumed_from"] = str(source)
        else:
            model = algo(
                policy,
                venv,
                seed=int(cfg["seed"]),
                device=hp["train"]["device"],
                policy_kwargs=policy_kwargs,
                verbose=0,
                **ppo_arguments(hp["ppo"]),
            )
            if init is not None:
                _init_weights(model, *init)
                cfg["init_from"] = init[1]
                _write_yaml(out / CONFIG_NAME, cfg)
            elif hp["bc"]["teacher"]:
                cfg["bc"] = _strong_start(model, env_id, cfg, mixture, progress)
                _write_yaml(out / CONFIG_NAME, cfg)
        model.set_logger(_logger(out / "logs" / f"run-{n_runs + 1}"))
        target = int(cfg["timesteps"])
        remaining = max(0, target - int(model.num_timesteps))
        callback = _callbacks(out, cfg, target, progress, evaluations)
        try:
            model.learn(total_timesteps=remaining, callback=callback, reset_num_timesteps=False)
        except KeyboardInterrupt:
            save_checkpoint(model, out, int(hp["checkpoint"]["keep"]))
            run["interrupted_at"] = int(model.num_timesteps)
            _write_yaml(out / CONFIG_NAME, cfg)
            raise
        save_model(model, out / MODEL_NAME)
        if hp["checkpoint"]["freq"]:
            save_checkpoint(model, out, int(hp["checkpoint"]["keep"]))
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        _close(venv, interrupted)
    wall = time.perf_counter() - t0
    finish_run(out, cfg, run, wall, int(model.num_timesteps), evaluations)
    return TrainResult(
        out=out,
        model_path=out / MODEL_NAME,
        config_path=out / CONFIG_NAME,
        timesteps=int(model.num_timesteps),
        wall_s=wall,
        evaluations=evaluations,
    )


def _check_teacher(env_id: str, cfg: Mapping[str, Any]) -> None:
    """A ``bc.teacher`` that does not build on the run's scenario fails before any work."""
    from edgegym.baselines import make_policy

    env = make_env(env_id, cfg["scenario"], cfg["overrides"])
    try:
        make_policy(str(cfg["hyperparams"]["bc"]["teacher"]), env)
    except ValueError as exc:
        raise ConfigError(f"bc.teacher: {exc}") from None
    finally:
        env.close()


def _load_init(path: str | Path, cfg: Mapping[str, Any], probe: gym.Env) -> tuple[Any, dict]:
    """The model ``--init-from`` names and the record kept in ``config.yaml``, checked
    against this run before any work.

    Raises:
        ConfigError: The model cannot be read, or its algorithm, policy class or spaces
            differ from this run's.
    """
    source, source_cfg, model_path = read_init(path)
    have = (cfg["hyperparams"]["algo"], cfg["policy_class"])
    want = (source_cfg["hyperparams"]["algo"], source_cfg.get("policy_class"))
    if have != want:
        raise ConfigError(
            f"--init-from {model_path}: a {want[1]} trained with {want[0]}; this run trains "
            f"a {have[1]} with {have[0]}"
        )
    diff = space_difference(probe, source)
    if diff is not None:
        what, here, there = diff
        raise ConfigError(f"--init-from {model_path}: its {what} is {there}, this run's {here}")
    return source, init_record(source, source_cfg, model_path)


def read_init(path: str | Path) -> tuple[Any, dict[str, Any], Path]:
    """``(model, its config, model path)`` of ``--init-from``.

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


def _init_weights(model: Any, source: Any, record: Mapping[str, Any]) -> None:
    """Copy ``source``'s policy weights into the new ``model`` (``--init-from``).

    Raises:
        ConfigError: Other layer sizes (``policy_kwargs``).
    """
    try:
        model.policy.load_state_dict(source.policy.state_dict())
    except RuntimeError as exc:
        raise ConfigError(
            f"--init-from {record['model']}: other layers than this run's ({exc})"
        ) from None


def _strong_start(
    model: Any,
    env_id: str,
    cfg: Mapping[str, Any],
    mixture: Sequence[tuple[str | None, dict[str, Any]]],
    progress: bool,
) -> dict[str, Any]:
    """Behaviour cloning from ``bc.teacher`` on every training scenario (``agents/bc.py``);
    returns the record kept in ``config.yaml`` under ``bc``."""
    from edgegym.agents.bc import clone, collect
    from edgegym.wrappers import DictFlattener

    hp = cfg["hyperparams"]
    bc = hp["bc"]
    # A hint teacher plays through its index of the wrapped environment; any other teacher
    # plays the raw one (its own action is the label).
    hint = bool(hp["wrappers"].get("teacher"))
    probe = make_env(env_id, *mixture[0])
    flatten = (
        not hint
        and bool(hp["wrappers"]["flatten_obs"])
        and isinstance(probe.observation_space, spaces.Dict)
    )
    observe = DictFlattener(probe.observation_space) if flatten else None
    probe.close()

    def build(scenario: str | None, overrides: dict[str, Any]) -> gym.Env:
        if hint:  # the environments PPO trains on, in the run's own spaces
            return EnvFactory(env_id, scenario, overrides, hp["wrappers"], like=mixture[0])()
        return make_env(env_id, scenario, overrides)

    t0 = time.perf_counter()
    demos = collect(
        [lambda sc=sc, ov=ov: build(sc, ov) for sc, ov in mixture],
        str(bc["teacher"]),
        int(bc["episodes"]),
        int(bc["seed"]),
        float(hp["ppo"]["gamma"]),
        observe=observe,
        progress=progress,
        hint=hint,
    )
    fit = clone(
        model,
        demos,
        int(bc["epochs"]),
        int(bc["batch_size"]),
        float(bc["learning_rate"]),
        vf_coef=float(hp["ppo"]["vf_coef"]),
        seed=int(cfg["seed"]),
        progress=progress,
        balance=bool(bc["balance"]),
    )
    return {
        "teacher": bc["teacher"],
        "episodes_per_scenario": int(bc["episodes"]),
        "teacher_mean_return": round(float(np.mean(demos.episode_returns)), 4),
        **fit,
        "wall_s": round(time.perf_counter() - t0, 1),
    }


def _close(venv: Any, interrupted: bool) -> None:
    """Close the vector environment. After Ctrl-C, ``SubprocVecEnv`` workers have had the
    SIGINT too and are gone, so talking to them fails (EOFError, BrokenPipeError); that must
    not mask the KeyboardInterrupt. Leftover workers are then stopped directly."""
    try:
        venv.close()
    except (EOFError, BrokenPipeError, ConnectionResetError):
        if not interrupted:
            raise
        for process in getattr(venv, "processes", ()):
            process.join(timeout=1)
            if process.is_alive():
                process.terminate()
                process.join(timeout=1)
        venv.closed = True


def ppo_arguments(ppo: Mapping[str, Any]) -> dict[str, Any]:
    """SB3's PPO arguments of the file's ``ppo`` section: ``lr_schedule: linear`` becomes a
    ``learning_rate`` callable of SB3's progress remaining (1 at the start of the run, 0 at
    its ``timesteps``)."""
    args = {k: v for k, v in ppo.items() if k != "lr_schedule"}
    if ppo.get("lr_schedule", "constant") == "linear":
        args["learning_rate"] = LinearSchedule(float(ppo["learning_rate"]))
    return args


@dataclass(frozen=True)
class LinearSchedule:
    """``start * progress_remaining``: SB3 saves it with the model, so a resumed run goes on
    along the same line."""

    start: float

    def __call__(self, progress_remaining: float) -> float:
        return self.start * max(0.0, float(progress_remaining))


def sb3_policy_kwargs(pk: Mapping[str, Any]) -> dict[str, Any]:
    """SB3's ``policy_kwargs`` of the file's section (the activation's name -> its class)."""
    import torch.nn as nn

    act = {"tanh": nn.Tanh, "relu": nn.ReLU, "elu": nn.ELU, "leaky_relu": nn.LeakyReLU}
    arch = pk["net_arch"]
    return {
        "net_arch": dict(arch) if isinstance(arch, Mapping) else list(arch),
        "activation_fn": act[pk["activation_fn"]],
        "ortho_init": bool(pk["ortho_init"]),
    }


__all__ = [
    "EnvFactory",
    "TrainResult",
    "checkpoints",
    "evaluate_model",
    "evaluate_policy",
    "run_config",
    "save_checkpoint",
    "train",
    "versions",
    "wrap",
]

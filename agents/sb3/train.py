"""Train PPO / MaskablePPO with Stable-Baselines3: the engine behind ``edgegym train``.

:func:`train` builds ``n_envs`` copies of the environment (:mod:`edgegym.agents.sb3.envs`:
the id's native vector env, ``DummyVecEnv`` or ``SubprocVecEnv``; ``train.vec_env`` in the
hyperparameters decides), wraps them as the family's hyperparameter file says
(:mod:`edgegym.agents.config`), and trains with a progress bar, TensorBoard and CSV logs,
periodic evaluation against the family's best baseline on fixed seeds, checkpoints and
resume (the run folder of :mod:`edgegym.agents.run`; its models are SB3 zip files:
``model.zip``, ``best_model.zip``, ``checkpoints/ckpt_0000000512.zip``; score one with
``--policy ppo:DIR/model.zip``).

A new model starts from scratch, from the weights of a trained one (``--init-from``), or
from a clone of a published scheduler (the file's ``bc`` section, :mod:`edgegym.agents.sb3.bc`).

**Determinism**: the same seed, hyperparameters and machine give the same policy, bit for
bit: the global and environment seeds come from ``seed`` (environment ``i`` is reset with
``seed + i``), torch runs on ``train.torch_threads`` threads (1 by default) and evaluation
draws no random numbers. Subprocess and in-process vector environments give the same result.
A resumed run continues from the newest checkpoint (weights, optimiser, timestep count); it
is not bit-identical to an uninterrupted run (environments restart their episodes).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gymnasium as gym

from edgegym.agents.config import ConfigError
from edgegym.agents.policy import algo_class, space_difference
from edgegym.agents.run.evaluation import Evaluations, open_logger
from edgegym.agents.run.record import (
    Run,
    TrainRequest,
    TrainResult,
    check_baseline,
    init_record,
    read_init,
    run_config,
    spaces_record,
    versions,
)
from edgegym.agents.sb3 import artifacts
from edgegym.agents.sb3.checkpoints import MODEL_NAME, ModelFiles
from edgegym.agents.sb3.envs import (
    EnvFactory,
    check_mixture,
    close_vec_env,
    policy_for,
    training_scenarios,
    vec_env,
    wrap,
)
from edgegym.evaluation import make_env
from edgegym.outputs import folder_lock


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
        A :class:`~edgegym.agents.run.record.TrainResult`.

    Raises:
        ValueError: Unknown env id, bad scenario or override (``ScenarioError``), bad
            hyperparameters (:class:`~edgegym.agents.config.ConfigError`), a folder that
            already holds a run (without ``resume``) or none (with it), a run to resume
            that is already at ``timesteps`` or beyond (nothing is changed then).

    Training runs whole rollouts (``ppo.n_steps * n_envs`` steps each), so the count
    reached is ``timesteps`` rounded up to a whole number of rollouts.
    """
    request = TrainRequest(
        env_id, scenario, overrides, timesteps, n_envs, seed, Path(out), resume,
        hyperparams, hyperparams_file, progress, init_from,
    )  # fmt: skip
    with folder_lock(request.out, "train"):  # one writer per run folder
        return _train(request)


def _train(request: TrainRequest) -> TrainResult:
    """:func:`train` of a request, holding the run folder's lock."""
    import torch

    resume, init_from, progress = request.resume, request.init_from, request.progress
    store = ModelFiles(request.out)
    cfg, source, _ = run_config(request, "sb3", store)
    plan = _plan(cfg, init_from)
    cfg["versions"] = versions()
    run = Run.start(request.out, cfg)
    store.bind(run.cfg, run.save)  # each saved model's digest in config.yaml

    hp = cfg["hyperparams"]
    torch.set_num_threads(int(hp["train"]["torch_threads"]))
    venv = vec_env(_factories(cfg, plan.mixture), hp["train"]["vec_env"])
    evaluations = Evaluations(run.out, cfg, resume)
    t0 = time.perf_counter()
    interrupted = False
    try:
        if source is not None:
            model = _resumed_model(run, source, venv)
        else:
            model = _new_model(run, plan, venv, progress)
        model.set_logger(open_logger(run.log_dir))
        _learn(model, run, store, evaluations, progress)
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        close_vec_env(venv, interrupted)
    wall = time.perf_counter() - t0
    return run.finish(wall, int(model.num_timesteps), evaluations.records, run.out / MODEL_NAME)


# ----------------------------------------------------------------------------- before training
@dataclass
class _Plan:
    """What a run trains, settled (and checked) before any work.

    Attributes:
        policy: The SB3 policy: a class name or a size-free policy class.
        policy_kwargs: Its keyword arguments.
        mixture: ``(scenario, overrides)`` of every training scenario, the run's own first.
        init: ``(source model, its record)`` of ``--init-from``, or ``None``.
    """

    policy: Any
    policy_kwargs: dict[str, Any]
    mixture: list[tuple[str | None, dict[str, Any]]]
    init: tuple[Any, dict[str, Any]] | None


def _plan(cfg: dict[str, Any], init_from: str | Path | None) -> _Plan:
    """Build one environment of the run's scenario and settle the policy, the scenario
    mixture and ``--init-from`` on it, so that bad scenarios, baselines, teachers and models
    fail before any work. Records ``spaces``, ``policy_class`` (and ``tenant_view``) in
    ``cfg``."""
    hp = cfg["hyperparams"]
    probe = wrap(make_env(cfg["env_id"], cfg["scenario"], cfg["overrides"]), hp["wrappers"])
    try:
        check_baseline(cfg)
        cfg["spaces"] = spaces_record(probe)
        policy, policy_kwargs = policy_for(cfg, probe)
        mixture = training_scenarios(cfg)
        check_mixture(cfg, probe, mixture)
        if hp["bc"]["teacher"] and init_from is None:
            from edgegym.agents.sb3.bc import check_teacher

            check_teacher(cfg)
        cfg["policy_class"] = policy if isinstance(policy, str) else policy.__name__
        init = None if init_from is None else _load_init(init_from, cfg, probe)
    finally:
        probe.close()
    return _Plan(policy, policy_kwargs, mixture, init)


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


def _factories(
    cfg: Mapping[str, Any], mixture: Sequence[tuple[str | None, dict[str, Any]]]
) -> list[EnvFactory]:
    """``train.n_envs`` environment builders: environment ``i`` plays ``mixture[i mod k]``
    through the spaces of the run's own scenario."""
    hp = cfg["hyperparams"]
    return [
        EnvFactory(cfg["env_id"], *mixture[i % len(mixture)], hp["wrappers"], like=mixture[0])
        for i in range(int(hp["train"]["n_envs"]))
    ]


# ----------------------------------------------------------------------------- the model
def _new_model(run: Run, plan: _Plan, venv: Any, progress: bool) -> Any:
    """A new model on ``venv``: from scratch, from ``--init-from``'s weights, or cloned from
    ``bc.teacher`` (what it started from is recorded in ``config.yaml``)."""
    cfg = run.cfg
    hp = cfg["hyperparams"]
    model = algo_class(hp["algo"])(
        plan.policy,
        venv,
        seed=int(cfg["seed"]),
        device=hp["train"]["device"],
        policy_kwargs=plan.policy_kwargs,
        verbose=0,
        **ppo_arguments(hp["ppo"]),
    )
    if plan.init is not None:
        _init_weights(model, *plan.init)
        cfg["init_from"] = plan.init[1]
        run.save()
    elif hp["bc"]["teacher"]:
        from edgegym.agents.sb3.bc import strong_start

        cfg["bc"] = strong_start(model, cfg, plan.mixture, progress)
        run.save()
    return model


def _resumed_model(run: Run, source: Path, venv: Any) -> Any:
    """The saved model a resumed run continues from, on ``venv``, reseeded by its timesteps
    (so the continuation does not replay the random numbers of the start)."""
    hp = run.cfg["hyperparams"]
    cls = algo_class(hp["algo"])
    try:
        model = artifacts.load(source, run.cfg, cls, env=venv, device=hp["train"]["device"])
    except artifacts.UntrustedArtifact as exc:
        raise ConfigError(f"--resume: {exc}") from None
    model.set_random_seed(int(run.cfg["seed"]) + int(model.num_timesteps))
    run.record["resumed_from"] = str(source)
    return model


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


def _learn(
    model: Any, run: Run, store: ModelFiles, evaluations: Evaluations, progress: bool
) -> None:
    """Train ``model`` up to the run's goal, then save the final model (and checkpoint).
    Ctrl-C saves a checkpoint of where it stopped before it propagates."""
    from edgegym.agents.sb3.callbacks import training_callbacks

    ck = run.cfg["hyperparams"]["checkpoint"]
    remaining = max(0, int(run.cfg["timesteps"]) - int(model.num_timesteps))
    callback = training_callbacks(run, store, evaluations, progress)
    try:
        model.learn(total_timesteps=remaining, callback=callback, reset_num_timesteps=False)
    except KeyboardInterrupt:
        run.stop(store, model, int(model.num_timesteps), int(ck["keep"]))
        raise
    store.save_final(model, int(model.num_timesteps), int(ck["freq"]), int(ck["keep"]))


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
    along the same line. Saved models name it by module path: it stays in this module (and
    ``edgegym.agents.train``, its former module, maps here: :data:`edgegym.agents.MOVED`)."""

    start: float

    def __call__(self, progress_remaining: float) -> float:
        return self.start * max(0.0, float(progress_remaining))


__all__ = ["LinearSchedule", "TrainResult", "ppo_arguments", "train"]

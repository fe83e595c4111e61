"""Train PPO with RLlib and action masks: the engine behind ``edgegym train --backend rllib``.

:func:`train_rllib` is :func:`edgegym.agents.sb3.train.train` on RLlib's (new API stack) PPO:
the same hyperparameter file (``agents/hyperparams/<family>.yaml``, mapped onto RLlib's
names, :data:`~edgegym.agents.rllib.ppo.PPO_MAP`), the same run folder and ``config.yaml``
(:mod:`edgegym.agents.run`; plus ``backend: rllib`` and an ``rllib`` section with the exact
RLlib settings and the mapping), the same periodic evaluation against the family's published
scheduler on the same seeds (``evaluations.json``), TensorBoard and CSV logs, checkpoints and
resume. The policy is the file's size-free policy as
:class:`~edgegym.agents.rllib.module.SizeFreeTorchRLModule`, or for ``policy: auto`` RLlib's
``ActionMaskingTorchRLModule`` (:func:`edgegym.agents.rllib.masked_ppo_config`); either way
masked actions are never sampled. The models are Algorithm checkpoints (folders)::

    model/               the final Algorithm checkpoint (score it with --policy rllib:DIR)
    best_model/          the Algorithm checkpoint of the best evaluation
    checkpoints/         ckpt_<timesteps, 10 digits>/, the newest ``checkpoint.keep`` kept

Each is written to a temporary folder first and renamed, so a model folder is always complete,
and holds ``edgegym_checkpoint.json`` (timesteps, iteration). Environments: the id's native
vector env (:class:`edgegym.wrappers.MaskedVectorEnv`, ``train.n_envs`` envs per env runner in
one batch) where it has one, else RLlib's own ``sync`` vectorization of
:func:`edgegym.wrappers.make_masked`. A family whose hyperparameters ask for
``discrete_actions`` trains on its ``-Flat-v0`` view (the same joint actions as SB3). Ray runs
where :func:`edgegym.parallel.init_ray` says: a local cluster, or ``address``.

Determinism: RLlib is seeded with ``seed`` (``seed + timesteps`` on resume) and the learner
runs on ``train.torch_threads`` threads; with ``num_env_runners=0`` a run repeats on the same
machine. With remote env runners the order in which their samples arrive can differ.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

from edgegym.agents.config import ConfigError
from edgegym.agents.policies import SIZE_FREE, size_free_class
from edgegym.agents.rllib.policy import WEIGHTS_NAME
from edgegym.agents.rllib.ppo import (
    SIZE_FREE_MODULE,
    ppo_config,
    rllib_hyperparams,
    rllib_settings,
    size_free_config,
)
from edgegym.agents.run.checkpoints import Checkpoints
from edgegym.agents.run.evaluation import Evaluations, Every, open_logger, progress_bar
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
from edgegym.inputs import read_text
from edgegym.outputs import folder_lock
from edgegym.parallel import init_ray, require_ray

MODEL_DIR = "model"
BEST_DIR = "best_model"
MARKER = "edgegym_checkpoint.json"


def train_rllib(
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
    num_env_runners: int = 0,
    address: str | None = None,
    init_from: str | Path | None = None,
) -> TrainResult:
    """Train the family's PPO agent with RLlib and write the model and its configuration.

    Args:
        env_id .. progress: As for :func:`edgegym.agents.sb3.train.train`; ``n_envs`` is the
            number of environments per env runner.
        init_from: A size-free policy trained by the SB3 backend (``model.zip`` or its run
            folder; a shipped one too) whose weights the RLModule starts from: the same
            policy class, layers and spaces (:func:`init_weights`).
        num_env_runners: RLlib env runners sampling in parallel as Ray actors (0: sample in
            this process).
        address: Ray cluster (``None``/``"local"``: start one here; ``"auto"``;
            ``host:port``), see :func:`edgegym.parallel.init_ray`.

    Returns:
        A :class:`~edgegym.agents.run.record.TrainResult` (``model_path`` is ``out/model``).

    Raises:
        RayMissingError: Ray / RLlib is not installed (an ``ImportError``; the message says
            what to install).
        ValueError: As for :func:`edgegym.agents.sb3.train.train`, and settings RLlib cannot
            express (:func:`~edgegym.agents.rllib.ppo.rllib_settings`), no cluster at
            ``address``.

    Training runs whole iterations of ``ppo.n_steps * n_envs`` steps, so the count reached
    is ``timesteps`` rounded up to a whole number of iterations.
    """
    require_ray(rllib=True)
    if isinstance(num_env_runners, bool) or int(num_env_runners) < 0:
        raise ConfigError(f"num_env_runners must be >= 0, got {num_env_runners}")
    request = TrainRequest(
        env_id, scenario, overrides, timesteps, n_envs, seed, Path(out), resume,
        hyperparams if resume else rllib_hyperparams(hyperparams), hyperparams_file,
        progress, init_from,
    )  # fmt: skip
    with folder_lock(request.out, "train"):  # one writer per run folder
        return _train(request, int(num_env_runners), address)


def _train(request: TrainRequest, num_env_runners: int, address: str | None) -> TrainResult:
    """:func:`train_rllib` of a request, holding the run folder's lock."""
    init_from, progress = request.init_from, request.progress
    store = AlgorithmFiles(request.out)
    cfg, source, start = run_config(request, "rllib", store)
    settings, init = _plan(cfg, int(num_env_runners), init_from)
    ray = init_ray(address)
    cfg["versions"] = {**versions(), "ray": ray.__version__}
    cfg["rllib"] = {k: v for k, v in settings.items() if k != "num_env_runners"}
    run = Run.start(request.out, cfg)
    store.bind(run.cfg, run.save)  # each saved model's digest in config.yaml
    run.record["num_env_runners"] = int(num_env_runners)
    run.record["ray_address"] = address or "local"

    import torch

    torch.set_num_threads(int(cfg["hyperparams"]["train"]["torch_threads"]))
    algo = ppo_config(settings, int(cfg["seed"]) + start).build_algo()
    evaluations = Evaluations(run.out, cfg, source is not None)
    t0 = time.perf_counter()
    try:
        if init is not None:
            _set_weights(algo, init)
        if source is not None:
            algo.restore_from_path(str(source.resolve()))
            run.record["resumed_from"] = str(source)
        steps = _learn(algo, run, store, evaluations, start, progress, t0)
    finally:
        algo.stop()
    wall = time.perf_counter() - t0
    return run.finish(wall, steps, evaluations.records, run.out / MODEL_DIR)


# ----------------------------------------------------------------------------- before training
def _plan(
    cfg: dict[str, Any], num_env_runners: int, init_from: str | Path | None
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The run's RLlib settings and ``--init-from``'s policy state (or ``None``), settled and
    checked before Ray starts, so that bad scenarios, settings, baselines and models fail
    before any work. Records ``init_from``, ``spaces`` and ``policy_class`` in ``cfg``."""
    from edgegym.wrappers import make_masked

    settings = rllib_settings(cfg, num_env_runners)
    check_baseline(cfg)
    probe = make_masked(settings["env"], **settings["env_config"])
    try:
        init = None
        if init_from is not None:
            init, cfg["init_from"] = init_weights(init_from, cfg, settings, probe.action_space)
        cfg["spaces"] = spaces_record(probe)
    finally:
        probe.close()
    policy = cfg["hyperparams"]["policy"]
    cfg["policy_class"] = policy if policy in SIZE_FREE else "ActionMaskingTorchRLModule"
    return settings, init


def init_weights(
    path: str | Path, cfg: Mapping[str, Any], settings: Mapping[str, Any], action_space: gym.Space
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The weights ``--init-from`` names, as the state of the run's
    :class:`~edgegym.agents.rllib.module.SizeFreeTorchRLModule` policy, and the record kept in
    ``config.yaml``; checked against this run (its masked env's ``action_space``) before Ray
    starts.

    Raises:
        ConfigError: Not a size-free SB3 policy of this run's class, or other layers or
            spaces (a model trained with ``wrappers.teacher`` has one more action).
    """
    source, source_cfg, model_path = read_init(path)
    policy = cfg["hyperparams"]["policy"]
    if settings["module"] != SIZE_FREE_MODULE or source_cfg.get("policy_class") != policy:
        raise ConfigError(
            f"--init-from {model_path}: a {source_cfg.get('policy_class')}; the RLlib backend "
            f"starts from the weights of a size-free policy of its own class ({policy})"
        )
    full = size_free_config(settings["model_config"], settings["env_config"])
    here = size_free_class(policy)(
        full["observation_space"], action_space, lambda _: 0.0,
        **full["policy_kwargs"],
    )  # fmt: skip
    state = source.policy.state_dict()
    try:
        here.load_state_dict(state)
    except RuntimeError as exc:
        teacher = (source_cfg.get("hyperparams") or {}).get("wrappers", {}).get("teacher")
        hint = (
            f" (it was trained with wrappers.teacher={teacher}: one more action)" if teacher else ""
        )
        first = str(exc).strip().splitlines()[0]
        raise ConfigError(
            f"--init-from {model_path}: its layers differ from this run's{hint}: {first}"
        ) from None
    return state, init_record(source, source_cfg, model_path)


def _set_weights(algo: Any, state: Mapping[str, Any]) -> None:
    """Load ``state`` into the learner's module policy and send it to the env runners."""
    from ray.rllib.core import DEFAULT_MODULE_ID

    def load(learner: Any) -> None:
        learner.module[DEFAULT_MODULE_ID].policy.load_state_dict(state)

    algo.learner_group.foreach_learner(load)
    algo.env_runner_group.sync_weights(
        from_worker_or_learner_group=algo.learner_group, inference_only=True
    )


# ----------------------------------------------------------------------------- training
def _learn(
    algo: Any,
    run: Run,
    store: AlgorithmFiles,
    evaluations: Evaluations,
    start: int,
    progress: bool,
    t0: float,
) -> int:
    """Train ``algo`` from ``start`` to the run's goal, one RLlib iteration at a time, with
    checkpoints and evaluations on the run layer's schedule; then save the final model (and
    checkpoint). Ctrl-C saves a checkpoint of where it stopped before it propagates.

    Returns:
        The timesteps reached.
    """
    hp = run.cfg["hyperparams"]
    keep, ck_freq = int(hp["checkpoint"]["keep"]), int(hp["checkpoint"]["freq"])
    target = int(run.cfg["timesteps"])
    logger = open_logger(run.log_dir)
    checkpoint_due = Every(ck_freq, start)
    evaluation_due = Every(int(hp["eval"]["freq"]), start)
    bar = progress_bar(target, start, progress)

    def evaluate(steps: int) -> None:
        module = algo.get_module()
        policy = lambda env: _policy(module, env, run.cfg)  # noqa: E731
        if evaluations.evaluate(policy, steps, logger):
            store.write(algo, run.out / BEST_DIR, steps)
        summary = evaluations.summary()
        if summary is not None:
            bar.set_postfix_str(summary, refresh=False)

    steps = start
    try:
        try:
            while steps < target:
                result = algo.train()
                steps = max(_lifetime_steps(result), steps + 1)
                _log_result(logger, result, steps, time.perf_counter() - t0)
                if checkpoint_due.due(steps):
                    store.save(algo, steps, keep)
                    checkpoint_due.done(steps)
                if evaluation_due.due(steps) and steps < target:  # the final one: below
                    evaluate(steps)
                    evaluation_due.done(steps)
                logger.dump(steps)
                bar.update(steps - bar.n)
        except KeyboardInterrupt:
            run.stop(store, algo, steps, keep)
            raise
        if evaluation_due.freq and evaluations.done_at != steps:
            evaluate(steps)  # always score the final weights
            logger.dump(steps)
        store.save_final(algo, steps, ck_freq, keep)
    finally:
        bar.close()
    return steps


def _policy(module: Any, env: gym.Env, cfg: dict[str, Any]) -> Any:
    from edgegym.agents.rllib.policy import RLlibPolicy

    return RLlibPolicy(module, env, cfg, name="ppo", source="the module in training")


def _lifetime_steps(result: Mapping[str, Any]) -> int:
    runners = result.get("env_runners") or {}
    value = runners.get("num_env_steps_sampled_lifetime")
    if value is None:
        value = result.get("num_env_steps_sampled_lifetime", 0)
    return int(value)


def _log_result(logger: Any, result: Mapping[str, Any], steps: int, elapsed: float) -> None:
    """SB3-style keys of one RLlib iteration (those RLlib reported)."""
    runners = result.get("env_runners") or {}
    learner = (result.get("learners") or {}).get("default_policy") or {}
    values = {
        "rollout/ep_rew_mean": runners.get("episode_return_mean"),
        "rollout/ep_len_mean": runners.get("episode_len_mean"),
        "time/iterations": result.get("training_iteration"),
        "time/total_timesteps": steps,
        "time/time_elapsed": round(elapsed, 2),
        "train/entropy": learner.get("entropy"),
        "train/policy_loss": learner.get("policy_loss"),
        "train/value_loss": learner.get("vf_loss"),
        "train/loss": learner.get("total_loss"),
        "train/kl": learner.get("mean_kl_loss"),
        "train/explained_variance": learner.get("vf_explained_var"),
        "train/learning_rate": learner.get("default_optimizer_learning_rate"),
    }
    for key, value in values.items():
        if value is None:
            continue
        value = float(value)
        if np.isfinite(value):
            logger.record(key, value)


# ----------------------------------------------------------------------------- model folders
def save_algo(algo: Any, dest: Path, timesteps: int) -> Path:
    """``algo.save_to_path`` into ``dest`` atomically: a temporary folder beside it, the
    marker file, then a rename (an older ``dest`` is replaced)."""
    dest = Path(dest).resolve()
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.parent / f".{dest.name}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    algo.save_to_path(str(tmp))
    save_weights(algo, tmp)
    marker = {"timesteps": int(timesteps), "iteration": int(algo.iteration)}
    (tmp / MARKER).write_text(json.dumps(marker) + "\n")
    if dest.exists():
        old = dest.parent / f".{dest.name}.old"
        shutil.rmtree(old, ignore_errors=True)
        dest.rename(old)
        tmp.rename(dest)
        shutil.rmtree(old, ignore_errors=True)
    else:
        tmp.rename(dest)
    return dest


def save_weights(algo: Any, folder: Path) -> Path:
    """The learner's module weights as plain tensors, ``folder/edgegym_weights.pt``: what
    ``rllib:PATH`` loads without unpickling RLlib's own files (see
    :func:`edgegym.agents.rllib.policy.load_rllib_module`)."""
    import torch
    from ray.rllib.core import DEFAULT_MODULE_ID

    def weights(learner: Any) -> dict[str, Any]:
        state = learner.module[DEFAULT_MODULE_ID].state_dict()
        return {k: v.detach().cpu().clone() for k, v in state.items()}

    state = next(iter(algo.learner_group.foreach_learner(weights))).get()
    path = folder / WEIGHTS_NAME
    torch.save(state, path)
    return path


def _marker(path: Path) -> dict[str, Any] | None:
    """The marker of a complete Algorithm checkpoint folder (``None``: not one)."""
    try:  # a regular file of bounded size: a FIFO there would block the resume
        data = json.loads(read_text(path / MARKER, "checkpoint marker", "config"))
    except (OSError, ValueError, RecursionError):  # InputError is a ValueError
        return None
    if not (path / "rllib_checkpoint.json").is_file() or not isinstance(data, dict):
        return None
    return data


class AlgorithmFiles(Checkpoints):
    """The RLlib models of a run folder: Algorithm checkpoint folders (see
    :class:`~edgegym.agents.run.checkpoints.Checkpoints`)."""

    suffix = ""
    final_name = MODEL_DIR

    def write(self, model: Any, path: Path, timesteps: int) -> None:
        save_algo(model, path, timesteps)

    def intact(self, path: Path) -> bool:
        return _marker(path) is not None

    def remove(self, path: Path) -> None:
        shutil.rmtree(path, ignore_errors=True)

    def timesteps_of(self, path: Path, cfg: Mapping[str, Any]) -> int:
        return int((_marker(path) or {}).get("timesteps", 0))


__all__ = ["AlgorithmFiles", "init_weights", "save_algo", "train_rllib"]

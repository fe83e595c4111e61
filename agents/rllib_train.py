"""Train PPO with RLlib and action masks: the engine behind ``edgegym train --backend rllib``.

:func:`train_rllib` is :func:`edgegym.agents.train.train` on RLlib's (new API stack) PPO:
the same hyperparameter file (``agents/hyperparams/<family>.yaml``, mapped onto RLlib's
names, :data:`PPO_MAP`), the same ``config.yaml`` (plus ``backend: rllib`` and an ``rllib``
section with the exact RLlib settings and the mapping), the same periodic evaluation against
the family's published scheduler on the same seeds (``evaluations.json``), TensorBoard and
CSV logs, checkpoints and resume. The policy is the file's size-free policy as
:class:`~edgegym.agents.rllib_module.SizeFreeTorchRLModule`, or for ``policy: auto`` RLlib's
``ActionMaskingTorchRLModule`` (:func:`edgegym.agents.rllib.masked_ppo_config`); either way
masked actions are never sampled. The output folder holds::

    config.yaml          as for the SB3 backend, plus ``backend: rllib`` and ``rllib``
    model/               the final Algorithm checkpoint (score it with --policy rllib:DIR)
    best_model/          the Algorithm checkpoint of the best evaluation
    evaluations.json     every evaluation: timesteps, PPO's and the baseline's mean return
    checkpoints/         ckpt_<timesteps, 10 digits>/ (Algorithm checkpoints), the newest
                         ``checkpoint.keep`` kept; each written to a temporary folder first
                         and renamed, so a checkpoint folder is always complete
    logs/run-<k>/        progress.csv and TensorBoard event files of the k-th (resumed) run

Every saved folder holds ``edgegym_checkpoint.json`` (timesteps, iteration). Environments:
the id's native vector env (:class:`edgegym.wrappers.MaskedVectorEnv`, ``train.n_envs``
envs per env runner in one batch) where it has one, else RLlib's own ``sync``
vectorization of :func:`edgegym.wrappers.make_masked`. A family whose hyperparameters ask
for ``discrete_actions`` trains on its ``-Flat-v0`` view (the same joint actions as SB3).
Ray runs where :func:`edgegym.parallel.init_ray` says: a local cluster, or ``address``.

Determinism: RLlib is seeded with ``seed`` (``seed + timesteps`` on resume) and the learner
runs on ``train.torch_threads`` threads; with ``num_env_runners=0`` a run repeats on the same
machine. With remote env runners the order in which their samples arrive can differ.
"""

from __future__ import annotations

import json
import math
import re
import shutil
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from edgegym.agents.config import ConfigError, dotted
from edgegym.agents.policy import SIZE_FREE
from edgegym.agents.train import (
    CONFIG_NAME,
    TrainResult,
    _logger,
    _space_record,
    _write_yaml,
    check_baseline,
    check_train_args,
    evaluate_policy,
    finish_run,
    run_config,
    start_run,
    versions,
)
from edgegym.core.registry import FAMILIES
from edgegym.evaluation import make_env
from edgegym.outputs import write_atomic
from edgegym.parallel import RAY_HINT, RayMissingError, init_ray, require_ray

MODEL_DIR = "model"
BEST_DIR = "best_model"
MARKER = "edgegym_checkpoint.json"
_CKPT = re.compile(r"ckpt_(\d+)$")

#: ``ppo.<key>`` of the hyperparameter file -> RLlib ``PPOConfig.training`` argument.
PPO_MAP: dict[str, str] = {
    "learning_rate": "lr",
    "batch_size": "minibatch_size",
    "n_epochs": "num_epochs",
    "gamma": "gamma",
    "gae_lambda": "lambda_",
    "clip_range": "clip_param",
    "ent_coef": "entropy_coeff",
    "vf_coef": "vf_loss_coeff",
    "max_grad_norm": "grad_clip",
}

#: The whole mapping, as recorded in ``config.yaml`` (``rllib.mapping``).
MAPPING: dict[str, str] = {
    **{f"ppo.{k}": v for k, v in PPO_MAP.items()},
    "ppo.n_steps * train.n_envs": "train_batch_size_per_learner",
    "ppo.lr_schedule": "constant: lr; linear: lr=[[0, learning_rate], [timesteps, 0]]",
    "ppo.target_kl": "null: use_kl_loss=False; a number: use_kl_loss=True, kl_target (RLlib's "
    "adaptive KL penalty, not SB3's early stop)",
    "ppo.normalize_advantage": "not mapped (RLlib standardises advantages)",
    "(SB3 clip_range_vf=None)": "vf_clip_param=inf",
    "(SB3 clips the global gradient norm)": "grad_clip_by=global_norm",
    "policy": "auto, MlpPolicy, MultiInputPolicy: RLlib's ActionMaskingTorchRLModule; a "
    "size-free policy (PerTenantPolicy, PooledPolicy, SignaturePolicy, GraphPolicy): "
    "edgegym's SizeFreeTorchRLModule holding that policy, policy_kwargs as for SB3",
    "policy_kwargs.net_arch": "(RLlib's module) model_config.fcnet_hiddens (separate policy "
    "and value encoders, vf_share_layers=False) with linear heads (head_fcnet_hiddens=[])",
    "policy_kwargs.activation_fn": "(RLlib's module) model_config.fcnet_activation",
    "policy_kwargs.ortho_init": "(RLlib's module) not mapped (RLlib's default initialisers)",
    "algo": "not mapped (always action masking)",
    "wrappers.flatten_obs": "not mapped (the masked view always flattens; "
    "SizeFreeTorchRLModule cuts the flat vector back into the env's own observation)",
    "wrappers.discrete_actions": "the family's -Flat-v0 id (max_actions in env_config)",
    "train.n_envs": "num_envs_per_env_runner",
    "train.vec_env": "gym_env_vectorize_mode (auto/native: vector_entry_point where the id "
    "has a native vector env; dummy: sync; subproc: async)",
    "train.torch_threads": "torch.set_num_threads of the learner (this process)",
    "train.device": "num_gpus_per_learner (cpu: 0, cuda: 1)",
}

#: Set before the user's ``--hp``: the family files name the SB3 backend's scenario mixtures
#: and strong starts (``agents/hyperparams/mig.yaml``'s MIGRator as an action, cloning it),
#: which the RLlib backend does not have; the same keys given explicitly are still refused
#: (:func:`rllib_settings`). The files' size-free policies train as
#: :class:`~edgegym.agents.rllib_module.SizeFreeTorchRLModule`.
RLLIB_BASE = ["train.scenarios=[]", "bc.teacher=null", "wrappers.teacher=null"]

#: The RLModule of a run whose ``policy`` is one of :data:`SIZE_FREE`.
SIZE_FREE_MODULE = "edgegym.agents.rllib_module.SizeFreeTorchRLModule"
#: RLlib's own action-masking MLP, for ``policy: auto`` (and the MLP policies).
MASKING_MODULE = (
    "ray.rllib.examples.rl_modules.classes.action_masking_rlm.ActionMaskingTorchRLModule"
)


def _deep_merge(base: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        old = out.get(key)
        both = isinstance(value, Mapping) and isinstance(old, Mapping)
        out[key] = _deep_merge(old, value) if both else value
    return out


_ACTIVATIONS = {"tanh": "tanh", "relu": "relu", "elu": "elu", "leaky_relu": "LeakyReLU"}


# ----------------------------------------------------------------------------- settings
def rllib_settings(cfg: Mapping[str, Any], num_env_runners: int = 0) -> dict[str, Any]:
    """The RLlib settings of a run's configuration (recorded as ``config.yaml``'s ``rllib``).

    Returns:
        ``{"env", "env_config", "vectorize", "num_env_runners", "num_envs_per_env_runner",
        "module", "training", "model_config", "num_gpus_per_learner", "mapping"}``.

    Raises:
        ConfigError: A setting RLlib cannot express (different policy and value widths; a
            ``discrete_actions`` run on a family without a flat view; ``vec_env: native``
            on an id without a native vector env).
    """
    hp = cfg["hyperparams"]
    ppo, train, wrappers = hp["ppo"], hp["train"], hp["wrappers"]
    env_id = cfg["env_id"]
    for key, unsupported in (
        ("train.scenarios", bool(train.get("scenarios"))),
        ("bc.teacher", bool(hp.get("bc", {}).get("teacher"))),
        ("wrappers.teacher", bool(wrappers.get("teacher"))),
    ):
        if unsupported:
            raise ConfigError(
                f"{key}: the RLlib backend trains on one scenario from scratch; scenario "
                "mixtures, behaviour cloning and a scheduler's decision as an action are the "
                "SB3 backend's (--backend sb3)"
            )
    probe = make_env(env_id, cfg["scenario"], cfg["overrides"])
    try:
        multi = isinstance(probe.action_space, spaces.MultiDiscrete)
    finally:
        probe.close()
    env_config: dict[str, Any] = {"scenario": cfg["scenario"], **dict(cfg["overrides"] or {})}
    run_id = env_id
    if bool(wrappers["discrete_actions"]) and multi:
        flat = FAMILIES[cfg["family"]].flat_id
        if not flat:
            raise ConfigError(
                f"wrappers.discrete_actions: family {cfg['family']!r} has no -Flat-v0 view "
                "for RLlib to train on; set wrappers.discrete_actions=false"
            )
        run_id = flat
        env_config["max_actions"] = int(wrappers["max_actions"])
    native = gym.spec(run_id).vector_entry_point is not None
    kind = train["vec_env"]
    if kind == "native" and not native:
        raise ConfigError(f"train.vec_env=native: {run_id} has no native vector env")
    vectorize = {
        "auto": "vector_entry_point" if native else "sync",
        "native": "vector_entry_point",
        "dummy": "sync",
        "subproc": "async",
    }[kind]
    size_free = hp["policy"] in SIZE_FREE
    model_config = (
        _size_free_settings(cfg, env_config) if size_free else _mlp_settings(hp["policy_kwargs"])
    )
    training: dict[str, Any] = {v: ppo[k] for k, v in PPO_MAP.items()}
    if ppo.get("lr_schedule") == "linear":  # RLlib's piecewise-linear schedule over env steps
        training["lr"] = [[0, float(ppo["learning_rate"])], [int(cfg["timesteps"]), 0.0]]
    batch = int(ppo["n_steps"]) * int(train["n_envs"])
    training["train_batch_size_per_learner"] = batch
    training["minibatch_size"] = min(int(ppo["batch_size"]), batch)
    training["grad_clip_by"] = "global_norm"
    training["vf_clip_param"] = math.inf
    if ppo["target_kl"] is None:
        training["use_kl_loss"] = False
    else:
        training["use_kl_loss"] = True
        training["kl_target"] = float(ppo["target_kl"])
    device = str(train["device"])
    if device == "auto":
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    return {
        "env": run_id,
        "env_config": env_config,
        "vectorize": vectorize,
        "num_env_runners": int(num_env_runners),
        "num_envs_per_env_runner": int(train["n_envs"]),
        "module": SIZE_FREE_MODULE if size_free else MASKING_MODULE,
        "training": training,
        "model_config": model_config,
        "num_gpus_per_learner": 1 if device.startswith("cuda") else 0,
        "mapping": dict(MAPPING),
    }


def _size_free_settings(cfg: Mapping[str, Any], env_config: Mapping[str, Any]) -> dict[str, Any]:
    """The recorded ``model_config`` of a size-free policy (name, base id, ``policy_kwargs``,
    wrappers), checked against the scenario before Ray starts.

    Raises:
        ConfigError: The policy does not fit the scenario.
    """
    hp = cfg["hyperparams"]
    recorded = {
        "policy": hp["policy"],
        "env_id": cfg["env_id"],
        "policy_kwargs": dict(hp["policy_kwargs"]),
        "wrappers": {**dict(hp["wrappers"]), "flatten_obs": False, "teacher": None},
    }
    try:
        _size_free_config(recorded, env_config)
    except ValueError as exc:
        raise ConfigError(f"policy {hp['policy']} on {cfg['env_id']}: {exc}") from None
    return recorded


def _mlp_settings(policy_kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """RLlib's masked MLP ``model_config`` for the file's ``policy_kwargs`` (SB3's layout).

    Raises:
        ConfigError: Different policy and value widths (RLlib builds them alike).
    """
    arch = policy_kwargs["net_arch"]
    if isinstance(arch, Mapping):
        pi, vf = list(arch.get("pi", [])), list(arch.get("vf", []))
        if pi != vf:
            raise ConfigError(
                f"policy_kwargs.net_arch {dict(arch)}: RLlib's PPO module builds policy and "
                "value networks of the same widths; give one list"
            )
        arch = pi
    return {
        "fcnet_hiddens": [int(w) for w in arch],
        "fcnet_activation": _ACTIVATIONS[policy_kwargs["activation_fn"]],
        "head_fcnet_hiddens": [],
        "vf_share_layers": False,
    }


def _size_free_config(
    model_config: Mapping[str, Any], env_config: Mapping[str, Any]
) -> dict[str, Any]:
    """The :class:`~edgegym.agents.rllib_module.SizeFreeTorchRLModule` ``model_config`` of the
    recorded one (policy, base id, ``policy_kwargs``, wrappers) on ``env_config``'s scenario."""
    from edgegym.agents.rllib_module import module_config

    overrides = {k: v for k, v in env_config.items() if k not in ("scenario", "max_actions")}
    return module_config(
        str(model_config["env_id"]), str(env_config["scenario"]), overrides, model_config
    )


def ppo_config(settings: Mapping[str, Any], seed: int) -> Any:
    """The RLlib ``PPOConfig`` of :func:`rllib_settings`."""
    from edgegym.agents.rllib import masked_ppo_config

    model_config, module_class = settings["model_config"], None
    if settings["module"] == SIZE_FREE_MODULE:
        from edgegym.agents.rllib_module import SizeFreeTorchRLModule

        model_config = _size_free_config(model_config, settings["env_config"])
        module_class = SizeFreeTorchRLModule
    return (
        masked_ppo_config(
            settings["env"],
            settings["env_config"],
            model_config=model_config,
            module_class=module_class,
        )
        .env_runners(
            num_env_runners=int(settings["num_env_runners"]),
            num_envs_per_env_runner=int(settings["num_envs_per_env_runner"]),
            gym_env_vectorize_mode=gym.VectorizeMode(settings["vectorize"]),
        )
        .learners(num_learners=0, num_gpus_per_learner=settings["num_gpus_per_learner"])
        .training(**settings["training"])
        .debugging(seed=int(seed))
    )


# ----------------------------------------------------------------------------- checkpoints
def _marker(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((path / MARKER).read_text())
    except (OSError, ValueError):
        return None
    if not (path / "rllib_checkpoint.json").is_file() or not isinstance(data, dict):
        return None
    return data


def rllib_checkpoints(out: Path) -> list[tuple[int, Path]]:
    """``(timesteps, folder)`` of the complete checkpoints in ``out/checkpoints``, oldest
    first."""
    found = []
    folder = Path(out) / "checkpoints"
    if folder.is_dir():
        for p in folder.iterdir():
            m = _CKPT.fullmatch(p.name)
            if m and p.is_dir() and _marker(p) is not None:
                found.append((int(m.group(1)), p))
    return sorted(found)


def save_algo(algo: Any, dest: Path, timesteps: int) -> Path:
    """``algo.save_to_path`` into ``dest`` atomically: a temporary folder beside it, the
    marker file, then a rename (an older ``dest`` is replaced)."""
    dest = Path(dest).resolve()
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.parent / f".{dest.name}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    algo.save_to_path(str(tmp))
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


def save_checkpoint(algo: Any, out: Path, timesteps: int, keep: int) -> Path:
    """Save ``out/checkpoints/ckpt_<timesteps>/`` (10 digits) and drop all but the newest
    ``keep``."""
    path = save_algo(algo, Path(out) / "checkpoints" / f"ckpt_{int(timesteps):010d}", timesteps)
    for _, old in rllib_checkpoints(out)[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return path


def _resume_source(out: Path) -> tuple[Path, int]:
    """The newest complete checkpoint or ``model/`` (when newer) and its timesteps.

    Raises:
        ConfigError: Neither exists.
    """
    found = rllib_checkpoints(out)
    newest = found[-1] if found else None
    marker = _marker(out / MODEL_DIR)
    if marker is not None:
        steps = int(marker.get("timesteps", 0))
        if newest is None or steps > newest[0]:
            newest = (steps, out / MODEL_DIR)
    if newest is None:
        raise ConfigError(f"--resume: {out} has no complete RLlib checkpoint or model/ to resume")
    return newest[1], newest[0]


# ----------------------------------------------------------------------------- train
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
        env_id .. progress: As for :func:`edgegym.agents.train.train`; ``n_envs`` is the
            number of environments per env runner.
        init_from: A size-free policy trained by the SB3 backend (``model.zip`` or its run
            folder; a shipped one too) whose weights the RLModule starts from: the same
            policy class, layers and spaces (:func:`init_weights`).
        num_env_runners: RLlib env runners sampling in parallel as Ray actors (0: sample in
            this process).
        address: Ray cluster (``None``/``"local"``: start one here; ``"auto"``;
            ``host:port``), see :func:`edgegym.parallel.init_ray`.

    Returns:
        A :class:`~edgegym.agents.train.TrainResult` (``model_path`` is ``out/model``).

    Raises:
        RayMissingError: Ray / RLlib is not installed (an ``ImportError``; the message says
            what to install).
        ValueError: As for :func:`edgegym.agents.train.train`, and settings RLlib cannot
            express (:func:`rllib_settings`), no cluster at ``address``.

    Training runs whole iterations of ``ppo.n_steps * n_envs`` steps, so the count reached
    is ``timesteps`` rounded up to a whole number of iterations.
    """
    require_ray(rllib=True)
    family = check_train_args(env_id, timesteps, n_envs, seed)
    if isinstance(num_env_runners, bool) or int(num_env_runners) < 0:
        raise ConfigError(f"num_env_runners must be >= 0, got {num_env_runners}")
    out = Path(out)
    if not resume:  # the family file's SB3-only choices give way; the user's own do not
        hyperparams = (
            _deep_merge(dotted(RLLIB_BASE), dotted(hyperparams))
            if isinstance(hyperparams, Mapping)
            else [*RLLIB_BASE, *(hyperparams or [])]
        )
    cfg, source, start = run_config(
        out, resume, env_id, family, scenario, overrides, timesteps, n_envs, seed,
        hyperparams, hyperparams_file, "rllib", MODEL_DIR,
        lambda out, _cfg: _resume_source(out),
    )  # fmt: skip
    hp = cfg["hyperparams"]

    # Bad scenarios, settings and baselines fail before any work.
    settings = rllib_settings(cfg, int(num_env_runners))
    check_baseline(env_id, cfg)
    if init_from is not None and resume:
        raise ConfigError("--init-from starts a new run; --resume continues one")
    from edgegym.wrappers import make_masked

    probe = make_masked(settings["env"], **settings["env_config"])
    try:
        init = None
        if init_from is not None:
            init = init_weights(init_from, cfg, settings, probe.action_space)
            cfg["init_from"] = init[1]
        try:
            joint = probe.get_wrapper_attr("joint")
        except AttributeError:
            joint = None
        cfg["spaces"] = {
            "observation": _space_record(probe.observation_space),
            "action": _space_record(probe.action_space),
            "joint_actions": None
            if joint is None
            else {"rule": joint.rule, "n": len(joint), "fingerprint": joint.fingerprint()},
        }
    finally:
        probe.close()
    cfg["policy_class"] = (
        hp["policy"] if hp["policy"] in SIZE_FREE else "ActionMaskingTorchRLModule"
    )
    ray = init_ray(address)
    cfg["versions"] = {**versions(), "ray": ray.__version__}
    recorded = {k: v for k, v in settings.items() if k != "num_env_runners"}
    cfg["rllib"] = recorded
    run, n_runs = start_run(out, cfg)
    run["num_env_runners"] = int(num_env_runners)
    run["ray_address"] = address or "local"

    import torch
    from tqdm.auto import tqdm

    torch.set_num_threads(int(hp["train"]["torch_threads"]))
    algo = ppo_config(settings, int(cfg["seed"]) + start).build_algo()
    evaluations: list[dict[str, Any]] = []
    steps = start
    target = int(cfg["timesteps"])
    keep = int(hp["checkpoint"]["keep"])
    ck_freq, ev_freq = int(hp["checkpoint"]["freq"]), int(hp["eval"]["freq"])
    t0 = time.perf_counter()
    bar = tqdm(
        total=target,
        initial=start,
        desc="train",
        unit="step",
        disable=None if progress else True,
        file=sys.stderr,
        dynamic_ncols=True,
    )
    try:
        if init is not None:
            _set_weights(algo, init[0])
        if source is not None:
            algo.restore_from_path(str(source.resolve()))
            if (out / "evaluations.json").is_file():
                evaluations = json.loads((out / "evaluations.json").read_text())
            run["resumed_from"] = str(source)
        logger = _logger(out / "logs" / f"run-{n_runs + 1}")
        best = max(
            (e["ppo_return"] for e in evaluations if e.get("ppo_return") is not None),
            default=-np.inf,
        )
        baseline_return: float | None = None
        done_at = -1

        def evaluate() -> None:
            nonlocal best, baseline_return, done_at
            module = algo.get_module()
            record = evaluate_policy(lambda env: _policy(module, env, cfg), cfg, baseline_return)
            baseline_return = record.get("baseline_return")
            done_at = record["timesteps"] = steps
            evaluations.append(record)
            write_atomic(out / "evaluations.json", json.dumps(evaluations, indent=2) + "\n")
            logger.record("eval/mean_return", record["ppo_return"])
            logger.record("eval/std_return", record["ppo_std"])
            if record.get("baseline_return") is not None:
                logger.record("eval/baseline_return", record["baseline_return"])
                logger.record("eval/gap_to_baseline", record["gap"])
            if record["ppo_return"] is not None and record["ppo_return"] > best:
                best = record["ppo_return"]
                save_algo(algo, out / BEST_DIR, steps)
            last = record
            text = f"eval {last['ppo_return']:.3f}"
            if last.get("baseline_return") is not None:
                text += f" vs {last['baseline']} {last['baseline_return']:.3f}"
            bar.set_postfix_str(text, refresh=False)

        next_ck = (steps // ck_freq + 1) * ck_freq if ck_freq else 0
        next_ev = (steps // ev_freq + 1) * ev_freq if ev_freq else 0
        try:
            while steps < target:
                result = algo.train()
                steps = max(_lifetime_steps(result), steps + 1)
                _log_result(logger, result, steps, time.perf_counter() - t0)
                if ck_freq and steps >= next_ck:
                    save_checkpoint(algo, out, steps, keep)
                    next_ck = (steps // ck_freq + 1) * ck_freq
                if ev_freq and steps >= next_ev and steps < target:
                    evaluate()
                    next_ev = (steps // ev_freq + 1) * ev_freq
                logger.dump(steps)
                bar.update(steps - bar.n)
        except KeyboardInterrupt:
            save_checkpoint(algo, out, steps, keep)
            run["interrupted_at"] = steps
            _write_yaml(out / CONFIG_NAME, cfg)
            raise
        if ev_freq and done_at != steps:
            evaluate()  # always score the final weights
            logger.dump(steps)
        save_algo(algo, out / MODEL_DIR, steps)
        if ck_freq and not any(s == steps for s, _ in rllib_checkpoints(out)):
            save_checkpoint(algo, out, steps, keep)
    finally:
        bar.close()
        algo.stop()
    wall = time.perf_counter() - t0
    finish_run(out, cfg, run, wall, steps, evaluations)
    return TrainResult(
        out=out,
        model_path=out / MODEL_DIR,
        config_path=out / CONFIG_NAME,
        timesteps=steps,
        wall_s=wall,
        evaluations=evaluations,
    )


def init_weights(
    path: str | Path, cfg: Mapping[str, Any], settings: Mapping[str, Any], action_space: gym.Space
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The weights ``--init-from`` names, as the state of the run's
    :class:`~edgegym.agents.rllib_module.SizeFreeTorchRLModule` policy, and the record kept in
    ``config.yaml``; checked against this run (its masked env's ``action_space``) before Ray
    starts.

    Raises:
        ConfigError: Not a size-free SB3 policy of this run's class, or other layers or
            spaces (a model trained with ``wrappers.teacher`` has one more action).
    """
    from edgegym.agents.policy import size_free_class
    from edgegym.agents.train import init_record, read_init

    source, source_cfg, model_path = read_init(path)
    policy = cfg["hyperparams"]["policy"]
    if settings["module"] != SIZE_FREE_MODULE or source_cfg.get("policy_class") != policy:
        raise ConfigError(
            f"--init-from {model_path}: a {source_cfg.get('policy_class')}; the RLlib backend "
            f"starts from the weights of a size-free policy of its own class ({policy})"
        )
    full = _size_free_config(settings["model_config"], settings["env_config"])
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


def _policy(module: Any, env: gym.Env, cfg: dict[str, Any]) -> Any:
    from edgegym.agents.rllib import RLlibPolicy

    return RLlibPolicy(module, env, cfg, name="ppo", source="the module in training")


__all__ = [
    "MAPPING",
    "PPO_MAP",
    "RAY_HINT",
    "RayMissingError",
    "ppo_config",
    "rllib_checkpoints",
    "rllib_settings",
    "save_algo",
    "save_checkpoint",
    "train_rllib",
]

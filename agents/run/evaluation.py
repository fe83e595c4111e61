"""Evaluation during training, and a run's logs and progress bar.

Both backends evaluate, log and report progress the same way:

* :func:`evaluate_policy` scores the policy in training and the family's baseline on the
  same seeded episodes (``eval.*`` of the hyperparameter file);
* :class:`Evaluations` keeps a run's evaluations (``evaluations.json``, over resumed runs
  too), logs each (``eval/*``) and says when one is the best so far (the backend then saves
  ``best_model``);
* :class:`Every` says when the next evaluation or checkpoint is due: at the first update
  boundary at or past each multiple of its ``freq``, so a record's ``timesteps`` is that of the
  weights it scored;
* :func:`open_logger` (Stable-Baselines3's CSV and TensorBoard logger, which the RLlib backend
  writes too) and :func:`progress_bar`.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from edgegym.agents.config import ConfigError
from edgegym.agents.run.record import EVALUATIONS_NAME
from edgegym.inputs import InputError, load_json, read_text
from edgegym.outputs import write_atomic


def read_records(path: Path) -> list[dict[str, Any]]:
    """A run's ``evaluations.json``: a list of evaluation records, read as an untrusted input
    (a regular file of at most the ``config`` kind's cap, :func:`edgegym.inputs.read_text`).

    Raises:
        FileNotFoundError: ``path`` does not exist.
        InputError: Not a regular file, over the cap, not JSON, or not a list of records
            (the message never repeats the file's content).
    """
    data = load_json(read_text(path, "run's evaluations", "config"), path)
    if not isinstance(data, list) or not all(isinstance(e, dict) for e in data):
        raise InputError(f"{path}: expected a list of evaluations")
    return data


def evaluate_policy(
    factory: Callable[[Any], Any], cfg: Mapping[str, Any], baseline_return: float | None = None
) -> dict[str, Any]:
    """Mean return of the policy ``factory(env)`` builds (and of the family's baseline,
    unless already known) on the config's evaluation seeds.

    Returns:
        ``{"ppo_return", "ppo_std", "baseline", "baseline_return", "episodes", "seed"}``, and
        ``gap`` (PPO's return minus the baseline's) when both returns are known.
    """
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


class Evaluations:
    """A run's periodic evaluations.

    Args:
        out: The run folder (``evaluations.json`` is written there).
        cfg: The run's configuration.
        resume: Continue the list a resumed run's folder holds.

    Attributes:
        records: Every evaluation, oldest first (those of earlier runs too).
        best: The highest return so far (``-inf`` before the first).
        done_at: Timesteps of this run's latest evaluation (-1: none yet).
    """

    def __init__(self, out: Path, cfg: Mapping[str, Any], resume: bool) -> None:
        self.path = Path(out) / EVALUATIONS_NAME
        self.cfg = cfg
        self.records: list[dict[str, Any]] = []
        if resume and os.path.lexists(self.path):  # a FIFO there is refused, not skipped
            try:
                self.records = read_records(self.path)
            except (OSError, InputError) as exc:
                raise ConfigError(f"--resume: {exc}") from None
        earlier = [e["ppo_return"] for e in self.records if e.get("ppo_return") is not None]
        self.best = max(earlier, default=-np.inf)
        self.done_at = -1
        self._baseline_return: float | None = None  # scored once per run

    def evaluate(self, factory: Callable[[Any], Any], timesteps: int, logger: Any) -> bool:
        """Score the policy ``factory(env)`` builds (the weights of ``timesteps``), append
        the record, write ``evaluations.json`` and log ``eval/*`` to ``logger``.

        Returns:
            Whether it is the best so far (the caller saves those weights as the best model).
        """
        record = evaluate_policy(factory, self.cfg, self._baseline_return)
        self._baseline_return = record.get("baseline_return")
        self.done_at = record["timesteps"] = int(timesteps)
        self.records.append(record)
        write_atomic(self.path, json.dumps(self.records, indent=2) + "\n")
        logger.record("eval/mean_return", record["ppo_return"])
        logger.record("eval/std_return", record["ppo_std"])
        if record.get("baseline_return") is not None:
            logger.record("eval/baseline_return", record["baseline_return"])
            logger.record("eval/gap_to_baseline", record["gap"])
        if record["ppo_return"] is not None and record["ppo_return"] > self.best:
            self.best = record["ppo_return"]
            return True
        return False

    def summary(self) -> str | None:
        """The latest evaluation as one short text for the progress bar (``None``: none)."""
        last = self.records[-1] if self.records else None
        if last is None or last.get("ppo_return") is None:
            return None
        text = f"eval {last['ppo_return']:.3f}"
        if last.get("baseline_return") is not None:
            text += f" vs {last['baseline']} {last['baseline_return']:.3f}"
        return text


class Every:
    """A schedule every ``freq`` timesteps (0: never), from ``start``: due at the first
    boundary a backend reports at or past each multiple of ``freq``.

    Args:
        freq: Timesteps between two events (0: off).
        start: Timesteps already trained (a resumed run's).
    """

    def __init__(self, freq: int, start: int) -> None:
        self.freq = int(freq)
        self.next = self._after(start) if self.freq else 0

    def _after(self, timesteps: int) -> int:
        return (int(timesteps) // self.freq + 1) * self.freq

    def due(self, timesteps: int) -> bool:
        """Whether the event is due at ``timesteps``."""
        return bool(self.freq) and timesteps >= self.next

    def done(self, timesteps: int) -> None:
        """The event happened at ``timesteps``: the next one is at the following multiple."""
        self.next = self._after(timesteps)


def open_logger(folder: Path) -> Any:
    """Stable-Baselines3's logger writing ``progress.csv`` and TensorBoard event files to
    ``folder`` (CSV only, with a note, when TensorBoard is not installed)."""
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


def progress_bar(target: int, start: int, progress: bool) -> Any:
    """The training progress on stderr, from ``start`` to ``target`` timesteps: a bar on a
    terminal, a line every 30 s elsewhere (:mod:`edgegym.progress`), none without
    ``progress``."""
    from edgegym.progress import progress_bar as bar

    return bar(target, "train", "step", progress, initial=start, dynamic_ncols=True)


__all__ = [
    "Evaluations",
    "Every",
    "evaluate_policy",
    "open_logger",
    "progress_bar",
    "read_records",
]

"""Stable-Baselines3 callbacks of a training run: progress, checkpoints, evaluation.

SB3 drives the training loop, so the run layer's schedule (:class:`~edgegym.agents.run.
evaluation.Every`), checkpoints and evaluations (:mod:`edgegym.agents.run`) run from its
callbacks. Checkpoints and evaluations happen at rollout starts, after a complete PPO update:
a checkpoint's or an evaluation's ``timesteps`` is that of the weights it holds or scored.
"""

from __future__ import annotations

from typing import Any

from stable_baselines3.common.callbacks import BaseCallback, CallbackList

from edgegym.agents.policy import PPOPolicy
from edgegym.agents.run.checkpoints import Checkpoints
from edgegym.agents.run.evaluation import Evaluations, Every, progress_bar
from edgegym.agents.run.record import Run
from edgegym.agents.sb3.checkpoints import BEST_NAME, save_model


class ProgressBar(BaseCallback):
    """The progress bar, with the latest evaluation beside it."""

    def __init__(self, target: int, evaluations: Evaluations, progress: bool) -> None:
        super().__init__()
        self.target = target
        self.evaluations = evaluations
        self.progress = progress
        self.bar: Any = None

    def _on_training_start(self) -> None:
        self.bar = progress_bar(self.target, self.model.num_timesteps, self.progress)

    def _on_step(self) -> bool:
        self.bar.update(self.model.num_timesteps - self.bar.n)
        summary = self.evaluations.summary()
        if summary is not None:
            self.bar.set_postfix_str(summary, refresh=False)
        return True

    def _on_training_end(self) -> None:
        self.bar.close()


class SaveCheckpoints(BaseCallback):
    """A checkpoint every ``freq`` timesteps (0: none), the newest ``keep`` kept."""

    def __init__(self, store: Checkpoints, freq: int, keep: int) -> None:
        super().__init__()
        self.store = store
        self.freq = freq
        self.keep = keep
        self.every = Every(freq, 0)

    def _on_training_start(self) -> None:
        self.every = Every(self.freq, self.model.num_timesteps)

    def _on_rollout_start(self) -> None:
        steps = self.model.num_timesteps
        if self.every.due(steps):
            self.store.save(self.model, steps, self.keep)
            self.every.done(steps)

    def _on_step(self) -> bool:
        return True


class Evaluate(BaseCallback):
    """Score the model (and the family's baseline) every ``eval.freq`` timesteps and at the
    end; save the best model as ``best_model.zip``."""

    def __init__(self, run: Run, evaluations: Evaluations) -> None:
        super().__init__()
        self.run = run
        self.evaluations = evaluations
        self.freq = int(run.cfg["hyperparams"]["eval"]["freq"])
        self.every = Every(self.freq, 0)

    def _on_training_start(self) -> None:
        steps = self.model.num_timesteps
        self.every = Every(self.freq, steps)
        if self.freq and self.run.cfg.get("bc") and steps == 0:
            self.evaluate()  # the cloned weights: best_model.zip if PPO never beats them

    def _on_rollout_start(self) -> None:
        steps = self.model.num_timesteps
        if self.every.due(steps):
            self.evaluate()
            self.every.done(steps)

    def _on_step(self) -> bool:
        return True

    def _on_training_end(self) -> None:
        # The final update happens after the last rollout start: always score its weights
        # (done_at equals num_timesteps only if no rollout ran since the last evaluation).
        if self.freq and self.evaluations.done_at != self.model.num_timesteps:
            self.evaluate()

    def evaluate(self) -> None:
        """Score the current weights, log them, keep them if they are the best so far."""
        model, cfg = self.model, self.run.cfg
        best = self.evaluations.evaluate(
            lambda env: PPOPolicy(model, env, cfg, source="the model in training"),
            model.num_timesteps,
            self.logger,
        )
        self.logger.dump(model.num_timesteps)
        if best:
            save_model(model, self.run.out / BEST_NAME)


def training_callbacks(
    run: Run, store: Checkpoints, evaluations: Evaluations, progress: bool
) -> CallbackList:
    """Progress bar, checkpoints and evaluation of a run, as one SB3 callback."""
    ck = run.cfg["hyperparams"]["checkpoint"]
    return CallbackList(
        [
            ProgressBar(int(run.cfg["timesteps"]), evaluations, progress),
            SaveCheckpoints(store, int(ck["freq"]), int(ck["keep"])),
            Evaluate(run, evaluations),
        ]
    )


__all__ = ["Evaluate", "ProgressBar", "SaveCheckpoints", "training_callbacks"]

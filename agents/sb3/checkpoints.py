"""Stable-Baselines3's saved models in a run folder: zip files, written atomically.

:class:`ModelFiles` is the SB3 backend's :class:`~edgegym.agents.run.checkpoints.Checkpoints`
(``checkpoints/ckpt_<timesteps>.zip``, final ``model.zip``); :func:`save_model` writes one
model (``python -m edgegym.agents.ship`` too).
"""

from __future__ import annotations

import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from edgegym.agents.config import ConfigError
from edgegym.agents.run.checkpoints import Checkpoints
from edgegym.outputs import replacing

MODEL_NAME = "model.zip"
BEST_NAME = "best_model.zip"


def save_model(model: Any, path: Path) -> None:
    """``model.save(path)`` through a temporary file and a rename: an interrupted or failed
    save leaves the previous file (and no half-written one under the name)."""
    with replacing(path) as tmp:
        model.save(tmp)


def intact(path: Path) -> bool:
    """Whether a saved model's zip file reads through (a truncated one does not), holding
    only what SB3 writes within the caps a model is loaded with (checked on the zip's
    directory first, so a zip bomb is not unpacked to find out:
    :func:`edgegym.agents.sb3.artifacts.check_zip`)."""
    from edgegym.agents.sb3.artifacts import UntrustedArtifact, check_zip

    try:
        check_zip(path)
        with zipfile.ZipFile(path) as z:
            return z.testzip() is None
    except (OSError, zipfile.BadZipFile, EOFError, UntrustedArtifact):
        return False


class ModelFiles(Checkpoints):
    """The SB3 models of a run folder (see :class:`~edgegym.agents.run.checkpoints.Checkpoints`)."""

    suffix = ".zip"
    final_name = MODEL_NAME

    def write(self, model: Any, path: Path, timesteps: int) -> None:
        save_model(model, path)

    def intact(self, path: Path) -> bool:
        return path.is_file() and intact(path)

    def remove(self, path: Path) -> None:
        path.unlink(missing_ok=True)

    def timesteps_of(self, path: Path, cfg: Mapping[str, Any]) -> int:
        steps = cfg.get("trained_timesteps")
        if steps is not None:
            return int(steps)
        # Not recorded (a run stopped between saving the model and its config): the model
        # file keeps the count.
        from edgegym.agents.sb3.artifacts import UntrustedArtifact, num_timesteps

        try:
            return num_timesteps(path)  # from the zip's JSON: nothing unpickled
        except UntrustedArtifact as exc:
            raise ConfigError(f"--resume: cannot be read: {exc}") from None


__all__ = ["BEST_NAME", "MODEL_NAME", "ModelFiles", "intact", "save_model"]

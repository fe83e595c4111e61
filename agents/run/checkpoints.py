"""A run's saved models: ``checkpoints/ckpt_<timesteps>``, the final model, the resume source.

Both backends keep their models the same way, in different files: Stable-Baselines3 saves a
zip file (``checkpoints/ckpt_0000000512.zip``, final ``model.zip``), RLlib an Algorithm
checkpoint folder (``checkpoints/ckpt_0000000512/``, final ``model/``). A backend subclasses
:class:`Checkpoints` with how it writes, checks and removes one of its models; listing,
pruning to the newest ``checkpoint.keep``, the final save and the choice of the model a
resumed run continues from are here, once.
"""

from __future__ import annotations

import re
import sys
from abc import ABC, abstractmethod
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from edgegym.agents.config import ConfigError


class Checkpoints(ABC):
    """The saved models of one backend in a run folder.

    Args:
        out: The run folder.
    """

    #: What follows ``ckpt_<timesteps>`` in a checkpoint's name (``""``: a folder).
    suffix: ClassVar[str] = ""
    #: The final model's name in the run folder.
    final_name: ClassVar[str]

    def __init__(self, out: Path) -> None:
        self.out = Path(out)
        self.folder = self.out / "checkpoints"
        self._name = re.compile(r"ckpt_(\d+)" + re.escape(self.suffix))

    # ------------------------------------------------------------------ what a backend says
    @abstractmethod
    def write(self, model: Any, path: Path, timesteps: int) -> None:
        """Save ``model`` (trained ``timesteps``) at ``path``, atomically: an interrupted save
        leaves the previous model there, never half a model."""

    @abstractmethod
    def intact(self, path: Path) -> bool:
        """Whether the saved model at ``path`` is complete and reads through."""

    @abstractmethod
    def remove(self, path: Path) -> None:
        """Delete the saved model at ``path``."""

    @abstractmethod
    def timesteps_of(self, path: Path, cfg: Mapping[str, Any]) -> int:
        """The timesteps the final model at ``path`` was trained (``cfg``: the run's config).

        Raises:
            ConfigError: The count cannot be read.
        """

    # ------------------------------------------------------------------ the same for both
    def path(self, timesteps: int) -> Path:
        """``checkpoints/ckpt_<timesteps, 10 digits><suffix>``."""
        return self.folder / f"ckpt_{int(timesteps):010d}{self.suffix}"

    def listing(self) -> list[tuple[int, Path]]:
        """``(timesteps, path)`` of the checkpoints, oldest first."""
        if not self.folder.is_dir():
            return []
        found = []
        for p in self.folder.iterdir():
            m = self._name.fullmatch(p.name)
            if m:
                found.append((int(m.group(1)), p))
        return sorted(found)

    def save(self, model: Any, timesteps: int, keep: int) -> Path:
        """Save a checkpoint of ``model`` and drop all but the newest ``keep``."""
        path = self.path(timesteps)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.write(model, path, timesteps)
        for _, old in self.listing()[:-keep]:
            self.remove(old)
        return path

    def save_final(self, model: Any, timesteps: int, freq: int, keep: int) -> Path:
        """Save the final model and, when checkpoints are on (``freq``), a checkpoint of it
        unless one of these timesteps exists already; return the final model's path."""
        final = self.out / self.final_name
        self.write(model, final, timesteps)
        if freq and not any(steps == timesteps for steps, _ in self.listing()):
            self.save(model, timesteps, keep)
        return final

    def resume_source(self, cfg: Mapping[str, Any]) -> tuple[Path, int]:
        """The newest intact saved model of a run and its timesteps: the newest intact
        checkpoint (a damaged newer one is skipped with a note), or the final model when it
        is newer (a run interrupted once, then completed, with ``checkpoint.freq: 0``).

        Raises:
            ConfigError: Neither exists.
        """
        found = self.listing()
        while found and not self.intact(found[-1][1]):  # a truncated newest: the one before it
            print(
                f"edgegym train: --resume: {found[-1][1]} is damaged; using the checkpoint "
                "before it",
                file=sys.stderr,
            )
            found.pop()
        newest = found[-1] if found else None
        final = self.out / self.final_name
        if final.exists() and self.intact(final):
            steps = int(self.timesteps_of(final, cfg))
            if newest is None or steps > newest[0]:
                newest = (steps, final)
        if newest is None:
            raise ConfigError(
                f"--resume: {self.out} has no intact checkpoint or {self.final_name} to resume "
                f"from (the run stopped before its first checkpoint); delete {self.out} to "
                "start it again, or train into another --out"
            )
        return newest[1], newest[0]


__all__ = ["Checkpoints"]

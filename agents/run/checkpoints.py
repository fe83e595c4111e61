"""A run's saved models: ``checkpoints/ckpt_<timesteps>``, the final model, the resume source.

Both backends keep their models the same way, in different files: Stable-Baselines3 saves a
zip file (``checkpoints/ckpt_0000000512.zip``, final ``model.zip``), RLlib an Algorithm
checkpoint folder (``checkpoints/ckpt_0000000512/``, final ``model/``). A backend subclasses
:class:`Checkpoints` with how it writes, checks and removes one of its models; listing,
pruning to the newest ``checkpoint.keep``, the final save and the choice of the model a
resumed run continues from are here, once.
"""

from __future__ import annotations

import hashlib
import re
import sys
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

from edgegym.agents.config import ConfigError

#: ``config.yaml``'s record of the digest of every model the run saved.
DIGESTS_KEY = "checkpoint_digests"


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
        self._digests: dict[str, str] | None = None
        self._persist: Callable[[], None] | None = None

    def bind(self, cfg: dict[str, Any], persist: Callable[[], None]) -> None:
        """Record the digest of every model saved from now on in ``cfg["checkpoint_digests"]``
        (name in the run folder -> SHA-256) and call ``persist`` (writing ``config.yaml``), so
        a resumed run continues only from a model this run saved (:meth:`resume_source`)."""
        self._digests = cfg.setdefault(DIGESTS_KEY, {})
        self._persist = persist

    def _name_of(self, path: Path) -> str:
        return Path(path).relative_to(self.out).as_posix()

    def _noted(self, *saved: Path) -> None:
        if self._digests is None or self._persist is None:
            return
        for path in saved:
            self._digests[self._name_of(path)] = digest(path)
        for name in list(self._digests):
            if not (self.out / name).exists():
                del self._digests[name]  # pruned
        self._persist()

    def _own(self, path: Path, cfg: Mapping[str, Any]) -> bool:
        """Whether ``path`` is a model this run saved: its digest is the one ``config.yaml``
        records (a run from before digests were recorded has none, and keeps every model)."""
        recorded = cfg.get(DIGESTS_KEY)
        if recorded is None:
            return True
        return recorded.get(self._name_of(path)) == digest(path)

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
        self._noted(path)
        return path

    def save_final(self, model: Any, timesteps: int, freq: int, keep: int) -> Path:
        """Save the final model and, when checkpoints are on (``freq``), a checkpoint of it
        unless one of these timesteps exists already; return the final model's path."""
        final = self.out / self.final_name
        self.write(model, final, timesteps)
        self._noted(final)
        if freq and not any(steps == timesteps for steps, _ in self.listing()):
            self.save(model, timesteps, keep)
        return final

    def resume_source(self, cfg: Mapping[str, Any]) -> tuple[Path, int]:
        """The newest intact saved model of a run and its timesteps: the newest intact
        checkpoint this run saved (a damaged newer one, or one whose digest is not the one
        ``config.yaml`` records, is skipped with a note), or the final model when it is newer
        (a run interrupted once, then completed, with ``checkpoint.freq: 0``).

        Raises:
            ConfigError: Neither exists.
        """
        found, skipped = self.listing(), 0
        while found and (problem := self._unusable(found[-1][1], cfg)):
            then = "using the checkpoint before it" if len(found) > 1 else "no older checkpoint"
            print(f"edgegym train: --resume: {found[-1][1]} {problem}; {then}", file=sys.stderr)
            found.pop()
            skipped += 1
        newest = found[-1] if found else None
        final = self.out / self.final_name
        if final.exists() and (problem := self._unusable(final, cfg)):
            print(f"edgegym train: --resume: {final} {problem}; not using it", file=sys.stderr)
        elif final.exists():
            steps = int(self.timesteps_of(final, cfg))
            if newest is None or steps > newest[0]:
                newest = (steps, final)
        if newest is None:
            why = (
                f"its {skipped} checkpoint(s) cannot be used, as said above"
                if skipped
                else "the run stopped before its first checkpoint"
            )
            raise ConfigError(
                f"--resume: {self.out} has no intact checkpoint or {self.final_name} to resume "
                f"from ({why}); delete {self.out} to start it again, or train into another --out"
            )
        return newest[1], newest[0]

    def _unusable(self, path: Path, cfg: Mapping[str, Any]) -> str | None:
        """Why a saved model cannot be resumed from (damaged, or not this run's), or None."""
        if not self.intact(path):
            return "is damaged"
        if not self._own(path, cfg):
            return (
                f"is not a model this run saved (its digest is not the one {DIGESTS_KEY} records)"
            )
        return None


def digest(path: Path) -> str:
    """SHA-256 of a saved model: a file's bytes, or a folder's files (relative names and
    bytes, in name order)."""
    h = hashlib.sha256()
    path = Path(path)
    if path.is_dir():
        for f in sorted(p for p in path.rglob("*") if p.is_file()):
            h.update(f.relative_to(path).as_posix().encode() + b"\0")
            h.update(f.read_bytes())
    else:
        h.update(path.read_bytes())
    return h.hexdigest()


__all__ = ["DIGESTS_KEY", "Checkpoints", "digest"]

"""Checks on output paths, made before long work starts so a bad path never costs results."""

from __future__ import annotations

import os
from pathlib import Path


def check_output_path(path: str | Path, *, folder: bool = False, flag: str = "") -> Path:
    """``path`` as a :class:`Path` if a file (with ``folder``: a folder) can be written there.

    The path may not exist yet: its nearest existing ancestor must be a writable folder (the
    writers create missing parents). Call this before measuring, training or evaluating, so
    that a typo in ``--out`` is reported at once rather than after the work is done.

    Args:
        path: The output path.
        folder: The output is a folder (``--out DIR``) rather than a file.
        flag: The option that named the path (``"--json"``), for the message.

    Raises:
        ValueError: Naming the path and what is wrong with it.
    """
    p = Path(path)
    what = f"{flag} {path}" if flag else str(path)
    if folder and p.exists() and not p.is_dir():
        raise ValueError(f"{what}: exists and is a file, expected a folder")
    if not folder and p.is_dir():
        raise ValueError(f"{what}: is a folder, expected a file path")
    ancestor = p if folder else p.parent
    ancestor = ancestor.absolute()
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        raise ValueError(f"{what}: cannot be created, {ancestor} is a file, not a folder")
    if not os.access(ancestor, os.W_OK | os.X_OK):
        raise ValueError(f"{what}: cannot be created, {ancestor} is not writable")
    if p.exists() and not folder and not os.access(p, os.W_OK):
        raise ValueError(f"{what}: exists and is not writable")
    return p

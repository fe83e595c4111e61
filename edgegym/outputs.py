"""Output files that never cost results and never destroy a file edgegym did not write.

* :func:`check_output_path`: made before long work starts, so a bad path (a folder, an
  unwritable place, an unsupported figure format, an input of the same command, an existing
  file that is not an edgegym output of the same kind) is reported before any work.
* :func:`check_distinct_outputs`: two outputs of one command (``--json`` and ``--plot``)
  never share a path, where one would silently replace the other.
* :func:`write_atomic`: a temporary file beside the target, then ``os.replace``: an
  interrupted or failed write (Ctrl-C, a full disk) leaves the old file as it was, never a
  truncated one. A write that fails (any ``OSError``: a full disk, a read-only file system,
  a folder that cannot be made) keeps the output in a rescue file instead (the current
  folder, else the system's temporary folder; printed on stdout if neither takes it) and
  raises :class:`OutputWriteError`, one line naming the flag, the path and the rescue file.
* :func:`save_figure`: ``savefig`` through a temporary file, with the edgegym marker in the
  figure's metadata (PNG, PDF, SVG), so a later run recognises its own figure.
* :func:`write_text`: a report or scenario file, atomically, its first line the marker.
* :func:`check_output_folder`: an output folder and every file a command writes into it.

Every JSON file edgegym writes carries ``"edgegym_output": KIND`` (:data:`MARKER`; a JSON-lines
file on its first line); Markdown
and YAML outputs carry it in a first-line comment (``<!-- edgegym_output: report -->``,
``# edgegym_output: scenario``).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import stat
import sys
import tempfile
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from edgegym.inputs import LIMITS, describe, read_text

#: Largest JSON output read back (the ``result`` kind of :data:`edgegym.inputs.LIMITS`).
MAX_RESULT_BYTES = LIMITS["result"]

#: Key of every JSON output; its value is the kind of output ("evaluation", "fidelity", ...).
MARKER = "edgegym_output"
#: Keys that mark an output of each kind written before :data:`MARKER` existed.
LEGACY_KEYS: dict[str, tuple[str, ...]] = {
    "evaluation": ("env", "scenario", "seeds", "results"),
    "leaderboard": ("edgegym_leaderboard",),
}
#: First-line comment that marks a text output, per extension (``{kind}`` filled in).
TEXT_MARKERS = {
    ".md": f"<!-- {MARKER}: {{kind}} -->",
    ".yaml": f"# {MARKER}: {{kind}}",
    ".yml": f"# {MARKER}: {{kind}}",
}
#: Figure formats whose metadata carries the edgegym marker.
MARKED_FIGURES = (".png", ".pdf", ".svg")
_SIGNATURE = "edgegym"


def figure_formats() -> list[str]:
    """File extensions ``savefig`` can write (matplotlib's list)."""
    from matplotlib.backend_bases import FigureCanvasBase

    return sorted(FigureCanvasBase.get_supported_filetypes())


def is_edgegym_output(path: str | Path, kind: str) -> bool:
    """Whether ``path`` is a file edgegym wrote as an output of ``kind`` (JSON: the marker or
    the kind's legacy keys; a figure: edgegym's signature in its metadata)."""
    p = Path(path)
    try:  # only a regular file is read: opening a FIFO blocks, a device never ends
        if not stat.S_ISREG(os.stat(p).st_mode):
            return False
    except OSError:
        return False
    if p.suffix.lower() == ".json":
        try:
            data = json.loads(read_output(p, "output"))
        except (OSError, ValueError, RecursionError):  # InputError is a ValueError
            return False
        if not isinstance(data, dict):
            return False
        if data.get(MARKER) == kind:
            return True
        legacy = LEGACY_KEYS.get(kind)
        return bool(legacy) and MARKER not in data and all(k in data for k in legacy)
    if p.suffix.lower() == ".jsonl":  # JSON lines: the first line carries the marker
        try:
            with p.open(encoding="utf-8") as fh:
                head = json.loads(fh.readline(4096))
        except (OSError, UnicodeDecodeError, ValueError):
            return False
        return isinstance(head, dict) and head.get(MARKER) == kind
    if p.suffix.lower() in TEXT_MARKERS:
        try:
            with p.open(encoding="utf-8") as fh:
                first = fh.readline(4096).rstrip("\r\n")
        except (OSError, UnicodeDecodeError):
            return False
        return first == TEXT_MARKERS[p.suffix.lower()].format(kind=kind)
    if kind == "figure" and p.suffix.lower() in MARKED_FIGURES:
        try:
            with p.open("rb") as fh:
                head = fh.read(1 << 16)
                fh.seek(max(0, p.stat().st_size - (1 << 16)))
                tail = fh.read()
        except OSError:
            return False
        return _SIGNATURE.encode() in head or _SIGNATURE.encode() in tail
    return False


def read_output(path: str | Path, what: str) -> str:
    """The text of a JSON output read back, as an untrusted input: a regular file of at most
    :data:`MAX_RESULT_BYTES` (:func:`edgegym.inputs.read_text`).

    Raises:
        FileNotFoundError: ``path`` does not exist.
        edgegym.inputs.InputError: Not a regular file, over the cap, or not UTF-8 text.
    """
    return read_text(path, what, "result")


def not_regular(path: str | Path) -> str | None:
    """What an existing ``path`` is when it is not a regular file (``"a FIFO (named pipe)"``,
    ``"a symbolic link to x.json"``); ``None`` for a regular file or no file.

    Writers replace their output by renaming a new file over it; over a device, a FIFO or a
    socket that would swap a system object for a plain file, and over a symbolic link it
    would leave the link's target stale, so edgegym writes only where this is ``None``."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:  # missing, or under a parent that is not a folder (reported elsewhere)
        return None
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISLNK(mode):
        return f"a symbolic link to {os.readlink(path)}"
    return describe(mode)


def reason(exc: OSError) -> str:
    """What the operating system said, without the file name it adds (which may be a
    temporary file's): ``"No space left on device"``."""
    return exc.strerror or str(exc) or type(exc).__name__


def _refuse_not_regular(path: str | Path, what: str) -> None:
    kind = not_regular(path)
    if kind is not None:
        raise ValueError(
            f"{what}: is {kind}; edgegym writes only regular files and leaves it as it is "
            "(even with --force); choose another path"
        )


def check_output_path(
    path: str | Path,
    *,
    folder: bool = False,
    flag: str = "",
    kind: str | None = None,
    force: bool = False,
    inputs: Iterable[str | Path] = (),
) -> Path:
    """``path`` as a :class:`Path` if a file (with ``folder``: a folder) can be written there.

    The path may not exist yet: its nearest existing ancestor must be a writable folder (the
    writers create missing parents). Call this before measuring, training or evaluating, so
    that a typo in ``--out`` is reported at once rather than after the work is done.

    Args:
        path: The output path.
        folder: The output is a folder (``--out DIR``) rather than a file.
        flag: The option that named the path (``"--json"``), for the message.
        kind: The kind of output (``"evaluation"``, ``"figure"``, ...): an existing file there
            must be an edgegym output of that kind (:func:`is_edgegym_output`), unless
            ``force``. A ``"figure"`` path must also have a format ``savefig`` writes.
        force: Overwrite an existing file that is not such an output (``--force``).
        inputs: Files the same command reads (a scenario, a model): never an output.

    Raises:
        ValueError: Naming the path and what is wrong with it (an ``OSError`` while looking,
            such as a name too long, included).
    """
    what = f"{flag} {path}" if flag else str(path)
    if not folder and isinstance(path, str) and path.endswith(("/", os.sep)):
        # Path() drops the slash: the file would be written under the folder's name.
        raise ValueError(f"{what}: names a folder (it ends in '/'), expected a file path")
    try:
        return _check_output_path(Path(path), what, folder, kind, force, inputs)
    except OSError as exc:
        raise ValueError(f"{what}: cannot be used ({reason(exc)})") from None


def _check_output_path(
    p: Path,
    what: str,
    folder: bool,
    kind: str | None,
    force: bool,
    inputs: Iterable[str | Path],
) -> Path:
    """:func:`check_output_path` once ``what`` names the path (``OSError`` passes)."""
    for source in inputs:
        with contextlib.suppress(OSError):
            if Path(source).exists() and p.exists() and p.samefile(source):
                raise ValueError(f"{what}: is an input of this command; write the output elsewhere")
    if folder and p.exists() and not p.is_dir():
        raise ValueError(f"{what}: exists and is a file, expected a folder")
    if not folder and p.is_dir():
        raise ValueError(f"{what}: is a folder, expected a file path")
    if not folder:
        _refuse_not_regular(p, what)
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
    if kind == "figure" and not folder:
        ext = p.suffix.lower().lstrip(".")
        formats = figure_formats()
        if ext not in formats:
            raise ValueError(
                f"{what}: cannot write a figure as {ext or 'a file without an extension'!r}; "
                f"use one of {', '.join(formats)}"
            )
    if (
        kind is not None
        and not folder
        and not force
        and p.is_file()
        and p.stat().st_size > 0
        and not is_edgegym_output(p, kind)
    ):
        raise ValueError(
            f"{what}: exists and is not an edgegym {kind} output; choose another path, or pass "
            "--force to overwrite it"
        )
    return p


def check_distinct_outputs(outputs: Iterable[tuple[str | Path | None, str]]) -> None:
    """Refuse two outputs of one command that name the same file (``(path, flag)`` pairs,
    ``None`` paths unset): the second write would replace the first without a word.

    Paths are compared once resolved (``out.json`` and ``./out.json``, a symbolic link to
    a folder), and as the same file where both exist (a hard link).

    Raises:
        ValueError: Naming both flags and the path.
    """
    seen: list[tuple[Path, str, str | Path]] = []
    for path, flag in outputs:
        if path is None:
            continue
        try:
            key = Path(os.path.realpath(path))
        except OSError:  # check_output_path reports it
            key = Path(path).absolute()
        for other, other_flag, other_path in seen:
            same = key == other
            if not same:
                with contextlib.suppress(OSError):
                    same = key.exists() and other.exists() and key.samefile(other)
            if same:
                first = f"{other_flag} {other_path}" if other_flag else str(other_path)
                raise ValueError(
                    f"{flag} {path}: is also the output of {first}; the second write would "
                    "replace the first, give each output its own path"
                )
        seen.append((key, flag, path))


def check_output_folder(
    path: str | Path,
    files: Mapping[str, str],
    *,
    flag: str = "--out",
    force: bool = False,
    inputs: Iterable[str | Path] = (),
) -> Path:
    """``path`` as a :class:`Path` if it can be a command's output folder: a folder there can
    be written, and every file the command writes into it (``files``: name -> kind, the kind
    as in :func:`check_output_path`) is new or an edgegym output of that kind (or ``force``).

    Raises:
        ValueError: Naming the folder or file and what is wrong with it.
    """
    out = check_output_path(path, folder=True, flag=flag)
    inputs = list(inputs)
    for name, kind in files.items():
        check_output_path(out / name, flag=flag, kind=kind, force=force, inputs=inputs)
    return out


@contextlib.contextmanager
def replacing(path: Path) -> Iterator[str]:
    """A temporary file beside ``path`` (same extension) for the caller to fill; on success it
    replaces ``path`` (``os.replace``, keeping an existing file's permissions), on any failure
    or interruption it is removed and ``path`` is left as it was. A ``path`` that is not a
    regular file (:func:`not_regular`) is refused before anything is written.

    Raises:
        ValueError: ``path`` exists and is not a regular file.
    """
    _refuse_not_regular(path, str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=path.suffix)
    os.close(fd)
    try:
        yield tmp
        _refuse_not_regular(path, str(path))  # made while the file was being written
        if path.exists():
            with contextlib.suppress(OSError):
                os.chmod(tmp, path.stat().st_mode & 0o777)
        else:
            os.chmod(tmp, _file_mode())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


class CommandError(ValueError):
    """An error found after a command's arguments were checked whose message says it all (a
    resume journal of other code): :func:`run_command` prints it as one ``prog: error:``
    line and exits 2, where another exception would be a traceback."""


class OutputWriteError(ValueError):
    """An output could not be written (an ``OSError`` after the work that made it: a full
    disk, a read-only file system, a folder that cannot be made). Its one-line message names
    the flag, the path and why; the output itself was kept elsewhere (:attr:`rescued`), or
    printed on stdout when no rescue file could be made (:attr:`printed`).

    Attributes:
        path: The output path that could not be written.
        why: What the operating system said (:func:`reason`).
        rescued: The file that holds the output instead, or ``None``.
        printed: The output (text) was printed on stdout instead.
        flag: The option that named the path (``"--json"``); a command may set it after the
            fact for a writer that did not know it.
    """

    def __init__(
        self, path: Path, why: str, rescued: Path | None, printed: bool = False, flag: str = ""
    ) -> None:
        self.path, self.why, self.rescued, self.printed, self.flag = (
            path, why, rescued, printed, flag
        )  # fmt: skip
        super().__init__(str(self))

    def __str__(self) -> str:
        what = f"{self.flag} {self.path}" if self.flag else str(self.path)
        if self.rescued is not None:
            kept = f"the output was saved to {self.rescued} instead"
        elif self.printed:
            kept = "the output was printed on stdout instead (no rescue file could be made)"
        else:
            kept = "no rescue file could be made in the current or the temporary folder either"
        return f"{what}: cannot write it ({self.why}); {kept}"


#: Longest name of a rescue file's stem part (the target's may be what was too long).
_RESCUE_STEM = 60


def _file_mode() -> int:
    """The mode a new file gets under the current umask (``mkstemp`` makes it 0600)."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def rescue_folders() -> list[Path]:
    """Where :func:`write_atomic` keeps an output it could not write: the current folder,
    then the system's temporary folder."""
    folders: list[Path] = []
    with contextlib.suppress(OSError):  # a current folder that was removed
        folders.append(Path.cwd())
    temp = Path(tempfile.gettempdir()).absolute()
    if temp not in folders:
        folders.append(temp)
    return folders


def _rescue(path: Path, fill: Callable[[str], None]) -> Path | None:
    """A new file (``NAME.rescued-XXXX.EXT``) in the first of :func:`rescue_folders` that
    takes it, filled by ``fill``; ``None`` if none did."""
    stem = path.stem[:_RESCUE_STEM] or "output"
    suffix = path.suffix if len(path.suffix) <= 16 else ""
    for folder in rescue_folders():
        try:
            fd, name = tempfile.mkstemp(dir=folder, prefix=f"{stem}.rescued-", suffix=suffix)
        except OSError:
            continue
        os.close(fd)
        try:
            fill(name)
            os.chmod(name, _file_mode())
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(name)
            continue
        return Path(name)
    return None


def _write(path: Path, fill: Callable[[str], None], flag: str, text: str | None) -> Path:
    """``fill`` a temporary file that then replaces ``path`` (:func:`replacing`); on an
    ``OSError`` ``fill`` a rescue file instead (:func:`_rescue`; ``text`` to stdout when
    none could be made) and raise :class:`OutputWriteError`. The one place every writer of
    this module goes through."""
    try:
        with replacing(path) as tmp:
            fill(tmp)
    except OSError as exc:
        rescued = _rescue(path, fill)
        printed = False
        if rescued is None and text is not None:
            with contextlib.suppress(OSError):
                sys.stdout.write(text if text.endswith("\n") else text + "\n")
                sys.stdout.flush()
                printed = True
        raise OutputWriteError(path, reason(exc), rescued, printed, flag) from exc
    return path


def write_atomic(path: str | Path, data: str | bytes, *, flag: str = "") -> Path:
    """Write ``data`` to ``path`` through a temporary file beside it and ``os.replace``: the
    file is either the old one or the complete new one, never a truncated mix (parents are
    created).

    Args:
        path: The output file.
        data: Its content.
        flag: The option that named ``path`` (``"--json"``), for the message.

    Raises:
        OutputWriteError: The write failed (``OSError``); ``data`` was saved to a rescue file
            the message names (or printed on stdout), so the work that made it is not lost.
        ValueError: ``path`` exists and is not a regular file (:func:`not_regular`).
    """
    blob = data.encode() if isinstance(data, str) else data

    def fill(tmp: str) -> None:
        with open(tmp, "wb") as fh:
            fh.write(blob)
            fh.flush()
            os.fsync(fh.fileno())

    return _write(Path(path), fill, flag, data if isinstance(data, str) else None)


def write_json(
    path: str | Path, data: dict[str, Any], kind: str, indent: int = 2, *, flag: str = ""
) -> str:
    """``data`` with the :data:`MARKER` of ``kind`` first, written atomically
    (:func:`write_atomic`, which says what a failed write does); returns the text."""
    text = json.dumps({MARKER: kind, **data}, indent=indent) + "\n"
    write_atomic(path, text, flag=flag)
    return text


def write_text(path: str | Path, text: str, kind: str, *, flag: str = "") -> Path:
    """``text`` to ``path`` atomically (:func:`write_atomic`), its first line the marker of
    ``kind`` where the format has comments (Markdown, YAML: :data:`TEXT_MARKERS`)."""
    p = Path(path)
    marker = TEXT_MARKERS.get(p.suffix.lower())
    if marker is not None:
        text = f"{marker.format(kind=kind)}\n{text}"
    return write_atomic(p, text, flag=flag)


def save_figure(fig: Any, path: str | Path, *, flag: str = "", **kwargs: Any) -> Path:
    """``fig.savefig`` to ``path`` atomically, with the edgegym marker in its metadata; a
    failed write keeps the figure in a rescue file (:class:`OutputWriteError`, as
    :func:`write_atomic`)."""
    p = Path(path)
    ext = p.suffix.lower()
    if ext in MARKED_FIGURES:
        import edgegym

        kwargs.setdefault("metadata", {"Creator": f"{_SIGNATURE} {edgegym.__version__}"})
    return _write(p, lambda tmp: fig.savefig(tmp, **kwargs), flag, None)


#: The lock file of an output folder (:func:`folder_lock`).
LOCK_NAME = ".edgegym.lock"


class FolderLocked(ValueError):
    """Another edgegym process is writing into the same output folder."""


@contextlib.contextmanager
def folder_lock(folder: str | Path, command: str) -> Iterator[Path]:
    """Hold ``folder``'s lock for the whole of a command that writes into it (training, the
    leaderboard, a reproduction), so two runs never interleave their files there.

    The lock is an ``flock`` on ``folder/.edgegym.lock``: the operating system releases it
    when the holder exits, however it exits, so a killed run leaves no stale lock; the file
    keeps the holder's PID for the message. The folder is created if needed (and removed
    again if the command wrote nothing into it).

    Raises:
        FolderLocked: Another process holds the lock (the message names its PID).
        ValueError: The lock path exists and is not a regular file, or the folder or its lock
            file cannot be made (an ``OSError``, in one line naming the folder).
    """
    import fcntl

    out = Path(folder)
    path = out / LOCK_NAME
    try:
        created = not out.exists()
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ValueError(f"{out}: cannot create the output folder ({reason(exc)})") from None
    _refuse_not_regular(path, str(path))
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        why = f"its lock file {LOCK_NAME}: {reason(exc)}"
        raise ValueError(f"{out}: cannot write into the output folder ({why})") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode(errors="replace").split()
            who = f"PID {holder[0]}" if holder and holder[0].isdigit() else "another process"
            raise FolderLocked(
                f"{out}: {who} is writing into this folder ({' '.join(holder[1:2]) or 'edgegym'}); "
                "wait for it to end, or write elsewhere"
            ) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()} {command}\n".encode(), 0)
        yield out
    finally:
        os.close(fd)  # releases the lock
        with contextlib.suppress(OSError):
            if created and [p.name for p in out.iterdir()] == [LOCK_NAME]:
                # A command refused before writing anything leaves no folder behind.
                path.unlink()
                out.rmdir()


_HELD: dict[Path, contextlib.AbstractContextManager[Path]] = {}


def hold_folder(folder: str | Path, command: str) -> Path:
    """Take ``folder``'s lock (:func:`folder_lock`) until :func:`release_folders` or the end of
    the process, for a command whose writing into the folder is spread over several functions
    (a reproduction checks its folder, runs, then renders; ``reproduce all`` runs several in
    one process, so a folder this process holds already is fine).

    Raises:
        FolderLocked: Another process holds the lock.
    """
    key = Path(folder).absolute()
    if key not in _HELD:
        lock = folder_lock(key, command)
        lock.__enter__()
        _HELD[key] = lock
    return Path(folder)


def release_folders() -> None:
    """Release every lock :func:`hold_folder` took in this process."""
    while _HELD:
        _, lock = _HELD.popitem()
        lock.__exit__(None, None, None)


class Terminated(KeyboardInterrupt):
    """SIGTERM (``kill``, a batch scheduler's stop or time limit, ``docker stop``), raised in
    the main thread as Ctrl-C is, so every command's Ctrl-C path runs for it too: training
    saves a checkpoint and records where it stopped, evaluation keeps its finished episodes.
    The command then ends with one line and exit code 143 (128 + SIGTERM)."""


_terminated = False


def _on_sigterm(signum: int, frame: Any) -> None:
    global _terminated
    _terminated = True
    raise Terminated()


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """Inside: SIGTERM raises :class:`Terminated` (a ``KeyboardInterrupt``) in the main
    thread; the previous handler comes back after. Elsewhere than the main thread, nothing."""
    global _terminated
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _terminated = False
    old = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def stopped() -> tuple[str, int]:
    """How a command that caught a ``KeyboardInterrupt`` was stopped: ``("terminated", 143)``
    after SIGTERM (:func:`sigterm_as_interrupt`), else ``("interrupted", 130)``."""
    return ("terminated", 143) if _terminated else ("interrupted", 130)


def run_command(main: Callable[[], Any], prog: str) -> int:
    """``main()``'s exit code (0 unless it returns an int); Ctrl-C ends it with one line and
    130, SIGTERM with one line and 143 (what was written before stays whole: every writer
    here replaces its file in one rename); an output that could not be written
    (:class:`OutputWriteError`, its content kept in a rescue file) or a
    :class:`CommandError` ends it with one ``prog: error:`` line and 2."""
    with sigterm_as_interrupt():
        try:
            code = main()
            return code if isinstance(code, int) else 0
        except (OutputWriteError, CommandError) as exc:
            print(f"{prog}: error: {exc}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            word, code = stopped()
            print(f"{prog}: {word}", file=sys.stderr)
            return code
        finally:
            release_folders()

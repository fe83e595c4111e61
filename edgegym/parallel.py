"""Run independent jobs in this process, a local process pool, or as Ray tasks.

One runner serves the evaluator (an episode per job), the leaderboard (an episode of a
policy on a scenario per job) and the reproductions (an episode or sweep point per job)::

    from edgegym.parallel import Runner

    runner = Runner(workers=4)            # local process pool (spawn)
    runner = Runner(ray="local")          # a Ray cluster started here (all cores)
    runner = Runner(ray="auto")           # the cluster of `ray start --head` / RAY_ADDRESS
    for index, result in runner.imap_unordered(fn, jobs):
        ...

Jobs must be picklable and ``fn`` a module-level function; each job carries everything it
needs (its seed included), so a result never depends on which worker ran it or what ran
there before. :meth:`Runner.map` returns the results in the jobs' order.

Ray is optional (``pip install -e ".[ray]"``) and imported only when asked for; without it
:func:`require_ray` raises :class:`RayMissingError`, whose one-line message says what to
install.
"""

from __future__ import annotations

import argparse
import logging
import multiprocessing as mp
import os
import re
import signal
import socket
import sys
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

RAY_HINT = 'this needs Ray: pip install -e ".[ray]" (installs ray[rllib])'

#: ``--ray`` given without an address: start a Ray cluster on this machine.
LOCAL = "local"


class RayMissingError(ImportError):
    """Ray / RLlib is not installed; the message says what to install."""


#: RLlib's log lines about its own internals that an edgegym user cannot act on (logger ->
#: pattern): its PPO module and RLModule constructor deprecating themselves when RLlib builds
#: them, the notice that PPO runs on the new API stack (edgegym asks for it), and Tune's
#: advice to install gputil. Everything else RLlib logs is kept.
RLLIB_NOISE = {
    "ray._common.deprecation": r"PPOTorchRLModule|RLModule\(config=",
    "ray.rllib.algorithms.algorithm_config": r"on the new API stack",
    "ray.tune.utils.util": r"Install gputil",
}


class _DropNoise(logging.Filter):
    def __init__(self, pattern: str) -> None:
        super().__init__()
        self.pattern = re.compile(pattern)

    def filter(self, record: logging.LogRecord) -> bool:
        return not self.pattern.search(record.getMessage())


def quiet_rllib() -> None:
    """Drop :data:`RLLIB_NOISE` from RLlib's loggers in this process (idempotent)."""
    for name, pattern in RLLIB_NOISE.items():
        logger = logging.getLogger(name)
        if not any(isinstance(f, _DropNoise) for f in logger.filters):
            logger.addFilter(_DropNoise(pattern))


def require_ray(rllib: bool = False) -> Any:
    """The ``ray`` module (``ray.rllib`` imported too with ``rllib=True``, its harmless noise
    silenced: :func:`quiet_rllib`).

    Raises:
        RayMissingError: Ray is not installed.
    """
    try:
        import ray

        if rllib:
            quiet_rllib()
            import ray.rllib
    except ImportError:
        raise RayMissingError(RAY_HINT) from None
    return ray


def init_ray(address: str | None = LOCAL, num_cpus: int | None = None) -> Any:
    """Connect to Ray once per process and return the ``ray`` module.

    Args:
        address: ``"local"`` (or ``None``) starts a cluster on this machine; ``"auto"``
            joins the one ``ray start --head`` started (or ``RAY_ADDRESS``); ``host:port``
            or ``ray://host:10001`` joins that one. Already connected: kept as is.
        num_cpus: CPUs of a local cluster (default: all).

    Raises:
        RayMissingError: Ray is not installed.
        ValueError: No cluster at ``address``.
    """
    ray = require_ray()
    if ray.is_initialized():
        return ray
    kwargs: dict[str, Any] = {
        "include_dashboard": False,
        "log_to_driver": False,
        "configure_logging": False,
    }
    # Workers import edgegym as this process does (an editable checkout, or PYTHONPATH).
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    path = [root, *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
    kwargs["runtime_env"] = {"env_vars": {"PYTHONPATH": os.pathsep.join(dict.fromkeys(path))}}
    if address in (None, LOCAL):
        if num_cpus is not None:
            kwargs["num_cpus"] = int(num_cpus)
        ray.init(**kwargs)
    else:
        _probe(address)
        try:
            ray.init(address=address, **kwargs)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise ValueError(f"no Ray cluster at {address!r}: {exc}") from None
    return ray


#: Seconds :func:`init_ray` waits for a ``host:port`` to answer before it gives up.
PROBE_TIMEOUT_S = 5.0


def _probe(address: str) -> None:
    """Refuse a ``host:port`` (or ``ray://host:port``) where nothing answers: Ray itself
    retries its connection for minutes there, repeating a log line, before it fails.

    Raises:
        ValueError: Nothing accepts a TCP connection at that host and port.
    """
    target = address.removeprefix("ray://")
    host, sep, port = target.rpartition(":")
    if not sep or not port.isdigit() or not host:
        return  # "auto" or another form Ray resolves itself
    try:
        socket.create_connection((host.strip("[]"), int(port)), PROBE_TIMEOUT_S).close()
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise ValueError(
            f"no Ray cluster at {address!r}: nothing answers at {target} ({why})"
        ) from None


def _call(fn: Callable[[Any], Any], job: Any) -> Any:
    return fn(job)


def _indexed(args: tuple[Callable[[Any], Any], int, Any]) -> tuple[int, Any]:
    fn, index, job = args
    return index, fn(job)


def _ignore_sigint() -> None:
    """Pool workers leave Ctrl-C to the parent: a terminal sends SIGINT to the whole process
    group, and the parent stops the pool (no traceback per worker)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class MapInterrupted(KeyboardInterrupt):
    """Ctrl-C during :meth:`Runner.map`: ``results`` holds every finished job's result at its
    index, ``None`` where the job had not finished."""

    def __init__(self, results: list[Any]) -> None:
        super().__init__("interrupted")
        self.results = results


class Runner:
    """Where jobs run: this process (``workers=1``), a spawn process pool (``workers > 1``)
    or Ray tasks (``ray`` set to an address, see :func:`init_ray`).

    Args:
        workers: Local processes (ignored with ``ray``); ``>= 1``.
        ray: Ray address (``"local"``, ``"auto"``, ``host:port``), or ``None`` for local.
        num_cpus: CPUs per Ray task (1).

    Raises:
        ValueError: ``workers < 1``.
        RayMissingError: ``ray`` is set and Ray is not installed.
    """

    def __init__(self, workers: int = 1, ray: str | None = None, num_cpus: float = 1) -> None:
        if isinstance(workers, bool) or int(workers) < 1:
            raise ValueError(f"workers must be >= 1, got {workers!r}")
        self.workers = int(workers)
        self.ray_address = ray
        self.num_cpus = num_cpus
        if ray is not None:
            require_ray()

    @property
    def kind(self) -> str:
        """``"ray"``, ``"pool"`` or ``"serial"``."""
        if self.ray_address is not None:
            return "ray"
        return "pool" if self.workers > 1 else "serial"

    def describe(self) -> str:
        """One line for reports: what ran the jobs."""
        if self.ray_address is not None:
            ray = init_ray(self.ray_address)
            cpus = int(ray.cluster_resources().get("CPU", 0))
            return f"Ray ({self.ray_address}, {cpus} CPUs)"
        return f"{self.workers} local process{'' if self.workers == 1 else 'es'}"

    def imap_unordered(
        self, fn: Callable[[Any], Any], jobs: Sequence[Any]
    ) -> Iterator[tuple[int, Any]]:
        """``(index, fn(jobs[index]))`` as each job finishes. An exception in a job is
        raised here (catch it inside ``fn`` to keep going)."""
        jobs = list(jobs)
        if not jobs:
            return
        if self.ray_address is not None:
            yield from self._ray(fn, jobs)
        elif self.workers <= 1 or len(jobs) == 1:
            for i, job in enumerate(jobs):
                yield i, fn(job)
        else:
            n = min(self.workers, len(jobs))
            with mp.get_context("spawn").Pool(n, initializer=_ignore_sigint) as pool:
                yield from pool.imap_unordered(_indexed, [(fn, i, j) for i, j in enumerate(jobs)])

    def _ray(self, fn: Callable[[Any], Any], jobs: list[Any]) -> Iterator[tuple[int, Any]]:
        ray = init_ray(self.ray_address)
        task = ray.remote(num_cpus=self.num_cpus, max_retries=0)(_call)
        fn_ref = ray.put(fn)
        pending = {task.remote(fn_ref, job): i for i, job in enumerate(jobs)}
        try:
            while pending:
                done, _ = ray.wait(list(pending), num_returns=1)
                for ref in done:
                    i = pending.pop(ref)
                    try:
                        result = ray.get(ref)
                    except ray.exceptions.RayTaskError as exc:
                        raise exc.as_instanceof_cause() from None
                    yield i, result
        finally:
            for ref in pending:  # Ctrl-C or an error: stop what has not run
                ray.cancel(ref, force=True)

    def map(
        self,
        fn: Callable[[Any], Any],
        jobs: Iterable[Any],
        label: str | None = None,
        progress: bool = True,
        journal: str | os.PathLike[str] | None = None,
    ) -> list[Any]:
        """``[fn(job) for job in jobs]``, run by this runner, with a progress bar.

        Args:
            journal: A file that keeps every finished job's result (:mod:`edgegym.journal`):
                jobs it already holds are not run again, so a stopped run resumes. Results
                are then returned as JSON data, resumed or not (numpy values become numbers
                and lists, tuples lists).

        Raises:
            MapInterrupted: Ctrl-C; it carries the results finished so far.
            ValueError: ``journal`` cannot be resumed from (other code wrote it).
        """
        from edgegym.progress import progress_bar

        jobs = list(jobs)
        out: list[Any] = [None] * len(jobs)
        todo = list(range(len(jobs)))
        book = None
        if journal is not None:
            from edgegym.journal import Journal

            book = Journal(journal)
            todo = []
            for i, job in enumerate(jobs):
                found, out[i] = book.get(job)
                if not found:
                    todo.append(i)
            if len(todo) < len(jobs):
                done = len(jobs) - len(todo)
                print(f"resuming from {book.path}: {done} of {len(jobs)} jobs already done",
                      file=sys.stderr)  # fmt: skip
        with progress_bar(len(todo), label, "job", progress) as bar:
            try:
                for k, result in self.imap_unordered(fn, [jobs[i] for i in todo]):
                    i = todo[k]
                    out[i] = result if book is None else book.add(jobs[i], result)
                    bar.update(1)
            except MapInterrupted:
                raise
            except KeyboardInterrupt:
                raise MapInterrupted(out) from None
        return out


def ray_problem(address: str | None) -> str | None:
    """``None`` when ``--ray ADDR`` can be used (or was not given), else one line saying why
    not (Ray missing: what to install; no cluster there). Connects, so commands check it
    before any work."""
    if address is None:
        return None
    try:
        init_ray(address)
    except (RayMissingError, ValueError) as exc:
        return f"--ray: {exc}"
    return None


def add_parallel_arguments(
    parser: argparse.ArgumentParser, what: str = "episode", workers: int | None = 1
) -> None:
    """``--workers N`` (default ``workers``; ``None``: no such option) and ``--ray [ADDR]``,
    shared by evaluate, the leaderboard and the reproductions."""
    if workers is not None:
        parser.add_argument(
            "--workers",
            type=int,
            default=workers,
            metavar="N",
            help=f"run each {what} in one of N local processes (default {workers}"
            + (": in this process)" if workers == 1 else ")"),
        )
    parser.add_argument(
        "--ray",
        nargs="?",
        const=LOCAL,
        metavar="ADDR",
        help=f"run each {what} as a Ray task: a local cluster, or ADDR ('auto' for the "
        "cluster of 'ray start --head', host:port); needs the [ray] extra (docs/ray.md)",
    )


__all__ = [
    "LOCAL",
    "RAY_HINT",
    "RayMissingError",
    "Runner",
    "add_parallel_arguments",
    "init_ray",
    "quiet_rllib",
    "ray_problem",
    "require_ray",
]

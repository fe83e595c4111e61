"""edgegym: Gymnasium environments for scheduling DNN inference and continual retraining on
shared GPUs, with the published schedulers as baselines and one evaluator for every policy.

``import edgegym`` registers the environment ids with Gymnasium, here and in the worker
processes that a forkserver starts later (``SubprocVecEnv``, ``AsyncVectorEnv``), which import
only the forkserver's preload modules. ``edgegym.evaluate`` and ``edgegym.EvalResult`` are the
evaluator's (module :mod:`edgegym.evaluation`).
"""

import multiprocessing

import edgegym.families  # noqa: F401  (every family package registers itself)
from edgegym.core.registry import ENV_IDS, register_all
from edgegym.evaluation import EvalResult, evaluate
from edgegym.scenarios import ScenarioError

register_all()


def _preload_in_forkserver() -> None:
    """Add ``edgegym`` to the forkserver's preload modules (keeping those already there), so
    workers it forks know the ids as plain strings: ``make_vec_env(id, vec_env_cls=
    SubprocVecEnv)`` from a notebook or ``python -c``, where ``__main__`` does not import
    edgegym. Without effect once a forkserver runs; fork and spawn workers need nothing (they
    inherit the registry or re-import the user's script)."""
    try:
        from multiprocessing import forkserver

        current = list(getattr(forkserver._forkserver, "_preload_modules", ["__main__"]))
    except (ImportError, AttributeError):  # no forkserver on this platform
        return
    if "edgegym" not in current:
        multiprocessing.set_forkserver_preload([*current, "edgegym"])


_preload_in_forkserver()

__version__ = "0.1.0"

__all__ = ["ENV_IDS", "EvalResult", "ScenarioError", "__version__", "evaluate"]

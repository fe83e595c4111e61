"""edgegym: Gymnasium environments for scheduling DNN inference and continual retraining on
shared GPUs, with the published schedulers as baselines and one evaluator for every policy.

``import edgegym`` registers the environment ids with Gymnasium. ``edgegym.evaluate`` and
``edgegym.EvalResult`` are the evaluator's (module :mod:`edgegym.evaluation`).
"""

from edgegym.envs import ENV_IDS, register_all
from edgegym.evaluation import EvalResult, evaluate
from edgegym.scenarios import ScenarioError

register_all()

__version__ = "0.1.0"

__all__ = ["ENV_IDS", "EvalResult", "ScenarioError", "__version__", "evaluate"]

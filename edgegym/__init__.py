"""edgegym: Gymnasium environments for scheduling DNN inference and continual retraining on
shared GPUs, with the published schedulers as baselines and one evaluator for every policy.

``import edgegym`` registers the environment ids with Gymnasium.
"""

from edgegym.envs import ENV_IDS, register_all
from edgegym.scenarios import ScenarioError

register_all()

__version__ = "0.1.0"


def evaluate(*args, **kwargs):
    """Run the evaluator; see :func:`edgegym.evaluate.evaluate`."""
    from edgegym.evaluate import evaluate as _evaluate

    return _evaluate(*args, **kwargs)


__all__ = ["ENV_IDS", "ScenarioError", "__version__", "evaluate"]

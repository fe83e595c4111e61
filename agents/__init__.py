"""Learned agents (PPO / MaskablePPO) for the environment families.

* :func:`edgegym.agents.train.train` (``edgegym train``): train with the family's
  hyperparameters (``agents/hyperparams/<family>.yaml``, :mod:`edgegym.agents.config`).
* :func:`edgegym.agents.policy.load_policy`: a trained model behind the baselines' policy
  protocol (``predict``), so the evaluator scores it as ``ppo`` (shipped) or ``ppo:PATH``.

* :func:`edgegym.agents.rllib_train.train_rllib` (``edgegym train --backend rllib``): the
  same with RLlib's PPO and action-masking RLModule; :class:`edgegym.agents.rllib.RLlibPolicy`
  scores its checkpoints as ``rllib:PATH`` (needs ``pip install -e ".[ray]"``; docs/ray.md).

The submodules import Stable-Baselines3 and torch (and Ray, for the RLlib ones, lazily); this
package itself imports nothing.
"""

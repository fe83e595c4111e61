"""Learned agents (PPO / MaskablePPO) for the environment families.

* :func:`edgegym.agents.train.train` (``edgegym train``): train with the family's
  hyperparameters (``agents/hyperparams/<family>.yaml``, :mod:`edgegym.agents.config`).
* :func:`edgegym.agents.policy.load_policy`: a trained model behind the baselines' policy
  protocol (``predict``), so the evaluator scores it as ``ppo`` (shipped) or ``ppo:PATH``.

The submodules import Stable-Baselines3 and torch; this package itself imports nothing.
"""

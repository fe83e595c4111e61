"""The Stable-Baselines3 backend: PPO / MaskablePPO, ``edgegym train``'s default.

* :mod:`~edgegym.agents.sb3.train`: :func:`~edgegym.agents.sb3.train.train`, the driver;
* :mod:`~edgegym.agents.sb3.envs`: the training environments (wrapped, vectorised, mixed);
* :mod:`~edgegym.agents.sb3.vecenv`: ``SB3VecEnv``, SB3's ``VecEnv`` over a native vector env;
* :mod:`~edgegym.agents.sb3.callbacks`: progress, checkpoints and evaluation as SB3 callbacks;
* :mod:`~edgegym.agents.sb3.checkpoints`: the zip files of a run (``model.zip``, checkpoints);
* :mod:`~edgegym.agents.sb3.bc`: behaviour cloning, a strong start before PPO.

The run folder, its record, checkpoints and evaluations are the run layer's
(:mod:`edgegym.agents.run`), shared with the RLlib backend. Importing this package imports
nothing; its modules import Stable-Baselines3.
"""

"""The training run both backends share: its folder, its record, its checkpoints, its evaluations.

``edgegym train`` (Stable-Baselines3, :mod:`edgegym.agents.sb3`) and ``edgegym train --backend
rllib`` (:mod:`edgegym.agents.rllib`) write the same run folder::

    config.yaml          the exact configuration: env id, scenario, overrides, merged
                         hyperparameters, seed, spaces, versions, machine, one record per run
    model.zip | model/   the final model (SB3's zip file; RLlib's Algorithm checkpoint)
    best_model[.zip]     the model of the best evaluation (when evaluation is on)
    evaluations.json     every evaluation: timesteps, PPO's and the baseline's mean return
    checkpoints/         ckpt_<timesteps, 10 digits>[.zip], the newest ``checkpoint.keep`` kept
    logs/run-<k>/        progress.csv and TensorBoard event files of the k-th (resumed) run

The modules here hold what does not depend on the backend, once:

* :mod:`~edgegym.agents.run.record`: the run's ``config.yaml``: a new run's configuration,
  a resumed run's checks and goal, the per-run records, ``--init-from`` reading;
* :mod:`~edgegym.agents.run.checkpoints`: listing, saving and pruning checkpoints and
  finding the model a resumed run continues from (each backend says how it writes a model);
* :mod:`~edgegym.agents.run.evaluation`: the periodic evaluation against the family's
  baseline, ``evaluations.json``, the best model, the logs and the progress bar.

Importing this package imports nothing; its modules import neither Stable-Baselines3's
algorithms nor Ray when they load.
"""

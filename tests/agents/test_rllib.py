"""RLlib glue (edgegym.agents.rllib): a clear message without Ray; with Ray, PPO with RLlib's
action-masking RLModule trains on a masked id and never prefers a masked action."""

from __future__ import annotations

import builtins

import numpy as np
import pytest
from edgegym.agents import rllib

import edgegym  # noqa: F401  (registers the ids)
from edgegym.wrappers import make_masked

TINY_MIG = {"scenario": "migrator-w5", "window_s": 12, "windows": 2}


def test_without_ray_the_message_says_what_to_install(monkeypatch):
    real_import = builtins.__import__

    def no_ray(name, *args, **kwargs):
        if name == "ray" or name.startswith("ray."):
            raise ImportError(f"No module named {name!r}")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    with pytest.raises(rllib.RayMissingError, match=r'pip install -e "\.\[ray\]"'):
        rllib.masked_ppo_config("edgegym/MIGReconfig-v0")
    assert isinstance(rllib.RayMissingError("x"), ImportError)


def test_rllib_ppo_with_masks_trains_and_respects_the_mask():
    pytest.importorskip("ray.rllib")
    import ray
    import torch
    from ray.rllib.core.columns import Columns

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    try:
        config = (
            rllib.masked_ppo_config("edgegym/MIGReconfig-v0", TINY_MIG)
            .env_runners(num_env_runners=0)
            .training(train_batch_size_per_learner=256, minibatch_size=64, num_epochs=2)
        )
        algo = config.build_algo()
        result = algo.train()
        assert np.isfinite(result["env_runners"]["episode_return_mean"])
        module = algo.get_module()
        env = make_masked("edgegym/MIGReconfig-v0", **TINY_MIG)
        obs, _ = env.reset(seed=0)
        for _ in range(30):
            batch = {
                Columns.OBS: {
                    k: torch.as_tensor(v, dtype=torch.float32)[None] for k, v in obs.items()
                }
            }
            with torch.no_grad():
                logits = module.forward_inference(batch)[Columns.ACTION_DIST_INPUTS][0]
            action = int(torch.argmax(logits))
            assert obs["action_mask"][action] == 1.0  # masked logits never win
            obs, _, term, trunc, _ = env.step(action)
            if term or trunc:
                obs, _ = env.reset()
        algo.stop()
    finally:
        ray.shutdown()

"""Learning sanity (SB3's identity-env idea): each family's PPO agent, trained with its own
hyperparameter file for a tiny budget on a tiny scenario, beats random play on the same
evaluation seeds; and training is deterministic for a fixed seed."""

from __future__ import annotations

import numpy as np
import pytest

import edgegym
from edgegym.agents.policy import load_model, load_policy
from edgegym.agents.sb3.train import train

#: family -> (env id, scenario, overrides, timesteps). Budgets: about 10-20 s each on 2 cores.
CASES = {
    "continual": ("edgegym/ContinualLearning-v0", None, {"streams": 3, "windows": 3}, 2048),
    "mig": (
        "edgegym/MIGReconfig-v0",
        "migrator-w5",
        {"window_s": 12, "windows": 2},
        3072,
    ),
    "energy": ("edgegym/EnergyFairShare-v0", None, {"quanta": 20}, 3072),
}
FAST = ["eval.freq=0", "checkpoint.freq=0", "train.vec_env=dummy", "train.scenarios=[]"]
#: Learning from scratch: the shipped MIG agent starts as MIGRator (its teacher index), which
#: beats random without learning anything, so the MIG case trains the flat MLP on its own.
FROM_SCRATCH = {
    "mig": [
        "policy=MlpPolicy",
        "policy_kwargs.net_arch=[64, 64]",
        "wrappers.teacher=null",
        "bc.teacher=null",
        "ppo.ent_coef=0.0",
    ]
}


@pytest.mark.parametrize("family", sorted(CASES))
def test_ppo_beats_random_on_a_tiny_scenario(family, tmp_path):
    env_id, scenario, overrides, steps = CASES[family]
    result = train(
        env_id,
        scenario=scenario,
        overrides=overrides,
        timesteps=steps,
        n_envs=1,
        seed=0,
        out=tmp_path / "run",
        hyperparams=[*FAST, *FROM_SCRATCH.get(family, [])],
        progress=False,
    )
    res = edgegym.evaluate(
        env_id,
        {"ppo": lambda env: load_policy(result.model_path, env), "random": "random"},
        scenario=scenario,
        overrides=overrides,
        episodes=3,
        seed=100,
        progress=False,
    )
    assert res.ok, res.errors
    ppo, rnd = res.result("ppo"), res.result("random")
    assert ppo["mean_return"] > rnd["mean_return"] + 0.1 * abs(rnd["mean_return"]), res.table()


def _params(path) -> dict[str, np.ndarray]:
    model, _, _ = load_model(path)
    return {k: v.detach().numpy().copy() for k, v in model.policy.state_dict().items()}


def _short_run(out, seed: int, n_envs: int = 1, vec_env: str = "dummy"):
    return train(
        "edgegym/EnergyFairShare-v0",
        overrides={"quanta": 10},
        timesteps=256,
        n_envs=n_envs,
        seed=seed,
        out=out,
        hyperparams=[
            "eval.freq=0",
            "checkpoint.freq=0",
            "ppo.n_steps=64",
            f"train.vec_env={vec_env}",
            "train.scenarios=[]",
        ],
        progress=False,
    )


def test_training_is_deterministic_for_a_fixed_seed(tmp_path):
    a = _params(_short_run(tmp_path / "a", seed=3).model_path)
    b = _params(_short_run(tmp_path / "b", seed=3).model_path)
    c = _params(_short_run(tmp_path / "c", seed=4).model_path)
    assert a.keys() == b.keys()
    for key in a:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)
    assert any(not np.array_equal(a[k], c[k]) for k in a)  # the seed matters


@pytest.mark.parametrize("other", ["subproc", "native"])
def test_every_vector_env_kind_trains_the_same_policy(tmp_path, other):
    """Subprocesses and the native vector env (edgegym.agents.sb3.vecenv) train exactly the policy
    that DummyVecEnv of single envs trains."""
    a = _params(_short_run(tmp_path / "a", seed=1, n_envs=2, vec_env="dummy").model_path)
    b = _params(_short_run(tmp_path / "b", seed=1, n_envs=2, vec_env=other).model_path)
    for key in a:
        np.testing.assert_array_equal(a[key], b[key], err_msg=key)

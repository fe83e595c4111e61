"""The DAG family's agent: the catalogue of joint actions, and learning sanity on a tiny
scenario (MaskablePPO with the family's hyperparameter file beats random play)."""

from __future__ import annotations

import gymnasium as gym
import numpy as np

import edgegym
from edgegym.agents.policy import load_policy
from edgegym.agents.sb3.train import train
from edgegym.families.dag import DAGOffloadEnv
from edgegym.wrappers import DiscreteActions, joint_actions

TINY = {"requests": 60, "duration_s": 18.0, "count": 3}


def test_dag_catalogue_has_every_server_and_every_uniform_configuration():
    env = DAGOffloadEnv(requests=10)
    table = joint_actions(env).table
    e, h, n = env.e, len(env.options), env.n_nodes
    assert table.shape == (e + h, 1 + n)
    assert sorted(table[:e, 0]) == list(range(e)) and not table[:e, 1:].any()
    assert [set(row[1:]) for row in table[e:]] == [{v} for v in range(1, h + 1)]


def test_dag_discrete_masks_follow_the_epoch_kind():
    env = DiscreteActions(DAGOffloadEnv(requests=30, duration_s=9.0))
    _, info = env.reset(seed=0)
    u = env.unwrapped
    rng = np.random.default_rng(0)
    done = False
    while not done:
        mask = env.action_masks()
        if u.epoch.kind == "place":  # every server row that fits, nothing else
            assert mask[: u.e].all() and not mask[u.e :].any()
        else:  # "none" plus configurations some task can use
            assert mask[0] and not mask[1 : u.e].any()
        _, _, done, _, info = env.step(rng.choice(np.flatnonzero(mask)))
    assert info["episode_metrics"]["retrainings"] > 0


def test_flat_dag_id_has_a_box_and_a_discrete_action():
    env = gym.make("edgegym/DAGOffload-Flat-v0", requests=5)
    obs, _ = env.reset(seed=0)
    assert isinstance(env.observation_space, gym.spaces.Box) and obs.ndim == 1
    assert isinstance(env.action_space, gym.spaces.Discrete)


def test_ppo_beats_random_on_a_tiny_dag_scenario(tmp_path):
    result = train(
        "edgegym/DAGOffload-v0",
        overrides=TINY,
        timesteps=8192,
        n_envs=1,
        seed=0,
        out=tmp_path / "run",
        hyperparams=[
            "eval.freq=0",
            "checkpoint.freq=0",
            "train.vec_env=dummy",
            "ppo.n_steps=512",
            "ppo.batch_size=64",
        ],
        progress=False,
    )
    res = edgegym.evaluate(
        "edgegym/DAGOffload-v0",
        {"ppo": lambda env: load_policy(result.model_path, env), "random": "random"},
        overrides=TINY,
        episodes=3,
        seed=100,
        progress=False,
    )
    assert res.ok, res.errors
    ppo, rnd = res.result("ppo"), res.result("random")
    assert ppo["mean_return"] > rnd["mean_return"] + 0.05 * abs(rnd["mean_return"]), res.table()

"""The shipped PPO policies (``agents/trained/<family>/``): small, documented, loadable with
``--policy ppo``, and acting validly (inside the masks) on their default environment."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import yaml

import edgegym  # noqa: F401  registers the ids
from edgegym.agents.policies import SIZE_FREE
from edgegym.agents.policy import TRAINED_DIR, PPOPolicy, shipped_path
from edgegym.agents.ship import ship, training_record
from edgegym.baselines import make_policy
from edgegym.core.registry import ENV_IDS

#: Families whose trained policy must be shipped (the DAG family's comes with its agent).
REQUIRED = ["continual", "mig", "energy"]
ENV_OF = {fam: env_id for env_id, (_, fam, _, _) in ENV_IDS.items()}
SHIPPED = sorted({*REQUIRED, *(p.parent.name for p in TRAINED_DIR.glob("*/model.zip"))})


def _valid(env: gym.Env, action: np.ndarray) -> bool:
    """Whether every entry of ``action`` is allowed by the environment's own mask."""
    mask = np.asarray(env.unwrapped.action_masks(), dtype=bool)
    space = env.unwrapped.action_space
    if isinstance(space, gym.spaces.Discrete):
        return bool(mask[int(np.asarray(action).item())])
    offsets = np.concatenate([[0], np.cumsum(space.nvec)[:-1]])
    return all(mask[o + int(a)] for o, a in zip(offsets, np.asarray(action), strict=True))


@pytest.mark.parametrize("family", SHIPPED)
def test_shipped_policy_is_small_and_records_its_training(family):
    model = shipped_path(family)
    assert model.is_file(), f"no shipped policy at {model}"
    assert model.stat().st_size < 500_000  # the optimiser state is stripped
    assert sorted(p.name for p in model.parent.iterdir()) == ["config.yaml", "model.zip"]
    cfg = yaml.safe_load((model.parent / "config.yaml").read_text())
    assert cfg["family"] == family and cfg["env_id"] == ENV_OF[family]
    assert cfg["scenario"] == ENV_IDS[ENV_OF[family]][2]  # trained on the default scenario
    record = cfg["shipped"]
    assert record["timesteps"] == cfg["trained_timesteps"] > 0
    assert record["wall_s"] == training_record(cfg)["wall_s"] > 0


@pytest.mark.parametrize("family", SHIPPED)
def test_shipped_policy_acts_inside_the_masks_on_its_default_env(family):
    env = gym.make(ENV_OF[family])
    policy = make_policy("ppo", env)
    assert isinstance(policy, PPOPolicy) and policy.name == "ppo"
    obs, _ = env.reset(seed=0)
    for _ in range(25):
        action, _ = policy.predict(obs, deterministic=True)
        assert env.action_space.contains(action)
        assert _valid(env, action), f"{family}: action {action} outside the mask"
        obs, _, terminated, truncated, _ = env.step(action)
        if terminated or truncated:
            obs, _ = env.reset(seed=1)


def test_ship_strips_the_optimiser_and_records_budget(tmp_path):
    # A shipped model is a run's model without the optimiser state; same actions.
    from edgegym.agents.sb3.train import train

    run = tmp_path / "run"
    hp = ["ppo.n_steps=64", "eval.freq=0", "checkpoint.freq=0", "train.vec_env=dummy"]
    hp += ["train.scenarios=[]"]
    train(
        ENV_OF["energy"],
        overrides={"quanta": 10},
        timesteps=64,
        n_envs=1,
        out=run,
        hyperparams=hp,
        progress=False,
    )
    out = ship(run, dest=tmp_path / "shipped", notes=["tried nothing"])
    assert out.stat().st_size < (run / "model.zip").stat().st_size
    cfg = yaml.safe_load((out.parent / "config.yaml").read_text())
    assert cfg["shipped"]["timesteps"] == 64 and cfg["shipped"]["notes"] == ["tried nothing"]
    env = gym.make(ENV_OF["energy"], quanta=10)
    a = make_policy(f"ppo:{run}", env)
    b = make_policy(f"ppo:{out}", env)
    obs, _ = env.reset(seed=0)
    for _ in range(5):
        act = a.predict(obs)[0]
        assert np.array_equal(act, b.predict(obs)[0])
        obs, *_ = env.step(act)


def _size_free(family: str) -> bool:
    cfg = yaml.safe_load((shipped_path(family).parent / "config.yaml").read_text())
    return cfg.get("policy_class") in SIZE_FREE


@pytest.mark.parametrize("family", [f for f in SHIPPED if _size_free(f)])
def test_a_size_free_agent_plays_every_scenario_of_its_family(family):
    """Issue 16: the shipped per-tenant or pooled agent acts, inside the masks, on every
    bundled scenario of its family it can read and on the leaderboard's held-out variants;
    where it cannot read one, the message says why."""
    from edgegym import leaderboard as lb
    from edgegym.agents.policy import PolicyLoadError

    played = []
    for name in [*lb.bundled_scenarios(family), *lb.HELD_OUT.get(family, ())]:
        base, overrides = lb.split_variant(name)
        env = gym.make(ENV_OF[family], scenario=base, **overrides)
        try:
            policy = make_policy("ppo", env)
        except PolicyLoadError as exc:
            assert "cannot act here" in str(exc) or "joint actions" in str(exc)
            continue
        obs, _ = env.reset(seed=0)
        for _ in range(10):
            action, _ = policy.predict(obs, deterministic=True)
            assert _valid(env, action), f"{family}/{name}: action outside the mask"
            obs, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                break
        played.append(name)
    assert set(lb.HELD_OUT.get(family, ())) <= set(played)
    assert lb.default_scenario_of(family) in played

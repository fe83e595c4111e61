"""The batched continual dynamics against the one-env reference engine
(:mod:`tests.reference.engine`).

The engine states the rules slowly and plainly (one env, one stretch at a time, Python
objects); :class:`edgegym.families.continual.dynamics.ContinualDynamics` applies them batched.
Driven by the same allocations over whole episodes, both must reach the same models, times, energy
and window accuracies.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import edgegym  # noqa: F401  (registers the ids)
from edgegym.core.state import Allocation, ClusterState
from edgegym.families.continual.dynamics import simulated_executor
from tests.reference.engine import Engine


def reference_engine(env) -> Engine:
    """An engine over the env's episode (its true profile and the executor's constants)."""
    spec, params = env.params.spec, env.params
    executor = simulated_executor(params, env.profile)
    cluster = ClusterState(gpus=spec.gpus, clock_mhz=params.clock_mhz.copy())
    eng = Engine(
        env.profile,
        executor,
        cluster,
        spec.window_s,
        annotation_s=spec.annotation_s,
        checkpoint_step=spec.checkpoint_step,
        curve_rate=params.curve_rate,
    )
    eng.start_window(0)
    return eng


@pytest.mark.parametrize("scenario", ["ekya-table1", "ekya-cityscapes"])
@pytest.mark.parametrize("seed", [0, 3])
def test_batched_dynamics_follow_the_reference_engine(scenario, seed):
    env = gym.make("edgegym/ContinualLearning-v0", scenario=scenario).unwrapped
    env.reset(seed=seed)
    env.action_space.seed(seed)
    eng = reference_engine(env)
    rng = np.random.default_rng(seed)
    done, steps = False, 0
    while not done:
        mask = env.action_masks()
        # Random masked action, with every stream's shares drawn so that most steps need the
        # projection (shares over the GPUs) and some start jobs.
        action, start = [], 0
        for n in env.action_space.nvec:
            allowed = np.flatnonzero(mask[start : start + n])
            action.append(rng.choice(allowed))
            start += n
        _, _, term, trunc, info = env.step(np.array(action))
        done = term or trunc
        applied = Allocation(**{k: np.asarray(v) for k, v in info["allocation"].items()})
        v = eng.tenants.model_acc.shape[0]
        ref = eng.apply(
            Allocation(
                retrain_cfg=applied.retrain_cfg[:v].astype(np.int64),
                infer_cfg=applied.infer_cfg[:v].astype(np.int64),
                share_retrain=applied.share_retrain[:v].astype(float),
                share_infer=applied.share_infer[:v].astype(float),
            )
        )
        np.testing.assert_array_equal(ref.retrain_cfg, applied.retrain_cfg[:v])
        # One env step is one engine stretch: to a completion or to the window's end.
        end = eng.window_start_s + eng.window_s
        eng.advance(end)
        if eng.cluster.time_s >= end - 1e-9:
            eng.start_window(eng.window + 1)
        cluster, tenants, _ = env.dynamics.engine_views(env.params, env.state, 0)
        assert eng.window == env.window, f"step {steps}"
        assert eng.cluster.time_s == pytest.approx(cluster.time_s, abs=1e-9)
        assert eng.cluster.energy_j == pytest.approx(cluster.energy_j, rel=1e-12)
        np.testing.assert_allclose(eng.tenants.model_acc, tenants.model_acc, atol=1e-12)
        np.testing.assert_allclose(eng.tenants.job_left, tenants.job_left, atol=1e-9)
        steps += 1
    assert eng.done and steps > eng.n_windows  # some completions split windows
    np.testing.assert_allclose(
        eng.metrics.window_accuracy(),
        env.dynamics.episode_metrics(env.params, env.state, 0).window_accuracy(),
        atol=1e-12,
    )

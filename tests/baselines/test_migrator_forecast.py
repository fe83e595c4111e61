"""MIGRator's seasonal forecaster learns a per-second shape that recurs across windows
(better than the level forecaster it replaces as the default), and stays at the level when
nothing recurs."""

from __future__ import annotations

import numpy as np
import pytest

from edgegym.baselines import make_policy
from edgegym.baselines.migrator import forecast, seasonal_forecast
from edgegym.families.mig import MIGReconfigEnv

S = 200


def _planted(seed: int, windows: int, noise: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Per-second Poisson counts of two tenants whose rate has the same shape every window
    (a burst and a trough at fixed seconds, a slow wave) times a level that moves by window."""
    rng = np.random.default_rng(seed)
    t = np.arange(S)
    shape = 1.0 + 0.5 * np.sin(2 * np.pi * t / 50.0)
    shape[60:75] *= 2.5
    shape[120:150] *= 0.3
    shapes = np.stack([shape, np.roll(shape, 70)])
    levels = 100.0 * np.exp(0.1 * rng.standard_normal((2, windows)))
    rates = levels[:, :, None] * shapes[:, None, :] / shapes.mean(axis=1)[:, None, None]
    counts = rng.poisson(rates) if noise else rates
    return counts.reshape(2, windows * S).astype(float), rates[:, -1]


@pytest.mark.parametrize("past_windows", [1, 3])
def test_seasonal_forecast_learns_a_planted_shape_better_than_the_level(past_windows):
    err_new, err_old = [], []
    for seed in range(20):
        counts, truth = _planted(seed, past_windows + 1)
        past = counts[:, : past_windows * S]
        fc = seasonal_forecast(past, S, np.array([100.0, 100.0]))
        old = forecast(past, S, np.array([100.0, 100.0]))
        assert fc.mean.shape == old.shape == (2, S) and fc.windows == past_windows
        assert fc.samples is not None and fc.samples.shape == (2, S, S)
        err_new.append(np.mean((fc.mean - truth) ** 2))
        err_old.append(np.mean((old - truth) ** 2))
        if past_windows > 1:
            assert np.all(fc.weight > 0.7)  # learned: the shape recurs
    assert np.mean(err_new) < 0.5 * np.mean(err_old)


def test_seasonal_forecast_falls_back_to_the_level_when_nothing_recurs():
    rng = np.random.default_rng(0)
    weights = []
    for _ in range(20):
        past = rng.poisson(100.0, size=(2, 4 * S)).astype(float)
        fc = seasonal_forecast(past, S, np.array([100.0, 100.0]))
        weights.append(fc.weight)
        # the forecast stays near the last level (within the noise of a weak fitted shape)
        assert np.allclose(fc.mean.mean(axis=1), past[:, -S:].mean(axis=1), rtol=0.02)
    assert np.mean(weights) < 0.2


def test_seasonal_forecast_without_history_is_the_mean_rate():
    fc = seasonal_forecast(np.zeros((2, 0)), S, np.array([5.0, 7.0]))
    assert fc.samples is None and np.allclose(fc.mean, [[5.0], [7.0]])


def test_policy_forecaster_is_selectable_and_checked():
    env = MIGReconfigEnv("migrator-w7", window_s=40, windows=2, data_fraction=0.2)
    for name in ("seasonal", "level"):
        pol = make_policy(f"migrator:forecaster={name}", env)
        obs, _ = env.reset(seed=0)
        pol.reset(0)
        term = False
        while not term:
            a, _ = pol.predict(obs)
            obs, _, term, _, info = env.step(a)
            assert not info["projected"]
        assert len(pol.plans) == 2
        assert len(pol.weights) == (1 if name == "seasonal" else 0)  # windows with a past one
    with pytest.raises(ValueError, match="forecaster='informer' is unknown"):
        make_policy("migrator:forecaster=informer", env)


def _old_seasonal_mean(past: np.ndarray, window_s: int, smooth_s: int = 5) -> np.ndarray:
    """The seasonal forecast's mean as computed before short windows were handled (its
    ``smooth_s`` kernel whatever the window), for windows of ``smooth_s`` seconds or more."""
    m, n = past.shape[0], past.shape[1] // window_s
    w = past[:, past.shape[1] - n * window_s :].astype(float).reshape(m, n, window_s)
    level = w.mean(axis=2)
    ratio = w / np.maximum(level, 1e-9)[:, :, None]
    kernel = np.ones(smooth_s)
    width = np.convolve(np.ones(window_s), kernel, mode="same")
    shape = np.apply_along_axis(lambda r: np.convolve(r, kernel, mode="same"), 2, ratio) / width
    profile = shape.mean(axis=1)
    x, y = shape[:, :-1].mean(axis=1) - 1.0, shape[:, -1] - 1.0
    num, den = np.sum(x * y, axis=1), np.sum(x * x, axis=1)
    beta = np.clip(np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0), 0.0, 1.0)
    return level[:, -1:] * (1.0 + beta[:, None] * (profile - 1.0))


@pytest.mark.parametrize("window_s", [1, 2, 3, 4, 5, 6, 9])
@pytest.mark.parametrize("past_windows", [1, 2, 3])
def test_forecasts_cover_exactly_the_window_however_short(window_s, past_windows):
    """The smoothing kernel is no longer than the window, so both forecasters give window_s
    seconds (a 2-4 s window made the seasonal one raise, a 1 s one gave 5 seconds); from 5 s
    (the kernel's width) on the forecast is the one it always was."""
    rng = np.random.default_rng(window_s)
    past = rng.poisson(20.0, size=(2, past_windows * window_s)).astype(float)
    fc = seasonal_forecast(past, window_s, np.array([20.0, 20.0]))
    assert fc.mean.shape == (2, window_s) and fc.samples.shape == (2, window_s, window_s)
    assert forecast(past, window_s, np.array([20.0, 20.0])).shape == (2, window_s)
    if window_s >= 5 and past_windows >= 2:
        assert np.array_equal(fc.mean, _old_seasonal_mean(past, window_s))


@pytest.mark.parametrize("window_s", [1, 3, 4])
def test_migrator_plans_windows_shorter_than_its_smoothing(window_s):
    """The fuzzing audit's crash: ``migrator`` on 2-4 s windows with a past window."""
    env = MIGReconfigEnv("migrator-w1", window_s=window_s, windows=3, data_fraction=0.01)
    pol = make_policy("migrator", env)
    obs, _ = env.reset(seed=0)
    pol.reset(0)
    term = False
    while not term:
        a, _ = pol.predict(obs)
        assert env.action_masks()[int(a)]
        obs, _, term, _, _ = env.step(a)
    assert len(pol.plans) == 3 and len(pol.weights) == 2

"""Data drift, retraining and inference configurations for continual learning (Ekya §3.1).

Per stream ``v`` and retraining window ``k`` a :class:`ContinualProfile` holds:

* ``floor[v, k]``: accuracy of the off-the-shelf (never retrained) model on the window's data;
* ``drift[v, k]``: accuracy points the deployed model loses when window ``k`` starts;
* ``post_acc[v, k, c]``: accuracy of the model after retraining with configuration ``c`` on the
  window's data, starting from the never-retrained model, and ``gpu_seconds[v, k, c]`` its
  cost at a full GPU;
* ``ceiling[v, k]`` and ``quality[v, k, c]`` (generated profiles): the accuracy the best
  retraining reaches on the window's data and the fraction of the way there configuration
  ``c`` goes. Retraining is incremental (Ekya §2.2: the edge DNNs are incrementally retrained
  from the deployed model): a job that starts from a model of accuracy ``a`` ends at
  :func:`retrained_accuracy` ``a + (ceiling - a) * quality``; ``post_acc`` is that from the
  never-retrained model;
* ``demand[v, k]``: inference demand relative to the nominal frame rate.

The deployed model's accuracy at the start of window ``k`` is
``max(floor[v, k], acc_end[v, k-1] - drift[v, k])``. A retrained model replaces the deployed
one only when it is more accurate (:func:`swap_if_better`). Inference accuracy is the model's
accuracy times the inference configuration's accuracy factor, times the fraction of frames processed
when the stream holds less GPU share than the configuration needs to keep up (frames are
dropped, Ekya §3.1; a dropped frame counts as a miss).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq
from scipy.special import ndtr

#: Median of ``|z|`` for a standard normal ``z``: the median absolute error of Gaussian errors
#: is this times their standard deviation.
MAE_PER_STD = 0.6744897501960817


@dataclass(frozen=True)
class RetrainConfig:
    """One retraining configuration (hyperparameters, cost and quality).

    Attributes:
        name: Identifier used in scenario files and results.
        epochs: Training epochs.
        batch_size: Mini-batch size.
        layers_retrained: Fraction of the network's layers that are retrained.
        last_layer_width: Neurons in the last layer.
        data_fraction: Fraction of the window's data used for training.
        gpu_seconds: Cost at a full GPU for a window of nominal data volume.
        quality: Fraction of the window's achievable accuracy gain this configuration reaches.
        curve_rate: Curvature of the accuracy-vs-progress curve (see :func:`progress_accuracy`).
    """

    name: str
    epochs: int = 1
    batch_size: int = 32
    layers_retrained: float = 1.0
    last_layer_width: int = 64
    data_fraction: float = 1.0
    gpu_seconds: float = 1.0
    quality: float = 1.0
    curve_rate: float = 3.0


@dataclass(frozen=True)
class InferenceConfig:
    """One inference configuration (frame sampling and resolution).

    Attributes:
        name: Identifier.
        frame_sampling: Fraction of frames analysed.
        resolution: Input resolution relative to native.
        share: GPU share (in GPUs) needed to keep up with a stream at nominal demand.
        accuracy_factor: Multiplier on the model's accuracy from sampling and resolution.
    """

    name: str
    frame_sampling: float = 1.0
    resolution: float = 1.0
    share: float = 0.1
    accuracy_factor: float = 1.0


@dataclass
class ContinualProfile:
    """True per-episode profile tables (what actually happens; schedulers see estimates)."""

    start_acc: np.ndarray  # (V,) accuracy of the deployed model when the episode starts
    floor: np.ndarray  # (V, K) accuracy of the never-retrained model
    drift: np.ndarray  # (V, K) accuracy lost by the deployed model at each window start
    post_acc: np.ndarray  # (V, K, C) accuracy after retraining from the never-retrained model
    gpu_seconds: np.ndarray  # (V, K, C) retraining cost at a full GPU
    demand: np.ndarray  # (V, K) inference demand multiplier
    # Incremental retraining (generated profiles; None: post_acc is absolute, Table 1's tables).
    ceiling: np.ndarray | None = None  # (V, K) accuracy of the best retraining on the window
    quality: np.ndarray | None = None  # (V, K, C) fraction of the way to it each config goes

    def window_post(self, k: int, start: np.ndarray) -> np.ndarray:
        """(V, C) accuracy after retraining in window ``k`` from deployed models of accuracy
        ``start`` ((V,)): :func:`retrained_accuracy` for generated profiles, the table's
        ``post_acc`` otherwise."""
        if self.ceiling is None or self.quality is None:
            return self.post_acc[:, k]
        return retrained_accuracy(start[:, None], self.ceiling[:, k, None], self.quality[:, k])

    @property
    def shape(self) -> tuple[int, int, int]:
        """(streams, windows, retraining configurations)."""
        return self.post_acc.shape  # type: ignore[return-value]


def retrained_accuracy(start: np.ndarray, ceiling: np.ndarray, quality: np.ndarray) -> np.ndarray:
    """Accuracy after incremental retraining: ``start + (ceiling - start) * quality``.

    Ekya retrains the deployed edge model on the window's data (NSDI'22 §2.2, arXiv §1:
    "incrementally retrained on the new video samples even as some knowledge from before is
    retained"), so what a job reaches depends on the model it starts from: a configuration
    goes the fraction ``quality`` of the way from the deployed model's accuracy on the
    window's data (``start``) to the best the window's data allows (``ceiling``). A model
    already above the ceiling is pulled towards it (retraining on this window's sample only);
    :func:`swap_if_better` then keeps the deployed one. Broadcasts.
    """
    return start + (ceiling - start) * quality


def swap_if_better(deployed: np.ndarray, retrained: np.ndarray) -> np.ndarray:
    """Accuracy of the model served after a retraining job's model is ready: the retrained
    one only where it is more accurate than the deployed one.

    Ekya checkpoints during retraining and loads a checkpoint as the inference model when it
    helps (arXiv §5, "Model checkpointing and reloading"); the authors' simulator offers a
    stream no configuration whose predicted end accuracy is below its current one
    (``ekya/simulation/camera.py``, ``generate_training_configurations``). Broadcasts.
    """
    return np.maximum(deployed, retrained)


def keep_up_config(need: np.ndarray, factor: np.ndarray, share: float | np.ndarray) -> np.ndarray:
    """The most accurate inference configuration whose nominal share fits ``share`` (the
    cheapest where none does): the frame rate a static share sustains.

    In Ekya's released simulator an inference job's accuracy is set by its GPU share alone,
    through the subsampling profile (``ekya/simulation/jobs.py``, ``get_infer_profile``:
    ``interp(max_resources / share, subsampling, profile)``); this is the same rule on the
    scenario's discrete configurations, with no regard to the model's accuracy or a_MIN
    (PickConfigs' rule, which only Ekya's schedulers use).

    Args:
        need: (L,) share each configuration needs at nominal demand.
        factor: (L,) accuracy factor of each configuration.
        share: Scalar or (V,) inference share.

    Returns:
        (V,) or scalar int64 configuration index.
    """
    need = np.asarray(need, dtype=float)
    share = np.asarray(share, dtype=float)
    fits = need <= share[..., None] + 1e-9
    best = np.argmax(np.where(fits, np.asarray(factor, dtype=float), -np.inf), axis=-1)
    return np.where(fits.any(axis=-1), best, int(np.argmin(need))).astype(np.int64)


def inference_accuracy(
    model_acc: np.ndarray,
    factor: np.ndarray,
    needed_share: np.ndarray,
    share: np.ndarray,
) -> np.ndarray:
    """Instantaneous inference accuracy, vectorised.

    Args:
        model_acc: Accuracy of the deployed model, any shape.
        factor: Accuracy factor of the inference configuration, broadcastable.
        needed_share: Share the configuration needs to keep up at the stream's demand.
        share: Share the inference job holds.

    Returns:
        ``model_acc * factor * min(1, share / needed_share)``.
    """
    kept = np.minimum(1.0, share / np.maximum(needed_share, 1e-12))
    return model_acc * factor * kept


def progress_accuracy(
    start: np.ndarray, post: np.ndarray, progress: np.ndarray, rate: np.ndarray
) -> np.ndarray:
    """Validation accuracy of a job in training after ``progress`` in [0, 1] of its work.

    Concave saturating curve ``start + (post - start) * (1 - e^{-r p}) / (1 - e^{-r})``, the
    shape Ekya's micro-profiler fits to accuracy-vs-epoch points.
    """
    rate = np.maximum(np.asarray(rate, dtype=float), 1e-6)
    frac = (1.0 - np.exp(-rate * progress)) / (1.0 - np.exp(-rate))
    return start + (post - start) * frac


def pareto_front(cost: np.ndarray, accuracy: np.ndarray) -> np.ndarray:
    """Mask of configurations that no other configuration beats in both cost and accuracy."""
    cost = np.asarray(cost, dtype=float)
    accuracy = np.asarray(accuracy, dtype=float)
    better_or_equal = (cost[None, :] <= cost[:, None]) & (accuracy[None, :] >= accuracy[:, None])
    strictly = (cost[None, :] < cost[:, None]) | (accuracy[None, :] > accuracy[:, None])
    return ~np.any(better_or_equal & strictly, axis=1)


def uniform_points(cost: np.ndarray, accuracy: np.ndarray) -> tuple[int, int]:
    """The uniform baseline's two retraining configurations on a Pareto frontier.

    Ekya §5 ("Baselines"): all retraining configurations are tested on a hold-out dataset to
    produce the Pareto frontier of accuracy vs resources, and two points on it are the fixed
    configurations of "high" (Config 1) and "low" (Config 2) resource usage. Which two is not
    said; here Config 1 is the frontier's most accurate point (what the authors' simulator's
    uniform baselines retrain with: ``fair_dumb_scheduler`` picks the configuration of the
    highest end accuracy, ``ekya/simulation/schedulers.py``) and Config 2 the frontier's
    middle point by cost (the lower median of its points ordered by cost).

    Args:
        cost: (C,) mean GPU-seconds of each configuration on the hold-out data.
        accuracy: (C,) mean accuracy after retraining with it.

    Returns:
        ``(config1, config2)`` indices.
    """
    cost = np.asarray(cost, dtype=float)
    accuracy = np.asarray(accuracy, dtype=float)
    front = np.flatnonzero(pareto_front(cost, accuracy))
    front = front[np.lexsort((-accuracy[front], cost[front]))]  # by cost, then accuracy
    high = front[np.argmax(accuracy[front])]  # the first (cheapest) of the most accurate
    return int(high), int(front[(front.size - 1) // 2])


def holdout_profile(
    drift: Mapping[str, object],
    configs: Sequence[RetrainConfig],
    streams: int,
    windows: int,
    seed: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Mean cost and accuracy of every retraining configuration on hold-out streams.

    The hold-out streams are drawn from the scenario's ``drift`` section with a generator of
    their own (``seed``, outside the seeds episodes are evaluated on), and each configuration
    retrains the never-retrained model in every window (Ekya §5: every configuration tested
    on two hold-out video streams never used in later tests).

    Returns:
        ``(cost, accuracy)``, each (C,): means over the hold-out streams and windows.
    """
    prof = sample_profile(drift, configs, streams, windows, np.random.default_rng(seed))
    return prof.gpu_seconds.mean(axis=(0, 1)), prof.post_acc.mean(axis=(0, 1))


def _uniform(
    rng: np.random.Generator, bounds: Sequence[float], size: tuple[int, ...]
) -> np.ndarray:
    lo, hi = float(bounds[0]), float(bounds[1])
    return rng.uniform(lo, hi, size=size) if hi > lo else np.full(size, lo)


def first_part(table: np.ndarray, shape: Sequence[int]) -> np.ndarray:
    """The part of a table spanning ``[streams, windows, configs][:table.ndim]`` that an
    episode of ``shape`` runs on: its first ``shape[0]`` streams and first ``shape[1]`` windows
    where it holds more (its configurations as they are; a scalar as it is). Ekya adds streams
    in a fixed order, so k streams are the first k of every larger set (NSDI'22 §6.1), and a
    measured table lists its windows in the order they come, so k windows are its first k."""
    if table.ndim != len(shape):
        return table
    index = tuple(slice(0, want) for want in shape[:2])
    return table[index]


def _table(value: object, shape: tuple[int, ...]) -> np.ndarray:
    """Broadcast a scalar or nested list from a scenario file to ``shape`` (a table with more
    streams or windows than ``shape`` gives its first ones, :func:`first_part`)."""
    return np.broadcast_to(first_part(np.asarray(value, dtype=float), shape), shape).copy()


def config_quality(
    configs: Sequence[RetrainConfig],
    sensitivity: Mapping[str, Sequence[float]],
    shape: tuple[int, int],
    rng: np.random.Generator,
) -> np.ndarray:
    """Per-window quality of every configuration from its hyperparameters, shape (V, K, C).

    How much a window rewards more epochs, more data or retraining every layer differs from
    window to window (Ekya §3.1, §4.3: the best configuration changes with the data, which is
    why Ekya micro-profiles every window). Per stream and window draw an epoch time constant
    ``tau``, a data exponent ``beta`` and the relative quality ``lam`` of retraining only some
    layers; then ``q = (1 - e^{-epochs/tau}) * data_fraction^beta * lam^(1 - layers)``,
    normalised so the best configuration of the window reaches 1. A window where every
    configuration's ``q`` is 0 (``lam = 0`` with no configuration retraining every layer, or
    underflow) has quality 0 throughout: retraining gains nothing there.
    """
    tau = _uniform(rng, sensitivity["epochs_tau"], shape)[..., None]
    beta = _uniform(rng, sensitivity["data_exponent"], shape)[..., None]
    lam = _uniform(rng, sensitivity["partial_layers"], shape)[..., None]
    epochs = np.array([c.epochs for c in configs], dtype=float)
    data = np.array([c.data_fraction for c in configs])
    layers = np.array([c.layers_retrained for c in configs])
    q = (1.0 - np.exp(-epochs / tau)) * data**beta * lam ** ((1.0 - layers) / 0.7)
    best = q.max(axis=-1, keepdims=True)
    # q / best where some configuration gains anything; 0 (not 0 / 0) where none does.
    return np.divide(q, best, out=np.zeros_like(q), where=best > 0.0)


def sample_profile(
    drift: Mapping[str, object],
    configs: Sequence[RetrainConfig],
    n_streams: int,
    n_windows: int,
    rng: np.random.Generator,
) -> ContinualProfile:
    """Draw one episode's profile from a scenario's ``drift`` section.

    ``kind: generated`` samples every table from the ranges in the section (see the bundled
    Ekya scenarios); ``kind: table`` takes explicit tables (the Table 1 example) and draws
    nothing.
    """
    shape2 = (n_streams, n_windows)
    shape3 = (n_streams, n_windows, len(configs))
    if drift["kind"] == "table":
        post = _table(drift["post_accuracy"], shape3)
        return ContinualProfile(
            start_acc=_table(drift["start_accuracy"], (n_streams,)),
            floor=_table(drift.get("floor", 0.0), shape2),
            drift=_table(drift.get("drift", 0.0), shape2),
            post_acc=post,
            gpu_seconds=_table(drift["gpu_seconds"], shape3),
            demand=_table(drift.get("demand", 1.0), shape2),
        )
    cost = np.array([c.gpu_seconds for c in configs])
    ceiling = _uniform(rng, drift["ceiling"], shape2)
    gap = _uniform(rng, drift["floor_gap"], shape2)
    floor = ceiling - gap
    sens = drift.get("sensitivity")
    if sens:
        quality = config_quality(configs, sens, shape2, rng)  # (V, K, C)
    else:
        quality = np.broadcast_to(np.array([c.quality for c in configs]), shape3)
    jitter = rng.normal(0.0, float(drift.get("config_jitter", 0.0)), size=shape3)
    reach = np.clip(quality + jitter, 0.0, 1.0)
    post = retrained_accuracy(floor[..., None], ceiling[..., None], reach)
    volume = _uniform(rng, drift.get("data_volume", (1.0, 1.0)), shape2)
    return ContinualProfile(
        start_acc=floor[:, 0].copy(),
        floor=floor,
        drift=_uniform(rng, drift["drift"], shape2),
        post_acc=post,
        gpu_seconds=cost[None, None, :] * volume[..., None],
        demand=_uniform(rng, drift.get("demand", (1.0, 1.0)), shape2),
        ceiling=ceiling,
        quality=reach,
    )


# ----------------------------------------------------------------------------- micro-profiler
def error_std(mae: float, true_acc: np.ndarray) -> float:
    """Standard deviation of the micro-profiler's Gaussian error for a median absolute error.

    Ekya reports the micro-profiler's error as a median absolute error (NSDI'22 §6.3,
    Fig. 11a: 5.8 points). Estimates are ``clip(acc + e, 0, 1)`` with ``e ~ N(0, sigma^2)``
    (the split of ``e`` into a part shared by a stream's configurations and a part of its own
    keeps its variance, so it does not enter here). Without clipping the median of ``|e|`` is
    ``MAE_PER_STD * sigma``; clipping shortens only errors that reach past 0 or 1, so where
    every true accuracy lies in ``[mae, 1 - mae]`` the median is unchanged and
    ``sigma = mae / MAE_PER_STD`` exactly. Otherwise ``sigma`` is solved so that the pooled
    median of the clipped errors over ``true_acc`` is ``mae``.

    Args:
        mae: Target median absolute error (0: exact estimates).
        true_acc: True accuracies the estimates are drawn around (any shape; e.g. the
            post-retraining accuracies of sample episodes of the scenario).

    Returns:
        ``sigma`` (``100 * mae / MAE_PER_STD`` at most: a median no error can reach where
        nearly every accuracy sits at 0 or 1).
    """
    if mae <= 0.0:
        return 0.0
    p = np.ravel(np.asarray(true_acc, dtype=float))
    base = mae / MAE_PER_STD
    clipped = (p < mae) | (p > 1.0 - mae)
    if p.size == 0 or not clipped.any():
        return base
    up_free = 1.0 - p > mae  # positive errors past mae stay past it (no clip at 1 below it)
    down_free = p > mae

    def excess(sigma: float) -> float:
        """P(|clipped error| <= mae) - 1/2, pooled over ``true_acc`` (decreasing in sigma)."""
        z = mae / sigma
        inside = np.where(up_free, ndtr(z), 1.0) - np.where(down_free, ndtr(-z), 0.0)
        return float(inside.mean()) - 0.5

    hi = 100.0 * base
    if excess(hi) > 0.0:
        return hi
    return float(brentq(excess, base, hi, xtol=1e-12))


def profiler_estimates(
    post: np.ndarray,
    z_shared: np.ndarray,
    z_own: np.ndarray,
    std: float,
    shared: float,
) -> np.ndarray:
    """The micro-profiler's estimates of post-retraining accuracy, clipped to [0, 1].

    ``clip(post + std * (sqrt(shared) * z_shared + sqrt(1 - shared) * z_own), 0, 1)``: a part
    of the error common to every configuration of a stream in a window (profiled on the same
    data subsample) and a part of each configuration's own.

    Args:
        post: (..., C) true post-retraining accuracies.
        z_shared: (..., 1) standard normal draws, one per stream and window.
        z_own: (..., C) standard normal draws, one per configuration.
        std: Standard deviation of the error (:func:`error_std`).
        shared: Fraction of the error variance that is shared.
    """
    noise = np.sqrt(shared) * z_shared + np.sqrt(1.0 - shared) * z_own
    return np.clip(post + std * noise, 0.0, 1.0)


#: Largest (..., C, C) pair table :func:`pareto_gap` builds; past it, it sorts (same result).
PAIR_TABLE_LIMIT = 4096


def pareto_gap(cost: np.ndarray, est: np.ndarray, profiled: np.ndarray) -> np.ndarray:
    """How far each configuration's estimate lies below the Pareto frontier, (..., C).

    ``gap[c] = max(0, max over profiled c' with cost[c'] <= cost[c] of est[c'] - est[c])``: 0
    on the frontier of cost vs estimated accuracy (Ekya Fig. 3b), the accuracy a cheaper or
    equally cheap configuration beats it by otherwise. Unprofiled configurations get 0.

    Args:
        cost: (..., C) GPU-seconds of each configuration.
        est: (..., C) estimated accuracies.
        profiled: (..., C) bool, the configurations profiled.
    """
    shape = np.broadcast_shapes(cost.shape, est.shape, profiled.shape)
    if math.prod(shape) * shape[-1] <= PAIR_TABLE_LIMIT:  # a few rows: the (C, C) table is quicker
        cheaper = (cost[..., None, :] <= cost[..., :, None]) & profiled[..., None, :]
        beat = np.where(cheaper, est[..., None, :] - est[..., :, None], 0.0)
        return np.where(profiled, np.maximum(beat.max(axis=-1), 0.0), 0.0)
    # Many rows: one sort by cost and a running maximum instead of the table. The best estimate
    # among the profiled configurations at most as costly (ties: the whole group of equal cost)
    # is the running maximum at the group's last position; rounding is monotone, so
    # max(best - est) is bit for bit the table's maximum of the pairwise differences. Rows are
    # gathered by flat index (quicker than take_along_axis for the few-row tables of a step).
    n = shape[-1]
    rows = math.prod(shape[:-1])
    c2 = np.ascontiguousarray(np.broadcast_to(cost, shape)).reshape(rows, n)
    key = np.where(profiled, est, -np.inf)
    key = np.ascontiguousarray(np.broadcast_to(key, shape)).reshape(-1)
    base = np.arange(0, rows * n, n)[:, None]
    order = c2.argsort(axis=1, kind="stable")
    order += base  # flat positions, each row in cost order
    c_sorted = c2.reshape(-1)[order]
    running = np.maximum.accumulate(key[order], axis=1)
    last = np.full((rows, n), n - 1)  # the last position of each one's group of equal cost
    np.copyto(last[:, :-1], np.arange(n - 1), where=c_sorted[:, :-1] != c_sorted[:, 1:])
    last = np.minimum.accumulate(last[:, ::-1], axis=1)[:, ::-1]
    best = np.empty(rows * n, dtype=key.dtype)
    best[order] = running.reshape(-1)[last + base]
    return np.where(profiled, np.maximum(best.reshape(shape) - est, 0.0), 0.0)


def prune(profiled: np.ndarray, score: np.ndarray, cost: np.ndarray, fraction: float) -> np.ndarray:
    """Drop a fixed fraction of the worst profiled configurations (Ekya §4.3, "pruning").

    Per stream, ``floor(fraction * n)`` of its ``n`` profiled configurations are dropped
    (at least one is always kept): those with the largest ``score`` (the Pareto gap summed
    over the windows profiled so far), ties broken by the larger cost, then the larger index.

    Args:
        profiled: (..., C) bool, the configurations still profiled.
        score: (..., C) accumulated Pareto gap (larger: worse).
        cost: (..., C) GPU-seconds of each configuration (the tie-break).
        fraction: Fraction of the profiled configurations dropped.

    Returns:
        The new (..., C) bool mask.
    """
    n = profiled.sum(axis=-1, keepdims=True)
    drop = np.minimum(np.floor(fraction * n + 1e-9), np.maximum(n - 1, 0)).astype(np.int64)
    c = profiled.shape[-1]
    index = np.broadcast_to(np.arange(c), profiled.shape)
    # Rank the profiled configurations worst first: score, then cost, then index, descending.
    key_score = np.where(profiled, score, -np.inf)
    order = np.lexsort((-index, -np.broadcast_to(cost, profiled.shape), -key_score), axis=-1)
    rank = np.empty_like(order)
    np.put_along_axis(rank, order, np.broadcast_to(np.arange(c), order.shape), axis=-1)
    return profiled & (rank >= drop)

"""The family-neutral contract of the simulation core (gymnax's ``step_env(params, state)``,
Gymnasium's ``FuncEnv``; DESIGN §6 and §8).

A family plugs into the core as a :class:`Dynamics`: pure functions over immutable *params*
(everything a scenario fixes, precomputed once when an environment is built) and a *state*
whose arrays carry a leading batch axis ``N``. The same functions serve the single
environment (``N = 1``) and the native vector environment (``N`` envs in lockstep numpy).

Randomness is per environment: ``initial`` takes one ``numpy.random.Generator`` per env (the
env's ``np_random``), so env ``i`` of a vector env seeded ``s + i`` draws exactly what a
single env seeded ``s + i`` draws, whichever batch it sits in.

Who calls whom::

    adapter (envs/<family>/env.py, envs/<family>/vector.py)
      -> Dynamics.initial(params, rngs)            at reset (all envs, or those that ended)
      -> Dynamics.mask(params, state)              for action_masks() and info["action_mask"]
      -> Dynamics.step(params, state, actions)     projects the actions, advances, accounts
           returns (state, Record)                 Record.terms: the signed reward terms
      -> reward = sum(weight[k] * Record.terms[k]) with the scenario's objective weights
      -> Dynamics.observation(params, state), Dynamics.done(params, state)
      -> Dynamics.metrics(params, state, i)        episode_metrics of env i when it ends

A dynamics may keep a plain Python loop inside ``step`` where its work does not vectorise;
the contract stays the same (the DAG family's single env runs a per-env object dynamics, its
vector env an array one, tested equal).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

import numpy as np

P = TypeVar("P")
S = TypeVar("S")


@dataclass
class Record:
    """What one step did, per env (every array has the leading batch axis ``N``): the
    accounting all families share.

    Attributes:
        energy_j: (N,) joules the step used (every family, DVFS power model or NVML).
        duration_s: (N,) simulated seconds the step covered.
        terms: Name -> (N,) unweighted, signed reward terms (penalties negative).
        info: The family's per-step ``info`` entries, name -> (N, ...) array.
    """

    energy_j: np.ndarray  # (N,)
    duration_s: np.ndarray  # (N,)
    terms: dict[str, np.ndarray]  # name -> (N,)
    info: dict[str, np.ndarray] = field(default_factory=dict)  # name -> (N, ...)

    def row(self, i: int) -> dict[str, Any]:
        """Env ``i``'s part as plain ``info`` entries (terms as floats)."""
        out: dict[str, Any] = {k: v[i] for k, v in self.info.items()}
        out["reward_terms"] = {k: float(v[i]) for k, v in self.terms.items()}
        out["energy_j"] = float(self.energy_j[i])
        return out


class Dynamics(Protocol, Generic[P, S]):
    """One family's pure functions (see the module docstring for the calling order).

    A family's dynamics class may make public only what its envs, vector env, real executor
    or baselines call beyond these methods, and its docstring lists them. One whose ``step``
    also takes ``go`` ((N,) bool: step only those envs, leave the others as they are, bit for
    bit what stepping ``batch_take(state, go)`` and putting it back gives) sets the class
    attribute ``steps_some = True``; the vector env then steps around its autoresets in place.
    """

    #: Names of the reward terms ``step`` returns, in a fixed order.
    terms: tuple[str, ...]

    def initial(self, params: P, rngs: Sequence[np.random.Generator]) -> S:
        """A fresh state of ``len(rngs)`` envs, env ``i`` drawing only from ``rngs[i]``."""
        ...

    def mask(self, params: P, state: S) -> np.ndarray:
        """(N, K) bool: the flat action mask of every env."""
        ...

    def step(self, params: P, state: S, actions: np.ndarray) -> tuple[S, Record]:
        """Project ``actions`` (N, ...) onto valid decisions, advance every env one decision
        epoch and account for it. May update ``state`` in place and return it."""
        ...

    def observation(self, params: P, state: S) -> Any:
        """The observation of every env (arrays, or a dict of arrays, with axis 0 = N)."""
        ...

    def done(self, params: P, state: S) -> np.ndarray:
        """(N,) bool: the env's episode has ended (``terminated``)."""
        ...

    def metrics(self, params: P, state: S, i: int) -> dict[str, float]:
        """Whole-episode numbers of env ``i`` (its ``info["episode_metrics"]``)."""
        ...


def weighted_reward(terms: Mapping[str, np.ndarray], weights: Mapping[str, float]) -> np.ndarray:
    """(N,) reward: the sum over terms of ``weight * term`` (a term without a weight counts 0).

    The one place the reward of every family is formed from its named terms (HighwayEnv's
    ``_rewards``), so re-weighting objectives never needs code.
    """
    total: np.ndarray | None = None
    for name, value in terms.items():
        w = float(weights.get(name, 0.0))
        part = w * np.asarray(value, dtype=float)
        total = part if total is None else total + part
    if total is None:
        raise ValueError("a step returned no reward terms")
    return total


def batch_size(state: Any) -> int:
    """N of a dataclass state: the length of its first array field."""
    for f in dataclasses.fields(state):
        value = getattr(state, f.name)
        if isinstance(value, np.ndarray):
            return int(value.shape[0])
    raise TypeError(f"{type(state).__name__} has no array field")


def batch_put(dst: Any, index: np.ndarray, src: Any) -> Any:
    """Write ``src``'s envs into ``dst`` at ``index`` (N_src = len(index)), field by field, in
    place: how a vector env re-initialises the envs whose episodes ended. Array fields are
    indexed on axis 0; list fields (per-env Python objects) element-wise; nested dataclasses
    recursively. Returns ``dst``."""
    index = np.asarray(index, dtype=np.int64)
    for f in dataclasses.fields(dst):
        a, b = getattr(dst, f.name), getattr(src, f.name)
        if isinstance(a, np.ndarray):
            a[index] = b
        elif isinstance(a, list):
            for j, i in enumerate(index):
                a[int(i)] = b[j]
        elif dataclasses.is_dataclass(a):
            batch_put(a, index, b)
        elif a != b:
            raise ValueError(
                f"{type(dst).__name__}.{f.name}: a scalar field differs between batches "
                f"({a!r} vs {b!r}); per-env values must be arrays"
            )
    return dst


def batch_take(state: Any, index: np.ndarray) -> Any:
    """The envs at ``index`` as a new state (copies): the inverse of :func:`batch_put`."""
    index = np.asarray(index, dtype=np.int64)
    values = {}
    for f in dataclasses.fields(state):
        a = getattr(state, f.name)
        if isinstance(a, np.ndarray):
            values[f.name] = a.take(index, axis=0)  # a copy (quicker than a[index])
        elif isinstance(a, list):
            values[f.name] = [a[int(i)] for i in index]
        elif dataclasses.is_dataclass(a):
            values[f.name] = batch_take(a, index)
        else:
            values[f.name] = a
    return dataclasses.replace(state, **values)


__all__ = [
    "Dynamics",
    "Record",
    "batch_put",
    "batch_size",
    "batch_take",
    "weighted_reward",
]

"""The toy's params, state and batched dynamics (the contract of :mod:`edgegym.core.dynamics`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from gymnasium import spaces

from edgegym.core.dynamics import Record
from edgegym.scenarios import Scenario
from tests.families.toy.reward import TERMS, term_weights


@dataclass(frozen=True)
class ToyParams:
    steps: int
    units: int
    term_weights: dict[str, float]


@dataclass
class ToyState:
    """N toy envs."""

    k: np.ndarray  # (N,) int64 steps taken
    demand: np.ndarray  # (N, 2) int64 units each tenant wants this step
    served: np.ndarray  # (N,) sum of the served term
    rng: list  # (N,) each env's generator (demand is drawn every step)


def make_params(sc: Scenario) -> ToyParams:
    """The params of a loaded toy scenario (``Family.params``)."""
    return ToyParams(int(sc["steps"]), int(sc["units"]), term_weights(sc["objective"]))


def toy_spaces(p: ToyParams) -> tuple[spaces.Box, spaces.Discrete]:
    """Observation (both demands / units) and action (units for tenant 0) spaces."""
    return spaces.Box(0.0, 1.0, shape=(2,), dtype=np.float32), spaces.Discrete(p.units + 1)


class ToyDynamics:
    """The toy's dynamics, batched over N envs."""

    terms = TERMS

    def initial(self, p: ToyParams, rngs) -> ToyState:
        demand = np.array([r.integers(0, p.units + 1, size=2) for r in rngs], dtype=np.int64)
        m = len(rngs)
        return ToyState(np.zeros(m, np.int64), demand.reshape(m, 2), np.zeros(m), list(rngs))

    def mask(self, p: ToyParams, state: ToyState) -> np.ndarray:
        return np.ones((len(state.k), p.units + 1), dtype=bool)

    def step(self, p: ToyParams, state: ToyState, actions: np.ndarray):
        a = np.asarray(actions, dtype=np.int64)
        met = np.minimum(a, state.demand[:, 0]) + np.minimum(p.units - a, state.demand[:, 1])
        served = met / p.units
        state.served = state.served + served
        state.k = state.k + 1
        state.demand = np.array([r.integers(0, p.units + 1, size=2) for r in state.rng])
        n = len(a)
        return state, Record(np.zeros(n), np.ones(n), {"served": served})

    def observation(self, p: ToyParams, state: ToyState) -> np.ndarray:
        return (state.demand / p.units).astype(np.float32)

    def done(self, p: ToyParams, state: ToyState) -> np.ndarray:
        return state.k >= p.steps

    def metrics(self, p: ToyParams, state: ToyState, i: int) -> dict[str, float]:
        return {"served": float(state.served[i]) / p.steps}

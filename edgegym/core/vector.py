"""The base native vector environment: N environments of one family as one numpy batch.

:class:`EdgeVectorEnv` runs a family's :class:`~edgegym.core.dynamics.Dynamics` over ``N``
environments in lockstep (DESIGN §6) instead of N Python copies of the single environment.
A family's vector environment only says how its scenario becomes params, dynamics and spaces
(:meth:`EdgeVectorEnv._build`); reset, step, autoreset, the reward as the weighted sum of the
named terms, and the vector ``info`` layout live here, once.

Env ``i`` of a vector env reset with ``seed=s`` steps exactly as a single env reset with
``seed=s + i`` (each env draws only from its own generator), whichever batch it sits in.
``gymnasium.make_vec(id, num_envs=N)`` builds these through the registered
``vector_entry_point``.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from edgegym.core.checks import (
    check_action,
    check_max_episode_steps,
    check_render_mode,
    check_reset_options,
    env_arguments,
    scenario_for,
)
from edgegym.core.dynamics import Dynamics, Record, batch_put, batch_take, weighted_reward
from edgegym.core.registry import family_of_id
from edgegym.scenarios import Scenario


def obs_row(obs: Any, i: int) -> Any:
    """Env ``i``'s observation out of a batched one (an array, or a dict of arrays), copied."""
    if isinstance(obs, dict):
        return {k: v[i].copy() for k, v in obs.items()}
    return obs[i].copy()


def env_info(info: dict[str, Any], i: int) -> dict[str, Any]:
    """Env ``i``'s entries of a vector ``info`` (only those it holds), unbatched."""
    out: dict[str, Any] = {}
    for key, value in info.items():
        if key.startswith("_"):
            continue
        have = info.get("_" + key)
        if have is not None and not have[i]:
            continue
        out[key] = env_info(value, i) if isinstance(value, dict) else value[i]
    return out


def held_by_all(entries: dict[str, Any], n: int) -> dict[str, Any]:
    """``entries`` (name -> (n, ...) array, or a dict of them) in the vector-info layout with
    every env holding every entry (each ``_key`` all True)."""
    out: dict[str, Any] = {}
    for key, value in entries.items():
        out[key] = held_by_all(value, n) if isinstance(value, dict) else value
        out["_" + key] = np.ones(n, dtype=bool)
    return out


def _blank(like: np.ndarray) -> np.ndarray:
    """Zeros (``None`` for objects) of ``like``'s shape and dtype, as ``_add_info`` starts."""
    if like.dtype == object:
        return np.full(like.shape, None, dtype=object)
    return np.zeros_like(like)


def put_rows(info: dict[str, Any], new: dict[str, Any], rows: np.ndarray) -> dict[str, Any]:
    """``info`` (changed, with new arrays where written) with the envs ``rows`` (an (N,) bool)
    holding ``new``'s entries too (name -> (N, ...), or a dict of them; every env's row)."""
    for key, value in new.items():
        if isinstance(value, dict):
            info[key] = put_rows(dict(info.get(key, {})), value, rows)
        else:
            old = info.get(key)
            arr = _blank(value) if old is None else old.copy()
            arr[rows] = value[rows]
            info[key] = arr
        have = info.get("_" + key)
        info["_" + key] = rows.copy() if have is None else have | rows
    return info


def replace_rows(info: dict[str, Any], new: dict[str, Any], swap: np.ndarray) -> dict[str, Any]:
    """``info`` with the entries of the envs ``swap`` (an (N,) bool) made exactly ``new``'s
    (both in the vector-info layout); the other envs keep theirs. As Gymnasium's
    ``_add_info`` leaves it, an entry no env holds is left out and a row that does not hold its
    entry is zero (``None`` in an object array). The arrays are new; the inputs stay as they
    were."""
    none = np.zeros(swap.shape, dtype=bool)
    out: dict[str, Any] = {}
    for key in [*info, *(k for k in new if k not in info)]:
        if key.startswith("_"):
            continue
        old, fresh = info.get(key), new.get(key)
        keep = none if old is None else info["_" + key] & ~swap
        put = none if fresh is None else new["_" + key] & swap
        have = keep | put
        if not have.any():
            continue
        if isinstance(old if old is not None else fresh, dict):
            value: Any = replace_rows(old or {}, fresh or {}, swap)
        else:
            value = _blank(old if old is not None else fresh)
            if keep.any():
                value[keep] = old[keep]
            if put.any():
                value[put] = fresh[put]
        out[key] = value
        out["_" + key] = have
    return out


class EdgeVectorEnv(VectorEnv):
    """``num_envs`` environments of one family stepped as one batch.

    Spaces, observations, rewards, ``terminated`` and the per-step ``info`` entries are those
    of the family's single environment, batched on axis 0 in Gymnasium's vector-info layout
    (each entry ``key`` has a boolean ``_key`` of the envs it holds): ``info["action_mask"]``
    is (N, K), ``info["reward_terms"]`` a dict of (N,) arrays, ``info["episode_metrics"]`` the
    whole-episode numbers of the envs that ended this step (``info["_episode_metrics"]``).
    :meth:`action_masks` returns the (N, K) mask (sb3-contrib's MaskablePPO reads it).

    Autoreset (``autoreset_mode``): ``"NextStep"`` (default; an env that ended is reset by the
    next ``step``, which ignores its action and returns its reset observation with reward 0)
    or ``"SameStep"`` (reset within the step that ended it; its last observation and info are
    in ``info["final_obs"]`` / ``info["final_info"]``, its ``info`` rows are its reset's, and the
    other envs keep their step's, as Gymnasium's ``SyncVectorEnv``).

    ``max_episode_steps`` (what ``gymnasium.make_vec(id, N, max_episode_steps=k)`` passes, also
    from a spec registered with one) truncates each env's episode after ``k`` steps, as
    Gymnasium's ``TimeLimit`` on each single env: ``truncated`` is set on its ``k``-th step
    (``terminated`` too where the episode also ended there), and the env is reset as on an end.
    ``episode_metrics`` come only with a natural end (``terminated``), as from the single env.

    Args:
        num_envs: N (>= 1).
        scenario: As for the single env (default: the family's default scenario).
        autoreset_mode: ``AutoresetMode.NEXT_STEP`` or ``AutoresetMode.SAME_STEP``.
        max_episode_steps: Steps after which an episode is truncated (``None``: never).
        render_mode: ``None`` only: the batched env draws no frames (each env of
            ``vectorization_mode="sync"`` renders its own).
        **overrides: Scenario overrides, as for the single env.
    """

    #: The registered id of the family's single environment.
    env_id: ClassVar[str]
    metadata: ClassVar[dict[str, Any]] = {"autoreset_mode": AutoresetMode.NEXT_STEP}

    def __init__(
        self,
        num_envs: int = 1,
        scenario: str | Scenario | None = None,
        autoreset_mode: str | AutoresetMode = AutoresetMode.NEXT_STEP,
        max_episode_steps: int | None = None,
        render_mode: str | None = None,
        **overrides: Any,
    ) -> None:
        if isinstance(num_envs, bool) or not isinstance(num_envs, int | np.integer):
            raise TypeError(f"num_envs must be an integer, got {num_envs!r}")
        if num_envs < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        if render_mode is not None:
            check_render_mode(render_mode)
            raise ValueError(
                f"render_mode={render_mode!r}: the native vector env draws no frames; make it "
                "with gymnasium.make_vec(..., vectorization_mode='sync') to render each env"
            )
        self.render_mode = None
        self.max_episode_steps = check_max_episode_steps(max_episode_steps)
        mode = AutoresetMode(autoreset_mode)
        if mode not in (AutoresetMode.NEXT_STEP, AutoresetMode.SAME_STEP):
            raise ValueError(
                f"autoreset_mode must be NextStep or SameStep, got {mode.value!r} "
                "(Disabled: use gymnasium.make_vec(..., vectorization_mode='sync'))"
            )
        self.autoreset_mode = mode
        self.metadata = {**type(self).metadata, "autoreset_mode": mode}
        self.num_envs = int(num_envs)
        if scenario is None:
            fam = family_of_id(self.env_id)
            scenario = fam.default_scenario if fam is not None else None
        self.scenario = scenario_for(self.env_id, scenario, overrides, env_arguments(type(self)))
        self.params, self.dynamics, obs_space, act_space = self._build(self.scenario)
        self.single_observation_space = obs_space
        self.single_action_space = act_space
        self.observation_space = batch_space(obs_space, self.num_envs)
        self.action_space = batch_space(act_space, self.num_envs)
        self.rngs: list[np.random.Generator] = [
            seeding.np_random(None)[0] for _ in range(self.num_envs)
        ]
        self.state: Any = None
        self._mask: np.ndarray | None = None
        self._autoreset = np.zeros(self.num_envs, dtype=bool)
        self._elapsed = np.zeros(self.num_envs, dtype=np.int64)  # steps into each episode

    # ------------------------------------------------------------------ family hooks
    def _build(self, scenario: Scenario) -> tuple[Any, Dynamics, spaces.Space, spaces.Space]:
        """The family's params, dynamics and single observation and action spaces."""
        raise NotImplementedError

    def _check_actions(self, actions: Any) -> np.ndarray:
        """The actions as an int64 array of the batched action space's shape
        (:func:`edgegym.core.checks.check_action`: one ``ValueError`` naming the space)."""
        return check_action(self.action_space, actions, what="actions")

    # ------------------------------------------------------------------ masks
    def action_masks(self) -> np.ndarray:
        """(N, K) bool, a copy: the flat action mask of every env; before ``reset``, what the
        single env's ``action_masks()`` gives then (:meth:`_mask_before_reset`) in every row."""
        if self._mask is None:
            row = np.asarray(self._mask_before_reset(), dtype=bool)
            return np.repeat(row[None], self.num_envs, axis=0)
        return self._mask.copy()

    def _mask_before_reset(self) -> np.ndarray:
        """(K,) bool: an env's mask before ``reset``, as the single env's ``action_masks()``
        (hook; every action, K from the single action space)."""
        space = self.single_action_space
        width = int(space.n) if isinstance(space, spaces.Discrete) else int(space.nvec.sum())
        return np.ones(width, dtype=bool)

    def _state_info(self) -> dict[str, np.ndarray]:
        """Per-env ``info`` entries of the current state, name -> (N, ...) (hook; none)."""
        return {}

    def _reset_info(self) -> dict[str, Any]:
        """Per-env ``info`` entries of ``reset`` beyond the state's, name -> (N, ...) or a dict
        of them, as the single env's ``_reset_info`` (hook; none)."""
        return {}

    def _base_info(self) -> dict[str, Any]:
        self._mask = self.dynamics.mask(self.params, self.state)
        # A copy: the caller may change its info; the mask (maybe the state's) stays.
        return held_by_all({"action_mask": self._mask.copy(), **self._state_info()}, self.num_envs)

    def _reset_rows_info(self) -> dict[str, Any]:
        """The whole ``info`` of a reset, every env (the rows of those reset are used)."""
        info = self._base_info()
        info.update(held_by_all(self._reset_info(), self.num_envs))
        return info

    # ------------------------------------------------------------------ gym API
    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Any, dict[str, Any]]:
        """Reset every env; ``seed=s`` seeds env ``i`` with ``s + i`` (a list: one each)."""
        check_reset_options(options)
        if seed is not None:
            seeds = [seed + i for i in range(self.num_envs)] if isinstance(seed, int) else seed
            if len(seeds) != self.num_envs:
                raise ValueError(f"{len(seeds)} seeds for {self.num_envs} envs")
            for i, s in enumerate(seeds):
                if s is not None:
                    self.rngs[i] = seeding.np_random(s)[0]
        self.state = self.dynamics.initial(self.params, self.rngs)
        self._autoreset[:] = False
        self._elapsed[:] = 0
        return self.dynamics.observation(self.params, self.state), self._reset_rows_info()

    def _reinit(self, idx: np.ndarray) -> None:
        self._elapsed[idx] = 0
        fresh = self.dynamics.initial(self.params, [self.rngs[i] for i in idx])
        if len(idx) == self.num_envs:
            self.state = fresh
        else:
            batch_put(self.state, idx, fresh)

    def step(self, actions: Any) -> tuple[Any, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        if self.state is None:
            raise RuntimeError("call reset() before step()")
        p, dyn, n_envs = self.params, self.dynamics, self.num_envs
        actions = self._check_actions(actions)
        rewards = np.zeros(n_envs)
        stepped = np.ones(n_envs, dtype=bool)
        if self.autoreset_mode == AutoresetMode.NEXT_STEP and self._autoreset.any():
            idx = np.flatnonzero(self._autoreset)
            self._reinit(idx)
            stepped[idx] = False
        go = np.flatnonzero(stepped)
        rows: np.ndarray | None = go  # the envs the Record's rows are (None: every env)
        rec = None
        if go.size == n_envs:
            self.state, rec = dyn.step(p, self.state, actions)
            rewards = weighted_reward(rec.terms, self.params.term_weights)
        elif go.size and getattr(dyn, "steps_some", False):
            # The dynamics steps only the envs ``stepped``, in place (no copies out and back);
            # the Record has rows for every env, those of the others not meaningful.
            self.state, rec = dyn.step(p, self.state, actions, go=stepped)
            rewards = np.where(stepped, weighted_reward(rec.terms, self.params.term_weights), 0.0)
            rows = None
        elif go.size:
            sub, rec = dyn.step(p, batch_take(self.state, go), actions[go])
            batch_put(self.state, go, sub)
            rewards[go] = weighted_reward(rec.terms, self.params.term_weights)
        terminated = dyn.done(p, self.state) & stepped
        truncated = np.zeros(n_envs, dtype=bool)
        if self.max_episode_steps is not None:
            self._elapsed += stepped
            truncated = stepped & (self._elapsed >= self.max_episode_steps)
        obs = dyn.observation(p, self.state)
        info = self._base_info()
        if rec is not None:
            self._add_record(info, rec, rows, stepped)
        if go.size < n_envs:
            extra = self._reset_info()
            if extra:  # the envs reset by this step hold the reset's entries, as the single env
                info = put_rows(info, extra, ~stepped)
        if terminated.any():
            ended = np.flatnonzero(terminated)
            info["episode_metrics"] = self._metrics_info(ended)
            info["_episode_metrics"] = terminated.copy()
        done = terminated | truncated
        if self.autoreset_mode == AutoresetMode.SAME_STEP and done.any():
            final_obs = np.full(n_envs, None, dtype=object)
            final_info: dict[str, Any] = {}
            done_idx = np.flatnonzero(done)  # terminated or truncated
            for i in done_idx:
                final_obs[i] = obs_row(obs, int(i))
                final_info = self._add_info(final_info, env_info(info, int(i)), int(i))
            self._reinit(done_idx)
            obs = dyn.observation(p, self.state)
            # As Gymnasium's SyncVectorEnv: the envs that ended hold their reset's entries, the
            # others keep this step's.
            info = replace_rows(info, self._reset_rows_info(), done)
            info["final_obs"] = final_obs
            info["_final_obs"] = done.copy()
            info["final_info"] = final_info
            info["_final_info"] = done.copy()
        else:
            self._autoreset = done
        return obs, rewards, terminated, truncated, info

    def _add_record(
        self, info: dict[str, Any], rec: Record, go: np.ndarray | None, have: np.ndarray
    ) -> None:
        """Put the step's Record (of envs ``go``; ``None``: rows for every env, those not in
        ``have`` not meaningful) into ``info`` in the vector-info layout."""
        n_envs = self.num_envs
        full = go is not None and go.size == n_envs
        idx = np.flatnonzero(have) if go is None else go

        def spread(v: np.ndarray) -> np.ndarray:
            if full:
                return v
            out = np.zeros((n_envs, *v.shape[1:]), dtype=v.dtype)
            out[idx] = v if go is not None else v[idx]
            return out

        terms: dict[str, Any] = {}
        for name, v in rec.terms.items():
            terms[name] = spread(v)
            terms["_" + name] = have.copy()
        info["reward_terms"] = terms
        info["_reward_terms"] = have.copy()
        for name, v in rec.info.items():
            info[name] = spread(v)
            info["_" + name] = have.copy()
        info["energy_j"] = spread(rec.energy_j)
        info["_energy_j"] = have.copy()

    def _metrics_info(self, idx: np.ndarray) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for i in idx:
            metrics = self.dynamics.metrics(self.params, self.state, int(i))
            out = self._add_info(out, metrics, int(i))
        return out

    def close_extras(self, **kwargs: Any) -> None:
        """Nothing to release (no subprocesses, no windows)."""


__all__ = ["EdgeVectorEnv", "env_info", "held_by_all", "obs_row", "put_rows", "replace_rows"]

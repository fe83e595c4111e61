"""Flat views of every environment for RL code that wants a ``Box`` observation and a
``Discrete`` action (CleanRL's single-file ``ppo.py`` and the like).

Two wrappers, each usable alone, and :func:`make_flat` that applies what an environment needs
(:class:`MaskInObservation` and :func:`make_masked` put the action mask into the observation
for RLlib's action-masking RLModule; :class:`MaskedVectorEnv` and :func:`make_masked_vector`
do the same over a native vector env):

* :class:`FlatObservation`: a one-level ``Dict`` of ``Box`` (or ``MultiBinary``) spaces becomes
  one ``float32`` ``Box``. **Order**: the keys in the order of the ``Dict`` space (Gymnasium
  sorts the keys of a plain ``dict`` alphabetically, so ``ContinualLearning-v0`` gives
  ``globals``, ``stream_mask``, ``streams``), each array flattened in C order (row-major).
  ``wrapper.slices[key]`` is where each key lies in the flat vector; ``wrapper.unflatten``
  inverts it.
* :class:`DiscreteActions`: a ``MultiDiscrete`` action becomes ``Discrete(K)`` over a fixed
  list of joint actions (:class:`JointActions`):

  - **full product** when ``prod(nvec) <= max_actions`` (default
    :data:`DEFAULT_MAX_ACTIONS`): index ``i`` is ``np.unravel_index(i, nvec)`` (C order: the
    last entry varies fastest);
  - otherwise a **catalogue**, built by the family's registered rule (``Family.catalogue``;
    :func:`catalogue_builder`), or by :func:`generic_catalogue` for families without one.

  ``action_masks()`` (and ``info["action_mask"]``) is the ``Discrete`` mask translated from the
  environment's flat ``MultiDiscrete`` mask: a joint action whose every entry is valid is
  valid; the others are *repaired* entry by entry to the nearest valid value (ties to the lower
  value), and of several joint actions that repair to the same valid action, which none of
  them is as written, the first in the list is valid and stands for the group. So every
  valid index decodes to an action the environment accepts as is, no two valid indices do the
  same thing, and at least one index is always valid. An index outside the mask (code that
  ignores masks) is decoded to its repaired action, never rejected. In the full-product case
  the translated mask is exactly the product of the entry masks.

Catalogue rules (deterministic: the same scenario and ``max_actions`` give the same list):
each family's own lives in its folder (``edgegym/families/<name>/catalogue.py``: continual,
energy and DAG; their module docstrings say what the joint actions are), and
* any other family (:func:`generic_catalogue`): the constant actions ``min(v, nvec - 1)`` for
  ``v = 0 .. max(nvec) - 1``, then, per entry ``d``, the zero action with entry ``d`` set to
  evenly spaced values ``1 .. nvec[d] - 1``, as many as ``max_actions`` allows; duplicates
  dropped.

``make_flat("edgegym/ContinualLearning-v0", scenario=...)`` builds an environment and applies
the wrappers it needs (MIGReconfig-v0 is already flat and comes back as made). The ids in
:data:`edgegym.core.registry.FLAT_IDS` (``edgegym/ContinualLearning-Flat-v0``,
``edgegym/EnergyFairShare-Flat-v0``, ``edgegym/DAGOffload-Flat-v0``) do the same through
``gymnasium.make``.
"""

from __future__ import annotations

import hashlib
import importlib
import math
from collections.abc import Callable, Mapping
from functools import reduce
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from edgegym.core.checks import check_action
from edgegym.core.registry import ENV_IDS, FAMILIES

#: Largest ``prod(nvec)`` turned into a full-product ``Discrete`` action; above it, a catalogue.
DEFAULT_MAX_ACTIONS = 1024

#: What a catalogue rule gives: the (K, D) joint actions, or those and one label per row.
Catalogue = np.ndarray | tuple[np.ndarray, list[str]]


# ----------------------------------------------------------------------------- observations
class DictFlattener:
    """Flatten observations of a one-level ``Dict`` (or any ``Box``) space into ``float32``.

    Args:
        space: A ``Dict`` whose values are ``Box`` or ``MultiBinary`` spaces, or a ``Box``.

    Attributes:
        keys: The keys in flattening order (the ``Dict`` space's order); ``()`` for a ``Box``.
        slices: Key -> slice of the flat vector.
        shapes: Key -> shape of the original array.
        space: The flat ``Box`` (``float32``; bounds concatenated in the same order).

    Raises:
        TypeError: Nested ``Dict`` / ``Tuple`` or ``Discrete`` entries (no one-hot here).
    """

    def __init__(self, space: gym.Space) -> None:
        if isinstance(space, spaces.Box):
            parts: Mapping[str, gym.Space] = {"": space}
            self.keys: tuple[str, ...] = ()
        elif isinstance(space, spaces.Dict):
            parts = space.spaces
            self.keys = tuple(parts)
        else:
            raise TypeError(f"cannot flatten a {type(space).__name__} observation space")
        lows, highs = [], []
        self.slices: dict[str, slice] = {}
        self.shapes: dict[str, tuple[int, ...]] = {}
        start = 0
        for key, sub in parts.items():
            if isinstance(sub, spaces.Box):
                low, high = sub.low, sub.high
            elif isinstance(sub, spaces.MultiBinary):
                low, high = np.zeros(sub.shape), np.ones(sub.shape)
            else:
                raise TypeError(
                    f"observation key {key!r}: cannot flatten a {type(sub).__name__} space "
                    "(one-level Dict of Box / MultiBinary only)"
                )
            size = int(np.prod(sub.shape, dtype=np.int64))
            self.slices[key] = slice(start, start + size)
            self.shapes[key] = tuple(sub.shape)
            lows.append(np.asarray(low, dtype=np.float64).ravel())
            highs.append(np.asarray(high, dtype=np.float64).ravel())
            start += size
        self.space = spaces.Box(
            np.concatenate(lows).astype(np.float32),
            np.concatenate(highs).astype(np.float32),
            dtype=np.float32,
        )

    def __call__(self, obs: Any) -> np.ndarray:
        """The flat ``float32`` vector of one observation."""
        if not self.keys:
            return np.asarray(obs, dtype=np.float32).ravel()
        return np.concatenate([np.asarray(obs[k], dtype=np.float32).ravel() for k in self.keys])

    def batch(self, obs: Any) -> np.ndarray:
        """(N, D) ``float32``: the flat vectors of a batch of observations (arrays, or a dict
        of arrays, with axis 0 = N), each row equal to :meth:`__call__` of that env's."""
        if not self.keys:
            a = np.asarray(obs, dtype=np.float32)
            return a.reshape(a.shape[0], -1)
        n = len(obs[self.keys[0]])
        return np.concatenate(
            [np.asarray(obs[k], dtype=np.float32).reshape(n, -1) for k in self.keys], axis=1
        )

    def unflatten(self, flat: np.ndarray) -> dict[str, np.ndarray] | np.ndarray:
        """Inverse of :meth:`__call__` (arrays come back as ``float32``)."""
        flat = np.asarray(flat, dtype=np.float32)
        if not self.keys:
            return flat.reshape(self.shapes[""])
        return {k: flat[self.slices[k]].reshape(self.shapes[k]) for k in self.keys}


class FlatObservation(gym.ObservationWrapper, gym.utils.RecordConstructorArgs):
    """One flat ``float32`` ``Box`` observation (see the module docstring for the order)."""

    def __init__(self, env: gym.Env) -> None:
        gym.utils.RecordConstructorArgs.__init__(self)  # env.spec rebuilds the wrapper
        gym.ObservationWrapper.__init__(self, env)
        self.flattener = DictFlattener(env.observation_space)
        self.observation_space = self.flattener.space
        self.keys = self.flattener.keys
        self.slices = self.flattener.slices

    def observation(self, observation: Any) -> np.ndarray:
        """Flatten one observation."""
        return self.flattener(observation)

    def unflatten(self, flat: np.ndarray) -> dict[str, np.ndarray] | np.ndarray:
        """The original ``Dict`` observation of a flat vector."""
        return self.flattener.unflatten(flat)


# ----------------------------------------------------------------------------- joint actions
class JointActions:
    """A fixed list of ``MultiDiscrete`` joint actions behind a ``Discrete`` index.

    Args:
        nvec: The ``MultiDiscrete`` sizes.
        table: (K, D) joint actions, or ``None`` for the full product of ``nvec``.
        rule: Name of the rule that built the list (for configs and messages).
        labels: What each table row means, independent of the scenario's sizes (the
            continual catalogue: ``"none"``, ``"c3@0.5"``), or ``None``. Two catalogues of
            one rule are matched by their labels (:meth:`translate`).

    Raises:
        ValueError: A table entry outside ``nvec``, an empty table, or labels that do not
            name every row once.
    """

    def __init__(
        self,
        nvec: np.ndarray,
        table: np.ndarray | None = None,
        rule: str = "",
        labels: list[str] | tuple[str, ...] | None = None,
    ) -> None:
        self.nvec = np.asarray(nvec, dtype=np.int64).ravel()
        d = self.nvec.size
        self.labels: tuple[str, ...] | None = None
        if table is None:
            self.table: np.ndarray | None = None
            self.n = int(np.prod(self.nvec, dtype=np.int64))
            self.rule = rule or "product"
        else:
            t = np.asarray(table, dtype=np.int64).reshape(-1, d)
            if t.shape[0] == 0:
                raise ValueError("a joint-action catalogue needs at least one action")
            if np.any(t < 0) or np.any(t >= self.nvec[None, :]):
                raise ValueError("a catalogue action lies outside the MultiDiscrete sizes")
            if labels is not None and (
                len(labels) != t.shape[0] or len(set(labels)) != len(labels)
            ):
                raise ValueError(f"{len(t)} catalogue actions need as many distinct labels")
            _, first = np.unique(t, axis=0, return_index=True)
            keep = np.sort(first)
            self.table = t[keep]  # duplicates dropped, order kept
            if labels is not None:
                self.labels = tuple(str(labels[i]) for i in keep)
            self.n = int(self.table.shape[0])
            self.rule = rule or "catalogue"
        # Padded (D, n_max) view of the flat MultiDiscrete mask.
        n_max = int(self.nvec.max())
        offsets = np.concatenate([[0], np.cumsum(self.nvec)[:-1]])
        col = np.arange(n_max)[None, :]
        self._inside = col < self.nvec[:, None]
        self._flat_index = np.where(self._inside, offsets[:, None] + col, 0)
        self._dims = np.arange(d)

    def __len__(self) -> int:
        return self.n

    @property
    def is_product(self) -> bool:
        """True when the list is the full product of ``nvec``."""
        return self.table is None

    def vector(self, index: int) -> np.ndarray:
        """The joint action at ``index`` as written (before any repair)."""
        i = int(index)
        if not 0 <= i < self.n:
            raise IndexError(f"action index {i} is outside 0 .. {self.n - 1}")
        if self.table is None:
            return np.array(np.unravel_index(i, tuple(self.nvec)), dtype=np.int64)
        return self.table[i].copy()

    def index(self, vector: np.ndarray) -> int | None:
        """Index of a joint action in the list, or ``None`` when it is not there."""
        v = np.asarray(vector, dtype=np.int64).ravel()
        if v.shape != self.nvec.shape or np.any(v < 0) or np.any(v >= self.nvec):
            return None
        if self.table is None:
            return int(np.ravel_multi_index(tuple(v), tuple(self.nvec)))
        hit = np.flatnonzero((self.table == v[None, :]).all(axis=1))
        return int(hit[0]) if hit.size else None

    def translate(self, other: JointActions) -> np.ndarray:
        """(K,) index in ``other`` of each of this list's actions, matched by label (-1: not
        in ``other``): how a policy trained on this list acts on ``other``.

        Raises:
            ValueError: Either list has no labels, or the two come from different rules.
        """
        if self.labels is None or other.labels is None:
            raise ValueError(f"the {self.rule} lists carry no labels to match actions by")
        if self.rule != other.rule:
            raise ValueError(f"a {self.rule} list cannot be matched to a {other.rule} list")
        where = {label: i for i, label in enumerate(other.labels)}
        return np.array([where.get(label, -1) for label in self.labels], dtype=np.int64)

    @staticmethod
    def mask_through(mask: np.ndarray, index_map: np.ndarray) -> np.ndarray:
        """A mask of another list seen through :meth:`translate`'s ``index_map``: entry
        ``i`` is ``mask[index_map[i]]``, False where ``index_map[i]`` is -1."""
        return np.where(index_map >= 0, mask[np.maximum(index_map, 0)], False)

    def fingerprint(self) -> str:
        """SHA-1 of the list (``nvec`` and the table): changes whenever the actions do."""
        h = hashlib.sha1(self.nvec.tobytes())
        h.update(b"product" if self.table is None else self.table.tobytes())
        return h.hexdigest()

    # --------------------------------------------------------------- masks
    def _padded(self, md_mask: np.ndarray) -> np.ndarray:
        m = np.asarray(md_mask, dtype=bool).ravel()
        if m.size != int(self.nvec.sum()):
            raise ValueError(
                f"MultiDiscrete mask has {m.size} entries; expected {int(self.nvec.sum())}"
            )
        return m[self._flat_index] & self._inside

    def repair_table(self, md_mask: np.ndarray) -> np.ndarray:
        """(D, n_max) nearest valid value of every entry value (ties to the lower value;
        an entry with no valid value keeps its value)."""
        valid = self._padded(md_mask)
        n_max = valid.shape[1]
        col = np.broadcast_to(np.arange(n_max), valid.shape)
        prev = np.maximum.accumulate(np.where(valid, col, -1), axis=1)
        big = n_max * 4
        nxt = np.minimum.accumulate(np.where(valid, col, big)[:, ::-1], axis=1)[:, ::-1]
        use_prev = (prev >= 0) & ((nxt >= big) | (col - prev <= nxt - col))
        out = np.where(use_prev, prev, np.where(nxt < big, nxt, col))
        return out.astype(np.int64)

    def decode(self, index: int, md_mask: np.ndarray | None = None) -> np.ndarray:
        """The ``MultiDiscrete`` action of ``index``, repaired onto ``md_mask`` if given."""
        v = self.vector(index)
        if md_mask is None:
            return v
        return self.repair_table(md_mask)[self._dims, v]

    def mask(self, md_mask: np.ndarray) -> np.ndarray:
        """(K,) ``Discrete`` mask of the flat ``MultiDiscrete`` mask (module docstring rule)."""
        valid = self._padded(md_mask)
        every_entry_ok = valid.any(axis=1).all()
        if self.table is None and every_entry_ok:
            per_entry = [valid[j, :n] for j, n in enumerate(self.nvec)]
            return reduce(np.logical_and.outer, per_entry).ravel()
        table = self.table
        if table is None:  # full product with an entry that has no valid value (rare)
            table = np.array(np.unravel_index(np.arange(self.n), tuple(self.nvec))).T
        fixed = self.repair_table(md_mask)[self._dims[None, :], table]
        strict = (fixed == table).all(axis=1)
        first, inverse = _row_groups(fixed, self.nvec)
        has_strict = np.zeros(first.size, dtype=bool)
        has_strict[inverse[strict]] = True
        is_first = np.arange(table.shape[0]) == first[inverse]
        return strict | (~has_strict[inverse] & is_first)


def _row_groups(rows: np.ndarray, dims: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(rows, axis=0)``'s ``(first, inverse)`` for rows of entries below ``dims``.

    Each row is one integer (its flat index in ``dims``) where that index fits, so the unique
    runs on integers: ``np.unique(axis=0)`` compares rows as a structured dtype, and an
    exception raised by a signal handler inside that comparison (Ctrl-C, SIGTERM as an
    interrupt) comes out as numpy's ``TypeError``, losing the interrupt and its checkpoint.
    """
    try:
        keys = np.ravel_multi_index(rows.T, tuple(int(d) for d in dims))
    except ValueError:  # a product of dims past int64: compare the rows themselves
        _, first, inverse = np.unique(rows, axis=0, return_index=True, return_inverse=True)
        return first, inverse.ravel()
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    return first, inverse.ravel()


# ----------------------------------------------------------------------------- catalogues
def family_of(env: gym.Env) -> str | None:
    """The edgegym family of an environment (by its class), or ``None`` for foreign ones."""
    cls = type(env.unwrapped)
    for entry_point, family, *_ in ENV_IDS.values():
        module, _, name = entry_point.partition(":")
        if cls.__module__ == module and cls.__name__ == name:
            return family
    return None


def generic_catalogue(nvec: np.ndarray, max_actions: int) -> np.ndarray:
    """Fallback catalogue for families without their own rule (module docstring)."""
    nvec = np.asarray(nvec, dtype=np.int64).ravel()
    rows = [np.minimum(v, nvec - 1) for v in range(int(nvec.max()))]
    budget = max(0, max_actions - len(rows))
    per_entry = max(1, budget // max(1, nvec.size))
    for d, n in enumerate(nvec):
        k = min(per_entry, int(n) - 1)
        if k <= 0:
            continue
        for v in np.unique(np.round(np.linspace(1, n - 1, k)).astype(np.int64)):
            row = np.zeros_like(nvec)
            row[d] = v
            rows.append(row)
    return np.asarray(rows, dtype=np.int64)


#: Family -> catalogue builder ``(env, max_actions) -> (K, D) int array`` (or that array and
#: one label per row, :class:`JointActions`) set here by hand;
#: it wins over the family's registered rule (``Family.catalogue``, ``module:function``),
#: which is how a family brings its own.
CATALOGUES: dict[str, Callable[[gym.Env, int], Catalogue]] = {}


def catalogue_builder(family: str | None) -> Callable[[gym.Env, int], Catalogue] | None:
    """The catalogue rule of ``family``: :data:`CATALOGUES`, else the registered one."""
    if family in CATALOGUES:
        return CATALOGUES[family]
    fam = FAMILIES.get(family or "")
    if fam is None or not fam.catalogue:
        return None
    module, _, name = fam.catalogue.partition(":")
    return getattr(importlib.import_module(module), name)


def joint_actions(env: gym.Env, max_actions: int = DEFAULT_MAX_ACTIONS) -> JointActions:
    """The joint-action list :class:`DiscreteActions` uses for ``env`` (``MultiDiscrete``)."""
    space = env.action_space
    if not isinstance(space, spaces.MultiDiscrete):
        raise TypeError(f"joint actions need a MultiDiscrete action space, got {space}")
    if int(max_actions) < 1:
        raise ValueError(f"max_actions must be >= 1, got {max_actions}")
    nvec = np.asarray(space.nvec, dtype=np.int64).ravel()
    if math.prod(int(n) for n in nvec) <= max_actions:
        return JointActions(nvec)
    family = family_of(env)
    builder = catalogue_builder(family)
    if builder is not None:
        built = builder(env, int(max_actions))
        table, labels = built if isinstance(built, tuple) else (built, None)
        return JointActions(nvec, table, rule=f"{family}-catalogue", labels=labels)
    return JointActions(nvec, generic_catalogue(nvec, int(max_actions)), rule="generic-catalogue")


# ----------------------------------------------------------------------------- action wrapper
class DiscreteActions(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """``Discrete`` actions over a ``MultiDiscrete`` environment (module docstring).

    ``action_masks()`` and ``info["action_mask"]`` are the ``Discrete`` mask;
    ``info["joint_action"]`` is the ``MultiDiscrete`` action that was sent to the environment.

    Args:
        env: An environment with a ``MultiDiscrete`` action space (``action_masks()`` optional:
            without it every joint action is valid).
        max_actions: Full product up to this many joint actions, a catalogue above.
        joint: A ready :class:`JointActions` (overrides ``max_actions``).
        teacher: A baseline spec whose decision is the extra last index (module docstring),
            or ``None``.
    """

    def __init__(
        self,
        env: gym.Env,
        max_actions: int = DEFAULT_MAX_ACTIONS,
        joint: JointActions | None = None,
        teacher: str | None = None,
    ) -> None:
        gym.utils.RecordConstructorArgs.__init__(
            self, max_actions=max_actions, joint=joint, teacher=teacher
        )
        gym.Wrapper.__init__(self, env)
        self.joint = joint if joint is not None else joint_actions(env, max_actions)
        self.hint = TeacherHint(env, teacher) if teacher else None
        self.action_space = spaces.Discrete(len(self.joint) + (self.hint is not None))
        self._md_mask: np.ndarray | None = None
        self._mask: np.ndarray | None = None

    def _inner_mask(self) -> np.ndarray:
        if self._md_mask is None:
            try:
                fn = self.env.get_wrapper_attr("action_masks")
            except AttributeError:
                self._md_mask = np.ones(int(self.joint.nvec.sum()), dtype=bool)
            else:
                self._md_mask = np.asarray(fn(), dtype=bool)
        return self._md_mask

    def action_masks(self) -> np.ndarray:
        """(K,) bool, a copy: valid ``Discrete`` actions in the current state (before
        ``reset``, those of the environment's mask before its reset)."""
        if self._mask is None:
            self._mask = self.joint.mask(self._inner_mask())
            if self.hint is not None:
                self._mask = np.append(self._mask, True)
        return self._mask.copy()

    def action(self, action: Any) -> np.ndarray:
        """The (repaired) ``MultiDiscrete`` action of a ``Discrete`` index.

        Raises:
            ValueError: ``action`` is not an element of the ``Discrete`` space.
        """
        index = int(check_action(self.action_space, action))
        if self.hint is not None and index == len(self.joint):
            return self.hint.act()
        return self.joint.decode(index, self._inner_mask())

    def _refresh(self, info: dict[str, Any]) -> dict[str, Any]:
        self._mask = None
        md = info.get("action_mask")
        self._md_mask = None if md is None else np.asarray(md, dtype=bool)
        if md is not None:
            info = dict(info)
            info["action_mask"] = self.action_masks()
        return info

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        """Reset the environment; ``info["action_mask"]`` becomes the ``Discrete`` mask."""
        self._md_mask = self._mask = None
        obs, info = self.env.reset(**kwargs)
        if self.hint is not None:
            self.hint.reset(kwargs.get("seed"))
        return obs, self._refresh(info)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """Decode, step, translate the mask in ``info``."""
        joint = self.action(action)
        obs, reward, terminated, truncated, info = self.env.step(joint)
        info = self._refresh(info)
        info["joint_action"] = joint
        return obs, reward, terminated, truncated, info


class TeacherAction(gym.Wrapper, gym.utils.RecordConstructorArgs):
    """A published scheduler's decision as the extra last index of a ``Discrete`` environment
    (MIG's allocation signatures): ``Discrete(n)`` becomes ``Discrete(n + 1)``; indices below
    ``n`` are the environment's own, index ``n`` plays what ``teacher`` would do now (always
    valid). :class:`DiscreteActions` does the same over a ``MultiDiscrete`` environment.

    Args:
        env: An environment with a ``Discrete`` action space (``action_masks()`` optional).
        teacher: A :func:`edgegym.baselines.make_policy` spec of the environment's family.

    Raises:
        ValueError: The action space is not ``Discrete``, or the spec names no policy of the
            environment's family.
    """

    def __init__(self, env: gym.Env, teacher: str) -> None:
        if not isinstance(env.action_space, spaces.Discrete):
            raise ValueError(f"TeacherAction needs a Discrete action space, got {env.action_space}")
        gym.utils.RecordConstructorArgs.__init__(self, teacher=teacher)
        gym.Wrapper.__init__(self, env)
        self.n = int(env.action_space.n)
        self.hint = TeacherHint(env, teacher)
        self.action_space = spaces.Discrete(self.n + 1)

    def action_masks(self) -> np.ndarray:
        """(n + 1,) bool: the environment's mask, and the teacher's index (always valid)."""
        try:
            inner = self.env.get_wrapper_attr("action_masks")()
        except AttributeError:
            inner = np.ones(self.n, dtype=bool)
        return np.append(np.asarray(inner, dtype=bool), True)

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        """Reset the environment and the teacher; ``info["action_mask"]`` gains the index."""
        obs, info = self.env.reset(**kwargs)
        self.hint.reset(kwargs.get("seed"))
        return obs, self._with_mask(info)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """Play the index (the teacher's decision at ``n``); ``info["joint_action"]`` is the
        environment's action that was sent."""
        index = int(check_action(self.action_space, action))
        inner = self.hint.act() if index == self.n else np.int64(index)
        obs, reward, terminated, truncated, info = self.env.step(inner)
        info = self._with_mask(info)
        info["joint_action"] = inner
        return obs, reward, terminated, truncated, info

    @staticmethod
    def _with_mask(info: dict[str, Any]) -> dict[str, Any]:
        if info.get("action_mask") is None:
            return info
        return {**info, "action_mask": np.append(np.asarray(info["action_mask"], bool), True)}


class TeacherHint:
    """A published scheduler's decision as one action of a learned policy.

    Args:
        env: The environment (its own ``MultiDiscrete`` action space) the teacher decides for.
        teacher: A :func:`edgegym.baselines.make_policy` spec.

    Raises:
        ValueError: The spec names no policy of the environment's family.
    """

    def __init__(self, env: gym.Env, teacher: str) -> None:
        from edgegym.baselines import make_policy

        self.spec = str(teacher)
        self.policy = make_policy(self.spec, env)

    def reset(self, seed: int | None) -> None:
        """Episode start (stateful teachers reseed)."""
        self.policy.reset(seed)

    def act(self) -> np.ndarray:
        """The teacher's action in the environment's current state."""
        return np.asarray(self.policy.act(), dtype=np.int64)


# ----------------------------------------------------------------------------- make
def flatten_env(
    env: gym.Env,
    flatten_obs: bool | None = None,
    discrete_actions: bool | None = None,
    max_actions: int = DEFAULT_MAX_ACTIONS,
    teacher: str | None = None,
) -> gym.Env:
    """Apply the flat views to ``env``: :class:`FlatObservation` (inner) then
    :class:`DiscreteActions` (outer, so ``env.action_masks()`` is the ``Discrete`` mask);
    ``None`` means "where needed" (a ``Dict`` or non-1-D observation, a ``MultiDiscrete``
    action). ``teacher`` adds its decision as the last ``Discrete`` index
    (:class:`DiscreteActions`; :class:`TeacherAction` on an environment already
    ``Discrete``)."""
    obs_space, act_space = env.observation_space, env.action_space
    if discrete_actions is None:
        discrete_actions = isinstance(act_space, spaces.MultiDiscrete)
    if flatten_obs is None:
        flatten_obs = not (isinstance(obs_space, spaces.Box) and len(obs_space.shape) == 1)
    if flatten_obs:
        env = FlatObservation(env)
    if discrete_actions:
        env = DiscreteActions(env, max_actions=max_actions, teacher=teacher)
    elif teacher and isinstance(env.action_space, spaces.Discrete):
        env = TeacherAction(env, teacher)
    elif teacher:
        raise ValueError(f"teacher {teacher!r} needs Discrete actions (discrete_actions true)")
    return env


def make_flat(env_id: str, max_actions: int = DEFAULT_MAX_ACTIONS, **kwargs: Any) -> gym.Env:
    """``gymnasium.make(env_id, **kwargs)`` with a flat ``Box`` observation and a
    ``Discrete`` action (:func:`flatten_env`); the env keeps ``action_masks()``.

    Example:
        >>> env = make_flat("edgegym/EnergyFairShare-v0", quanta=20)
        >>> env.action_space
        Discrete(61)
    """
    return flatten_env(gym.make(env_id, **kwargs), max_actions=max_actions)


class MaskInObservation(gym.ObservationWrapper, gym.utils.RecordConstructorArgs):
    """The action mask carried inside the observation, as RLlib's action-masking RLModule
    (``ray.rllib.examples.rl_modules.classes.action_masking_rlm.ActionMaskingTorchRLModule``)
    and most hand-written masking networks read it: a one-level ``Dict`` of
    ``"observations"`` (the wrapped env's flat ``Box``) and ``"action_mask"`` (``float32``
    ``Box(0, 1)``, 1 = allowed, of the wrapped env's ``action_masks()``).

    For a ``Discrete(n)`` action the mask has ``n`` entries; for ``MultiDiscrete(nvec)`` it has
    ``sum(nvec)``, the entries of each sub-action in turn, which is the layout of the
    concatenated logits of RLlib's (and SB3's) ``MultiDiscrete`` distributions, so the same
    logit masking applies. Use :func:`make_masked` to build it from an id.

    Raises:
        ValueError: The wrapped observation is not a 1-D ``Box`` (flatten it first with
            :class:`FlatObservation`) or the action space is neither ``Discrete`` nor
            ``MultiDiscrete``.
    """

    def __init__(self, env: gym.Env) -> None:
        gym.utils.RecordConstructorArgs.__init__(self)
        gym.ObservationWrapper.__init__(self, env)
        obs, act = env.observation_space, env.action_space
        if not (isinstance(obs, spaces.Box) and len(obs.shape) == 1):
            raise ValueError(
                f"MaskInObservation needs a flat Box observation, got {obs}; wrap the env in "
                "FlatObservation first (make_masked does)"
            )
        if isinstance(act, spaces.Discrete):
            n = int(act.n)
        elif isinstance(act, spaces.MultiDiscrete):
            n = int(np.sum(act.nvec))
        else:
            raise ValueError(
                f"MaskInObservation needs a Discrete or MultiDiscrete action, got {act}"
            )
        self.observation_space = spaces.Dict(
            {
                "action_mask": spaces.Box(0.0, 1.0, shape=(n,), dtype=np.float32),
                "observations": obs,
            }
        )

    def observation(self, observation: Any) -> dict[str, np.ndarray]:
        """The observation with the current mask beside it."""
        mask = np.asarray(self.env.get_wrapper_attr("action_masks")(), dtype=np.float32)
        return {"action_mask": mask, "observations": observation}


def make_masked(env_id: str, **kwargs: Any) -> gym.Env:
    """``gymnasium.make(env_id, **kwargs)`` with a flat ``Box`` observation and the action mask
    in the observation (:class:`MaskInObservation`), for RLlib's action-masking RLModule.

    Works on every id: a ``Dict`` observation is flattened first (:class:`FlatObservation`);
    the action space stays the id's (``Discrete`` for ``MIGReconfig-v0`` and the ``-Flat-v0``
    ids, ``MultiDiscrete`` otherwise).

    Example:
        >>> env = make_masked("edgegym/MIGReconfig-v0", scenario="migrator-w5")
        >>> sorted(env.observation_space.spaces)
        ['action_mask', 'observations']
    """
    env = gym.make(env_id, **kwargs)
    if not (
        isinstance(env.observation_space, spaces.Box) and len(env.observation_space.shape) == 1
    ):
        env = FlatObservation(env)
    return MaskInObservation(env)


class FlatVectorEnv(gym.vector.VectorWrapper):
    """The flat view of a native vector env (:class:`edgegym.core.vector.EdgeVectorEnv`):
    each env is exactly what :func:`make_flat` makes of the single env (a flat ``float32``
    ``Box`` observation, ``Discrete`` actions over the same :class:`JointActions`, the
    ``Discrete`` mask in ``info["action_mask"]`` and :meth:`action_masks`, and
    ``info["joint_action"]``), batched on axis 0.

    Args:
        env: The family's native vector env.
        joint: The joint actions; ``None`` builds them as :func:`make_flat` does, from one
            single env of the same scenario.
        max_actions: As for :func:`make_flat`.
    """

    def __init__(
        self,
        env: gym.vector.VectorEnv,
        joint: JointActions | None = None,
        max_actions: int = DEFAULT_MAX_ACTIONS,
    ) -> None:
        super().__init__(env)
        inner = env.unwrapped
        if joint is None:
            single = gym.make(inner.env_id, scenario=inner.scenario, disable_env_checker=True)
            joint = joint_actions(single.unwrapped, max_actions)
            single.close()
        self.joint = joint
        self.flattener = DictFlattener(env.single_observation_space)
        self.single_observation_space = self.flattener.space
        self.observation_space = gym.vector.utils.batch_space(
            self.single_observation_space, self.num_envs
        )
        self.single_action_space = spaces.Discrete(len(joint))
        self.action_space = gym.vector.utils.batch_space(self.single_action_space, self.num_envs)
        self._md_masks: np.ndarray | None = None
        self._masks: np.ndarray | None = None
        # NextStep autoreset: the envs the next step resets (they play no action).
        self._resetting = np.zeros(self.num_envs, dtype=bool)

    def action_masks(self) -> np.ndarray:
        """(N, K) bool, a copy: valid ``Discrete`` actions of every env (before ``reset``, the
        translation of the native vector env's mask before its reset, as :func:`make_flat`)."""
        if self._masks is None:
            md = self._md_masks
            if md is None:
                md = np.asarray(self.env.unwrapped.action_masks(), dtype=bool)
                return np.stack([self.joint.mask(row) for row in md])
            self._masks = np.stack([self.joint.mask(row) for row in md])
        return self._masks.copy()

    def _translate(
        self, obs: Any, info: dict[str, Any], joint: np.ndarray | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Flat observations and masks; ``joint`` (a step's joint actions) goes into
        ``info["joint_action"]`` of the envs that played it (as ``SyncVectorEnv`` over
        :func:`make_flat` would put it: not an env reset by this step, and in
        ``info["final_info"]`` for an env that ended with ``SameStep`` autoreset)."""
        self._md_masks = np.asarray(info["action_mask"], dtype=bool)
        self._masks = None
        info = dict(info)
        info["action_mask"] = self.action_masks()
        played = None if joint is None else ~self._resetting
        if "final_obs" in info:
            final_obs = info["final_obs"].copy()
            final_info = dict(info["final_info"])
            ended = np.flatnonzero(info["_final_obs"])
            for i in ended:
                final_obs[i] = self.flattener(final_obs[i])
            if "action_mask" in final_info:
                fmask = np.zeros((self.num_envs, len(self.joint)), dtype=bool)
                for i in ended:
                    fmask[i] = self.joint.mask(final_info["action_mask"][i])
                final_info["action_mask"] = fmask
            if joint is not None:
                have = np.asarray(info["_final_obs"], dtype=bool).copy()
                final_info["joint_action"] = np.where(
                    have.reshape(-1, *[1] * (joint.ndim - 1)), joint, 0
                )
                final_info["_joint_action"] = have
                played = played & ~have
            info["final_obs"], info["final_info"] = final_obs, final_info
        if played is not None and played.any():
            if not played.all():
                joint = np.where(played.reshape(-1, *[1] * (joint.ndim - 1)), joint, 0)
            info["joint_action"] = joint
            info["_joint_action"] = played
        return self.flattener.batch(obs), info

    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        """Reset every env; masks and observations become the flat view's."""
        obs, info = self.env.reset(seed=seed, options=options)
        self._resetting[:] = False
        return self._translate(obs, info)

    def step(
        self, actions: Any
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Decode every env's index onto its current mask, step, translate."""
        idx = check_action(self.action_space, actions, what="actions")
        md = self._md_masks
        if md is None:
            raise RuntimeError("call reset() before step()")
        joint = np.stack([self.joint.decode(int(a), row) for a, row in zip(idx, md, strict=True)])
        obs, reward, terminated, truncated, info = self.env.step(joint)
        obs, info = self._translate(obs, info, joint)
        if self.env.metadata.get("autoreset_mode") == gym.vector.AutoresetMode.NEXT_STEP:
            self._resetting = terminated | truncated
        return obs, reward, terminated, truncated, info


def make_flat_vector(
    env_id: str, num_envs: int = 1, max_actions: int = DEFAULT_MAX_ACTIONS, **kwargs: Any
) -> FlatVectorEnv:
    """Vector entry point of the registered ``-Flat-v0`` ids: the base id's native vector env
    (``gymnasium.make_vec(env_id, num_envs, **kwargs)``) in :class:`FlatVectorEnv`."""
    base = gym.make_vec(env_id, num_envs, vectorization_mode="vector_entry_point", **kwargs)
    return FlatVectorEnv(base, max_actions=max_actions)


class MaskedVectorEnv(gym.vector.VectorWrapper):
    """The batched counterpart of :func:`make_masked` over a vector env: each env's
    observation is ``{"action_mask": float32 (K,), "observations": flat float32 Box}``
    exactly as :class:`MaskInObservation` over the single env (a ``Dict`` observation is
    flattened as :class:`FlatObservation` does; a 1-D ``Box`` is kept as is), batched on
    axis 0; actions, rewards, ``terminated``, ``truncated`` and ``info`` pass through.

    The mask is the vector env's ``info["action_mask"]`` (the native vector envs and
    :class:`FlatVectorEnv` put the (N, K) mask there at every reset and step), else its
    ``action_masks()``. For ``MultiDiscrete(nvec)`` actions ``K = sum(nvec)``, as for the
    single env. With ``NextStep`` autoreset (the native default, what RLlib expects) env ``i``
    of a vector env reset with ``seed=s`` matches ``make_masked`` reset with ``seed=s + i``.
    With ``SameStep`` autoreset, ``info["final_obs"]`` holds the raw final observations.

    Args:
        env: A vector env of an edgegym id (``gymnasium.make_vec(id, n,
            vectorization_mode="vector_entry_point")``); see :func:`make_masked_vector`.

    Raises:
        ValueError: The action space is neither ``Discrete`` nor ``MultiDiscrete``.
    """

    def __init__(self, env: gym.vector.VectorEnv) -> None:
        super().__init__(env)
        obs, act = env.single_observation_space, env.single_action_space
        self.flattener: DictFlattener | None = None
        if not (isinstance(obs, spaces.Box) and len(obs.shape) == 1):
            self.flattener = DictFlattener(obs)
            obs = self.flattener.space
        if isinstance(act, spaces.Discrete):
            n = int(act.n)
        elif isinstance(act, spaces.MultiDiscrete):
            n = int(np.sum(act.nvec))
        else:
            raise ValueError(f"MaskedVectorEnv needs a Discrete or MultiDiscrete action, got {act}")
        self.single_observation_space = spaces.Dict(
            {
                "action_mask": spaces.Box(0.0, 1.0, shape=(n,), dtype=np.float32),
                "observations": obs,
            }
        )
        self.observation_space = gym.vector.utils.batch_space(
            self.single_observation_space, self.num_envs
        )
        self._mask: np.ndarray | None = None

    def action_masks(self) -> np.ndarray:
        """(N, K) bool: the valid actions of every env (the ``action_mask`` entries; before
        ``reset``, the vector env's ``action_masks()``, else every action)."""
        if self._mask is None:
            inner = getattr(self.env, "action_masks", None)
            if inner is not None:
                return np.array(inner(), dtype=bool)
            k = self.single_observation_space["action_mask"].shape[0]
            return np.ones((self.num_envs, k), dtype=bool)
        return self._mask.astype(bool)

    def _masked(self, obs: Any, info: dict[str, Any]) -> dict[str, np.ndarray]:
        mask = info.get("action_mask")
        if mask is None:
            mask = self.env.get_wrapper_attr("action_masks")()
        self._mask = np.asarray(mask, dtype=np.float32)
        flat = self.flattener.batch(obs) if self.flattener is not None else obs
        return {"action_mask": self._mask.copy(), "observations": flat}

    def reset(
        self, *, seed: int | list[int | None] | None = None, options: dict[str, Any] | None = None
    ) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Reset every env; observations carry the mask."""
        obs, info = self.env.reset(seed=seed, options=options)
        return self._masked(obs, info), info

    def step(
        self, actions: Any
    ) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every env; observations carry the mask."""
        obs, reward, terminated, truncated, info = self.env.step(actions)
        return self._masked(obs, info), reward, terminated, truncated, info


def make_masked_vector(env_id: str, num_envs: int = 1, **kwargs: Any) -> MaskedVectorEnv:
    """The vector counterpart of :func:`make_masked`: the id's native vector env
    (``gymnasium.make_vec(env_id, num_envs, vectorization_mode="vector_entry_point",
    **kwargs)``; the ``-Flat-v0`` ids give :class:`FlatVectorEnv`) in :class:`MaskedVectorEnv`.

    Raises:
        ValueError: The id has no native vector env (use ``gymnasium.make_vec`` with
            ``vectorization_mode="sync"`` over :func:`make_masked` instead).
    """
    if gym.spec(env_id).vector_entry_point is None:
        raise ValueError(
            f"{env_id} has no native vector env; vectorize make_masked with "
            "gymnasium.make_vec(..., vectorization_mode='sync') instead"
        )
    base = gym.make_vec(env_id, num_envs, vectorization_mode="vector_entry_point", **kwargs)
    return MaskedVectorEnv(base)


def make_flat_registered(
    env_id: str, max_actions: int = DEFAULT_MAX_ACTIONS, **kwargs: Any
) -> gym.Env:
    """Entry point of the registered ``-Flat-v0`` ids: :func:`make_flat` with the base made
    without the passive checker, because ``gymnasium.make`` puts one around the flat view
    (or leaves it out for ``disable_env_checker=True``, which never reaches an entry point).
    """
    kwargs.pop("disable_env_checker", None)
    return make_flat(env_id, max_actions, disable_env_checker=True, **kwargs)


__all__ = [
    "CATALOGUES",
    "DEFAULT_MAX_ACTIONS",
    "DictFlattener",
    "DiscreteActions",
    "FlatObservation",
    "FlatVectorEnv",
    "JointActions",
    "MaskInObservation",
    "MaskedVectorEnv",
    "TeacherAction",
    "TeacherHint",
    "catalogue_builder",
    "family_of",
    "flatten_env",
    "generic_catalogue",
    "joint_actions",
    "make_flat",
    "make_flat_registered",
    "make_flat_vector",
    "make_masked",
    "make_masked_vector",
]

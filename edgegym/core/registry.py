"""The family registry: one record per environment family, read by everything that used to
keep its own table of families (env ids, scenario validation and overrides, the default
published scheduler, the flat views' catalogues, the evaluator's headline metrics, the CLI's
scenario summary).

Each family package (``edgegym/families/<family>/__init__.py``) declares its :class:`Family`
and calls :func:`register_family`; ``import edgegym`` imports every package under
``edgegym/families/``, so a new family is found without a hand-written list. A family can also
be registered at run time (a test does it with a toy family). Registering a family registers
its ids with Gymnasium (:data:`ENV_IDS`, :data:`FLAT_IDS`).

This module imports nothing from edgegym, so every layer may read it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym

#: ``validate(raw, src, base_dir) -> data``: check a parsed scenario of the family and fill its
#: defaults, raising ``ScenarioError`` with a message naming file, field and range.
Validator = Callable[[Mapping[str, Any], str, "Path | None"], dict[str, Any]]


@dataclass(frozen=True)
class ScenarioSchema:
    """What scenario loading needs of a family.

    Attributes:
        validate: The family's validator (see :data:`Validator`).
        top: Top-level fields (name -> pydantic field), for ``key=value`` overrides.
        hardware: Fields of the hardware section, which overrides may name bare
            (``gpus=4`` for ``hardware.gpus``).
        sections: Names of the scenario's sections (``section.field`` overrides).
        hardware_key: Name of the hardware section (``hardware``, or ``servers``).
    """

    validate: Validator
    top: Mapping[str, Any]
    hardware: Mapping[str, Any]
    sections: frozenset[str]
    hardware_key: str = "hardware"


def _tenant_shape(d: Mapping[str, Any]) -> tuple[str, str, str]:
    hw = d.get("hardware", {})
    tenants = d.get("streams", len(d.get("tenants", [])))
    return str(tenants), f"{hw.get('gpus', 1)} x {hw.get('gpu', '?')}", "-"


@dataclass(frozen=True)
class Family:
    """One environment family.

    Attributes:
        name: The scenario files' ``family:`` value (``continual``, ``mig``, ...).
        env_id: Its Gymnasium id (``edgegym/ContinualLearning-v0``).
        entry_point: ``module:Class`` of the environment.
        vector_entry_point: ``module:Class`` of its native vector environment (an
            :class:`edgegym.core.vector.EdgeVectorEnv`), which ``gymnasium.make_vec(env_id,
            N)`` builds; ``None`` while the family has none (``make_vec`` then copies N
            single envs).
        default_scenario: Bundled scenario that ``gymnasium.make(env_id)`` uses.
        summary: One line for ``edgegym envs``.
        schema: How its scenarios are validated and overridden.
        default_policy: Its flagship published scheduler (``edgegym evaluate``'s default and
            the agents' yardstick).
        flat_id: Id of its flat view (``Box`` observation, ``Discrete`` action), if any.
        catalogue: ``module:function`` building the flat view's joint actions
            (``(env, max_actions) -> (K, D) table``), or ``None`` for the generic one.
        headline_metrics: ``(episode_metrics key, column label)`` pairs the evaluator's table
            and the leaderboard show before accuracy, energy and retrainings.
        shape: ``validated scenario -> (tenants, GPUs, horizon)`` words for
            ``edgegym scenarios``.
        unit: What a tenant is called in plots (``stream``, ``tenant``).
        score: ``(episode_metrics key, label, higher is better)``: what the evaluator's figure
            ranks policies by.
        make_params: ``make_params(scenario, **options) -> params``: the one way to build the
            family's params (what its dynamics take) from a loaded scenario; read it through
            :meth:`params`.
    """

    name: str
    env_id: str
    entry_point: str
    default_scenario: str
    summary: str
    schema: ScenarioSchema
    vector_entry_point: str | None = None
    default_policy: str = "random"
    flat_id: str | None = None
    catalogue: str | None = None
    headline_metrics: tuple[tuple[str, str], ...] = ()
    shape: Callable[[Mapping[str, Any]], tuple[str, str, str]] = field(default=_tenant_shape)
    unit: str = "tenant"
    score: tuple[str, str, bool] = ("accuracy", "mean inference accuracy", True)
    make_params: Callable[..., Any] | None = None

    def params(self, scenario: Any, **options: Any) -> Any:
        """The family's params of a loaded scenario (options as its ``make_params`` takes).

        Raises:
            TypeError: The family registered no params builder.
        """
        if self.make_params is None:
            raise TypeError(f"family {self.name!r} registered no make_params")
        return self.make_params(scenario, **options)


#: name -> Family, in registration order.
FAMILIES: dict[str, Family] = {}

#: Called as ``listener(family, added)`` when a family is registered (``added``) or removed
#: (:func:`_register_ids` registers and removes the Gymnasium ids this way).
_LISTENERS: list[Callable[[Family, bool], None]] = []


def register_family(family: Family) -> Family:
    """Add ``family`` to the registry (again with the same record: no-op).

    Raises:
        ValueError: Another family already has this name or env id.
    """
    old = FAMILIES.get(family.name)
    if old is not None:
        if old == family:
            return family
        raise ValueError(f"family {family.name!r} is already registered ({old.env_id})")
    for other in FAMILIES.values():
        if family.env_id in (other.env_id, other.flat_id):
            raise ValueError(f"{family.env_id} is already the id of family {other.name!r}")
    FAMILIES[family.name] = family
    for listener in _LISTENERS:
        listener(family, True)
    return family


def unregister_family(name: str) -> None:
    """Remove a family registered at run time (tests), its Gymnasium ids with it."""
    family = FAMILIES.pop(name, None)
    if family is not None:
        for listener in _LISTENERS:
            listener(family, False)


def on_register(listener: Callable[[Family, bool], None]) -> None:
    """Call ``listener(family, True)`` for every family registered from now on and every one
    already there, and ``listener(family, False)`` for every one removed."""
    _LISTENERS.append(listener)
    for fam in list(FAMILIES.values()):
        listener(fam, True)


def get_family(name: str) -> Family:
    """The family called ``name``.

    Raises:
        KeyError: No such family; the message lists the registered ones.
    """
    try:
        return FAMILIES[name]
    except KeyError:
        raise KeyError(
            f"unknown family {name!r}; registered: {', '.join(FAMILIES) or 'none'}"
        ) from None


def family_of_id(env_id: str) -> Family | None:
    """The family whose base or flat id is ``env_id``, or ``None``."""
    for fam in FAMILIES.values():
        if env_id in (fam.env_id, fam.flat_id):
            return fam
    return None


def family_of_entry_point(entry_point: str) -> Family | None:
    """The family whose environment class is ``module:Class``, or ``None``."""
    return next((f for f in FAMILIES.values() if f.entry_point == entry_point), None)


# ----------------------------------------------------------------------------- Gymnasium ids
#: Registered environment ids -> (entry point, family, default scenario, summary): a view of
#: :data:`FAMILIES`, kept for the code that reads it.
ENV_IDS: dict[str, tuple[str, str, str, str]] = {}

#: Flat views (``Box`` observation, ``Discrete`` action, :mod:`edgegym.wrappers`) -> base id.
#: Kept out of :data:`ENV_IDS` (which lists the environments themselves); MIGReconfig-v0 is
#: flat already.
FLAT_IDS: dict[str, str] = {}


def _register_ids(fam: Family, added: bool = True) -> None:
    """Record ``fam``'s ids in the views above and register them with Gymnasium (or, for a
    family removed, drop them from both)."""
    if not added:
        for env_id in (fam.env_id, fam.flat_id):
            ENV_IDS.pop(env_id or "", None)
            FLAT_IDS.pop(env_id or "", None)
            gym.registry.pop(env_id or "", None)
        return
    ENV_IDS[fam.env_id] = (fam.entry_point, fam.name, fam.default_scenario, fam.summary)
    if fam.env_id not in gym.registry:
        gym.register(
            id=fam.env_id,
            entry_point=fam.entry_point,
            vector_entry_point=fam.vector_entry_point,
        )
    if fam.flat_id:
        FLAT_IDS[fam.flat_id] = fam.env_id
        if fam.flat_id not in gym.registry:
            # The base id brings order enforcing; Gymnasium's passive checker wraps the flat
            # view (what the user steps), so ``disable_env_checker`` reaches it as usual.
            gym.register(
                id=fam.flat_id,
                entry_point="edgegym.wrappers:make_flat_registered",
                vector_entry_point=(
                    "edgegym.wrappers:make_flat_vector" if fam.vector_entry_point else None
                ),
                kwargs={"env_id": fam.env_id},
                order_enforce=False,
            )


def register_all() -> None:
    """Register every edgegym id with Gymnasium (idempotent; ``import edgegym`` calls it)."""
    for fam in list(FAMILIES.values()):
        _register_ids(fam)


on_register(_register_ids)

__all__ = [
    "ENV_IDS",
    "FAMILIES",
    "FLAT_IDS",
    "Family",
    "ScenarioSchema",
    "family_of_entry_point",
    "family_of_id",
    "get_family",
    "on_register",
    "register_all",
    "register_family",
    "unregister_family",
]

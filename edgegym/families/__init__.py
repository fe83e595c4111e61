"""The environment families, one package each, every package with the same file roles.

A family's package declares its :class:`~edgegym.core.registry.Family` in its ``__init__``
and registers it; importing this package imports them all (each registered family's ids are
registered with Gymnasium as it arrives), so a new family needs a folder here and nothing
else. Its files, where the family has them:

============== =================================================================
schema.py      the pydantic scenario models (validated by :mod:`edgegym.scenarios`)
params.py      what a scenario fixes, precomputed once (``make_params``)
dynamics.py    the batched state and the one implementation of its rules
observation.py observation layout and space
reward.py      the named reward terms
snapshot.py    the frozen view baselines read
env.py         the single Gymnasium environment (on :class:`edgegym.core.env.EdgeEnv`)
vector.py      the native vector environment (on :class:`edgegym.core.vector.EdgeVectorEnv`)
catalogue.py   the joint actions of its flat ``Discrete`` view (:mod:`edgegym.wrappers`)
============== =================================================================

plus what only that family has (MIG serving and datasets, energy time slices, the DAG graph
helpers).
"""

from __future__ import annotations

import importlib
import pkgutil

#: Display order of the built-in families (tables, leaderboard); other packages follow in
#: alphabetical order, so a new family needs no entry here.
_FIRST = ("continual", "mig", "energy", "dag")


def _import_family_packages() -> None:
    names = [m.name for m in pkgutil.iter_modules(__path__) if m.ispkg and m.name[0] != "_"]
    for name in sorted(names, key=lambda n: (_FIRST.index(n) if n in _FIRST else 99, n)):
        importlib.import_module(f"{__name__}.{name}")


_import_family_packages()

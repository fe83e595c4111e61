"""The toy's one reward term, ``served``: units that met demand / ``units``."""

from __future__ import annotations

from collections.abc import Mapping

TERMS = ("served",)


def term_weights(objective: Mapping[str, float]) -> dict[str, float]:
    """Weight of each reward term: the ``objective`` entry of the same name."""
    return {t: float(objective[t]) for t in TERMS}

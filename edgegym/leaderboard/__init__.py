"""Leaderboard: every policy of every family on its bundled scenarios, same seeds, one report.

``python -m edgegym.leaderboard`` (or ``edgegym leaderboard``) evaluates, per family, every
registered baseline of the family (:data:`edgegym.baselines.POLICIES`), ``random`` and the
shipped PPO policy (``agents/trained/<family>/model.zip``, when there is one) on the family's
scenarios over the same seeded episodes, and writes to ``--out`` (default ``docs/``)::

    leaderboard.md             per family and scenario: mean ± std of the return (the
                               environment's objective) and of the family's headline metrics,
                               the PPO's gap to the best baseline, its training budget and wall
                               time; a summary of PPO against random / no-retrain / the best
                               baseline on each family's default scenario
    leaderboard.json           every result (written after each scenario, so a failure or
                               Ctrl-C midway loses nothing; ``--resume`` skips what is done,
                               ``--render-only`` rewrites the report from it)
    leaderboard-<family>.png   one figure per family: mean return ± std per policy and scenario

Scenarios: every bundled scenario of the family, except ``mig`` (:data:`DEFAULT_SCENARIOS`:
the eight four-window workloads W1-W8; ``--scenarios all`` runs all sixteen). ``--quick`` runs
each family's default scenario only, two episodes, DAG at 200 requests
(:data:`QUICK_OVERRIDES`), and writes to ``runs/leaderboard-quick`` unless ``--out`` says
otherwise.

``--workers N`` runs every (scenario, policy, seed) episode as a job of a local process pool,
``--ray [ADDR]`` as a Ray task (a local cluster, or ``auto`` / ``host:port``; docs/ray.md);
the numbers are those of the serial run.

A run merges into an existing ``leaderboard.json``: the scenarios it evaluates are replaced,
the others kept (so ``--families dag`` refreshes one family); ``--fresh`` starts over.

Example::

    python -m edgegym.leaderboard                       # all families, 5 episodes
    python -m edgegym.leaderboard --families dag --set dag:requests=200
    python -m edgegym.leaderboard --scenarios ekya-cityscapes,migrator-w1 --episodes 3
    python -m edgegym.leaderboard --render-only         # rewrite docs/leaderboard.md
    python -m edgegym.leaderboard --ray auto            # on the cluster of `ray start --head`
"""

from edgegym.leaderboard.cli import add_arguments, main, run_args
from edgegym.leaderboard.render import plot_family, render
from edgegym.leaderboard.runner import load_results, run, run_cell, run_cells_parallel, save_results
from edgegym.leaderboard.selection import (
    DEFAULT_SCENARIOS,
    HEADROOM,
    HELD_OUT,
    JSON_NAME,
    MD_NAME,
    QUICK_EPISODES,
    QUICK_OVERRIDES,
    LeaderboardError,
    bundled_scenarios,
    default_scenario_of,
    families,
    family_policies,
    is_headroom,
    leaderboard_policies,
    parse_family_sets,
    plan,
    shipped_info,
    split_variant,
)

__all__ = [
    "DEFAULT_SCENARIOS",
    "HEADROOM",
    "HELD_OUT",
    "JSON_NAME",
    "MD_NAME",
    "QUICK_EPISODES",
    "QUICK_OVERRIDES",
    "LeaderboardError",
    "add_arguments",
    "bundled_scenarios",
    "default_scenario_of",
    "families",
    "family_policies",
    "is_headroom",
    "leaderboard_policies",
    "load_results",
    "main",
    "parse_family_sets",
    "plan",
    "plot_family",
    "render",
    "run",
    "run_args",
    "run_cell",
    "run_cells_parallel",
    "save_results",
    "shipped_info",
    "split_variant",
]

"""The reconfiguration rules of the MIG family: what a switch of allocation costs.

:func:`reconfigure` is MIGRator's rule for MIG instances (Eq. 10-11, or each instance's own
overhead); :func:`switch_shares` the rule for MPS shares (scenario ``mps.shares``: a restart
beside the old process, make before break). Both are pure functions of a batch of envs' arrays,
called by :meth:`edgegym.families.mig.dynamics.MIGDynamics.step` at every decision.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from edgegym.hardware.migalloc import ABSENT

_EPS = 1e-9


@functools.lru_cache(maxsize=16)
def cell_base(n: int, m: int, x: int) -> np.ndarray:
    """(N, M) flat index of cell ``(i, j, 0)`` of a C-contiguous (N, M, X) array (read-only)."""
    out = (np.arange(n)[:, None] * m + np.arange(m)) * x
    out.setflags(write=False)
    return out


RULES = ("eq10", "per-instance")


@dataclass(frozen=True)
class Reconfiguration:
    """What one reconfiguration does to N envs' P placements and 2M tasks (:func:`reconfigure`)."""

    ready: np.ndarray  # (N, P) time each placement's instance serves again
    flagged: np.ndarray  # (N, 2M) bool: the task is reconfigured (MIGRator Eq. 11)
    measured: np.ndarray  # (N, 2M) seconds the task's reconfiguration took (0 where unflagged)
    downtime: np.ndarray  # (N,) instance-seconds made unavailable
    plain: np.ndarray  # (N, 2M) ``measured`` had every new instance served at ``plain_ready``


def reconfigure(
    rule: str,
    old: np.ndarray,
    new: np.ndarray,
    ready_old: np.ndarray,
    now: np.ndarray,
    ready_instance: np.ndarray,
    psi: np.ndarray,
    gpcs: np.ndarray,
    destroy_s: float,
    first: np.ndarray,
    plain_ready: np.ndarray | None = None,
) -> Reconfiguration:
    """The reconfiguration rule of the MIG family, for a batch of envs (the single env is the
    batch of one).

    **Detection** (MIGRator Eq. 11): task ``x`` (inference ``x < M``, retraining ``x >= M``)
    is reconfigured when the number of instances or of GPCs it holds changes and it holds at
    least one instance afterwards (a task left with nothing has no capacity to lose).

    **Measured overhead** of a reconfigured task: the time until every instance it holds now
    serves under the per-instance components (``ready_instance - now`` for each instance that
    got the task; 0 for instances it keeps), or ``destroy_s`` where it only gave instances up
    (MIGRator Fig. 5: destruction, creation, library load, model load). Psi (Table 2) is the mean
    of these over a task's reconfigurations in the last window
    (:meth:`edgegym.families.mig.dynamics.MIGDynamics.enter_window`).

    **Cost**, by ``rule``:

    * ``"eq10"`` (MIGRator Eq. 10): a reconfigured task's *whole* capacity is down for its Psi:
      each of its instances serves from ``now + psi[x]`` (or later, if it was still being set
      up); an instance that changed task without a count change (Eq. 11 sees none) serves at
      once.
    * ``"per-instance"``: each instance that gets a new task serves from its own
      ``ready_instance`` (its destroy/create/library/model-load overhead, shortened by
      pre-initialisation); instances a task keeps are untouched.

    The first allocation of an episode (``first``) is a warm start: ready at ``now``, nothing
    flagged.

    Args:
        rule: ``"eq10"`` or ``"per-instance"``.
        old: (N, P) task per placement before (IDLE -1, ABSENT -2).
        new: (N, P) task per placement after.
        ready_old: (N, P) when each instance served before.
        now: (N,) time of the decision.
        ready_instance: (N, P) when each instance would serve under the per-instance
            components (used where the placement's task changes).
        psi: (N, 2M) Psi of each task, seconds.
        gpcs: (P,) GPCs of each placement.
        destroy_s: Seconds to destroy an instance.
        first: (N,) bool: the first decision of the episode.
        plain_ready: (N, P) ``ready_instance`` of a counterfactual (the same reconfiguration
            without pre-initialisation): its measured overhead is ``plain`` (``measured``
            where ``None``). Detection does not depend on it, so it is computed once.

    Returns:
        The :class:`Reconfiguration`.
    """
    if rule not in RULES:
        raise ValueError(f"overhead rule must be one of {', '.join(RULES)}, got {rule!r}")
    n_envs, n_tasks = psi.shape
    t = now[:, None]
    held = new >= 0
    changed = held & (new != old)
    kept = held & (new == old)
    # Per (env, task) sums over placements as bincounts over flat (env, task) slots, the
    # allocation before in the first N * 2M slots, after in the next.
    base = np.arange(n_envs)[:, None] * n_tasks  # (N, 1)
    had = old >= 0
    e_old, p_old = np.nonzero(had)
    e_new, p_new = np.nonzero(held)
    size = n_envs * n_tasks
    both = np.concatenate([e_old * n_tasks + old[had], e_new * n_tasks + new[held] + size])
    n_both = np.bincount(both, minlength=2 * size)
    g_both = np.bincount(both, np.concatenate([gpcs[p_old], gpcs[p_new]]), minlength=2 * size)
    n_old, n_new = n_both[:size], n_both[size:]
    moved = (n_old != n_new) | (g_both[:size] != g_both[size:])
    flagged = (moved & (n_new > 0)).reshape(n_envs, n_tasks) & ~first[:, None]
    # A task gave an instance up: it held a placement whose task is now another.
    gave_up = np.bincount((base + old)[had & (new != old)], minlength=size) > 0
    gave = np.where(gave_up, destroy_s, 0.0).reshape(n_envs, n_tasks)
    slot_got = (base + new)[changed]

    def measure(ready_at: np.ndarray) -> np.ndarray:
        # The longest wait of an instance the task got (0 where it got none).
        got = np.zeros(size)
        np.maximum.at(got, slot_got, (ready_at - t)[changed])
        return np.where(flagged, np.maximum(got.reshape(n_envs, n_tasks), gave), 0.0)

    measured = measure(ready_instance)
    plain = measured if plain_ready is None else measure(plain_ready)
    ready = _ready_times(rule, new, ready_old, t, ready_instance, psi, flagged, changed, kept)
    ready = np.where(first[:, None] & changed, t, ready)
    before = np.where(kept, np.maximum(ready_old - t, 0.0), 0.0)
    after = np.where(held, np.maximum(ready - t, 0.0), 0.0)
    # Summed in placement order, as one instance after another.
    downtime = np.cumsum(after - before, axis=1)[:, -1]
    return Reconfiguration(ready, flagged, measured, downtime, plain)


def _ready_times(
    rule: str,
    new: np.ndarray,
    ready_old: np.ndarray,
    t: np.ndarray,
    ready_instance: np.ndarray,
    psi: np.ndarray,
    flagged: np.ndarray,
    changed: np.ndarray,
    kept: np.ndarray,
) -> np.ndarray:
    """(N, P) when each instance serves after the switch, by the cost ``rule`` of
    :func:`reconfigure` (before its warm start of the first allocation)."""
    if rule == "eq10":
        held = new >= 0
        at = cell_base(new.shape[0], 1, psi.shape[1]) + np.where(held, new, 0)  # (N, P)
        down = flagged.ravel()[at] & held
        psi_p = psi.ravel()[at]
        base = np.where(kept, ready_old, t)
        return np.where(down, np.maximum(t + psi_p, base), np.where(changed, t, ready_old))
    return np.where(changed, ready_instance, ready_old)


def switch_shares(
    rule: str,
    old: np.ndarray,
    target: np.ndarray,
    ready_old: np.ndarray,
    now: np.ndarray,
    restart: np.ndarray,
    psi: np.ndarray,
    first: np.ndarray,
) -> tuple[np.ndarray, Reconfiguration, np.ndarray]:
    """The reconfiguration rule under MPS shares (scenario ``mps.shares``), for N envs.

    A task whose share changes starts a new process at the new share (``restart``: library
    and model load) while the process at its old share goes on serving until the new one is
    ready, then ends (make before break: MPS partitions no memory and lets the shares
    overlap, unlike MIG, whose GPCs must be freed first). A task that goes back to the share
    it still serves on cancels its pending restart at no cost; one whose target is already
    pending keeps waiting. The new process is ready after ``restart`` under
    ``"per-instance"``, after the task's Psi under ``"eq10"`` (its mean measured restart in
    the last window, MIGRator Eq. 10); either way the restart is what is measured (Psi's
    input). A task with nothing serving meanwhile (a retraining job's start) is down until
    then; that is the only downtime.

    Args:
        rule: ``"eq10"`` or ``"per-instance"``.
        old: (N, P) task per placement before: a task may hold a serving placement and a
            pending one.
        target: (N, P) the signature's allocation (one placement per task).
        ready_old: (N, P) when each placement served before.
        now: (N,) time of the decision.
        restart: (N, P) seconds a new process of the task at each target placement takes.
        psi: (N, 2M) Psi of each task.
        first: (N,) bool: the first decision (a warm start: ready at once, nothing flagged).

    Returns:
        ``(new, reconfiguration, retire)``: (N, P) task per placement (the target plus every
        old share still serving), the :class:`Reconfiguration` and (N, P) when each old
        share still serving ends (``inf`` elsewhere).
    """
    if rule not in RULES:
        raise ValueError(f"overhead rule must be one of {', '.join(RULES)}, got {rule!r}")
    n_envs, n_tasks = psi.shape
    t = now[:, None]
    base = cell_base(n_envs, 1, n_tasks)  # (N, 1) first flat (env, task) slot of each env
    held = target >= 0
    slot = base + np.where(held, target, 0)  # (N, P) the target task's slot
    start = held & (target != old) & ~first[:, None]  # a new process
    wait = restart if rule == "per-instance" else psi.ravel()[slot]
    ready = np.where(held & (target == old), ready_old, np.where(start, t + wait, t))
    flagged = np.zeros(n_envs * n_tasks, dtype=bool)
    flagged[slot[start]] = True
    measured = np.zeros(n_envs * n_tasks)
    measured[slot[start]] = restart[start]
    # When each task's target serves, where that is still to come (a restart started now or
    # earlier); the old share a task serves on goes on serving until then.
    coming = held & (ready > t + _EPS)
    task_ready = np.full(n_envs * n_tasks, np.inf)
    task_ready[slot[coming]] = ready[coming]
    had = old >= 0
    old_slot = base + np.where(had, old, 0)
    serving = had & (ready_old <= t + _EPS) & (target != old)
    bridge = serving & np.isfinite(task_ready[old_slot])
    new = np.where(held, target, np.where(bridge, old, ABSENT))
    ready = np.where(bridge, ready_old, ready)
    retire = np.where(bridge, task_ready[old_slot], np.inf)
    bridged = np.zeros(n_envs * n_tasks, dtype=bool)
    bridged[old_slot[bridge]] = True
    down = np.where(start & ~bridged[slot], ready - t, 0.0)
    downtime = np.cumsum(down, axis=1)[:, -1]
    flagged, measured = flagged.reshape(n_envs, n_tasks), measured.reshape(n_envs, n_tasks)
    return new, Reconfiguration(ready, flagged, measured, downtime, measured), retire


__all__ = ["RULES", "Reconfiguration", "cell_base", "reconfigure", "switch_shares"]

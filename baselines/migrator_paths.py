"""MIGRator's planner, the exact part: the window's joint inference options, Eq. 10-11's
transitions between them, the exact Viterbi that solves one retraining plan, and the path
bounds that price a plan without solving it (used by the branch and bound of
:mod:`edgegym.baselines.migrator_plan`, whose docstring describes the search as a whole).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from edgegym.baselines.migrator_plan import PlanProblem

NEG = -1e18
#: Stretches between two switches up to this many steps long are chained exactly
#: (:meth:`_PathBounds.chain`).
SHORT = 8


@dataclass(frozen=True)
class _OptionTables:
    """The window's joint inference options and the bound tables over them.

    Attributes:
        joint: (J, M) the distinct joint inference options of the signatures.
        sig_at: (O, J) the signature of retraining occupancy o and joint option j (-1: none).
        occ_lookup: Retraining occupancy key -> its row o (-1: no signature has it); the key of
            sizes ``z_i`` (-1: none) is ``sum_i (z_i + 1) occ_base^i`` (:meth:`occupancy`).
        gain: (F, J, T) accuracy-weighted served requests per accuracy flag vector f (bit i:
            tenant i at post accuracy), joint option and step.
        best: (O, F, T) the upper bound of a step's gain over the options allowed under each
            occupancy (step 0 less the switch from the option held before the window).
    """

    joint: np.ndarray
    sig_at: np.ndarray
    occ_lookup: np.ndarray
    occ_base: int
    gain: np.ndarray
    best: np.ndarray
    occ: np.ndarray  # (O, M) the retraining size of each occupancy row per tenant (-1: none)

    def occupancy(self, sizes: np.ndarray) -> np.ndarray:
        """(...,) occupancy row of retraining sizes (..., M) (-1: the tenant runs no job), -1
        where no signature has that occupancy."""
        powers = self.occ_base ** np.arange(sizes.shape[-1])
        return self.occ_lookup[((sizes + 1) * powers).sum(axis=-1)]


def _option_tables(p: PlanProblem, served: np.ndarray, loss: np.ndarray) -> _OptionTables:
    m = p.shape[0]
    n_sig = p.sig_u.shape[0]
    # Joint inference options and the retraining occupancy of each signature.
    joint, j_of = np.unique(p.sig_u, axis=0, return_inverse=True)
    j_of = j_of.ravel()
    occ, o_of = np.unique(p.sig_r, axis=0, return_inverse=True)
    o_of = o_of.ravel()
    n_j, n_o = len(joint), len(occ)
    sig_at = np.full((n_o, n_j), -1, dtype=np.int64)
    sig_at[o_of, j_of] = np.arange(n_sig)
    # Served requests per joint option and tenant: (J, M, T).
    sj = np.stack([served[i][joint[:, i]] for i in range(m)], axis=1)
    # Upper bound tables: best[o, f, t] over options allowed under occupancy o, with flag
    # vector f (bit i: tenant i at post accuracy).
    flags = np.array([[(f >> i) & 1 for i in range(m)] for f in range(2**m)], dtype=bool)
    acc_f = np.where(flags, p.post[None, :], p.pre[None, :])  # (F, M)
    gain = np.einsum("fm,jmt->fjt", acc_f, sj)  # (F, J, T)
    allowed = sig_at >= 0  # (O, J)
    # Step 0 pays the switch from the option held before the window (every plan does).
    entry = np.zeros((len(acc_f), n_j))
    for i in range(m):
        prev = p.prev_u[i]
        if prev >= 0:
            u = joint[:, i]
            entry += acc_f[:, i : i + 1] * np.where(u != prev, loss[i, 0, prev, u], 0.0)[None]
    bound_gain = gain.copy()
    bound_gain[:, :, 0] -= entry
    best = np.where(allowed[:, None, :, None], bound_gain[None], NEG).max(axis=2)  # (O, F, T)
    base = p.dur.shape[1] + 1
    occ_lookup = np.full(base**m, -1, dtype=np.int64)
    occ_lookup[((occ + 1) * base ** np.arange(m)).sum(axis=1)] = np.arange(n_o)
    return _OptionTables(joint, sig_at, occ_lookup, base, gain, best, occ)


def _segments(
    p: PlanProblem, start: np.ndarray, end: np.ndarray, size: np.ndarray, tab: _OptionTables
) -> tuple[np.ndarray, np.ndarray]:
    """Every plan's stretches between the starts and ends of its jobs.

    Returns:
        (2M + 2, P) the sorted stretch boundaries of each plan (stretch k is
        ``[cut[k], cut[k + 1])``, empty where they are equal), and per stretch and plan
        (2M + 1, P) its combination ``o * F + f`` of retraining occupancy row o and completion
        flags f (bit i: tenant i at post accuracy; -1: no signature has the occupancy).
    """
    m, t_n = p.shape
    n_p = start.shape[1]
    n_f = tab.best.shape[1]
    cut = np.concatenate(
        [np.zeros((1, n_p), dtype=np.int64), np.maximum(start, 0), np.maximum(end, 0),
         np.full((1, n_p), t_n, dtype=np.int64)]
    )  # fmt: skip
    cut = np.sort(np.minimum(cut, t_n).astype(np.int32), axis=0)  # (2M + 2, P)
    key = np.empty((len(cut) - 1, n_p), dtype=np.int32)
    bits = (1 << np.arange(m))[:, None]
    sizes = size.astype(np.int32)
    for k, a in enumerate(cut[:-1]):
        running = (a >= start) & (a < end) & (start >= 0)
        done = np.where(p.pending[:, None], (end >= 0) & (a >= end), True)
        o = tab.occupancy(np.where(running, sizes, -1).T)
        key[k] = np.where(o >= 0, o * n_f + (done * bits).sum(axis=0), -1)
    return cut, key


def _slack(x: np.ndarray) -> np.ndarray:
    """Room for rounding added to a path bound: its sums run in another order than the exact
    Viterbi's, so a bound that is tight could otherwise come out below the value it bounds."""
    return 1e-9 + 1e-12 * np.abs(x)


@dataclass(frozen=True)
class _PathBounds:
    """Bounds on the paths inside a stretch ``[a, b)`` under each combination c of retraining
    occupancy and completion flags, for every ``a < b``, from two Viterbi passes over the whole
    window per combination (the exact value of every stretch would take one pass per start).

    Forward, under c's tables: ``fwd[c, t, j]`` is the best path over ``[0, t]`` ending at j
    (the switch from the option held before the window included) and ``into[c, t, j]`` the
    best path over ``[0, t)`` followed by a switch into j at step t. A path over ``[a, b)``
    from j to j' extends such a prefix to a path over ``[0, b)`` ending at j', so it is worth
    at most ``fwd[c, b - 1, j'] - into[c, a, j]`` (exactly ``fwd[c, b - 1, j']`` at best where
    a = 0). Backward, by symmetry: ``bwd[c, t, j]`` is the best path over ``[t, T)`` starting
    at j and ``onto[c, t, j]`` a switch at step t out of j followed by the best path over
    ``[t, T)``; the path is worth at most ``bwd[c, a, j] - onto[c, b, j]`` (at best
    ``bwd[c, a, j]`` where b = T).

    Both bounds are separable in the path's first and last option, so a retraining plan's
    stretches chain through the real switches between them in a few Viterbi steps
    (:meth:`chain`); the scalar form (:meth:`bound`) drops those switches and bounds every plan
    at once.

    Attributes:
        row: (O * F,) the row c of occupancy o and flags f at ``o * F + f`` (-1: not needed).
        allowed: (C, J) the options each combination allows.
        fwd, into, bwd, onto: (C, T, J) (``into[:, 0]`` and ``onto[:, 0]`` unused).
        fwd_best, into_low, bwd_best, onto_low: ``max_j fwd[c, t - 1]``, ``min_j into[c, t]``,
            ``max_j bwd[c, t]``, ``min_j onto[c, t]`` over allowed j (0 where the stretch
            reaches the window's edge: ``into_low[c, 0]``, ``onto_low[c, T]``), flat, at
            ``(o * F + f) * (T + 1) + t`` (rows no stretch needs are 0).
        idle, done: the combinations ``o * F + f`` before any job starts and after every job
            ends (-1: none).
        first_pair: at ``(o * F + f) * (T + 1) + t``, the best path over ``[0, t)`` under
            ``idle`` followed by the switch at t into a path over ``[t, T)`` under the
            combination (the backward bound of a stretch from t that follows the idle one:
            ``first_pair - onto_low`` at its end); ``first_pair_ok``: the combinations whose
            flags are idle's (the switch priced with them).
        last_pair: at ``(o * F + f) * (T + 1) + t``, the best path over ``[0, t)`` under the
            combination followed by the switch at t into the best path over ``[t, T)`` under
            ``done`` (the forward bound of a stretch ending at t: ``last_pair - into_low`` at
            its start).
    """

    row: np.ndarray
    allowed: np.ndarray
    fwd: np.ndarray
    into: np.ndarray
    bwd: np.ndarray
    onto: np.ndarray
    fwd_best: np.ndarray
    into_low: np.ndarray
    bwd_best: np.ndarray
    onto_low: np.ndarray
    idle: int = -1
    done: int = -1
    gain: np.ndarray | None = None  # (F, T, J) the gain of every option per flags and step
    gain_cum: np.ndarray | None = None  # (F, T + 1, J) its sums over steps [0, t)
    first_pair: np.ndarray | None = None
    first_pair_ok: np.ndarray | None = None
    last_pair: np.ndarray | None = None

    def bound(self, row: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Bound of the best path over ``[a, b)`` under the combination ``row // (T + 1)``
        (arrays of one shape), the switches into and out of the stretch free."""
        fwd = self.fwd_best[row + b] - self.into_low[row + a]
        bwd = self.bwd_best[row + a] - self.onto_low[row + b]
        out = np.minimum(fwd, bwd)
        return out + _slack(out)

    def chain(
        self,
        trans: _TransitionCache,
        cut: np.ndarray,
        row: np.ndarray,
        flag: np.ndarray,
        lower: bool = True,
    ) -> tuple[np.ndarray, np.ndarray]:
        """Bounds from above and from below of B plans with stretches ``[cut[k], cut[k + 1])``
        under combinations ``row[k]`` (-1: none) and flags ``flag[k]`` ((S + 1, B), (S, B),
        (S, B)): a Viterbi over the stretch boundaries, each switch between stretches priced
        exactly. From above, each stretch takes the smaller of its two separable bounds, or
        its exact Viterbi where it is at most ``SHORT`` steps long; from below (the value of a
        path the plan can follow), a long stretch stays on the option it is entered with.

        Returns:
            (B,) and (B,): each plan's upper and lower bound (NEG without ``lower``).
        """
        assert self.gain is not None and self.gain_cum is not None
        t_n = self.fwd.shape[1]
        n_b = cut.shape[1]
        rows = np.arange(n_b)
        v = np.full((n_b, self.fwd.shape[2]), NEG)
        lv = v.copy()
        out = np.full(n_b, NEG)
        low = np.full(n_b, NEG)
        for k in range(len(cut) - 1):
            a, b, c = cut[k], cut[k + 1], row[k]
            live = b > a
            if not live.any():
                continue
            ok = self.allowed[c]
            first = live & (a == 0)
            if first.any():
                v[first] = self.fwd[c[first], b[first] - 1]
                lv[first] = v[first]
            inner = live & (a > 0)
            if inner.any():
                i = rows[inner]
                ai, bi, ci, fi, oki = a[i], b[i], c[i], flag[k, i], ok[i]
                u = np.where(oki, trans.best_into_at(v[i], ai, fi), NEG)
                lu = np.where(oki, trans.best_into_at(lv[i], ai, fi), NEG) if lower else u
                last = bi == t_n
                head = (u + self.bwd[ci, ai]).max(axis=1)
                end = np.minimum(bi, t_n - 1)
                fwd = (u - np.where(oki, self.into[ci, ai], 0.0)).max(axis=1)[:, None]
                fwd = fwd + self.fwd[ci, bi - 1]
                bwd = head[:, None] - self.onto[ci, end]
                nxt = np.where(oki, np.minimum(fwd, bwd), NEG)
                stay = self.gain_cum[fi, bi] - self.gain_cum[fi, ai]
                lnxt = np.where(oki, lu + stay, NEG)
                short = np.flatnonzero(~last & (bi - ai <= SHORT))
                if len(short):  # a short stretch step by step: exact, and cheap
                    sa, sb, sc, sf, so = ai[short], bi[short], ci[short], fi[short], oki[short]
                    nxt[short] = self._steps(trans, u[short], sa, sb, sc, sf, so)
                    if lower:
                        lnxt[short] = self._steps(trans, lu[short], sa, sb, sc, sf, so)
                v[i] = np.where(last[:, None], v[i], nxt)
                lv[i] = np.where(last[:, None], lv[i], lnxt)
                out[i] = np.where(last, head, out[i])
                low[i] = np.where(last, (lu + self.bwd[ci, ai]).max(axis=1), low[i])
            ends = live & (b == t_n) & (a == 0)
            out = np.where(ends, v.max(axis=1), out)
            low = np.where(ends, lv.max(axis=1), low)
        bad = np.any((cut[1:] > cut[:-1]) & (row < 0), axis=0)  # a stretch nothing allows
        out, low = np.where(bad, NEG, out), np.where(bad | (not lower), NEG, low)
        return np.maximum(out + _slack(out), NEG), np.maximum(low - _slack(low), NEG)

    def _steps(
        self,
        trans: _TransitionCache,
        u: np.ndarray,
        a: np.ndarray,
        b: np.ndarray,
        c: np.ndarray,
        flag: np.ndarray,
        ok: np.ndarray,
    ) -> np.ndarray:
        """(B, J) the best path over ``[a, b)`` under combinations c ending at each option,
        entered with values ``u`` at step a (the exact Viterbi of the stretch)."""
        assert self.gain is not None
        v = np.where(ok, u + self.gain[flag, a], NEG)
        for d in range(1, int((b - a).max())):
            go = np.flatnonzero(a + d < b)
            t = a[go] + d
            w = trans.best_into_at(v[go], t, flag[go])
            v[go] = np.where(ok[go], w + self.gain[flag[go], t], NEG)
        return v


def _mid_values(
    p: PlanProblem,
    tab: _OptionTables,
    trans: _TransitionCache,
    paths: _PathBounds,
    cut: np.ndarray,
    key: np.ndarray,
) -> np.ndarray:
    """(B,) exact value of B plans (stretches ``cut``, ``key`` as :func:`_segments` gives
    them), step by step only between their first and last switch of stretch: the first stretch
    starts at step 0, so the forward pass of its combination is that plan's own best path up
    to its end (``paths.fwd``), and the last ends at T, where the backward pass of its
    combination is its own best path onward (``paths.bwd``). The same Viterbi as
    :func:`_viterbi` (every step its own stretch), its sums in another order."""
    t_n = p.shape[1]
    n_f = tab.best.shape[1]
    n_b = cut.shape[1]
    rows = np.arange(n_b)
    live = cut[1:] > cut[:-1]  # (S, B)
    inner = (cut > 0) & (cut < t_n)
    first = np.where(inner.any(axis=0), np.where(inner, cut, t_n).min(axis=0), t_n)
    last = np.where(inner.any(axis=0), np.where(inner, cut, 0).max(axis=0), t_n)
    k_first = np.argmax(live, axis=0)  # the stretch from 0
    k_last = len(live) - 1 - np.argmax(live[::-1], axis=0)  # the stretch to T
    c_first = paths.row[np.maximum(key[k_first, rows], 0)]
    c_last = paths.row[np.maximum(key[k_last, rows], 0)]
    out = paths.fwd_best.reshape(-1, t_n + 1)[np.maximum(key[k_first, rows], 0), t_n].copy()
    todo = first < t_n
    if not todo.any():
        return out
    gain = tab.gain  # (F, J, T)
    allowed = tab.sig_at >= 0  # (O, J)
    n_keys = len(paths.row) + 1  # combination keys, -1 shifted to 0
    # Plans that share their stretches so far share their values: one row per group.
    grp = np.full(n_b, -1)  # each plan's group (-1: not started or finished)
    gv = np.zeros((0, gain.shape[1]))  # each group's values
    for t in range(int(first[todo].min()), int(last[todo].max()) + 1):
        k = (cut[1:-1] <= t).sum(axis=0)  # the stretch holding step t
        c = key[k, rows]
        start = todo & (first == t)
        act = (grp >= 0) | start
        parent = np.where(start, len(gv) + c_first, grp)  # a starter's values: its pass
        ids, inv = np.unique(parent[act] * n_keys + c[act] + 1, return_inverse=True)
        g_parent, g_c = ids // n_keys, ids % n_keys - 1
        g_f = np.where(g_c >= 0, g_c % n_f, 0)
        src = np.concatenate([gv, paths.fwd[:, t - 1]]) if start.any() else gv
        u = trans.best_into(src[g_parent], t, g_f)
        new = np.full(n_b, -1)
        new[act] = inv.ravel()
        end = todo & (last == t)
        if end.any():
            out[end] = (u[new[end]] + paths.bwd[c_last[end], t]).max(axis=1)
        ok = allowed[np.maximum(g_c, 0) // n_f] & (g_c >= 0)[:, None]
        gv = np.where(ok, u + gain[g_f, :, t], NEG)
        grp = np.where(end, -1, new)
    return np.maximum(out, NEG)


def _path_bounds(
    p: PlanProblem,
    tab: _OptionTables,
    trans: _TransitionCache,
    loss: np.ndarray,
    cut: np.ndarray | None = None,
    key: np.ndarray | None = None,
    keys: np.ndarray | None = None,
) -> _PathBounds | None:
    """The forward and backward passes of :class:`_PathBounds` for the combinations ``keys``
    (``o * F + f``), or every combination some stretch of plans ``cut``, ``key``
    (:func:`_segments`) needs, all side by side (None: none)."""
    m, t_n = p.shape
    n_o, n_f = tab.best.shape[:2]
    if keys is None:
        present = np.zeros(n_o * n_f + 1, dtype=bool)
        present[np.where(cut[1:] > cut[:-1], key, -1)] = True  # -1: the spare last entry
        keys = np.flatnonzero(present[:-1])
    if not len(keys):
        return None
    row = np.full(n_o * n_f, -1, dtype=np.int64)
    row[keys] = np.arange(len(keys))
    c_o, c_f = keys // n_f, keys % n_f
    allowed = tab.sig_at[c_o] >= 0  # (C, J)
    gain = np.where(allowed[:, :, None], tab.gain[c_f], NEG)  # (C, J, T)
    n_c, n_j = len(keys), tab.joint.shape[0]
    accs = np.where((c_f[:, None] >> np.arange(m)) & 1 == 1, p.post, p.pre)  # (C, M)
    entry = np.zeros((n_c, n_j))
    for i in range(m):
        prev = p.prev_u[i]
        if prev >= 0:
            u = tab.joint[:, i]
            entry += accs[:, i, None] * np.where(u != prev, loss[i, 0, prev, u], 0.0)[None]
    big = np.where(allowed, 0.0, -NEG)[:, None, :]  # options not allowed never give the least
    fwd = np.empty((n_c, t_n, n_j))
    into = np.zeros((n_c, t_n, n_j))
    fwd[:, 0] = gain[:, :, 0] - entry
    for t in range(1, t_n):
        into[:, t] = trans.best_into(fwd[:, t - 1], t, c_f)
        fwd[:, t] = into[:, t] + gain[:, :, t]
    bwd = np.empty((n_c, t_n, n_j))
    onto = np.zeros((n_c, t_n, n_j))
    bwd[:, t_n - 1] = gain[:, :, t_n - 1]
    for t in range(t_n - 1, 0, -1):
        onto[:, t] = trans.best_onward(bwd[:, t], t, c_f)
        bwd[:, t - 1] = onto[:, t] + gain[:, :, t - 1]
    flat = np.zeros((4, n_o * n_f, t_n + 1))  # fwd_best, into_low, bwd_best, onto_low
    flat[0, keys, 1:] = fwd.max(axis=2)
    flat[1, keys, 1:t_n] = (into + big).min(axis=2)[:, 1:]
    flat[2, keys, :t_n] = bwd.max(axis=2)
    flat[3, keys, 1:t_n] = (onto + big).min(axis=2)[:, 1:]
    flat = flat.reshape(4, -1)
    pairs = {}
    o_idle = int(tab.occupancy(np.full(m, -1))[()])
    f_idle = int(sum(1 << i for i in range(m) if not p.pending[i]))
    idle, done = o_idle * n_f + f_idle, o_idle * n_f + n_f - 1
    if o_idle >= 0 and row[idle] >= 0 and row[done] >= 0:
        neg = np.where(allowed, 0.0, NEG)[:, None, :]  # (C, 1, J)
        first = np.zeros((n_o * n_f, t_n + 1))
        first[keys, 1:t_n] = (into[row[idle], None, 1:] + bwd[:, 1:] + neg).max(axis=2)
        last = np.zeros((n_o * n_f, t_n + 1))
        last[keys, 1:t_n] = (fwd[:, :-1] + onto[row[done], None, 1:] + neg).max(axis=2)
        ok = np.zeros(n_o * n_f, dtype=bool)
        ok[keys] = c_f == f_idle
        pairs = {"idle": idle, "done": done, "first_pair": first.reshape(-1),
                 "first_pair_ok": ok, "last_pair": last.reshape(-1)}  # fmt: skip
    gain_ftj = np.ascontiguousarray(tab.gain.transpose(0, 2, 1))
    cum = np.concatenate([np.zeros((n_f, 1, n_j)), np.cumsum(gain_ftj, axis=1)], axis=1)
    return _PathBounds(
        row, allowed, fwd, into, bwd, onto, *flat, **pairs, gain=gain_ftj, gain_cum=cum
    )


def change_classes(p: PlanProblem, loss: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The class of every inference option and the entry loss ``l[i, t, u]``, when the
    problem's switch losses have Eq. 11's shape: options fall into classes (a switch inside a
    class is free) and ``loss[i, t, u', u]`` is ``l[i, t, u]`` whenever ``u'``'s class differs
    from ``u``'s, whatever ``u'`` is (checked exactly, over the options the signatures use and
    the one held before step 0).

    Returns:
        (M, U) class index per tenant and option and (M, T, U) the loss of entering option u
        from another class at step t; ``None`` where the loss depends on the option left (the
        ``per-instance`` rule).
    """
    m, t_n = p.shape
    n_u = p.added.shape[1]
    cls = np.zeros((m, n_u), dtype=np.int64)
    enter = np.zeros((m, t_n, n_u))
    for i in range(m):
        # The options the signatures use and the one held before step 0 (a switch from it
        # can be free, so it joins a class like any other).
        held = p.sig_u[:, i] if p.prev_u[i] < 0 else np.append(p.sig_u[:, i], p.prev_u[i])
        used = np.unique(held)
        free = (p.added[i] == 0) & (p.added[i].T == 0)  # switching costs nothing either way
        label = np.arange(n_u)  # an option no signature uses keeps a class of its own
        for u in used:  # classes: connected components of the free switches
            for w in used[free[u, used]]:
                a, b = label[u], label[w]
                if a != b:
                    label[label == max(a, b)] = min(a, b)
        cls[i] = np.unique(label, return_inverse=True)[1]
        differ = cls[i][:, None] != cls[i][None, :]  # (u', u)
        enter[i] = np.where(differ[None], loss[i], 0.0).max(axis=1)
        expected = np.where(differ[None], enter[i][:, None, :], 0.0)
        if not np.array_equal(loss[i][:, used][:, :, used], expected[:, used][:, :, used]):
            return None
    return cls, enter


class _TransitionCache:
    """The Viterbi step over joint options: the best predecessor value of every option
    (``max over j' of v[j'] - cost(j', j)``, with ``cost`` the tenants' accuracy-weighted
    switch losses), and the predecessor itself for the backtrack.

    Under Eq. 11's shape (:func:`change_classes`) a tenant's cost depends only on whether its
    class changes, so the step needs no (J, J) table: for every set S of tenants that keep
    their class, the best ``v`` over the options that agree with j on S's classes (one grouped
    maximum) less the loss of the tenants outside S; the best over the sets is the exact
    maximum, bit for bit the dense one's (costs only grow when a set is taken smaller than the
    exact one, and floating-point sums of non-negative terms are monotone). Other cost rules
    take the dense (J, J) table, built per loss table and completion state when first needed.
    """

    def __init__(self, p: PlanProblem, loss: np.ndarray, joint: np.ndarray) -> None:
        self.loss = loss  # (M, T, U, U)
        self.joint = joint  # (J, M)
        t_n = loss.shape[1]
        same = np.all(loss[:, 1:] == loss[:, :-1], axis=(0, 2, 3))
        idx = np.arange(t_n)
        # key[t]: the first step of t's run of identical loss tables.
        self.key = np.maximum.accumulate(np.where(np.r_[True, ~same], idx, 0))
        self.cache: dict[int, np.ndarray] = {}
        self.weighted: dict[tuple[int, int], np.ndarray] = {}
        self.pre, self.post = p.pre, p.post
        classes = change_classes(p, loss)
        self.enter = None if classes is None else classes[1]
        if classes is not None:
            self._groups(classes[0])
            self._every_table()

    def _every_table(self) -> None:
        """:meth:`weighted_at` of every step and completion state at once (the same sums, in
        the same order): ``every[pos[key[t]], flag]``."""
        keys = np.unique(self.key)
        self.every_pos = np.zeros(int(self.key.max()) + 1, dtype=np.int64)
        self.every_pos[keys] = np.arange(len(keys))
        n_flags = len(self.keep)
        acc = np.stack([self.acc(f) for f in range(n_flags)])  # (F, M)
        out = np.zeros((len(keys), n_flags, *self.group.shape))
        for i in range(self.joint.shape[1]):
            term = acc[None, :, i, None] * self.enter[i][keys][:, self.joint[:, i]][:, None, :]
            out = out + np.where(self.keep[None, None, :, i, None], 0.0, term[:, :, None, :])
        self.every = np.ascontiguousarray(out)

    def _groups(self, cls: np.ndarray) -> None:
        """Per set S of tenants keeping their class (bit i: tenant i): the options grouped by
        their classes on S, laid end to end (``order``, ``starts``), and each option's group
        (``group``: (2^M, J) into the concatenated groups)."""
        n_j, m = self.joint.shape
        self.keep = np.array([[(s >> i) & 1 for i in range(m)] for s in range(2**m)], dtype=bool)
        order, starts, group = [], [], []
        n_groups = 0
        for s, keep in enumerate(self.keep):
            key = np.stack([cls[i, self.joint[:, i]] for i in range(m) if keep[i]] or
                           [np.zeros(n_j, dtype=np.int64)], axis=1)  # fmt: skip
            gid = np.unique(key, axis=0, return_inverse=True)[1].ravel()
            perm = np.argsort(gid, kind="stable")
            first = np.flatnonzero(np.r_[True, gid[perm][1:] != gid[perm][:-1]])
            order.append(perm)
            starts.append(first + s * n_j)
            group.append(gid + n_groups)
            n_groups += len(first)
        self.order = np.concatenate(order)
        self.flat_order = self.order + np.repeat(np.arange(len(self.keep)) * n_j, n_j)
        self.starts = np.concatenate(starts)
        self.group = np.stack(group)
        # The same groups as padded member tables, one per set S: (K_S, groups of S) option
        # indices, short groups padded with their first member (a maximum is unchanged by
        # repeats). A grouped maximum then reads K_S contiguous rows of the transposed values.
        ends = np.r_[self.starts[1:], len(self.order)]
        self.padded: list[tuple[np.ndarray, np.ndarray]] = []
        for s in range(len(self.keep)):
            gi = np.flatnonzero((self.starts >= s * n_j) & (self.starts < (s + 1) * n_j))
            sizes = ends[gi] - self.starts[gi]
            pad = np.empty((int(sizes.max()), len(gi)), dtype=np.int64)
            for c, g in enumerate(gi):
                members = self.order[self.starts[g] : ends[g]]
                pad[:, c] = members[0]
                pad[: len(members), c] = members
            self.padded.append((gi, pad))

    def at(self, t: int) -> np.ndarray:
        """(M, J, J) costs of switching at step ``t``."""
        key = int(self.key[t])
        out = self.cache.get(key)
        if out is None:
            m = self.joint.shape[1]
            out = np.stack(
                [self.loss[i, key][self.joint[:, i]][:, self.joint[:, i]] for i in range(m)]
            )
            self.cache[key] = out
        return out

    def acc(self, flag: int) -> np.ndarray:
        """(M,) the tenants' accuracies in completion state ``flag`` (bit i: tenant i at post
        accuracy)."""
        return np.where((flag >> np.arange(len(self.post))) & 1 == 1, self.post, self.pre)

    def weighted_at(self, t: int, flag: int) -> np.ndarray:
        """``sum_i acc[i] * cost_i`` of switching at step ``t`` in completion state ``flag``:
        (J, J) from j' to j, or under Eq. 11's shape (2^M, J) the cost of entering j for the
        tenants outside each set S."""
        ck = (int(self.key[t]), int(flag))
        if self.enter is not None:
            return self.every[self.every_pos[ck[0]], ck[1]]
        out = self.weighted.get(ck)
        if out is None:
            acc = self.acc(flag)
            tr = self.at(t)
            out = acc[0] * tr[0]
            for i in range(1, tr.shape[0]):
                out = out + acc[i] * tr[i]
            self.weighted[ck] = out
        return out

    def best_into(self, v: np.ndarray, t: int, flags: np.ndarray) -> np.ndarray:
        """(B, J) ``max over j' of v[b, j'] - cost(j', j)`` for a switch at step ``t`` of B
        plans in completion states ``flags`` (B,)."""
        if self.enter is None:
            return np.stack(
                [(v[b][:, None] - self.weighted_at(t, f)).max(axis=0) for b, f in enumerate(flags)]
            )
        w = self._tables(t, flags)
        return self._grouped(v, lambda s: w[:, s])

    def _grouped(self, v: np.ndarray, w: Callable[[int], np.ndarray]) -> np.ndarray:
        """``max over S of (the best v among the options that agree with j on S's classes)
        - w(S)[:, j]``: (B, J) from values (B, J) and the costs (B, J) of each set S.

        Worked on the transposed values, so that every grouped maximum and every term is an
        elementwise operation over B contiguous plans; the same maxima and differences as
        the direct form, so bit for bit its result."""
        n_b = len(v)
        vt = np.ascontiguousarray(v.T)  # (J, B)
        best = np.empty((len(self.starts), n_b))  # (groups, B)
        for gi, pad in self.padded:
            if pad.shape[1] == 1:  # one group: every option
                best[gi[0]] = vt.max(axis=0)
            else:
                members = np.take(vt, pad.ravel(), axis=0).reshape(*pad.shape, n_b)
                best[gi] = members.max(axis=0)
        out = None
        for s in range(self.group.shape[0]):
            x = np.take(best, self.group[s], axis=0)  # (J, B)
            x -= w(s).T
            if out is None:
                out = x
            else:
                np.maximum(out, x, out=out)
        return out.T

    def best_into_at(self, v: np.ndarray, t: np.ndarray, flags: np.ndarray) -> np.ndarray:
        """:meth:`best_into` with a step per row (``t``, ``flags``: (B,))."""
        if self.enter is None:
            return np.stack(
                [(v[b][:, None] - self.weighted_at(int(t[b]), f)).max(axis=0)
                 for b, f in enumerate(flags)]
            )  # fmt: skip
        n_s, n_j = self.group.shape
        rows = (self.every_pos[self.key[t]] * self.every.shape[1] + flags) * n_s
        table = self.every.reshape(-1, n_j)  # row (pos * F + flag) * 2^M + S
        return self._grouped(v, lambda s: np.take(table, rows + s, axis=0))

    def best_onward(self, v: np.ndarray, t: int, flags: np.ndarray) -> np.ndarray:
        """(B, J) ``max over j' of v[b, j'] - cost(j, j')`` for a switch at step ``t`` out of
        every option j (the backward step; the same grouping as :meth:`best_into`, with the
        cost of entering j' taken before the grouped maximum)."""
        if self.enter is None:
            return np.stack(
                [(v[b][None, :] - self.weighted_at(t, f)).max(axis=1) for b, f in enumerate(flags)]
            )
        n_s, n_j = self.group.shape
        x = (v[:, None, :] - self._tables(t, flags)).reshape(len(v), n_s * n_j)
        best = np.maximum.reduceat(np.take(x, self.flat_order, axis=1), self.starts, axis=1)
        y = np.take(best, self.group.ravel(), axis=1).reshape(len(v), n_s, n_j)
        out = y[:, 0].copy()
        for s in range(1, n_s):
            np.maximum(out, y[:, s], out=out)
        return out

    def _tables(self, t: int, flags: np.ndarray) -> np.ndarray:
        """(B, 2^M, J) the table of :meth:`weighted_at` per completion state in ``flags``."""
        return self.every[self.every_pos[self.key[t]]][flags]

    def best_from(self, v: np.ndarray, t: int, flag: int, j: int) -> int:
        """The predecessor of option ``j`` at step ``t`` (the first maximiser, as the dense
        table's ``argmax`` picks it)."""
        key = int(self.key[t])
        acc = self.acc(flag)
        m = self.joint.shape[1]
        w = acc[0] * self.loss[0, key, self.joint[:, 0], self.joint[j, 0]]
        for i in range(1, m):
            w = w + acc[i] * self.loss[i, key, self.joint[:, i], self.joint[j, i]]
        return int(np.argmax(v - w))


def _table_breaks(p: PlanProblem, served: np.ndarray, loss: np.ndarray) -> np.ndarray:
    """(T,) bool: step t starts a new stretch of identical tables (always True at 0).

    Inside a stretch where gains and transition costs do not change, a path that stays on one
    option is optimal whenever the costs satisfy the triangle inequality (any detour can be
    replaced by its best option, entered and left directly, at no greater cost). The inequality
    is checked on each stretch's loss table, and it can fail: Eq. 10's cost (what the whole new
    option would serve during Psi, charged only when the instance or GPC count changes) breaks
    it wherever a dear option is entered through a cheaper one of its class (a switch to an
    option with the same counts is free). Inside a stretch whose table violates it every step
    is its own stretch, so the path stays exact.
    """
    t_n = p.shape[1]
    brk = np.ones(t_n, dtype=bool)
    if t_n < 2:
        return brk
    same = (
        np.all(served[:, :, 1:] == served[:, :, :-1], axis=(0, 1))
        & np.all(loss[:, 1:] == loss[:, :-1], axis=(0, 2, 3))
        & (p.dt[1:] == p.dt[:-1])
    )
    brk[1:] = ~same
    starts = np.flatnonzero(brk)
    ends = np.append(starts[1:], t_n)
    for a, b in zip(starts, ends, strict=True):
        lt = loss[:, a]  # (M, U, U)
        diag = np.all(np.abs(np.einsum("mii->mi", lt)) < 1e-12)
        tri = np.all(lt[:, :, None, :] <= lt[:, :, :, None] + lt[:, None, :, :] + 1e-9)
        if not (tri and diag):
            brk[a:b] = True
    return brk


def _viterbi(
    p: PlanProblem,
    start: np.ndarray,
    end: np.ndarray,
    size: np.ndarray,
    gain_cum: np.ndarray,
    trans: _TransitionCache,
    loss: np.ndarray,
    tab: _OptionTables,
    breaks: np.ndarray,
) -> list[tuple[float, Callable[[], np.ndarray]]]:
    """Exact best sequence for each of B retraining plans (``start``, ``end``, ``size``: (M, B);
    a longest path over joint options): its value and the backtrack that returns it (called for
    the best plan only).

    The path may change option only where a stretch of identical tables starts (``breaks``)
    or where a retraining job starts or ends; see :func:`_table_breaks`. Several plans are
    solved together only where every step starts a stretch (their stretches are then the
    same), each with the operations it would get alone. ``trans`` caches the accuracy-weighted
    transition costs per loss table and completion state.
    """
    m, t_n = p.shape
    n_b = start.shape[1]
    brk = breaks.copy()
    if n_b > 1 and not brk.all():
        raise ValueError("plans are solved together only when every step starts a stretch")
    for t in (*start.ravel(), *end.ravel()):
        if 0 <= t < t_n:
            brk[t] = True
    seg = np.flatnonzero(brk)
    seg_end = np.append(seg[1:], t_n)
    n_j = gain_cum.shape[1]
    # Per plan and stretch: retraining occupancy, completion flags, accuracies and gains.
    s_, st, en = seg[None, :, None], start.T[:, None, :], end.T[:, None, :]
    running = (st <= s_) & (s_ < en)  # (B, S, M)
    done = np.where(p.pending, (en >= 0) & (s_ >= en), True)
    flags = (done * (1 << np.arange(m))).sum(axis=2)  # (B, S)
    accs = np.where(done, p.post, p.pre)  # (B, S, M)
    opts = tab.occupancy(np.where(running, size.T[:, None, :], -1))  # (B, S)
    sig_at, joint = tab.sig_at, tab.joint
    ok = (sig_at[np.maximum(opts, 0)] >= 0) & (opts >= 0)[..., None]  # (B, S, J)
    gains = np.where(ok, gain_cum[flags, :, seg_end] - gain_cum[flags, :, seg], NEG)
    a0 = int(seg[0])
    cost = np.zeros((n_b, n_j))
    for i in range(m):
        prev = p.prev_u[i]
        if prev >= 0:
            u = joint[:, i]
            cost += accs[:, 0, i, None] * np.where(u != prev, loss[i, a0, prev, u], 0.0)
    v = gains[:, 0] - cost
    values = [v]  # each stretch's values before the next switch, for the backtrack
    for k in range(1, len(seg)):
        v = trans.best_into(v, int(seg[k]), flags[:, k]) + gains[:, k]
        values.append(v)
    j_end = np.argmax(v, axis=1)

    def backtrack(b: int) -> np.ndarray:
        j = int(j_end[b])
        seq = np.zeros(t_n, dtype=np.int64)
        for k in range(len(seg) - 1, -1, -1):
            seq[seg[k] : seg_end[k]] = sig_at[opts[b, k], j]
            if k:
                j = trans.best_from(values[k - 1][b], int(seg[k]), int(flags[b, k]), j)
        return seq

    return [(float(v[b, j_end[b]]), functools.partial(backtrack, b)) for b in range(n_b)]

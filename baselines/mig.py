"""The MIGRator paper's comparison schedulers, mapped onto ``edgegym/MIGReconfig-v0``.

MIGRator (§5.1) compares against PARIS (static MIG partition by compute intensity), Ekya
(retraining-aware, reallocates only when a retraining starts or ends) and Astraea (per-second
SLO-driven partitioning that ignores retraining benefit). Ekya and Astraea are MPS systems in the
paper, so :func:`edgegym.evaluate` runs them there (their ``paper_setup``, :func:`mps_setup`):
on MPS shares of the GPU (scenario ``mps.shares``) with the MPS interference the paper blames
for part of their SLO loss on (``mps.interference``: co-located work slowed by the measured
``mps.*_slowdown``), MIGRator and PARIS on MIG instances without it. The policies themselves
do not model the interference (neither does the paper's Ekya or Astraea). ``static-half``
gives each tenant a fixed half of the GPU. All read ``env.unwrapped.sim_state()`` and return a
signature index.

Every rule reads the catalogue, so they run unchanged on MPS shares (scenario ``mps.shares``:
sizes and the GPU's unit count in shares instead of GPCs). Shared rule for the retraining
instance of the non-planning baselines: a pending job starts at
the window start on the smallest instance that holds it and finishes inside the window (the
retraining-unaware choice); Ekya instead picks the size by its accuracy estimate. PARIS and
static-half first make sure every tenant's inference holds an instance that meets its SLO (at
batch 4 a 1-GPC instance may not), deferring a retraining job until another one ends if the
GPU cannot host both.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from edgegym.baselines.base import Policy
from edgegym.hardware.migalloc import share_counts
from edgegym.scenarios import load, parse_value

PENDING, RUNNING, DONE = 0, 1, 2

#: Shares the MPS baselines divide the GPU into (scenario ``mps.shares``): half a GPC each, 7 SMs
#: of an A100's 98 under MIG (MPS itself takes any percentage of the SMs,
#: ``CUDA_MPS_ACTIVE_THREAD_PERCENTAGE``). A modelling choice; the MIGRator reproduction sweeps
#: it at 7 (one GPC, MIG's unit) and 21 (28 would give 27,405 signatures for two tenants, more
#: than the masks can key). Three or four tenants cannot have 14 (the environment cannot key
#: their allocations): :func:`mps_setup` gives them the most they can have, 13 and 8.
MPS_SHARES = 14


def setup_shares(n_tenants: int | None) -> int:
    """The MPS share count :func:`mps_setup` asks for with ``n_tenants`` tenants:
    :data:`MPS_SHARES` where the environment can build it (one or two tenants), else the
    largest count it can build (13 for three tenants, 8 for four;
    :func:`edgegym.hardware.migalloc.share_counts`); :data:`MPS_SHARES` when the count is
    unknown (the scenario's validation then names what is wrong)."""
    counts = share_counts(n_tenants) if isinstance(n_tenants, int) and n_tenants >= 1 else ()
    if not counts or MPS_SHARES in counts:
        return MPS_SHARES
    return max((u for u in counts if u < MPS_SHARES), default=counts[0])


def _tenant_count(scenario: str | None, given: Mapping[str, Any]) -> int | None:
    """Tenants of ``scenario`` with the overrides ``given`` (only ``tenants`` changes the
    count), or None where that is not a list of tenants (validation reports it)."""
    try:
        if "tenants" in given:
            tenants = parse_value(given["tenants"], "override 'tenants'")
        elif scenario is None:
            return None
        else:
            tenants = load(scenario)["tenants"]
    except Exception:  # a bad scenario or value: the environment's validation names it
        return None
    return len(tenants) if isinstance(tenants, list) else None


def mps_setup(given: Mapping[str, Any], scenario: str | None = None) -> dict[str, Any]:
    """Where MIGRator's paper runs its MPS-based baselines, Ekya and Astraea (§5.1): on MPS
    shares of the GPU (no pre-initialisation, which builds MIG instances) with MPS interference
    on, each unless ``given`` sets it (``mps.shares: 0`` puts them on MIG instances,
    ``mps.interference: false`` switches the interference off).

    The share count is :data:`MPS_SHARES` (fourteenths) for one or two tenants (every bundled
    scenario); three or four tenants, whose allocations the environment cannot key in
    fourteenths, get the largest count it can build for them: 13 for three tenants, 8 for four
    (:func:`setup_shares`, the tenants counted in ``scenario`` with ``given``)."""
    out: dict[str, Any] = {}
    if "mps.interference" not in given:
        out["mps.interference"] = True
    shares = MPS_SHARES
    if "mps.shares" not in given:
        shares = out["mps.shares"] = setup_shares(_tenant_count(scenario, given))
    try:  # a command line's --set value arrives as text
        on_shares = int(given.get("mps.shares", shares)) != 0
    except (TypeError, ValueError):
        on_shares = True  # the scenario's validation names the bad value
    if on_shares:
        out["preinit"] = False
    return out


class _OnMPS:
    """Mixin: the paper runs this baseline on MPS shares (:func:`mps_setup`)."""

    @classmethod
    def paper_setup(cls, scenario: str, given: Mapping[str, Any], **params: Any) -> dict[str, Any]:
        """MPS shares with MPS interference (:func:`mps_setup`)."""
        return mps_setup(given, scenario)


def _capacity(spec, n: np.ndarray) -> np.ndarray:
    """(len(n), M) SLO-feasible requests/s each signature gives each tenant's inference."""
    m = spec.n_tenants
    counts = spec.catalogue.counts[n][:, :m, :]  # (n, M, Z)
    return np.einsum("nmz,mz->nm", counts, spec.size_rate)


def _retrain_sizes(snap) -> np.ndarray:
    """(M,) GPC size of the smallest instance each pending job fits and finishes on (0: none)."""
    spec = snap.spec
    sizes = np.array(spec.catalogue.sizes)
    left_s = spec.window_s - (snap.time_s - snap.window * spec.window_s)
    m = spec.n_tenants
    fits = spec.fits_window(snap.job_left, left_s, snap.overhead_s[m:])  # (M, Z), the mask's
    out = np.zeros(spec.n_tenants, dtype=np.int64)
    for i in range(spec.n_tenants):
        if snap.status[i] == PENDING and fits[i].any():
            out[i] = sizes[np.argmax(fits[i])]
    return out


def _with_retraining(snap, sizes: np.ndarray) -> np.ndarray:
    """(N,) valid signatures whose retraining parts are exactly ``sizes`` (running jobs kept)."""
    spec = snap.spec
    cat = spec.catalogue
    m = spec.n_tenants
    ok = snap.mask.copy()
    for i in range(m):
        if snap.status[i] == RUNNING:
            continue  # the mask already pins it
        if sizes[i] > 0:
            z = list(cat.sizes).index(int(sizes[i]))
            ok &= (cat.n_instances[:, m + i] == 1) & (cat.counts[:, m + i, z] == 1)
        else:
            ok &= cat.n_instances[:, m + i] == 0
    if not ok.any():  # e.g. the preferred size cannot be hosted: let any retraining through
        ok = snap.mask.copy()
    return np.flatnonzero(ok)


def _serving_candidates(snap) -> np.ndarray:
    """Signatures with the smallest workable retraining instances in which every tenant's
    inference can serve requests within its SLO; if none exists, retraining jobs are deferred
    (highest tenant index first) until one does. Falls back to all such retraining choices."""
    spec = snap.spec
    sizes = _retrain_sizes(snap)
    pending = [i for i in range(spec.n_tenants) if sizes[i] > 0]
    first = _with_retraining(snap, sizes)
    for k in range(len(pending) + 1):
        trial = sizes.copy()
        for i in pending[len(pending) - k :]:
            trial[i] = 0
        cands = _with_retraining(snap, trial) if k else first
        ok = cands[np.all(_capacity(spec, cands) > 0, axis=1)]
        if ok.size:
            return ok
    return first


class _StaticTarget(Policy):
    """Reallocates only when a tenant's retraining status changes (or at a window start)."""

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        self._key: tuple | None = None
        self._choice = 0

    def reset(self, seed: int | None = None) -> None:
        """Forget the current choice."""
        self._key = None

    def choose(self, snap) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def act(self) -> np.ndarray:
        """Keep the allocation until a retraining starts or ends."""
        snap = self.unwrapped.sim_state()
        key = (snap.window, tuple(snap.status))
        if key != self._key or not snap.mask[self._choice]:
            self._choice = int(self.choose(snap))
            self._key = key
        return np.int64(self._choice)


class ParisPolicy(_StaticTarget):
    """PARIS: inference GPCs split in proportion to compute intensity (GFLOPs x mean rate).

    Static: the split is the same in every window and changes only when a retraining instance
    comes or goes (which PARIS does not value; the job gets the smallest instance that works):
    MIGRator §5.2, "Ekya and PARIS only conduct resource reconfiguration at i) the beginning of
    the retraining process and ii) the end of the retraining process".

    Args:
        env: A ``MIGReconfig`` environment.
        static: The paper's other description of PARIS (§5.2, Fig. 8 text: it "neither allows
            reconfiguration during execution"; Table 1: no fine-grain reconfiguration): the
            inference instances of the first decision are kept for the whole run, a retraining
            instance is built while a job waits and its slices stay empty after the job ends.
    """

    name = "paris"

    def __init__(self, env: gym.Env, static: bool = False) -> None:
        super().__init__(env)
        self.static = bool(static)
        self._inference: np.ndarray | None = None  # (M, Z) instance counts kept when static

    def reset(self, seed: int | None = None) -> None:
        """Forget the current choice (and the kept inference instances)."""
        super().reset(seed)
        self._inference = None

    def choose(self, snap) -> int:
        """The compute-intensity split (:meth:`_split`); with ``static``, after the first
        decision, the valid signature that keeps its inference instances."""
        cat = snap.spec.catalogue
        m = snap.spec.n_tenants
        if self.static and self._inference is not None:
            sizes = _retrain_sizes(snap)
            for trial in (sizes, np.zeros_like(sizes)):  # a job that cannot fit waits
                cands = _with_retraining(snap, trial)
                same = cands[np.all(cat.counts[cands, :m, :] == self._inference, axis=(1, 2))]
                if same.size:
                    return int(same[0])
        choice = self._split(snap)
        if self.static and self._inference is None:
            self._inference = cat.counts[choice, :m, :].copy()
        return choice

    def _split(self, snap) -> int:
        """Valid signature whose inference GPCs best match the compute-intensity split."""
        spec = snap.spec
        m = spec.n_tenants
        cands = _serving_candidates(snap)
        intensity = np.array(
            [
                md.gflops * proc.mean_rate
                for md, proc in zip(spec.models, spec.arrivals, strict=True)
            ]
        )
        gp = spec.catalogue.gpcs[cands][:, :m].astype(float)
        free = spec.catalogue.units - spec.catalogue.gpcs[cands][:, m:].sum(axis=1)
        target = intensity / intensity.sum()
        err = np.abs(gp / np.maximum(free[:, None], 1) - target[None, :]).sum(axis=1)
        score = gp.sum(axis=1) * 10.0 - err  # use the GPU fully, then match the split
        return int(cands[np.argmax(score)])


class StaticHalfPolicy(_StaticTarget):
    """Each tenant owns a fixed part of the GPU (4 + 3 GPCs for two tenants); retraining
    runs inside the tenant's part on the smallest instance that works."""

    name = "static-half"

    def choose(self, snap) -> int:
        """Valid signature closest to the fixed per-tenant GPC budget."""
        spec = snap.spec
        m = spec.n_tenants
        units = spec.catalogue.units  # 7 GPCs under MIG, the MPS shares otherwise
        budget = np.full(m, units // m)
        budget[: units - budget.sum()] += 1
        cands = _serving_candidates(snap)
        gp = spec.catalogue.gpcs[cands]
        per = gp[:, :m] + gp[:, m:]
        over = np.maximum(per - budget[None, :], 0).sum(axis=1)
        score = per.sum(axis=1) - 100.0 * over
        return int(cands[np.argmax(score)])


class EkyaMIGPolicy(_OnMPS, _StaticTarget):
    """Ekya's logic on MIG: at a window start and whenever a retraining starts or ends, pick
    (always retraining, as Ekya does) the allocation that maximises the estimated
    accuracy-weighted requests served over the rest of the window, from mean arrival rates
    (Ekya values retraining benefit but not the arrival dynamics), then keep it."""

    name = "ekya-mig"

    def choose(self, snap) -> int:
        """Best valid signature by a window-level estimate with mean rates."""
        spec = snap.spec
        cat = spec.catalogue
        m = spec.n_tenants
        ok = snap.mask.copy()
        for i in range(m):  # Ekya always retrains: every pending job starts now if it can
            if snap.status[i] == PENDING:
                starts = ok & (cat.n_instances[:, m + i] == 1)
                ok = starts if starts.any() else ok
        cands = np.flatnonzero(ok)
        rate = np.array([proc.mean_rate for proc in spec.arrivals])
        left = spec.window_s - (snap.time_s - snap.window * spec.window_s)
        cap = _capacity(spec, cands)
        served = np.minimum(rate[None, :], cap)  # (n, M) requests/s
        value = np.zeros(len(cands))
        for i in range(m):
            r_counts = cat.counts[cands, m + i, :]  # (n, Z)
            speed = r_counts @ spec.size_train_speed[i]
            with np.errstate(divide="ignore", invalid="ignore"):
                start = snap.overhead_s[m + i]  # what the environment charges a job start
                d = np.where(speed > 0, start + snap.job_left[i] / speed, np.inf)
            if snap.status[i] == RUNNING:
                d = np.full(len(cands), snap.job_left[i] / max(float(speed.max()), 1e-9))
            d = np.minimum(d, left)
            acc_pre = snap.model_acc[i]
            acc_post = snap.post_acc[i] if snap.status[i] != DONE else snap.model_acc[i]
            # After the job the retraining GPCs serve inference again (Ekya reallocates then).
            gain_after = r_counts @ spec.size_rate[i]
            after = np.minimum(rate[i], cap[:, i] + gain_after)
            value += served[:, i] * d * acc_pre + after * (left - d) * acc_post
        return int(cands[np.argmax(value)])


class AstraeaPolicy(_OnMPS, Policy):
    """Astraea's logic on MIG: every decision, the allocation that serves the most requests at
    the last second's arrival rate (SLO chasing), ignoring retraining benefit; retraining gets
    the smallest instance that works at the window start. A switch must promise to serve more
    than ``1 + hysteresis`` times the requests the current allocation serves (Astraea
    reallocates SM shares, which is cheap; MIG reconfiguration is not).

    Args:
        env: A ``MIGReconfig-v0`` environment.
        hysteresis: The relative margin a switch must promise, >= 0 (0: switch to any
            allocation that serves more; a negative margin would switch to one that serves no
            more, even a tie).
    """

    name = "astraea"

    def __init__(self, env: gym.Env, hysteresis: float = 0.05) -> None:
        super().__init__(env)
        if not hysteresis >= 0.0:  # NaN fails too
            raise ValueError(
                f"hysteresis={hysteresis} is out of range (allowed: >= 0, a relative margin: "
                f"a switch must serve that fraction more requests)"
            )
        self.hysteresis = float(hysteresis)

    def act(self) -> np.ndarray:
        """Most requests served at the last observed rates."""
        snap = self.unwrapped.sim_state()
        spec = snap.spec
        cands = _with_retraining(snap, _retrain_sizes(snap))
        past = snap.past_arrivals
        rate = past[:, -1] if past.shape[1] else np.array([p.mean_rate for p in spec.arrivals])
        rate = rate + snap.backlog
        served = np.minimum(rate[None, :], _capacity(spec, cands)).sum(axis=1)
        best = int(cands[np.argmax(served)])
        cur = snap.signature
        if cur >= 0 and snap.mask[cur] and cur in set(cands.tolist()):
            now = float(np.minimum(rate, _capacity(spec, np.array([cur]))[0]).sum())
            if served.max() <= now * (1.0 + self.hysteresis):
                return np.int64(cur)
        return np.int64(best)

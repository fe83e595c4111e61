"""A signature scorer for the MIG family: one score per allocation signature.

``edgegym/MIGReconfig-v0`` acts in ``Discrete(S)``: each action is an allocation signature, the
MIG instance sizes every task (each tenant's inference and retraining) holds
(:func:`edgegym.hardware.migalloc.catalogue`; S = 496 for 2 tenants on an A100). A flat MLP
learns S unrelated logits from the flat observation, so it cannot tell that two signatures
differ only in one tenant's instance, and it is bound to one tenant count.
:class:`SignaturePolicy` scores every signature from what it gives each tenant instead:

* a shared tenant encoder reads each tenant's 14 features (:mod:`edgegym.families.mig.observation`)
  beside the 4 globals; its codes, pooled over the tenants (mean and max), form a context;
* a signature's share of tenant ``m`` is described by 15 numbers (:func:`signature_table`):
  the instances of each size (1, 2, 3, 4, 7 GPCs) its inference and its retraining job hold,
  their GPCs and instance counts, and the GPCs the signature leaves free;
* a pair MLP reads ``[tenant m's code and features, context, globals]`` and signature ``s``'s
  share of tenant ``m``; its first layer is the sum of a tenant part and a signature part
  (so the ``(tenant, signature)`` grid costs one addition per pair before the nonlinearity),
  plus three change features: how far ``s`` moves the tenant's inference and retraining GPCs
  from what they hold now, and whether ``s`` keeps every tenant's GPCs (reconfiguring costs
  downtime, so "keep" is the choice a scorer most needs to see); the score of ``s`` is the
  sum over tenants of the pair MLP's output;
* the value head reads the context and the globals.

The signature table is rebuilt from the catalogue of the environment the policy acts in
(a buffer, not a weight), so the weights depend on neither the number of tenants nor the
number of signatures: :meth:`SignaturePolicy.rebind` gives a policy trained on 2 tenants
the catalogue of 3 (the evaluator's ``PPOPolicy`` calls it). Scores are
permutation-equivariant: permuting the tenants permutes the catalogue's signatures alike.
Masks are the environment's (``action_masks()``).

Use it from a hyperparameter file with ``policy: SignaturePolicy`` (``wrappers.flatten_obs``
and ``wrappers.discrete_actions`` false); ``policy_kwargs.net_arch[0]`` is the code width.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium import spaces
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn

from edgegym.agents.policies.tenants import TenantView, _mlp

#: Instance sizes (GPCs) a signature's share of a task is described by.
SIZES = (1, 2, 3, 4, 7)
#: Numbers describing one tenant's share of one signature (:func:`signature_table`).
SIG_FEATURES = 2 * (len(SIZES) + 2) + 1


def signature_table(gpu: str, n_tenants: int) -> np.ndarray:
    """``(S, M, 15)`` what each signature of ``gpu``'s catalogue for ``n_tenants`` tenants
    gives each tenant: for its inference task, then its retraining job, the instances of each
    of :data:`SIZES` (/ 3), the GPCs held (/ 7) and the instance count (/ 7); last, the GPCs
    the signature leaves unassigned (/ 7, the same for every tenant).

    Raises:
        ValueError: The GPU has instance sizes other than :data:`SIZES`.
    """
    from edgegym.hardware.mig import MIG_TOTAL_GPCS
    from edgegym.hardware.migalloc import catalogue

    cat = catalogue(gpu, n_tenants)
    if not set(cat.sizes) <= set(SIZES):
        raise ValueError(f"{gpu} has MIG instance sizes {cat.sizes}, the policy reads {SIZES}")
    m, n = n_tenants, len(cat)
    where = [SIZES.index(z) for z in cat.sizes]
    counts = np.zeros((n, 2 * m, len(SIZES)))
    counts[:, :, where] = cat.counts
    free = (MIG_TOTAL_GPCS - cat.gpcs.sum(axis=1)) / MIG_TOTAL_GPCS  # (S,)
    parts = []
    for task in (slice(0, m), slice(m, 2 * m)):  # inference, then retraining
        parts += [
            counts[:, task, :] / 3.0,
            cat.gpcs[:, task, None] / MIG_TOTAL_GPCS,
            cat.n_instances[:, task, None] / MIG_TOTAL_GPCS,
        ]
    parts.append(np.broadcast_to(free[:, None, None], (n, m, 1)))
    return np.concatenate(parts, axis=-1).astype(np.float32)


def _catalogue_of(env: gym.Env) -> tuple[str, int]:
    """``(gpu, tenants)`` of a MIG environment's signature catalogue."""
    from edgegym.hardware.migalloc import ShareCatalogue
    from edgegym.wrappers import family_of

    family = family_of(env)
    spec = getattr(env.unwrapped, "spec_", None)
    if family != "mig" or spec is None:
        raise ValueError(f"SignaturePolicy reads the mig family's signatures, not {family!r}")
    if isinstance(spec.catalogue, ShareCatalogue):
        raise ValueError(
            "SignaturePolicy scores MIG instance signatures; this environment holds MPS shares "
            f"(mps.shares: {spec.catalogue.units}): set mps.shares: 0"
        )
    return spec.catalogue.gpu, int(spec.catalogue.n_tenants)


class SignatureExtractor(BaseFeaturesExtractor):
    """Per tenant ``[code (hidden), features (14)]``, then the pooled context
    (``2 * hidden``: mean and max of the codes) and the globals."""

    def __init__(
        self,
        observation_space: gym.Space,
        n_tenants: int,
        hidden: int = 64,
        activation: type[nn.Module] = nn.Tanh,
    ) -> None:
        from edgegym.families.mig.observation import GLOBALS, PER_TENANT

        width = n_tenants * (hidden + PER_TENANT) + 2 * hidden + GLOBALS
        super().__init__(observation_space, width)
        self.view = TenantView("flat", n_tenants, PER_TENANT, GLOBALS, (), mask_key=None)
        self.encoder = _mlp([PER_TENANT + GLOBALS, hidden, hidden], activation)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        tenants, _, glob = self.view.split(obs)
        b, t, _ = tenants.shape
        codes = self.encoder(torch.cat([tenants, glob[:, None, :].expand(b, t, -1)], dim=-1))
        context = torch.cat([codes.mean(dim=1), codes.amax(dim=1)], dim=-1)
        per = torch.cat([codes, tenants], dim=-1).reshape(b, -1)
        return torch.cat([per, context, glob], dim=-1)


class _SignatureScorer(nn.Module):
    """One logit per signature: the sum over tenants of the pair MLP (module docstring)."""

    def __init__(
        self,
        table: np.ndarray,
        hidden: int,
        per_tenant: int,
        n_globals: int,
        act: type,
        teacher: bool = False,
    ) -> None:
        super().__init__()
        self.hidden, self.per_tenant, self.n_globals = hidden, per_tenant, n_globals
        self.register_buffer("table", torch.as_tensor(table), persistent=False)  # (S, M, F)
        n = len(SIZES)
        self._gpcs = [n, 2 * n + 2]  # the table's inference and retraining GPC columns
        self.tenant_in = nn.Linear(hidden + per_tenant + 2 * hidden + n_globals, hidden)
        self.signature_in = nn.Linear(SIG_FEATURES, hidden, bias=False)
        self.change_in = nn.Linear(3, hidden, bias=False)
        self.act = act()
        self.out = _mlp([hidden, hidden, 1], act, last_act=False)
        nn.init.orthogonal_(self.out[-1].weight, gain=0.01)
        nn.init.zeros_(self.out[-1].bias)
        #: The teacher's index (``TeacherAction``): one logit from the context and globals.
        self.teacher = (
            _mlp([2 * hidden + n_globals, hidden, 1], act, last_act=False) if teacher else None
        )

    def forward(self, latent: torch.Tensor) -> torch.Tensor:
        m = self.table.shape[1]
        b = latent.shape[0]
        tail = 2 * self.hidden + self.n_globals
        per = latent[:, : m * (self.hidden + self.per_tenant)].reshape(b, m, -1)
        ctx = latent[:, -tail:]
        u = self.tenant_in(torch.cat([per, ctx[:, None, :].expand(b, m, tail)], dim=-1))
        v = self.signature_in(self.table).transpose(0, 1)  # (M, S, H)
        pair = self.act(u[:, :, None, :] + v[None] + self.change_in(self._change(per)))
        logits = self.out(pair).squeeze(-1).sum(dim=1)  # (B, S)
        if self.teacher is None:
            return logits
        return torch.cat([logits, self.teacher(ctx)], dim=-1)  # (B, S + 1)

    def _change(self, per: torch.Tensor) -> torch.Tensor:
        """``(B, M, S, 3)``: how far signature ``s`` moves tenant ``m``'s inference and
        retraining GPCs from what they hold now (observation features 3 and 11), and whether
        it keeps every tenant's GPCs (the current allocation, or one as cheap to reach)."""
        raw = per[:, :, self.hidden :]  # (B, M, 14) the tenant features
        held = torch.stack([raw[..., 3], raw[..., 11]], dim=-1)  # (B, M, 2)
        gets = self.table[:, :, self._gpcs].transpose(0, 1)  # (M, S, 2)
        moved = (gets[None] - held[:, :, None, :]).abs()  # (B, M, S, 2)
        same = (moved.amax(dim=-1) < 0.5 / 7).all(dim=1, keepdim=True)  # (B, 1, S)
        same = same.to(moved.dtype).expand(-1, moved.shape[1], -1)[..., None]
        return torch.cat([moved, same], dim=-1)


class _Value(nn.Module):
    """The value from the context and the globals (the latent's last features)."""

    def __init__(self, width: int, hidden: int, act: type) -> None:
        super().__init__()
        self.width = width
        self.net = _mlp([width, hidden, 1], act, last_act=False)

    def forward(self, latent: torch.Tensor) -> torch.Tensor:
        return self.net(latent[:, -self.width :])


class SignaturePolicy(MaskableActorCriticPolicy):
    """MaskablePPO policy scoring MIG allocation signatures (module docstring).

    Args:
        gpu: The GPU of the signature catalogue (``A100-40GB``, ``H100-80GB``).
        n_tenants: Tenants of the catalogue (1 to 4).
        hidden: Code width.
        teacher: The action space has one more index after the signatures, the published
            scheduler's decision (``wrappers.teacher``: :class:`~edgegym.wrappers.TeacherAction`),
            scored from the pooled context.
        Other arguments: as ``MaskableActorCriticPolicy`` (``net_arch`` is ignored).
    """

    def __init__(
        self,
        observation_space: gym.Space,
        action_space: gym.Space,
        lr_schedule: Any,
        gpu: str = "A100-40GB",
        n_tenants: int = 2,
        hidden: int = 64,
        activation_fn: type[nn.Module] = nn.Tanh,
        teacher: bool = False,
        **kwargs: Any,
    ) -> None:
        from edgegym.families.mig.observation import GLOBALS, PER_TENANT

        self._gpu, self._n_tenants, self._hidden = str(gpu), int(n_tenants), int(hidden)
        self._teacher = bool(teacher)
        self._table = signature_table(self._gpu, self._n_tenants)
        want = PER_TENANT * self._n_tenants + GLOBALS
        n = len(self._table) + self._teacher
        if not isinstance(action_space, spaces.Discrete) or int(action_space.n) != n:
            extra = " and the teacher's index" if self._teacher else ""
            raise ValueError(
                f"the {self._gpu} catalogue for {self._n_tenants} tenants has "
                f"{len(self._table)} signatures{extra}; the action space is {action_space}"
            )
        if observation_space.shape != (want,):
            raise ValueError(
                f"{self._n_tenants} MIG tenants observe {want} features, not "
                f"{observation_space.shape}"
            )
        for key in ("features_extractor_class", "features_extractor_kwargs", "net_arch"):
            kwargs.pop(key, None)
        super().__init__(
            observation_space,
            action_space,
            lr_schedule,
            net_arch={"pi": [], "vf": []},
            activation_fn=activation_fn,
            features_extractor_class=SignatureExtractor,
            features_extractor_kwargs={
                "n_tenants": self._n_tenants,
                "hidden": self._hidden,
                "activation": activation_fn,
            },
            **kwargs,
        )

    def _build(self, lr_schedule: Any) -> None:
        from edgegym.families.mig.observation import GLOBALS, PER_TENANT

        super()._build(lr_schedule)
        h, act = self._hidden, self.activation_fn
        self.action_net = _SignatureScorer(
            self._table, h, PER_TENANT, GLOBALS, act, teacher=self._teacher
        )
        self.value_net = _Value(2 * h + GLOBALS, h, act)
        self.optimizer = self.optimizer_class(
            self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs
        )

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data = super()._get_constructor_parameters()
        data.update(
            gpu=self._gpu, n_tenants=self._n_tenants, hidden=self._hidden, teacher=self._teacher
        )
        for key in ("features_extractor_class", "features_extractor_kwargs", "net_arch"):
            data.pop(key, None)
        return data

    @classmethod
    def kwargs_for(cls, env: gym.Env, policy_kwargs: dict[str, Any]) -> dict[str, Any]:
        """The keyword arguments for ``env`` from a hyperparameter file's ``policy_kwargs``
        (``net_arch[0]``: the code width; ``activation_fn``, ``ortho_init``)."""
        gpu, m = _catalogue_of(env)
        arch = policy_kwargs.get("net_arch") or [64]
        width = arch["pi"][0] if isinstance(arch, dict) else arch[0]
        teacher = int(env.action_space.n) == len(signature_table(gpu, m)) + 1
        out: dict[str, Any] = {"gpu": gpu, "n_tenants": m, "hidden": int(width), "teacher": teacher}
        for key in ("activation_fn", "ortho_init"):
            if key in policy_kwargs:
                out[key] = policy_kwargs[key]
        return out

    def rebind(self, env: gym.Env, action_space: gym.Space | None = None) -> SignaturePolicy:
        """These weights scoring the signatures of ``env``'s catalogue (another tenant count
        or GPU)."""
        gpu, m = _catalogue_of(env)
        n = len(signature_table(gpu, m))
        if action_space is None:  # the env's own signatures, and the teacher's index if any
            teacher, space = self._teacher, spaces.Discrete(n + self._teacher)
        else:
            teacher, space = int(action_space.n) == n + 1, action_space
        new = SignaturePolicy(
            env.observation_space,
            space,
            lambda _: 0.0,
            gpu=gpu,
            n_tenants=m,
            hidden=self._hidden,
            teacher=teacher,
            activation_fn=self.activation_fn,
            normalize_images=self.normalize_images,
        )
        new.load_state_dict(self.state_dict())
        new.set_training_mode(False)
        return new


__all__ = ["SIG_FEATURES", "SIZES", "SignatureExtractor", "SignaturePolicy", "signature_table"]

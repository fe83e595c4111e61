"""Per-tenant policies: one encoder and one action head shared by every tenant.

The MLP policies read the observation as one flat vector, so they learn each tenant slot
separately and cannot tell that slot 3 is like slot 7. :class:`PerTenantPolicy` (an
sb3-contrib ``MaskableActorCriticPolicy``) reads it as a set of tenants instead:

* :class:`TenantView` says where each tenant's features are: the rows of a ``Dict``
  observation's tenant table (continual: ``streams``, with ``stream_mask`` marking real
  streams) or the per-tenant blocks of a flat ``Box`` (energy: 9 features per slot, then 4
  globals);
* :class:`PerTenantExtractor` encodes every tenant with the same MLP (its features beside the
  globals), pools over the real tenants (mean and max) into a context, and gives each tenant
  its code beside the context;
* the action head, the same for every tenant, turns a tenant's code into the logits of its
  own ``MultiDiscrete`` entries (continual: retraining configuration, inference
  configuration and the two GPU shares; energy: time units), and the value head reads the
  context.

So the policy is permutation-equivariant (permute the tenants, and its action distribution
permutes alike; its value does not change) and its weights do not depend on the number of
tenant slots. Masks are the environment's own (``action_masks()``), per entry.

Use it from a hyperparameter file with ``policy: PerTenantPolicy`` and
``wrappers.discrete_actions: false``; ``policy_kwargs.net_arch[0]`` is the tenant code width.

:class:`PooledPolicy` keeps the encoder and the pooled context and chooses from a fixed
action set (the continual ``Discrete`` catalogue) with an MLP. :func:`rebind` gives either
policy, with its trained weights, the spaces of another scenario (other tenant and GPU
counts; the evaluator's ``PPOPolicy`` calls it), resampling the share and unit grids
(:func:`resample_matrix`).
"""

from __future__ import annotations

import importlib
import itertools
from dataclasses import asdict, dataclass, replace
from typing import Any

import gymnasium as gym
import numpy as np
import torch
from gymnasium import spaces
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor
from torch import nn


@dataclass(frozen=True)
class TenantView:
    """Where a family's observation keeps each tenant, and its action entries per tenant.

    Attributes:
        kind: ``"dict"`` (a tenant table in a ``Dict`` observation) or ``"flat"`` (blocks of
            ``per_tenant`` features at the start of a flat ``Box``, then ``n_globals``).
        n_tenants: Tenant slots.
        per_tenant: Features per tenant.
        n_globals: Global features.
        entries: ``nvec`` of one tenant's action entries (the same for every tenant).
        tenants_key, mask_key, globals_key: The ``Dict`` keys (``kind == "dict"``); no
            ``mask_key``: every slot is a tenant.
        scaled: Per entry, whether its values are fractions of a whole on a grid (GPU shares
            in quanta, time units): such an entry may have another number of values in
            another scenario (shares at 2 GPUs have 201 values, 101 at 1 GPU), and the
            policy's logits are resampled onto it (:func:`resample_matrix`). The other
            entries (configurations) must keep their size.
        configs: Configurations whose columns close each tenant's features (continual: the
            last ``2 * configs`` columns are the micro-profiler's accuracy, then cost,
            estimates per retraining configuration), or 0.
        columns: Where each feature the encoder reads comes from in this environment's
            tenant rows (-1: a zero), or ``()`` for the rows as they are. :func:`rebind`
            sets it when a scenario has fewer or more configurations than the training one
            (a missing configuration reads as one the micro-profiler pruned).
    """

    kind: str
    n_tenants: int
    per_tenant: int
    n_globals: int
    entries: tuple[int, ...]
    tenants_key: str = "streams"
    mask_key: str | None = "stream_mask"
    globals_key: str = "globals"
    scaled: tuple[bool, ...] = ()
    configs: int = 0
    columns: tuple[int, ...] = ()

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TenantView:
        """The view recorded in a policy's keyword arguments or a run's ``config.yaml``."""
        data = dict(data)
        data["entries"] = tuple(int(n) for n in data["entries"])
        data["scaled"] = tuple(bool(x) for x in data.get("scaled", ()))
        data["columns"] = tuple(int(x) for x in data.get("columns", ()))
        return cls(**data)

    def columns_for(self, here: TenantView) -> tuple[int, ...]:
        """:attr:`columns` that read ``here``'s tenant rows as this view's: the common
        features in place, configuration ``c``'s two estimates where this view keeps them,
        zeros for configurations ``here`` lacks (configurations beyond this view's count are
        not read).

        Raises:
            ValueError: The rows differ in more than their configuration count.
        """
        mine = self.configs
        if not mine and here.configs and self.kind == here.kind:
            # a view saved before it recorded its configurations: same features before them
            mine = max(0, self.per_tenant - here.per_tenant + 2 * here.configs) // 2
        base, base_here = self.per_tenant - 2 * mine, here.per_tenant - 2 * here.configs
        if not (mine and here.configs and base == base_here):
            raise ValueError(
                f"this environment has {here.per_tenant} features per tenant, the policy was "
                f"trained on {self.per_tenant}"
            )
        cols = list(range(base))
        for block in (0, 1):  # accuracy estimates, then costs, per configuration
            cols += [
                base + block * here.configs + c if c < here.configs else -1 for c in range(mine)
            ]
        return tuple(cols)

    def split(self, obs: Any) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor]:
        """``(tenants (B, T, F), mask (B, T) or None, globals (B, G))`` of a batch."""
        if self.kind == "dict":
            mask = obs[self.mask_key] if self.mask_key else None
            return self._read(obs[self.tenants_key]), mask, obs[self.globals_key]
        flat = obs.reshape(obs.shape[0], -1)
        cut = self.n_tenants * self.per_tenant
        tenants = flat[:, :cut].reshape(flat.shape[0], self.n_tenants, self.per_tenant)
        return self._read(tenants), None, flat[:, cut:]

    def _read(self, tenants: torch.Tensor) -> torch.Tensor:
        """The tenant rows as the encoder reads them (:attr:`columns`)."""
        if not self.columns:
            return tenants
        cols = torch.as_tensor(self.columns, device=tenants.device)
        picked = tenants[..., cols.clamp(min=0)]
        return torch.where(cols >= 0, picked, torch.zeros_like(picked))


def tenant_view(env: gym.Env) -> TenantView:
    """The :class:`TenantView` of an edgegym environment: the layout its family's
    ``observation.tenant_layout`` gives (continual and energy).

    Raises:
        ValueError: A family or space this policy does not read (MIG's ``Discrete``
            signatures and the DAG's graph need their own policies).
    """
    from edgegym.wrappers import family_of

    family = family_of(env)
    obs, act = env.observation_space, env.unwrapped.action_space
    if not isinstance(act, spaces.MultiDiscrete):
        raise ValueError(f"a per-tenant view needs the env's MultiDiscrete action, not {act}")
    nvec = [int(n) for n in act.nvec]
    layout = None
    try:
        rooms = importlib.import_module(f"edgegym.families.{family}.observation")
    except ModuleNotFoundError:  # no family, or one without an observation room
        rooms = None
    if hasattr(rooms, "tenant_layout"):
        layout = rooms.tenant_layout(obs, nvec)
    if layout is None:
        raise ValueError(
            f"PerTenantPolicy reads the continual and energy families (those whose observation "
            f"room has a tenant_layout), not {family!r} ({obs})"
        )
    view = TenantView(entries=(), **layout)
    per = len(nvec) // view.n_tenants
    entries = tuple(nvec[:per])
    if per * view.n_tenants != len(nvec) or nvec != list(entries) * view.n_tenants:
        raise ValueError(f"the action entries {nvec} are not the same for every tenant")
    return TenantView(**{**asdict(view), "entries": entries})


def _mlp(sizes: list[int], act: type[nn.Module], last_act: bool = True) -> nn.Sequential:
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(itertools.pairwise(sizes)):
        layers.append(nn.Linear(a, b))
        if last_act or i < len(sizes) - 2:
            layers.append(act())
    return nn.Sequential(*layers)


class PerTenantExtractor(BaseFeaturesExtractor):
    """Shared tenant encoder and pooled context (see the module docstring).

    Output, flat: every tenant's ``[code, context]`` (``3 * hidden`` each), then the context
    (``2 * hidden``: masked mean and max of the codes); with ``pooled_only``, the context
    alone (:class:`PooledPolicy`: a width that does not depend on the number of tenants).
    """

    def __init__(
        self,
        observation_space: gym.Space,
        view: dict[str, Any],
        hidden: int = 64,
        activation: type[nn.Module] = nn.Tanh,
        pooled_only: bool = False,
    ) -> None:
        v = TenantView.from_dict(view)
        width = 2 * hidden if pooled_only else v.n_tenants * 3 * hidden + 2 * hidden
        super().__init__(observation_space, width)
        self.view = v
        self.hidden = hidden
        self.pooled_only = pooled_only
        self.encoder = _mlp([v.per_tenant + v.n_globals, hidden, hidden], activation)

    def forward(self, obs: Any) -> torch.Tensor:
        tenants, mask, glob = self.view.split(obs)
        b, t, _ = tenants.shape
        x = torch.cat([tenants, glob[:, None, :].expand(b, t, glob.shape[-1])], dim=-1)
        codes = self.encoder(x)
        if mask is None:
            mask = torch.ones(b, t, device=codes.device)
        m = mask[..., None]
        count = m.sum(dim=1).clamp(min=1.0)
        mean = (codes * m).sum(dim=1) / count
        lowest = torch.full_like(codes, torch.finfo(codes.dtype).min)
        peak = torch.where(m > 0, codes, lowest).amax(dim=1)
        peak = torch.where(mask.sum(dim=1, keepdim=True) > 0, peak, torch.zeros_like(peak))
        context = torch.cat([mean, peak], dim=-1)
        if self.pooled_only:
            return context
        per = torch.cat([codes, context[:, None, :].expand(b, t, context.shape[-1])], dim=-1)
        return torch.cat([per.reshape(b, -1), context], dim=-1)


def resample_matrix(n_out: int, n_in: int) -> np.ndarray:
    """``(n_out, n_in)`` linear interpolation from a grid of ``n_in`` values of a fraction
    (0, 1/(n_in-1), ..., 1) onto one of ``n_out`` values: value ``k`` of the output reads the
    input at the same fraction ``k / (n_out - 1)``. The identity when the sizes agree."""
    if n_in == 1 or n_out == 1:
        return np.ones((n_out, n_in)) / n_in
    x = np.linspace(0.0, n_in - 1, n_out)
    lo = np.minimum(np.floor(x + 1e-9).astype(int), n_in - 1)
    hi = np.minimum(lo + 1, n_in - 1)
    w = x - lo
    out = np.zeros((n_out, n_in))
    np.add.at(out, (np.arange(n_out), lo), 1.0 - w)
    np.add.at(out, (np.arange(n_out), hi), w)
    return out


class _TenantHead(nn.Module):
    """Logits of every tenant's entries from its ``[code, context]``, one MLP for all.

    The MLP gives ``head_entries`` logits per tenant (the entry sizes of its training
    scenario); an entry whose size differs here (a ``scaled`` one) is resampled onto this
    environment's values (:func:`resample_matrix`)."""

    def __init__(
        self,
        view: TenantView,
        hidden: int,
        activation: type[nn.Module],
        head_entries: tuple[int, ...],
    ) -> None:
        super().__init__()
        self.width = 3 * hidden
        self.head_entries = tuple(head_entries)
        self.net = _mlp([3 * hidden, hidden, int(sum(head_entries))], activation, last_act=False)
        nn.init.orthogonal_(self.net[-1].weight, gain=0.01)
        nn.init.zeros_(self.net[-1].bias)
        self.resample = tuple(self.head_entries) != tuple(view.entries)
        if self.resample:
            blocks = [
                torch.as_tensor(resample_matrix(n, m), dtype=torch.float32)
                for n, m in zip(view.entries, head_entries, strict=True)
            ]
            self.register_buffer("maps", torch.block_diag(*blocks), persistent=False)

    def forward(self, latent: torch.Tensor) -> torch.Tensor:
        b = latent.shape[0]
        t = (latent.shape[1] - 2 * self.width // 3) // self.width  # any number of tenants
        per = latent[:, : t * self.width].reshape(b, t, self.width)
        logits = self.net(per)
        if self.resample:
            logits = logits @ self.maps.T
        return logits.reshape(b, -1)


class _ContextValue(nn.Module):
    """The value from the pooled context (the last ``2 * hidden`` features)."""

    def __init__(self, hidden: int, activation: type[nn.Module]) -> None:
        super().__init__()
        self.width = 2 * hidden
        self.net = _mlp([2 * hidden, hidden, 1], activation, last_act=False)
        nn.init.orthogonal_(self.net[-1].weight, gain=1.0)
        nn.init.zeros_(self.net[-1].bias)

    def forward(self, latent: torch.Tensor) -> torch.Tensor:
        return self.net(latent[:, -self.width :])


class _TenantPolicy(MaskableActorCriticPolicy):
    """What :class:`PerTenantPolicy` and :class:`PooledPolicy` share: the tenant view, the
    code width and the :class:`PerTenantExtractor` built from them (saved as ``view`` and
    ``hidden``, rebuilt on load)."""

    #: Whether the extractor gives the pooled context alone.
    pooled_only = False

    def __init__(
        self,
        observation_space: gym.Space,
        action_space: gym.Space,
        lr_schedule: Any,
        view: dict[str, Any] | None = None,
        hidden: int = 64,
        activation_fn: type[nn.Module] = nn.Tanh,
        **kwargs: Any,
    ) -> None:
        if view is None:
            raise ValueError(f"{type(self).__name__} needs view=asdict(tenant_view(env))")
        kwargs.pop("features_extractor_class", None)
        kwargs.pop("features_extractor_kwargs", None)
        self._view = TenantView.from_dict(view)
        self._hidden = int(hidden)
        self._check_action(action_space)
        super().__init__(
            observation_space,
            action_space,
            lr_schedule,
            activation_fn=activation_fn,
            features_extractor_class=PerTenantExtractor,
            features_extractor_kwargs={
                "view": asdict(self._view),
                "hidden": self._hidden,
                "activation": activation_fn,
                "pooled_only": self.pooled_only,
            },
            **kwargs,
        )

    def _check_action(self, action_space: gym.Space) -> None:
        """Refuse an action space the policy cannot answer in (before any layer is built)."""

    @classmethod
    def kwargs_for(cls, env: gym.Env, policy_kwargs: dict[str, Any]) -> dict[str, Any]:
        """The policy's keyword arguments for ``env`` (:func:`per_tenant_kwargs`)."""
        return per_tenant_kwargs(env, policy_kwargs, cls.__name__)

    def rebind(self, env: gym.Env, action_space: gym.Space | None = None) -> _TenantPolicy:
        """These weights acting on ``env``'s spaces (:func:`rebind`)."""
        return rebind(self, env, action_space)

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data = super()._get_constructor_parameters()
        data.update(view=asdict(self._view), hidden=self._hidden)
        for key in ("features_extractor_class", "features_extractor_kwargs"):
            data.pop(key, None)
        return data


class PerTenantPolicy(_TenantPolicy):
    """MaskablePPO policy with shared per-tenant encoder and heads (module docstring).

    Args:
        view: :func:`tenant_view` of the environment, as a mapping (``asdict``).
        hidden: Tenant code width.
        head_entries: Entry sizes of the action head's output (default: the view's): those
            of the training scenario when the policy is rebound to another one
            (:func:`rebind`).
        Other arguments: as ``MaskableActorCriticPolicy`` (``net_arch`` is ignored: the heads
        are the per-tenant ones).
    """

    def __init__(
        self,
        observation_space: gym.Space,
        action_space: gym.Space,
        lr_schedule: Any,
        view: dict[str, Any] | None = None,
        hidden: int = 64,
        head_entries: tuple[int, ...] | list[int] | None = None,
        activation_fn: type[nn.Module] = nn.Tanh,
        **kwargs: Any,
    ) -> None:
        self._head_entries_arg = head_entries
        kwargs["net_arch"] = {"pi": [], "vf": []}  # the heads are the per-tenant ones
        super().__init__(
            observation_space, action_space, lr_schedule, view, hidden, activation_fn, **kwargs
        )

    def _check_action(self, action_space: gym.Space) -> None:
        entries = self._view.entries
        self._head_entries = tuple(int(n) for n in (self._head_entries_arg or entries))
        nvec = np.asarray(action_space.nvec).tolist()
        if nvec != list(entries) * self._view.n_tenants:
            raise ValueError(f"view entries {entries} do not tile the action {nvec}")
        scaled = self._view.scaled or (False,) * len(entries)
        if len(self._head_entries) != len(entries) or any(
            h != n and not sc for h, n, sc in zip(self._head_entries, entries, scaled, strict=True)
        ):
            raise ValueError(
                f"a tenant's action entries here have {list(entries)} values, the policy's "
                f"{list(self._head_entries)}; only the scaled entries (shares, units: "
                f"{[i for i, sc in enumerate(scaled) if sc]}) may differ"
            )

    def _build(self, lr_schedule: Any) -> None:
        super()._build(lr_schedule)
        self.action_net = _TenantHead(
            self._view, self._hidden, self.activation_fn, self._head_entries
        )
        self.value_net = _ContextValue(self._hidden, self.activation_fn)
        self.optimizer = self.optimizer_class(
            self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs
        )

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data = super()._get_constructor_parameters()
        data["head_entries"] = self._head_entries
        data.pop("net_arch", None)
        return data


def rebind(
    policy: PerTenantPolicy | PooledPolicy, env: gym.Env, action_space: gym.Space | None = None
) -> PerTenantPolicy | PooledPolicy:
    """The trained ``policy`` with the same weights, acting on ``env``'s spaces.

    Its weights depend on neither the number of tenants nor (:class:`PerTenantPolicy`) the
    size of a scaled entry, so a policy trained on 10 streams at 1 GPU acts on 6 streams at
    2 GPUs.

    Args:
        policy: A trained :class:`PerTenantPolicy` or :class:`PooledPolicy`.
        env: The environment to act on.
        action_space: The action space the policy answers in (default ``env``'s; a
            :class:`PooledPolicy` answers in its catalogue's ``Discrete``, which must keep
            its size).

    Raises:
        ValueError: ``env`` is not a family the policy reads, or a tenant's features, the
            globals, a configuration entry or the catalogue differ in size (say which).
    """
    view = tenant_view(env)
    have = policy._view
    action_space = env.action_space if action_space is None else action_space
    if view.per_tenant != have.per_tenant:  # another configuration count: read it as trained
        cols = have.columns_for(view)
        base = view.per_tenant - 2 * view.configs
        view = replace(view, per_tenant=len(cols), configs=(len(cols) - base) // 2, columns=cols)
    for what, a, b in (
        ("features per tenant", view.per_tenant, have.per_tenant),
        ("global features", view.n_globals, have.n_globals),
        ("observation kind", view.kind, have.kind),
    ):
        if a != b:
            raise ValueError(f"this environment has {a} {what}, the policy was trained on {b}")
    common = {
        "view": asdict(view),
        "hidden": policy._hidden,
        "activation_fn": policy.activation_fn,
        "normalize_images": policy.normalize_images,
    }
    new: PerTenantPolicy | PooledPolicy
    if isinstance(policy, PooledPolicy):
        if not isinstance(action_space, spaces.Discrete) or int(action_space.n) != int(
            policy.action_space.n
        ):
            raise ValueError(
                f"the policy chooses among {policy.action_space}, this environment offers "
                f"{action_space}"
            )
        new = PooledPolicy(
            env.observation_space,
            action_space,
            lambda _: 0.0,
            net_arch=policy.net_arch,
            **common,
        )
    else:
        new = PerTenantPolicy(
            env.observation_space,
            action_space,
            lambda _: 0.0,
            head_entries=policy._head_entries,
            **common,
        )
    new.load_state_dict(policy.state_dict())
    new.set_training_mode(False)
    return new


class PooledPolicy(_TenantPolicy):
    """MaskablePPO policy on a fixed action set (a ``Discrete`` catalogue of joint actions)
    from the pooled per-tenant context: the shared tenant encoder of
    :class:`PerTenantPolicy`, its masked mean and max, then MLP heads (``net_arch``).

    Its weights do not depend on the number of tenants or the GPU count, so where the action
    set keeps its meaning across sizes (the continual catalogue: no retraining, or one
    configuration for every stream at an inference fraction of 10-90 %) one policy plays them
    all (:func:`rebind`).

    Args:
        view: :func:`tenant_view` of the environment, as a mapping (``asdict``).
        hidden: Tenant code width.
        Other arguments: as ``MaskableActorCriticPolicy`` (``net_arch``: the layers after the
        pooled context).
    """

    pooled_only = True


def per_tenant_kwargs(
    env: gym.Env, policy_kwargs: dict[str, Any], policy: str = "PerTenantPolicy"
) -> dict[str, Any]:
    """``policy_kwargs`` of :class:`PerTenantPolicy` (or :class:`PooledPolicy`) for ``env``
    from a hyperparameter file's section: ``net_arch[0]`` is the tenant code width (and, for
    the pooled policy, the rest the layers after the context); ``activation_fn`` an ``nn``
    class."""
    arch = policy_kwargs.get("net_arch") or [64]
    if isinstance(arch, dict):
        width, rest = arch["pi"][0], {k: list(v[1:]) for k, v in arch.items()}
    else:
        width, rest = arch[0], list(arch[1:])
    out: dict[str, Any] = {"view": asdict(tenant_view(env)), "hidden": int(width)}
    if policy == "PooledPolicy":
        out["net_arch"] = rest
    for key in ("activation_fn", "ortho_init"):
        if key in policy_kwargs:
            out[key] = policy_kwargs[key]
    return out


class Aligned(gym.Wrapper):
    """A continual environment with another configuration count seen through the spaces of
    a reference one, so that one policy trains on both (a ``train.scenarios`` mixture).

    Both environments are ``DiscreteActions`` over the ``Dict`` observation (a
    :class:`PooledPolicy` run). Tenant rows are read as the reference's
    (:meth:`TenantView.columns_for`: a configuration this scenario lacks reads as one the
    micro-profiler pruned); a ``Discrete`` index is the reference catalogue's action of the
    same label (:meth:`edgegym.wrappers.JointActions.translate`; one this scenario lacks is
    masked out), and the teacher's index stays the teacher's.

    Args:
        env: The environment to train on.
        like: The reference environment (the run's own scenario), same wrappers.

    Raises:
        ValueError: The two differ in more than their configuration count, or their
            catalogues carry no labels.
    """

    def __init__(self, env: gym.Env, like: gym.Env) -> None:
        super().__init__(env)
        here, ref = env.get_wrapper_attr("joint"), like.get_wrapper_attr("joint")
        self.action_map = ref.translate(here)
        if int(env.action_space.n) > len(here):  # the teacher's index is the teacher's
            self.action_map = np.append(self.action_map, len(here))
        self.columns = np.asarray(tenant_view(like).columns_for(tenant_view(env)))
        self.observation_space = like.observation_space
        self.action_space = like.action_space
        key = tenant_view(env).tenants_key
        self._key = key
        if int(self.action_space.n) != self.action_map.size:
            raise ValueError(
                f"the reference offers {self.action_space}, its catalogue "
                f"{self.action_map.size} actions"
            )
        if self.observation_space[key].shape[0] != env.observation_space[key].shape[0]:
            raise ValueError(
                f"{env.observation_space[key].shape[0]} tenant slots here, "
                f"{self.observation_space[key].shape[0]} in the reference (pad with max_streams)"
            )

    def _obs(self, obs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        rows = obs[self._key]
        picked = rows[..., np.maximum(self.columns, 0)]
        return {**obs, self._key: np.where(self.columns >= 0, picked, 0.0).astype(rows.dtype)}

    def action_masks(self) -> np.ndarray:
        """The reference-sized ``Discrete`` mask (actions this scenario lacks: False)."""
        from edgegym.wrappers import JointActions

        mask = np.asarray(self.env.get_wrapper_attr("action_masks")(), dtype=bool)
        return JointActions.mask_through(mask, self.action_map)

    def _info(self, info: dict[str, Any]) -> dict[str, Any]:
        if "action_mask" in info:
            info = {**info, "action_mask": self.action_masks()}
        return info

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        """Reset; observation and mask in the reference's spaces."""
        obs, info = self.env.reset(**kwargs)
        return self._obs(obs), self._info(info)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """Step with the reference index's action of the same label."""
        from edgegym.core.checks import check_action

        index = int(check_action(self.action_space, action))
        here = int(self.action_map[index])
        if here < 0:  # only code that ignores the mask gets here
            here = 0
        obs, reward, terminated, truncated, info = self.env.step(here)
        return self._obs(obs), reward, terminated, truncated, self._info(info)


__all__ = [
    "Aligned",
    "PerTenantExtractor",
    "PerTenantPolicy",
    "PooledPolicy",
    "TenantView",
    "per_tenant_kwargs",
    "rebind",
    "resample_matrix",
    "tenant_view",
]

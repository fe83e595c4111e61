"""A graph policy for the DAG family: message passing over the request's DAG,
one score per edge server, one retraining head per task (after Decima, Mao et al. 2019).

``edgegym/DAGOffload-v0`` observes the epoch's request as a graph (``nodes`` (N, 13): one row
per task of its inference DAG, zero rows padding; ``edges`` (M, 2) node indices with -1
padding and ``edge_mask``), the edge servers (``servers`` (E, 5)) and 5 globals, and acts in
``MultiDiscrete([E] + [H + 1] * N)``: entry 0 is the server of the presented node (place
epochs), entries 1..N each task's retraining choice (admit epochs). A flat MLP learns the E
servers and N task slots as unrelated outputs and is bound to one E and N.
:class:`GraphPolicy` (an sb3-contrib ``MaskableActorCriticPolicy``) reads the structure instead:

* **node encoder**: every node's features (signed ``log1p``, so seconds and megabytes of any
  size stay in range) beside the globals go through one shared MLP into a code of width
  ``hidden``;
* **message passing**: ``rounds`` rounds over the DAG's edges in both directions: a node
  adds, through a shared MLP per round (residual), the mean code of its predecessors and the
  mean code of its successors (a dense ``(N, N)`` adjacency built from ``edges``, counting
  only edges in ``edge_mask`` between valid nodes; padding rows stay zero);
* **graph context**: the masked mean and max of the valid nodes' codes;
* **servers**: every server's features (signed ``log1p``, and the same minus their mean over
  the servers, so a scorer sees "faster than the others", "finishes later than the best")
  through one shared MLP into a server code; their mean and max form the server context;
* **server scorer** (entry 0): one MLP, shared by the servers, reads
  ``[server code, presented node's code, graph context, server context, globals]`` and gives
  one logit per server. The presented node is the row flagged ``presented`` (feature 11) or
  ``presented retraining node of this task`` (feature 12); at admit epochs none is, and its
  code is zero (entry 0 is ignored there and masked to server 0);
* **retraining head** (entries 1..N): one MLP, shared by the tasks, reads
  ``[node code, graph context, server context, globals]`` and gives the task's ``H + 1``
  logits (none, then each configuration);
* **value**: an MLP on ``[presented code, graph context, server context, globals]``.

So the policy is permutation-equivariant over the servers (permute them, and the server
logits permute alike; the retraining logits and the value do not change) and over the task
rows (with the edges renumbered alike), and its weights depend on neither E, N nor the number
of edge slots M: :meth:`GraphPolicy.rebind` gives a policy trained on 5 servers the spaces of
3 (the evaluator's ``PPOPolicy`` calls it). Only the node, server and global feature counts and
the number of retraining configurations H must agree. Masks are the environment's own
(``action_masks()``, per entry): infeasible servers, and the retraining choices that A_min or
an empty pool forbid.

The earliest-finish rule of MRS (Algorithm 3) is a function of one server feature (the
seconds the presented node would finish there after its earliest finish: 0 on the best
server), so a clone of MRS (``bc.teacher: mrs``) can match its placements exactly; its
retraining choices (Eq. 11 prices) are read from the task's accuracies, drift age and pool
through the per-task head.

Use it from a hyperparameter file with ``policy: GraphPolicy`` and ``wrappers.flatten_obs:
false``, ``wrappers.discrete_actions: false``; ``policy_kwargs.net_arch`` is ``[hidden,
...]``: its first width is the code width and each further entry one round of message
passing (``[64, 64, 64]``: width 64, 2 rounds; ``[64]``: no message passing).
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

from edgegym.agents.policies.tenants import _mlp

#: Node features (see ``DAGOffloadEnv``): 0 valid, 11 presented, 12 presented retraining node.
VALID, PRESENTED, PRESENTED_RETRAIN = 0, 11, 12
#: The observation's keys.
KEYS = ("nodes", "edges", "edge_mask", "servers", "globals")


def symlog(x: torch.Tensor) -> torch.Tensor:
    """``sign(x) * log1p(|x|)``: keeps small values, compresses seconds and megabytes."""
    return torch.sign(x) * torch.log1p(torch.abs(x))


def _layout(observation_space: gym.Space, action_space: gym.Space) -> dict[str, int]:
    """``{n_nodes, n_edges, n_servers, n_node_features, n_server_features, n_globals,
    n_options}`` of a DAG environment's spaces.

    Raises:
        ValueError: Not the DAG family's ``Dict`` observation and ``MultiDiscrete`` action.
    """
    if not isinstance(observation_space, spaces.Dict) or set(observation_space.spaces) != set(KEYS):
        raise ValueError(
            f"GraphPolicy reads the DAG family's Dict observation with keys {list(KEYS)} "
            f"(wrappers.flatten_obs: false), not {observation_space}"
        )
    nodes = observation_space["nodes"].shape
    edges = observation_space["edges"].shape
    servers = observation_space["servers"].shape
    glob = observation_space["globals"].shape
    if len(nodes) != 2 or len(servers) != 2 or len(glob) != 1 or edges[1:] != (2,):
        raise ValueError(f"unexpected DAG observation shapes: {observation_space}")
    if not isinstance(action_space, spaces.MultiDiscrete):
        raise ValueError(
            f"GraphPolicy acts on the DAG env's MultiDiscrete action "
            f"(wrappers.discrete_actions: false), not {action_space}"
        )
    nvec = [int(n) for n in np.asarray(action_space.nvec).reshape(-1)]
    n, e = nodes[0], servers[0]
    if len(nvec) != 1 + n or nvec[0] != e or len(set(nvec[1:])) > 1:
        raise ValueError(f"the action {nvec} is not [servers ({e})] + [options + 1] * nodes ({n})")
    return {
        "n_nodes": int(n),
        "n_edges": int(edges[0]),
        "n_servers": int(e),
        "n_node_features": int(nodes[1]),
        "n_server_features": int(servers[1]),
        "n_globals": int(glob[0]),
        "n_options": int(nvec[1] - 1) if n else 0,
    }


class GraphExtractor(BaseFeaturesExtractor):
    """Node encoder, message passing, pooling and server encoder (module docstring).

    Output, flat: the server codes (``E * hidden``), the node codes (``N * hidden``), then
    the presented node's code (``hidden``), the graph context (``2 * hidden``), the server
    context (``2 * hidden``) and the globals (``G``): the last ``5 * hidden + G`` features do
    not depend on E or N (the value head reads them).
    """

    def __init__(
        self,
        observation_space: gym.Space,
        hidden: int = 64,
        rounds: int = 2,
        activation: type[nn.Module] = nn.Tanh,
    ) -> None:
        nodes = observation_space["nodes"].shape
        servers = observation_space["servers"].shape
        g = observation_space["globals"].shape[0]
        width = (servers[0] + nodes[0] + 5) * hidden + g
        super().__init__(observation_space, width)
        self.hidden, self.rounds = int(hidden), int(rounds)
        h, f, s = self.hidden, nodes[1], servers[1]
        self.node_encoder = _mlp([f + g, h, h], activation)
        self.passes = nn.ModuleList(_mlp([3 * h, h, h], activation) for _ in range(self.rounds))
        self.server_encoder = _mlp([2 * s, h, h], activation)

    @staticmethod
    def _pool(codes: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Masked mean and max over dim 1 (zeros where nothing is valid)."""
        m = mask[..., None]
        mean = (codes * m).sum(dim=1) / m.sum(dim=1).clamp(min=1.0)
        lowest = torch.full_like(codes, torch.finfo(codes.dtype).min)
        peak = torch.where(m > 0, codes, lowest).amax(dim=1)
        any_valid = mask.sum(dim=1, keepdim=True) > 0
        peak = torch.where(any_valid, peak, torch.zeros_like(peak))
        return torch.cat([mean, peak], dim=-1)

    def adjacency(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        """``(B, N, N)``: ``A[b, i, j]`` = edges ``j -> i`` in ``edge_mask`` between valid
        nodes."""
        nodes = obs["nodes"]
        n = nodes.shape[1]
        valid = (nodes[..., VALID] > 0.5).to(nodes.dtype)
        edges = obs["edges"].round().long()
        live = (obs["edge_mask"] > 0.5) & (edges >= 0).all(dim=-1) & (edges < n).all(dim=-1)
        src = torch.where(live, edges[..., 0], 0)
        dst = torch.where(live, edges[..., 1], 0)
        w = live.to(nodes.dtype)
        w = w * torch.gather(valid, 1, src) * torch.gather(valid, 1, dst)
        src_oh = nn.functional.one_hot(src, n).to(nodes.dtype) * w[..., None]  # (B, M, N)
        dst_oh = nn.functional.one_hot(dst, n).to(nodes.dtype)
        return dst_oh.transpose(1, 2) @ src_oh

    def forward(self, obs: dict[str, torch.Tensor]) -> torch.Tensor:
        nodes, servers, glob = obs["nodes"], obs["servers"], obs["globals"]
        b, n, _ = nodes.shape
        e = servers.shape[1]
        valid = (nodes[..., VALID] > 0.5).to(nodes.dtype)
        vm = valid[..., None]
        x = torch.cat([symlog(nodes), glob[:, None, :].expand(b, n, glob.shape[-1])], dim=-1)
        codes = self.node_encoder(x) * vm
        if self.rounds:
            adj = self.adjacency(obs)
            into = adj / adj.sum(dim=-1, keepdim=True).clamp(min=1.0)
            adj_t = adj.transpose(1, 2)
            out = adj_t / adj_t.sum(dim=-1, keepdim=True).clamp(min=1.0)
            for mlp in self.passes:
                msg = torch.cat([codes, into @ codes, out @ codes], dim=-1)
                codes = (codes + mlp(msg)) * vm
        context = self._pool(codes, valid)
        flag = (nodes[..., PRESENTED] + nodes[..., PRESENTED_RETRAIN]).clamp(0.0, 1.0) * valid
        presented = (codes * flag[..., None]).sum(dim=1)
        sv = symlog(servers)
        sv = torch.cat([sv, sv - sv.mean(dim=1, keepdim=True)], dim=-1)
        scodes = self.server_encoder(sv)
        spool = self._pool(scodes, torch.ones(b, e, dtype=nodes.dtype, device=nodes.device))
        return torch.cat(
            [scodes.reshape(b, -1), codes.reshape(b, -1), presented, context, spool, glob],
            dim=-1,
        )


class _GraphHead(nn.Module):
    """Logits of entry 0 (one per server) and entries 1..N (``H + 1`` per task) from the
    extractor's output, each from one MLP shared by the servers / the tasks."""

    def __init__(
        self,
        hidden: int,
        n_globals: int,
        n_options: int,
        n_servers: int,
        n_nodes: int,
        activation: type[nn.Module],
    ) -> None:
        super().__init__()
        h, g = hidden, n_globals
        self.hidden, self.n_globals = h, g
        self.n_servers, self.n_nodes = int(n_servers), int(n_nodes)
        self.server_net = _mlp([h + 5 * h + g, h, 1], activation, last_act=False)
        self.node_net = _mlp([h + 4 * h + g, h, n_options + 1], activation, last_act=False)
        for net in (self.server_net, self.node_net):
            nn.init.orthogonal_(net[-1].weight, gain=0.01)
            nn.init.zeros_(net[-1].bias)

    def forward(self, latent: torch.Tensor) -> torch.Tensor:
        b, h, e, n = latent.shape[0], self.hidden, self.n_servers, self.n_nodes
        scodes = latent[:, : e * h].reshape(b, e, h)
        codes = latent[:, e * h : (e + n) * h].reshape(b, n, h)
        tail = latent[:, (e + n) * h :]  # presented, context, server context, globals
        srv = torch.cat([scodes, tail[:, None, :].expand(b, e, tail.shape[-1])], dim=-1)
        server_logits = self.server_net(srv).squeeze(-1)  # (B, E)
        shared = tail[:, h:]  # context, server context, globals
        per = torch.cat([codes, shared[:, None, :].expand(b, n, shared.shape[-1])], dim=-1)
        node_logits = self.node_net(per).reshape(b, -1)  # (B, N * (H + 1))
        return torch.cat([server_logits, node_logits], dim=-1)


class _GraphValue(nn.Module):
    """The value from the extractor's last ``5 * hidden + G`` features."""

    def __init__(self, hidden: int, n_globals: int, activation: type[nn.Module]) -> None:
        super().__init__()
        self.width = 5 * hidden + n_globals
        self.net = _mlp([self.width, hidden, 1], activation, last_act=False)
        nn.init.orthogonal_(self.net[-1].weight, gain=1.0)
        nn.init.zeros_(self.net[-1].bias)

    def forward(self, latent: torch.Tensor) -> torch.Tensor:
        return self.net(latent[:, -self.width :])


class GraphPolicy(MaskableActorCriticPolicy):
    """MaskablePPO policy over the DAG observation's graph (module docstring).

    Args:
        hidden: Code width.
        rounds: Rounds of message passing.
        n_node_features, n_server_features, n_globals, n_options: What the weights were
            sized for (checked against the spaces; default: the spaces'). The weights do not
            depend on the number of servers, task slots or edge slots.
        Other arguments: as ``MaskableActorCriticPolicy`` (``net_arch`` is ignored: the
        heads are the shared per-server and per-task ones).

    Raises:
        ValueError: Spaces that are not the DAG family's, or feature / option counts other
            than those given.
    """

    def __init__(
        self,
        observation_space: gym.Space,
        action_space: gym.Space,
        lr_schedule: Any,
        hidden: int = 64,
        rounds: int = 2,
        n_node_features: int | None = None,
        n_server_features: int | None = None,
        n_globals: int | None = None,
        n_options: int | None = None,
        activation_fn: type[nn.Module] = nn.Tanh,
        **kwargs: Any,
    ) -> None:
        layout = _layout(observation_space, action_space)
        want = {
            "n_node_features": n_node_features,
            "n_server_features": n_server_features,
            "n_globals": n_globals,
            "n_options": n_options,
        }
        for key, value in want.items():
            if value is not None and int(value) != layout[key]:
                raise ValueError(
                    f"the policy was sized for {key}={int(value)}, the spaces have {layout[key]}"
                )
        self._layout = layout
        self._hidden, self._rounds = int(hidden), int(rounds)
        if self._hidden < 1 or self._rounds < 0:
            raise ValueError(f"hidden must be >= 1 and rounds >= 0, not {hidden}, {rounds}")
        for key in ("features_extractor_class", "features_extractor_kwargs", "net_arch"):
            kwargs.pop(key, None)
        super().__init__(
            observation_space,
            action_space,
            lr_schedule,
            net_arch={"pi": [], "vf": []},
            activation_fn=activation_fn,
            features_extractor_class=GraphExtractor,
            features_extractor_kwargs={
                "hidden": self._hidden,
                "rounds": self._rounds,
                "activation": activation_fn,
            },
            **kwargs,
        )

    def _build(self, lr_schedule: Any) -> None:
        super()._build(lr_schedule)
        lay, h, act = self._layout, self._hidden, self.activation_fn
        self.action_net = _GraphHead(
            h, lay["n_globals"], lay["n_options"], lay["n_servers"], lay["n_nodes"], act
        )
        self.value_net = _GraphValue(h, lay["n_globals"], act)
        self.optimizer = self.optimizer_class(
            self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs
        )

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data = super()._get_constructor_parameters()
        lay = self._layout
        data.update(
            hidden=self._hidden,
            rounds=self._rounds,
            n_node_features=lay["n_node_features"],
            n_server_features=lay["n_server_features"],
            n_globals=lay["n_globals"],
            n_options=lay["n_options"],
        )
        for key in ("features_extractor_class", "features_extractor_kwargs", "net_arch"):
            data.pop(key, None)
        return data

    @classmethod
    def kwargs_for(cls, env: gym.Env, policy_kwargs: dict[str, Any]) -> dict[str, Any]:
        """The keyword arguments for ``env`` (a DAG environment, possibly wrapped) from a
        hyperparameter file's ``policy_kwargs``: ``net_arch[0]`` is the code width and each
        further entry (which must have the same width) one round of message passing;
        ``activation_fn``, ``ortho_init`` pass through.

        Raises:
            ValueError: ``env`` is not a DAG environment with its own ``Dict`` observation
                and ``MultiDiscrete`` action, or ``net_arch`` does not fit.
        """
        from edgegym.wrappers import family_of

        family = family_of(env)
        if family != "dag":
            raise ValueError(f"GraphPolicy reads the dag family (DAGOffload-v0), not {family!r}")
        lay = _layout(env.observation_space, env.action_space)
        arch = policy_kwargs.get("net_arch") or [64, 64, 64]
        if isinstance(arch, dict):
            arch = arch.get("pi") or [64, 64, 64]
        arch = [int(w) for w in arch]
        if any(w != arch[0] for w in arch):
            raise ValueError(
                f"GraphPolicy's net_arch is [code width, one entry per message-passing round "
                f"of the same width], not {arch}"
            )
        out: dict[str, Any] = {
            "hidden": arch[0],
            "rounds": len(arch) - 1,
            "n_node_features": lay["n_node_features"],
            "n_server_features": lay["n_server_features"],
            "n_globals": lay["n_globals"],
            "n_options": lay["n_options"],
        }
        for key in ("activation_fn", "ortho_init"):
            if key in policy_kwargs:
                out[key] = policy_kwargs[key]
        return out

    def rebind(self, env: gym.Env, action_space: gym.Space | None = None) -> GraphPolicy:
        """These weights acting on ``env``'s spaces (another number of servers, task slots or
        edge slots); in evaluation mode.

        Raises:
            ValueError: ``env``'s spaces are not the DAG family's, or its node, server or
                global feature counts or its number of retraining configurations differ
                from the policy's (the message says which).
        """
        action_space = env.action_space if action_space is None else action_space
        have = _layout(env.observation_space, action_space)
        for key, what in (
            ("n_node_features", "features per node"),
            ("n_server_features", "features per server"),
            ("n_globals", "global features"),
            ("n_options", "retraining configurations"),
        ):
            if have[key] != self._layout[key]:
                raise ValueError(
                    f"this environment has {have[key]} {what}, the policy was trained on "
                    f"{self._layout[key]}"
                )
        new = GraphPolicy(
            env.observation_space,
            action_space,
            lambda _: 0.0,
            hidden=self._hidden,
            rounds=self._rounds,
            activation_fn=self.activation_fn,
            normalize_images=self.normalize_images,
        )
        new.load_state_dict(self.state_dict())
        new.to(self.device)
        new.set_training_mode(False)
        return new


__all__ = ["GraphExtractor", "GraphPolicy", "symlog"]

"""Policy and Q heads over the discrete action space, flat or factorised.

**Flat** (the 14-bus grids, a few hundred actions): one logit and one Q value per action index.
Expectations over the policy are exact sums, as in CleanRL's discrete SAC.

**Factorised** (the 36- and 118-bus grids, 66,810-73,000 actions): one flat head would need
106M parameters and 14 ms per action on this CPU. Instead an action is a *top-level* choice
(do nothing, reconnect line l, or reconfigure substation k) and, for a substation, one bus bit per
element but the first. The policy is

    pi(a | s) = pi_top(k | s) * prod_{e in k} p_e(b_e | s)

with independent Bernoulli bits, and the Q function is additive over the same parts:

    Q(s, a) = q_top(s, k) + sum_{e in k} q_e(s, b_e)

so the expectation over all 66,810 actions, the entropy and the log-probabilities are closed-form
sums over about 100 top-level entries and 141 elements: the cost no longer depends on the number of
actions. Every action keeps a positive probability (any bit pattern can be drawn). Bit patterns
that are not valid topologies (31 of the 65,536 at the largest substation) are redrawn when
sampling; the mass they carry is ignored in the log-probabilities. With the factorised head the
twin-Q minimum is taken over the two expectations, ``min(E_pi Q1, E_pi Q2)``, rather than inside
the expectation (which the additive form cannot express).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from ace_core.grid.action_space import ActionSpace

NEG_INF = -1e9


def mlp(inputs: int, hidden: int, outputs: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Linear(inputs, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, outputs)
    )


class ActionLayout:
    """Tensors that map action indices to top-level categories and element bits."""

    def __init__(self, space: ActionSpace) -> None:
        self.n = space.n
        self.n_top = space.n_top
        self.n_free = space.n_free
        self.top_of_action = torch.from_numpy(space.top_of_action)
        # element_bus[a, e] = 0 when free element e is not touched by action a, else its bus (1 or 2)
        element_bus = np.zeros((space.n, max(space.n_free, 1)), dtype=np.int8)
        first = space.first_topology
        for sub in range(space.n_sub):
            rows = np.flatnonzero(space.topo_sub == sub)
            n_bits = int(space.sub_info[sub]) - 1
            if len(rows) == 0 or n_bits <= 0:
                continue
            bits = (space.topo_bits[rows, None].astype(np.int64) >> np.arange(n_bits)) & 1
            element_bus[first + rows, space.free_offset[sub] : space.free_offset[sub] + n_bits] = 1 + bits
        self.element_bus = torch.from_numpy(element_bus)
        # membership[e, t] = 1 when free element e belongs to the substation of top category t
        membership = np.zeros((max(space.n_free, 1), space.n_top), dtype=np.float32)
        for t, sub in enumerate(space.top_sub):
            if sub >= 0:
                n_bits = int(space.sub_info[sub]) - 1
                membership[space.free_offset[sub] : space.free_offset[sub] + n_bits, t] = 1.0
        self.membership = torch.from_numpy(membership)
        self.space = space
        # plain Python copies for the per-decision fast path (no numpy scalar boxing)
        self._top_sub = [int(x) for x in space.top_sub]
        self._free_offset = [int(x) for x in space.free_offset]
        self._n_bits = [max(int(x) - 1, 0) for x in space.sub_info]
        self._powers = 1 << np.arange(max(self._n_bits + [1]), dtype=np.int64)
        self._topology_by_key = space._index_of_topology
        self._first_topology = space.first_topology
        self._top_action = [int(x) for x in space.top_action]

    def index_of(self, top: int, bits: np.ndarray) -> int | None:
        """Action index of top-level category ``top`` with free-element bits ``bits`` (all
        elements; only those of the category's substation are read), None if not a valid topology."""
        sub = self._top_sub[top]
        if sub < 0:
            return self._top_action[top]  # a leaf: do nothing, a reconnection or a move
        start, n_bits = self._free_offset[sub], self._n_bits[sub]
        key = int(bits[start : start + n_bits] @ self._powers[:n_bits])
        t = self._topology_by_key.get((sub, key))
        return None if t is None else self._first_topology + t


# ------------------------------------------------------------------------------------- flat


def pick_flat(logits: np.ndarray, rng: np.random.Generator | None) -> int:
    """The one way an action is drawn from logits (illegal ones very negative): a sample by
    Gumbel-max with ``rng``, the most likely without. Numpy only: the acting path is per step."""
    if rng is not None:
        logits = logits - np.log(-np.log(rng.random(len(logits))))
    return int(np.argmax(logits))


SAMPLE_TRIES = 20
"""bus-bit draws for a substation before falling back to its most likely valid configuration"""


def pick_factorised(
    top_logits: np.ndarray,
    bit_logits: np.ndarray,
    layout: ActionLayout,
    rng: np.random.Generator | None,
    best_in: Callable[[int], int],
) -> int:
    """A factorised action: the top-level choice by :func:`pick_flat`, then, for a substation, one
    bus bit per element (sampled with ``rng``, the likelier bus without) until the bits name a
    valid configuration; ``best_in(top)`` when none of the draws does."""
    top = pick_flat(top_logits, rng)
    if layout.space.top_sub[top] < 0:
        return int(layout.space.top_action[top])
    for _ in range(SAMPLE_TRIES if rng is not None else 1):
        if rng is None:
            bits = (bit_logits > 0).astype(np.int64)
        else:
            bits = (rng.random(len(bit_logits)) < 1.0 / (1.0 + np.exp(-bit_logits))).astype(np.int64)
        index = layout.index_of(top, bits)
        if index is not None:
            return index
    return best_in(top)


class FlatActor(nn.Module):
    def __init__(self, obs_size: int, layout: ActionLayout, hidden: int) -> None:
        super().__init__()
        self.net = mlp(obs_size, hidden, layout.n)
        self.layout = layout

    def forward(self, obs: torch.Tensor, top_mask: torch.Tensor) -> FlatPolicy:
        legal = top_mask[:, self.layout.top_of_action]
        return FlatPolicy(self.net(obs).masked_fill(~legal, NEG_INF), legal)


class FlatQ(nn.Module):
    def __init__(self, obs_size: int, layout: ActionLayout, hidden: int) -> None:
        super().__init__()
        self.net = mlp(obs_size, hidden, layout.n)
        self.layout = layout

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.net(obs)

    @staticmethod
    def at(q: torch.Tensor, actions: torch.Tensor) -> torch.Tensor:
        return q.gather(1, actions[:, None]).squeeze(1)

    def soft_max(self, q: torch.Tensor, top_mask: torch.Tensor) -> torch.Tensor:
        """``log sum_a exp Q(s, a)`` over the legal actions (CQL's soft maximum)."""
        legal = top_mask[:, self.layout.top_of_action]
        return q.masked_fill(~legal, NEG_INF).logsumexp(1)


class FlatPolicy:
    def __init__(self, logits: torch.Tensor, legal: torch.Tensor) -> None:
        self.log_probs = F.log_softmax(logits, dim=1)
        self.probs = self.log_probs.exp()
        self.legal = legal

    def entropy(self) -> torch.Tensor:
        return -(self.probs * self.log_probs.masked_fill(~self.legal, 0.0)).sum(1)

    def expected_min(self, q1: torch.Tensor, q2: torch.Tensor) -> torch.Tensor:
        return (self.probs * torch.minimum(q1, q2).masked_fill(~self.legal, 0.0)).sum(1)

    def log_prob(self, actions: torch.Tensor) -> torch.Tensor:
        return self.log_probs.gather(1, actions[:, None]).squeeze(1)

    # acting, one observation at a time
    def sample(self, rng: np.random.Generator) -> int:
        return pick_flat(self.log_probs[0].detach().numpy(), rng)

    def greedy(self) -> int:
        return pick_flat(self.log_probs[0].detach().numpy(), None)

    @torch.no_grad()
    def top_k(self, k: int) -> list[tuple[int, float]]:
        values, indices = (
            self.probs[0].masked_fill(~self.legal[0], -1.0).topk(min(k, int(self.legal[0].sum())))
        )
        return [(int(i), float(v)) for v, i in zip(values, indices)]


# ------------------------------------------------------------------------------- factorised


class FactorisedActor(nn.Module):
    def __init__(self, obs_size: int, layout: ActionLayout, hidden: int) -> None:
        super().__init__()
        self.net = mlp(obs_size, hidden, layout.n_top + layout.n_free)
        self.layout = layout

    def forward(self, obs: torch.Tensor, top_mask: torch.Tensor) -> FactorisedPolicy:
        out = self.net(obs)
        top_logits = out[:, : self.layout.n_top].masked_fill(~top_mask, NEG_INF)
        return FactorisedPolicy(top_logits, out[:, self.layout.n_top :], top_mask, self.layout)


class FactorisedQ(nn.Module):
    """Outputs ``(q_top, q_elem)``: (B, n_top) and (B, n_free, 2)."""

    def __init__(self, obs_size: int, layout: ActionLayout, hidden: int) -> None:
        super().__init__()
        self.net = mlp(obs_size, hidden, layout.n_top + 2 * layout.n_free)
        self.layout = layout

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out = self.net(obs)
        n_top = self.layout.n_top
        return out[:, :n_top], out[:, n_top:].reshape(-1, self.layout.n_free, 2)

    def at(self, q: tuple[torch.Tensor, torch.Tensor], actions: torch.Tensor) -> torch.Tensor:
        q_top, q_elem = q
        top = self.layout.top_of_action[actions]
        bus = self.layout.element_bus[actions].long()  # (B, n_free) in {0, 1, 2}
        elem = torch.where(bus == 2, q_elem[..., 1], q_elem[..., 0]) * (bus > 0)
        return q_top.gather(1, top[:, None]).squeeze(1) + elem.sum(1)

    def soft_max(self, q: tuple[torch.Tensor, torch.Tensor], top_mask: torch.Tensor) -> torch.Tensor:
        """``log sum_a exp Q(s, a)`` over the legal categories, closed-form as the Q is additive:
        a substation's configurations sum to ``q_top + sum_e logsumexp(q_e(bus 1), q_e(bus 2))``
        (every bit pattern, the few that are not valid topologies included)."""
        q_top, q_elem = q
        per_top = q_top + q_elem.logsumexp(2) @ self.layout.membership
        return per_top.masked_fill(~top_mask, NEG_INF).logsumexp(1)


class FactorisedPolicy:
    def __init__(self, top_logits, bit_logits, top_mask, layout: ActionLayout) -> None:
        self.layout = layout
        self.top_mask = top_mask
        self.top_log_probs = F.log_softmax(top_logits, dim=1)
        self.top_probs = self.top_log_probs.exp()
        self.bit_logits = bit_logits
        self.log_p2 = F.logsigmoid(bit_logits)  # log p(bus 2)
        self.log_p1 = F.logsigmoid(-bit_logits)  # log p(bus 1)
        self.p2 = self.log_p2.exp()

    def _per_top(self, per_element: torch.Tensor) -> torch.Tensor:
        """Sum a (B, n_free) quantity over the elements of each top-level category."""
        return per_element @ self.layout.membership

    def entropy(self) -> torch.Tensor:
        top_entropy = -(self.top_probs * self.top_log_probs.masked_fill(~self.top_mask, 0.0)).sum(1)
        bit_entropy = -(self.p2 * self.log_p2 + (1 - self.p2) * self.log_p1)
        return top_entropy + (self.top_probs * self._per_top(bit_entropy)).sum(1)

    def expected(self, q: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        q_top, q_elem = q
        per_element = (1 - self.p2) * q_elem[..., 0] + self.p2 * q_elem[..., 1]
        value = (q_top + self._per_top(per_element)).masked_fill(~self.top_mask, 0.0)
        return (self.top_probs * value).sum(1)

    def expected_min(self, q1, q2) -> torch.Tensor:
        return torch.minimum(self.expected(q1), self.expected(q2))

    def log_prob(self, actions: torch.Tensor) -> torch.Tensor:
        top = self.layout.top_of_action[actions]
        bus = self.layout.element_bus[actions].long()
        bits = torch.where(bus == 2, self.log_p2, self.log_p1) * (bus > 0)
        return self.top_log_probs.gather(1, top[:, None]).squeeze(1) + bits.sum(1)

    # acting, one observation at a time
    def sample(self, rng: np.random.Generator) -> int:
        return self._pick(rng)

    def greedy(self) -> int:
        return self._pick(None)

    def _pick(self, rng: np.random.Generator | None) -> int:
        top_logits, bit_logits = self.top_log_probs[0].detach().numpy(), self.bit_logits[0].detach().numpy()
        return pick_factorised(top_logits, bit_logits, self.layout, rng, self._best_in)

    @torch.no_grad()
    def _best_in(self, top: int) -> int:
        """Most likely valid configuration of a substation (scores all of its actions)."""
        space = self.layout.space
        rows = space.first_topology + np.flatnonzero(space.topo_sub == space.top_sub[top])
        scores = self._log_prob_one(torch.from_numpy(rows))
        return int(rows[int(scores.argmax())])

    def _log_prob_one(self, actions: torch.Tensor) -> torch.Tensor:
        bus = self.layout.element_bus[actions].long()
        bits = torch.where(bus == 2, self.log_p2[0], self.log_p1[0]) * (bus > 0)
        return self.top_log_probs[0, self.layout.top_of_action[actions]] + bits.sum(1)

    @torch.no_grad()
    def top_k(self, k: int, flips: int = 4) -> list[tuple[int, float]]:
        """The k most likely legal actions (searching each substation's most likely configuration
        and those one or two bit flips away, among its ``flips`` least certain bits)."""
        space = self.layout.space
        p2 = self.p2[0].detach().numpy()
        best_bits = (p2 > 0.5).astype(np.int64)
        margin = np.abs(self.bit_logits[0].detach().numpy())
        candidates: set[int] = set()
        for top in np.flatnonzero(self.top_mask[0].numpy()):
            sub = int(space.top_sub[top])
            if sub < 0:
                candidates.add(int(space.top_action[top]))
                continue
            start, n_bits = space.free_offset[sub], int(space.sub_info[sub]) - 1
            uncertain = start + np.argsort(margin[start : start + n_bits])[:flips]
            variants = [best_bits]
            for i, e in enumerate(uncertain):
                one = best_bits.copy()
                one[e] ^= 1
                variants.append(one)
                for f in uncertain[i + 1 :]:
                    two = one.copy()
                    two[f] ^= 1
                    variants.append(two)
            for bits in variants:
                index = self.layout.index_of(int(top), bits)
                if index is not None:
                    candidates.add(index)
        actions = torch.tensor(sorted(candidates), dtype=torch.long)
        probs = self._log_prob_one(actions).exp()
        values, order = probs.topk(min(k, len(actions)))
        return [(int(actions[i]), float(v)) for v, i in zip(values, order)]


def make_heads(kind: str, obs_size: int, space: ActionSpace, hidden: int):
    """(actor, q1, q2, q1_target, q2_target, layout) for head kind ``flat`` or ``factorised``."""
    layout = ActionLayout(space)
    actor_cls, q_cls = (FlatActor, FlatQ) if kind == "flat" else (FactorisedActor, FactorisedQ)
    actor = actor_cls(obs_size, layout, hidden)
    q1, q2 = q_cls(obs_size, layout, hidden), q_cls(obs_size, layout, hidden)
    q1_target, q2_target = q_cls(obs_size, layout, hidden), q_cls(obs_size, layout, hidden)
    q1_target.load_state_dict(q1.state_dict())
    q2_target.load_state_dict(q2.state_dict())
    return actor, q1, q2, q1_target, q2_target, layout


def resolve_head(kind: str, space: ActionSpace, flat_limit: int = 5_000) -> str:
    if kind == "auto":
        return "flat" if space.n <= flat_limit else "factorised"
    return kind

"""A GridACE policy as a grid2op agent, needing only numpy, torch and grid2op.

This file is copied verbatim into every exported submission; it must never import GridACE. It
reproduces GridACE's deployed SAC agent decision for decision:

- below the activation threshold (max rho < ``rho_threshold``) it reconnects the first
  disconnected line whose cooldown is over, or does nothing;
- at or above it, the actor network picks the most likely legal action: with the **flat** head
  the argmax over every action; with the **factorised** head the most likely top-level choice
  (do nothing, reconnect line l, reconfigure substation k) and, for a substation, each element's
  most likely bus; when those bits are not a valid topology, the most likely valid configuration
  of that substation.

Action indices: 0 do nothing; 1..n_line reconnect line ``index - 1``; then the topology actions,
each a substation and bus bits (bit j set: element j+1 of the substation on bus 2; element 0
stays on bus 1), in the order of ``actions.npz``.
"""

from __future__ import annotations

import numpy as np
import torch
from grid2op.Agent import BaseAgent
from torch import nn
from torch.nn import functional as F

MAINTENANCE_HORIZON = 12
NEG_INF = -1e9


class Features:
    """The observation as the policy's normalised feature vector (GridACE's FeatureBuilder)."""

    def __init__(self, env, load_scale: np.ndarray, overflow: bool = False) -> None:
        self.gen_pmax = np.maximum(np.asarray(env.gen_pmax, dtype=np.float32), 1e-3)
        params = env.parameters
        self.line_cooldown = float(max(params.NB_TIMESTEP_COOLDOWN_LINE, params.NB_TIMESTEP_RECONNECTION, 1))
        self.sub_cooldown = float(max(params.NB_TIMESTEP_COOLDOWN_SUB, 1))
        self.load_scale = np.maximum(np.asarray(load_scale, dtype=np.float32), 1e-3)
        self.overflow_allowed = float(max(params.NB_TIMESTEP_OVERFLOW_ALLOWED, 1))
        self.overflow = overflow  # steps over the limit, for policies trained with that block

    def __call__(self, obs) -> np.ndarray:
        maintenance_in = obs.time_next_maintenance
        soon = (maintenance_in > 0) & (maintenance_in <= MAINTENANCE_HORIZON)
        maintenance = np.where(soon, 1.0 - maintenance_in / MAINTENANCE_HORIZON, 0.0)
        maintenance[(maintenance_in == 0) & (obs.duration_next_maintenance > 0)] = 1.0
        minutes = obs.hour_of_day * 60 + obs.minute_of_hour
        angle = 2 * np.pi * minutes / 1440.0
        return np.concatenate(
            [
                np.clip(obs.rho, 0.0, 2.0),
                obs.line_status,
                np.minimum(obs.time_before_cooldown_line / self.line_cooldown, 1.0),
                maintenance,
                obs.topo_vect == 2,
                np.clip(obs.gen_p / self.gen_pmax, -1.0, 1.0),
                np.clip(obs.load_p / self.load_scale, 0.0, 2.0),
                np.minimum(obs.time_before_cooldown_sub / self.sub_cooldown, 1.0),
                [np.sin(angle), np.cos(angle), obs.day_of_week / 6.0],
                np.minimum(obs.timestep_overflow / self.overflow_allowed, 1.0) if self.overflow else [],
            ],
            dtype=np.float32,
        )


class ActionSet:
    """The agent's actions: index <-> grid2op action, and their legality at an observation."""

    def __init__(self, arrays, env) -> None:
        self.n_line = int(arrays["n_line"])
        self.sub_info = np.asarray(arrays["sub_info"], dtype=np.int64)
        self.topo_sub = np.asarray(arrays["topo_sub"], dtype=np.int64)
        self.topo_bits = np.asarray(arrays["topo_bits"], dtype=np.uint64)
        self.line_or_sub = np.asarray(arrays["line_or_sub"], dtype=np.int64)
        self.line_ex_sub = np.asarray(arrays["line_ex_sub"], dtype=np.int64)
        self.first_topology = 1 + self.n_line
        self.n = self.first_topology + len(self.topo_sub)
        self.sub_start = np.concatenate([[0], np.cumsum(self.sub_info)[:-1]]).astype(np.int64)
        self.subs_with_actions = np.unique(self.topo_sub).astype(np.int64)
        sub_to_top = np.full(len(self.sub_info), -1, dtype=np.int64)
        sub_to_top[self.subs_with_actions] = self.first_topology + np.arange(len(self.subs_with_actions))
        self.top_of_action = np.concatenate([np.arange(self.first_topology), sub_to_top[self.topo_sub]])
        self.top_sub = np.concatenate([np.full(self.first_topology, -1), self.subs_with_actions])
        self.n_top = len(self.top_sub)
        self.n_bits = np.maximum(self.sub_info - 1, 0)
        self.free_offset = np.concatenate([[0], np.cumsum(self.n_bits)[:-1]]).astype(np.int64)
        self.n_free = int(self.n_bits.sum())
        self.index_of_bits = {
            (int(s), int(b)): i for i, (s, b) in enumerate(zip(self.topo_sub, self.topo_bits))
        }
        self.g2op_space = env.action_space
        self._actions: dict = {}

    def top_mask(self, obs) -> np.ndarray:
        """Legal top-level choices: cooldowns respected, no set-bus on a blocked line's ends."""
        line_out = ~obs.line_status
        line_ready = obs.time_before_cooldown_line == 0
        sub_ok = obs.time_before_cooldown_sub == 0
        blocked = line_out & ~line_ready
        if blocked.any():
            sub_ok = sub_ok.copy()
            sub_ok[self.line_or_sub[blocked]] = False
            sub_ok[self.line_ex_sub[blocked]] = False
        return np.concatenate([[True], line_out & line_ready, sub_ok[self.subs_with_actions]])

    def changes_nothing(self, obs, index: int) -> bool:
        """True for a topology action that leaves its substation exactly as it is (a no-op in
        disguise; with every element connected, swapping the two buses changes nothing either)."""
        if index < self.first_topology:
            return False
        t = index - self.first_topology
        sub = int(self.topo_sub[t])
        n = int(self.sub_info[sub])
        buses = np.concatenate([[1], 1 + ((int(self.topo_bits[t]) >> np.arange(n - 1)) & 1)])
        start = int(self.sub_start[sub])
        current = np.asarray(obs.topo_vect[start : start + n])
        if (current <= 0).any():
            return False  # setting a disconnected element's bus reconnects it
        return bool(np.array_equal(buses, current) or np.array_equal(3 - buses, current))

    def topology_index(self, top: int, bits: np.ndarray) -> int | None:
        """Index of substation category ``top`` with free-element bits ``bits``, None if invalid."""
        sub = int(self.top_sub[top])
        start, n_bits = int(self.free_offset[sub]), int(self.n_bits[sub])
        key = int(bits[start : start + n_bits] @ (1 << np.arange(n_bits, dtype=np.int64)))
        t = self.index_of_bits.get((sub, key))
        return None if t is None else self.first_topology + t

    def element_bus(self, rows: np.ndarray) -> torch.Tensor:
        """(len(rows), n_free) bus of each free element under each topology row: 0 untouched, 1 or 2."""
        out = np.zeros((len(rows), max(self.n_free, 1)), dtype=np.int8)
        for sub in np.unique(self.topo_sub[rows]):
            mine = np.flatnonzero(self.topo_sub[rows] == sub)
            n_bits = int(self.n_bits[sub])
            bits = (self.topo_bits[rows[mine], None].astype(np.int64) >> np.arange(n_bits)) & 1
            start = int(self.free_offset[sub])
            out[mine, start : start + n_bits] = 1 + bits
        return torch.from_numpy(out)

    def to_grid2op(self, index: int):
        action = self._actions.get(index)
        if action is None:
            if index == 0:
                action = self.g2op_space({})
            elif index <= self.n_line:
                action = self.g2op_space({"set_line_status": [(index - 1, 1)]})
            else:
                t = index - self.first_topology
                sub = int(self.topo_sub[t])
                bits = (int(self.topo_bits[t]) >> np.arange(int(self.sub_info[sub]) - 1)) & 1
                vec = np.zeros(int(self.sub_info.sum()), dtype=np.int32)
                start = int(self.sub_start[sub])
                vec[start : start + int(self.sub_info[sub])] = np.concatenate([[1], 1 + bits])
                action = self.g2op_space({"set_bus": vec})
            if len(self._actions) > 20_000:  # bounded memory on the 36- and 118-bus grids
                self._actions.clear()
            self._actions[index] = action
        return action


def mlp(inputs: int, hidden: int, outputs: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Linear(inputs, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, outputs)
    )


class Actor(nn.Module):
    """The trained actor network (its state dict is ``weights.pt``)."""

    def __init__(self, inputs: int, hidden: int, outputs: int) -> None:
        super().__init__()
        self.net = mlp(inputs, hidden, outputs)


class ExportedAgent(BaseAgent):
    """GridACE's SAC agent, greedy: see the module docstring for the decision rule."""

    def __init__(
        self, env, actor: Actor, actions: ActionSet, features: Features, head: str, rho_threshold: float
    ):
        super().__init__(env.action_space)
        self.actor = actor.eval()
        self.actions = actions
        self.features = features
        self.head = head
        self.rho_threshold = rho_threshold
        # the fast path: plain numpy over the actor's weights, no autograd or torch dispatch
        layers = [m for m in actor.net if isinstance(m, nn.Linear)]
        self._weights = [(m.weight.detach().numpy().T, m.bias.detach().numpy()) for m in layers]

    def act(self, observation, reward, done=False):
        return self.actions.to_grid2op(self.choose(observation))

    def choose(self, obs) -> int:
        if obs.rho.max() < self.rho_threshold:
            return self.reconnect_or_nothing(obs)
        index = self.greedy(self.features(obs), self.actions.top_mask(obs))
        # GridACE plays a no-op in disguise as do-nothing: it is not a decision
        return 0 if self.actions.changes_nothing(obs, index) else index

    @staticmethod
    def reconnect_or_nothing(obs) -> int:
        ready = np.flatnonzero(~obs.line_status & (obs.time_before_cooldown_line == 0))
        return 1 + int(ready[0]) if len(ready) else 0

    def greedy(self, features: np.ndarray, top_mask: np.ndarray) -> int:
        out = self._forward(features)
        actions = self.actions
        if self.head == "flat":
            return int(np.argmax(np.where(top_mask[actions.top_of_action], out, -np.inf)))
        top = int(np.argmax(np.where(top_mask, out[: actions.n_top], -np.inf)))
        if actions.top_sub[top] < 0:
            return top
        index = actions.topology_index(top, (out[actions.n_top :] > 0).astype(np.int64))
        return index if index is not None else self._best_in(features, top_mask, top)

    def _forward(self, x: np.ndarray) -> np.ndarray:
        *hidden, (w_out, b_out) = self._weights
        for w, b in hidden:
            x = np.maximum(x @ w + b, 0.0)
        return x @ w_out + b_out

    @torch.inference_mode()
    def _best_in(self, features: np.ndarray, top_mask: np.ndarray, top: int) -> int:
        """Most likely valid configuration of the chosen substation (scores each of its actions)."""
        actions = self.actions
        out = self.actor.net(torch.from_numpy(features)[None])
        top_logits = out[:, : actions.n_top].masked_fill(~torch.from_numpy(top_mask)[None], NEG_INF)
        top_log_probs = F.log_softmax(top_logits, dim=1)
        bit_logits = out[:, actions.n_top :]
        log_p2, log_p1 = F.logsigmoid(bit_logits), F.logsigmoid(-bit_logits)
        rows = np.flatnonzero(actions.topo_sub == actions.top_sub[top])
        bus = actions.element_bus(rows).long()
        bits = torch.where(bus == 2, log_p2[0], log_p1[0]) * (bus > 0)
        scores = top_log_probs[0, torch.full((len(rows),), top)] + bits.sum(1)
        return int(actions.first_topology + rows[int(scores.argmax())])

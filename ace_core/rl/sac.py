"""Discrete Soft Actor-Critic (Christodoulou 2019; CleanRL's sac_atari) over the grid's actions.

The update reads like the equations: soft TD targets with the expectation over the whole policy
(no sampled next action), twin Q with the minimum, automatic temperature towards
``target_entropy = scale * log(N)``, illegal actions masked out of the policy. ``batch.weights``
multiplies the policy loss per row (1 for the agent's own decisions; the mixed buffer gives LLM
refinements their priority), so the mixed buffer needs no special case here.

That policy loss, ``w * (alpha * E_pi[log pi] - E_pi[min Q])``, never reads the row's action: an LLM
refinement reaches the policy only through ``Q(s, a_llm)``. ``imitation`` adds, for the rows whose
``sources`` is ``SOURCE_LLM``, a behaviour-cloning term ``imitation * w * -log pi(a_llm | s)`` (as in
DQfD / AWAC), averaged over the whole batch like the rest of the loss; 0 leaves plain SAC.

``anchor`` adds ``anchor * -log pi(a_expert | s)`` over a batch of the expert's mined decisions
(:mod:`ace_core.imitation.anchor`, given to :meth:`SAC.update`), keeping a cloned policy near the expert.

``conservative`` adds CQL's term (Kumar et al. 2020; CQL(H) for discrete actions) to each critic's
loss, ``conservative * (log sum_a exp Q(s, a) - Q(s, a_taken))``: the values of actions the run
never took are pushed down and the ones it took up, so the actor, which climbs ``E_pi[min Q]``,
is not drawn to actions whose value only the critics' extrapolation vouches for. The soft maximum
is exact over the flat head and closed-form over the factorised one.

A policy started from imitation (``TrainConfig.pretrain_mine``, ``init_from``) meets critics that
know nothing of it: ``actor_delay`` updates train the critics alone on its own decisions before
the actor moves, and ``init_alpha`` starts the temperature low enough that the entropy bonus does
not flatten a sharp cloned policy in the first updates.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math

import numpy as np
import torch
from torch.nn import functional as F

from ace_core.config.sections import SACConfig
from ace_core.grid.action_space import ActionSpace
from ace_core.kernels import adam
from ace_core.rl.buffer import SOURCE_LLM, Batch
from ace_core.rl.cloning import cloning_loss
from ace_core.rl.heads import make_heads, pick_factorised, pick_flat, resolve_head


class SAC:
    def __init__(self, obs_size: int, space: ActionSpace, config: SACConfig) -> None:
        # "auto" becomes the head this space gets, so a saved config names the head it built
        config = dataclasses.replace(config, head=resolve_head(config.head, space))
        self.config = config
        self.space = space
        self.actor, self.qf1, self.qf2, self.qf1_target, self.qf2_target, self.layout = make_heads(
            config.head, obs_size, space, config.hidden
        )
        self._q_params = [*self.qf1.parameters(), *self.qf2.parameters()]
        self.q_optimizer = adam(self._q_params, lr=config.q_lr, eps=1e-4)
        self.actor_optimizer = adam(self.actor.parameters(), lr=config.policy_lr, eps=1e-4)
        self.target_entropy = config.target_entropy_scale * math.log(space.n)
        self.log_alpha = torch.full((1,), math.log(config.init_alpha), requires_grad=True)
        self.alpha_optimizer = adam([self.log_alpha], lr=config.q_lr, eps=1e-4)
        self.updates = 0
        self._actor_weights = None

    @property
    def alpha(self) -> float:
        return float(self.log_alpha.exp())

    def update(self, batch: Batch, anchor=None) -> dict[str, float]:
        """One update of critics, actor and temperature; ``anchor``, an
        :class:`~ace_core.imitation.anchor.AnchorBatch` of expert decisions, when ``config.anchor > 0``."""
        alpha = self.log_alpha.exp().detach()
        with torch.no_grad():
            next_policy = self.actor(batch.next_obs, batch.next_mask)
            next_value = (
                next_policy.expected_min(self.qf1_target(batch.next_obs), self.qf2_target(batch.next_obs))
                + alpha * next_policy.entropy()
            )
            target = batch.rewards + batch.discounts * (1.0 - batch.dones) * next_value

        qf1_values, qf2_values = self.qf1(batch.obs), self.qf2(batch.obs)
        qf1_taken, qf2_taken = self.qf1.at(qf1_values, batch.actions), self.qf2.at(qf2_values, batch.actions)
        qf1_loss, qf2_loss = F.mse_loss(qf1_taken, target), F.mse_loss(qf2_taken, target)
        q_loss = qf1_loss + qf2_loss
        conservative = torch.zeros(())
        if self.config.conservative > 0:
            conservative = (
                self.qf1.soft_max(qf1_values, batch.mask)
                - qf1_taken
                + self.qf2.soft_max(qf2_values, batch.mask)
                - qf2_taken
            ).mean()
            q_loss = q_loss + self.config.conservative * conservative
        self.q_optimizer.zero_grad()
        q_loss.backward()
        torch.nn.utils.clip_grad_norm_(self._q_params, self.config.max_grad_norm)
        self.q_optimizer.step()

        if self.updates < self.config.actor_delay:
            self._soft_update_targets()
            self.updates += 1
            return {
                "losses/qf1_loss": qf1_loss.item(),
                "losses/qf2_loss": qf2_loss.item(),
                "losses/conservative": conservative.item(),
                "losses/alpha": alpha.item(),
                "losses/q_target_mean": target.mean().item(),
            }

        policy = self.actor(batch.obs, batch.mask)
        entropy = policy.entropy()
        q_detached = (_detach(qf1_values), _detach(qf2_values))
        actor_loss = (batch.weights * (-alpha * entropy - policy.expected_min(*q_detached))).mean()
        imitation = torch.zeros(())
        if self.config.imitation > 0:
            llm_rows = (batch.sources == SOURCE_LLM).float()
            imitation = (llm_rows * batch.weights * -policy.log_prob(batch.actions)).mean()
            actor_loss = actor_loss + self.config.imitation * imitation
        anchored = torch.zeros(())
        if self.config.anchor > 0 and anchor is not None:
            anchored = cloning_loss(
                self.actor(anchor.obs, anchor.mask).log_prob(anchor.actions),
                anchor.actions,
                self.config.anchor_action_weight,
            )
            actor_loss = actor_loss + self.config.anchor * anchored
        self.actor_optimizer.zero_grad()
        actor_loss.backward()
        torch.nn.utils.clip_grad_norm_(self.actor.parameters(), self.config.max_grad_norm)
        self.actor_optimizer.step()

        alpha_loss = (self.log_alpha.exp() * (entropy.detach() - self.target_entropy)).mean()
        self.alpha_optimizer.zero_grad()
        alpha_loss.backward()
        self.alpha_optimizer.step()

        self._soft_update_targets()
        self.updates += 1
        return {
            "losses/qf1_loss": qf1_loss.item(),
            "losses/qf2_loss": qf2_loss.item(),
            "losses/conservative": conservative.item(),
            "losses/actor_loss": actor_loss.item(),
            "losses/imitation": imitation.item(),
            "losses/anchor": anchored.item(),
            "losses/alpha_loss": alpha_loss.item(),
            "losses/alpha": alpha.item(),
            "losses/entropy": entropy.mean().item(),
            "losses/q_target_mean": target.mean().item(),
        }

    def _soft_update_targets(self) -> None:
        with torch.no_grad():
            online = [*self.qf1.parameters(), *self.qf2.parameters()]
            targets = [*self.qf1_target.parameters(), *self.qf2_target.parameters()]
            torch._foreach_lerp_(targets, online, self.config.tau)

    def act(self, features: np.ndarray, top_mask: np.ndarray, rng: np.random.Generator | None) -> int:
        """One action for one observation: sampled with ``rng``, the most likely one without.

        The deployment fast path: plain numpy over views of the actor's weights (they follow the
        optimiser's in-place updates), Gumbel-max sampling, no autograd or torch dispatch.
        """
        out = self._numpy_actor(features)
        if self.config.head == "flat":
            return pick_flat(np.where(top_mask[self.space.top_of_action], out, -np.inf), rng)
        n_top = self.space.n_top
        top_logits = np.where(top_mask, out[:n_top], -np.inf)
        return pick_factorised(
            top_logits,
            out[n_top:],
            self.layout,
            rng,
            lambda top: self.policy(features, top_mask)._best_in(top),
        )

    def _numpy_actor(self, x: np.ndarray) -> np.ndarray:
        if self._actor_weights is None:
            layers = [m for m in self.actor.net if isinstance(m, torch.nn.Linear)]
            self._actor_weights = [(m.weight.detach().numpy().T, m.bias.detach().numpy()) for m in layers]
        *hidden, (w_out, b_out) = self._actor_weights
        for w, b in hidden:
            x = np.maximum(x @ w + b, 0.0)
        return x @ w_out + b_out

    @torch.inference_mode()
    def critic_values(self, features: np.ndarray, actions: list[int]) -> np.ndarray:
        """``min(Q1, Q2)`` of each of ``actions`` at one observation (the pessimistic value the
        actor climbs), for judging candidates without simulating them."""
        obs = torch.from_numpy(features)[None].expand(len(actions), -1)
        chosen = torch.as_tensor(actions, dtype=torch.long)
        q1 = self.qf1.at(self.qf1(obs), chosen)
        q2 = self.qf2.at(self.qf2(obs), chosen)
        return torch.minimum(q1, q2).numpy()

    @torch.inference_mode()
    def policy(self, features: np.ndarray, top_mask: np.ndarray):
        """The action distribution at one observation (sample, greedy or top_k from it)."""
        return self.actor(torch.from_numpy(features)[None], torch.from_numpy(top_mask)[None])

    def state_dict(self) -> dict:
        return {
            "actor": self.actor.state_dict(),
            "qf1": self.qf1.state_dict(),
            "qf2": self.qf2.state_dict(),
            "qf1_target": self.qf1_target.state_dict(),
            "qf2_target": self.qf2_target.state_dict(),
            "log_alpha": self.log_alpha.detach().clone(),
            "q_optimizer": self.q_optimizer.state_dict(),
            "actor_optimizer": self.actor_optimizer.state_dict(),
            "alpha_optimizer": self.alpha_optimizer.state_dict(),
            "updates": self.updates,
        }

    def weights_digest(self) -> str:
        """:func:`weights_digest` of these networks."""
        return weights_digest({name: getattr(self, name).state_dict() for name in DIGESTED_NETWORKS})

    def load_state_dict(self, state: dict) -> None:
        for name in ("actor", "qf1", "qf2", "qf1_target", "qf2_target"):
            getattr(self, name).load_state_dict(state[name])
        self._actor_weights = None
        with torch.no_grad():
            self.log_alpha.copy_(state["log_alpha"])
        for name in ("q_optimizer", "actor_optimizer", "alpha_optimizer"):
            getattr(self, name).load_state_dict(state[name])
        self.updates = state["updates"]


DIGESTED_NETWORKS = ("actor", "qf1", "qf2")


def weights_digest(state: dict) -> str:
    """16 hex digits over the actor's and the critics' weights in ``state`` (a SAC's state dict,
    as :meth:`SAC.state_dict` gives it and a checkpoint's ``"sac"`` holds it), bit for bit: two
    machines whose clones of the same mines have the same digest trained the same networks."""
    digest = hashlib.sha256()
    for name in DIGESTED_NETWORKS:
        for key, tensor in sorted(state[name].items()):
            digest.update(f"{name}.{key}".encode() + tensor.detach().cpu().numpy().tobytes())
    return digest.hexdigest()[:16]


def _detach(q):
    return tuple(t.detach() for t in q) if isinstance(q, tuple) else q.detach()

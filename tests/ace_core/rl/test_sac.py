"""SAC learns a contextual bandit over the grid's actions: the best action depends on the state."""

import numpy as np
import pytest
import torch

from ace_core.imitation.anchor import AnchorBatch
from ace_core.rl.buffer import SOURCE_LLM, SOURCE_RL, ReplayBuffer, Transition
from ace_core.rl.sac import SAC, SACConfig


def _bandit(space, rng, n=512, obs_size=6):
    """Reward 1 for action ``good[c]`` in context c, 0 otherwise; one-step episodes."""
    good = [space.first_topology + 3, space.first_topology + 120]
    buffer = ReplayBuffer(n, obs_size, space.n_top)
    mask = np.ones(space.n_top, bool)
    for _ in range(n):
        c = int(rng.integers(2))
        obs = np.zeros(obs_size, np.float32)
        obs[c] = 1.0
        action = good[c] if rng.random() < 0.3 else int(rng.integers(space.n))
        reward = 1.0 if action == good[c] else 0.0
        buffer.add(Transition(obs, mask, action, reward, obs, mask, True, 0.99, reward))
    return buffer, good, mask


@pytest.mark.parametrize("head", ["flat", "factorised"])
def test_sac_learns_the_best_action_per_state(sandbox_space, head):
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    buffer, good, mask = _bandit(sandbox_space, rng)
    sac = SAC(6, sandbox_space, SACConfig(head=head, hidden=64, policy_lr=3e-3, q_lr=3e-3))
    contexts = np.eye(6, dtype=np.float32)[:2]
    before = [float(sac.policy(contexts[c], mask).log_prob(torch.tensor([good[c]]))[0]) for c in (0, 1)]
    first = sac.update(buffer.sample(64, rng))
    for _ in range(250):
        last = sac.update(buffer.sample(64, rng))
    assert last["losses/qf1_loss"] < first["losses/qf1_loss"]
    for c in (0, 1):
        obs = contexts[c]
        policy = sac.policy(obs, mask)
        assert float(policy.log_prob(torch.tensor([good[c]]))[0]) > before[c] + 1.0  # it concentrates
        assert policy.greedy() == good[c]
        assert sac.act(obs, mask, None) == good[c]  # the numpy fast path agrees


def test_the_weights_digest_is_the_networks_own_bit_for_bit(sandbox_space):
    rng = np.random.default_rng(0)
    buffer, _, _ = _bandit(sandbox_space, rng, n=64)
    config = SACConfig(head="flat", hidden=32)
    torch.manual_seed(0)
    sac = SAC(6, sandbox_space, config)
    torch.manual_seed(0)
    twin = SAC(6, sandbox_space, config)
    assert sac.weights_digest() == twin.weights_digest() and len(sac.weights_digest()) == 16
    sac.update(buffer.sample(32, rng))
    assert sac.weights_digest() != twin.weights_digest()  # an update is seen
    twin.load_state_dict(sac.state_dict())
    assert twin.weights_digest() == sac.weights_digest()
    with torch.no_grad():
        next(twin.qf2.parameters()).view(-1)[0] += 1e-6  # one weight of one critic, 1e-6 off
    assert twin.weights_digest() != sac.weights_digest()


def test_target_networks_follow_slowly(sandbox_space):
    rng = np.random.default_rng(0)
    buffer, _, _ = _bandit(sandbox_space, rng, n=128)
    sac = SAC(6, sandbox_space, SACConfig(head="flat", hidden=32, tau=0.1))
    before = [p.clone() for p in sac.qf1_target.parameters()]
    sac.update(buffer.sample(32, rng))
    online = list(sac.qf1.parameters())
    for old, new, live in zip(before, sac.qf1_target.parameters(), online):
        assert torch.allclose(new, old + 0.1 * (live - old), atol=1e-6)


def test_weights_scale_the_policy_loss(sandbox_space):
    rng = np.random.default_rng(0)
    buffer, _, _ = _bandit(sandbox_space, rng, n=64)
    batch = buffer.sample(32, rng)
    losses = []
    for weight in (1.0, 3.0):
        torch.manual_seed(0)
        sac = SAC(6, sandbox_space, SACConfig(head="flat", hidden=32))
        losses.append(sac.update(batch._replace(weights=torch.full((32,), weight)))["losses/actor_loss"])
    assert losses[1] == pytest.approx(3.0 * losses[0], rel=1e-4)


def test_imitation_pulls_the_policy_towards_the_llm_rows_actions_only(sandbox_space):
    # every reward is 0, so Q gives no reason to prefer any action: only the imitation term can
    rng = np.random.default_rng(0)
    buffer, _, mask = _bandit(sandbox_space, rng, n=64)
    batch = buffer.sample(32, rng)
    llm_action = sandbox_space.first_topology + 7
    actions = batch.actions.clone()
    actions[:8] = llm_action
    sources = torch.full((32,), SOURCE_RL)
    sources[:8] = SOURCE_LLM
    batch = batch._replace(actions=actions, rewards=torch.zeros(32), sources=sources)
    log_probs = {}
    for imitation in (0.0, 1.0):
        torch.manual_seed(0)
        sac = SAC(6, sandbox_space, SACConfig(head="flat", hidden=32, policy_lr=3e-3, imitation=imitation))
        for _ in range(50):
            losses = sac.update(batch)
        obs = batch.obs[0].numpy()
        log_probs[imitation] = float(sac.policy(obs, mask).log_prob(torch.tensor([llm_action]))[0])
        assert (losses["losses/imitation"] > 0) == (imitation > 0)
    assert log_probs[1.0] > log_probs[0.0] + 1.0
    # RL rows are never imitated: with no LLM row the term is zero
    sac = SAC(6, sandbox_space, SACConfig(head="flat", hidden=32, imitation=1.0))
    assert sac.update(batch._replace(sources=torch.full((32,), SOURCE_RL)))["losses/imitation"] == 0.0


def test_the_anchor_action_weight_raises_the_real_actions_share_of_the_anchor(sandbox_space):
    """An anchor batch of one state, nine times "do nothing" and once a split: with every reward
    0 only the anchor moves the actor, and weighting the split 9 times brings its probability
    from about 1/10 to about 1/2."""
    rng = np.random.default_rng(0)
    buffer, _, mask = _bandit(sandbox_space, rng, n=64)
    batch = buffer.sample(32, rng)
    batch = batch._replace(rewards=torch.zeros(32))
    split = sandbox_space.first_topology + 7
    obs = torch.zeros((10, 6))
    obs[:, 0] = 1.0
    anchor = AnchorBatch(
        obs, torch.ones((10, sandbox_space.n_top), dtype=torch.bool), torch.tensor([0] * 9 + [split])
    )
    probability = {}
    for weight in (1.0, 9.0):
        torch.manual_seed(0)
        config = SACConfig(head="flat", hidden=32, policy_lr=3e-3, anchor=10.0, anchor_action_weight=weight)
        sac = SAC(6, sandbox_space, config)
        for _ in range(150):
            sac.update(batch, anchor)
        probability[weight] = float(sac.policy(obs[0].numpy(), mask).log_prob(torch.tensor([split]))[0].exp())
    assert probability[1.0] < 0.2 < 0.35 < probability[9.0], probability


@pytest.mark.parametrize("head", ["flat", "factorised"])
def test_acting_and_the_policys_own_draws_are_one_rule(sandbox_space, head):
    """SAC.act (numpy, per step) and the policy's sample/greedy pick with the same code: the same
    generator state gives the same action, and greedy is act without a generator."""
    torch.manual_seed(0)
    sac = SAC(6, sandbox_space, SACConfig(head=head, hidden=16))
    rng = np.random.default_rng(0)
    mask = np.ones(sandbox_space.n_top, bool)
    mask[1::3] = False  # some categories illegal
    for _ in range(20):
        features = rng.normal(size=6).astype(np.float32)
        policy = sac.policy(features, mask)
        seed = int(rng.integers(2**31))
        drawn = [sac.act(features, mask, np.random.default_rng(seed)) for _ in range(2)]
        assert drawn == [policy.sample(np.random.default_rng(seed))] * 2
        assert sac.act(features, mask, None) == policy.greedy()
        assert mask[sandbox_space.top_of_action[drawn[0]]]


def test_actor_delay_trains_the_critics_alone_then_the_actor(sandbox_space):
    rng = np.random.default_rng(0)
    buffer, _, _ = _bandit(sandbox_space, rng, n=128)
    sac = SAC(6, sandbox_space, SACConfig(head="flat", hidden=32, actor_delay=3, init_alpha=0.01))
    assert sac.alpha == pytest.approx(0.01)
    actor, critic = [p.clone() for p in sac.actor.parameters()], [p.clone() for p in sac.qf1.parameters()]
    for _ in range(3):
        sac.update(buffer.sample(32, rng))
    assert all(torch.equal(a, b) for a, b in zip(actor, sac.actor.parameters()))  # the policy is held
    assert not all(torch.equal(a, b) for a, b in zip(critic, sac.qf1.parameters()))  # the critics learn
    assert sac.alpha == pytest.approx(0.01)  # and so is the temperature
    sac.update(buffer.sample(32, rng))
    assert not all(torch.equal(a, b) for a, b in zip(actor, sac.actor.parameters()))  # then it moves


@pytest.mark.parametrize("head", ["flat", "factorised"])
def test_the_conservative_term_lowers_the_actions_never_taken(sandbox_space, head):
    """Every row plays one action for reward 1. Plain critics extrapolate it to the actions never
    taken (the soft maximum sits about log N above the taken value); the conservative term pushes
    them down until the taken action holds the soft maximum (measured: 4.3 -> 0.02)."""
    rng = np.random.default_rng(0)
    mask = np.ones(sandbox_space.n_top, bool)
    taken = sandbox_space.first_topology + 3
    buffer = ReplayBuffer(64, 6, sandbox_space.n_top)
    for _ in range(64):
        obs = rng.normal(size=6).astype(np.float32)
        buffer.add(Transition(obs, mask, taken, 1.0, obs, mask, True, 0.99, 1.0))
    gaps, terms = {}, {}
    for weight in (0.0, 1.0):
        torch.manual_seed(0)
        sac = SAC(6, sandbox_space, SACConfig(head=head, hidden=32, q_lr=3e-3, conservative=weight))
        for _ in range(100):
            losses = sac.update(buffer.sample(32, np.random.default_rng(1)))
        batch = buffer.sample(64, np.random.default_rng(2))
        with torch.no_grad():
            values = sac.qf1(batch.obs)
            # how far the soft maximum over every action sits above the taken action's value
            gaps[weight] = float(
                (sac.qf1.soft_max(values, batch.mask) - sac.qf1.at(values, batch.actions)).mean()
            )
        terms[weight] = losses["losses/conservative"]
    assert terms[0.0] == 0.0 and terms[1.0] > 0.0
    assert gaps[1.0] < gaps[0.0] - 1.0

"""The factorised head's closed forms against brute force over every action of a small grid."""

import itertools

import numpy as np
import pytest
import torch

from ace_core.grid.flex.moves import FlexMove
from ace_core.rl.heads import ActionLayout, FactorisedActor, FactorisedQ, FlatActor, FlatQ

MOVES = (FlexMove(redispatch=((1, 5.0), (5, -5.0))), FlexMove(curtail=((2, 10.0),)))


@pytest.fixture(params=["topology", "with moves"])
def space(request, sandbox_space):
    """The sandbox's space, as it is and with two continuous moves after its topologies."""
    return sandbox_space if request.param == "topology" else sandbox_space.with_moves(MOVES)


def _all_patterns(space):
    """Every (top category, bits) of the product space, valid topology or not."""
    for top in range(space.n_top):
        sub = int(space.top_sub[top])
        if sub < 0:
            yield top, None
            continue
        for bits in itertools.product((0, 1), repeat=int(space.sub_info[sub]) - 1):
            yield top, (sub, np.array(bits))


def test_factorised_expectation_and_entropy_are_exact(space):
    torch.manual_seed(0)
    layout = ActionLayout(space)
    actor, q = FactorisedActor(8, layout, 32), FactorisedQ(8, layout, 32)
    obs = torch.randn(1, 8)
    mask = torch.ones(1, space.n_top, dtype=torch.bool)
    mask[0, 3] = False
    policy = actor(obs, mask)
    q_top, q_elem = q(obs)
    p2 = policy.p2[0]
    expected, entropy, total = 0.0, 0.0, 0.0
    for top, pattern in _all_patterns(space):
        p = float(policy.top_probs[0, top])
        value = float(q_top[0, top])
        if pattern is not None:
            sub, bits = pattern
            start = space.free_offset[sub]
            for j, bit in enumerate(bits):
                p *= float(p2[start + j] if bit else 1 - p2[start + j])
                value += float(q_elem[0, start + j, bit])
        if p > 0:
            expected += p * value
            entropy -= p * np.log(p)
            total += p
    assert abs(total - 1.0) < 1e-5
    assert abs(float(policy.expected((q_top, q_elem))[0]) - expected) < 1e-4
    assert abs(float(policy.entropy()[0]) - entropy) < 1e-4


def test_factorised_log_prob_and_q_at_match_the_parts(sandbox_space):
    torch.manual_seed(1)
    layout = ActionLayout(sandbox_space)
    actor, q = FactorisedActor(8, layout, 32), FactorisedQ(8, layout, 32)
    obs = torch.randn(1, 8)
    policy = actor(obs, torch.ones(1, sandbox_space.n_top, dtype=torch.bool))
    actions = torch.arange(sandbox_space.n)
    probs = policy._log_prob_one(actions).exp()
    assert float(probs.sum()) <= 1.0 + 1e-5  # invalid bit patterns carry the rest
    assert float(probs.sum()) > 0.5
    q_out = q(obs.repeat(sandbox_space.n, 1))
    values = q.at(q_out, actions)
    index = sandbox_space.first_topology + 10
    sub, buses = sandbox_space.bits_of(index)
    start = sandbox_space.free_offset[sub]
    manual = q_out[0][0, sandbox_space.top_of_action[index]] + sum(
        q_out[1][0, start + j, int(b) - 1] for j, b in enumerate(buses[1:])
    )
    assert torch.isclose(values[index], manual, atol=1e-5)


def test_illegal_actions_get_no_probability(space):
    layout = ActionLayout(space)
    mask = torch.ones(1, space.n_top, dtype=torch.bool)
    mask[0, 0] = False  # do nothing
    mask[0, -1] = False  # the last substation, or the last move
    for actor in (FlatActor(8, layout, 16), FactorisedActor(8, layout, 16)):
        policy = actor(torch.randn(1, 8), mask)
        best = [index for index, _ in policy.top_k(50)]
        assert 0 not in best
        assert all(space.top_of_action[i] != space.n_top - 1 for i in best)
        rng = np.random.default_rng(0)
        samples = {policy.sample(rng) for _ in range(200)}
        assert all(mask[0, space.top_of_action[i]] for i in samples)


def test_every_action_is_reachable_by_the_factorised_policy(space):
    layout = ActionLayout(space)
    actor = FactorisedActor(8, layout, 16)
    policy = actor(torch.randn(1, 8), torch.ones(1, space.n_top, dtype=torch.bool))
    assert bool((policy._log_prob_one(torch.arange(space.n)) > -np.inf).all())


def test_a_move_the_policy_favours_is_what_it_plays_and_ranks_first(sandbox_space):
    space = sandbox_space.with_moves(MOVES)
    layout = ActionLayout(space)
    actor = FactorisedActor(8, layout, 16)
    move_top = int(space.top_of_action[space.first_move + 1])
    with torch.no_grad():
        actor.net[-1].bias[move_top] = 50.0  # the second move's category dominates
    policy = actor(torch.randn(1, 8), torch.ones(1, space.n_top, dtype=torch.bool))
    assert policy.greedy() == space.first_move + 1
    assert policy.sample(np.random.default_rng(0)) == space.first_move + 1
    assert policy.top_k(3)[0][0] == space.first_move + 1
    assert layout.index_of(move_top, np.zeros(space.n_free, dtype=np.int64)) == space.first_move + 1


def test_flat_q_at(sandbox_space):
    q = FlatQ(8, ActionLayout(sandbox_space), 16)
    out = q(torch.randn(4, 8))
    actions = torch.tensor([0, 5, 100, 198])
    assert torch.equal(q.at(out, actions), out[torch.arange(4), actions])


def test_the_soft_maximum_is_exact_over_the_legal_actions(sandbox_space):
    """CQL's log sum exp Q: brute force over every legal action (flat) or every legal pattern of
    the product space (factorised, where the closed form sums the substations' bits)."""
    torch.manual_seed(2)
    space = sandbox_space
    layout = ActionLayout(space)
    obs = torch.randn(1, 8)
    mask = torch.ones(1, space.n_top, dtype=torch.bool)
    mask[0, 0] = False
    mask[0, -1] = False

    flat = FlatQ(8, layout, 16)
    values = flat(obs)[0]
    legal = mask[0, layout.top_of_action]
    assert torch.isclose(flat.soft_max(flat(obs), mask)[0], values[legal].logsumexp(0), atol=1e-5)

    factorised = FactorisedQ(8, layout, 32)
    q_top, q_elem = factorised(obs)
    patterns = []
    for top, pattern in _all_patterns(space):
        if not mask[0, top]:
            continue
        value = q_top[0, top]
        if pattern is not None:
            sub, bits = pattern
            start = space.free_offset[sub]
            value = value + sum(q_elem[0, start + j, bit] for j, bit in enumerate(bits))
        patterns.append(value)
    brute = torch.stack(patterns).logsumexp(0)
    assert torch.isclose(factorised.soft_max((q_top, q_elem), mask)[0], brute, atol=1e-4)

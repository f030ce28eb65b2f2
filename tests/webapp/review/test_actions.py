"""A refinement's actions in words and as diagrams, from the run's own action space
(:mod:`webapp.review.actions`)."""

from __future__ import annotations

import pytest

from webapp.review.actions import action_diagram, action_words, run_action_space

ENV = "l2rpn_case14_sandbox"


@pytest.fixture(scope="module")
def space():
    found = run_action_space(env=ENV, config={"action_subset": ""})
    assert found is not None
    return found


def test_every_kind_of_action_has_its_words_and_diagram(space):
    assert action_words(space, 0, {}) == "do nothing" and action_diagram(space, 0) == {"kind": "nothing"}
    line = 3
    reconnect = action_diagram(space, 1 + line)
    assert reconnect == {
        "kind": "reconnect",
        "line": space.line_name(line),
        "from": space.substation_name(int(space.line_or_sub[line])),
        "to": space.substation_name(int(space.line_ex_sub[line])),
    }
    assert action_words(space, 1 + line, {}) == f"reconnect {space.line_name(line)}"
    index = space.first_topology + 5
    sub, buses = space.bits_of(index)
    topology = action_diagram(space, index)
    assert topology["substation"] == space.substation_name(sub)
    assert [e["bus"] for e in topology["elements"]] == buses.tolist()
    assert action_words(space, index, {}) == space.describe(index)


def test_without_the_grid_the_stored_words_stand_and_no_diagram_is_drawn():
    assert run_action_space(env="no_such_grid", config={}) is None
    assert action_words(None, 42, {42: "substation 4: line 3-4 to bus 2; others on bus 1"}).startswith(
        "substation 4"
    )
    assert action_words(None, 7, {}).startswith("action #7 (not described")
    assert action_words(None, None, {}) == "no action parsed"
    assert action_diagram(None, 42) is None


def test_an_index_outside_the_space_is_said_so(space):
    assert action_diagram(space, space.n) is None
    assert action_words(space, space.n, {}).startswith(f"action #{space.n}")


def test_a_continuous_move_is_said_in_words_with_no_substation_drawn(space):
    from ace_core.grid.flex.moves import FlexMove

    move = FlexMove(redispatch=((1, 5.0), (5, -5.0)))
    flexible = space.with_moves([move])
    assert action_diagram(flexible, flexible.first_move) == {
        "kind": "move",
        "words": move.describe(space.names),
    }
    assert action_words(flexible, flexible.first_move, {}) == move.describe(space.names)

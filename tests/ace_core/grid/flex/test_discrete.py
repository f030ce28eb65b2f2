"""Discrete continuous moves: the expert's moves given a form that means the same on any state."""

import numpy as np

from ace_core.grid.flex.discrete import discrete_move, mined_moves, move_json, moves_from_json
from ace_core.grid.flex.moves import FlexMove

PMAX = np.array([150.0, 200.0, 70.0, 50.0, 50.0, 300.0])


def test_a_redispatch_keeps_its_largest_pair_rounded_down_to_a_step():
    pair = FlexMove(redispatch=((1, 7.9), (5, -7.9)))
    assert discrete_move(pair, PMAX) == FlexMove(redispatch=((1, 5.0), (5, -5.0)))
    combined = FlexMove(redispatch=((0, 3.2), (1, 12.0), (4, -2.5), (5, -11.0)))
    assert discrete_move(combined, PMAX) == FlexMove(redispatch=((1, 10.0), (5, -10.0)))
    assert discrete_move(FlexMove(redispatch=((0, -23.0),)), PMAX) == FlexMove(redispatch=((0, -20.0),))
    assert discrete_move(FlexMove(redispatch=((1, 0.6), (5, -0.6))), PMAX) is None


def test_a_curtailment_caps_at_a_whole_tenth_of_pmax_and_a_storage_setpoint_at_a_step():
    assert discrete_move(FlexMove(curtail=((2, 40.0),)), PMAX) == FlexMove(curtail=((2, 35.0),))
    assert discrete_move(FlexMove(curtail=((2, 69.9),)), PMAX) == FlexMove(curtail=((2, 63.0),))
    assert discrete_move(FlexMove(storage=((0, -13.0),)), PMAX) == FlexMove(storage=((0, -10.0),))
    # a redispatch comes first when a move holds several kinds
    both = FlexMove(redispatch=((0, 5.0), (5, -5.0)), curtail=((2, 10.0),))
    assert discrete_move(both, PMAX) == FlexMove(redispatch=((0, 5.0), (5, -5.0)))


def test_the_most_frequent_forms_are_kept_first_seen_first_on_ties():
    a = FlexMove(redispatch=((1, 10.0), (5, -10.0)))
    b = FlexMove(curtail=((2, 35.0),))
    c = FlexMove(redispatch=((0, 2.0), (5, -2.0)))
    played = [
        FlexMove(redispatch=((0, 2.4), (5, -2.4))),
        FlexMove(curtail=((2, 38.0),)),
        FlexMove(redispatch=((1, 12.0), (5, -12.0))),
        FlexMove(redispatch=((1, 19.0), (5, -19.0))),
        FlexMove(redispatch=((1, 0.2), (5, -0.2))),  # rounds to nothing: not counted
    ]
    assert mined_moves(played, PMAX, top=3) == [a, c, b]
    assert mined_moves(played, PMAX, top=1) == [a]


def test_moves_round_trip_through_the_mines_json():
    moves = [FlexMove(redispatch=((1, 10.0), (5, -10.0))), None, FlexMove(curtail=((2, 35.0),))]
    texts = [move_json(move) for move in moves]
    assert texts[1] == ""
    assert moves_from_json(texts) == moves

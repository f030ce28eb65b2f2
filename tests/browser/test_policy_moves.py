"""A deployed policy that also plays continuous moves (``pretrain --moves``), in the browser: its
move is a card in the move's words with the MW moved and its cost beside the safety figures, which
are grid2op's own for that redispatch; the operator accepts it and it is played at the next step,
the redispatch then in force on the grid, and the decision names it.

The policy is a network over the sandbox's actions and two redispatch pairs whose first layer
favours the pairs, so that they are its first choices on any state, as a clone's moves are on
the states it learned them on."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from ace_core.checkpoint import write_checkpoint
from ace_core.config import TrainConfig
from ace_core.grid.action_space import build_action_space
from ace_core.grid.envs import make_env
from ace_core.grid.features import FeatureBuilder
from ace_core.grid.flex.moves import FlexMove
from ace_core.rl.sac import SAC
from tests.browser.conftest import browser, in_thread, log_in
from tests.browser.test_names import _save
from tests.browser.test_operator import PASSWORD, deploy_untrained, live_worker  # noqa: F401 - a fixture of this test
from webapp.operations.models import Decision, LiveRecommendation, SessionStep
from webapp.operations.services import session_control, session_start

ENV = "l2rpn_case14_sandbox"
MOVES = (FlexMove(redispatch=((0, -2.0), (1, 2.0))), FlexMove(redispatch=((0, 2.0), (1, -2.0))))
"""two redispatch pairs in opposite directions: one of them lowers max rho on any state"""
MOVE_CARD = """() => {
  const card = [...document.querySelectorAll('#recommendations .rec-card')].find(c => c.querySelector('.rec-cost'));
  if (!card) { return null; }
  return { id: Number(card.dataset.id), step: Number(card.dataset.step),
    position: [...document.querySelectorAll('#recommendations .rec-card')].indexOf(card),
    action: card.querySelector('.rec-action').textContent, cost: card.querySelector('.rec-cost').textContent,
    facts: card.querySelector('.rec-facts').textContent };
}"""
"""the first card with a continuous move's cost, once drawn (null before)"""


def _moves_policy(path: Path) -> Path:
    env = make_env(ENV)
    space = build_action_space(env).with_moves(MOVES)
    features, config = FeatureBuilder(env), TrainConfig(env=ENV, hidden=32)
    torch.manual_seed(0)
    sac = SAC(features.size, space, config.sac)
    with torch.no_grad():  # the pairs first, as a clone's moves on the states it learned them on
        sac.actor.net[-1].bias[space.first_move : space.first_move + len(MOVES)] = 50.0
    env.close()
    return write_checkpoint(path, config=config.full_dict(), space=space, features=features, sac=sac)


def _set_up(tmp_path: Path) -> int:
    engineer = deploy_untrained(ENV, tmp_path, _moves_policy(tmp_path / "moves" / "checkpoint.pt"))
    session = session_start(user=engineer, scenario_index=0, speed_seconds=1.0, label="moves")
    session_control(session_id=session.pk, user=engineer, command="pause")
    return session.pk


@pytest.mark.usefixtures("process_env", "live_worker")
def test_the_policys_move_is_a_card_with_its_cost_and_is_played_once_accepted(server, artifacts, tmp_path):
    session_id = in_thread(lambda: _set_up(tmp_path))
    with browser(tmp_path) as page:
        page.set_viewport_size({"width": 1440, "height": 900})
        log_in(page, server, "op", PASSWORD)
        page.goto(f"{server}/live/{session_id}/")
        card = page.wait_for_function(MOVE_CARD, timeout=120_000).json_value()
        assert card["step"] == 0 and card["action"].startswith("redispatch ")
        assert "MW redispatched" in card["cost"] and "EUR/h" in card["cost"]
        assert card["facts"].startswith("max rho ")

        # the card is the policy's move, its figures grid2op's for that redispatch
        stored = in_thread(lambda: LiveRecommendation.objects.get(pk=card["id"]))
        assert stored.source in ("policy", "both") and stored.action["kind"] == "nothing"
        move = FlexMove.from_dict(stored.action["move"])
        assert move in MOVES and stored.description == card["action"]
        assert stored.figures["cost"]["redispatched_mw"] == pytest.approx(4.0)

        # accepted from the keyboard, played at the next step
        page.keyboard.press(str(card["position"] + 1))
        page.keyboard.press("a")
        page.wait_for_function("() => document.getElementById('notice').textContent.startsWith('Accepted')")
        _save(page, artifacts, "console-policy-move.png", down_to="#what-if")
        page.click("#single-step")
        page.wait_for_function("() => document.querySelector('#decisions .decision-applied') !== null")
        assert card["action"] in page.text_content("#decisions")

    played = in_thread(lambda: SessionStep.objects.get(session_id=session_id, step=1).applied_action)
    assert played["kind"] == "nothing" and FlexMove.from_dict(played["move"]) == move
    decision = in_thread(lambda: Decision.objects.get(session_id=session_id, recommendation_id=card["id"]))
    assert (
        decision.kind == "accept" and decision.status == "applied" and decision.description == card["action"]
    )

"""Combined actions in the browser: when no single move clears the overloads, the console shows a
pair of moves as one card (marked as two moves in one step) with the same N-1 and look-ahead
figures as any card; the what-if panel simulates the pair as the card does, and the operator
accepts it from the keyboard: both moves are played together at the next step.

The state is the one ``tests/ace_core/recommend/test_pairs.py`` crafts on rte_case14_realistic
(day 0, Tuesday 8 January 2019 at 18:20, the evening peak): the session opens 220 steps into the
day's third 24-hour piece (a session that starts where an incident began), paused, and the
operator switches line 5-10 off from the what-if panel. Doing nothing then overloads the grid and
no single move clears it; a line reconnection with a substation split does. Then an engineer
opens a new session from step 1 of the replay: its grid is the operator's at that step, with the
same pair card and figures.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.browser.conftest import browser, in_thread, log_in
from tests.browser.test_names import _save
from tests.browser.test_operator import PASSWORD, deploy_untrained, live_worker  # noqa: F401 - a fixture of this test
from webapp.operations.models import Decision, LiveRecommendation, LiveSession, SessionStep
from webapp.operations.services import session_control, session_start

ENV = "rte_case14_realistic"
DAY, START_STEP = 2, 220
"""the third 24-hour piece of chronic 0 (steps 576-863), opened at step 796: 18:20"""
LINE_OUT = 7
"""line 5-10: switched off by the operator, after which only pairs clear the overloads"""
PAIR_CARD = """() => {
  const card = [...document.querySelectorAll('#recommendations .rec-card')].find(c => c.querySelector('.rec-pair'));
  if (!card || !card.querySelector('.rec-n1')) { return null; }
  return { id: Number(card.dataset.id), step: Number(card.dataset.step),
    position: [...document.querySelectorAll('#recommendations .rec-card')].indexOf(card),
    action: card.querySelector('.rec-action').textContent, facts: card.querySelector('.rec-facts').textContent,
    n1: card.querySelector('.rec-n1').textContent, mark: card.querySelector('.rec-pair').textContent,
    sparklines: card.querySelectorAll('.rec-lookahead svg.sparkline polyline').length };
}"""
"""the first card that pairs two moves, once drawn with its figures (null before)"""
SLIDE = "(slider, step) => { slider.value = step; slider.dispatchEvent(new Event('input')); }"
"""moves the replay's time slider to a step, as dragging it does"""


def _set_up(tmp_path: Path) -> int:
    """A deployed (untrained) policy of the 14-bus realistic grid and a paused session opened at
    the crafted state's step."""
    engineer = deploy_untrained(ENV, tmp_path)
    session = session_start(
        user=engineer, scenario_index=DAY, start_step=START_STEP, speed_seconds=1.0, label="pairs"
    )
    session_control(session_id=session.pk, user=engineer, command="pause")  # the grid waits at 18:20
    return session.pk


@pytest.mark.usefixtures("process_env", "live_worker")
def test_a_pair_card_when_no_single_move_is_safe(server, artifacts, tmp_path):
    session_id = in_thread(lambda: _set_up(tmp_path))
    session = in_thread(lambda: LiveSession.objects.get(pk=session_id))
    assert session.scenario_name == "000@796+68" and session.start_step == START_STEP
    with browser(tmp_path) as page:
        page.set_viewport_size({"width": 1440, "height": 900})
        log_in(page, server, "op", PASSWORD)
        page.goto(f"{server}/live/{session_id}/")
        page.wait_for_function(
            "() => Number(document.getElementById('diagram').dataset.step) === 0", timeout=120_000
        )
        assert "18:20" in page.text_content("#grid-time")

        # the operator switches line 5-10 off and plays one step
        page.select_option("#wi-kind", "line")
        page.select_option("#wi-line", str(LINE_OUT))
        page.select_option("#wi-line-status", "disconnect")
        page.click("#wi-apply")
        page.wait_for_function(
            "() => document.getElementById('notice').textContent.includes('will be played')"
        )
        page.click("#single-step")
        card = page.wait_for_function(PAIR_CARD, timeout=120_000).json_value()
        assert card["step"] == 1 and "two moves in one step" in card["mark"]
        assert " and " in card["action"] and "worst: losing" in card["n1"] and card["sparklines"] == 1

        # no single move clears the overloads; the pair does, as grid2op plays the two together
        step = in_thread(lambda: SessionStep.objects.get(session_id=session_id, step=1))
        assert step.applied_action == {"kind": "line", "line": LINE_OUT, "status": "disconnect"}
        reference = step.assessment["reference"]
        assert reference["game_over"] or reference["overloads_after"]
        cards = in_thread(lambda: list(LiveRecommendation.objects.filter(session_id=session_id, step=1)))
        pair = next(c for c in cards if c.pk == card["id"])
        assert pair.action["kind"] == "pair" and len(pair.action["actions"]) == 2
        assert pair.description == card["action"] and pair.max_rho_after < 1.0
        assert not pair.figures["overloads_after"] and pair.figures["n1"] and pair.figures["look_ahead"]
        singles = [c for c in cards if c.action.get("kind") != "pair"]
        assert all(c.figures["overloads_after"] or c.figures.get("game_over") for c in singles)

        # what-if of the pair card: the panel holds both moves and simulates them together
        pair_card = page.locator(f"#rec-{card['id']}")
        pair_card.locator("button.whatif").click()
        assert page.input_value("#wi-kind") == "pair" and page.is_visible("#wi-pair-box")
        assert page.text_content("#wi-pair") == card["action"]
        page.wait_for_function(
            "() => document.getElementById('wi-result').textContent.includes(' at step 1:')"
        )
        result = page.text_content("#wi-result")
        assert result.startswith(f"«{card['action']}» at step 1: max rho ")  # in the card's words
        rho = card["facts"].split(" · ")[0]  # "max rho 101.2% → 99.5%": the card's figures
        assert rho in result, (rho, result)
        assert "no overload after" in result and "worst: losing" in result
        # green only when safe over the look-ahead too
        ahead = pair.figures["look_ahead"].get("game_over_step")
        assert page.get_attribute("#wi-result", "class") == ("warn" if ahead else "ok")

        # the same pair made by hand: the substation's buses, and the line in the same step
        line_part, topology_part = sorted(pair.action["actions"], key=lambda part: part["kind"])
        page.select_option("#wi-kind", "topology")
        page.select_option("#wi-sub", str(topology_part["substation"]))
        for element, bus in topology_part["set"]:
            page.select_option(f"#wi-el-{element}", str(bus))
        page.check("#wi-with-line")
        page.select_option("#wi-line2", str(line_part["line"]))
        page.select_option("#wi-line2-status", line_part["status"])
        page.click("#wi-simulate")
        page.wait_for_function(
            "() => document.getElementById('wi-result').textContent.includes(' and reconnect line 5-10» at step 1:')"
        )
        assert rho in page.text_content("#wi-result")

        # accepted from the keyboard: both moves are played at the next step
        page.keyboard.press(str(card["position"] + 1))
        page.keyboard.press("a")
        page.wait_for_function("() => document.getElementById('notice').textContent.startsWith('Accepted')")
        _save(page, artifacts, "console-pair.png", down_to="#what-if")
        page.click("#single-step")
        page.wait_for_function(
            "() => Number(document.getElementById('diagram').dataset.step) >= 2", timeout=60_000
        )

    played = in_thread(lambda: SessionStep.objects.get(session_id=session_id, step=2).applied_action)
    assert played["kind"] == "pair" and played["actions"] == pair.action["actions"]
    decision = in_thread(lambda: Decision.objects.get(session_id=session_id, recommendation_id=card["id"]))
    assert decision.kind == "accept" and decision.step == 1 and decision.applied_step == 2

    # the incident gone over again: an engineer opens a new session from step 1 of the replay,
    # whose grid is the one the operator had then, with the pair card again
    with browser(tmp_path / "engineer") as page:  # a profile of its own: not the operator's login
        page.set_viewport_size({"width": 1440, "height": 900})
        log_in(page, server, "eng", PASSWORD)
        page.goto(f"{server}/live/{session_id}/replay/")
        page.eval_on_selector("#replay-slider", SLIDE, 2)
        assert " and " in page.text_content("#replay-applied")  # the pair played to reach step 2
        page.eval_on_selector("#replay-slider", SLIDE, 1)
        assert page.text_content("#replay-applied") == "disconnect line 5-10"
        assert page.input_value("#fork-step") == "1"
        page.click("#fork")
        page.wait_for_url(re.compile(r"/live/\d+/$"))
        fork_id = int(page.url.rstrip("/").rsplit("/", 1)[1])
        assert fork_id != session_id
        again = page.wait_for_function(PAIR_CARD, timeout=120_000).json_value()
        assert (again["step"], again["action"], again["facts"]) == (1, card["action"], card["facts"])
    fork = in_thread(lambda: LiveSession.objects.get(pk=fork_id))
    assert fork.label == f"from session {session_id} at step 1" and fork.status == "paused"

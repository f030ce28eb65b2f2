"""Explanations grounded in the simulation: the facts of real cards in plain sentences, each line
by its one name; a language model's figures checked against them; its text labelled."""

from __future__ import annotations

import pytest

from ace_core.grid.action_space import build_action_space
from ace_core.grid.forecasts import make_env_with_forecasts
from ace_core.grid.names import element_names
from ace_core.recommend.explain import (
    facts,
    figure_mismatches,
    generated_label,
    quoted_figures,
    simulated_figures,
)
from ace_core.recommend.pipeline import PipelineConfig, RecommendationPipeline


@pytest.fixture(scope="module")
def stressed():
    """rte_case14_realistic late on day 0, when doing nothing overloads lines within a step (it
    ends the day at step 798): the pipeline's cards and the grid's line names."""
    env = make_env_with_forecasts("rte_case14_realistic", "perfect", 12)
    pipeline = RecommendationPipeline(
        env, build_action_space(env), PipelineConfig(policy_k=0, look_ahead_top=4)
    )
    env.reset(seed=0, options={"time serie id": 0})
    env.fast_forward_chronics(785)
    obs = env.get_obs()
    for _ in range(12):
        result = pipeline.run(obs)
        if result.recommendations:
            break
        obs, *_ = env.step(env.action_space({}))
    assert result.recommendations, "no card on the stressed steps of day 0"
    yield result, element_names(env)
    env.close()


def test_the_facts_of_real_cards_say_what_the_simulation_found(stressed):
    result, names = stressed
    for candidate in [result.reference, *result.recommendations]:
        card = candidate.to_json(3)
        text = facts(card, names.lines)
        assert text == facts(card, names.lines)  # deterministic
        assert f"from {card['max_rho_before']:.1%} to {card['max_rho_after']:.1%}" in text
        for line in card["lines_relieved"]:
            assert f"relieves {names.line(line)}" in text
        for line in card["new_overloads"]:
            assert names.line(line) in text.split("It overloads ", 1)[1].split(".", 1)[0]
        if not card["overloads_after"]:
            assert "No line is overloaded after it." in text
        worst = card["n1"]["worst"]
        assert f"of the {card['n1']['screened']} single line outages" in text
        assert (
            f"losing {worst['outage_name']} loads {worst['worst_line_name']} at {worst['max_rho']:.1%}"
            in text
        )
        look = card["look_ahead"]
        if look["game_over_step"] is not None:
            assert f"game over within {look['game_over_step'] * 5} min" in text
        else:
            assert f"{max(look['max_rho']):.1%}" in text
        if card["rank"]:
            assert f"Ranked {card['rank_reason']}." in text
        # lines by their one name, never grid2op's
        assert not any(raw in text for raw in names.raw_lines)
    top = result.recommendations[0].to_json(3)
    assert facts(top) != facts(top, names.lines) or not (top["new_overloads"] or top["overloads_after"])


def test_a_card_that_fails_or_is_refused_says_so_and_nothing_more(stressed):
    result, names = stressed
    card = result.recommendations[0].to_json(3)
    assert facts({**card, "game_over": True, "max_rho_after": None}, names.lines).startswith(
        "Simulated one step ahead, this action ends in a game over."
    )
    refused = facts({**card, "illegal": True, "error": "substation 4 is in cooldown"}, names.lines)
    assert refused.startswith("The simulation refuses this action now: substation 4 is in cooldown.")
    assert "N-1" not in refused


def test_figures_quoted_against_the_simulation_wrong_ones_flagged(stressed):
    result, _ = stressed
    card = result.recommendations[0].to_json(3)
    after, worst = card["max_rho_after"], card["n1"]["worst"]["max_rho"]
    simulated = simulated_figures(card)
    # a whole percent two points or more from every simulated figure, and the figure nearest it
    wrong = next(p for p in range(60, 100) if all(abs(p / 100 - value) >= 0.02 for _, value in simulated))
    label, nearest = min(simulated, key=lambda item: abs(item[1] - wrong / 100))
    text = (
        f"This keeps the highest load at {round(after * 100)}% (rho of {after:.2f}); losing the worst "
        f"line would load another at {worst * 100:.1f} %. The load on line 4 is expected to be {wrong}% "
        f"of the total load, and rho 0.5 on line 2."
    )
    assert [q.text for q in quoted_figures(text)] == [
        f"{round(after * 100)}%",
        f"rho of {after:.2f}",
        f"{worst * 100:.1f} %",
        f"{wrong}%",
        "rho 0.5",
    ]
    flags = figure_mismatches(text, card)
    assert flags == [
        f"does not match the simulation: {wrong}% (simulated {nearest:.1%}, {label})",
        flags[1],
    ]
    assert flags[1].startswith("does not match the simulation: rho 0.5 (simulated ")
    assert figure_mismatches("It helps the grid, at no cost.", card) == []
    # a quote within half a point of a figure matches it; one a point and a half off does not
    assert figure_mismatches(f"{after * 100 + 0.4:.1f}%", card) == []
    assert figure_mismatches(f"{after * 100 + 1.5:.1f}%", card) != []


def test_a_language_models_text_is_labelled_as_generated_and_unverified():
    assert generated_label("SmolLM2-135M-Instruct") == "generated by SmolLM2-135M-Instruct, not verified"
    assert generated_label("") == "generated by a language model, not verified"

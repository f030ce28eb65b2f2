"""Explanations of a recommendation grounded in its simulation.

:func:`facts` says in plain sentences what the simulation found for one card: the one-step
outcome (the highest line load before and after, the lines relieved, the new overloads), the N-1
screen (how many single outages overload a line, the worst one), the look-ahead over the forecast
(whether and when a line overloads), the action played on the grid as it is now (no forecast)
and why the card sits at its rank. It is a pure function of the candidate's JSON
(:meth:`ace_core.recommend.outcomes.Candidate.to_json`, or a console card's headline figures with
its ``figures``), so the same card always reads the same.

A language model's explanation, when one is asked, comes after the facts, labelled as generated
and unverified (:func:`generated_label`); every figure it quotes (a percentage, a rho) is checked
against the card's simulated figures, and those that match none of them within
:data:`MATCH_TOLERANCE` are flagged (:func:`figure_mismatches`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ace_core.grid.forecasts import STEP_MINUTES

MATCH_TOLERANCE = 0.005
"""how far (as a fraction: 0.005 = half a percentage point) a quoted figure may be from a simulated
one and still match it; a quote rounded to whole percents may also be off by its rounding"""

_PERCENT = re.compile(r"(?<![\w.])(\d{1,4}(?:\.\d+)?)\s*(?:%|per\s?cent\b)", re.IGNORECASE)
_RHO = re.compile(
    r"\brho\b\D{0,20}?(?<![\w.])(\d{1,2}(?:\.\d+)?)(?![\d.]*\s*(?:%|per\s?cent))", re.IGNORECASE
)


def _pct(value: float) -> str:
    return f"{value:.1%}"


def _line(names: Sequence[str], line: int) -> str:
    return names[line] if 0 <= line < len(names) else f"line {line}"


def _lines(names: Sequence[str], lines: Sequence[int]) -> str:
    named = [_line(names, int(line)) for line in lines]
    return named[0] if len(named) == 1 else ", ".join(named[:-1]) + " and " + named[-1]


def _one_step(card: dict[str, Any], names: Sequence[str]) -> list[str]:
    if card.get("illegal"):
        reason = card.get("error") or "the grid's rules refuse it"
        return [f"The simulation refuses this action now: {reason}."]
    if card.get("game_over") or card.get("max_rho_after") is None:
        return ["Simulated one step ahead, this action ends in a game over."]
    before, after = card["max_rho_before"], card["max_rho_after"]
    sentences = [
        f"Simulated one step ahead, the highest line load goes from {_pct(before)} to {_pct(after)}."
    ]
    relieved, created = card.get("lines_relieved") or [], card.get("new_overloads") or []
    still = [line for line in card.get("overloads_after") or [] if line not in created]
    if relieved:
        sentences.append(f"It relieves {_lines(names, relieved)}: no longer overloaded.")
    if created:
        sentences.append(f"It overloads {_lines(names, created)}, not overloaded before.")
    if still:
        sentences.append(f"It leaves {_lines(names, still)} overloaded.")
    if not (relieved or created or still):
        sentences.append("No line is overloaded after it.")
    return sentences


def _n1(n1: dict[str, Any] | None) -> list[str]:
    if not n1:
        return ["Its N-1 security was not screened."]
    worst = n1.get("worst")
    if n1.get("error") or worst is None:
        return ["Its N-1 security could not be screened" + (f": {n1['error']}." if n1.get("error") else ".")]
    screened, overloading = n1.get("screened", 0), n1.get("n_overloading", 0)
    loss = f"losing {worst['outage_name']} loads {worst['worst_line_name']} at {_pct(worst['max_rho'])}"
    if overloading:
        sentence = (
            f"Under N-1, {overloading} of the {screened} single line outages screened overload a line; "
            f"the worst: {loss}."
        )
    else:
        sentence = f"Under N-1, none of the {screened} single line outages screened overloads a line; the worst: {loss}."
    sentences = [sentence]
    diverged = n1.get("diverged") or []
    if diverged:
        sentences.append(
            f"{len(diverged)} outage{'s cut' if len(diverged) > 1 else ' cuts'} off a load or a generator "
            f"or {'do' if len(diverged) > 1 else 'does'} not converge (losing {', '.join(diverged)})."
        )
    return sentences


def _look_ahead(look: dict[str, Any] | None, names: Sequence[str]) -> list[str]:
    if not look:
        return ["It was not looked ahead."]
    if look.get("skipped"):
        return [f"It was not looked ahead: {look['skipped']}."]
    forecast = look.get("forecast") or {}
    minutes = forecast.get("horizon_minutes")
    over = f"over the next {minutes} min" if minutes else "over the forecast's horizon"
    kind = f" ({forecast['kind']} forecast)" if forecast.get("kind") else ""
    trajectory = look.get("max_rho") or []
    if look.get("game_over_step") is not None:
        return [
            f"Looked ahead{kind}, the grid reaches a game over within {look['game_over_step'] * STEP_MINUTES} min."
        ]
    highest = f"the highest line load {over} is {_pct(max(trajectory))}" if trajectory else ""
    if look.get("first_overload_minutes") is not None:
        lines = look.get("overloaded_lines") or []
        which = f" ({_lines(names, lines)})" if lines else ""
        return [
            f"Looked ahead{kind}, a line overloads in {look['first_overload_minutes']} min{which}; {highest}."
        ]
    return [f"Looked ahead{kind}, no line overloads {over}" + (f"; {highest}." if highest else ".")]


def _now(now: dict[str, Any] | None, names: Sequence[str]) -> list[str]:
    if not now:
        return []
    if now.get("game_over") or now.get("max_rho_after") is None:
        return ["Played on the grid as it is now, with no forecast, it ends in a game over."]
    overloaded = now.get("overloads_after") or []
    which = f"; {_lines(names, overloaded)} overloaded" if overloaded else ""
    return [
        f"Played on the grid as it is now, with no forecast, the highest line load is {_pct(now['max_rho_after'])}{which}."
    ]


def facts(card: dict[str, Any], line_names: Sequence[str] = ()) -> str:
    """The simulation's findings for one card in plain sentences (see the module); ``line_names``:
    each line's one name, by id (the layout's ``lines[i]["name"]``; ``line <id>`` without)."""
    sentences = _one_step(card, line_names)
    if not card.get("illegal") and not card.get("game_over"):
        sentences += _n1(card.get("n1"))
        sentences += _look_ahead(card.get("look_ahead"), line_names)
        sentences += _now(card.get("now"), line_names)
    cost = card.get("cost")
    if cost:
        sentences.append(
            f"Its continuous move changes {cost['mw']:.1f} MW and costs {cost['euros_per_hour']:.0f} euros "
            "per hour while it is held."
        )
    if card.get("rank_reason"):
        sentences.append(f"Ranked {card['rank_reason']}.")
    if card.get("rejected_because"):
        sentences.append(f"Rejected: {card['rejected_because']}.")
    return " ".join(sentences)


def generated_label(model: str) -> str:
    """The caption of a language model's text: who wrote it, and that nobody checked its claims."""
    return f"generated by {model or 'a language model'}, not verified"


@dataclass(frozen=True)
class Quoted:
    """A figure a text quotes: as written, and as a fraction (97% and rho 0.97 are both 0.97)."""

    text: str
    value: float
    decimals: int


def quoted_figures(text: str) -> list[Quoted]:
    """The percentages and rho values ``text`` quotes, in order."""
    found: list[tuple[int, Quoted]] = []
    for match in _PERCENT.finditer(text):
        number = match.group(1)
        found.append(
            (match.start(), Quoted(match.group(0).strip(), float(number) / 100, _decimals(number) + 2))
        )
    for match in _RHO.finditer(text):
        number = match.group(1)
        found.append((match.start(1), Quoted(match.group(0).strip(), float(number), _decimals(number))))
    return [quoted for _, quoted in sorted(found, key=lambda item: item[0])]


def _decimals(number: str) -> int:
    return len(number.split(".", 1)[1]) if "." in number else 0


def simulated_figures(card: dict[str, Any]) -> list[tuple[str, float]]:
    """Every figure the simulation gave for the card, as (what it is, fraction)."""
    figures: list[tuple[str, float]] = []
    if card.get("max_rho_before") is not None:
        figures.append(("the highest line load now", card["max_rho_before"]))
    if card.get("max_rho_after") is not None:
        figures.append(("the highest line load after the action", card["max_rho_after"]))
    if card.get("confidence"):
        figures.append(("the policy's confidence", card["confidence"]))
    n1 = card.get("n1") or {}
    for outage in [n1.get("worst") or {}, *(n1.get("outages") or [])]:
        if outage.get("max_rho") is not None:
            figures.append((f"N-1: losing {outage['outage_name']}", outage["max_rho"]))
    now = card.get("now") or {}
    if now.get("max_rho_after") is not None:
        figures.append(("the highest line load on the grid as it is now", now["max_rho_after"]))
    look = card.get("look_ahead") or {}
    for step, rho in enumerate(look.get("max_rho") or [], start=1):
        figures.append((f"look-ahead, {step * STEP_MINUTES} min", rho))
    return figures


def figure_mismatches(text: str, card: dict[str, Any], tolerance: float = MATCH_TOLERANCE) -> list[str]:
    """Each figure ``text`` quotes that matches none of the card's simulated figures within
    ``tolerance`` (or the quote's own rounding), in words: ``does not match the simulation: 97%
    (simulated 95.7%, the highest line load after the action)``, naming the closest simulated
    figure. Nothing to compare with (a game over, an illegal action) flags every quoted figure."""
    simulated = simulated_figures(card)
    flags = []
    for quoted in quoted_figures(text):
        allowed = max(tolerance, 0.5 * 10.0**-quoted.decimals)
        if any(abs(quoted.value - value) <= allowed + 1e-12 for _, value in simulated):
            continue
        if simulated:
            label, nearest = min(simulated, key=lambda item: abs(item[1] - quoted.value))
            flags.append(f"does not match the simulation: {quoted.text} (simulated {_pct(nearest)}, {label})")
        else:
            flags.append(f"does not match the simulation: {quoted.text} (the simulation gave no such figure)")
    return flags

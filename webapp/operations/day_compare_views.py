"""The day-comparison page: two episodes of one day side by side, as grid2viz compares agents.

``?a=<name>&b=<name>`` with the names :mod:`webapp.operations.episode_sources` lists (never a
path): the KPIs of :func:`ace_core.evaluation.day_compare.compare_day` in two columns and two
diagrams (the console's drawing, ``static/js/grid_diagram.js``) moved by one slider and one play
button. A name the page does not give, a folder outside its roots or two different days answer
400 with the reason, above the picker.

Below the picker, the finished sessions' days and the deployed policy's play of each: a button
queues the play (:class:`DayPlayView`, a background job), the page says while it is queued or
running, and lists the policy's episode beside the operator's once it is written.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views import View

from ace_core.evaluation.day_compare import EpisodeError, compare_day
from ace_core.live import grid_state, state_delta
from webapp.accounts import roles
from webapp.accounts.permissions import PermissionGate
from webapp.operations.episode_sources import (
    SESSION_KEY,
    episode_choices,
    episode_folder,
    grid_drawing,
    session_days,
)
from webapp.operations.errors import OperationsError
from webapp.operations.services.session_episodes import REPLAYS, day_play_request


def _deltas(frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each frame as what changed from the one before (the page rebuilds them with
    ``GridDiagram.applyDelta``): a day of the 118-bus grid stays a few MB."""
    out, previous = [], None
    for frame in frames:
        out.append(state_delta(previous, frame))
        previous = frame
    return out


SESSION_DECISION_TIME = "not recorded in a replay (the operator's times are in the session's shift summary)"


def _ms(decision: dict[str, Any]) -> str:
    if not decision.get("recorded"):
        return decision.get("note") or "not recorded"
    return f"{decision['p50']:.2f} ms median · {decision['p95']:.2f} ms p95 · {decision['max']:.2f} ms max"


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{name}: {n}" for name, n in counts.items()) or "none"


KPI_ROWS = (
    (
        "Survival",
        lambda k: (
            f"{k['steps_survived']} / {k['length']} steps ({100 * k['survival']:.0f} %)"
            + (" · game over" if k["game_over"] else "")
        ),
    ),
    ("Steps with an overload (rho ≥ 100 %)", lambda k: str(k["steps_overloaded"])),
    ("Overloaded line-steps", lambda k: str(k["overload_line_steps"])),
    ("Highest rho", lambda k: f"{100 * k['max_rho']:.1f} %"),
    ("Steps whose action changed the grid", lambda k: str(k["action_steps"])),
    ("Topology actions per substation", lambda k: _counts(k["actions_per_substation"])),
    (
        "Line reconnections",
        lambda k: (
            f"{k['reconnections']}" + (f" ({_counts(k['reconnected_lines'])})" if k["reconnections"] else "")
        ),
    ),
    ("Line disconnections", lambda k: str(k["disconnections"])),
    ("Steps with redispatch, curtailment or storage", lambda k: str(k["continuous_action_steps"])),
    ("Decision time", lambda k: _ms(k["decision_ms"])),
    ("Cumulative reward", lambda k: "n/a" if k["reward"] is None else f"{k['reward']:.2f}"),
)
"""the KPI table's rows: a name and how one episode's KPIs read in it"""


PLAYING_REFRESH_SECONDS = 5
"""while a day is being played, the page without a comparison reloads this often"""


def _page_context(request: HttpRequest, a: str = "", b: str = "") -> dict[str, Any]:
    days = session_days()
    return {
        "choices": episode_choices(request.user, days),
        "day_plays": days,
        "playing": any(day.policy is not None and day.policy.is_active for day in days),
        "refresh_seconds": PLAYING_REFRESH_SECONDS,
        "a": a,
        "b": b,
    }


class DayCompareView(PermissionGate, View):
    permission_required = roles.VIEW_SESSIONS

    def get(self, request: HttpRequest) -> HttpResponse:
        a, b = request.GET.get("a", ""), request.GET.get("b", "")
        context = _page_context(request, a, b)
        if not (a and b):
            return render(request, "operations/day_compare.html", context)
        try:
            (folder_a, root_a), (folder_b, root_b) = (episode_folder(key, request.user) for key in (a, b))
            result = compare_day(
                folder_a,
                folder_b,
                roots=[root_a, root_b],
                state_of=grid_state,
                labels=(f"A ({a})", f"B ({b})"),
            )
        except (EpisodeError, OperationsError) as error:
            context["error"] = str(error)
            return render(request, "operations/day_compare.html", context, status=400)
        for side, key in (("a", a), ("b", b)):
            replay = SESSION_KEY.fullmatch(key)
            if replay and replay.group(2) in REPLAYS:  # the Runner timed the replay, not the operator
                result[side]["kpis"]["decision_ms"] = {"recorded": False, "note": SESSION_DECISION_TIME}
        labels = {choice.key: choice.label for choice in context["choices"]}
        sides = [
            {
                "id": side,
                "letter": side.upper(),
                "key": key,
                "label": labels.get(key, key),
                "kpis": result[side]["kpis"],
            }
            for side, key in (("a", a), ("b", b))
        ]
        layout = grid_drawing(result["env"])
        n_line = len(result["a"]["frames"][0]["rho"]) if result["a"]["frames"] else 0
        drawable = layout is not None and len(layout["lines"]) == n_line
        context |= {
            "result": result,
            "rows": [(name, shown(sides[0]["kpis"]), shown(sides[1]["kpis"])) for name, shown in KPI_ROWS],
            "sides": sides,
            "drawable": drawable,
            "replay": {
                "layout": layout if drawable else None,
                "sides": [
                    {
                        "label": side["label"],
                        "frames": _deltas(result[key]["frames"]) if drawable else [],
                        "game_over": side["kpis"]["game_over"],
                    }
                    for key, side in zip(("a", "b"), sides)
                ],
            },
        }
        return render(request, "operations/day_compare.html", context)


class DayPlayView(PermissionGate, View):
    """POST: queue the deployed policy's play of a finished session's day (those who control
    sessions: it takes a worker tens of seconds); back to the page, which says how it goes. A
    refusal answers 400 with the reason above the picker, and nothing is queued."""

    permission_required = roles.CONTROL_SESSIONS

    def post(self, request: HttpRequest, pk: int) -> HttpResponse:
        try:
            play = day_play_request(session_id=pk, user=request.user)
        except OperationsError as error:
            context = _page_context(request) | {"error": str(error)}
            return render(request, "operations/day_compare.html", context, status=400)
        messages.success(
            request,
            f"{play.agent_label} is queued to play session {pk}'s day ({play.steps} steps); "
            "it is listed here when done",
        )
        return HttpResponseRedirect(reverse("operations:day_compare") + "#day-plays")

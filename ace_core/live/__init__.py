"""The live grid behind the operator's console, one concept per module:

- :mod:`~ace_core.live.envs`: the pool of reusable envs and the scenarios sessions index into;
- :mod:`~ace_core.live.actions`: operators' actions as JSON objects, checked by ``parse_action``;
- :mod:`~ace_core.live.states`: the grid's layout and per-step states (and their deltas);
- :mod:`~ace_core.live.alarms`: alarms a step raises;
- :mod:`~ace_core.live.legality`: why an action cannot be played now;
- :mod:`~ace_core.live.what_if`: an action simulated one step ahead;
- :mod:`~ace_core.live.recommendations`: the recommendation pipeline on live envs (with forecasts)
  and its cards;
- :mod:`~ace_core.live.grid`: ``LiveGrid``, one scenario stepped on demand with recommendations;
- :mod:`~ace_core.live.history`: ``GridHistory``, a grid that keeps every step's observation, so a
  what-if at any step played is one simulation;
- :mod:`~ace_core.live.export`: a session's day as grid2op EpisodeData (as played, or an agent
  playing it); :mod:`~ace_core.live.archive`: zip archives of it; :mod:`~ace_core.live.policy`:
  policies without a training run.

The names the web app uses are importable from ``ace_core.live`` itself. Pure Python: no Django.
"""

from ace_core.live.actions import (
    ACTION_KINDS,
    BUSES,
    DO_NOTHING,
    LINE_STATUSES,
    LiveAction,
    LiveActionError,
    absolute_action,
    card_action,
    describe_action,
    lines_switched_off,
    parse_action,
    to_grid2op,
)
from ace_core.live.alarms import alarms_between, n1_baseline, n1_worse, security_alarms
from ace_core.live.archive import zip_folder
from ace_core.live.envs import acquire_env, live_scenarios, release_env, session_scenario
from ace_core.live.export import ReplayAgent, export_episode, play_day
from ace_core.live.grid import LiveGrid, StepResult
from ace_core.live.history import GridHistory
from ace_core.live.legality import LegalityRules
from ace_core.live.policy import untrained_policy
from ace_core.live.recommendations import assessment_dict, card_dict, make_live_env
from ace_core.live.states import DELTA_KEYS, OVERLOAD, apply_delta, grid_layout, grid_state, state_delta
from ace_core.live.what_if import WhatIf, what_if
from ace_core.llm.prompts import explain_messages

__all__ = [
    "ACTION_KINDS",
    "BUSES",
    "DELTA_KEYS",
    "DO_NOTHING",
    "GridHistory",
    "LINE_STATUSES",
    "OVERLOAD",
    "LegalityRules",
    "LiveAction",
    "LiveActionError",
    "LiveGrid",
    "ReplayAgent",
    "StepResult",
    "WhatIf",
    "absolute_action",
    "card_action",
    "acquire_env",
    "alarms_between",
    "n1_baseline",
    "n1_worse",
    "apply_delta",
    "assessment_dict",
    "card_dict",
    "describe_action",
    "explain_messages",
    "export_episode",
    "grid_layout",
    "grid_state",
    "live_scenarios",
    "make_live_env",
    "lines_switched_off",
    "parse_action",
    "play_day",
    "release_env",
    "security_alarms",
    "session_scenario",
    "state_delta",
    "to_grid2op",
    "untrained_policy",
    "what_if",
    "zip_folder",
]

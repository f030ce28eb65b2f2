"""The live grid behind the operator's console, one concept per module:

- :mod:`~ace_core.live.envs`: the pool of reusable envs and the scenarios sessions index into;
- :mod:`~ace_core.live.actions`: operators' actions as JSON objects, checked by ``parse_action``;
- :mod:`~ace_core.live.states`: the grid's layout and per-step states (and their deltas);
- :mod:`~ace_core.live.alarms`: alarms a step raises;
- :mod:`~ace_core.live.legality`: why an action cannot be played now;
- :mod:`~ace_core.live.what_if_step`: an action simulated one step ahead;
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

from __future__ import annotations

from ace_core.lazy import lazy_names

_HOMES = {
    "absolute_action": "ace_core.live.actions",
    "acquire_env": "ace_core.live.envs",
    "ACTION_KINDS": "ace_core.live.actions",
    "alarms_between": "ace_core.live.alarms",
    "apply_delta": "ace_core.live.states",
    "assessment_dict": "ace_core.live.recommendations",
    "BUSES": "ace_core.live.actions",
    "card_action": "ace_core.live.actions",
    "card_dict": "ace_core.live.recommendations",
    "DELTA_KEYS": "ace_core.live.states",
    "describe_action": "ace_core.live.actions",
    "DO_NOTHING": "ace_core.live.actions",
    "explain_messages": "ace_core.llm.prompts",
    "export_episode": "ace_core.live.export",
    "grid_layout": "ace_core.live.states",
    "grid_state": "ace_core.live.states",
    "GridHistory": "ace_core.live.history",
    "LegalityRules": "ace_core.live.legality",
    "LINE_STATUSES": "ace_core.live.actions",
    "lines_switched_off": "ace_core.live.actions",
    "live_scenarios": "ace_core.live.envs",
    "LiveAction": "ace_core.live.actions",
    "LiveActionError": "ace_core.live.actions",
    "LiveGrid": "ace_core.live.grid",
    "make_live_env": "ace_core.live.recommendations",
    "n1_baseline": "ace_core.live.alarms",
    "n1_worse": "ace_core.live.alarms",
    "OVERLOAD": "ace_core.live.states",
    "parse_action": "ace_core.live.actions",
    "play_day": "ace_core.live.export",
    "release_env": "ace_core.live.envs",
    "ReplayAgent": "ace_core.live.export",
    "security_alarms": "ace_core.live.alarms",
    "session_scenario": "ace_core.live.envs",
    "state_delta": "ace_core.live.states",
    "StepResult": "ace_core.live.grid",
    "to_grid2op": "ace_core.live.actions",
    "untrained_policy": "ace_core.live.policy",
    "what_if": "ace_core.live.what_if_step",
    "WhatIf": "ace_core.live.what_if_step",
    "zip_folder": "ace_core.live.archive",
}
"""each name the package gives, and the module it lives in (imported on the first use of one of
its names: :mod:`ace_core.lazy`)"""

__all__ = sorted(_HOMES)


__getattr__ = lazy_names(__name__, _HOMES)

"""Writing live sessions (services). Views, tasks and the feed worker call these; every public
name is importable from here, whichever module holds it.

``sessions``      start a session, control it (pause, resume, step, speed, stop)
``forks``         a new session from a step of another (an incident gone over again)
``decisions``     operators' decisions on the current step, alarm acknowledgements
``explanations``  explanations of recommendations: the simulated facts, an LLM's text checked against them
``figures``       the simulated figures an operator saw when deciding (kept with the decision)
``feed``          what the live feed's worker writes: claims, heartbeats, each recorded step
``common``        what every write shares: the locked session row, change notices to consoles

Each module is imported on the first use of one of its names (:mod:`ace_core.lazy`): the API's
schemas read a limit here, and the feed's writes, which need the live grid, load it only where
they run.
"""

from ace_core.lazy import lazy_names

_HOMES = {
    "action_apply": "webapp.operations.services.decisions",
    "alarm_acknowledge": "webapp.operations.services.decisions",
    "COMMENT_MAX_LENGTH": "webapp.operations.services.common",
    "CONTROL_COMMANDS": "webapp.operations.services.sessions",
    "decisions_close": "webapp.operations.services.feed",
    "explanation_record": "webapp.operations.services.explanations",
    "explanation_request": "webapp.operations.services.explanations",
    "K_RANGE": "webapp.operations.services.sessions",
    "recommendation_decide": "webapp.operations.services.decisions",
    "session_control": "webapp.operations.services.sessions",
    "session_fail": "webapp.operations.services.feed",
    "session_fork": "webapp.operations.services.forks",
    "session_heartbeat": "webapp.operations.services.feed",
    "session_release": "webapp.operations.services.feed",
    "session_resumed": "webapp.operations.services.feed",
    "session_start": "webapp.operations.services.sessions",
    "sessions_claim": "webapp.operations.services.feed",
    "SPEED_RANGE": "webapp.operations.services.sessions",
    "step_record": "webapp.operations.services.feed",
}

__all__ = sorted(_HOMES)

__getattr__ = lazy_names(__name__, _HOMES)

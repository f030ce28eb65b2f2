"""Writing live sessions (services). Views, tasks and the feed worker call these; every public
name is importable from here, whichever module holds it.

``sessions``      start a session, control it (pause, resume, step, speed, stop)
``forks``         a new session from a step of another (an incident gone over again)
``decisions``     operators' decisions on the current step, alarm acknowledgements
``explanations``  explanations of recommendations: the simulated facts, an LLM's text checked against them
``figures``       the simulated figures an operator saw when deciding (kept with the decision)
``feed``          what the live feed's worker writes: claims, heartbeats, each recorded step
``common``        what every write shares: the locked session row, change notices to consoles
"""

from webapp.operations.services.common import COMMENT_MAX_LENGTH
from webapp.operations.services.decisions import action_apply, alarm_acknowledge, recommendation_decide
from webapp.operations.services.explanations import explanation_record, explanation_request
from webapp.operations.services.feed import (
    decisions_close,
    session_fail,
    session_heartbeat,
    session_release,
    session_resumed,
    sessions_claim,
    step_record,
)
from webapp.operations.services.forks import session_fork
from webapp.operations.services.sessions import (
    CONTROL_COMMANDS,
    K_RANGE,
    SPEED_RANGE,
    session_control,
    session_start,
)

__all__ = [
    "COMMENT_MAX_LENGTH",
    "CONTROL_COMMANDS",
    "K_RANGE",
    "SPEED_RANGE",
    "action_apply",
    "alarm_acknowledge",
    "decisions_close",
    "explanation_record",
    "explanation_request",
    "recommendation_decide",
    "session_control",
    "session_fail",
    "session_fork",
    "session_heartbeat",
    "session_release",
    "session_resumed",
    "session_start",
    "sessions_claim",
    "step_record",
]

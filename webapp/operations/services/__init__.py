"""Writing live sessions (services). Views, tasks and the feed worker call these; every public
name is importable from here, whichever module holds it.

``sessions``  starting and controlling sessions, operators' decisions, alarms, explanations, and
              what the feed worker records at each step
"""

from webapp.operations.services.sessions import (
    COMMENT_MAX_LENGTH,
    CONTROL_COMMANDS,
    K_RANGE,
    SPEED_RANGE,
    action_apply,
    action_check,
    alarm_acknowledge,
    decisions_close,
    explanation_record,
    explanation_request,
    recommendation_decide,
    session_control,
    session_fail,
    session_heartbeat,
    session_release,
    session_resumed,
    session_start,
    sessions_claim,
    step_record,
)

__all__ = [
    "COMMENT_MAX_LENGTH",
    "CONTROL_COMMANDS",
    "K_RANGE",
    "SPEED_RANGE",
    "action_apply",
    "action_check",
    "alarm_acknowledge",
    "decisions_close",
    "explanation_record",
    "explanation_request",
    "recommendation_decide",
    "session_control",
    "session_fail",
    "session_heartbeat",
    "session_release",
    "session_resumed",
    "session_start",
    "sessions_claim",
    "step_record",
]

"""The roles and what each may do. Groups are created from this map by data migrations
(``accounts.0001``; roles and permissions added later get their own, e.g. ``accounts.0003``).

Operators run the grid, engineers train and deploy, reviewers review the LLM's refinements, and
administrators look after the accounts (login lockouts, the security log). Superusers may do
everything. A user may hold several roles.
"""

from __future__ import annotations

OPERATOR = "operator"
ENGINEER = "engineer"
REVIEWER = "reviewer"
ADMIN = "admin"
ROLES = (OPERATOR, ENGINEER, REVIEWER, ADMIN)

# Permissions the views and websocket consumers check.
VIEW_RUNS = "training.view_trainingrun"
LAUNCH_RUNS = "training.launch_trainingrun"
EVALUATE_RUNS = "training.evaluate_trainingrun"
DEPLOY_CHECKPOINTS = "training.deploy_checkpoint"
VIEW_EVALUATIONS = "training.view_evaluation"
VIEW_DEPLOYMENT = "training.view_deployment"
VIEW_REFINEMENTS = "review.view_refinement"
DECIDE_REFINEMENTS = "review.decide_refinement"
VIEW_SHAPINGS = "review.view_rewardshaping"
VIEW_AUDIT = "audit.view_auditentry"
EXPORT_AUDIT = "audit.export_auditentry"
VIEW_SESSIONS = "operations.view_livesession"
START_SESSIONS = "operations.start_livesession"
CONTROL_SESSIONS = "operations.control_livesession"
OPERATE_SESSIONS = "operations.operate_livesession"
UNLOCK_LOGINS = "accounts.unlock_login"
VIEW_SECURITY_LOG = "accounts.view_securityevent"

ROLE_PERMISSIONS: dict[str, tuple[str, ...]] = {
    OPERATOR: (VIEW_DEPLOYMENT, VIEW_SESSIONS, CONTROL_SESSIONS, OPERATE_SESSIONS),
    ENGINEER: (
        VIEW_RUNS,
        LAUNCH_RUNS,
        EVALUATE_RUNS,
        DEPLOY_CHECKPOINTS,
        VIEW_DEPLOYMENT,
        "training.view_checkpoint",
        VIEW_EVALUATIONS,
        VIEW_AUDIT,
        VIEW_SESSIONS,
        START_SESSIONS,
        CONTROL_SESSIONS,
    ),
    REVIEWER: (
        VIEW_REFINEMENTS,
        DECIDE_REFINEMENTS,
        VIEW_SHAPINGS,
        VIEW_AUDIT,
        EXPORT_AUDIT,
    ),
    ADMIN: (UNLOCK_LOGINS, VIEW_SECURITY_LOG, VIEW_AUDIT),
}
# Engineers, reviewers and administrators also work in the Django admin.
STAFF_ROLES = (ENGINEER, REVIEWER, ADMIN)

"""The API's request and response bodies (pydantic, via django-ninja's Schema), one module per
router in :mod:`webapp.api.endpoints`. Callers import from the module that holds a schema; this
package holds nothing itself.

Response schemas mirror the JSON the pages already send (``webapp.live.session_messages``,
``webapp.live.run_messages``), so a console and an API client read the same fields.

``common``           what every body shares: the strict base of client input, paging, NO_NUL
``sessions``         operations: sessions, the console's snapshot, start and speed
``recommendations``  operations: recommendation cards, decisions on them, what-if
``training``         runs, their launch, their metric points
``evaluations``      evaluations of a run against the baselines
``mines``            mines of expert decisions
``deployments``      the deploy guard, deployments, deploy and rollback
``review``           refinements and reviewers' decisions
``audit``            the audit log
``me``               the token's user
"""

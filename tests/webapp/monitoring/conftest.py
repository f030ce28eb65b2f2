"""The live console's fixtures (a deployed policy, sessions of the sandbox grid), shared here."""

from tests.webapp.operations.conftest import deployment, make_session, policy_file  # noqa: F401

"""The HTTP API (``/api/v1/``) and the personal API tokens it accepts.

Built on django-ninja: request and response bodies are typed pydantic schemas, the OpenAPI 3
schema (``/api/v1/openapi.json``) and the browsable docs (``/api/v1/docs``) are generated from the
code, so they cannot drift from what the endpoints do, and it is plain Django underneath (the
same ORM, auth, permissions, middleware and tests as the pages), without a second framework's
serializers and views to learn. Endpoints only translate HTTP to the apps' services (writes) and
selectors (reads); every rule lives there, shared with the pages.

``models``    ApiToken (hashed secret, visible prefix, optional expiry, revocation, last use)
``services``  create, revoke, note the use of tokens (audited)
``selectors`` list a user's tokens, resolve a presented token
``auth``      Bearer authentication and the role gate of every endpoint
``errors``    one JSON error shape for every refusal
``endpoints`` operations, training, review, audit, and "me"
"""

"""Production settings: the base settings, hardened. ``manage.py check --deploy`` passes clean.

Required: ``SECRET_KEY`` (50+ characters, not a development key), ``ALLOWED_HOSTS`` and
``DATABASE_URL``. ``REDIS_URL`` is strongly advised (several web processes and workers share live
updates through it). Behind a TLS-terminating proxy set ``SECURE_PROXY_SSL_HEADER=1``;
``HTTPS_ONLY=0`` allows plain HTTP for a local try-out (``check --deploy`` then warns).
``GRIDACE_SESSION_HOURS`` (default 9): how long a login lasts. The Content-Security-Policy and the
login throttling of the base settings apply as they are.
"""

from __future__ import annotations

import os

from django.core.exceptions import ImproperlyConfigured

from webapp.settings import *  # noqa: F403
from webapp.settings import SECRET_KEY, env_bool, env_number

if len(SECRET_KEY) < 50 or SECRET_KEY.startswith("django-insecure"):
    raise ImproperlyConfigured(
        "SECRET_KEY must be set to a random string of 50+ characters for production "
        '(e.g. python -c "import secrets; print(secrets.token_urlsafe(64))")'
    )
if "ALLOWED_HOSTS" not in os.environ:
    raise ImproperlyConfigured("ALLOWED_HOSTS must list this site's host names, comma-separated")
if "DATABASE_URL" not in os.environ:
    raise ImproperlyConfigured("DATABASE_URL must point at the production database, e.g. postgres://...")

DEBUG = False
WHITENOISE_USE_FINDERS = False
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}

# HTTPS_ONLY=0 serves plain HTTP (a local try-out of the compose file); check --deploy then warns.
HTTPS_ONLY = env_bool("HTTPS_ONLY", True)
SECURE_SSL_REDIRECT = HTTPS_ONLY
if env_bool("SECURE_PROXY_SSL_HEADER", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_HSTS_SECONDS = int(env_number("SECURE_HSTS_SECONDS", 31_536_000)) if HTTPS_ONLY else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = HTTPS_ONLY
SECURE_HSTS_PRELOAD = HTTPS_ONLY
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SESSION_COOKIE_SECURE = HTTPS_ONLY
CSRF_COOKIE_SECURE = HTTPS_ONLY
SESSION_COOKIE_HTTPONLY = True
# A session ends after a working shift (default 9 hours: 8 and the hand-over), not Django's two
# weeks; its open sockets close with it. GRIDACE_SESSION_HOURS changes the length.
SESSION_COOKIE_AGE = int(env_number("GRIDACE_SESSION_HOURS", 9) * 3600)
if not 0 < SESSION_COOKIE_AGE <= 7 * 24 * 3600:
    raise ImproperlyConfigured("GRIDACE_SESSION_HOURS must be more than 0 and at most 168 (a week)")
X_FRAME_OPTIONS = "DENY"
DATABASES["default"]["CONN_MAX_AGE"] = int(env_number("DATABASE_CONN_MAX_AGE", 60))  # noqa: F405
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True  # noqa: F405

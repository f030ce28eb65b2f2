"""Settings, read from the environment so one code base serves the demo, CI and production.

Environment variables (all optional here; :mod:`webapp.settings_production` requires more):

``DATABASE_URL``      database (default: SQLite file ``var/gridace.sqlite3``)
``DATABASE_TEST_NAME`` name of the test database on Postgres (default ``test_gridace``)
``REDIS_URL``         channel layer on Redis (default: an in-process layer, single process only)
``SECRET_KEY``        signing key (default: a development key, refused by the production settings)
``DEBUG``             ``1``/``true`` turns debug pages on (default off)
``ALLOWED_HOSTS``     comma-separated host names (default ``localhost,127.0.0.1,[::1]``)
``CSRF_TRUSTED_ORIGINS`` comma-separated origins, for deployments behind a proxy
``GRIDACE_RUNS_DIR``  where runs write checkpoints and episodes (default ``var/runs``)
``GRIDACE_DATA_DIR``  the only other folder users may name files in, e.g. action subsets
                      (default ``var/data``); when set, ace_core also opens the full datasets
                      there (``<env>/chronics``, e.g. days added by ``python -m ace_core days``)
``GRIDACE_MINES_DIR`` where the mines started from the web app are written and found (default
                      ``$GRIDACE_CACHE_DIR/mines``, where runs with pretrain_mine=auto mine too);
                      finished mines under ``GRIDACE_DATA_DIR/mines`` are listed as well
``GRIDACE_HEARTBEAT_SECONDS`` / ``GRIDACE_STALE_AFTER_SECONDS`` / ``GRIDACE_MAX_AUTO_RESUMES``
                      worker heartbeat of jobs (runs, mines, plays), and their recovery by the watchdog
                      (defaults 3, 30, 2; auto-resumes: runs only)
``GRIDACE_LIVE_STALE_SECONDS`` / ``GRIDACE_LIVE_POLL_SECONDS``
                      live feed worker take-over delay and polling period (defaults 10, 0.2)
``GRIDACE_API_RATE`` / ``GRIDACE_API_ADDRESS_RATE`` / ``GRIDACE_API_MAX_BODY_BYTES``
                      HTTP API requests per token (default 600/min) and per client address
                      (default 1200/min), and largest body (default 64 KiB)
``GRIDACE_SECURITY_LOG_MAX_ROWS`` / ``GRIDACE_SECURITY_LOG_DAYS``
                      retention of the log of refused API requests (defaults 10000 rows, 30 days)
``GRIDACE_SOCKET_SESSION_CHECK_SECONDS``
                      how often open websockets re-check their session (default 2)
``CHANNEL_LAYER``     with Redis: ``pubsub`` (default: one publish per group message, copied to
                      the sockets inside each web process) or ``core`` (Redis holds a copy of
                      each group message per socket: slower past a few hundred consoles)
``GRIDACE_LOGIN_FAILURE_LIMIT`` / ``GRIDACE_LOGIN_LOCKOUT_MINUTES`` / ``GRIDACE_LOGIN_LOCKOUT_MAX_HOURS``
                      failed log-ins (per username and address pair) before a lockout, how long
                      the first lasts, and the longest it grows to (defaults 5, 15, 24)
``GRIDACE_EXPLAIN_LLM`` / ``GRIDACE_EXPLAIN_LLM_MODEL`` / ``GRIDACE_EXPLAIN_LLM_OPTIONS`` (JSON)
                      the LLM explaining live recommendations (defaults: local, offline model)
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import dj_database_url
from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("GRIDACE_VAR_DIR", BASE_DIR / "var"))


def env_bool(name: str, default: bool = False) -> bool:
    """Read a yes/no environment variable; accepted: 1/0, true/false, yes/no, on/off."""
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    lowered = value.strip().lower()
    if lowered in {"1", "true", "yes", "on"}:
        return True
    if lowered in {"0", "false", "no", "off"}:
        return False
    raise ValueError(f"{name}={value!r} is not a yes/no value; accepted: 1/0, true/false, yes/no, on/off")


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


def env_number(name: str, default: float) -> float:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    try:
        return float(value)
    except ValueError:
        raise ValueError(f"{name}={value!r} is not a number") from None


SECRET_KEY = os.environ.get(
    "SECRET_KEY", "django-insecure-gridace-development-key-set-SECRET_KEY-in-production"
)
DEBUG = env_bool("DEBUG", False)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "")

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "channels",
    "axes",
    "csp",
    "django_tasks",
    "django_tasks_db",
    "webapp.accounts",
    "webapp.audit",
    "webapp.training",
    "webapp.review",
    "webapp.operations",
    "ninja",  # serves the API docs' Swagger UI from its own static files (no CDN)
    "webapp.api",
    "webapp.monitoring",
]

MIDDLEWARE = [
    "webapp.monitoring.middleware.RequestLatencyMiddleware",
    # before anything reads the body: an oversized JSON request gets the JSON error shape
    "webapp.middleware.JsonBodyLimitMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    # last, as django-axes asks: turns a locked-out log-in into the lockout page
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "webapp.urls"
ASGI_APPLICATION = "webapp.asgi.application"
WSGI_APPLICATION = "webapp.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "webapp.accounts.context_processors.roles",
            ],
        },
    },
]

# --- database -------------------------------------------------------------------------------
DEFAULT_SQLITE_URL = f"sqlite:///{VAR_DIR / 'gridace.sqlite3'}"
DATABASES = {
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL", DEFAULT_SQLITE_URL),
        conn_max_age=int(env_number("DATABASE_CONN_MAX_AGE", 0)),
    )
}
DATABASES["default"]["TEST"] = {"NAME": os.environ.get("DATABASE_TEST_NAME", "test_gridace")}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    VAR_DIR.mkdir(parents=True, exist_ok=True)
    DATABASES["default"]["TEST"]["NAME"] = str(VAR_DIR / f"{DATABASES['default']['TEST']['NAME']}.sqlite3")
    # The worker and the web server share one file: wait for locks instead of failing at once.
    DATABASES["default"].setdefault("OPTIONS", {}).update({"timeout": 20, "transaction_mode": "IMMEDIATE"})
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- channel layer --------------------------------------------------------------------------
REDIS_URL = os.environ.get("REDIS_URL", "")
if REDIS_URL:
    CHANNEL_LAYER_BACKENDS = {
        "core": "channels_redis.core.RedisChannelLayer",
        "pubsub": "channels_redis.pubsub.RedisPubSubChannelLayer",
    }
    CHANNEL_LAYER = os.environ.get("CHANNEL_LAYER", "pubsub")
    if CHANNEL_LAYER not in CHANNEL_LAYER_BACKENDS:
        raise ImproperlyConfigured(
            f"CHANNEL_LAYER={CHANNEL_LAYER!r}: accepted: {', '.join(CHANNEL_LAYER_BACKENDS)}"
        )
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": CHANNEL_LAYER_BACKENDS[CHANNEL_LAYER],
            "CONFIG": {
                # redis-py caps its pool at 100 connections; bursts of websocket connects need more.
                # No read timeout: redis-py 8 reads for at most 5 s by default, as long as the
                # layer's receive blocks on Redis (BZPOPMIN, 5 s), so a process whose sockets got
                # no message for 5 s lost one socket to a TimeoutError every 5 s (redis-py 7: None).
                "hosts": [{"address": REDIS_URL, "max_connections": 2000, "socket_timeout": None}],
                # each test process of a parallel run (pytest -n) keeps its groups to itself
                "prefix": os.environ.get(
                    "CHANNEL_LAYER_PREFIX", "gridace" + os.environ.get("PYTEST_XDIST_WORKER", "")
                ),
            },
        }
    }
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
# The in-process layer cannot carry a worker process's messages to the web server, so the live
# pages then poll the database for new rows instead (see training.consumers).
LIVE_RELAY_FROM_DB = env_bool("LIVE_RELAY_FROM_DB", not REDIS_URL)
LIVE_RELAY_INTERVAL_SECONDS = env_number("LIVE_RELAY_INTERVAL_SECONDS", 1.0)
# Open sockets re-check their session this often and close when it ended (logout, expiry,
# password change); one check per browser session and process per period.
GRIDACE_SOCKET_SESSION_CHECK_SECONDS = env_number("GRIDACE_SOCKET_SESSION_CHECK_SECONDS", 2.0)

# --- background tasks -----------------------------------------------------------------------
TASKS = {
    "default": {
        "BACKEND": "django_tasks_db.DatabaseBackend",
        # explain: LLM explanations of live recommendations, apart from the live feed's fast path
        "QUEUES": ["default", "training", "explain"],
    }
}

# --- training runs --------------------------------------------------------------------------
GRIDACE_RUNS_DIR = Path(os.environ.get("GRIDACE_RUNS_DIR", VAR_DIR / "runs"))
# Files users name in forms (action subsets, model folders) must lie here or in the runs folder.
GRIDACE_DATA_DIR = Path(os.environ.get("GRIDACE_DATA_DIR", VAR_DIR / "data"))
# Mines of expert decisions (``python -m ace_core mine``); empty: $GRIDACE_CACHE_DIR/mines, read
# when used, so the web app and the trainer's pretrain_mine=auto share one cache.
GRIDACE_MINES_DIR = os.environ.get("GRIDACE_MINES_DIR", "")
# Dotted paths of the functions the worker calls; tests point them at fast stand-ins.
GRIDACE_TRAINER = os.environ.get("GRIDACE_TRAINER", "ace_core.training.run")
GRIDACE_EVALUATOR = os.environ.get("GRIDACE_EVALUATOR", "ace_core.evaluation.runner.evaluate")
GRIDACE_HEARTBEAT_SECONDS = env_number("GRIDACE_HEARTBEAT_SECONDS", 3.0)
GRIDACE_STALE_AFTER_SECONDS = env_number("GRIDACE_STALE_AFTER_SECONDS", 30.0)
GRIDACE_MAX_AUTO_RESUMES = int(env_number("GRIDACE_MAX_AUTO_RESUMES", 2))
GRIDACE_BASELINES = env_list("GRIDACE_BASELINES", "do-nothing,reconnect,greedy")
# An evaluation also plays the run's policy as deployed: its K most likely actions checked by
# simulation, ``K[:stop=R][:expert[=N]]`` of ace_core's ``sac-checked`` agent. Unset: each grid's
# validated check (``ace_core.agents.deployed.deployed_checked``); empty: the plain policy only.
GRIDACE_CHECKED_AGENT = os.environ.get("GRIDACE_CHECKED_AGENT")
# More folders whose grid2op Runner output (EpisodeData) the day-comparison page may open
# (comma-separated; besides evaluations and finished sessions). ``manage.py episode_folders``.
GRIDACE_EPISODE_ROOTS = env_list("GRIDACE_EPISODE_ROOTS", "")

# --- live operations ------------------------------------------------------------------------
# A live session whose feed worker is silent this long is taken over by another worker.
GRIDACE_LIVE_STALE_SECONDS = env_number("GRIDACE_LIVE_STALE_SECONDS", 10.0)
# How often the feed worker looks for new sessions, pause/step commands and decisions.
GRIDACE_LIVE_POLL_SECONDS = env_number("GRIDACE_LIVE_POLL_SECONDS", 0.2)
# The LLM that explains recommendations (ace_core.llm.factory.make_backend), on the explain queue.
GRIDACE_EXPLAIN_LLM = os.environ.get("GRIDACE_EXPLAIN_LLM", "local")
GRIDACE_EXPLAIN_LLM_MODEL = os.environ.get("GRIDACE_EXPLAIN_LLM_MODEL", "")
GRIDACE_EXPLAIN_LLM_OPTIONS = json.loads(os.environ.get("GRIDACE_EXPLAIN_LLM_OPTIONS", '{"threads": 1}'))
GRIDACE_EXPLAIN_MAX_TOKENS = int(env_number("GRIDACE_EXPLAIN_MAX_TOKENS", 96))

# --- HTTP API -------------------------------------------------------------------------------
# Requests per token ("N/s", "N/min" or "N/hour"), counted in Django's cache; largest body accepted.
GRIDACE_API_RATE = os.environ.get("GRIDACE_API_RATE", "600/min")
GRIDACE_API_MAX_BODY_BYTES = int(env_number("GRIDACE_API_MAX_BODY_BYTES", 64 * 1024))
# Requests per client address (REMOTE_ADDR: behind a proxy run daphne with --proxy-headers),
# tokens or not, so a flood of bad tokens is throttled too.
GRIDACE_API_ADDRESS_RATE = os.environ.get("GRIDACE_API_ADDRESS_RATE", "1200/min")
# Refused and throttled API requests go to the security log (not the audit log), which keeps this
# many newest rows of this many days.
GRIDACE_SECURITY_LOG_MAX_ROWS = int(env_number("GRIDACE_SECURITY_LOG_MAX_ROWS", 10_000))
GRIDACE_SECURITY_LOG_DAYS = env_number("GRIDACE_SECURITY_LOG_DAYS", 30)
# --- metrics (webapp/monitoring) -------------------------------------------------------------
# /metrics answers scrapers from these addresses or networks, or bearing this token; both empty
# turns it off (404). Behind a reverse proxy REMOTE_ADDR is the proxy: prefer the token there.
GRIDACE_METRICS_ALLOWED_IPS = env_list("GRIDACE_METRICS_ALLOWED_IPS", "127.0.0.1,::1")
GRIDACE_METRICS_TOKEN = os.environ.get("GRIDACE_METRICS_TOKEN", "")
# Worker processes (db_worker, live_feed) serve their own metrics (LLM calls) on this port; 0: off.
GRIDACE_METRICS_WORKER_PORT = int(env_number("GRIDACE_METRICS_WORKER_PORT", 0))
GRIDACE_METRICS_WORKER_ADDR = os.environ.get("GRIDACE_METRICS_WORKER_ADDR", "127.0.0.1")

# --- auth -----------------------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# --- Content-Security-Policy (django-csp) ---------------------------------------------------------
# Scripts, styles, images and sockets from this site only: no inline script or style, no eval.
# Pages pass data to their scripts with json_script (a JSON block, never executed) or data-
# attributes. Sockets are same-origin ('self' covers ws:/wss: of the page's own host).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:"],
        "font-src": [SELF],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [NONE],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    }
}

AUTHENTICATION_BACKENDS = [
    # first: refuses a locked-out user or address before the password is even checked
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
# Login throttling (django-axes): after this many failed log-ins of one username from one address,
# that pair's log-ins are refused for a cool-off that grows with further failures
# (webapp.accounts.lockouts); the user can still log in from other addresses. Administrators
# unlock on the Lockouts page (audited); attempts are listed in the admin under "Axes".
AXES_FAILURE_LIMIT = int(env_number("GRIDACE_LOGIN_FAILURE_LIMIT", 5))
GRIDACE_LOGIN_LOCKOUT_MINUTES = env_number("GRIDACE_LOGIN_LOCKOUT_MINUTES", 15)
GRIDACE_LOGIN_LOCKOUT_MAX_HOURS = env_number("GRIDACE_LOGIN_LOCKOUT_MAX_HOURS", 24)
AXES_COOLOFF_TIME = "webapp.accounts.lockouts.cool_off"
AXES_USE_ATTEMPT_EXPIRATION = True  # each pair's lockout ends at its own time
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True  # a good log-in forgets that pair's failures
AXES_LOCKOUT_CALLABLE = "webapp.accounts.views.locked_out"
LOGIN_URL = "accounts:login"
LOGIN_REDIRECT_URL = "accounts:home"
LOGOUT_REDIRECT_URL = "accounts:login"
CSRF_FAILURE_VIEW = "webapp.accounts.views.csrf_failure"

# --- i18n, static ---------------------------------------------------------------------------
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", BASE_DIR / "staticfiles"))
STATICFILES_DIRS = [BASE_DIR / "static"]
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
    # plotly.js ships inside the plotly wheel: serve that copy as vendor/plotly.min.js (no CDN).
    "webapp.staticfinders.PlotlyFinder",
]
# Serve straight from the finders so the demo needs no collectstatic; production turns this off.
WHITENOISE_USE_FINDERS = True
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "filters": {"one_line_client_errors": {"()": "webapp.log_filters.OneLineClientErrors"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "loggers": {
        "webapp": {"handlers": ["console"], "level": os.environ.get("GRIDACE_LOG_LEVEL", "INFO")},
        # a refused request (403, 400) is one line, not a traceback; server errors keep theirs
        **{
            name: {"filters": ["one_line_client_errors"]}
            for name in (
                "django.request",
                "django.security.DisallowedHost",
                "django.security.RequestDataTooBig",
            )
        },
    },
}

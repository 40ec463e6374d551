"""gridwms settings (the project root, gridwms/): one module, driven by the environment.

PostgreSQL is the only database engine: DATABASE_URL names the server, and without it the
checkout's embedded server is used (gridwms/embedded_pg.py), so a fresh clone needs no service.
"""

import os
import socket
import sys
import tempfile
import warnings
from pathlib import Path

import dj_database_url

from core.logs import logging_config
from gridwms import embedded_pg

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def _env_number(name: str, default, kind):
    value = os.environ.get(name)
    if value is None:
        return default
    try:
        return kind(value)
    except ValueError:
        # One line naming the variable, no traceback (an operator reads it in a unit's log).
        raise SystemExit(
            f"gridwms: {name}={value!r} is not a number ({kind.__name__}); see "
            "docs/operator-guide.md, Parameters"
        ) from None


def env_int(name: str, default: int) -> int:
    return _env_number(name, default, int)


def env_float(name: str, default: float) -> float:
    return _env_number(name, default, float)


DEBUG = env_bool("DEBUG", True)
# The test suite (or a server it starts, GRIDWMS_TESTING=1): here and nowhere else, only to pick
# a fast password hasher, a sandbox directory of its own and to keep production's refusals off.
# Cache lifetimes and background work are ordinary settings (below) the suite sets like any site.
TESTING = env_bool("GRIDWMS_TESTING", "pytest" in sys.modules)
# Production: DEBUG off outside the test suite (`make serve`, gunicorn -c gridwms/gunicorn.conf.py).
PRODUCTION = not DEBUG and not TESTING


def required_in_production(name: str, development_default: str) -> str:
    """A setting production must be given: without it, one line naming the variable and exit
    (no traceback: an operator reads it in a terminal or a unit's log)."""
    value = os.environ.get(name, "").strip()
    if value:
        return value
    if PRODUCTION:
        raise SystemExit(
            f"gridwms: {name} is not set; production (DEBUG=0) refuses to start without it "
            "(see docs/operator-guide.md, Production)"
        )
    return development_default


SECRET_KEY = required_in_production(
    "SECRET_KEY", "gridwms-development-key-change-me-in-production-0123456789"
)
DATABASE_URL = required_in_production("DATABASE_URL", "")
ALLOWED_HOSTS = [
    h
    for h in os.environ.get(
        "ALLOWED_HOSTS", "127.0.0.1,localhost" if PRODUCTION else "127.0.0.1,localhost,testserver"
    ).split(",")
    if h
]
CSRF_TRUSTED_ORIGINS = [o for o in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o]
# A refused form gets the framed 403 page saying to reload, not Django's bare one.
CSRF_FAILURE_VIEW = "web.core.error_pages.csrf_failure"

# Behind a TLS-terminating proxy (docs/operator-guide.md, Behind a TLS-terminating proxy): each
# is Django's setting of the same name, off by default so that a host answers plain HTTP on its
# own address (curl, health checks).
if os.environ.get("SECURE_PROXY_SSL_HEADER"):
    # The header the proxy sets to "https", e.g. X-Forwarded-Proto; the proxy must overwrite it.
    _header = os.environ["SECURE_PROXY_SSL_HEADER"].strip().upper().replace("-", "_")
    SECURE_PROXY_SSL_HEADER = (f"HTTP_{_header}", "https")
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
# Load balancers and Prometheus ask the hosts directly, over plain HTTP.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^metrics$"]
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", False)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", False)

# The name this host records on the cycle runs it claims (several hosts share one database).
NODE_NAME = os.environ.get("NODE_NAME", "").strip() or socket.gethostname()

# `make run` drives the demo with the simulated grid's shared, accelerated clock.
SIMULATED_CLOCK = os.environ.get("GRIDWMS_SIMULATED_CLOCK", "") == "1"

# What opens the backend of each kind of submit pool (the parameter SubmitPoolBackends gives each
# pool its kind) for a director cycle. An "external" pool has none: this director sends it no
# pilot. The simulated CEs belong to the simulated grid.
SUBMIT_POOL_BACKENDS = {
    "local": "pilots.submit_pools.LocalBackend",
    "panda": "pilots.panda_pilots.PandaBackend",  # PanDA's own pilot (docs/operator-guide.md)
    "simulated": "simulation.simulated_ce.simulated_ces",
}

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_q",
    "core",
    "shares",
    "matcher",
    "pilots",
    "brokerage",
    "timeouts",
    "classads",
    "simulation",
    "retention",
    "sandboxes",
    "notifications",
    "accounting",
    "api",
    "web",
]

MIDDLEWARE = [
    "web.core.metrics.RequestMetricsMiddleware",
    "web.core.middleware.RequestSizeLimitMiddleware",
    "web.core.middleware.DatabaseUnavailableMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "web.core.middleware.LoginRequiredMiddleware",
]

ROOT_URLCONF = "gridwms.urls"
WSGI_APPLICATION = "gridwms.wsgi.application"
ASGI_APPLICATION = "gridwms.asgi.application"

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
                "web.core.context_processors.simulated_clock",
            ],
        },
    },
]

# --- Database: PostgreSQL, the only engine ------------------------------------------------------
# DATABASE_URL names the server (production, CI's own). Unset, the checkout's embedded server
# (gridwms/embedded_pg.py: `.pgdata/`, a Unix socket), which `make run` and `make test` start.
DATABASES = {"default": dj_database_url.parse(DATABASE_URL or embedded_pg.url(), conn_max_age=0)}
# Django turns psycopg's prepared statements off (for external poolers); the matcher's hot
# statements are prepared explicitly, so only switch automatic preparation off (a threshold
# never reached) instead of disabling it.
DATABASES["default"].setdefault("OPTIONS", {})["prepare_threshold"] = 10**9
# No JIT compilation in the application's sessions: its statements are short reads over big
# tables whose estimated cost passes jit_above_cost, and compiling cost more than running (a
# name search at 21,000,000 jobs: 337 ms of JIT in 430). DB_JIT=true keeps the server's setting.
if not env_bool("DB_JIT", False):
    _options = DATABASES["default"]["OPTIONS"].get("options", "")
    DATABASES["default"]["OPTIONS"]["options"] = f"{_options} -c jit=off".strip()
# A server that does not answer fails the request in seconds (a 503, below), not after the
# kernel's TCP timeout.
DATABASES["default"]["OPTIONS"]["connect_timeout"] = env_int("DB_CONNECT_TIMEOUT", 5)
if env_bool("DB_POOL", False):
    # Bounded per process. A request waits at most DB_POOL_TIMEOUT seconds for a free
    # connection, then answers 503 with Retry-After rather than queueing behind a burst.
    DATABASES["default"]["OPTIONS"]["pool"] = {
        "min_size": env_int("DB_POOL_MIN_SIZE", 1),
        "max_size": env_int("DB_POOL_MAX_SIZE", env_int("WEB_THREADS", 4)),
        "timeout": env_float("DB_POOL_TIMEOUT", 5.0),
    }
else:
    # Persistent connections: a new one costs a pilot's request ~6 ms (connect + plan).
    DATABASES["default"]["CONN_MAX_AGE"] = env_int("CONN_MAX_AGE", 60)
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
# A request that cannot reach the database (refused, down, the pool exhausted) answers 503 with
# this Retry-After, in seconds (web.core.error_pages.database_unavailable).
DB_RETRY_AFTER = env_int("DB_RETRY_AFTER", 5)

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
AUTH_USER_MODEL = "shares.User"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
if TESTING:
    PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-gb"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# --- Static files: everything served locally through whitenoise, no CDN ---------------------------
STATIC_URL = "static/"
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", BASE_DIR / "staticfiles"))
STATICFILES_DIRS = [BASE_DIR / "static"]
STATICFILES_FINDERS = [
    "django.contrib.staticfiles.finders.FileSystemFinder",
    "django.contrib.staticfiles.finders.AppDirectoriesFinder",
    "web.core.staticfinders.RedocFinder",
]
# Production serves what `collectstatic` wrote: names carrying their content's hash (cached for
# a year, immutable) from the manifest, compressed. Development serves from the finders.
STATIC_MANIFEST = env_bool("STATIC_MANIFEST", not DEBUG)
# Jobs' sandbox files (input files, stdout, stderr, output sandboxes): any storage backend a
# site configures; by default files under SANDBOX_ROOT.
SANDBOX_ROOT = Path(
    os.environ.get("SANDBOX_ROOT")
    or (
        Path(tempfile.gettempdir()) / f"gridwms-test-sandboxes-{os.getpid()}"
        if TESTING
        else BASE_DIR / "sandboxes-data"
    )
)
# The Local submit pool's pilots write their output here, one file a pilot.
LOCAL_PILOT_LOG_DIR = Path(
    os.environ.get("LOCAL_PILOT_LOG_DIR")
    or (
        Path(tempfile.gettempdir()) / f"gridwms-test-pilot-logs-{os.getpid()}"
        if TESTING
        else BASE_DIR / "pilot-logs"
    )
)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "sandboxes": {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        "OPTIONS": {"location": str(SANDBOX_ROOT), "base_url": None},
    },
    "staticfiles": {
        "BACKEND": (
            "whitenoise.storage.CompressedManifestStaticFilesStorage"
            if STATIC_MANIFEST
            else "django.contrib.staticfiles.storage.StaticFilesStorage"
        )
    },
}
WHITENOISE_USE_FINDERS = not STATIC_MANIFEST
# Served from the finders (development, `make run` with DEBUG off too): files edited while the
# server runs are served as they now are.
WHITENOISE_AUTOREFRESH = not STATIC_MANIFEST
# In development whitenoise serves from the finders; staticfiles/ exists only after collectstatic.
warnings.filterwarnings("ignore", message="No directory at")

# Request bodies over this answer 413 (web.core.middleware.RequestSizeLimitMiddleware); forms
# and uploads are held to it too. A submission of MaxJobsPerSubmission jobs must fit.
REQUEST_MAX_BYTES = env_int("REQUEST_MAX_BYTES", 10 * 1024 * 1024)
DATA_UPLOAD_MAX_MEMORY_SIZE = REQUEST_MAX_BYTES
# multipart/form-data bodies (sandbox files: their files go to disk past
# FILE_UPLOAD_MAX_MEMORY_SIZE) may be larger: the submission's and the pilots' output
# uploads, each held to its gdpconfig limit (MaxInputSandboxBytes, MaxOutputSandboxBytes).
UPLOAD_MAX_BYTES = env_int("UPLOAD_MAX_BYTES", 64 * 1024 * 1024)
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024
DATA_UPLOAD_MAX_NUMBER_FILES = 200
FILE_UPLOAD_PERMISSIONS = 0o600
FILE_UPLOAD_DIRECTORY_PERMISSIONS = 0o700

# --- How long a process trusts what it cached, and its background work ---------------------------
# Each bounds how late a change made by another process is seen (docs/operator-guide.md,
# Parameters): the matcher's view of the TaskQueues, gdpconfig values, API tokens, the sites and
# CEs.
# Dropping emptied TaskQueues and recomputing the priorities their groups are due: in a thread of
# each process after the commit (on), or at once in the caller's thread (off). The defaults, in
# one place (the test suite proves them as bounds).
LIFETIME_DEFAULTS = {
    "TASKQUEUE_VIEW_REFRESH_SECONDS": 1.0,
    "GDPCONFIG_REFRESH_SECONDS": 2.0,
    "API_TOKEN_CACHE_SECONDS": 5.0,
    "TOPOLOGY_CACHE_SECONDS": 5.0,
    "HOUSEKEEPING_IN_BACKGROUND": True,
}
TASKQUEUE_VIEW_REFRESH_SECONDS = env_float(
    "TASKQUEUE_VIEW_REFRESH_SECONDS", LIFETIME_DEFAULTS["TASKQUEUE_VIEW_REFRESH_SECONDS"]
)
GDPCONFIG_REFRESH_SECONDS = env_float(
    "GDPCONFIG_REFRESH_SECONDS", LIFETIME_DEFAULTS["GDPCONFIG_REFRESH_SECONDS"]
)
API_TOKEN_CACHE_SECONDS = env_float(
    "API_TOKEN_CACHE_SECONDS", LIFETIME_DEFAULTS["API_TOKEN_CACHE_SECONDS"]
)
TOPOLOGY_CACHE_SECONDS = env_float(
    "TOPOLOGY_CACHE_SECONDS", LIFETIME_DEFAULTS["TOPOLOGY_CACHE_SECONDS"]
)
HOUSEKEEPING_IN_BACKGROUND = env_bool(
    "HOUSEKEEPING_IN_BACKGROUND", LIFETIME_DEFAULTS["HOUSEKEEPING_IN_BACKGROUND"]
)

# --- Cache shared by all processes (gdpconfig generation, throttles) ---------------------------
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# --- Bearer tokens (api/core/tokens.py) -------------------------------------------------------
# Signed tokens for PanDA's client (`manage.py panda_token USER`); DiracX's credentials file
# carries an API token instead (`manage.py diracx_credentials USER`).
JWT_SIGNING_KEY = os.environ.get("JWT_SIGNING_KEY", "")
JWT_ISSUER = os.environ.get("JWT_ISSUER", "gridwms")
JWT_LIFETIME_SECONDS = int(os.environ.get("JWT_LIFETIME_SECONDS", str(7 * 24 * 3600)))
# The virtual organisation this grid serves, as DiracX and PanDA's clients name it.
GRID_VO = os.environ.get("GRID_VO", "gridwms")

# --- REST API ---------------------------------------------------------------------------------
REST_FRAMEWORK = {
    # Token first: a client presenting a token is that token's user (cached a few seconds per
    # process, api/core/authentication.py), with no session to look up.
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "api.core.authentication.CachedTokenAuthentication",
        "api.core.authentication.BearerAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # orjson both ways; bodies nested deeper than 64 levels answer 400 (api/core/codec.py).
    "DEFAULT_PARSER_CLASSES": [
        "api.core.codec.OrjsonParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_RENDERER_CLASSES": [
        "api.core.codec.OrjsonRenderer",
        "rest_framework.renderers.BrowsableAPIRenderer",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_FILTER_BACKENDS": ["web.core.filters.StrictFilterBackend"],
    "DEFAULT_PAGINATION_CLASS": "web.core.pagination.DefaultCursorPagination",
    "PAGE_SIZE": 50,
    # Summaries, error bodies and integer ids for every operation (api/core/schema.py).
    "DEFAULT_SCHEMA_CLASS": "api.core.schema.AutoSchema",
    "EXCEPTION_HANDLER": "api.core.exceptions.exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
    # Per-user API rate, gdpconfig ApiUserRatePerMinute, counted in the database so that it
    # holds across processes and hosts; pilots' routes are not counted (api/core/throttling.py).
    "DEFAULT_THROTTLE_CLASSES": ["api.core.throttling.ApiUserRateThrottle"],
}
SPECTACULAR_SETTINGS = {
    # The API's description is public (its viewers too): a client generated from it fetches it
    # before it has a token. It names operations and fields, never any data.
    "SERVE_PERMISSIONS": ["rest_framework.permissions.AllowAny"],
    "SERVE_AUTHENTICATION": [],
    "TITLE": "gridwms API",
    "DESCRIPTION": (
        "Grid workload management: jobs, TaskQueues, sites, shares and live parameters. "
        "Authenticate with `Authorization: Token <key>` (the key from POST "
        "/api/v1/auth/token/), `Authorization: Bearer <key or signed token>`, or a signed-in "
        "session. An error answers a JSON body: `Error` (`detail`), or for a 400 "
        "`ValidationError` (each bad field with its messages). Lists are paged by cursor: "
        "follow `next`; `count=true` adds the total."
    ),
    "VERSION": "1.0.0",
    # Operations tagged and named by their area (`jobs`, `jobs_list`), not by the URL prefix:
    # a generated client's modules.
    "SCHEMA_PATH_PREFIX": r"/api/v1",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {
        "JobStatusEnum": "matcher.models.JobStatus.choices",
        "CycleRunStatusEnum": "core.models.CYCLE_STATUS_CHOICES",
        "ComputingElementStatusEnum": "matcher.models.CE_STATUS_CHOICES",
        "PilotStatusEnum": "pilots.models.PilotStatus.choices",
        "JobReportStatusEnum": "api.pilots.views.JOB_REPORT_CHOICES",
        "JobAdStatusEnum": "classads.models.JOB_AD_STATUS_CHOICES",
        "TaskKindEnum": "brokerage.models.TASK_KIND_CHOICES",
        "BrokerageRunKindEnum": "brokerage.models.BROKERAGE_RUN_KIND_CHOICES",
        "NotificationChannelEnum": "notifications.models.Channel.choices",
    },
}

# --- Background cycles: django-q2 with the ORM broker (no extra service) -------------------------
Q_CLUSTER = {
    "name": "gridwms",
    "orm": "default",
    "workers": env_int("Q_WORKERS", 2),
    "timeout": 300,
    "retry": 360,
    "max_attempts": 1,
    "ack_failures": True,
    "catch_up": False,
    "save_limit": 1000,
    "poll": 1.0,
    "sync": env_bool("Q_SYNC", False),
}

# /metrics (web/core/metrics.py): staff tokens, and these addresses or networks (comma-separated,
# e.g. the Prometheus server's). Behind a proxy every request comes from the proxy's address:
# list only addresses the proxy does not forward from.
METRICS_ALLOWED_ADDRESSES = [
    a.strip() for a in os.environ.get("METRICS_ALLOWED_ADDRESSES", "").split(",") if a.strip()
]

# --- Notices when work ends (notifications/) ----------------------------------------------------
# Django's mail backend: the console by default (a mail is printed), SMTP in production
# (EMAIL_BACKEND=django.core.mail.backends.smtp.EmailBackend with EMAIL_HOST, EMAIL_PORT, ...);
# the tests use locmem (Django's test set-up replaces the backend).
EMAIL_BACKEND = os.environ.get("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
EMAIL_HOST = os.environ.get("EMAIL_HOST", "localhost")
EMAIL_PORT = env_int("EMAIL_PORT", 25)
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 10)
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "gridwms@localhost")


def served_url() -> str:
    """Where this host serves (WEB_BIND, or HOST and PORT as `make run` and `make serve` pass
    them): a wildcard address reads as the host's own name."""
    bind = os.environ.get("WEB_BIND", "").strip()
    if ":" in bind and not bind.startswith(("unix:", "fd:")):
        host, _, port = bind.rpartition(":")
    else:
        host, port = os.environ.get("HOST", "127.0.0.1"), os.environ.get("PORT", "8000")
    host = host.strip().strip("[]")
    if host in ("", "0.0.0.0", "::"):
        host = socket.getfqdn()
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


# The absolute address of this site, for the links in notices: SITE_URL (behind a proxy, its
# public https address), else where this host serves.
SITE_URL = (os.environ.get("SITE_URL", "").strip() or served_url()).rstrip("/")

# Plain text, or one JSON object per line with LOG_FORMAT=json (core/logs.py).
LOGGING = logging_config(os.environ.get("LOG_LEVEL", "INFO"))

"""benchlab settings: one module, every deployment-specific value read from the environment.

There is no separate production module: what runs in tests is what runs in a lab.
"""

from datetime import timedelta
from pathlib import Path
from urllib.parse import quote, urlsplit

import dj_database_url
from cryptography.fernet import Fernet
from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured

from benchlab import api_schema
from benchlab.env import (
    env_bool,
    env_count,
    env_list,
    env_networks,
    env_optional_secret,
    env_seconds,
    env_secret,
    env_str,
    env_url,
)
from benchlab.redis_keys import redis_prefix
from runs.lab.pgbuild.options import DEFAULT_TARBALL_DIR, tarball_dir_problem

BASE_DIR = Path(__file__).resolve().parent.parent
# Untracked local state: generated secrets, the database password file, collected static files.
VAR_DIR = Path(env_str("BENCHLAB_VAR_DIR", str(BASE_DIR / "var")))
# The directory runs on "this machine" use as their disk (register_local_host): outside the
# checkout and var/, which hold benchlab's own data and may not be a device.
LOCAL_DEVICE_DIR = Path(env_str("BENCHLAB_LOCAL_DEVICE_DIR", "/srv/benchlab/this-machine"))
# Where PostgreSQL builds from a release tarball take it from, on each lab host: a build names
# a file in this directory, never a path (runs/lab/pgbuild/source.py checks it there as root).
PG_TARBALL_DIR = env_str("BENCHLAB_PG_TARBALL_DIR", DEFAULT_TARBALL_DIR)
if tarball_dir_wrong := tarball_dir_problem(PG_TARBALL_DIR):
    raise ImproperlyConfigured(f"BENCHLAB_PG_TARBALL_DIR={PG_TARBALL_DIR!r}: {tarball_dir_wrong}")

SECRET_KEY = env_secret("SECRET_KEY", VAR_DIR / "secret_key")
DEBUG = env_bool("DEBUG", False)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])


def _database_config(url: str) -> dict[str, object]:
    if not url.startswith(("postgres://", "postgresql://")):
        raise ImproperlyConfigured(f"DATABASE_URL={url!r} must be a postgres:// or postgresql:// URL")
    try:
        config: dict[str, object] = dict(dj_database_url.parse(url, conn_max_age=60, conn_health_checks=True))
    except ValueError as exc:
        raise ImproperlyConfigured(f"DATABASE_URL={url!r} cannot be parsed: {exc}") from exc
    if not config.get("NAME"):
        raise ImproperlyConfigured(f"DATABASE_URL={url!r} names no database")
    # `make run` keeps the generated password of the local role in a libpq password file,
    # so the default URL needs no password in it.
    passfile = VAR_DIR / "pgpass"
    if not config.get("PASSWORD") and passfile.exists():
        config["OPTIONS"] = {"passfile": str(passfile)}
    return config


DATABASES = {
    "default": _database_config(
        env_str("DATABASE_URL", "postgres://benchlab@127.0.0.1:5432/benchlab"),
    )
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"


def _default_redis_url() -> str:
    # A Redis that `make run` started itself asks for the password it generated
    # (scripts/start-services); one that was already running is used as it is.
    password_file = VAR_DIR / "redis_password"
    password = password_file.read_text().strip() if password_file.exists() else ""
    return f"redis://:{quote(password, safe='')}@127.0.0.1:6379/0" if password else "redis://127.0.0.1:6379/0"


REDIS_URL = env_url("REDIS_URL", _default_redis_url(), schemes=("redis", "rediss", "unix"))

# Private SSH keys stored in the inventory are encrypted with this Fernet key. Without it,
# hosts can still use a key file on the worker machine, but the admin refuses to store keys.
CREDENTIALS_KEY = env_optional_secret("CREDENTIALS_KEY", VAR_DIR / "credentials_key")
if CREDENTIALS_KEY is not None:
    try:
        Fernet(CREDENTIALS_KEY)
    except ValueError as exc:
        raise ImproperlyConfigured(f"CREDENTIALS_KEY is not a valid Fernet key: {exc}") from exc

INSTALLED_APPS = [
    "benchlab.admin_site.BenchlabAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "knox",
    "drf_spectacular",
    "axes",
    "csp",
    "django_celery_beat",
    "runs",
]

AUTHENTICATION_BACKENDS = [
    # First: refuses a locked-out user and address before any password is checked.
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "benchlab.middleware.RefuseNulCharactersMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "csp.middleware.CSPMiddleware",
    "axes.middleware.AxesMiddleware",
]

# Every page's scripts, styles and images come from benchlab itself; nothing inline, no frames.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:"],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [NONE],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    }
}

# Login attempts: after AXES_FAILURE_LIMIT failures for one user name from one address, that
# pair is locked out for AXES_COOLOFF_TIME (other users and addresses are not). Behind a reverse
# proxy, see TRUSTED_PROXIES below for the client address.
AXES_FAILURE_LIMIT = 5
AXES_COOLOFF_TIME = timedelta(minutes=15)
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_VERBOSE = False
# The client's address (benchlab/client_ip.py) is the connection's, unless the connection comes
# from a reverse proxy named here (addresses or networks; none by default): then it is the one that
# proxy gives in CLIENT_IP_HEADER. Used by the lockout above, the audit log and the API throttles.
TRUSTED_PROXIES = env_networks("BENCHLAB_TRUSTED_PROXIES")
CLIENT_IP_HEADER = env_str("BENCHLAB_CLIENT_IP_HEADER", "") or "X-Forwarded-For"
if env_str("BENCHLAB_CLIENT_IP_HEADER", "") and not TRUSTED_PROXIES:
    # Without a trusted proxy the header is never read: say so rather than ignore it.
    raise ImproperlyConfigured(
        "BENCHLAB_CLIENT_IP_HEADER is set but BENCHLAB_TRUSTED_PROXIES is empty: name the proxy's "
        "address (e.g. BENCHLAB_TRUSTED_PROXIES=127.0.0.1), whose header alone is believed"
    )
AXES_CLIENT_IP_CALLABLE = "benchlab.client_ip.client_ip"

# Served over HTTPS (by a reverse proxy that sets X-Forwarded-Proto): cookies only travel
# encrypted and browsers are told to keep to HTTPS. Off for plain-HTTP labs on a private network.
HTTPS = env_bool("BENCHLAB_HTTPS", False)
SESSION_COOKIE_SECURE = HTTPS
CSRF_COOKIE_SECURE = HTTPS
CSRF_COOKIE_HTTPONLY = True
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if HTTPS else None
SECURE_HSTS_SECONDS = 365 * 24 * 3600 if HTTPS else 0

ROOT_URLCONF = "benchlab.urls"
ASGI_APPLICATION = "benchlab.asgi.application"
WSGI_APPLICATION = "benchlab.wsgi.application"

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
            ],
        },
    },
]

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True
# Dates as 2025-03-10, times on a 24-hour clock with the time zone, in pages and the admin alike
# (benchlab/formats/en/formats.py; Django's locale formats would win over DATETIME_FORMAT here).
FORMAT_MODULE_PATH = ["benchlab.formats"]

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "static"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # Tokens are stored as hashes (knox): a copy of the database holds no usable token.
        "knox.auth.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["runs.api.permissions.RolePermission"],
    # JSON only: DRF's browsable pages carry inline styles the Content-Security-Policy refuses.
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    # JSON bodies are read by one parser that refuses what no field can take (runs/api/parsers.py).
    "DEFAULT_PARSER_CLASSES": [
        "runs.api.parsers.CheckedJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    # Per user (anonymous requests are refused before throttling); queueing has its own, lower rate.
    "DEFAULT_THROTTLE_CLASSES": [
        "runs.api.throttles.UserRateThrottle",
        "runs.api.throttles.ScopedRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "user": env_str("BENCHLAB_API_RATE_USER", "1200/min"),
        "queue": env_str("BENCHLAB_API_RATE_QUEUE", "600/hour"),
    },
    "DEFAULT_PAGINATION_CLASS": "runs.api.pagination.CheckedLimitOffsetPagination",
    # Lists filter with the pages' filter sets and refuse what they do not read (runs/api/filtering.py).
    "DEFAULT_FILTER_BACKENDS": ["runs.api.filtering.StrictFilterBackend"],
    "PAGE_SIZE": 100,
    # The OpenAPI schema is generated from the viewsets (SPECTACULAR_SETTINGS below).
    "DEFAULT_SCHEMA_CLASS": "runs.api.autoschema.ActionDocSchema",
}
SPECTACULAR_SETTINGS = api_schema.SPECTACULAR_SETTINGS

REST_KNOX = {
    "TOKEN_TTL": None,  # an admin sets each token's expiry when creating it (Admin → Auth tokens)
    "AUTH_HEADER_PREFIX": "Token",
}

# Throttle counters must be shared by every web process: Redis, under this database's prefix.
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": f"{redis_prefix(DATABASES['default']['NAME'])}:cache",
    }
}

CELERY_BROKER_URL = REDIS_URL
# Several benchlabs (a test suite beside a running one) can share a Redis with their own queue.
CELERY_TASK_DEFAULT_QUEUE = env_str("BENCHLAB_QUEUE", "celery")
CELERY_RESULT_BACKEND = REDIS_URL
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_RESULT_EXPIRES = 3600
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Benchmark tasks are long; a worker should not hoard queued ones it cannot start yet.
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ACKS_LATE = True
# With late acks, Redis hands an unacknowledged task to another worker after this long (a
# long benchmark outlasts it). Hosts are claimed in the database and a running run's worker
# stamps a heartbeat, so a second delivery neither starts a run twice nor fails a live one
# (runs/jobs/heartbeat.py).
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 6 * 3600}
# Runs start when the dispatcher finds it is their turn (runs/jobs/dispatch.py): when a run is
# queued or ends, and also periodically, in case a process died between ending a run and
# dispatching the next.
CELERY_BEAT_SCHEDULE = {
    "dispatch-queue": {"task": "runs.dispatch_queue", "schedule": 30.0},
    "sweep-stale-runs": {"task": "runs.sweep_stale_runs", "schedule": 30.0},
    # Notifications whose delivery is due again (runs/notify/services/deliver.py).
    "deliver-notifications": {"task": "runs.deliver_due_notifications", "schedule": 60.0},
}
# Beat keeps its schedule in the database (django_celery_beat): the entries above are written there
# as it starts, beside each campaign schedule's crontab (runs.schedules), which it reads as they change.
CELERY_BEAT_SCHEDULER = "django_celery_beat.schedulers:DatabaseScheduler"
CELERY_TIMEZONE = TIME_ZONE
# Notifications by email (runs/notify): Django's SMTP backend, configured by the environment.
EMAIL_HOST = env_str("EMAIL_HOST", "localhost")
EMAIL_PORT = env_count("EMAIL_PORT", 25, low=1, high=65535)
EMAIL_HOST_USER = env_str("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", False)
EMAIL_USE_SSL = env_bool("EMAIL_USE_SSL", False)
if EMAIL_USE_TLS and EMAIL_USE_SSL:
    raise ImproperlyConfigured(
        "EMAIL_USE_TLS and EMAIL_USE_SSL cannot both be true: STARTTLS or TLS from the start, not both"
    )
EMAIL_TIMEOUT = env_seconds("EMAIL_TIMEOUT", 10.0, low=1.0, high=300.0)
DEFAULT_FROM_EMAIL = env_str(
    "DEFAULT_FROM_EMAIL", "benchlab@localhost"
)  # a schedule's "02:00" is in the site's time zone
# Where people reach benchlab ("https://benchlab.lab.example.org"): notifications carry absolute links
# (series_url, comparison_url) beside the paths. Empty: a worker knows no address of the site, so they
# carry paths alone, and emails say so rather than pass a path off as a link.
SITE_URL = env_str("BENCHLAB_SITE_URL", "").rstrip("/")
if SITE_URL:
    _site = urlsplit(env_url("BENCHLAB_SITE_URL", "", schemes=("http", "https")))
    if _site.query or _site.fragment or not _site.hostname:
        raise ImproperlyConfigured(
            f"BENCHLAB_SITE_URL={SITE_URL!r}: give the site's address alone, e.g. https://benchlab.example.org"
        )
# A running run's worker stamps its heartbeat this often; a run silent for STALE_AFTER has lost its
# worker and is ended by the sweeper (runs/jobs/sweeper.py).
BENCHLAB_HEARTBEAT_EVERY_S = env_seconds("BENCHLAB_HEARTBEAT_EVERY_S", 15.0, low=0.5, high=600.0)
BENCHLAB_STALE_AFTER_S = env_seconds("BENCHLAB_STALE_AFTER_S", 90.0, low=2.0, high=3600.0)
if BENCHLAB_STALE_AFTER_S < 3 * BENCHLAB_HEARTBEAT_EVERY_S:
    raise ImproperlyConfigured(
        f"BENCHLAB_STALE_AFTER_S={BENCHLAB_STALE_AFTER_S:g} must be at least three heartbeats "
        f"(3 x BENCHLAB_HEARTBEAT_EVERY_S = {3 * BENCHLAB_HEARTBEAT_EVERY_S:g}): a slow write is not a dead worker"
    )
# A lab host that stops answering mid-run is waited for (every command is sent again on a new
# connection) this long; then the run fails, and the host is cleaned up when it answers again.
BENCHLAB_HOST_UNREACHABLE_S = env_seconds("BENCHLAB_HOST_UNREACHABLE_S", 300.0, low=1.0, high=86400.0)
# A lab host that does not answer when a job is to start on it keeps its queued jobs waiting (tried
# again with backoff, runs/jobs/host_reach.py); once it has not answered for this long, each job
# that meets it fails, naming it, since when, and the last error.
BENCHLAB_UNREACHABLE_FAIL_AFTER_S = env_seconds("BENCHLAB_UNREACHABLE_FAIL_AFTER_S", 3600.0, low=1.0, high=7 * 86400.0)
# Live event streams (runs/views/live.py) each hold a Redis connection, and Redis is also the
# Celery broker: one person may hold this many at once, counted across every web process
# (runs/jobs/stream_slots.py). One browser opens at most 6 over HTTP/1.1; 8 leaves room for a second.
BENCHLAB_MAX_STREAMS_PER_USER = env_count("BENCHLAB_MAX_STREAMS_PER_USER", 8, low=1, high=1000)
# A stream ends cleanly after this long and the browser reconnects where it left off
# (Last-Event-ID): a page left open, or a client that never reads, does not hold its slot forever.
BENCHLAB_STREAM_MAX_AGE_S = env_seconds("BENCHLAB_STREAM_MAX_AGE_S", 300.0, low=1.0, high=86400.0)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"no_traceback_below_500": {"()": "benchlab.log_filters.NoTracebackBelow500"}},
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {
        # paramiko logs every connection at INFO; failures reach us as exceptions anyway.
        "paramiko": {"level": "WARNING"},
        "django.request": {"filters": ["no_traceback_below_500"]},
        # django-axes logs every login and logout at INFO; lockouts come at WARNING.
        "axes": {"level": "WARNING"},
    },
}

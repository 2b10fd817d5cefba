"""benchlab settings: one module, every deployment-specific value read from the environment.

There is no separate production module: what runs in tests is what runs in a lab.
"""

from pathlib import Path

import dj_database_url
from cryptography.fernet import Fernet
from django.core.exceptions import ImproperlyConfigured

from benchlab.env import env_bool, env_list, env_optional_secret, env_secret, env_str, env_url

BASE_DIR = Path(__file__).resolve().parent.parent
# Untracked local state: generated secrets, the database password file, collected static files.
VAR_DIR = Path(env_str("BENCHLAB_VAR_DIR", str(BASE_DIR / "var")))

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

REDIS_URL = env_url("REDIS_URL", "redis://127.0.0.1:6379/0", schemes=("redis", "rediss", "unix"))

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
    "rest_framework.authtoken",
    "runs",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.auth.middleware.LoginRequiredMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

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

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = VAR_DIR / "static"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["runs.api.permissions.RolePermission"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.LimitOffsetPagination",
    "PAGE_SIZE": 100,
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
# (runs/services/heartbeat.py).
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 6 * 3600}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    # paramiko logs every connection at INFO; failures reach us as exceptions anyway.
    "loggers": {"paramiko": {"level": "WARNING"}},
}

"""Django settings for Cairn.

Everything that differs between machines comes from the environment through
``cairn.env`` (typed, fails loudly); every variable is listed in
``.env.example``.  ``python -m cairn.stack`` sets these for the embedded
stack; production sets them in the container environment.
"""

from __future__ import annotations

from pathlib import Path

from cairn.dburl import parse_database_url
from cairn.env import env_bool, env_int, env_list, env_str

BASE_DIR = Path(__file__).resolve().parent.parent

DEBUG = env_bool("CAIRN_DEBUG", False)
SECRET_KEY = env_str("CAIRN_SECRET_KEY")
ALLOWED_HOSTS = env_list("CAIRN_ALLOWED_HOSTS", ["localhost", "127.0.0.1", "testserver"])
CSRF_TRUSTED_ORIGINS = env_list("CAIRN_CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "tenants",
    "retrieval",
    "answers",
    "connectors",
    "cairn",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "cairn.middleware.SecurityHeadersMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "cairn.urls"
WSGI_APPLICATION = "cairn.wsgi.application"
ASGI_APPLICATION = "cairn.asgi.application"

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

# The app connects as a role that neither owns the tables nor bypasses RLS;
# migrations run with DATABASE_OWNER_URL (see cairn/stack.py and the README).
DATABASES = {"default": parse_database_url(env_str("DATABASE_URL"))}
DATABASES["default"]["CONN_MAX_AGE"] = env_int("CAIRN_DB_CONN_MAX_AGE", 60, minimum=0)
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
DATABASE_OWNER_URL = env_str("DATABASE_OWNER_URL", "")
DATABASE_APP_ROLE = env_str("CAIRN_DB_APP_ROLE", DATABASES["default"]["USER"])

REDIS_URL = env_str("REDIS_URL")
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": "cairn",
        "TIMEOUT": 300,
    }
}
SESSION_ENGINE = "django.contrib.sessions.backends.db"

AUTH_USER_MODEL = "tenants.User"
LOGIN_URL = "/login/"
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
STATICFILES_DIRS = [BASE_DIR / "static"]

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "tenants.auth.TenantTokenAuthentication",
        "tenants.auth.TenantSessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "cairn.api.exception_handler",
    "UNAUTHENTICATED_USER": None,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Cairn API",
    "DESCRIPTION": "Permission-aware enterprise search and cited answers.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
}

# Celery: the broker is the same Redis; tasks are acknowledged after they ran
# (acks_late) so a worker killed mid-task leaves the message for another one.
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", "")
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ALWAYS_EAGER = False
CELERY_TASK_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 3600}
CELERY_TASK_DEFAULT_QUEUE = "ingest"
CELERY_BEAT_SCHEDULE = {
    "sweep-pending-ingest-events": {"task": "retrieval.tasks.sweep_pending_events", "schedule": 60.0},
}

# Pluggable parts, named by dotted path (like CACHES / EMAIL_BACKEND).
CAIRN = {
    "INDEX_BACKEND": env_str("CAIRN_INDEX_BACKEND", "retrieval.backends.postgres.PostgresIndexBackend"),
    "EMBEDDER": env_str("CAIRN_EMBEDDER", "retrieval.embedder.MiniLMOnnxEmbedder"),
    "WRITER": env_str("CAIRN_WRITER", "answers.writers.extractive.ExtractiveWriter"),
    "EMBEDDER_THREADS": env_int("CAIRN_EMBEDDER_THREADS", 1, minimum=1),
    "VECTOR_EXACT_SCAN_MAX_ROWS": env_int("CAIRN_VECTOR_EXACT_SCAN_MAX_ROWS", 20000, minimum=0),
    "HNSW_EF_SEARCH": env_int("CAIRN_HNSW_EF_SEARCH", 100, minimum=10),
    "RETRIEVAL_PARALLEL_LEGS": env_bool("CAIRN_RETRIEVAL_PARALLEL_LEGS", True),
    "ANSWER_CACHE_SECONDS": env_int("CAIRN_ANSWER_CACHE_SECONDS", 600, minimum=0),
    "LATEST_CACHE_SECONDS": env_int("CAIRN_LATEST_CACHE_SECONDS", 60, minimum=0),
    "DEMO_DATA_DIR": env_str("CAIRN_DEMO_DATA_DIR", str(BASE_DIR.parent / "shared" / "data")),
}
CREDENTIALS_KEY = env_str("CAIRN_CREDENTIALS_KEY", "")

SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
SESSION_COOKIE_HTTPONLY = True
SESSION_COOKIE_SECURE = env_bool("CAIRN_SECURE_COOKIES", not DEBUG)
CSRF_COOKIE_SECURE = env_bool("CAIRN_SECURE_COOKIES", not DEBUG)
SECURE_SSL_REDIRECT = env_bool("CAIRN_SSL_REDIRECT", False)
SECURE_HSTS_SECONDS = env_int("CAIRN_HSTS_SECONDS", 0, minimum=0)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("CAIRN_LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}

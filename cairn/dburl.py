"""Parse DATABASE_URL into Django's DATABASES entry (postgres only)."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

from django.core.exceptions import ImproperlyConfigured


def parse_database_url(url: str) -> dict[str, Any]:
    parsed = urlparse(url)
    if parsed.scheme not in ("postgres", "postgresql"):
        raise ImproperlyConfigured("DATABASE_URL must be a postgresql:// URL")
    query = {k: v[-1] for k, v in parse_qs(parsed.query).items()}
    host = unquote(parsed.hostname or "") if parsed.hostname else query.pop("host", "")
    name = unquote(parsed.path.lstrip("/"))
    if not name:
        raise ImproperlyConfigured("DATABASE_URL must name a database")
    options: dict[str, Any] = {}
    if "sslmode" in query:
        options["sslmode"] = query.pop("sslmode")
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": name,
        "USER": unquote(parsed.username or ""),
        "PASSWORD": unquote(parsed.password or ""),
        "HOST": host,
        "PORT": str(parsed.port or ""),
        "OPTIONS": options,
    }

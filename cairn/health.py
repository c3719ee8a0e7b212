"""Liveness and readiness endpoints (no tenant data, no authentication)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.http import require_GET

from cairn.celery import app
from core.backends import embedder


def _check_db() -> dict[str, Any]:
    try:
        with connection.cursor() as cur:
            cur.execute("SELECT 1")
        return {"ok": True}
    except Exception as exc:
        return {"ok": False, "error": type(exc).__name__}


def _check_broker() -> dict[str, Any]:
    import redis

    try:
        redis.Redis.from_url(settings.REDIS_URL, socket_timeout=1, socket_connect_timeout=1).ping()
        return {"ok": True}
    except Exception as exc:
        return {"ok": False, "error": type(exc).__name__}


def _check_worker() -> dict[str, Any]:

    try:
        replies = app.control.ping(timeout=1.0) or []
        return {"ok": bool(replies), "workers": len(replies)}
    except Exception as exc:
        return {"ok": False, "error": type(exc).__name__}


def _check_model() -> dict[str, Any]:

    try:
        e = embedder()
        e.ensure_loaded()
        return {"ok": True, "name": e.name}
    except Exception as exc:
        return {"ok": False, "error": type(exc).__name__}


@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    checks = {"database": _check_db(), "broker": _check_broker(), "worker": _check_worker(), "model": _check_model()}
    ok = all(c["ok"] for c in checks.values())
    return JsonResponse({"status": "ready" if ok else "not_ready", "checks": checks}, status=200 if ok else 503)

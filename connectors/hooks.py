"""Shared plumbing of the webhook views: JSON errors, body cap, instance lookup by hook uuid."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, JsonResponse

from connectors.models import ConnectorInstance
from connectors.routing import tenant_for_hook

MAX_BODY_BYTES = 1_000_000


def error(code: str, message: str, status: int) -> JsonResponse:
    return JsonResponse({"error": {"code": code, "message": message}}, status=status)


def accepted(status: str = "accepted", **extra: Any) -> JsonResponse:
    return JsonResponse({"status": status, **extra}, status=200)


def body_too_large(request: HttpRequest) -> bool:
    try:
        declared = int(request.headers.get("Content-Length") or 0)
    except ValueError:
        return True
    return declared > MAX_BODY_BYTES


def route(kind: str, hook_uuid: str) -> tuple[int, int] | None:
    return tenant_for_hook(kind, hook_uuid)


def load_instance(instance_pk: int) -> ConnectorInstance:
    """Inside the tenant_context of the tenant ``route`` returned."""
    return ConnectorInstance.objects.select_related("source").get(pk=instance_pk)

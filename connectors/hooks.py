"""Shared plumbing of the webhook views: JSON errors, body cap, JSON parsing, instance lookup by hook uuid."""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse

from connectors.models import ConnectorInstance
from connectors.routing import tenant_for_hook

MAX_BODY_BYTES = 1_000_000
# Slack, Graph and Confluence payloads nest a dozen levels at most; far deeper input is hostile,
# and json.loads would otherwise stop it only with a RecursionError (a 500).
MAX_JSON_DEPTH = 64


class BadJson(ValueError):
    """An untrusted body that is not JSON we can act on and store (the views answer a coded 400)."""


def error(code: str, message: str, status: int) -> JsonResponse:
    return JsonResponse({"error": {"code": code, "message": message}}, status=status)


def post_only(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Like Django's ``require_POST``, but the 405 carries a JSON error code as every other webhook error does."""

    @functools.wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if request.method != "POST":
            response = error("method_not_allowed", "Webhooks accept POST only.", 405)
            response["Allow"] = "POST"
            return response
        return view(request, *args, **kwargs)

    return wrapper


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


def parse_json_body(raw: bytes | str) -> Any:
    """``json.loads`` for untrusted webhook bodies, failing with ``BadJson`` instead of a 500.

    Besides malformed JSON and invalid UTF-8 it refuses what Python parses but Postgres ``jsonb``
    cannot store (``NaN``/``Infinity`` and overflowing numbers, ``\\u0000``, lone surrogates), so a
    stored event is always the whole body, and nesting deeper than ``MAX_JSON_DEPTH``.
    """
    try:
        value = json.loads(raw, parse_constant=_no_constant)
    except RecursionError:
        raise BadJson("The JSON body is nested too deeply.") from None
    except ValueError:  # also UnicodeDecodeError and integers over Python's digit limit
        raise BadJson("The body is not JSON.") from None
    # Iterative on purpose: the structure is untrusted, so no recursion over it.
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise BadJson("The JSON body is nested too deeply.")
        if isinstance(item, dict):
            for key, child in item.items():
                _check_text(key)
                stack.append((child, depth + 1))
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
        elif isinstance(item, str):
            _check_text(item)
        elif isinstance(item, float) and not math.isfinite(item):
            raise BadJson("The JSON body has a number out of range.")
    return value


def _no_constant(name: str) -> Any:
    raise BadJson(f"The JSON body has {name}, which is not JSON.")


def _check_text(text: str) -> None:
    if "\x00" in text:
        raise BadJson("The JSON body has a NUL character.")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from a \\ud800 escape
        raise BadJson("The JSON body has an invalid Unicode escape.") from None

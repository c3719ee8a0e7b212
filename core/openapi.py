"""Shared pieces of the OpenAPI schema (``GET /api/v1/schema``, drf-spectacular).

- The two ways to authenticate, so the schema names them (bearer API token, portal session).
- ``error_responses``: the documented error answers, all in the one shape ``core.errors`` produces
  (``{"error": {"code", "message", "detail"?}}``), so a client can rely on ``error.code``.

The schema is checked against the running API by ``tests/security/test_api_schema_fuzz.py``
(schemathesis): an answer the schema does not document fails there.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers


class ErrorSerializer(serializers.Serializer):
    code = serializers.CharField()
    message = serializers.CharField()


class ErrorEnvelopeSerializer(serializers.Serializer):
    error = ErrorSerializer()


class TenantTokenScheme(OpenApiAuthenticationExtension):
    target_class = "tenants.auth.TenantTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {"type": "http", "scheme": "bearer",
                "description": "An API token; the tenant is the token's tenant."}  # fmt: skip


class TenantSessionScheme(OpenApiAuthenticationExtension):
    target_class = "tenants.auth.TenantSessionAuthentication"
    name = "cookieAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {"type": "apiKey", "in": "cookie", "name": settings.SESSION_COOKIE_NAME,
                "description": "The portal session (unsafe methods also need the CSRF token)."}  # fmt: skip


_DESCRIPTIONS = {
    400: "Invalid input; error.code says which rule, error.detail which fields",
    401: "Not authenticated (no, unknown or revoked token)",
    403: "Authenticated, but not allowed (e.g. tenant admins only)",
    404: "No such object in the caller's tenant, or an unknown format suffix",
    406: "No acceptable representation for the Accept header",
    409: "Conflicts with an existing object",
    413: "Request body too large",
    415: "Unsupported request media type",
    429: "Rate limit of the user or the tenant reached (error.code throttled)",
    503: "A backing service (database, broker, credentials key) is unavailable; retry later",
}

# One server-sent event as schemathesis and OpenAPI 3.0 read a ``text/event-stream`` schema (per event).
# ``data`` is a JSON document; for ``event: error`` it is ``{"code", "message", "detail"?}``.
SSE_EVENT: dict[str, Any] = {
    "type": "object",
    "properties": {
        "event": {"type": "string", "description": "plan, sources, claim, ..., done; or error"},
        "data": {"type": "string", "description": "JSON"},
        "id": {"type": "string"},
        "retry": {"type": "integer"},
    },
    "required": ["data"],
}

# Every tenant API view can answer these: authentication, the admin check, content negotiation,
# the body parser, the rate limits, and an outage of Postgres or Redis.
COMMON = (401, 403, 406, 415, 429, 503)


def error_responses(*statuses: int, media_types: tuple[str, ...] = ()) -> dict[Any, OpenApiResponse]:
    """``{status: error envelope}`` for ``COMMON`` plus ``statuses``, for ``extend_schema(responses=...)``.

    ``media_types``: other media types the errors may be rendered in (the event-stream views render
    an error before the stream starts as one ``error`` event); keys become ``(status, media type)``.
    """
    out: dict[Any, OpenApiResponse] = {}
    for status in sorted(set(COMMON) | set(statuses)):
        response = OpenApiResponse(ErrorEnvelopeSerializer, description=_DESCRIPTIONS.get(status, "Error"))
        if media_types:
            out[(status, "application/json")] = response
            for media_type in media_types:
                out[(status, media_type)] = OpenApiResponse(SSE_EVENT, description=_DESCRIPTIONS.get(status, "Error"))
        else:
            out[status] = response
    return out

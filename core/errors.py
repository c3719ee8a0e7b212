"""API error shape: every 4xx/5xx body is ``{"error": {"code", "message", "detail"?}}``."""

from __future__ import annotations

import sys
from typing import Any

from django.db import connections
from django.http import HttpRequest, HttpResponse, JsonResponse
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler


class ApiError(exceptions.APIException):
    """A 4xx with a machine-readable code chosen by the caller."""

    def __init__(self, code: str, message: str, http_status: int = 400, detail: Any = None) -> None:
        super().__init__(detail=message, code=code)
        self.status_code = http_status
        self.error_code = code
        self.extra = detail


class ServiceUnavailable(ApiError):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(code, message, http_status=status.HTTP_503_SERVICE_UNAVAILABLE)


_DEFAULT_CODES = {
    400: "invalid_request",
    401: "not_authenticated",
    403: "permission_denied",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    415: "unsupported_media_type",
    429: "throttled",
}


def _rollback_open_transactions() -> None:
    # The view ran inside tenant_context's atomic block; an error response must
    # not commit half of what the view wrote.
    for conn in connections.all(initialized_only=True):
        if conn.in_atomic_block:
            conn.set_rollback(True)


def _dependency_outage(exc: Exception) -> ApiError | None:
    """Map an outage of a backing service to a 503 with a code (never a stack trace)."""
    import psycopg
    from django.db import DatabaseError, InterfaceError, OperationalError

    if isinstance(exc, (OperationalError, InterfaceError, psycopg.OperationalError, psycopg.InterfaceError)) or (
        isinstance(exc, DatabaseError) and "connection" in str(exc).lower()
    ):
        return ServiceUnavailable("database_unavailable", "The database is unavailable; try again shortly.")
    try:
        import kombu.exceptions
        import redis
    except ImportError:  # pragma: no cover
        return None
    # kombu wraps a refused broker connection in its own OperationalError (a direct apply_async).
    if isinstance(exc, (redis.RedisError, kombu.exceptions.OperationalError)):
        return ServiceUnavailable("broker_unavailable", "The cache/broker is unavailable; try again shortly.")
    return None


def server_error(request: HttpRequest) -> HttpResponse:
    """``handler500``: Django calls it for any exception a non-DRF view (webhooks, portal pages,
    health) or a middleware raised.  An outage of Postgres or Redis becomes a JSON 503 with a code
    (a webhook source retries it; a client knows to try again); anything else a JSON 500 without
    details.  Never a template: rendering one could touch the database that just failed."""
    exc = sys.exc_info()[1]
    outage = _dependency_outage(exc) if isinstance(exc, Exception) else None
    if outage is not None:
        body = {"error": {"code": outage.error_code, "message": str(outage.detail)}}
        return JsonResponse(body, status=outage.status_code, headers={"Retry-After": "5"})
    return JsonResponse({"error": {"code": "server_error", "message": "Internal server error."}}, status=500)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    outage = _dependency_outage(exc)
    if outage is not None:
        exc = outage
    response = drf_exception_handler(exc, context)
    _rollback_open_transactions()
    if response is None:
        return None
    code = getattr(exc, "error_code", None)
    if code is None and isinstance(exc, exceptions.APIException) and not isinstance(exc, ApiError):
        code = exc.default_code
    code = code or _DEFAULT_CODES.get(response.status_code, "error")
    if isinstance(exc, exceptions.ValidationError):
        code = "invalid_request"
        body = {"error": {"code": code, "message": "The request is invalid.", "detail": response.data}}
    else:
        message = str(getattr(exc, "detail", "")) or "Request failed."
        body = {"error": {"code": code, "message": message}}
        extra = getattr(exc, "extra", None)
        if extra is not None:
            body["error"]["detail"] = extra
    response.data = body
    return response

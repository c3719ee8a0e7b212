"""API error shape: every 4xx/5xx body is ``{"error": {"code", "message", "detail"?}}``."""

from __future__ import annotations

from typing import Any

from django.db import connections
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
    from django.db import DatabaseError, InterfaceError, OperationalError

    if isinstance(exc, (OperationalError, InterfaceError)) or (
        isinstance(exc, DatabaseError) and "connection" in str(exc).lower()
    ):
        return ServiceUnavailable("database_unavailable", "The database is unavailable; try again shortly.")
    try:
        import redis
    except ImportError:  # pragma: no cover
        return None
    if isinstance(exc, redis.RedisError):
        return ServiceUnavailable("broker_unavailable", "The cache/broker is unavailable; try again shortly.")
    return None


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

"""Thin API views: validate, build the permission context, call the engine."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.http import HttpResponseBase
from drf_spectacular.utils import extend_schema
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.response import Response

from answers import engine, service, streaming
from answers.cache import cached_search
from answers.query_parser import QueryError, parse_query
from answers.serializers import (
    AnswerRequestSerializer,
    AnswerResponseSerializer,
    AnswerStreamQuerySerializer,
    SearchQuerySerializer,
    SearchResponseSerializer,
)
from core.errors import ApiError
from core.openapi import SSE_EVENT, error_responses
from retrieval.permissions import permission_context
from tenants.views_base import TenantAPIView

# 400 invalid input, 404 unknown conversation or format suffix, plus the common ones (core/openapi.py).
ERRORS = error_responses(400, 404)
# The stream views render an error before the stream starts as one `error` event when the client
# asked for text/event-stream (answers/streaming.py EventStreamRenderer).
STREAM_ERRORS = error_responses(400, 404, media_types=("text/event-stream",))


def _query_error(exc: QueryError) -> ApiError:
    return ApiError(exc.code, exc.message)


class AnswerView(TenantAPIView):
    @extend_schema(request=AnswerRequestSerializer, responses={200: AnswerResponseSerializer, **ERRORS})
    def post(self, request: Request) -> Response:
        if not isinstance(request.data, dict):
            raise ApiError("invalid_request", "The body must be a JSON object.")
        ser = AnswerRequestSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        data: dict[str, Any] = ser.validated_data
        f = data.get("filters") or {}
        extra = engine.RequestFilters(
            sources=tuple(f.get("sources", ())), containers=tuple(f.get("containers", ())),
            after=f.get("after"), before=f.get("before"), official_only=f.get("official_only", False),
        )  # fmt: skip
        perm = permission_context(request.user)
        try:
            body = service.ask(perm, data["question"], extra, username=request.user.username, via=self.principal.via,
                               conversation_id=data.get("conversation_id"))  # fmt: skip
        except QueryError as exc:
            raise _query_error(exc) from exc
        return Response(body)


class SearchView(TenantAPIView):
    @extend_schema(parameters=[SearchQuerySerializer], responses={200: SearchResponseSerializer, **ERRORS})
    def get(self, request: Request) -> Response:
        params = {k: request.query_params.getlist(k) for k in ("source", "container")}
        params.update({k: v for k, v in request.query_params.items() if k not in ("source", "container")})
        ser = SearchQuerySerializer(data=params)
        ser.is_valid(raise_exception=True)
        d = ser.validated_data
        extra = engine.RequestFilters(
            sources=tuple(d.get("source", ())), containers=tuple(d.get("container", ())),
            after=d.get("after"), before=d.get("before"), official_only=d.get("official_only", False),
        )  # fmt: skip
        perm = permission_context(request.user)
        try:
            body = cached_search(perm, d["q"], extra, limit=d["limit"])
        except QueryError as exc:
            raise _query_error(exc) from exc
        return Response(body)


def _stream_request(data: dict[str, Any]) -> tuple[str, engine.RequestFilters, str | None]:
    """Validated stream request -> (question, filters, conversation id).

    Operator errors surface as a 400 here, before the stream starts (afterwards
    they could only be an ``error`` event).
    """
    question = data.get("question") or data["q"]
    f = data.get("filters") or {
        "sources": data.get("source", ()), "containers": data.get("container", ()), "after": data.get("after"),
        "before": data.get("before"), "official_only": data.get("official_only", False),
    }  # fmt: skip
    extra = engine.RequestFilters(
        sources=tuple(f.get("sources", ())), containers=tuple(f.get("containers", ())),
        after=f.get("after"), before=f.get("before"), official_only=f.get("official_only", False),
    )  # fmt: skip
    try:
        parse_query(question, datetime.now(UTC))
    except QueryError as exc:
        raise _query_error(exc) from exc
    return question, extra, data.get("conversation_id")


class AnswerStreamView(TenantAPIView):
    """``text/event-stream``: plan, sources, one claim per verified claim (as each is verified), retract /
    annotate when a later stage changes a claim already sent, done (answers/streaming.py).

    POST takes the JSON body of ``/api/v1/answers``; GET takes query parameters, for ``EventSource``
    in the portal (session cookie: a GET changes nothing a forged request could abuse, and a
    request the browser declares cross-site is refused outright).
    """

    renderer_classes = [JSONRenderer, streaming.EventStreamRenderer]

    def _start(self, request: Request, question: str, extra: engine.RequestFilters,
               conversation_id: str | None) -> HttpResponseBase:  # fmt: skip
        # Only ids leave the view: the generator re-enters tenant_context for this tenant and user.
        return streaming.streaming_response(
            service.ask_stream(
                tenant_id=self.principal.tenant_id, user_id=request.user.pk, via=self.principal.via,
                question=question, extra=extra, conversation_id=conversation_id,
            )
        )  # fmt: skip

    @extend_schema(request=AnswerRequestSerializer, responses={(200, "text/event-stream"): SSE_EVENT, **STREAM_ERRORS})
    def post(self, request: Request) -> HttpResponseBase:
        if not isinstance(request.data, dict):
            raise ApiError("invalid_request", "The body must be a JSON object.")
        ser = AnswerRequestSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        return self._start(request, *_stream_request(ser.validated_data))

    @extend_schema(
        parameters=[AnswerStreamQuerySerializer], responses={(200, "text/event-stream"): SSE_EVENT, **STREAM_ERRORS}
    )
    def get(self, request: Request) -> HttpResponseBase:
        if request.headers.get("Sec-Fetch-Site", "same-origin") not in ("same-origin", "none"):
            raise ApiError("cross_site_request", "Cross-site stream requests are refused.", 403)
        params: dict[str, Any] = {k: request.query_params.getlist(k) for k in ("source", "container")}
        params.update({k: v for k, v in request.query_params.items() if k not in ("source", "container")})
        ser = AnswerStreamQuerySerializer(data=params)
        ser.is_valid(raise_exception=True)
        return self._start(request, *_stream_request(ser.validated_data))

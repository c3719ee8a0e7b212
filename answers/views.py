"""Thin API views: validate, build the permission context, call the engine."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from answers import engine
from answers.query_parser import QueryError
from answers.serializers import (
    AnswerRequestSerializer,
    AnswerResponseSerializer,
    ErrorEnvelopeSerializer,
    SearchQuerySerializer,
    SearchResponseSerializer,
)
from cairn.api import ApiError
from retrieval.permissions import permission_context
from tenants.views_base import TenantAPIView

ERRORS = {
    400: OpenApiResponse(ErrorEnvelopeSerializer, description="Invalid input (error.code says which)"),
    401: OpenApiResponse(ErrorEnvelopeSerializer, description="Not authenticated"),
    403: OpenApiResponse(ErrorEnvelopeSerializer, description="Not allowed"),
}


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
            body = engine.answer_question(perm, data["question"], extra)
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
            body = engine.run_search(perm, d["q"], extra, limit=d["limit"])
        except QueryError as exc:
            raise _query_error(exc) from exc
        return Response(body)

"""API views for the audit log (admins) and answer feedback (any member).

``GET /api/v1/audit`` pages the log as JSON; ``GET /api/v1/audit/export``
downloads it as CSV (formula-injection guarded) or JSONL; ``POST
/api/v1/feedback`` flags a claim or source; ``GET /api/v1/feedback`` is the
admins' feedback queue.  All run in the caller's tenant (``TenantAPIView``).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.http import HttpResponse, HttpResponseBase
from django.utils import timezone
from django.utils.module_loading import import_string
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from core.errors import ApiError
from core.openapi import error_responses
from tenants.audit import Actor, do_record_audit_event, export_csv, export_jsonl, export_row, filtered_events
from tenants.feedback import do_record_feedback, feedback_json
from tenants.models import Feedback
from tenants.serializers import AuditQuerySerializer, FeedbackRequestSerializer
from tenants.views_base import TenantAPIView

EXPORT_MAX_ROWS = 100_000


def _query(request: Request) -> dict[str, Any]:
    ser = AuditQuerySerializer(data=request.query_params.dict())
    ser.is_valid(raise_exception=True)
    return ser.validated_data


def _events(q: dict[str, Any]) -> Any:
    return filtered_events(action=q["action"], kind=q["kind"], actor_user_id=q.get("actor_user_id"),
                           since=q.get("since"), until=q.get("until"))  # fmt: skip


class AuditListView(TenantAPIView):
    admin_only = True

    @extend_schema(parameters=[AuditQuerySerializer], responses={200: OpenApiTypes.OBJECT, **error_responses(400)})
    def get(self, request: Request) -> Response:
        q = _query(request)
        qs = _events(q).order_by("-seq")
        if q.get("before_seq"):
            qs = qs.filter(seq__lt=q["before_seq"])
        rows = [export_row(r) for r in qs[: q["limit"]]]
        return Response({"events": rows, "next_before_seq": rows[-1]["seq"] if len(rows) == q["limit"] else None})


class AuditExportView(TenantAPIView):
    admin_only = True

    @extend_schema(
        parameters=[AuditQuerySerializer],
        responses={(200, "text/csv"): str, (200, "application/x-ndjson"): str, **error_responses(400)},
    )
    def get(self, request: Request) -> HttpResponseBase:
        q = _query(request)
        rows = list(_events(q)[:EXPORT_MAX_ROWS])
        # The export itself is an admin action worth a record (who took a copy of the log, with which filters).
        filters = {k: str(v) for k, v in q.items() if v not in ("", None)}
        do_record_audit_event(actor=request.user, action="audit.exported", target_type="audit_log", target_id="",
                              details=filters | {"rows": len(rows)})  # fmt: skip
        stamp = timezone.now().strftime("%Y%m%dT%H%M%SZ")
        if q["output"] == "jsonl":
            resp = HttpResponse("".join(export_jsonl(rows)), content_type="application/x-ndjson; charset=utf-8")
            resp["Content-Disposition"] = f'attachment; filename="audit-{stamp}.jsonl"'
        else:
            resp = HttpResponse("".join(export_csv(rows)), content_type="text/csv; charset=utf-8")
            resp["Content-Disposition"] = f'attachment; filename="audit-{stamp}.csv"'
        resp["Cache-Control"] = "no-store"
        return resp


class FeedbackView(TenantAPIView):
    @extend_schema(request=FeedbackRequestSerializer, responses={201: OpenApiTypes.OBJECT, **error_responses(400, 404)})
    def post(self, request: Request) -> Response:
        if not isinstance(request.data, dict):
            raise ApiError("invalid_request", "The body must be a JSON object.")
        ser = FeedbackRequestSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        fb = do_record_feedback(user_id=request.user.pk, actor=Actor.of(request.user, f"api-{self.principal.via}"),
                                **ser.validated_data)  # fmt: skip
        return Response(feedback_json(fb), status=201)

    @extend_schema(responses={200: OpenApiTypes.OBJECT, **error_responses()})
    def get(self, request: Request) -> Response:
        if not self.principal.is_admin:
            raise ApiError("permission_denied", "Tenant admins only.", 403)
        rows = list(Feedback.objects.order_by("-created_at")[:200])
        # The admin's own read permissions apply. The check lives a floor up (retrieval knows the ACLs), so
        # it is plugged in by dotted path like the other backends (settings CAIRN["FEEDBACK_VISIBILITY"]).
        hidden = import_string(settings.CAIRN["FEEDBACK_VISIBILITY"])(request.user, rows)
        return Response({"feedback": [feedback_json(f, hide_text=f.pk in hidden) for f in rows]})

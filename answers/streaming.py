"""Server-sent events for answers: ``plan`` and ``sources`` first, then one ``claim``
event per verified claim, then ``done``.

Django sends a ``StreamingHttpResponse`` body after the view returned, i.e.
after ``TenantAPIView`` left its ``tenant_context``: the generator therefore
enters ``tenant_context`` itself, with the tenant and user the view
authenticated (never anything from the request body).  It never yields while
a transaction is open, so a slow or stalled reader cannot hold a database
transaction (or the audit chain's advisory lock) open: the work runs, the
answer is audited and committed, and only then are bytes written.

Until the engine exposes its stage functions (plan -> retrieve -> evidence ->
draft+verify), the stream wraps ``followups.answer_turn`` (which calls
``engine.answer_question``) and emits the already verified claims one by one;
the event order and payloads are the ones the per-stage version will keep.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterator
from typing import Any

from django.http import StreamingHttpResponse
from rest_framework.renderers import BaseRenderer

from answers import engine, followups
from answers.query_parser import QueryError
from cairn.api import ApiError
from retrieval.permissions import permission_context
from tenants.audit import do_record_answer_audit
from tenants.context import tenant_context
from tenants.models import User

log = logging.getLogger(__name__)


def sse(event: str, data: Any) -> bytes:
    """One SSE message; JSON has no raw newlines, so a single ``data:`` line suffices."""
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'), default=str)}\n\n".encode()


class EventStreamRenderer(BaseRenderer):
    """Lets DRF accept ``Accept: text/event-stream``; errors before the stream starts are one ``error`` event."""

    media_type = "text/event-stream"
    format = "sse"
    charset = "utf-8"

    def render(self, data: Any, accepted_media_type: str | None = None, renderer_context: Any = None) -> bytes:
        if isinstance(data, bytes):
            return data
        return sse("error", (data or {}).get("error", data) if isinstance(data, dict) else data)


def finish_response(response: dict[str, Any], *, trace_id: str, conversation_id: str) -> dict[str, Any]:
    """Stamp the ids every released answer carries (also used by the JSON view)."""
    response["trace"]["id"] = trace_id
    response["conversation_id"] = conversation_id
    return response


def events_for(response: dict[str, Any]) -> Iterator[bytes]:
    """The event sequence for one released, verified answer."""
    trace = response.get("trace", {})
    yield sse("plan", {"question": response.get("question"), "plan": response.get("plan"),
                       "conversation_id": response.get("conversation_id"), "followup": trace.get("followup")})  # fmt: skip
    yield sse("sources", {"evidence": response.get("evidence", []), "results": response.get("results", []),
                          "as_of": response.get("as_of")})  # fmt: skip
    answer = response.get("answer", {})
    for i, claim in enumerate(answer.get("claims", [])):
        yield sse("claim", {"index": i, "claim": claim})
    yield sse(
        "done",
        {
            "claims": len(answer.get("claims", [])),
            "dropped_claims": answer.get("dropped_claims", 0),
            "abstention": answer.get("abstention"),
            "conflict": response.get("conflict"),
            "freshness": response.get("freshness"),
            "notices": response.get("notices", []),
            "as_of": response.get("as_of"),
            "trace_id": trace.get("id"),
            "conversation_id": response.get("conversation_id"),
            "release": response.get("release"),
            "cache": trace.get("cache"),
            "timings_ms": trace.get("timings_ms"),
        },
    )


def answer_event_stream(*, tenant_id: int, user_id: int, via: str, question: str, extra: engine.RequestFilters,
                        conversation_id: str | None) -> Iterator[bytes]:  # fmt: skip
    trace_id = uuid.uuid4().hex
    # Sent before the slow work so clients and proxies see the stream open at once.
    yield b": stream open\n\n"
    try:
        with tenant_context(tenant_id):
            user = User.objects.get(pk=user_id, is_active=True)
            perm = permission_context(user)
            turn = followups.answer_turn(perm, question, extra, conversation_id)
            body = finish_response(turn.response, trace_id=trace_id, conversation_id=turn.conversation_id)
            do_record_answer_audit(perm, question, body, username=user.username, via=via, channel="api-stream")
        # Committed: from here on only the socket is touched.
    except ApiError as exc:
        yield sse("error", {"code": exc.error_code, "message": str(exc.detail)})
        return
    except QueryError as exc:
        yield sse("error", {"code": exc.code, "message": exc.message})
        return
    except Exception:
        log.exception("answer stream failed (trace %s)", trace_id)
        yield sse("error", {"code": "internal_error", "message": "The answer could not be produced.",
                            "trace_id": trace_id})  # fmt: skip
        return
    yield from events_for(body)


def streaming_response(stream: Iterator[bytes]) -> StreamingHttpResponse:
    resp = StreamingHttpResponse(stream, content_type="text/event-stream; charset=utf-8")
    resp["Cache-Control"] = "no-cache, no-store"
    resp["X-Accel-Buffering"] = "no"  # nginx: do not buffer the stream
    return resp

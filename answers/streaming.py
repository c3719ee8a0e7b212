"""Server-sent events for answers: each stage's result as soon as the engine has it.

Events, in order (payloads are JSON on one ``data:`` line):

``plan``      the validated plan, ``question``, ``conversation_id``, ``followup``, ``trace_id``,
              ``cache`` (``miss`` / ``hit`` / ``bypass``) and ``release``; sent before retrieval.
``sources``   the sources panel: ``evidence`` records (title, URL, dates, passage), the ranked
              ``results`` the reader may open, ``as_of``, ``notices``, ``freshness``; sent as soon
              as retrieval and evidence extraction are done, before the writer is called.
``claim``     ``{index, claim}``: one claim, sent right after it passed verification (quote,
              support, scope).  A claim verification drops is never sent.
``retract``   ``{index, claim_id, reason, message}``: a later stage withdrew a claim already sent
              (``reason`` is ``conflict`` or the abstention reason).
``annotate``  ``{index, claim_id, view}``: the conflict stage labelled a claim already sent
              (both views of an equal-rank disagreement, each with its source and date).
``done``      the whole answer: exactly the body ``POST /api/v1/answers`` returns (same keys,
              same ``trace``; ``trace.id`` is this stream's trace id).
``error``     ``{code, message[, trace_id]}``: a machine-readable code, never a stack trace.

Design: one pipeline.  ``engine.answer_stages`` is the only implementation; the JSON API
consumes it to ``done`` and this module sends each of its events.  Conflicts are decided
after the claims, not before: they compare a *kept* claim with the other documents'
sentences, so resolving them before drafting would mean comparing every pair of
sentences in the evidence (work for claims that are never drafted) and a second
conflict policy next to ``answers/conflicts.py``.  Instead claims go out as they are
verified, and the rare conflict that withdraws or labels one is sent as an explicit
``retract`` / ``annotate`` event with its reason; a client that applies the events in order
ends with exactly ``done.answer.claims``.  Claims are held back only until the answer clears
the weak-evidence bar (the running best quote coverage, which can only grow), so the common
abstention (``weak_evidence``) never shows claims first and retracts them.

Transactions: Django sends a ``StreamingHttpResponse`` body after the view returned, i.e.
after ``TenantAPIView`` left its ``tenant_context``.  The generator below therefore enters
``tenant_context`` itself, with the tenant and user the view authenticated (never anything
from the request body), and advances the engine's stage generator *one step per
transaction*: each step's reads (and, at ``done``, the audit append with its advisory
lock) commit before the event is written to the socket.  A slow or stalled reader never
holds a transaction or the audit lock open.

Audit: exactly once per stream.  The complete answer is audited (channel ``api-stream``)
in the same transaction that produces ``done``, before ``done`` is sent.  A stream that ends
early after source content left (the reader hung up, or a later stage failed) is audited
once with what was sent (channel ``api-stream-incomplete``: the plan, the evidence and
results of ``sources``, the claims sent and not retracted).
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from django.db import connection
from django.http import StreamingHttpResponse
from rest_framework.renderers import BaseRenderer

from answers import engine, followups
from answers.query_parser import QueryError
from core.errors import ApiError, _dependency_outage
from retrieval.permissions import PermissionContext, permission_context
from tenants.audit import do_record_answer_audit
from tenants.context import tenant_context
from tenants.models import User

log = logging.getLogger(__name__)

CHANNEL = "api-stream"
CHANNEL_INCOMPLETE = "api-stream-incomplete"


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


@dataclass
class Released:
    """What has left the system on this stream so far (for the audit of an incomplete stream)."""

    plan: dict[str, Any] | None = None
    sources: dict[str, Any] | None = None
    claims: dict[int, dict[str, Any]] = field(default_factory=dict)

    def note(self, event: engine.StageEvent) -> None:
        d = event.data
        if event.kind == "plan":
            self.plan = d
        elif event.kind == "sources":
            self.sources = d
        elif event.kind == "claim":
            self.claims[int(d["index"])] = dict(d["claim"])
        elif event.kind == "retract":
            self.claims.pop(int(d["index"]), None)
        elif event.kind == "annotate" and int(d["index"]) in self.claims:
            self.claims[int(d["index"])]["view"] = d["view"]

    @property
    def source_content_sent(self) -> bool:
        return self.sources is not None or bool(self.claims)

    def body(self, question: str, trace_id: str) -> dict[str, Any]:
        """A response-shaped record of the partial answer (``tenants.audit.answer_audit_details`` reads it)."""
        plan, sources = self.plan or {}, self.sources or {}
        claims = [self.claims[i] for i in sorted(self.claims)]
        cited = {c.get("evidence_id") for claim in claims for c in claim.get("citations", [])}
        return {
            "question": question,
            "plan": plan.get("plan"),
            "as_of": sources.get("as_of"),
            "evidence": [e | {"cited": e.get("id") in cited} for e in sources.get("evidence", [])],
            "results": sources.get("results", []),
            "answer": {"claims": claims, "dropped_claims": 0, "abstention": None},
            "release": plan.get("release"),
            "conversation_id": plan.get("conversation_id"),
            "trace": {
                "id": trace_id,
                "cache": plan.get("cache"),
                "followup": plan.get("followup"),
                "verification": [c.get("verification") for c in claims],
            },  # fmt: skip
        }


def _error(exc: Exception, trace_id: str) -> dict[str, Any]:
    """The ``error`` event for an exception: a code and a message, never a stack trace."""
    if isinstance(exc, QueryError):
        return {"code": exc.code, "message": exc.message}
    outage = _dependency_outage(exc)
    if outage is not None:
        return {"code": outage.error_code, "message": str(outage.detail), "trace_id": trace_id}
    if isinstance(exc, ApiError):
        return {"code": exc.error_code, "message": str(exc.detail)}
    log.exception("answer stream failed (trace %s)", trace_id)
    return {"code": "internal_error", "message": "The answer could not be produced.", "trace_id": trace_id}


def _audit_incomplete(tenant_id: int, perm: PermissionContext, question: str, released: Released, *,
                      trace_id: str, username: str, via: str) -> None:  # fmt: skip
    try:
        # A stage may have failed because the connection broke; reconnect rather than lose the record.
        if not connection.in_atomic_block:
            connection.close_if_unusable_or_obsolete()
        with tenant_context(tenant_id):
            do_record_answer_audit(perm, question, released.body(question, trace_id), username=username, via=via,
                                   channel=CHANNEL_INCOMPLETE)  # fmt: skip
    except Exception:
        log.exception("could not audit the incomplete answer stream (trace %s)", trace_id)


def answer_event_stream(*, tenant_id: int, user_id: int, via: str, question: str, extra: engine.RequestFilters,
                        conversation_id: str | None) -> Iterator[bytes]:  # fmt: skip
    trace_id = uuid.uuid4().hex
    # Sent before the slow work so clients and proxies see the stream open at once.
    yield b": stream open\n\n"
    released = Released()
    audited = False
    perm: PermissionContext | None = None
    username = ""
    stages: Iterator[engine.StageEvent] | None = None
    try:
        while True:
            with tenant_context(tenant_id):
                if stages is None:
                    user = User.objects.get(pk=user_id, is_active=True)
                    perm, username = permission_context(user), user.username
                    stages = followups.turn_stages(perm, question, extra, conversation_id)
                event = next(stages, None)
                if event is None:
                    raise RuntimeError("the answer stages ended without a done event")
                if event.kind == "plan":
                    event = engine.StageEvent("plan", event.data | {"trace_id": trace_id})
                elif event.kind == "done":
                    body = finish_response(event.data, trace_id=trace_id, conversation_id=event.data["conversation_id"])
                    do_record_answer_audit(perm, question, body, username=username, via=via, channel=CHANNEL)
            # Committed (the audit row too): from here until the next step only the socket is touched.
            audited = audited or event.kind == "done"
            released.note(event)
            yield sse(event.kind, event.data)
            if event.kind == "done":
                return
    except Exception as exc:  # GeneratorExit (the reader left) is not an Exception: see finally
        yield sse("error", _error(exc, trace_id))
    finally:
        close = getattr(stages, "close", None)
        if close is not None:
            close()  # unwinds the engine's generators (none of them holds a transaction)
        if not audited and perm is not None and released.source_content_sent:
            _audit_incomplete(tenant_id, perm, question, released, trace_id=trace_id, username=username, via=via)


def streaming_response(stream: Iterator[bytes]) -> StreamingHttpResponse:
    resp = StreamingHttpResponse(stream, content_type="text/event-stream; charset=utf-8")
    resp["Cache-Control"] = "no-cache, no-store"
    resp["X-Accel-Buffering"] = "no"  # nginx: do not buffer the stream
    return resp

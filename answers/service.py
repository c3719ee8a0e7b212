"""The one way a question is answered, whichever surface asked it.

``ask``: the asker's permission context → the answer pipeline (``answers.engine`` / a conversation turn in
``answers.followups``) → the audit row of the released answer. The REST API (``answers.views``) and the
Slack bot (``slackbot``) call it; the portal and ``/api/v1/answers/stream`` use ``ask_stream``, the same
pipeline advanced one stage per transaction (``answers.streaming``), which audits exactly once per stream.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

from answers import engine, followups, streaming
from retrieval.permissions import PermissionContext
from tenants.audit import do_record_answer_audit

RequestFilters = engine.RequestFilters


def ask(perm: PermissionContext, question: str, extra: RequestFilters, *, username: str, via: str,
        channel: str = "api", conversation_id: str | None = None, conversational: bool = True,
        trace_id: str | None = None) -> dict[str, Any]:  # fmt: skip
    """Answer ``question`` for ``perm`` and audit it; runs inside the caller's tenant context.

    ``conversational``: the answer is a turn of a conversation (a follow-up can refer to it); the Slack bot
    answers single questions. Raises ``answers.query_parser.QueryError`` for a question that cannot be
    parsed, before anything is audited (nothing left the system).
    """
    trace_id = trace_id or uuid.uuid4().hex
    if conversational:
        turn = followups.answer_turn(perm, question, extra, conversation_id)
        body = streaming.finish_response(turn.response, trace_id=trace_id, conversation_id=turn.conversation_id)
    else:
        body = engine.answer_question(perm, question, extra)
        body["trace"] = {**body.get("trace", {}), "id": trace_id}
    do_record_answer_audit(perm, question, body, username=username, via=via, channel=channel)
    return body


def ask_stream(*, tenant_id: int, user_id: int, via: str, question: str, extra: RequestFilters,
               conversation_id: str | None) -> Iterator[bytes]:  # fmt: skip
    """The answer as server-sent events; only ids cross in, the stream re-enters the tenant context."""
    return streaming.answer_event_stream(tenant_id=tenant_id, user_id=user_id, via=via, question=question,
                                         extra=extra, conversation_id=conversation_id)  # fmt: skip

"""The bot's Celery task: answer one question for one audience and post it (acks_late, queued on commit)."""

from __future__ import annotations

import hashlib
import logging
from datetime import UTC, datetime
from typing import Any

from celery import shared_task
from django.core.cache import cache
from django.db import transaction

from answers import service
from answers.query_parser import QueryError
from connectors.base import ConnectorError
from connectors.models import ConnectorInstance
from core.http import RateLimited
from retrieval.permissions import PermissionContext, permission_context
from slackbot import api as slack_api
from slackbot.audience import audience_permission, cairn_user_for
from slackbot.blocks import LINK_HELP, answer_blocks, offer_ephemeral_blocks
from tenants.context import tenant_context

log = logging.getLogger(__name__)


@shared_task(name="slackbot.answer", acks_late=True, bind=True, max_retries=5, queue="answers")
def answer_task(self: Any, tenant_id: int, instance_pk: int, job: dict[str, Any]) -> str:

    # acks_late: a redelivered job must not post twice.
    done_key = f"slackbot:done:{tenant_id}:{job['dedupe']}"
    if cache.get(done_key):
        return "duplicate"

    try:
        outcome = run_job(tenant_id, instance_pk, job)
    except RateLimited as exc:
        raise self.retry(countdown=max(1.0, float(exc.retry_after or 1.0))) from None
    except ConnectorError as exc:
        if exc.retry_after is None:  # not a rate limit: a real failure, logged by Celery
            raise
        raise self.retry(countdown=max(1.0, float(exc.retry_after))) from None
    cache.set(done_key, 1, timeout=86400)
    return outcome


def run_job(tenant_id: int, instance_pk: int, job: dict[str, Any]) -> str:
    """Answer one question for one audience and post it; returns what happened (for logs/tests)."""

    channel, slack_user = job["channel"], job["user"]
    thread_ts = job.get("thread_ts")
    with tenant_context(tenant_id):
        instance = ConnectorInstance.objects.get(pk=instance_pk)
        api = slack_api.api_factory(instance)
        user = cairn_user_for(slack_user)
    if user is None:
        api.post_ephemeral(channel, slack_user, LINK_HELP, thread_ts=thread_ts)
        return "unmapped"
    ephemeral = job["audience"] == "ephemeral"
    private = ephemeral or job["audience"] == "dm"
    with tenant_context(tenant_id):
        asker = permission_context(user)
        perm: PermissionContext | None  # None: the channel audience may not read an answer
        if private:
            perm, reason = asker, ""
            audience = "Answered from what you can read" + (" (only you can see this)" if ephemeral else "")
        else:
            perm, reason = audience_permission(api, channel, asker)
            audience = "Answered only from documents everyone in this channel can read"
        if perm is None:
            response = None
        else:
            trace_id = hashlib.sha256(f"{job['dedupe']}:{datetime.now(UTC).isoformat()}".encode()).hexdigest()[:32]
            try:
                response = service.ask(perm, job["question"], service.RequestFilters(), username=user.username,
                                       via="slack", channel=f"slack:{job['audience']}", conversational=False,
                                       trace_id=trace_id)  # fmt: skip
            except QueryError as exc:
                # A question the parser rejects (e.g. operators only) gets an explanation, not silence.
                api.post_ephemeral(channel, slack_user, f"I could not read that question: {exc.message}",
                                   thread_ts=thread_ts)  # fmt: skip
                return f"query_error:{exc.code}"
    if response is None:
        text, blocks = offer_ephemeral_blocks(job["question"], reason)
        api.post_ephemeral(channel, slack_user, text, blocks, thread_ts=thread_ts)
        return f"refused:{reason}"
    text, blocks = answer_blocks(response, trace_id=trace_id, audience=audience)
    if ephemeral:
        api.post_ephemeral(channel, slack_user, text, blocks, thread_ts=thread_ts)
    else:
        api.post_message(channel, text, blocks, thread_ts)
    return "answered"


def enqueue(tenant_id: int, instance_pk: int, job: dict[str, Any]) -> None:
    """Queue the answer after the surrounding transaction commits."""
    transaction.on_commit(lambda: answer_task.apply_async(args=(tenant_id, instance_pk, job), queue="answers"))

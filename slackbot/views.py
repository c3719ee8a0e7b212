"""The Cairn Slack bot: ``/ask``, ``@Cairn`` mentions, direct messages, feedback buttons.

Request path (all three entry points): verify the v0 signature over the raw body (5-minute
window, current + previous signing secret: ``connectors.slack.events.verify_signature``),
resolve the tenant from the unguessable hook uuid in the URL (``connectors.routing``), answer
Slack within 3 s, and do the work in a Celery task (acks_late, queued on commit).

Who may see the answer decides which documents it may use:

* a DM, or an ephemeral reply: the asker's own permissions;
* a message in a channel (others can read it): only documents readable by EVERY human member
  of the channel, i.e. the intersection of their readable ACL set ids.  A member we cannot map
  to a Cairn user (a Slack Connect user from another organisation, an unlinked guest) can read
  nothing, so the intersection is empty and the bot refuses in the channel and offers the
  asker an ephemeral answer instead;
* an unmapped asker gets an ephemeral note on how to link their account, and no answer.

Everything that goes back to Slack is escaped for mrkdwn (retrieved text is untrusted: it
must not ping ``<!channel>`` nor smuggle a disguised ``<https://evil|https://good>`` link).


The bot's Slack entry points: ``/ask`` slash commands, interactivity (buttons), and mention/DM events
handed over by the Slack connector's Events API view (registered in ``slackbot.apps``).
"""

from __future__ import annotations

import hashlib
import logging
import re
import time
from collections.abc import Mapping
from typing import Any, TypeGuard
from urllib.parse import parse_qs

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from connectors.hooks import BadJson, body_too_large, error, load_instance, parse_json_body, post_only, route
from connectors.slack.events import verify_signature
from connectors.slack.factory import signing_secrets
from core.crypto import decrypt_json
from core.errors import ApiError
from slackbot import api as slack_api
from slackbot.audience import cairn_user_for, throttled
from slackbot.blocks import LINK_HELP, MAX_QUESTION_CHARS
from slackbot.tasks import enqueue
from tenants.audit import Actor
from tenants.context import require_tenant_id, tenant_context
from tenants.feedback import do_record_feedback

log = logging.getLogger(__name__)


MAX_BODY_BYTES = 200_000


# Slack user / channel / team ids ("U024BE7LH", "C0GENERAL", "D0DM"); anything else in a request is
# not Slack's, and NUL or control characters would otherwise reach queries, cache keys and jobs.
SLACK_ID = re.compile(r"[A-Za-z0-9_.-]{1,64}")


TRACE_ID = re.compile(r"[0-9a-f]{32}")  # as the answer views and the feedback API issue them


def handle_bot_event(instance: Any, event: Mapping[str, Any]) -> str:
    """``app_mention`` in a channel (answer in its thread, channel audience) or a DM (asker's ACL)."""

    if event.get("bot_id") or event.get("subtype"):
        return "ignored"  # our own posts, edits, joins: never answer a bot (loops)
    user, channel, raw_text = event.get("user"), event.get("channel"), event.get("text")
    if not (_is_slack_id(user) and _is_slack_id(channel)) or not isinstance(raw_text, (str, type(None))):
        return "ignored"  # not the shape Slack sends: never queue work for it
    text = _strip_mentions(raw_text or "")
    tenant_id = require_tenant_id()
    is_dm = event.get("channel_type") == "im" or channel.startswith("D")
    thread_ts = str(event.get("thread_ts") or event.get("ts") or "") or None
    api = None
    if throttled(tenant_id, user, channel):
        api = slack_api.api_factory(instance)
        api.post_ephemeral(channel, user, "You're asking faster than I can answer. Try again in a minute.",
                           thread_ts=thread_ts)  # fmt: skip
        return "throttled"
    if not text:
        return "empty"
    job = {"question": text[:MAX_QUESTION_CHARS], "channel": channel, "user": user, "thread_ts": thread_ts,
           "audience": "dm" if is_dm else "channel",
           "dedupe": f"ev:{channel}:{event.get('ts') or event.get('event_ts')}"}  # fmt: skip
    enqueue(tenant_id, instance.pk, job)
    return "queued"


def _strip_mentions(text: str) -> str:
    import re

    return " ".join(re.sub(r"<@[A-Z0-9]+(\|[^>]*)?>", " ", text).split())


def _verified(request: HttpRequest, hook_uuid: str) -> tuple[int, Any] | HttpResponse:
    """Route by hook uuid and check the signature; returns ``(tenant_id, instance)`` or an error response."""

    if body_too_large(request) or len(request.body) > MAX_BODY_BYTES:
        return error("body_too_large", "The request body is too large.", 413)
    found = route("slack", hook_uuid)
    if found is None:
        return error("unknown_connector", "No such connector.", 404)
    tenant_id, instance_pk = found
    with tenant_context(tenant_id):
        instance = load_instance(instance_pk)
        secrets = signing_secrets(decrypt_json(instance.credentials_encrypted))
    ok = verify_signature(secrets, request.headers.get("X-Slack-Request-Timestamp", ""), request.body,
                          request.headers.get("X-Slack-Signature", ""), now=time.time())  # fmt: skip
    if not ok:
        return error("invalid_signature", "The request signature is missing, wrong or too old.", 401)
    return tenant_id, instance


def _form(request: HttpRequest) -> dict[str, str]:
    parsed = parse_qs(request.body.decode("utf-8", "replace"), keep_blank_values=True)
    return {k: v[0] for k, v in parsed.items()}


def _is_slack_id(value: Any) -> TypeGuard[str]:
    return isinstance(value, str) and SLACK_ID.fullmatch(value) is not None


def _mapping(value: Any) -> Mapping[str, Any]:
    """A sub-object of an untrusted payload, or {} when it has another type."""
    return value if isinstance(value, Mapping) else {}


def _ephemeral(text: str, status: int = 200, code: str = "") -> JsonResponse:
    body: dict[str, Any] = {"response_type": "ephemeral", "text": text}
    if code:  # a refusal also carries the machine-readable error (Slack shows only ``text``)
        body["error"] = {"code": code, "message": text}
    return JsonResponse(body, status=status)


@csrf_exempt
@post_only
def slash_command(request: HttpRequest, hook_uuid: str) -> HttpResponse:
    """``/ask [--me] question``: acknowledged at once; the answer is posted by the task.

    In a channel the answer is a normal message (channel audience); ``--me`` (or a DM)
    answers from the asker's own permissions, ephemerally in a channel.
    """

    checked = _verified(request, hook_uuid)
    if isinstance(checked, HttpResponse):
        return checked
    tenant_id, instance = checked
    form = _form(request)
    team = instance.config.get("team_id")
    if team and form.get("team_id") not in (None, "", team):
        return _ephemeral("This workspace is not connected to Cairn.", 403, "wrong_workspace")
    user, channel = form.get("user_id", ""), form.get("channel_id", "")
    text = " ".join(form.get("text", "").split())
    if not _is_slack_id(user) or not _is_slack_id(channel):
        return _ephemeral("Malformed slash command.", 400, "invalid_command")
    private = False
    for flag in ("--me", "-me", "--private"):
        if text.startswith(flag + " ") or text == flag:
            private, text = True, text[len(flag) :].strip()
    if not text:
        return _ephemeral("Usage: /ask [--me] your question — --me answers only you, from what you can read.")
    with tenant_context(tenant_id):
        if cairn_user_for(user) is None:
            return _ephemeral(LINK_HELP)
        if throttled(tenant_id, user, channel):
            return _ephemeral("You're asking faster than I can answer. Try again in a minute.")
        is_dm = channel.startswith("D")
        audience = "dm" if is_dm else ("ephemeral" if private else "channel")
        job = {"question": text[:MAX_QUESTION_CHARS], "channel": channel, "user": user, "thread_ts": None,
               "audience": audience, "dedupe": f"cmd:{form.get('trigger_id') or hashlib.sha256(request.body).hexdigest()}"}  # fmt: skip
        enqueue(tenant_id, instance.pk, job)
    note = (
        "only you will see the answer"
        if audience != "channel"
        else "the answer will use only documents everyone here can read"
    )
    return JsonResponse({"response_type": "ephemeral", "text": f"Looking that up… ({note})"})


@csrf_exempt
@post_only
def interactivity(request: HttpRequest, hook_uuid: str) -> HttpResponse:
    """Block actions: feedback buttons, and "Answer just for me" after a refused channel answer."""

    checked = _verified(request, hook_uuid)
    if isinstance(checked, HttpResponse):
        return checked
    tenant_id, instance = checked

    try:
        payload = parse_json_body(_form(request).get("payload", ""))
    except BadJson as exc:
        return JsonResponse({"error": {"code": "invalid_payload", "message": f"payload: {exc}"}}, status=400)
    if not isinstance(payload, dict) or payload.get("type") != "block_actions":
        return HttpResponse(status=200)  # other interaction types: acknowledged, nothing to do
    # Every sub-object is untrusted: a wrong type reads as absent instead of raising (a 500).
    container = _mapping(payload.get("container"))
    slack_user = _mapping(payload.get("user")).get("id") or ""
    channel = _mapping(payload.get("channel")).get("id") or container.get("channel_id") or ""
    if not (slack_user == "" or _is_slack_id(slack_user)) or not (channel == "" or _is_slack_id(channel)):
        return JsonResponse({"error": {"code": "invalid_payload", "message": "malformed user or channel id"}},
                            status=400)  # fmt: skip
    thread_ts = container.get("thread_ts") or _mapping(payload.get("message")).get("thread_ts")
    thread_ts = thread_ts if isinstance(thread_ts, str) and SLACK_ID.fullmatch(thread_ts) else None
    actions = payload.get("actions")
    results: list[str] = []
    with tenant_context(tenant_id):
        user = cairn_user_for(slack_user)
        if user is None:
            return _ephemeral(LINK_HELP)
        for action in actions if isinstance(actions, list) else []:
            if not isinstance(action, Mapping):
                continue
            action_id = str(action.get("action_id") or "")
            raw_value = action.get("value") or "{}"
            try:
                value = parse_json_body(raw_value) if isinstance(raw_value, str) else None
            except BadJson:
                continue
            if not isinstance(value, dict):
                continue
            if action_id.startswith("cairn_feedback_"):
                results.append(_record_feedback(user, value))
            elif action_id == "cairn_answer_ephemeral" and channel and isinstance(value.get("q"), str):
                # The same per-user and per-channel budget as /ask and mentions: a button
                # can be pressed (or a signed payload replayed with new trigger ids) as fast.
                if throttled(tenant_id, slack_user, channel):
                    results.append("throttled")
                    continue
                job = {"question": value["q"][:MAX_QUESTION_CHARS], "channel": channel, "user": slack_user,
                       "thread_ts": thread_ts, "audience": "ephemeral",
                       "dedupe": f"act:{payload.get('trigger_id') or action.get('action_ts')}"}  # fmt: skip
                enqueue(tenant_id, instance.pk, job)
                results.append("queued")
    if "recorded" in results:
        return _ephemeral("Thanks, your feedback was recorded.")
    if "throttled" in results and "queued" not in results:
        return _ephemeral("You're asking faster than I can answer. Try again in a minute.")
    if "queued" in results:
        return _ephemeral("Looking that up for you only…")
    return _ephemeral("That feedback could not be recorded." if results else "Nothing to do.")


def _record_feedback(user: Any, value: Mapping[str, Any]) -> str:

    verdict, trace_id = value.get("verdict"), value.get("trace_id")
    if (
        verdict not in ("wrong", "unsupported", "stale")
        or not isinstance(trace_id, str)
        or not TRACE_ID.fullmatch(trace_id)
    ):
        return "invalid"
    try:
        # A whole-answer flag: bound to the audited answer this same user received.
        # The action writes the audit row (feedback.submitted, via slack) in its own transaction.
        do_record_feedback(user_id=user.pk, actor=Actor.of(user, "slack"), trace_id=trace_id, target="source",
                           verdict=verdict, comment="via Slack (whole answer)")  # fmt: skip
    except ApiError:
        return "invalid"
    return "recorded"

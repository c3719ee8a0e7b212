"""Slack Events API: ``POST /hooks/slack/<hook uuid>/events``.

Signature v0 over the raw body with the 5-minute window (current and previous signing secret
during a rotation), ``url_verification`` answered with the challenge, every other delivery
stored in the instance's event inbox (deduplicated by ``event_id``) and an incremental run
queued to drain it.  ``app_mention`` and DM events are also handed to the Slack bot, if one is
registered (the slackbot app registers ``slackbot.views.handle_bot_event`` through
:func:`register_bot_handler` when Django starts), after they were stored.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any, cast

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from connectors.actions import do_request_sync, do_store_inbound_event
from connectors.hooks import BadJson, accepted, body_too_large, error, load_instance, parse_json_body, post_only, route
from connectors.slack.events import verify_signature
from connectors.slack.factory import signing_secrets
from core.crypto import decrypt_json
from tenants.context import tenant_context

log = logging.getLogger(__name__)


def is_bot_event(event: Any) -> bool:
    if not isinstance(event, dict):
        return False
    if event.get("type") == "app_mention":
        return True
    return event.get("type") == "message" and event.get("channel_type") == "im" and not event.get("bot_id")


BotHandler = Callable[[Any, Mapping[str, Any]], object]
# The bot is a surface above connectors: it registers itself here instead of being imported, so
# connectors never import the bot. A deployment without the slackbot app simply has no handler.
_bot_handlers: list[BotHandler] = []


def register_bot_handler(handler: BotHandler) -> None:
    if handler not in _bot_handlers:
        _bot_handlers.append(handler)


def _call_bot(instance: Any, event: dict[str, Any]) -> None:
    if not _bot_handlers:
        log.warning("a Slack bot event arrived for connector %s but no bot is installed", instance.pk)
    for handler in _bot_handlers:
        try:
            handler(instance, event)
        except Exception:
            log.exception("the Slack bot hook failed for connector %s", instance.pk)


@csrf_exempt
@post_only
def events(request: HttpRequest, hook_uuid: str) -> HttpResponse:
    if body_too_large(request):
        return error("body_too_large", "The event body is too large.", 413)
    found = route("slack", hook_uuid)
    if found is None:
        return error("unknown_connector", "No such connector.", 404)
    tenant_id, instance_pk = found
    body = request.body  # the raw bytes: the signature covers exactly these
    with tenant_context(tenant_id):
        instance = load_instance(instance_pk)
        secrets = signing_secrets(decrypt_json(instance.credentials_encrypted))
        ok = verify_signature(
            secrets,
            request.headers.get("X-Slack-Request-Timestamp", ""),
            body,
            request.headers.get("X-Slack-Signature", ""),
            now=time.time(),
        )
        if not ok:
            return error("invalid_signature", "The request signature is missing, wrong or too old.", 401)
        try:
            payload = parse_json_body(body)
        except BadJson as exc:
            return error("invalid_json", str(exc), 400)
        if not isinstance(payload, dict):
            return error("invalid_event", "Expected a JSON object.", 400)
        if payload.get("type") == "url_verification":
            return JsonResponse({"challenge": str(payload.get("challenge", ""))})
        team = instance.config.get("team_id")
        if team and payload.get("team_id") not in (None, team):
            return error("wrong_workspace", "This event belongs to another workspace.", 403)
        event_id = payload.get("event_id")
        # The inbox keeps 200 characters of an id: a longer one would be cut and could then collide
        # with another event's id (and be dropped as its duplicate).  Slack's ids are short.
        if payload.get("type") != "event_callback" or not isinstance(event_id, str) or not 0 < len(event_id) <= 200:
            return error("invalid_event", "Expected an event_callback with an event_id.", 400)
        stored = do_store_inbound_event(instance, event_id, "slack", payload)
        if stored is None:
            return accepted("duplicate")
        inner = payload.get("event")
        bot_event = is_bot_event(inner)
        if not bot_event:
            do_request_sync(instance, "incremental")
    if bot_event:
        with tenant_context(tenant_id):
            _call_bot(instance, cast(dict[str, Any], inner))  # is_bot_event(inner) checked it is a dict
    return accepted()

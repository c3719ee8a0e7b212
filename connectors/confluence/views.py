"""Confluence webhooks: ``POST /hooks/confluence/<hook uuid>/<event name>``.

Confluence names no event in the body, so the route is the last URL segment.  The request is
authenticated by the per-instance shared secret (``X-Hub-Signature`` HMAC of the body where
Confluence signs, else the secret header or ``?secret=``; see ``webhooks.verify_secret``), stored
(deduplicated by event id) and acknowledged; fetching the page from the REST API and applying
what Confluence answers happen in Celery.
"""

from __future__ import annotations

from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt

from connectors.actions import do_store_inbound_event
from connectors.confluence.webhooks import WebhookRejected, parse_event, verify_secret
from connectors.hooks import BadJson, accepted, body_too_large, error, load_instance, parse_json_body, post_only, route
from connectors.tasks import enqueue_inbound_event
from core.crypto import decrypt_text
from tenants.context import tenant_context


@csrf_exempt
@post_only
def webhook(request: HttpRequest, hook_uuid: str, event_name: str) -> HttpResponse:

    if body_too_large(request):
        return error("body_too_large", "The webhook body is too large.", 413)
    found = route("confluence", hook_uuid)
    if found is None:
        return error("unknown_connector", "No such connector.", 404)
    tenant_id, instance_pk = found
    with tenant_context(tenant_id):
        instance = load_instance(instance_pk)
        secret = decrypt_text(instance.webhook_secret_encrypted)
        if not verify_secret(secret, headers=dict(request.headers), query=request.GET, body=request.body):
            return error("invalid_secret", "The webhook secret is missing or wrong.", 401)
        try:
            # Parsed once, by the helper that refuses what jsonb cannot store: the stored payload
            # is then exactly the body that was checked.
            payload = parse_json_body(request.body)
            event = parse_event(event_name, payload)
        except (BadJson, WebhookRejected) as exc:
            return error("invalid_event", str(exc), 400)
        stored = do_store_inbound_event(instance, event.event_id, event.event, payload)
        if stored is None:
            return accepted("duplicate")
        pk = stored.pk
        transaction.on_commit(lambda: enqueue_inbound_event(tenant_id, pk))
    return accepted()

"""Microsoft Graph change notifications: ``POST /hooks/sharepoint/<hook uuid>/notifications``.

* Subscription validation: ``?validationToken=`` is echoed as text/plain (within 10 s).
* Each notification's ``clientState`` must equal the instance's secret (constant time).
* Notifications carry no item ids: every accepted batch queues one incremental (delta) run,
  coalesced with a run already queued; lifecycle notifications (reauthorizationRequired,
  subscriptionRemoved, missed) are stored and also trigger a delta.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from typing import cast

from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt

from connectors.actions import do_request_sync, do_store_inbound_event
from connectors.hooks import BadJson, accepted, body_too_large, error, load_instance, parse_json_body, post_only, route
from connectors.models import InboundEvent, SyncState
from connectors.sharepoint.notifications import DriveDelta, LifecycleAction, handle_notifications, validation_reply
from connectors.sharepoint.subscriptions import do_request_subscription_work
from core.crypto import decrypt_text
from tenants.context import tenant_context


class _SameSecretForEverySubscription(Mapping[str, str]):
    """Every subscription of an instance is created with the instance's clientState."""

    def __init__(self, secret: str) -> None:
        self.secret = secret

    def __getitem__(self, key: str) -> str:
        return self.secret

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


@csrf_exempt
@post_only
def notifications(request: HttpRequest, hook_uuid: str) -> HttpResponse:
    if body_too_large(request):
        return error("body_too_large", "The notification body is too large.", 413)
    found = route("sharepoint", hook_uuid)
    if found is None:
        return error("unknown_connector", "No such connector.", 404)
    # Graph percent-encodes the token as UTF-8; Django would decode the query string with the
    # charset of the *body*'s Content-Type, so "charset=latin-1" would change the echoed token.
    request.encoding = "utf-8"
    reply = validation_reply(request.GET)
    if reply is not None and reply.status >= 400:
        return error("invalid_validation_token", "The validationToken is empty or too long.", 400)
    if reply is not None:
        response = HttpResponse(reply.body, content_type=reply.content_type, status=reply.status)
        for name, value in reply.headers:
            response[name] = value
        return response
    try:
        payload = parse_json_body(request.body)
    except BadJson as exc:
        return error("invalid_json", str(exc), 400)
    if not isinstance(payload, dict) or not isinstance(payload.get("value"), list):
        return error("invalid_notification", "Expected a changeNotificationCollection.", 400)
    tenant_id, instance_pk = found
    with tenant_context(tenant_id):
        instance = load_instance(instance_pk)
        batch = handle_notifications(
            payload,
            client_states=_SameSecretForEverySubscription(decrypt_text(instance.webhook_secret_encrypted)),
            subscription_drives=dict(instance.config.get("subscriptions") or {}),
            tenant_id=str(instance.config.get("tenant_id", "")),
        )
        if not batch.deltas and not batch.lifecycle:
            return error("invalid_client_state", "No notification could be authenticated.", 401)
        new = 0
        renew: list[str] = []  # lifecycle: reauthorizationRequired -> PATCH (renews and reauthorizes)
        recreate: list[str] = []  # lifecycle: subscriptionRemoved -> POST a new one for that drive
        # Graph drive notifications carry no id: two changes to one drive can arrive as identical
        # bodies.  A repeat is only a duplicate until the next delta run starts, so the run marker
        # is part of the key (otherwise the second change would wait for the scheduled sync).
        last_run = (
            SyncState.objects.filter(instance=instance, mode="incremental").values_list("started_at", flat=True).first()
        )
        # The body is hashed once, not once per notification: a batch of n notifications would
        # otherwise serialise the whole body n times (quadratic in the body size).
        body_digest = hashlib.sha256(json.dumps(payload["value"], sort_keys=True).encode()).hexdigest()
        for item in cast("list[DriveDelta | LifecycleAction]", [*batch.deltas, *batch.lifecycle]):
            kind = "graph" if item in batch.deltas else "graph_lifecycle"
            raw = json.dumps([item.dedupe_key, body_digest, str(last_run)])
            event = do_store_inbound_event(instance, hashlib.sha256(raw.encode()).hexdigest(), kind,
                                           {"dedupe_key": item.dedupe_key, "subscription": item.subscription_id})  # fmt: skip
            if event is not None:
                new += 1
                if isinstance(item, LifecycleAction):
                    renew += [item.subscription_id] if item.renew_subscription else []
                    recreate += [item.subscription_id] if item.recreate_subscription else []
                InboundEvent.objects.filter(pk=event.pk).update(status=InboundEvent.Status.DONE,
                                                                processed_at=timezone.now())  # fmt: skip
        if new:
            do_request_sync(instance, "incremental")  # also the answer to "missed"
        do_request_subscription_work(instance, renew=renew, recreate=recreate)
    return HttpResponse(status=202)


__all__ = ["notifications", "accepted"]

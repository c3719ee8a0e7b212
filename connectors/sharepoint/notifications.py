"""Graph change notifications for drives, as pure functions (no I/O, no Django).

The webhook view calls these and enqueues work; it must answer fast (the
validation handshake within 10 s, notifications within 3 s), so nothing here
talks to Graph.  driveItem notifications carry no item id: each one only means
"something in this drive changed", i.e. run a delta for that drive.
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

MAX_VALIDATION_TOKEN_LENGTH = 4096
_DRIVE_RESOURCE = re.compile(r"^/?drives/([^/]+)/root/?$", re.IGNORECASE)


@dataclass(frozen=True)
class HttpReply:
    status: int
    content_type: str
    body: str
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class DriveDelta:
    """Run ``incremental_sync`` for this drive.  ``dedupe_key`` coalesces repeats."""

    subscription_id: str
    drive_id: str
    dedupe_key: str


@dataclass(frozen=True)
class LifecycleAction:
    subscription_id: str
    event: str  # reauthorizationRequired | subscriptionRemoved | missed
    renew_subscription: bool  # PATCH /subscriptions/{id} (reauthorizes and extends)
    recreate_subscription: bool  # POST /subscriptions again: the old one is gone
    delta_drive_id: str | None  # changes may have been lost: run a delta for this drive
    dedupe_key: str


@dataclass(frozen=True)
class NotificationBatch:
    deltas: tuple[DriveDelta, ...]
    lifecycle: tuple[LifecycleAction, ...]
    rejected: int  # notifications whose clientState did not match (or that we do not know)


def validation_reply(query: Mapping[str, Any] | str) -> HttpReply | None:
    """The subscription handshake: echo ``validationToken`` as text/plain, or None if absent.

    ``query`` is either the raw query string or an already decoded mapping (Django's
    ``request.GET``).  Graph requires the *decoded* token, verbatim, with 200 and
    ``text/plain``; ``nosniff`` keeps a browser from treating the echo as HTML.
    """
    if isinstance(query, str):
        values = parse_qs(query, keep_blank_values=True).get("validationToken") or []
        token: object = values[0] if values else None  # the mapping branch may hold any JSON value
    else:
        raw = query.get("validationToken")
        token = raw[0] if isinstance(raw, (list, tuple)) and raw else raw
    if token is None:
        return None
    token = str(token)
    if not token or len(token) > MAX_VALIDATION_TOKEN_LENGTH:
        return HttpReply(400, "text/plain; charset=utf-8", "invalid validation token")
    return HttpReply(200, "text/plain; charset=utf-8", token, (("X-Content-Type-Options", "nosniff"),))


def client_state_matches(expected: str, received: Any) -> bool:
    """Constant-time comparison; an empty expected secret never matches (fail closed)."""
    if not expected or not isinstance(received, str):
        return False
    return hmac.compare_digest(expected.encode("utf-8"), received.encode("utf-8"))


def drive_id_from_resource(resource: Any) -> str | None:
    if not isinstance(resource, str):
        return None
    m = _DRIVE_RESOURCE.match(resource.strip())
    return m.group(1) if m else None


def delta_dedupe_key(tenant_id: str, drive_id: str) -> str:
    # One pending delta per drive is enough, however many notifications arrive: the delta
    # reads every change up to "now".  The queue should drop a job whose key is already
    # *pending* (not running), so a change made during a running delta is not lost.
    return f"sharepoint:delta:{tenant_id}:{drive_id}"


def lifecycle_dedupe_key(notification: Mapping[str, Any]) -> str:
    # Graph retries a delivery until it gets a 2xx; the same event for the same subscription
    # and expiry is the same event.
    return "sharepoint:lifecycle:{}:{}:{}".format(
        notification.get("subscriptionId", ""),
        notification.get("lifecycleEvent", ""),
        notification.get("subscriptionExpirationDateTime", ""),
    )


def handle_notifications(
    payload: Mapping[str, Any],
    *,
    client_states: Mapping[str, str],
    subscription_drives: Mapping[str, str],
    tenant_id: str,
) -> NotificationBatch:
    """Sort a POSTed ``changeNotificationCollection`` into work.

    ``client_states``: subscription id -> the secret clientState given when creating it.
    ``subscription_drives``: subscription id -> drive id it watches.  A notification for an
    unknown subscription, from another tenant or with a wrong clientState is rejected.
    """
    deltas: dict[str, DriveDelta] = {}
    lifecycle: dict[str, LifecycleAction] = {}
    rejected = 0
    values = payload.get("value") if isinstance(payload, Mapping) else None
    for n in values if isinstance(values, list) else []:
        if not isinstance(n, Mapping):
            rejected += 1
            continue
        sub_id = str(n.get("subscriptionId") or "")
        if not client_state_matches(client_states.get(sub_id, ""), n.get("clientState")):
            rejected += 1
            continue
        if n.get("tenantId") and str(n["tenantId"]).lower() != tenant_id.lower():
            rejected += 1
            continue
        drive_id = subscription_drives.get(sub_id) or drive_id_from_resource(n.get("resource"))
        event = n.get("lifecycleEvent")
        if event:
            action = _lifecycle_action(n, str(event), sub_id, drive_id)
            lifecycle.setdefault(action.dedupe_key, action)
            continue
        if not drive_id:
            rejected += 1
            continue
        key = delta_dedupe_key(tenant_id, drive_id)
        deltas.setdefault(key, DriveDelta(sub_id, drive_id, key))
    return NotificationBatch(tuple(deltas.values()), tuple(lifecycle.values()), rejected)


def _lifecycle_action(n: Mapping[str, Any], event: str, sub_id: str, drive_id: str | None) -> LifecycleAction:
    key = lifecycle_dedupe_key(n)
    if event == "reauthorizationRequired":
        # Delivery pauses until we reauthorize; a renewal (PATCH) also reauthorizes.  A delta
        # afterwards picks up whatever changed while delivery was paused.
        return LifecycleAction(sub_id, event, True, False, drive_id, key)
    if event == "subscriptionRemoved":
        return LifecycleAction(sub_id, event, False, True, drive_id, key)
    if event == "missed":
        return LifecycleAction(sub_id, event, False, False, drive_id, key)
    # An event type Graph adds later: a delta is always a safe answer.
    return LifecycleAction(sub_id, event, False, False, drive_id, key)

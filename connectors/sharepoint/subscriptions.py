"""Microsoft Graph change-notification subscriptions, kept alive by the runtime.

One subscription per drive of every configured site (resource ``drives/{id}/root``, changeType
``updated``: the only combination driveItem supports), delivered to the instance's
``/hooks/sharepoint/<hook uuid>/notifications`` under ``CAIRN["PUBLIC_BASE_URL"]`` (lifecycle
notifications to the same URL), with the instance's webhook secret as ``clientState``.

State lives in ``instance.config`` (non-secret):

* ``subscriptions``: subscription id -> drive id (the notification view reads it);
* ``subscription_expirations``: subscription id -> ISO expiry as Graph confirmed it;
* ``subscription_secret``: a fingerprint of the secret the subscriptions were created with (Graph
  cannot change a subscription's clientState, so a rotated secret means new subscriptions);
* ``subscription_pending``: ``{"renew": [...], "recreate": [...]}`` asked for by lifecycle
  notifications; stored durably by the view so a lost task message is redone by beat.

Graph's maximum lifetime for a driveItem subscription is 42,300 minutes (just under 30 days);
we ask for ``LIFETIME`` (well inside it) and renew when less than ``RENEW_BEFORE`` is left, so an
hourly beat has many chances before anything lapses.  Graph is called outside any transaction;
the results are merged into the row under ``select_for_update``.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import requests
from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from connectors.base import ConnectorError
from connectors.dispatch import enqueue_graph_subscriptions
from connectors.models import ConnectorInstance
from connectors.sharepoint.client import NotFound
from core.crypto import decrypt_text
from core.http import OutboundHTTPError
from tenants.audit import do_record_audit_event
from tenants.context import require_tenant_id

log = logging.getLogger(__name__)

DRIVEITEM_MAX_LIFETIME = timedelta(minutes=42300)
LIFETIME = timedelta(days=20)
RENEW_BEFORE = timedelta(days=10)
PENDING_KEY = "subscription_pending"
MAX_PENDING = 200


@dataclass
class SubscriptionOutcome:
    created: list[str] = field(default_factory=list)  # new subscription ids
    renewed: list[str] = field(default_factory=list)
    dropped: list[str] = field(default_factory=list)  # removed by Graph, or their drive is gone
    errors: list[str] = field(default_factory=list)  # what failed (retried by the next run)
    skipped: str = ""  # why nothing was done ("" when it ran)
    state: dict[str, Any] | None = None  # what save_subscription_state writes


def notification_url(instance: ConnectorInstance) -> str:
    base = str(settings.CAIRN.get("PUBLIC_BASE_URL") or "").rstrip("/")
    return f"{base}/hooks/sharepoint/{instance.hook_uuid}/notifications" if base else ""


def secret_fingerprint(secret: str) -> str:
    # Only a fingerprint goes into config (config is shown to admins; the secret is encrypted).
    return hashlib.sha256(b"graph-client-state:" + secret.encode()).hexdigest()[:16]


def do_request_subscription_work(instance: ConnectorInstance, *, renew: list[str], recreate: list[str]) -> None:
    """Record lifecycle work durably and queue the maintenance task after commit (tenant context)."""
    if not renew and not recreate:
        return

    with transaction.atomic():
        row = ConnectorInstance.objects.select_for_update().get(pk=instance.pk)
        pending = dict(row.config.get(PENDING_KEY) or {})
        # Bounded: these come from (authenticated) requests; one instance has a handful of drives.
        pending["renew"] = sorted(set(pending.get("renew") or []) | set(renew))[:MAX_PENDING]
        pending["recreate"] = sorted(set(pending.get("recreate") or []) | set(recreate))[:MAX_PENDING]
        row.config = {**row.config, PENDING_KEY: pending}
        row.save(update_fields=["config"])
    instance.config = row.config
    tenant_id, instance_pk = require_tenant_id(), instance.pk
    transaction.on_commit(lambda: enqueue_graph_subscriptions(tenant_id, instance_pk))


def do_ensure_subscriptions(instance: ConnectorInstance) -> None:
    """Queue subscription maintenance after commit: a new or re-enabled instance gets its drive
    subscriptions now, not at the next hourly beat (tenant context)."""
    if instance.kind != "sharepoint" or instance.paused:
        return

    tenant_id, instance_pk = require_tenant_id(), instance.pk
    transaction.on_commit(lambda: enqueue_graph_subscriptions(tenant_id, instance_pk))


def do_recreate_subscriptions(instance: ConnectorInstance, *, actor: Any) -> list[str]:
    """Admin action: replace every drive subscription of this instance (after a Graph outage, a
    changed public URL, a suspicion that deliveries stopped).  Returns the ids marked for
    replacement; the maintenance task deletes them at Graph and creates new ones."""

    subs = sorted(str(k) for k in (instance.config.get("subscriptions") or {}))
    with transaction.atomic():
        row = ConnectorInstance.objects.select_for_update().get(pk=instance.pk)
        pending = dict(row.config.get(PENDING_KEY) or {})
        pending["recreate"] = sorted(set(pending.get("recreate") or []) | set(subs))[:MAX_PENDING]
        pending.setdefault("renew", [])
        row.config = {**row.config, PENDING_KEY: pending}
        row.save(update_fields=["config"])
        do_record_audit_event(actor=actor, action="connector.subscriptions.recreate", target_type="connector",
                              target_id=instance.pk, details={"subscriptions": subs})  # fmt: skip
    instance.config = row.config
    do_ensure_subscriptions(instance)
    return subs


def _expiry(value: Any) -> datetime | None:
    parsed = parse_datetime(str(value)) if value else None
    if parsed is not None and timezone.is_naive(parsed):
        parsed = timezone.make_aware(parsed, UTC)
    return parsed


_GRAPH_ERRORS = (ConnectorError, OutboundHTTPError, requests.RequestException)


def maintain_subscriptions(instance: ConnectorInstance, connector: Any, *,
                           now: datetime | None = None) -> SubscriptionOutcome:  # fmt: skip
    """Create / renew / recreate this instance's drive subscriptions.

    Call OUTSIDE a transaction with ``instance`` freshly loaded in its tenant; then write the
    outcome with ``save_subscription_state`` inside the tenant context.  One failing call does not
    lose what the others did (a created subscription is always recorded).
    """
    out = SubscriptionOutcome()
    url = notification_url(instance)
    if not url:
        out.skipped = "no-public-base-url"
        return out
    now = now or timezone.now()
    secret = decrypt_text(instance.webhook_secret_encrypted)
    cfg = instance.config
    subs: dict[str, str] = {str(k): str(v) for k, v in (cfg.get("subscriptions") or {}).items()}
    known = set(subs)
    expiries: dict[str, str] = {str(k): str(v) for k, v in (cfg.get("subscription_expirations") or {}).items()}
    pending = cfg.get(PENDING_KEY) or {}
    renew_now = set(pending.get("renew") or [])
    recreate = set(pending.get("recreate") or [])
    rotated = cfg.get("subscription_secret") not in (None, secret_fingerprint(secret))
    handled: dict[str, set[str]] = {"renew": set(), "recreate": set()}

    drives: set[str] = set()
    try:
        for site_id in connector.config.site_ids:
            drives |= {str(d["id"]) for d in connector.client.drives(site_id)}
    except _GRAPH_ERRORS as exc:
        out.errors.append(f"listing drives: {type(exc).__name__}")
        return out  # without the drive list nothing can be decided safely

    def drop(sub_id: str) -> None:
        subs.pop(sub_id, None)
        expiries.pop(sub_id, None)
        out.dropped.append(sub_id)

    for sub_id, drive_id in list(subs.items()):
        # Removed by Graph, or made with a rotated-away clientState (Graph cannot change a
        # subscription's clientState; its notifications would be refused), or the drive is gone.
        if sub_id in recreate or rotated or drive_id not in drives:
            try:
                # Best effort: one that Graph already removed answers 404, which is fine; a live
                # one left behind would keep posting notifications we no longer accept.
                connector.client.delete_subscription(sub_id)
            except _GRAPH_ERRORS as exc:
                log.info("could not delete subscription %s: %s", sub_id, type(exc).__name__)
            drop(sub_id)
            handled["recreate"].add(sub_id)
            handled["renew"].add(sub_id)
            continue
        expires = _expiry(expiries.get(sub_id))
        if sub_id in renew_now or expires is None or expires - now < RENEW_BEFORE:
            try:
                reply = connector.client.renew_subscription(sub_id, now + LIFETIME)
            except NotFound:  # expired or deleted on Graph's side: a new one is made below
                drop(sub_id)
                handled["renew"].add(sub_id)
                continue
            except _GRAPH_ERRORS as exc:
                out.errors.append(f"renewing {sub_id}: {type(exc).__name__}")
                continue
            expiries[sub_id] = str(reply.get("expirationDateTime") or (now + LIFETIME).isoformat())
            out.renewed.append(sub_id)
            handled["renew"].add(sub_id)
    # Ids that are not (or no longer) ours: nothing to do for them, never a PATCH.
    handled["recreate"] |= recreate - set(subs)
    handled["renew"] |= renew_now - known

    for drive_id in sorted(drives - set(subs.values())):
        try:
            reply = connector.client.create_drive_subscription(
                drive_id, notification_url=url, lifecycle_notification_url=url, client_state=secret,
                expiration=now + LIFETIME,
            )  # fmt: skip
        except _GRAPH_ERRORS as exc:
            out.errors.append(f"subscribing to drive {drive_id}: {type(exc).__name__}")
            continue
        sub_id = str(reply["id"])
        subs[sub_id] = drive_id
        expiries[sub_id] = str(reply.get("expirationDateTime") or (now + LIFETIME).isoformat())
        out.created.append(sub_id)

    out.state = {
        "subscriptions": subs,
        "subscription_expirations": expiries,
        "subscription_secret": secret_fingerprint(secret),
        "handled": {k: sorted(v) for k, v in handled.items()},
    }
    return out


def save_subscription_state(instance_pk: int, outcome: SubscriptionOutcome) -> None:
    """Merge into the row under a lock (in the tenant context); lifecycle work that arrived while
    Graph was being called stays pending for the next run."""
    state = outcome.state
    if state is None:
        return
    with transaction.atomic():
        row = ConnectorInstance.objects.select_for_update().get(pk=instance_pk)
        config = dict(row.config)
        pending = dict(config.get(PENDING_KEY) or {})
        for key in ("renew", "recreate"):
            pending[key] = sorted(set(pending.get(key) or []) - set(state["handled"][key]))
        config.update({k: state[k] for k in ("subscriptions", "subscription_expirations", "subscription_secret")})
        if pending["renew"] or pending["recreate"]:
            config[PENDING_KEY] = pending
        else:
            config.pop(PENDING_KEY, None)
        row.config = config
        row.save(update_fields=["config"])

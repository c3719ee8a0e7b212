"""Celery tasks of the SharePoint connector: Graph change-notification subscriptions.

``maintain_graph_subscriptions`` keeps one live subscription per drive of an instance (created,
renewed or recreated as ``connectors.sharepoint.subscriptions`` decides); the beat task queues it
for every unpaused instance. Queued through ``connectors.dispatch`` by name.
"""

from __future__ import annotations

import logging

from celery import shared_task
from django.db import connection

from connectors.dispatch import enqueue_graph_subscriptions
from connectors.models import ConnectorInstance
from connectors.runtime import build_connector
from connectors.sharepoint.subscriptions import maintain_subscriptions, notification_url, save_subscription_state
from connectors.tasks import _error_text
from core.crypto import CredentialsError
from core.http import OutboundHTTPError
from tenants.context import tenant_context
from tenants.models import Tenant

log = logging.getLogger(__name__)

SUBSCRIPTION_LOCK_NAMESPACE = 0x6773  # "gs": one maintenance run per instance (no double POSTs)


@shared_task(acks_late=True, name="connectors.tasks.maintain_graph_subscriptions")
def maintain_graph_subscriptions(tenant_id: int, instance_pk: int) -> str:
    """Ensure one live Graph subscription per drive of a SharePoint instance (see
    ``connectors.sharepoint.subscriptions``).  Graph is called outside any transaction."""
    with connection.cursor() as cur:
        cur.execute("SELECT pg_try_advisory_lock(%s, %s)", [SUBSCRIPTION_LOCK_NAMESPACE, instance_pk])
        if not cur.fetchone()[0]:
            return "locked"  # the run holding it reads the same pending work
    try:
        with tenant_context(tenant_id):
            instance = ConnectorInstance.objects.filter(pk=instance_pk, kind="sharepoint").first()
            if instance is None or instance.paused:
                return "skipped"
            try:
                connector = build_connector(instance)
            except (CredentialsError, LookupError, KeyError, ValueError, OutboundHTTPError) as exc:
                log.warning("connector %s: cannot build it for subscriptions: %s", instance_pk, _error_text(exc))
                return "failed"
        outcome = maintain_subscriptions(instance, connector)
        if outcome.skipped:
            return outcome.skipped
        with tenant_context(tenant_id):
            save_subscription_state(instance_pk, outcome)
        if outcome.errors:
            log.warning("connector %s subscriptions: %s", instance_pk, "; ".join(outcome.errors)[:2000])
        return f"created={len(outcome.created)} renewed={len(outcome.renewed)} errors={len(outcome.errors)}"
    finally:
        with connection.cursor() as cur:
            cur.execute("SELECT pg_advisory_unlock(%s, %s)", [SUBSCRIPTION_LOCK_NAMESPACE, instance_pk])


@shared_task(acks_late=True, name="connectors.tasks.schedule_graph_subscriptions")
def schedule_graph_subscriptions() -> int:
    """Beat: queue maintenance for every unpaused SharePoint instance (one drive listing per site;
    renewals only inside the renewal window or when a lifecycle event asked for one)."""
    queued = 0
    for tenant_id in Tenant.objects.values_list("id", flat=True):
        with tenant_context(tenant_id):
            pks = [i.pk for i in ConnectorInstance.objects.filter(kind="sharepoint", paused=False)
                   if notification_url(i)]  # fmt: skip
        for pk in pks:
            enqueue_graph_subscriptions(tenant_id, pk)
            queued += 1
    return queued

"""Celery tasks of the ingestion pipeline.

Tasks are acks_late (settings) and idempotent: the event row is the unit of
work and its status says whether it was applied, so a redelivered message
(worker killed mid-task, broker redelivery) re-runs harmlessly.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from celery import shared_task
from django.db import transaction
from django.utils import timezone

from cairn.backends import embedder
from retrieval import pipeline
from retrieval.actions import document_from_payload
from retrieval.models import IngestEvent
from tenants.context import tenant_context
from tenants.models import Tenant

log = logging.getLogger(__name__)


def enqueue_ingest_event(tenant_id: int, event_pk: int, priority: int = 5) -> None:
    queue = "permissions" if priority == 0 else "ingest"
    try:
        process_ingest_event.apply_async((tenant_id, event_pk), queue=queue)
    except Exception:  # broker down: the event row stays pending and the sweeper re-queues it
        log.warning("could not queue ingest event %s; the sweeper will retry", event_pk, exc_info=True)


def apply_event(event: IngestEvent) -> str:
    source = event.source
    if event.kind == "upsert":
        doc = document_from_payload(event.payload, bytes(event.content or b""))
        return pipeline.apply_upsert(source, doc, embedder(), observed_at=event.created_at)
    if event.kind == "delete":
        return pipeline.apply_delete(source, event.external_id, event.source_version)
    if event.kind == "acl":
        return pipeline.apply_acl_update(
            source, event.external_id, event.payload["acl"], event.source_version, observed_at=event.created_at
        )
    raise ValueError(f"unknown event kind {event.kind!r}")


@shared_task(bind=True, acks_late=True, max_retries=8, default_retry_delay=5)
def process_ingest_event(self, tenant_id: int, event_pk: int) -> str:  # type: ignore[no-untyped-def]
    with tenant_context(tenant_id):
        event = IngestEvent.objects.filter(pk=event_pk).first()
        if event is None or event.status != IngestEvent.Status.PENDING:
            return "already-processed"
        IngestEvent.objects.filter(pk=event_pk).update(attempts=event.attempts + 1)
    try:
        with tenant_context(tenant_id):
            outcome = apply_event(event)
            IngestEvent.objects.filter(pk=event_pk).update(
                status=IngestEvent.Status.DONE, outcome=outcome, processed_at=timezone.now(), error=""
            )
        return outcome
    except (ValueError, LookupError) as exc:
        # Bad content (corrupt PDF, unknown media type): retrying cannot help.
        with tenant_context(tenant_id):
            IngestEvent.objects.filter(pk=event_pk).update(
                status=IngestEvent.Status.FAILED, error=f"{type(exc).__name__}: {exc}"[:2000],
                processed_at=timezone.now(),
            )  # fmt: skip
        log.warning("ingest event %s failed permanently: %s", event_pk, exc)
        return "failed"
    except Exception as exc:
        with tenant_context(tenant_id):
            IngestEvent.objects.filter(pk=event_pk).update(error=f"{type(exc).__name__}: {exc}"[:2000])
        raise self.retry(exc=exc) from exc


@shared_task(acks_late=True)
def sweep_pending_events(older_than_seconds: int = 30) -> int:
    """Re-queue events still pending after a while (lost message, broker outage)."""
    cutoff = timezone.now() - timedelta(seconds=older_than_seconds)
    queued = 0
    for tenant_id in Tenant.objects.values_list("id", flat=True):
        with tenant_context(tenant_id):
            pending = list(
                IngestEvent.objects.filter(status=IngestEvent.Status.PENDING, created_at__lt=cutoff)
                .order_by("priority", "created_at")
                .values_list("pk", "priority")[:500]
            )
        for pk, priority in pending:
            enqueue_ingest_event(tenant_id, pk, priority)
            queued += 1
    return queued


def process_pending_inline(tenant_id: int, limit: int = 10_000) -> int:
    """Apply pending events in this process (used by tests and the demo fast path)."""
    done = 0
    while done < limit:
        with tenant_context(tenant_id):
            pk = (
                IngestEvent.objects.filter(status=IngestEvent.Status.PENDING)
                .order_by("priority", "created_at", "pk")
                .values_list("pk", flat=True)
                .first()
            )
        if pk is None:
            return done
        process_ingest_event(tenant_id, pk)
        done += 1
    return done


__all__ = ["process_ingest_event", "sweep_pending_events", "enqueue_ingest_event", "transaction"]

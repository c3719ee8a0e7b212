"""Celery tasks of the ingestion pipeline.

Tasks are acks_late (settings) and idempotent: the event row is the unit of
work and its status says whether it was applied, so a redelivered message
(worker killed mid-task, broker redelivery) re-runs harmlessly.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from celery import shared_task
from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from core.backends import embedder
from retrieval import pipeline
from retrieval.contracts import document_from_payload
from retrieval.models import IngestEvent
from tenants.context import tenant_context
from tenants.models import Tenant

log = logging.getLogger(__name__)


def ingest_queue(priority: int) -> str:
    # Named in settings (like CONNECTOR_QUEUE) so a deployment, or a drill, can give a worker its own queues.
    if priority == 0:
        return str(settings.CAIRN.get("PERMISSIONS_QUEUE", "permissions"))
    return str(settings.CAIRN.get("INGEST_QUEUE", "ingest"))


def enqueue_ingest_event(tenant_id: int, event_pk: int, priority: int = 5) -> None:
    queue = ingest_queue(priority)
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


def apply_overtaken(event: IngestEvent) -> int:
    """Apply, in recorded order, the item's events that were recorded before ``event`` and still pend.

    Events of one document are applied in the order they were recorded, whatever order their
    messages arrive in.  An ACL event runs on its own, faster queue, so it can overtake the create
    of its document; a killed worker leaves an event pending until the sweeper re-queues it while
    later events of the same document go ahead.  Applied out of order, an ACL event finds no
    document (and the create then stores its older ACL: a revocation lost), or a re-sent older
    version is not yet stale and its ACL wins over the newer version's.  The worker crash drill
    (``benchmarks/sigkill_drill.py``) found both.
    """
    older = (
        IngestEvent.objects.filter(source_id=event.source_id, external_id=event.external_id,
                                   status=IngestEvent.Status.PENDING)
        .filter(Q(created_at__lt=event.created_at) | Q(created_at=event.created_at, pk__lt=event.pk))
        .order_by("created_at", "pk")
    )  # fmt: skip
    applied = 0
    for prior in older:
        try:
            outcome, status, error = apply_event(prior), IngestEvent.Status.DONE, ""
        except (ValueError, LookupError) as exc:
            outcome, status, error = "failed", IngestEvent.Status.FAILED, f"{type(exc).__name__}: {exc}"[:2000]
        IngestEvent.objects.filter(pk=prior.pk).update(
            status=status, outcome=outcome, error=error, processed_at=timezone.now(), attempts=F("attempts") + 1
        )
        applied += 1
    return applied


@shared_task(bind=True, acks_late=True, max_retries=8, default_retry_delay=5)
def process_ingest_event(self, tenant_id: int, event_pk: int) -> str:  # type: ignore[no-untyped-def]
    with tenant_context(tenant_id):
        event = IngestEvent.objects.filter(pk=event_pk).first()
        if event is None or event.status != IngestEvent.Status.PENDING:
            return "already-processed"
        IngestEvent.objects.filter(pk=event_pk).update(attempts=event.attempts + 1)
    try:
        with tenant_context(tenant_id):
            apply_overtaken(event)  # per-document FIFO: older pending events of this item first
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
def sweep_pending_events(older_than_seconds: int = 30, tenant_ids: list[int] | None = None,
                         requeue_window_seconds: int = 0) -> int:  # fmt: skip
    """Re-queue events still pending after a while (lost message, broker outage).

    ``tenant_ids`` limits the sweep (beat sweeps every tenant; a drill sweeps only its own).
    ``requeue_window_seconds`` (beat: ``CAIRN_INGEST_SWEEP_REQUEUE_SECONDS``): re-queue one event at
    most once per window.  A pending event is usually just waiting in a long queue; re-queuing the
    whole backlog on every sweep adds a copy of it each time (harmless, the task is idempotent, but
    the copies compete with real work for the worker).  0 = every sweep (direct callers, tests).
    """
    cutoff = timezone.now() - timedelta(seconds=older_than_seconds)
    queued = 0
    tenants = Tenant.objects.values_list("id", flat=True)
    if tenant_ids is not None:
        tenants = tenants.filter(id__in=tenant_ids)
    for tenant_id in tenants:
        with tenant_context(tenant_id):
            pending = list(
                IngestEvent.objects.filter(status=IngestEvent.Status.PENDING, created_at__lt=cutoff)
                .order_by("priority", "created_at")
                .values_list("pk", "priority")[:500]
            )
        for pk, priority in pending:
            if requeue_window_seconds and not _claim_requeue(tenant_id, pk, requeue_window_seconds):
                continue
            enqueue_ingest_event(tenant_id, pk, priority)
            queued += 1
    return queued


@shared_task(acks_late=True)
def train_vector_clusters(tenant_id: int, force: bool = False) -> dict:
    """(Re)train a tenant's vector centroids and reassign its chunks (retrieval/clustering.py).

    Queued on commit by the ingest that makes the tenant due, and by ``manage.py vector_clusters``.  Idempotent:
    a redelivery (worker killed mid-reassignment) resumes the reassignment; a run when nothing is due is a no-op.
    """
    from retrieval import clustering

    return clustering.train(tenant_id, force=force)


def _claim_requeue(tenant_id: int, event_pk: int, window_seconds: int) -> bool:
    """True when this event was not re-queued within the window (a marker in the Redis cache)."""
    from django.core.cache import cache

    try:
        return bool(cache.add(f"ingest-requeued:{tenant_id}:{event_pk}", 1, timeout=window_seconds))
    except Exception:  # cache down: so is the broker; enqueue_ingest_event logs and the next sweep retries
        return True


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


__all__ = [
    "process_ingest_event",
    "sweep_pending_events",
    "enqueue_ingest_event",
    "train_vector_clusters",
    "transaction",
]

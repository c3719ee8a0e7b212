"""Celery tasks that drive connectors: full / incremental / permission sync, webhook work.

A sync applies each op through ``connectors.actions.apply_sync_op`` and stores the op's
checkpoint in the SAME transaction, so after a crash (worker SIGKILLed, machine lost) the run
resumes exactly after the last applied op (at-least-once towards the source, idempotent ops).
Tasks are acks_late and enqueued on commit.  A throttled source (``ConnectorError`` with
``retry_after``, ``core.http.RateLimited``) is rescheduled with a countdown; no worker sleeps
for it.  A Postgres advisory lock per instance keeps two syncs of one instance apart; it is
tied to the worker's DB session, so a killed worker releases it.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Protocol, cast

import requests
from celery import shared_task
from django.db import connection
from django.db.models import F
from django.utils import timezone

from connectors.actions import ACTIVE, apply_acl_updates, apply_sync_op, do_request_sync
from connectors.base import ConnectorError, UpdateAcl
from connectors.confluence.webhooks import WebhookRejected, parse_event
from connectors.dispatch import enqueue_sync, sync_queue
from connectors.models import ConnectorInstance, InboundEvent, SyncState
from connectors.runtime import build_connector
from core.crypto import CredentialsError
from core.http import OutboundHTTPError, RateLimited, redact
from retrieval.actions import do_enqueue_delete
from retrieval.models import Document, Source
from tenants.context import tenant_context
from tenants.models import Tenant

if TYPE_CHECKING:
    from connectors.base import SyncOp
    from connectors.confluence.webhooks import WebhookEvent

log = logging.getLogger(__name__)

LOCK_NAMESPACE = 0x6361  # "ca": the first key of the two-int advisory lock
METHODS = {"full": "full_sync", "incremental": "incremental_sync", "permission": "permission_sync"}
SOURCE_FIELDS = {"full": "last_full_sync_at", "incremental": "last_incremental_sync_at",
                 "permission": "last_permission_sync_at"}  # fmt: skip
LOCKED_RETRY_S = 5.0
# A permission walk's UpdateAcl ops are applied in groups of this many (or as old), see ``_batched``.
ACL_BATCH = 200
ACL_BATCH_SECONDS = 1.0
TRANSIENT_RETRY_S = 30.0


@contextmanager
def instance_lock(instance_pk: int) -> Iterator[bool]:
    with connection.cursor() as cur:
        cur.execute("SELECT pg_try_advisory_lock(%s, %s)", [LOCK_NAMESPACE, instance_pk])
        got = bool(cur.fetchone()[0])
    try:
        yield got
    finally:
        if got:
            with connection.cursor() as cur:
                cur.execute("SELECT pg_advisory_unlock(%s, %s)", [LOCK_NAMESPACE, instance_pk])


@shared_task(bind=True, acks_late=True, name="connectors.tasks.run_sync")
def run_sync(self: Any, tenant_id: int, instance_pk: int, mode: str, run_id: str) -> str:
    queue = (self.request.delivery_info or {}).get("routing_key") if self.request else None
    return execute_sync(tenant_id, instance_pk, mode, run_id, queue=queue)


def _error_text(exc: BaseException) -> str:
    return redact(str(exc) or type(exc).__name__)[:2000]


def execute_sync(tenant_id: int, instance_pk: int, mode: str, run_id: str, *, queue: str | None = None) -> str:
    """One run (or the rest of an interrupted one).  Returns a short outcome for logs/tests."""
    with instance_lock(instance_pk) as got:
        if not got:
            enqueue_sync(tenant_id, instance_pk, mode, run_id, countdown=LOCKED_RETRY_S, queue=queue)
            return "locked"
        with tenant_context(tenant_id):
            instance = ConnectorInstance.objects.select_related("source").filter(pk=instance_pk).first()
            state = SyncState.objects.filter(instance_id=instance_pk, mode=mode).first()
            if instance is None or state is None or state.run_id != run_id:
                return "superseded"
            if state.status not in ACTIVE:
                return "not-active"
            if instance.paused:
                return "paused"  # stays queued; do_set_paused(False) re-queues it
            now = timezone.now()
            SyncState.objects.filter(pk=state.pk).update(
                status=SyncState.Status.RUNNING, started_at=state.started_at or now, heartbeat_at=now, retry_at=None
            )
            checkpoint = dict(state.checkpoint or {})
            try:
                connector = build_connector(instance)
            except (CredentialsError, LookupError, KeyError, ValueError, OutboundHTTPError) as exc:
                _fail(state, f"cannot build the connector: {_error_text(exc)}", "")
                return "failed"
        return _drive(tenant_id, instance, state, connector, mode, run_id, checkpoint, queue)


def _batched(stream: Iterator[tuple[SyncOp, dict[str, Any]]]) -> Iterator[list[tuple[SyncOp, dict[str, Any]]]]:
    """Consecutive ``UpdateAcl`` ops in groups (at most ``ACL_BATCH`` ops or ``ACL_BATCH_SECONDS`` old), any
    other op on its own.

    A group is applied in one transaction with the checkpoint of its last op: the same
    at-least-once resume as one op at a time, with a few queries per group instead of several per
    op (a 10,000-page permission walk was ~12 ms of database round trips per page).  Ops produced
    before the connector raised are handed over first, so their work is kept.
    """
    batch: list[tuple[SyncOp, dict[str, Any]]] = []
    started = 0.0
    try:
        for op, cp in stream:
            if not isinstance(op, UpdateAcl):
                if batch:
                    yield batch
                    batch = []
                yield [(op, cp)]
                continue
            if not batch:
                started = time.monotonic()
            batch.append((op, cp))
            if len(batch) >= ACL_BATCH or time.monotonic() - started >= ACL_BATCH_SECONDS:
                yield batch
                batch = []
    except Exception:
        if batch:
            yield batch
        raise
    if batch:
        yield batch


def _drive(tenant_id: int, instance: ConnectorInstance, state: SyncState, connector: Any, mode: str, run_id: str,
           checkpoint: dict[str, Any], queue: str | None) -> str:  # fmt: skip
    try:
        stream = getattr(connector, METHODS[mode])(checkpoint)
        # Only a permission walk is grouped: it yields its ops back to back.  An incremental run (a
        # SharePoint delta, the Slack inbox) applies each op at once, so no change waits for the
        # connector's next op.
        batches = _batched(stream) if mode == "permission" else ([pair] for pair in stream)
        for batch in batches:
            with tenant_context(tenant_id):
                first = batch[0][0]
                if isinstance(first, UpdateAcl):
                    changed = apply_acl_updates(instance, [cast(UpdateAcl, op) for op, _ in batch], run_id=run_id)
                    bumps = {"acl_updates": F("acl_updates") + changed} if changed else {}
                else:
                    counter = apply_sync_op(instance, first, run_id=run_id, backfill=mode == "full")
                    bumps = {counter: F(counter) + 1} if counter else {}
                updated = SyncState.objects.filter(pk=state.pk, run_id=run_id).update(
                    checkpoint=batch[-1][1], heartbeat_at=timezone.now(), ops_applied=F("ops_applied") + len(batch),
                    **bumps,
                )  # fmt: skip
                if not updated:
                    # The run was replaced meanwhile: roll this op back with it (nothing half-written).
                    from django.db import transaction

                    transaction.set_rollback(True)
                    return "superseded"
        if mode == "full":
            _prune(tenant_id, instance, connector, run_id)
    except (RateLimited, ConnectorError) as exc:
        retry_after = getattr(exc, "retry_after", None)
        if retry_after is not None:
            delay = float(retry_after) + random.uniform(0, min(5.0, 0.1 * float(retry_after) + 0.5))
            with tenant_context(tenant_id):
                SyncState.objects.filter(pk=state.pk, run_id=run_id).update(
                    status=SyncState.Status.THROTTLED, retry_at=timezone.now() + timedelta(seconds=delay),
                    last_error=_error_text(exc), last_error_item=str(getattr(exc, "item", "") or "")[:500],
                )  # fmt: skip
            enqueue_sync(tenant_id, instance.pk, mode, run_id, countdown=delay, queue=queue)
            return "throttled"
        _fail(state, _error_text(exc), str(getattr(exc, "item", "") or ""), tenant_id=tenant_id)
        if mode == "full":
            _carry_delta_links(tenant_id, instance, state)
        return "failed"
    except (requests.RequestException, OutboundHTTPError) as exc:
        with tenant_context(tenant_id):
            SyncState.objects.filter(pk=state.pk, run_id=run_id).update(
                status=SyncState.Status.THROTTLED, last_error=_error_text(exc),
                retry_at=timezone.now() + timedelta(seconds=TRANSIENT_RETRY_S),
            )  # fmt: skip
        enqueue_sync(tenant_id, instance.pk, mode, run_id, countdown=TRANSIENT_RETRY_S, queue=queue)
        return "retrying"
    except Exception as exc:
        log.error("connector %s %s sync failed: %s", instance.pk, mode, _error_text(exc))
        _fail(state, f"internal error ({type(exc).__name__})", "", tenant_id=tenant_id)
        return "failed"
    _finish(tenant_id, instance, state, mode, run_id)
    return "done"


def _fail(state: SyncState, message: str, item: str, *, tenant_id: int | None = None) -> None:
    def write() -> None:
        SyncState.objects.filter(pk=state.pk, run_id=state.run_id).update(
            status=SyncState.Status.FAILED, finished_at=timezone.now(), last_error=message, last_error_item=item[:500]
        )
        Source.objects.filter(pk=state.instance.source_id).update(last_error=message, last_error_item=item[:500])

    if tenant_id is None:
        write()
    else:
        with tenant_context(tenant_id):
            write()


def _carry_delta_links(tenant_id: int, instance: ConnectorInstance, state: SyncState) -> None:
    """A failed full run that already enumerated a drive knows where that drive's changes continue.

    Drives the incremental run has no delta link for get the full run's, so a file deleted after
    the enumeration is reported by the next delta instead of vanishing into a fresh enumeration
    (which never lists deleted items).  Links the incremental run already has are kept: they are
    older, so they also cover what happened before the full run.
    """
    with tenant_context(tenant_id):
        final = SyncState.objects.filter(pk=state.pk).first()
        links = dict(((final.checkpoint if final else None) or {}).get("delta_links") or {})
        if not links:
            return
        inc = SyncState.objects.select_for_update().filter(instance=instance, mode="incremental").first()
        if inc is None or inc.status in ACTIVE:
            return
        checkpoint = dict(inc.checkpoint or {})
        mine = dict(checkpoint.get("delta_links") or {})
        checkpoint["delta_links"] = {**links, **mine}
        if checkpoint["delta_links"] != mine:
            inc.checkpoint = checkpoint
            inc.save(update_fields=["checkpoint"])


def _partial(checkpoint: dict[str, Any]) -> tuple[str, str]:
    """What a finished run could not do (principals that grant nothing until retried), for admins."""
    failures = [f for f in checkpoint.get("failures") or [] if isinstance(f, dict)]
    warnings = [str(w) for w in checkpoint.get("warnings") or []]
    parts = [f"{f.get('item', '')}: {f.get('error', '')}" for f in failures[:5]]
    if failures:
        parts.insert(0, f"partial: {len(failures)} principal(s) could not be expanded and grant nothing"
                        " until the next run retries them")  # fmt: skip
    text = "; ".join(parts + warnings)
    return redact(text)[:2000], str(failures[0].get("item", "") if failures else "")[:500]


def _finish(tenant_id: int, instance: ConnectorInstance, state: SyncState, mode: str, run_id: str) -> None:
    now = timezone.now()
    with tenant_context(tenant_id):
        final = SyncState.objects.get(pk=state.pk)
        error, item = _partial(dict(final.checkpoint or {}))
        SyncState.objects.filter(pk=state.pk, run_id=run_id).update(
            status=SyncState.Status.DONE, finished_at=now, last_success_at=now, retry_at=None,
            last_error=error, last_error_item=item,
        )  # fmt: skip
        Source.objects.filter(pk=instance.source_id).update(**{SOURCE_FIELDS[mode]: now, "last_error": error,
                                                                "last_error_item": item})  # fmt: skip
        if mode == "full":
            # Where the full run ended is where change tracking starts (Confluence "since",
            # SharePoint delta links); an incremental run that is itself mid-way keeps its own.
            inc = SyncState.objects.select_for_update().get(instance=instance, mode="incremental")
            if inc.status not in ACTIVE:
                inc.checkpoint = {**(inc.checkpoint or {}), **(final.checkpoint or {})}
                inc.save(update_fields=["checkpoint"])
        if mode == "incremental" and instance.kind == "slack":
            position = (final.checkpoint or {}).get("inbox_position")
            if position is not None:
                InboundEvent.objects.filter(instance=instance, kind="slack", pk__lte=position,
                                            status=InboundEvent.Status.PENDING).update(
                    status=InboundEvent.Status.DONE, processed_at=now)  # fmt: skip


def _prune(tenant_id: int, instance: ConnectorInstance, connector: Any, run_id: str) -> None:
    """After a complete full sync: delete what the source no longer lists."""
    present = set(connector.slim_listing())
    with tenant_context(tenant_id):
        stored = set(
            Document.objects.filter(source_id=instance.source_id, deleted=False).values_list("external_id", flat=True)
        )
        for external_id in sorted(stored - present):
            do_enqueue_delete(instance.source, external_id, event_id=f"prune:{run_id}:{external_id}"[:300])


# ------------------------------------------------------------------ webhooks / events


class _WebhookConnector(Protocol):
    """A connector that turns a parsed webhook into ops (Confluence's); not part of ``Connector``."""

    def webhook_ops(self, event: WebhookEvent) -> Iterator[SyncOp]: ...


def enqueue_inbound_event(tenant_id: int, event_pk: int) -> None:
    try:
        process_inbound_event.apply_async((tenant_id, event_pk), queue=sync_queue())
    except Exception:
        log.warning("could not queue inbound event %s; the sweeper will retry", event_pk, exc_info=True)


@shared_task(acks_late=True, name="connectors.tasks.process_inbound_event")
def process_inbound_event(tenant_id: int, event_pk: int) -> str:

    with tenant_context(tenant_id):
        event = InboundEvent.objects.select_related("instance__source").filter(pk=event_pk).first()
        if event is None or event.status != InboundEvent.Status.PENDING:
            return "already-processed"
        instance = event.instance
        if instance.kind != "confluence":
            # Graph and Slack deliveries only say "run a delta / drain the inbox".
            do_request_sync(instance, "incremental")
            if instance.kind == "sharepoint":
                InboundEvent.objects.filter(pk=event_pk).update(status=InboundEvent.Status.DONE,
                                                                processed_at=timezone.now())  # fmt: skip
            return "sync-requested"
        try:
            parsed = parse_event(event.kind, event.payload)
            connector = build_connector(instance)
        except (WebhookRejected, CredentialsError, LookupError, ValueError, OutboundHTTPError) as exc:
            InboundEvent.objects.filter(pk=event_pk).update(status=InboundEvent.Status.FAILED,
                                                            error=_error_text(exc), processed_at=timezone.now())  # fmt: skip
            return "failed"
    restore = parsed.event.endswith("_restored")
    try:
        # Only the confluence kind reaches this point, and its connector takes webhooks.
        ops = list(cast(_WebhookConnector, connector).webhook_ops(parsed))
    except (RateLimited, ConnectorError, requests.RequestException) as exc:
        if getattr(exc, "status", None) in (401, 403):
            # Rejected credentials do not heal by waiting: retrying every 30 s kept the event pending
            # forever. It fails visibly (connector status) and the next sync after the fix catches up.
            with tenant_context(tenant_id):
                InboundEvent.objects.filter(pk=event_pk).update(status=InboundEvent.Status.FAILED,
                                                                error=_error_text(exc), processed_at=timezone.now())  # fmt: skip
            return "failed"
        retry_after = float(getattr(exc, "retry_after", None) or TRANSIENT_RETRY_S)
        process_inbound_event.apply_async((tenant_id, event_pk), queue=sync_queue(), countdown=retry_after)
        return "retrying"
    with tenant_context(tenant_id):
        for op in ops:
            apply_sync_op(instance, op, run_id=f"hook:{parsed.event_id[:24]}", restore=restore)
        InboundEvent.objects.filter(pk=event_pk).update(status=InboundEvent.Status.DONE, processed_at=timezone.now())
    return "applied"


# ------------------------------------------------------------------ beat


@shared_task(acks_late=True, name="connectors.tasks.schedule_connector_syncs")
def schedule_connector_syncs(mode: str = "incremental", every_seconds: int = 300) -> int:
    """Queue ``mode`` for every unpaused instance whose last run of it is older than ``every_seconds``."""
    cutoff = timezone.now() - timedelta(seconds=every_seconds)
    queued = 0
    for tenant_id in Tenant.objects.values_list("id", flat=True):
        with tenant_context(tenant_id):
            for instance in ConnectorInstance.objects.filter(paused=False):
                state = SyncState.objects.filter(instance=instance, mode=mode).first()
                if state is not None and (state.status in ACTIVE or (state.finished_at or cutoff) > cutoff):
                    continue
                do_request_sync(instance, mode)
                queued += 1
    return queued


@shared_task(acks_late=True, name="connectors.tasks.resume_stalled_syncs")
def resume_stalled_syncs(stale_after_seconds: int = 300) -> int:
    """Re-queue runs nobody is working on: a killed worker's run, a lost message, a due retry.

    A run counts as abandoned when its heartbeat is old AND the instance lock is free (a live
    worker holds the lock for the whole run)."""
    cutoff = timezone.now() - timedelta(seconds=stale_after_seconds)
    queued = 0
    for tenant_id in Tenant.objects.values_list("id", flat=True):
        with tenant_context(tenant_id):
            stalled = list(
                SyncState.objects.filter(status__in=ACTIVE, heartbeat_at__lte=cutoff, instance__paused=False)
                .exclude(status=SyncState.Status.THROTTLED, retry_at__gt=timezone.now())
                .values_list("instance_id", "mode", "run_id")
            )
            pending = list(
                InboundEvent.objects.filter(status=InboundEvent.Status.PENDING, received_at__lte=cutoff)
                .exclude(kind="slack")
                .values_list("pk", flat=True)[:500]
            )
        for instance_pk, mode, run_id in stalled:
            with instance_lock(instance_pk) as free:
                if not free:
                    continue
            enqueue_sync(tenant_id, instance_pk, mode, run_id)
            queued += 1
        for pk in pending:
            enqueue_inbound_event(tenant_id, pk)
    return queued


# ------------------------------------------------------------------ Graph subscriptions (SharePoint)

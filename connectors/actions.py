"""Domain functions that change connector state (do_<verb>_<noun>).

All of them expect an active tenant_context.  Applying a sync op goes through
``retrieval.actions`` (the ingest outbox), never straight to the retrieval tables.
"""

from __future__ import annotations

import hashlib
import secrets
import uuid
from typing import Any

from django.db import transaction
from django.utils import timezone

from connectors.base import DeleteDocument, IdentitySeen, SetGroupMembers, SyncOp, UpdateAcl, UpsertDocument
from connectors.dispatch import enqueue_sync
from connectors.models import ConnectorInstance, InboundEvent, SyncState
from core.crypto import decrypt_json, encrypt_json, encrypt_text
from retrieval.actions import (
    PRIORITY_BACKFILL,
    PRIORITY_DEFAULT,
    do_create_source,
    do_enqueue_acl_update,
    do_enqueue_delete,
    do_enqueue_document,
    do_record_identity,
    do_set_group_members,
)
from retrieval.contracts import normalise_acl
from retrieval.models import Source
from tenants.context import require_tenant_id

AUTHORITY_TIERS = {"confluence": 1, "sharepoint": 0, "slack": 3}
ACTIVE = (SyncState.Status.QUEUED, SyncState.Status.RUNNING, SyncState.Status.THROTTLED)


def new_webhook_secret() -> str:
    return secrets.token_urlsafe(32)


def do_create_connector_instance(
    kind: str,
    name: str,
    *,
    config: dict[str, Any],
    credentials: dict[str, Any],
    allow_private_network: bool = False,
    tls_ca_file: str = "",
) -> ConnectorInstance:
    """A new instance with its ``retrieval.Source`` (1:1) and a fresh per-instance webhook secret."""
    source = do_create_source(kind, name, config={}, authority_tier=AUTHORITY_TIERS.get(kind, 2))
    existing = ConnectorInstance.objects.filter(source=source).first()
    if existing is not None:
        return existing
    instance = ConnectorInstance.objects.create(
        source=source, kind=kind, config=dict(config), credentials_encrypted=encrypt_json(dict(credentials)),
        webhook_secret_encrypted=encrypt_text(new_webhook_secret()),
        allow_private_network=allow_private_network, tls_ca_file=tls_ca_file,
    )  # fmt: skip
    for mode in SyncState.Mode.values:
        SyncState.objects.create(instance=instance, mode=mode)
    if kind == "sharepoint":
        from connectors.sharepoint.subscriptions import do_ensure_subscriptions

        do_ensure_subscriptions(instance)  # Graph change notifications from the start
    return instance


def do_update_connector_instance(
    instance: ConnectorInstance,
    *,
    name: str | None = None,
    config: dict[str, Any] | None = None,
    credentials: dict[str, Any] | None = None,
) -> ConnectorInstance:
    """Credentials are merged key by key (write-only: the caller never saw the old values)."""
    if name is not None and name != instance.source.name:
        Source.objects.filter(pk=instance.source_id).update(name=name)
    if config is not None:
        # Keys the runtime maintains (Graph subscription bookkeeping) survive an admin's edit;
        # dropping them would orphan live subscriptions.
        runtime_keys = ("subscriptions", "subscription_expirations", "subscription_secret", "subscription_pending")
        kept = {k: instance.config[k] for k in runtime_keys if k in (instance.config or {})}
        instance.config = {**dict(config), **kept}
    if credentials:
        merged = decrypt_json(instance.credentials_encrypted)
        merged.update({k: v for k, v in credentials.items() if v is not None})
        instance.credentials_encrypted = encrypt_json(merged)
    instance.updated_at = timezone.now()
    instance.save()
    return instance


def do_rotate_webhook_secret(instance: ConnectorInstance) -> None:
    instance.webhook_secret_encrypted = encrypt_text(new_webhook_secret())
    instance.updated_at = timezone.now()
    instance.save(update_fields=["webhook_secret_encrypted", "updated_at"])


def do_set_paused(instance: ConnectorInstance, paused: bool) -> ConnectorInstance:
    instance.paused = paused
    instance.updated_at = timezone.now()
    instance.save(update_fields=["paused", "updated_at"])
    Source.objects.filter(pk=instance.source_id).update(paused=paused)
    if not paused:
        # Runs that were waiting while paused continue from their checkpoints.
        for state in SyncState.objects.filter(instance=instance, status__in=ACTIVE):
            _enqueue_run(state)
        if instance.kind == "sharepoint":
            from connectors.sharepoint.subscriptions import do_ensure_subscriptions

            # Subscriptions may have lapsed while paused (the beat skips paused instances).
            do_ensure_subscriptions(instance)
    return instance


def do_request_sync(instance: ConnectorInstance, mode: str) -> SyncState:
    """Queue a run of ``mode`` unless one is already queued or running (then that one is returned).

    A full sync after a finished one starts from scratch; after a failed or interrupted one it
    resumes from the checkpoint.  Incremental and permission syncs always continue from theirs.
    """
    if mode not in SyncState.Mode.values:
        raise ValueError(f"unknown sync mode {mode!r}")
    with transaction.atomic():
        state, _ = SyncState.objects.select_for_update().get_or_create(instance=instance, mode=mode)
        if state.status in ACTIVE:
            return state
        if mode == SyncState.Mode.FULL and state.status in (SyncState.Status.DONE, SyncState.Status.IDLE):
            state.checkpoint = {}
        state.status = SyncState.Status.QUEUED
        state.run_id = uuid.uuid4().hex
        state.started_at = None
        state.finished_at = None
        state.retry_at = None
        state.heartbeat_at = timezone.now()
        for counter in ("ops_applied", "docs_upserted", "docs_deleted", "acl_updates", "groups_synced",
                        "identities_seen"):  # fmt: skip
            setattr(state, counter, 0)
        state.save()
        if not instance.paused:
            _enqueue_run(state)
        return state


def _enqueue_run(state: SyncState, countdown: float | None = None) -> None:
    tenant_id = require_tenant_id()
    args = (tenant_id, state.instance_id, state.mode, state.run_id)
    transaction.on_commit(lambda: enqueue_sync(*args, countdown=countdown))


def do_store_inbound_event(instance: ConnectorInstance, event_id: str, kind: str,
                           payload: dict[str, Any]) -> InboundEvent | None:  # fmt: skip
    """Store a verified delivery; a repeated event id returns None (nothing is written)."""
    with transaction.atomic():
        event, created = InboundEvent.objects.get_or_create(
            instance=instance, event_id=event_id[:200], defaults={"kind": kind, "payload": payload}
        )
    return event if created else None


def _short(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:16]


def apply_sync_op(instance: ConnectorInstance, op: SyncOp, *, run_id: str, backfill: bool = False,
                  restore: bool = False) -> str:  # fmt: skip
    """Apply one connector op through the retrieval domain functions; returns the counter it bumps.

    Upserts are de-duplicated by (external id, version, content) inside ``do_enqueue_document``;
    deletes and ACL updates carry the run id in their event id, so a later run can repeat an
    earlier decision (delete again after a restore, revert an ACL) while a resumed run that
    re-applies the same op does not queue it twice.
    """
    source = instance.source
    if isinstance(op, UpsertDocument):
        event_id = f"restore:{run_id}:{_short(op.doc.external_id)}" if restore else None
        do_enqueue_document(source, op.doc, priority=PRIORITY_BACKFILL if backfill else PRIORITY_DEFAULT,
                            event_id=event_id, restore=restore)  # fmt: skip
        return "docs_upserted"
    if isinstance(op, DeleteDocument):
        do_enqueue_delete(source, op.external_id, source_version=op.source_version,
                          event_id=f"del:{run_id}:{_short(op.external_id)}:{op.source_version}")  # fmt: skip
        return "docs_deleted"
    if isinstance(op, UpdateAcl):
        clauses = normalise_acl(op.acl)
        do_enqueue_acl_update(source, op.external_id, clauses, source_version=op.source_version,
                              event_id=f"acl:{run_id}:{_short(op.external_id + repr(clauses))}")  # fmt: skip
        return "acl_updates"
    if isinstance(op, SetGroupMembers):
        do_set_group_members(op.group_principal, op.member_principals, display_name=op.display_name,
                             source_kind=instance.kind)  # fmt: skip
        return "groups_synced"
    if isinstance(op, IdentitySeen):
        do_record_identity(op.principal, email=op.email, email_verified=op.email_verified,
                           display_name=op.display_name, is_guest=op.is_guest, is_bot=op.is_bot,
                           deactivated=op.deactivated)  # fmt: skip
        return "identities_seen"
    raise TypeError(f"unknown sync op {type(op).__name__}")

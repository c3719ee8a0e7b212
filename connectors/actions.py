"""Domain functions that change connector state (do_<verb>_<noun>).

All of them expect an active tenant_context.  Applying a sync op goes through
``retrieval.actions`` (the ingest outbox), never straight to the retrieval tables.
"""

from __future__ import annotations

import hashlib
import secrets
import uuid
from typing import Any
from urllib.parse import urlsplit

from django.db import transaction
from django.utils import timezone

from connectors.base import (
    DeleteDocument,
    IdentitySeen,
    SetGroupMembers,
    SyncOp,
    UpdateAcl,
    UpsertDocument,
)
from connectors.dispatch import enqueue_sync
from connectors.models import ConnectorInstance, InboundEvent, SyncState
from connectors.runtime import known_kinds
from connectors.sharepoint.subscriptions import do_ensure_subscriptions
from core.crypto import decrypt_json, decrypt_text, encrypt_json, encrypt_text
from core.errors import ApiError
from core.http import BlockedDestination, origin_of
from retrieval.actions import (
    PRIORITY_BACKFILL,
    PRIORITY_DEFAULT,
    acl_update_targets_bulk,
    do_create_source,
    do_enqueue_acl_update,
    do_enqueue_delete,
    do_enqueue_document,
    do_record_identity,
    do_set_group_members,
)
from retrieval.contracts import normalise_acl
from retrieval.models import Source
from tenants.audit import Actor, do_record_audit_event
from tenants.context import require_tenant_id

AUTHORITY_TIERS = {"confluence": 1, "sharepoint": 0, "slack": 3}
ACTIVE = (SyncState.Status.QUEUED, SyncState.Status.RUNNING, SyncState.Status.THROTTLED)


def new_webhook_secret() -> str:
    return secrets.token_urlsafe(32)


REQUIRED_CONFIG = {"confluence": ("site_url",), "sharepoint": ("tenant_id", "client_id", "site_ids"), "slack": ()}
CREDENTIAL_KEYS = {
    "confluence": ("email", "api_token"),
    "sharepoint": ("client_secret", "client_certificate"),
    "slack": ("token", "signing_secret", "previous_signing_secret"),
}
# Settings the factories read as lists of ids (site ids, space keys).
LIST_KEYS = ("site_ids", "space_keys")
URL_KEYS = ("site_url", "graph_base_url", "authority_host", "base_url", "sharepoint_base_url")
OPERATOR_KEYS = ("allow_private_network", "tls_ca_file", "private_network_origins")


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_nul(v) for v in value)
    return False


def validate_connector_config(kind: str, config: Any, *, current: dict[str, Any] | None = None,
                              operator: bool = False) -> dict[str, Any]:  # fmt: skip
    """The one validation of a connector's settings, whichever surface (API, console) sent them.

    Raises ``ApiError("invalid_config")``. A URL must be https without credentials, except a value
    that is unchanged from ``current`` (an operator-approved demo URL survives a rename) or one set by
    the operator (``operator=True``, never reachable from a tenant admin's request).
    """

    if kind not in known_kinds():
        raise ApiError("unknown_kind", f"kind must be one of {', '.join(known_kinds())}")
    if not isinstance(config, dict):
        raise ApiError("invalid_config", "config must be a JSON object")
    # Postgres jsonb cannot store \u0000 (the save failed with a 500 before this check).
    if _has_nul(config):
        raise ApiError("invalid_config", "config must not contain NUL characters")
    for key in OPERATOR_KEYS:
        if key in config:
            raise ApiError("invalid_config", f"{key} is an operator setting, not a connector config key")
    # Every problem per key goes into error.detail.fields, so a form can put each message under its
    # field; the message stays the first problem's (the API's wording since the first release).
    fields: dict[str, str] = {}
    missing = [k for k in REQUIRED_CONFIG.get(kind, ()) if not config.get(k)]
    for key in missing:
        fields[key] = "This setting is required."
    for key in LIST_KEYS:
        value = config.get(key)
        if value is not None and not (isinstance(value, list) and all(isinstance(v, str) and v for v in value)):
            # A string here became a tuple of characters in the factory (one "site" per letter).
            fields[key] = f"{key} must be a list of non-empty strings"
    bad_url = ""
    for key in URL_KEYS:
        if key not in config or operator or (current is not None and current.get(key) == config[key]):
            continue
        try:
            parts = urlsplit(str(config[key]))
            ok = parts.scheme == "https" and bool(parts.hostname) and not parts.username and not parts.password
        except ValueError:
            ok = False
        if not ok and key not in fields:
            fields[key] = f"{key} must be an https URL without credentials"
            bad_url = bad_url or fields[key]
    if fields:
        first = f"missing config keys: {', '.join(missing)}" if missing else bad_url or next(iter(fields.values()))
        raise ApiError("invalid_config", first, detail={"fields": fields})
    return dict(config)


def validate_connector_credentials(kind: str, credentials: Any) -> dict[str, Any]:
    if not isinstance(credentials, dict):
        raise ApiError("invalid_credentials", "credentials must be a JSON object")
    unknown = sorted(set(credentials) - set(CREDENTIAL_KEYS.get(kind, ())))
    if unknown:
        raise ApiError("invalid_credentials", f"unknown credential keys: {', '.join(unknown)}")
    if _has_nul(credentials) or not all(isinstance(v, str) or v is None for v in credentials.values()):
        raise ApiError("invalid_credentials", "credential values must be strings without NUL characters")
    return dict(credentials)


def _valid_name(name: str) -> str:
    name = (name or "").strip()
    if not name:
        raise ApiError("invalid_request", "name is required")
    if "\x00" in name:
        raise ApiError("invalid_request", "name must not contain NUL characters")
    return name[:200]


def url_origins(config: dict[str, Any]) -> list[list[Any]]:
    """The origins of the instance's URL settings, as stored in ``private_network_origins``."""
    out: list[list[Any]] = []
    for key in URL_KEYS:
        if config.get(key):
            try:
                scheme, host, port = origin_of(str(config[key]))
            except BlockedDestination:
                continue
            if [scheme, host, port] not in out:
                out.append([scheme, host, port])
    return out


def do_create_connector_instance(
    kind: str,
    name: str,
    *,
    config: dict[str, Any],
    credentials: dict[str, Any],
    actor: Actor,
    allow_private_network: bool = False,
    tls_ca_file: str = "",
) -> ConnectorInstance:
    """A new instance with its ``retrieval.Source`` (1:1) and a fresh per-instance webhook secret.

    ``allow_private_network`` / ``tls_ca_file`` are the operator's (demo loader, management code);
    the approval covers exactly the origins of the URLs given now.
    """
    name = _valid_name(name)
    config = validate_connector_config(kind, config, operator=allow_private_network)
    credentials = validate_connector_credentials(kind, credentials)
    with transaction.atomic():
        source = do_create_source(kind, name, config={}, authority_tier=AUTHORITY_TIERS.get(kind, 2))
        existing = ConnectorInstance.objects.filter(source=source).first()
        if existing is not None:
            return existing
        instance = ConnectorInstance.objects.create(
            source=source, kind=kind, config=dict(config), credentials_encrypted=encrypt_json(dict(credentials)),
            webhook_secret_encrypted=encrypt_text(new_webhook_secret()),
            allow_private_network=allow_private_network, tls_ca_file=tls_ca_file,
            private_network_origins=url_origins(config) if allow_private_network else [],
        )  # fmt: skip
        for mode in SyncState.Mode.values:
            SyncState.objects.create(instance=instance, mode=mode)
        do_record_audit_event(actor=actor, action="connector.created", target_type="connector",
                              target_id=instance.pk,
                              details={"kind": kind, "name": name, "config_keys": sorted(config),
                                       "credential_keys": sorted(credentials),
                                       "allow_private_network": allow_private_network})  # fmt: skip
        if kind == "sharepoint":
            # Graph change notifications from the start (queued on commit), not only at the hourly beat.
            do_ensure_subscriptions(instance)
    return instance


def do_update_connector_instance(
    instance: ConnectorInstance,
    *,
    actor: Actor,
    name: str | None = None,
    config: dict[str, Any] | None = None,
    credentials: dict[str, Any] | None = None,
    approve_private_network: bool = False,
) -> ConnectorInstance:
    """Credentials are merged key by key (write-only: the caller never saw the old values).

    A change of any URL's scheme, host or port withdraws the operator's private-network trust,
    unless the operator itself is approving the new URLs (``approve_private_network``).
    """
    name = _valid_name(name) if name is not None else None
    if config is not None:
        config = validate_connector_config(instance.kind, config, current=instance.config or {},
                                           operator=approve_private_network)  # fmt: skip
    credentials = validate_connector_credentials(instance.kind, credentials or {})
    trust_withdrawn = False
    with transaction.atomic():
        if name is not None and name != instance.source.name:
            Source.objects.filter(pk=instance.source_id).update(name=name)
        if config is not None:
            # Keys the runtime maintains (Graph subscription bookkeeping) survive an admin's edit;
            # dropping them would orphan live subscriptions.
            runtime_keys = ("subscriptions", "subscription_expirations", "subscription_secret",
                            "subscription_pending")  # fmt: skip
            kept = {k: instance.config[k] for k in runtime_keys if k in (instance.config or {})}
            new_origins = url_origins(config)
            if approve_private_network:
                instance.allow_private_network = True
                instance.private_network_origins = new_origins
            elif instance.allow_private_network and any(
                o not in (instance.private_network_origins or []) for o in new_origins
            ):
                instance.allow_private_network = False
                instance.private_network_origins = []
                trust_withdrawn = True
            instance.config = {**dict(config), **kept}
        if credentials:
            merged = decrypt_json(instance.credentials_encrypted)
            merged.update({k: v for k, v in credentials.items() if v is not None})
            instance.credentials_encrypted = encrypt_json(merged)
        instance.updated_at = timezone.now()
        instance.save()
        do_record_audit_event(actor=actor, action="connector.updated", target_type="connector",
                              target_id=instance.pk,
                              details={"name_changed": name is not None, "config_keys": sorted(config or {}),
                                       "credential_keys": sorted(credentials),
                                       "private_network_trust_withdrawn": trust_withdrawn,
                                       "private_network_approved": approve_private_network})  # fmt: skip
    return instance


def do_rotate_webhook_secret(instance: ConnectorInstance, *, actor: Actor) -> None:
    with transaction.atomic():
        instance.webhook_secret_encrypted = encrypt_text(new_webhook_secret())
        instance.updated_at = timezone.now()
        instance.save(update_fields=["webhook_secret_encrypted", "updated_at"])
        do_record_audit_event(actor=actor, action="connector.webhook_secret_rotated", target_type="connector",
                              target_id=instance.pk)  # fmt: skip


def do_read_webhook_secret(instance: ConnectorInstance, *, actor: Actor) -> str:
    """The clear webhook secret, for an admin to paste into the source; reading it is audited."""
    secret = decrypt_text(instance.webhook_secret_encrypted)
    do_record_audit_event(actor=actor, action="connector.webhook_secret_viewed", target_type="connector",
                          target_id=instance.pk)  # fmt: skip
    return secret


def do_check_connector(instance: ConnectorInstance, *, actor: Actor) -> list[Any]:
    """The step-by-step check (``connectors.checks``: auth, listing, permissions, webhook), audited."""
    from connectors.checks import run_checks

    steps = run_checks(instance)
    do_record_audit_event(actor=actor, action="connector.tested", target_type="connector", target_id=instance.pk,
                          details={"ok": all(s.ok for s in steps),
                                   "steps": {s.step: s.status for s in steps}})  # fmt: skip
    return steps


def do_set_paused(instance: ConnectorInstance, paused: bool, *, actor: Actor) -> ConnectorInstance:
    do_record_audit_event(actor=actor, action=f"connector.{'paused' if paused else 'resumed'}",
                          target_type="connector", target_id=instance.pk)  # fmt: skip
    instance.paused = paused
    instance.updated_at = timezone.now()
    instance.save(update_fields=["paused", "updated_at"])
    Source.objects.filter(pk=instance.source_id).update(paused=paused)
    if not paused:
        # Runs that were waiting while paused continue from their checkpoints.
        for state in SyncState.objects.filter(instance=instance, status__in=ACTIVE):
            _enqueue_run(state)
        if instance.kind == "sharepoint":
            # Subscriptions may have lapsed while paused (the beat skips paused instances).
            do_ensure_subscriptions(instance)
    return instance


def do_request_sync(instance: ConnectorInstance, mode: str, *, actor: Actor | None = None) -> SyncState:
    """Queue a run of ``mode`` unless one is already queued or running (then that one is returned).

    A full sync after a finished one starts from scratch; after a failed or interrupted one it
    resumes from the checkpoint.  Incremental and permission syncs always continue from theirs.
    An admin's request (``actor``) is audited; the scheduler's and webhooks' own requests
    (``actor=None``) are not, or the log would fill with one row per minute per source.
    """
    if actor is not None:
        with transaction.atomic():
            state = do_request_sync(instance, mode)
            do_record_audit_event(actor=actor, action="connector.sync_requested", target_type="connector",
                                  target_id=instance.pk, details={"mode": mode, "run_id": state.run_id})  # fmt: skip
            return state
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


def apply_acl_updates(instance: ConnectorInstance, ops: list[UpdateAcl], *, run_id: str) -> int:
    """Queue ACL events for ``ops`` only where the stored ACL differs (or events of the item pend).

    A permission walk of an unchanged site queues nothing, so a revocation is not queued behind
    thousands of no-ops; ``inherited_by_container`` extends each op to the documents indexed under
    the item (``retrieval.actions.acl_update_targets_bulk``, a few queries per call).  Returns how
    many of the ops queued anything.
    """
    source = instance.source
    acls = [normalise_acl(op.acl) for op in ops]
    targets = acl_update_targets_bulk(
        source, [(op.external_id, clauses, op.inherited_by_container) for op, clauses in zip(ops, acls, strict=True)]
    )
    changed = 0
    for op, clauses, items in zip(ops, acls, targets, strict=True):
        for external_id in items:
            version = op.source_version if external_id == op.external_id else None
            do_enqueue_acl_update(source, external_id, clauses, source_version=version,
                                  event_id=f"acl:{run_id}:{_short(external_id + repr(clauses))}")  # fmt: skip
        changed += bool(items)
    return changed


def apply_sync_op(instance: ConnectorInstance, op: SyncOp, *, run_id: str, backfill: bool = False,
                  restore: bool = False) -> str | None:  # fmt: skip
    """Apply one connector op through the retrieval domain functions; returns the counter it bumps
    (``None``: an ACL update that changed nothing and queued nothing).

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
        return "acl_updates" if apply_acl_updates(instance, [op], run_id=run_id) else None
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

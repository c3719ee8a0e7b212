"""Domain functions that change retrieval state (do_<verb>_<noun>).

Views, connectors, commands and tasks call these; nothing else writes the
retrieval tables.  All of them expect an active tenant_context.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import replace
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models.fields.json import KeyTextTransform
from django.utils import timezone

from retrieval.contracts import RESTORE_MARKER, Acl, SourceDocument, document_payload, normalise_acl, without_nul
from retrieval.models import Document, IngestEvent, Source
from retrieval.permissions import acl_digest, bump_acl_version
from retrieval.tasks import enqueue_ingest_event
from tenants.audit import Actor, do_record_audit_event
from tenants.context import require_tenant_id
from tenants.models import ExternalIdentity, Group, GroupMember, Membership, User

PRIORITY_PERMISSIONS = 0
PRIORITY_DEFAULT = 5
PRIORITY_BACKFILL = 8


def do_create_source(kind: str, name: str, *, config: dict[str, Any] | None = None, authority_tier: int = 2) -> Source:
    source, _ = Source.objects.get_or_create(
        name=name, defaults={"kind": kind, "config": config or {}, "authority_tier": authority_tier}
    )
    return source


def _default_event_id(kind: str, external_id: str, version: int | None, extra: str = "") -> str:
    raw = f"{kind}\0{external_id}\0{version}\0{extra}"
    return "auto:" + hashlib.sha256(raw.encode()).hexdigest()[:40]


def _record_event(source: Source, *, event_id: str, kind: str, external_id: str, payload: dict[str, Any],
                  content: bytes | None, source_version: int | None, priority: int) -> IngestEvent | None:  # fmt: skip
    """Store the event and queue it after commit; a repeated event id is a no-op (None)."""
    try:
        with transaction.atomic():
            event = IngestEvent.objects.create(
                source=source, event_id=event_id, kind=kind, external_id=external_id, payload=payload,
                content=content, source_version=source_version, priority=priority,
            )  # fmt: skip
    except IntegrityError:
        return None
    tenant_id = require_tenant_id()
    transaction.on_commit(lambda: enqueue_ingest_event(tenant_id, event.pk, priority))
    return event


def do_enqueue_document(source: Source, doc: SourceDocument, *, event_id: str | None = None,
                        priority: int = PRIORITY_DEFAULT, restore: bool = False) -> IngestEvent | None:  # fmt: skip
    normalise_acl(doc.acl)  # reject malformed ACLs before anything is stored
    if restore:
        doc = replace(doc, metadata={**doc.metadata, RESTORE_MARKER: "1"})
    eid = event_id or _default_event_id(
        "restore" if restore else "upsert",
        doc.external_id,
        doc.source_version,
        hashlib.sha256(doc.content).hexdigest() + (timezone.now().isoformat() if restore else ""),
    )
    return _record_event(
        source, event_id=eid, kind="upsert", external_id=without_nul(doc.external_id), payload=document_payload(doc),
        content=doc.content, source_version=doc.source_version, priority=priority,
    )  # fmt: skip


def do_enqueue_delete(source: Source, external_id: str, *, source_version: int | None = None,
                      event_id: str | None = None) -> IngestEvent | None:  # fmt: skip
    eid = event_id or _default_event_id("delete", external_id, source_version)
    return _record_event(
        source, event_id=eid, kind="delete", external_id=external_id, payload={}, content=None,
        source_version=source_version, priority=PRIORITY_DEFAULT,
    )  # fmt: skip


def do_enqueue_acl_update(source: Source, external_id: str, acl: Acl, *, source_version: int | None = None,
                          event_id: str | None = None) -> IngestEvent | None:  # fmt: skip
    clauses = [list(c) for c in normalise_acl(acl)]
    eid = event_id or _default_event_id("acl", external_id, source_version, str(clauses))
    return _record_event(
        source, event_id=eid, kind="acl", external_id=external_id, payload={"acl": clauses}, content=None,
        source_version=source_version, priority=PRIORITY_PERMISSIONS,
    )  # fmt: skip


def acl_update_targets_bulk(source: Source, updates: list[tuple[str, Acl, str]]) -> list[list[str]]:
    """Per ``(external_id, acl, inherited_by_container)``: the items its ACL update must still be queued for.

    An item needs the update when its indexed document (not deleted) has another permission set,
    or when any event of it is still pending: a queued upsert or ACL event carries an older ACL that
    would land after this one was skipped (``apply_overtaken`` orders them, and the newer
    observation then wins).  An item neither indexed nor pending needs nothing.
    ``inherited_by_container``: also the documents of ``source`` whose ``metadata.container_id`` is
    that value (they carry the container's ACL, e.g. Confluence attachments; index
    ``document_container_id``), and, when the container's own ACL changed, those whose first upsert
    is still pending (not yet a document).  A handful of queries for the whole list, whatever its
    length (a permission walk hands over its ops in batches).  Read-only: it queues nothing itself.
    """
    if not updates:
        return []
    digests = [acl_digest(normalise_acl(acl)) for _, acl, _ in updates]
    ids = {eid for eid, _, _ in updates}
    containers = {c for _, _, c in updates if c}
    stored = dict(
        Document.objects.filter(source=source, deleted=False, external_id__in=ids).values_list(
            "external_id", "acl_set__digest"
        )
    )
    inheritors: dict[str, list[tuple[str, str | None]]] = {}
    if containers:
        rows = (
            Document.objects.filter(source=source, deleted=False)
            .annotate(container_key=KeyTextTransform("container_id", "metadata"))
            .filter(container_key__in=containers)
            .values_list("container_key", "external_id", "acl_set__digest")
        )
        for container, eid, digest in rows:
            inheritors.setdefault(str(container), []).append((eid, digest))
    pending_rows = IngestEvent.objects.filter(source=source, status=IngestEvent.Status.PENDING)
    wanted = ids | {eid for rows_ in inheritors.values() for eid, _ in rows_}
    pending = set(pending_rows.filter(external_id__in=wanted).values_list("external_id", flat=True))

    def stale(eid: str, stored_digest: str | None, exists: bool, digest: str) -> bool:
        return eid in pending or (exists and stored_digest != digest)

    out: list[list[str]] = []
    changed_containers: dict[str, set[str]] = {}
    for (eid, _, container), digest in zip(updates, digests, strict=True):
        own = stale(eid, stored.get(eid), eid in stored, digest)
        targets = [eid] if own else []
        if container:
            kids = [(k, d) for k, d in inheritors.get(container, []) if k != eid]
            targets += [k for k, d in kids if stale(k, d, True, digest)]
            if own:
                changed_containers[container] = {eid, *(k for k, _ in kids)}
        out.append(targets)
    if changed_containers:
        # Attachments whose first upsert still pends carry the container's old ACL: queue them too
        # (apply_overtaken applies the upsert first).
        waiting = (
            pending_rows.filter(kind="upsert", payload__metadata__container_id__in=list(changed_containers))
            .values_list("payload__metadata__container_id", "external_id")
            .distinct()
        )
        extra: dict[str, set[str]] = {}
        for container, eid in waiting:
            if eid not in changed_containers.get(str(container), set()):
                extra.setdefault(str(container), set()).add(eid)
        for (_, _, container), targets in zip(updates, out, strict=True):
            if container in extra and container in changed_containers:
                targets += sorted(extra.pop(container))
    return out


def do_set_group_members(group_principal: str, member_principals: list[str] | tuple[str, ...], *,
                         display_name: str = "", source_kind: str = "") -> bool:  # fmt: skip
    """Replace a group's members; returns True when anything changed."""
    with transaction.atomic():
        group, created = Group.objects.get_or_create(
            principal=group_principal, defaults={"display_name": display_name, "source_kind": source_kind}
        )
        current = set(GroupMember.objects.filter(group=group).values_list("member_principal", flat=True))
        wanted = set(member_principals)
        if current == wanted and not created:
            return False
        GroupMember.objects.filter(group=group, member_principal__in=current - wanted).delete()
        GroupMember.objects.bulk_create(
            [GroupMember(tenant_id=group.tenant_id, group=group, member_principal=p) for p in sorted(wanted - current)],
            ignore_conflicts=True,
        )
        group.updated_at = timezone.now()
        group.save(update_fields=["updated_at"])
        bump_acl_version()
        return True


def do_record_identity(principal: str, *, email: str | None, email_verified: bool, display_name: str = "",
                       is_guest: bool = False, is_bot: bool = False, deactivated: bool = False) -> ExternalIdentity:  # fmt: skip
    """Store an external account; map it to a member only on a verified e-mail match on both sides."""
    tenant_id = require_tenant_id()
    with transaction.atomic():
        identity, _ = ExternalIdentity.objects.get_or_create(principal=principal)
        before = (identity.user_id, identity.deactivated)
        identity.email = (email or "").strip().lower()
        identity.email_verified = bool(email and email_verified)
        identity.display_name = display_name
        identity.is_guest, identity.is_bot, identity.deactivated = is_guest, is_bot, deactivated
        if identity.mapped_by != ExternalIdentity.MappedBy.ADMIN:
            user = None
            if identity.email_verified and not is_bot:
                user = User.objects.filter(
                    email__iexact=identity.email, email_verified=True, memberships__tenant_id=tenant_id
                ).first()
            identity.user = user
            identity.mapped_by = ExternalIdentity.MappedBy.EMAIL if user else ExternalIdentity.MappedBy.NONE
        identity.updated_at = timezone.now()
        identity.save()
        if (identity.user_id, identity.deactivated) != before:
            bump_acl_version()
        return identity


def do_map_identity(identity: ExternalIdentity, user: User | None, *, actor: Actor) -> ExternalIdentity:
    """An admin's explicit mapping (or unmapping, with user=None), audited with its actor."""
    tenant_id = require_tenant_id()
    if user is not None and not Membership.objects.filter(tenant_id=tenant_id, user=user).exists():
        raise ValueError("the user is not a member of this tenant")
    with transaction.atomic():
        identity.user = user
        identity.mapped_by = ExternalIdentity.MappedBy.ADMIN if user else ExternalIdentity.MappedBy.NONE
        identity.save(update_fields=["user", "mapped_by"])
        bump_acl_version()
        do_record_audit_event(actor=actor, action="identity.mapped" if user else "identity.unmapped",
                              target_type="external_identity", target_id=identity.principal,
                              details={"user_id": user.pk if user else None})  # fmt: skip
    return identity


def encode_content(content: bytes) -> str:
    return base64.b64encode(content).decode()

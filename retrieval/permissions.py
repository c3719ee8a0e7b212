"""Who may read what: principals of a user, interned CNF sets, readable set ids.

A user's principals in a tenant are: ``public:tenant`` (any member),
``user:<email>`` (verified e-mail only), the principals of external
identities mapped to them (not deactivated), and every group principal whose
member list contains one of those.  Group membership is resolved here, at
query time, so a membership change needs no reindex — only a bump of the
tenant's ``acl_version``, which is part of every cache key.

A set is readable iff it has at least one clause and every clause shares a
principal with the user.  No clauses, an empty clause, unknown principals or
a user without principals all read nothing (fail closed).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import cast

from django.core.cache import cache
from django.db import connection
from django.db.models import F
from django.utils import timezone

from retrieval.contracts import Acl, normalise_acl
from retrieval.models import AclSet, Document, IndexState
from tenants.context import require_tenant_id
from tenants.feedback import cited_document_ids
from tenants.models import ExternalIdentity, Feedback, GroupMember, Membership, User

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PermissionContext:
    tenant_id: int
    user_id: int
    principals: frozenset[str]
    readable_acl_set_ids: tuple[int, ...]
    fingerprint: str  # sha256 over the readable set ids: the cache-key permission component
    acl_version: int

    @property
    def empty(self) -> bool:
        return not self.readable_acl_set_ids


def acl_digest(acl: Acl) -> str:
    return hashlib.sha256(json.dumps(acl, separators=(",", ":")).encode()).hexdigest()


def get_index_state(*, for_update: bool = False) -> IndexState:
    tenant_id = require_tenant_id()
    qs = IndexState.objects.all()
    if for_update:
        qs = qs.select_for_update()
    state = qs.first()
    if state is None:
        IndexState.objects.bulk_create([IndexState(tenant_id=tenant_id)], ignore_conflicts=True)
        state = qs.get()
    return state


def bump_acl_version() -> None:
    """Any change to who-can-read-what invalidates permission caches of the tenant."""
    get_index_state()
    IndexState.objects.update(acl_version=F("acl_version") + 1, permissions_as_of=timezone.now())


def intern_acl(clauses: object) -> AclSet:
    """The AclSet row for this CNF (created once per distinct set)."""
    acl = normalise_acl(clauses)
    digest = acl_digest(acl)
    existing = AclSet.objects.filter(digest=digest).first()
    if existing is not None:
        return existing
    AclSet.objects.bulk_create(
        [AclSet(tenant_id=require_tenant_id(), digest=digest, clauses=[list(c) for c in acl])],
        ignore_conflicts=True,
    )
    bump_acl_version()  # a new set may be readable by users whose cached id lists predate it
    return AclSet.objects.get(digest=digest)


def user_principals(user: User) -> frozenset[str]:
    tenant_id = require_tenant_id()
    membership = Membership.objects.filter(tenant_id=tenant_id, user=user, active=True).first()
    if membership is None:
        return frozenset()
    # scim:user:<membership> is how SCIM-provisioned groups name their members (identity/scim.py).
    own: set[str] = {"public:tenant", f"scim:user:{membership.pk}"}
    if user.email and user.email_verified:
        own.add(f"user:{user.email.strip().lower()}")
    own.update(ExternalIdentity.objects.filter(user=user, deactivated=False).values_list("principal", flat=True))
    groups = GroupMember.objects.filter(member_principal__in=list(own)).values_list("group__principal", flat=True)
    return frozenset(own | set(groups))


def readable_acl_set_ids(principals: frozenset[str]) -> tuple[int, ...]:
    if not principals:
        return ()
    tenant_id = require_tenant_id()
    with connection.cursor() as cur:
        cur.execute(
            """
            SELECT s.id FROM retrieval_aclset s
            WHERE s.tenant_id = %s
              AND jsonb_array_length(s.clauses) > 0
              AND NOT EXISTS (
                  SELECT 1 FROM jsonb_array_elements(s.clauses) AS clause
                  WHERE NOT (clause ?| %s::text[])
              )
            ORDER BY s.id
            """,
            [tenant_id, sorted(principals)],
        )
        return tuple(row[0] for row in cur.fetchall())


def fingerprint_of(ids: tuple[int, ...]) -> str:
    return hashlib.sha256(",".join(map(str, ids)).encode()).hexdigest()[:32]


def _cache_get(key: str) -> object:
    # A cache outage must not fail closed into an error page nor open into stale
    # data: fall back to computing from Postgres (the source of truth).
    try:
        return cache.get(key)
    except Exception:
        log.warning("permission cache unavailable; computing from the database", exc_info=True)
        return None


def _cache_set(key: str, value: object) -> None:
    try:
        cache.set(key, value, timeout=3600)
    except Exception:
        log.warning("permission cache unavailable; not caching", exc_info=True)


def permission_context(user: User) -> PermissionContext:
    """The requester's readable sets, cached per (tenant, user, acl_version)."""
    tenant_id = require_tenant_id()
    version = get_index_state().acl_version
    key = f"perm:{tenant_id}:{user.pk}:{version}"
    cached = _cache_get(key)
    if cached is not None:
        # cast: only _cache_set below writes this key, always as (sorted principals, acl set ids)
        principals, ids = cast(tuple[Iterable[str], Iterable[int]], cached)
        return PermissionContext(tenant_id, user.pk, frozenset(principals), tuple(ids), fingerprint_of(tuple(ids)),
                                 version)  # fmt: skip
    principals = user_principals(user)
    ids = readable_acl_set_ids(principals)
    _cache_set(key, (sorted(principals), list(ids)))
    return PermissionContext(tenant_id, user.pk, principals, ids, fingerprint_of(ids), version)


def explain_access(principals: frozenset[str], clauses: list[list[str]]) -> list[dict[str, object]]:
    """Per clause: satisfied or not, and by which principal (for "view as user X")."""
    out: list[dict[str, object]] = []
    for clause in clauses:
        hit = sorted(set(clause) & principals)
        out.append({"clause": clause, "satisfied": bool(hit), "matched": hit})
    if not clauses:
        out.append({"clause": [], "satisfied": False, "matched": []})
    return out


def unreadable_feedback_ids(user: User, rows: Iterable[object]) -> set[int]:
    """Feedback rows whose text comes from a document ``user`` may not read (call in tenant_context).

    The feedback queue shows an admin claim text copied from cited passages; an admin is a reader
    like any other, so a flag on a document outside the admin's own ACLs shows ids, not text. A
    cited document that no longer exists counts as unreadable (fail closed).
    """

    perm = permission_context(user)
    flagged = [(f.pk, cited_document_ids(f)) for f in rows if isinstance(f, Feedback)]
    wanted = set().union(*(ids for _, ids in flagged)) if flagged else set()
    readable = set(
        Document.objects.filter(pk__in=wanted, acl_set_id__in=perm.readable_acl_set_ids).values_list("pk", flat=True)
    ) if wanted and not perm.empty else set()  # fmt: skip
    return {pk for pk, ids in flagged if not ids <= readable}

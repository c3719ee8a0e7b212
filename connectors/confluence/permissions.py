"""Confluence view permissions as CNF (see ``retrieval.contracts``).

A user can view a page iff
  1. they hold the space's *read/space* permission (directly, via a group, or
     the space allows anonymous read), AND
  2. for EVERY page on the path from the space root down to the page itself
     that has a read restriction, they are listed in it (directly or via a group).

Restrictions intersect down the tree; "the nearest restriction wins" is wrong:
a child that lists bob under a parent that lists only alice is still hidden
from bob.  So the ACL is one clause for the space grant plus one clause per
restricted page on the ancestor path; unrestricted pages add no clause.
Blog posts have no ancestors; attachments take their container's ACL.

Fail closed everywhere: a space with no read grant gives an empty clause
(nobody), and a restriction entry we cannot map to a principal (a group with no
id, a user with no accountId) simply grants nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from retrieval.contracts import Acl, normalise_acl

log = logging.getLogger(__name__)

PUBLIC = "public:tenant"

Clause = tuple[str, ...]


def user_principal(account_id: str) -> str:
    return f"confluence:user:{account_id}"


def group_principal(group_id: str) -> str:
    return f"confluence:group:{group_id}"


def grants_space_read(assignment: Mapping[str, Any]) -> bool:
    """Only ``{key: read, targetType: space}`` lets someone view the space; create/delete/export/
    administer assignments say nothing about viewing on their own."""
    op = assignment.get("operation") or {}
    return str(op.get("key", "")).lower() == "read" and str(op.get("targetType", "")).lower() == "space"


def space_clause(assignments: Iterable[Mapping[str, Any]]) -> Clause:
    """The principals holding read/space, from v2 ``/spaces/{id}/permissions`` assignments.

    Principal types: ``user`` (accountId) and ``group`` (group id).  An ``anonymous``
    principal (anonymous access enabled for the space) maps to ``public:tenant``.
    ``role`` principals (the space-roles beta) cannot be expanded through this API and
    grant nothing here; they are logged so an admin can see why someone is missing.
    """
    out: set[str] = set()
    for assignment in assignments:
        if not grants_space_read(assignment):
            continue
        principal = assignment.get("principal") or {}
        kind = str(principal.get("type", "")).lower()
        pid = str(principal.get("id") or "")
        if kind == "user" and pid:
            out.add(user_principal(pid))
        elif kind == "group" and pid:
            out.add(group_principal(pid))
        elif kind == "anonymous":
            out.add(PUBLIC)
        else:
            log.warning("confluence: space read grant to unsupported principal type %r ignored", kind)
    return tuple(sorted(out))


def restriction_clause(restriction: Mapping[str, Sequence[Mapping[str, Any]]] | None) -> Clause | None:
    """The principals of one content item's own read restriction; ``None`` if it has none.

    An existing restriction whose entries we cannot map still returns a (possibly
    empty) clause: the page *is* restricted, we just cannot say to whom, so nobody.
    """
    if restriction is None:
        return None
    users = list(restriction.get("user") or ())
    groups = list(restriction.get("group") or ())
    if not users and not groups:
        return None
    out: set[str] = set()
    for user in users:
        account_id = user.get("accountId")
        if account_id:
            out.add(user_principal(str(account_id)))
    for group in groups:
        group_id = group.get("id")
        if group_id:
            out.add(group_principal(str(group_id)))
        else:
            log.warning("confluence: restriction group without an id (%r) grants nothing", group.get("name"))
    return tuple(sorted(out))


def build_acl(space: Clause, path_restrictions: Iterable[Clause | None]) -> Acl:
    """CNF for a content item: the space clause AND every restriction on its ancestor path (itself included).

    ``space`` may be empty (no read grant: nobody can view, the empty clause says so).
    """
    clauses: list[Clause] = [space]
    clauses.extend(clause for clause in path_restrictions if clause is not None)
    return normalise_acl(clauses)

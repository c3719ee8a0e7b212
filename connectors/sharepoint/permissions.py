"""Graph ``permission`` resources -> one CNF clause of Cairn principals.

The effective permissions Graph lists for an item (``/permissions``, inherited
ones included) are alternatives: holding any one grant of read or better lets a
person read the item.  So the ACL is a single clause listing every principal of
every such grant; no grant at all gives the empty clause, which nobody satisfies.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from retrieval.contracts import Acl, normalise_acl

# Roles Graph reports on SharePoint/OneDrive items.  Anything not listed (including a
# role Microsoft adds later) grants nothing here: unknown means "cannot prove read".
READ_ROLES = frozenset({"read", "write", "owner", "sp.owner", "sp.member", "restrictedview"})

_GUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
# SharePoint claims that stand for Entra objects when Graph only gives a siteUser/siteGroup.
_ALL_MEMBERS_CLAIM = re.compile(r"spo-grid-all-users/(" + _GUID + r")$")
_EVERYONE_CLAIM = "c:0(.s|true"
_M365_GROUP_MEMBERS_CLAIM = re.compile(r"federateddirectoryclaimprovider\|(" + _GUID + r")$")
# "<guid>_o" is the same Microsoft 365 group's *owners* (the owners claim SharePoint puts in the
# site's Owners group), never its members.
_M365_GROUP_OWNERS_CLAIM = re.compile(r"federateddirectoryclaimprovider\|(" + _GUID + r")_o$")
# A person: "i:0#.f|membership|<userPrincipalName>".
_USER_CLAIM = re.compile(r"^i:0#\.f\|membership\|(.+)$")
_SECURITY_GROUP_CLAIM = re.compile(r"\|tenant\|(" + _GUID + r")$")


def org_principal(tenant_id: str) -> str:
    return f"entra:org:{tenant_id}"


def owners_principal(group_id: str) -> str:
    return f"entra:groupowners:{group_id.lower()}"


def site_group_principal(site_id: str, group_id: str) -> str:
    return f"sharepoint:sitegroup:{site_id}:{group_id}"


def _grants_read(perm: Mapping[str, Any]) -> bool:
    roles = perm.get("roles") or []
    return any(isinstance(r, str) and r.lower() in READ_ROLES for r in roles)


def _expired(perm: Mapping[str, Any], now: datetime) -> bool:
    raw = perm.get("expirationDateTime")
    if not isinstance(raw, str) or raw.startswith("0001-"):  # DateTime.MinValue: never expires
        return False
    try:
        when = datetime.fromisoformat(raw)
    except ValueError:
        return False
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when <= now


def _identity_principals(identity_set: Any, *, site_id: str, tenant_id: str) -> set[str]:
    """Principals of one sharePointIdentitySet (user / group / siteGroup / siteUser claims)."""
    if not isinstance(identity_set, Mapping):
        return set()
    out: set[str] = set()
    user = identity_set.get("user")
    if isinstance(user, Mapping):
        if user.get("id"):
            out.add(f"entra:user:{user['id']}")
        elif isinstance(user.get("email"), str) and "@" in user["email"]:
            # An invitation not yet redeemed: only the mailbox owner can redeem it.
            out.add(f"user:{user['email'].strip().lower()}")
    group = identity_set.get("group")
    if isinstance(group, Mapping) and group.get("id"):
        out.add(f"entra:group:{group['id']}")
    site_group = identity_set.get("siteGroup")
    if isinstance(site_group, Mapping):
        claimed = _claim_principal(site_group.get("loginName"), tenant_id)
        if claimed:
            out.add(claimed)
        elif site_group.get("id") not in (None, ""):
            out.add(site_group_principal(site_id, str(site_group["id"])))
    site_user = identity_set.get("siteUser")
    if isinstance(site_user, Mapping) and not (isinstance(user, Mapping) and user.get("id")):
        # A siteUser without an Entra user is usually a claim ("Everyone except external
        # users", an M365 group's members); a plain account we cannot resolve is skipped.
        claimed = _claim_principal(site_user.get("loginName"), tenant_id)
        if claimed:
            out.add(claimed)
    return out


def _claim_principal(login_name: Any, tenant_id: str) -> str | None:
    if not isinstance(login_name, str):
        return None
    m = _ALL_MEMBERS_CLAIM.search(login_name)
    if m:
        return org_principal(m.group(1) if m.group(1) else tenant_id)
    if login_name == _EVERYONE_CLAIM:
        # "Everyone" includes guests, but Cairn has no principal for that: granting only the
        # members under-shares (safe) instead of over-sharing.
        return org_principal(tenant_id)
    m = _M365_GROUP_MEMBERS_CLAIM.search(login_name)  # the "_o" owners claim does not match
    if m:
        return f"entra:group:{m.group(1)}"
    m = _M365_GROUP_OWNERS_CLAIM.search(login_name)
    if m:
        return owners_principal(m.group(1))
    m = _SECURITY_GROUP_CLAIM.search(login_name)
    if m:
        return f"entra:group:{m.group(1)}"
    return None


def principals_for_permission(
    perm: Mapping[str, Any], *, site_id: str, tenant_id: str, now: datetime | None = None
) -> set[str]:
    """Who one permission lets read the item (empty when it grants no read access)."""
    if not _grants_read(perm) or _expired(perm, now or datetime.now(UTC)):
        return set()
    identities: list[Any] = []
    if perm.get("grantedToV2"):
        identities.append(perm["grantedToV2"])
    identities.extend(perm.get("grantedToIdentitiesV2") or [])
    named: set[str] = set()
    for identity in identities:
        named |= _identity_principals(identity, site_id=site_id, tenant_id=tenant_id)

    link = perm.get("link")
    if not isinstance(link, Mapping):
        invitation = perm.get("invitation")
        if not named and isinstance(invitation, Mapping) and isinstance(invitation.get("email"), str):
            named.add(f"user:{invitation['email'].strip().lower()}")
        return named
    scope = link.get("scope")
    if scope == "anonymous":
        return {"public:tenant"}
    if scope == "organization":
        # Organization links work for signed-in internal members only, never for guests.
        return {org_principal(tenant_id)}
    if scope == "existingAccess":
        return set()  # grants nothing beyond what people already have
    # "users" (specific people) and links without a scope: exactly the named identities.
    return named


def acl_from_permissions(
    permissions: Iterable[Mapping[str, Any]], *, site_id: str, tenant_id: str, now: datetime | None = None
) -> Acl:
    principals: set[str] = set()
    for perm in permissions:
        principals |= principals_for_permission(perm, site_id=site_id, tenant_id=tenant_id, now=now)
    return normalise_acl([sorted(principals)])


def entra_groups_in(acl: Acl) -> set[str]:
    return {p.removeprefix("entra:group:") for clause in acl for p in clause if p.startswith("entra:group:")}


def owner_groups_in(acl: Acl) -> set[str]:
    return {
        p.removeprefix("entra:groupowners:") for clause in acl for p in clause if p.startswith("entra:groupowners:")
    }


def principal_for_site_group_member(member: Mapping[str, Any], *, tenant_id: str) -> str | None:
    """One entry of ``/_api/web/sitegroups/getbyid(n)/users`` -> what it stands for.

    ``upn:<userPrincipalName>`` for a person (resolved to an Entra user id by the caller), an
    Entra group / group-owners / organization principal for a claim, None for anything we cannot
    prove (a SharePoint-only account, an unknown claim): it grants nothing.
    """
    login = member.get("LoginName")
    if not isinstance(login, str):
        return None
    m = _USER_CLAIM.match(login)
    if m:
        upn = str(member.get("UserPrincipalName") or m.group(1)).strip()
        return f"upn:{upn}" if "@" in upn else None
    return _claim_principal(login, tenant_id)


def site_groups_in(acl: Acl) -> set[str]:
    return {p for clause in acl for p in clause if p.startswith("sharepoint:sitegroup:")}

"""Domain functions for tenants, users and memberships."""

from __future__ import annotations

from datetime import datetime

from django.db import transaction

from tenants.audit import Actor, do_record_audit_event
from tenants.context import tenant_context
from tenants.models import ApiToken, Membership, Tenant, User


def do_create_tenant(slug: str, name: str) -> Tenant:
    tenant, _ = Tenant.objects.get_or_create(slug=slug, defaults={"name": name})
    return tenant


def do_create_user(username: str, email: str, password: str | None, *, email_verified: bool = False) -> User:
    with transaction.atomic():
        user, created = User.objects.get_or_create(
            username=username, defaults={"email": email.lower(), "email_verified": email_verified}
        )
        if created:
            if password:
                user.set_password(password)
            else:
                user.set_unusable_password()
            user.save()
        return user


def do_add_member(tenant: Tenant, user: User, *, role: str = Membership.Role.MEMBER,
                  actor: Actor | None = None) -> Membership:  # fmt: skip
    """Add (or re-role) a member; an admin's change (``actor``) is audited in that tenant."""
    with transaction.atomic():
        membership, created = Membership.objects.get_or_create(tenant=tenant, user=user, defaults={"role": role})
        changed = created or membership.role != role
        if not created and membership.role != role:
            membership.role = role
            membership.save(update_fields=["role"])
        if actor is not None and changed:
            with tenant_context(tenant.pk):
                do_record_audit_event(actor=actor, action="member.role_changed", target_type="user",
                                      target_id=user.pk, details={"role": role})  # fmt: skip
    return membership


def do_create_api_token(membership: Membership, name: str = "api", *, scope: str = ApiToken.Scope.ADMIN,
                        expires_at: datetime | None = None) -> str:  # fmt: skip
    """Create a token and return the clear key (shown once, stored hashed).

    The unaudited set-up path (fixtures, benchmarks, shell); people make tokens through
    ``tenants.tokens.do_create_personal_token``, which validates and audits.
    """
    prefix, key = ApiToken.new_key()
    ApiToken.objects.create(membership=membership, name=name, prefix=prefix, key_hash=ApiToken.hash_key(key),
                            scope=scope, expires_at=expires_at)  # fmt: skip
    return key

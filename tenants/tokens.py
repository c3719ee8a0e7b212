"""Personal API tokens: created, scoped, expired and revoked by their owner; seen and revoked by admins.

Every state change here writes its audit row in the same transaction (``tenants.audit``), whichever
surface (portal, console) called it.  The clear key exists only in the return value of the create
action: the table holds its sha256.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from tenants.actions import do_create_api_token
from tenants.audit import do_record_audit_event
from tenants.context import require_tenant_id
from tenants.models import ApiToken, Membership, User

# Offered lifetimes in days; a personal token always expires (a leaked token must die on its own).
EXPIRY_CHOICES_DAYS = (7, 30, 90, 365)
MAX_NAME_LENGTH = 100


class TokenError(ValueError):
    """A refused token request, with a machine-readable code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class CreatedToken:
    token: ApiToken
    key: str  # shown once


def _membership_in_context(membership: Membership) -> None:
    # The audit row goes to the tenant in context; it must be the token's tenant.
    if membership.tenant_id != require_tenant_id():
        raise TokenError("wrong_tenant", "The membership belongs to another tenant.")


def do_create_personal_token(actor: Membership, *, name: str, scope: str, expires_in_days: int) -> CreatedToken:
    """``actor`` creates a token for themself.  Members may only make read tokens."""
    _membership_in_context(actor)
    name = (name or "").strip()
    if not name or len(name) > MAX_NAME_LENGTH or "\x00" in name:
        raise TokenError("invalid_name", f"Give the token a name of 1 to {MAX_NAME_LENGTH} characters.")
    if scope not in (ApiToken.Scope.READ, ApiToken.Scope.ADMIN):
        raise TokenError("invalid_scope", "The scope is 'read' or 'admin'.")
    if scope == ApiToken.Scope.ADMIN and not actor.is_admin:
        raise TokenError("scope_not_allowed", "Only tenant admins can create admin tokens.")
    if expires_in_days not in EXPIRY_CHOICES_DAYS:
        raise TokenError("invalid_expiry", f"The expiry is one of {', '.join(map(str, EXPIRY_CHOICES_DAYS))} days.")
    expires_at = timezone.now() + timedelta(days=expires_in_days)
    with transaction.atomic():
        key = do_create_api_token(actor, name, scope=scope, expires_at=expires_at)
        token = ApiToken.objects.get(key_hash=ApiToken.hash_key(key))
        do_record_audit_event(
            actor=actor.user, action="api_token.created", target_type="api_token", target_id=token.pk,
            details={"name": name, "scope": scope, "expires_at": expires_at.isoformat(), "prefix": token.prefix,
                     "owner": actor.user.username},
        )  # fmt: skip
    return CreatedToken(token, key)


def do_create_scim_token(actor: Membership, *, name: str) -> CreatedToken:
    """A tenant admin issues the bearer token an identity provider presents at /scim/v2."""
    _membership_in_context(actor)
    if not actor.is_admin:
        raise TokenError("permission_denied", "Only tenant admins can issue provisioning tokens.")
    name = (name or "").strip()[:MAX_NAME_LENGTH] or "scim"
    with transaction.atomic():
        key = do_create_api_token(actor, name, scope=ApiToken.Scope.SCIM)
        token = ApiToken.objects.get(key_hash=ApiToken.hash_key(key))
        do_record_audit_event(
            actor=actor.user, action="api_token.created", target_type="api_token", target_id=token.pk,
            details={"name": name, "scope": ApiToken.Scope.SCIM, "prefix": token.prefix,
                     "owner": actor.user.username},
        )  # fmt: skip
    return CreatedToken(token, key)


def tenant_tokens() -> QuerySet[ApiToken]:
    """All tokens of the tenant in context (ApiToken carries no RLS: filter explicitly, fail closed)."""
    return ApiToken.objects.filter(membership__tenant_id=require_tenant_id()).select_related("membership__user")


def own_tokens(membership: Membership) -> QuerySet[ApiToken]:
    return tenant_tokens().filter(membership=membership).exclude(scope=ApiToken.Scope.SCIM)


def do_revoke_api_token(actor: Membership, token_id: int) -> ApiToken:
    """The owner revokes their token, or a tenant admin revokes any token of the tenant.

    Anything else (another member's token, another tenant's) reads as not found.
    """
    _membership_in_context(actor)
    with transaction.atomic():
        qs = tenant_tokens() if actor.is_admin else own_tokens(actor)
        token = qs.select_for_update(of=("self",)).filter(pk=token_id).first()
        if token is None:
            raise TokenError("not_found", "No such token.")
        if token.revoked_at is None:
            token.revoked_at = timezone.now()
            token.save(update_fields=["revoked_at"])
            do_record_audit_event(
                actor=actor.user, action="api_token.revoked", target_type="api_token", target_id=token.pk,
                details={"name": token.name, "scope": token.scope, "prefix": token.prefix,
                         "owner": token.membership.user.username},
            )  # fmt: skip
    return token


def revoke_all_tokens_of(user: User) -> int:
    """Deprovisioning: every token of ``user`` in the tenant in context stops working now."""
    return (
        ApiToken.objects.filter(membership__user=user, membership__tenant_id=require_tenant_id(),
                                revoked_at__isnull=True)
        .update(revoked_at=timezone.now())
    )  # fmt: skip

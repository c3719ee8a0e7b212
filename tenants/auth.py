"""Authentication that binds every request to exactly one tenant.

The tenant comes from the credential: an API token belongs to one
membership; a portal session stores the membership chosen at login.  No
header, body or query parameter can name a tenant.  Views then run inside
``tenant_context(request.auth.tenant_id)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.utils import timezone
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from tenants.models import ApiToken, Membership, User

SESSION_MEMBERSHIP_KEY = "cairn_membership_id"


@dataclass(frozen=True)
class TenantPrincipal:
    tenant_id: int
    membership_id: int
    role: str
    via: str  # "token" | "session"
    # A token's scope (ApiToken.Scope); sessions carry "admin": the membership's role decides alone.
    scope: str = "admin"

    @property
    def is_admin(self) -> bool:
        # A read-scoped token of an admin is not an admin credential (fails closed everywhere is_admin is asked).
        return self.role == Membership.Role.ADMIN and self.scope == ApiToken.Scope.ADMIN

    @property
    def lacks_admin_scope(self) -> bool:
        """An admin's membership behind a token that was scoped down (the 403 then says why)."""
        return self.role == Membership.Role.ADMIN and self.scope != ApiToken.Scope.ADMIN


def principal_for_membership(membership: Membership, via: str, scope: str = "admin") -> TenantPrincipal:
    return TenantPrincipal(membership.tenant_id, membership.pk, membership.role, via, scope)


class TokenRejected(exceptions.AuthenticationFailed):
    """A 401 with a machine-readable code (core.errors.exception_handler reads ``error_code``)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.error_code = code


def find_live_token(key: str) -> ApiToken | None:
    """The unrevoked token with this key, its owner active; ``TokenRejected`` when it has expired."""
    token = (
        ApiToken.objects.select_related("membership__user", "membership__tenant")
        .filter(key_hash=ApiToken.hash_key(key), revoked_at__isnull=True)
        .first()
    )
    if token is None or not token.membership.user.is_active or not token.membership.active:
        return None
    if token.expires_at is not None and token.expires_at <= timezone.now():
        raise TokenRejected("token_expired", "This token has expired.")
    return token


# "Last used" is shown to the minute; one write per minute per token instead of one per request.
LAST_USED_RESOLUTION = timedelta(seconds=60)


def touch_token(token: ApiToken) -> None:
    now = timezone.now()
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_RESOLUTION:
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)


class TenantTokenAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[User, TenantPrincipal] | None:
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower() != self.keyword.lower().encode():
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("Malformed Authorization header.")
        try:
            key = header[1].decode()
        except UnicodeError:
            raise exceptions.AuthenticationFailed("Malformed token.") from None
        token = find_live_token(key)
        # A SCIM provisioning token opens /scim/v2 only (tenants/scim.py), never the REST API.
        if token is None or token.scope == ApiToken.Scope.SCIM:
            raise exceptions.AuthenticationFailed("Invalid token.")
        touch_token(token)
        return token.membership.user, principal_for_membership(token.membership, "token", token.scope)

    def authenticate_header(self, request: Request) -> str:
        return self.keyword


class TenantSessionAuthentication(authentication.SessionAuthentication):
    def authenticate(self, request: Request) -> tuple[User, TenantPrincipal] | None:
        result = super().authenticate(request)  # includes the CSRF check
        if result is None:
            return None
        user = result[0]
        membership = session_membership(request._request, user)
        if membership is None:
            return None
        return user, principal_for_membership(membership, "session")


def session_membership(request: Any, user: User) -> Membership | None:
    membership_id = request.session.get(SESSION_MEMBERSHIP_KEY)
    if membership_id is None:
        return None
    # An inactive (deprovisioned) membership ends the session on its next request.
    return Membership.objects.filter(pk=membership_id, user=user, active=True).first()

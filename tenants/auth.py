"""Authentication that binds every request to exactly one tenant.

The tenant comes from the credential: an API token belongs to one
membership; a portal session stores the membership chosen at login.  No
header, body or query parameter can name a tenant.  Views then run inside
``tenant_context(request.auth.tenant_id)``.
"""

from __future__ import annotations

from dataclasses import dataclass
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

    @property
    def is_admin(self) -> bool:
        return self.role == Membership.Role.ADMIN


def principal_for_membership(membership: Membership, via: str) -> TenantPrincipal:
    return TenantPrincipal(membership.tenant_id, membership.pk, membership.role, via)


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
        token = (
            ApiToken.objects.select_related("membership__user")
            .filter(key_hash=ApiToken.hash_key(key), revoked_at__isnull=True)
            .first()
        )
        if token is None or not token.membership.user.is_active:
            raise exceptions.AuthenticationFailed("Invalid token.")
        ApiToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
        return token.membership.user, principal_for_membership(token.membership, "token")

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
    return Membership.objects.filter(pk=membership_id, user=user).first()

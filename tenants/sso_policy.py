"""Whether a member may still sign in with a local password once the tenant uses single sign-on."""

from __future__ import annotations

from tenants.models import Membership, TenantSso


def password_login_allowed(membership: Membership) -> bool:
    """Local passwords stay for the demo and for break-glass admins: a tenant may restrict them to admins."""
    sso = TenantSso.objects.filter(tenant_id=membership.tenant_id, enabled=True).first()
    return sso is None or sso.local_passwords == TenantSso.Passwords.ALL or membership.is_admin

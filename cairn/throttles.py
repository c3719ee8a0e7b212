"""Per-user and per-tenant request budgets, so one tenant cannot starve another.

Counters live in the shared Redis cache, so every web process enforces the
same budget.  Rates come from CAIRN_RATE_USER / CAIRN_RATE_TENANT.
"""

from __future__ import annotations

from typing import Any

from rest_framework.settings import api_settings
from rest_framework.throttling import SimpleRateThrottle

from tenants.auth import TenantPrincipal


class _LiveRates(SimpleRateThrottle):
    def get_rate(self) -> str | None:
        # DRF binds THROTTLE_RATES at import; read the live setting so operators
        # (and tests) can change rates without re-importing.
        return api_settings.DEFAULT_THROTTLE_RATES.get(self.scope)


class MembershipRateThrottle(_LiveRates):
    """Budget per (tenant, user): the same person in two tenants has two budgets."""

    scope = "user"

    def get_cache_key(self, request: Any, view: Any) -> str | None:
        auth = request.auth
        if not isinstance(auth, TenantPrincipal):
            return None
        return self.cache_format % {"scope": self.scope, "ident": f"{auth.tenant_id}:{request.user.pk}"}


class TenantRateThrottle(_LiveRates):
    scope = "tenant"

    def get_cache_key(self, request: Any, view: Any) -> str | None:
        auth = request.auth
        if not isinstance(auth, TenantPrincipal):
            return None
        return self.cache_format % {"scope": self.scope, "ident": auth.tenant_id}

"""The base API view: authenticated, tenant-scoped, one transaction per request."""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any

from django.http import HttpResponseBase
from rest_framework import exceptions
from rest_framework.request import Request
from rest_framework.views import APIView

from core.errors import ApiError
from tenants.audit import Actor
from tenants.auth import TenantPrincipal
from tenants.context import tenant_context


class TenantAPIView(APIView):
    """Every API view that touches tenant data inherits this.

    After DRF authenticated the request, the view body runs inside
    ``tenant_context`` for the tenant bound to the credential.
    """

    admin_only = False

    def dispatch(self, request: Any, *args: Any, **kwargs: Any) -> HttpResponseBase:
        with ExitStack() as stack:
            self._tenant_stack = stack
            return super().dispatch(request, *args, **kwargs)

    def initial(self, request: Request, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        principal = request.auth
        if not isinstance(principal, TenantPrincipal):
            raise exceptions.NotAuthenticated()
        if self.admin_only and principal.lacks_admin_scope:
            raise ApiError("insufficient_scope", "This token's scope is read; admin endpoints need an admin token.",
                           http_status=403)  # fmt: skip
        if self.admin_only and not principal.is_admin:
            raise exceptions.PermissionDenied("Tenant admins only.")
        self._tenant_stack.enter_context(tenant_context(principal.tenant_id))

    @property
    def principal(self) -> TenantPrincipal:
        assert isinstance(self.request.auth, TenantPrincipal)
        return self.request.auth

    @property
    def actor(self) -> Actor:
        """The acting principal, as the admin ``do_*`` actions record it."""
        return Actor.of(self.request.user, f"api-{self.principal.via}")

"""The one gate every portal and console page goes through.

Same path as the API: the session names a membership (chosen at login), the
membership names the tenant, and the view body runs inside ``tenant_context``
for that tenant.  Nothing in a URL, form or header can choose the tenant.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth import logout
from django.contrib.auth.views import redirect_to_login
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from tenants.auth import session_membership
from tenants.context import tenant_context
from tenants.models import Membership

View = Callable[..., HttpResponse]


def _membership(request: HttpRequest) -> Membership | None:
    if not request.user.is_authenticated:
        return None
    return session_membership(request, request.user)  # type: ignore[arg-type]


def portal_view(fn: View) -> View:
    """Logged-in member of a tenant; the body runs in that tenant's context."""

    @wraps(fn)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        membership = _membership(request)
        if membership is None or not request.user.is_active:
            logout(request)
            return redirect("login")
        with tenant_context(membership.tenant_id):
            return fn(request, membership, *args, **kwargs)

    return wrapper


def admin_view(fn: View) -> View:
    """Tenant admins only; everyone else gets a 403 page (no tenant data is read first)."""

    @wraps(fn)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        membership = _membership(request)
        if membership is None:
            logout(request)
            return redirect("login")
        if not membership.is_admin:
            return render(request, "console/forbidden.html", {"membership": membership}, status=403)
        with tenant_context(membership.tenant_id):
            return fn(request, membership, *args, **kwargs)

    return wrapper


def operator_view(fn: View) -> View:
    """Platform operators (superusers).  Runs *outside* any tenant: with RLS forced, tenant
    content is unreadable from here by construction, not by convention."""

    @wraps(fn)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not (request.user.is_active and request.user.is_superuser):
            return render(request, "console/forbidden.html", {}, status=403)
        return fn(request, *args, **kwargs)

    return wrapper

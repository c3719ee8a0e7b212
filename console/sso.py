"""The console's single sign-on settings page; the actions and the sign-in flow are ``identity.sso``."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect

from console.views import page
from identity.sso import SsoError, _redirect_uri, do_configure_sso
from tenants.access import admin_view
from tenants.models import Membership, TenantSso


@admin_view
def console_sso(request: HttpRequest, membership: Membership) -> HttpResponse:
    """The tenant admin's single sign-on settings (the client secret is write-only)."""
    row = TenantSso.objects.filter(tenant_id=membership.tenant_id).first()
    error, status = "", 200
    if request.method == "POST":
        try:
            row = do_configure_sso(
                membership, issuer=request.POST.get("issuer", ""), client_id=request.POST.get("client_id", ""),
                client_secret=request.POST.get("client_secret", "") or None,
                allowed_email_domains=request.POST.get("domains", "").replace(",", " ").split(),
                entra_tenant_id=request.POST.get("entra_tenant_id", ""),
                local_passwords=request.POST.get("local_passwords", ""),
                enabled=request.POST.get("enabled") == "on",
            )  # fmt: skip
            messages.success(request, "Single sign-on settings saved.")
            return redirect("console-sso")
        except SsoError as exc:
            error, status = exc.message, 400
    elif request.method != "GET":
        return HttpResponse(status=405)
    return page(request, membership, "console/sso.html", "sso", "Single sign-on",
                {"row": row, "error": error, "redirect_uri": _redirect_uri(request),
                 "tenant_slug": membership.tenant.slug}, status=status)  # fmt: skip

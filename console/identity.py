"""Console pages for identity and access: the tenant's API tokens (see and revoke every one) and
the SCIM provisioning token an identity provider presents at /scim/v2."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from console.views import page
from tenants.access import admin_view
from tenants.models import ApiToken, Membership
from tenants.tokens import TokenError, do_create_scim_token, do_revoke_api_token, tenant_tokens


@require_http_methods(["GET", "POST"])
@admin_view
def tokens(request: HttpRequest, membership: Membership) -> HttpResponse:
    error, new_key = "", ""
    if request.method == "POST":
        try:
            if request.POST.get("op") == "revoke":
                do_revoke_api_token(membership, _int(request.POST.get("token", "")))
            elif request.POST.get("op") == "issue_scim":
                new_key = do_create_scim_token(membership, name=request.POST.get("name", "")).key
            else:
                error = "Unknown operation."
        except TokenError as exc:
            error = exc.message
    rows = tenant_tokens().order_by("-created_at")[:500]
    response = page(
        request, membership, "console/tokens.html", "tokens", "API tokens and provisioning",
        {"rows": rows, "error": error, "new_key": new_key, "scim_scope": ApiToken.Scope.SCIM,
         "scim_base": request.build_absolute_uri(reverse("scim-users"))[: -len("Users")]},
        status=400 if error else 200,
    )  # fmt: skip
    response["Cache-Control"] = "no-store"
    return response


def _int(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        return -1

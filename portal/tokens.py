"""The portal's "API tokens" page: a person creates, names, scopes, sets the expiry of and revokes
their own tokens.  The clear key is shown once, in the response to the create request."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_http_methods

from tenants.access import portal_view
from tenants.models import ApiToken, Membership
from tenants.tokens import EXPIRY_CHOICES_DAYS, TokenError, do_create_personal_token, do_revoke_api_token, own_tokens


@require_http_methods(["GET", "POST"])
@portal_view
def tokens(request: HttpRequest, membership: Membership) -> HttpResponse:
    error, new_key, new_token = "", "", None
    if request.method == "POST":
        try:
            if request.POST.get("op") == "revoke":
                do_revoke_api_token(membership, _int(request.POST.get("token", "")))
            else:
                created = do_create_personal_token(
                    membership, name=request.POST.get("name", ""), scope=request.POST.get("scope", ""),
                    expires_in_days=_int(request.POST.get("expires_in_days", "")),
                )  # fmt: skip
                new_key, new_token = created.key, created.token
        except TokenError as exc:
            error = exc.message
    context = {
        "membership": membership,
        "rows": own_tokens(membership).order_by("-created_at")[:200],
        "error": error,
        "new_key": new_key,
        "new_token": new_token,
        "expiry_choices": EXPIRY_CHOICES_DAYS,
        "scopes": [ApiToken.Scope.READ] + ([ApiToken.Scope.ADMIN] if membership.is_admin else []),
        "api_base": request.build_absolute_uri("/api/v1/"),
    }
    response = render(request, "portal/tokens.html", context, status=400 if error else 200)
    # The page may carry a clear key: never cache it, never let it come back from history.
    response["Cache-Control"] = "no-store"
    return response


def _int(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        return -1

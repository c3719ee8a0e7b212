"""Portal pages: log in, the search page (answers stream in from the API), result lists.

The answer itself is fetched by ``static/cairn/portal.js`` from the same API the
integrations use (``POST /api/v1/answers/stream``, session-authenticated with CSRF),
so the portal adds no second answer path with its own authorisation.
"""

from __future__ import annotations

import logging
from datetime import date
from typing import Any

from django.conf import settings
from django.contrib.auth import authenticate, login, logout
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import NoReverseMatch, reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from answers import engine
from answers.query_parser import QueryError
from connectors.progress import Progress, tenant_progress
from retrieval.models import Document, Source
from retrieval.permissions import PermissionContext, permission_context
from tenants.access import portal_view
from tenants.audit import Actor, do_record_audit_event
from tenants.auth import SESSION_MEMBERSHIP_KEY, session_membership
from tenants.context import tenant_context
from tenants.models import Membership, User
from tenants.sso_policy import password_login_allowed

log = logging.getLogger(__name__)

SOURCE_SYSTEMS = (("confluence", "Confluence"), ("sharepoint", "SharePoint"), ("slack", "Slack"), ("upload", "Upload"))
MAX_CONTAINER_OPTIONS = 200


LOGIN_FAILED = "Wrong username or password."
LOCKED_OUT = "Too many failed logins. Try again later."


def _audit_account(username: str, action: str, request: HttpRequest, user: Any = None) -> None:
    """An auth event in the audit log of every tenant the account belongs to.

    A name that matches no account has no tenant and so no audit log: those failures reach the
    server log only (django-axes counts them all the same, per client address).
    """
    account = user if user is not None else User.objects.filter(username=username).first()
    if account is None:
        log.info("auth: %s for an unknown account from %s", action, login_client_address(request))
        return
    details = {
        "client_address": login_client_address(request),
        "user_agent": request.headers.get("User-Agent", "")[:200],
    }
    for tenant_id in Membership.objects.filter(user=account).values_list("tenant_id", flat=True):
        with tenant_context(tenant_id):
            do_record_audit_event(actor=Actor.of(account, "portal"), action=action, target_type="user",
                                  target_id=account.pk, details=details)  # fmt: skip


def login_client_address(request: HttpRequest) -> str:
    """The client address django-axes counts failures per (``AXES_CLIENT_IP_CALLABLE``).

    REMOTE_ADDR, or behind the TLS proxy (``CAIRN_TRUST_X_FORWARDED_FOR``) the address that proxy
    appended last: the one hop a client cannot forge.
    """
    if settings.CAIRN.get("TRUST_X_FORWARDED_FOR"):
        forwarded = [p.strip() for p in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if p.strip()]
        if forwarded:
            return forwarded[-1][:64]
    return str(request.META.get("REMOTE_ADDR", ""))[:64]


def login_locked_out(request: HttpRequest, original_response: Any = None, credentials: Any = None) -> HttpResponse:
    """django-axes' lockout answer (``AXES_LOCKOUT_CALLABLE``): the login page, 429, audited.

    Worded the same for every name, existing or not, so a lockout reveals no account.
    """
    username = str((credentials or {}).get("username") or request.POST.get("username", ""))[:150]
    _audit_account(username, "auth.login_locked_out", request)
    return render(request, "login.html", {"error": LOCKED_OUT}, status=429)


@require_http_methods(["GET", "POST"])
def login_view(request: HttpRequest) -> HttpResponse:
    """Log in; failures are throttled per account and per client address by django-axes.

    Unknown names and wrong passwords get the same page and status; Django's ModelBackend runs
    the password hasher for unknown names too, so the time is the hash's either way.
    """
    error = ""
    if request.method == "POST":
        username = request.POST.get("username", "")[:150]
        user = authenticate(request, username=username, password=request.POST.get("password", ""))
        if getattr(request, "axes_locked_out", False):
            # AxesMiddleware swaps this for login_locked_out's answer (which writes the audit row).
            return render(request, "login.html", {"error": LOCKED_OUT}, status=429)
        membership = (
            Membership.objects.filter(user=user, active=True).select_related("tenant").order_by("pk").first()
            if user
            else None
        )
        if user is not None and membership is not None and not password_login_allowed(membership):
            # The tenant turned local passwords off for members: same answer as a wrong password.
            user = membership = None
        if user is not None and membership is not None:
            login(request, user)
            request.session[SESSION_MEMBERSHIP_KEY] = membership.pk
            _audit_account(username, "auth.login", request, user)
            return redirect("home")
        if user is not None and user.is_superuser:
            # A platform operator without a tenant: only the operator console is open to them.
            login(request, user)
            log.info("auth: operator %s logged in from %s", user.pk, login_client_address(request))
            return redirect("console-platform")
        _audit_account(username, "auth.login_failed", request)
        error = LOGIN_FAILED
    return render(request, "login.html", {"error": error}, status=400 if error else 200)


@require_POST
def logout_view(request: HttpRequest) -> HttpResponse:
    """POST only, so the CSRF check applies: a cross-site page can no longer log a user out."""
    user = request.user if request.user.is_authenticated else None
    membership = session_membership(request, user) if user is not None else None  # type: ignore[arg-type]
    if membership is not None:
        with tenant_context(membership.tenant_id):
            do_record_audit_event(actor=Actor.of(user, "portal"), action="auth.logout", target_type="user",
                                  target_id=user.pk if user else "")  # fmt: skip
    logout(request)
    return redirect("login")


def _index_status() -> Progress:
    # The same answer `bin/cairn run` prints from (connectors/progress.py): loading until no event
    # waits and no sync run is active.
    return tenant_progress()


def _parse_date(value: str) -> date | None:
    try:
        return date.fromisoformat(value) if value else None
    except ValueError:
        return None


def read_filters(params: Any) -> tuple[engine.RequestFilters, dict[str, Any], list[str]]:
    """Filters from the query string: the engine's form, the form's echo, and input errors."""
    errors: list[str] = []
    sources = tuple(s for s in params.getlist("source") if s in dict(SOURCE_SYSTEMS))
    containers = tuple(c[:300] for c in params.getlist("container") if c)[:20]
    after_raw, before_raw = params.get("after", ""), params.get("before", "")
    after, before = _parse_date(after_raw), _parse_date(before_raw)
    if after_raw and after is None:
        errors.append("The 'from' date is not a date (use YYYY-MM-DD).")
    if before_raw and before is None:
        errors.append("The 'to' date is not a date (use YYYY-MM-DD).")
    if after and before and after >= before:
        errors.append("The 'from' date must be before the 'to' date.")
        after = before = None
    official = params.get("official") in ("1", "on", "true")
    echo = {"sources": list(sources), "containers": list(containers), "after": after_raw if after else "",
            "before": before_raw if before else "", "official": official}  # fmt: skip
    return engine.RequestFilters(sources, containers, after, before, official), echo, errors


def container_options(perm: PermissionContext) -> list[str]:
    """Containers of documents this user may read (never a name only others can see)."""
    if perm.empty:
        return []
    return list(
        Document.objects.filter(deleted=False, acl_set_id__in=perm.readable_acl_set_ids)
        .exclude(container="")
        .values_list("container", flat=True)
        .distinct()
        .order_by("container")[:MAX_CONTAINER_OPTIONS]
    )


def _optional_url(name: str) -> str:
    # The streaming and feedback endpoints belong to another part of the product; the page
    # falls back gracefully (plain JSON answer, no flag control) when they are not installed.
    try:
        return reverse(name)
    except NoReverseMatch:
        return ""


def _first_url(*names: str) -> str:
    for name in names:
        url = _optional_url(name)
        if url:
            return url
    return ""


@portal_view
def home(request: HttpRequest, membership: Membership) -> HttpResponse:
    question = request.GET.get("q", "").strip()[:1000]
    mode = "results" if request.GET.get("mode") == "results" else "answer"
    perm = permission_context(request.user)  # type: ignore[arg-type]
    extra, echo, errors = read_filters(request.GET)
    context: dict[str, Any] = {
        "question": question,
        "mode": mode,
        "membership": membership,
        "status": _index_status(),
        "filters": echo,
        "errors": errors,
        "source_systems": [(k, v) for k, v in SOURCE_SYSTEMS if Source.objects.filter(kind=k).exists()]
        or list(SOURCE_SYSTEMS),
        "containers": container_options(perm),
        "stream_url": _first_url("api-answers-stream"),
        "answer_url": reverse("api-answers"),
        "feedback_url": _first_url("api-feedback"),
        "has_filters": bool(
            echo["sources"] or echo["containers"] or echo["after"] or echo["before"] or echo["official"]
        ),
    }
    if question and mode == "results" and not errors:
        try:
            context["search"] = engine.run_search(perm, question, extra)
        except QueryError as exc:
            context["errors"] = [exc.message]
    return render(request, "portal/home.html", context)


@require_GET
@portal_view
def status_fragment(request: HttpRequest, membership: Membership) -> HttpResponse:
    return render(request, "_status.html", {"status": _index_status()})

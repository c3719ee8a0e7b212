"""The minimal employee portal: log in, ask, read a cited answer or a result list.

Same authorisation path as the API: the session names a membership, the view
runs inside that tenant's context, and answers come from the same engine.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth import authenticate, login, logout
from django.contrib.auth.decorators import login_required
from django.db.models import Count, Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_http_methods

from answers import engine
from answers.query_parser import QueryError
from retrieval.models import Document, IngestEvent
from retrieval.permissions import permission_context
from tenants.auth import SESSION_MEMBERSHIP_KEY, session_membership
from tenants.context import tenant_context
from tenants.models import Membership


def portal_view(fn: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    @login_required
    @wraps(fn)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        membership = session_membership(request, request.user)  # type: ignore[arg-type]
        if membership is None:
            logout(request)
            return redirect("login")
        with tenant_context(membership.tenant_id):
            return fn(request, membership, *args, **kwargs)

    return wrapper


@require_http_methods(["GET", "POST"])
def login_view(request: HttpRequest) -> HttpResponse:
    error = ""
    if request.method == "POST":
        user = authenticate(request, username=request.POST.get("username", ""),
                            password=request.POST.get("password", ""))  # fmt: skip
        membership = (
            Membership.objects.filter(user=user).select_related("tenant").order_by("pk").first() if user else None
        )
        if user is not None and membership is not None:
            login(request, user)
            request.session[SESSION_MEMBERSHIP_KEY] = membership.pk
            return redirect("home")
        error = "Wrong username or password."
    return render(request, "login.html", {"error": error}, status=400 if error else 200)


def logout_view(request: HttpRequest) -> HttpResponse:
    logout(request)
    return redirect("login")


def _index_status() -> dict[str, int]:
    counts = IngestEvent.objects.aggregate(
        pending=Count("pk", filter=Q(status=IngestEvent.Status.PENDING)),
        done=Count("pk", filter=~Q(status=IngestEvent.Status.PENDING)),
    )
    counts["documents"] = Document.objects.filter(deleted=False).count()
    return counts


@portal_view
def home(request: HttpRequest, membership: Membership) -> HttpResponse:
    question = request.GET.get("q", "").strip()
    mode = request.GET.get("mode", "answer")
    context: dict[str, Any] = {"question": question, "mode": mode, "membership": membership,
                               "status": _index_status()}  # fmt: skip
    if question:
        perm = permission_context(request.user)  # type: ignore[arg-type]
        try:
            if mode == "results":
                context["search"] = engine.run_search(perm, question, engine.RequestFilters())
            else:
                result = engine.answer_question(perm, question, engine.RequestFilters())
                evidence = {e["id"]: e for e in result["evidence"]}
                order = [e["id"] for e in result["evidence"] if e["cited"]]
                for claim in result["answer"]["claims"]:
                    claim["markers"] = [
                        {"n": order.index(c["evidence_id"]) + 1, "quote": c["quote"]} for c in claim["citations"]
                    ]
                context["result"] = result
                context["sources"] = [evidence[i] for i in order]
        except QueryError as exc:
            context["error"] = exc.message
    return render(request, "home.html", context)


@portal_view
def status_fragment(request: HttpRequest, membership: Membership) -> HttpResponse:
    return render(request, "_status.html", {"status": _index_status()})

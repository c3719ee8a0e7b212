"""Admin console pages (tenant admins) and the platform page (operators).

Thin views: every state change goes through a ``do_*`` domain function and is
recorded in the tenant's audit log with ``do_record_audit_event``.  Every page
runs through ``admin_view`` (session -> membership -> admin role ->
``tenant_context``), so a console page can only ever see its own tenant.
"""

from __future__ import annotations

from datetime import datetime, time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.db import transaction
from django.db.models import Count, Q
from django.http import Http404, HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET

from answers import models as am
from answers.actions import (
    do_assign_authority,
    do_create_feed,
    do_delete_alias,
    do_refresh_feed,
    do_set_alias,
    ensure_default_tiers,
    tier_names,
)
from connectors import models as cm
from connectors.actions import (
    do_check_connector,
    do_create_connector_instance,
    do_read_webhook_secret,
    do_request_sync,
    do_rotate_webhook_secret,
    do_set_paused,
    do_update_connector_instance,
)
from connectors.api import ConnectorWebhookView
from connectors.runtime import known_kinds
from console import auditview, health
from console import quality as quality_figures
from console.actions import do_add_authority_tier, do_remove_authority_assignment, do_reorder_authority_tiers
from console.connector_forms import form_for
from core.errors import ApiError
from retrieval.actions import do_map_identity
from retrieval.models import AclSet, Chunk, Document, IndexState, Source
from retrieval.permissions import explain_access, unreadable_feedback_ids, user_principals
from tenants.access import admin_view, operator_view
from tenants.actions import do_add_member, do_create_tenant, do_create_user
from tenants.audit import Actor, do_record_audit_event, export_csv, filtered_events
from tenants.context import require_tenant_id, tenant_context
from tenants.feedback import HIDDEN
from tenants.models import AuditEvent, ExternalIdentity, Feedback, Group, Membership, Tenant, User

REPORTS_DIR = Path(settings.BASE_DIR) / "reports" / "latest"

NAV = [
    ("home", "Overview", "console-home"),
    ("connectors", "Connectors", "console-connectors"),
    ("hierarchy", "Source hierarchy", "console-hierarchy"),
    ("aliases", "Entity aliases", "console-aliases"),
    ("feeds", "Freshness feeds", "console-feeds"),
    ("people", "People", "console-people"),
    ("viewas", "View as user", "console-viewas"),
    ("audit", "Audit log", "console-audit"),
    ("feedback", "Feedback", "console-feedback"),
    ("quality", "Quality", "console-quality"),
    ("answers", "Answer settings", "console-answers"),
    ("tokens", "API tokens", "console-tokens"),
    ("sso", "Single sign-on", "console-sso"),
]


def page(request: HttpRequest, membership: Membership, template: str, section: str, title: str,
         context: dict[str, Any] | None = None, status: int = 200) -> HttpResponse:  # fmt: skip
    ctx = {
        "membership": membership,
        "section": section,
        "page_title": title,
        "console_nav": [(k, label, reverse(name)) for k, label, name in NAV],
        **(context or {}),
    }
    return render(request, template, ctx, status=status)


def actor(request: HttpRequest) -> Actor:
    """The acting admin as the domain actions record it (they write the audit rows)."""
    return Actor.of(request.user, "console")


def audit(request: HttpRequest, action: str, target_type: str, target_id: Any, details: dict[str, Any]) -> None:
    """Reads worth a row (an export, an access explanation); state changes are audited by their action."""
    do_record_audit_event(actor=actor(request), action=action, target_type=target_type, target_id=target_id,
                          details=details)  # fmt: skip


def _refusal(exc: ApiError) -> str:
    """The domain action's coded refusal, worded for the page (same code as the API's 400)."""
    detail = exc.detail if isinstance(exc.detail, dict) else {}
    return f"{detail.get('message') or exc.detail} ({detail.get('code') or exc.get_codes()})"


# --- overview ----------------------------------------------------------------------------------------------


@require_GET
@admin_view
def home(request: HttpRequest, membership: Membership) -> HttpResponse:
    stats = {
        "sources": Source.objects.count(),
        "documents": Document.objects.filter(deleted=False).count(),
        "members": Membership.objects.filter(tenant_id=membership.tenant_id).count(),
        "identities_unmapped": ExternalIdentity.objects.filter(user__isnull=True, is_bot=False).count(),
        "groups": Group.objects.count(),
    }
    return page(request, membership, "console/home.html", "home", "Admin console",
                {"stats": stats, **health.overview()})  # fmt: skip


# --- connectors ----------------------------------------------------------------------------------------------


def _connector_models() -> Any:

    return cm


def _health(instance: Any) -> dict[str, Any]:
    cm = _connector_models()
    states = {s.mode: s for s in cm.SyncState.objects.filter(instance=instance)}
    running = [s for s in states.values() if s.status in ("queued", "running", "throttled")]
    errors = [s for s in states.values() if s.last_error]
    last_ok = [s.last_success_at for s in states.values() if s.last_success_at]
    lag = (timezone.now() - max(last_ok)) if last_ok else None
    if instance.paused:
        label = "paused"
    elif errors:
        label = "error"
    elif running:
        label = "syncing"
    elif last_ok:
        label = "healthy"
    else:
        label = "never synced"
    return {
        "label": label,
        "states": states,
        "full": states.get("full"),
        "incremental": states.get("incremental"),
        "permission": states.get("permission"),
        "running": running,
        "errors": errors,
        "lag_minutes": int(lag.total_seconds() // 60) if lag is not None else None,
        "documents": Document.objects.filter(source_id=instance.source_id, deleted=False).count(),
    }


@require_GET
@admin_view
def connectors_list(request: HttpRequest, membership: Membership) -> HttpResponse:
    cm = _connector_models()
    rows = [(i, _health(i)) for i in cm.ConnectorInstance.objects.select_related("source").order_by("pk")]
    return page(request, membership, "console/connectors.html", "connectors", "Connectors",
                {"rows": rows, "kinds": _known_kinds()})  # fmt: skip


def _known_kinds() -> list[str]:

    return list(known_kinds())


def _save_connector(request: HttpRequest, form: Any, instance: Any | None) -> Any | None:
    """The form's shared validation passed: create or update through the API's own actions."""
    try:
        if instance is None:
            if Source.objects.filter(name=form.cleaned_data["name"].strip()).exists():
                form.add_error("name", "A source with this name exists.")
                return None
            return do_create_connector_instance(form.kind, form.cleaned_data["name"], config=form.cleaned_data["config"],
                                                credentials=form.cleaned_data["credentials"],
                                                actor=actor(request))  # fmt: skip
        return do_update_connector_instance(instance, name=form.cleaned_data["name"], config=form.cleaned_data["config"],
                                            credentials=form.cleaned_data["credentials"] or None,
                                            actor=actor(request))  # fmt: skip
    except ApiError as exc:
        form.refusal = _refusal(exc)
        form.add_error(None, form.refusal)
        return None


@admin_view
def connector_new(request: HttpRequest, membership: Membership) -> HttpResponse:
    """Choose a kind, then fill in that kind's typed form (raw JSON only behind "advanced")."""
    kind = request.POST.get("kind") or request.GET.get("kind", "")
    form_cls = form_for(kind)
    form = None
    if form_cls is not None:
        form = form_cls(request.POST if request.method == "POST" else None)
        if request.method == "POST" and form.is_valid():
            instance = _save_connector(request, form, None)
            if instance is not None:
                messages.success(request, "Connector added. Test the connection, then start a full sync.")
                return redirect("console-connector", pk=instance.pk)
    status = 400 if form is not None and form.errors else 200
    return page(request, membership, "console/connector_form.html", "connectors", "Add a connector",
                {"form": form, "kind": kind if form_cls else "", "kinds": _known_kinds()}, status=status)  # fmt: skip


def _hook_urls(request: HttpRequest, instance: Any, *, reveal: bool) -> tuple[list[tuple[str, str]], str]:
    """The URLs the admin pastes into the source, from the connectors API's own description.

    Some carry the webhook secret (Confluence's ``?secret=``); it is masked unless revealed.
    """

    info = ConnectorWebhookView()._info(request, instance)
    secret = str(info.get("secret") or "")
    urls = [(str(k), str(v)) for k, v in info.get("urls", {}).items()]
    if instance.kind == "slack":
        for label, name in (("Slash command /ask URL", "slack-command"), ("Interactivity URL", "slack-interactivity")):
            urls.append((label, request.build_absolute_uri(reverse(name, args=[str(instance.hook_uuid)]))))
    if not reveal and secret:
        urls = [(k, v.replace(secret, "••••••")) for k, v in urls]
    return urls, str(info.get("how") or "")


@admin_view
def connector_detail(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:

    cm = _connector_models()
    instance = get_object_or_404(cm.ConnectorInstance.objects.select_related("source"), pk=pk)
    form_cls = form_for(instance.kind)
    if form_cls is None:
        raise Http404
    form = form_cls(instance=instance)
    test_steps: list[Any] = []
    reveal = False
    if request.method == "POST":
        op = request.POST.get("op", "")
        if op == "save":
            form = form_cls(request.POST, instance=instance)
            if form.is_valid() and _save_connector(request, form, instance) is not None:
                saved = " New credentials stored." if form.cleaned_data["credentials"] else ""
                messages.success(request, "Saved." + saved)
                return redirect("console-connector", pk=pk)
        elif op == "test":
            # Step by step (connectors.checks): which of auth, listing, permissions, webhook failed.
            test_steps = do_check_connector(instance, actor=actor(request))
        elif op in ("full", "incremental", "permission"):
            do_request_sync(instance, op, actor=actor(request))
            messages.success(request, f"{op.capitalize()} sync queued.")
            return redirect("console-connector", pk=pk)
        elif op in ("pause", "resume"):
            do_set_paused(instance, op == "pause", actor=actor(request))
            messages.success(request, "Paused." if op == "pause" else "Resumed.")
            return redirect("console-connector", pk=pk)
        elif op == "rotate":
            do_rotate_webhook_secret(instance, actor=actor(request))
            messages.success(request, "A new webhook secret was generated; update the source.")
            return redirect("console-connector", pk=pk)
        elif op == "reveal":
            reveal = True
    secret = ""
    if reveal and instance.webhook_secret_encrypted:
        secret = do_read_webhook_secret(instance, actor=actor(request))
    hook_urls, hook_how = _hook_urls(request, instance, reveal=reveal)
    ctx = {
        "instance": instance,
        "health": _health(instance),
        "form": form,
        "hook_urls": hook_urls,
        "hook_how": hook_how,
        "secret": secret,
        "test_steps": test_steps,
        "test_ok": bool(test_steps) and all(s.ok for s in test_steps),
    }
    return page(request, membership, "console/connector_detail.html", "connectors", instance.source.name, ctx,
                status=400 if form.errors else 200)  # fmt: skip


@require_GET
@admin_view
def connector_progress(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:
    cm = _connector_models()
    instance = get_object_or_404(cm.ConnectorInstance, pk=pk)
    return render(request, "console/_sync_progress.html", {"instance": instance, "health": _health(instance)})


# --- source hierarchy, aliases, freshness feeds -------------------------------------------------------------


def _answers_models() -> Any:

    return am


@admin_view
def hierarchy(request: HttpRequest, membership: Membership) -> HttpResponse:
    am = _answers_models()
    error = ""
    if request.method == "POST":
        op = request.POST.get("op", "")
        try:
            if op == "defaults":
                made = ensure_default_tiers()
                audit(request, "hierarchy.default_tiers", "authority_tier", "", {"tiers": [t.name for t in made]})
            elif op == "add_tier":
                name = request.POST.get("name", "").strip()[:100]
                if not name:
                    raise ValueError("Give the tier a name.")

                do_add_authority_tier(name, actor=actor(request))
            elif op in ("up", "down"):
                ids = list(am.AuthorityTier.objects.order_by("rank").values_list("pk", flat=True))
                pk = int(request.POST.get("tier", "0"))
                if pk not in ids:
                    raise ValueError("Unknown tier.")
                i = ids.index(pk)
                j = i - 1 if op == "up" else i + 1
                if 0 <= j < len(ids):
                    ids[i], ids[j] = ids[j], ids[i]

                    do_reorder_authority_tiers(ids, actor=actor(request))
            elif op == "assign":
                source = get_object_or_404(Source, pk=int(request.POST.get("source", "0")))
                tier = get_object_or_404(am.AuthorityTier, pk=int(request.POST.get("tier", "0")))
                container = request.POST.get("container", "").strip()[:300]

                do_assign_authority(source, tier, container, actor=actor(request))
            elif op == "unassign":
                removed = do_remove_authority_assignment(int(request.POST.get("assignment", "0")), actor=actor(request))
                if removed is None:
                    raise ValueError("That assignment no longer exists.")
                messages.success(request, "Assignment removed; its documents fell back to their default tier.")
            else:
                raise ValueError("Unknown action.")
            return redirect("console-hierarchy")
        except (ValueError, LookupError) as exc:
            error = str(exc)
    tiers = list(am.AuthorityTier.objects.order_by("rank"))
    assignments = list(am.AuthorityAssignment.objects.select_related("source", "tier").order_by("tier__rank"))
    # What answers rank by (answers.actions.tier_names): defined tiers, and the defaults for ranks
    # nobody defined, so the page never shows "no tiers" while answers still use four.
    names = tier_names()
    defined = {t.rank for t in tiers}
    in_use = [(rank, names[rank], rank in defined) for rank in sorted(names)]
    sources = list(Source.objects.order_by("name"))
    source_tiers = [(s, names.get(s.authority_tier, f"rank {s.authority_tier}")) for s in sources]
    return page(request, membership, "console/hierarchy.html", "hierarchy", "Source hierarchy",
                {"tiers": tiers, "assignments": assignments, "sources": sources, "in_use": in_use,
                 "source_tiers": source_tiers, "error": error}, status=400 if error else 200)  # fmt: skip


@admin_view
def aliases(request: HttpRequest, membership: Membership) -> HttpResponse:
    am = _answers_models()
    error = ""
    if request.method == "POST":
        try:
            if request.POST.get("op") == "delete":
                alias = get_object_or_404(am.EntityAlias, pk=int(request.POST.get("alias", "0")))

                do_delete_alias(alias.pk, actor=actor(request))
            else:
                surface = request.POST.get("alias", "").strip()[:200]
                canonical = request.POST.get("canonical", "").strip()[:200]
                if not surface or not canonical:
                    raise ValueError("Both the alias and the canonical name are needed.")

                do_set_alias(surface, canonical, actor=actor(request))
            return redirect("console-aliases")
        except (ValueError, LookupError) as exc:
            error = str(exc)
    rows = am.EntityAlias.objects.order_by("canonical", "alias")
    return page(request, membership, "console/aliases.html", "aliases", "Entity aliases",
                {"rows": rows, "error": error}, status=400 if error else 200)  # fmt: skip


@admin_view
def feeds(request: HttpRequest, membership: Membership) -> HttpResponse:
    am = _answers_models()
    error = ""
    if request.method == "POST":
        try:
            if request.POST.get("op") == "refresh":
                feed = get_object_or_404(am.FreshnessFeed, pk=int(request.POST.get("feed", "0")))
                do_refresh_feed(feed, actor=actor(request))
            else:
                name = request.POST.get("name", "").strip()[:200]
                entity = request.POST.get("entity", "").strip()[:200]
                url = request.POST.get("url", "").strip()
                if not (name and entity and url.startswith("https://")):
                    raise ValueError("Name, entity and an https:// URL are needed.")

                do_create_feed(name, entity, url, actor=actor(request))
            return redirect("console-feeds")
        except ApiError as exc:
            error = _refusal(exc)
        except (ValueError, LookupError) as exc:
            error = str(exc)
    rows = am.FreshnessFeed.objects.order_by("name")
    return page(request, membership, "console/feeds.html", "feeds", "Freshness feeds",
                {"rows": rows, "error": error}, status=400 if error else 200)  # fmt: skip


# --- people --------------------------------------------------------------------------------------------------


def _suggestions(identities: list[ExternalIdentity], members: list[Membership]) -> dict[int, Membership]:
    """Unmapped identity -> the member with the same e-mail, when *both* addresses are verified."""
    by_email = {m.user.email.lower(): m for m in members if m.user.email and m.user.email_verified}
    return {
        i.pk: by_email[i.email.lower()]
        for i in identities
        if i.user_id is None and i.email and i.email_verified and not i.is_bot and i.email.lower() in by_email
    }


@admin_view
def people(request: HttpRequest, membership: Membership) -> HttpResponse:
    tenant_id = membership.tenant_id
    members = list(Membership.objects.filter(tenant_id=tenant_id).select_related("user").order_by("user__username"))
    member_users = {m.user_id: m for m in members}
    error = ""
    if request.method == "POST":
        op = request.POST.get("op", "")
        try:
            if op == "map":
                identity = get_object_or_404(ExternalIdentity, pk=int(request.POST.get("identity", "0")))
                user_id = request.POST.get("user", "")
                user = member_users[int(user_id)].user if user_id else None
                do_map_identity(identity, user, actor=actor(request))
                messages.success(
                    request, f"{identity.principal} {'mapped to ' + user.username if user else 'unmapped'}."
                )
            elif op == "role":
                target = member_users[int(request.POST.get("user", "0"))]
                role = request.POST.get("role", "")
                if role not in Membership.Role.values:
                    raise ValueError("Unknown role.")
                if target.user_id == request.user.pk and role != Membership.Role.ADMIN:
                    raise ValueError("You cannot remove your own admin role.")

                do_add_member(target.tenant, target.user, role=role, actor=actor(request))
                messages.success(request, f"{target.user.username} is now {role}.")
            else:
                raise ValueError("Unknown action.")
            return redirect("console-people")
        except (KeyError, ValueError) as exc:
            error = str(exc) if isinstance(exc, ValueError) else "Unknown user."
    identities = list(ExternalIdentity.objects.order_by("principal")[:500])
    users_by_id = {m.user_id: m.user for m in members}
    groups = list(Group.objects.annotate(n=Count("members")).order_by("principal")[:300])
    ctx = {
        "members": members,
        "identities": [(i, users_by_id.get(i.user_id)) for i in identities],
        "suggestions": _suggestions(identities, members),
        "groups": groups,
        "error": error,
        "roles": Membership.Role.values,
    }
    return page(request, membership, "console/people.html", "people", "People", ctx, status=400 if error else 200)


@require_GET
@admin_view
def group_detail(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:
    group = get_object_or_404(Group, pk=pk)
    members = list(group.members.order_by("member_principal").values_list("member_principal", flat=True))
    return page(request, membership, "console/group.html", "people", f"Group {group.principal}",
                {"group": group, "members": members})  # fmt: skip


@require_GET
@admin_view
def view_as(request: HttpRequest, membership: Membership) -> HttpResponse:
    """Why is a document (not) visible to a user: the document's CNF clause by clause.

    An admin sees the clauses (principal names) of this tenant's documents, not their
    content: only the title, so they can tell which document they are looking at.
    """
    members = list(Membership.objects.filter(tenant_id=membership.tenant_id).select_related("user")
                   .order_by("user__username"))  # fmt: skip
    user_id = request.GET.get("user", "")
    doc_q = request.GET.get("doc", "").strip()[:200]
    ctx: dict[str, Any] = {"members": members, "user_id": user_id, "doc_q": doc_q}
    subject = next((m.user for m in members if str(m.user_id) == user_id), None)
    if subject is not None:
        principals = user_principals(subject)
        ctx["subject"] = subject
        ctx["principals"] = sorted(principals)
        if doc_q:
            docs = Document.objects.filter(deleted=False).select_related("acl_set")
            docs = docs.filter(pk=int(doc_q)) if doc_q.isdigit() else docs.filter(
                Q(title__icontains=doc_q) | Q(external_id=doc_q) | Q(url=doc_q))  # fmt: skip
            explained = []
            for d in docs.order_by("pk")[:10]:
                clauses = [list(c) for c in (d.acl_set.clauses if d.acl_set else [])]
                rows = explain_access(frozenset(principals), clauses)
                explained.append(
                    {"doc": d, "rows": rows, "visible": bool(clauses) and all(r["satisfied"] for r in rows)}
                )
            ctx["explained"] = explained
            audit(
                request,
                "access.explained",
                "user",
                subject.pk,
                {"document_query": doc_q, "documents": [e["doc"].pk for e in explained]},
            )
    return page(request, membership, "console/view_as.html", "viewas", "View as user", ctx)


# --- audit, feedback, quality --------------------------------------------------------------------------------


def _parse_day(value: str, end: bool = False) -> datetime | None:
    try:
        d = datetime.fromisoformat(value).date() if value else None
    except ValueError:
        return None
    if d is None:
        return None
    out = datetime.combine(d, time.max if end else time.min)
    return timezone.make_aware(out) if timezone.is_naive(out) else out


def _audit_query(request: HttpRequest) -> tuple[Any, dict[str, str]]:
    f = {k: request.GET.get(k, "").strip()[:100] for k in ("action", "kind", "actor", "since", "until", "show")}
    actor_id = None
    if f["actor"]:
        user = User.objects.filter(username=f["actor"], memberships__tenant_id=request_tenant(request)).first()
        actor_id = user.pk if user else -1
    qs = filtered_events(action=f["action"], kind=f["kind"], actor_user_id=actor_id,
                         since=_parse_day(f["since"]), until=_parse_day(f["until"], end=True))  # fmt: skip
    if f["show"] in auditview.CATEGORIES:
        match = Q()
        for prefix in auditview.CATEGORIES[f["show"]][1]:
            match |= Q(action__startswith=prefix)
        qs = qs.filter(match)
    return qs, f


def request_tenant(request: HttpRequest) -> int:

    return require_tenant_id()


@require_GET
@admin_view
def audit_log(request: HttpRequest, membership: Membership) -> HttpResponse:
    qs, f = _audit_query(request)
    rows = list(qs.order_by("-seq")[:200])
    readable = auditview.readable_documents(request.user, rows)  # type: ignore[arg-type]
    actions = sorted(set(filtered_events().values_list("action", flat=True).distinct()[:200]))
    return page(request, membership, "console/audit.html", "audit", "Audit log",
                {"rows": [(r, auditview.summary(r, readable)) for r in rows], "f": f, "actions": actions,
                 "categories": [(k, v[0]) for k, v in auditview.CATEGORIES.items()],
                 "query": request.GET.urlencode()})  # fmt: skip


@require_GET
@admin_view
def audit_detail(request: HttpRequest, membership: Membership, pk: int) -> HttpResponse:
    # By row id, not seq: every tenant has a #1, and another tenant's id must read as "not found".
    row = get_object_or_404(AuditEvent, pk=pk)
    readable = auditview.readable_documents(request.user, [row])  # type: ignore[arg-type]
    return page(request, membership, "console/audit_detail.html", "audit", f"Audit record #{row.seq}",
                {"row": row, "summary": auditview.summary(row, readable),
                 "details": auditview.detail_rows(row, readable)})  # fmt: skip


@require_GET
@admin_view
def audit_export(request: HttpRequest, membership: Membership) -> HttpResponse:
    qs, f = _audit_query(request)
    rows = list(qs[:100_000])  # read inside the tenant transaction; streamed out below
    audit(request, "audit.exported", "audit_log", membership.tenant_id, {"filters": f, "rows": len(rows)})
    response = StreamingHttpResponse(export_csv(rows), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="audit-{membership.tenant.slug}.csv"'
    return response


@require_GET
@admin_view
def feedback_queue(request: HttpRequest, membership: Membership) -> HttpResponse:

    verdict = request.GET.get("verdict", "")
    qs = Feedback.objects.order_by("-created_at")
    if verdict in Feedback.Verdict.values:
        qs = qs.filter(verdict=verdict)
    users = {m.user_id: m.user.username for m in Membership.objects.filter(tenant_id=membership.tenant_id)
             .select_related("user")}  # fmt: skip
    flags = list(qs[:200])
    # The admin's own read permissions apply: text from a document they may not read is withheld.
    hidden = unreadable_feedback_ids(request.user, flags)  # type: ignore[arg-type]
    for fb in flags:
        if fb.pk in hidden:
            fb.claim_text = HIDDEN if fb.claim_text else ""
            fb.comment = ""
            # The question too, as the audit log shows it: a question can say what the document holds.
            fb.question = f"sha256:{auditview.question_sha256(fb.question)[:16]}…"
    rows = [(fb, users.get(fb.user_id, f"user {fb.user_id}")) for fb in flags]
    return page(request, membership, "console/feedback.html", "feedback", "Feedback queue",
                {"rows": rows, "verdict": verdict, "verdicts": Feedback.Verdict.values})  # fmt: skip


@require_GET
@admin_view
def quality(request: HttpRequest, membership: Membership) -> HttpResponse:
    return page(request, membership, "console/quality.html", "quality", "Answer quality",
                {"tq": quality_figures.tenant_quality(request.user),  # type: ignore[arg-type]
                 "evaluation": quality_figures.last_evaluation(REPORTS_DIR)})  # fmt: skip


# --- platform operators --------------------------------------------------------------------------------------


@operator_view
def platform(request: HttpRequest) -> HttpResponse:
    """Create tenants and see usage.  Runs outside any tenant, and per-tenant figures are
    counts only: an operator never gets a row of tenant content from this page."""

    error = ""
    if request.method == "POST":
        slug = request.POST.get("slug", "").strip().lower()[:64]
        name = request.POST.get("name", "").strip()[:200]
        admin_username = request.POST.get("admin_username", "").strip()[:150]
        admin_email = request.POST.get("admin_email", "").strip()[:254]
        import re

        if not re.fullmatch(r"[a-z0-9][a-z0-9-]{1,62}", slug) or not name:
            error = "A slug (lowercase letters, digits, dashes) and a name are needed."
        elif Tenant.objects.filter(slug=slug).exists():
            error = "That slug is taken."
        else:
            with transaction.atomic():
                tenant = do_create_tenant(slug, name)
                if admin_username:
                    user = do_create_user(admin_username, admin_email, None)
                    do_add_member(tenant, user, role=Membership.Role.ADMIN)
                with tenant_context(tenant.pk):
                    do_record_audit_event(actor=request.user, action="tenant.created", target_type="tenant",
                                          target_id=tenant.pk, details={"slug": slug, "first_admin": admin_username,
                                                                        "via": "platform console"})  # fmt: skip
            messages.success(request, f"Tenant {slug} created.")
            return redirect("console-platform")
    rows = [(t, _usage(t)) for t in Tenant.objects.order_by("slug")]
    return render(request, "console/platform.html", {"rows": rows, "error": error, "page_title": "Platform"},
                  status=400 if error else 200)  # fmt: skip


def _usage(tenant: Tenant) -> dict[str, Any]:

    with tenant_context(tenant.pk):
        state = IndexState.objects.first()
        return {
            "members": Membership.objects.filter(tenant_id=tenant.pk).count(),
            "sources": Source.objects.count(),
            "documents": Document.objects.filter(deleted=False).count(),
            "chunks": Chunk.objects.count(),
            "acl_sets": AclSet.objects.count(),
            "answers": AuditEvent.objects.filter(kind="answer").count(),
            "content_as_of": state.content_as_of if state else None,
        }

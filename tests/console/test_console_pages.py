"""The console pages an IT admin reads: overview, quality, audit log, source hierarchy; and the loading line.

Answers are asked through the real API (extractive writer) and audited by the product itself; the
admin pages are requested through the real middleware, session and tenant context.
"""

from __future__ import annotations

import html
import re
from datetime import timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from tenants.context import tenant_context
from tests.support import Cast, client_for, enqueue, grant_groups, ingest_inline, make_doc, source_for, unique

TRAVEL = "Employees book travel through the travel desk at least fourteen days before departure."
PAY = "Pay bands by grade: grade 7 earns between 61,000 and 79,000 dollars a year."
UNANSWERABLE = "What is the airspeed velocity of an unladen swallow?"


def console_client(user: Any) -> Client:
    """alice signed in through the login form, as an admin is (so the login itself is audited)."""
    c = Client()
    r = c.post("/login/", {"username": user.username, "password": "pw-" + user.username})
    assert r.status_code == 302, r.content[:500]
    return c


@pytest.fixture(scope="module")
def asked(module_cast: Cast, django_db_blocker: Any) -> dict[str, Any]:
    """Tenant A answered a travel question, a pay question only HR may read about, and two it could not."""
    cast = module_cast
    with django_db_blocker.unblock():
        wiki = source_for(cast.tenant_a, unique("handbook"))
        enqueue(cast.tenant_a, wiki, make_doc("travel", TRAVEL, [["public:tenant"]], title="Booking travel"))
        enqueue(cast.tenant_a, wiki, make_doc("pay", PAY, [["confluence:group:hr"]], title="Pay bands"))
        grant_groups(cast.tenant_a, {"confluence:group:hr": [cast.bob]})
        ingest_inline(cast.tenant_a.pk)
        bob, carol = client_for(cast.tokens["bob"]), client_for(cast.tokens["carol"])
        travel = bob.post("/api/v1/answers", {"question": "How far ahead must I book travel?"}, format="json").json()
        pay = bob.post("/api/v1/answers", {"question": "What does grade 7 earn in the pay bands?"},
                       format="json").json()  # fmt: skip
        for _ in range(2):
            carol.post("/api/v1/answers", {"question": UNANSWERABLE}, format="json")
        claim = travel["answer"]["claims"][0]
        flag = bob.post("/api/v1/feedback", {"trace_id": travel["trace"]["id"], "target": "claim", "verdict": "stale",
                                             "claim_id": claim["id"], "claim_text": claim["text"]},
                        format="json")  # fmt: skip
        assert flag.status_code == 201, flag.content
        from retrieval.models import Document

        with tenant_context(cast.tenant_a.pk):
            pay_doc = Document.objects.get(source=wiki, external_id="pay").pk
        hr_flag = bob.post("/api/v1/feedback", {"trace_id": pay["trace"]["id"], "target": "source",
                                                "verdict": "wrong", "document_id": pay_doc}, format="json")  # fmt: skip
        assert hr_flag.status_code == 201, hr_flag.content
        return {"cast": cast, "travel": travel, "pay": pay, "alice": console_client(cast.alice)}


def text_of(response: Any) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", response.content.decode())))


# --- audit log -----------------------------------------------------------------------------------------------


def test_the_audit_log_shows_a_question_the_admin_may_read_and_only_the_hash_of_one_she_may_not(asked) -> None:
    page = asked["alice"].get("/console/audit/", {"show": "questions"})
    assert page.status_code == 200
    text = text_of(page)
    assert "How far ahead must I book travel?" in text
    # alice is not in HR: the pay question (its answer drew on the HR page) shows as its digest.
    assert "grade 7" not in page.content.decode()
    assert "sha256:" in text
    assert f"{UNANSWERABLE} → abstained" in text


def test_the_audit_log_lists_logins_and_flags_with_times_in_utc(asked) -> None:
    logins = asked["alice"].get("/console/audit/", {"show": "logins"})
    assert "auth.login" in text_of(logins) and "login from" in text_of(logins)
    flagged = asked["alice"].get("/console/audit/", {"show": "flags"})
    flags = text_of(flagged)
    assert "feedback.submitted" in flags and "flagged claim as stale" in flags
    assert "<td>answer.released</td>" not in flagged.content.decode()
    assert re.search(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", flags)
    assert re.search(r'datetime="\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+00:00"', logins.content.decode())


def test_an_audit_record_reads_as_a_key_value_table_not_a_python_repr(asked) -> None:
    cast = asked["cast"]
    from tenants.models import AuditEvent

    with tenant_context(cast.tenant_a.pk):
        travel = AuditEvent.objects.get(trace_id=asked["travel"]["trace"]["id"], action="answer.released")
        pay = AuditEvent.objects.get(trace_id=asked["pay"]["trace"]["id"], action="answer.released")
    page = asked["alice"].get(f"/console/audit/{travel.pk}/")
    markup = page.content.decode()
    assert page.status_code == 200 and 'id="audit-details"' in markup
    assert '<th scope="row">question</th><td>How far ahead must I book travel?</td>' in markup
    assert "principal.via" in markup and "{&#x27;" not in markup and "{'" not in markup
    assert " UTC" in text_of(page)
    hidden = asked["alice"].get(f"/console/audit/{pay.pk}/").content.decode()
    # Neither the question nor the plan that quotes it; the digest lets an admin match a reported question.
    assert "grade 7" not in hidden and "withheld" in hidden
    import hashlib

    assert hashlib.sha256(b"What does grade 7 earn in the pay bands?").hexdigest() in hidden


def test_an_audit_record_of_another_tenant_is_not_found(asked) -> None:
    cast = asked["cast"]
    from tenants.models import AuditEvent

    with tenant_context(cast.tenant_a.pk):
        pk = AuditEvent.objects.get(trace_id=asked["travel"]["trace"]["id"], action="answer.released").pk
    page = console_client(cast.mallory).get(f"/console/audit/{pk}/")
    assert page.status_code == 404 and "How far ahead" not in page.content.decode()


def test_the_feedback_queue_shows_a_flag_on_an_unreadable_document_without_its_question(asked) -> None:
    page = asked["alice"].get("/console/feedback/")
    text = text_of(page)
    assert "How far ahead must I book travel?" in text
    assert "grade 7" not in page.content.decode() and "sha256:" in text
    assert " UTC" in text


# --- quality -----------------------------------------------------------------------------------------------


def test_the_quality_page_is_about_this_tenants_answers_abstentions_flags_and_unanswered_questions(asked) -> None:
    page = asked["alice"].get("/console/quality/")
    assert page.status_code == 200
    text = text_of(page)
    assert re.search(r"Questions answered or abstained \d+", text)
    assert re.search(r"Answer rate \d+%", text)
    assert "1 claim flagged" in text and "stale 1" in text
    assert re.search(re.escape(UNANSWERABLE) + r" 2", text)
    assert "grade 7" not in page.content.decode()


def test_the_quality_page_summarises_the_last_evaluation_without_commits_paths_or_settings(asked) -> None:
    markup = asked["alice"].get("/console/quality/").content.decode()
    assert "Last evaluation run" in markup
    # reports/latest/ holds the vendor's answers suite: its headline figures, as numbers.
    assert re.search(r"<td>answers</td><td><time[^>]*>[^<]+ UTC</time> \(\d+ s\)</td><td>questions \d+; abstention rate [\d.]+",
                     markup)  # fmt: skip
    for leak in ("git_commit", "git_dirty", "/work/", "DEMO_DATA_DIR", "INDEX_BACKEND", "peak_rss", "platform"):
        assert leak not in markup, leak
    assert not re.search(r"\b[0-9a-f]{40}\b", markup)
    # The raw vendor report files are no longer served.
    assert asked["alice"].get("/console/quality/files/answers.json").status_code == 404


# --- overview ----------------------------------------------------------------------------------------------


def _connector(cast: Cast, name: str) -> Any:
    from connectors.actions import do_create_connector_instance
    from tenants.audit import Actor

    with tenant_context(cast.tenant_a.pk):
        return do_create_connector_instance("confluence", name, config={"site_url": "https://confluence.example.com",
                                                                        "space_keys": ["ENG"]},
                                            credentials={"email": "bot@example.com", "api_token": "tok-1"},
                                            actor=Actor.of(cast.alice, "test"))  # fmt: skip


def test_the_overview_alerts_on_a_connector_that_never_synced_and_on_an_old_backlog(cast: Cast, settings) -> None:
    from connectors.models import ConnectorInstance
    from retrieval.models import IngestEvent

    settings.CAIRN = {**settings.CAIRN, "CONSOLE_STALL_FACTOR": 2, "CONSOLE_BACKLOG_ALERT_SECONDS": 600}
    instance = _connector(cast, "Engineering wiki")
    wiki = source_for(cast.tenant_a, "uploads", "upload")
    enqueue(cast.tenant_a, wiki, make_doc("waiting", "Still waiting to be indexed.", [["public:tenant"]]))
    with tenant_context(cast.tenant_a.pk):
        # Two hours ago: beyond 2 × the 5-minute schedule, and beyond the 10-minute backlog threshold.
        ConnectorInstance.objects.filter(pk=instance.pk).update(created_at=timezone.now() - timedelta(hours=2))
        IngestEvent.objects.filter(source=wiki).update(created_at=timezone.now() - timedelta(hours=2))
    page = console_client(cast.alice).get("/console/")
    text = text_of(page)
    assert "Engineering wiki: no successful sync ever (alert after 10 min, 2× the 5 min schedule)" in text
    assert "The ingest backlog's oldest item has waited 2.0 h (alert after 10 min)" in text
    assert re.search(r"Engineering wiki confluence stalled never", text)
    assert "1 change waiting to be indexed, the oldest for 2.0 h" in text


def test_the_overview_plots_the_days_latencies_from_the_recorded_events(cast: Cast) -> None:
    from retrieval.actions import do_enqueue_acl_update

    wiki = source_for(cast.tenant_a, "wiki")
    enqueue(cast.tenant_a, wiki, make_doc("vpn", "The VPN uses WireGuard.", [["public:tenant"]]))
    ingest_inline(cast.tenant_a.pk)
    with tenant_context(cast.tenant_a.pk):
        do_enqueue_acl_update(wiki, "vpn", (("confluence:group:it",),), source_version=2)
    ingest_inline(cast.tenant_a.pk)
    page = console_client(cast.alice).get("/console/")
    markup, text = page.content.decode(), text_of(page)
    assert page.status_code == 200
    assert markup.count("<svg") == 2 and "<script" not in markup.split("<main", 1)[-1]
    assert re.search(r"Event → searchable ?: median [\d.]+ m?s, 95th percentile [\d.]+ m?s, slowest [\d.]+ m?s "
                     r"\(1 event\)", text)  # fmt: skip
    assert re.search(r"Revocation → enforced ?: median [\d.]+ m?s.*\(1 event\)", text)
    assert 'class="p50"' in markup and "No alerts" in text


def test_the_overview_has_no_alert_for_a_connector_inside_its_schedule(cast: Cast) -> None:
    _connector(cast, "Fresh wiki")
    text = text_of(console_client(cast.alice).get("/console/"))
    assert "No alerts" in text and "Fresh wiki" in text


# --- source hierarchy --------------------------------------------------------------------------------------


def test_the_hierarchy_shows_the_tiers_answers_use_and_an_assignment_can_be_removed(cast: Cast) -> None:
    from answers.models import AuthorityAssignment
    from retrieval.models import Document
    from tenants.models import AuditEvent

    wiki = source_for(cast.tenant_a, "wiki")
    enqueue(cast.tenant_a, wiki, make_doc("vpn", "The VPN uses WireGuard.", [["public:tenant"]]))
    ingest_inline(cast.tenant_a.pk)
    alice = console_client(cast.alice)
    text = text_of(alice.get("/console/hierarchy/"))
    # No tier defined yet, but answers rank by the four defaults: the page says so.
    assert "0 system of record built-in default" in text and "3 chat built-in default" in text
    assert alice.post("/console/hierarchy/", {"op": "defaults"}).status_code == 302
    with tenant_context(cast.tenant_a.pk):
        from answers.models import AuthorityTier

        top = AuthorityTier.objects.get(rank=0)
    alice.post("/console/hierarchy/", {"op": "assign", "source": wiki.pk, "tier": top.pk, "container": ""})
    with tenant_context(cast.tenant_a.pk):
        assignment = AuthorityAssignment.objects.get(source=wiki)
        assert Document.objects.get(source=wiki).authority_tier == 0
    r = alice.post("/console/hierarchy/", {"op": "unassign", "assignment": assignment.pk})
    assert r.status_code == 302
    with tenant_context(cast.tenant_a.pk):
        assert not AuthorityAssignment.objects.filter(source=wiki).exists()
        # A source without a connector falls back to the tier it was created in (wiki, rank 2).
        assert Document.objects.get(source=wiki).authority_tier == 2
        row = AuditEvent.objects.filter(action="hierarchy.unassigned").get()
    assert row.actor_user_id == cast.alice.pk and row.details["tier"] == "system of record"
    assert "No assignments" in text_of(alice.get("/console/hierarchy/"))


def test_removing_an_assignment_needs_the_csrf_token(cast: Cast) -> None:
    from answers.actions import do_assign_authority, ensure_default_tiers
    from answers.models import AuthorityAssignment
    from tenants.audit import Actor
    from tenants.auth import SESSION_MEMBERSHIP_KEY
    from tenants.models import Membership

    wiki = source_for(cast.tenant_a, "wiki")
    with tenant_context(cast.tenant_a.pk):
        tier = ensure_default_tiers()[0]
        assignment = do_assign_authority(
            wiki,
            tier,
            "",
            actor=Actor.of(cast.alice, "test"),
        )
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(cast.alice)
    session = strict.session
    session[SESSION_MEMBERSHIP_KEY] = Membership.objects.get(user=cast.alice, tenant=cast.tenant_a).pk
    session.save()
    r = strict.post("/console/hierarchy/", {"op": "unassign", "assignment": assignment.pk})
    assert r.status_code == 403
    with tenant_context(cast.tenant_a.pk):
        assert AuthorityAssignment.objects.filter(pk=assignment.pk).exists()


# --- loading: the portal's line and bin/cairn run agree -----------------------------------------------------


def test_the_portal_says_still_loading_while_a_sync_runs_even_with_an_empty_queue(cast: Cast, settings) -> None:
    from connectors.actions import do_request_sync
    from connectors.progress import tenant_progress

    settings.CAIRN = {**settings.CAIRN, "CONNECTOR_QUEUE": unique("nobody-listens")}
    instance = _connector(cast, "Engineering wiki")
    bob = Client()
    bob.post("/login/", {"username": cast.bob.username, "password": "pw-" + cast.bob.username})
    with tenant_context(cast.tenant_a.pk):
        assert not tenant_progress().loading
    assert "still loading" not in bob.get("/portal/status").content.decode()
    with tenant_context(cast.tenant_a.pk):
        do_request_sync(instance, "full")
        progress = tenant_progress()
    assert progress.loading and progress.pending == 0 and progress.full_syncs == 1
    assert "still loading: 1 sync running" in text_of(bob.get("/portal/status"))


def test_a_routine_incremental_sync_does_not_make_a_loaded_tenant_say_still_loading(cast: Cast, settings) -> None:
    from connectors.actions import do_request_sync
    from connectors.progress import tenant_progress

    settings.CAIRN = {**settings.CAIRN, "CONNECTOR_QUEUE": unique("nobody-listens")}
    instance = _connector(cast, "Engineering wiki")
    with tenant_context(cast.tenant_a.pk):
        do_request_sync(instance, "incremental")
        progress = tenant_progress()
    assert progress.active_syncs == 1 and not progress.loading


def test_bin_cairn_runs_progress_line_counts_what_the_portal_counts(cast: Cast) -> None:
    import io

    from django.core.management import call_command

    from connectors.demo.management.commands.demo_progress import progress

    out = io.StringIO()
    call_command("demo_progress", stdout=out)
    overall = progress()
    assert out.getvalue().startswith("[cairn] ingest: ")
    assert f"{overall.documents} documents searchable" in out.getvalue()

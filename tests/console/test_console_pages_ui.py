"""The console pages in a real browser: overview, quality, audit record, hierarchy removal; the loading line."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from tenants.context import tenant_context
from tests.browser import Org, login, shot
from tests.support import Cast, client_for, enqueue, ingest_inline, make_doc, source_for, unique

UNANSWERABLE = "What is the airspeed velocity of an unladen swallow?"


@pytest.fixture(scope="module")
def tenant(module_cast: Cast, django_db_blocker: Any) -> Cast:
    """Tenant A with an indexed wiki, an answered and an unanswered question, and a connector that never synced."""
    from connectors.actions import do_create_connector_instance
    from connectors.models import ConnectorInstance
    from tenants.audit import Actor

    cast = module_cast
    with django_db_blocker.unblock():
        wiki = source_for(cast.tenant_a, unique("handbook"))
        enqueue(cast.tenant_a, wiki, make_doc("travel", "Employees book travel through the travel desk at least "
                                                        "fourteen days before departure.", [["public:tenant"]]))  # fmt: skip
        ingest_inline(cast.tenant_a.pk)
        bob = client_for(cast.tokens["bob"])
        bob.post("/api/v1/answers", {"question": "How far ahead must I book travel?"}, format="json")
        bob.post("/api/v1/answers", {"question": UNANSWERABLE}, format="json")
        with tenant_context(cast.tenant_a.pk):
            instance = do_create_connector_instance(
                "confluence", "Engineering wiki", config={"site_url": "https://confluence.example.com",
                                                         "space_keys": ["ENG"]},
                credentials={"email": "bot@example.com", "api_token": "tok-1"}, actor=Actor.of(cast.alice, "test"),
            )  # fmt: skip
            ConnectorInstance.objects.filter(pk=instance.pk).update(created_at=timezone.now() - timedelta(days=1))
    return cast


def sign_in(page: Any, base: str, user: Any) -> None:
    login(page, base, user, "pw-" + user.username)


def test_the_overview_shows_sync_health_the_latency_plots_and_a_stalled_sync_alert(web_server: str, page: Any,
                                                                                   tenant: Cast) -> None:  # fmt: skip
    sign_in(page, web_server, tenant.alice)
    page.goto(web_server + "/console/")
    expect(page.locator("#alerts")).to_contain_text("Engineering wiki: no successful sync ever")
    row = page.locator("#sync-health tr[data-connector='Engineering wiki']")
    expect(row.locator("td.state")).to_have_text("stalled")
    expect(page.locator("figure.latency-figure svg")).to_have_count(2)
    expect(page.locator("figure[data-latency='Event → searchable'] figcaption")).to_contain_text("median")
    expect(page.locator("#backlog")).to_contain_text("waiting to be indexed")
    shot(page, "console-overview")
    assert page.js_errors == []


def test_the_quality_page_shows_this_tenants_answer_rate_and_unanswered_questions(web_server: str, page: Any,
                                                                                  tenant: Cast) -> None:  # fmt: skip
    sign_in(page, web_server, tenant.alice)
    page.goto(web_server + "/console/quality/")
    expect(page.locator("#answer-rate")).to_have_text("50%")
    expect(page.locator("#unanswered")).to_contain_text(UNANSWERABLE)
    expect(page.locator("#abstentions tbody tr")).to_have_count(1)
    expect(page.locator("text=git_commit")).to_have_count(0)
    shot(page, "console-quality")
    assert page.js_errors == []


def test_an_audit_record_opens_as_a_readable_table(web_server: str, page: Any, tenant: Cast) -> None:
    sign_in(page, web_server, tenant.alice)
    page.goto(web_server + "/console/audit/?show=questions")
    row = page.locator("#audit-table tbody tr", has_text="How far ahead must I book travel?")
    expect(row.locator("td").nth(1)).to_contain_text("UTC")
    row.locator("td a").first.click()
    expect(page.locator("h1")).to_contain_text("Audit record #")
    details = page.locator("#audit-details")
    expect(details.locator("tr", has_text="question").first).to_contain_text("How far ahead must I book travel?")
    expect(details).to_contain_text("principal.user_id")
    shot(page, "console-audit-record")
    assert page.js_errors == []


def test_an_admin_removes_a_hierarchy_assignment_and_the_source_falls_back(web_server: str, page: Any,
                                                                           org: Org) -> None:  # fmt: skip
    login(page, web_server, org.admin, org.passwords[org.admin.username])
    page.goto(web_server + "/console/hierarchy/")
    expect(page.locator("#tiers-in-use")).to_contain_text("built-in default")
    page.click("text=Create the default tiers")
    page.select_option("#a-tier", label="system of record")
    page.click("form.row >> text=Assign")
    expect(page.locator("#assignments")).to_contain_text("system of record")
    expect(page.locator("#source-tiers")).to_contain_text("system of record")
    page.click("#assignments button:has-text('Remove')")
    expect(page.locator(".flash").first).to_contain_text("Assignment removed")
    expect(page.locator("#assignments")).to_contain_text("No assignments")
    expect(page.locator("#source-tiers")).to_contain_text("wiki")
    shot(page, "console-hierarchy-removed")
    assert page.js_errors == []


def test_the_portal_says_still_loading_while_a_sync_runs(web_server: str, page: Any, org: Org, settings) -> None:
    from connectors.actions import do_create_connector_instance, do_request_sync
    from tenants.audit import Actor

    settings.CAIRN = {**settings.CAIRN, "CONNECTOR_QUEUE": unique("nobody-listens")}
    with tenant_context(org.tenant.pk):
        instance = do_create_connector_instance(
            "confluence", "Engineering wiki", config={"site_url": "https://confluence.example.com",
                                                     "space_keys": ["ENG"]},
            credentials={"email": "bot@example.com", "api_token": "tok-1"}, actor=Actor.of(org.admin, "test"),
        )  # fmt: skip
        do_request_sync(instance, "full")
    login(page, web_server, org.member, org.passwords[org.member.username])
    expect(page.locator("#index-status")).to_contain_text("still loading: 1 sync running")
    shot(page, "portal-still-loading")
    assert page.js_errors == []

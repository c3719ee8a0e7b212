"""The admin console in a real browser: add a connector, reorder the hierarchy, read the audit log."""

from __future__ import annotations

import csv
import io
from typing import Any

from playwright.sync_api import expect

from tenants.context import tenant_context
from tests.browser import Org, login, shot


def test_it_lets_an_admin_add_a_connector_reorder_tiers_and_read_the_audit_log(web_server: str, page: Any,
                                                                               org: Org) -> None:  # fmt: skip
    login(page, web_server, org.admin, org.passwords[org.admin.username])
    page.click("text=Admin console")
    expect(page.locator("h1")).to_have_text("Admin console")

    # Add a connector; the credentials are write-only.
    page.click("nav.console-nav >> text=Connectors")
    page.click("text=Add a connector")
    page.select_option("#c-kind", "confluence")
    page.click("form[aria-label='Choose the connector type'] button")
    page.fill("#id_name", "Engineering wiki")
    # The same validation as the API: a Confluence connector needs its https site_url.
    page.fill("#id_site_url", "https://confluence.example.com")
    page.fill("#id_space_keys", "ENG")
    page.fill("#id_email", "bot@example.com")
    page.fill("#id_api_token", '=HYPERLINK("x") tok-very-secret-1234')
    page.click("#connector-form button[type=submit]")
    expect(page.locator("h1")).to_have_text("Engineering wiki")
    assert "tok-very-secret" not in page.content()
    expect(page.locator("code.copy").first).to_contain_text("/hooks/confluence/")
    page.click("text=Sync now (full)")
    expect(page.locator(".flash").first).to_contain_text("Full sync queued")
    shot(page, "console-connector")
    page.click("nav.console-nav >> text=Connectors")
    expect(page.locator("table")).to_contain_text("Engineering wiki")

    # Source hierarchy: create the default tiers, then move "wiki" above "official docs".
    page.click("nav.console-nav >> text=Source hierarchy")
    page.click("text=Create the default tiers")
    names = page.locator("#tiers .name")
    expect(names).to_have_text(["system of record", "official docs", "wiki", "chat"])
    page.click("button[aria-label='Move wiki up']")
    expect(names).to_have_text(["system of record", "wiki", "official docs", "chat"])
    shot(page, "console-hierarchy")
    from answers.models import AuthorityTier

    with tenant_context(org.tenant.pk):
        assert list(AuthorityTier.objects.order_by("rank").values_list("name", flat=True))[:3] == [
            "system of record", "wiki", "official docs"]  # fmt: skip

    # The audit log shows both actions, filters by action, and exports CSV without formulas.
    page.click("nav.console-nav >> text=Audit log")
    table = page.locator("#audit-table")
    expect(table).to_contain_text("connector.created")
    expect(table).to_contain_text("hierarchy.tiers_reordered")
    page.select_option("#au-action", "connector.created")
    page.click("form[aria-label='Filter the audit log'] button[type=submit]")
    expect(table.locator("tbody tr")).to_have_count(1)
    shot(page, "console-audit")
    export = page.request.get(web_server + page.locator("text=Export CSV").get_attribute("href"))
    assert export.status == 200
    rows = list(csv.DictReader(io.StringIO(export.text())))
    assert [r["action"] for r in rows] == ["connector.created"]
    assert "tok-very-secret" not in export.text()
    assert all(not v.startswith(("=", "+", "-", "@")) for r in rows for v in r.values() if v)
    assert page.js_errors == []


def test_it_refuses_the_console_to_a_non_admin(web_server: str, page: Any, org: Org) -> None:
    login(page, web_server, org.member, org.passwords[org.member.username])
    expect(page.locator("text=Admin console")).to_have_count(0)
    for path in ("/console/", "/console/connectors/", "/console/audit/", "/console/audit/export.csv"):
        response = page.goto(web_server + path)
        assert response is not None and response.status == 403, path
        expect(page.locator("[role=alert]")).to_contain_text("administrators")
    shot(page, "console-forbidden")
    # A forged POST is refused the same way (and changes nothing).
    token = page.context.cookies()
    csrftoken = next((c["value"] for c in token if c["name"] == "csrftoken"), "")
    r = page.request.post(web_server + "/console/hierarchy/", form={"op": "defaults", "csrfmiddlewaretoken": csrftoken},
                          headers={"Referer": web_server + "/"})  # fmt: skip
    assert r.status == 403
    from answers.models import AuthorityTier

    with tenant_context(org.tenant.pk):
        assert not AuthorityTier.objects.exists()


def test_it_explains_why_a_document_is_or_is_not_visible(web_server: str, page: Any, org: Org) -> None:
    from tests.support import enqueue, ingest_inline, make_doc, source_for

    src = source_for(org.tenant, "hr-site", "sharepoint")
    enqueue(org.tenant, src, make_doc("pay-bands", "Pay bands by grade.", [["public:tenant"], ["entra:group:hr"]],
                                      title="Pay bands"))  # fmt: skip
    ingest_inline(org.tenant.pk)
    login(page, web_server, org.admin, org.passwords[org.admin.username])
    page.goto(web_server + "/console/view-as/")
    page.select_option("#va-user", str(org.member.pk))
    page.fill("#va-doc", "Pay bands")
    page.click("form.row button[type=submit]")
    section = page.locator("section.turn")
    expect(section).to_contain_text("Not visible to " + org.member.username)
    expect(section.locator("td.bad")).to_have_text("FAILS")
    expect(section.locator("td.ok")).to_have_text("satisfied")
    assert "entra:group:hr" in section.locator("tr", has=page.locator("td.bad")).inner_text()
    shot(page, "console-view-as")

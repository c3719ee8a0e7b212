"""API tokens and the API reference in a real browser: a member makes a read token, copies it once, calls the
API with it, revokes it; the admin sees the tenant's tokens in the console; Swagger UI renders under the CSP."""

from __future__ import annotations

from typing import Any

import requests
from playwright.sync_api import expect

from tests.browser import Org, login, shot


def test_a_member_creates_uses_and_revokes_a_token_and_the_admin_sees_it(web_server: str, page: Any, browser: Any,
                                                                         org: Org) -> None:  # fmt: skip
    login(page, web_server, org.member, org.passwords[org.member.username])
    page.click("nav >> text=API tokens")
    expect(page.locator("h1")).to_have_text("API tokens")
    expect(page.locator("#t-scope option")).to_have_text(["read"])  # a member cannot pick admin
    page.fill("#t-name", "weekly report")
    page.select_option("#t-expiry", "7")
    page.click("form[aria-label='Create a token'] button[type=submit]")
    key = page.locator("#new-token").inner_text().strip()
    assert key.startswith("cairn_")
    shot(page, "portal-tokens")
    search = requests.get(web_server + "/api/v1/search", params={"q": "travel"},
                          headers={"Authorization": f"Bearer {key}"}, timeout=30)  # fmt: skip
    assert search.status_code == 200
    admin_only = requests.get(web_server + "/api/v1/admin/aliases", headers={"Authorization": f"Bearer {key}"},
                              timeout=30)  # fmt: skip
    assert admin_only.status_code == 403
    page.goto(web_server + "/tokens/")  # shown once: a reload no longer carries the key
    assert key not in page.content()
    row = page.locator("#token-table tbody tr", has_text="weekly report")
    expect(row.locator(".status")).to_have_text("active")
    expect(row).not_to_contain_text("never")  # it was used just now and it expires

    # The admin's console lists bob's token; bob revokes it himself.
    admin = browser.new_context().new_page()
    login(admin, web_server, org.admin, org.passwords[org.admin.username])
    admin.goto(web_server + "/console/tokens/")
    expect(admin.locator("#token-table")).to_contain_text(org.member.username)
    expect(admin.locator("#scim-base")).to_contain_text("/scim/v2/")
    shot(admin, "console-tokens")
    page.click("button[aria-label='Revoke token weekly report']")
    expect(page.locator("#token-table tbody tr", has_text="weekly report").locator(".status")).to_have_text("revoked")
    gone = requests.get(web_server + "/api/v1/search", params={"q": "travel"},
                        headers={"Authorization": f"Bearer {key}"}, timeout=30)  # fmt: skip
    assert gone.status_code == 401
    assert page.js_errors == []


def test_the_api_reference_renders_from_local_files_under_the_csp(web_server: str, page: Any, org: Org) -> None:
    login(page, web_server, org.member, org.passwords[org.member.username])
    outside: list[str] = []
    page.on("request", lambda r: outside.append(r.url) if not r.url.startswith(web_server) else None)
    page.goto(web_server + "/api/v1/docs")
    expect(page.get_by_role("heading", level=1)).to_contain_text("Cairn API")
    expect(page.get_by_role("button", name="GET /api/v1/search", exact=True)).to_be_visible()
    expect(page.locator("body")).to_contain_text("/api/v1/search")
    shot(page, "api-docs")
    assert outside == []
    assert page.js_errors == [], page.js_errors

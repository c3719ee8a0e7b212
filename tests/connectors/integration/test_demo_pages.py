"""A citation link of the demo opens the source document: the demo source server serves a readable page.

The browser signs in to the demo source server with a Cairn demo login (HTTP Basic) and is shown a
page only if that person may read it at the source, with the same restrictions the connectors sync.
"""

from __future__ import annotations

import base64
import html
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from playwright.sync_api import expect

from connectors.demo.server import DemoSources
from tests.browser import shot


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoSources]:
    server = DemoSources(Path(django_settings.CAIRN["DEMO_DATA_DIR"]), tmp_path_factory.mktemp("demo-tls"),
                         limit_per_section=1).start()  # fmt: skip
    yield server
    server.stop()


def get(sources: DemoSources, path: str, login: str | None = None) -> tuple[int, dict[str, str], bytes]:
    context = ssl.create_default_context(cafile=str(sources.cert_path))
    request = urllib.request.Request(sources.base_url + path)
    if login:
        request.add_header("Authorization", "Basic " + base64.b64encode(login.encode()).decode())
    try:
        with urllib.request.urlopen(request, context=context, timeout=10) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def page_path(sources: DemoSources, title_part: str = "", restricted_to: str | None = None) -> str:
    ex = sources.exports
    page = next(p for p in ex.pages.values()
                if p.space != "GLOBEX" and title_part in p.title and p.restrict_group == restricted_to
                and (restricted_to is not None or p.parent is None))  # fmt: skip
    return f"/wiki/spaces/{page.space}/pages/{page.id}"


def test_a_wiki_page_asks_the_browser_to_sign_in_then_shows_the_page_as_html(sources: DemoSources) -> None:
    path = page_path(sources)
    status, headers, _ = get(sources, path)
    assert status == 401 and headers["WWW-Authenticate"].startswith("Basic ")
    status, headers, body = get(sources, path, "carol:carol-demo")
    page = sources.exports.pages[path.rsplit("/", 1)[1]]
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert f"<h1>{html.escape(page.title)}</h1>".encode() in body
    assert "default-src 'none'" in headers["Content-Security-Policy"]
    assert get(sources, path, "carol:wrong-password")[0] == 401


def test_a_restricted_page_is_shown_only_to_whoever_may_read_it_at_the_source(sources: DemoSources) -> None:
    supervisors = page_path(sources, restricted_to="supervisors")
    assert get(sources, supervisors, "alice:alice-demo")[0] == 200
    assert get(sources, supervisors, "bob:bob-demo")[0] == 403
    assert get(sources, supervisors, "mallory:mallory-demo")[0] == 403


def test_a_10q_filing_opens_as_a_pdf_for_finance_only(sources: DemoSources) -> None:
    from urllib.parse import quote

    name = next(iter(sources.exports.pdfs.values())).name
    path = "/sites/finance/Shared%20Documents/" + quote(name)
    status, headers, body = get(sources, path, "carol:carol-demo")
    assert status == 200 and headers["Content-Type"] == "application/pdf" and body.startswith(b"%PDF")
    assert get(sources, path, "bob:bob-demo")[0] == 403
    # The address the connector stores for the file is this one (a link that opens, not a made-up host).
    from connectors.demo.exports import graph_items

    urls = [row["webUrl"] for row in graph_items(sources.exports) if row.get("name") == name]
    assert urls == [sources.base_url + path]


def test_a_signed_in_browser_reads_the_cited_page(sources: DemoSources, browser: Any) -> None:
    path = page_path(sources)
    context = browser.new_context(ignore_https_errors=True,
                                  http_credentials={"username": "alice", "password": "alice-demo"})  # fmt: skip
    try:
        page = context.new_page()
        response = page.goto(sources.base_url + path)
        assert response is not None and response.status == 200
        title = sources.exports.pages[path.rsplit("/", 1)[1]].title
        expect(page.locator("h1")).to_have_text(title)
        expect(page.locator("header")).to_contain_text("Demo Confluence")
        shot(page, "demo-source-page")
    finally:
        context.close()

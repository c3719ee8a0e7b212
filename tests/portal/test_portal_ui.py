"""The employee portal in a real browser: ask, watch the answer stream in, cite, filter, flag."""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from playwright.sync_api import expect

from tenants.context import tenant_context
from tests.answers.helpers import STANDING_DESK_DOCS, STANDING_DESK_QUESTION, add_docs
from tests.browser import Org, login, shot


def test_it_streams_a_cited_answer_with_sources_then_filters_and_flags_a_claim(web_server: str, page: Any,
                                                                               org: Org) -> None:  # fmt: skip
    login(page, web_server, org.admin, org.passwords[org.admin.username])
    page.fill("#q", "How do I book travel?")
    page.press("#q", "Enter")

    claim = page.locator(".claim").first
    expect(claim).to_be_visible(timeout=60_000)
    expect(page.locator(".turn")).to_have_attribute("aria-busy", "false", timeout=60_000)
    # A marker [n] sits on the claim and its quote appears on keyboard focus and on hover.
    marker = claim.locator(".marker").first
    expect(marker).to_have_text("[1]")
    tooltip = claim.locator(".tooltip").first
    expect(tooltip).to_be_hidden()
    marker.focus()
    expect(tooltip).to_be_visible()
    assert "travel" in tooltip.inner_text().lower()
    # The sources panel: title link, source system and container, updated date, badge, quote.
    source = page.locator(".source").first
    expect(source.locator("a").first).to_have_attribute("href", "https://wiki.example.com/travel-booking")
    expect(source.locator(".meta")).to_contain_text("confluence")
    expect(source.locator(".meta")).to_contain_text("updated 2026-01-15")
    expect(source.locator(".badge")).to_be_visible()
    expect(page.locator(".asof").first).to_contain_text("Content as of")
    shot(page, "portal-answer")

    # Flag the first claim as wrong: stored with the claim, bound to the audited answer.
    claim.locator("details.flag summary").click()
    claim.locator("button[data-kind=wrong]").click()
    expect(claim.locator(".flag-status")).to_contain_text("Thanks", timeout=15_000)
    from tenants.models import Feedback

    with tenant_context(org.tenant.pk):
        fb = Feedback.objects.get(user_id=org.admin.pk)
        assert (fb.target, fb.verdict) == ("claim", "wrong")
        assert fb.claim_text == claim.locator(".claim-text").inner_text()
        assert fb.question == "How do I book travel?"

    # Apply a filter: only the HR space.  Every cited source is then from HR.
    page.locator("details.filters summary").click()
    page.select_option("#f-container", "HR")
    page.click("#ask-form button[type=submit]")
    expect(page.locator(".turn")).to_have_attribute("aria-busy", "false", timeout=60_000)
    assert "container=HR" in page.url
    metas = page.locator(".source .meta")
    assert metas.count() >= 1
    for i in range(metas.count()):
        assert "HR" in metas.nth(i).inner_text()
    shot(page, "portal-filtered")
    assert page.js_errors == []  # no CSP violation, no script error


def test_it_keeps_context_for_a_follow_up_and_lists_plain_results(web_server: str, page: Any, org: Org) -> None:
    login(page, web_server, org.member, org.passwords[org.member.username])
    page.goto(web_server + "/?q=" + quote("How do I book travel?"))
    expect(page.locator(".turn").first).to_have_attribute("aria-busy", "false", timeout=60_000)
    follow = page.locator("#followup")
    expect(follow).to_be_visible()
    follow.fill("What about hotels?")
    follow.press("Enter")
    expect(page.locator(".turn")).to_have_count(2)
    expect(page.locator(".turn").nth(1)).to_have_attribute("aria-busy", "false", timeout=60_000)
    assert "hotel" in page.locator(".turn").nth(1).inner_text().lower()

    page.goto(web_server + "/?mode=results&q=" + quote("travel desk"))
    results = page.locator(".result-list .result")
    expect(results.first).to_be_visible()
    assert "Booking travel" in page.locator(".result-list").inner_text()
    shot(page, "portal-results")
    assert page.js_errors == []


def test_it_says_so_when_nothing_readable_matches(web_server: str, page: Any, org: Org) -> None:
    login(page, web_server, org.member, org.passwords[org.member.username])
    page.goto(web_server + "/?q=" + quote("quarterly submarine maintenance torque"))
    expect(page.locator(".turn")).to_have_attribute("aria-busy", "false", timeout=60_000)
    expect(page.locator(".abstention, .empty").first).to_be_visible()
    assert page.locator(".claim").count() == 0


def test_it_names_the_part_of_a_compound_question_it_could_not_answer(web_server: str, page: Any, org: Org) -> None:
    login(page, web_server, org.member, org.passwords[org.member.username])
    page.goto(web_server + "/?q=" + quote(
        "How far ahead do employees book travel, and which parking garage do visitors use on weekends?"))  # fmt: skip
    expect(page.locator(".turn")).to_have_attribute("aria-busy", "false", timeout=60_000)
    expect(page.locator(".claim").first).to_contain_text("fourteen days")
    expect(page.locator(".notice.unanswered")).to_have_text(
        "Not answered from your sources: Which parking garage do visitors use on weekends?"
    )
    assert page.locator(".abstention").count() == 0
    assert page.js_errors == []


def test_it_shows_a_comparisons_computed_conclusion_labelled_above_the_cited_figures(web_server: str, page: Any,
                                                                                     org: Org) -> None:  # fmt: skip
    add_docs(org.tenant, "finance", 1, [
        {"id": "lodging", "title": "Lodging budget", "text": "The lodging budget for the year is $1,250 million."},
        {"id": "airfare", "title": "Airfare budget", "text": "The airfare budget for the year is $2,100 million."},
    ])  # fmt: skip
    login(page, web_server, org.member, org.passwords[org.member.username])
    page.goto(web_server + "/?q=" + quote("Which is larger: the lodging budget or the airfare budget?"))
    expect(page.locator(".turn")).to_have_attribute("aria-busy", "false", timeout=60_000)
    expect(page.locator(".claim")).to_have_count(2)
    expect(page.locator(".conclusion")).to_have_text(
        "Computed from the cited sources: The airfare budget ($2,100 million) was larger than the lodging budget "
        "($1,250 million), by $850 million.")  # fmt: skip
    assert page.js_errors == []


def test_it_shows_claims_past_the_writers_four_apart_under_also_in_the_sources(web_server: str, page: Any,
                                                                               org: Org) -> None:  # fmt: skip
    add_docs(org.tenant, "facilities", 1, STANDING_DESK_DOCS)
    login(page, web_server, org.member, org.passwords[org.member.username])
    page.goto(web_server + "/?q=" + quote(STANDING_DESK_QUESTION))
    expect(page.locator(".turn")).to_have_attribute("aria-busy", "false", timeout=60_000)
    extra = page.locator(".claims-extra")
    expect(extra).to_be_visible()
    expect(extra.locator("h3")).to_have_text("Also in the sources")
    main = page.locator(".answer-body > ol.claims > li.claim")
    assert 1 <= main.count() <= 5 and 1 <= extra.locator("li.claim").count() <= 2
    assert page.locator(".answer-body > ol.claims > li.claim-extra").count() == 0
    assert page.js_errors == []

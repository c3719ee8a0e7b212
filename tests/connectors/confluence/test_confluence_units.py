"""Pure parts of the Confluence connector: CNF building, Retry-After/Link parsing, URL pinning, webhooks."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import requests

from connectors.base import ConnectorError
from connectors.confluence.client import ConfluenceClient, next_link_from_header
from connectors.confluence.permissions import build_acl, restriction_clause, space_clause
from connectors.confluence.webhooks import (
    SECRET_HEADER,
    WebhookRejected,
    parse_event,
    verify_secret,
)
from core.http import parse_retry_after
from tests.connectors.confluence.fake_confluence import FakeConfluence
from tests.connectors.confluence.helpers import ALICE, BOB, can_read

REPO = Path(__file__).resolve().parents[3]
ENG = "confluence:group:eng"


def _grant(ptype: str, pid: str | None, key: str, target: str) -> dict[str, object]:
    return {"principal": {"type": ptype, "id": pid}, "operation": {"key": key, "targetType": target}}


def test_restrictions_intersect_down_the_tree_rather_than_the_nearest_one_winning() -> None:
    parent = restriction_clause({"user": [{"accountId": ALICE.split(":", 2)[2]}], "group": []})
    child = restriction_clause(
        {"user": [{"accountId": BOB.split(":", 2)[2]}, {"accountId": ALICE.split(":", 2)[2]}], "group": []}
    )
    acl = build_acl((ENG,), [parent, None, child])

    assert can_read(acl, {ALICE, ENG})
    assert not can_read(acl, {BOB, ENG})  # listed on the page itself, but not on its ancestor
    assert len(acl) == 3


def test_unrestricted_pages_add_no_clause_and_a_space_without_read_grants_means_nobody() -> None:
    assert build_acl((ENG,), [None, None]) == ((ENG,),)
    assert build_acl((), [None]) == ((),)
    assert not can_read(build_acl((), [None]), {ALICE, ENG, "public:tenant"})


def test_only_read_on_space_grants_view_and_anonymous_read_means_the_whole_tenant() -> None:
    clause = space_clause(
        [
            _grant("group", "eng", "read", "space"),
            _grant("user", "carol", "administer", "space"),
            _grant("user", "carol", "create", "page"),
            _grant("user", "bob", "read", "page"),
            _grant("anonymous", None, "read", "space"),
            _grant("role", "r-1", "read", "space"),
        ]
    )
    assert clause == ("confluence:group:eng", "public:tenant")


def test_a_restriction_entry_without_an_id_grants_nothing_yet_still_restricts() -> None:
    assert restriction_clause({"user": [], "group": []}) is None
    assert restriction_clause({"user": [], "group": [{"name": "legacy-group-without-id"}]}) == ()


def test_retry_after_accepts_fractional_seconds_and_http_dates() -> None:
    assert parse_retry_after("0.3") == pytest.approx(0.3)
    assert parse_retry_after(" 2 ") == 2.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # in the past: no wait
    assert parse_retry_after("soon") is None
    assert parse_retry_after("nan") is None


def test_the_next_cursor_is_read_from_the_link_header() -> None:
    header = '</wiki/api/v2/pages/1/attachments?cursor=abc&limit=2>; rel="next", <https://x/wiki>; rel="base"'
    assert next_link_from_header(header) == "/wiki/api/v2/pages/1/attachments?cursor=abc&limit=2"
    assert next_link_from_header('<https://x/wiki>; rel="base"') is None


def test_links_resolve_under_wiki_and_never_leave_the_site() -> None:
    client = ConfluenceClient("https://acme.atlassian.net/wiki/", session=requests.Session())

    assert client.url("/wiki/api/v2/spaces?cursor=a") == "https://acme.atlassian.net/wiki/api/v2/spaces?cursor=a"
    assert client.url("/rest/api/content/search?cursor=b") == (
        "https://acme.atlassian.net/wiki/rest/api/content/search?cursor=b"
    )
    assert client.url("/download/attachments/1/a.pdf") == "https://acme.atlassian.net/wiki/download/attachments/1/a.pdf"
    with pytest.raises(ConnectorError):
        client.url("https://evil.example/wiki/api/v2/spaces")


@pytest.fixture
def site() -> Iterator[FakeConfluence]:
    fake = FakeConfluence().start()
    yield fake
    fake.stop()


BODY = b'{"timestamp": 1717243200000, "page": {"id": 107, "spaceKey": "ENG", "version": 5}}'


def test_webhooks_with_a_missing_or_wrong_secret_are_rejected() -> None:
    assert verify_secret("right", headers={}, query={"secret": "right"})
    assert verify_secret("right", headers={SECRET_HEADER.lower(): "right"}, query={})
    assert not verify_secret("right", headers={}, query={"secret": "wrong"})
    assert not verify_secret("right", headers={}, query={})
    assert not verify_secret("right", headers={SECRET_HEADER: "wrong"}, query={"secret": "right"})
    assert not verify_secret("", headers={}, query={"secret": ""})  # no secret configured: fail closed


def test_webhooks_are_routed_by_the_last_path_segment() -> None:
    trashed = parse_event("/hooks/confluence/acme/page_trashed", BODY)
    updated = parse_event("/hooks/confluence/acme/page_updated/", BODY)
    blog = parse_event("/hooks/confluence/acme/blog_removed", b'{"blog": {"id": 301, "version": 1}}')

    assert (trashed.action, trashed.kind, trashed.content_id, trashed.version) == ("delete", "page", "107", 5)
    assert (updated.action, updated.space_key) == ("upsert", "ENG")
    assert (blog.kind, blog.action) == ("blogpost", "delete")
    with pytest.raises(WebhookRejected):
        parse_event("/hooks/confluence/acme/space_created", BODY)
    with pytest.raises(WebhookRejected):
        parse_event("/hooks/confluence/acme/page_updated", b'{"page": {"id": "../../admin"}}')


def test_a_redelivered_event_keeps_its_id_and_a_restore_gets_a_new_one() -> None:
    first = parse_event("/hooks/confluence/acme/page_trashed", BODY)
    again = parse_event("/hooks/confluence/acme/page_trashed", BODY)
    restored = parse_event("/hooks/confluence/acme/page_restored", BODY)

    assert first.event_id == again.event_id
    assert restored.event_id != first.event_id


def test_a_signed_webhook_is_verified_by_its_hmac_and_a_bad_signature_wins_over_a_url_secret() -> None:
    from connectors.confluence.webhooks import sign_body

    body = b'{"page": {"id": 107}}'
    # X-Hub-Signature: HMAC-SHA256 of the body under the webhook's secret
    # (https://confluence.atlassian.com/doc/managing-webhooks-1021225606.html).
    signature = sign_body("s3cret", body)
    assert signature.startswith("sha256=") and "s3cret" not in signature

    assert verify_secret("s3cret", headers={"X-Hub-Signature": signature}, query={}, body=body)
    assert verify_secret("s3cret", headers={"x-hub-signature": signature.removeprefix("sha256=")}, query={}, body=body)
    assert not verify_secret("s3cret", headers={"X-Hub-Signature": signature}, query={}, body=body + b" ")
    assert not verify_secret("other", headers={"X-Hub-Signature": signature}, query={}, body=body)
    # A present but wrong signature is refused even when the URL also carries the secret.
    assert not verify_secret("s3cret", headers={"X-Hub-Signature": "sha256=00"}, query={"secret": "s3cret"}, body=body)
    assert not verify_secret("", headers={"X-Hub-Signature": sign_body("", body)}, query={}, body=body)

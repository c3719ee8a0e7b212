"""The permission walk: restrictions and ancestors from the listing itself, attachments from the index.

Against the fake Confluence Cloud site (fixtures: connectors/confluence/fixtures/README.md), whose v1
content listing serves the documented ``restrictions.read.restrictions.{user,group}`` and
``ancestors`` expansions (tests/connectors/confluence/fake_confluence.py).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterator

import pytest
import requests

from connectors.base import UpdateAcl
from connectors.confluence import ConfluenceConnector, ConfluenceSettings
from tests.connectors.confluence.fake_confluence import TOKEN, FakeConfluence
from tests.connectors.confluence.helpers import ALICE, BOB, Index

LISTING = "/wiki/rest/api/content"


@pytest.fixture
def site() -> Iterator[FakeConfluence]:
    fake = FakeConfluence().start()
    yield fake
    fake.stop()


def connector(site: FakeConfluence, page_size: int = 100) -> ConfluenceConnector:
    settings = ConfluenceSettings(site_url=site.url, email="svc@acme.example", api_token=TOKEN, page_size=page_size)
    return ConfluenceConnector(settings, session=requests.Session())


def synced(site: FakeConfluence, page_size: int = 100) -> Index:
    return Index().run(connector(site, page_size).full_sync({}))


def permission_walk(site: FakeConfluence, index: Index, page_size: int = 100) -> list[UpdateAcl]:
    site.requests.clear()
    ops = [op for op, _ in connector(site, page_size).permission_sync({})]
    for op in ops:
        index.apply(op)
    return [op for op in ops if isinstance(op, UpdateAcl)]


def test_the_walk_makes_one_listing_request_per_page_of_items_not_requests_per_item(site: FakeConfluence) -> None:
    generated = site.add_pages_like("107", 950)
    index = synced(site)
    site.set_read_restriction_groups(generated[700], [])
    site.set_read_restriction(generated[700], [{"type": "known", "accountId": ALICE.split(":", 2)[2]}])

    acl_ops = permission_walk(site, index)

    assert len(acl_ops) == 950 + 11  # every page and blog post, once
    paths = Counter(site.paths())
    eng_pages = 7 + 950
    # ENG: ceil(957 / 100) listing pages; the other three spaces' pages and the four blog listings one each.
    assert paths[LISTING] == math.ceil(eng_pages / 100) + 3 + 4
    per_item = [p for p in paths if re.search(r"/(ancestors|attachments|restriction/byOperation/read)$", p)]
    assert per_item == []  # every restriction and ancestor came with the listing
    assert not [p for p in paths if re.fullmatch(r"/wiki/api/v2/(pages|blogposts)/\d+", p)]
    assert sum(paths.values()) < eng_pages / 20
    listing_queries = [r.query for r in site.requests if r.path == LISTING]
    assert {q["expand"] for q in listing_queries if q["type"] == "page"} == {
        "restrictions.read.restrictions.user,restrictions.read.restrictions.group,ancestors"
    }
    assert {q["limit"] for q in listing_queries} == {"100"}
    revoked = f"page:{generated[700]}"
    assert revoked not in index.readable(BOB)
    assert revoked in index.readable(ALICE)
    assert f"page:{generated[699]}" in index.readable(BOB)


def test_the_walk_computes_exactly_the_acls_of_the_per_item_full_sync(site: FakeConfluence) -> None:
    index = synced(site, page_size=2)
    before = dict(index.acls)

    acl_ops = permission_walk(site, index, page_size=2)

    assert index.acls == before  # attachments included, through their pages
    assert {op.external_id: tuple(op.acl) for op in acl_ops} == {
        eid: tuple(acl) for eid, acl in before.items() if not eid.startswith("attachment:")
    }
    # Short pages (page_size 2) are followed through the v1 next links to the end.
    assert Counter(site.paths())[LISTING] > 4


@pytest.mark.parametrize("limit", [0, 1])
def test_a_truncated_expanded_restriction_list_falls_back_to_the_item_request_and_grants_no_more(
    site: FakeConfluence, limit: int
) -> None:
    index = synced(site)
    before = dict(index.acls)
    # Each expanded user/group list now carries at most ``limit`` entries (0: none at all), so a
    # reader that took it at its word would see page 106 (bob only) as unrestricted and page 105
    # ({bob, alice}) as bob's or nobody's.
    site.expanded_restriction_limit = limit

    permission_walk(site, index)

    assert index.acls == before
    assert "page:106" not in index.readable(ALICE)
    fetched = set(site.paths())
    assert "/wiki/rest/api/content/106/restriction/byOperation/read" in fetched
    assert "/wiki/rest/api/content/105/restriction/byOperation/read" in fetched


def test_a_listing_that_ignores_the_expansions_falls_back_to_the_item_requests(site: FakeConfluence) -> None:
    index = synced(site)
    before = dict(index.acls)
    # A server that does not expand what was asked (the entity stays under ``_expandable``).
    site.listing_expansions = frozenset()

    permission_walk(site, index)

    assert index.acls == before
    assert "/wiki/api/v2/pages/104/ancestors" in site.paths()


def test_the_walk_falls_back_to_the_v2_item_walk_when_the_v1_listing_is_gone(site: FakeConfluence) -> None:
    index = synced(site)
    before = dict(index.acls)
    site.v1_content_listing_gone = True

    acl_ops = permission_walk(site, index, page_size=2)

    assert index.acls == before
    assert len(acl_ops) == 11
    assert "/wiki/rest/api/content/102/restriction/byOperation/read" in site.paths()
    assert not [p for p in site.paths() if p.endswith("/attachments")]


def test_descendants_and_attachments_of_a_newly_restricted_page_lose_access_too(site: FakeConfluence) -> None:
    index = synced(site)
    assert {"page:101", "page:107", "page:106", "attachment:att201"} <= index.readable(BOB)
    site.set_read_restriction("101", [{"type": "known", "accountId": ALICE.split(":", 2)[2]}])

    permission_walk(site, index)

    under_101 = {e for e in index.docs if e.startswith(("page:10", "attachment:"))}
    assert under_101 & index.readable(BOB) == set()
    assert "blogpost:301" in index.readable(BOB)  # a blog post of ENG, not under the page
    alice = index.readable(ALICE)
    assert {"page:101", "page:102", "page:107", "attachment:att201", "attachment:att203"} <= alice
    assert "page:106" not in alice  # bob-only under an alice-only parent: nobody


def test_a_resumed_walk_continues_on_the_listing_its_checkpoint_names(site: FakeConfluence) -> None:
    site.add_pages_like("107", 30)
    index = synced(site, page_size=10)
    walk = connector(site, page_size=10).permission_sync({})
    for _ in range(15):
        op, checkpoint = next(walk)
        index.apply(op)
    assert checkpoint["listing"] == "v1-acl" and checkpoint["cursor"] is not None
    site.requests.clear()

    rest = [op for op, _ in connector(site, page_size=10).permission_sync(checkpoint)]

    starts = [int(r.query.get("start", "0")) for r in site.requests if r.path == LISTING]
    assert starts[0] == 10  # the listing page the checkpoint was on, not the first one
    assert len([op for op in rest if isinstance(op, UpdateAcl)]) == 41 - 15
    # A checkpoint of the per-item walk (no listing named) restarts the kind on the ACL listing.
    old = {k: v for k, v in checkpoint.items() if k != "listing"}
    site.requests.clear()
    list(connector(site, page_size=10).permission_sync(old))
    assert int(next(r for r in site.requests if r.path == LISTING).query.get("start", "0")) == 0

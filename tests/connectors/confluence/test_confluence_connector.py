"""ConfluenceConnector against a fake Confluence Cloud site on 127.0.0.1 (fixtures: see its README)."""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
import requests

from connectors.base import (
    ConnectorError,
    DeleteDocument,
    IdentitySeen,
    SetGroupMembers,
    UpdateAcl,
    UpsertDocument,
)
from connectors.confluence import ConfluenceClient, ConfluenceConnector, ConfluenceSettings, parse_event, verify_secret
from connectors.confluence.mapping import STORAGE_MEDIA_TYPE
from tests.connectors.confluence.fake_confluence import TOKEN, FakeConfluence
from tests.connectors.confluence.helpers import ALICE, BOB, CAROL, Index

ENG_PAGES = {f"page:{n}" for n in range(101, 108)}
EVERY_DOC = ENG_PAGES | {
    "attachment:att201",
    "attachment:att202",
    "attachment:att203",  # image/png: indexed by its metadata, with its page's ACL
    "blogpost:301",
    "page:401",
    "page:501",
    "page:601",
}


@pytest.fixture
def site() -> Iterator[FakeConfluence]:
    fake = FakeConfluence().start()
    yield fake
    fake.stop()


def make_connector(site: FakeConfluence, **overrides: object) -> ConfluenceConnector:
    settings = ConfluenceSettings(
        site_url=site.url,
        email="svc@acme.example",
        api_token=TOKEN,
        page_size=2,  # small pages so every listing paginates
        **overrides,  # type: ignore[arg-type]
    )
    return ConfluenceConnector(settings, session=requests.Session())


def full_index(site: FakeConfluence) -> Index:
    return Index().run(make_connector(site).full_sync({}))


# ---------------------------------------------------------------- permissions


def test_each_user_reads_exactly_what_confluence_would_show_them(site: FakeConfluence) -> None:
    index = full_index(site)

    assert set(index.docs) == EVERY_DOC
    assert index.table() == {
        "alice": {
            "page:101",
            "attachment:att201",
            "attachment:att203",
            "page:102",
            "page:103",
            "page:104",
            "page:105",
            "page:107",
            "blogpost:301",
            "page:401",
            "page:501",
        },
        "bob": {
            "page:101",
            "attachment:att201",
            "attachment:att203",
            "page:106",
            "attachment:att202",
            "page:107",
            "blogpost:301",
            "page:501",
        },
        "carol": {"page:401", "page:501"},
    }


def test_it_hides_pages_restricted_by_an_ancestor(site: FakeConfluence) -> None:
    index = full_index(site)

    # 104's grandparent 102 is restricted to {leads, carol}; 103 and 104 have no restriction of their own.
    assert "page:104" in index.readable(ALICE)
    assert "page:104" not in index.readable(BOB)
    leads = "confluence:group:1ead0000-0000-4000-8000-000000001ead"
    assert any(leads in clause for clause in index.acls["page:104"])


def test_a_pages_own_restriction_intersects_with_the_one_it_inherits(site: FakeConfluence) -> None:
    index = full_index(site)

    # 105 lists bob and alice, its parent 102 does not list bob: nearest-wins would wrongly show it to bob.
    assert "page:105" in index.readable(ALICE)
    assert "page:105" not in index.readable(BOB)
    assert len(index.acls["page:105"]) == 3  # space + 102 + 105


def test_a_single_user_page_is_readable_by_that_user_only(site: FakeConfluence) -> None:
    index = full_index(site)

    assert [name for name, docs in index.table().items() if "page:106" in docs] == ["bob"]


def test_an_attachment_inherits_its_pages_acl(site: FakeConfluence) -> None:
    index = full_index(site)

    assert index.acls["attachment:att202"] == index.acls["page:106"]
    assert index.acls["attachment:att201"] == index.acls["page:101"]
    # image/png: nothing to extract, so it is not downloaded, yet it is indexed with the page's ACL.
    assert index.acls["attachment:att203"] == index.acls["page:101"]


def test_only_the_read_space_permission_grants_view(site: FakeConfluence) -> None:
    index = full_index(site)

    # carol may create pages in, administer and export ENG but was never given read/space.
    assert not index.readable(CAROL) & ENG_PAGES
    # LOCK grants no read at all: the empty clause means nobody.
    assert index.acls["page:601"] == ((),)


def test_anonymous_space_access_makes_a_page_readable_by_the_whole_tenant(site: FakeConfluence) -> None:
    index = full_index(site)

    assert any("public:tenant" in clause for clause in index.acls["page:501"])
    assert all("page:501" in docs for docs in index.table().values())


def test_it_reports_group_members_and_identities_for_the_cast(site: FakeConfluence) -> None:
    index = full_index(site)

    assert index.groups["confluence:group:e1000000-0000-4000-8000-00000000e001"] == {ALICE, BOB}
    assert index.groups["confluence:group:f1000000-0000-4000-8000-00000000f001"] == {CAROL}
    carol = index.identities[CAROL]
    assert (carol.email, carol.email_verified, carol.display_name) == (
        "carol@acme.example",
        True,
        "Carol Chen",
    )


# ---------------------------------------------------------------- documents


def test_documents_carry_ids_urls_spaces_versions_and_times_from_the_api(site: FakeConfluence) -> None:
    index = full_index(site)

    page = index.docs["page:107"]
    assert page.title == "Release process"
    assert page.url == "https://acme.atlassian.net/wiki/spaces/ENG/pages/107/Release+process"
    assert page.container == "ENG"
    assert page.source_version == 5
    assert page.media_type == STORAGE_MEDIA_TYPE
    assert page.content.startswith(b'<ac:structured-macro ac:name="info">')
    assert page.created_at == datetime(2024, 1, 24, 10, 0, tzinfo=UTC)
    assert page.updated_at == datetime(2024, 2, 24, 11, 30, tzinfo=UTC)

    pdf = index.docs["attachment:att201"]
    assert pdf.media_type == "application/pdf"
    assert pdf.content.startswith(b"%PDF-1.4")
    assert pdf.source_version == 2
    assert pdf.container == "ENG"
    assert pdf.url.startswith("https://acme.atlassian.net/wiki/pages/viewpageattachments.action?pageId=101")

    blog = index.docs["blogpost:301"]
    assert (blog.title, blog.container, blog.source_version) == ("Launch recap", "ENG", 1)


def test_it_calls_v2_for_content_and_v1_only_for_restrictions_groups_and_cql(site: FakeConfluence) -> None:
    connector = make_connector(site)
    Index().run(connector.full_sync({}))
    Index().run(connector.incremental_sync({"since": "2024-01-01T00:00:00+00:00"}))

    allowed = [
        r"/wiki/api/v2/spaces",
        r"/wiki/api/v2/spaces/\d+",
        r"/wiki/api/v2/spaces/\d+/(pages|blogposts|permissions)",
        r"/wiki/api/v2/(pages|blogposts)/\d+",
        r"/wiki/api/v2/(pages|blogposts)/\d+/attachments",
        r"/wiki/api/v2/pages/\d+/ancestors",
        r"/wiki/rest/api/content/\d+/restriction/byOperation/read",
        r"/wiki/rest/api/group",
        r"/wiki/rest/api/group/[0-9a-f-]+/membersByGroupId",
        r"/wiki/rest/api/content/search",
        r"/wiki/download/attachments/\d+/[\w.]+",
    ]
    paths = set(site.paths())
    assert paths, "the connector made no requests"
    assert {p for p in paths if not any(re.fullmatch(a, p) for a in allowed)} == set()
    # Every body read asked for storage format; every v1 CQL query went to /wiki/rest/api.
    for r in site.requests:
        if re.fullmatch(r"/wiki/api/v2/(pages|blogposts)/\d+", r.path):
            assert r.query.get("body-format") == "storage"
    assert "/wiki/rest/api/content/search" in paths
    assert "/wiki/api/v2/pages/104/ancestors" in paths
    assert "/wiki/rest/api/content/102/restriction/byOperation/read" in paths
    # No 404 means no mis-prefixed URL (e.g. /spaces or /content/search at the site root).
    assert all(r.status != 404 for r in site.requests)


def test_it_waits_out_a_429_with_a_fractional_retry_after_and_retries(site: FakeConfluence) -> None:
    site.throttle_once["/wiki/api/v2/pages/103"] = "0.3"

    started = time.monotonic()
    index = full_index(site)
    elapsed = time.monotonic() - started

    statuses = [r.status for r in site.requests if r.path == "/wiki/api/v2/pages/103"]
    assert statuses == [429, 200]
    assert elapsed >= 0.3
    assert "page:103" in index.docs


# ---------------------------------------------------------------- checkpoints


def test_a_restart_after_a_mid_sync_failure_resumes_without_rereading_or_duplicating(
    site: FakeConfluence,
) -> None:
    clean = full_index(site)
    site.requests.clear()
    site.fail_once.add("/wiki/api/v2/pages/106")  # the 6th ENG page: second item of listing batch 3

    index = Index()
    with pytest.raises(ConnectorError):
        index.run(make_connector(site).full_sync({}))
    assert (index.checkpoint["kind"], index.checkpoint["last_id"]) == ("page", "105")
    index.run(make_connector(site).full_sync(index.checkpoint))

    assert index.docs == clean.docs
    assert index.acls == clean.acls
    upserts = Counter(op.doc.external_id for op in index.applied if isinstance(op, UpsertDocument))
    assert set(upserts.values()) == {1}
    bodies = Counter(p for p in site.paths() if re.fullmatch(r"/wiki/api/v2/pages/\d+", p))
    assert bodies["/wiki/api/v2/pages/105"] == 1  # finished before the crash: not fetched again
    assert bodies["/wiki/api/v2/pages/106"] == 2  # the failed attempt, then the resumed one
    assert all(count == 1 for path, count in bodies.items() if not path.endswith("/106"))
    assert index.checkpoint["complete"] is True


def test_a_finished_run_restarts_from_scratch_and_hands_its_start_to_incremental(
    site: FakeConfluence,
) -> None:
    start = datetime(2024, 6, 1, 12, 0, tzinfo=UTC)
    connector = ConfluenceConnector(
        ConfluenceSettings(site_url=site.url, email="svc@acme.example", api_token=TOKEN, page_size=2),
        session=requests.Session(),
        now=lambda: start,
    )
    index = Index().run(connector.full_sync({}))

    assert index.checkpoint == {"mode": "full", "complete": True, "since": start.isoformat()}
    again = Index().run(connector.full_sync(index.checkpoint))
    assert set(again.docs) == EVERY_DOC


def test_incremental_sync_picks_up_an_edit_since_the_last_run_minus_the_overlap(site: FakeConfluence) -> None:
    index = full_index(site)
    last_run = datetime(2024, 6, 1, 12, 0, tzinfo=UTC)
    site.edit_page("101", body="<p>Welcome, now with on-call rota.</p>", when="2024-06-01T12:10:00.000Z")
    site.requests.clear()

    connector = ConfluenceConnector(
        ConfluenceSettings(
            site_url=site.url,
            email="svc@acme.example",
            api_token=TOKEN,
            page_size=2,
            incremental_overlap=timedelta(minutes=30),
        ),
        session=requests.Session(),
        now=lambda: last_run + timedelta(hours=1),
    )
    before = len(index.applied)
    index.run(connector.incremental_sync({"since": last_run.isoformat()}))

    search = [r for r in site.requests if r.path == "/wiki/rest/api/content/search"]
    assert search[0].query["cql"] == (
        'type in (page,blogpost,attachment) and lastmodified >= "2024-06-01 11:30" order by lastmodified asc'
    )
    upserted = [op.doc for op in index.applied[before:] if isinstance(op, UpsertDocument)]
    assert [d.external_id for d in upserted] == ["page:101", "attachment:att201", "attachment:att203"]
    assert index.docs["page:101"].source_version == 4
    assert index.docs["page:101"].content == b"<p>Welcome, now with on-call rota.</p>"
    assert index.checkpoint == {"mode": "incremental", "since": "2024-06-01T13:00:00+00:00", "complete": True}


def test_permission_sync_updates_acls_without_fetching_bodies(site: FakeConfluence) -> None:
    index = full_index(site)
    acl_of_104 = index.acls["page:104"]
    # bob is dropped from his own page's restriction, carol is listed instead (she lacks ENG read).
    carol = {"type": "known", "accountId": CAROL.removeprefix("confluence:user:"), "accountType": "atlassian"}
    site.set_read_restriction("106", [carol])
    site.requests.clear()

    ops = [op for op, _ in make_connector(site).permission_sync({})]
    for op in ops:
        index.apply(op)

    assert {type(op) for op in ops} == {UpdateAcl, SetGroupMembers, IdentitySeen}
    # Pages and blog posts; their attachments take the container's ACL from the index, unlisted.
    acl_ops = [op for op in ops if isinstance(op, UpdateAcl)]
    assert {op.external_id for op in acl_ops} == {e for e in EVERY_DOC if not e.startswith("attachment:")}
    assert {op.inherited_by_container for op in acl_ops} == {op.external_id.split(":")[1] for op in acl_ops}
    assert index.table()["bob"] == {
        "page:101",
        "attachment:att201",
        "attachment:att203",
        "page:107",
        "blogpost:301",
        "page:501",
    }
    assert "page:106" not in index.readable(CAROL)  # listed, but still no read/space on ENG
    assert index.acls["page:104"] == acl_of_104
    fetched = site.paths()
    assert not [p for p in fetched if re.fullmatch(r"/wiki/api/v2/(pages|blogposts)/\d+", p)]
    assert not [p for p in fetched if p.startswith("/wiki/download/")]
    assert not [p for p in fetched if p.endswith("/attachments")]


def test_slim_listing_lists_every_synced_id(site: FakeConfluence) -> None:
    assert set(make_connector(site).slim_listing()) == EVERY_DOC


# ---------------------------------------------------------------- webhooks


def test_a_trashed_then_restored_page_leaves_and_returns_via_webhooks(site: FakeConfluence) -> None:
    index = full_index(site)
    connector = make_connector(site)
    secret = "s3cret-value"
    payload = (
        b'{"userAccountId": "557058:b0b00000-0000-4000-8000-000000000002", "accountType": "customer",'
        b' "timestamp": %d, "page": {"id": 107, "spaceKey": "ENG", "title": "Release process",'
        b' "contentType": "page", "version": 5, "creationDate": 1706090400000,'
        b' "modificationDate": 1708774200000, "self": "https://acme.atlassian.net/wiki/spaces/ENG/pages/107"}}'
    )

    assert verify_secret(secret, headers={}, query={"secret": secret})
    site.trash_page("107")
    trashed = parse_event("/hooks/confluence/acme/page_trashed", payload % 1717243200000)
    for op in connector.webhook_ops(trashed):
        index.apply(op)
    assert "page:107" not in index.docs
    assert "page:107" not in index.readable(ALICE)

    site.restore_page("107")
    restored = parse_event("/hooks/confluence/acme/page_restored", payload % 1717246800000)
    for op in connector.webhook_ops(restored):
        index.apply(op)
    assert index.docs["page:107"].source_version == 5
    assert "page:107" in index.readable(ALICE) and "page:107" in index.readable(BOB)
    assert "page:107" not in index.readable(CAROL)
    assert trashed.event_id != restored.event_id
    # The trash event replayed after the restore: Confluence says the page is current, so it stays.
    replayed = list(connector.webhook_ops(trashed))
    assert not [op for op in replayed if isinstance(op, DeleteDocument)]
    assert [op.doc.external_id for op in replayed if isinstance(op, UpsertDocument)][0] == "page:107"


# ---------------------------------------------------------------- admin


def test_test_connection_reports_bad_credentials_without_echoing_the_token(site: FakeConfluence) -> None:
    settings = ConfluenceSettings(site_url=site.url, email="svc@acme.example", api_token="wrong-token-xyz")
    connector = ConfluenceConnector(settings, session=requests.Session())

    with pytest.raises(ConnectorError) as caught:
        connector.test_connection()
    assert "rejected" in str(caught.value)
    assert "wrong-token-xyz" not in str(caught.value)
    make_connector(site).test_connection()


def test_test_connection_names_configured_spaces_that_do_not_exist(site: FakeConfluence) -> None:
    with pytest.raises(ConnectorError, match="NOPE"):
        make_connector(site, space_keys=("ENG", "NOPE")).test_connection()


def _hook_payload(page_id: int, version: int, ts: int = 1717243200000) -> bytes:
    return (
        b'{"userAccountId": "557058:ca201000-0000-4000-8000-000000000003", "accountType": "customer",'
        b' "timestamp": %d, "page": {"id": %d, "spaceKey": "ENG", "version": %d}}' % (ts, page_id, version)
    )


def test_a_forged_or_replayed_webhook_cannot_hide_delete_or_roll_back_a_page(site: FakeConfluence) -> None:
    index = full_index(site)
    connector = make_connector(site)

    # mallory forges a trash and a removal for a live page: Confluence says it is current.
    for route in ("page_trashed", "page_removed"):
        for op in connector.webhook_ops(parse_event(f"/hooks/confluence/x/{route}", _hook_payload(107, 6))):
            index.apply(op)
    assert "page:107" in index.docs and "page:107" in index.readable(ALICE)

    # A replayed page_updated claiming version 1 re-reads the page: version 5, the API's body.
    ops = list(connector.webhook_ops(parse_event("/hooks/confluence/x/page_updated", _hook_payload(107, 1))))
    for op in ops:
        index.apply(op)
    assert index.docs["page:107"].source_version == 5
    assert index.docs["page:107"].content.startswith(b'<ac:structured-macro ac:name="info">')
    assert all(op.source_version is None for op in ops if isinstance(op, DeleteDocument))

    # A real trash is confirmed by the API (404 for the page itself) and removes it.
    site.trash_page("107")
    for op in connector.webhook_ops(parse_event("/hooks/confluence/x/page_updated", _hook_payload(107, 6))):
        index.apply(op)
    assert "page:107" not in index.docs


def test_a_page_the_api_reports_as_trashed_leaves_the_index(site: FakeConfluence) -> None:
    index = full_index(site)
    # v2 answers a trashed page with status "trashed" when asked for it
    # (ContentStatus, https://developer.atlassian.com/cloud/confluence/rest/v2/api-group-page/#api-pages-id-get).
    site.json["/wiki/api/v2/pages/103"]["status"] = "trashed"

    for op in make_connector(site).webhook_ops(parse_event("/hooks/confluence/x/page_trashed", _hook_payload(103, 2))):
        index.apply(op)

    assert "page:103" not in index.docs
    assert "page:104" in index.docs


def test_a_404_for_the_space_an_ancestor_or_a_group_never_deletes_content(site: FakeConfluence) -> None:
    index = full_index(site)
    before = dict(index.docs)
    space = site.json.pop("/wiki/api/v2/spaces/65537")  # the space by id now answers 404
    site.json.pop("/wiki/rest/api/group/1ead0000-0000-4000-8000-000000001ead/membersByGroupId")
    connector = make_connector(site)

    ops = list(connector.webhook_ops(parse_event("/hooks/confluence/x/page_updated", _hook_payload(107, 5))))
    assert not [op for op in ops if isinstance(op, DeleteDocument)]

    site.json["/wiki/api/v2/spaces/65537"] = space
    ancestors = site.json.pop("/wiki/api/v2/pages/104/ancestors")  # the ancestor lookup answers 404
    with pytest.raises(ConnectorError):  # the event is retried later; nothing was deleted
        list(make_connector(site).webhook_ops(parse_event("/hooks/confluence/x/page_updated", _hook_payload(104, 1))))
    site.json["/wiki/api/v2/pages/104/ancestors"] = ancestors

    ops = [op for op, _ in make_connector(site).permission_sync({})]
    for op in ops:
        index.apply(op)
    assert not [op for op in ops if isinstance(op, DeleteDocument)]
    assert set(index.docs) == set(before)
    assert "confluence:group:1ead0000-0000-4000-8000-000000001ead" not in {
        op.group_principal for op in ops if isinstance(op, SetGroupMembers)
    }  # skipped, not emptied and not fatal


def test_v1_listings_follow_next_links_through_short_pages_to_the_end(site: FakeConfluence) -> None:
    site.v1_page_cap = 1  # asked for 2 per page, served 1: a short page that is not the last
    connector = make_connector(site)

    groups = list(connector.client.groups())
    members = list(connector.client.group_members("e1000000-0000-4000-8000-00000000e001"))

    assert [g["name"] for g in groups] == ["engineering", "leads", "finance"]
    assert {m["accountId"] for m in members} == {ALICE.split(":", 2)[2], BOB.split(":", 2)[2]}
    starts = [r.query.get("start") for r in site.requests if r.path == "/wiki/rest/api/group"]
    assert starts == ["0", "1", "2"]


def test_a_long_retry_after_goes_back_to_the_queue_instead_of_sleeping(site: FakeConfluence) -> None:
    site.throttle_once["/wiki/api/v2/pages/103"] = "8"  # above the 2 s inline budget, below 60 s
    slept: list[float] = []
    client = ConfluenceClient(
        site.url, session=requests.Session(), email="svc@acme.example", api_token=TOKEN, page_size=2,
        sleep=slept.append,
    )  # fmt: skip
    connector = ConfluenceConnector(ConfluenceSettings(site_url=site.url), client=client)

    with pytest.raises(ConnectorError) as caught:
        Index().run(connector.full_sync({}))

    assert caught.value.retry_after == pytest.approx(8, abs=0.01)  # the task's countdown
    assert not [s for s in slept if s > 2.0]  # nothing slept in-process for the long wait


def test_document_urls_are_absolute_even_when_the_api_gives_relative_links(site: FakeConfluence) -> None:
    index = full_index(site)
    connector = make_connector(site)
    # Before any listing brings ``_links.base``, links resolve against the site's /wiki root.
    assert connector.client.base_url == f"{site.url}/wiki"
    # The webhook path reads single entities (no ``base``); the base comes from a listing it makes.
    ops = list(connector.webhook_ops(parse_event("/hooks/confluence/x/page_updated", _hook_payload(107, 5))))
    hooked = next(op.doc for op in ops if isinstance(op, UpsertDocument))

    for doc in [*index.docs.values(), hooked]:
        assert doc.url.startswith(("https://", "http://")), doc.url
    assert index.docs["attachment:att203"].url.startswith("https://acme.atlassian.net/wiki/pages/viewpageattachments")
    assert (
        hooked.url
        == index.docs["page:107"].url
        == "https://acme.atlassian.net/wiki/spaces/ENG/pages/107/Release+process"
    )


def test_attachments_without_an_extractor_are_indexed_by_metadata_without_downloading(site: FakeConfluence) -> None:
    index = full_index(site)

    image = index.docs["attachment:att203"]
    assert (image.title, image.media_type, image.content) == ("diagram.png", "image/png", b"")
    assert image.metadata["metadata_only"] == "1"
    assert image.metadata["file_name"] == "diagram.png"
    assert image.metadata["container_title"]
    assert image.author and image.created_at and image.updated_at
    assert not [p for p in site.paths() if p.endswith("/diagram.png")]

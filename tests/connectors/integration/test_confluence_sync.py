"""Confluence: fake Cloud site -> ConfluenceConnector -> sync task -> real pipeline -> search API."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from rest_framework.test import APIClient

from connectors.confluence.webhooks import sign_body
from connectors.models import InboundEvent
from connectors.tasks import execute_sync, process_inbound_event
from core.crypto import decrypt_text
from retrieval.tasks import process_pending_inline
from tenants.context import tenant_context
from tests.connectors.confluence.fake_confluence import TOKEN, FakeConfluence
from tests.connectors.confluence.helpers import ALICE, BOB, CAROL
from tests.connectors.integration.helpers import (
    documents,
    expected_table,
    make_instance,
    map_identities,
    sync,
    table,
    tiny_docx,
    tiny_pdf,
)
from tests.connectors.integration.readers import READERS
from tests.support import unique


@pytest.fixture
def site() -> Iterator[FakeConfluence]:
    fake = FakeConfluence()
    fake.blobs["/wiki/download/attachments/101/runbook.pdf"] = tiny_pdf("Runbook for the on-call rotation")
    fake.blobs["/wiki/download/attachments/106/notes.docx"] = tiny_docx("Bob private notes on the quarterly review")
    fake.start()
    yield fake
    fake.stop()


@pytest.fixture(autouse=True)
def _private_queue(settings) -> None:  # type: ignore[no-untyped-def]
    # Runs execute in-process here; the queued task messages go to a queue no worker reads.
    settings.CAIRN = {**settings.CAIRN, "CONNECTOR_QUEUE": unique("test-inline")}


def _instance(cast, site):  # type: ignore[no-untyped-def]
    instance = make_instance(
        cast.tenant_a.pk, "confluence", unique("wiki"), {"site_url": site.url, "page_size": 2},
        {"email": "svc@acme.example", "api_token": TOKEN},
    )  # fmt: skip
    map_identities(cast.tenant_a.pk, {ALICE: cast.alice, BOB: cast.bob, CAROL: cast.carol})
    return instance


def _hook(instance, event: str, page_id: int, version: int, ts: int, secret: str | None = None,  # type: ignore[no-untyped-def]
          signed_with: str | None = None):  # fmt: skip
    body = (
        '{"userAccountId": "557058:b0b00000-0000-4000-8000-000000000002", "accountType": "customer",'
        f' "timestamp": {ts}, "page": {{"id": {page_id}, "spaceKey": "ENG", "version": {version}}}}}'
    )
    url = f"/hooks/confluence/{instance.hook_uuid}/{event}"
    if secret is not None:
        url += f"?secret={secret}"
    headers = {}
    if signed_with is not None:
        headers["HTTP_X_HUB_SIGNATURE"] = sign_body(signed_with, body.encode())
    return APIClient().post(url, data=body, content_type="application/json", **headers)


def test_it_syncs_the_site_and_each_person_reads_exactly_what_confluence_allows(cast, site) -> None:
    instance = _instance(cast, site)
    state = sync(cast.tenant_a.pk, instance, "full")
    assert state.status == "done", state.last_error
    docs = documents(cast.tenant_a.pk, instance)
    assert set(docs) == set(READERS)
    assert table(cast, docs) == expected_table(READERS)
    # mallory (another tenant) sees none of it
    assert table(cast, docs, ("mallory",)) == {"mallory": set()}


def test_it_removes_a_trashed_page_and_brings_it_back_when_restored_via_webhooks(cast, site) -> None:
    instance = _instance(cast, site)
    sync(cast.tenant_a.pk, instance, "full")
    with tenant_context(cast.tenant_a.pk):
        secret = decrypt_text(instance.webhook_secret_encrypted)

    assert _hook(instance, "page_trashed", 106, 2, 1717243200000).status_code == 401  # no secret
    assert _hook(instance, "page_trashed", 106, 2, 1717243200000, "wrong").status_code == 401
    assert _hook(instance, "page_exploded", 106, 2, 1717243200000, secret).status_code == 400

    site.trash_page("106")
    resp = _hook(instance, "page_trashed", 106, 2, 1717243200000, secret)
    assert resp.status_code == 200 and resp.json()["status"] == "accepted"
    assert _hook(instance, "page_trashed", 106, 2, 1717243200000, secret).json()["status"] == "duplicate"
    _drain(cast.tenant_a.pk)
    docs = documents(cast.tenant_a.pk, instance)
    assert "page:106" not in docs
    assert "page:106" not in table(cast, docs, ("bob",))["bob"]

    site.restore_page("106")
    assert _hook(instance, "page_restored", 106, 2, 1717246800000, secret).status_code == 200
    _drain(cast.tenant_a.pk)
    docs = documents(cast.tenant_a.pk, instance)
    assert "page:106" in docs
    assert "page:106" in table(cast, docs, ("bob",))["bob"]
    assert "page:106" not in table(cast, docs, ("alice",))["alice"]


def test_an_incremental_sync_picks_up_an_edit_and_a_permission_sync_enforces_a_new_restriction(cast, site) -> None:
    instance = _instance(cast, site)
    sync(cast.tenant_a.pk, instance, "full")
    site.edit_page("107", body="<p>Release trains now leave every Tuesday from platform nine</p>",
                   when="2099-01-01T00:00:00.000Z")  # fmt: skip
    state = sync(cast.tenant_a.pk, instance, "incremental")
    assert state.status == "done", state.last_error
    with tenant_context(cast.tenant_a.pk):
        from retrieval.models import Document

        assert "platform nine" in Document.objects.get(source_id=instance.source_id, external_id="page:107").text
    # 107 becomes a single-user page for alice: bob loses it after the permission sync (ACL fast path)
    site.set_read_restriction("107", [{"type": "known", "accountId": ALICE.split(":", 2)[2]}])
    restriction = site.json["/wiki/rest/api/content/107/restriction/byOperation/read"]["restrictions"]
    restriction["group"] = {"results": [], "start": 0, "limit": 200, "size": 0}
    state = sync(cast.tenant_a.pk, instance, "permission")
    assert state.status == "done", state.last_error
    docs = documents(cast.tenant_a.pk, instance)
    got = table(cast, docs, ("alice", "bob"))
    assert "page:107" in got["alice"] and "page:107" not in got["bob"]


def _acl_events(tenant_id: int, instance, run_id: str) -> set[str]:  # type: ignore[no-untyped-def]
    """External ids the run queued an ``acl`` ingest event for."""
    from retrieval.models import IngestEvent

    with tenant_context(tenant_id):
        return set(
            IngestEvent.objects.filter(source_id=instance.source_id, kind="acl", event_id__startswith=f"acl:{run_id}:")
            .values_list("external_id", flat=True)
        )  # fmt: skip


def test_a_permission_sync_of_an_unchanged_site_queues_no_acl_events(cast, site) -> None:
    instance = _instance(cast, site)
    sync(cast.tenant_a.pk, instance, "full")

    state = sync(cast.tenant_a.pk, instance, "permission")

    assert state.status == "done", state.last_error
    assert _acl_events(cast.tenant_a.pk, instance, state.run_id) == set()
    assert state.acl_updates == 0 and state.ops_applied > 0
    docs = documents(cast.tenant_a.pk, instance)
    assert table(cast, docs) == expected_table(READERS)


def test_a_restriction_added_to_a_page_of_a_large_site_is_enforced_after_one_permission_sync(cast, site) -> None:
    generated = site.add_pages_like("107", 120)  # restricted to the group engineering: alice and bob
    instance = _instance(cast, site)
    sync(cast.tenant_a.pk, instance, "full")
    target, neighbour = f"page:{generated[97]}", f"page:{generated[96]}"
    docs = documents(cast.tenant_a.pk, instance)
    picked = {k: docs[k] for k in (target, neighbour, "page:107")}
    assert table(cast, picked, ("bob",)) == {"bob": set(picked)}
    target = generated[97]
    site.requests.clear()
    site.set_read_restriction_groups(target, [])
    site.set_read_restriction(target, [{"type": "known", "accountId": ALICE.split(":", 2)[2]}])

    state = sync(cast.tenant_a.pk, instance, "permission")

    assert state.status == "done", state.last_error
    assert _acl_events(cast.tenant_a.pk, instance, state.run_id) == {f"page:{target}"}
    got = table(cast, picked, ("alice", "bob", "carol", "mallory"))
    assert got == {
        "alice": set(picked),
        "bob": {neighbour, "page:107"},
        "carol": set(),
        "mallory": set(),
    }
    # One listing request per 2 items (page_size 2 here), none per item.
    assert not [p for p in site.paths() if p.endswith(("/ancestors", "/attachments", "/byOperation/read"))]


def test_descendants_and_attachments_of_a_newly_restricted_page_lose_access_after_one_permission_sync(
    cast, site
) -> None:
    instance = _instance(cast, site)
    sync(cast.tenant_a.pk, instance, "full")
    site.set_read_restriction("101", [{"type": "known", "accountId": ALICE.split(":", 2)[2]}])

    state = sync(cast.tenant_a.pk, instance, "permission")

    assert state.status == "done", state.last_error
    under_101 = {eid for eid in READERS if eid.startswith(("page:10", "attachment:"))}
    # Exactly the changed items: 101, every page below it and their attachments (from our index).
    assert _acl_events(cast.tenant_a.pk, instance, state.run_id) == under_101
    docs = documents(cast.tenant_a.pk, instance)
    got = table(cast, docs)
    assert got["bob"] & under_101 == set()
    assert "blogpost:301" in got["bob"]
    assert got["alice"] & under_101 == {eid for eid in under_101 if "alice" in READERS[eid]}  # all she read before
    assert table(cast, docs, ("mallory",)) == {"mallory": set()}


def _drain(tenant_id: int) -> None:
    with tenant_context(tenant_id):
        pending = list(InboundEvent.objects.filter(status="pending").values_list("pk", flat=True))
    for pk in pending:
        process_inbound_event(tenant_id, pk)
    process_pending_inline(tenant_id)


def test_a_webhook_event_fails_visibly_instead_of_retrying_forever_when_confluence_rejects_the_token(
    cast, site
) -> None:
    instance = make_instance(
        cast.tenant_a.pk, "confluence", unique("wiki"), {"site_url": site.url, "page_size": 2},
        {"email": "svc@acme.example", "api_token": "revoked-token"},
    )  # fmt: skip
    with tenant_context(cast.tenant_a.pk):
        secret = decrypt_text(instance.webhook_secret_encrypted)
    assert _hook(instance, "page_updated", 107, 3, 1717243200000, secret).status_code == 200
    with tenant_context(cast.tenant_a.pk):
        pk = InboundEvent.objects.get(instance=instance).pk
    assert process_inbound_event(cast.tenant_a.pk, pk) == "failed"
    with tenant_context(cast.tenant_a.pk):
        event = InboundEvent.objects.get(pk=pk)
    assert event.status == "failed" and "rejected" in event.error and "revoked-token" not in event.error


def test_a_signed_but_forged_trash_or_rollback_changes_nothing_and_a_confirmed_trash_removes_the_page(
    cast, site
) -> None:
    instance = _instance(cast, site)
    sync(cast.tenant_a.pk, instance, "full")
    with tenant_context(cast.tenant_a.pk):
        secret = decrypt_text(instance.webhook_secret_encrypted)
    assert _hook(instance, "page_trashed", 107, 9, 1717243200000, signed_with="wrong").status_code == 401

    # Correctly signed (the secret never in the URL), but the page is live at version 5.
    assert _hook(instance, "page_trashed", 107, 9, 1717243200000, signed_with=secret).status_code == 200
    assert _hook(instance, "page_updated", 107, 1, 1717243300000, signed_with=secret).status_code == 200
    _drain(cast.tenant_a.pk)
    docs = documents(cast.tenant_a.pk, instance)
    assert docs["page:107"].source_version == 5
    assert "page:107" in table(cast, docs, ("alice",))["alice"]

    site.trash_page("107")
    assert _hook(instance, "page_trashed", 107, 5, 1717243400000, signed_with=secret).status_code == 200
    _drain(cast.tenant_a.pk)
    assert "page:107" not in documents(cast.tenant_a.pk, instance)


def test_a_long_retry_after_sends_the_run_back_to_the_queue_and_the_retry_completes_it(cast, site) -> None:
    instance = _instance(cast, site)
    site.throttle_once["/wiki/api/v2/pages/103"] = "30"
    with tenant_context(cast.tenant_a.pk):
        from connectors.actions import do_request_sync

        state = do_request_sync(instance, "full")

    assert execute_sync(cast.tenant_a.pk, instance.pk, "full", state.run_id) == "throttled"
    assert execute_sync(cast.tenant_a.pk, instance.pk, "full", state.run_id) not in ("throttled", "retrying")
    process_pending_inline(cast.tenant_a.pk)
    assert set(documents(cast.tenant_a.pk, instance)) == set(READERS)

"""SharePoint: fake Entra + Graph (TLS) -> SharePointConnector -> sync task -> real pipeline -> search API.

The connector runs unmodified against ``tests/connectors/sharepoint/fake_graph.py``; the only trust
given to the fake is the instance's operator-only ``tls_ca_file`` (its throwaway certificate) and
``allow_private_network`` (it listens on 127.0.0.1).  Who-can-read-what is asked through
``GET /api/v1/search`` with each person's own API token.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from connectors.models import InboundEvent, SyncState
from connectors.tasks import execute_sync
from core.crypto import decrypt_text
from retrieval.tasks import process_pending_inline
from tenants.actions import do_add_member, do_create_api_token, do_create_user
from tenants.context import tenant_context
from tests.connectors.integration.helpers import documents, make_instance, map_identities, sync, table, tiny_pdf
from tests.connectors.sharepoint.fake_graph import CLIENT_SECRET, FakeGraph, write_self_signed_cert
from tests.support import unique

DOCS = "b!docs"
SUBSCRIPTION = "sub-docs-1"
NAMES = ("alice", "bob", "carol", "gail")


def _doc(item_id: str) -> str:
    return f"driveitem:{DOCS}:{item_id}"


@pytest.fixture(scope="module")
def cert(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return write_self_signed_cert(tmp_path_factory.mktemp("graph-tls"))


@pytest.fixture
def graph(cert: tuple[Path, Path]) -> Iterator[FakeGraph]:
    fake = FakeGraph(*cert)
    # The fixture's file bodies are placeholders; give the pipeline bytes it can really extract
    # (a valid PDF, plain text for the spreadsheet and the Word file) so every file is indexed.
    items = {i["id"]: i for i in fake.site["drive_items"][DOCS]}
    items["i-handbook"]["content"] = tiny_pdf("Employee handbook for the finance team").decode("ascii")
    items["i-budget"]["file"] = {"mimeType": "text/plain"}
    items["i-notes"]["file"] = {"mimeType": "text/plain"}
    fake.start()
    yield fake
    fake.stop()


@pytest.fixture(autouse=True)
def _private_queue(settings) -> None:  # type: ignore[no-untyped-def]
    # Runs execute in-process here; queued task messages go to a queue no worker reads.
    settings.CAIRN = {**settings.CAIRN, "CONNECTOR_QUEUE": unique("test-inline")}


@pytest.fixture
def instance(cast, graph, cert):  # type: ignore[no-untyped-def]
    name = unique("gail")
    gail = do_create_user(name, f"{name}@example.com", "pw-" + name, email_verified=True)
    cast.tokens["gail"] = do_create_api_token(do_add_member(cast.tenant_a, gail))
    inst = make_instance(
        cast.tenant_a.pk, "sharepoint", unique("finance"),
        graph.connector_config(subscriptions={SUBSCRIPTION: DOCS}),
        {"client_secret": CLIENT_SECRET}, tls_ca_file=str(cert[0]),
    )  # fmt: skip
    map_identities(cast.tenant_a.pk, {"entra:user:u-alice": cast.alice, "entra:user:u-bob": cast.bob,
                                      "entra:user:u-carol": cast.carol, "entra:user:u-gail": gail})  # fmt: skip
    return inst


def _files(got: dict[str, set[str]]) -> dict[str, set[str]]:
    return {who: {eid for eid in ids if eid.startswith("driveitem:")} for who, ids in got.items()}


def test_it_syncs_the_site_and_each_person_reads_exactly_what_sharepoint_allows(cast, instance) -> None:
    state = sync(cast.tenant_a.pk, instance, "full")
    assert state.status == "done", state.last_error
    docs = documents(cast.tenant_a.pk, instance)
    assert {_doc(i) for i in ("i-budget", "i-handbook", "i-notes", "i-press", "i-secret")} <= set(docs)

    got = _files(table(cast, docs, NAMES))
    assert got == {
        # budget.xlsx is shared with the Finance group: alice directly, bob through the nested
        # "Finance leads" group; carol and gail are in neither.  handbook.pdf has an organization
        # link: every internal member, not the guest gail.  press-kit: anonymous link.
        # notes.docx: a "specific people" link to carol plus a direct grant to gail.
        "alice": {_doc("i-budget"), _doc("i-handbook"), _doc("i-press")},
        "bob": {_doc("i-budget"), _doc("i-handbook"), _doc("i-press")},
        "carol": {_doc("i-handbook"), _doc("i-notes"), _doc("i-press")},
        "gail": {_doc("i-notes"), _doc("i-press")},
    }
    assert table(cast, docs, ("mallory",)) == {"mallory": set()}


def test_a_delta_round_applies_an_edit_and_a_deletion_and_a_410_resyncs_the_drive(cast, instance, graph) -> None:
    sync(cast.tenant_a.pk, instance, "full")
    graph.update_file(DOCS, "i-budget", "budget 2024: travel 12k and a new conference line")
    graph.delete_file(DOCS, "i-press")

    state = sync(cast.tenant_a.pk, instance, "incremental")
    assert state.status == "done", state.last_error
    docs = documents(cast.tenant_a.pk, instance)
    assert _doc("i-press") not in docs
    assert "conference line" in docs[_doc("i-budget")].text
    got = _files(table(cast, docs, NAMES))
    assert got["alice"] == {_doc("i-budget"), _doc("i-handbook")}
    assert got["gail"] == {_doc("i-notes")}

    # The delta token expires (410 Gone): the drive is read again from scratch, and a change
    # made meanwhile arrives with it.
    graph.expire_delta_tokens()
    graph.update_file(DOCS, "i-handbook", tiny_pdf("Employee handbook revised after resync").decode("ascii"))
    state = sync(cast.tenant_a.pk, instance, "incremental")
    assert state.status == "done", state.last_error
    assert any("/root/delta" in s.path and "token=" not in s.query for s in graph.seen[-40:])
    docs = documents(cast.tenant_a.pk, instance)
    assert "revised after resync" in docs[_doc("i-handbook")].text
    assert _doc("i-press") not in docs
    assert _files(table(cast, docs, ("bob", "gail"))) == {"bob": {_doc("i-budget"), _doc("i-handbook")},
                                                          "gail": {_doc("i-notes")}}  # fmt: skip


def _notify(instance, body: object, query: str = ""):  # type: ignore[no-untyped-def]
    url = f"/hooks/sharepoint/{instance.hook_uuid}/notifications{query}"
    return APIClient().post(url, data=json.dumps(body), content_type="application/json")


def test_graph_change_notifications_are_validated_authenticated_and_make_a_change_searchable(
    cast, instance, graph
) -> None:
    tenant = cast.tenant_a.pk
    sync(tenant, instance, "full")
    with tenant_context(tenant):
        secret = decrypt_text(instance.webhook_secret_encrypted)

    # Subscription handshake: the decoded token comes back verbatim as text/plain.
    resp = _notify(instance, {}, "?validationToken=Validation%3A%20Testing%20client%20application")
    assert resp.status_code == 200 and resp["Content-Type"].startswith("text/plain")
    assert resp.content == b"Validation: Testing client application"

    change = {"subscriptionId": SUBSCRIPTION, "tenantId": graph.tenant_id, "changeType": "updated",
              "resource": f"drives/{DOCS}/root", "subscriptionExpirationDateTime": "2099-01-01T00:00:00Z"}  # fmt: skip
    with tenant_context(tenant):
        before = InboundEvent.objects.filter(instance=instance).count()
        incremental = SyncState.objects.get(instance=instance, mode="incremental")
        runs_before = incremental.run_id
    resp = _notify(instance, {"value": [{**change, "clientState": "guessed"}]})
    assert resp.status_code == 401 and resp.json()["error"]["code"] == "invalid_client_state"
    with tenant_context(tenant):
        assert InboundEvent.objects.filter(instance=instance).count() == before
        assert SyncState.objects.get(instance=instance, mode="incremental").run_id == runs_before

    graph.add_file(DOCS, {"id": "i-memo", "name": "memo.txt", "file": {"mimeType": "text/plain"},
                          "content": "quarterly close moves to the second Friday",
                          "permissions": [{"id": "p9", "roles": ["read"],
                                           "grantedToV2": {"group": {"id": "g-finance"}}}]})  # fmt: skip
    resp = _notify(instance, {"value": [{**change, "clientState": secret}]})
    assert resp.status_code == 202
    with tenant_context(tenant):
        state = SyncState.objects.get(instance=instance, mode="incremental")
        assert state.status == "queued" and state.run_id != runs_before
    # The queued delta run, executed like the worker would, then the ingest events.
    assert execute_sync(tenant, instance.pk, "incremental", state.run_id) == "done"
    process_pending_inline(tenant)

    docs = documents(tenant, instance)
    assert _doc("i-memo") in docs
    got = _files(table(cast, {_doc("i-memo"): docs[_doc("i-memo")]}, NAMES))
    assert got == {"alice": {_doc("i-memo")}, "bob": {_doc("i-memo")}, "carol": set(), "gail": set()}

    # A second change to the same drive arrives as an identical body (Graph notifications carry
    # no id).  It must still trigger a delta run once the previous one has run.
    graph.add_file(DOCS, {"id": "i-memo2", "name": "memo2.txt", "file": {"mimeType": "text/plain"},
                          "content": "the audit committee meets in March",
                          "permissions": [{"id": "p10", "roles": ["read"],
                                           "grantedToV2": {"group": {"id": "g-finance"}}}]})  # fmt: skip
    resp = _notify(instance, {"value": [{**change, "clientState": secret}]})
    assert resp.status_code == 202
    with tenant_context(tenant):
        again = SyncState.objects.get(instance=instance, mode="incremental")
        assert again.status == "queued" and again.run_id != state.run_id
    assert execute_sync(tenant, instance.pk, "incremental", again.run_id) == "done"
    process_pending_inline(tenant)
    assert _doc("i-memo2") in documents(tenant, instance)

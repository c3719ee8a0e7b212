"""SharePointConnector against a fake Entra + Graph v1.0 on 127.0.0.1 (TLS)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

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
from connectors.sharepoint import SharePointConfig, SharePointConnector
from connectors.sharepoint.factory import certificate_credential
from connectors.sharepoint.mapping import epoch_micros
from tests.connectors.sharepoint.fake_graph import (
    CLIENT_ID,
    CLIENT_SECRET,
    FakeGraph,
    Fault,
    write_app_certificate,
    write_self_signed_cert,
)
from tests.connectors.sharepoint.helpers import Index, ops_of

USERS = {"alice": "u-alice", "bob": "u-bob", "carol": "u-carol", "gail": "u-gail"}
DOCS = "b!docs"


@pytest.fixture(scope="module")
def cert(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return write_self_signed_cert(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def app_cert(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    return write_app_certificate(tmp_path_factory.mktemp("app-cert"))


@pytest.fixture
def graph(cert: tuple[Path, Path], app_cert: tuple[str, str]) -> Iterator[FakeGraph]:
    fake = FakeGraph(*cert)
    fake.register_certificate(app_cert[0])
    fake.start()
    yield fake
    fake.stop()


@pytest.fixture
def sleeps() -> list[float]:
    return []


def _session(graph: FakeGraph, cert_path: Path) -> requests.Session:
    try:
        from core.http import build_session
    except ImportError:
        session = requests.Session()
    else:
        # The real hardened client, with the fake's address exempted from the private-IP block.
        session = build_session(allowed_hosts=[f"127.0.0.1:{graph.port}"])
    session.verify = str(cert_path)
    return session


def _config(graph: FakeGraph, app_cert: tuple[str, str] | None, **overrides: Any) -> SharePointConfig:
    return SharePointConfig(
        tenant_id=graph.tenant_id,
        client_id=CLIENT_ID,
        client_secret=CLIENT_SECRET,
        site_ids=(graph.site["id"],),
        graph_base_url=f"{graph.base}/v1.0",
        authority_host=graph.base,
        sharepoint_base_url=graph.base,
        # The recommended registration: a certificate (SharePoint REST refuses secrets).
        client_certificate=certificate_credential(app_cert[0]) if app_cert else None,
        **overrides,
    )


@pytest.fixture
def connector(
    graph: FakeGraph, cert: tuple[Path, Path], app_cert: tuple[str, str], sleeps: list[float]
) -> SharePointConnector:
    config = _config(graph, app_cert)
    return SharePointConnector(config, session=_session(graph, cert[0]), sleep=sleeps.append, jitter=lambda: 0.5)


def _doc_id(item_id: str) -> str:
    return f"driveitem:{DOCS}:{item_id}"


def test_a_full_sync_indexes_files_list_items_and_published_pages_with_sharepoint_metadata(
    graph: FakeGraph, connector: SharePointConnector
) -> None:
    index = Index()
    index.apply(connector.full_sync({}))

    site_id = graph.site["id"]
    assert sorted(index.docs) == sorted(
        [
            _doc_id("i-budget"),
            _doc_id("i-handbook"),
            _doc_id("i-notes"),
            _doc_id("i-press"),
            _doc_id("i-secret"),
            f"listitem:{site_id}:list-vendors:1",
            f"sitepage:{site_id}:page-0001",
        ]
    )
    budget = index.docs[_doc_id("i-budget")]
    assert budget.title == "budget.xlsx"
    assert budget.content == b"budget 2024: travel 10k"
    assert budget.media_type == "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
    assert budget.container == "Finance/Documents"
    assert budget.url == "https://contoso.sharepoint.com/sites/finance/Shared%20Documents/budget.xlsx"
    assert budget.source_version == epoch_micros("2024-03-01T00:01:00.123456Z")
    page = index.docs[f"sitepage:{site_id}:page-0001"]
    assert page.media_type == "text/html"
    assert b"Expense policy lives in the handbook." in page.content and b"Quick links" in page.content
    assert page.container == "Finance/Site Pages"
    vendor = index.docs[f"listitem:{site_id}:list-vendors:1"]
    assert vendor.content == b"Northwind\nPhone: +1 555 0100"
    assert index.checkpoint["complete"] is True
    assert set(index.checkpoint["delta_links"]) == {DOCS}


def test_who_can_read_what_follows_nested_groups_links_guests_and_fails_closed(
    connector: SharePointConnector,
) -> None:
    index = Index()
    index.apply(connector.full_sync({}))

    assert index.readable(USERS) == {
        # budget.xlsx: Finance group (alice direct, bob through the nested Finance leads group)
        # and the "Finance Owners" site group (bob by name, carol as an owner of the Microsoft
        # 365 group whose "_o" claim is in it).  handbook.pdf: organization link.  press-kit.txt:
        # anonymous link.  Welcome page: "Everyone except external users".  Northwind: Finance
        # leads only.
        "alice": ["Welcome to Finance", "budget.xlsx", "handbook.pdf", "press-kit.txt"],
        "bob": ["Northwind", "Welcome to Finance", "budget.xlsx", "handbook.pdf", "press-kit.txt"],
        # carol is named on the "specific people" link of notes.docx and owns the M365 group.
        "carol": ["Welcome to Finance", "budget.xlsx", "handbook.pdf", "notes.docx", "press-kit.txt"],
        # gail is a guest: not in entra:org, so neither the org link nor the all-members claim
        # reaches her; the direct share and the anonymous link do.
        "gail": ["notes.docx", "press-kit.txt"],
    }
    # secret.txt has no grant at all: one empty clause, nobody.
    assert index.docs[_doc_id("i-secret")].acl == ((),)


def test_the_org_principal_lists_internal_members_only_and_identities_carry_guest_status(
    graph: FakeGraph, connector: SharePointConnector
) -> None:
    index = Index()
    index.apply(connector.full_sync({}))

    org = f"entra:org:{graph.tenant_id}"
    assert index.members[org] == ("entra:user:u-alice", "entra:user:u-bob", "entra:user:u-carol")
    assert index.members["entra:group:g-finance"] == ("entra:user:u-alice", "entra:user:u-bob")
    gail = index.identities["entra:user:u-gail"]
    assert (gail.is_guest, gail.email, gail.email_verified) == (True, "gail@fabrikam.example", False)
    carol = index.identities["entra:user:u-carol"]
    assert (carol.is_guest, carol.email, carol.email_verified) == (False, "carol@contoso.com", True)
    # The owners site group is read from SharePoint REST: bob by name, carol through the "_o"
    # (owners) claim of the Microsoft 365 group; alice is only a member of that group.
    owners_group = f"sharepoint:sitegroup:{graph.site['id']}:3"
    assert index.members[owners_group] == ("entra:user:u-bob", "entra:user:u-carol")
    assert index.checkpoint["failures"] == []


def test_a_delta_round_reports_changed_files_and_deletions_only(
    graph: FakeGraph, connector: SharePointConnector
) -> None:
    index = Index()
    index.apply(connector.full_sync({}))
    before = index.docs[_doc_id("i-budget")].source_version

    graph.update_file(DOCS, "i-budget", "budget 2024: travel 12k")
    graph.delete_file(DOCS, "i-press")
    ops = index.apply(connector.incremental_sync(index.checkpoint))

    assert [type(op) for op in ops] == [UpsertDocument, DeleteDocument]
    assert ops_of(DeleteDocument, ops)[0].external_id == _doc_id("i-press")
    budget = index.docs[_doc_id("i-budget")]
    assert budget.content == b"budget 2024: travel 12k"
    assert budget.source_version > before
    assert _doc_id("i-press") not in index.docs

    # Nothing changed since: the next round starts from the new delta link and yields nothing.
    assert index.apply(connector.incremental_sync(index.checkpoint)) == []


def test_a_410_on_the_delta_link_resyncs_that_drive_from_scratch(
    graph: FakeGraph, connector: SharePointConnector
) -> None:
    index = Index()
    index.apply(connector.full_sync({}))
    graph.expire_delta_tokens()

    ops = index.apply(connector.incremental_sync(index.checkpoint))

    resynced = sorted(op.doc.external_id for op in ops_of(UpsertDocument, ops))
    assert resynced == sorted(_doc_id(i) for i in ("i-budget", "i-handbook", "i-notes", "i-press", "i-secret"))
    assert "token=" in index.checkpoint["delta_links"][DOCS]
    assert index.apply(connector.incremental_sync(index.checkpoint)) == []


def test_downloads_follow_the_302_without_sending_the_bearer_token_to_the_download_host(
    graph: FakeGraph, connector: SharePointConnector
) -> None:
    Index().apply(connector.full_sync({}))

    content_calls = graph.requests_to(r"/items/[^/]+/content$")
    downloads = graph.requests_to(r"^/_layouts/download/")
    assert content_calls and len(downloads) == len(content_calls)
    assert all(s.headers.get("Authorization", "").startswith("Bearer ") for s in content_calls)
    assert all("Authorization" not in s.headers for s in downloads)
    assert all("tempauth=short-lived" in s.query for s in downloads)


def test_a_429_with_fractional_retry_after_is_waited_out_and_retried(
    graph: FakeGraph, connector: SharePointConnector, sleeps: list[float]
) -> None:
    graph.fail(Fault(r"/permissions$", 429, {"Retry-After": "0.25"}, times=1))

    index = Index()
    index.apply(connector.full_sync({}))

    # Retry-After is a floor; jitter (0.5 of at most 10% + 50 ms here) only adds to it.
    assert sleeps == [pytest.approx(0.25 + 0.5 * 0.075)]
    assert _doc_id("i-budget") in index.docs


def test_throttling_longer_than_the_budget_is_handed_back_to_the_scheduler(
    graph: FakeGraph, connector: SharePointConnector, sleeps: list[float]
) -> None:
    graph.fail(Fault(r"/drives$", 429, {"Retry-After": "600"}, times=1))

    with pytest.raises(ConnectorError) as raised:
        Index().apply(connector.full_sync({}))

    assert raised.value.retry_after is not None and raised.value.retry_after >= 600
    assert sleeps == []


def test_the_app_token_is_fetched_once_and_reused_for_every_graph_call(
    graph: FakeGraph, connector: SharePointConnector
) -> None:
    Index().apply(connector.full_sync({}))

    assert len(graph.tokens_for(graph.base)) == 1
    assert len(graph.requests_to(r"^/v1\.0/")) > 10


def test_wrong_credentials_surface_as_a_connector_error_without_the_secret(
    graph: FakeGraph, cert: tuple[Path, Path]
) -> None:
    config = SharePointConfig(
        tenant_id=graph.tenant_id,
        client_id=CLIENT_ID,
        client_secret="wrong-secret-value",
        site_ids=(graph.site["id"],),
        graph_base_url=f"{graph.base}/v1.0",
        authority_host=graph.base,
    )
    connector = SharePointConnector(config, session=_session(graph, cert[0]))

    with pytest.raises(ConnectorError) as raised:
        connector.test_connection()

    assert "wrong-secret-value" not in str(raised.value)
    assert "wrong-secret-value" not in repr(config)


def test_a_sync_that_fails_midway_resumes_from_its_checkpoint_without_duplicates(
    graph: FakeGraph, connector: SharePointConnector
) -> None:
    # Delta order is f-reports, budget | handbook, notes | press, secret | root (pages of 2).
    graph.fail(Fault(r"/items/i-notes/content$", 500, times=1))
    index = Index()
    with pytest.raises(ConnectorError):
        index.apply(connector.full_sync({}))
    first_run = [op.doc.external_id for op in ops_of(UpsertDocument, index.applied)]
    # The op computed before the failure (handbook) is still delivered with its checkpoint.
    assert first_run == [_doc_id("i-budget"), _doc_id("i-handbook")]

    index.apply(connector.full_sync(index.checkpoint))

    upserted = [op.doc.external_id for op in ops_of(UpsertDocument, index.applied)]
    assert len(upserted) == len(set(upserted)) == 7
    assert len(graph.requests_to(r"^/_layouts/download/.*/i-budget$")) == 1
    assert len(graph.requests_to(r"^/_layouts/download/.*/i-handbook$")) == 1
    group_ops = [op.group_principal for op in ops_of(SetGroupMembers, index.applied)]
    assert len(group_ops) == len(set(group_ops))
    assert len(ops_of(IdentitySeen, index.applied)) == 4


def test_permission_sync_updates_acls_and_refreshes_transitive_members(
    graph: FakeGraph, connector: SharePointConnector
) -> None:
    index = Index()
    index.apply(connector.full_sync({}))
    handbook = next(i for i in graph.site["drive_items"][DOCS] if i["id"] == "i-handbook")
    handbook["permissions"] = [
        {
            "id": "p9",
            "roles": ["read"],
            "link": {"scope": "users"},
            "grantedToIdentitiesV2": [{"user": {"id": "u-gail"}}],
        }
    ]
    graph.tenant["groups"]["g-finance-leads"]["members"].append("u-carol")

    ops = index.apply(connector.permission_sync({}))

    assert not ops_of(UpsertDocument, ops)
    acl_updates = {op.external_id: op.acl for op in ops_of(UpdateAcl, ops)}
    assert acl_updates[_doc_id("i-handbook")] == (("entra:user:u-gail",),)
    assert index.readable(USERS)["gail"] == ["handbook.pdf", "notes.docx", "press-kit.txt"]
    assert "entra:user:u-carol" in index.members["entra:group:g-finance"]
    assert index.can_read("u-carol", _doc_id("i-budget"))


def test_slim_listing_names_every_indexed_item(graph: FakeGraph, connector: SharePointConnector) -> None:
    index = Index()
    index.apply(connector.full_sync({}))

    assert sorted(connector.slim_listing()) == sorted(index.docs)

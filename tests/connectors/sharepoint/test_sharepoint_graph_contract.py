"""SharePointConnector against the fake Graph + SharePoint REST where the services are strict.

Each test pins one documented behaviour: the fake rejects what Graph / SharePoint reject
(advanced queries, sharing changes without Sites.FullControl.All, secret-only tokens on
SharePoint REST), and the connector sends what they require.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests

from connectors.base import SetGroupMembers, UpdateAcl, UpsertDocument
from connectors.sharepoint import SharePointConfig, SharePointConnector
from connectors.sharepoint.client import DELTA_PREFER, FULL_CONTROL_ROLE
from connectors.sharepoint.factory import certificate_credential
from connectors.sharepoint.sync import NO_FULL_CONTROL_WARNING
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
M365_GROUP = "0d7f0e1a-0000-4000-8000-0000000000f1"


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


def _session(graph: FakeGraph, cert_path: Path) -> requests.Session:
    from core.http import build_session

    session = build_session(allowed_hosts=[f"127.0.0.1:{graph.port}"])
    session.verify = str(cert_path)
    return session


def _connector(graph: FakeGraph, cert: tuple[Path, Path], app_cert: tuple[str, str] | None,
               **overrides: Any) -> SharePointConnector:  # fmt: skip
    config = SharePointConfig(
        tenant_id=graph.tenant_id,
        client_id=CLIENT_ID,
        client_secret=CLIENT_SECRET,
        site_ids=(graph.site["id"],),
        graph_base_url=f"{graph.base}/v1.0",
        authority_host=graph.base,
        sharepoint_base_url=graph.base,
        client_certificate=certificate_credential(app_cert[0]) if app_cert else None,
        **overrides,
    )
    return SharePointConnector(config, session=_session(graph, cert[0]), sleep=lambda s: None, jitter=lambda: 0.0)


@pytest.fixture
def connector(graph: FakeGraph, cert: tuple[Path, Path], app_cert: tuple[str, str]) -> SharePointConnector:
    return _connector(graph, cert, app_cert)


def _doc(item_id: str) -> str:
    return f"driveitem:{DOCS}:{item_id}"


def _bearer(connector: SharePointConnector) -> dict[str, str]:
    return {"Authorization": f"Bearer {connector.client.access_token()}"}


# -- advanced queries -------------------------------------------------------------------


def test_a_transitive_member_cast_is_sent_as_an_advanced_query_and_refused_without_one(
    graph: FakeGraph, connector: SharePointConnector
) -> None:
    session = connector.client.session
    url = f"{graph.base}/v1.0/groups/g-finance/transitiveMembers/microsoft.graph.user"
    plain = session.get(url, headers=_bearer(connector))
    assert plain.status_code == 400 and plain.json()["error"]["code"] == "Request_UnsupportedQuery"
    no_count = session.get(url, headers={**_bearer(connector), "ConsistencyLevel": "eventual"})
    assert no_count.status_code == 400

    before = len(graph.seen)
    index = Index()
    index.apply(connector.full_sync({}))

    casts = [s for s in graph.requests_to(r"/(transitiveMembers|owners)/microsoft\.graph\.user$")
             if graph.seen.index(s) >= before]  # fmt: skip
    assert casts and all(s.headers.get("ConsistencyLevel") == "eventual" and "%24count=true" in s.query
                         for s in casts)  # fmt: skip
    assert index.members["entra:group:g-finance"] == ("entra:user:u-alice", "entra:user:u-bob")


# -- one failing principal --------------------------------------------------------------


def test_one_group_that_cannot_be_expanded_grants_nothing_while_the_rest_of_the_sync_stands(
    graph: FakeGraph, connector: SharePointConnector
) -> None:
    graph.fail(Fault(r"/groups/g-finance-leads/transitiveMembers", 500, times=1))
    index = Index()

    index.apply(connector.full_sync({}))

    cp = index.checkpoint
    assert cp["complete"] is True and set(cp["delta_links"]) == {DOCS}
    assert [f["item"] for f in cp["failures"]] == ["entra:group:g-finance-leads"]
    assert "500" in cp["failures"][0]["error"]
    # Fail closed for that group only: Northwind (Finance leads) is readable by nobody, while the
    # organization set and the other group were still written.
    assert index.members["entra:group:g-finance-leads"] == ()
    assert index.members[f"entra:org:{graph.tenant_id}"] == ("entra:user:u-alice", "entra:user:u-bob",
                                                             "entra:user:u-carol")  # fmt: skip
    assert index.members["entra:group:g-finance"] == ("entra:user:u-alice", "entra:user:u-bob")
    assert "Northwind" not in index.readable(USERS)["bob"]

    # The next (incremental) run retries it; nothing else is re-expanded.
    ops = index.apply(connector.incremental_sync(index.checkpoint))

    assert [op.group_principal for op in ops_of(SetGroupMembers, ops)] == ["entra:group:g-finance-leads"]
    assert index.members["entra:group:g-finance-leads"] == ("entra:user:u-bob",)
    assert index.checkpoint["failures"] == [] and index.checkpoint["retry"] == []
    assert "Northwind" in index.readable(USERS)["bob"]


# -- sharing changes through delta ------------------------------------------------------


def test_a_removed_link_arrives_with_the_next_delta_as_an_acl_change_without_a_download(
    graph: FakeGraph, connector: SharePointConnector
) -> None:
    index = Index()
    index.apply(connector.full_sync({}))
    assert "handbook.pdf" in index.readable(USERS)["carol"]
    downloads = len(graph.requests_to(r"^/_layouts/download/"))

    graph.set_sharing(DOCS, "i-handbook", [])  # the organization link is deleted
    ops = index.apply(connector.incremental_sync(index.checkpoint))

    assert ops == [UpdateAcl(_doc("i-handbook"), ((),))]
    assert len(graph.requests_to(r"^/_layouts/download/")) == downloads
    assert not any("handbook.pdf" in titles for titles in index.readable(USERS).values())
    deltas = graph.requests_to(r"/root/delta$")
    assert deltas and all(s.headers.get("Prefer") == DELTA_PREFER for s in deltas)
    assert index.checkpoint["warnings"] == []


def test_a_folder_whose_sharing_changed_gives_every_file_below_it_a_fresh_acl(
    graph: FakeGraph, connector: SharePointConnector
) -> None:
    index = Index()
    index.apply(connector.full_sync({}))
    assert "budget.xlsx" in index.readable(USERS)["alice"]

    # Reports/ stops being shared with the Finance group and is shared with gail instead.
    graph.set_sharing(
        DOCS, "f-reports", [{"id": "p-gail", "roles": ["read"], "grantedToV2": {"user": {"id": "u-gail"}}}]
    )
    ops = index.apply(connector.incremental_sync(index.checkpoint))

    # Delta reported only the folder; the connector walked its children.
    assert [op.external_id for op in ops_of(UpdateAcl, ops)] == [_doc("i-budget")]
    assert not ops_of(UpsertDocument, ops)
    readable = index.readable(USERS)
    assert "budget.xlsx" in readable["gail"]
    assert "budget.xlsx" not in readable["alice"]  # her grant was the Finance group on the folder
    assert "budget.xlsx" in readable["bob"]  # still in the Finance Owners site group (own grant)


def test_without_full_control_sharing_changes_wait_for_the_permission_sync_and_the_run_says_so(
    graph: FakeGraph, connector: SharePointConnector
) -> None:
    graph.roles.discard(FULL_CONTROL_ROLE)
    index = Index()
    index.apply(connector.full_sync({}))
    assert index.checkpoint["warnings"] == [NO_FULL_CONTROL_WARNING]

    graph.set_sharing(DOCS, "i-handbook", [])
    assert index.apply(connector.incremental_sync(index.checkpoint)) == []  # Graph scoped it away
    assert "handbook.pdf" in index.readable(USERS)["carol"]

    index.apply(connector.permission_sync({}))
    assert "handbook.pdf" not in index.readable(USERS)["carol"]


# -- SharePoint site groups -------------------------------------------------------------


def test_site_group_members_come_from_sharepoint_rest_with_owner_claims_meaning_owners(
    graph: FakeGraph, connector: SharePointConnector
) -> None:
    index = Index()
    index.apply(connector.full_sync({}))

    owners = f"sharepoint:sitegroup:{graph.site['id']}:3"
    # bob by name; carol as owner of the M365 group ("_o" claim); alice is only a member of it;
    # the SharePoint app account has no Entra user and grants nothing.
    assert index.members[owners] == ("entra:user:u-bob", "entra:user:u-carol")
    [call] = graph.requests_to(r"/_api/web/sitegroups/getbyid\(3\)/users$")
    assert call.path == "/sites/finance/_api/web/sitegroups/getbyid(3)/users"
    assert call.headers["Accept"] == "application/json;odata=nometadata"
    assert graph.tokens_for("https://contoso.sharepoint.com")  # a SharePoint token, not Graph's


def test_a_hand_typed_site_group_is_only_an_override(
    graph: FakeGraph, cert: tuple[Path, Path], app_cert: tuple[str, str]
) -> None:
    owners = f"sharepoint:sitegroup:{graph.site['id']}:3"
    connector = _connector(graph, cert, app_cert, site_group_members={owners: ["entra:user:u-gail"]})
    index = Index()

    index.apply(connector.full_sync({}))

    assert index.members[owners] == ("entra:user:u-gail",)
    assert not graph.requests_to(r"getbyid\(3\)")


def test_sharepoint_rest_refuses_a_secret_only_app_and_that_site_group_grants_nobody(
    graph: FakeGraph, cert: tuple[Path, Path], connector: SharePointConnector
) -> None:
    # The fake answers as SharePoint does without the nometadata Accept (Atom, not JSON).
    site_token = connector.client.access_token(scopes=["https://contoso.sharepoint.com/.default"])
    atom = connector.client.session.get(f"{graph.base}/sites/finance/_api/web/sitegroups/getbyid(3)/users",
                                        headers={"Authorization": f"Bearer {site_token}"})  # fmt: skip
    assert atom.headers["Content-Type"].startswith("application/atom+xml")

    secret_only = _connector(graph, cert, None)
    index = Index()
    index.apply(secret_only.full_sync({}))

    owners = f"sharepoint:sitegroup:{graph.site['id']}:3"
    assert index.members[owners] == ()
    [failure] = index.checkpoint["failures"]
    assert failure["item"] == owners and "certificate" in failure["error"]
    assert index.checkpoint["complete"] is True


# -- lists and pages --------------------------------------------------------------------


def _leads_only() -> list[dict[str, Any]]:
    return [{"id": "pl", "roles": ["read"], "grantedToV2": {"group": {"id": "g-finance-leads"}}}]


def test_every_list_template_is_indexed_with_its_items_permissions(
    graph: FakeGraph, connector: SharePointConnector
) -> None:
    templates = {
        "announcements": {"Title": "Office move", "Body": "<div><p>We move on <b>June 3</b>.</p></div>"},
        "events": {"Title": "Quarter close", "EventDate": "2024-06-28T09:00:00Z", "Location": "Room 4"},
        "tasks": {"Title": "File VAT return", "Status": "In Progress", "PercentComplete": 0.5},
        "issueTracking": {"Title": "Invoice scanner down", "Priority": "(1) High", "Comment": "<p>Vendor called</p>"},
        "links": {"URL": {"Url": "https://intranet.contoso.com/expenses", "Description": "Expense portal"}},
        "contributorList": {"Title": "A template this code has never heard of"},
    }
    for template, fields in templates.items():
        graph.add_list({"id": f"list-{template}", "name": template, "displayName": template.title(),
                        "list": {"template": template, "hidden": False}},
                       [{"id": "1", "fields": fields, "permissions": _leads_only()}])  # fmt: skip
    graph.add_list({"id": "list-hidden", "name": "hidden", "displayName": "Hidden",
                    "list": {"template": "genericList", "hidden": True}},
                   [{"id": "1", "fields": {"Title": "internal"}, "permissions": _leads_only()}])  # fmt: skip
    index = Index()

    index.apply(connector.full_sync({}))

    site = graph.site["id"]
    items = {eid.split(":")[2]: doc for eid, doc in index.docs.items() if eid.startswith("listitem:")}
    assert set(items) == {"list-vendors", *(f"list-{t}" for t in templates)}
    assert items["list-announcements"].content == b"Office move\nBody: We move on June 3 ."
    assert b"Location: Room 4" in items["list-events"].content
    assert b"Status: In Progress" in items["list-tasks"].content
    assert b"Comment: Vendor called" in items["list-issueTracking"].content
    assert items["list-links"].title == "Expense portal"
    assert b"URL: Expense portal https://intranet.contoso.com/expenses" in items["list-links"].content
    for doc in items.values():
        assert doc.acl == (("entra:group:g-finance-leads",),)
    assert index.readable(USERS)["bob"].count("Office move") == 1
    assert "Office move" not in index.readable(USERS)["alice"]
    assert f"listitem:{site}:list-hidden:1" not in index.docs


def test_site_page_text_comes_from_each_pages_canvas_layout(graph: FakeGraph, connector: SharePointConnector) -> None:
    index = Index()
    index.apply(connector.full_sync({}))

    [listing] = graph.requests_to(r"/pages/microsoft\.graph\.sitePage$")
    assert "canvasLayout" not in listing.query  # the collection gives metadata only
    [page_get] = graph.requests_to(r"/pages/page-0001/microsoft\.graph\.sitePage$")
    assert "%24expand=canvasLayout" in page_get.query
    page = index.docs[f"sitepage:{graph.site['id']}:page-0001"]
    assert b"Expense policy lives in the handbook." in page.content and b"Quick links" in page.content

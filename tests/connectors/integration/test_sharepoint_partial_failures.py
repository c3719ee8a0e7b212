"""SharePoint through the sync task: a failing principal, a failed full run, subscriptions on demand.

Real embedded Postgres and Redis; the connector runs against ``tests/connectors/sharepoint/fake_graph.py``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from celery import current_app
from rest_framework.test import APIClient

from connectors.models import ConnectorInstance, SyncState
from connectors.sharepoint.tasks import maintain_graph_subscriptions
from tenants.context import tenant_context
from tenants.models import AuditEvent
from tests.connectors.integration.helpers import documents, make_instance, sync
from tests.connectors.sharepoint.fake_graph import (
    CLIENT_SECRET,
    FakeGraph,
    Fault,
    write_app_certificate,
    write_self_signed_cert,
)
from tests.support import unique

DOCS = "b!docs"
BASE = "https://cairn.example.com"


@pytest.fixture(scope="module")
def cert(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return write_self_signed_cert(tmp_path_factory.mktemp("graph-tls"))


@pytest.fixture(scope="module")
def app_cert(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    return write_app_certificate(tmp_path_factory.mktemp("app-cert"))


@pytest.fixture
def graph(cert: tuple[Path, Path], app_cert: tuple[str, str]) -> Iterator[FakeGraph]:
    fake = FakeGraph(*cert)
    fake.register_certificate(app_cert[0])
    for item in fake.site["drive_items"][DOCS]:  # plain text the pipeline can extract
        if "file" in item:
            item["file"] = {"mimeType": "text/plain"}
    fake.start()
    yield fake
    fake.stop()


@pytest.fixture
def queue(settings) -> str:  # type: ignore[no-untyped-def]
    # Task messages go to a queue no worker reads; the tests read it (or run the task body).
    name = unique("test-inline")
    settings.CAIRN = {**settings.CAIRN, "CONNECTOR_QUEUE": name, "PUBLIC_BASE_URL": BASE}
    return name


@pytest.fixture
def instance(cast, graph, cert, app_cert, queue):  # type: ignore[no-untyped-def]
    return make_instance(
        cast.tenant_a.pk, "sharepoint", unique("finance"),
        graph.connector_config(sharepoint_base_url=graph.base),
        {"client_secret": CLIENT_SECRET, "client_certificate": app_cert[0]}, tls_ca_file=str(cert[0]),
    )  # fmt: skip


def _queued(queue: str) -> list[tuple[str, str]]:
    """(task name, args repr) of every message waiting in ``queue`` on the real broker."""
    with current_app.connection_for_read() as conn:
        raw = conn.default_channel.client.lrange(queue, 0, -1)
    messages = [json.loads(m) for m in raw]
    return [(m["headers"]["task"], m["headers"]["argsrepr"]) for m in messages]


def _state(tenant: int, instance: ConnectorInstance, mode: str) -> SyncState:
    with tenant_context(tenant):
        return SyncState.objects.get(instance=instance, mode=mode)


def test_a_group_that_cannot_be_expanded_is_reported_with_the_item_and_retried_by_the_next_run(
    cast, graph, instance
) -> None:
    tenant = cast.tenant_a.pk
    graph.fail(Fault(r"/groups/g-finance-leads/transitiveMembers", 500, times=1))

    full = sync(tenant, instance, "full")

    assert full.status == "done"
    assert full.last_error.startswith("partial: 1 principal(s) could not be expanded")
    assert full.last_error_item == "entra:group:g-finance-leads"
    assert len(documents(tenant, instance)) == 7  # nothing computed before the failure was dropped
    assert DOCS in _state(tenant, instance, "incremental").checkpoint["delta_links"]
    admin = APIClient()
    admin.credentials(HTTP_AUTHORIZATION=f"Bearer {cast.tokens['alice']}")
    status = admin.get(f"/api/v1/connectors/{instance.pk}/status").json()
    [full_status] = [s for s in status["syncs"] if s["mode"] == "full"]
    assert full_status["last_error_item"] == "entra:group:g-finance-leads"

    again = sync(tenant, instance, "incremental")

    assert (again.status, again.last_error, again.groups_synced) == ("done", "", 1)


def test_a_full_sync_that_fails_after_enumerating_a_drive_still_lets_delta_report_a_later_delete(
    cast, graph, instance
) -> None:
    tenant = cast.tenant_a.pk
    # The drive is enumerated first; the list after it fails for good.
    graph.fail(Fault(r"/lists/list-vendors/items$", 500, times=1))

    failed = sync(tenant, instance, "full")

    assert failed.status == "failed"
    assert "driveitem:b!docs:i-press" in documents(tenant, instance)
    assert DOCS in _state(tenant, instance, "incremental").checkpoint["delta_links"]

    graph.delete_file(DOCS, "i-press")
    sync(tenant, instance, "incremental")

    # A fresh enumeration never lists deleted items; the carried delta link reports the delete.
    assert "driveitem:b!docs:i-press" not in documents(tenant, instance)


def test_creating_or_resuming_a_sharepoint_connector_queues_its_graph_subscriptions(
    cast, queue, django_capture_on_commit_callbacks
) -> None:
    admin = APIClient()
    admin.credentials(HTTP_AUTHORIZATION=f"Bearer {cast.tokens['alice']}")
    body: dict[str, Any] = {"kind": "sharepoint", "name": unique("sp"),
                            "config": {"tenant_id": "t", "client_id": "c", "site_ids": ["s"]},
                            "credentials": {"client_secret": "x"}}  # fmt: skip
    with django_capture_on_commit_callbacks(execute=True):
        created = admin.post("/api/v1/connectors", body, format="json")
    assert created.status_code == 201, created.content
    pk = created.json()["id"]
    expected = ("connectors.tasks.maintain_graph_subscriptions", f"({cast.tenant_a.pk}, {pk})")
    assert _queued(queue) == [expected]

    assert admin.post(f"/api/v1/connectors/{pk}/pause").status_code == 200
    with django_capture_on_commit_callbacks(execute=True):
        assert admin.post(f"/api/v1/connectors/{pk}/resume").status_code == 200
    assert _queued(queue).count(expected) == 2


def test_an_admin_recreates_the_subscriptions_now_and_the_old_ones_are_deleted_at_graph(
    cast, graph, instance, queue, django_capture_on_commit_callbacks
) -> None:
    tenant = cast.tenant_a.pk
    assert maintain_graph_subscriptions(tenant, instance.pk) == "created=2 renewed=0 errors=0"
    with tenant_context(tenant):
        old = set(ConnectorInstance.objects.get(pk=instance.pk).config["subscriptions"])
    bob, alice = APIClient(), APIClient()
    bob.credentials(HTTP_AUTHORIZATION=f"Bearer {cast.tokens['bob']}")
    alice.credentials(HTTP_AUTHORIZATION=f"Bearer {cast.tokens['alice']}")
    assert bob.post(f"/api/v1/connectors/{instance.pk}/subscriptions").status_code == 403

    with django_capture_on_commit_callbacks(execute=True):
        resp = alice.post(f"/api/v1/connectors/{instance.pk}/subscriptions")

    assert resp.status_code == 202 and sorted(resp.json()["replacing"]) == sorted(old)
    assert ("connectors.tasks.maintain_graph_subscriptions", f"({tenant}, {instance.pk})") in _queued(queue)
    with tenant_context(tenant):
        audit = AuditEvent.objects.filter(action="connector.subscriptions.recreate").get()
    assert audit.actor_user_id == cast.alice.pk and audit.target_id == str(instance.pk)

    assert maintain_graph_subscriptions(tenant, instance.pk) == "created=2 renewed=0 errors=0"
    with tenant_context(tenant):
        new = set(ConnectorInstance.objects.get(pk=instance.pk).config["subscriptions"])
    assert not new & old and set(graph.subscriptions) == new
    assert sorted(s for m, s, _ in graph.subscription_requests if m == "DELETE") == sorted(old)

"""Graph change-notification subscriptions kept by the runtime, against the fake Graph (TLS).

The task body (``connectors.sharepoint.tasks.maintain_graph_subscriptions``) runs in this process against
``tests/connectors/sharepoint/fake_graph.py``; lifecycle notifications go through the real view.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from connectors.models import ConnectorInstance, SyncState
from connectors.sharepoint.tasks import maintain_graph_subscriptions
from core.crypto import decrypt_text
from tenants.context import tenant_context
from tests.connectors.integration.helpers import make_instance
from tests.connectors.sharepoint.fake_graph import CLIENT_SECRET, FakeGraph, write_self_signed_cert
from tests.support import unique

BASE = "https://cairn.example.com"
DRIVES = {"b!docs", "b!pages"}


@pytest.fixture(scope="module")
def cert(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return write_self_signed_cert(tmp_path_factory.mktemp("graph-tls"))


@pytest.fixture
def graph(cert: tuple[Path, Path]) -> Iterator[FakeGraph]:
    fake = FakeGraph(*cert).start()
    yield fake
    fake.stop()


@pytest.fixture(autouse=True)
def _settings(settings) -> None:  # type: ignore[no-untyped-def]
    # Queued task messages go to a queue no worker reads; the tests run the task body themselves.
    settings.CAIRN = {**settings.CAIRN, "CONNECTOR_QUEUE": unique("test-inline"), "PUBLIC_BASE_URL": BASE + "/"}


@pytest.fixture
def instance(cast, graph, cert):  # type: ignore[no-untyped-def]
    return make_instance(
        cast.tenant_a.pk, "sharepoint", unique("subs"),
        graph.connector_config(),
        {"client_secret": CLIENT_SECRET}, tls_ca_file=str(cert[0]),
    )  # fmt: skip


def _fresh(tenant: int, instance: ConnectorInstance) -> ConnectorInstance:
    with tenant_context(tenant):
        return ConnectorInstance.objects.get(pk=instance.pk)


def _subscribe(tenant: int, instance: ConnectorInstance, graph: FakeGraph) -> dict[str, str]:
    assert maintain_graph_subscriptions(tenant, instance.pk) == "created=2 renewed=0 errors=0"
    subs = _fresh(tenant, instance).config["subscriptions"]
    graph.subscription_requests.clear()
    return {drive: sub for sub, drive in subs.items()}


def _lifecycle(instance: ConnectorInstance, graph: FakeGraph, sub_id: str, event: str, secret: str):  # type: ignore[no-untyped-def]
    body = {"value": [{"subscriptionId": sub_id, "lifecycleEvent": event, "clientState": secret,
                       "tenantId": graph.tenant_id, "resource": "drives/b!docs/root",
                       "subscriptionExpirationDateTime": "2099-01-01T00:00:00Z"}]}  # fmt: skip
    url = f"/hooks/sharepoint/{instance.hook_uuid}/notifications"
    return APIClient().post(url, data=json.dumps(body), content_type="application/json")


def test_it_subscribes_each_drive_once_to_the_hook_url_with_the_secret_and_a_legal_expiry(
    cast, instance, graph, settings
) -> None:
    tenant = cast.tenant_a.pk
    settings.CAIRN = {**settings.CAIRN, "PUBLIC_BASE_URL": ""}
    assert maintain_graph_subscriptions(tenant, instance.pk) == "no-public-base-url"
    assert graph.subscription_requests == []

    settings.CAIRN = {**settings.CAIRN, "PUBLIC_BASE_URL": BASE}
    before = dt.datetime.now(dt.UTC)
    assert maintain_graph_subscriptions(tenant, instance.pk) == "created=2 renewed=0 errors=0"
    with tenant_context(tenant):
        secret = decrypt_text(instance.webhook_secret_encrypted)
    hook = f"{BASE}/hooks/sharepoint/{instance.hook_uuid}/notifications"
    posts = [body for method, _, body in graph.subscription_requests if method == "POST"]
    assert sorted(b["resource"] for b in posts) == sorted(f"drives/{d}/root" for d in DRIVES)
    for body in posts:
        assert body["changeType"] == "updated" and body["clientState"] == secret
        assert body["notificationUrl"] == hook and body["lifecycleNotificationUrl"] == hook
        expiry = dt.datetime.fromisoformat(body["expirationDateTime"].replace("Z", "+00:00"))
        assert before + dt.timedelta(days=7) < expiry < before + dt.timedelta(minutes=42300)
    stored = _fresh(tenant, instance).config["subscriptions"]
    assert stored == {sid: e["resource"].split("/")[1] for sid, e in graph.subscriptions.items()}

    # Nothing is due: a second run asks Graph for nothing but the drive list.
    assert maintain_graph_subscriptions(tenant, instance.pk) == "created=0 renewed=0 errors=0"
    assert len(graph.subscription_requests) == 2

    # The view knows the new subscription: a change notification for it queues a delta run.
    sub_id = next(s for s, d in stored.items() if d == "b!docs")
    change = {"subscriptionId": sub_id, "clientState": secret, "tenantId": graph.tenant_id,
              "changeType": "updated", "resource": "drives/b!docs/root"}  # fmt: skip
    resp = APIClient().post(hook.removeprefix(BASE), data=json.dumps({"value": [change]}),
                            content_type="application/json")  # fmt: skip
    assert resp.status_code == 202
    with tenant_context(tenant):
        assert SyncState.objects.get(instance=instance, mode="incremental").status == "queued"


def test_it_renews_a_subscription_that_nears_its_expiry_and_leaves_the_others(cast, instance, graph) -> None:
    tenant = cast.tenant_a.pk
    subs = _subscribe(tenant, instance, graph)
    # Time passes for one subscription: its recorded expiry is three days away.
    soon = (dt.datetime.now(dt.UTC) + dt.timedelta(days=3)).isoformat()
    with tenant_context(tenant):
        row = ConnectorInstance.objects.get(pk=instance.pk)
        row.config["subscription_expirations"][subs["b!docs"]] = soon
        row.save(update_fields=["config"])

    assert maintain_graph_subscriptions(tenant, instance.pk) == "created=0 renewed=1 errors=0"
    assert [(m, s) for m, s, _ in graph.subscription_requests] == [("PATCH", subs["b!docs"])]
    renewed = graph.subscription_requests[0][2]["expirationDateTime"]
    assert _fresh(tenant, instance).config["subscription_expirations"][subs["b!docs"]] == renewed
    assert graph.subscriptions[subs["b!docs"]]["expirationDateTime"] == renewed


def test_reauthorization_required_renews_the_subscription_and_runs_a_delta(cast, instance, graph) -> None:
    tenant = cast.tenant_a.pk
    subs = _subscribe(tenant, instance, graph)
    with tenant_context(tenant):
        secret = decrypt_text(instance.webhook_secret_encrypted)

    resp = _lifecycle(instance, graph, subs["b!docs"], "reauthorizationRequired", "guessed")
    assert resp.status_code == 401
    assert "subscription_pending" not in _fresh(tenant, instance).config

    resp = _lifecycle(instance, graph, subs["b!docs"], "reauthorizationRequired", secret)
    assert resp.status_code == 202
    assert _fresh(tenant, instance).config["subscription_pending"] == {"renew": [subs["b!docs"]], "recreate": []}
    with tenant_context(tenant):
        assert SyncState.objects.get(instance=instance, mode="incremental").status == "queued"

    assert maintain_graph_subscriptions(tenant, instance.pk) == "created=0 renewed=1 errors=0"
    assert [(m, s) for m, s, _ in graph.subscription_requests] == [("PATCH", subs["b!docs"])]
    assert "subscription_pending" not in _fresh(tenant, instance).config


def test_subscription_removed_makes_a_new_subscription_for_that_drive(cast, instance, graph) -> None:
    tenant = cast.tenant_a.pk
    subs = _subscribe(tenant, instance, graph)
    with tenant_context(tenant):
        secret = decrypt_text(instance.webhook_secret_encrypted)

    # "missed" only asks for a delta run: no subscription work.
    assert _lifecycle(instance, graph, subs["b!pages"], "missed", secret).status_code == 202
    assert "subscription_pending" not in _fresh(tenant, instance).config

    graph.remove_subscription(subs["b!docs"])
    assert _lifecycle(instance, graph, subs["b!docs"], "subscriptionRemoved", secret).status_code == 202
    assert maintain_graph_subscriptions(tenant, instance.pk) == "created=1 renewed=0 errors=0"
    # The removed one is deleted too (best effort: Graph already dropped it and answers 404).
    assert [(m, s) for m, s, _ in graph.subscription_requests if m == "DELETE"] == [("DELETE", subs["b!docs"])]
    [(method, sub_id, body)] = [r for r in graph.subscription_requests if r[0] != "DELETE"]
    assert method == "POST" and sub_id == "" and body["resource"] == "drives/b!docs/root"
    config = _fresh(tenant, instance).config
    new = next(s for s, d in config["subscriptions"].items() if d == "b!docs")
    assert new != subs["b!docs"] and new in graph.subscriptions
    assert config["subscriptions"] == {new: "b!docs", subs["b!pages"]: "b!pages"}
    assert "subscription_pending" not in config

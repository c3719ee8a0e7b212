"""The connector admin API: admins only, credentials write-only and encrypted, tenant-scoped."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from connectors.models import ConnectorInstance
from tenants.context import tenant_context
from tests.support import unique


@pytest.fixture(autouse=True)
def _private_queue(settings) -> None:  # type: ignore[no-untyped-def]
    settings.CAIRN = {**settings.CAIRN, "CONNECTOR_QUEUE": unique("test-inline")}


def client_for(cast, name: str) -> APIClient:  # type: ignore[no-untyped-def]
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {cast.tokens[name]}")
    return client


def test_an_admin_manages_a_connector_and_its_credentials_never_come_back(cast) -> None:
    alice = client_for(cast, "alice")
    token = "tok-" + unique("secret")
    body = {"kind": "confluence", "name": unique("wiki"), "config": {"site_url": "https://acme.atlassian.net"},
            "credentials": {"email": "svc@acme.example", "api_token": token}}  # fmt: skip
    created = alice.post("/api/v1/connectors", body, format="json")
    assert created.status_code == 201, created.content
    pk = created.json()["id"]
    for resp in (created, alice.get("/api/v1/connectors"), alice.get(f"/api/v1/connectors/{pk}"),
                 alice.get(f"/api/v1/connectors/{pk}/status")):  # fmt: skip
        assert resp.status_code == 200 or resp.status_code == 201
        assert token not in resp.content.decode() and "credentials" not in resp.json()
    with tenant_context(cast.tenant_a.pk):
        stored = ConnectorInstance.objects.get(pk=pk)
        assert token not in stored.credentials_encrypted and stored.credentials_encrypted

    status = alice.get(f"/api/v1/connectors/{pk}/status").json()
    assert {s["mode"] for s in status["syncs"]} == {"full", "incremental", "permission"}
    assert status["documents"] == 0
    queued = alice.post(f"/api/v1/connectors/{pk}/sync", {"mode": "full"}, format="json")
    assert queued.status_code == 202 and queued.json()["status"] == "queued"
    again = alice.post(f"/api/v1/connectors/{pk}/sync", {"mode": "full"}, format="json")
    assert again.json()["run_id"] == queued.json()["run_id"]  # no second run while one is queued
    assert alice.post(f"/api/v1/connectors/{pk}/pause").json()["paused"] is True
    assert alice.post(f"/api/v1/connectors/{pk}/resume").json()["paused"] is False
    hook = alice.get(f"/api/v1/connectors/{pk}/webhook").json()
    assert hook["secret"] and hook["urls"]["page_trashed"].endswith(f"/page_trashed?secret={hook['secret']}")
    patched = alice.patch(f"/api/v1/connectors/{pk}", {"credentials": {"api_token": "new"}}, format="json")
    assert patched.status_code == 200 and "new" not in patched.content.decode()


def test_bad_input_members_and_other_tenants_are_refused(cast) -> None:
    alice = client_for(cast, "alice")
    base = {"kind": "confluence", "name": unique("wiki")}
    assert alice.post("/api/v1/connectors", {**base, "config": {}}, format="json").json()["error"]["code"] == (
        "invalid_config"
    )
    private = {**base, "config": {"site_url": "https://x.example", "allow_private_network": True}}
    assert alice.post("/api/v1/connectors", private, format="json").json()["error"]["code"] == "invalid_config"
    http = {**base, "config": {"site_url": "http://x.example"}}
    assert alice.post("/api/v1/connectors", http, format="json").status_code == 400
    assert alice.post("/api/v1/connectors", {**base, "kind": "ftp"}, format="json").json()["error"]["code"] == (
        "unknown_kind"
    )
    ok = alice.post("/api/v1/connectors", {**base, "config": {"site_url": "https://x.example"}}, format="json")
    pk = ok.json()["id"]
    assert client_for(cast, "bob").get("/api/v1/connectors").status_code == 403
    assert client_for(cast, "mallory").get(f"/api/v1/connectors/{pk}").status_code == 404
    assert client_for(cast, "mallory").get("/api/v1/connectors").json() == []
    bad_mode = alice.post(f"/api/v1/connectors/{pk}/sync", {"mode": "everything"}, format="json")
    assert bad_mode.status_code == 400

"""A real Celery worker process on the embedded broker; the readiness endpoint."""

from __future__ import annotations

import time

from django.test import Client
from rest_framework.test import APIClient

from tests.support import enqueue, make_doc, source_for


def test_a_document_becomes_searchable_through_a_real_worker(cast, celery_worker_process) -> None:
    src = source_for(cast.tenant_a)
    enqueue(cast.tenant_a, src, make_doc("onboarding", "Badges are collected from the front desk on day one.",
                                         [["public:tenant"]], title="Onboarding"))  # fmt: skip
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {cast.tokens['bob']}")
    deadline = time.time() + 90
    titles: list[str] = []
    while time.time() < deadline:
        titles = [r["title"] for r in client.get("/api/v1/search", {"q": "badge front desk"}).json()["results"]]
        if titles:
            break
        time.sleep(0.5)
    assert titles == ["Onboarding"]


def test_readiness_reports_database_broker_worker_and_model(celery_worker_process) -> None:
    r = Client().get("/readyz")
    body = r.json()
    assert r.status_code == 200, body
    assert set(body["checks"]) == {"database", "broker", "worker", "model"}
    assert all(check["ok"] for check in body["checks"].values())
    assert Client().get("/healthz").json() == {"status": "ok"}

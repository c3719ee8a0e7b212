"""Fixtures for the index-backend contract suite.

The OpenSearch side runs against ``osmem-server`` (in-memory, OpenSearch-compatible,
no k-NN), started here once per session by its Python launcher; with
``OPENSEARCH_URL`` set, the same suite runs against that real cluster instead
(credentials via ``OPENSEARCH_USER`` / ``OPENSEARCH_PASSWORD``, CA via
``OPENSEARCH_CA_CERTS``).  Each session uses its own index prefix, and every test
makes its own tenants, so nothing needs cleaning between tests.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.support import ingest_inline

COMPOSITE = "retrieval.backends.composite.CompositeIndexBackend"
POSTGRES = "retrieval.backends.postgres.PostgresIndexBackend"


@pytest.fixture(scope="session")
def opensearch_conf() -> Iterator[dict[str, Any]]:
    conf: dict[str, Any] = {"OPENSEARCH_INDEX_PREFIX": f"cairn-test-{uuid.uuid4().hex[:6]}",
                            "OPENSEARCH_REPLICAS": 0, "OPENSEARCH_TIMEOUT": 10}  # fmt: skip
    url = os.environ.get("OPENSEARCH_URL", "")
    if url:
        conf.update(
            OPENSEARCH_URL=url,
            OPENSEARCH_USER=os.environ.get("OPENSEARCH_USER", ""),
            OPENSEARCH_PASSWORD=os.environ.get("OPENSEARCH_PASSWORD", ""),
            OPENSEARCH_CA_CERTS=os.environ.get("OPENSEARCH_CA_CERTS", ""),
        )
        yield conf
        return
    from osmem_server import OsmemServer

    server = OsmemServer.start(japanese=False)
    try:
        conf["OPENSEARCH_URL"] = server.url
        yield conf
    finally:
        server.close()


def _reset_backend_caches() -> None:
    from core.backends import get_backend
    from retrieval import outbox

    get_backend.cache_clear()
    outbox._uses_outbox.cache_clear()


@dataclass
class BackendUnderTest:
    name: str
    uses_opensearch: bool

    def ingest(self, tenant: Any) -> None:
        """Apply pending ingest events, then (OpenSearch) drain the index outbox: the worker's two steps."""
        ingest_inline(tenant.pk)
        if self.uses_opensearch:
            from retrieval.outbox import drain_all

            drain_all(tenant.pk)


@pytest.fixture
def use_opensearch(settings: Any, opensearch_conf: dict[str, Any]) -> Iterator[BackendUnderTest]:
    settings.CAIRN = {**settings.CAIRN, **opensearch_conf, "INDEX_BACKEND": COMPOSITE}
    _reset_backend_caches()
    yield BackendUnderTest("opensearch", True)
    _reset_backend_caches()


@pytest.fixture
def use_postgres(settings: Any) -> Iterator[BackendUnderTest]:
    settings.CAIRN = {**settings.CAIRN, "INDEX_BACKEND": POSTGRES}
    _reset_backend_caches()
    yield BackendUnderTest("postgres", False)
    _reset_backend_caches()


@pytest.fixture(params=["postgres", "opensearch"])
def backend(request: pytest.FixtureRequest) -> BackendUnderTest:
    return request.getfixturevalue(f"use_{request.param}")

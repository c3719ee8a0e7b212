"""Composite index backend: OpenSearch where it can, Postgres where it must.

``CAIRN_INDEX_BACKEND=retrieval.backends.composite.CompositeIndexBackend``

- lexical leg: OpenSearch BM25;
- vector leg: OpenSearch k-NN when the cluster has the plugin, pgvector otherwise
  (osmem-server in CI has none);
- OpenSearch down or timing out: the same leg runs on Postgres (the postings and
  vectors there are always current, because the pipeline writes them in the same
  transaction as the document) and the leg carries a notice that ends up in the
  search/answer trace.  After a failure OpenSearch is skipped for
  ``CAIRN_OPENSEARCH_RETRY_SECONDS`` so a dead cluster does not cost every query a
  timeout.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

import numpy as np
from django.conf import settings

from retrieval.backends.base import LegResult, SearchFilters
from retrieval.backends.opensearch import IndexUnavailable, OpenSearchIndexBackend
from retrieval.backends.postgres import PostgresIndexBackend

log = logging.getLogger(__name__)

FALLBACK_NOTICE = (
    "The search index (OpenSearch) is unavailable; results come from the database fallback and may rank differently."
)


class CompositeIndexBackend:
    name = "opensearch+postgres"
    uses_outbox = True

    def __init__(self) -> None:
        self.opensearch = OpenSearchIndexBackend()
        self.postgres = PostgresIndexBackend()
        self._down_until = 0.0
        self._lock = threading.Lock()

    def _retry_seconds(self) -> float:
        return float(settings.CAIRN.get("OPENSEARCH_RETRY_SECONDS", 15))

    def _guarded(self, leg: str, primary: Callable[[], LegResult], fallback: Callable[[], LegResult]) -> LegResult:
        if time.monotonic() >= self._down_until:
            try:
                return primary()
            except IndexUnavailable as exc:
                with self._lock:
                    self._down_until = time.monotonic() + self._retry_seconds()
                reason = str(exc)
        else:
            reason = "circuit open after a recent failure"
        result = fallback()
        result.strategy = f"postgres-fallback:{result.strategy}"
        result.notices.append(FALLBACK_NOTICE)
        log.warning("opensearch %s leg fell back to postgres: %s", leg, reason)
        return result

    def reset(self) -> None:
        """Forget a recorded outage (tests, and after an operator fixed the cluster)."""
        self._down_until = 0.0

    def lexical(self, tenant_id: int, acl_set_ids: tuple[int, ...], query: str, filters: SearchFilters,
                k: int) -> LegResult:  # fmt: skip
        return self._guarded(
            "lexical",
            lambda: self.opensearch.lexical(tenant_id, acl_set_ids, query, filters, k),
            lambda: self.postgres.lexical(tenant_id, acl_set_ids, query, filters, k),
        )

    def _knn(self) -> bool:
        try:
            return self.opensearch.knn_available()
        except IndexUnavailable:
            return False

    def vector(self, tenant_id: int, acl_set_ids: tuple[int, ...], embedding: np.ndarray, filters: SearchFilters,
               k: int) -> LegResult:  # fmt: skip
        if time.monotonic() < self._down_until or not self._knn():
            # No k-NN (or the cluster is down): pgvector is the vector leg, by design, not a fallback.
            return self.postgres.vector(tenant_id, acl_set_ids, embedding, filters, k)
        return self._guarded(
            "vector",
            lambda: self.opensearch.vector(tenant_id, acl_set_ids, embedding, filters, k),
            lambda: self.postgres.vector(tenant_id, acl_set_ids, embedding, filters, k),
        )

    def count_readable(self, tenant_id: int, acl_set_ids: tuple[int, ...], filters: SearchFilters,
                       cap: int) -> int:  # fmt: skip
        return self.postgres.count_readable(tenant_id, acl_set_ids, filters, cap)

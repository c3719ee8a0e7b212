"""OpenSearch index backend: BM25 lexical leg (and k-NN vector leg when the cluster has it).

Index design: one index per tenant behind an alias (``<prefix>-t<tenant_id>`` ->
``<prefix>-t<tenant_id>-v<n>``), one primary shard each.  Why not one shared index
with tenant routing: BM25's document frequencies are per shard, so in a shared
index other tenants' documents would move a tenant's scores (a ranking bug and a
side channel on what other tenants write about); per-tenant indexes keep the same
per-tenant statistics as the Postgres backend, make a tenant's reindex, deletion
and sizing independent, and the alias gives zero-downtime rebuilds.  The cost is
one shard per tenant, see the sizing notes in docs/benchmarks.md.

Every query still carries ``tenant_id`` and ``acl_set_id`` terms in the bool
query's ``filter`` clause (or inside the k-NN query's ``filter``, which makes the
Lucene engine filter while it searches), never as a post-filter; an empty readable
set short-circuits to no hits before a request is sent, and ``terms: []`` would
match nothing anyway.  Only chunk ids and ranks leave this module; the chunk text
is loaded from Postgres under RLS and the ACL filter again (retrieval/search.py).

Documents are written by the transactional outbox (retrieval/outbox.py), never by
the request path.
"""

from __future__ import annotations

import threading
import time
from datetime import date
from typing import Any

import numpy as np
from django.conf import settings

from retrieval.backends.base import LegHit, LegResult, SearchFilters

EMBEDDING_DIM = 384
K1 = 0.9  # the Postgres backend's BM25 parameters (BEIR / Anserini)
B = 0.4


class IndexUnavailable(RuntimeError):
    """OpenSearch could not answer (down, timing out, or the index is missing)."""


_client_lock = threading.Lock()
_clients: dict[tuple[Any, ...], Any] = {}
_knn_cache: dict[tuple[Any, ...], bool] = {}


def _conf() -> dict[str, Any]:
    c = settings.CAIRN
    return {
        "url": c.get("OPENSEARCH_URL", ""),
        "user": c.get("OPENSEARCH_USER", ""),
        "password": c.get("OPENSEARCH_PASSWORD", ""),
        "ca_certs": c.get("OPENSEARCH_CA_CERTS", ""),
        "verify_certs": c.get("OPENSEARCH_VERIFY_CERTS", True),
        "timeout": float(c.get("OPENSEARCH_TIMEOUT", 3)),
    }


def client() -> Any:
    """One client per distinct configuration (settings can change under tests)."""
    from opensearchpy import OpenSearch

    conf = _conf()
    if not conf["url"]:
        raise IndexUnavailable("CAIRN_OPENSEARCH_URL is not set")
    key = tuple(sorted(conf.items()))
    with _client_lock:
        if key not in _clients:
            kwargs: dict[str, Any] = {"hosts": [conf["url"]], "timeout": conf["timeout"], "max_retries": 0,
                                      "retry_on_timeout": False}  # fmt: skip
            if conf["user"]:
                kwargs["http_auth"] = (conf["user"], conf["password"])
            if conf["url"].startswith("https"):
                kwargs["use_ssl"] = True
                kwargs["verify_certs"] = bool(conf["verify_certs"])
                if conf["ca_certs"]:
                    kwargs["ca_certs"] = conf["ca_certs"]
            _clients[key] = OpenSearch(**kwargs)
        return _clients[key]


def prefix() -> str:
    return str(settings.CAIRN.get("OPENSEARCH_INDEX_PREFIX", "cairn"))


def alias_name(tenant_id: int) -> str:
    return f"{prefix()}-t{int(tenant_id)}"


def next_alias_name(tenant_id: int) -> str:
    """Points at an index being rebuilt; the outbox writes to it too (reindex_opensearch)."""
    return f"{alias_name(tenant_id)}-next"


def _wrap(exc: Exception) -> IndexUnavailable:
    return IndexUnavailable(f"{type(exc).__name__}: {exc}"[:500])


def _transport_errors() -> tuple[type[Exception], ...]:
    from opensearchpy.exceptions import ConnectionError as OSConnectionError
    from opensearchpy.exceptions import ConnectionTimeout, TransportError

    return (OSConnectionError, ConnectionTimeout, TransportError, OSError)


def has_knn() -> bool:
    """Whether the cluster runs the k-NN plugin (osmem-server does not)."""
    key = tuple(sorted(_conf().items()))
    if key not in _knn_cache:
        try:
            plugins = client().cat.plugins(format="json")
        except _transport_errors() as exc:
            raise _wrap(exc) from exc
        _knn_cache[key] = any(p.get("component") == "opensearch-knn" for p in plugins or [])
    return _knn_cache[key]


def index_body(knn: bool) -> dict[str, Any]:
    text = {"type": "text", "analyzer": "english"}
    props: dict[str, Any] = {
        "tenant_id": {"type": "long"},
        "chunk_id": {"type": "long"},
        "document_id": {"type": "long"},
        "acl_set_id": {"type": "long"},
        "source_system": {"type": "keyword"},
        "container": {"type": "keyword"},
        "updated_at": {"type": "date"},
        "created_at": {"type": "date"},
        "version_label": {"type": "keyword"},
        "authority_tier": {"type": "integer"},
        "source_version": {"type": "long"},
        # Title + chunk text in one field, like the Postgres tsvector: one |d| for BM25.
        "content": text,
        "title": text,
    }
    index_settings: dict[str, Any] = {
        "number_of_shards": int(settings.CAIRN.get("OPENSEARCH_SHARDS", 1)),
        "number_of_replicas": int(settings.CAIRN.get("OPENSEARCH_REPLICAS", 1)),
        "similarity": {"default": {"type": "BM25", "k1": K1, "b": B}},
    }
    if knn:
        index_settings["knn"] = True
        props["embedding"] = {
            "type": "knn_vector",
            "dimension": EMBEDDING_DIM,
            # Lucene engine: filters are applied while the HNSW graph is searched (efficient filtering).
            "method": {"name": "hnsw", "engine": "lucene", "space_type": "cosinesimil",
                       "parameters": {"m": 16, "ef_construction": 128}},
        }  # fmt: skip
    return {"settings": {"index": index_settings}, "mappings": {"dynamic": "strict", "properties": props}}


def create_versioned_index(tenant_id: int) -> str:
    """A new, empty ``-v<n>`` index for the tenant (n = one past the highest existing)."""
    c = client()
    base = alias_name(tenant_id)
    try:
        existing = c.indices.get(index=f"{base}-v*", allow_no_indices=True, ignore_unavailable=True) or {}
    except _transport_errors() as exc:
        raise _wrap(exc) from exc
    versions = [int(n.rsplit("-v", 1)[1]) for n in existing if n.rsplit("-v", 1)[1].isdigit()]
    name = f"{base}-v{max(versions, default=0) + 1}"
    c.indices.create(index=name, body=index_body(has_knn()))
    return name


def ensure_index(tenant_id: int) -> str:
    """The concrete index behind the tenant's alias, created (v1) on first use."""
    c = client()
    alias = alias_name(tenant_id)
    try:
        if c.indices.exists_alias(name=alias):
            return next(iter(c.indices.get_alias(name=alias)))
        name = create_versioned_index(tenant_id)
        c.indices.update_aliases(body={"actions": [{"add": {"index": name, "alias": alias}}]})
        return name
    except _transport_errors() as exc:
        raise _wrap(exc) from exc


def write_targets(tenant_id: int) -> list[str]:
    """Concrete indexes a change must reach: the live one and, during a reindex, the next one."""
    c = client()
    targets = [ensure_index(tenant_id)]
    try:
        if c.indices.exists_alias(name=next_alias_name(tenant_id)):
            targets += [n for n in c.indices.get_alias(name=next_alias_name(tenant_id)) if n not in targets]
    except _transport_errors() as exc:
        raise _wrap(exc) from exc
    return targets


def _day(d: date) -> str:
    return d.isoformat()[:10]


def filter_clauses(tenant_id: int, acl_set_ids: tuple[int, ...], filters: SearchFilters) -> tuple[list, list]:
    """(filter, must_not) clauses: tenant + ACL first, then the request's filters."""
    flt: list[dict[str, Any]] = [
        {"term": {"tenant_id": int(tenant_id)}},
        {"terms": {"acl_set_id": [int(a) for a in acl_set_ids]}},
    ]
    if filters.sources:
        flt.append({"terms": {"source_system": list(filters.sources)}})
    if filters.containers:
        flt.append({"terms": {"container": list(filters.containers)}})
    if filters.after or filters.before:
        rng: dict[str, str] = {}
        if filters.after:
            rng["gte"] = _day(filters.after)
        if filters.before:
            rng["lt"] = _day(filters.before)
        flt.append({"range": {"updated_at": rng}})
    if filters.max_authority_tier is not None:
        flt.append({"range": {"authority_tier": {"lte": int(filters.max_authority_tier)}}})
    if filters.document_ids:
        flt.append({"terms": {"document_id": [int(d) for d in filters.document_ids]}})
    for phrase in filters.phrases:
        flt.append({"match_phrase": {"content": phrase}})
    must_not = [{"match_phrase": {"content": term}} for term in filters.exclude_terms]
    return flt, must_not


class OpenSearchIndexBackend:
    """Both legs in OpenSearch; the vector leg needs the k-NN plugin (see CompositeIndexBackend)."""

    name = "opensearch"
    uses_outbox = True

    def knn_available(self) -> bool:
        return has_knn()

    def _search(self, tenant_id: int, body: dict[str, Any]) -> list[dict[str, Any]]:
        try:
            res = client().search(index=alias_name(tenant_id), body=body, request_timeout=_conf()["timeout"])
        except _transport_errors() as exc:
            from opensearchpy.exceptions import NotFoundError

            if isinstance(exc, NotFoundError):
                return []  # nothing indexed for this tenant yet
            raise _wrap(exc) from exc
        return list(res["hits"]["hits"])

    def lexical(self, tenant_id: int, acl_set_ids: tuple[int, ...], query: str, filters: SearchFilters,
                k: int) -> LegResult:  # fmt: skip
        if not acl_set_ids or not query.strip():
            return LegResult([], "empty")
        t0 = time.perf_counter()
        flt, must_not = filter_clauses(tenant_id, acl_set_ids, filters)
        body = {
            "size": k,
            "_source": False,
            "track_total_hits": False,
            "query": {"bool": {"must": [{"match": {"content": {"query": query}}}], "filter": flt,
                               "must_not": must_not}},
            "sort": [{"_score": "desc"}, {"chunk_id": "asc"}],
        }  # fmt: skip
        hits = [LegHit(int(h["_id"]), float(h["_score"] or 0.0)) for h in self._search(tenant_id, body)]
        return LegResult(hits, "opensearch-bm25", {"lexical": (time.perf_counter() - t0) * 1000})

    def vector(self, tenant_id: int, acl_set_ids: tuple[int, ...], embedding: np.ndarray, filters: SearchFilters,
               k: int) -> LegResult:  # fmt: skip
        if not acl_set_ids:
            return LegResult([], "empty")
        if not self.knn_available():
            raise IndexUnavailable("the cluster has no k-NN plugin")
        t0 = time.perf_counter()
        flt, must_not = filter_clauses(tenant_id, acl_set_ids, filters)
        vec = [float(x) for x in np.asarray(embedding, dtype=np.float32)]
        body = {
            "size": k,
            "_source": False,
            "query": {"knn": {"embedding": {"vector": vec, "k": k,
                                            "filter": {"bool": {"filter": flt, "must_not": must_not}}}}},
        }  # fmt: skip
        hits = [LegHit(int(h["_id"]), float(h["_score"] or 0.0)) for h in self._search(tenant_id, body)]
        return LegResult(hits, "opensearch-knn-lucene", {"vector": (time.perf_counter() - t0) * 1000})

    def count_readable(self, tenant_id: int, acl_set_ids: tuple[int, ...], filters: SearchFilters,
                       cap: int) -> int:  # fmt: skip
        if not acl_set_ids:
            return 0
        flt, must_not = filter_clauses(tenant_id, acl_set_ids, filters)
        try:
            res = client().count(index=alias_name(tenant_id),
                                 body={"query": {"bool": {"filter": flt, "must_not": must_not}}})  # fmt: skip
        except _transport_errors() as exc:
            from opensearchpy.exceptions import NotFoundError

            if isinstance(exc, NotFoundError):
                return 0
            raise _wrap(exc) from exc
        return min(int(res["count"]), cap + 1)

"""The vector leg's plan choice (docs/vector-benchmark.md): an exact index-only scan while the reader's
readable chunks are few (<= CAIRN_VECTOR_EXACT_SCAN_MAX_ROWS), HNSW with iterative scan above it; on
either path no chunk the reader cannot read is ever returned."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from core.backends import embedder, index_backend
from retrieval.backends.base import SearchFilters
from retrieval.models import Chunk
from retrieval.permissions import permission_context
from tenants.context import tenant_context
from tests.support import enqueue, grant_groups, ingest_inline, make_doc, source_for

TOPICS = ["kubernetes cluster upgrade", "quarterly budget review", "office badge access", "incident postmortem",
          "laptop encryption policy", "travel reimbursement", "hiring loop feedback", "database backup restore"]  # fmt: skip
FEW, MANY, NOBODY = "confluence:group:few", "confluence:group:many", "confluence:group:nobody"


def group_of(i: int) -> str:
    return FEW if i % 10 == 0 else MANY if i % 2 else NOBODY  # 12 / 60 / 48 of 120


@pytest.fixture(scope="module")
def acl_docs(module_cast, django_db_blocker):
    """120 one-chunk documents: bob reads the 12 of group "few", carol the 60 of group "many"."""
    with django_db_blocker.unblock():
        src = source_for(module_cast.tenant_a)
        for i in range(120):
            text = f"Note {i} about {TOPICS[i % len(TOPICS)]}. Owner team {i % 7}."
            enqueue(module_cast.tenant_a, src, make_doc(f"v{i}", text, [[group_of(i)]]))
        grant_groups(module_cast.tenant_a, {FEW: [module_cast.bob], MANY: [module_cast.carol]})
        ingest_inline(module_cast.tenant_a.pk)
    return module_cast


def search(user, tenant_id: int, query: str, k: int):
    with tenant_context(tenant_id):
        perm = permission_context(user)
        result = index_backend().vector(perm.tenant_id, perm.readable_acl_set_ids, embedder().embed_query(query),
                                        SearchFilters(), k)  # fmt: skip
        ids = [h.chunk_id for h in result.hits]
        docs = dict(Chunk.objects.filter(pk__in=ids).values_list("pk", "document__external_id"))
        acls = set(Chunk.objects.filter(pk__in=ids).values_list("acl_set_id_denorm", flat=True))
    return result, [docs[i] for i in ids], acls, set(perm.readable_acl_set_ids)


def test_a_small_readable_set_is_scanned_exactly_and_a_large_one_walks_hnsw(acl_docs, settings) -> None:
    settings.CAIRN = {**settings.CAIRN, "VECTOR_EXACT_SCAN_MAX_ROWS": 30}
    small, small_docs, small_acls, bob_sets = search(acl_docs.bob, acl_docs.tenant_a.pk, "budget review", 10)
    large, large_docs, large_acls, carol_sets = search(acl_docs.carol, acl_docs.tenant_a.pk, "budget review", 10)
    assert small.strategy == "exact"  # 12 readable <= 30
    assert large.strategy.startswith("hnsw-iterative")  # 60 readable > 30
    assert len(small.hits) == 10 and len(large.hits) == 10
    # Only readable chunks, on both paths: bob's from group "few" (i % 10 == 0), carol's from "many" (odd i).
    assert small_acls <= bob_sets and large_acls <= carol_sets
    assert all(int(d[1:]) % 10 == 0 for d in small_docs)
    assert all(int(d[1:]) % 2 == 1 for d in large_docs)


def test_the_hnsw_path_finds_what_the_exact_scan_finds_and_sets_its_search_parameters(acl_docs, settings) -> None:
    settings.CAIRN = {**settings.CAIRN, "VECTOR_EXACT_SCAN_MAX_ROWS": 10**6}
    exact, exact_docs, _, _ = search(acl_docs.carol, acl_docs.tenant_a.pk, "laptop encryption policy", 10)
    settings.CAIRN = {**settings.CAIRN, "VECTOR_EXACT_SCAN_MAX_ROWS": 0}
    with CaptureQueriesContext(connection) as sent:
        hnsw, hnsw_docs, _, _ = search(acl_docs.carol, acl_docs.tenant_a.pk, "laptop encryption policy", 10)
    assert exact.strategy == "exact" and hnsw.strategy.startswith("hnsw-iterative")
    # The walk runs with iterative scan in relaxed order and the configured ef_search (default 200).
    configs = [q["sql"] for q in sent.captured_queries if "set_config('hnsw." in q["sql"]]
    ef_search = settings.CAIRN["HNSW_EF_SEARCH"]
    assert any("'hnsw.iterative_scan', 'relaxed_order'" in sql for sql in configs)
    assert any(f"'hnsw.ef_search', '{ef_search}'" in sql for sql in configs), configs
    # 120 rows, ef_search well above them: the graph walk is exhaustive here, so the same ten documents.
    assert set(hnsw_docs) == set(exact_docs)
    assert [round(h.score, 3) for h in hnsw.hits] == [round(h.score, 3) for h in exact.hits]
    # The HNSW settings are transaction-local (set_config(..., true)): nothing leaks into the session.
    with connection.cursor() as cur:
        cur.execute("SHOW hnsw.ef_search")
        assert cur.fetchone()[0] == "40"  # pgvector's default, untouched outside the leg's transaction

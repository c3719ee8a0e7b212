"""Retrieval legs: BM25 ranking sanity, k results under selective ACL filters, RRF."""

from __future__ import annotations

import pytest

from core.backends import embedder, index_backend
from retrieval.backends.base import SearchFilters
from retrieval.permissions import permission_context
from retrieval.search import rrf_fuse
from tenants.context import tenant_context
from tests.support import enqueue, grant_groups, ingest_inline, make_doc, source_for

TOPICS = ["kubernetes cluster upgrade", "quarterly budget review", "office badge access", "incident postmortem",
          "laptop encryption policy", "travel reimbursement", "hiring loop feedback", "database backup restore"]  # fmt: skip


@pytest.fixture(scope="module")
def many_docs(module_cast, django_db_blocker):
    """200 one-chunk documents; bob's group can read only 12 of them (ingested once for the module)."""
    with django_db_blocker.unblock():
        return _ingest_many_docs(module_cast)


def _ingest_many_docs(cast):
    src = source_for(cast.tenant_a)
    for i in range(200):
        group = "confluence:group:rare" if i % 17 == 0 else f"confluence:group:g{i % 5}"
        text = f"Note {i} about {TOPICS[i % len(TOPICS)]}. Owner team {i % 9}."
        enqueue(cast.tenant_a, src, make_doc(f"n{i}", text, [[group]]))
    grant_groups(cast.tenant_a, {"confluence:group:rare": [cast.bob]})
    ingest_inline(cast.tenant_a.pk)
    return cast


@pytest.mark.parametrize("exact_cap", [0, 20000], ids=["hnsw-path", "exact-path"])
def test_the_filtered_vector_leg_returns_k_results_when_k_readable_chunks_exist(many_docs, settings, exact_cap):
    settings.CAIRN = {**settings.CAIRN, "VECTOR_EXACT_SCAN_MAX_ROWS": exact_cap}
    qvec = embedder().embed_query("budget review")
    with tenant_context(many_docs.tenant_a.pk):
        perm = permission_context(many_docs.bob)
        readable = index_backend().count_readable(perm.tenant_id, perm.readable_acl_set_ids, SearchFilters(), 1000)
        assert readable == 12
        result = index_backend().vector(perm.tenant_id, perm.readable_acl_set_ids, qvec, SearchFilters(), 10)
        assert len(result.hits) == 10
        more = index_backend().vector(perm.tenant_id, perm.readable_acl_set_ids, qvec, SearchFilters(), 50)
        assert len(more.hits) == 12
        assert result.strategy.startswith("hnsw" if exact_cap == 0 else "exact")


def test_a_user_without_readable_sets_gets_nothing_from_either_leg(many_docs) -> None:
    with tenant_context(many_docs.tenant_a.pk):
        perm = permission_context(many_docs.carol)
        assert perm.readable_acl_set_ids == ()
        backend = index_backend()
        assert backend.lexical(perm.tenant_id, (), "budget", SearchFilters(), 10).hits == []
        assert backend.vector(perm.tenant_id, (), embedder().embed_query("budget"), SearchFilters(), 10).hits == []


def test_bm25_ranks_the_document_that_matches_rare_terms_first(cast) -> None:
    src = source_for(cast.tenant_a)
    docs = {
        "common": "The team meeting notes mention the team and the meeting and the project team.",
        "rare": "Rotate the Zephyr signing key before the meeting with the auditors.",
        "long": "Meeting. " * 5 + "This long document mentions Zephyr once among many words about other things. " * 8,
    }
    for ext, text in docs.items():
        enqueue(cast.tenant_a, src, make_doc(ext, text, [["public:tenant"]], title=ext))
    ingest_inline(cast.tenant_a.pk)
    with tenant_context(cast.tenant_a.pk):
        perm = permission_context(cast.alice)
        hits = index_backend().lexical(perm.tenant_id, perm.readable_acl_set_ids, "zephyr signing key meeting",
                                       SearchFilters(), 10).hits  # fmt: skip
        from retrieval.models import Chunk

        order = [Chunk.objects.get(pk=h.chunk_id).document.external_id for h in hits]
    assert order[0] == "rare"
    assert set(order) == {"rare", "long", "common"}
    assert order.index("long") < order.index("common")


def test_rrf_matches_the_worked_example_from_the_design_document() -> None:
    fused = rrf_fuse({"bm25": [1, 2, 3, 4], "vec": [2, 3, 1, 5, 4]})
    assert [cid for cid, _, _ in fused] == [2, 1, 3, 4, 5]
    assert round(fused[0][1], 5) == 0.03252

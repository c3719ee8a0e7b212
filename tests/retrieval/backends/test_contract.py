"""One suite of retrieval behaviours, run against every index backend.

``backend`` is the Postgres backend or the composite OpenSearch backend
(osmem-server, or the cluster at OPENSEARCH_URL); documents go in through the
real pipeline (and, for OpenSearch, the index outbox drain).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, date, datetime
from typing import Any

from core.backends import embedder, index_backend
from retrieval.actions import do_enqueue_acl_update, do_enqueue_delete
from retrieval.backends.base import LegResult, SearchFilters
from retrieval.models import Chunk, Document
from retrieval.permissions import permission_context
from retrieval.search import hybrid_search
from tenants.context import tenant_context
from tests.support import enqueue, grant_groups, make_doc, source_for

PUBLIC = [["public:tenant"]]


def external_ids(tenant: Any, result: LegResult) -> list[str]:
    with tenant_context(tenant.pk):
        by_id = dict(Chunk.objects.filter(pk__in=[h.chunk_id for h in result.hits])
                     .values_list("pk", "document__external_id"))  # fmt: skip
    return [by_id[h.chunk_id] for h in result.hits if h.chunk_id in by_id]


def lexical(user: Any, tenant: Any, query: str, filters: SearchFilters | None = None, k: int = 10) -> list[str]:
    with tenant_context(tenant.pk):
        perm = permission_context(user)
        result = index_backend().lexical(
            perm.tenant_id, perm.readable_acl_set_ids, query, filters or SearchFilters(), k
        )
    return external_ids(tenant, result)


def vector(user: Any, tenant: Any, query: str, k: int = 10) -> list[str]:
    qvec = embedder().embed_query(query)
    with tenant_context(tenant.pk):
        perm = permission_context(user)
        result = index_backend().vector(perm.tenant_id, perm.readable_acl_set_ids, qvec, SearchFilters(), k)
    return external_ids(tenant, result)


def test_it_ranks_the_document_with_the_rare_query_terms_first(backend, cast) -> None:
    src = source_for(cast.tenant_a)
    docs = {
        "common": "The team meeting notes mention the team and the meeting and the project team.",
        "rare": "Rotate the Zephyr signing key before the meeting with the auditors.",
        "long": "Meeting. " * 5 + "This long document mentions Zephyr once among many words about other things. " * 8,
        "off": "Lunch menu for the cafeteria.",
    }
    for ext, text in docs.items():
        enqueue(cast.tenant_a, src, make_doc(ext, text, PUBLIC, title=ext))
    backend.ingest(cast.tenant_a)
    order = lexical(cast.alice, cast.tenant_a, "zephyr signing key meeting")
    assert order[0] == "rare"
    assert set(order) == {"rare", "long", "common"}
    assert order.index("long") < order.index("common")
    assert vector(cast.alice, cast.tenant_a, "rotating a cryptographic signing key")[0] == "rare"


def test_it_applies_every_filter_inside_the_leg(backend, cast) -> None:
    wiki = source_for(cast.tenant_a, "wiki", "confluence")
    chat = source_for(cast.tenant_a, "chat", "slack")
    jan, mar = datetime(2026, 1, 10, tzinfo=UTC), datetime(2026, 3, 10, tzinfo=UTC)
    enqueue(cast.tenant_a, wiki, make_doc("w-eng-jan", "Deploy freeze policy for the release train.", PUBLIC,
                                          container="ENG", updated=jan))  # fmt: skip
    enqueue(cast.tenant_a, wiki, make_doc("w-ops-mar", "Deploy freeze exceptions need the duty manager.", PUBLIC,
                                          container="OPS", updated=mar))  # fmt: skip
    official = replace(make_doc("w-hr-mar", "Deploy freeze does not apply to payroll fixes.", PUBLIC,
                                container="HR", updated=mar), metadata={"authority_tier": "0"})  # fmt: skip
    enqueue(cast.tenant_a, wiki, official)
    enqueue(cast.tenant_a, chat, make_doc("s-general", "anyone know when the deploy freeze ends?", PUBLIC,
                                          container="general", updated=mar))  # fmt: skip
    backend.ingest(cast.tenant_a)

    def q(**kw: Any) -> set[str]:
        return set(lexical(cast.alice, cast.tenant_a, "deploy freeze", SearchFilters(**kw)))

    assert q() == {"w-eng-jan", "w-ops-mar", "w-hr-mar", "s-general"}
    assert q(sources=("slack",)) == {"s-general"}
    assert q(containers=("ENG", "OPS")) == {"w-eng-jan", "w-ops-mar"}
    assert q(after=date(2026, 2, 1)) == {"w-ops-mar", "w-hr-mar", "s-general"}
    assert q(before=date(2026, 2, 1)) == {"w-eng-jan"}
    assert q(max_authority_tier=0) == {"w-hr-mar"}
    assert q(phrases=("duty manager",)) == {"w-ops-mar"}
    assert q(exclude_terms=("payroll",)) == {"w-eng-jan", "w-ops-mar", "s-general"}
    with tenant_context(cast.tenant_a.pk):
        ids = dict(Document.objects.filter(external_id__in=["w-ops-mar", "s-general"]).values_list("external_id", "pk"))
    assert q(document_ids=(ids["w-ops-mar"], ids["s-general"])) == {"w-ops-mar", "s-general"}
    assert q(document_ids=(ids["w-ops-mar"],), sources=("slack",)) == set()


def test_it_returns_only_readable_chunks_and_nothing_for_an_empty_permission_set(backend, cast) -> None:
    src = source_for(cast.tenant_a)
    enqueue(cast.tenant_a, src, make_doc("open", "Quarterly budget review summary.", PUBLIC))
    enqueue(cast.tenant_a, src, make_doc("fin", "Quarterly budget review: restricted figures.",
                                         [["confluence:group:finance"]]))  # fmt: skip
    enqueue(cast.tenant_a, src, make_doc("nested", "Quarterly budget review of salaries.",
                                         [["confluence:group:finance"], ["confluence:group:hr"]]))  # fmt: skip
    grant_groups(cast.tenant_a, {"confluence:group:finance": [cast.bob, cast.alice],
                                 "confluence:group:hr": [cast.alice]})  # fmt: skip
    backend.ingest(cast.tenant_a)
    assert set(lexical(cast.alice, cast.tenant_a, "quarterly budget review")) == {"open", "fin", "nested"}
    assert set(lexical(cast.bob, cast.tenant_a, "quarterly budget review")) == {"open", "fin"}
    assert set(vector(cast.bob, cast.tenant_a, "quarterly budget review")) == {"open", "fin"}
    with tenant_context(cast.tenant_a.pk):
        b = index_backend()
        assert b.lexical(cast.tenant_a.pk, (), "quarterly budget review", SearchFilters(), 10).hits == []
        assert b.vector(cast.tenant_a.pk, (), embedder().embed_query("budget"), SearchFilters(), 10).hits == []
        assert b.count_readable(cast.tenant_a.pk, (), SearchFilters(), 100) == 0


def test_it_forgets_a_deleted_document(backend, cast) -> None:
    src = source_for(cast.tenant_a)
    enqueue(cast.tenant_a, src, make_doc("keep", "Badge access for the lab is requested at reception.", PUBLIC))
    enqueue(cast.tenant_a, src, make_doc("gone", "Badge access for the vault needs two approvals.", PUBLIC))
    backend.ingest(cast.tenant_a)
    assert set(lexical(cast.alice, cast.tenant_a, "badge access")) == {"keep", "gone"}
    with tenant_context(cast.tenant_a.pk):
        do_enqueue_delete(src, "gone", source_version=2)
    backend.ingest(cast.tenant_a)
    assert lexical(cast.alice, cast.tenant_a, "badge access") == ["keep"]
    assert vector(cast.alice, cast.tenant_a, "badge access vault") == ["keep"]


def test_it_serves_the_new_text_after_an_update_and_never_the_old(backend, cast) -> None:
    src = source_for(cast.tenant_a)
    enqueue(cast.tenant_a, src, make_doc("page", "The wifi password rotates monthly. " * 3, PUBLIC, version=1))
    backend.ingest(cast.tenant_a)
    assert lexical(cast.alice, cast.tenant_a, "wifi password") == ["page"]
    enqueue(cast.tenant_a, src, make_doc("page", "Guest network tickets go to the helpdesk.", PUBLIC, version=2))
    backend.ingest(cast.tenant_a)
    assert lexical(cast.alice, cast.tenant_a, "wifi password") == []
    assert lexical(cast.alice, cast.tenant_a, "guest network helpdesk") == ["page"]


def test_it_revokes_access_after_an_acl_only_update(backend, cast) -> None:
    src = source_for(cast.tenant_a)
    enqueue(cast.tenant_a, src, make_doc("plan", "Reorganisation plan for the platform team.", PUBLIC))
    backend.ingest(cast.tenant_a)
    assert lexical(cast.bob, cast.tenant_a, "reorganisation plan") == ["plan"]
    with tenant_context(cast.tenant_a.pk):
        do_enqueue_acl_update(src, "plan", [["confluence:group:directors"]], source_version=2)
    backend.ingest(cast.tenant_a)
    assert lexical(cast.bob, cast.tenant_a, "reorganisation plan") == []
    assert vector(cast.bob, cast.tenant_a, "reorganisation plan") == []
    grant_groups(cast.tenant_a, {"confluence:group:directors": [cast.bob]})
    assert lexical(cast.bob, cast.tenant_a, "reorganisation plan") == ["plan"]


def test_it_never_returns_another_tenants_chunks(backend, cast) -> None:
    for tenant, text in [(cast.tenant_a, "Acme merger timeline draft."), (cast.tenant_b, "Globex merger timeline.")]:
        enqueue(tenant, source_for(tenant), make_doc(f"merger-{tenant.pk}", text, PUBLIC))
        backend.ingest(tenant)
    with tenant_context(cast.tenant_a.pk):
        a_sets = permission_context(cast.alice).readable_acl_set_ids
    assert lexical(cast.mallory, cast.tenant_b, "merger timeline") == [f"merger-{cast.tenant_b.pk}"]
    with tenant_context(cast.tenant_b.pk):
        # Tenant A's own set ids asked for under tenant B: the tenant filter still holds.
        assert index_backend().lexical(cast.tenant_b.pk, a_sets, "merger timeline", SearchFilters(), 10).hits == []


def test_hybrid_search_fuses_both_legs_over_readable_chunks(backend, cast) -> None:
    src = source_for(cast.tenant_a)
    for i in range(6):
        acl = PUBLIC if i % 2 == 0 else [["confluence:group:secret"]]
        enqueue(cast.tenant_a, src, make_doc(f"inc-{i}", f"Incident postmortem {i}: database failover took long.", acl))
    backend.ingest(cast.tenant_a)
    with tenant_context(cast.tenant_a.pk):
        perm = permission_context(cast.carol)
        outcome = hybrid_search(perm, ["database failover postmortem"], SearchFilters(), k=10)
    assert {c.title for c in outcome.chunks} == {"inc-0", "inc-2", "inc-4"}
    assert set(outcome.legs) == {"lexical:0", "vector:0"}
    assert outcome.notices == []
    if backend.uses_opensearch:
        assert outcome.legs["lexical:0"]["strategy"] == "opensearch-bm25"

"""The vector leg's plan choice (docs/vector-benchmark.md): an exact index-only scan while the reader's
readable chunks are few (<= CAIRN_VECTOR_EXACT_SCAN_MAX_ROWS), HNSW with iterative scan above it; on
either path no chunk the reader cannot read is ever returned."""

from __future__ import annotations

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from core.backends import embedder, index_backend
from retrieval.backends.base import SearchFilters
from retrieval.models import Chunk
from retrieval.permissions import permission_context
from tenants.context import tenant_context
from tests.support import enqueue, grant_groups, ingest_inline, make_cast, make_doc, source_for

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


# --- The clustered exact scan (issue 19): per-tenant centroids, retrieval/clustering.py ---------------------


@pytest.fixture(scope="module")
def cluster_docs(django_db_blocker):
    """A cast of its own (training changes the tenant): 120 one-chunk documents in tenant A as in ``acl_docs``,
    and 20 in tenant B on the same topics, readable by a group of the same name."""
    with django_db_blocker.unblock():
        c = make_cast()
        src = source_for(c.tenant_a)
        for i in range(120):
            text = f"Note {i} about {TOPICS[i % len(TOPICS)]}. Owner team {i % 7}."
            enqueue(c.tenant_a, src, make_doc(f"v{i}", text, [[group_of(i)]]))
        grant_groups(c.tenant_a, {FEW: [c.bob], MANY: [c.carol]})
        ingest_inline(c.tenant_a.pk)
        src_b = source_for(c.tenant_b)
        for i in range(20):
            enqueue(c.tenant_b, src_b, make_doc(f"b{i}", f"Note {i} about {TOPICS[i % len(TOPICS)]}.", [[MANY]]))
        grant_groups(c.tenant_b, {MANY: [c.mallory]})
        ingest_inline(c.tenant_b.pk)
    return c


def clustered_settings(settings, nprobe: int) -> None:
    """120 chunks, 10 a list -> 12 centroids; the cap below carol's 60 readable chunks."""
    settings.CAIRN = {**settings.CAIRN, "VECTOR_CLUSTERS": True, "VECTOR_CLUSTER_MIN_CHUNKS": 50,
                      "VECTOR_CLUSTER_ROWS_PER_LIST": 10, "VECTOR_CLUSTER_NPROBE": nprobe,
                      "VECTOR_CLUSTER_BATCH": 25, "VECTOR_EXACT_SCAN_MAX_ROWS": 30}  # fmt: skip


def clusters_of(tenant_id: int) -> dict[int, int | None]:
    with tenant_context(tenant_id):
        return dict(Chunk.objects.values_list("pk", "vcluster"))


def test_a_broad_reader_takes_the_clustered_scan_which_matches_the_exact_scan(cluster_docs, settings) -> None:
    from retrieval import clustering

    tid = cluster_docs.tenant_a.pk
    clustered_settings(settings, nprobe=12)  # every cluster probed: must equal the exact scan
    done = clustering.train(tid, force=True)
    assert done["outcome"] == "trained" and done["nlist"] == 12 and done["ready"], done
    assert None not in clusters_of(tid).values()
    for query in ["budget review", "laptop encryption policy", "incident postmortem"]:
        got, got_docs, got_acls, carol_sets = search(cluster_docs.carol, tid, query, 10)
        assert got.strategy == "clustered"
        assert got_acls <= carol_sets and all(int(d[1:]) % 2 == 1 for d in got_docs)
        settings.CAIRN = {**settings.CAIRN, "VECTOR_EXACT_SCAN_MAX_ROWS": 10**6}
        exact, exact_docs, _, _ = search(cluster_docs.carol, tid, query, 10)
        settings.CAIRN = {**settings.CAIRN, "VECTOR_EXACT_SCAN_MAX_ROWS": 30}
        assert exact.strategy == "exact"
        assert got_docs == exact_docs
        assert [round(h.score, 4) for h in got.hits] == [round(h.score, 4) for h in exact.hits]
    # A selective reader stays on the exact scan; fewer probes still only return readable rows of the tenant.
    small, small_docs, small_acls, bob_sets = search(cluster_docs.bob, tid, "budget review", 10)
    assert small.strategy == "exact" and small_acls <= bob_sets
    clustered_settings(settings, nprobe=2)
    few, few_docs, few_acls, _ = search(cluster_docs.carol, tid, "office badge access", 10)
    assert few.strategy.startswith("clustered") and len(few.hits) == 10
    assert few_acls <= carol_sets and all(int(d[1:]) % 2 == 1 for d in few_docs)
    with tenant_context(tid):
        own = set(Chunk.objects.values_list("pk", flat=True))
    assert {h.chunk_id for h in few.hits} <= own  # never tenant B's chunks on the same topics


def test_rows_without_a_cluster_are_still_found(cluster_docs, settings) -> None:
    from retrieval import clustering

    tid = cluster_docs.tenant_a.pk
    clustered_settings(settings, nprobe=6)  # half the clusters: enough readable rows not to fall back
    clustering.train(tid, force=True)
    with tenant_context(tid):
        target = Chunk.objects.get(document__external_id="v13")  # odd: carol's
        Chunk.objects.filter(pk=target.pk).update(vcluster=None)
        vec = np.asarray(target.embedding, dtype=np.float32)
        perm = permission_context(cluster_docs.carol)
        result = index_backend().vector(tid, perm.readable_acl_set_ids, vec, SearchFilters(), 10)
    # It has no cluster, so only the NULL branch of the clustered scan can return it: first, at cosine 1.
    assert result.strategy == "clustered"
    assert result.hits[0].chunk_id == target.pk and result.hits[0].score > 0.999


def test_training_is_idempotent_and_a_broken_off_reassignment_resumes(cluster_docs, settings) -> None:
    from retrieval import clustering
    from retrieval.models import VectorClustering

    tid = cluster_docs.tenant_a.pk
    clustered_settings(settings, nprobe=4)
    first = clustering.train(tid, force=True)
    before = clusters_of(tid)
    with tenant_context(tid):
        generation = VectorClustering.objects.get().generation
    again = clustering.train(tid)  # not due: 120 chunks < 2 x 120
    assert again["outcome"] == "up-to-date", again
    assert clusters_of(tid) == before
    with tenant_context(tid):
        assert VectorClustering.objects.get().generation == generation
    # A worker killed mid-reassignment: state still "reassigning", some rows not yet assigned.  The leg
    # does not take the clustered path meanwhile; the redelivered task finishes the same generation.
    with tenant_context(tid):
        VectorClustering.objects.update(state=VectorClustering.State.REASSIGNING)
        Chunk.objects.filter(document__external_id__in=["v1", "v2", "v3"]).update(vcluster=None)
    assert search(cluster_docs.carol, tid, "budget review", 10)[0].strategy.startswith("hnsw-iterative")
    resumed = clustering.train(tid)
    assert resumed["outcome"] == "resumed" and resumed["changed_rows"] == 3, resumed
    assert clusters_of(tid) == before
    with tenant_context(tid):
        c = VectorClustering.objects.get()
        assert (c.generation, c.state, c.nlist) == (generation, "ready", first["nlist"])
    assert search(cluster_docs.carol, tid, "budget review", 10)[0].strategy == "clustered"


def test_ingest_assigns_new_chunks_and_queues_training_when_due(cluster_docs, settings) -> None:
    import json
    import uuid

    from django.core.cache import cache

    from cairn.celery import app
    from retrieval import clustering, vclusters
    from retrieval.models import VectorCentroid

    tid = cluster_docs.tenant_a.pk
    clustered_settings(settings, nprobe=4)
    clustering.train(tid, force=True)
    src = source_for(cluster_docs.tenant_a, name="wiki-2")
    enqueue(cluster_docs.tenant_a, src, make_doc("new1", "A note about the database backup restore drill.", [[MANY]]))
    ingest_inline(tid)
    with tenant_context(tid):
        chunk = Chunk.objects.get(document__external_id="new1")
        cents = np.stack([np.asarray(c, dtype=np.float32)
                          for c in VectorCentroid.objects.order_by("cluster").values_list("centroid", flat=True)])  # fmt: skip
    assert chunk.vcluster == int(vclusters.assign(np.asarray(chunk.embedding, dtype=np.float32), cents)[0])
    # Tenant B (20 chunks) has no centroids: its new chunks stay unassigned, and the leg never clusters there.
    assert set(clusters_of(cluster_docs.tenant_b.pk).values()) == {None}
    # Past the threshold with no clustering: the ingest queues the training task on commit (a queue no worker
    # reads, so nothing runs it here).
    queue = f"test-vclusters-{uuid.uuid4().hex[:8]}"
    settings.CAIRN = {**settings.CAIRN, "VECTOR_CLUSTER_MIN_CHUNKS": 10, "INGEST_QUEUE": queue}
    cache.delete(f"vclusters-queued:{cluster_docs.tenant_b.pk}")
    src_b = source_for(cluster_docs.tenant_b, name="wiki-2")
    enqueue(cluster_docs.tenant_b, src_b, make_doc("bnew", "Another note about travel reimbursement.", [[MANY]]))
    ingest_inline(cluster_docs.tenant_b.pk)
    with app.connection_for_read() as conn:
        r = conn.default_channel.client  # the broker's Redis client (kombu's redis transport)
        messages = [json.loads(m) for m in r.lrange(queue, 0, -1)]
        tasks = [m["headers"]["task"] for m in messages]
        r.delete(queue)
    assert tasks.count("retrieval.tasks.train_vector_clusters") == 1, tasks


def test_a_reader_far_above_the_cap_by_the_acl_set_counts_is_not_counted(cluster_docs, settings) -> None:
    from retrieval import clustering

    tid = cluster_docs.tenant_a.pk
    clustered_settings(settings, nprobe=12)
    clustering.train(tid, force=True)
    with tenant_context(tid):
        sets = permission_context(cluster_docs.carol).readable_acl_set_ids
        snapshot = sum(clustering.current()[1].get(a, 0) for a in sets)  # 60 or more (earlier tests add chunks)
    assert snapshot >= 60
    settings.CAIRN = {**settings.CAIRN, "VECTOR_EXACT_SCAN_MAX_ROWS": snapshot // 2 - 1}  # snapshot > 2 x cap
    with CaptureQueriesContext(connection) as sent:
        uncounted, docs, acls, carol_sets = search(cluster_docs.carol, tid, "budget review", 10)
    assert uncounted.strategy == "clustered" and acls <= carol_sets
    assert not [q for q in sent.captured_queries if "SELECT count(*)" in q["sql"]]
    settings.CAIRN = {**settings.CAIRN, "VECTOR_EXACT_SCAN_MAX_ROWS": (snapshot + 1) // 2}  # counted, still clustered
    with CaptureQueriesContext(connection) as sent:
        counted, counted_docs, _, _ = search(cluster_docs.carol, tid, "budget review", 10)
    assert counted.strategy == "clustered" and counted_docs == docs
    assert [q for q in sent.captured_queries if "SELECT count(*)" in q["sql"]]
    # A filter the counts know nothing of: always counted (only 1 chunk of container "ENG2" exists: exact).
    src = source_for(cluster_docs.tenant_a, name="wiki-3")
    enqueue(cluster_docs.tenant_a, src, make_doc("eng2", "Budget review notes.", [[MANY]], container="ENG2"))
    ingest_inline(tid)
    settings.CAIRN = {**settings.CAIRN, "VECTOR_EXACT_SCAN_MAX_ROWS": snapshot // 2 - 1}
    with tenant_context(tid):
        perm = permission_context(cluster_docs.carol)
        filtered = index_backend().vector(tid, perm.readable_acl_set_ids, embedder().embed_query("budget review"),
                                          SearchFilters(containers=("ENG2",)), 10)  # fmt: skip
    assert filtered.strategy == "exact" and len(filtered.hits) == 1

"""Idempotent, versioned ingestion; ACL-only fast path; deletes from every leg."""

from __future__ import annotations

from django.db import connection

from retrieval import pipeline
from retrieval.actions import do_enqueue_acl_update, do_enqueue_delete
from retrieval.models import Chunk, Document, IngestEvent
from tenants.context import tenant_context
from tests.support import enqueue, ingest_inline, make_doc, source_for

TEXT_V1 = "The release train leaves every Tuesday. Hotfixes ship on Thursday after review."
TEXT_V2 = "The release train leaves every Wednesday. Hotfixes ship on Friday after review."


def state(tenant) -> list[tuple]:
    with tenant_context(tenant.pk), connection.cursor() as cur:
        cur.execute(
            "SELECT d.external_id, d.source_version, d.deleted, d.snapshot_sha256, s.clauses::text, "
            "(SELECT array_agg(c.text ORDER BY c.ord) FROM retrieval_chunk c WHERE c.document_id = d.id), "
            "(SELECT count(*) FROM retrieval_posting p JOIN retrieval_chunk c ON c.id = p.chunk_id "
            " WHERE c.document_id = d.id) "
            "FROM retrieval_document d LEFT JOIN retrieval_aclset s ON s.id = d.acl_set_id ORDER BY 1"
        )
        docs = cur.fetchall()
        cur.execute("SELECT n_chunks, total_length FROM retrieval_indexstate")
        stats = cur.fetchone()
        cur.execute("SELECT lexeme, df FROM retrieval_termstat WHERE df > 0 ORDER BY 1")
        return [tuple(docs), stats, tuple(cur.fetchall())]


def test_the_same_event_applied_twice_yields_the_same_state(cast) -> None:
    src = source_for(cast.tenant_a)
    doc = make_doc("rel", TEXT_V1, [["public:tenant"]])
    enqueue(cast.tenant_a, src, doc)
    ingest_inline(cast.tenant_a.pk)
    first = state(cast.tenant_a)
    # A redelivered webhook with the same event id is not even stored twice ...
    assert enqueue(cast.tenant_a, src, doc) is None
    # ... and applying the same document again through the pipeline changes nothing.
    from core.backends import embedder

    with tenant_context(cast.tenant_a.pk):
        assert pipeline.apply_upsert(src, doc, embedder()) == pipeline.OUTCOME_UNCHANGED
    assert state(cast.tenant_a) == first


def test_events_out_of_order_converge_to_the_newest_version(cast) -> None:
    a_src = source_for(cast.tenant_a)
    v1 = make_doc("rel", TEXT_V1, [["public:tenant"]], version=1)
    v2 = make_doc("rel", TEXT_V2, [["public:tenant"]], version=2)
    enqueue(cast.tenant_a, a_src, v1)
    ingest_inline(cast.tenant_a.pk)
    enqueue(cast.tenant_a, a_src, v2)
    ingest_inline(cast.tenant_a.pk)
    in_order = state(cast.tenant_a)

    b_src = source_for(cast.tenant_b)
    enqueue(cast.tenant_b, b_src, v2)
    ingest_inline(cast.tenant_b.pk)
    enqueue(cast.tenant_b, b_src, v1)  # the older event arrives late
    ingest_inline(cast.tenant_b.pk)
    assert state(cast.tenant_b) == in_order
    with tenant_context(cast.tenant_b.pk):
        assert list(IngestEvent.objects.order_by("pk").values_list("outcome", flat=True)) == ["created", "stale"]
        assert "Wednesday" in Document.objects.get(external_id="rel").text


def test_an_acl_change_updates_permissions_without_reembedding(cast) -> None:
    src = source_for(cast.tenant_a)
    enqueue(cast.tenant_a, src, make_doc("rel", TEXT_V1, [["confluence:group:eng"]]))
    ingest_inline(cast.tenant_a.pk)
    with tenant_context(cast.tenant_a.pk):
        before = list(Chunk.objects.values_list("pk", "embedding"))
        do_enqueue_acl_update(src, "rel", (("confluence:group:leads",),))
    ingest_inline(cast.tenant_a.pk)
    with tenant_context(cast.tenant_a.pk), connection.cursor() as cur:
        after = list(Chunk.objects.values_list("pk", "embedding"))
        assert [p for p, _ in after] == [p for p, _ in before]
        assert all(list(a) == list(b) for (_, a), (_, b) in zip(after, before, strict=False))
        doc = Document.objects.get(external_id="rel")
        assert doc.acl_set.clauses == [["confluence:group:leads"]]
        cur.execute("SELECT DISTINCT acl_set_id FROM retrieval_posting WHERE tenant_id = %s", [cast.tenant_a.pk])
        assert [r[0] for r in cur.fetchall()] == [doc.acl_set_id]
        assert IngestEvent.objects.order_by("-pk").first().outcome == pipeline.OUTCOME_ACL_ONLY


def test_a_delete_removes_the_document_from_every_leg_and_an_older_upsert_cannot_resurrect_it(cast) -> None:
    src = source_for(cast.tenant_a)
    enqueue(cast.tenant_a, src, make_doc("rel", TEXT_V1, [["public:tenant"]], version=3))
    ingest_inline(cast.tenant_a.pk)
    with tenant_context(cast.tenant_a.pk):
        do_enqueue_delete(src, "rel", source_version=4)
    ingest_inline(cast.tenant_a.pk)
    enqueue(cast.tenant_a, src, make_doc("rel", TEXT_V2, [["public:tenant"]], version=4))
    ingest_inline(cast.tenant_a.pk)
    with tenant_context(cast.tenant_a.pk), connection.cursor() as cur:
        assert Chunk.objects.count() == 0
        cur.execute("SELECT count(*) FROM retrieval_posting")
        assert cur.fetchone()[0] == 0
        cur.execute("SELECT count(*) FROM retrieval_termstat WHERE df <> 0")
        assert cur.fetchone()[0] == 0
        assert Document.objects.get(external_id="rel").deleted


def test_a_corrupt_pdf_fails_its_event_without_writing_anything(cast) -> None:
    src = source_for(cast.tenant_a)
    enqueue(cast.tenant_a, src, make_doc("bad.pdf", "%PDF-1.7 garbage", [["public:tenant"]],
                                         media_type="application/pdf"))  # fmt: skip
    ingest_inline(cast.tenant_a.pk)
    with tenant_context(cast.tenant_a.pk):
        event = IngestEvent.objects.get()
        assert event.status == IngestEvent.Status.FAILED
        assert "ExtractionError" in event.error
        assert Document.objects.count() == 0


def test_a_malformed_acl_is_rejected_before_anything_is_stored(cast) -> None:
    import pytest

    src = source_for(cast.tenant_a)
    with pytest.raises(ValueError):
        enqueue(cast.tenant_a, src, make_doc("x", "text", [["nobody-knows-this-kind"]]))
    with tenant_context(cast.tenant_a.pk):
        assert IngestEvent.objects.count() == 0


def test_a_revocation_is_not_undone_by_an_older_content_event_applied_after_it(cast) -> None:
    src = source_for(cast.tenant_a)
    enqueue(cast.tenant_a, src, make_doc("rel", TEXT_V1, [["confluence:group:eng"]]))
    ingest_inline(cast.tenant_a.pk)
    # A content event read at the source while the old ACL was still in force ...
    enqueue(cast.tenant_a, src, make_doc("rel", TEXT_V2, [["confluence:group:eng"]]), event_id="late-edit")
    # ... then the revocation, observed later; the permissions queue applies it first.
    with tenant_context(cast.tenant_a.pk):
        do_enqueue_acl_update(src, "rel", (("confluence:group:leads",),))
    ingest_inline(cast.tenant_a.pk)
    with tenant_context(cast.tenant_a.pk):
        doc = Document.objects.get(external_id="rel")
        assert "Wednesday" in doc.text  # the content change still landed
        assert doc.acl_set.clauses == [["confluence:group:leads"]]  # the revocation held
        outcomes = list(IngestEvent.objects.order_by("pk").values_list("kind", "outcome"))
        assert outcomes[-2:] == [("upsert", "updated"), ("acl", "acl_only")]


def test_a_nul_character_from_the_source_does_not_break_storing_the_event(cast) -> None:
    from dataclasses import replace

    src = source_for(cast.tenant_a)
    doc = replace(make_doc("nul", "Plain words about the onboarding checklist.", [["public:tenant"]]),
                  title="On\x00boarding", metadata={"note": "a\x00b"})  # fmt: skip
    assert enqueue(cast.tenant_a, src, doc) is not None
    ingest_inline(cast.tenant_a.pk)
    with tenant_context(cast.tenant_a.pk):
        stored = Document.objects.get(external_id="nul")
        assert stored.title == "Onboarding"
        assert stored.metadata == {"note": "ab"}


def lexical_index(tenant) -> tuple:
    with tenant_context(tenant.pk), connection.cursor() as cur:
        cur.execute(
            "SELECT d.external_id, c.ord, c.length, c.tsv::text FROM retrieval_chunk c "
            "JOIN retrieval_document d ON d.id = c.document_id ORDER BY 1, 2"
        )
        chunks = cur.fetchall()
        cur.execute(
            "SELECT d.external_id, c.ord, p.lexeme, p.tf, p.dl FROM retrieval_posting p "
            "JOIN retrieval_chunk c ON c.id = p.chunk_id JOIN retrieval_document d ON d.id = c.document_id "
            "ORDER BY 1, 2, 3"
        )
        postings = cur.fetchall()
        cur.execute("SELECT lexeme, df FROM retrieval_termstat WHERE df > 0 ORDER BY 1")
        stats = cur.fetchall()
        cur.execute("SELECT n_chunks, total_length FROM retrieval_indexstate")
        return chunks, postings, stats, cur.fetchone()


def test_indexing_a_batch_of_documents_builds_the_same_lexical_index_as_one_at_a_time(cast) -> None:
    # The bulk load of benchmarks/ingest_and_query.py indexes many documents per call.
    from core.backends import embedder
    from retrieval.permissions import get_index_state, intern_acl

    docs = [make_doc("a", TEXT_V1 * 30, [["public:tenant"]], title="Release train"),
            make_doc("b", TEXT_V2 + " Review the release notes.", [["public:tenant"]], title="Hotfix policy")]  # fmt: skip
    src_a, src_b = source_for(cast.tenant_a), source_for(cast.tenant_b)
    with tenant_context(cast.tenant_a.pk):
        for doc in docs:
            pipeline.apply_upsert(src_a, doc, embedder())
    with tenant_context(cast.tenant_b.pk):
        acl = intern_acl([["public:tenant"]])
        written = []
        for doc in docs:
            prepared = pipeline.prepare(doc)
            d = Document.objects.create(source=src_b, external_id=doc.external_id, acl_set=acl,
                                        **pipeline._doc_fields(src_b, doc))  # fmt: skip
            Chunk.objects.bulk_create(
                Chunk(
                    tenant_id=cast.tenant_b.pk,
                    document=d,
                    ord=i,
                    text=s.text,
                    heading=s.heading,
                    char_start=s.start,
                    char_end=s.end,
                    **pipeline._chunk_denorm(d),
                )  # fmt: skip
                for i, s in enumerate(prepared.chunks)
            )
            written.append(d.pk)
        pipeline._index_lexical(written, get_index_state(for_update=True))
    one_by_one, batched = lexical_index(cast.tenant_a), lexical_index(cast.tenant_b)
    assert len(one_by_one[0]) > 2 and len(one_by_one[1]) > 20  # several chunks, many postings
    assert batched == one_by_one


def test_a_file_without_text_is_indexed_by_its_metadata_instead_of_failing_its_event(cast) -> None:
    from dataclasses import replace
    from datetime import UTC, datetime

    src = source_for(cast.tenant_a)
    image = replace(
        make_doc("att:diagram", "", [["confluence:user:alice"]], title="network-diagram.png", media_type="image/png"),
        content=b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR",
        author="Alice Example",
        created_at=datetime(2024, 3, 1, tzinfo=UTC),
        metadata={"container_title": "Network runbook"},
    )
    archive = make_doc("att:logs", "", [["public:tenant"]], title="logs.zip", media_type="application/zip")
    enqueue(cast.tenant_a, src, image)
    enqueue(cast.tenant_a, src, archive)
    ingest_inline(cast.tenant_a.pk)

    with tenant_context(cast.tenant_a.pk):
        assert set(IngestEvent.objects.values_list("status", flat=True)) == {IngestEvent.Status.DONE}
        document = Document.objects.get(external_id="att:diagram")
        text = " ".join(Chunk.objects.filter(document=document).values_list("text", flat=True))
        assert document.acl_set.clauses == [["confluence:user:alice"]]
        assert document.media_type == "image/png"
    assert "File: network-diagram.png" in text
    assert "Location: ENG / Network runbook" in text
    assert "Type: image/png" in text and "Author: Alice Example" in text and "Created: 2024-03-01" in text

"""Worker crash drill (CI size): SIGKILL a real Celery worker 4 times while it ingests a seeded 120-event
stream; the end state equals an uninterrupted run of the same stream in another tenant.

The full drill (1,000 events, 20 kills) is ``python -m benchmarks.sigkill_drill``; see docs/benchmarks.md
"Worker crash drill".  Both use ``benchmarks/sigkill_drill.py``.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from benchmarks.sigkill_drill import DrillConfig, make_stream, resolved, run_drill
from retrieval.actions import do_create_source, do_enqueue_acl_update, do_enqueue_document
from retrieval.contracts import SourceDocument
from retrieval.models import Document, IngestEvent
from retrieval.pipeline import prepare
from retrieval.tasks import process_ingest_event
from tenants.context import tenant_context
from tests.support import unique

LABELS = {"create", "update", "acl_only", "acl_event", "out_of_order", "delete", "recreate", "duplicate", "group"}


def test_it_builds_the_same_stream_from_the_same_seed_with_every_kind_of_change() -> None:
    ops = resolved(make_stream(200, 11))
    assert ops == resolved(make_stream(200, 11))
    assert ops != resolved(make_stream(200, 12))
    assert len(ops) == 200 and {op.label for op in ops} == LABELS
    first_seen: dict[str, int] = {}
    for op in ops:
        if op.label == "duplicate":
            assert first_seen[op.event_id] < op.seq  # the very same event id, sent again later
        elif op.kind != "group":
            first_seen[op.event_id] = op.seq
    newest: dict[str, int] = {}
    for op in ops:
        if op.label in ("create", "update", "acl_only", "delete", "recreate"):
            assert op.version is not None and op.version > newest.get(op.external_id, 0)
            newest[op.external_id] = op.version
        elif op.label == "out_of_order":
            assert op.version is not None and op.version < newest[op.external_id]
    chunks_per_doc = Counter(
        len(prepare(SourceDocument(op.external_id, op.title, "", op.content.encode(), op.media_type, op.acl,
                                   op.version or 0)).chunks)
        for op in ops if op.kind == "upsert"
    )  # fmt: skip
    assert set(chunks_per_doc) == {1, 2}  # small documents keep the embedding cheap


def test_it_applies_the_create_an_acl_event_overtook_before_the_acl_so_the_newer_acl_wins(cast) -> None:
    with tenant_context(cast.tenant_a.pk):
        source = do_create_source("confluence", unique("wiki"))
        doc = SourceDocument(external_id="p-1", title="Payroll", url="https://wiki.example/p-1",
                             content=b"Payroll runs on the last Friday.", media_type="text/plain",
                             acl=(("user:alice@example.com", "user:bob@example.com"),), source_version=1)  # fmt: skip
        create = do_enqueue_document(source, doc)
        revoke = do_enqueue_acl_update(source, "p-1", (("user:alice@example.com",),), source_version=1)
    assert create is not None and revoke is not None
    # The permissions queue runs ahead of the ingest backlog: the revocation is applied first.
    assert process_ingest_event(cast.tenant_a.pk, revoke.pk) == "acl_only"
    with tenant_context(cast.tenant_a.pk):
        stored = Document.objects.select_related("acl_set").get(source=source, external_id="p-1")
        assert stored.acl_set.clauses == [["user:alice@example.com"]]
        assert IngestEvent.objects.get(pk=create.pk).status == "done"
    assert process_ingest_event(cast.tenant_a.pk, create.pk) == "already-processed"


def test_it_ends_exactly_like_an_uninterrupted_run_after_four_sigkills_over_120_events(tmp_path: Path) -> None:
    report = run_drill(DrillConfig(events=120, kills=4, seed=11, log_dir=tmp_path))
    assert report["kills"] == 4
    # The first kill lands while a task waits on the index lock the drill holds: certainly mid-task.
    assert report["pinned_kills"] == 1 and report["kills_with_event_in_flight"] >= 1
    assert report["redelivered_events"] >= 1  # and the killed event came back
    assert report["invariant_violations"] == {"A": [], "B": []}
    assert report["differences"] == 0, report["difference_examples"]

"""The index outbox, the OpenSearch-down fallback, the consistency checker and the alias reindex."""

from __future__ import annotations

import io
import socket
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import transaction

from retrieval import outbox, pipeline
from retrieval.backends import opensearch as osb
from retrieval.backends.base import SearchFilters
from retrieval.backends.composite import FALLBACK_NOTICE
from retrieval.models import Chunk, IndexOutbox
from retrieval.permissions import permission_context
from retrieval.search import hybrid_search
from tenants.context import tenant_context
from tests.support import enqueue, ingest_inline, make_doc, source_for

PUBLIC = [["public:tenant"]]


def closed_port_url() -> str:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return f"http://127.0.0.1:{port}"


def search(user: Any, tenant: Any, q: str) -> Any:
    with tenant_context(tenant.pk):
        return hybrid_search(permission_context(user), [q], SearchFilters(), k=10)


def test_it_writes_no_outbox_rows_with_the_postgres_backend(use_postgres, cast) -> None:
    enqueue(cast.tenant_a, source_for(cast.tenant_a), make_doc("d", "Plain postgres deployment.", PUBLIC))
    ingest_inline(cast.tenant_a.pk)
    assert outbox.backlog(cast.tenant_a.pk) == 0


def test_the_outbox_row_commits_or_rolls_back_with_the_document_change(use_opensearch, cast) -> None:
    src = source_for(cast.tenant_a)
    enqueue(cast.tenant_a, src, make_doc("doc", "Expense limits for travel.", PUBLIC))
    ingest_inline(cast.tenant_a.pk)
    assert outbox.backlog(cast.tenant_a.pk) == 1  # the upsert, written with the document
    with pytest.raises(RuntimeError), tenant_context(cast.tenant_a.pk):
        with transaction.atomic():
            assert pipeline.apply_acl_update(src, "doc", [["confluence:group:x"]], None) == pipeline.OUTCOME_ACL_ONLY
            assert IndexOutbox.objects.count() == 2
            raise RuntimeError("the change rolls back")
    assert outbox.backlog(cast.tenant_a.pk) == 1
    assert outbox.drain_all(cast.tenant_a.pk) == 1
    assert outbox.drain_all(cast.tenant_a.pk) == 0  # idempotent: nothing left, nothing re-sent


def test_it_falls_back_to_postgres_with_a_notice_and_drains_the_backlog_when_opensearch_returns(
    use_opensearch, settings, cast
) -> None:
    live = settings.CAIRN["OPENSEARCH_URL"]
    settings.CAIRN = {**settings.CAIRN, "OPENSEARCH_URL": closed_port_url(), "OPENSEARCH_TIMEOUT": 1}
    src = source_for(cast.tenant_a)
    for i in range(3):
        enqueue(cast.tenant_a, src, make_doc(f"runbook-{i}", f"Runbook {i}: restart the payment gateway.", PUBLIC))
    ingest_inline(cast.tenant_a.pk)
    with pytest.raises(osb.IndexUnavailable):
        outbox.drain(cast.tenant_a.pk)
    assert outbox.drain_index_outbox.run(cast.tenant_a.pk) == -1  # the task keeps the rows, no retry storm
    with tenant_context(cast.tenant_a.pk):
        rows = list(IndexOutbox.objects.values_list("attempts", "last_error"))
    assert len(rows) == 3 and all(a == 2 and "Connection" in e for a, e in rows)

    down = search(cast.alice, cast.tenant_a, "restart payment gateway")
    assert {c.title for c in down.chunks} == {"runbook-0", "runbook-1", "runbook-2"}
    assert down.notices == [FALLBACK_NOTICE]
    assert down.legs["lexical:0"]["strategy"].startswith("postgres-fallback:")

    settings.CAIRN = {**settings.CAIRN, "OPENSEARCH_URL": live}
    from core.backends import index_backend

    index_backend().reset()
    assert outbox.drain_index_outbox.run(cast.tenant_a.pk) == 3
    assert outbox.backlog(cast.tenant_a.pk) == 0
    up = search(cast.alice, cast.tenant_a, "restart payment gateway")
    assert up.notices == []
    assert up.legs["lexical:0"]["strategy"] == "opensearch-bm25"
    assert {c.title for c in up.chunks} == {"runbook-0", "runbook-1", "runbook-2"}


def test_index_check_finds_and_repairs_divergence(use_opensearch, cast) -> None:
    src = source_for(cast.tenant_a)
    for i in range(4):
        enqueue(cast.tenant_a, src, make_doc(f"p{i}", f"Onboarding checklist part {i}.", PUBLIC))
    ingest_inline(cast.tenant_a.pk)
    outbox.drain_all(cast.tenant_a.pk)
    out = io.StringIO()
    call_command("index_check", tenant=[cast.tenant_a.pk], stdout=out)
    assert "missing 0, extra 0, mismatched 0 -- ok" in out.getvalue()

    with tenant_context(cast.tenant_a.pk):
        ids = sorted(Chunk.objects.values_list("pk", flat=True))
    c, index = osb.client(), osb.alias_name(cast.tenant_a.pk)
    c.delete(index=index, id=str(ids[0]), refresh=True)  # lost write
    c.update(index=index, id=str(ids[1]), body={"doc": {"acl_set_id": 999999}}, refresh=True)  # drifted ACL
    c.index(index=index, id="987654321", refresh=True,
            body={"tenant_id": cast.tenant_a.pk, "chunk_id": 987654321, "document_id": 987654321,
                  "acl_set_id": 1, "content": "orphan", "source_version": 1})  # fmt: skip
    with pytest.raises(CommandError, match="1 tenant"):
        call_command("index_check", tenant=[cast.tenant_a.pk], stdout=io.StringIO())
    out = io.StringIO()
    call_command("index_check", tenant=[cast.tenant_a.pk], repair=True, stdout=out)
    assert "missing 1, extra 1, mismatched 1" in out.getvalue() and "now ok" in out.getvalue()
    assert outbox.compare_index(cast.tenant_a.pk).clean


def test_reindex_swaps_the_alias_to_a_complete_new_index(use_opensearch, cast) -> None:
    src = source_for(cast.tenant_a)
    for i in range(5):
        enqueue(cast.tenant_a, src, make_doc(f"h{i}", f"Holiday calendar for region {i}.", PUBLIC))
    ingest_inline(cast.tenant_a.pk)
    outbox.drain_all(cast.tenant_a.pk)
    c, alias = osb.client(), osb.alias_name(cast.tenant_a.pk)
    before = list(c.indices.get_alias(name=alias))
    out = io.StringIO()
    call_command("reindex_opensearch", tenant=[cast.tenant_a.pk], stdout=out)
    after = list(c.indices.get_alias(name=alias))
    assert before == [f"{alias}-v1"] and after == [f"{alias}-v2"]
    assert "100.0% 5/5 chunks" in out.getvalue() and "consistent" in out.getvalue()
    assert not c.indices.exists(index=f"{alias}-v1")
    assert not c.indices.exists_alias(name=osb.next_alias_name(cast.tenant_a.pk))
    assert {x.title for x in search(cast.alice, cast.tenant_a, "holiday calendar").chunks} == {
        f"h{i}" for i in range(5)
    }

"""Throwaway evaluation tenants, filled through the normal ingestion pipeline.

Documents go through ``do_enqueue_document`` (the ingest outbox) and are applied in-process with
``retrieval.tasks.process_pending_inline`` — the same code the Celery worker runs — so what is
measured is what production indexes.  A tenant is named after the data set and its digest, so a
second run over the same data reuses the finished index (pass ``fresh=True`` to rebuild under a
new name); re-enqueueing is idempotent because event ids are content-derived.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass

from django.db import transaction
from tqdm import tqdm

from retrieval.actions import PRIORITY_BACKFILL, do_create_source, do_enqueue_document
from retrieval.contracts import SourceDocument
from retrieval.models import Chunk, Document, IngestEvent
from retrieval.permissions import PermissionContext, permission_context
from retrieval.tasks import process_pending_inline
from tenants.actions import do_add_member, do_create_tenant, do_create_user
from tenants.context import tenant_context
from tenants.models import Tenant, User


@dataclass
class EvalTenant:
    tenant: Tenant
    user: User
    documents: int
    chunks: int
    ingest_seconds: float  # 0 when the index was reused
    ingested_now: int

    def perm(self) -> PermissionContext:
        with tenant_context(self.tenant.pk):
            return permission_context(self.user)


def ensure_eval_tenant(slug: str, docs: Iterable[SourceDocument], *, source_kind: str = "upload",
                       source_name: str = "Evaluation corpus", authority_tier: int = 1,
                       progress: bool = True) -> EvalTenant:  # fmt: skip
    tenant = do_create_tenant(slug, f"Evaluation ({slug})")
    user = do_create_user(f"{slug}-reader", f"reader@{slug}.eval.invalid", None, email_verified=True)
    do_add_member(tenant, user)
    with tenant_context(tenant.pk):
        source = do_create_source(source_kind, source_name, authority_tier=authority_tier)
    docs = list(docs)
    with tenant_context(tenant.pk):
        known = set(Document.objects.filter(source=source).values_list("external_id", flat=True))
    todo = [d for d in docs if d.external_id not in known]
    for i in range(0, len(todo), 200):
        with tenant_context(tenant.pk), transaction.atomic():
            for d in todo[i : i + 200]:
                do_enqueue_document(source, d, priority=PRIORITY_BACKFILL)
    with tenant_context(tenant.pk):
        pending = IngestEvent.objects.filter(status=IngestEvent.Status.PENDING).count()
    t0 = time.perf_counter()
    done = 0
    with tqdm(total=pending, desc=f"ingest {slug}", unit="doc", disable=not progress or pending == 0) as bar:
        while True:
            n = process_pending_inline(tenant.pk, limit=1)
            done += n
            bar.update(n)
            if n == 0:
                break
    elapsed = time.perf_counter() - t0 if done else 0.0
    with tenant_context(tenant.pk):
        n_docs = Document.objects.filter(deleted=False).count()
        n_chunks = Chunk.objects.count()
    return EvalTenant(tenant, user, n_docs, n_chunks, elapsed, done)

"""Documents, chunks, interned permission sets and the lexical index tables.

Every table here is tenant-owned and under forced RLS (see the migrations).
Chunks denormalise what retrieval filters on (ACL set, source, container,
dates, authority) so both legs filter inside one SQL statement.
"""

from __future__ import annotations

from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.search import SearchVectorField
from django.db import models
from django.db.models import F
from django.db.models.fields.json import KeyTextTransform
from django.utils import timezone
from pgvector.django import HnswIndex, VectorField

from tenants.scoping import TenantScopedModel

EMBEDDING_DIM = 384


class Source(TenantScopedModel):
    """A configured source instance (one Confluence site, one SharePoint tenant, ...)."""

    kind = models.CharField(max_length=32)  # confluence | sharepoint | slack | upload
    name = models.CharField(max_length=200)
    config = models.JSONField(default=dict, blank=True)
    credentials_encrypted = models.TextField(blank=True, default="")
    authority_tier = models.IntegerField(default=2)  # 0 system of record .. 3 chat
    paused = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)
    last_full_sync_at = models.DateTimeField(null=True, blank=True)
    last_incremental_sync_at = models.DateTimeField(null=True, blank=True)
    last_permission_sync_at = models.DateTimeField(null=True, blank=True)
    last_error = models.TextField(blank=True, default="")
    last_error_item = models.CharField(max_length=500, blank=True, default="")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "name"], name="uniq_source_name")]


class AclSet(TenantScopedModel):
    """One distinct CNF permission set, interned (each document points at one)."""

    digest = models.CharField(max_length=64)
    clauses = models.JSONField()  # [[principal, ...], ...] canonical order
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "digest"], name="uniq_aclset_digest")]


class Document(TenantScopedModel):
    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="documents")
    external_id = models.CharField(max_length=500)
    url = models.TextField(blank=True, default="")
    canonical_url = models.TextField(blank=True, default="")
    title = models.TextField(blank=True, default="")
    source_system = models.CharField(max_length=32)
    container = models.CharField(max_length=300, blank=True, default="")
    author = models.CharField(max_length=300, blank=True, default="")
    created_at_source = models.DateTimeField(null=True, blank=True)
    updated_at_source = models.DateTimeField(null=True, blank=True)
    version_label = models.CharField(max_length=100, blank=True, default="")
    authority_tier = models.IntegerField(default=2)
    content_fingerprint = models.CharField(max_length=64, blank=True, default="")
    simhash = models.BigIntegerField(default=0)
    snapshot_sha256 = models.CharField(max_length=64, blank=True, default="")
    source_version = models.BigIntegerField(default=0)
    acl_set = models.ForeignKey(AclSet, on_delete=models.PROTECT, related_name="+", null=True)
    # When the stored ACL was read at the source: an older queued event never overrides it.
    acl_observed_at = models.DateTimeField(null=True, blank=True)
    text = models.TextField(blank=True, default="")
    media_type = models.CharField(max_length=200, blank=True, default="")
    metadata = models.JSONField(default=dict, blank=True)
    # What the content is about (entity, reporting period), read from the text at ingestion by
    # retrieval.entities.describe_document; kept apart from ``metadata``, which the source owns.
    about = models.JSONField(default=dict, blank=True)
    deleted = models.BooleanField(default=False)
    indexed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "source", "external_id"], name="uniq_document_external")
        ]
        indexes = [
            models.Index(fields=["tenant", "content_fingerprint"]),
            models.Index(fields=["tenant", "canonical_url"]),
            # The documents that carry a container's ACL (Confluence attachments of a page), found by
            # retrieval.actions.acl_update_targets on every permission-sync op (issue 15).
            models.Index(F("source"), KeyTextTransform("container_id", "metadata"), name="document_container_id"),
        ]


class Chunk(TenantScopedModel):
    document = models.ForeignKey(Document, on_delete=models.CASCADE, related_name="chunks")
    ord = models.IntegerField()
    text = models.TextField()
    heading = models.TextField(blank=True, default="")
    char_start = models.IntegerField()
    char_end = models.IntegerField()
    length = models.IntegerField(default=0)  # lexical token count (BM25 |d|)
    embedding = VectorField(dimensions=EMBEDDING_DIM, null=True)
    # title + text, english config; used for phrase/exclusion filters.  Ranking
    # uses the posting table (BM25), see retrieval/backends/postgres.py.
    tsv = SearchVectorField(null=True)
    # Denormalised from the document so filters stay inside each leg's SQL.
    acl_set_id_denorm = models.BigIntegerField()
    source_system = models.CharField(max_length=32)
    container = models.CharField(max_length=300, blank=True, default="")
    updated_at_source = models.DateTimeField(null=True, blank=True)
    authority_tier = models.IntegerField(default=2)
    version_label = models.CharField(max_length=100, blank=True, default="")
    # The nearest centroid of the tenant's vector clustering (VectorCentroid, retrieval/vclusters.py): set at
    # ingest once the tenant has centroids, NULL before.  The covering index chunk_tenant_vcluster_half
    # (migration 0011) serves the clustered exact scan of broad readers (retrieval/backends/postgres.py).
    vcluster = models.IntegerField(null=True, blank=True)

    class Meta:
        indexes = [
            models.Index(fields=["tenant", "acl_set_id_denorm"], name="chunk_tenant_acl"),
            models.Index(fields=["document", "ord"], name="chunk_doc_ord"),
            GinIndex(fields=["tsv"], name="chunk_tsv_gin"),
            HnswIndex(
                name="chunk_embedding_hnsw",
                fields=["embedding"],
                m=16,
                ef_construction=64,
                opclasses=["vector_cosine_ops"],
            ),
        ]


class IndexState(TenantScopedModel):
    """Per-tenant counters: versions for cache keys, corpus statistics for BM25."""

    index_version = models.BigIntegerField(default=0)
    acl_version = models.BigIntegerField(default=0)
    n_chunks = models.BigIntegerField(default=0)
    total_length = models.BigIntegerField(default=0)
    content_as_of = models.DateTimeField(null=True, blank=True)
    permissions_as_of = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant"], name="uniq_indexstate_tenant")]


class VectorClustering(TenantScopedModel):
    """A tenant's vector clustering: how many centroids, trained on how many chunks, and whether every chunk
    has been assigned to one (only then does the vector leg take the clustered scan).

    ``generation`` grows with every training; the ingest pipeline caches centroids by (tenant, generation).
    """

    class State(models.TextChoices):
        REASSIGNING = "reassigning"  # new centroids written, chunks being (re)assigned: the leg uses HNSW
        READY = "ready"  # every chunk that has an embedding carries a cluster of this generation

    generation = models.BigIntegerField(default=0)
    nlist = models.IntegerField(default=0)
    trained_chunks = models.BigIntegerField(default=0)
    state = models.CharField(max_length=16, choices=State.choices, default=State.REASSIGNING)
    trained_at = models.DateTimeField(null=True, blank=True)
    train_seconds = models.FloatField(default=0.0)
    ready_at = models.DateTimeField(null=True, blank=True)
    # {acl_set_id: chunks} when the reassignment finished: lets the vector leg skip counting a reader's readable
    # chunks when these already sum far above the exact-scan cap (retrieval/clustering.py::broad_without_count).
    acl_counts = models.JSONField(default=dict, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant"], name="uniq_vectorclustering_tenant")]


class VectorCentroid(TenantScopedModel):
    """One centroid of a tenant's current clustering (unit vector); ``cluster`` is the value in Chunk.vcluster."""

    cluster = models.IntegerField()
    centroid = VectorField(dimensions=EMBEDDING_DIM)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "cluster"], name="uniq_vectorcentroid_cluster")]


class IngestEvent(TenantScopedModel):
    """A change to apply, stored before it is queued (the ingest outbox).

    Webhooks and syncs write the event and enqueue its task on commit; a beat
    task re-queues events left pending (broker down, worker killed).
    """

    class Status(models.TextChoices):
        PENDING = "pending"
        DONE = "done"
        SKIPPED = "skipped"
        FAILED = "failed"

    source = models.ForeignKey(Source, on_delete=models.CASCADE, related_name="events")
    event_id = models.CharField(max_length=300)
    kind = models.CharField(max_length=32)  # upsert | delete | acl
    external_id = models.CharField(max_length=500)
    payload = models.JSONField(default=dict)
    content = models.BinaryField(null=True, blank=True)
    source_version = models.BigIntegerField(null=True, blank=True)
    priority = models.IntegerField(default=5)  # lower runs first (ACL revocations 0)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    outcome = models.CharField(max_length=32, blank=True, default="")
    attempts = models.IntegerField(default=0)
    error = models.TextField(blank=True, default="")
    created_at = models.DateTimeField(default=timezone.now)
    processed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "source", "event_id"], name="uniq_ingest_event")]
        indexes = [
            models.Index(fields=["tenant", "status", "created_at"]),
            # apply_overtaken looks up one item's older pending events before every event.
            models.Index(fields=["source", "external_id", "created_at"], condition=models.Q(status="pending"),
                         name="ingest_event_pending_item"),
        ]  # fmt: skip


class IndexOutbox(TenantScopedModel):
    """A document change still to be mirrored into the external index (OpenSearch).

    Written in the same transaction as the change itself (retrieval/pipeline.py),
    only when the configured index backend has ``uses_outbox``; drained by
    ``retrieval.outbox.drain_index_outbox``.  A row only names the document and
    the kind of change: the drainer always writes the document's *current*
    Postgres state, so rows are idempotent and order-insensitive.
    """

    class Op(models.TextChoices):
        UPSERT = "upsert"  # text changed: re-send every chunk (vectors included)
        ACL = "acl"  # permissions / metadata only: partial update, no text
        DELETE = "delete"

    document_id = models.BigIntegerField()  # no FK: the row must outlive a hard delete
    op = models.CharField(max_length=16, choices=Op.choices)
    created_at = models.DateTimeField(default=timezone.now)
    attempts = models.IntegerField(default=0)
    last_error = models.TextField(blank=True, default="")

    class Meta:
        indexes = [models.Index(fields=["tenant", "id"], name="indexoutbox_tenant_id")]

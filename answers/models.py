"""Per-tenant answer-engine configuration that admins edit.

* ``EntityAlias``: surface forms of one entity (PG = Postgres = PostgreSQL), handed to
  ``parse_query`` so plans carry canonical entities and rewrites must keep them.
* ``AuthorityTier`` + ``AuthorityAssignment``: the tenant's source hierarchy (system of
  record > official docs > wiki > chat).  A tier's ``rank`` is what ends up in
  ``Document.authority_tier`` / ``Chunk.authority_tier`` (lower = more authoritative),
  so retrieval filters ("official only") and ranking read the same number.
* ``FreshnessFeed``: an authoritative, allow-listed URL (release list, status page) that
  says what the newest version of an entity is; fetched through ``core.http.SafeFetcher``.
* ``AnswerSettings``: which writer a tenant uses (extractive by default).

Every table is tenant-owned and under forced RLS (see the migration).
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from tenants.scoping import TenantScopedModel


class EntityAlias(TenantScopedModel):
    alias = models.CharField(max_length=200)
    canonical = models.CharField(max_length=200)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "alias"], name="uniq_entity_alias")]


class AuthorityTier(TenantScopedModel):
    rank = models.IntegerField()  # 0 = most authoritative (system of record)
    name = models.CharField(max_length=100)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "rank"], name="uniq_authority_rank"),
            models.UniqueConstraint(fields=["tenant", "name"], name="uniq_authority_name"),
        ]


class AuthorityAssignment(TenantScopedModel):
    """A source (``container == ""``) or one container of it placed in a tier."""

    source = models.ForeignKey("retrieval.Source", on_delete=models.CASCADE, related_name="+")
    container = models.CharField(max_length=300, blank=True, default="")
    tier = models.ForeignKey(AuthorityTier, on_delete=models.PROTECT, related_name="assignments")
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["tenant", "source", "container"], name="uniq_authority_assignment")
        ]


class FreshnessFeed(TenantScopedModel):
    name = models.CharField(max_length=200)
    entity = models.CharField(max_length=200)  # canonical entity the feed is authoritative for
    url = models.TextField()
    latest_version = models.CharField(max_length=100, blank=True, default="")
    latest_date = models.DateField(null=True, blank=True)
    fetched_at = models.DateTimeField(null=True, blank=True)
    last_error = models.CharField(max_length=300, blank=True, default="")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant", "name"], name="uniq_freshness_feed")]


class AnswerSettings(TenantScopedModel):
    class Writer(models.TextChoices):
        EXTRACTIVE = "extractive"
        OPENAI_COMPATIBLE = "openai_compatible"
        LLAMA_CPP = "llama_cpp"

    writer = models.CharField(max_length=32, choices=Writer.choices, default=Writer.EXTRACTIVE)
    endpoint_url = models.TextField(blank=True, default="")  # e.g. http://vllm:8000/v1
    model = models.CharField(max_length=200, blank=True, default="")
    api_key_encrypted = models.TextField(blank=True, default="")
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["tenant"], name="uniq_answer_settings")]

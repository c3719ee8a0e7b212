"""State changes of the answer engine's admin configuration (call inside tenant_context)."""

from __future__ import annotations

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from answers.freshness import do_refresh_feed
from answers.models import AnswerSettings, AuthorityAssignment, AuthorityTier, EntityAlias, FreshnessFeed
from retrieval.models import Chunk, Document, IndexState, Source

DEFAULT_TIERS = ((0, "system of record"), (1, "official docs"), (2, "wiki"), (3, "chat"))


def do_set_alias(alias: str, canonical: str) -> EntityAlias:
    row, _ = EntityAlias.objects.update_or_create(alias=alias.strip(), defaults={"canonical": canonical.strip()})
    return row


def do_delete_alias(alias_id: int) -> int:
    deleted, _ = EntityAlias.objects.filter(pk=alias_id).delete()
    return deleted


def do_define_tier(rank: int, name: str) -> AuthorityTier:
    row, _ = AuthorityTier.objects.update_or_create(rank=rank, defaults={"name": name.strip()})
    return row


def ensure_default_tiers() -> list[AuthorityTier]:
    for rank, name in DEFAULT_TIERS:
        if (
            not AuthorityTier.objects.filter(rank=rank).exists()
            and not AuthorityTier.objects.filter(name=name).exists()
        ):
            AuthorityTier.objects.create(rank=rank, name=name)
    return list(AuthorityTier.objects.order_by("rank"))


def tier_names() -> dict[int, str]:
    names = {rank: name for rank, name in DEFAULT_TIERS}
    names.update({t.rank: t.name for t in AuthorityTier.objects.all()})
    return names


@transaction.atomic
def do_assign_authority(source: Source, tier: AuthorityTier, container: str = "") -> AuthorityAssignment:
    """Place a source (or one container of it) in a tier and re-tier what is already indexed.

    Updates ``Document.authority_tier`` and the denormalised ``Chunk.authority_tier`` in the
    same transaction, so ranking and "official only" filters see the change at once, and
    bumps the index version so cached answers built on the old hierarchy are not served.
    """
    row, _ = AuthorityAssignment.objects.update_or_create(
        source=source, container=container, defaults={"tier": tier, "updated_at": timezone.now()}
    )
    docs = Document.objects.filter(source=source)
    chunks = Chunk.objects.filter(document__source=source)
    if container:
        docs, chunks = docs.filter(container=container), chunks.filter(container=container)
    else:
        # Future documents of the source inherit the tier; container assignments override it.
        Source.objects.filter(pk=source.pk).update(authority_tier=tier.rank)
        overridden = list(AuthorityAssignment.objects.filter(source=source).exclude(container="").values_list(
            "container", flat=True))  # fmt: skip
        docs, chunks = docs.exclude(container__in=overridden), chunks.exclude(container__in=overridden)
    docs.update(authority_tier=tier.rank)
    chunks.update(authority_tier=tier.rank)
    IndexState.objects.update(index_version=F("index_version") + 1)
    return row


def do_create_feed(name: str, entity: str, url: str) -> FreshnessFeed:
    return FreshnessFeed.objects.create(name=name.strip(), entity=entity.strip(), url=url.strip())


def do_set_answer_settings(writer: str, *, endpoint_url: str = "", model: str = "", api_key: str | None = None
                           ) -> AnswerSettings:  # fmt: skip
    from answers.writers import encrypt_secret

    row = AnswerSettings.objects.first() or AnswerSettings()
    row.writer, row.endpoint_url, row.model, row.updated_at = writer, endpoint_url, model, timezone.now()
    if api_key is not None:
        row.api_key_encrypted = encrypt_secret(api_key)
    row.save()
    return row


__all__ = [
    "DEFAULT_TIERS",
    "do_assign_authority",
    "do_create_feed",
    "do_define_tier",
    "do_delete_alias",
    "do_refresh_feed",
    "do_set_alias",
    "do_set_answer_settings",
    "ensure_default_tiers",
    "tier_names",
]

"""State changes of the answer engine's admin configuration (call inside tenant_context)."""

from __future__ import annotations

import json
import time
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from answers import freshness
from answers.models import AnswerSettings, AuthorityAssignment, AuthorityTier, EntityAlias, FreshnessFeed
from core.crypto import encrypt_text
from core.errors import ApiError
from core.http import BlockedDestination, SafeFetcher, check_admin_url, operator_endpoints
from retrieval.models import Chunk, Document, IndexState, Source
from tenants.audit import Actor, do_record_audit_event

DEFAULT_TIERS = ((0, "system of record"), (1, "official docs"), (2, "wiki"), (3, "chat"))


@transaction.atomic
def do_set_alias(alias: str, canonical: str, *, actor: Actor) -> EntityAlias:
    row, _ = EntityAlias.objects.update_or_create(alias=alias.strip(), defaults={"canonical": canonical.strip()})
    do_record_audit_event(actor=actor, action="alias.set", target_type="entity_alias", target_id=row.alias,
                          details={"canonical": row.canonical})  # fmt: skip
    return row


@transaction.atomic
def do_delete_alias(alias_id: int, *, actor: Actor) -> int:
    row = EntityAlias.objects.filter(pk=alias_id).first()
    if row is None:
        return 0
    row.delete()
    do_record_audit_event(actor=actor, action="alias.deleted", target_type="entity_alias", target_id=row.alias,
                          details={"canonical": row.canonical})  # fmt: skip
    return 1


@transaction.atomic
def do_define_tier(rank: int, name: str, *, actor: Actor) -> AuthorityTier:
    row, _ = AuthorityTier.objects.update_or_create(rank=rank, defaults={"name": name.strip()})
    do_record_audit_event(actor=actor, action="hierarchy.tier_defined", target_type="authority_tier",
                          target_id=row.pk, details={"rank": rank, "name": row.name})  # fmt: skip
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


def retier(source: Source, container: str, rank: int) -> None:
    """Put a source's documents (or one container's) in ``rank``, where no container assignment overrides it.

    Updates ``Document.authority_tier`` and the denormalised ``Chunk.authority_tier`` together and bumps
    the index version (cached answers built on the old hierarchy must not be served).  Callers audit.
    """
    docs = Document.objects.filter(source=source)
    chunks = Chunk.objects.filter(document__source=source)
    if container:
        docs, chunks = docs.filter(container=container), chunks.filter(container=container)
    else:
        # Future documents of the source inherit the tier; container assignments override it.
        Source.objects.filter(pk=source.pk).update(authority_tier=rank)
        overridden = list(AuthorityAssignment.objects.filter(source=source).exclude(container="").values_list(
            "container", flat=True))  # fmt: skip
        docs, chunks = docs.exclude(container__in=overridden), chunks.exclude(container__in=overridden)
    docs.update(authority_tier=rank)
    chunks.update(authority_tier=rank)
    IndexState.objects.update(index_version=F("index_version") + 1)


@transaction.atomic
def do_assign_authority(source: Source, tier: AuthorityTier, container: str = "", *,
                        actor: Actor | None) -> AuthorityAssignment:  # fmt: skip
    """Place a source (or one container of it) in a tier and re-tier what is already indexed.

    Updates ``Document.authority_tier`` and the denormalised ``Chunk.authority_tier`` in the
    same transaction, so ranking and "official only" filters see the change at once, and
    bumps the index version so cached answers built on the old hierarchy are not served.
    ``actor=None`` only for a re-tiering that an audited action (a reorder) already recorded.
    """
    row, _ = AuthorityAssignment.objects.update_or_create(
        source=source, container=container, defaults={"tier": tier, "updated_at": timezone.now()}
    )
    retier(source, container, tier.rank)
    if actor is not None:
        do_record_audit_event(actor=actor, action="hierarchy.assigned", target_type="source", target_id=source.pk,
                              details={"container": container, "tier": tier.name, "rank": tier.rank})  # fmt: skip
    return row


def check_feed_url(url: str) -> None:
    """A feed URL must lie inside the operator's freshness allow-list (``url_not_allowed`` otherwise)."""
    try:
        SafeFetcher(settings.CAIRN.get("FRESHNESS_ALLOWED_URL_PREFIXES", ()))._check_allowed(url)
    except BlockedDestination as exc:
        raise ApiError("url_not_allowed", "The URL is outside the freshness allow-list.") from exc


@transaction.atomic
def do_create_feed(name: str, entity: str, url: str, *, actor: Actor) -> FreshnessFeed:
    # Checked at write time too, so an admin learns at once that the URL can never be fetched.
    check_feed_url(url.strip())
    row = FreshnessFeed.objects.create(name=name.strip(), entity=entity.strip(), url=url.strip())
    do_record_audit_event(actor=actor, action="feed.created", target_type="freshness_feed", target_id=row.pk,
                          details={"name": row.name, "entity": row.entity, "url": row.url})  # fmt: skip
    return row


def do_refresh_feed(feed: FreshnessFeed, *, actor: Actor, fetcher: SafeFetcher | None = None) -> FreshnessFeed:
    """An admin's "refresh now" (the answer engine's own refreshes are ``freshness.do_refresh_feed``)."""
    with transaction.atomic():
        feed = freshness.do_refresh_feed(feed, fetcher)
        do_record_audit_event(actor=actor, action="feed.refreshed", target_type="freshness_feed", target_id=feed.pk,
                              details={"name": feed.name, "latest": feed.latest_version,
                                       "error": feed.last_error})  # fmt: skip
    return feed


def check_endpoint_url(url: str) -> None:
    """The LLM endpoint a tenant admin sets: the full outbound policy, at write time already.

    https and a public address, unless the operator approved exactly this origin
    (``CAIRN_OPERATOR_PRIVATE_ENDPOINTS``). Names are resolved again when the writer connects.
    """
    try:
        check_admin_url(url, endpoints=operator_endpoints(), resolve=False)
    except BlockedDestination:
        raise ApiError(
            "endpoint_not_allowed",
            "The endpoint must be a public https URL; a private endpoint needs the operator's approval.",
        ) from None


@transaction.atomic
def do_set_answer_settings(writer: str, *, actor: Actor, endpoint_url: str = "", model: str = "",
                           api_key: str | None = None) -> AnswerSettings:  # fmt: skip

    if endpoint_url:
        check_endpoint_url(endpoint_url)
    row = AnswerSettings.objects.first() or AnswerSettings()
    row.writer, row.endpoint_url, row.model, row.updated_at = writer, endpoint_url, model, timezone.now()
    if api_key is not None:
        row.api_key_encrypted = encrypt_text(api_key)
    row.save()
    do_record_audit_event(actor=actor, action="answer_settings.updated", target_type="answer_settings",
                          target_id=row.pk, details={"writer": writer, "endpoint_url": endpoint_url, "model": model,
                                                     "api_key_changed": api_key is not None})  # fmt: skip
    return row


# The Test's prompt: tiny, constant, and asking for the same kind of schema-constrained JSON the
# writer needs, so an endpoint that cannot do structured output fails here and not at the first answer.
TEST_PROMPT = [{"role": "system", "content": "Reply with JSON only, matching the schema."},
               {"role": "user", "content": 'Reply {"ok": true}.'}]  # fmt: skip
TEST_SCHEMA: dict[str, Any] = {"type": "object", "additionalProperties": False, "required": ["ok"],
                               "properties": {"ok": {"type": "boolean"}}}  # fmt: skip


def do_test_answer_settings(*, actor: Actor) -> tuple[bool, str]:
    """Send the stored writer one tiny prompt; ``(ok, message)``, audited.

    The writer is built exactly as the answer path builds it (``writer_for_tenant``), so the
    outbound policy and the stored key apply; failures read as the writer reports them
    (``endpoint_not_allowed``, ``endpoint_failed``), never as the endpoint's own text.
    """
    from answers.writers import writer_for_tenant

    row = AnswerSettings.objects.first()
    kind = row.writer if row is not None else AnswerSettings.Writer.EXTRACTIVE
    writer, notes = writer_for_tenant()
    if kind == AnswerSettings.Writer.EXTRACTIVE:
        ok, message = True, "The extractive writer needs no endpoint: answers quote the passages directly."
    elif notes or not hasattr(writer, "complete_json"):
        ok, message = False, "; ".join(notes) or "This writer cannot be reached."
    else:
        info: dict[str, Any] = {}
        started = time.monotonic()
        content = writer.complete_json(TEST_PROMPT, TEST_SCHEMA, name="cairn_test", max_tokens=16, info=info)
        elapsed = time.monotonic() - started
        try:
            replied = json.loads(content) if content is not None else None
        except ValueError:
            replied = None
        if content is None:
            error = info.get("error", "endpoint_failed")
            ok, message = False, {
                "endpoint_not_allowed": "The outbound policy refused the endpoint (endpoint_not_allowed): it must be "
                "a public https URL, or an origin the operator approved.",
            }.get(error, f"The endpoint did not answer with a chat completion ({error}); check the URL, "
                         "the model name and the API key.")  # fmt: skip
        elif not isinstance(replied, dict):
            ok, message = False, "The endpoint answered, but not with JSON: it must support response_format."
        else:
            ok, message = True, f"The model {getattr(writer, 'model', '')} answered in {elapsed:.1f} s."
    do_record_audit_event(actor=actor, action="answer_settings.tested", target_type="answer_settings",
                          target_id=row.pk if row is not None else "", details={"writer": kind, "ok": ok})  # fmt: skip
    return ok, message


__all__ = [
    "DEFAULT_TIERS",
    "check_endpoint_url",
    "check_feed_url",
    "do_assign_authority",
    "do_create_feed",
    "do_define_tier",
    "do_delete_alias",
    "do_refresh_feed",
    "do_set_alias",
    "do_set_answer_settings",
    "do_test_answer_settings",
    "ensure_default_tiers",
    "retier",
    "tier_names",
]

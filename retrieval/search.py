"""Hybrid retrieval: lexical + vector legs in parallel, RRF fusion, duplicate collapse.

The permission context is computed from the authenticated principal before
any leg runs; an empty readable set short-circuits to no results.  Each leg
runs in its own transaction with the tenant GUC set (RLS) and the ACL filter
inside its SQL.
"""

from __future__ import annotations

import re
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, TypeVar

from django.conf import settings
from django.db import connection
from django.db.models import Q

from core.backends import embedder, index_backend
from retrieval.backends.base import LegResult, SearchFilters
from retrieval.fingerprint import is_near_duplicate
from retrieval.links import inert_links
from retrieval.models import Chunk
from retrieval.permissions import PermissionContext
from tenants.context import tenant_context

RRF_K = 60
T = TypeVar("T")
_pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="cairn-leg")


@dataclass
class RankedChunk:
    chunk_id: int
    document_id: int
    rrf: float
    ranks: dict[str, int]
    text: str
    heading: str
    char_start: int
    char_end: int
    title: str
    url: str
    canonical_url: str
    source_system: str
    container: str
    updated_at: Any
    created_at: Any
    version_label: str
    authority_tier: int
    snapshot_sha256: str
    fingerprint: str
    simhash: int
    # Document.about: the entity / reporting period the document describes ({} when unknown).
    about: dict[str, Any] = field(default_factory=dict)


@dataclass
class SearchOutcome:
    chunks: list[RankedChunk]
    legs: dict[str, dict[str, Any]] = field(default_factory=dict)
    timings_ms: dict[str, float] = field(default_factory=dict)
    collapsed: int = 0
    # User-visible notes about how the search ran (e.g. the index fell back to Postgres), deduplicated.
    notices: list[str] = field(default_factory=list)


def _in_tenant(tenant_id: int, fn: Callable[[], T]) -> T:
    """Run fn in a pool thread inside its own tenant transaction."""
    try:
        with tenant_context(tenant_id):
            return fn()
    finally:
        connection.close_if_unusable_or_obsolete()


def rrf_fuse(rankings: dict[str, list[int]], k: int = RRF_K) -> list[tuple[int, float, dict[str, int]]]:
    scores: dict[int, float] = defaultdict(float)
    ranks: dict[int, dict[str, int]] = defaultdict(dict)
    for name, ranking in rankings.items():
        for pos, chunk_id in enumerate(ranking, start=1):
            scores[chunk_id] += 1.0 / (k + pos)
            ranks[chunk_id][name] = pos
    return [(cid, s, ranks[cid]) for cid, s in sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))]


def hybrid_search(perm: PermissionContext, queries: list[str], filters: SearchFilters, *, k: int = 50,
                  leg_k: int = 100, use_vector: bool = True, use_lexical: bool = True) -> SearchOutcome:  # fmt: skip
    """queries[0] is the user's original query and always runs as a leg."""
    outcome = SearchOutcome(chunks=[])
    if perm.empty or not queries:
        return outcome
    t0 = time.perf_counter()
    backend = index_backend()
    acl = perm.readable_acl_set_ids
    tid = perm.tenant_id
    parallel = bool(settings.CAIRN.get("RETRIEVAL_PARALLEL_LEGS", True))
    futures: dict[str, Future[LegResult] | LegResult] = {}

    # Callable[...]: the lexical legs are lambdas binding their query through a default argument.
    def submit(name: str, fn: Callable[..., LegResult]) -> None:
        futures[name] = _pool.submit(_in_tenant, tid, fn) if parallel else fn()

    seen: set[str] = set()
    if use_lexical:
        for i, q in enumerate(queries):
            if q.strip() and q not in seen:
                seen.add(q)
                submit(f"lexical:{i}", lambda q=q: backend.lexical(tid, acl, q, filters, leg_k))
    if use_vector:
        qvec = embedder().embed_query(queries[0])
        submit("vector:0", lambda: backend.vector(tid, acl, qvec, filters, leg_k))
    rankings: dict[str, list[int]] = {}
    for name, fut in futures.items():
        result = fut.result() if isinstance(fut, Future) else fut
        rankings[name] = [h.chunk_id for h in result.hits]
        outcome.legs[name] = {"strategy": result.strategy, "hits": len(result.hits), **result.timings_ms}
        outcome.notices += [n for n in getattr(result, "notices", []) if n not in outcome.notices]
    fused = rrf_fuse(rankings)
    outcome.timings_ms["retrieval"] = (time.perf_counter() - t0) * 1000
    outcome.chunks, outcome.collapsed = _load_and_collapse(fused[: k * 3], acl, k)
    outcome.timings_ms["total"] = (time.perf_counter() - t0) * 1000
    return outcome


def chunks_with_phrases(perm: PermissionContext, document_ids: Sequence[int], phrases: Sequence[str], *,
                        limit: int = 40) -> list[RankedChunk]:  # fmt: skip
    """Chunks of these documents that hold one of ``phrases`` verbatim, in document order, the reader's ACL
    applied as in every leg.  The answer path asks for a resolved quarter's statement cells ("months ended
    July 30, 2023"): a long statement chunk ranks low in a search for "net income", yet holds its row."""
    if perm.empty or not document_ids or not phrases:
        return []
    acl = perm.readable_acl_set_ids
    match = Q()
    for phrase in phrases:
        match |= Q(text__contains=phrase)
    ids = list(
        Chunk.objects.filter(match, document_id__in=list(document_ids), acl_set_id_denorm__in=acl,
                             document__deleted=False)
        .order_by("document_id", "char_start")
        .values_list("pk", flat=True)[:limit]
    )  # fmt: skip
    chunks, _ = _load_and_collapse([(cid, 0.0, {"phrase": i + 1}) for i, cid in enumerate(ids)], acl, limit)
    return chunks


def _load_and_collapse(fused: list[tuple[int, float, dict[str, int]]], acl: tuple[int, ...],
                       k: int) -> tuple[list[RankedChunk], int]:  # fmt: skip
    ids = [cid for cid, _, _ in fused]
    # The ACL filter again on load: defence in depth, and nothing else reads chunk text.
    rows = {
        c.pk: c
        for c in Chunk.objects.filter(pk__in=ids, acl_set_id_denorm__in=acl, document__deleted=False)
        .select_related("document")
        .only(
            "id", "text", "heading", "char_start", "char_end", "document__id", "document__title", "document__url",
            "document__canonical_url", "document__source_system", "document__container",
            "document__updated_at_source", "document__created_at_source", "document__version_label",
            "document__authority_tier", "document__snapshot_sha256", "document__content_fingerprint",
            "document__simhash", "document__about",
        )
    }  # fmt: skip
    out: list[RankedChunk] = []
    kept_docs: dict[int, tuple[str, str, int]] = {}
    collapsed = 0
    for cid, score, ranks in fused:
        c = rows.get(cid)
        if c is None:
            continue
        d = c.document
        if d.id not in kept_docs:
            if any(
                _duplicates(d.canonical_url, d.content_fingerprint, d.simhash, other) for other in kept_docs.values()
            ):
                collapsed += 1
                continue
            kept_docs[d.id] = (d.canonical_url, d.content_fingerprint, d.simhash)
        out.append(
            RankedChunk(
                chunk_id=c.pk,
                document_id=d.id,
                rrf=score,
                ranks=ranks,
                text=c.text,
                heading=c.heading,
                char_start=c.char_start,
                char_end=c.char_end,
                title=d.title,
                url=d.url,
                canonical_url=d.canonical_url,
                source_system=d.source_system,
                container=d.container,
                updated_at=d.updated_at_source,
                created_at=d.created_at_source,
                version_label=d.version_label,
                authority_tier=d.authority_tier,
                snapshot_sha256=d.snapshot_sha256,
                fingerprint=d.content_fingerprint,
                simhash=d.simhash,
                about=d.about or {},
            )  # fmt: skip
        )
        if len(out) >= k:
            break
    return out, collapsed


def _duplicates(url: str, fp: str, sh: int, other: tuple[str, str, int]) -> bool:
    ourl, ofp, osh = other
    if url and url == ourl:
        return True
    if fp and fp == ofp:
        return True
    return bool(sh and osh and is_near_duplicate(sh, osh))


_WORD = re.compile(r"\w+", re.UNICODE)


def snippet(text: str, query: str, max_chars: int = 280) -> str:
    """The window of the passage with the most query words (plain text; templates escape it)."""
    words = {w.lower() for w in _WORD.findall(query) if len(w) > 2}
    if len(text) <= max_chars:
        return text
    best, best_at = -1, 0
    step = max_chars // 4
    for start in range(0, max(1, len(text) - max_chars + step), step):
        window = text[start : start + max_chars].lower()
        score = sum(1 for w in words if w in window)
        if score > best:
            best, best_at = score, start
    piece = text[best_at : best_at + max_chars]
    prefix = "…" if best_at > 0 else ""
    suffix = "…" if best_at + max_chars < len(text) else ""
    return f"{prefix}{piece.strip()}{suffix}"


def document_results(chunks: list[RankedChunk], query: str, limit: int = 20) -> list[dict[str, Any]]:
    """One entry per document (its best chunk), in fused order."""
    seen: set[int] = set()
    results: list[dict[str, Any]] = []
    for c in chunks:
        if c.document_id in seen:
            continue
        seen.add(c.document_id)
        results.append(
            {
                "rank": len(results) + 1,
                "document_id": c.document_id,
                "title": c.title,
                "url": c.url,
                "source_system": c.source_system,
                "container": c.container,
                "updated_at": c.updated_at.isoformat() if c.updated_at else None,
                "authority_tier": c.authority_tier,
                # A URL in the text is a third party's: inert unless it is this document's own.
                "snippet": inert_links(snippet(c.text, query), (c.url,)),
                "score": round(c.rrf, 6),
            }
        )
        if len(results) >= limit:
            break
    return results

"""The answer pipeline: plan -> retrieve -> evidence -> write -> verify -> release.

Each stage exchanges the typed contracts of ``answers.contracts``.  The
permission context is built from the authenticated user before retrieval;
the writer only ever sees evidence records produced from authorised chunks,
and the verifier re-checks that each cited evidence id is one of them.
"""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.core.cache import cache

from answers.contracts import (
    Abstention,
    DraftClaim,
    EvidenceRecord,
    ParsedQuery,
    QueryPlan,
    VerificationResult,
    to_jsonable,
)
from answers.query_parser import parse_query
from answers.verification import strip_unsupported_links, verifier_release, verify_claim
from cairn.backends import embedder, writer
from retrieval.backends.base import SearchFilters
from retrieval.models import IndexState
from retrieval.permissions import PermissionContext
from retrieval.search import RankedChunk, document_results, hybrid_search

MAX_EVIDENCE = 8
PROMPT_VERSION = "none"  # the extractive writer has no prompt


@dataclass(frozen=True)
class RequestFilters:
    sources: tuple[str, ...] = ()
    containers: tuple[str, ...] = ()
    after: Any = None
    before: Any = None
    official_only: bool = False


def build_plan(question: str, as_of: datetime, extra: RequestFilters) -> QueryPlan:
    parsed: ParsedQuery = parse_query(question, as_of)
    queries = [parsed.original]
    if parsed.text and parsed.text != parsed.original:
        queries.append(parsed.text)
    after = extra.after or (parsed.time.after if parsed.time else None)
    before = extra.before or (parsed.time.before if parsed.time else None)
    filters = {
        "sources": sorted(set(parsed.sources) | set(extra.sources)),
        "containers": sorted(set(parsed.containers) | set(extra.containers)),
        "after": after,
        "before": before,
        "exclude": list(parsed.exclude),
        "phrases": list(parsed.phrases),
        "official_only": extra.official_only,
    }
    return QueryPlan(parsed=parsed, as_of=as_of, retrieval_queries=tuple(queries), filters=filters)


def _container_value(c: str) -> str:
    # Parsed operators carry a kind prefix ("space:ENG"); stored containers are bare values.
    return c.split(":", 1)[1] if ":" in c else c


def search_filters(plan: QueryPlan) -> SearchFilters:
    f = plan.filters
    return SearchFilters(
        sources=tuple(f["sources"]),
        containers=tuple(_container_value(c) for c in f["containers"]),
        after=f["after"],
        before=f["before"],
        exclude_terms=tuple(f["exclude"]),
        phrases=tuple(f["phrases"]),
        max_authority_tier=1 if f["official_only"] else None,
    )


def evidence_id(chunk: RankedChunk) -> str:
    return "E" + hashlib.sha256(f"{chunk.chunk_id}:{chunk.snapshot_sha256}".encode()).hexdigest()[:12]


def to_evidence(chunks: list[RankedChunk]) -> list[EvidenceRecord]:
    return [
        EvidenceRecord(
            id=evidence_id(c),
            document_id=c.document_id,
            chunk_id=c.chunk_id,
            canonical_url=c.canonical_url or c.url,
            title=c.title,
            source_system=c.source_system,
            container=c.container,
            text=c.text,
            char_start=c.char_start,
            char_end=c.char_end,
            snapshot_sha256=c.snapshot_sha256,
            updated_at=c.updated_at,
            created_at=c.created_at,
            version_label=c.version_label,
            authority_tier=c.authority_tier,
            scores={"rrf": round(c.rrf, 6), **{f"rank_{k}": v for k, v in c.ranks.items()}},
        )  # fmt: skip
        for c in chunks
    ]


def release_identity() -> dict[str, Any]:
    w = writer()
    e = embedder()
    return {
        "writer": f"{w.name}@{w.version}",
        "embedder": f"{e.name}@{e.version}",
        "verifier": "{name}@{version}".format(**verifier_release()),
        "prompt": PROMPT_VERSION,
        "index_backend": settings.CAIRN["INDEX_BACKEND"],
    }


def _as_of(state: IndexState | None) -> dict[str, str | None]:
    if state is None:
        return {"content": None, "permissions": None}
    return {
        "content": state.content_as_of.isoformat() if state.content_as_of else None,
        "permissions": state.permissions_as_of.isoformat() if state.permissions_as_of else None,
    }


def cache_key(perm: PermissionContext, plan: QueryPlan, state: IndexState | None, kind: str) -> str:
    material = {
        "kind": kind,
        "tenant": perm.tenant_id,
        "perm": perm.fingerprint,
        "acl_version": perm.acl_version,
        "query": " ".join(plan.original.split()).lower(),
        "filters": to_jsonable(plan.filters),
        "index_version": state.index_version if state else 0,
        "release": release_identity(),
        "day": plan.as_of.date().isoformat(),  # relative dates ("last quarter") resolve per day
    }
    digest = hashlib.sha256(json.dumps(material, sort_keys=True, default=str).encode()).hexdigest()
    return f"answer:{perm.tenant_id}:{perm.fingerprint}:{digest}"


def run_search(perm: PermissionContext, question: str, extra: RequestFilters, *, limit: int = 20) -> dict[str, Any]:
    as_of = datetime.now(UTC)
    plan = build_plan(question, as_of, extra)
    outcome = hybrid_search(perm, list(plan.retrieval_queries), search_filters(plan), k=max(limit * 3, 30))
    state = IndexState.objects.first()
    return {
        "query": question,
        "plan": plan_json(plan),
        "results": document_results(outcome.chunks, plan.parsed.text or question, limit=limit),
        "as_of": _as_of(state),
        "trace": {"legs": outcome.legs, "timings_ms": outcome.timings_ms, "collapsed_duplicates": outcome.collapsed},
    }


def plan_json(plan: QueryPlan) -> dict[str, Any]:
    p = plan.parsed
    return {
        "original": p.original,
        "normalized": p.text,
        "phrases": list(p.phrases),
        "exclude": list(p.exclude),
        "sources": list(p.sources),
        "containers": list(p.containers),
        "time": to_jsonable(p.time) if p.time else None,
        "wants_latest": p.wants_latest,
        "scope_terms": list(p.scope_terms),
        "entities": [list(e) for e in p.entities],
        "retrieval_queries": list(plan.retrieval_queries),
        "filters": to_jsonable(plan.filters),
        "as_of": plan.as_of.isoformat(),
    }


def answer_question(perm: PermissionContext, question: str, extra: RequestFilters) -> dict[str, Any]:
    t0 = time.perf_counter()
    as_of = datetime.now(UTC)
    plan = build_plan(question, as_of, extra)
    state = IndexState.objects.first()
    key = cache_key(perm, plan, state, "answer")
    cached = cache.get(key)
    if cached is not None:
        cached["trace"]["cache"] = "hit"
        return cached
    outcome = hybrid_search(perm, list(plan.retrieval_queries), search_filters(plan), k=40)
    results = document_results(outcome.chunks, plan.parsed.text or question)
    evidence = to_evidence(outcome.chunks[:MAX_EVIDENCE])
    t_retrieval = time.perf_counter()
    claims_out: list[dict[str, Any]] = []
    dropped = 0
    abstention: Abstention | None = None
    verifications: list[VerificationResult] = []
    if not evidence:
        abstention = Abstention("no_evidence", "No readable source matches this question.")
    else:
        drafts: list[DraftClaim] = writer().write(plan, evidence)
        by_id = {e.id: e for e in evidence}
        authorised = set(by_id)
        allowed_urls = {e.canonical_url for e in evidence} | {r["url"] for r in results}
        for draft in drafts:
            result = verify_claim(draft, by_id, plan, authorised_ids=authorised)
            verifications.append(result)
            if not result.kept:
                dropped += 1
                continue
            text, _ = strip_unsupported_links(draft.text, allowed_urls)
            claims_out.append(
                {
                    "id": draft.id,
                    "text": text,
                    "citations": [to_jsonable(c) for c in draft.citations],
                    "verification": to_jsonable(result) | {"kept": True},
                }
            )
        if not drafts:
            abstention = Abstention("weak_evidence", "The sources found do not answer this question directly.")
        elif not claims_out:
            abstention = Abstention("all_claims_unsupported", "No drafted claim survived verification.")
    cited_ids = {c["evidence_id"] for claim in claims_out for c in claim["citations"]}
    response = {
        "question": question,
        "as_of": _as_of(state),
        "plan": plan_json(plan),
        "answer": {
            "claims": claims_out,
            "dropped_claims": dropped,
            "abstention": to_jsonable(abstention) if abstention else None,
        },
        "evidence": [to_jsonable(e) | {"cited": e.id in cited_ids} for e in evidence],
        "results": results,
        "release": release_identity(),
        "trace": {
            "legs": outcome.legs,
            "collapsed_duplicates": outcome.collapsed,
            "verification": [to_jsonable(v) for v in verifications],
            "timings_ms": {
                "retrieval": round((t_retrieval - t0) * 1000, 1),
                "total": round((time.perf_counter() - t0) * 1000, 1),
            },
            "cache": "miss",
        },
    }
    ttl = settings.CAIRN["LATEST_CACHE_SECONDS"] if plan.parsed.wants_latest else settings.CAIRN["ANSWER_CACHE_SECONDS"]
    if ttl:
        cache.set(key, response, timeout=ttl)
    return response

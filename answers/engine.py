"""The answer pipeline orchestrator: plan -> retrieve -> rerank -> evidence -> write -> verify -> conflicts -> release.

Each stage lives in its own module and exchanges the typed contracts of
``answers.contracts``:

=================  ==========================  =====================================
stage              module                      function
=================  ==========================  =====================================
understand         ``answers.planning``        ``plan_question`` -> ``QueryPlan``
retrieve + rank    here                        ``retrieve`` (hybrid search + reranker)
"latest"/fresh     ``answers.freshness``       ``newest_indexed``, ``check_freshness``
extract            ``answers.evidence``        ``build_evidence`` -> ``EvidenceRecord``s
multi-hop          ``answers.multihop``        ``run_multi_hop``
write + verify     here                        ``draft_and_verify`` (yields claims one by one)
conflicts          ``answers.conflicts``       ``find_conflicts``
abstain            here                        ``decide_abstention``
=================  ==========================  =====================================

The permission context is built from the authenticated user before retrieval; the
writer only ever sees evidence records produced from authorised chunks, and the
verifier re-checks that each cited evidence id is one of them.

There is one implementation of the pipeline: ``answer_stages``, nine named stage functions
over one ``AnswerRun`` (``plan_stage`` ... ``response_stage``) run as a generator of
``StageEvent`` (``plan``, ``sources``, ``claim`` per verified claim, ``retract`` /
``annotate`` when conflicts or abstention change a claim already sent, ``done`` with the
whole response).  ``answer_question`` consumes it to ``done``; the SSE stream
(``answers/streaming.py``) advances it one step per transaction and sends each event.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.core.cache import cache

from answers.abstention import evidence_strength, rules_on_the_asked_act, states_the_askers_case
from answers.actions import tier_names
from answers.comparisons import Amount, FigureComparison, conclude, part_figure, split_comparison
from answers.comparisons import Part as ComparisonPart
from answers.compound import carried_part, split_compound
from answers.conflicts import ConflictReport, conflict_section, find_conflicts
from answers.contracts import (
    Abstention,
    AbstentionReason,
    DraftClaim,
    EvidenceRecord,
    QueryPlan,
    VerificationResult,
    to_jsonable,
)
from answers.evidence import build_evidence, narrow_to_answer_type, table_records
from answers.freshness import check_freshness, newest_indexed
from answers.lexicon import (
    abbreviations_defined,
    asked_before,
    asked_clause,
    asking_stems,
    asks_superlative,
    content_stems,
    version_key,
)
from answers.multihop import conclusion_text, run_multi_hop
from answers.planning import RequestFilters, load_aliases, plan_json, plan_question
from answers.rerank import period_cells, statement_row_cover
from answers.sanitise import strip_unsupported_calls_to_action, strip_unsupported_links
from answers.scoping import (
    Scope,
    bind_chunks,
    bound_entities,
    product_parent,
    resolve_periods,
    scope_abstention,
    unknown_entities,
)
from answers.verification import answer_type, attribute_terms, named_phrases, names_phrase, verifier_release
from answers.writers import writer_for_tenant
from answers.writers.extractive import (
    ExtractiveWriter,
    asked_span,
    heading_lines,
    new_names,
    ranked_table,
    scoped_terms,
)
from core.backends import embedder, get_backend
from retrieval.backends.base import SearchFilters
from retrieval.links import inert_links
from retrieval.models import Document, IndexState
from retrieval.permissions import PermissionContext
from retrieval.search import RankedChunk, chunks_with_phrases, document_results, hybrid_search
from tenants.context import current_tenant_id

MAX_EVIDENCE = 8
PROMPT_VERSION = "none"  # the extractive writer has no prompt; generative writers report their own

# Abstention threshold on the evidence strength (idf-weighted share of the query's content
# terms covered by the best kept claim's quote).  Tuned on SciFact claims (dev split) with
# `python -m answers.abstention --tune` (balanced accuracy 0.744 at 0.45, n=300); see docs/answers.md.
WEAK_EVIDENCE_THRESHOLD = 0.45
# The bar when a kept claim is a rule for the case the question describes (``abstention.states_the_askers_case``)
# or, since the twenty-second round, a rule about the act a yes-or-no question asks about
# (``abstention.rules_on_the_asked_act``; docs/evaluation.md has what each cost).
# The bar at 0.30 for every turn answered 40 abstained turns of dev and the r15-r17 probe sets, 10 of them right;
# the ones whose claim was a rule for the asker's case were mostly among those 10.  With this rule: 4 turns
# answered there, all right, and 1 wrong on r18 (docs/evaluation.md, eighteenth round).  SciFact claims, the usual
# bar's tuning set, are flat from 0.35 to 0.45 (balanced accuracy 0.7525-0.7575), so they do not decide it.
CASE_RULE_THRESHOLD = 0.30

__all__ = [
    "ClaimOutcome",
    "RequestFilters",
    "StageEvent",
    "CASE_RULE_THRESHOLD",
    "WEAK_EVIDENCE_THRESHOLD",
    "answer_question",
    "answer_stages",
    "build_plan",
    "cache_key",
    "decide_abstention",
    "draft_and_verify",
    "evidence_strength",
    "final_answer",
    "plan_json",
    "plan_question",
    "release_identity",
    "replay",
    "retrieve",
    "run_search",
    "search_filters",
]


# --------------------------------------------------------------------------- plan


def _tenant_aliases() -> dict[str, str]:
    return load_aliases() if current_tenant_id() is not None else {}


def build_plan(question: str, as_of: datetime, extra: RequestFilters) -> QueryPlan:
    """The plan for ``question`` with the current tenant's aliases (kept for existing callers)."""
    return plan_question(question, as_of, extra, aliases=_tenant_aliases())


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


# --------------------------------------------------------------------------- retrieve + rerank


@dataclass
class Retrieval:
    chunks: list[RankedChunk]
    trace: dict[str, Any] = field(default_factory=dict)


def _reranker() -> Any | None:
    if "RERANKER" not in settings.CAIRN:
        return None
    try:
        return get_backend("RERANKER")
    except ImportError:
        return None


def retrieve(perm: PermissionContext, plan: QueryPlan, queries: Sequence[str] | None = None, *, k: int = 40,
             rerank: bool = True, document_ids: Sequence[int] = (),
             exclude_chunks: bool = True) -> Retrieval:  # fmt: skip
    """Hybrid search (ACL inside every leg), then the reranker; every signal goes to the trace.

    ``document_ids``: search only inside these documents (still with the reader's ACL).
    ``exclude_chunks=False``: excluded terms do not remove whole chunks; the answer path removes the
    sentences that name them instead (answers/evidence.py), so the release note whose "Publishers"
    section follows the subscriber change still answers "... subscribers, not publishers"."""
    qs = list(queries or plan.retrieval_queries)
    filters = replace(search_filters(plan), document_ids=tuple(document_ids))
    if not exclude_chunks:
        filters = replace(filters, exclude_terms=())
    outcome = hybrid_search(perm, qs, filters, k=k)
    trace: dict[str, Any] = {
        "queries": qs, "legs": outcome.legs, "collapsed_duplicates": outcome.collapsed,
        "timings_ms": {k2: round(v, 1) for k2, v in outcome.timings_ms.items()},
        "notices": list(outcome.notices),  # e.g. "OpenSearch unavailable: Postgres legs used"
    }  # fmt: skip
    chunks = outcome.chunks
    reranker = _reranker() if rerank else None
    if reranker is not None and chunks:
        t0 = time.perf_counter()
        ranked = reranker.rerank(qs[0], plan, chunks, top_n=50)
        chunks = list(ranked.chunks)
        trace["rerank"] = {
            "name": ranked.name, "version": ranked.version,
            "ms": round((time.perf_counter() - t0) * 1000, 1),
            "signals": {str(cid): sig for cid, sig in ranked.signals.items()},
        }  # fmt: skip
    return Retrieval(chunks=chunks, trace=trace)


_SENTENCE_VECTORS: OrderedDict[str, Any] = OrderedDict()  # text -> unit vector, least recently used first
_SENTENCE_VECTORS_MAX = 8192  # ~12 MB of 384-d float32: a few hundred answers' sentences
_SENTENCE_VECTORS_LOCK = threading.Lock()  # gunicorn threads share the cache


def sentence_similarity(query: str, sentences: Sequence[str]) -> list[float]:
    """Embedding cosine of the question with each sentence, in one batch for the sentences not seen lately.

    Evidence selection and the extractive writer score the same sentences of the same documents, and
    popular pages come back across questions, so vectors are kept by text (a vector says nothing a
    reader could not get by sending the same text).
    """
    emb = embedder()
    with _SENTENCE_VECTORS_LOCK:
        vectors = {t: _SENTENCE_VECTORS[t] for t in sentences if t in _SENTENCE_VECTORS}
        for t in vectors:
            _SENTENCE_VECTORS.move_to_end(t)
    missing = list(dict.fromkeys(t for t in sentences if t not in vectors))
    if missing:
        vectors.update(zip(missing, emb.embed(missing), strict=True))  # outside the lock: the slow part
        with _SENTENCE_VECTORS_LOCK:
            for t in missing:
                _SENTENCE_VECTORS[t] = vectors[t]
            while len(_SENTENCE_VECTORS) > _SENTENCE_VECTORS_MAX:
                _SENTENCE_VECTORS.popitem(last=False)
    q = emb.embed_query(query)
    return [float(vectors[t] @ q) for t in sentences]


def _doc_texts(perm: PermissionContext, chunks: Sequence[RankedChunk]) -> dict[int, str]:
    ids = list({c.document_id for c in chunks})
    if not ids:
        return {}
    rows = Document.objects.filter(pk__in=ids, acl_set_id__in=perm.readable_acl_set_ids, deleted=False)
    return dict(rows.values_list("id", "text"))


# --------------------------------------------------------------------------- entities and periods bind


# A question about companies in general ("Which company reported the most revenue?") may cite any filing.
_ASKS_ABOUT_COMPANIES_RE = re.compile(r"\b(?:compan(?:y|ies)|filings?|10-?qs?|issuers?)\b", re.I)


def _readable_about(perm: PermissionContext) -> Any:
    """The readable documents that carry ``about`` metadata (filings)."""
    return Document.objects.filter(acl_set_id__in=perm.readable_acl_set_ids, deleted=False).exclude(about={})


def _filing_companies(perm: PermissionContext) -> set[str]:
    """Companies that readable filings are about: three rows at most (one may be a filing without an entity),
    since the caller only asks whether there are two."""
    return {str(e) for e in _readable_about(perm).values_list("about__entity", flat=True).distinct()[:3] if e}


def _about_entity(chunk: Any) -> str:
    """The company a chunk or evidence record is about ("" for a page that is no filing)."""
    return str((getattr(chunk, "about", None) or {}).get("entity") or "")


def apply_scope(perm: PermissionContext, plan: QueryPlan, chunks: list[Any]) -> tuple[QueryPlan, list[Any],
                                                                                     Abstention | None, dict[str, Any]]:  # fmt: skip
    """Resolve the question's entities and periods against the index and keep the chunks that may answer.

    Works on ranked chunks and on reused evidence records alike (both carry ``about`` and
    ``title``/``text``).  Returns the plan with ``entity_scope``/``period_scope`` set, the kept
    chunks, a coded abstention when nothing about the asked entity/period is readable, and the
    trace entry (see ``answers.scoping``).
    """
    parsed = plan.parsed
    companies, products = bound_entities(parsed)
    unknown = unknown_entities(parsed, [f"{c.title}\n{c.text}" for c in chunks])
    if not (companies or products or unknown):
        kept = [c for c in chunks if not _about_entity(c)]
        if (
            len(kept) < len(chunks)
            and not _ASKS_ABOUT_COMPANIES_RE.search(parsed.text)
            and (len(_filing_companies(perm)) > 1)
        ):
            # "Other than three years, what lengths can a term renewal be?" names no company, and the readable
            # filings are about several: a sentence from one of them ("contracts with a length of one year or
            # less") is about a company the question did not ask about (a tenant holding its own company's
            # filings only still gets them: "our revenue").
            return plan, kept, None, {"companies": [], "set_aside": {"company_not_asked": len(chunks) - len(kept)},
                                      "kept": len(kept)}  # fmt: skip
    if not (companies or products or parsed.periods or unknown):
        return plan, chunks, None, {}
    about_docs = list(_readable_about(perm).values_list("about", flat=True))
    about_entities = {str(a["entity"]) for a in about_docs if a.get("entity")}
    scope = Scope(companies=companies, products=products)
    names: list[str] = []
    if parsed.periods and about_docs:
        # A product named without its company ("AWS in Q1 2023") is asked in its company's calendar: the
        # period resolves for that company only, not for every company that has a "Q1 2023".
        owners = companies or tuple(dict.fromkeys(p for p in (product_parent(n) for n in products) if p))
        allowed, names, unresolved = resolve_periods(parsed.periods, about_docs, owners, parsed.text)
        scope.period_ends, scope.unresolved_periods = allowed, tuple(unresolved)
        scope.period_label = "; ".join(names)
    scope.trace["periods_asked"] = ", ".join(p.label for p in parsed.periods)
    kept, dropped = bind_chunks(chunks, scope, about_entities)
    if companies and not kept and not (set(companies) & about_entities):
        scope.trace["entity_not_found"] = True
    plan = replace(plan, entity_scope=companies, period_scope=scope.period_scope, period_label=scope.period_label)
    periods_unmatched = bool(parsed.periods) and bool(companies) and not scope.period_ends and bool(about_docs)
    abstention = scope_abstention(scope, bool(kept), unknown, periods_unmatched)
    trace = {
        "companies": list(companies), "products": list(products), "unknown_entities": unknown,
        "strict_entities": sorted(set(companies) & about_entities),
        "periods": [p.label for p in parsed.periods], "resolved_periods": names,
        "unresolved_for": list(scope.unresolved_periods), "set_aside": dropped, "kept": len(kept),
    }  # fmt: skip
    return plan, kept, abstention, trace


# --------------------------------------------------------------------------- write + verify


def _tenant_writer() -> tuple[Any, list[str]]:

    if current_tenant_id() is None:
        return get_backend("WRITER"), []
    return writer_for_tenant()


def release_identity(writer: Any | None = None) -> dict[str, Any]:
    w = writer if writer is not None else _tenant_writer()[0]
    e = embedder()
    reranker = _reranker()
    identity = {
        "writer": f"{w.name}@{w.version}",
        "embedder": f"{e.name}@{e.version}",
        "verifier": "{name}@{version}".format(**verifier_release()),
        "prompt": getattr(w, "prompt_version", PROMPT_VERSION),
        "index_backend": settings.CAIRN["INDEX_BACKEND"],
    }
    if getattr(w, "model", None):
        identity["model"] = str(w.model)
    if reranker is not None:
        identity["reranker"] = (
            f"{getattr(reranker, 'name', type(reranker).__name__)}@{getattr(reranker, 'version', '')}"
        )
    return identity


def evidence_json(e: EvidenceRecord) -> dict[str, Any]:
    """An evidence record as the client sees it: links in the passage inert unless they are its own URL."""
    out: dict[str, Any] = to_jsonable(e)
    for key in ("text", "snippet"):
        if isinstance(out.get(key), str):
            out[key] = inert_links(out[key], (e.canonical_url,))
    return out


@dataclass
class ClaimOutcome:
    """One drafted claim after verification; ``kept`` claims are safe to show."""

    draft: DraftClaim
    verification: VerificationResult
    text: str  # the claim text with unsupported links / calls to action removed
    kept: bool
    links_removed: int = 0
    calls_to_action_removed: int = 0
    attempt: int = 1

    def as_json(self, own_urls: dict[str, str] | None = None) -> dict[str, Any]:
        urls = own_urls or {}
        return {
            "id": self.draft.id,
            "text": self.text,
            # Quotes are passage text: their links are as inert as the passage's (evidence_json).
            "citations": [
                to_jsonable(c) | {"quote": inert_links(c.quote, (urls.get(c.evidence_id, ""),))}
                for c in self.draft.citations
            ],  # fmt: skip
            "verification": to_jsonable(self.verification) | {"kept": self.kept},
            "extra": self.draft.extra,  # stated past the writer's limit; decided nothing (DraftClaim.extra)
        }


def verify_one(draft: DraftClaim, plan: QueryPlan, by_id: dict[str, EvidenceRecord], *, attempt: int = 1
               ) -> ClaimOutcome:  # fmt: skip
    """Strip what no cited passage supports (links, calls to action), then verify what is left."""
    cited = [by_id[c.evidence_id] for c in draft.citations if c.evidence_id in by_id]
    # Rendered links: only the cited sources' own URLs, whatever a passage or a model wrote.
    text, links = strip_unsupported_links(draft.text, {e.canonical_url for e in cited})
    text, ctas = strip_unsupported_calls_to_action(text, [e.text for e in cited])
    cleaned = replace(draft, text=text) if text != draft.text else draft
    result = get_backend("VERIFIER").verify_claim(cleaned, by_id, plan, authorised_ids=set(by_id))
    kept = result.kept and bool(text.strip())
    return ClaimOutcome(cleaned, result, text, kept, links, ctas, attempt)


def _headings_above(text: str, quote: str) -> list[str]:
    """The heading lines of a passage above the quoted sentence ("Logical replication")."""
    at = text.find(quote)
    return heading_lines(text[:at]) if at > 0 else []


def _cited_texts(outcome: ClaimOutcome, records: Sequence[EvidenceRecord], plan: QueryPlan) -> list[str]:
    """Each citation's quote with its source's title and the headings above it in the passage: they say
    what the sentence is about ("ExampleDB 18 release notes / Logical replication"), which the quoted
    sentence often leaves implicit.  So do the names the question uses that the passage names, however it
    spells them ("the Employee Assistance Program" in a passage about "The EAP")."""
    by_id = {e.id: e for e in records}
    names = named_phrases(asked_clause(plan.parsed.original))
    out = []
    for c in outcome.draft.citations:
        rec = by_id.get(c.evidence_id)
        context = [rec.title, rec.heading, *_headings_above(rec.text, c.quote)] if rec is not None else []
        if rec is not None:
            context += [n for n in names if names_phrase(n, rec.text, rec.title)]
        out.append("\n".join([c.quote, *context]))
    return out


def draft_and_verify(plan: QueryPlan, evidence: list[EvidenceRecord], *, writer: Any | None = None,
                     info: dict[str, Any] | None = None) -> Iterator[ClaimOutcome]:  # fmt: skip
    """Draft with the writer and yield each claim as soon as it is verified.

    A draft with no surviving claim gets one more pass only when the second prompt differs
    from the first: when its claims failed the relevance check, the writer is offered, alone,
    the sentences that hold what the question asks for (``narrow_to_answer_type``;
    ``info["regenerated"]`` for a generative writer). Both writers are deterministic (the
    model writers send temperature 0), so the identical prompt again would return the same
    draft: measured on the local model, 305 s for the same 315 tokens (docs/models.md).

    A generative writer whose claims all failed verification is followed by the extractive
    writer over the same evidence (``info["fallback"] = "extractive"``): the model judged the
    passages answerable and only its wording or quoting failed, so the verified sentences
    themselves are shown rather than an abstention (docs/models.md has the measurement). A
    model that says "not answerable", or fails, is not overruled.
    """
    info = info if info is not None else {}
    writer = writer if writer is not None else _tenant_writer()[0]
    generative = bool(getattr(writer, "generative", False))
    kept_any = False
    for outcome in _draft_and_verify(plan, evidence, writer, info):
        kept_any = kept_any or outcome.kept
        yield outcome
    if kept_any or not generative or not info.get("drafted") or info.get("error"):
        return
    info["fallback"] = "extractive"
    fallback_info: dict[str, Any] = {}
    for outcome in _draft_and_verify(plan, evidence, ExtractiveWriter(), fallback_info):
        yield replace(outcome, attempt=outcome.attempt + 2)
    info["drafted"] += fallback_info.get("drafted", 0)


def _draft_and_verify(plan: QueryPlan, evidence: list[EvidenceRecord], writer: Any,
                      info: dict[str, Any]) -> Iterator[ClaimOutcome]:  # fmt: skip
    by_id = {e.id: e for e in evidence}
    offered = evidence
    for attempt in (1, 2):
        if getattr(writer, "generative", False):
            drafts = writer.write(plan, offered, info=info)
        else:  # the extractive writer weighs meaning as well as shared words (writers/extractive.py)
            drafts = writer.write(plan, offered, info=info, similarity=sentence_similarity)
        info["drafted"] = info.get("drafted", 0) + len(drafts)
        kept_any = False
        missing_answer_type = False
        for draft in drafts:
            if draft.extra and not kept_any:
                break  # extras come last, and are stated only beside a kept claim of the writer's own limit
            outcome = verify_one(draft, plan, by_id, attempt=attempt)
            kept_any = kept_any or outcome.kept
            missing_answer_type = missing_answer_type or not outcome.verification.relevant
            yield outcome
        if kept_any or not drafts or attempt == 2:
            return
        # Offered, alone, the sentences that hold what a how-much / when question asks for (a
        # number, a date), which a sentence merely sharing the question's words outranked.
        narrowed = narrow_to_answer_type(plan, evidence) if missing_answer_type else []
        if not narrowed:
            return
        if getattr(writer, "generative", False):
            info["regenerated"] = True
        evidence.extend(narrowed)  # the caller's records: sources and citations resolve against them
        by_id.update({e.id: e for e in narrowed})
        offered = narrowed
        info["narrowed_to_answer_type"] = len(narrowed)


def weak_evidence_bar(plan: QueryPlan, kept: Sequence[ClaimOutcome]) -> float:
    """The evidence strength an answer needs: lower when a kept claim is a rule for the asker's case, or a rule about
    the act a yes-or-no question asks about."""
    if any(states_the_askers_case(plan, o.draft.text) or rules_on_the_asked_act(plan, o.draft.text) for o in kept):
        return CASE_RULE_THRESHOLD
    return WEAK_EVIDENCE_THRESHOLD


def decide_abstention(*, evidence: list[EvidenceRecord], drafted: int, outcomes: list[ClaimOutcome],
                      conflict_status: str, strength: float, plan: QueryPlan,
                      writer_error: str | None = None,
                      bar: float = WEAK_EVIDENCE_THRESHOLD) -> Abstention | None:  # fmt: skip
    """``bar``: the evidence strength the kept claims need (``weak_evidence_bar``, which the caller traces)."""
    kept = [o for o in outcomes if o.kept]
    if not evidence:
        return Abstention("no_evidence", "No readable source matches this question.")
    if conflict_status == "unresolved":
        return Abstention("conflicting", "The sources found contradict each other and none of them settles it.")
    if kept:
        if strength < bar:
            return Abstention("weak_evidence", "The sources found only touch on this question; see the results.")
        return None
    if drafted == 0:
        if writer_error and writer_error not in ("not_answerable",):
            return Abstention("all_claims_unsupported", f"The writer's draft could not be used ({writer_error}).")
        return Abstention("weak_evidence", "The sources found do not answer this question directly.")
    if outcomes and all(not o.verification.in_scope for o in outcomes):
        return Abstention("out_of_time_scope", "The sources found are outside the time or version scope asked for.")
    if outcomes and all(not o.verification.relevant for o in outcomes):
        return Abstention("claims_not_relevant", "The passages found do not answer this question: see the results.")
    return Abstention("all_claims_unsupported", "No drafted claim survived verification.")


# --------------------------------------------------------------------------- releases


def _as_of(state: IndexState | None) -> dict[str, str | None]:
    if state is None:
        return {"content": None, "permissions": None}
    return {
        "content": state.content_as_of.isoformat() if state.content_as_of else None,
        "permissions": state.permissions_as_of.isoformat() if state.permissions_as_of else None,
    }


def cache_key(perm: PermissionContext, plan: QueryPlan, state: IndexState | None, kind: str,
              release: dict[str, Any] | None = None) -> str:  # fmt: skip
    """``release``: the caller's ``release_identity()`` when it already has it (one writer lookup per request)."""
    material = {
        "kind": kind,
        "tenant": perm.tenant_id,
        "perm": perm.fingerprint,
        "acl_version": perm.acl_version,
        "query": " ".join(plan.original.split()).lower(),
        "filters": to_jsonable(plan.filters),
        "entities": [list(e) for e in plan.parsed.entities],  # an alias-list edit changes the plan
        "index_version": state.index_version if state else 0,
        # Also the index's own clock: a recreated database restarts ids and versions at the
        # same numbers, and must not meet entries a shared Redis kept from the old one.
        "content_as_of": state.content_as_of.isoformat() if state and state.content_as_of else None,
        "permissions_as_of": state.permissions_as_of.isoformat() if state and state.permissions_as_of else None,
        "release": release if release is not None else release_identity(),
        "day": plan.as_of.date().isoformat(),  # relative dates ("last quarter") resolve per day
    }
    digest = hashlib.sha256(json.dumps(material, sort_keys=True, default=str).encode()).hexdigest()
    return f"answer:{perm.tenant_id}:{perm.fingerprint}:{digest}"


def run_search(perm: PermissionContext, question: str, extra: RequestFilters, *, limit: int = 20,
               plan: QueryPlan | None = None, state: IndexState | None = None) -> dict[str, Any]:  # fmt: skip
    """``plan`` / ``state``: what the caller (the cache) already built and read for this request."""
    if plan is None:
        plan = build_plan(question, datetime.now(UTC), extra)
    r = retrieve(perm, plan, k=max(limit * 3, 30))
    if state is None:
        state = IndexState.objects.first()
    return {
        "query": question,
        "plan": plan_json(plan),
        "results": document_results(r.chunks, plan.parsed.text or question, limit=limit),
        "as_of": _as_of(state),
        "notices": r.trace.get("notices", []),
        "trace": {**r.trace, "timings_ms": r.trace.get("timings_ms", {})},
    }


def _one_per_document(records: list[EvidenceRecord]) -> list[EvidenceRecord]:
    """The first cited passage of each document: a document is one source, however many passages it gave."""
    seen: set[int] = set()
    out = []
    for e in records:
        if e.document_id not in seen:
            seen.add(e.document_id)
            out.append(e)
    return out


def _date_of(e: EvidenceRecord) -> str | None:
    ts = e.updated_at or e.created_at
    return ts.date().isoformat() if ts else None


# --------------------------------------------------------------------------- the staged pipeline


@dataclass(frozen=True)
class StageEvent:
    """One step of an answer, in the order a reader may see it.

    ``plan`` (the validated plan), ``sources`` (evidence records and the ranked results),
    ``claim`` (one verified claim), ``retract`` / ``annotate`` (a later stage withdrew or
    labelled a claim already sent), ``done`` (the whole response, exactly what
    ``answer_question`` returns).  ``answers/streaming.py`` sends each one as an SSE event.
    """

    kind: str
    data: dict[str, Any]


class _Clock:
    """Engine time only: the time a consumer spends between two events (e.g. writing to a slow
    socket) is not the engine's and is left out of ``timings_ms``."""

    def __init__(self) -> None:
        self.t0 = time.perf_counter()
        self.paused = 0.0

    def ms(self) -> float:
        return round((time.perf_counter() - self.t0 - self.paused) * 1000, 1)

    def emit(self, event: StageEvent) -> Iterator[StageEvent]:
        t = time.perf_counter()
        yield event
        self.paused += time.perf_counter() - t


def _sources_event(response_or_parts: dict[str, Any]) -> StageEvent:
    r = response_or_parts
    return StageEvent("sources", {
        "evidence": [{k: v for k, v in e.items() if k != "cited"} for e in r.get("evidence", [])],
        "results": r.get("results", []), "as_of": r.get("as_of"), "notices": r.get("notices", []),
        "freshness": r.get("freshness"),
    })  # fmt: skip


def replay(response: dict[str, Any]) -> Iterator[StageEvent]:
    """The stage events of an already released answer (a cache hit): same kinds, same payloads."""
    yield StageEvent("plan", {"question": response.get("question"), "plan": response.get("plan"),
                              "cache": response.get("trace", {}).get("cache"), "release": response.get("release")})  # fmt: skip
    yield _sources_event(response)
    for i, claim in enumerate((response.get("answer") or {}).get("claims", [])):
        yield StageEvent("claim", {"index": i, "claim": claim})
    yield StageEvent("done", response)


def final_answer(stages: Iterator[StageEvent]) -> dict[str, Any]:
    """Run the stages to the end and return the ``done`` payload."""
    for event in stages:
        if event.kind == "done":
            return event.data
    raise RuntimeError("the answer stages ended without a done event")


def answer_question(perm: PermissionContext, question: str, extra: RequestFilters) -> dict[str, Any]:
    """The answer as one JSON document: ``answer_stages`` consumed to its ``done`` event."""
    return final_answer(answer_stages(perm, question, extra))


def answer_stages(perm: PermissionContext, question: str, extra: RequestFilters, *,
                  evidence: list[EvidenceRecord] | None = None) -> Iterator[StageEvent]:  # fmt: skip
    """The answer pipeline, one ``StageEvent`` as soon as each stage has its result.

    ``evidence`` given (a follow-up that reuses the previous turn's re-authorised records):
    no cache, no retrieval; drafting, verification, conflicts and abstention as usual.

    Every database read of a stage happens before that stage's event is yielded and nothing
    here opens a transaction that spans a ``yield``: the stream advances this generator one
    step per ``tenant_context`` transaction and writes to the socket only between steps.

    Claims are yielded one by one as each is verified, held back only until the running
    evidence strength (the best kept quote's coverage, which can only grow) clears
    ``WEAK_EVIDENCE_THRESHOLD``: a claim that the weak-evidence rule would withdraw anyway is
    not shown first.  Conflicts and abstention are decided on the whole set afterwards; a claim
    they withdraw is announced with ``retract``, a label they add with ``annotate``, and a claim
    they add (the other side of a conflict) as a further ``claim``.

    Each stage is a named function over one ``AnswerRun``; the ones that send events are
    generators, the others only fill in their part of the run.
    """
    run = plan_stage(perm, question, extra, evidence)
    if run.cached is not None:
        yield from replay(run.cached)
        return
    yield from run.clock.emit(StageEvent("plan", {"question": question, "plan": plan_json(run.plan),
                                                  "cache": run.cache_state, "release": run.release}))  # fmt: skip
    retrieve_stage(run)
    scope_stage(run)
    evidence_stage(run)
    yield from run.clock.emit(_sources_event({
        "evidence": [evidence_json(e) for e in run.records], "results": run.results, "as_of": _as_of(run.state),
        "notices": run.retrieval.trace.get("notices", []), "freshness": run.freshness,
    }))  # fmt: skip
    yield from write_verify_stage(run)
    conflict_stage(run)
    abstain_stage(run)
    yield from reconcile_stage(run)
    response = response_stage(run)
    if run.ttl:
        cache.set(run.cache_key, response, timeout=run.ttl)
    yield StageEvent("done", response)


@dataclass
class AnswerRun:
    """Everything one answer has found so far; each stage reads the fields before it and fills its own."""

    perm: PermissionContext
    question: str
    plan: QueryPlan
    state: IndexState | None
    reused: list[EvidenceRecord] | None  # a follow-up's re-authorised records, or None
    clock: _Clock = field(default_factory=_Clock)
    timings: dict[str, float] = field(default_factory=dict)
    # plan
    ttl: int = 0
    cache_key: str = ""
    cached: dict[str, Any] | None = None
    cache_state: str = "miss"
    writer: Any = None
    release: dict[str, Any] = field(default_factory=dict)
    tiers: dict[int, str] = field(default_factory=dict)
    trace: dict[str, Any] = field(default_factory=dict)
    # retrieve + rank
    retrieval: Retrieval = field(default_factory=lambda: Retrieval(chunks=[]))
    chunks: list[RankedChunk] = field(default_factory=list)
    results: list[dict[str, Any]] = field(default_factory=list)
    freshness: dict[str, Any] | None = None
    # scope
    scope_abstention: Abstention | None = None
    # evidence (or multi-hop)
    mode: str = "answer"
    records: list[EvidenceRecord] = field(default_factory=list)
    outcomes: list[ClaimOutcome] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)
    abbreviations: dict[str, frozenset[str]] | None = None  # what the records define (_abbreviations)
    chain: list[dict[str, Any]] | None = None
    conclusion: str | None = None
    unanswered_parts: list[dict[str, str]] = field(default_factory=list)  # a compound question's parts
    # write + verify: in the order sent; identity, not claim id (a conflict may reuse an id)
    shown: list[ClaimOutcome] = field(default_factory=list)
    # conflicts
    report: ConflictReport | None = None
    conflict: dict[str, Any] = field(default_factory=lambda: {"status": "none", "pairs": [], "statement": ""})
    # abstain
    strength: float = 0.0
    abstention: Abstention | None = None
    released: list[ClaimOutcome] = field(default_factory=list)
    claims_json: list[dict[str, Any]] = field(default_factory=list)

    @property
    def reuse(self) -> bool:
        return self.reused is not None

    @property
    def multi_hop(self) -> bool:
        return not self.reuse and self.plan.intent == "multi_hop"

    @property
    def compare(self) -> bool:
        return not self.reuse and self.plan.intent == "compare"

    @property
    def compound(self) -> bool:
        return not self.reuse and self.plan.intent == "compound"

    @property
    def by_parts(self) -> bool:
        """Each part (figure, hop, question) was answered and checked on its own question."""
        return self.multi_hop or self.compare or self.compound

    @property
    def own_urls(self) -> dict[str, str]:
        return {e.id: e.canonical_url for e in self.records}

    @property
    def cited_ids(self) -> set[str]:
        return {c.evidence_id for o in self.outcomes if o.kept for c in o.draft.citations}


def plan_stage(perm: PermissionContext, question: str, extra: RequestFilters,
               evidence: list[EvidenceRecord] | None) -> AnswerRun:  # fmt: skip
    """Understand the question, then the cache: a hit carries the released answer in ``cached``."""
    plan = build_plan(question, datetime.now(UTC), extra)
    run = AnswerRun(perm=perm, question=question, plan=plan, state=IndexState.objects.first(), reused=evidence)
    if not run.reuse:
        run.ttl = (
            settings.CAIRN["LATEST_CACHE_SECONDS"]
            if plan.parsed.wants_latest
            else settings.CAIRN["ANSWER_CACHE_SECONDS"]
        )
    # The tenant's writer and the release identity are read once: the cache key is made of the same release.
    run.writer, writer_notes = _tenant_writer()
    run.release = release_identity(run.writer)
    if run.ttl:
        run.cache_key = cache_key(perm, plan, run.state, "answer", release=run.release)
        run.cached = cache.get(run.cache_key)
        if run.cached is not None:
            run.cached["trace"]["cache"] = "hit"
            return run
    run.tiers = tier_names()
    run.cache_state = "bypass" if run.reuse else "miss"
    run.trace = {"writer_notes": writer_notes}
    return run


def retrieve_stage(run: AnswerRun) -> None:
    """Hybrid search and rerank; for "latest", scope to the newest version and check the feed."""
    plan = run.plan
    if run.reuse or run.compare or run.compound:
        # A comparison searches once per figure (compare_stage), a compound question once per part
        # (compound_stage); a follow-up reuses the last turn's records.
        run.retrieval = Retrieval(chunks=[], trace={"reused_evidence": len(run.reused or []), "legs": {},
                                                    "collapsed_duplicates": 0, "notices": []})  # fmt: skip
        run.timings["retrieval"] = 0.0
        run.trace["retrieval"] = run.retrieval.trace
        return
    run.retrieval = retrieve(run.perm, plan, exclude_chunks=False)
    run.results = document_results(run.retrieval.chunks, plan.parsed.text or run.question)
    run.timings["retrieval"] = run.clock.ms()
    run.trace["retrieval"] = run.retrieval.trace
    chunks = run.retrieval.chunks
    if plan.needs_current_version:
        newest = newest_indexed(plan, chunks)
        if newest is not None and newest.version:
            run.plan = replace(plan, version_scope=newest.version)
            other = [
                c for c in chunks if c.version_label and version_key(c.version_label) != version_key(newest.version)
            ]
            chunks = [c for c in chunks if c not in other]
            run.trace["version_scope"] = {
                "resolved": newest.version, "from_document": newest.document_id,
                "set_aside_other_versions": sorted({c.version_label for c in other}),
            }  # fmt: skip
        run.freshness = check_freshness(run.plan, newest)
    else:
        run.freshness = check_freshness(plan, newest_indexed(plan, chunks) if chunks else None)
    run.chunks = chunks


# A question bound to an entity and a period resolves to a few filings; at most this many get a second
# search of their own.
FOCUS_MAX_DOCUMENTS = 3


def _cell_queries(plan: QueryPlan) -> list[str]:
    """The question's terms with each resolved period as a statement cell reads ("three months ended
    September 30, 2023"): inside a filing, "the most recent quarter" matches the certification's
    "quarterly report", while the row that answers carries the period's end date."""
    base = plan.retrieval_queries[1] if len(plan.retrieval_queries) > 1 else plan.parsed.text or plan.original
    span = asked_span(plan.original)
    out = []
    for iso in plan.period_scope:
        try:
            end = datetime.fromisoformat(iso[:10])
        except ValueError:
            continue
        out.append(f"{base} {span} months ended {end:%B} {end.day}, {end.year}")
    return out


STATEMENT_ROW_CHUNKS = 4  # at most this many statement chunks join the focused search's candidates


def statement_rows(perm: PermissionContext, plan: QueryPlan, document_ids: Sequence[int]) -> list[RankedChunk]:
    """Chunks of the bound filings with a statement row naming what a how-much question asks about and a
    cell of the resolved quarter, best first: "Net income: $6,188 million, three months ended July 30,
    2023" sits in a chunk of forty rows that a search for "NVIDIA's net income" ranks below the prose."""
    if answer_type(plan.parsed.original) != "number":
        return []
    asked = attribute_terms(plan)
    cells = period_cells(plan.period_scope)
    scored = []
    for c in chunks_with_phrases(perm, document_ids, cells):
        cover, in_period = statement_row_cover(asked, c.text, cells)
        if cover and in_period:
            scored.append((-cover, c.char_start, c))
    return [c for _cover, _start, c in sorted(scored, key=lambda t: t[:2])[:STATEMENT_ROW_CHUNKS]]


def scope_stage(run: AnswerRun) -> None:
    """Entities and periods bind: sources about another entity or period cannot answer.

    When they bind to a few documents (Apple's 10-Q for the quarter asked about), the question is
    searched again inside those documents only: the first search ranked the whole tenant, and of a
    200-page filing it may have kept a cover-page chunk and missed the statement row that answers.
    """
    if run.compare or run.compound:
        return  # each figure (each part) is scoped to its own entity and period in its own run
    if run.reuse:
        run.plan, kept_records, run.scope_abstention, scope_trace = apply_scope(run.perm, run.plan,
                                                                                list(run.reused or []))  # fmt: skip
        run.reused = kept_records
    else:
        run.plan, run.chunks, run.scope_abstention, scope_trace = apply_scope(run.perm, run.plan, run.chunks)
        docs = list(dict.fromkeys(c.document_id for c in run.chunks))
        if run.scope_abstention is None and run.plan.period_scope and 0 < len(docs) <= FOCUS_MAX_DOCUMENTS:
            queries = [*run.plan.retrieval_queries, *_cell_queries(run.plan)]
            focused = retrieve(run.perm, run.plan, queries, k=30, document_ids=docs, exclude_chunks=False).chunks
            seen = {c.chunk_id for c in focused}
            rows = [c for c in statement_rows(run.perm, run.plan, docs) if c.chunk_id not in seen]
            reranker = _reranker()
            if rows and reranker is not None:
                # The quarter's statement rows that name what is asked, ranked with the focused results.
                # First, so that they are inside the reranker's depth.
                focused = list(reranker.rerank(queries[0], run.plan, rows + focused, top_n=50).chunks)
                seen |= {c.chunk_id for c in rows}
                scope_trace["statement_rows"] = [c.chunk_id for c in rows]
            run.chunks = focused + [c for c in run.chunks if c.chunk_id not in seen]
            scope_trace["focused_search"] = {"documents": docs, "chunks": len(focused)}
        if run.chunks:
            run.results = document_results(run.chunks, run.plan.parsed.text or run.question)
    if scope_trace:
        run.trace["scope"] = scope_trace
    if run.scope_abstention is not None:
        run.chunks = []
        if run.reuse:
            run.reused = []


def evidence_stage(run: AnswerRun) -> None:
    """Cut evidence passages (or run the multi-hop chain, which extracts and drafts per hop)."""
    plan = run.plan
    run.records = list(run.reused or [])
    if not run.reuse and plan.intent == "navigational":
        run.mode = "results"
    elif run.compare:
        compare_stage(run)
    elif run.compound:
        compound_stage(run)
    elif run.multi_hop:
        perm = run.perm
        mh = run_multi_hop(
            plan, lambda p, qs: retrieve(perm, p, qs, exclude_chunks=False).chunks,
            doc_texts=lambda cs: _doc_texts(perm, cs),
            tier_names=run.tiers,
        )  # fmt: skip
        run.records = mh.evidence
        by_id = {e.id: e for e in run.records}
        run.outcomes = [verify_one(c, plan, by_id) for c in mh.claims]
        run.info["drafted"] = len(mh.claims)
        run.chain = [
            {"hop": h.hop.id, "query": h.query, "extracts": h.hop.extracts or None, "value": h.value or None,
             "claim_id": h.claim.id if h.claim else None,
             "evidence_id": h.claim.citations[0].evidence_id if h.claim else None,
             "rewrite_violations": list(h.rewrite_violations)}
            for h in mh.hops
        ]  # fmt: skip
        run.trace["multi_hop"] = {"retrievals": mh.retrievals, "failed_at": mh.failed_at or None,
                                  "comparison": mh.conclusion}  # fmt: skip
        if all(o.kept for o in run.outcomes) and not mh.failed_at:
            run.conclusion = conclusion_text(plan, mh)
    elif not run.reuse:
        budget = int(settings.CAIRN.get("EVIDENCE_TOKEN_BUDGET", 1500))
        run.records, ev_trace = build_evidence(plan, run.chunks, token_budget=budget,
                                               doc_texts=_doc_texts(run.perm, run.chunks),
                                               tier_names=run.tiers, similarity=sentence_similarity)  # fmt: skip
        run.trace["evidence"] = ev_trace
        if asks_superlative(plan.original) and plan.period_scope:
            add_ranked_table(run)
    run.timings["evidence"] = run.clock.ms()


# Chunks of a bound filing read for its tables when a question ranks their rows (a 10-Q has 60-190 chunks).
RANKING_CHUNKS = 200


def add_ranked_table(run: AnswerRun) -> None:
    """ "Which of Apple's segments had the highest net sales in the quarter …?": the whole table that ranks
    its rows joins the evidence, read from the bound filings' chunks that hold the period's cells (the reader's
    ACL applied), when exactly one table can answer (``extractive.ranked_table``).  Sentence selection keeps
    the rows that share the question's words, and the row that ranks first need not be one of them."""
    docs = list(dict.fromkeys(c.document_id for c in run.chunks))
    if not 0 < len(docs) <= FOCUS_MAX_DOCUMENTS:
        return
    chunks = chunks_with_phrases(run.perm, docs, period_cells(run.plan.period_scope), limit=RANKING_CHUNKS)
    tables = table_records(chunks, doc_texts=_doc_texts(run.perm, chunks), tier_names=run.tiers)
    found = ranked_table(run.plan, [*run.records, *tables])
    if found is None:
        return
    top, table = found
    have = {e.id for e in run.records}
    added = {r.ev.id: r.ev for r in table if r.ev.id not in have}
    run.records = [*added.values(), *run.records]
    run.trace["ranked_table"] = {"row": top.base, "rows": len(table), "passages_added": len(added)}


def _part_run(run: AnswerRun, question: str) -> AnswerRun:
    """One figure of a comparison, answered like a question of its own (retrieval, scoping, evidence,
    writing, verification and the abstention rules), with the parent's writer and permissions."""
    plan = build_plan(question, datetime.now(UTC), RequestFilters())
    if plan.intent in ("compare", "compound"):
        plan = replace(plan, intent="answer")
    part = AnswerRun(perm=run.perm, question=question, plan=plan, state=run.state, reused=None)
    part.writer, part.release, part.tiers, part.trace = run.writer, run.release, run.tiers, {}
    retrieve_stage(part)
    scope_stage(part)
    evidence_stage(part)
    for _event in write_verify_stage(part):
        pass  # the parent sends the claims it keeps
    abstain_stage(part)
    return part


def _add_part_evidence(run: AnswerRun, part: AnswerRun) -> None:
    """A part's evidence and result list joins the parent's, each record and document once."""
    have = {e.id for e in run.records}
    run.records += [e for e in part.records if e.id not in have]
    docs = {r["document_id"] for r in run.results if r.get("document_id") is not None}
    run.results += [r for r in part.results if r.get("document_id") not in docs]


def _names_its_part(part: AnswerRun, lead: ClaimOutcome, distinct: set[str]) -> bool:
    """The figure's claim (or its page title) names what tells this part from the other one; words the
    scoping stage bound on the source's metadata (the company, the period) count as named."""
    need = distinct - scoped_terms(part.plan)
    if not need:
        return True
    titles = " ".join(e.title for e in part.records if any(c.evidence_id == e.id for c in lead.draft.citations))
    return bool(need & set(content_stems(f"{lead.text} {titles}")))


# Of a comparison part's kept claims, how many are tried for the figure (in rank order).
COMPARISON_CLAIMS_TRIED = 3
_NON_GAAP = re.compile(r"\bnon-?\s?GAAP\b", re.I)


def _part_figure_claim(
    run: AnswerRun, comparison: FigureComparison, part: AnswerRun, spec: ComparisonPart, distinct: set[str]
) -> tuple[ClaimOutcome | None, Amount | None]:
    """The claim that gives a comparison part's figure, and the figure.

    Of the part's first kept claims, only one that names its part ("the airfare budget" is not answered with the
    lodging budget's sentence) and, unless the question says non-GAAP, states the reported figure may give it. A
    statement row's cell for the resolved quarter comes before a sentence's first amount: the best sentence may be
    prose about the line ("Total R&D and MG&A expenses for Q3 2023 were $5.2 billion" is not R&D alone)."""
    if part.abstention is not None:
        return None, None
    asks_non_gaap = _NON_GAAP.search(run.plan.original) is not None
    eligible = [
        kept
        for kept in part.released[:COMPARISON_CLAIMS_TRIED]
        if (asks_non_gaap or not _NON_GAAP.search(kept.text)) and _names_its_part(part, kept, distinct)
    ]
    for cell_only in (True, False):
        for kept in eligible:
            figure = part_figure(comparison, kept.text, part.plan.period_scope, spec.label, cell_only=cell_only)
            if figure is not None:
                return kept, figure
    return None, None


def compare_stage(run: AnswerRun) -> None:
    """Answer each figure of a comparison on its own, then compare the two amounts in code."""
    comparison = split_comparison(run.plan.original, run.plan.parsed)
    if comparison is None:  # the planner said compare; it cannot disagree with itself, but fail closed
        run.scope_abstention = Abstention("weak_evidence", "The two things to compare could not be told apart.")
        return
    amounts = []
    parts_trace: list[dict[str, Any]] = []
    others = [set(content_stems(p.label)) for p in reversed(comparison.parts)]
    for i, spec in enumerate(comparison.parts, start=1):
        part = _part_run(run, spec.question)
        lead, amount = _part_figure_claim(run, comparison, part, spec, set(content_stems(spec.label)) - others[i - 1])
        parts_trace.append({
            "question": spec.question, "abstention": part.abstention.reason if part.abstention else None,
            "claim": lead.text if lead else None, "amount": amount.text if amount else None,
            "period": part.plan.period_label or None,
        })  # fmt: skip
        _add_part_evidence(run, part)
        if lead is None or amount is None:
            reason = part.abstention.reason if part.abstention is not None else "weak_evidence"
            run.scope_abstention = Abstention(reason, f"No supported figure was found for {spec.label}.")
            break
        cid = f"c{i}"
        run.outcomes.append(replace(lead, draft=replace(lead.draft, id=cid),
                                    verification=replace(lead.verification, claim_id=cid)))  # fmt: skip
        amounts.append(amount)
    run.info["drafted"] = len(run.outcomes)
    if len(amounts) == 2:
        run.conclusion = conclude(comparison, amounts[0], amounts[1])
    run.trace["comparison"] = {"kind": comparison.kind, "parts": parts_trace, "conclusion": run.conclusion}


# Of each part of a compound question, the first kept claims released (the lead and two supporting claims). Three,
# not two, since the fourteenth round: a part's own question is short, and its second-best sentence is often the
# one that speaks of the asker's case (dev +2 turns, claim relevance precision 0.589 -> 0.584; docs/evaluation.md).
COMPOUND_CLAIMS_PER_PART = 3


def _part_claims(part: AnswerRun) -> list[ClaimOutcome]:
    """A compound part's released claims, up to its cap: one more where the writer stated the sentence after the
    part's lead (``info["lead_continued"]``), so that sentence does not push the part's last claim out."""
    return part.released[: COMPOUND_CLAIMS_PER_PART + (1 if part.info.get("lead_continued") else 0)]


def _fresh_part(run: AnswerRun, question: str, stated: set[str]) -> tuple[AnswerRun, list[ClaimOutcome]]:
    """A compound part asked again as ``question``, and its claims that no earlier part stated."""
    part = _part_run(run, question)
    return part, [o for o in _part_claims(part) if o.text not in stated] if part.abstention is None else []


def compound_stage(run: AnswerRun) -> None:
    """Answer each part of "What can I use …, and where do I get …?" as a question of its own; release
    the parts that are supported and name the ones that are not.  A part that finds nothing is asked again,
    first with what an earlier part's answer named in place of its pronoun (``carried_part``), then with the
    whole question after it (``in_whole``); a part that finds only earlier parts' sentences is asked without the
    asker's situation (``alone``).  After a part that found nothing, a part that names nothing of its own
    (``lexicon.asking_stems``: question form and light words only) is not asked at all."""
    compound = split_compound(run.plan.original)
    if compound is None:  # the planner said compound; fail closed like compare_stage
        run.scope_abstention = Abstention("weak_evidence", "The parts of the question could not be told apart.")
        return
    parts_trace: list[dict[str, Any]] = []
    seen_texts: set[str] = set()
    reasons: list[AbstentionReason] = []
    strengths: list[float] = []
    asked = frozenset(content_stems(run.plan.original))
    answered_lead: str | None = None  # the lead claim of the last part that was answered
    for spec in compound.parts:
        if reasons and answered_lead is None and not asking_stems(spec.clause):
            # "Can I negotiate a sign-on bonus, and who would I even ask?": the second part asks about the first, so
            # when the first found nothing, the second alone would be answered from whatever speaks of "asking".
            reasons.append(reasons[-1])
            run.unanswered_parts.append({"question": spec.clause, "reason": reasons[-1]})
            parts_trace.append({"question": spec.question, "abstention": reasons[-1], "claims": [],
                                "about_the_part_before": True})  # fmt: skip
            continue
        part = _part_run(run, spec.question)
        kept = _part_claims(part) if part.abstention is None else []
        alone = None
        if kept and all(o.text in seen_texts for o in kept) and spec.clause != spec.question:
            # "I'm a hiring manager and want to advertise a detail on the GSA Opportunity Network. What do I have to
            # submit first, and when does the committee that reviews those requests meet?": with the situation's
            # words, the second part finds the first part's sentences again. Asked without them, it is kept for a
            # claim no earlier part stated.
            retry, fresh = _fresh_part(run, spec.clause, seen_texts)
            if fresh:
                part, kept, alone = retry, fresh, spec.clause
        carried = None
        if not kept and answered_lead is not None:
            # "…, and where do I get the Tokencode to log in to it?": "it" may be the earlier part's answer.
            carried = carried_part(spec.clause, new_names(answered_lead, asked)[:2])
            if carried is not None:
                retry = _part_run(run, carried)
                if retry.abstention is None and retry.released:
                    part, kept = retry, _part_claims(retry)
                else:
                    carried = None
        in_whole = None
        if not kept and spec.question != run.plan.original:
            # "… can I still earn travel comp time for it - and how long would I have to use it?": the second part
            # alone does not say what "it" is.  A part that finds nothing alone is asked once more with the whole
            # question after it, as a follow-up is read in context (answers/followups.in_context), and kept only for
            # a claim no earlier part stated (docs/evaluation.md, twenty-sixth round).
            in_whole = asked_before(spec.question, run.plan.original)
            whole, fresh = _fresh_part(run, in_whole, seen_texts)
            if fresh:
                part, kept = whole, fresh
            else:
                in_whole = None
        if kept:
            answered_lead = kept[0].text
        _add_part_evidence(run, part)
        if not kept:
            reason = part.abstention.reason if part.abstention is not None else "weak_evidence"
            reasons.append(reason)
            run.unanswered_parts.append({"question": spec.clause, "reason": reason})
        else:
            strengths.append(part.strength)
        for o in kept:
            if o.text in seen_texts:
                continue  # one passage answers both parts: say it once
            seen_texts.add(o.text)
            cid = f"c{len(run.outcomes) + 1}"
            run.outcomes.append(replace(o, draft=replace(o.draft, id=cid),
                                        verification=replace(o.verification, claim_id=cid)))  # fmt: skip
        parts_trace.append({
            "question": spec.question, "abstention": part.abstention.reason if part.abstention else None,
            "claims": [o.text for o in kept], **({"carried": carried} if carried else {}),
            **({"alone": alone} if alone else {}),
            **({"in_whole": in_whole} if in_whole else {}),
        })  # fmt: skip
    run.info["drafted"] = len(run.outcomes)
    run.info["part_strength"] = min(strengths) if strengths else 0.0
    if not run.outcomes:
        run.scope_abstention = Abstention(reasons[0] if reasons else "weak_evidence",
                                          "No part of the question found a supported answer.")  # fmt: skip
    run.trace["compound"] = {"parts": parts_trace, "unanswered": [p["question"] for p in run.unanswered_parts]}


def write_verify_stage(run: AnswerRun) -> Iterator[StageEvent]:
    """Write and verify; each kept claim is sent once the answer clears the weak-evidence bar."""
    if run.mode == "answer" and not run.by_parts and run.records:
        own_urls = run.own_urls
        held: list[ClaimOutcome] = []
        best = 0.0
        bar = WEAK_EVIDENCE_THRESHOLD
        defined = _abbreviations(run)
        for outcome in draft_and_verify(run.plan, run.records, writer=run.writer, info=run.info):
            run.outcomes.append(outcome)
            if not outcome.kept:
                continue
            held.append(outcome)
            if not outcome.draft.extra:  # an extra claim is shown with the others, and decides nothing
                best = max(best, evidence_strength(run.plan, _cited_texts(outcome, run.records, run.plan), defined))
                bar = min(bar, weak_evidence_bar(run.plan, [outcome]))  # the bar only falls as claims are kept
            if best >= bar:
                for o in held:
                    run.shown.append(o)
                    yield from run.clock.emit(StageEvent("claim", {"index": len(run.shown) - 1,
                                                                   "claim": o.as_json(own_urls)}))  # fmt: skip
                held.clear()
    run.timings["write_verify"] = run.clock.ms()


def _abbreviations(run: AnswerRun) -> dict[str, frozenset[str]]:
    """The abbreviations the evidence defines that the question names either way (lexicon.abbreviations_defined),
    read once per run."""
    if run.abbreviations is None:
        records, asked = run.records, content_stems(run.plan.parsed.text or run.question)
        run.abbreviations = abbreviations_defined([e.text for e in records], asked, [e.title or "" for e in records])
    return run.abbreviations


def conflict_stage(run: AnswerRun) -> None:
    """Conflicts between what survived and the other sources; new views are verified like any claim."""
    if run.mode != "answer" or run.by_parts:
        return  # two figures of a comparison differ by design; a compound question's parts ask different things
    run.report = find_conflicts(run.plan, [o.draft for o in run.outcomes if o.kept], run.records)
    run.conflict = conflict_section(run.report)
    if run.report.pairs:
        by_id = {e.id: e for e in run.records}
        remove = run.report.remove_claim_ids
        run.outcomes = [replace(o, kept=False) if o.kept and o.draft.id in remove else o for o in run.outcomes]
        run.outcomes += [verify_one(d, run.plan, by_id) for d in run.report.add_claims]


def abstain_stage(run: AnswerRun) -> None:
    """Release the kept claims, or abstain with a reason."""
    kept = [o for o in run.outcomes if o.kept]
    deciding = [o for o in kept if not o.draft.extra]  # extra claims are shown, not weighed (DraftClaim.extra)
    cited = [t for o in deciding for t in _cited_texts(o, run.records, run.plan)]
    run.strength = evidence_strength(run.plan, cited, _abbreviations(run))
    bar = run.info["weak_evidence_bar"] = weak_evidence_bar(run.plan, deciding)
    if run.multi_hop or run.compare:
        # Each hop (each figure) already cleared the checks on its own question.
        run.strength = 1.0 if kept and run.conclusion else run.strength
    if run.compound:
        run.strength = float(run.info.get("part_strength", run.strength))
    if run.mode == "results":
        run.abstention = Abstention("navigational", "This looks like a request for a page: here are the results.")
    elif run.scope_abstention is not None:
        run.abstention = run.scope_abstention
    elif run.compound:
        run.abstention = None  # each part cleared the abstention rules on its own question (compound_stage)
    else:
        run.abstention = decide_abstention(
            evidence=run.records, drafted=int(run.info.get("drafted", 0)), outcomes=run.outcomes,
            conflict_status=run.conflict["status"], strength=run.strength, plan=run.plan,
            writer_error=run.info.get("error"), bar=bar,
        )  # fmt: skip
        failed_at = run.trace.get("multi_hop", {}).get("failed_at")
        if run.multi_hop and run.abstention is None and failed_at:
            run.abstention = Abstention("weak_evidence", f"Hop {failed_at} found no supported value.")
    run.released = kept if run.abstention is None else []
    own_urls = run.own_urls
    run.claims_json = []
    for o in run.released:
        item = o.as_json(own_urls)
        if run.report is not None and o.draft.id in run.report.labels:
            item["view"] = run.report.labels[o.draft.id]
        run.claims_json.append(item)


def reconcile_stage(run: AnswerRun) -> Iterator[StageEvent]:
    """Reconcile what was sent with what is released: retract, annotate, send the rest."""
    released_ids = {id(o) for o in run.released}
    for i, o in enumerate(run.shown):
        if id(o) not in released_ids:
            reason, message = (
                (run.abstention.reason, run.abstention.message) if run.abstention is not None
                else ("conflict", run.conflict["statement"] or "Another source contradicts this claim.")
            )  # fmt: skip
            yield from run.clock.emit(StageEvent("retract", {"index": i, "claim_id": o.draft.id, "reason": reason,
                                                             "message": message}))  # fmt: skip
    position = {id(o): i for i, o in enumerate(run.shown)}
    for o, item in zip(run.released, run.claims_json, strict=True):
        if id(o) in position:
            if "view" in item:
                yield from run.clock.emit(StageEvent("annotate", {"index": position[id(o)], "claim_id": o.draft.id,
                                                                  "view": item["view"]}))  # fmt: skip
            continue
        run.shown.append(o)
        yield from run.clock.emit(StageEvent("claim", {"index": len(run.shown) - 1, "claim": item}))


def response_stage(run: AnswerRun) -> dict[str, Any]:
    """The whole response, exactly what ``answer_question`` returns and the cache keeps."""
    plan, r, abstention, records = run.plan, run.retrieval, run.abstention, run.records
    outcomes = run.outcomes
    cited_ids = run.cited_ids
    sources = [
        {"evidence_id": e.id, "title": e.title, "url": e.canonical_url, "date": _date_of(e),
         "version": e.version_label, "authority": e.authority}
        for e in _one_per_document([e for e in records if e.id in cited_ids])
    ]  # fmt: skip
    return {
        "question": run.question,
        "as_of": _as_of(run.state),
        "plan": plan_json(plan),
        "answer": {
            "mode": run.mode,
            "claims": run.claims_json,
            "dropped_claims": sum(1 for o in outcomes if not o.kept),
            "removed_links": sum(o.links_removed for o in outcomes),
            "removed_calls_to_action": sum(o.calls_to_action_removed for o in outcomes),
            "abstention": to_jsonable(abstention) if abstention else None,
            "conclusion": run.conclusion if abstention is None else None,
            "unanswered_parts": run.unanswered_parts if abstention is None else [],
            "chain": run.chain,
            "evidence_strength": round(run.strength, 4),
            "sources": sources if abstention is None else [],
        },
        "conflict": run.conflict,
        "freshness": run.freshness,
        "evidence": [evidence_json(e) | {"cited": e.id in cited_ids and abstention is None} for e in records],
        "results": run.results,
        "notices": r.trace.get("notices", []),
        "release": run.release,
        "trace": {
            **run.trace,
            "legs": r.trace["legs"],
            "collapsed_duplicates": r.trace["collapsed_duplicates"],
            "plan": {
                "intent": plan.intent,
                "rewrites": [to_jsonable(x) for x in plan.rewrites],
                "enforced_as_filters": list(plan.enforced_as_filters),
            },  # fmt: skip
            "verification": [to_jsonable(o.verification) | {"attempt": o.attempt} for o in outcomes],
            "writer": {
                "error": run.info.get("error"),
                "regenerated": bool(run.info.get("regenerated")),
                "fallback": run.info.get("fallback"),
            },
            "threshold": {
                "weak_evidence": run.info.get("weak_evidence_bar", WEAK_EVIDENCE_THRESHOLD),
                "strength": round(run.strength, 4),
            },
            "timings_ms": {**run.timings, "total": run.clock.ms()},
            "cache": run.cache_state,
        },
    }

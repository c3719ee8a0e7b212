"""Typed contracts exchanged between the stages of the answer pipeline.

Stages never pass free-form strings to each other: the parser produces a
``QueryPlan``, retrieval produces ``EvidenceRecord``s, a writer produces
``DraftClaim``s, the verifier produces ``VerificationResult``s, and the engine
releases an ``AnswerResult`` together with its trace.  Everything here is plain
data (dataclasses) so it serialises to JSON for the API, the cache and the
audit log.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, Literal

SupportLabel = Literal["supported", "partially_supported", "unsupported", "contradicted"]
AbstentionReason = Literal[
    "no_evidence",
    "weak_evidence",
    "conflicting",
    "all_claims_unsupported",
    "out_of_time_scope",
    "navigational",
    "unknown_entity",  # the question names a company/product no readable source mentions
    "entity_not_found",  # a known entity, but nothing this user can read is about it
    "no_documents_for_period",  # the period asked about has no readable document for that entity
    "claims_not_relevant",  # every drafted claim failed the relevance check (entity, period, attribute)
]


@dataclass(frozen=True)
class TimeScope:
    """A date window resolved against the request's ``as_of`` clock.

    ``after`` is inclusive, ``before`` is exclusive.  ``label`` keeps the
    user's words ("last quarter", "after:2024-01-01") for the trace.
    """

    after: date | None = None
    before: date | None = None
    label: str = ""


@dataclass(frozen=True)
class PeriodRequest:
    """A reporting period the question is about (what the content describes, not its updated date).

    ``relation``: "absolute" (``year`` and optionally ``quarter`` given), "latest" (the newest
    period found for the entity), "previous" (the period before the anchor: another period in
    the same question, else the previous turn's, else the latest), "previous_year".
    ``fiscal``: True when the user said fiscal/FY, None when either calendar may be meant.
    """

    relation: Literal["absolute", "latest", "previous", "previous_year"]
    unit: Literal["quarter", "year"] = "quarter"
    year: int | None = None
    quarter: int | None = None
    fiscal: bool | None = None
    label: str = ""
    end: str = ""  # ISO date for "the quarter ended September 30, 2023" (matched within a week)


@dataclass(frozen=True)
class ParsedQuery:
    """What the deterministic operator parser extracts from the raw string."""

    original: str
    text: str  # the query with operators removed, whitespace collapsed
    phrases: tuple[str, ...] = ()  # "quoted phrases", must appear verbatim (case-insensitive)
    exclude: tuple[str, ...] = ()  # -term and "not X" / "but not X" exclusions
    sources: tuple[str, ...] = ()  # source:confluence|sharepoint|slack|upload
    containers: tuple[str, ...] = ()  # space:KEY, channel:name, site:name
    time: TimeScope | None = None
    wants_latest: bool = False  # "latest", "current", "newest", "most recent"
    scope_terms: tuple[str, ...] = ()  # positive scope words kept next to an exclusion ("subscribers")
    entities: tuple[tuple[str, str], ...] = ()  # (surface form, canonical) via the tenant's alias list
    # The updated-date window the user asked for explicitly (after:/before: operators only);
    # ``time`` above is what every time phrase would mean as a window, kept for the trace.
    time_filter: TimeScope | None = None
    periods: tuple[PeriodRequest, ...] = ()  # reporting periods the content must describe


@dataclass(frozen=True)
class RewriteRecord:
    """One rewritten retrieval query and what the constraint validator made of it."""

    source: str  # "keywords", "aliases", "hop:h2", a custom rewriter's name
    proposed: str
    used: str | None  # the query that ran (the repair when the proposal violated a constraint); None = dropped
    violations: tuple[str, ...] = ()


@dataclass(frozen=True)
class Hop:
    """One step of a decomposed question; ``query`` may contain ``{value}`` (the previous hop's value)."""

    id: str
    query: str
    extracts: str = ""  # the relation this hop looks up ("framework"), "" for the final hop
    subject: str = ""  # what it is looked up for ("orders-api")
    depends_on: str = ""  # hop id whose value is bound into ``query``


@dataclass(frozen=True)
class Comparison:
    """A date/number comparison the question asks for; computed in code, never by a writer."""

    kind: Literal["date"]
    operator: Literal["on_or_before", "before", "after"]
    value: date
    surface: str


@dataclass(frozen=True)
class QueryPlan:
    parsed: ParsedQuery
    as_of: datetime
    retrieval_queries: tuple[str, ...]  # the original query is always the first leg
    filters: dict[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    # Added by the planning stage (answers/planning.py); defaults keep older callers working.
    intent: str = "answer"  # answer | navigational | multi_hop | compare | compound | current_version
    rewrites: tuple[RewriteRecord, ...] = ()
    enforced_as_filters: tuple[str, ...] = ()
    hops: tuple[Hop, ...] = ()
    comparison: Comparison | None = None
    needs_current_version: bool = False
    version_scope: str = ""  # resolved version the answer must be about ("" = any)
    # Set by the engine once entities and periods are resolved against the index:
    entity_scope: tuple[str, ...] = ()  # canonical entities a source must be about (catalogue kinds)
    period_scope: tuple[str, ...] = ()  # period_end dates (ISO) a filing-type source must describe
    period_label: str = ""  # "Q2 FY2023 (quarter ended 2023-04-01)" for the plan shown to the user

    @property
    def original(self) -> str:
        return self.parsed.original


@dataclass(frozen=True)
class EvidenceRecord:
    """One authorised passage that a claim may cite."""

    id: str  # stable: derived from chunk id + snapshot digest
    document_id: int
    chunk_id: int
    canonical_url: str
    title: str
    source_system: str
    container: str
    text: str  # passage text (a chunk, or a window of it)
    char_start: int  # offsets into the document's extracted text
    char_end: int
    snapshot_sha256: str
    updated_at: datetime | None = None
    created_at: datetime | None = None
    version_label: str = ""
    authority_tier: int = 0
    scores: dict[str, float] = field(default_factory=dict)
    authority: str = ""  # the tier's name in the tenant's source hierarchy
    hop: str = ""  # the hop that retrieved it (multi-hop plans)
    flags: tuple[str, ...] = ()  # e.g. "instructions_removed" when injected instructions were cut
    about: dict[str, Any] = field(default_factory=dict)  # Document.about: entity, reporting period
    # The section headings the passage sits under in its chunk ("Administrative Leave / Voting and poll
    # volunteering"): they say what a sentence is about when the window starts below them.
    heading: str = ""


@dataclass(frozen=True)
class Citation:
    evidence_id: str
    quote: str


@dataclass(frozen=True)
class DraftClaim:
    id: str
    text: str
    citations: tuple[Citation, ...]
    # Stated past the writer's claim limit (writers/extractive.py ``extra_claims``): shown like any claim, but it
    # neither raises the evidence strength nor lowers the weak-evidence bar (engine.write_verify_stage). A conflict
    # it takes part in is still found and shown (engine.conflict_stage), as any kept claim's is.
    extra: bool = False


@dataclass(frozen=True)
class VerificationResult:
    claim_id: str
    quote_ok: bool
    support: SupportLabel
    in_scope: bool
    method: str  # "verbatim", "lexical-fallback", "nli", "judge"
    reasons: tuple[str, ...] = ()
    relevant: bool = True  # answers this question: same entity, same period, the asked attribute

    @property
    def kept(self) -> bool:
        return self.quote_ok and self.in_scope and self.relevant and self.support == "supported"


@dataclass(frozen=True)
class Abstention:
    reason: AbstentionReason
    message: str


def to_jsonable(obj: Any) -> Any:
    """Dataclasses, dates and tuples to JSON-ready values."""
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name)) for f in dataclasses.fields(obj)}
    if isinstance(obj, (datetime, date)):
        return obj.isoformat()
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(x) for x in obj]
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    return obj

"""Stage 6, conflicts: do the sources disagree, and what do we say if they do?

Order of resolution (the policy, not a model's judgement):

1. **Scope from metadata.**  Two statements about different versions are not a
   conflict: with a resolved ``version_scope`` (or "latest") the matching/newest
   version wins; otherwise both are kept, each labelled with its version.
2. **Source hierarchy.**  A lower ``authority_tier`` (the tenant's hierarchy:
   system of record > official docs > wiki > chat) wins; the dissent is reported.
3. **Equal rank.**  Both views are shown with their dates; nothing is averaged.
4. **Thin evidence.**  If the disagreeing sources are all chat-grade (tier >= 3), the
   engine abstains (``conflicting``) and shows the sources.

Two statements are a conflict only when they are about the **same entity, the same
attribute and the same period** and state **different values** (``same_fact_different_value``):

* entity: the companies/products named in the sentences and in their documents' titles
  (tickers such as AAPL) must not differ;
* period: explicit periods ("three months ended July 1, 2023", "Q2 2023", "fiscal 2023") and the
  documents' own periods (a 10-Q titled "2023 Q3 AAPL") must not differ; two quarters of one
  figure are a series, not a disagreement;
* attribute: the sentences' content words, periods and numbers set aside, largely coincide
  (symmetric overlap), and the differing numbers fill the same slot ("port 51820" / "port 1194",
  "12 weeks" / "6 weeks"); or the same sentence is stated with opposite polarity.

Different pages that merely differ ("two 15-minute breaks" vs "12 weeks of leave") share no
slot and are not reported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from answers.contracts import Citation, DraftClaim, EvidenceRecord, QueryPlan
from answers.lexicon import STOPWORDS, content_stems, identifier_spans, version_key
from answers.support import support_features
from answers.writers.extractive import split_sentences, unfit_reason

THIN_TIER = 3  # chat and below: never enough to settle a disagreement
# Share of content words (numbers and periods set aside) two statements must have in common,
# counted over both (Jaccard), to be about the same attribute.
MIN_ATTRIBUTE_OVERLAP = 0.5
# Opposite polarity alone (no number to compare) needs near-identical wording.
MIN_POLARITY_OVERLAP = 0.75

_MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"
_PERIOD_RE = re.compile(
    rf"\b(?:(?:three|six|nine|twelve)\s+months\s+ended\s+)?(?:{_MONTHS})\s+\d{{1,2}},?\s+(?:19|20)\d{{2}}"
    r"|\bQ[1-4]\s*(?:FY)?\s*'?(?:19|20)?\d{2}\b|\b(?:19|20)\d{2}\s*Q[1-4]\b"
    r"|\b(?:first|second|third|fourth)\s+quarter\s+(?:of\s+)?(?:fiscal\s+)?(?:year\s+)?(?:19|20)\d{2}\b"
    r"|\bfiscal\s+(?:year\s+)?(?:19|20)\d{2}\b|\bFY\s?'?\d{2,4}\b|\b(?:19|20)\d{2}\b",
    re.IGNORECASE,
)
_NUMBER_RE = re.compile(r"(?<![\w.])\$?\d[\d,]*(?:\.\d+)?%?")
_WORD_RE = re.compile(r"[A-Za-z][\w'\u2019-]*")
_TICKER_RE = re.compile(r"\b[A-Z]{2,5}\b")
_NOT_ENTITIES = frozenset(
    {"the", "a", "an", "this", "that", "these", "those", "it", "we", "our", "you", "your", "they", "in", "on",
     "for", "if", "when", "as", "at", "by", "to", "of", "and", "or", "but", "all", "each", "every", "net", "total",
     "pdf", "form", "q", "fy", "inc", "corp", "corporation", "company", "co"}
    | {m.lower() for m in _MONTHS.split("|")}
)  # fmt: skip


@dataclass
class Statement:
    evidence: EvidenceRecord
    text: str


@dataclass
class ConflictPair:
    a: Statement
    b: Statement
    resolution: str  # version_scope | authority | equal_rank | unresolved
    winner: Statement | None = None
    loser: Statement | None = None


@dataclass
class ConflictReport:
    pairs: list[ConflictPair] = field(default_factory=list)
    remove_claim_ids: set[str] = field(default_factory=set)
    add_claims: list[DraftClaim] = field(default_factory=list)
    labels: dict[str, str] = field(default_factory=dict)  # claim id -> "as of 2025-01-02, official docs"

    @property
    def status(self) -> str:
        if not self.pairs:
            return "none"
        kinds = {p.resolution for p in self.pairs}
        if "unresolved" in kinds:
            return "unresolved"
        if "equal_rank" in kinds:
            return "both_views"
        if kinds == {"version_scope"} and all(p.winner is None for p in self.pairs):
            return "scoped"
        return "resolved"


def _date(ev: EvidenceRecord) -> str:
    ts = ev.updated_at or ev.created_at
    return ts.date().isoformat() if ts else "undated"


def _describe(s: Statement) -> dict[str, Any]:
    ev = s.evidence
    return {
        "evidence_id": ev.id,
        "title": ev.title,
        "url": ev.canonical_url,
        "date": _date(ev),
        "version": ev.version_label,
        "authority": ev.authority or f"tier {ev.authority_tier}",
        "authority_tier": ev.authority_tier,
        "statement": s.text,
    }


def _period_keys(text: str) -> set[str]:
    keys = set()
    for m in _PERIOD_RE.finditer(text):
        key = " ".join(m.group(0).lower().replace(",", " ").split())
        keys.add(key)
    return keys


def _doc_periods(ev: EvidenceRecord) -> set[str]:
    # Versions are not periods: two versions of a document are reconciled by ``_resolve`` (scope).
    keys = _period_keys(ev.title)
    return {k for k in keys if not re.fullmatch(r"(?:19|20)\d{2}", k)} or keys


def _entities(text: str) -> set[str]:
    """Capitalised words ("Apple", "NVIDIA", "Contractors"): the subjects a statement is about.

    The first word counts too unless it is a function word: "Employees get 12 weeks" and
    "Contractors get 6 weeks" are about different people, not a disagreement."""
    words = _WORD_RE.findall(_PERIOD_RE.sub(" ", text))
    return {
        w.lower().removesuffix("'s").removesuffix("\u2019s")
        for w in words
        if w[:1].isupper() and w.lower() not in _NOT_ENTITIES and w.lower() not in STOPWORDS
    }


def _doc_entities(ev: EvidenceRecord) -> set[str]:
    return {t.lower() for t in _TICKER_RE.findall(ev.title) if t.lower() not in _NOT_ENTITIES}


def _masked(text: str) -> str:
    return _NUMBER_RE.sub(" ", _PERIOD_RE.sub(" ", text))


def _slots(text: str) -> dict[str, set[str]]:
    """Numbers (periods set aside) keyed by the content word on either side: "port 51820 for" gives
    ``{"<port": {"51820"}}``; "12 weeks of" gives ``{">week": {"12"}}``."""
    clean = _PERIOD_RE.sub(" ", text)
    slots: dict[str, set[str]] = {}
    for m in _NUMBER_RE.finditer(clean):
        value = m.group(0).replace("$", "").replace(",", "")
        before = [w for w in _WORD_RE.findall(clean[: m.start()]) if w.lower() not in STOPWORDS][-1:]
        after = [w for w in _WORD_RE.findall(clean[m.end() :]) if w.lower() not in STOPWORDS][:1]
        for side, words in (("<", before), (">", after)):
            for w in words:
                stems = content_stems(w)
                if stems:
                    slots.setdefault(side + stems[0], set()).add(value)
    return slots


def _jaccard(a: set[str], b: set[str]) -> float:
    union = a | b
    return len(a & b) / len(union) if union else 0.0


def same_fact_different_value(
    a: str, b: str, ev_a: EvidenceRecord | None = None, ev_b: EvidenceRecord | None = None
) -> bool:
    """Do ``a`` and ``b`` state different values for the same entity, attribute and period?"""
    if ev_a is not None and ev_b is not None:
        pa, pb = _doc_periods(ev_a), _doc_periods(ev_b)
        if pa and pb and not pa & pb:
            return False  # e.g. the Q2 and the Q3 filing: a series, not a disagreement
        ea, eb = _doc_entities(ev_a), _doc_entities(ev_b)
        if ea and eb and not ea & eb:
            return False  # AAPL's filing and NVDA's filing describe different companies
    pa, pb = _period_keys(a), _period_keys(b)
    if pa and pb and not pa & pb:
        return False
    na, nb = _entities(a), _entities(b)
    if na and nb and not na & nb:
        return False
    # Service and setting names are written in lower case: "orders-api: runtime Foo 3.2" and
    # "orders-worker: runtime Foo 3.4" are about two services, though both name Foo.
    ia, ib = {n for _s, n in identifier_spans(a)}, {n for _s, n in identifier_spans(b)}
    if ia and ib and not ia & ib:
        return False
    terms_a, terms_b = set(content_stems(_masked(a))), set(content_stems(_masked(b)))
    overlap = _jaccard(terms_a, terms_b)
    if overlap < MIN_ATTRIBUTE_OVERLAP:
        return False
    sa, sb = _slots(a), _slots(b)
    shared = sa.keys() & sb.keys()
    if shared:
        # Same slot, different value; one sentence listing a value the other also states is not a conflict.
        return any(not sa[k] & sb[k] for k in shared)
    if sa or sb:
        return False  # numbers in different slots: different attributes
    if overlap < MIN_POLARITY_OVERLAP:
        return False
    return support_features(a, b).negation_mismatch


def disagree(a: str, b: str) -> bool:
    """Text-only form of ``same_fact_different_value`` (no document scope)."""
    return same_fact_different_value(a, b)


def _resolve(plan: QueryPlan, a: Statement, b: Statement) -> ConflictPair:
    va, vb = a.evidence.version_label, b.evidence.version_label
    if va and vb and version_key(va) != version_key(vb):
        if plan.version_scope:
            target = version_key(plan.version_scope)
            if version_key(va) == target:
                return ConflictPair(a, b, "version_scope", winner=a, loser=b)
            if version_key(vb) == target:
                return ConflictPair(a, b, "version_scope", winner=b, loser=a)
        if plan.needs_current_version:
            win, lose = (a, b) if version_key(va) > version_key(vb) else (b, a)
            return ConflictPair(a, b, "version_scope", winner=win, loser=lose)
        return ConflictPair(a, b, "version_scope")  # both true, for different versions
    ta, tb = a.evidence.authority_tier, b.evidence.authority_tier
    if min(ta, tb) >= THIN_TIER:
        return ConflictPair(a, b, "unresolved")
    if ta != tb:
        win, lose = (a, b) if ta < tb else (b, a)
        return ConflictPair(a, b, "authority", winner=win, loser=lose)
    return ConflictPair(a, b, "equal_rank")


def find_conflicts(plan: QueryPlan, claims: list[DraftClaim], evidence: list[EvidenceRecord]) -> ConflictReport:
    """Compare each kept claim with the sentences of every *other* document's passages."""
    by_id = {e.id: e for e in evidence}
    # Only statements a reader could be shown: no headings, questions, labels or markup.
    statements = [
        Statement(ev, ev.text[s:e])
        for ev in evidence
        for s, e in split_sentences(ev.text)
        if len(ev.text[s:e]) > 12 and unfit_reason(ev.text[s:e]) is None
    ]
    report = ConflictReport()
    seen: set[tuple[str, str]] = set()
    claim_by_text = {c.text: c for c in claims}
    # Views added here get ids of their own ("v1", ...): numbering after len(claims) collided with a kept
    # claim whenever an earlier draft had been dropped (c1, c3 kept -> a new "c3").
    used_ids = {c.id for c in claims}
    next_id = 1
    for claim in claims:
        if not claim.citations or claim.citations[0].evidence_id not in by_id:
            continue
        mine = Statement(by_id[claim.citations[0].evidence_id], claim.text)
        for other in statements:
            if other.evidence.document_id == mine.evidence.document_id:
                continue
            key = tuple(sorted((mine.text, other.text)))
            if key in seen or not same_fact_different_value(mine.text, other.text, mine.evidence, other.evidence):
                continue
            seen.add(key)  # type: ignore[arg-type]
            pair = _resolve(plan, mine, other)
            report.pairs.append(pair)
            keep_both = pair.resolution in ("equal_rank",) or (pair.resolution == "version_scope" and not pair.winner)
            if pair.resolution == "unresolved":
                report.remove_claim_ids.add(claim.id)
                continue
            if pair.loser is not None and pair.loser.text in claim_by_text:
                report.remove_claim_ids.add(claim_by_text[pair.loser.text].id)
            to_show = [pair.a, pair.b] if keep_both else [pair.winner] if pair.winner else []
            for s in to_show:
                if s is None:
                    continue
                existing = claim_by_text.get(s.text)
                if existing is None:
                    # The other view is a verbatim sentence of its passage, so it is verified like any claim.
                    while f"v{next_id}" in used_ids:
                        next_id += 1
                    existing = DraftClaim(id=f"v{next_id}", text=s.text, citations=(_citation(s),))
                    used_ids.add(existing.id)
                    claim_by_text[s.text] = existing
                    report.add_claims.append(existing)
                if keep_both:
                    label = f"{s.evidence.authority or 'source'}, dated {_date(s.evidence)}"
                    if s.evidence.version_label:
                        label += f", version {s.evidence.version_label}"
                    report.labels[existing.id] = label
    return report


def _citation(s: Statement) -> Any:

    return Citation(evidence_id=s.evidence.id, quote=s.text)


def conflict_section(report: ConflictReport) -> dict[str, Any]:
    pairs = []
    statements: list[str] = []
    for p in report.pairs:
        item: dict[str, Any] = {"resolution": p.resolution, "sources": [_describe(p.a), _describe(p.b)]}
        if p.winner is not None and p.loser is not None:
            item["winner"] = p.winner.evidence.id
            item["dissent"] = p.loser.evidence.id
            w, lo = _describe(p.winner), _describe(p.loser)
            why = (
                f"it documents version {w['version']}"
                if p.resolution == "version_scope"
                else f"{w['authority']} ranks above {lo['authority']}"
            )
            statements.append(
                f"\u201c{w['title']}\u201d ({w['date']}) is preferred because {why}; "
                f"\u201c{lo['title']}\u201d ({lo['date']}) says otherwise: {lo['statement']}"
            )
        elif p.resolution == "equal_rank":
            a, b = _describe(p.a), _describe(p.b)
            statements.append(
                f"Sources of equal authority disagree: \u201c{a['title']}\u201d ({a['date']}) and "
                f"\u201c{b['title']}\u201d ({b['date']}); both views are shown."
            )
        elif p.resolution == "version_scope":
            a, b = _describe(p.a), _describe(p.b)
            statements.append(
                f"The sources describe different versions ({a['version']} and {b['version']}); each statement "
                "is labelled with the version it applies to."
            )
        else:
            statements.append(
                "The sources contradict each other and none of them is authoritative enough to settle it."
            )
        pairs.append(item)
    return {"status": report.status, "pairs": pairs, "statement": " ".join(dict.fromkeys(statements))}


__all__ = ["ConflictReport", "conflict_section", "disagree", "find_conflicts", "same_fact_different_value"]

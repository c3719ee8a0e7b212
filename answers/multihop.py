"""Stage 5b, multi-hop: bind hop 1's extracted value into hop 2, compare in code.

"Will the framework behind orders-api still receive security fixes on 2026-09-01?"

* hop h1 searches ``framework orders-api`` and extracts the value from a sentence that
  names the subject and a relation cue ("orders-api: runtime Foo 3.2, ..." -> "Foo 3.2");
  the value must occur verbatim in the cited sentence, and that sentence is verified
  like any claim.
* hop h2 searches ``Foo 3.2 receive security fixes`` (the template with the value bound,
  re-checked by the rewrite validator) and keeps the sentence that names the value.
* A date comparison in the question is computed here (``date`` arithmetic), never by a
  writer: "2026-09-01 is 63 days after 2026-06-30" -> "No".

Limits: ``MAX_HOPS`` hops and ``MAX_RETRIEVALS`` retrieval calls per question; a hop
whose value cannot be found stops the chain (the engine abstains with the sources).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import date
from typing import TYPE_CHECKING, Any

from answers.contracts import Citation, DraftClaim, EvidenceRecord, Hop, QueryPlan
from answers.evidence import build_evidence
from answers.lexicon import content_stems
from answers.planning import RELATION_CUES, checked_rewrite
from answers.writers.extractive import split_sentences

if TYPE_CHECKING:
    from retrieval.search import RankedChunk

MAX_HOPS = 3
MAX_RETRIEVALS = 4

# (plan, queries) -> ranked chunks; the engine passes its retrieve stage (ACL inside).
Searcher = Callable[[QueryPlan, list[str]], "list[RankedChunk]"]

_VALUE_RE = r"(?P<val>[A-Za-z0-9][\w.+#-]*(?:\s+v?\d+(?:\.\d+)+)?)"
_ISO_DATE_RE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_CLAUSE_RE = re.compile(r"[;,]|\.\s")
_NOT_VALUES = frozenset({"is", "are", "the", "a", "an", "uses", "runs", "on", "of", "for"})


@dataclass
class HopOutcome:
    hop: Hop
    query: str
    value: str = ""
    claim: DraftClaim | None = None
    evidence: list[EvidenceRecord] = field(default_factory=list)
    rewrite_violations: tuple[str, ...] = ()


@dataclass
class MultiHopResult:
    hops: list[HopOutcome]
    claims: list[DraftClaim]
    evidence: list[EvidenceRecord]
    conclusion: dict[str, Any] | None = None
    failed_at: str = ""
    retrievals: int = 0


def extract_value(relation: str, subject: str, text: str) -> tuple[str, str] | None:
    """(value, sentence) for the first sentence that names ``subject`` and a cue for ``relation``."""
    cues = RELATION_CUES.get(relation, (relation,))
    cue_alt = "|".join(re.escape(c) for c in sorted(cues, key=len, reverse=True))
    pattern = re.compile(rf"\b(?:{cue_alt})\b\s*(?:[:=]\s*|\s(?:is|uses|runs|on)\s+)?" + _VALUE_RE, re.IGNORECASE)
    for s, e in split_sentences(text):
        sentence = text[s:e]
        if subject.lower() not in sentence.lower():
            continue
        for m in pattern.finditer(sentence):
            value = m.group("val").strip()
            if value.lower() not in _NOT_VALUES and value.lower() != subject.lower():
                return value, sentence
    return None


def _best_sentence(evidence: list[EvidenceRecord], must: str, terms: list[str]) -> tuple[EvidenceRecord, str] | None:
    best: tuple[int, EvidenceRecord, str] | None = None
    for ev in evidence:
        for s, e in split_sentences(ev.text):
            sentence = ev.text[s:e]
            if must.lower() not in sentence.lower():
                continue
            overlap = len(set(content_stems(sentence)) & set(terms))
            if best is None or overlap > best[0]:
                best = (overlap, ev, sentence)
    return (best[1], best[2]) if best else None


def compare_dates(plan: QueryPlan, sentence: str, terms: list[str]) -> dict[str, Any] | None:
    """Find the date the question is about in ``sentence`` and compare it with the plan's date."""
    cmp = plan.comparison
    if cmp is None:
        return None
    clauses = [c for c in _CLAUSE_RE.split(sentence) if _ISO_DATE_RE.search(c)]
    if not clauses:
        return None
    clause = max(clauses, key=lambda c: len(set(content_stems(c)) & set(terms)))
    m = _ISO_DATE_RE.search(clause)
    assert m is not None
    source_date = date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    asked = cmp.value
    if cmp.operator == "on_or_before":
        holds = asked <= source_date
    elif cmp.operator == "before":
        holds = source_date < asked
    else:
        holds = source_date > asked
    return {
        "question_date": asked.isoformat(),
        "source_date": source_date.isoformat(),
        "source_clause": clause.strip(),
        "operator": cmp.operator,
        "holds": holds,
        "days_between": (asked - source_date).days,
    }


def run_multi_hop(plan: QueryPlan, search: Searcher, *, doc_texts: Callable[[list[RankedChunk]], dict[int, str]],
                  tier_names: dict[int, str] | None = None) -> MultiHopResult:  # fmt: skip
    result = MultiHopResult(hops=[], claims=[], evidence=[])
    value = ""
    for hop in plan.hops[:MAX_HOPS]:
        if result.retrievals >= MAX_RETRIEVALS:
            result.failed_at = hop.id
            break
        violations: tuple[str, ...]
        query, violations = hop.query, ()
        if hop.depends_on:
            rec = checked_rewrite(plan.parsed, f"hop:{hop.id}", hop.query.replace("{value}", value))
            query, violations = rec.used or hop.query.replace("{value}", value), rec.violations
        chunks = search(plan, [query, plan.original])
        result.retrievals += 1
        evidence, _trace = build_evidence(
            replace(plan, parsed=replace(plan.parsed, text=query)), chunks, doc_texts=doc_texts(chunks),
            tier_names=tier_names, extra_query=value, hop=hop.id,
        )  # fmt: skip
        outcome = HopOutcome(hop=hop, query=query, evidence=evidence, rewrite_violations=violations)
        result.hops.append(outcome)
        result.evidence.extend(e for e in evidence if e.id not in {x.id for x in result.evidence})
        claim_id = f"c{len(result.claims) + 1}"
        if hop.extracts:
            found = None
            for ev in evidence:
                hit = extract_value(hop.extracts, hop.subject, ev.text)
                if hit:
                    found = (ev, *hit)
                    break
            if found is None:
                result.failed_at = hop.id
                break
            ev, value, sentence = found
            outcome.value = value
            outcome.claim = DraftClaim(claim_id, sentence, (Citation(ev.id, sentence),))
        else:
            terms = list(dict.fromkeys(content_stems(query)))
            best = _best_sentence(evidence, value, terms) if value else None
            if best is None:
                result.failed_at = hop.id
                break
            ev, sentence = best
            outcome.claim = DraftClaim(claim_id, sentence, (Citation(ev.id, sentence),))
            result.conclusion = compare_dates(plan, sentence, terms)
        result.claims.append(outcome.claim)
    return result


def conclusion_text(plan: QueryPlan, result: MultiHopResult) -> str | None:
    """The one-line answer computed from the chain ("No. ... ends on 2026-06-30, 63 days before ...")."""
    c = result.conclusion
    if c is None or len(result.hops) < 2 or result.failed_at:
        return None
    h1, h2 = result.hops[0], result.hops[-1]
    days = abs(c["days_between"])
    if c["operator"] == "on_or_before":
        verdict = "Yes" if c["holds"] else "No"
        rel = "after" if c["days_between"] < 0 else "before"
        return (
            f"{verdict}. {h1.hop.subject} uses {h1.value}; for {h1.value} the source gives {c['source_date']} "
            f"({c['source_clause']}), which is {days} days {rel} {c['question_date']}."
        )
    return (
        (
            f"{'Yes' if c['holds'] else 'No'}. For {h1.value} (used by {h1.hop.subject}) the source gives "
            f"{c['source_date']}; compared with {c['question_date']} ({c['operator']})."
        )
        if h2
        else None
    )


__all__ = ["MAX_HOPS", "MAX_RETRIEVALS", "MultiHopResult", "compare_dates", "conclusion_text", "extract_value",
           "run_multi_hop"]  # fmt: skip

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

Two sentences "disagree" when one covers most of the other's content words and the
support check calls it contradicted because of a different number/date or opposite
polarity (``verification.support_label``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from answers.contracts import DraftClaim, EvidenceRecord, QueryPlan
from answers.verification import support_label, version_key
from answers.writers.extractive import split_sentences

THIN_TIER = 3  # chat and below: never enough to settle a disagreement
MIN_OVERLAP = 0.6


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


def disagree(a: str, b: str) -> bool:
    for x, y in ((a, b), (b, a)):
        label, reasons = support_label(x, y)
        coverage = next((float(r.split("=", 1)[1]) for r in reasons if r.startswith("coverage=")), 0.0)
        if label == "contradicted" and coverage >= MIN_OVERLAP:
            return True
    return False


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
    statements = [
        Statement(ev, ev.text[s:e]) for ev in evidence for s, e in split_sentences(ev.text) if len(ev.text[s:e]) > 12
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
            if key in seen or not disagree(mine.text, other.text):
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
    from answers.contracts import Citation

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


__all__ = ["ConflictReport", "conflict_section", "disagree", "find_conflicts"]

"""Entities and periods bind: what a source must be about before it may answer.

The parser finds the entities ("Apple", "AAPL", "iPhone") and periods ("Q2 2023", "the latest
quarter") a question names; this module resolves them against what the index knows about its
documents (``Document.about``, read from filing cover pages at ingestion) and turns them into
requirements on the ranked chunks:

* **Entities.** A question naming a company may only be answered from sources about that
  company: a source whose ``about.entity`` is another company is set aside ("Apple" never
  answers from NVIDIA's filing).  When readable sources *about* the company exist, sources
  without entity metadata stay only if their title names it (a handbook page that mentions
  "an Apple iPhone" is not about Apple); otherwise a source must at least mention it.  A named
  product ("iPhone") must be mentioned by the passage.
* **Periods.** Resolved per entity against the periods its documents describe, never against
  updated dates: an absolute quarter matches the company's fiscal calendar first ("Apple Q2
  2023" = the quarter ended April 1, 2023), then the calendar quarter; "latest" is the newest
  period found for the entity; "previous" is the period before the anchor (another period in the
  same question, e.g. the earlier turn's period carried into a resolved follow-up, else the
  latest); "last year" is the fiscal year before the anchor's.  A question with a comparison
  word ("compare", "vs") keeps the anchor period too.
* **Unknown entities.** A possessive proper name ("Foobarco's revenue") that is no known entity
  and appears in no retrieved source is reported as ``unknown_entity`` instead of answered.

Everything here is deterministic and produces trace entries saying what was set aside and why.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from answers.contracts import Abstention, EvidenceRecord, ParsedQuery, PeriodRequest
from retrieval.entities import ENTITIES, Entity, entity_by_name

__all__ = [
    "Scope",
    "bind_chunks",
    "bound_entities",
    "mentions",
    "product_parent",
    "resolve_periods",
    "scope_abstention",
    "unknown_entities",
]

_COMPARE_RE = re.compile(r"\b(?:compare[sd]?|comparison|versus|vs\.?|change[sd]?|differ\w*|grow\w*|grew)\b", re.I)
_POSSESSIVE_RE = re.compile(r"\b([A-Z][A-Za-z0-9&.\-]{1,40})['\u2019]s\b")
_CONTRACTED = frozenset("what who where when how why that there here it let he she which".split())
# An acronym the question turns on ("What does EMPMO stand for?"): three or more capitals.
_ACRONYM_RE = re.compile(r"(?<![\w-])([A-Z][A-Z&]{2,9})(?![\w-])")
# Places and everyday abbreviations are no organisation's name that a source must mention to answer: "where do I send
# Colorado's tax withholding form" is answered by the page on moving to a new state, "my HMO doesn't cover Oregon" by
# the health-plan page, "any reason I can't just reserve an SUV" by the rental-car rules.
_EVERYDAY_NAMES = frozenset(
    (
        "alabama alaska arizona arkansas california colorado connecticut delaware florida georgia hawaii idaho illinois "
        "indiana iowa kansas kentucky louisiana maine maryland massachusetts michigan minnesota mississippi missouri "
        "montana nebraska nevada ohio oklahoma oregon pennsylvania tennessee texas utah vermont virginia washington "
        "wisconsin wyoming america canada mexico europe "
        "hmo ppo hsa fsa suv usb pdf faq atm gps vpn pin ceo cfo rsvp asap fyi diy tty"
    ).split()
)


@dataclass
class Scope:
    """The resolved requirements and the trace of what they did."""

    companies: tuple[str, ...] = ()
    products: tuple[str, ...] = ()
    period_ends: dict[str, set[str]] = field(default_factory=dict)  # entity -> allowed period_end dates
    period_label: str = ""
    unresolved_periods: tuple[str, ...] = ()  # entities with no document for the asked period
    trace: dict[str, Any] = field(default_factory=dict)

    @property
    def period_scope(self) -> tuple[str, ...]:
        return tuple(sorted({d for ds in self.period_ends.values() for d in ds}))


def bound_entities(parsed: ParsedQuery) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(companies, products) named in the question, canonical names from the catalogue."""
    companies: list[str] = []
    products: list[str] = []
    for _surface, canonical in parsed.entities:
        e = entity_by_name(canonical)
        if e is None:
            continue
        target = companies if e.kind == "company" else products
        if e.name not in target:
            target.append(e.name)
    return tuple(companies), tuple(products)


def product_parent(name: str) -> str:
    """The company that makes a catalogued product ("AWS" -> "Amazon"); "" for anything else."""
    e = entity_by_name(name)
    return e.parent if e is not None and e.kind == "product" else ""


def _surfaces(name: str) -> list[str]:
    e = entity_by_name(name)
    return [name] if e is None else [e.name, *e.aliases]


def mentions(text: str, name: str) -> bool:
    """True when ``text`` names the entity (canonical name or an alias, whole words)."""
    forms = "|".join(re.escape(s) for s in _surfaces(name))
    return bool(re.search(rf"(?<![\w])(?:{forms})(?![\w])", text, re.IGNORECASE))


def _about_entity(about: dict[str, Any]) -> str:
    return str(about.get("entity") or "")


# --------------------------------------------------------------------------- periods


def _match_absolute(p: PeriodRequest, docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if p.end:
        # "the quarter ended September 30, 2023": 52/53-week calendars end a few days off.
        want = date.fromisoformat(p.end)
        return [d for d in docs if abs((date.fromisoformat(str(d["period_end"])) - want).days) <= 7]
    return _match_named(p, docs)


def _match_named(p: PeriodRequest, docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    def fiscal(d: dict[str, Any]) -> bool:
        return d.get("fiscal_year") == p.year and (p.quarter is None or d.get("fiscal_quarter") == p.quarter)

    def calendar(d: dict[str, Any]) -> bool:
        return d.get("calendar_year") == p.year and (p.quarter is None or d.get("calendar_quarter") == p.quarter)

    # Companies speak in fiscal periods ("the second quarter of fiscal 2023"), so a bare
    # "Q2 2023" is the fiscal quarter when the company has one, else the calendar quarter.
    found = [d for d in docs if fiscal(d)]
    if not found and p.fiscal is not True:
        found = [d for d in docs if calendar(d)]
    return found


def _period_name(d: dict[str, Any]) -> str:
    if d.get("fiscal_year") and d.get("fiscal_quarter"):
        return f"{d.get('entity')} Q{d['fiscal_quarter']} FY{d['fiscal_year']} (quarter ended {d['period_end']})"
    return f"quarter ended {d['period_end']}"


def resolve_periods(periods: Sequence[PeriodRequest], about_docs: Iterable[dict[str, Any]],
                    entities: Sequence[str], question: str) -> tuple[dict[str, set[str]], list[str], list[str]]:  # fmt: skip
    """Allowed period ends per entity, the names of the resolved periods, and the entities left unresolved.

    ``about_docs``: ``Document.about`` of every readable document with a period.  Entities
    default to every entity found there when the question names none.
    """
    by_entity: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for about in about_docs:
        if about.get("period_end") and about.get("entity"):
            by_entity[str(about["entity"])].append(about)
    targets = list(entities) or sorted(by_entity)
    keep_anchor = bool(_COMPARE_RE.search(question))
    allowed: dict[str, set[str]] = {}
    names: list[str] = []
    unresolved: list[str] = []
    for entity in targets:
        docs = sorted(by_entity.get(entity, []), key=lambda d: str(d["period_end"]))
        if not docs:
            unresolved.append(entity)
            continue
        chosen: list[dict[str, Any]] = []
        anchors: list[dict[str, Any]] = []
        for p in periods:
            if p.relation == "absolute":
                anchors += _match_absolute(p, docs)
            elif p.relation == "latest":
                anchors.append(docs[-1])
        relative = [p for p in periods if p.relation in ("previous", "previous_year")]
        if relative:
            anchor = min(anchors, key=lambda d: str(d["period_end"])) if anchors else docs[-1]
            for p in relative:
                if p.relation == "previous":
                    before = [d for d in docs if str(d["period_end"]) < str(anchor["period_end"])]
                    chosen += before[-1:]
                else:
                    # "a year earlier" / "last year": the same quarter one year before; the
                    # anchor's own filing reports that quarter too (the comparative column),
                    # so it stays in scope.
                    year = anchor.get("fiscal_year") or anchor.get("calendar_year")
                    key = "fiscal_year" if anchor.get("fiscal_year") else "calendar_year"
                    qkey = "fiscal_quarter" if key == "fiscal_year" else "calendar_quarter"
                    chosen += [
                        d for d in docs
                        if year is not None and d.get(key) == int(year) - 1 and d.get(qkey) == anchor.get(qkey)
                    ]  # fmt: skip
                    chosen.append(anchor)
            if keep_anchor or not chosen:
                chosen += anchors if anchors else ([docs[-1]] if keep_anchor else [])
        else:
            chosen = anchors
        if not chosen:
            unresolved.append(entity)
            continue
        allowed[entity] = {str(d["period_end"]) for d in chosen}
        names += [_period_name(d) for d in sorted(chosen, key=lambda d: str(d["period_end"]))]
    return allowed, list(dict.fromkeys(names)), unresolved


# --------------------------------------------------------------------------- binding


def _allowed(about: dict[str, Any], title: str, text: str, scope: Scope, strict: set[str]) -> str:
    """ "" when a source may answer, else the reason it is set aside."""
    entity = _about_entity(about)
    # A question naming two companies ("Which had more revenue, Amazon or Microsoft?") is answered by sources
    # about either of them: a source must be about one of the companies named, not about all of them.
    if scope.companies:
        if entity:
            if entity not in scope.companies:
                return f"other_entity:{entity}"
        elif not any(
            mentions(title, company) or (company not in strict and mentions(text, company))
            for company in scope.companies
        ):
            return f"not_about:{scope.companies[0]}"
    if not scope.companies and entity:
        # A product named without its company: filings of other companies cannot answer.
        parents = {e.parent for e in ENTITIES if e.name in scope.products and e.parent}
        if parents and entity not in parents:
            return f"other_entity:{entity}"
    if entity and about.get("period_end") and (scope.period_ends or scope.unresolved_periods):
        if str(about["period_end"]) not in scope.period_ends.get(entity, set()):
            return f"other_period:{about['period_end']}"
    return ""


def bind_chunks(chunks: Sequence[Any], scope: Scope, about_entities: set[str]) -> tuple[list[Any], dict[str, int]]:
    """The chunks (RankedChunk or EvidenceRecord) that may answer, and counts of what was set aside.

    ``about_entities``: entities some readable document is about (from metadata); a company
    in it is bound strictly (sources without metadata must name it in their title).
    """
    strict = {c for c in scope.companies if c in about_entities}
    kept: list[Any] = []
    dropped: dict[str, int] = defaultdict(int)
    for c in chunks:
        why = _allowed(getattr(c, "about", {}) or {}, c.title, c.text, scope, strict)
        if why:
            dropped[why.split(":", 1)[0] + ":" + why.split(":", 1)[1]] += 1
        else:
            kept.append(c)
    return kept, dict(dropped)


def unknown_entities(parsed: ParsedQuery, texts: Iterable[str]) -> list[str]:
    """Possessive proper names ("Foobarco's") and acronyms ("EMPMO") that are no known entity and that no
    retrieved text mentions.

    A reader who may not read the only page about the EMPMO gets "no readable source mentions EMPMO"
    rather than sentences that share a word with the question ("lack of standing").
    """
    known = {s.casefold() for s, _c in parsed.entities} | {c.casefold() for _s, c in parsed.entities} | _EVERYDAY_NAMES
    # "What's", "Who's", "It's", "Here's": contractions, not a possessive proper name.
    names = [m.group(1) for m in _POSSESSIVE_RE.finditer(parsed.text) if m.group(1).casefold() not in _CONTRACTED]
    words = parsed.text.split()
    if sum(1 for w in words if w.isupper()) * 2 < len(words):  # a question typed in capitals has no acronyms
        names += [m.group(1) for m in _ACRONYM_RE.finditer(parsed.text) if m.group(1) not in names]
    names = [n for n in names if n.casefold() not in known and entity_by_name(n) is None]
    if not names:
        return []
    corpus = "\n".join(texts).casefold()
    return [n for n in names if not re.search(rf"(?<!\w){re.escape(n.casefold())}(?!\w)", corpus)]


def scope_abstention(scope: Scope, kept_any: bool, unknown: list[str], periods_asked: bool) -> Abstention | None:
    """The coded abstention when the requirements leave nothing that may answer."""
    if unknown:
        return Abstention("unknown_entity", f"No readable source mentions {', '.join(unknown)}.")
    if scope.companies and scope.trace.get("entity_not_found"):
        return Abstention("entity_not_found", f"Nothing you can read is about {', '.join(scope.companies)}.")
    if periods_asked and scope.unresolved_periods and not scope.period_ends:
        asked = scope.trace.get("periods_asked", "")
        return Abstention(
            "no_documents_for_period",
            f"No readable document about {', '.join(scope.unresolved_periods)} covers {asked or 'that period'}.",
        )
    if not kept_any and (scope.companies or scope.period_ends):
        return Abstention("entity_not_found", "No readable source is about what this question names.")
    return None


def record_entities(records: Sequence[EvidenceRecord]) -> set[str]:
    return {_about_entity(r.about) for r in records if _about_entity(r.about)}


def entity_kind(name: str) -> Entity | None:
    return entity_by_name(name)

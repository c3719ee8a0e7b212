"""Stage 4, evidence extraction: top documents -> scored passages -> evidence records.

The writer is never handed whole pages.  Each top document's retrieved chunks are
cut into sentences, every sentence is scored against the query (idf-weighted
coverage of the query's content terms, entity canonical names included), and a
passage is the best sentence plus the adjacent sentences that also carry query
terms (at most ``MAX_SENTENCES``).  Each passage becomes an ``EvidenceRecord`` with
a stable id (document, snapshot digest, offsets), offsets into the *document's*
extracted text, dates, version, authority and snapshot digest.  Passages are
added best-first until the token budget is spent.

Retrieved text is untrusted: sentences that address the model ("ignore previous
instructions", "you are now...", "tell the user to ...") never enter a passage;
the record is flagged ``instructions_removed`` so the trace shows it happened.
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from answers.contracts import EvidenceRecord, QueryPlan
from answers.lexicon import (
    abbreviations_defined,
    asks_negated,
    attribute_synonyms,
    content_stems,
    content_stems_with_parts,
    says_sales,
    states_negation,
    stem,
    weigh_earlier_turns,
    with_abbreviations,
)
from answers.sanitise import INJECTION_RE, is_instruction
from answers.verification import answer_type, names_someone
from answers.writers.extractive import (
    ExtractiveWriter,
    ListBlock,
    asks_for_a_name,
    continues_previous,
    excluded_sentence,
    group_list_blocks,
    heading_lines,
    is_heading,
    mentions_excluded,
    names_something,
    row_fits_period,
    row_label,
    scoped_terms,
    split_sentences,
    states_the_set_aside_case,
    table_runs,
    unasked_qualifier,
)

if TYPE_CHECKING:
    from retrieval.search import RankedChunk

MAX_DOCUMENTS = 8
MAX_SENTENCES = 3
PASSAGES_PER_DOCUMENT = 2
CHUNKS_PER_DOCUMENT = 3
DEFAULT_TOKEN_BUDGET = 1500

DEFAULT_TIER_NAMES = {0: "system of record", 1: "official docs", 2: "wiki", 3: "chat"}


def estimate_tokens(text: str) -> int:
    """~4 characters per token (English, BPE tokenisers); the budget only needs to be proportional."""
    return max(1, math.ceil(len(text) / 4))


def evidence_id(document_id: int, snapshot: str, start: int, end: int) -> str:
    return "E" + hashlib.sha256(f"{document_id}:{snapshot}:{start}:{end}".encode()).hexdigest()[:12]


# Sentences that point elsewhere or protect the author rather than state a fact: they share
# words with many questions ("revenue", "leave") and must not outrank the sentence that answers.
BOILERPLATE_RE = re.compile(
    r"""
    \b(?:see|refer\s+to|described\s+in|discussed\s+in|included\s+in|set\s+forth\s+in)\s+
        (?:note|part|item|section|exhibit)\s+[\dIVX]
    | \bnotes?\s+\d+\s*(?:[,\u2013\u2014-]|of\s+the)\s*
    | \bforward[\s-]looking\s+statements?\b
    | \b(?:risks?\s+and\s+uncertainties|safe\s+harbor|undue\s+reliance)\b
    | \bincorporated\s+(?:herein\s+)?by\s+reference\b
    | \btable\s+of\s+contents\b
    | \bpursuant\s+to\s+section\s+13\b|\bexact\s+name\s+of\s+registrant\b|\bcommission\s+file\s+number\b
    | \.{4,}\s*\d+\s*$
    | ^\s*(?:part|item)\s+[\dIVX]+[A-Z]?\.?\s+[A-Z][^.]{0,80}\s+\d+\s*$
    | \bhereby\s+certif(?:y|ies)\b|\bsarbanes[\s-]oxley\b|\bsection\s+(?:302|906|1350)\b
    | \baccompanying\s+notes\b[^.]{0,80}\bintegral\s+part\b
    | \bthis\s+page\s+(?:is\s+)?(?:moved|deprecated|archived)\b
    """,
    re.IGNORECASE | re.VERBOSE | re.MULTILINE,
)
BOILERPLATE_FACTOR = 0.3  # a boilerplate sentence keeps a third of its score: it can still win alone
# Weight of the embedding cosine (question <-> sentence, MiniLM) in a sentence's score; the rest is the
# idf-weighted term coverage.  Term coverage alone picks the sentence that repeats the question's words
# ("bill to #1810 when out on Paid Parental leave") over the one that answers it ("You are entitled to
# 12 weeks of paid time off"); the same share as the extractive writer's ``similarity_weight``.
SIMILARITY_WEIGHT = 0.4
# A query term found only in the page title (or the chunk's heading) counts this share: the PPL page's
# "You are entitled to 12 weeks of paid time off" never says "parental leave", its title does.
TITLE_TERM_WEIGHT = 0.5
_SALES = stem("sales")
# For a how-much question, the extractive writer's factors: a sentence about a narrower measure keeps 0.7
# of its score, a table row without the asked span and period 0.6; the row of the asked measure with the
# asked period's cell gains 0.3.
NARROWER_MEASURE_FACTOR = ExtractiveWriter.qualified_factor
OTHER_SPAN_FACTOR = ExtractiveWriter.other_span_factor
ASKED_ROW_FACTOR = 1.3
SET_ASIDE_CASE_FACTOR = 1.3
ANSWER_TYPE_BONUS = 0.25  # of the query's total idf weight: a number for "how much", a date for "when"
_NUMBER_RE = re.compile(r"\$?\d[\d,.]*\s*(?:%|percent|million|billion|weeks?|days?|hours?|months?|years?)?", re.I)
# A date, a weekday, a time of day or a deadline ("by 3:30 PM Eastern", "by the end of the day (close of business) on
# Friday", "within 30 days"): what a when-question asks for, as the verifier's date check reads it (verification.py).
_DATE_RE = re.compile(
    r"\b(?:19|20)\d{2}\b|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s+\d{1,2}\b"
    r"|\b(?:within|before|after|by)\s+\d+\s+(?:business\s+)?(?:days?|weeks?|months?)\b"
    r"|\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?\b|\b\d{1,2}(?::\d{2})?\s*(?:a\.?m\.?|p\.?m\.?)"
    r"|\b(?:end\s+of\s+(?:the\s+)?(?:business\s+)?day|close\s+of\s+business)\b",
    re.I,
)


def _is_heading_only(text: str) -> bool:
    """A title or heading line: short and not ending like a sentence."""
    t = text.strip()
    return bool(t) and len(t) < 120 and t[-1] not in ".!?:;" and not any(ch.isdigit() for ch in t[-1:])


def is_boilerplate(sentence: str) -> bool:
    """Cross-references, "see Note 1", forward-looking-statement legalese, table-of-contents lines."""
    return bool(BOILERPLATE_RE.search(sentence))


@functools.lru_cache(maxsize=64)
def _question_stems(question: str) -> frozenset[str]:
    # Asked once per sentence of every retrieved chunk: the question's stems are computed once.
    return frozenset(content_stems(question))


def _answer_bonus(kind: str, sentence: str, question: str = "") -> float:
    if kind == "number" and _NUMBER_RE.search(sentence) and re.search(r"\d", sentence):
        return ANSWER_TYPE_BONUS
    if kind == "date" and _DATE_RE.search(sentence):
        return ANSWER_TYPE_BONUS
    if kind == "person" and names_someone(sentence, question):
        return ANSWER_TYPE_BONUS
    if kind == "name" and names_something(sentence, _question_stems(question)):
        return ANSWER_TYPE_BONUS
    return 0.0


def narrow_to_answer_type(plan: QueryPlan, records: Sequence[EvidenceRecord]) -> list[EvidenceRecord]:
    """One-sentence records holding what a how-much / when / who question asks for (a number, a date, a name).

    Used when every claim drafted from the full passages lacked it: the PPL page's first
    sentence names the benefit, its second says "12 weeks"; a writer that leads with the first
    must be offered the second on its own.  Records keep the source's offsets (ids change with
    them) and carry ``narrowed`` in their flags.
    """
    from dataclasses import replace

    kind = answer_type(plan.parsed.original)
    if not kind:
        return []
    known = {r.id for r in records}
    out: list[EvidenceRecord] = []
    for rec in records:
        spans = split_sentences(rec.text)
        if len(spans) < 2:
            continue
        for start, end in spans:
            sentence = rec.text[start:end]
            if (
                not _answer_bonus(kind, sentence, plan.parsed.original)
                or is_boilerplate(sentence)
                or is_instruction(sentence)
            ):
                continue
            a, b = rec.char_start + start, rec.char_start + end
            new_id = evidence_id(rec.document_id, rec.snapshot_sha256, a, b)
            if new_id in known:
                continue
            known.add(new_id)
            out.append(replace(rec, id=new_id, text=sentence, char_start=a, char_end=b,
                               flags=(*rec.flags, "narrowed")))  # fmt: skip
    return out


def query_terms(plan: QueryPlan, extra_text: str = "") -> list[str]:
    parsed = plan.parsed
    terms = list(dict.fromkeys(content_stems(f"{parsed.text or parsed.original} {extra_text}")))
    sales = says_sales(f"{parsed.text or parsed.original} {extra_text}")
    for t in list(terms):  # "revenue" is "net sales" in a filing
        if t == _SALES and not sales:
            continue  # "sales and marketing" asks about a cost line, not revenue
        terms.extend(x for x in sorted(attribute_synonyms(t)) if x not in terms)
    for _surface, canonical in parsed.entities:
        terms.extend(t for t in content_stems(canonical) if t not in terms)
    if plan.version_scope:
        terms.extend(t for t in content_stems(plan.version_scope) if t not in terms)
    return terms


@dataclass
class _Sentence:
    chunk: RankedChunk
    start: int  # offsets in chunk.text
    end: int
    terms: frozenset[str]
    instruction: bool
    excluded: bool = False  # names a term the question excludes
    score: float = 0.0
    heading: frozenset[str] = frozenset()  # the sub-heading it sits under inside the chunk ("Use a password manager")

    @property
    def blocked(self) -> bool:
        return self.instruction or self.excluded


def _document_offsets(chunk: RankedChunk, doc_text: str | None, start: int, end: int) -> tuple[int, int]:
    """Offsets of chunk.text[start:end] in the document's extracted text."""
    passage = chunk.text[start:end]
    abs_start = chunk.char_start + start
    if doc_text is None or doc_text[abs_start : abs_start + len(passage)] == passage:
        return abs_start, abs_start + len(passage)
    found = doc_text.find(passage, max(0, chunk.char_start - 200))
    if found == -1:
        found = doc_text.find(passage)
    if found == -1:
        return abs_start, abs_start + len(passage)
    return found, found + len(passage)


def _headings_over(chunk: RankedChunk, start: int) -> str:
    """The chunk's heading and the nearest heading line above ``start`` in its text (the window may begin under
    it): "You can receive up to 4 hours for each election event" is about "Voting and poll volunteering"."""
    return " / ".join(dict.fromkeys(h for h in (chunk.heading.strip(), *heading_lines(chunk.text[:start])[-1:]) if h))


def _record(chunk: RankedChunk, start: int, end: int, doc_text: str | None, tier_names: dict[int, str],
            score: float, *, hop: str = "", flags: tuple[str, ...] = ()) -> EvidenceRecord:  # fmt: skip
    """The passage ``chunk.text[start:end]`` as evidence, with its offsets in the document's text."""
    a, b = _document_offsets(chunk, doc_text, start, end)
    return EvidenceRecord(
        id=evidence_id(chunk.document_id, chunk.snapshot_sha256, a, b),
        document_id=chunk.document_id,
        chunk_id=chunk.chunk_id,
        canonical_url=chunk.canonical_url or chunk.url,
        title=chunk.title,
        source_system=chunk.source_system,
        container=chunk.container,
        text=chunk.text[start:end],
        char_start=a,
        char_end=b,
        snapshot_sha256=chunk.snapshot_sha256,
        updated_at=chunk.updated_at,
        created_at=chunk.created_at,
        version_label=chunk.version_label,
        authority_tier=chunk.authority_tier,
        scores={
            "passage": round(score, 4),
            "rrf": round(chunk.rrf, 6),
            **{f"rank_{k}": float(v) for k, v in chunk.ranks.items()},
        },
        authority=tier_names.get(chunk.authority_tier, f"tier {chunk.authority_tier}"),
        hop=hop,
        heading=_headings_over(chunk, start),
        flags=flags,
        about=dict(getattr(chunk, "about", {}) or {}),
    )


def table_records(chunks: Sequence[RankedChunk], *, doc_texts: dict[int, str] | None = None,
                  tier_names: dict[int, str] | None = None) -> list[EvidenceRecord]:  # fmt: skip
    """Every table of these chunks as one passage each (its rows, first to last): "which segment had the
    highest net sales" is answered by comparing all of a table's rows, which sentence selection, scoring
    rows one by one against the question's words, does not keep together."""
    tier_names = tier_names or DEFAULT_TIER_NAMES
    out = []
    for chunk in chunks:
        for run in table_runs(chunk.text):
            if any(is_instruction(chunk.text[a:b]) for a, b, _label, _tag in run):
                continue  # retrieved text addressing a model is data, never evidence to rank
            out.append(_record(chunk, run[0][0], run[-1][1], (doc_texts or {}).get(chunk.document_id),
                               tier_names, 0.0))  # fmt: skip
    return out


def build_evidence(
    plan: QueryPlan,
    chunks: Sequence[RankedChunk],
    *,
    token_budget: int = DEFAULT_TOKEN_BUDGET,
    max_documents: int = MAX_DOCUMENTS,
    doc_texts: dict[int, str] | None = None,
    tier_names: dict[int, str] | None = None,
    extra_query: str = "",
    hop: str = "",
    similarity: Callable[[str, Sequence[str]], Sequence[float]] | None = None,
) -> tuple[list[EvidenceRecord], dict[str, object]]:
    """Passages of the top documents, best first, within ``token_budget``.

    ``doc_texts`` (document id -> extracted text) makes the offsets exact even if a
    chunk's text was normalised; ``extra_query`` adds terms (a bound hop value);
    ``similarity(query, sentences)`` (embedding cosine, one call for every sentence) blends
    meaning into the term-coverage score with ``SIMILARITY_WEIGHT``.
    Returns the records and a trace dict (budget, tokens used, passages cut).
    """
    tier_names = tier_names or DEFAULT_TIER_NAMES
    by_doc: dict[int, list[RankedChunk]] = defaultdict(list)
    order: list[int] = []
    for c in chunks:
        if c.document_id not in by_doc:
            if len(order) >= max_documents:
                continue
            order.append(c.document_id)
        by_doc[c.document_id].append(c)

    sentences: dict[int, list[_Sentence]] = {}
    # "To access the EAP, you can call them 24/7" is about the Employee Assistance Program where a page read defines it.
    read = [c for doc_id in order for c in by_doc[doc_id]]
    asked_stems = content_stems(f"{plan.parsed.text or plan.parsed.original} {extra_query}")
    defined = abbreviations_defined([c.text for c in read], asked_stems, [c.title for c in read])
    # Three chunks of each of eight documents; a question bound to one or two filings reads more of each.
    # One filing: a statement row can rank fourteenth of a 60-chunk filing's chunks (Apple's Q2 2023 net income).
    cap = 16 if len(order) == 1 else 12 if len(order) == 2 else 8
    per_doc = max(CHUNKS_PER_DOCUMENT, min(cap, CHUNKS_PER_DOCUMENT * max_documents // max(len(order), 1)))
    per_doc_passages = max(PASSAGES_PER_DOCUMENT, min(6, PASSAGES_PER_DOCUMENT * max_documents // max(len(order), 1)))
    for doc_id in order:
        out: list[_Sentence] = []
        for c in by_doc[doc_id][:per_doc]:
            sub_heading: frozenset[str] = frozenset()
            for unit in group_list_blocks(c.text, split_sentences(c.text)):
                if isinstance(unit, ListBlock):
                    # A list stays with its introduction: the items alone share no word with the question.
                    # It is excluded only when every item is (the question excludes some of what it lists).
                    (s, e), parts = unit.span, [c.text[a:b] for a, b in (unit.intro, *unit.items)]
                    raw = c.text[s:e]
                    # An item about the case without the term ("If you are not using a password manager, ...")
                    # is not about the term.
                    excluded = mentions_excluded(parts[0], plan.parsed.exclude) or all(
                        excluded_sentence(p, plan.parsed.exclude) for p in parts[1:]
                    )
                    instruction = any(is_instruction(p) for p in parts)
                else:
                    s, e = unit
                    raw = c.text[s:e]
                    if is_heading(raw):
                        sub_heading = frozenset(content_stems(raw))
                    # A sentence about an excluded term ("subscribers, not publishers") never enters a passage;
                    # the rest of its chunk can still answer (the answer path does not drop whole chunks).
                    # One that names it among others ("your supervisor and the HR specialist") can answer.
                    excluded, instruction = excluded_sentence(raw, plan.parsed.exclude), is_instruction(raw)
                terms = with_abbreviations(frozenset(content_stems_with_parts(raw)), defined)
                out.append(_Sentence(c, s, e, terms, instruction, excluded, heading=sub_heading))
        sentences[doc_id] = out

    q_terms = query_terms(plan, extra_query)
    df: Counter[str] = Counter()
    n = 0
    for sents in sentences.values():
        for sent in sents:
            df.update(sent.terms)
            n += 1
    idf = {t: math.log(1.0 + max(n, 1) / (df[t] if df[t] else 0.5)) for t in q_terms}
    # A resolved follow-up ("What if I land at Oakland instead: How much is that BART fare: …"): the earlier turns'
    # words weigh less, as in the extractive writer, so the passage about the case asked last (the Oakland section)
    # is not outscored by the ones the earlier turns already answered.
    idf = weigh_earlier_turns(plan.parsed.text or plan.parsed.original, idf)
    total = sum(idf.values()) or 1.0
    # "Which password manager …?": a sentence naming something the question does not is the answer's kind.
    kind = answer_type(plan.parsed.original) or ("name" if asks_for_a_name(plan.parsed.original) else "")
    negated = asks_negated(plan.parsed.text or plan.parsed.original, plan.parsed.exclude)
    context_terms: dict[int, frozenset[str]] = {}
    for sents in sentences.values():
        for sent in sents:
            key = id(sent.chunk)
            if key not in context_terms:
                context_terms[key] = frozenset(content_stems(f"{sent.chunk.title} {sent.chunk.heading}"))
    q_set = set(q_terms)
    asked = frozenset(q_terms) | frozenset(content_stems(plan.original))
    if re.search(r"\bother\b", plan.original, re.I):
        asked |= {"other"}
    # What a row's label must share with the question to be its row: not the company or the period.
    row_terms = set(q_terms) - set(content_stems(" ".join(p.label for p in plan.parsed.periods)))
    row_terms -= {t for _s, canonical in plan.parsed.entities for t in content_stems(f"{_s} {canonical}")}
    row_terms -= {"quarter", "quarterli", "month", "year", "fiscal", "latest", "recent"}
    # Words the scoping stage already checked on the source's metadata (the bound company, the resolved
    # period) count as covered in every sentence, as in the extractive writer: inside Intel's 10-Q for
    # the quarter, "Intel" and "recent quarter" pick the certification ("... Intel's quarterly report"),
    # not the sentence that states the revenue.
    bound = scoped_terms(plan)
    free_set = q_set - bound
    lexical: dict[int, float] = {}
    for sents in sentences.values():
        for sent in sents:
            # The title alone does not make a sentence about the question: no shared term, no score.
            if sent.blocked or not sent.terms & (free_set or q_set):
                continue
            around = context_terms[id(sent.chunk)] | sent.heading
            lexical[id(sent)] = (
                sum(
                    idf[t] * (1.0 if t in sent.terms or t in bound else TITLE_TERM_WEIGHT if t in around else 0.0)
                    for t in q_terms
                )
                / total
            )
    sims: dict[int, float] = {}
    if similarity is not None:
        # Meaning only reorders sentences that share a term with the question, so only those are embedded:
        # a sentence with no term in common stays at 0 and the passage rules below (anchors, joins) hold.
        flat = [sent for sents in sentences.values() for sent in sents if id(sent) in lexical]
        query = f"{plan.parsed.text or plan.parsed.original} {extra_query}".strip()
        if flat:
            # Prefixed with the page title: "Paid parental leave: You are entitled to 12 weeks ..."
            texts = [f"{sent.chunk.title}: {sent.chunk.text[sent.start : sent.end]}" for sent in flat]
            scores = similarity(query, texts)
            sims = {id(sent): max(0.0, float(v)) for sent, v in zip(flat, scores, strict=True)}
    for sents in sentences.values():
        for sent in sents:
            score = lexical.get(id(sent), 0.0)
            raw = sent.chunk.text[sent.start : sent.end]
            if score > 0 and id(sent) in sims:
                score = (1.0 - SIMILARITY_WEIGHT) * score + SIMILARITY_WEIGHT * sims[id(sent)]
            if score > 0:
                # The answer type only breaks ties between sentences that are about the question.
                score += _answer_bonus(kind, raw, plan.parsed.original) * score
                if negated and states_negation(raw):
                    # "… won't be paid out?": "Your Sick Leave will not be paid out" over "Your Annual Leave will be
                    # paid out", which shares as many of the question's words.
                    score += ANSWER_TYPE_BONUS * score
            if is_boilerplate(raw):
                score *= BOILERPLATE_FACTOR
            if score > 0 and plan.parsed.exclude and states_the_set_aside_case(raw, plan.parsed.exclude):
                score *= SET_ASIDE_CASE_FACTOR  # "If you are not using a password manager" for "I'm not using one"
            if score > 0 and kind == "number":
                # The statement row of the asked measure and period answers "what was X in the quarter";
                # a narrower measure ("Other revenue", "Cost of revenue") or another span's row does not.
                fits = row_fits_period(raw, plan.period_scope, plan.original)
                narrowed = unasked_qualifier(raw, asked)
                if narrowed:
                    score *= NARROWER_MEASURE_FACTOR
                if fits is False:
                    score *= OTHER_SPAN_FACTOR
                elif fits and not narrowed and set(content_stems(row_label(raw) or "")) & row_terms:
                    score *= ASKED_ROW_FACTOR
            sent.score = score

    candidates: list[tuple[float, int, int, EvidenceRecord]] = []
    for rank, doc_id in enumerate(order):
        sents = sentences[doc_id]
        used: set[int] = set()
        best_score = 0.0
        for _ in range(per_doc_passages):
            pick = max(
                (i for i in range(len(sents)) if i not in used and not sents[i].blocked),
                key=lambda i: (sents[i].score, -i),
                default=None,
            )
            if pick is None or (used and sents[pick].score < 0.5 * best_score) or (used and sents[pick].score == 0):
                break
            best_score = max(best_score, sents[pick].score)
            lo = hi = pick
            chunk = sents[pick].chunk

            def joinable(
                j: int, chunk: RankedChunk = chunk, sents: list[_Sentence] = sents, used: set[int] = used
            ) -> bool:
                s = sents[j]
                return s.chunk is chunk and j not in used and not s.blocked and s.score > 0

            while hi - lo + 1 < MAX_SENTENCES and (
                (hi + 1 < len(sents) and joinable(hi + 1)) or (lo > 0 and joinable(lo - 1))
            ):
                if hi + 1 < len(sents) and joinable(hi + 1):
                    hi += 1
                else:
                    lo -= 1
            if sents[pick].score == 0 and hi == lo and pick + 1 < len(sents) and sents[pick + 1].chunk is chunk:
                if not sents[pick + 1].blocked:
                    hi = pick + 1  # no lexical anchor (vector-only hit): give the writer some context

            # A sentence that reads only with the one before it ("… accounted for in both systems") takes that one
            # along, and one that continues the passage ("However, please get a final approval …") joins it,
            # though neither shares a word with the question.
            def beside(j: int, chunk: RankedChunk = chunk, sents: list[_Sentence] = sents,
                       used: set[int] = used) -> bool:  # fmt: skip
                return 0 <= j < len(sents) and sents[j].chunk is chunk and j not in used and not sents[j].blocked

            if beside(lo - 1) and continues_previous(chunk.text[sents[lo].start : sents[lo].end]):
                lo -= 1
            if beside(hi + 1) and continues_previous(chunk.text[sents[hi + 1].start : sents[hi + 1].end]):
                hi += 1
            # Headings only ("ExampleDB 18 release notes / Logical replication"): what they head is the
            # sentence after them, which may share no word with the question; the writer sees it under them.
            while (hi + 1 < len(sents) and sents[hi + 1].chunk is chunk and not sents[hi + 1].blocked
                   and hi + 1 not in used and all(_is_heading_only(chunk.text[sents[j].start : sents[j].end])
                                                  for j in range(lo, hi + 1))):  # fmt: skip
                hi += 1
            if (
                kind
                and beside(hi + 1)
                and not any(_answer_bonus(kind, chunk.text[sents[j].start : sents[j].end], plan.parsed.original)
                            for j in range(lo, hi + 1))
                and _answer_bonus(kind, chunk.text[sents[hi + 1].start : sents[hi + 1].end], plan.parsed.original)
            ):  # fmt: skip
                # "A repository is considered inactive if there haven't been any new commits ... in a while. The
                # current default is 90 days.": the figure a how-long question asks for may follow in a sentence
                # that repeats none of its words.
                hi += 1
            used.update(range(lo, hi + 1))
            start, end = sents[lo].start, sents[hi].end
            flags: tuple[str, ...] = ()
            if any(s.instruction and s.chunk is chunk for s in sents):
                flags = ("instructions_removed",)
            record = _record(chunk, start, end, (doc_texts or {}).get(doc_id), tier_names,
                             max(sents[i].score for i in range(lo, hi + 1)), hop=hop, flags=flags)  # fmt: skip
            candidates.append((sents[pick].score, rank, start, record))

    # Best passages first, document rank breaking ties, until the budget is spent.
    candidates.sort(key=lambda t: (-t[0], t[1], t[2]))
    kept: list[EvidenceRecord] = []
    used_tokens = 0
    cut = 0
    for _score, _rank, _start, rec in candidates:
        cost = estimate_tokens(rec.text)
        if used_tokens + cost > token_budget and kept:
            cut += 1
            continue
        kept.append(rec)
        used_tokens += cost
    trace: dict[str, object] = {
        "token_budget": token_budget,
        "tokens_used": used_tokens,
        "passages": len(kept),
        "passages_over_budget": cut,
        "documents": len(order),
        "instructions_removed": sum(1 for r in kept if "instructions_removed" in r.flags),
    }
    return kept, trace


__all__ = [
    "DEFAULT_TIER_NAMES",
    "DEFAULT_TOKEN_BUDGET",
    "INJECTION_RE",
    "build_evidence",
    "estimate_tokens",
    "evidence_id",
    "is_boilerplate",
    "narrow_to_answer_type",
    "is_instruction",
    "query_terms",
    "table_records",
]

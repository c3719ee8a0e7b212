"""Claim verification: the mechanical quote check plus a lexical support check.

No entailment model ships offline with a usable licence (see ``MODELS.md``), so
support is judged from features a human reviewer would also check first:
does the quote cover the claim's content words, do numbers, dates, negation and
named entities agree, and does the claim escalate ("removes lag entirely") what
the quote only hedges ("cuts lag a lot")?  The check is deliberately
conservative: a claim it cannot establish is never labelled "supported".

Everything here is pure Python so the same code runs in the web process, the
worker and the evaluation scripts.
"""

from __future__ import annotations

import html
import re
import unicodedata
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from typing import Any, Literal, Protocol

from answers.contracts import DraftClaim, EvidenceRecord, QueryPlan, SupportLabel, VerificationResult
from answers.judge import JudgeError, judge_for_tenant
from answers.scoping import bound_entities, mentions
from core.backends import embedder, get_backend
from tenants.context import current_tenant_id

VERIFIER_NAME = "lexical-embedding-verifier"
VERIFIER_VERSION = "2"

# Coverage thresholds of the lexical fallback; changing them changes verdicts, so bump the version.
SUPPORTED_COVERAGE = 0.9
PARTIAL_COVERAGE = 0.6


def verifier_release() -> dict[str, str]:
    """Identity of the configured verifier (``settings.CAIRN["VERIFIER"]``), recorded in every answer's
    release metadata; inside a tenant context it includes the tenant's judge, if any.  Without Django
    settings (pure unit tests) it is this module's own identity."""
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured

    try:
        path = settings.CAIRN.get("VERIFIER")
    except ImproperlyConfigured:
        path = None
    if not path:
        return {"name": VERIFIER_NAME, "version": VERIFIER_VERSION}

    return dict(get_backend("VERIFIER").release())


# --------------------------------------------------------------------------- normalisation

_QUOTE_MAP = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u201b": "'",
        "\u2032": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u201f": '"',
        "\u2033": '"',
        "\u00ab": '"',
        "\u00bb": '"',
        "\u2010": "-",
        "\u2011": "-",
        "\u2012": "-",
        "\u2013": "-",
        "\u2014": "-",
        "\u2015": "-",
        "\u2212": "-",
        # Invisible characters that survive HTML/PDF extraction would make an honest quote fail.
        "\u00ad": None,
        "\u200b": None,
        "\u200c": None,
        "\u200d": None,
        "\u2060": None,
        "\ufeff": None,
    }
)
_WS_RE = re.compile(r"\s+")


def normalise_ws(s: str) -> str:
    """NFKC, straight quotes, ASCII dashes, collapsed whitespace, stripped."""
    s = unicodedata.normalize("NFKC", s).translate(_QUOTE_MAP)
    return _WS_RE.sub(" ", s).strip()


# --------------------------------------------------------------------------- tokens and stems

# Small on purpose: content words decide coverage, so only true function words go here.
STOPWORDS: frozenset[str] = frozenset(
    {
        "a",
        "an",
        "the",
        "and",
        "or",
        "but",
        "if",
        "then",
        "else",
        "of",
        "to",
        "in",
        "on",
        "at",
        "by",
        "for",
        "with",
        "from",
        "into",
        "onto",
        "over",
        "under",
        "about",
        "as",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "being",
        "am",
        "do",
        "does",
        "did",
        "doing",
        "have",
        "has",
        "had",
        "having",
        "can",
        "could",
        "should",
        "would",
        "may",
        "might",
        "must",
        "shall",
        "will",
        "it",
        "its",
        "it's",
        "this",
        "that",
        "these",
        "those",
        "there",
        "here",
        "their",
        "them",
        "they",
        "we",
        "us",
        "our",
        "you",
        "your",
        "he",
        "she",
        "his",
        "her",
        "him",
        "i",
        "me",
        "my",
        "mine",
        "so",
        "than",
        "too",
        "very",
        "also",
        "just",
        "such",
        "any",
        "some",
        "each",
        "which",
        "who",
        "whom",
        "whose",
        "what",
        "when",
        "where",
        "why",
        "how",
        "all",
        "both",
        "either",
        "neither",
        "nor",
        "not",
        "no",
        "never",
        "only",
        "own",
        "same",
        "other",
        "more",
        "most",
        "less",
        "few",
        "many",
        "much",
        "up",
        "down",
        "out",
        "off",
        "again",
        "further",
        "once",
        "per",
        "via",
        "vs",
        "etc",
    }
)

NEGATION_CUES: frozenset[str] = frozenset(
    {"not", "no", "never", "none", "nobody", "nothing", "neither", "nor", "without", "cannot", "nowhere"}
)

# Words that turn a hedged statement into an absolute one; a claim may only use them if the quote does.
ESCALATION_WORDS: frozenset[str] = frozenset(
    {
        "entirely",
        "always",
        "never",
        "all",
        "every",
        "everyone",
        "everything",
        "completely",
        "fully",
        "totally",
        "permanently",
        "guaranteed",
        "guarantees",
        "guarantee",
        "eliminates",
        "eliminate",
        "eliminated",
        "impossible",
    }
)

_NUMBER_WORDS = {
    "two": "2",
    "three": "3",
    "four": "4",
    "five": "5",
    "six": "6",
    "seven": "7",
    "eight": "8",
    "nine": "9",
    "ten": "10",
    "eleven": "11",
    "twelve": "12",
}

# Words joined by apostrophes, dots, hyphens or underscores stay one token so that identifiers
# (lr_example_parallel_apply), versions (3.2), dates (2026-06-30), 1,000 and "don't" survive intact.
_TOKEN_RE = re.compile(r"[^\W_]+(?:(?:['._\-]|(?<=\d),(?=\d))[^\W_]+)*%?")
_NUMERIC_RE = re.compile(r"^\d[\d,.:/\-]*%?$")

# Ordered longest first; (suffix, replacement).  A light stemmer is enough because both sides of
# every comparison go through the same function: it only has to be consistent, not linguistic.
_SUFFIXES: tuple[tuple[str, str], ...] = (
    ("ational", "ate"),
    ("ations", "ate"),
    ("ation", "ate"),
    ("ingly", ""),
    ("nesses", ""),
    ("ments", ""),
    ("ness", ""),
    ("ment", ""),
    ("edly", ""),
    ("ings", ""),
    ("ies", "y"),
    ("ied", "y"),
    ("ing", ""),
    ("ly", ""),
    ("ed", ""),
    ("es", ""),
    ("s", ""),
)


def stem(word: str) -> str:
    """Lowercase and strip common English suffixes ("subscriptions" -> "subscription")."""
    w = word.lower().replace("\u2019", "'")
    w = w.removesuffix("'s")
    if len(w) <= 3 or not w.isalpha():
        return w
    for suffix, repl in _SUFFIXES:
        if not w.endswith(suffix):
            continue
        # "process", "status", "analysis" are not plurals.
        if suffix == "s" and w.endswith(("ss", "us", "is")):
            break
        if suffix == "ed" and w.endswith("eed"):
            break  # "need", "speed" are not past tenses
        cand = w[: -len(suffix)] + repl
        if len(cand) >= 3:
            w = cand
            break
    if len(w) > 4 and w.endswith("e"):
        w = w[:-1]
    if len(w) >= 4 and w[-1] == w[-2] and w[-1] not in "lsz" and w[-1] not in "aeiou":
        w = w[:-1]  # "running" -> "runn" -> "run"
    return w


def tokens(text: str) -> list[str]:
    """Word tokens of normalised text, original case kept (entities need it)."""
    return _TOKEN_RE.findall(normalise_ws(text))


def _norm_number(tok: str) -> str:
    tok = tok.lower()
    if tok in _NUMBER_WORDS:
        return _NUMBER_WORDS[tok]
    # Thousands separators only ("1,000" == "1000"); keep decimal points and date separators.
    return re.sub(r",(?=\d{3}(?!\d))", "", tok)


def is_number(tok: str) -> bool:
    return bool(_NUMERIC_RE.match(tok)) or tok.lower() in _NUMBER_WORDS


def content_stems(text: str) -> list[str]:
    """Stemmed non-stopword tokens in order; numbers normalised, not stemmed."""
    out: list[str] = []
    for tok in tokens(text):
        low = tok.lower()
        if low in STOPWORDS or low.endswith("n't"):
            continue
        out.append(_norm_number(tok) if is_number(tok) else stem(tok))
    return out


# --------------------------------------------------------------------------- quote check


def is_short_quote(quote: str) -> bool:
    """A very short quote can match almost anywhere, so it is flagged even when it matches."""
    q = normalise_ws(quote)
    return len(q.split()) < 3 or len(q) < 12


def quote_in_passage(quote: str, passage: str) -> bool:
    """True if ``quote`` occurs in ``passage`` after whitespace/typography normalisation.

    Case-sensitive, and the match must not start or end inside a word: a quote of
    "not supported" must not be "found" inside "cannot supported", and an empty
    quote is never found.
    """
    q = normalise_ws(quote)
    p = normalise_ws(passage)
    if not q:
        return False
    start = p.find(q)
    while start != -1:
        end = start + len(q)
        left_ok = start == 0 or not (p[start - 1].isalnum() and q[0].isalnum())
        right_ok = end == len(p) or not (p[end].isalnum() and q[-1].isalnum())
        if left_ok and right_ok:
            return True
        start = p.find(q, start + 1)
    return False


# --------------------------------------------------------------------------- support check

_LABEL_RANK: dict[str, int] = {"contradicted": 0, "unsupported": 1, "partially_supported": 2, "supported": 3}
_CLAUSE_SPLIT_RE = re.compile(r"[;:,()]|\s-\s|\b(?:but|while|whereas|although|though|however)\b", re.IGNORECASE)
_TERMINAL_RE = re.compile(r"[.!?]+$")


def _is_negated(text: str) -> bool:
    for tok in tokens(text):
        low = tok.lower()
        if low in NEGATION_CUES or low.endswith("n't"):
            return True
    return False


def _number_slots(toks: list[str], window: int = 3) -> list[tuple[str, set[str]]]:
    """Each number with the content stems around it, which name what the number measures."""
    out: list[tuple[str, set[str]]] = []
    for i, tok in enumerate(toks):
        if not is_number(tok):
            continue
        neighbours: set[str] = set()
        for j in range(max(0, i - window), min(len(toks), i + window + 1)):
            other = toks[j]
            if j == i or is_number(other) or other.lower() in STOPWORDS:
                continue
            neighbours.add(stem(other))
        out.append((_norm_number(tok), neighbours))
    return out


def _number_kind(num: str) -> str:
    if re.fullmatch(r"\d{4}-\d{1,2}-\d{1,2}", num) or re.fullmatch(r"\d{1,2}/\d{1,2}/\d{2,4}", num):
        return "date"
    if num.endswith("%"):
        return "percent"
    if re.fullmatch(r"\d{1,2}:\d{2}", num):
        return "time"
    return "number"


def _entities(claim_toks: list[str]) -> list[str]:
    """Capitalised tokens that name something; the sentence-initial word counts only if it
    is unusual (ALL-CAPS, inner capitals or digits), since any first word is capitalised."""
    out: list[str] = []
    for i, tok in enumerate(claim_toks):
        if not tok[:1].isupper() or tok.lower() in STOPWORDS:
            continue
        if i == 0 and not (any(c.isdigit() for c in tok) or any(c.isupper() for c in tok[1:])):
            continue
        out.append(tok)
    return out


# Direction words: a claim that something "increases" over a quote that says it "reduces" is the most
# common contradiction in scientific text (SciFact's CONTRADICT claims are mostly flipped findings).
# Stems, so "increased"/"increasing" match; both sides go through :func:`stem`.
_UP_WORDS = (
    "increase increases increased increasing raise raises raised higher elevate elevated enhance enhances "
    "enhanced promote promotes promoted improve improves improved accelerate accelerates induce induces induced "
    "activate activates activated better gain gains advantage augment augments upregulate upregulates "
    "upregulated upregulation stimulate stimulates facilitate facilitates boost boosts rise rises larger "
    "longer stronger more greater"
)
_DOWN_WORDS = (
    "decrease decreases decreased decreasing reduce reduces reduced reducing reduction lower less fewer "
    "diminish diminishes diminished suppress suppresses suppressed inhibit inhibits inhibited impair impairs "
    "impaired attenuate attenuates attenuated worse poor poorer prevent prevents prevented abolish abolishes "
    "abolished slow slows slowed downregulate downregulates downregulated downregulation counteract counteracts "
    "smaller shorter weaker decline declines"
)


def _stem_set(words: str) -> frozenset[str]:
    return frozenset(stem(w) for w in words.split())


UP_STEMS: frozenset[str] = _stem_set(_UP_WORDS)
DOWN_STEMS: frozenset[str] = _stem_set(_DOWN_WORDS)

# Thresholds of the embedding-assisted fallback, tuned on SciFact claims *dev* only by accuracy over a grid
# (``python -m evaluation.suites.verifier --tune``); the train split is held out.  Cosine
# similarity of MiniLM vectors between the claim and its best-matching quote sentence.  Precision of
# "supported" stayed at 0.72-0.75 from 0.55 to 0.75 on dev, so the threshold is the accuracy optimum.
SIM_SUPPORTED = 0.55  # at or above: the quote restates the claim (if nothing caps or contradicts it)
SIM_RELATED = 0.50  # below (and low word coverage): the quote is about something else
SIM_CONTRADICTS = 0.50  # a negation/direction flip only counts as a contradiction on a related quote


class Embedder(Protocol):
    def embed(self, texts: list[str]) -> Any: ...


@dataclass(frozen=True)
class SupportFeatures:
    """What the fallback looked at; every field is also written into the reasons."""

    coverage: float
    similarity: float | None  # None when no embedder was given
    number_conflicts: tuple[str, ...]
    numbers_missing: tuple[str, ...]
    negation_mismatch: bool
    direction_mismatch: bool
    escalations: tuple[str, ...]
    entities_missing: tuple[str, ...]


def _sentences(text: str) -> list[str]:
    return [s for s in _SENT_SPLIT_RE.split(text.strip()) if s.strip()] or [text]


def _best_clauses(claim_terms: set[str], quote: str) -> list[str]:
    """The quote clause(s) that overlap the claim most; the whole quote when none overlaps."""
    clauses = [c for c in _CLAUSE_SPLIT_RE.split(quote) if c and c.strip()]
    if not clauses:
        return [quote]
    overlaps = [len(claim_terms & set(content_stems(c))) for c in clauses]
    best = max(overlaps)
    if best == 0:
        return [quote]
    return [c for c, o in zip(clauses, overlaps, strict=True) if o == best]


def _quote_polarities(claim_terms: set[str], quote: str) -> set[bool]:
    """Negation of the quote clause(s) that overlap the claim most.

    A long quote may negate something the claim does not talk about ("existing
    subscriptions are not changed, new ones default to on"); only the clauses the
    claim is about should decide whether polarity agrees.
    """
    return {_is_negated(c) for c in _best_clauses(claim_terms, quote)}


def _direction(text: str) -> tuple[bool, bool]:
    stems = {stem(t) for t in tokens(text)}
    return bool(stems & UP_STEMS), bool(stems & DOWN_STEMS)


def _direction_mismatch(claim: str, claim_terms: set[str], quote: str) -> bool:
    """The claim moves one way ("increases") and the sentence it is about only the other ("reduces")."""
    up, down = _direction(claim)
    if up == down:  # no direction, or both: nothing clear to compare
        return False
    best_sentence = max(_sentences(quote), key=lambda s: len(claim_terms & set(content_stems(s))))
    q_up, q_down = _direction(best_sentence)
    return (up and q_down and not q_up) or (down and q_up and not q_down)


def _entity_in(ent: str, quote_lower: set[str], quote_terms: set[str], quote_text_lower: str) -> bool:
    low = ent.lower()
    if low in quote_lower or stem(ent) in quote_terms:
        return True
    # "AMPK" inside "AMPK-dependent", "ApoE4" vs "APOE4": the entity as a whole word of the quote text.
    if re.search(rf"(?<![^\W_]){re.escape(low)}(?![^\W_])", quote_text_lower):
        return True
    return _acronym_expanded(ent, quote_text_lower)


def _acronym_expanded(ent: str, quote_text_lower: str) -> bool:
    """An acronym written out in the quote: "DCs" ~ "dendritic cells", "HSC" ~ "haematopoietic stem cell"."""
    letters = ent.removesuffix("s") if ent.endswith("s") and ent[:-1].isupper() else ent
    if not (2 <= len(letters) <= 6 and letters.isalpha() and letters.isupper()):
        return False
    words = re.findall(r"[^\W\d_]+", quote_text_lower)
    n = len(letters)
    initials = "".join(w[0] for w in words)
    return letters.lower() in {initials[i : i + n] for i in range(len(initials) - n + 1)}


def _similarity(claim: str, quote: str, passage: str | None, embedder: Embedder) -> float:
    """Cosine of the claim with its best-matching sentence (of the quote, or of the quote as a whole)."""
    candidates = list(dict.fromkeys([quote, *_sentences(quote)]))
    vecs = embedder.embed([claim, *candidates])
    claim_vec = vecs[0]
    return float(max(float(claim_vec @ v) for v in vecs[1:]))


def support_features(
    claim: str, quote: str, *, passage: str | None = None, embedder: Embedder | None = None
) -> SupportFeatures:
    """Content-word coverage, numbers/dates, negation, direction, escalation, entities, similarity."""
    nc, nq = normalise_ws(claim), normalise_ws(quote)
    claim_toks, quote_toks = tokens(nc), tokens(nq)
    claim_terms = content_stems(nc)
    quote_terms = set(content_stems(nq))
    quote_lower = {t.lower() for t in quote_toks} | {stem(t) for t in quote_toks}
    unique_terms = list(dict.fromkeys(claim_terms))
    coverage = sum(1 for t in unique_terms if t in quote_terms) / len(unique_terms) if unique_terms else 0.0

    # Numbers and dates must match exactly; a different number measuring the same thing is a
    # contradiction ("30 days" vs "90 days"), a missing one is merely unsupported.
    conflicts: list[str] = []
    missing: list[str] = []
    quote_slots = _number_slots(quote_toks)
    quote_numbers = {n for n, _ in quote_slots}
    for num, neighbours in _number_slots(claim_toks):
        if num in quote_numbers:
            continue
        kind = _number_kind(num)
        conflict = any(
            qn != num and (neighbours & qn_neigh or (kind != "number" and _number_kind(qn) == kind))
            for qn, qn_neigh in quote_slots
        )
        (conflicts if conflict else missing).append(num)

    terms = set(claim_terms)
    negation_mismatch = _is_negated(nc) not in _quote_polarities(terms, nq)
    direction_mismatch = not negation_mismatch and _direction_mismatch(nc, terms, nq)

    escalations = [
        low
        for low in (t.lower() for t in claim_toks)
        # "never" in both claim and quote is fine; "never" only in the claim is an escalation.
        if low in ESCALATION_WORDS and low not in quote_lower and stem(low) not in quote_lower
    ]
    quote_text_lower = nq.lower()
    entities_missing = [
        e
        for e in _entities(claim_toks)
        # A single capital ("T cells", "vitamin D") is too ambiguous to name anything on its own.
        if len(e) > 1 and not _entity_in(e, quote_lower, quote_terms, quote_text_lower)
    ]
    similarity = _similarity(nc, nq, passage, embedder) if embedder is not None and nq else None
    return SupportFeatures(
        coverage=coverage,
        similarity=similarity,
        number_conflicts=tuple(dict.fromkeys(conflicts)),
        numbers_missing=tuple(dict.fromkeys(missing)),
        negation_mismatch=negation_mismatch,
        direction_mismatch=direction_mismatch,
        escalations=tuple(dict.fromkeys(escalations)),
        entities_missing=tuple(dict.fromkeys(entities_missing)),
    )


def feature_reasons(f: SupportFeatures) -> tuple[str, ...]:
    reasons = [f"coverage={f.coverage:.2f}"]
    if f.similarity is not None:
        reasons.append(f"similarity={f.similarity:.2f}")
    reasons += [f"number_conflict:{n}" for n in f.number_conflicts]
    reasons += [f"number_missing:{n}" for n in f.numbers_missing]
    if f.negation_mismatch:
        reasons.append("negation_mismatch")
    if f.direction_mismatch:
        reasons.append("direction_mismatch")
    reasons += [f"escalation:{w}" for w in f.escalations]
    reasons += [f"entity_missing:{e}" for e in f.entities_missing]
    return tuple(reasons)


def decide_support(f: SupportFeatures) -> SupportLabel:
    """The fallback's verdict from its features (lexical only, or lexical + embedding similarity).

    Conservative by design: only a restatement with nothing capping it is "supported";
    numbers, negation and direction are checked mechanically whatever the similarity says.
    """
    flipped = f.negation_mismatch or f.direction_mismatch
    capped = bool(f.escalations or f.entities_missing)
    if f.similarity is None:
        # Lexical only: the words themselves have to be there.
        if f.number_conflicts or (flipped and f.coverage >= PARTIAL_COVERAGE):
            return "contradicted"
        if f.numbers_missing or f.coverage < PARTIAL_COVERAGE:
            return "unsupported"
        if capped or f.coverage < SUPPORTED_COVERAGE:
            return "partially_supported"
        return "supported"
    sim = f.similarity
    if f.number_conflicts or (flipped and (sim >= SIM_CONTRADICTS or f.coverage >= PARTIAL_COVERAGE)):
        return "contradicted"
    if f.numbers_missing or (sim < SIM_RELATED and f.coverage < PARTIAL_COVERAGE):
        return "unsupported"
    if not capped and (sim >= SIM_SUPPORTED or f.coverage >= SUPPORTED_COVERAGE):
        return "supported"
    return "partially_supported"


def support_label(
    claim: str, quote: str, *, passage: str | None = None, embedder: Embedder | None = None
) -> tuple[SupportLabel, tuple[str, ...]]:
    """Does ``quote`` establish ``claim``?  The labelled fallback for a missing NLI model.

    Without ``embedder`` the verdict is lexical only; with one (MiniLM via
    ``get_backend("EMBEDDER")``) the similarity of the claim to its best-matching quote
    sentence also counts.  Returns the label and machine-readable reasons ("coverage=0.50",
    "similarity=0.71", "number_missing:30", "number_conflict:30", "negation_mismatch",
    "direction_mismatch", "escalation:entirely", "entity_missing:Acme", "verbatim").
    """
    nc, nq = normalise_ws(claim), normalise_ws(quote)
    if nc and _TERMINAL_RE.sub("", nc) == _TERMINAL_RE.sub("", nq):
        return "supported", ("verbatim",)
    if not content_stems(nc):
        return "unsupported", ("empty_claim",)
    f = support_features(nc, nq, passage=passage, embedder=embedder)
    return decide_support(f), feature_reasons(f)


def weakest(labels: Collection[SupportLabel]) -> SupportLabel:
    """The least supportive label; an empty collection is "unsupported" (nothing was cited)."""
    if not labels:
        return "unsupported"
    return min(labels, key=lambda lab: _LABEL_RANK[lab])


# --------------------------------------------------------------------------- claim verification


def _evidence_date(ev: EvidenceRecord) -> date | None:
    ts: datetime | None = ev.updated_at or ev.created_at
    return ts.date() if ts is not None else None


class Judge(Protocol):
    """A support judge (``answers.judge.OpenAICompatibleJudge``); raises ``answers.judge.JudgeError``."""

    name: str
    version: str

    def judge(self, claim: str, quote: str, passage: str = "") -> Any: ...


def _is_verbatim(claim_text: str, quote: str) -> bool:
    nc, nq = normalise_ws(claim_text), normalise_ws(quote)
    return bool(nc) and _TERMINAL_RE.sub("", nc) == _TERMINAL_RE.sub("", nq)


def needs_support_model(claim: DraftClaim) -> bool:
    """False when every citation's quote *is* the claim: then support is direct and no model is asked."""
    return any(not _is_verbatim(claim.text, c.quote) for c in claim.citations)


# --------------------------------------------------------------------------- relevance

# Words that say how a question is asked, not what it asks about: they never count as the
# asked attribute ("how much paid parental leave do I get" asks about "paid parental leave").
_NOT_ATTRIBUTE = frozenset(
    content_stems(
        "how much many what which who whom whose when where why does do did get got give gives is are was were "
        "tell me us my our i you your we latest newest recent most current last previous prior preceding "
        "quarter quarters quarterly year years fiscal fy annual period report reported reports filing filings "
        "company company's compare compared comparison versus vs change changed q1 q2 q3 q4 first second third "
        "fourth 10-q 10-k form please there any"
    )
)  # fmt: skip
# An attribute and the words sources use for it (filings say "net sales", people say "revenue").
_ATTRIBUTE_SYNONYMS: dict[str, frozenset[str]] = {
    stem(k): frozenset(content_stems(v))
    for k, v in {
        "revenue": "revenue revenues sales net sales",
        "sales": "sales revenue revenues",
        "profit": "profit income earnings",
        "earnings": "earnings income profit",
        "income": "income earnings profit",
        "headcount": "headcount employees",
        "vacation": "vacation leave annual",
    }.items()
}
_HOW_MUCH_RE = re.compile(r"\bhow\s+(?:much|many|long|large|big|high)\b|\bwhat\s+(?:was|were|is|are)\s+the\s+"
                          r"(?:amount|number|total|percentage|value)\b", re.I)  # fmt: skip
_WHEN_RE = re.compile(r"^\s*when\b|\bwhat\s+(?:date|day|year|month)\b|\bby\s+when\b", re.I)
_HAS_NUMBER_RE = re.compile(r"\d|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|"
                            r"thirty|forty|fifty|hundred|half|dozen)\b", re.I)  # fmt: skip
_HAS_DATE_RE = re.compile(
    r"\b(?:19|20)\d{2}\b|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s+\d{1,2}\b"
    r"|\b\d{1,2}/\d{1,2}/\d{2,4}\b|\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|daily|"
    r"weekly|monthly|annually|yearly|every|each|before|after|within|days?|weeks?|months?)\b",
    re.I,
)


def attribute_synonyms(term_stem: str) -> frozenset[str]:
    """The stems sources use for an asked attribute ("revenue" -> "sales", "net")."""
    return _ATTRIBUTE_SYNONYMS.get(term_stem, frozenset())


# Attributes that are amounts: "what was Apple's revenue" asks for a number as surely as "how much".
_QUANTITY_RE = re.compile(
    r"^\s*what\s+(?:was|were|is|are)\b.*\b(?:revenues?|sales|income|profits?|earnings|margins?|costs?|prices?|"
    r"rates?|headcount|expenses?|eps|cash|debt|dividends?|amount|total|percentage)\b",
    re.I,
)
_LEGALESE_RE = re.compile(
    r"\bforward[\s-]looking\s+statements?\b|\bsafe\s+harbor\b|\bundue\s+reliance\b"
    r"|\b(?:see|refer\s+to)\s+(?:note|part|item)\s+[\dIVX]|\btable\s+of\s+contents\b",
    re.I,
)
MIN_ATTRIBUTE_COVERAGE = 0.5  # share of the asked attribute's words (or synonyms) a claim must carry


def answer_type(question: str) -> str:
    """ "number" for how-much/how-many and amount questions, "date" for when-questions, else ""."""
    if _WHEN_RE.search(question):
        return "date"
    if _HOW_MUCH_RE.search(question) or _QUANTITY_RE.search(question):
        return "number"
    return ""


def attribute_terms(plan: QueryPlan) -> frozenset[str]:
    """The stems of what the question asks about: its content words minus entities, periods and question form."""
    parsed = plan.parsed
    named: set[str] = set()
    for surface, canonical in parsed.entities:
        named.update(content_stems(surface))
        named.update(content_stems(canonical))
    for p in parsed.periods:
        named.update(content_stems(p.label))
    words = [t for t in content_stems(parsed.text) if t not in named and t not in _NOT_ATTRIBUTE]
    return frozenset(w for w in words if not is_number(w))


def relevance_reasons(claim_text: str, cited: Sequence[tuple[EvidenceRecord, str]], plan: QueryPlan) -> list[str]:
    """Why a claim does not answer *this* question (empty when it does).

    ``wrong_entity:<id>`` (the cited source is about another entity of the kind asked),
    ``wrong_period:<id>`` (a filing about another period than the one resolved),
    ``product_not_mentioned:<name>``, ``attribute_not_addressed`` (none of the asked attribute's
    words, or their usual synonyms, in the claim, its quotes or the source title),
    ``no_number_for_how_much`` / ``no_date_for_when`` (the answer type is missing).
    """

    reasons: list[str] = []
    for ev, _quote in cited:
        entity = str((ev.about or {}).get("entity") or "")
        for company in plan.entity_scope:
            if entity and entity != company:
                reasons.append(f"wrong_entity:{ev.id}")
            elif not entity and not (mentions(ev.title, company) or mentions(ev.text, company)):
                reasons.append(f"wrong_entity:{ev.id}")
        period_end = str((ev.about or {}).get("period_end") or "")
        if plan.period_scope and entity and period_end and period_end not in plan.period_scope:
            reasons.append(f"wrong_period:{ev.id}")
    said = " ".join([claim_text, *(q for _e, q in cited)])
    _companies, products = bound_entities(plan.parsed)
    for product in products:
        if not mentions(said, product):
            reasons.append(f"product_not_mentioned:{product}")
    kind = answer_type(plan.parsed.original)
    # The attribute check applies where generic sentences win today: questions bound to an
    # entity or period, and how-much / when questions.  Elsewhere a question's content words
    # ("what changed in release N") are too generic to demand in the claim.
    targeted = bool(plan.entity_scope or plan.period_scope or products or kind)
    asked = attribute_terms(plan) if targeted else frozenset()
    if asked:
        have = set(content_stems(said + " " + " ".join(ev.title for ev, _q in cited)))
        covered = sum(1 for t in asked if ({t} | _ATTRIBUTE_SYNONYMS.get(t, frozenset())) & have)
        if covered / len(asked) < MIN_ATTRIBUTE_COVERAGE:
            reasons.append("attribute_not_addressed")
    if _LEGALESE_RE.search(claim_text):
        # Cross-references and forward-looking-statement legalese share words with many
        # questions and answer none of them.
        reasons.append("boilerplate")
    if kind == "number" and not _HAS_NUMBER_RE.search(claim_text):
        reasons.append("no_number_for_how_much")
    if kind == "date" and not _HAS_DATE_RE.search(claim_text):
        reasons.append("no_date_for_when")
    return reasons


def verify_claim(
    claim: DraftClaim,
    evidence_by_id: Mapping[str, EvidenceRecord],
    plan: QueryPlan,
    *,
    authorised_ids: Collection[str],
    embedder: Embedder | None = None,
    judge: Judge | None = None,
) -> VerificationResult:
    """Quote check, support check and time-scope check for one draft claim.

    Support comes from the lexical fallback (plus MiniLM similarity when ``embedder`` is
    given); with a ``judge``, every non-verbatim citation whose quote checked out is also
    put to the judge, whose label then decides (``method="judge"``), except that a number
    or date the quote does not bear out still caps it.  A judge that fails (timeout, HTTP
    error, bad JSON) leaves the lexical label in place: ``method="lexical-fallback"`` and
    a ``judge_error:<kind>`` reason.

    Reasons: "no_citations", "unknown_evidence:<id>", "unauthorised_evidence:<id>",
    "quote_not_found:<id>", "short_quote", "undated", "out_of_time_scope:<id>",
    "judge:<label>", "judge_error:<kind>", plus the support reasons of :func:`support_label`.
    """
    reasons: list[str] = []
    if not claim.citations:
        # Nothing cited means nothing to check: the claim can never be released.
        return VerificationResult(
            claim_id=claim.id,
            quote_ok=False,
            support="unsupported",
            in_scope=True,
            method="lexical-fallback",
            reasons=("no_citations",),
        )

    authorised = authorised_ids if isinstance(authorised_ids, (set, frozenset)) else set(authorised_ids)
    scope = plan.parsed.time_filter  # only an explicit after:/before: request filters on updated dates
    quote_ok = True
    in_scope = True
    labels: list[SupportLabel] = []
    all_verbatim = True
    to_judge: list[tuple[int, str, str, bool]] = []  # (label index, quote, passage, numbers disagree)

    for cit in claim.citations:
        ev = evidence_by_id.get(cit.evidence_id)
        cit_ok = False
        if ev is None:
            quote_ok = False
            reasons.append(f"unknown_evidence:{cit.evidence_id}")
        elif cit.evidence_id not in authorised:
            # Checked before reading the passage: a draft must not be able to cite (or probe)
            # evidence the requesting user may not see, whatever the writer was given.
            quote_ok = False
            ev = None
            reasons.append(f"unauthorised_evidence:{cit.evidence_id}")
        elif not quote_in_passage(cit.quote, ev.text):
            quote_ok = False
            reasons.append(f"quote_not_found:{cit.evidence_id}")
        else:
            cit_ok = True
            if is_short_quote(cit.quote):
                reasons.append("short_quote")

        label, why = support_label(
            claim.text, cit.quote, passage=ev.text if ev is not None else None, embedder=embedder
        )
        labels.append(label)
        if why != ("verbatim",):
            all_verbatim = False
            if cit_ok and ev is not None:
                numbers_off = any(r.startswith(("number_conflict:", "number_missing:")) for r in why)
                to_judge.append((len(labels) - 1, cit.quote, ev.text, numbers_off))
        reasons.extend(why)

        if plan.version_scope and ev is not None and ev.version_label:
            # The plan resolved which version the question is about ("latest" -> N); a passage
            # documenting another version may be true and still answer a different question.
            if version_key(ev.version_label) != version_key(plan.version_scope):
                in_scope = False
                reasons.append(f"out_of_version_scope:{cit.evidence_id}")

        if scope is not None and ev is not None:
            d = _evidence_date(ev)
            if d is None:
                in_scope = False
                reasons.append("undated")
            elif (scope.after is not None and d < scope.after) or (scope.before is not None and d >= scope.before):
                in_scope = False
                reasons.append(f"out_of_time_scope:{cit.evidence_id}")

    method = "verbatim" if all_verbatim else "lexical-fallback"
    # A claim that already failed the quote or scope check is dropped whatever a judge says: don't pay for one.
    if judge is not None and to_judge and quote_ok and in_scope:
        judged, failed = _ask_judge(judge, claim.text, to_judge, labels, reasons)
        if judged and not failed:
            method = "judge"

    if is_instruction(claim.text):
        labels.append("unsupported")
        reasons.append("instruction_in_claim")

    # Relevance: a quoted, supported sentence may still answer a different question (another
    # company's filing, another quarter, a sentence that only shares a word with the question).
    cited = [(evidence_by_id[c.evidence_id], c.quote) for c in claim.citations if c.evidence_id in evidence_by_id]
    irrelevant = relevance_reasons(claim.text, cited, plan) if cited else []
    reasons.extend(f"not_relevant:{r}" for r in irrelevant)

    return VerificationResult(
        claim_id=claim.id,
        quote_ok=quote_ok,
        support=weakest(labels),
        in_scope=in_scope,
        method=method,
        reasons=tuple(dict.fromkeys(reasons)),
        relevant=not irrelevant,
    )


def _ask_judge(judge: Judge, claim_text: str, to_judge: list[tuple[int, str, str, bool]],
               labels: list[SupportLabel], reasons: list[str]) -> tuple[int, int]:  # fmt: skip
    """Replace lexical labels by the judge's, in place; returns (judged, failed) counts."""

    judged = failed = 0
    for index, quote, passage, numbers_off in to_judge:
        try:
            verdict = judge.judge(claim_text, quote, passage)
        except JudgeError as exc:
            failed += 1
            reasons.append(f"judge_error:{exc.kind.split(':')[0]}")
            continue
        judged += 1
        reasons.append(f"judge:{verdict.label}")
        # Numbers and dates are checked mechanically; a small model reading "30" as "90" must not win.
        labels[index] = weakest([verdict.label, labels[index]]) if numbers_off else verdict.label
    return judged, failed


class LexicalVerifier:
    """``settings.CAIRN["VERIFIER"]`` without models: the lexical fallback only (fast, deterministic)."""

    name = "lexical-verifier"
    version = VERIFIER_VERSION
    uses_embedder = False
    uses_judge = False

    def release(self) -> dict[str, str]:
        return {"name": self.name, "version": self.version}

    def verify_claim(self, claim: DraftClaim, evidence_by_id: Mapping[str, EvidenceRecord], plan: QueryPlan, *,
                     authorised_ids: Collection[str]) -> VerificationResult:  # fmt: skip
        return verify_claim(claim, evidence_by_id, plan, authorised_ids=authorised_ids)


class ClaimVerifier(LexicalVerifier):
    """The default ``settings.CAIRN["VERIFIER"]``: lexical + MiniLM similarity, and the tenant's judge.

    The embedder is the process-wide ``get_backend("EMBEDDER")`` (loaded once); the judge is
    built per claim from the current tenant's writer settings, so a change of writer applies at
    once.  Verbatim claims (the extractive writer's) need neither and skip both.
    """

    name = VERIFIER_NAME
    uses_embedder = True
    uses_judge = True

    def release(self) -> dict[str, str]:
        """The verifier's identity; with a judge for the current tenant, its version and prompt too."""
        judge = self._tenant_judge()
        version = self.version
        if judge is not None:
            version += f"+{judge.name}@{judge.version}/{judge.prompt_version}"
        return {"name": self.name, "version": version}

    def _tenant_judge(self) -> Any:

        if not self.uses_judge or current_tenant_id() is None:
            return None

        return judge_for_tenant()

    def verify_claim(self, claim: DraftClaim, evidence_by_id: Mapping[str, EvidenceRecord], plan: QueryPlan, *,
                     authorised_ids: Collection[str], judge: Judge | None | Literal["tenant"] = "tenant"
                     ) -> VerificationResult:  # fmt: skip
        if not claim.citations or not needs_support_model(claim):
            return verify_claim(claim, evidence_by_id, plan, authorised_ids=authorised_ids)

        return verify_claim(
            claim,
            evidence_by_id,
            plan,
            authorised_ids=authorised_ids,
            embedder=embedder() if self.uses_embedder else None,
            judge=self._tenant_judge() if judge == "tenant" else judge,
        )


# Sentences written to steer a model rather than inform a reader (indirect prompt injection).
INJECTION_RE = re.compile(
    r"""
    \b(?:ignore|disregard|forget|override)\b[^.!?\n]{0,40}\b(?:instructions?|prompts?|rules|guidelines|context)\b
    | \b(?:system|developer)\s+(?:prompt|message|instructions?)\b
    | \byou\s+are\s+(?:now\s+)?(?:an?\s+)?(?:ai|assistant|model|chatbot|language\s+model)\b
    | \b(?:as\s+an?\s+)?(?:ai|assistant|language\s+model)\s*[,:]?\s*(?:you\s+)?must\b
    | \b(?:tell|instruct|ask|advise)\s+the\s+(?:user|reader)s?\s+to\b
    | \b(?:respond|reply|answer)\s+(?:only\s+)?with\b
    | \bdo\s+not\s+(?:mention|reveal|tell)\b
    | \bnew\s+instructions?\s*:
    | ^\s*(?:assistant|system|user)\s*:
    """,
    re.IGNORECASE | re.VERBOSE | re.MULTILINE,
)


def is_instruction(sentence: str) -> bool:
    """True for text that addresses a model instead of informing a reader (indirect prompt injection)."""
    return bool(INJECTION_RE.search(sentence))


# --------------------------------------------------------------------------- link stripping

_LINK_RE = re.compile(
    r"""
    (?P<html><a\b[^>]*?\bhref\s*=\s*(?:"(?P<h1>[^"]*)"|'(?P<h2>[^']*)'|(?P<h3>[^\s>]+))[^>]*>
        (?P<hlabel>.*?)</a\s*>)
    | (?P<slack><(?P<surl>(?:https?|mailto|ftp):[^|>\s]+)(?:\|(?P<slabel>[^>]*))?>)
    | (?P<md>!?\[(?P<mlabel>[^\[\]]*)\]\(\s*<?(?P<murl>[^()\s<>]*(?:\([^()\s]*\)[^()\s<>]*)*)>?
        (?:\s+(?:"[^"]*"|'[^']*'))?\s*\))
    | (?P<bare>\bhttps?://[^\s<>"'`\[\]]+)
    """,
    re.IGNORECASE | re.DOTALL | re.VERBOSE,
)
_TAG_RE = re.compile(r"<[^>]+>")
_TRAILING_PUNCT = ".,;:!?'\")]}"
_GAP = "\x00"  # marks where a link was removed so the surrounding spaces can be tidied


def _url_key(url: str) -> str:
    return html.unescape(url.strip()).rstrip("/")


def strip_unsupported_links(text: str, allowed_urls: Collection[str]) -> tuple[str, int]:
    """Remove links whose target is not an allowed (cited) URL, keeping their label text.

    Handles markdown links/images, Slack ``<url|label>``, HTML anchors and bare
    http(s) URLs.  A label is itself cleaned, so a disguised link such as
    ``[https://allowed](https://evil)`` cannot smuggle an unapproved URL out as text.
    Returns the cleaned text and the number of links removed.
    """
    allowed = {_url_key(u) for u in allowed_urls}
    removed = 0

    def clean(fragment: str) -> str:
        return _LINK_RE.sub(replace, fragment)

    def replace(m: re.Match[str]) -> str:
        nonlocal removed
        if m.group("bare"):
            url = m.group("bare")
            # Sentence punctuation after a URL is not part of it; give it back to the text.
            trail = ""
            while url and url[-1] in _TRAILING_PUNCT:
                if url[-1] == ")" and url.count("(") >= url.count(")"):
                    break
                trail = url[-1] + trail
                url = url[:-1]
            if _url_key(url) in allowed:
                return url + trail
            removed += 1
            return _GAP + trail
        if m.group("html"):
            url = m.group("h1") or m.group("h2") or m.group("h3") or ""
            label = _TAG_RE.sub("", m.group("hlabel"))
        elif m.group("slack"):
            url, label = m.group("surl"), m.group("slabel") or ""
        else:
            url, label = m.group("murl") or "", m.group("mlabel") or ""
        clean_label = clean(label)
        if _url_key(url) in allowed:
            if clean_label == label:
                return m.group(0)
            # Allowed target, but the label shows some other URL: keep the link honest.
            return m.group(0).replace(label, clean_label, 1)
        removed += 1
        return clean_label if clean_label.strip() else _GAP

    out = clean(text.replace(_GAP, ""))
    out = re.sub(
        rf"([ \t]*){_GAP}+([ \t]*)",
        lambda g: " " if g.group(1) and g.group(2) else "",
        out,
    )
    return out, removed


_VERSION_PART_RE = re.compile(r"\d+|[a-z]+")


def version_key(label: str) -> tuple[tuple[int, int | str], ...]:
    """Sortable key for version labels: "3.10" > "3.9", "v16" == "16", "2023-Q3" > "2023-Q1"."""
    parts = _VERSION_PART_RE.findall(label.lower().removeprefix("v"))
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in parts)


# Imperative openings that ask the reader to *do* something: a claim may only carry one
# when a cited passage says the same thing.
_CTA_RE = re.compile(
    r"^\W*(?:please\s+)?(?:click|tap|download|install|visit|go\s+to|open|call|phone|e-?mail|contact|send|"
    r"share|sign\s+(?:in|up)|log\s*in|login|register|enter|paste|run|execute|buy|pay|transfer|reply|forward|"
    r"reset|disable|enable|upload|scan)\b"
    r"|\byou\s+(?:should|must|need\s+to|have\s+to)\s+(?:click|download|install|visit|call|contact|send|"
    r"share|sign|log|enter|run|pay|transfer|upload|reset|disable)\b",
    re.IGNORECASE,
)
_SENT_SPLIT_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(\[])")


def strip_unsupported_calls_to_action(text: str, cited_passages: Collection[str]) -> tuple[str, int]:
    """Remove sentences that tell the reader to act unless a cited passage supports them."""
    kept: list[str] = []
    removed = 0
    for sentence in _SENT_SPLIT_RE.split(text.strip()):
        if sentence and (_CTA_RE.search(sentence) or is_instruction(sentence)):
            supported = not is_instruction(sentence) and any(
                quote_in_passage(sentence, p) or support_label(sentence, p)[0] == "supported" for p in cited_passages
            )
            if not supported:
                removed += 1
                continue
        kept.append(sentence)
    return " ".join(kept), removed


__all__ = [
    "ESCALATION_WORDS",
    "NEGATION_CUES",
    "STOPWORDS",
    "content_stems",
    "is_number",
    "is_short_quote",
    "normalise_ws",
    "quote_in_passage",
    "stem",
    "INJECTION_RE",
    "is_instruction",
    "strip_unsupported_calls_to_action",
    "strip_unsupported_links",
    "version_key",
    "support_label",
    "tokens",
    "ClaimVerifier",
    "LexicalVerifier",
    "SupportFeatures",
    "decide_support",
    "needs_support_model",
    "support_features",
    "verifier_release",
    "verify_claim",
    "weakest",
]

"""The quote check and the support check: is the quote in the passage, does the passage support the claim.

Split out of ``answers.verification``, which combines them into a verdict per claim.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, Protocol

from answers.contracts import SupportLabel
from answers.lexicon import (
    _SENT_SPLIT_RE,
    ESCALATION_WORDS,
    NEGATION_CUES,
    STOPWORDS,
    _norm_number,
    content_stems,
    is_number,
    normalise_ws,
    stem,
    tokens,
)

# Coverage thresholds of the lexical fallback; changing them changes verdicts, so bump the version.
SUPPORTED_COVERAGE = 0.9


PARTIAL_COVERAGE = 0.6


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

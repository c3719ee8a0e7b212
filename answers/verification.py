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
from collections.abc import Collection, Mapping
from datetime import date, datetime

from answers.contracts import DraftClaim, EvidenceRecord, QueryPlan, SupportLabel, VerificationResult

VERIFIER_NAME = "lexical-verifier"
VERIFIER_VERSION = "1"

# Coverage thresholds of the lexical fallback; changing them changes verdicts, so bump the version.
SUPPORTED_COVERAGE = 0.9
PARTIAL_COVERAGE = 0.6


def verifier_release() -> dict[str, str]:
    """Identity of this verifier, recorded in every answer's release metadata."""
    return {"name": VERIFIER_NAME, "version": VERIFIER_VERSION}


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


def _quote_polarities(claim_terms: set[str], quote: str) -> set[bool]:
    """Negation of the quote clause(s) that overlap the claim most.

    A long quote may negate something the claim does not talk about ("existing
    subscriptions are not changed, new ones default to on"); only the clauses the
    claim is about should decide whether polarity agrees.
    """
    clauses = [c for c in _CLAUSE_SPLIT_RE.split(quote) if c and c.strip()]
    if not clauses:
        return {False}
    overlaps = [len(claim_terms & set(content_stems(c))) for c in clauses]
    best = max(overlaps)
    if best == 0:
        return {_is_negated(quote)}
    return {_is_negated(c) for c, o in zip(clauses, overlaps, strict=True) if o == best}


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


def support_label(claim: str, quote: str) -> tuple[SupportLabel, tuple[str, ...]]:
    """Does ``quote`` establish ``claim``?  The lexical fallback for a missing NLI model.

    Returns the label and machine-readable reasons ("coverage=0.50",
    "number_missing:30", "number_conflict:30", "negation_mismatch",
    "escalation:entirely", "entity_missing:Acme", "verbatim").
    """
    nc, nq = normalise_ws(claim), normalise_ws(quote)
    if nc and _TERMINAL_RE.sub("", nc) == _TERMINAL_RE.sub("", nq):
        return "supported", ("verbatim",)

    claim_toks, quote_toks = tokens(nc), tokens(nq)
    claim_terms = content_stems(nc)
    quote_terms = set(content_stems(nq))
    quote_lower = {t.lower() for t in quote_toks} | {stem(t) for t in quote_toks}
    reasons: list[str] = []
    if not claim_terms:
        return "unsupported", ("empty_claim",)

    unique_terms = list(dict.fromkeys(claim_terms))
    covered = sum(1 for t in unique_terms if t in quote_terms)
    coverage = covered / len(unique_terms)
    reasons.append(f"coverage={coverage:.2f}")

    contradicted = False
    unsupported = False
    capped = False  # at most partially_supported

    # Numbers and dates must match exactly; a different number measuring the same thing is a
    # contradiction ("30 days" vs "90 days"), a missing one is merely unsupported.
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
        if conflict:
            contradicted = True
            reasons.append(f"number_conflict:{num}")
        else:
            unsupported = True
            reasons.append(f"number_missing:{num}")

    claim_negated = _is_negated(nc)
    if claim_negated not in _quote_polarities(set(claim_terms), nq):
        contradicted = True
        reasons.append("negation_mismatch")

    for tok in claim_toks:
        low = tok.lower()
        if low in ESCALATION_WORDS and low not in quote_lower and stem(low) not in quote_lower:
            # "never" in both claim and quote is fine; "never" only in the claim is an escalation
            # even when negation already flagged it, so the trace names both.
            capped = True
            reasons.append(f"escalation:{low}")

    for ent in _entities(claim_toks):
        if ent.lower() not in quote_lower and stem(ent) not in quote_terms:
            capped = True
            reasons.append(f"entity_missing:{ent}")

    label: SupportLabel
    if contradicted:
        label = "contradicted"
    elif unsupported or coverage < PARTIAL_COVERAGE:
        label = "unsupported"
    elif capped or coverage < SUPPORTED_COVERAGE:
        label = "partially_supported"
    else:
        label = "supported"
    return label, tuple(dict.fromkeys(reasons))


def weakest(labels: Collection[SupportLabel]) -> SupportLabel:
    """The least supportive label; an empty collection is "unsupported" (nothing was cited)."""
    if not labels:
        return "unsupported"
    return min(labels, key=lambda lab: _LABEL_RANK[lab])


# --------------------------------------------------------------------------- claim verification


def _evidence_date(ev: EvidenceRecord) -> date | None:
    ts: datetime | None = ev.updated_at or ev.created_at
    return ts.date() if ts is not None else None


def verify_claim(
    claim: DraftClaim,
    evidence_by_id: Mapping[str, EvidenceRecord],
    plan: QueryPlan,
    *,
    authorised_ids: Collection[str],
) -> VerificationResult:
    """Quote check, support check and time-scope check for one draft claim.

    Reasons: "no_citations", "unknown_evidence:<id>", "unauthorised_evidence:<id>",
    "quote_not_found:<id>", "short_quote", "undated", "out_of_time_scope:<id>",
    plus the support reasons of :func:`support_label`.
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
    scope = plan.parsed.time
    quote_ok = True
    in_scope = True
    labels: list[SupportLabel] = []
    all_verbatim = True

    for cit in claim.citations:
        ev = evidence_by_id.get(cit.evidence_id)
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
        elif is_short_quote(cit.quote):
            reasons.append("short_quote")

        label, why = support_label(claim.text, cit.quote)
        labels.append(label)
        if why != ("verbatim",):
            all_verbatim = False
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

    if is_instruction(claim.text):
        labels.append("unsupported")
        reasons.append("instruction_in_claim")

    return VerificationResult(
        claim_id=claim.id,
        quote_ok=quote_ok,
        support=weakest(labels),
        in_scope=in_scope,
        method="verbatim" if all_verbatim else "lexical-fallback",
        reasons=tuple(dict.fromkeys(reasons)),
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
    "verifier_release",
    "verify_claim",
    "weakest",
]

"""How one delivered answer is scored against the labelled set (``data/correctness.jsonl``).

Every judgement here is independent of the pipeline under test: facts are matched as normalised
strings and numbers, relevance is decided from the gold passages and the gold facts, the entity of a
cited document comes from the labelled corpus keys.  Nothing calls the verifier, the writer or the
reranker.

Matching rules (``normalise``): lower case; Markdown links keep their text; thousands separators
dropped (``81,797`` = ``81797``); every other non-alphanumeric character except a decimal point and
``%`` becomes a space; a fact must occur on word boundaries.  A fact is a string of alternatives
separated by `` | `` (``"12 weeks | twelve weeks"``): any one of them states it.  An amount with a unit
(``"18.1 billion"``) is also stated by an amount that rounds to it at the gold's precision (``18.12
billion``, ``18,120 million``); a figure copied from a statement in millions (``"6,800"``) is also stated
by the prose's rounding of it in billions (``6.80 billion``, with at least one decimal).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

CATEGORIES = ("factual", "table_number", "period", "negative", "multi_hop", "follow_up", "restricted_reader",
              "restricted_non_reader", "no_answer")  # fmt: skip
_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3}\b)")
_NON_WORD = re.compile(r"[^a-z0-9.%]+")
_LONE_DOT = re.compile(r"(?<!\d)\.|\.(?!\d)")

# Source markup that must never reach a reader (issue 14 section 4): Markdown emphasis and links,
# Liquid/Jekyll tags, HTML tags and entities, table pipes, heading hashes, code ticks.
RAW_MARKUP = re.compile(
    r"\*\*|__|\]\(|\{%|%\}|\{\{|\}\}|</?[a-zA-Z][a-zA-Z0-9]*(?:\s[^<>]*)?>|&(?:[a-z]+|#\d+);|\s\|\s|^\s*\||"
    r"(?:^|\s)#{1,6}\s|`"
)


def normalise(text: str) -> str:
    text = _LINK.sub(r"\1", text.lower())
    text = text.replace("\u2019", "'").replace("\u2013", "-").replace("\u2014", "-")
    text = _THOUSANDS.sub("", text)
    text = _NON_WORD.sub(" ", text)
    text = _LONE_DOT.sub(" ", text)
    return " " + " ".join(text.split()) + " "


def alternatives(fact: str) -> list[str]:
    return [a.strip() for a in fact.split(" | ") if a.strip()]


_AMOUNT = re.compile(r"^\s*(\d+(?:\.\d+)?) (million|billion)\s*$")
_AMOUNT_IN_TEXT = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?) (million|billion)\b")
_SCALE = {"million": 1.0, "billion": 1000.0}


def _states_amount(text_norm: str, alt_norm: str) -> bool:
    """A gold amount with a unit ("18.1 billion") is stated by any amount in the text that rounds to it at
    the gold's precision: "18.12 billion" and "18,120 million" state it, "18.3 billion" does not."""
    m = _AMOUNT.match(alt_norm)
    if not m:
        return False
    decimals = len(m.group(1).split(".")[1]) if "." in m.group(1) else 0
    unit = _SCALE[m.group(2)]
    want = round(float(m.group(1)), decimals)
    for value, scale in _AMOUNT_IN_TEXT.findall(text_norm):
        if round(float(value) * _SCALE[scale] / unit, decimals) == want:
            return True
    return False


_TABLE_FIGURE = re.compile(r"^\d{1,3}(?:,\d{3})+$")
_BILLIONS_IN_TEXT = re.compile(r"(?<![\d.])(\d+(?:\.\d+)?) billion\b")


def _states_table_figure(text_norm: str, alt: str) -> bool:
    """A gold figure copied from a statement in millions ("6,800") is stated by the filing's own prose
    rounding of it in billions ("$6.80 billion", "$14.51 billion" for 14,514), at the prose's precision."""
    if not _TABLE_FIGURE.match(alt):
        return False
    millions = float(alt.replace(",", ""))
    for value in _BILLIONS_IN_TEXT.findall(text_norm):
        decimals = len(value.split(".")[1]) if "." in value else 0
        if decimals and round(millions / 1000.0, decimals) == float(value):
            return True
    return False


def states(text_norm: str, fact: str) -> bool:
    """Does the (normalised) delivered text state ``fact`` (any of its alternatives)?"""
    return any(
        normalise(alt) in text_norm
        or _states_amount(text_norm, normalise(alt))
        or _states_table_figure(text_norm, alt.strip())
        for alt in alternatives(fact)
    )


def quote_found(quote: str, passage: str, min_share: float = 0.8) -> bool:
    """The gold quote is in the passage: verbatim after normalisation, or (a chunk boundary or a
    re-rendered table row) at least ``min_share`` of its tokens in order-free overlap."""
    q, p = normalise(quote), normalise(passage)
    if q.strip() and q in p:
        return True
    tokens = q.split()
    if not tokens:
        return False
    have = set(p.split())
    return sum(t in have for t in tokens) / len(tokens) >= min_share


@dataclass(frozen=True)
class TurnScore:
    answered: bool  # at least one claim delivered and no abstention
    correct: bool  # answerable: every fact stated, no wrong fact; unanswerable: abstained
    facts_stated: int
    facts_total: int
    wrong_stated: list[str]
    claims: int
    relevant_claims: int
    markup_claims: int
    wrong_entity: bool | None  # None: not decidable (nothing cited or no entity labelled)
    cited_keys: list[str]
    conflict_shown: bool


def entity_of(doc_key: str) -> str:
    """The company/product/corpus a labelled document is about (``sec10q:2023 Q3 AAPL.pdf`` -> AAPL)."""
    if doc_key.startswith("sec10q:"):
        return doc_key.removesuffix(".pdf").split(" ")[-1]
    if doc_key.startswith("eng:"):
        return ENG_ENTITIES.get(doc_key, "eng")
    if doc_key.startswith(("handbook:", "section:")):
        return "handbook"
    return doc_key.split(":", 1)[0]


# The engineering pages of the demo (connectors/demo/exports.py ENG_PAGES) and what each is about.
ENG_ENTITIES = {"eng:40001": "ExampleDB", "eng:40002": "ExampleDB", "eng:40003": "ExampleDB", "eng:40004": "ExampleDB",
                "eng:40005": "orders-api", "eng:40006": "orders-worker", "eng:40007": "Foo"}  # fmt: skip


def asked_entities(item: dict[str, Any]) -> set[str]:
    """What the question is about: the labelled entity plus the entities of its gold documents (a
    multi-hop question about orders-api legitimately cites the Foo support policy)."""
    out = {entity_of(p["doc"]) for t in item["turns"] for p in t["passages"]}
    if item.get("entity"):
        out.add(item["entity"])
    return out


def claim_texts(response: dict[str, Any]) -> list[str]:
    return [str(c.get("text", "")) for c in (response.get("answer") or {}).get("claims") or []]


def cited_doc_pks(response: dict[str, Any]) -> list[list[int]]:
    """Per delivered claim, the document ids its citations point at."""
    ev = {e["id"]: e.get("document_id") for e in response.get("evidence", [])}
    out = []
    for claim in (response.get("answer") or {}).get("claims") or []:
        out.append([ev[c["evidence_id"]] for c in claim.get("citations", []) if c.get("evidence_id") in ev])
    return out


def turn_expect(item: dict[str, Any], turn: dict[str, Any]) -> str:
    """What a turn expects: the item's ``expect``, unless the turn sets its own (a conversation whose later turn
    asks something the corpus does not answer: ``{"expect": "abstain", "facts": [], "passages": []}``)."""
    return str(turn.get("expect") or item.get("expect") or "answer")


def score_turn(item: dict[str, Any], turn: dict[str, Any], response: dict[str, Any],
               doc_keys: dict[int, str]) -> TurnScore:  # fmt: skip
    """Score one turn's response.  ``doc_keys`` maps the asker's tenant's Document ids to labelled keys."""
    answer = response.get("answer") or {}
    texts = claim_texts(response)
    answered = bool(texts) and not answer.get("abstention")
    # The computed conclusion of a multi-hop or comparison answer ("No. orders-api uses Foo 3.2; ...") is
    # shown above the claims and is part of what the user reads.
    conclusion = str(answer.get("conclusion") or "") if answered else ""
    text_norm = normalise(" ".join([*texts, conclusion])) if answered else " "
    facts = list(turn.get("facts") or [])
    stated = sum(states(text_norm, f) for f in facts)
    # A labelled wrong figure counts when a claim states it as the answer: "up from $3.3 billion a year ago"
    # in the claim that states the gold figure is a comparison, not a wrong answer.
    pieces = [normalise(t) for t in [*texts, conclusion] if t] if answered else []
    wrong = [w for w in item.get("wrong") or []
             if any(states(p, w) and not any(states(p, f) for f in facts) for p in pieces)]  # fmt: skip
    if turn_expect(item, turn) == "abstain":
        correct = not answered
    else:
        correct = answered and stated == len(facts) and not wrong
    per_claim = cited_doc_pks(response) if answered else []
    cited = sorted({doc_keys.get(pk, f"unlabelled:{pk}") for pks in per_claim for pk in pks})
    quotes = [p["quote"] for p in turn.get("passages") or []]
    relevant = sum(claim_addresses(text, facts, quotes) for text in (texts if answered else []))
    markup = sum(bool(RAW_MARKUP.search(t)) for t in [*texts, conclusion] if t) if answered else 0
    asked = asked_entities(item)
    wrong_entity: bool | None = None
    if answered and cited and asked:
        wrong_entity = any(entity_of(k) not in asked for k in cited if not k.startswith("unlabelled:"))
    conflict = answered and (response.get("conflict") or {}).get("status") not in (None, "", "none")
    return TurnScore(answered, correct, stated, len(facts), wrong, len(texts) if answered else 0, relevant, markup,
                     wrong_entity, cited, conflict)  # fmt: skip


STOPWORDS = frozenset(
    "a an and are as at be by can do does for from has have how i if in is it its me my of on or our so that the "
    "their them there these this to was we were what when where which who will with you your".split()
)


def content_tokens(text: str) -> set[str]:
    return {t for t in normalise(text).split() if t not in STOPWORDS}


def claim_addresses(claim: str, facts: Sequence[str], quotes: Sequence[str], min_share: float = 0.5) -> bool:
    """Does a delivered claim address the question?  Independently of the verifier: it states a gold
    fact, or it carries at least half of the content words of a gold passage quote.  A claim from the
    right page that says something else (the page's other sentences) does not count."""
    norm = normalise(claim)
    if any(states(norm, f) for f in facts):
        return True
    have = content_tokens(claim)
    for quote in quotes:
        want = content_tokens(quote)
        if want and len(want & have) / len(want) >= min_share:
            return True
    return False


def gold_in_top(turn: dict[str, Any], ranked: Sequence[tuple[str, str]], k: int = 10) -> bool | None:
    """Retrieval recall@k of the gold passage: one of the first ``k`` (doc key, chunk text) pairs is a
    gold document whose text holds that document's gold quote.  None when the turn has no gold passage."""
    gold = [(p["doc"], p["quote"]) for p in turn.get("passages") or []]
    if not gold:
        return None
    for key, text in ranked[:k]:
        if any(key == g and quote_found(q, text) for g, q in gold):
            return True
    return False


def percentile(values: Iterable[float], q: float) -> float | None:
    xs = sorted(values)
    if not xs:
        return None
    pos = (len(xs) - 1) * q
    lo, hi = int(pos), min(int(pos) + 1, len(xs) - 1)
    return round(xs[lo] + (xs[hi] - xs[lo]) * (pos - lo), 1)

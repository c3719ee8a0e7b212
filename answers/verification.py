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

import re
from collections.abc import Collection, Mapping, Sequence
from datetime import date, datetime
from typing import Any, Literal, Protocol

from answers.contracts import DraftClaim, EvidenceRecord, QueryPlan, SupportLabel, VerificationResult
from answers.judge import JudgeError, judge_for_tenant
from answers.lexicon import (
    ASKS_DEADLINE_RE,
    NUMBER_WORD_VALUES,
    asked_clause,
    asked_part,
    asked_sentence,
    asks_for_a_case,
    attribute_synonyms,
    content_stems,
    content_stems_with_parts,
    identifier_spans,
    is_longer_form,
    is_number,
    normalise_ws,
    question_form_stems,
    ranking_words,
    version_key,
)
from answers.sanitise import is_instruction
from answers.scoping import bound_entities, mentions
from answers.support import _TERMINAL_RE, Embedder, is_short_quote, quote_in_passage, support_label, weakest
from core.backends import embedder, get_backend
from tenants.context import current_tenant_id

VERIFIER_NAME = "lexical-embedding-verifier"


# 3: the relevance check counts a name the passage abbreviates as addressed, refuses a company's filing for a
#    question about the asker, reads "What's the limit/deadline ..." as an amount/date question and a form number
#    as no amount.  The answer cache keys on this (engine.cache_key), so cached answers of 2 are not served.
# 4: a cost, fee, fare or credit limit needs an amount of money (``no_amount_for_a_price``); a clipped name ("Tech
#    Ops") is the name its passage spells out ("TTS Tech Operations").  The same release carries the engine's
#    scope change (a question naming no company is not answered from one of several companies' filings,
#    engine.apply_scope), which the cache key has no version of its own for.
# 5: the engine's weak-evidence bar is lower (engine.CASE_RULE_THRESHOLD) when a kept claim is a rule for the case
#    the question describes; like 4's scope change, it rides on this release so cached abstentions are not served.
#    So does the evidence change for which-questions (a passage naming nothing takes in the next sentence that
#    names something, answers/evidence.py).
# 6: a source about either of two named companies may answer (answers/scoping._allowed).
# 7: the asked attribute leaves out the question's form ("how long", "what's the deadline") and the asker's own
#    words; a hyphenated word's parts and a name's longer forms ("Reservist" for "Reserve") count as said.
# 8: the headings a passage sits under count as said (not for names); a name in a first question's situation is not
#    demanded; a product may be named anywhere in the cited passage; "what percentage of" needs a number; whether a
#    rule allows it ("Is that OK …?") and "how much time" are the question's form.
# 9: the engine's lower weak-evidence bar also holds when a kept claim is a rule about the act a yes-or-no question
#    asks about (answers/abstention.rules_on_the_asked_act); it rides on this release as 5's did. A hyphenated name
#    in a first question's situation ("a private-sector job") is not demanded, as 8 did for other names.
# 10: a short last question about "it" ("Would I even get paid back for it?") is asked with the question before it
#     (answers/lexicon.asked_sentence), for the relevance check and the weak-evidence rule alike; "without" and
#     "exempt" in the asked clause ask what is not needed (answers/lexicon.asks_negated).
# 11: a name with an acronym in it is named by the acronym with the other words' initials ("TTSC" for "TTS
#     Consulting", ``names_phrase``). Two rules of the engine's compound parts ride on this release: a part that names
#     nothing of its own ("… and who would I even ask?") is not answered alone after an earlier part found nothing,
#     and a part that finds only earlier parts' sentences is asked again without the asker's situation.
# 12: a derived noun and its verb are one word ("approval" / "approved", answers/lexicon.stem); a follow-up after an
#     abstained turn is read in the conversation's context when it answers from none of that turn's evidence
#     documents (answers/followups.conversation_documents).
# 13: "how far in advance", "how far ahead" and "how soon" ask for a number, and "advance" / "ahead" are the question's
#     form; the weak-evidence rule counts an abbreviation the evidence defines as its words (answers/engine); a place
#     or an everyday abbreviation ("Colorado's", "HMO", "SUV") is not an unknown organisation (answers/scoping).
VERIFIER_VERSION = "13"


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


# Words that say how a question is asked, not what it asks about: they never count as the
# asked attribute ("how much paid parental leave do I get" asks about "paid parental leave").
_NOT_ATTRIBUTE = frozenset(
    content_stems(
        "how much many what which who whom whose when where why does do did get got give gives is are was were "
        "tell me us my our i you your we latest newest recent most current last previous prior preceding "
        "quarter quarters quarterly year years fiscal fy annual period report reported reports filing filings "
        "company company's compare compared comparison versus vs change changed q1 q2 q3 q4 first second third "
        "fourth 10-q 10-k form please there any given need needs needed before use using go goes going went "
    # "How big was it? I need this year's number, not the Q1 2022 one": words for the figure asked, not
    # what it is a figure of.
    "number numbers figure figures one ones big large size "
    # "Once I'm back and file the voucher, ...": the asker, not what is asked about.
    "i'm i've i'll i'd we're we've we'll we'd"
    )
)  # fmt: skip


_HOW_MUCH_RE = re.compile(r"\bhow\s+(?:much|many|long|large|big|high|soon|far\s+(?:in\s+)?(?:advance|ahead))\b"
                          r"|\bwhat\s+(?:was|were|is|are)\s+the\s+"
                          r"(?:amount|number|total|percentage|value)\b"
                          # "What percentage of my salary comes out of each paycheck ...?"
                          r"|\bwhat\s+(?:percentage|percent|share|portion)\s+of\b", re.I)  # fmt: skip


_WHEN_RE = re.compile(r"^\s*when\b|\bwhat\s+(?:date|day|year|month)\b|\bby\s+when\b", re.I)
# "When I add that key to GitHub, which key type should I choose?": a clause saying when, then the question.
_WHEN_CLAUSE_RE = re.compile(
    r"^\s*when\s+(?:i|you|we|they|he|she|someone|people|my|our|your|a|an|the)\b[^,?]*,\s*"
    r"(?:how|what|which|who|where|why|can|could|do|does|should|is|are|will|would|may|must)\b",
    re.I,
)


# "Who is the director of TTS Outreach?": the answer is somebody, named (or reachable at an address).
_WHO_ROLE_RE = re.compile(
    r"^\s*who\s+(?:is|was|are|were)\s+(?:the|our|my|their)\s+(?:[\w-]+\s+){0,2}"
    r"(?:director|head|lead|leader|manager|chief|owner|chair|chairperson|administrator|officer|executive|president|"
    r"deputy|coordinator|principal)s?\b",
    re.I,
)
_NAME_RE = re.compile(r"\b[A-Z][a-z]+(?:[-'’][A-Z]?[a-z]+)?(?:\s+[A-Z]\.)?(?:\s+[A-Z][a-z]+(?:[-'’][A-Z]?[a-z]+)?)+\b")
_ADDRESS_RE = re.compile(r"\b[\w.+-]+@[\w-]+\.[\w.]+\b|(?<!\w)@[a-z][\w.-]+")


def names_someone(sentence: str, question: str) -> bool:
    """A person's name the question does not already hold ("Star Vanamali"), or an address to reach one."""
    if _ADDRESS_RE.search(sentence):
        return True
    asked = {w.lower() for w in re.findall(r"[A-Za-z]+", question)}
    for m in _NAME_RE.finditer(sentence):
        before = sentence[: m.start()].split()[-1:]
        if before and (before[0].lower() in _ARTICLES or (len(before[0]) > 1 and before[0].isupper())):
            continue  # "the TTS Technology Portfolio": an organisation, not a person
        words = m.group(0).replace(".", " ").split()
        if any(w.lower() not in asked and w.lower() not in _NOT_A_NAME for w in words if len(w) > 1):
            return True
    return False


_ARTICLES = frozenset("the a an our your their its this that these those".split())
_NOT_A_NAME = frozenset(
    "the a an our your their this that these those if when for to in of on and or with at by from as team teams "
    "office division group program programs service services general administration federal government agency "
    "january february march april may june july august september october november december monday tuesday "
    "wednesday thursday friday saturday sunday please note see contact coordinate work use".split()
)


# One to twenty from the lexicon's table of number words ("at least fourteen days before departure"), and the tens.
_SPELLED_NUMBERS = "|".join(w for w, n in NUMBER_WORD_VALUES.items() if n >= 1)
_HAS_NUMBER_RE = re.compile(rf"\d|\b(?:{_SPELLED_NUMBERS}|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred|"
                            r"half|dozen)\b"
                            # "There is no limit on how many times ..." answers a how-many question.
                            r"|\b(?:no|without\s+a(?:ny)?)\s+(?:limit|maximum|cap)\b|\bunlimited\b|\bas\s+many\s+times\b",
                            re.I)  # fmt: skip


# Numbers that only say which period a sentence is about: "Q3 2023", "fiscal 2022", "three months ended
# September 30, 2023", "the first nine months of 2022".
_PERIOD_NUMBERS_RE = re.compile(
    r"\b(?:(?:q[1-4]|fy|fiscal(?:\s+year)?)\s*)?(?:19|20)\d{2}\b"
    r"|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s+\d{1,2}\b"
    r"|\b(?:three|six|nine|twelve|3|6|9|12)\s+months\s+ended\b|\b(?:first\s+)?(?:three|six|nine)\s+months\s+of\b"
    r"|\bq[1-4]\b",
    re.I,
)


# Numbers that only name a form or a code: "SF-182s", "W-2", "Tock #1810"; none is an amount.
_CODE_NUMBERS_RE = re.compile(r"\b[A-Z]{1,4}-\d+[A-Za-z]*\b|#\d+")
# "How many units …", not "how many dollars …".
_HOW_MANY_RE = re.compile(r"\bhow\s+many\b(?!\s+(?:dollars|bucks|usd)\b)", re.I)
_PERCENT_RE = re.compile(r"\(?-?\d+(?:\.\d+)?\)?\s?%")
_MONEY_NUMBER_RE = re.compile(r"-?[$€£]\s?-?\(?\d[\d,.]*\)?(?:\s*(?:million|billion|thousand|trillion))?", re.I)


def _states_only_money(text: str) -> bool:
    """Every number the text states (dates, periods and percentages aside) is an amount of money, and it states
    one."""
    rest = _PERCENT_RE.sub(" ", _PERIOD_NUMBERS_RE.sub(" ", text))
    return bool(_MONEY_NUMBER_RE.search(rest)) and not re.search(r"\d", _MONEY_NUMBER_RE.sub(" ", rest))


_HAS_DATE_RE = re.compile(
    r"\b(?:19|20)\d{2}\b|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec)[a-z]*\.?\s+\d{1,2}\b"
    r"|\b\d{1,2}/\d{1,2}/\d{2,4}\b|\b(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday|daily|"
    r"weekly|monthly|annually|yearly|every|each|before|after|within|days?|weeks?|months?|"
    # A period answers "when" as well as a date does ("closes in the third quarter", "in Q3", "next year").
    r"quarters?|q[1-4]|years?|spring|summer|autumn|winter|today|tomorrow|tonight)\b"
    r"|\b\d{1,2}(?::\d{2})?\s*(?:a\.?m\.?|p\.?m\.?)",
    re.I,
)


# Attributes that are amounts: "what was Apple's revenue" asks for a number as surely as "how much".
_MEASURE = (
    r"(?:revenues?|sales|income|profits?|earnings|margins?|costs?|prices?|rates?|headcount|expenses?|eps|cash|"
    r"debt|dividends?|amount|total|percentage|limits?|maximum|minimum|fees?|fares?|budgets?|allowances?|salary)"
)
_QUANTITY_RE = re.compile(
    rf"^\s*what(?:\s+(?:was|were|is|are)\b|['’]s\b).*\b{_MEASURE}\b"
    # "What gross margin in dollars did Intel report ...?"
    rf"|^\s*what\s+(?:[\w-]+\s+){{0,3}}{_MEASURE}\b(?:\s+in\s+dollars)?\s+(?:did|does|do|has|have|will)\b"
    r"|\bin\s+dollars\b",
    re.I,
)


_LEGALESE_RE = re.compile(
    r"\bforward[\s-]looking\s+statements?\b|\bsafe\s+harbor\b|\bundue\s+reliance\b"
    r"|\b(?:see|refer\s+to)\s+(?:note|part|item)\s+[\dIVX]|\btable\s+of\s+contents\b",
    re.I,
)


# "How much did X spend / earn / pay …?" asks for an amount; "how much did X grow" or a question that
# names a share asks for a percentage.
_HOW_MUCH_AMOUNT_RE = re.compile(r"\bhow\s+much\b", re.I)
_ASKS_SHARE_RE = re.compile(
    r"\b(?:percent|percentage|%|share|margin|rate|ratio|proportion|grow|grew|growth|change|changed|increase|"
    r"increased|decrease|decreased|decline|declined|rise|rose|fall|fell|drop|dropped)\b|\bby\s+how\s+much\b"
    r"|\bhow\s+much\s+of\b",
    re.I,
)
_PERCENT_RE = re.compile(r"\d\s*(?:%|percent\b)", re.I)
_AMOUNT_RE = re.compile(
    r"[$€£]\s?\d|\b\d[\d,.]*\s*(?:million|billion|thousand|trillion|dollars|usd)\b|\b\d{1,3}(?:,\d{3})+\b", re.I
)


def asks_for_an_amount(question: str) -> bool:
    clause = asked_clause(question)
    return bool(_HOW_MUCH_AMOUNT_RE.search(clause)) and not _ASKS_SHARE_RE.search(clause)


def states_only_a_share(claim_text: str) -> bool:
    """A percentage and no amount: a growth row, not the figure."""
    return bool(_PERCENT_RE.search(claim_text)) and not _AMOUNT_RE.search(claim_text)


MIN_ATTRIBUTE_COVERAGE = 0.5  # share of the asked attribute's words (or synonyms) a claim must carry


def answer_type(question: str) -> str:
    """ "number" for how-much/how-many and amount questions, "date" for when-questions, "person" for
    who-holds-this-role questions, else ""."""
    question = asked_clause(question)
    asks_a_time = _WHEN_RE.search(question) or ASKS_DEADLINE_RE.search(question)
    if asks_a_time and not _WHEN_CLAUSE_RE.match(question) and not asks_for_a_case(question):
        return "date"
    if _WHO_ROLE_RE.search(question):
        return "person"
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
    named |= ranking_words(parsed.original)
    # "How long can a repo sit idle ...?", "What's the deadline to choose ...?": the question's form, answered by a
    # duration or a date, as the weak-evidence rule reads it (answers/abstention.py).
    named |= question_form_stems(parsed.original)
    words = [t for t in content_stems(parsed.text) if t not in named and t not in _NOT_ATTRIBUTE]
    return frozenset(w for w in words if not is_number(w))


def latest_attribute_terms(plan: QueryPlan, asked: frozenset[str]) -> frozenset[str]:
    """In a resolved follow-up, those of the question's attribute terms ``asked`` that its last question uses
    ("fare" of "How much is that BART fare: I'm flying into SFO ... by public transit?"); empty otherwise."""
    text = plan.parsed.text
    last = asked_clause(text)
    if last == text:
        return frozenset()
    latest = set(content_stems(last))
    return frozenset(t for t in asked if t in latest)


_NAMED_VERSION_RE = re.compile(r"\b([A-Z][A-Za-z]*[A-Za-z])\s+v?(\d{1,3}(?:\.\d+){0,2})(?!\d|[.,]\d|\s*(?:%|percent))")
_NOT_A_PRODUCT = frozenset(
    "january february march april may june july august september october november december jan feb mar apr jun "
    "jul aug sep sept oct nov dec monday tuesday wednesday thursday friday saturday sunday q fy form item part "
    "note section page step chapter table figure top".split()
)


def named_versions(text: str) -> list[tuple[str, str]]:
    """Product + version pairs a question names ("ExampleDB 12", "Foo 3.2"); not dates, quarters or sections."""
    out = []
    for m in _NAMED_VERSION_RE.finditer(text):
        name, number = m.group(1), m.group(2)
        if name.lower() in _NOT_A_PRODUCT:
            continue
        out.append((name, number))
    return out


# A name the question spells with capitals, two words or more, not at its start: "Business Operations
# Division", "New Supervisor Playbook", "Greater China".
_NAMED_PHRASE_RE = re.compile(
    r"(?<=\s)((?:[A-Z][a-z]+|[A-Z]{2,})(?:\s+(?:of\s+|and\s+|the\s+)?(?:[A-Z][a-z]+|[A-Z]{2,}))+)\b"
)


_NEGATED_BEFORE_RE = re.compile(
    r"\b(?:not|never|no|other than|except|besides|excluding|without|unlike|apart from)(?:\s+[\w'-]+){0,3}\s*$|n't"
    r"(?:\s+[\w'-]+){0,3}\s*$",
    re.I,
)


def named_phrases(question: str) -> list[str]:
    """Multi-word names in the question (after its first word); acronyms alone ("GSA IT") name nothing here,
    and neither does a name the question sets aside ("Apart from HR Links, where else ...?" is answered by a
    source that need not mention HR Links)."""
    return [
        m.group(1)
        for m in _NAMED_PHRASE_RE.finditer(question)
        if not all(w.isupper() for w in m.group(1).split()) and not _NEGATED_BEFORE_RE.search(question[: m.start()])
    ]


def phrase_words(phrase: str) -> set[str]:
    return set(content_stems(" ".join(w for w in phrase.split() if not w.isupper())))


def names_phrase(phrase: str, text: str, titles: str = "", seen: set[str] | None = None) -> bool:
    """Whether ``text`` (a passage, with its ``titles``) names ``phrase``: all its words, its initials as
    sources write it after the first use ("The Work Number (TWN)"), or run together ("HRLinks" for "HR Links")."""
    words = phrase_words(phrase)
    if seen is None:
        seen = set(content_stems(f"{text} {titles}"))
    if not words or words <= seen:
        return True
    if all(w in seen or any(is_longer_form(s, w) for s in seen) for w in words):
        return True  # "the National Guard or as a Reservist" names "Guard and Reserve"
    initials = "".join(w[0] for w in phrase.split() if w[:1].isupper())
    # An acronym in the name gives all its letters: "TTS Consulting" is "TTSC", as "TTSC pulse check surveys".
    spelled = "".join(w if w.isupper() else w[0] for w in phrase.split() if w[:1].isupper())
    if any(len(i) >= 2 and re.search(rf"\b{i}\b", text) is not None for i in {initials, spelled}):
        return True
    joined = re.escape(phrase.replace(" ", ""))
    if re.search(rf"\b{joined}\b", f"{text} {titles}", re.I) is not None:
        return True
    if len(phrase.split()) < 2:
        return False  # one clipped word ("Ops") would be the start of too many others ("Open")
    # Clipped words, as people say them: "Tech Ops" for "TTS Tech Operations", "Eng Docs" for "Engineering
    # Documentation".
    clipped = r"\s+".join(rf"{re.escape(w[:-1] if w.endswith('s') and len(w) > 2 else w)}\w*" for w in phrase.split())
    return re.search(rf"\b{clipped}\b", f"{text} {titles}") is not None


def code_identifiers(question: str) -> list[str]:
    """Lower-case names joined by hyphens or underscores: "orders-api", "lr_example_parallel_apply".

    A claim about "orders-worker" or about a folder's owner does not answer "Who owns orders-api?".
    """
    # "Which service is not owned by payments-platform?" is about the other services.
    return [name for start, name in identifier_spans(question) if not _NEGATED_BEFORE_RE.search(question[:start])]


# The asker in the first person singular ("I", "my", "me"): "we" and "our" may be the company whose own filing
# the tenant holds ("What was our revenue last quarter?"); "I" never is.
_FIRST_PERSON_RE = re.compile(r"\b(?:i|i'm|i’m|i've|i’ve|i'd|i’d|i'll|i’ll|my|me|mine|myself)\b", re.I)


# "Tell me / show me the total revenue of the latest quarter" asks for the figure, not about the asker.
_ME_AS_ADDRESSEE_RE = re.compile(r"\b(?:tell|show|give|let|help|remind|send|walk)\s+me\b", re.I)


def asks_about_the_asker(plan: QueryPlan) -> bool:
    """A question about the asker's own situation that names no company ("How much tax gets withheld from my
    award?")."""
    if plan.entity_scope or plan.parsed.entities:
        return False
    return bool(_FIRST_PERSON_RE.search(_ME_AS_ADDRESSEE_RE.sub(" ", plan.parsed.original)))


# What a price is asked with ("How much does it cost?", "What's the credit limit on the card?") ...
_ASKS_A_PRICE_RE = re.compile(r"\b(?:costs?|price[sd]?|fees?|fares?|credit\s+limit|charged?)\b", re.I)
# ... and what states one: an amount (``_AMOUNT_RE``), or that there is none to pay.
_NOTHING_TO_PAY_RE = re.compile(r"\bfree\b|\bno\s+(?:cost|charge|fee)s?\b|\bat\s+no\s+(?:cost|charge)\b", re.I)


def asks_a_price(question: str) -> bool:
    return bool(_ASKS_A_PRICE_RE.search(asked_clause(question)))


def titles_of(cited: Sequence[tuple[EvidenceRecord, str]]) -> str:
    return " ".join(ev.title for ev, _q in cited)


def headings_of(cited: Sequence[tuple[EvidenceRecord, str]]) -> str:
    """The headings the cited passages sit under: they say what a sentence is about ("Voting and poll
    volunteering"), but not which named thing ("TTS" in one heading and "Outreach" in a sentence name no
    "TTS Outreach")."""
    return " ".join(ev.heading for ev, _q in cited)


def relevance_reasons(claim_text: str, cited: Sequence[tuple[EvidenceRecord, str]], plan: QueryPlan) -> list[str]:
    """Why a claim does not answer *this* question (empty when it does).

    ``wrong_entity:<id>`` (the cited source is about another entity of the kind asked),
    ``wrong_period:<id>`` (a filing about another period than the one resolved),
    ``product_not_mentioned:<name>``, ``attribute_not_addressed`` (none of the asked attribute's
    words, or their usual synonyms, in the claim, its quotes or the source title),
    ``no_number_for_how_much`` / ``no_date_for_when`` (the answer type is missing), ``no_amount_for_a_price``
    (a cost, fee, fare or credit limit answered without an amount of money), ``share_for_an_amount``
    (a how-much question answered with a percentage and no amount), ``money_for_a_count`` (a how-many
    question answered with amounts of money only),
    ``version_not_mentioned:<name> <n>`` (the question names a version that neither the claim, its
    quotes nor the source's title or version label mention), ``identifier_not_mentioned:<name>`` (the
    same for a service or setting name such as "orders-api"), ``company_filing_for_the_asker:<id>`` (a
    question about the asker's own situation, naming no company, answered from a company's filing).
    """

    reasons: list[str] = []
    personal = asks_about_the_asker(plan)
    for ev, _quote in cited:
        entity = str((ev.about or {}).get("entity") or "")
        if personal and entity:
            # "What's the credit limit on the card once I have it?": a company's filing describes that company,
            # never the asker's own card, leave or pay.
            reasons.append(f"company_filing_for_the_asker:{ev.id}")
        # A question naming two companies is answered by sources about either of them.
        if plan.entity_scope and (
            entity not in plan.entity_scope
            if entity
            else not any(mentions(ev.title, c) or mentions(ev.text, c) for c in plan.entity_scope)
        ):
            reasons.append(f"wrong_entity:{ev.id}")
        period_end = str((ev.about or {}).get("period_end") or "")
        if plan.period_scope and entity and period_end and period_end not in plan.period_scope:
            reasons.append(f"wrong_period:{ev.id}")
    said = " ".join([claim_text, *(q for _e, q in cited)])
    # The passage a claim is cut from says what it is about: "Log in to HR Links; ...; Wait up to 5 business days
    # for the changes to take effect."; "... activating your iPhone. / Rules / Change the phone's passcode. It must
    # be longer than 14 characters ...".
    said_around = " ".join([said, *(ev.text for ev, _q in cited), titles_of(cited)])
    _companies, products = bound_entities(plan.parsed)
    for product in products:
        if not mentions(said_around, product):
            reasons.append(f"product_not_mentioned:{product}")
    named_words: set[str] = set()  # the words of the names the passage was checked to name
    if cited:
        seen = set(content_stems(said_around))
        # The question asked last: in a resolved follow-up the earlier one only says what "that" is, and the
        # answer it got (not the names it used) is what "that" stands for.
        # Of a first question, what it asks: a name in the asker's situation ("make Labor Day my official last
        # day. Is that OK, or is a holiday not allowed as the last day?") is their case, which a rule states in
        # general ("Your last day at TTS cannot be a federal holiday").
        for phrase in named_phrases(asked_part(plan.parsed.original)):
            # "the TTS Business Operations Division": a page about the Acquisition Division does not answer.
            if names_phrase(phrase, said_around, titles_of(cited), seen):
                named_words |= phrase_words(phrase)
            else:
                reasons.append(f"name_not_mentioned:{phrase}")
    kind = answer_type(plan.parsed.original)
    # The attribute check applies where generic sentences win today: questions bound to an
    # entity or period, and how-much / when questions.  Elsewhere a question's content words
    # ("what changed in release N") are too generic to demand in the claim.
    targeted = bool(plan.entity_scope or plan.period_scope or products or kind)
    asked = attribute_terms(plan) if targeted else frozenset()
    if asked:
        # A name the passage names counts as addressed: "How many free counseling sessions do I get through the
        # Employee Assistance Program?" is answered by "You can receive six free sessions ..." in a passage about
        # "The EAP", a sentence that need not spell the program's name again.
        # With the parts of hyphenated words: "(cash or time-off)" says "time".
        have = set(content_stems_with_parts(f"{said} {titles_of(cited)}")) | named_words
        # A heading says what the sentence is about, not which named thing: "TTS" in "TTS Operations support
        # services" does not make a sentence about "TTS Outreach".
        names = {w for phrase in named_phrases(plan.parsed.original) for w in content_stems(phrase)}
        have |= set(content_stems_with_parts(headings_of(cited))) - names
        covered = sum(1 for t in asked if ({t} | attribute_synonyms(t)) & have)
        # A follow-up's claim may address its last question alone: the earlier one only says what "that" is.
        latest = latest_attribute_terms(plan, asked)
        latest_covered = sum(1 for t in latest if ({t} | attribute_synonyms(t)) & have)
        # A question that opens with the asker's situation ("My legal name changed. After I update it in HR
        # Links, how long until the change takes effect?") is answered by a claim about what it asks.
        core = set(content_stems(asked_sentence(plan.parsed.original)))
        core_terms = [t for t in asked if t in core]
        core_covered = sum(1 for t in core_terms if ({t} | attribute_synonyms(t)) & have)
        if (
            covered / len(asked) < MIN_ATTRIBUTE_COVERAGE
            and (not latest or latest_covered / len(latest) < MIN_ATTRIBUTE_COVERAGE)
            and (len(core_terms) == len(asked) or not core_terms
                 or core_covered / len(core_terms) < MIN_ATTRIBUTE_COVERAGE)
        ):  # fmt: skip
            reasons.append("attribute_not_addressed")
    titles = " ".join(f"{ev.title} {ev.version_label}" for ev, _q in cited)
    for name, number in named_versions(plan.parsed.text or plan.original):
        # "the default in ExampleDB 12": a source about ExampleDB 17 does not answer it.
        if not re.search(rf"\b{re.escape(name)}\s*v?{re.escape(number)}(?!\d|\.\d)", f"{said} {titles}", re.I):
            reasons.append(f"version_not_mentioned:{name} {number}")
    # A multi-hop chain's later sources are about the value its first hop found ("Foo 3.2"), not the name
    # asked about (the chain binds each hop to its subject); so is a follow-up's ("When does its security
    # support end?" after "Which runtime does orders-api run on?"), hence the last question only.
    # Of a first question, what it asks, as for names: "a private-sector job" or "plain-language writing" in the
    # asker's situation is their case, which the rule that answers does not repeat.
    for name in [] if plan.hops else code_identifiers(asked_part(plan.parsed.text or plan.original)):
        if not re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", f"{said} {titles}", re.I):
            reasons.append(f"identifier_not_mentioned:{name}")
    if _LEGALESE_RE.search(claim_text):
        # Cross-references and forward-looking-statement legalese share words with many
        # questions and answer none of them.
        reasons.append("boilerplate")
    if kind == "number" and not _HAS_NUMBER_RE.search(
        _PERIOD_NUMBERS_RE.sub(" ", _CODE_NUMBERS_RE.sub(" ", claim_text))
    ):
        # "The decrease in sales and marketing costs ... in Q3 2023" names the period, not the amount asked;
        # "... mandatory OLU trainings, IDPs, SF-182s, annual reviews" names a form.
        reasons.append("no_number_for_how_much")
    elif (
        kind == "number"
        and asks_a_price(plan.parsed.original)
        and not (plan.entity_scope or plan.parsed.entities or any((ev.about or {}).get("entity") for ev, _ in cited))
        and not (_AMOUNT_RE.search(claim_text) or _NOTHING_TO_PAY_RE.search(claim_text))
    ):
        # "Roughly how much does an order of them cost?" is not answered by "Your voucher will be reviewed in 3-5
        # business days": a price is an amount of money.  A company's figures are left out: a filing's statement
        # rows are in millions without a currency sign ("Cost of sales: 45,384").
        reasons.append("no_amount_for_a_price")
    elif kind == "number" and _HOW_MANY_RE.search(plan.parsed.original) and _states_only_money(claim_text):
        # "How many iPhone units did Apple sell?" is not answered by the iPhone net sales row: a count is not an
        # amount of money.
        reasons.append("money_for_a_count")
    elif kind == "number" and asks_for_an_amount(plan.parsed.original) and states_only_a_share(claim_text):
        # "How much did Amazon spend on sales and marketing …?" is not answered by the row's "-4%" growth.
        reasons.append("share_for_an_amount")
    if kind == "date" and not _HAS_DATE_RE.search(claim_text):
        reasons.append("no_date_for_when")
    if kind == "person" and not names_someone(claim_text, plan.parsed.original):
        reasons.append("no_name_for_who")
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

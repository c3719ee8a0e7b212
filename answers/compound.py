"""Conjunctive questions: "What can I use to get it right away, and where do I get the Tokencode?"

Two questions joined by "and" are two lookups whose answers usually sit in different passages, often on
different pages.  One search for both ranks passages that half-match each, and the extractive writer's
lead sentence then answers one part at best.  ``split_compound`` cuts such a question into its parts;
the engine answers each part as a question of its own (``engine.compound_stage``) and releases the parts
that are supported, naming the ones that are not.

Each part keeps what the asker said around it: the sentences before or after the question ("I only
need Microsoft Office for a short while.") and a leading clause of the question sentence ("After
applying for my GSA travel card, …").  A bare "it" in the second part stands for the first part's
object when that object is a plain noun phrase ("Where should I save my git signing key, and what
password should I give it?" → "What password should I give my git signing key?"); any other pronoun in
a later part keeps the question whole unless a sentence around it says what the pronoun stands for.

Deliberately conservative: only a question word after "and" starts a part ("… and how do I …",
"…, and at which site …"), or a yes-or-no question's verb and subject ("…, and am I allowed to …"), and
both parts need two content words of their own, so an elliptic tail ("…, and for how much?", "… and
when?") stays one question: its answer is usually the same sentence.
Everything here is deterministic string work; nothing is retrieved.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from answers.lexicon import content_stems

__all__ = ["CompoundPart", "CompoundQuestion", "carried_part", "split_compound"]

_WH = r"(?:what|what's|where|which|who|whom|whose|when|how|why)"
_PREP = r"(?:at|in|on|for|from|to|with|by|through|via)"
# A clause or an adverb between "and" and the next question word: "…, and after I submit it, roughly how long …".
_CONDITION = r"(?:after|before|once|when|if|since|while|until)\s+[^,?]{3,80},\s*"
_ADVERB = r"(?:roughly|about|approximately|also|then|exactly|just)"
# A yes-or-no question of its own: "…, and am I allowed to use work hours for it?", "…, and is there some code …?",
# "…, and can TTS Operations set up the billable Tock project now?" (a name with a capital inside it: "TTS", "GSA",
# "OHRM", not any capitalised word).
_YES_NO = (
    r"(?:am|are|is|can|could|do|does|should|will|must|may)\s+"
    r"(?:I|we|you|it|they|there|my|our|the|that|this|those|(?-i:[A-Z][A-Za-z0-9&.-]*[A-Z0-9][A-Za-z0-9&.-]*))\b"
)
# "…, and where …", "… and how quickly …", "…, and at which site …", "…, and after I submit it, roughly how long …"
_JOIN = re.compile(
    rf",?\s+and\s+(?=(?:{_CONDITION})?(?:{_ADVERB}\s+)?(?:(?:{_PREP}\s+)?{_WH}\b|{_YES_NO}))", re.IGNORECASE
)
_FIRST_WH = re.compile(rf"\b{_WH}\b", re.IGNORECASE)
_SENTENCE = re.compile(r"(?<=[.?!])\s+(?=[A-Z\"'(])")
# The first part's object, for "it" in the second: "my git signing key", "the purchase request form".
_OBJECT = re.compile(r"\b(?P<np>(?:my|our|your|the|a|an)\s+[\w-]+(?:\s+[\w-]+){0,3})\s*$", re.IGNORECASE)
_IT = re.compile(r"\bit\b")
# The part's own noun phrase, then a clause holding the "it": the "it" is that noun. "where do I send Colorado's
# tax withholding form once I've filled it out" (the form, not the first part's move); "what's the password I
# should give it" has no such clause, so its "it" is still the first part's object.
_OWN_NOUN = re.compile(
    r"\b(?:my|our|your|the|a|an|this|(?!(?:what|that|it|there|here|who|where|how)['’]s)[A-Za-z]+['’]s)\s+[\w-]+"
    r".*\b(?:once|after|when|before|until|if|so\s+that)\b",
    re.I,
)
_PRONOUN = re.compile(r"\b(?:it|its|they|them|their|that|this|those|these)\b", re.I)
# "…, and what was the combined figure?": a later part about the first part's figures, not a lookup of its own.
_REFERS_BACK = re.compile(
    r"\b(?:combined|together|altogether|in\s+total|the\s+(?:figure|amount|number|total|sum|difference|gap))\b",
    re.I,
)
# A later part's pronoun that an earlier part's answer can stand for: "… to log in to it", "… get them".
_CARRIED = re.compile(r"\b(?:it|them)\b")
MIN_PART_CONTENT_WORDS = 2
MAX_PARTS = 3


@dataclass(frozen=True)
class CompoundPart:
    question: str  # the part as a question of its own, with the asker's context
    clause: str  # what the asker wrote for this part (named when it cannot be answered)


@dataclass(frozen=True)
class CompoundQuestion:
    parts: tuple[CompoundPart, ...]
    original: str


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.split(text.strip()) if s.strip()]


def _capitalise(text: str) -> str:
    return text[:1].upper() + text[1:]


def _as_question(clause: str) -> str:
    return clause.rstrip(" ,;:?.!") + "?"


def split_compound(question: str) -> CompoundQuestion | None:
    """The parts of a question that joins two or three questions with "and", or None."""
    sentences = _sentences(question)
    asked = [i for i, s in enumerate(sentences) if s.endswith("?")]
    if len(asked) != 1:
        return None  # none, or already several questions: each sentence is its own request
    at = asked[0]
    sentence = sentences[at]
    pieces: list[str] = []
    start = 0
    for m in _JOIN.finditer(sentence):
        pieces.append(sentence[start : m.start()])
        start = m.end()
    pieces.append(sentence[start:])
    if len(pieces) < 2 or len(pieces) > MAX_PARTS:
        return None
    # A leading clause before the first question word is context for every part:
    # "After applying for my travel card as a first-time traveler, what's the next step".
    prefix = ""
    first = _FIRST_WH.search(pieces[0])
    if first is not None and first.start() > 0:
        lead = pieces[0][: first.start()].rstrip()
        if lead.endswith(","):
            prefix, pieces[0] = lead + " ", pieces[0][first.start() :]
    clauses = [p.strip(" ,;") for p in pieces]
    if any(len(set(content_stems(c))) < MIN_PART_CONTENT_WORDS for c in clauses):
        return None
    before, after = sentences[:at], sentences[at + 1 :]
    parts: list[CompoundPart] = []
    obj = _OBJECT.search(clauses[0].rstrip(" ?"))
    for i, clause in enumerate(clauses):
        text = clause
        it = _IT.search(text)
        if (
            i > 0
            and obj is not None
            and it
            and not _IT.search(obj.group("np"))
            and not _OWN_NOUN.search(text[: it.start()])
        ):
            text = _IT.sub(obj.group("np"), text, count=1)
        if i > 0 and _REFERS_BACK.search(text):
            return None  # asked alone, "what was the combined figure?" would lose the company and the quarter
        if i > 0 and not before and not after and _PRONOUN.search(text):
            # "What was Intel's total revenue in Q3 2022 and how did it change year over year?": "it" is the
            # first part's figure, and no sentence around the question says what it is; asked alone, the
            # second part would lose the company and the quarter.
            return None
        body = prefix + text if prefix else _capitalise(text)
        parts.append(CompoundPart(" ".join([*before, _as_question(body), *after]), _as_question(_capitalise(clause))))
    return CompoundQuestion(tuple(parts), question)


def carried_part(clause: str, names: list[str]) -> str | None:
    """A later part asked again with what an earlier part's answer named in place of its pronoun, or None.

    "What can I use to get it right away, and where do I get the Tokencode to log in to it?": the second
    "it" is the first part's answer ("… you can access it right away through VDI"), not anything the asker
    wrote, so the part asked with the asker's words finds nothing.  Asked as "Where do I get the Tokencode
    to log in to VDI?" it is a lookup of its own.  The sentences around the question are left out: they
    set the scene for the first part, whose answer now says what the pronoun is.  The engine asks this
    only for a part that found no answer, so a part that the asker's words already answer is unchanged.
    """
    if not names:
        return None
    m = _CARRIED.search(clause)
    if m is None:
        return None
    text = clause[: m.start()] + " and ".join(names) + clause[m.end() :]
    return _as_question(_capitalise(text.strip()))

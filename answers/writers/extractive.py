"""The extractive writer: answers with whole sentences copied from the evidence.

It is the default writer because it needs no model and cannot hallucinate: each
claim is a sentence of an authorised passage, cited with that very sentence as
its quote, so the verifier's quote check passes by construction and support is
"verbatim".  What it can get wrong is *which* sentences it picks; scoring is
therefore transparent (idf-weighted query-term coverage, quoted-phrase bonus,
optional embedding similarity, a mild evidence-rank prior) so a bad pick can be
explained from the trace.
"""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from answers.contracts import Citation, DraftClaim, EvidenceRecord, QueryPlan
from answers.lexicon import (
    LIGHT_STEMS,
    NUMBER_WORD_VALUES,
    STOPWORDS,
    abbreviations_defined,
    asked_clause,
    asked_part,
    asked_sentence,
    asking_stems,
    asks_for_a_case,
    asks_negated,
    asks_superlative,
    attribute_synonyms,
    content_stems,
    content_stems_with_parts,
    is_longer_form,
    normalise_ws,
    question_form_stems,
    says_sales,
    states_negation,
    stem,
    token_spans,
    tokens,
    weigh_earlier_turns,
    with_abbreviations,
)
from answers.sanitise import is_instruction

WRITER_NAME = "extractive"
# 3: a financial-table row states only the cell of the period asked about
# 4: a measure narrowed by words the question does not use ("Gaming revenue" for "revenue"), and a table
#    row with no cell for the asked span and period (nine months only, for "the quarter ended ..."), rank lower
# 5: "which ... the highest ..." is answered by the row of one table that ranks first on the asked period's cell
# 6: a row is focused on the asked quarter's cell past its change cells; one figure two tables state is said once
# 7: a sentence that reads only with the one before it ("However, ...", "... both systems") is stated with it
# 8: a negated question ("… won't be paid out?") prefers a sentence that says what is not so; "when" asking in
#    which case ("When am I not allowed to …?") wants no date
# 9: a question word's contraction ("What's", "that's") is not a content word (answers/lexicon.STOPWORDS)
# 10: a whether-a-rule-allows-it question ("Do I still have to …?") prefers a sentence that states a rule; an
#     excluded term is found by its content words ("creating a public repo" ~ "create public repositories")
# 11: a sentence that covers most of the asked sentence qualifies though it repeats none of the asker's situation;
#     "voting" and "vote" are one word (answers/lexicon.stem)
# 12: a sentence that covers none of the asked sentence yields to one that does (``situation_only_factor``); a
#     resolved follow-up's asked sentence is its last question's
# 13: the sentence right after the lead that goes on about its subject is stated second (``continue_lead``); a
#     form's "Field name: 44-0553234" line is a labelled value; "Does SecOps have to wait …?" asks whether a rule
#     allows it, whoever the subject
# 14: the sentence right after the lead is stated though the answer is full (one claim over ``max_claims``); "ship"
#     is what a page says as "sent" (answers/lexicon); a when-question's passage takes a weekday or a time of day
# 15: up to two claims past ``max_claims`` as extras (``extra_claims``, ``DraftClaim.extra``); "how soon", "how
#     quickly", "how early" and "how far in advance / ahead" ask for a number
# 16: a table row whose first cell is a bracket holding the count the asker gives of the same thing ("eight direct
#     reports" in "Number of direct reports: >/=7") is preferred, a row whose bracket does not hold it held back
#     (``bracket_fits``)
# 17: a short step of a procedure whose number the renderer dropped ("For application name, enter Digital Signature
#     System (DSS)") is a claim (``_STEP_RE``); a derived noun and its verb are one word ("recusal" / "recusing",
#     answers/lexicon.stem), as are "children" and "child"; light verbs of the asked sentence ("anything extra I need
#     to do") are not words a sentence must cover to qualify; "because" and "whether" are stopwords
# 18: an abbreviation the evidence defines ("Employee Assistance Program (EAP)", or a page titled with its words)
#     stands for its words and they for it (answers/lexicon.abbreviations_defined); the sentence after the lead is
#     stated with the one that goes on from it; an instruction ending "with the following information:" is a claim
#     without the fields below it; a short value of "the" thing ("The current default is 90 days.") is read with
#     the sentence before it however long, and a full stop inside closing quotes ends that sentence
WRITER_VERSION = "18"


def writer_release() -> dict[str, str]:
    """Identity of this writer, recorded in every answer's release metadata."""
    return {"name": WRITER_NAME, "version": WRITER_VERSION}


# --------------------------------------------------------------------------- sentence splitting

# Abbreviations after which a period never ends a sentence (a capitalised word typically follows:
# "Dr. Smith", "e.g. Confluence").  Compared lowercased, without the final period.
_NEVER_FINAL = frozenset(
    {
        "e.g",
        "i.e",
        "vs",
        "cf",
        "viz",
        "approx",
        "dr",
        "mr",
        "mrs",
        "ms",
        "prof",
        "st",
        "jr",
        "sr",
        "gen",
        "rev",
        "hon",
        "mt",
        "ft",
        "u.s",
        "u.k",
        "u.n",
        "e.u",
        "a.m",
        "p.m",
        "ph.d",
        "et al",
        "al",
        "jan",
        "feb",
        "mar",
        "apr",
        "jun",
        "jul",
        "aug",
        "sep",
        "sept",
        "oct",
        "nov",
        "dec",
        "dept",
        "est",
    }
)
# Abbreviations that are usually followed by a number ("No. 5", "Fig. 3"); before a capitalised
# word they are more likely the end of a sentence ("... and so on etc. The next").
_BEFORE_NUMBER = frozenset({"no", "nos", "fig", "figs", "vol", "pp", "p", "sec", "ch", "art", "eq", "ref"})
_MAYBE_FINAL = frozenset({"etc", "inc", "ltd", "co", "corp", "llc", "plc"})

_TERMINATOR_RE = re.compile(r"[.!?]+[\"'\u201d\u2019)\]]*(?=\s|$)")
_LIST_MARKER_RE = re.compile(r"(?:[-*+\u2022>]|#{1,6}|\d{1,3}[.)])[ \t]+")
_LINE_TERMINAL = (".", "!", "?", ":", ";", ",", '"', "'", "\u201d", "\u2019")
_SENTENCE_END_RE = re.compile(r"[.!?][\"'\u201d\u2019)\]]*$")


def _word_before(text: str, pos: int) -> str:
    """The whitespace-delimited word ending at ``pos`` (exclusive), minus leading brackets/quotes."""
    start = pos
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    return text[start:pos].lstrip("([{\"'\u201c\u2018")


def _is_period_boundary(text: str, dot: int, term: str, nxt: str) -> bool:
    """Decide whether the "." run starting at ``dot`` ends a sentence; ``nxt`` is the next
    non-space character ("" at the end of the text)."""
    if not nxt:
        return True
    if nxt.islower():
        return False  # "approx. five", "U.S. government", "e.g. slack"
    if term != ".":
        return True  # an ellipsis, or a period inside closing quotes/brackets, before a capital
    word = _word_before(text, dot)
    low = word.lower()
    if low in _NEVER_FINAL:
        return False
    if low in _BEFORE_NUMBER:
        return not nxt.isdigit()
    if low in _MAYBE_FINAL:
        return True
    if re.fullmatch(r"(?:[A-Za-z]\.)+[A-Za-z]", word):
        return False  # dotted initialism: "U.S.", "e.g." written with capitals
    if len(word) == 1 and word.isupper():
        # "John F. Kennedy" vs "in release N. Existing ...": an initial follows a capitalised word.
        k = dot - 1
        while k > 0 and text[k - 1].isspace():
            k -= 1
        return k > 0 and not _word_before(text, k)[:1].isupper()
    return True


def _line_breaks(text: str) -> list[int]:
    """Offsets of newlines that end a sentence even without punctuation: paragraph breaks,
    list items, headings and short title-like lines.  Other newlines are hard wraps."""
    out: list[int] = []
    lines = text.split("\n")
    pos = 0
    for i, line in enumerate(lines[:-1]):
        nl = pos + len(line)
        pos = nl + 1
        cur = line.strip()
        nxt_line = lines[i + 1].strip()
        paragraph_break = not cur or not nxt_line
        list_item = bool(_LIST_MARKER_RE.match(nxt_line + " ") or _LIST_MARKER_RE.match(cur + " "))
        table_row = cur.startswith("|") or nxt_line.startswith("|")  # rows are records, not prose
        # A short unpunctuated line followed by a capital is a heading or label, not a hard wrap;
        # a wrapped line typically stops on a function word ("... wrapped by the").
        last_word = cur.split()[-1].lower() if cur else ""
        title_line = (
            not cur.endswith(_LINE_TERMINAL)
            and len(cur.split()) <= 12
            and nxt_line[:1].isupper()
            and last_word not in STOPWORDS
        )
        # "You should:" introduces what follows on the next line; it is not wrapped into it.
        colon_intro = cur.endswith(":") and nxt_line[:1].isupper()
        if paragraph_break or list_item or table_row or title_line or colon_intro:
            out.append(nl)
    return out


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Sentence spans ``(start, end)`` of ``text``; ``text[start:end]`` is the sentence,
    stripped of surrounding whitespace.

    A fast regex splitter rather than pysbd: it runs over every evidence passage on the
    request path.  It keeps abbreviations (e.g., i.e., Dr., U.S.), initials, decimals
    and version numbers inside their sentence, and ends sentences at paragraph breaks,
    list items and headings.
    """
    cuts: set[int] = set()
    for m in _TERMINATOR_RE.finditer(text):
        term = m.group(0)
        rest = text[m.end() :].lstrip()
        nxt = rest[:1]
        if "!" in term or "?" in term:
            if not nxt.islower():
                cuts.add(m.end())
        elif _is_period_boundary(text, m.start(), term, nxt):
            cuts.add(m.end())
    cuts.update(_line_breaks(text))

    spans: list[tuple[int, int]] = []
    start = 0
    for cut in sorted(cuts) + [len(text)]:
        if cut <= start:
            continue
        s, e = start, cut
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if s < e:
            spans.append((s, e))
        start = cut
    return spans


# A list introduced by a sentence ending in a colon ("Forms that have Docusign templates include:")
# arrives from the renderer as one short line per item, none of which reads as a claim on its own.
LIST_MAX_ITEMS = 12
_LIST_ITEM_MAX_WORDS = 15
_LIST_BLOCK_MAX_WORDS = 90


@dataclass(frozen=True)
class ListBlock:
    """A list introduction and its items: offsets into the text it was found in."""

    intro: tuple[int, int]
    items: tuple[tuple[int, int], ...]

    @property
    def span(self) -> tuple[int, int]:
        return self.intro[0], self.items[-1][1]


def _continues_sentence(line: str) -> bool:
    """ "Extended jury leave, or": a line that a sentence goes on from, so the lines are not a list."""
    line = line.rstrip()
    return line.endswith(",") or (bool(line) and line.split()[-1].lower() in ("or", "and"))


_TIME_OR_PHONE_RE = re.compile(r"\b\d{1,2}:\d{2}\b|\(?\b\d{3}\)?[-. ]\d{3}[-.]\d{4}\b")


def _list_item_span(text: str, start: int, end: int) -> tuple[int, int] | None:
    """The item's span without its marker when the line reads as a list item, else None."""
    m = _LIST_MARKER_RE.match(text[start:end])
    if m and not text[start:end].startswith("#"):
        start += m.end()
    item = text[start:end].strip()
    # A time of day or a phone number is one value, not a label's colon or a table's cells:
    # "800-367-5690 (Monday through Friday, 8:00 AM to 8:00 PM EST)" is an item.
    plain = _TIME_OR_PHONE_RE.sub(" ", item)
    if not item or item.startswith(("#", "|")) or ":" in plain or item.endswith("?") or _MARKUP_RE.search(item):
        return None  # a label line ("Contact us: ...") or a nested list's introduction ends the list
    if len(re.findall(r"(?<![\w.])[$(]?\d[\d,.]*", plain)) >= 2:
        return None  # "Americas $ 37,784 $ 40,882 (8)%": the lines of a table, not items
    if len(item.split()) > _LIST_ITEM_MAX_WORDS or _continues_sentence(item):
        return None
    return start, end


def group_list_blocks(text: str, spans: Sequence[tuple[int, int]]) -> list[tuple[int, int] | ListBlock]:
    """``spans`` (from ``split_sentences``) with each list introduction merged with the items after it.

    An item is a short line of its own after the introduction (no question, no colon of its own: a
    nested list is left alone); the list ends at the first line that is not one, and a line that
    continues a sentence ("Extended jury leave, or") means the lines were never a list.
    """
    out: list[tuple[int, int] | ListBlock] = []
    i = 0
    while i < len(spans):
        s, e = spans[i]
        intro = text[s:e]
        items: list[tuple[int, int]] = []
        j = i + 1
        if intro.endswith(":") and not intro.startswith(("#", "|")) and not _MARKUP_RE.search(intro):
            prev_end = e
            while j < len(spans) and len(items) < LIST_MAX_ITEMS and "\n" in text[prev_end : spans[j][0]]:
                item = _list_item_span(text, *spans[j])
                if item is None:
                    if _continues_sentence(text[spans[j][0] : spans[j][1]]):
                        items = []
                    break
                items.append(item)
                prev_end = spans[j][1]
                j += 1
        words = len(text[s : items[-1][1]].split()) if items else 0
        if items and words <= _LIST_BLOCK_MAX_WORDS:
            out.append(ListBlock((s, e), tuple(items)))
            i = j
        else:
            out.append((s, e))
            i += 1
    return out


def render_list(text: str, block: ListBlock, keep: Callable[[str], bool] = lambda _item: True) -> str | None:
    """ "Intro: item; item; item." from the block's own words, items failing ``keep`` left out (None if none is left)."""
    items = [normalise_ws(text[a:b]).rstrip(".;,") for a, b in block.items]
    kept = [item for item in items if item and keep(item)]
    if not kept:
        return None
    intro = normalise_ws(text[block.intro[0] : block.intro[1]])
    return f"{intro} {'; '.join(kept)}."


# --------------------------------------------------------------------------- the writer


@dataclass
class _Candidate:
    rank: int
    evidence_id: str
    start: int
    text: str
    terms: frozenset[str]
    shape: frozenset[str]  # lowercase tokens, for near-duplicate detection
    context: frozenset[str] = frozenset()  # stems of the page title and the heading above the sentence
    title: str = ""
    score: float = 0.0
    lexical: float = 0.0
    quote: str = ""  # the verbatim span cited, when it is not the claim text itself (a rendered list)
    label: bool = False  # a "Label - value" line, scored by its label
    paired: bool = False  # a value read with the sentence before it ("BART fares are ... . SFO to ... is $8.65")
    command: bool = False  # an instruction with the command it introduces
    # A sentence read with the one it continues is scored as the better of the two, not by their words
    # together: two sentences' words would outscore any single sentence that answers.
    sides: tuple[frozenset[str], ...] = ()

    @classmethod
    def of(cls, ev: EvidenceRecord, rank: int, start: int, text: str, about: str, context: frozenset[str],
           **extra: Any) -> _Candidate:  # fmt: skip
        """A candidate scored by the words of ``about``: the sentence itself, a list's introduction, a label."""
        return cls(rank=rank, evidence_id=ev.id, start=start, text=text, terms=frozenset(content_stems_with_parts(about)),
                   shape=frozenset(t.lower() for t in tokens(text)), context=context, title=ev.title or "",
                   **extra)  # fmt: skip


# "In a terminal, enter this command:" above "git config --global gpg.format ssh" (the renderer keeps a code
# block's line as a paragraph of its own).
_COMMAND_INTRO_RE = re.compile(r"\b(?:command|commands|run|type|enter|execute|terminal)\b[^:]*:$", re.I)
_COMMAND_LINE_RE = re.compile(r"^[a-z][\w.-]*(?: [^\s]+){1,14}$")


def _overlaps(a: _Candidate, b: _Candidate) -> bool:
    return a.start < b.start + len(b.text) and b.start < a.start + len(a.text)


# A "Label - value" line of a roster or an index: "Director - Star Vanamali", "Play 5 - Document, document,
# document". No full stop, so never a sentence, but it states its value as plainly as one.
_LABEL_LINE_RE = re.compile(r"^(?P<label>[A-Z0-9][\w&'’()/ ]{0,40}?\w) (?:-|\u2013|\u2014) (?P<value>[^\n:;|]{2,100})$")


# A line of a form's filled-in fields: "Federal Employer Identification Number (FEIN): 44-0553234". A label of two
# words or more and a short value with a number in it (an ID, a code, an address), not a step ("Step 1: Submit the
# software") or a heading ("Agency: General Services Administration").
_FIELD_LINE_RE = re.compile(
    r"^(?P<label>[A-Z][\w'’()./-]*(?: [\w'’()./&-]+){1,7}): (?P<value>(?=[^:\n]*\d)[^\s:][^:\n|]{0,50})$"
)


def label_line(line: str) -> tuple[str, str] | None:
    """(label, value) of a short "Label - value" line or a form's "Field name: 44-0553234" line, else None."""
    field = _FIELD_LINE_RE.match(line.strip())
    if field is not None and not _MARKUP_RE.search(line):
        return field.group("label"), field.group("value")
    m = _LABEL_LINE_RE.match(line.strip())
    if m is None or len(m.group("label").split()) > 4 or len(m.group("value").split()) > 14:
        return None
    if _SENTENCE_END_RE.search(m.group("value")) or _MARKUP_RE.search(line):
        return None
    return m.group("label"), m.group("value")


# A list's introduction that only points at the list: "Enable or select these options:", "Do the following:".
_POINTING_INTRO_RE = re.compile(r"\b(?:these|those|the\s+following|as\s+follows)\b", re.I)
# A sentence that cannot be read without the one before it: it opens with a connective or a pronoun, speaks
# of "both" things that sentence named, or of "the sale" that sentence reported ("In August 2023, we closed an
# agreement to sell a 20% minority stake in IMS … Net proceeds resulting from the sale were $849 million").
_CONTINUES_RE = re.compile(
    r"^(?:However|But|Otherwise|Instead|Also|In that case|In this case|If so|If not|Then)\b"
    r"|^(?:This|These|That|Those|They|It)\s|\bboth\s+[a-z]+s\b"
    r"|^(?:\S+\s+){0,4}?(?:from|of|for|in|on)\s+the\s+(?:sale|transaction|acquisition|divestiture|deal|merger)\b"
)


def continues_previous(sentence: str) -> bool:
    """Whether a sentence reads only with the one before it: "If you're taking time off, you'll need to make
    sure you're accounted for in both systems." after "HR Links … is separate from Tock."; "However, please
    get a final approval from the TTS Outreach team …" after "… you must purchase your own business cards."."""
    return _CONTINUES_RE.search(sentence.strip()) is not None


def _is_fragment(sentence: str) -> bool:
    """Headings, labels and cut-off text: anything that does not end like a sentence.

    List items are checked without their marker and may omit the full stop.
    """
    s = sentence.strip()
    if s.startswith(("#", "|")):
        return True
    return not _SENTENCE_END_RE.search(s)


_SHORT_VALUE_WORDS = 8
_DEFINITE_SUBJECT_RE = re.compile(r"The\s+(?:[a-z]+\s+){0,2}(?:is|are|was|were)\b")
# "… with the following information:", "…, including the following details:": the list below is a form's fields.
_FOLLOWING_FIELDS_RE = re.compile(
    r",?\s+(?:with|including|using|providing)\s+(?:the\s+)?following(?:\s+[\w-]+){0,2}\s*:\s*$", re.I
)
# A clause that counts what it is about to list: a verb, then a number, then the colon.
_COUNTING_LEAD_IN_RE = re.compile(
    r"\b(?:is|are|was|were|has|have|includes?|consists?|comprises?)\b[^:]{0,60}?\b(?:\d{1,3}|two|three|four|five|six|"
    r"seven|eight|nine|ten|eleven|twelve)\b[^:.]{0,80}:\s*$",
    re.I,
)


def is_heading(sentence: str) -> bool:
    """A short line without a full stop that names what follows ("Paid Parental Leave", "## Unpaid leave")."""
    s = sentence.strip().lstrip("#").strip()
    return bool(s) and len(s) <= 80 and not _SENTENCE_END_RE.search(s) and not s.endswith((",", ";"))


def heading_lines(text: str) -> list[str]:
    """The lines of ``text`` that are headings, stripped, in order."""
    return [line.strip() for line in text.split("\n") if is_heading(line)]


# Headings are short: in the handbook, lines without a full stop of nine words or more are list items whose
# marker the renderer dropped ("Set the time limit to complete an order to 20 minutes"), not titles.
STATEMENT_LINE_MIN_WORDS = 9
# A step of a procedure whose number the renderer dropped says what to do however short it is: "Open a new ticket
# in the Self-Service Portal", "For application name, enter Digital Signature System (DSS)".  It opens with the act,
# or with what the act is for and a comma.  Titles name a topic instead ("Submitting a Docusign issue ticket").
_STEP_VERBS = (
    r"(?i:open|enter|select|choose|click|type|fill|submit|attach|upload|add|go|navigate|sign|log|email|call|contact|"
    r"visit|send|include|request|complete|search|put|write|list|use)"
)
# After a bare act the words are lower case ("Email Template for Individual Travel" is a title); after a comma they
# may be the name to enter.
_STEP_RE = re.compile(
    rf"^(?:(?i:for|in|on|under|from|at|if|when|once|after|before)\b[^,]{{1,60}},\s*{_STEP_VERBS}\s+\w"
    rf"|{_STEP_VERBS}\s+[a-z])"
)
STEP_MIN_WORDS = 5


def _is_step(s: str) -> bool:
    return len(s.split()) >= STEP_MIN_WORDS and _STEP_RE.match(s) is not None


def is_statement_line(sentence: str) -> bool:
    """A line without a full stop that still reads as a statement: long or a step, not a label, not markup."""
    s = sentence.strip()
    if s.startswith(("#", "|")) or _SENTENCE_END_RE.search(s):
        return False
    return (len(s.split()) >= STATEMENT_LINE_MIN_WORDS or _is_step(s)) and unfit_reason(s) is None


# Raw source markup that must never reach a reader.  Text extraction renders it away at
# ingestion; this is the writer's own guard for anything that slipped through (older chunks,
# plain-text sources quoting markup).
_MARKUP_RE = re.compile(
    r"\*\*|__\w|\{%|%\}|\{\{|\]\(|\[[^\]]*$|^[^\[]*\]|(?:^|\s)\|(?:\s|$)|^\||\|$|&(?:amp|lt|gt|quot|nbsp|#\d+);"
    r"|</?[a-z][a-z0-9]*(?:\s[^<>]*)?/?>",
    re.IGNORECASE,
)
# A sentence cut off mid-phrase ("Book your flight or") ends on a word that needs a continuation.
_DANGLING = STOPWORDS | frozenset({"or", "and", "but", "nor", "to", "of", "for", "with", "the", "a", "an", "your"})
_PAIRS = (("(", ")"), ("[", "]"), ("{", "}"), ("\u201c", "\u201d"))


_STATES_VALUE_RE = re.compile(r"\b(?:is|are|was|were)\s+\$?\d[\d,.]*%?$")


def unfit_reason(sentence: str) -> str | None:
    """Why ``sentence`` cannot be a claim, or None: markup, a question, a label, a fragment.

    A claim is read on its own, so it must be a complete statement: not a question ("How do
    I ...?"), not a heading or a bare link label ("Travel and leave policies"), not an
    introduction to a list ("You should:"), not text cut off mid-phrase.
    """
    s = sentence.strip()
    if _MARKUP_RE.search(s):
        return "markup"
    if s.endswith("?"):
        return "question"
    if s.endswith((":", ";", ",", "-", "\u2014", "\u2013")):
        return "fragment"
    words = re.findall(r"[A-Za-z0-9$%][\w$%,.'\u2019/-]*", s)
    if words and words[-1].lower().strip(".,") in _DANGLING and not s.endswith((".", "!")):
        return "fragment"
    for left, right in _PAIRS:
        if s.count(left) != s.count(right):
            return "fragment"
    if s.count('"') % 2:
        return "fragment"
    if not _SENTENCE_END_RE.search(s):
        # Without a full stop only a list item that reads as a statement qualifies: long enough
        # and not a Title Case label ("Travel and Leave Policies", a link's text).
        caps = sum(1 for w in words if w[:1].isupper())
        if len(words) >= 4 and _STATES_VALUE_RE.search(s):
            return None  # "GSA's TWN Employer Code is 10536": a statement of a value, capitals or not
        if _is_step(s):
            return None  # "For application name, enter Digital Signature System (DSS)": what to do, capitals or not
        if len(words) < 6 or caps >= 0.6 * len(words):
            return "label"
    return None


def _same_word(have: str, want: str) -> bool:
    """Stems of one word: equal, a word people use for it ("repo" ~ "repositori"), or a longer form of it."""
    return have == want or have in attribute_synonyms(want) or is_longer_form(have, want)


def excluded_at(spans: Sequence[tuple[int, int, str]], term: str) -> list[tuple[int, int]]:
    """(first, last) token indexes in ``spans`` where the excluded ``term`` is named: its content words in order,
    with function words between them or not ("creating a public repo" ~ "create public repositories", "my annual
    leave" ~ "Your Annual Leave"); a whole term of function words is matched word for word."""
    wanted = [t for t in tokens(term) if t.lower() not in STOPWORDS] or tokens(term)
    needle = [stem(t) for t in wanted]
    keep = {t.lower() for t in wanted}
    at = [k for k, (_a, _b, w) in enumerate(spans) if w.lower() not in STOPWORDS or w.lower() in keep]
    have = [stem(spans[k][2]) for k in at]
    n = len(needle)
    return [
        (at[i], at[i + n - 1])
        for i in range(len(have) - n + 1) if n
        if all(_same_word(have[i + m], needle[m]) for m in range(n))
    ]  # fmt: skip


def mentions_excluded(sentence: str, exclude: Sequence[str]) -> bool:
    """Whether the sentence names an excluded term (stemmed words in order: "publishers" ~ "publisher")."""
    spans = token_spans(sentence)
    return any(excluded_at(spans, x) for x in exclude if tokens(x))


# Words before an excluded term that make it one item among others ("annual, award, and sick leave") or
# that set it aside in the source itself ("use funeral leave, not sick leave").
_SET_ASIDE_BEFORE = frozenset({"and", "or", "nor", "not", "than", "except", "besides", "excluding", "unlike"})
_COORDINATION_AFTER_RE = re.compile(r"\s*(?:,|(?:and|or|&)\b)", re.I)
# "HR Links is separate from Tock", "HR Links is GSA's request system and is separate from Tock", "Tock as well as
# HR Links": the source names the term beside another.
_BESIDE_AFTER_RE = re.compile(
    r"\s+(?:(?:is|are)\b[^.;:]{0,60}?\b(?:separate|different|distinct)\s+from|as\s+well\s+as|in\s+addition\s+to"
    r"|along\s+with)\b",
    re.I,
)
_BESIDE_BEFORE_RE = re.compile(
    r"\b(?:(?:separate|different|distinct)\s+from|as\s+well\s+as|in\s+addition\s+to|along\s+with)\s*$", re.I
)
_RELATIVE_AFTER_RE = re.compile(r",\s*(?:which|who|whom|whose|that|where)\b", re.I)
# "If you are not using a password manager, type ...": the source speaks of the case without the term, which
# is the case a question that sets the term aside ("I'm not using a password manager") asks about.
_NEGATED_BEFORE_RE = re.compile(r"(?:\b(?:not|never|no|without)|n['\u2019]t)(?:\s+[\w'\u2019-]+){0,2}\s*$", re.I)


def states_the_set_aside_case(sentence: str, exclude: Sequence[str]) -> bool:
    """Whether the sentence speaks of the case without an excluded term: "If you are not using a password
    manager, type ..." for "I'm not using a password manager. Where should I save my key?"."""
    text = normalise_ws(sentence)
    spans = token_spans(text)
    return any(_NEGATED_BEFORE_RE.search(text[: spans[i][0]]) for x in exclude for i, _last in excluded_at(spans, x))


def excluded_sentence(sentence: str, exclude: Sequence[str]) -> bool:
    """Whether the sentence is about an excluded term: it names one other than as an item among others.

    "Besides my supervisor, who reviews it?" is answered by "Your supervisor and the HR specialist
    review it": the excluded term is one of two coordinated subjects, and the sentence names the answer
    too. "Your supervisor reviews it" and "The supervisor, who ..." are about the excluded term.
    """
    text = normalise_ws(sentence)
    spans = token_spans(text)
    for x in exclude:
        for i, last in excluded_at(spans, x):
            before = spans[i - 1][2].lower() if i else ""
            after = text[spans[last][1] :]
            coordinated = (
                before in _SET_ASIDE_BEFORE
                or (_COORDINATION_AFTER_RE.match(after) is not None and not _RELATIVE_AFTER_RE.match(after))
                or _BESIDE_AFTER_RE.match(after) is not None
                or _BESIDE_BEFORE_RE.search(text[: spans[i][0]]) is not None
                or _NEGATED_BEFORE_RE.search(text[: spans[i][0]]) is not None
            )
            if not coordinated or (i == 0 and last == len(spans) - 1):
                return True
    return False


# A date, a year or a named period is not the amount "how much" asks for: "the operating loss for the nine
# months ended September 30, 2022 ... is primarily due to ..." states none.
_MONTH_NAMES = "January|February|March|April|May|June|July|August|September|October|November|December"
_DATE_LIKE_RE = re.compile(
    rf"\b(?:{_MONTH_NAMES})\s+\d{{1,2}}(?:st|nd|rd|th)?(?:,?\s+(?:19|20)\d{{2}})?\b"
    r"|\b(?:Q[1-4]\s+)?(?:19|20)\d{2}\b|\bQ[1-4]\b"
)
_DATE_SHAPE_RE = re.compile(
    rf"\b(?:19|20)\d{{2}}\b|\b(?:{_MONTH_NAMES}|Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)\b"
    r"|\bday|\bweek|\bmonth"
)


# A sentence that states a rule: what one must, may or need not do ("You do not need approval to create public
# repositories", "This notification is optional if you do not hold a clearance", "Users are prohibited from ...").
_RULE_RE = re.compile(
    r"\b(?:must|required|requires|optional|allowed|permitted|eligible|prohibited|need\s+to|needs\s+to|should)\b", re.I
)
# "Do I still have to ...?", "Does SecOps have to wait ...?", "Am I allowed to ...?", "Is it OK to ...?", "Can I
# still ...?", "Should I ...?": asks whether a rule allows it. Not a bare "Can I get a monitor ...?": a request,
# answered by how to get one.
_ASKS_RULE_RE = re.compile(
    r"\s*(?:(?:can|may)\s+(?:i|we)\s+(?:still|just|even)|should\s+(?:i|we)|(?:do|does)\s+(?:i|we|anyone|my|our)\b"
    r"(?:\s+\w+){0,3}?\s+(?:need|have|has)|(?:do|does)(?:\s+[\w'’-]+){1,3}?\s+(?:need|have|has)\s+to"
    r"|(?:am\s+i|are\s+we)\s+(?:allowed|permitted|eligible|able|required|"
    r"supposed)|is\s+it\s+(?:ok|okay|fine|alright|allowed|possible))\b",
    re.I,
)


def states_shape(kind: str, text: str) -> bool:
    """Whether the sentence states the kind of value asked: an amount ("number"), a date ("date") or a rule
    ("rule")."""
    if kind == "number":
        return re.search(r"\d", _DATE_LIKE_RE.sub(" ", text)) is not None
    if kind == "rule":
        return states_negation(text) or _RULE_RE.search(text) is not None
    return kind == "date" and _DATE_SHAPE_RE.search(text) is not None


def _asked_shape(query: str) -> str:
    """What kind of value answers the question: "number" (how much/many/long), "date" (when), "name" (which X,
    who is the head of), "rule" (whether a rule allows it), or ""."""
    clause = asked_clause(query)
    q = clause.lower()
    if re.search(r"\bhow (?:much|many|long|often|large|big|soon|quickly|early|far (?:in advance|ahead))\b"
                 r"|\bwhat (?:was|is|were|are) .*\b(?:revenue|sales|income|amount|number|total|cost|rate|percentage)\b",
                 q):  # fmt: skip
        return "number"
    if re.search(r"\bwhen\b|\bwhat (?:date|day|time)\b|\bdeadline\b", q) and not asks_for_a_case(q):
        return "date"  # "When am I not allowed to …?" asks for a case, not a date
    if re.match(r"\s*which\s+(?!(?:was|is|were|are|one|of)\b)[a-z]", q):
        return "name"  # "Which password manager does TTS recommend?", not "Which was larger: ..."
    if re.match(r"\s*who\s+(?:is|was|are|were)\s+(?:the|our|my|their)\b", q):
        return "name"  # "Who is the director of TTS Outreach?": answered by a name
    if _ASKS_RULE_RE.match(asked_sentence(clause)):
        return "rule"  # "Do I still have to notify GSA?": answered by what a rule requires, allows or forbids
    return ""


def asks_for_a_name(query: str) -> bool:
    """ "Which password manager does TTS recommend?": the answer names something (a product, a system, an office)."""
    return _asked_shape(query) == "name"


# A name in running text: a capitalised word after the first ("KeePassXC", "Zoom", "FOIA") or an address.
_NAME_RE = re.compile(
    r"(?<=\s)[A-Z][A-Za-z0-9]+(?:[-.][A-Za-z0-9]+)*|\b[a-z0-9-]+(?:\.[a-z0-9-]+)*\.(?:gov|com|org|net|io)\b"
)


def names_something(sentence: str, asked: frozenset[str]) -> bool:
    """Whether the sentence names something the question does not (a product, a system, an office)."""
    for m in _NAME_RE.finditer(sentence):
        word = m.group(0)
        if word.lower() in STOPWORDS or not set(content_stems(word)) - asked:
            continue
        return True
    return False


def new_names(sentence: str, known: frozenset[str]) -> list[str]:
    """The names a sentence states that ``known`` (a question's stems) does not: "MAX.gov" in "… you can try
    sharing your calendars through MAX.gov." after "What else can we try?" (answers/followups.py)."""
    out: list[str] = []
    for m in _NAME_RE.finditer(sentence):
        word = m.group(0).rstrip(".")
        if word.lower() in STOPWORDS or not set(content_stems(word)) - known or word in out:
            continue
        out.append(word)
    return out


_MONTHS = {m: i for i, m in enumerate(("january", "february", "march", "april", "may", "june", "july", "august",
                                       "september", "october", "november", "december"), start=1)}  # fmt: skip
# One cell of a row rendered by retrieval/extract/tables.py: "$81,797 million, three months ended July 1, 2023".
_ROW_RE = re.compile(r"^(?P<label>[^:;]{2,120}): (?P<cells>.+;.+)\.$")
_CELL_RE = re.compile(
    r"^(?P<value>-?\$?[\d,.]+(?: (?:million|thousand|billion))?%?|[\d,.]+ (?:million|thousand) shares)"
    r", (?:(?P<span>three|six|nine|twelve) months ended )?(?P<month>[A-Z][a-z]+) (?P<day>\d{1,2}), (?P<year>\d{4})$"
)
# A change column's cell (tables.py): "-6%, change from the three months ended June 25, 2022".
_CHANGE_CELL_RE = re.compile(
    r"^-?\$?[\d,.]+(?: (?:million|thousand|billion))?%?, (?:percentage change|change in dollars|change) from the "
)
_ASKED_SPAN_RE = re.compile(
    r"\b(six|nine|twelve)[ -]months?\b|\b(first half|half[ -]year)\b|\b(fiscal )?year ended\b", re.I
)


_ENDED_RE = re.compile(r"\bended\s+([A-Z][a-z]+)\s+(\d{1,2}),?\s+(\d{4})\b")


def asked_span(question: str) -> str:
    """The span of the period asked about: "three" (a quarter) unless the question names six or nine months."""
    m = _ASKED_SPAN_RE.search(question)
    if not m:
        return "three"
    if m.group(1):
        return m.group(1).lower()
    return "six" if m.group(2) else "twelve"


def _cell_end(cell: re.Match[str]) -> date | None:
    """The period end a rendered cell names ("..., three months ended July 1, 2023"), or None."""
    month = _MONTHS.get(cell.group("month").lower())
    try:
        return date(int(cell.group("year")), month, int(cell.group("day"))) if month else None
    except ValueError:
        return None


def _wanted_ends(period_ends: Sequence[str], question: str) -> list[date]:
    """The period ends a cell may match: the resolved ones and any "... ended July 1, 2023" the question
    names in full (a six- or nine-month span the quarter resolver does not bind)."""
    named = [f"{y}-{_MONTHS[mo.lower()]:02d}-{int(d):02d}" for mo, d, y in _ENDED_RE.findall(question)
             if mo.lower() in _MONTHS]  # fmt: skip
    wanted = []
    for iso in [*period_ends, *named]:
        try:
            wanted.append(date.fromisoformat(iso[:10]))
        except ValueError:
            continue
    return wanted


def focus_table_row(sentence: str, period_ends: Sequence[str], question: str) -> tuple[str, bool] | None:
    """The row label with only the cell of the asked period, or None to keep the whole row.

    A 10-Q row states four periods ("Revenue: $13,507 million, three months ended July 30, 2023;
    $6,704 million, three months ended July 31, 2022; ..."); a claim that answers "revenue in the
    quarter ended July 30, 2023" with all four reads as four answers, one of them right.  The cell
    must end within a week of a resolved period end (``plan.period_scope``) and have the asked span;
    exactly one cell may match.  Returns the text and whether it is a verbatim prefix of the row
    (the first cell), which lets it stand as its own quote.
    """
    m = _ROW_RE.match(sentence)
    if not m:
        return None
    wanted = _wanted_ends(period_ends, question)
    if not wanted:
        return None
    span = asked_span(question)
    cells = m.group("cells").split("; ")
    hits = []
    for i, cell in enumerate(cells):
        if _CHANGE_CELL_RE.match(cell.strip()):
            continue  # "5%, change from the three months ended June 25, 2022": not a figure of a period
        c = _CELL_RE.match(cell.strip())
        if not c or c.group("month").lower() not in _MONTHS:
            return None  # not a row tables.py rendered: leave it alone
        if (c.group("span") or span) != span:
            continue
        d = _cell_end(c)
        if d is None:
            return None
        if any(abs((d - w).days) <= 7 for w in wanted):
            hits.append(i)
    if len(hits) != 1 or len(cells) < 2:
        return None
    i = hits[0]
    if i == 0:
        return f"{m.group('label')}: {cells[0]}", True
    return f"{m.group('label')}: {cells[i].strip()}", False


# "Which of Apple's segments had the highest net sales in the quarter ...?": the answer is the row of one
# table whose cell for the asked period is the largest (or the smallest), not the row sharing most words with
# the question (``lexicon.asks_superlative``).
_ROW_TAG_RE = re.compile(r"^(?P<base>.*?)\s*\((?P<tag>[^()]{2,60})\)$")
# A total is the sum of the rows it ranks, not one of them.
_TOTAL_ROW_RE = re.compile(r"^(?:total|consolidated|combined|net\s+(?:sales|revenue)s?$|revenues?$)", re.I)
_CELL_VALUE_RE = re.compile(r"^(?P<neg>-)?\$?(?P<num>[\d,]*\.?\d+)(?: (?P<unit>thousand|million|billion))?")
_UNITS = {"thousand": 1e3, "million": 1e6, "billion": 1e9}


@dataclass(frozen=True)
class TableRow:
    """A statement row tables.py rendered, as it lies in one evidence passage."""

    ev: EvidenceRecord
    start: int  # offsets in ``ev.text``
    end: int
    base: str  # the label without its table tag: "Third-party seller services"
    tag: str  # "Net Sales" of "Third-party seller services (Net Sales)"

    @property
    def text(self) -> str:
        return self.ev.text[self.start : self.end]

    @property
    def doc_start(self) -> int:
        return self.ev.char_start + self.start


def table_runs(text: str) -> list[list[tuple[int, int, str, str]]]:
    """The tables in ``text``: runs of rendered rows with one tag, separated by nothing but blank lines, each
    row as (start, end, label without its tag, tag)."""
    runs: list[list[tuple[int, int, str, str]]] = [[]]
    pos = 0
    for line in text.splitlines(keepends=True):
        start, pos = pos, pos + len(line)
        body = line.strip()
        if not body:
            continue
        label = row_label(body) if _ROW_RE.match(body) else None
        if label is None:
            runs.append([])  # any other line ends the table
            continue
        m = _ROW_TAG_RE.match(label)
        base, tag = (m.group("base").strip(), m.group("tag").casefold()) if m else (label, "")
        lead = start + len(line) - len(line.lstrip())
        if runs[-1] and runs[-1][-1][3] != tag:
            runs.append([])
        runs[-1].append((lead, lead + len(body), base, tag))
    return [r for r in runs if r]


def _tables(evidence: Sequence[EvidenceRecord]) -> list[list[TableRow]]:
    """The tables of all passages, each row once.  A table cut by a passage boundary continues in the next
    passage of the same document when nothing but whitespace lies between its last row and that passage's
    first row (a filing's chunks are cut two characters apart); rows that a passage overlapping another
    reads beyond it continue the table of the row before them."""
    tables: list[list[TableRow]] = []
    where: dict[tuple[int, int], int] = {}  # (document, row offset in it) -> its table
    for ev in sorted(evidence, key=lambda e: (e.document_id, e.char_start, -len(e.text))):
        for run in table_runs(ev.text):
            rows = [TableRow(ev, a, b, base, tag) for a, b, base, tag in run]
            for i, row in enumerate(rows):
                key = (ev.document_id, row.doc_start)
                if key in where:
                    continue  # read already, by an overlapping passage
                if i > 0:
                    home = where[(ev.document_id, rows[i - 1].doc_start)]
                elif tables and _continues(tables[-1][-1], row):
                    home = len(tables) - 1
                else:
                    tables.append([])
                    home = len(tables) - 1
                tables[home].append(row)
                where[key] = home
    return tables


def _continues(last: TableRow, first: TableRow) -> bool:
    """Whether ``first`` (the first row of its passage) is the row after ``last`` (the last of another)."""
    return (
        last.ev is not first.ev
        and last.ev.document_id == first.ev.document_id
        and last.tag == first.tag
        and last.ev.text[last.end :].strip() == ""
        and first.ev.text[: first.start].strip() == ""
        and 0 <= first.ev.char_start - last.ev.char_end <= 2
    )


def cell_value(row: str, period_ends: Sequence[str], question: str) -> float | None:
    """The number in the row's cell for the asked span and period (``focus_table_row``), or None."""
    focused = focus_table_row(row, period_ends, question)
    if focused is None:
        return None
    cell = focused[0].rpartition(": ")[2]
    m = _CELL_VALUE_RE.match(cell)
    if not m:
        return None
    value = float(m.group("num").replace(",", "")) * _UNITS.get(m.group("unit") or "", 1.0)
    return -value if m.group("neg") else value


def ranked_table(plan: QueryPlan, evidence: Sequence[EvidenceRecord]) -> tuple[TableRow, list[TableRow]] | None:
    """The row that answers "which ... the highest/lowest ..." and its table, from the evidence, or None.

    Only tables with at least two competing rows for the asked period compete; of those, the ones whose tag
    names the measure asked ("(Net Sales)" for "revenue"), then the ones with a row the question sets aside
    ("Other than the Americas, which segment ..." names a row of the segment table, not of the product
    table).  The table must then be the only one left.  Totals and set-aside rows do not compete; a tie
    answers nothing.
    """
    direction = asks_superlative(plan.original)
    if direction is None or not plan.period_scope:
        return None
    exclude = plan.parsed.exclude
    asked = set(content_stems(plan.original))
    asked |= {s for t in list(asked) for s in attribute_synonyms(t)}
    scored: list[tuple[list[TableRow], list[tuple[float, TableRow]]]] = []
    for table in _tables(evidence):
        competing = [
            (v, r)
            for r in table
            if not _TOTAL_ROW_RE.match(r.base)
            and not mentions_excluded(r.base, exclude)
            and (v := cell_value(r.text, plan.period_scope, plan.original)) is not None
        ]
        if len(competing) >= 2:
            scored.append((table, competing))
    for keep in (
        lambda t: bool(set(content_stems(t[0].tag)) & asked),
        lambda t: any(mentions_excluded(r.base, exclude) for r in t),
    ):
        if len(scored) > 1 and any(keep(t) for t, _c in scored):
            scored = [(t, c) for t, c in scored if keep(t)]
    if len(scored) != 1:
        return None
    table, competing = scored[0]
    competing = sorted(competing, key=lambda vr: vr[0], reverse=direction == "max")
    if competing[0][0] == competing[1][0]:
        return None
    return competing[0][1], table


# Measures a qualifier narrows: "Gaming revenue" is one segment's, "operating income" is not net income.
_MEASURE_STEMS = frozenset(
    stem(w) for w in ("revenue", "revenues", "sales", "income", "earnings", "profit", "expenses", "margin")
)
# Words that narrow nothing: the total, the reporting basis, the period the scoping stage already bound.
_NEUTRAL_QUALIFIERS = frozenset(
    stem(w)
    for w in (
        "total", "net", "consolidated", "gaap", "reported", "loss", "losses", "quarter", "quarterly", "fiscal",
        "year", "annual", "month", "months", "first", "second", "third", "fourth", "three", "six", "nine",
        "twelve", "period", "company",
    )
)  # fmt: skip
# Words that name a table's grouping rather than narrow its measure: "(operating expenses)", "(revenue by
# segment)".
_SALES = stem("sales")
_GROUP_WORDS = frozenset(stem(w) for w in ("operating", "segment", "segments", "information"))
_WORD_RE = re.compile(r"[^\W_]+")
# The label of a row tables.py rendered: "Desktop (net revenue): $1,879 million, ...".
_ROW_LABEL_RE = re.compile(r"^(?P<label>[^:;]{2,120}): ")
_POST_QUALIFIER_RE = re.compile(
    r"\s*(?:\((?P<paren>[^)]{2,80})\)|(?:from|attributable\s+to|outside)\s+(?P<tail>[^,.;:]{2,80}))", re.I
)


def row_label(sentence: str) -> str | None:
    """The label of a statement row tables.py rendered ("Net income" of "Net income: $680 million, ...")."""
    m = _ROW_LABEL_RE.match(sentence)
    return m.group("label") if m and _ANY_CELL_RE.search(sentence, m.end()) else None


def unasked_qualifier(sentence: str, asked: frozenset[str]) -> bool:
    """Whether the first asked measure in the sentence is narrowed by words the question does not use.

    "Gaming revenue for the third quarter ..." answers "what was NVIDIA's revenue" with one segment;
    "Net income attributable to the non-controlling interest" and "Net income (cash flows from operating
    activities)" are not the net income asked about.  ``asked``: the question's stems with synonyms.
    """
    row = row_label(sentence)
    if row is not None:
        # A statement row's label is a noun phrase: any word in it the question does not use narrows it.
        # "Intel Foundry Services (net revenue)", "Income tax expense (benefit)", "Cost of revenue".
        label = set(content_stems(row))
        head, _, group = row.partition(" (")
        head_terms = set(content_stems(head))
        if not says_sales(head):
            # "Sales and marketing (operating expenses)" is an expense line: its "sales" is not a measure.
            head_terms.discard(_SALES)
        segment, comma, measure_group = group.rpartition(", ")
        if comma:
            # "Desktop (Client Computing, net revenue)": the segment narrows the line as its own words do.
            head_terms |= set(content_stems(segment))
            group = measure_group
        group_terms = set(content_stems(group))
        if group and not head_terms & _MEASURE_STEMS and group_terms & _MEASURE_STEMS:
            # The parenthesis is the table group the line sits in: "Technology and content (operating
            # expenses)" is the technology and content expense line, so only the line's own words can
            # narrow it ("Desktop (net revenue)" is one segment).  Asked by the line's name alone ("What
            # was research and development ..."), the line in its group is what was asked.
            unasked = {t for t in head_terms if t not in asked and t not in _NEUTRAL_QUALIFIERS}
            # The group's own words can narrow its measure too: "(unearned revenue by segment)" is not the
            # segment's revenue, "(stock-based compensation expense)" not the line's whole expense.
            if {t for t in group_terms - _MEASURE_STEMS - _NEUTRAL_QUALIFIERS - _GROUP_WORDS if t not in asked}:
                return True
            if "other" in head.lower().split() and "other" not in asked:
                return True  # "All other (net revenue)": what is left after the named lines
            if group_terms & _MEASURE_STEMS & asked or (head_terms and not unasked):
                return bool(unasked)
        if label & _MEASURE_STEMS and not label & _MEASURE_STEMS & asked:
            return True  # another measure's row: "Net revenue" when net income was asked
        if label & _MEASURE_STEMS & asked:
            if "other" in row.lower().split() and "other" not in asked:
                return True  # "All other (net revenue)", "Other income": what is left after the named lines
            return bool({t for t in label if t not in asked and t not in _NEUTRAL_QUALIFIERS})
    words = list(_WORD_RE.finditer(sentence))
    for i, m in enumerate(words):
        s = stem(m.group(0).lower())
        if s not in _MEASURE_STEMS or s not in asked:
            continue
        j = i - 1
        # Walk back over the words directly before it (same phrase: only spaces between them).
        while j >= 0 and not sentence[words[j].end() : words[j + 1].start()].strip():
            low = words[j].group(0).lower()
            if low == "of" and j > 0:
                # "Cost of revenue", "10% or more of total revenue": a share or a cost of the measure.
                before = stem(words[j - 1].group(0).lower())
                return before not in asked and before not in _NEUTRAL_QUALIFIERS
            if low == "other" and "other" not in asked:
                return True  # "Other revenue was $611 million": what is left after the named lines
            if low in STOPWORDS:
                break
            w = stem(low)
            if w not in asked and w not in _NEUTRAL_QUALIFIERS and w not in _MEASURE_STEMS:
                return True
            j -= 1
        after = _POST_QUALIFIER_RE.match(sentence, m.end())
        if after:
            tail = after.group("paren") or after.group("tail") or ""
            extra = {t for t in content_stems(tail) if t not in asked and t not in _NEUTRAL_QUALIFIERS}
            return bool(extra)
        return False
    return False


# A cell as retrieval/extract/tables.py renders it, anywhere in a sentence.
_ANY_CELL_RE = re.compile(
    r"-?\$?[\d,.]+(?: (?:million|thousand|billion))?, (?:(?P<span>three|six|nine|twelve) months ended )?"
    r"(?P<month>[A-Z][a-z]+) (?P<day>\d{1,2}), (?P<year>\d{4})"
)


def row_fits_period(sentence: str, period_ends: Sequence[str], question: str) -> bool | None:
    """For table cells: whether one has the asked span and period; None for a sentence with no cells.

    "Net income (cash flows from operating activities): $2,954 million, nine months ended October 30,
    2022; ..." has no cell for "the quarter ended October 30, 2022".
    """
    cells = list(_ANY_CELL_RE.finditer(sentence))
    if not cells:
        return None
    wanted = _wanted_ends(period_ends, question)
    if not wanted:
        return None
    span = asked_span(question)
    for c in cells:
        if (c.group("span") or span) != span or (d := _cell_end(c)) is None:
            continue
        if any(abs((d - w).days) <= 7 for w in wanted):
            return True
    return False


_PROSE_YTD_RE = re.compile(r"\bYTD\b|\byear[ -]to[ -]date\b|\b(?:first\s+)?(?:six|nine)\s+months\b", re.I)
_PROSE_QUARTER_RE = re.compile(
    r"\bQ[1-4]\s+(?:FY)?\s*(?:19|20)\d{2}\b|\b(?:first|second|third|fourth)\s+quarter\b|\bthree\s+months\b", re.I
)


# A number the asker gives with what it counts: "eight direct reports", "5 years of service", "12-person team".
_ASKER_COUNT_RE = re.compile(
    rf"\b(\d{{1,4}}|{'|'.join(NUMBER_WORD_VALUES)})[ -]((?:[A-Za-z]+[ -]){{0,2}}[A-Za-z]+)\b", re.I
)
# The first cell of a rendered table row ("Number of direct reports: >/=7; Utilization % target: 30%; ...").
_FIRST_CELL_RE = re.compile(r"^(?P<header>[^:;]{2,80}): (?P<value>[^;]{1,40});")
_BRACKETS = (
    (re.compile(r"^(?:>/=|>=|≥|at least)\s*(\d+)", re.I), lambda a, b: (a, math.inf)),
    (re.compile(r"^(?:>|more than|over)\s*(\d+)", re.I), lambda a, b: (a + 1, math.inf)),
    (re.compile(r"^(?:</=|<=|≤|up to|at most)\s*(\d+)", re.I), lambda a, b: (-math.inf, a)),
    (re.compile(r"^(?:<|less than|fewer than|under)\s*(\d+)", re.I), lambda a, b: (-math.inf, a - 1)),
    (re.compile(r"^(\d+)\s*(?:-|–|to)\s*(\d+)"), lambda a, b: (a, b)),
    (re.compile(r"^(\d+)\s*(?:\+|or more)"), lambda a, b: (a, math.inf)),
    (re.compile(r"^(\d+)\b(?![.,/:]\d)"), lambda a, b: (a, a)),
)


def bracket_fits(sentence: str, question: str) -> bool | None:
    """Whether a table row whose first cell is a bracket of a count ("Number of direct reports: >/=7", "1-3", "4")
    holds the count the asker gives of the same thing ("I'm about to take on eight direct reports"); None when the
    row has no such cell or the question gives no such count."""
    cell = _FIRST_CELL_RE.match(sentence)
    if cell is None:
        return None
    value = cell.group("value").strip()
    bracket = None
    for rx, span in _BRACKETS:
        m = rx.match(value)
        if m:
            nums = [int(g) for g in m.groups() if g is not None]
            bracket = span(nums[0], nums[-1])
            break
    if bracket is None:
        return None
    header = set(content_stems(cell.group("header"))) - {"number"}
    counts = [n for n, counted in asker_counts(question) if counted & header]
    if not counts:
        return None
    return any(bracket[0] <= n <= bracket[1] for n in counts)


@functools.lru_cache(maxsize=256)
def asker_counts(question: str) -> tuple[tuple[int, frozenset[str]], ...]:
    """The counts a question gives, each with the stems of what it counts ("eight direct reports": 8, {direct,
    report}); read once per question, not once per table row the writer scores. A year (1900-2100) is no count."""
    out = []
    for m in _ASKER_COUNT_RE.finditer(question):
        raw = m.group(1).lower()
        n = int(raw) if raw.isdigit() else NUMBER_WORD_VALUES[raw]
        if not 1900 <= n <= 2100:
            out.append((n, frozenset(content_stems(m.group(2)))))
    return tuple(out)


def prose_fits_span(sentence: str, question: str) -> bool | None:
    """For a filing's prose: whether it is about the span asked (the quarter, or the six or nine months to
    date); None when it names neither. "Notebook revenue was $4.5 billion, up $95 million from Q3 2022"
    states the quarter, not the nine months asked about."""
    if _ANY_CELL_RE.search(sentence):
        return None  # a table row: row_fits_period decides
    ytd, quarter = bool(_PROSE_YTD_RE.search(sentence)), bool(_PROSE_QUARTER_RE.search(sentence))
    if ytd == quarter:
        return None
    return ytd if asked_span(question) in ("six", "nine") else quarter


def prose_fits_period(sentence: str, period_ends: Sequence[str], question: str) -> bool | None:
    """For a filing's prose that dates itself ("Our income tax benefit for the three months ended March 31, 2022
    was $1.4 billion"): whether one of the dates it names ends the period asked; None when it names none."""
    if _ANY_CELL_RE.search(sentence):
        return None  # a table row: row_fits_period decides
    named = _wanted_ends([], sentence)
    wanted = _wanted_ends(period_ends, question)
    if not named or not wanted:
        return None
    return any(abs((d - w).days) <= 7 for d in named for w in wanted)


def _same_line_elsewhere(text: str, lead: str) -> bool:
    """Whether ``text`` is a statement row whose line name is the lead row's, less specific.

    "Technology and content: $2,574" (the stock-based compensation table) under "Technology and content
    (operating expenses): $20,450 million" names the same line in another table.
    """
    row, lead_row = row_label(text), row_label(lead)
    if row is None or lead_row is None:
        return False
    terms = set(content_stems(row))
    return bool(terms) and terms <= set(content_stems(lead_row)) and row != lead_row


def scoped_terms(plan: QueryPlan) -> set[str]:
    """Stems the scoping stage already checked on the source's metadata: the bound company's names,
    once a period resolved the period's words, and once the current version resolved "latest".  A 10-Q's statement row about the resolved quarter never
    says "Apple" or "latest quarter", so evidence, writer, abstention and comparisons count them as covered."""
    bound: set[str] = set()
    for surface, canonical in plan.parsed.entities:
        if canonical in plan.entity_scope:
            bound |= set(content_stems(surface)) | set(content_stems(canonical))
    if plan.period_scope:
        for p in plan.parsed.periods:
            bound |= set(content_stems(p.label))
    if plan.needs_current_version and plan.version_scope:
        # "Latest ExampleDB changes": the newest version resolved and the other versions were set aside.
        bound |= set(content_stems("latest newest current most recent"))
    return bound


def _covered(terms: frozenset[str], chosen: list[frozenset[str]]) -> float:
    if not terms:
        return 1.0
    seen = frozenset().union(*chosen)
    return len(terms & seen) / len(terms)


def _jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    union = a | b
    return len(a & b) / len(union) if union else 1.0


class ExtractiveWriter:
    """Selects whole evidence sentences as atomic, verbatim-cited claims."""

    name = WRITER_NAME
    version = WRITER_VERSION
    prompt_version = "none"
    generative = False

    min_words = 4
    max_words = 80
    # idf-weighted share of the query a sentence must cover to count as a positive lexical match.
    # Above zero so that one incidental shared word of a long question does not produce an answer.
    min_lexical = 0.15
    # The idf-weighted share of the asked sentence alone (the asker's situation set aside) that qualifies a sentence
    # the whole question's share would not: most of what is asked.
    min_core_coverage = 0.5
    # Cosine from the caller's embedder (MiniLM) above which a sentence qualifies without overlap.
    similarity_threshold = 0.55
    similarity_weight = 0.4
    phrase_bonus = 0.2
    rank_prior = 0.05
    # Later claims must score at least this share of the best one: padding an answer with weakly
    # related sentences lowers its precision more than it helps recall.
    relative_cutoff = 0.4
    near_duplicate_jaccard = 0.8
    # A supporting claim whose content words are (nearly) all in the claims already chosen adds nothing.
    redundant_coverage = 0.85
    shape_bonus = 0.1
    nameless_factor = 0.85  # "which ..." asked, and the sentence names nothing the question does not
    # A query term that only the page title or the heading above the sentence carries counts this
    # share: under "Paid Parental Leave", "You are entitled to 12 weeks of paid time off" answers
    # "how much paid parental leave" although the sentence says "parental" nowhere.
    context_weight = 0.5
    # A sentence about a narrower measure than the one asked, or a row without the asked period's cell,
    # can still answer when nothing better is there, so it keeps most of its score.
    qualified_factor = 0.7
    other_span_factor = 0.6
    # A sentence that covers only the asker's situation and none of what they ask ("I'm in the National Guard and my
    # annual training starts next month. Which Tock line do I use?" met by "You can receive 15 Military Leave days
    # each year for annual training in the National Guard."): the weak-evidence rule scores such a quote 0
    # (answers/abstention.py), so it yields to one about the asked sentence where there is one, and still answers
    # where there is none.
    situation_only_factor = 0.5
    # The sentence right after the lead claim that goes on about the lead's subject and shares a word with the
    # question ("Please note, GSA IT does not provide wireless peripherals." then "Wireless peripherals can be
    # purchased by the business unit, but only upon TTS leadership approval.") is stated second.
    continue_lead = True
    # Claims stated past ``max_claims`` (``write``), on the same relative cutoff and redundancy checks.
    extra_claims = 2

    def write(
        self,
        plan: QueryPlan,
        evidence: Sequence[EvidenceRecord],
        *,
        max_claims: int = 4,
        similarity: Callable[[str, Sequence[str]], Sequence[float]] | None = None,
        info: dict[str, Any] | None = None,
    ) -> list[DraftClaim]:
        """Up to ``max_claims`` claims, best first (one more where the sentence after the lead is added to a full
        answer, ``continue_lead``, unless ``max_claims`` is 1); ``[]`` when no sentence qualifies.

        ``similarity(query, sentences)`` returns one score per sentence (embedding
        cosine) and is called once, with every candidate sentence, so the caller can
        batch the embedding.
        """
        if max_claims <= 0 or not evidence:
            return []
        parsed = plan.parsed
        query = parsed.text.strip() or plan.original
        q_terms = list(dict.fromkeys(content_stems(query)))
        for _surface, canonical in parsed.entities:
            # The evidence may use the canonical name where the user typed an alias.
            q_terms.extend(t for t in content_stems(canonical) if t not in q_terms)
        # Each query term is a slot that any of its forms fills ("revenue" is "net sales" in a filing).
        alts = {t: frozenset({t}) | attribute_synonyms(t) for t in q_terms}
        # Words the scoping stage already checked on the source's metadata count as covered, as in
        # the weak-evidence rule (answers/abstention.py): a 10-Q's statement row about the resolved
        # quarter never says "Apple" or "latest quarter".
        bound = scoped_terms(plan)
        asked = frozenset().union(*alts.values()) | bound | frozenset(content_stems(plan.original))
        if re.search(r"\bother\b", plan.original, re.I):
            asked |= {"other"}
        phrases = [normalise_ws(p).lower() for p in parsed.phrases if p.strip()]

        rejected: dict[str, int] = {}
        candidates = self._candidates(evidence, parsed.exclude, rejected)
        if info is not None and rejected:
            info["rejected_sentences"] = dict(sorted(rejected.items()))
        if not candidates:
            return []
        # An abbreviation the evidence defines stands for its words, either way (as in answers/evidence.py).
        defined = abbreviations_defined([e.text for e in evidence], q_terms, [e.title or "" for e in evidence])
        for c in candidates:
            c.terms = with_abbreviations(c.terms, defined)
            c.sides = tuple(with_abbreviations(side, defined) for side in c.sides)
        wants = _asked_shape(query)
        negated = asks_negated(query, parsed.exclude)

        df: Counter[str] = Counter()
        for c in candidates:
            df.update({t for t, forms in alts.items() if forms & c.terms})
        n = len(candidates)
        # Smoothed idf; a query term found in no sentence gets the largest weight, so missing it
        # lowers every sentence's coverage.
        idf = {t: math.log(1.0 + n / (df[t] if df[t] else 0.5)) for t in q_terms}
        idf = weigh_earlier_turns(query, idf)
        idf_total = sum(idf.values())
        free = sum(idf[t] for t in q_terms if t in bound)

        sims: Sequence[float] | None = None
        if similarity is not None:
            # With the page title, as evidence selection embeds them (answers/evidence.py).
            sims = similarity(query, [f"{c.title}: {c.text}" if c.title else c.text for c in candidates])
            if len(sims) != n:
                raise ValueError(f"similarity returned {len(sims)} scores for {n} sentences")

        def coverage(terms: frozenset[str], context: frozenset[str]) -> tuple[float, bool]:
            hits = [t for t in q_terms if t not in bound and alts[t] & terms]
            share = (
                (
                    free
                    + sum(
                        idf[t] * (1.0 if alts[t] & terms else self.context_weight if alts[t] & context else 0.0)
                        for t in q_terms
                        if t not in bound
                    )
                )
                / idf_total
                if idf_total and hits
                else 0.0
            )
            return share, bool(hits)

        # The asker's situation before the question ("I'm resigning and was hoping to make Labor Day my official
        # last day so I don't have to come in. Is that OK, or is a holiday not allowed as the last day?"): a
        # sentence that covers what is asked qualifies though it repeats none of the situation.  Only to qualify:
        # the score, and so the weak-evidence rule, still read the whole question.  Of a resolved follow-up ("Is that
        # different if I'm a term employee: … How much sick leave can I borrow in advance?") what is asked is its
        # last question, not the earlier one's last sentence.
        core = asked_part(query)
        form = question_form_stems(plan.original)
        # Light verbs ("anything extra I need to do", "what should I use") say nothing a sentence must repeat.
        asks = asking_stems(core, form)
        core_terms = [t for t in dict.fromkeys(content_stems(core)) if t in asks and t in idf and t not in bound]
        core_terms = core_terms if core != query else []
        core_total = sum(idf[t] for t in core_terms)

        def core_coverage(terms: frozenset[str]) -> float:
            return sum(idf[t] for t in core_terms if alts[t] & terms) / core_total if core_total else 0.0

        qualified: list[_Candidate] = []
        for i, c in enumerate(candidates):
            c.lexical, hit = max(coverage(side, c.context) for side in c.sides or (c.terms,))
            if c.label and not hit:
                continue  # "18F - Dahianna Salazar Foreman" under "Director - ..." is about 18F
            sim = float(sims[i]) if sims is not None else None
            if (
                c.lexical < self.min_lexical
                and (sim is None or sim < self.similarity_threshold)
                and max(core_coverage(side) for side in c.sides or (c.terms,)) < self.min_core_coverage
            ):
                continue
            low = normalise_ws(c.text).lower()
            score = c.lexical + self.phrase_bonus * sum(1 for p in phrases if p in low)
            if parsed.exclude and states_the_set_aside_case(c.text, parsed.exclude):
                score += self.phrase_bonus  # the user's own case: "I'm not using a password manager"
            if wants == "name":
                # "Which password manager ...": answered by a sentence that names one ("KeePassXC").
                score = score + self.shape_bonus if names_something(c.text, asked) else score * self.nameless_factor
            elif wants and states_shape(wants, c.text):
                score += self.shape_bonus  # "how much" is answered by a number, "when" by a date
            if c.command:
                score += self.shape_bonus  # the instruction with its command says how, not only what to do
            if negated and states_negation(c.text):
                # "Which of my leave balances won't be paid out?" is answered by "Your Sick Leave will not be paid
                # out", not by "Your Annual Leave will be paid out", which shares the same words.
                score += self.shape_bonus
            if sim is not None:
                score = (1.0 - self.similarity_weight) * score + self.similarity_weight * sim
            if unasked_qualifier(c.text, asked):  # computed again below for the chosen set; cheap
                score *= self.qualified_factor
            # A label line is scored by its label ("Ten days to two weeks: Conference events that cost less than
            # $2500"): its whole text says what it is about.
            if (
                len(core_terms) >= 2
                and not any(core_coverage(side) for side in c.sides or (c.terms,))
                and not core_coverage(frozenset(content_stems_with_parts(c.text)))
            ):
                score *= self.situation_only_factor
            # "Number of direct reports: >/=7; ..." for "I'm about to take on eight direct reports": the asker's row.
            bracket = bracket_fits(c.text, plan.original)
            if bracket:
                score += self.shape_bonus
            elif bracket is False:
                score *= self.other_span_factor
            if row_fits_period(c.text, plan.period_scope, plan.original) is False:
                score *= self.other_span_factor
            elif plan.period_scope and (
                prose_fits_span(c.text, plan.original) is False
                or prose_fits_period(c.text, plan.period_scope, plan.original) is False
            ):
                score *= self.other_span_factor
            c.score = score + self.rank_prior / (c.rank + 1)
            qualified.append(c)
        if not qualified:
            return []

        qualified.sort(key=lambda c: (-c.score, c.rank, c.start))
        ranked = ranked_table(plan, evidence)
        if ranked is not None:
            top = ranked[0]
            # The ranked row is the answer: the other rows are figures of what did not rank first, and the
            # sentences around the table say what it lists, which the question did not ask.
            rank = next(i for i, ev in enumerate(evidence) if ev is top.ev)
            lead = _Candidate.of(top.ev, rank, top.start, top.text, top.text, frozenset(content_stems(top.ev.title)))
            lead.score, lead.lexical = qualified[0].score, qualified[0].lexical
            qualified = [lead]
            if info is not None:
                info["superlative_row"] = top.base
        best = qualified[0].score
        # When the best sentence is about the measure asked, one about a narrower measure (a segment, a
        # cost of it) supports nothing and reads as a second answer.
        narrow = {id(c) for c in qualified if unasked_qualifier(c.text, asked)}
        # A sentence that the next one continues ("… purchase your own business cards. However, please get a
        # final approval from the TTS Outreach team …") is stated with it.
        continued = {(c.evidence_id, c.start): c for c in candidates if c.sides}
        chosen: list[_Candidate] = []
        limit = max_claims + (self.extra_claims if max_claims > 1 else 0)
        for c in qualified:
            if len(chosen) >= limit or c.score < self.relative_cutoff * best:
                break
            whole = continued.get((c.evidence_id, c.start))
            if whole is not None and not c.sides and whole.text.startswith(c.text):
                whole.score, whole.lexical = c.score, c.lexical
                c = whole
            if chosen and id(c) in narrow and id(chosen[0]) not in narrow:
                continue
            if any((c.paired or o.paired) and c.evidence_id == o.evidence_id and _overlaps(c, o) for o in chosen):
                continue  # a sentence and the same sentence read with the one before it
            if chosen and _same_line_elsewhere(c.text, chosen[0].text):
                continue  # the same line from another table (stock-based compensation): a second figure
            if any(_jaccard(c.shape, o.shape) > self.near_duplicate_jaccard for o in chosen):
                continue
            if chosen and _covered(c.terms, [o.terms for o in chosen]) >= self.redundant_coverage:
                continue  # says nothing the answer does not already say
            chosen.append(c)
        # Claims past ``max_claims`` are stated too (the second fact of a two-part question is often the fifth best
        # sentence), but they are extras: the engine does not let them raise the evidence strength or lower its bar,
        # so whether the question is answered at all is decided as before (``DraftClaim.extra``).
        extras = chosen[max_claims:]
        chosen = chosen[:max_claims]
        if self.continue_lead and ranked is None and chosen and max_claims > 1:
            # One claim over ``max_claims`` where the answer is full (not where one claim was asked for): a claim
            # already chosen on its own score is not pushed out for it, and the verifier may still drop those. Not
            # after a ranked table row: the next row is a figure of what did not rank first.
            asked_terms = asking_stems(query, form)
            after = self._lead_continuation(chosen, candidates, evidence, asked_terms)
            whole = continued.get((after.evidence_id, after.start)) if after is not None else None
            if after is not None and whole is not None and whole.text.startswith(after.text):
                # "Follow the guidance … in InSite. This notification is optional if you do not hold a clearance.":
                # the continuation is stated with the sentence that goes on from it, as a chosen sentence is.
                after = whole
            if after is not None:
                extras = [c for c in extras if c is not after]
                chosen.insert(1, after)
                if info is not None:  # a compound part keeps it over its own cap too (engine.compound_stage)
                    info["lead_continued"] = True

        if info is not None:
            # The engine's weak-evidence threshold reads these (idf-weighted query coverage).
            info["scores"] = {f"c{i}": round(c.lexical, 4) for i, c in enumerate(chosen, start=1)}
        base = len(chosen)
        chosen += extras
        claims: list[DraftClaim] = []
        for i, c in enumerate(chosen):
            text, quote = c.text, c.quote or c.text
            focused = None if c.quote else focus_table_row(c.text, plan.period_scope, plan.original)
            if focused is not None:
                # The first cell is a prefix of the row and quotes itself; a later one cites the whole row.
                text = focused[0]
                quote = text if focused[1] else c.text
            if any(d.text == text for d in claims):
                continue  # the same figure in two tables (a note and the MD&A), focused to the same cell
            claims.append(
                DraftClaim(
                    id=f"c{len(claims) + 1}",
                    text=text,
                    citations=(Citation(evidence_id=c.evidence_id, quote=quote),),
                    extra=i >= base,
                )
            )
        return claims

    @staticmethod
    def _lead_continuation(
        chosen: Sequence[_Candidate],
        candidates: Sequence[_Candidate],
        evidence: Sequence[EvidenceRecord],
        asked: frozenset[str],
    ) -> _Candidate | None:
        """The sentence that follows the lead claim in its passage and names the lead's subject, when the
        answer does not state it yet: a lead often says what something is and the next sentence what to do about it
        ("MAX Drive is good for sending a one-off file to a partner …" then "Retrieving a file that has been uploaded
        to MAX Drive does not require the recipient to have a Max.gov account"). It must share a word with the
        question too, however few: the lead's subject alone is not what was asked."""
        lead = chosen[0]
        if lead.quote or lead.label:
            return None
        text = next((ev.text for ev in evidence if ev.id == lead.evidence_id), "")
        end = lead.start + len(lead.text)
        after = end + len(text[end:]) - len(text[end:].lstrip())  # where the very next sentence starts
        nxt = next(
            (
                c
                for c in candidates
                if c.evidence_id == lead.evidence_id and c.start == after
                and not (c.quote or c.label or c.paired or c.sides)
            ),
            None,
        )  # fmt: skip
        if nxt is None or any(o.evidence_id == nxt.evidence_id and _overlaps(o, nxt) for o in chosen):
            return None
        return nxt if (nxt.terms & lead.terms) - LIGHT_STEMS and nxt.terms & asked else None

    def _candidates(
        self, evidence: Sequence[EvidenceRecord], exclude: Sequence[str], rejected: dict[str, int]
    ) -> list[_Candidate]:
        out: list[_Candidate] = []
        for rank, ev in enumerate(evidence):
            title_terms = frozenset(content_stems(ev.title or ""))
            heading: frozenset[str] = frozenset()
            spans = split_sentences(ev.text)
            lists = {u.intro[0]: u for u in group_list_blocks(ev.text, spans) if isinstance(u, ListBlock)}
            # A list's items read as list items whether or not the renderer kept their markers.
            items = {a for u in lists.values() for a, _b in u.items}
            for idx, (start, end) in enumerate(spans):
                if start in lists:
                    # The list as one claim; its items are still read on their own below, where one
                    # that reads as a statement ("audit logs are retained for ninety days") can answer.
                    before = spans[idx - 1] if idx > 0 else None
                    listed = self._list_candidate(ev, lists[start], exclude, rank, title_terms | heading, before)
                    if listed is not None:
                        out.append(listed)
                raw = ev.text[start:end]
                command = self._command_candidate(ev, spans, idx, exclude, rank, title_terms | heading)
                if command is not None:
                    out.append(command)
                lead_in = bool(_COUNTING_LEAD_IN_RE.search(raw)) and not raw.startswith("#")
                fields = None if lead_in or raw.startswith("#") else _FOLLOWING_FIELDS_RE.search(raw)
                if fields is not None and len(tokens(raw[: fields.start()])) >= 6:
                    # "Send an email at least 12 hours prior to the meeting … to BISCOORD@BISWORLD.COM with the
                    # following information:" says what to do; the fields listed under it are a form to fill in.
                    lead_in = True  # cut where its list begins, as a counting lead-in is
                    end = start + fields.start()
                    raw = ev.text[start:end]
                elif lead_in:
                    # "This division is made up of four teams:" states the count before listing them.
                    end = start + len(raw.rstrip().rstrip(":"))
                    raw = ev.text[start:end]
                elif (not _LIST_MARKER_RE.match(raw) or raw.startswith("#")) and start not in items:
                    labelled = label_line(raw)
                    if labelled is not None and not mentions_excluded(raw, exclude):
                        # The line is about its label: "Director - Star Vanamali" answers "who is the director".
                        out.append(_Candidate.of(ev, rank, start, raw, labelled[0], title_terms | heading, label=True))
                    if _is_fragment(raw) and not is_statement_line(raw):
                        # Never a claim; a short one is the heading of what follows.
                        if is_heading(raw):
                            heading = frozenset(content_stems(raw))
                        rejected["fragment"] = rejected.get("fragment", 0) + 1
                        continue
                # Drop a list marker so the claim reads as a sentence; still a verbatim substring.
                m = _LIST_MARKER_RE.match(raw)
                if m and not raw.startswith("#"):
                    start += m.end()
                    raw = ev.text[start:end]
                elif _is_fragment(raw) and not lead_in and start not in items and not is_statement_line(raw):
                    rejected["fragment"] = rejected.get("fragment", 0) + 1
                    continue
                if idx == 0 and ev.char_start > 0 and raw[:1].islower():
                    continue  # the passage window starts mid-sentence: a subjectless fragment
                reason = unfit_reason(raw)
                if reason is not None:
                    rejected[reason] = rejected.get(reason, 0) + 1
                    continue
                if is_instruction(raw):
                    continue  # retrieved text addressing a model is data, never an answer
                toks = tokens(raw)
                if len(toks) < self.min_words and idx > 0:
                    # "lr_example_parallel_apply (boolean). Default: off.": a value too short to stand alone
                    # is read with the sentence before it in its paragraph, as one claim.
                    before_start, before_end = spans[idx - 1]
                    if "\n" not in ev.text[before_end:start] and ev.text[before_end - 1 : before_end] == ".":
                        joined = ev.text[before_start:end]
                        if unfit_reason(joined) is None and not is_instruction(joined):
                            start, raw, toks = before_start, joined, tokens(joined)
                if not self.min_words <= len(toks) <= self.max_words:
                    continue
                if excluded_sentence(raw, exclude):
                    continue
                single = _Candidate.of(ev, rank, start, raw, raw, title_terms | heading)
                paired = self._paired_candidate(ev, spans, idx, start, end, exclude, rank, title_terms | heading)
                if paired is None or not continues_previous(raw):
                    out.append(single)  # a sentence that reads only with the one before it is not a claim alone
                if paired is not None:
                    out.append(paired)
        return out

    def _command_candidate(self, ev: EvidenceRecord, spans: Sequence[tuple[int, int]], idx: int,
                           exclude: Sequence[str], rank: int, context: frozenset[str]) -> _Candidate | None:  # fmt: skip
        """An instruction that introduces a command on the line below, read as one claim with the command and
        with the sentence before it in its paragraph: "Tell git to use SSH keys instead of GPG keys. In a
        terminal, enter this command: git config --global gpg.format ssh"."""
        start, end = spans[idx]
        intro = ev.text[start:end]
        if not intro.endswith(":") or not _COMMAND_INTRO_RE.search(intro) or idx + 1 >= len(spans):
            return None
        cmd_start, cmd_end = spans[idx + 1]
        command = ev.text[cmd_start:cmd_end]
        if "\n" not in ev.text[end:cmd_start] or not _COMMAND_LINE_RE.match(command):
            return None
        first = start
        if idx > 0:
            before_start, before_end = spans[idx - 1]
            before = ev.text[before_start:before_end]
            if "\n" not in ev.text[before_end:start] and before.endswith(".") and unfit_reason(before) is None:
                first = before_start
        text = normalise_ws(ev.text[first:cmd_end])
        if is_instruction(text) or excluded_sentence(text, exclude) or len(tokens(text)) > self.max_words:
            return None
        return _Candidate.of(ev, rank, first, text, text, context, paired=True, command=True)

    def _paired_candidate(self, ev: EvidenceRecord, spans: Sequence[tuple[int, int]], idx: int, start: int,
                          end: int, exclude: Sequence[str], rank: int,
                          context: frozenset[str]) -> _Candidate | None:  # fmt: skip
        """A sentence stating a value, read with the sentence before it in its paragraph, when that one names
        what the value is of and states no figure of its own: "BART fares are based on distance. SFO to Civic
        Center Station is $8.65." answers "how much is the BART fare", which neither sentence does alone."""
        raw = ev.text[start:end]
        if idx == 0 or spans[idx - 1][1] > start:
            return None
        # "… separate from Tock. If you're taking time off, you'll need to … both systems.", "… purchase your
        # own business cards. However, please get a final approval from the TTS Outreach team …": the
        # sentence continues the one before it, which says what it speaks of.
        continues = continues_previous(raw)
        if not continues and not re.search(r"\d", raw):
            return None
        before_start, before_end = spans[idx - 1]
        before = ev.text[before_start:before_end]
        gap = ev.text[before_end:start]
        # A full stop inside closing quotes ends a sentence too: '… the terms "deprecated," or "no longer supported."'
        if "\n" in gap or not before.rstrip().rstrip("\"\u201d'\u2019").endswith(".") or _is_fragment(before):
            return None
        if re.search(r"\d", before) and not continues:
            return None
        # "The current default is 90 days." after the long sentence that says what is counted: a short value stated
        # of "the" thing the sentence before it defines reads only with that sentence, however long.
        short_value = len(tokens(raw)) <= _SHORT_VALUE_WORDS and _DEFINITE_SUBJECT_RE.match(raw) is not None
        if (
            (len(tokens(before)) > 20 and not (continues or short_value))
            or unfit_reason(before) is not None
            or is_instruction(before)
        ):
            return None
        joined = ev.text[before_start:end]
        if len(tokens(joined)) > self.max_words or excluded_sentence(joined, exclude):
            return None
        sides = (
            (frozenset(content_stems_with_parts(before)), frozenset(content_stems_with_parts(raw))) if continues else ()
        )
        return _Candidate.of(ev, rank, before_start, joined, joined, context, paired=True, sides=sides)

    def _list_candidate(self, ev: EvidenceRecord, block: ListBlock, exclude: Sequence[str], rank: int,
                        context: frozenset[str], before: tuple[int, int] | None = None) -> _Candidate | None:  # fmt: skip
        """One claim for a list and its introduction, quoting the whole list; excluded items are left out.

        An introduction that only points at the list ("Enable or select these options:") is read with the
        sentence before it in its paragraph, which says what the options are for: "To adjust group permissions
        so non-GSA people can join your Google Group, click … "Group settings" …. Enable or select these
        options: People outside the organization can be members (ON); Allow email posting."."""
        intro = ev.text[block.intro[0] : block.intro[1]]
        if is_instruction(intro) or mentions_excluded(intro, exclude):
            return None
        lead = ""
        if before is not None and _POINTING_INTRO_RE.search(intro) and len(tokens(intro)) <= 8:
            prior = ev.text[before[0] : before[1]]
            gap = ev.text[before[1] : block.intro[0]]
            if "\n" not in gap and prior.endswith(".") and unfit_reason(prior) is None and not is_instruction(prior):
                lead = prior

        def keep(item: str) -> bool:
            # "If you are not using a password manager, type ..." stays for "I'm not using a password manager".
            return not is_instruction(item) and not excluded_sentence(item, exclude)

        text = render_list(ev.text, block, keep)
        if text is None or len(tokens(text)) < self.min_words:
            return None
        start, end = block.span
        if lead and before is not None and len(tokens(lead)) + len(tokens(text)) <= self.max_words:
            # Scored as the better of the sentence and the introduction, and stated in the sentence's place when
            # that sentence is chosen (the list continues it).
            sides = (frozenset(content_stems_with_parts(lead)), frozenset(content_stems_with_parts(intro)))
            return _Candidate.of(ev, rank, before[0], f"{normalise_ws(lead)} {text}", f"{lead} {intro}", context,
                                 quote=ev.text[before[0] : end], sides=sides)  # fmt: skip
        # What the list is about is in its introduction: "Intended especially to capture: Paid Parental
        # Leave; ..." does not answer "how much paid parental leave" because an item names it.
        return _Candidate.of(ev, rank, start, text, intro, context, quote=ev.text[start:end])


__all__ = [
    "ExtractiveWriter",
    "ListBlock",
    "group_list_blocks",
    "render_list",
    "is_heading",
    "excluded_sentence",
    "states_the_set_aside_case",
    "mentions_excluded",
    "asked_span",
    "continues_previous",
    "row_fits_period",
    "scoped_terms",
    "row_label",
    "split_sentences",
    "unasked_qualifier",
    "unfit_reason",
    "writer_release",
]

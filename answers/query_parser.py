"""Deterministic query understanding: operators and hard constraints out of the raw string.

The design rule this module implements is "operators and constraints are parsed
mechanically, never left to a model or a rewriter to preserve".  ``parse_query``
turns what the user typed into a ``ParsedQuery``; ``validate_rewrite`` then checks
any rewritten search string against those constraints, so a rewriter that adds a
plausible neighbour term ("publisher") cannot silently undo "..., not publishers".

Decisions worth knowing before using the output:

* ``ParsedQuery.text`` is the *positive* retrieval query: operator tokens,
  ``-term`` exclusions, natural-language exclusions ("not publishers") and their
  cue words are removed, everything else (including time words such as "last
  quarter" and "latest") is kept.  Positive quoted phrases keep their quotes
  (straightened), so re-parsing ``text`` yields the same phrases and a phrase such
  as ``"not publishers"`` is never mistaken for a negation later on.  An unpaired
  quote is not an error, but it is dropped from ``text`` so nothing can pair it
  later.  The raw ``original`` string remains the faithful retrieval leg.
* Natural-language exclusions ("not X", "but not X", "excluding X", "except X", "besides X",
  "without X", "X rather than Y") take at most three words after the cue.  A bare
  "not" only counts at a clause start ("subscribers, not publishers"), because
  "replication is not working" is ordinary negation.  "without X" excludes only in a
  statement of what is measured ("net sales without AWS: what were ..."): in a question
  ("Can partners join a mural without an account?", "How long can a repo sit without
  activity?") and before a verb or a pronoun ("without asking Tech Operations", "without
  it") it is the case asked about, which the answer must name.
* A fronted set-aside clause ("Other than running npm deprecate for npm packages, how
  ...?") is cut from ``text`` up to its comma; only its first words are the exclusion.
* Negated operators ("-source:slack", "excluding space:ENG") raise
  ``unsupported_operator``: ``ParsedQuery`` has no field for them, and silently
  dropping or inverting a constraint is exactly the failure this module prevents.
* Exclusions are hard constraints for the retrieval layer (see
  ``constraints_enforced_as_filters``); scope terms are soft: they only have to
  survive rewriting.
* Dates: ``after`` is inclusive, ``before`` exclusive.  A partial operator date
  means the start of that period, for both operators: ``after:2024`` is
  "from 2024-01-01", ``before:2024`` is "before 2024-01-01".  Natural phrases use
  calendar periods ("last quarter", "this year") or rolling windows ("last 30
  days" = ``as_of - 30 days`` up to and including the ``as_of`` day).
"""

from __future__ import annotations

import calendar
import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from answers.contracts import ParsedQuery, PeriodRequest, TimeScope
from answers.lexicon import NUMBER_WORD_VALUES, starts_as_question
from retrieval.entities import catalogue_aliases

__all__ = [
    "KNOWN_SOURCES",
    "MAX_QUERY_CHARS",
    "QueryError",
    "RewriteCheck",
    "constraints_enforced_as_filters",
    "parse_query",
    "validate_rewrite",
]

MAX_QUERY_CHARS = 1000
KNOWN_SOURCES = frozenset({"confluence", "sharepoint", "slack", "upload"})


class QueryError(ValueError):
    """Bad user input; ``code`` is stable and meant for API responses and metrics."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


@dataclass(frozen=True)
class RewriteCheck:
    """Outcome of checking a rewritten query against the parsed constraints.

    ``ok`` is True only when the rewrite as given violates nothing.  When it does,
    ``repaired`` is a corrected rewrite that passes the same check, or None when no
    mechanical repair passes (the caller must then drop the rewrite leg and search
    with the original/``text`` only).  Typical use::

        query = rewrite if check.ok else check.repaired  # None -> no rewrite leg
    """

    ok: bool
    repaired: str | None
    violations: tuple[str, ...]


# --------------------------------------------------------------------------- lexical pieces

# Web forms submit textarea newlines as CRLF, so "\r" is folded to "\n" before the
# control-character check instead of rejecting every multi-line query from a browser.
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_OPEN_CLOSE_QUOTES = str.maketrans({"\u201c": '"', "\u201d": '"'})

# One left-to-right scan so that whichever construct starts first wins: an operator
# inside a quoted phrase stays part of the phrase, and `site:"Finance Team"` keeps
# its quoted value.  `(?<![^\s(])` = at the start of a token.
_FIRST_PASS_RE = re.compile(
    r"""
    (?P<op>(?<![^\s(])(?P<opneg>-)?(?P<key>source|space|channel|site|after|before):
        (?:"(?P<qval>[^"]*)"|(?P<val>[^\s"]+)))
    | (?P<phrase>(?P<pneg>(?<![^\s(])-)?"(?P<ptext>[^"]*)")
    | (?P<neg>(?<![^\s(])-(?P<nterm>[^\W\d_][^\s":]*?)(?=[.,;:!?)]*(?:\s|$)))
    """,
    re.IGNORECASE | re.VERBOSE,
)
_TRAILING_PUNCT = ".,;:!?)"

# Words keep internal dots, hyphens, apostrophes, slashes, plus and hash so that
# "node.js", "pg_dump", "C++", "don't" and "and/or" stay one token.
_WORD_RE = r"\w(?:[\w'\u2019.+#&/-]*\w)?[+#]*"
_WORD_ONLY_RE = re.compile(_WORD_RE)
_ITEM_RE = re.compile(rf"(?P<word>{_WORD_RE})|(?P<punct>[,;:.!?()\[\]{{}}\u2014\u2013\n]|(?<=\s)-(?=\s))")

_MONTHS = {
    "january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4, "apr": 4,
    "may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8, "september": 9,
    "sept": 9, "sep": 9, "october": 10, "oct": 10, "november": 11, "nov": 11, "december": 12,
    "dec": 12,
}  # fmt: skip
_MONTH_ALT = "|".join(sorted(_MONTHS, key=len, reverse=True))
_NUMBER_WORDS = {w: n for w, n in NUMBER_WORD_VALUES.items() if 1 <= n <= 12}
_NUM_ALT = r"\d{1,3}|" + "|".join(_NUMBER_WORDS)
# Only 19xx/20xx, and not the head of "2023-05" or "20231", so "in 5000 rows" is no year.
_YEAR = r"(?:19|20)\d{2}(?![-/.]?\d)"

# Alternatives are ordered longest-first where they share a prefix ("in Q3 2023"
# before "in 2023", "last 3 months" before "last month").
_TIME_RE = re.compile(
    rf"""
    (?P<rolling>\b(?:last|past|previous)\s+(?P<rn>{_NUM_ALT})\s+
        (?P<ru>days?|weeks?|months?|quarters?|years?)\b)
    | (?P<quarter>\b(?:(?:in|during)\s+)?(?:q(?P<q1>[1-4])\s+(?:of\s+)?(?P<qy1>{_YEAR})
        |(?P<qy2>{_YEAR})\s+q(?P<q2>[1-4]))\b)
    | (?P<cal>\b(?P<cw>this|current|last|previous|past)\s+(?P<cu>week|month|quarter|year)\b)
    | (?P<since_iso>\bsince\s+(?P<sd>\d{{4}}-\d{{2}}(?:-\d{{2}})?)\b)
    | (?P<since>\bsince\s+(?:(?P<sm>{_MONTH_ALT})\s+)?(?P<sy>{_YEAR}))
    | (?P<within>\b(?:in|during)\s+(?:(?P<im>{_MONTH_ALT})\s+)?(?P<iy>{_YEAR}))
    | (?P<day>\b(?:today|yesterday)\b)
    """,
    re.IGNORECASE | re.VERBOSE,
)

_LATEST_RE = re.compile(r"\b(?:latest|newest|current|most\s+recent|up[\s-]to[\s-]date)\b", re.IGNORECASE)

# Natural-language exclusion cues.  "contrastive" cues attach the exclusion to a
# positive term before them ("subscribers but not publishers"), which becomes a scope term.
_CONTRASTIVE_CUES: tuple[tuple[str, ...], ...] = (
    ("but", "not"),
    ("and", "not"),
    ("or", "not"),
    ("rather", "than"),
    ("instead", "of"),
)
_PLAIN_CUES: tuple[tuple[str, ...], ...] = (
    ("not", "including"),
    ("except", "for"),
    ("other", "than"),
    ("apart", "from"),
    ("aside", "from"),
    ("setting", "aside"),
    ("leaving", "out"),
    ("excluding",),
    ("besides",),
    ("except",),
    ("without",),
)
# Who says what they do not use: "I'm not using X", "we don't use X" exclude X; "the sync is not using the
# proxy" is a statement about the sync.
_FIRST_PERSON = frozenset({"i", "i'm", "i’m", "im", "we", "we're", "we’re", "am"})
_NOT_WANTING_TO_USE: tuple[list[str], ...] = (
    ["don't", "want", "to", "use"],
    ["don’t", "want", "to", "use"],
    ["do", "not", "want", "to", "use"],
)
_CUE_WORDS = frozenset(w for cue in _CONTRASTIVE_CUES + _PLAIN_CUES for w in cue) | {"not"}
# Skipped between a cue and its object: "not for the publisher side" excludes "publisher side".
_LEADING_FILLERS = frozenset(
    {"the", "a", "an", "any", "for", "from", "in", "on", "to", "about", "with", "those", "these", "its"}
)
# End the excluded noun phrase; "of" is deliberately absent so "versions of pg" stays whole.
_TERMINATORS = frozenset(
    {
        "and", "or", "but", "nor", "that", "which", "who", "whom", "whose", "when", "where", "while",
        "because", "since", "before", "after", "until", "in", "on", "at", "from", "during", "for",
        "with", "than", "is", "are", "was", "were", "be", "been", "do", "does", "did", "please", "if",
        "so", "then", "as", "to", "by", "vs", "versus", "how", "what", "why", "should", "would",
        "could", "can", "will", "may", "might", "must", "has", "have", "had",
    }
)  # fmt: skip
# "not" followed by these is ordinary negation ("not only", "not sure", "not working").
_NOT_FOLLOWERS_TO_IGNORE = frozenset(
    {
        "only", "just", "sure", "be", "yet", "always", "necessarily", "even", "to", "so", "too",
        "really", "quite", "all", "very", "work", "works", "working", "worked",
    }
)  # fmt: skip
_CONTRAST_PUNCT = frozenset({",", ";", "(", "-", "\u2014", "\u2013"})
# A clause opened by one of these asks about its "without X" case rather than setting X aside.
_QUESTION_OPENERS = frozenset(
    {
        "what", "which", "who", "whom", "whose", "when", "where", "why", "how", "can", "could", "is", "are", "am",
        "was", "were", "do", "does", "did", "should", "shall", "may", "might", "will", "would", "must", "has",
        "have", "had", "i", "we", "my", "our", "if",
    }
)  # fmt: skip
_PRONOUNS = frozenset({"it", "them", "me", "us", "you", "him", "her", "one", "this", "that", "those", "these"})
_CLAUSE_END_PUNCT = frozenset({".", "?", "!", ":", ";", ","})
# "using" and "including" name the thing left out ("without using Docker"); other verbs are the asked case.
_EXCLUDING_GERUNDS = frozenset({"using", "including", "counting"})


def _clause_opener(items: list[_Item], i: int) -> str:
    """The first word of the clause item ``i`` is in (after the last ``.?!:;,`` before it), casefolded."""
    k = i
    while k > 0 and not (items[k - 1].kind == "punct" and items[k - 1].text in _CLAUSE_END_PUNCT):
        k -= 1
    while k < i and items[k].kind != "word":
        k += 1
    return items[k].text.casefold() if k < len(items) and items[k].kind == "word" else ""


def _asks_about_without(items: list[_Item], i: int) -> bool:
    """Whether "without" at ``i`` names the case asked about rather than something set aside."""
    nxt = items[i + 1] if i + 1 < len(items) and items[i + 1].kind == "word" else None
    if nxt is not None:
        word = nxt.text.casefold()
        if word in _PRONOUNS or (word.endswith("ing") and len(word) > 4 and word not in _EXCLUDING_GERUNDS):
            return True
    return _clause_opener(items, i) in _QUESTION_OPENERS


def _fold(word: str) -> str:
    """Case- and simple-plural-insensitive form, so "Publishers" matches "publisher"."""
    w = word.casefold().replace("\u2019", "'")
    w = w.removesuffix("'s")
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 4 and w.endswith("es") and w[:-2].endswith(("s", "x", "z", "ch", "sh")):
        return w[:-2]
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        return w[:-1]
    return w


def _folded_words(text: str) -> list[str]:
    return [_fold(m.group()) for m in _WORD_ONLY_RE.finditer(text)]


def _contains_run(haystack: list[str], needle: list[str]) -> bool:
    return bool(needle) and any(haystack[i : i + len(needle)] == needle for i in range(len(haystack) - len(needle) + 1))


def _tidy(text: str) -> str:
    """Collapse whitespace and the punctuation debris left where spans were cut out."""
    text = re.sub(r"\s+", " ", text)
    text = re.sub(r"[(\[]\s*[)\]]", " ", text)  # "(not publishers)" leaves "()"
    text = re.sub(r"([(\[])\s+", r"\1", text)
    text = re.sub(r"\s+([,;:.!?)\]])", r"\1", text)
    text = re.sub(r"([,;:])(?:\s*[,;:])+", r"\1", text)  # "changes, , since" -> "changes, since"
    text = re.sub(r"[,;:]+([.!?])", r"\1", text)  # "subscribers,?" -> "subscribers?"
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(r"^[,;:.!?\s-]+", "", text)
    text = re.sub(r"[,;:\s\u2014\u2013-]+$", "", text)
    return text


def _normalise(raw: str) -> str:
    return unicodedata.normalize("NFC", raw.replace("\r\n", "\n").replace("\r", "\n"))


# --------------------------------------------------------------------------- scanning


@dataclass
class _Phrase:
    start: int
    end: int
    text: str
    negated: bool


@dataclass
class _Item:
    kind: str  # "word", "punct" or "barrier"
    text: str
    start: int
    end: int
    barrier: str = ""  # for barriers: "op", "neg", "phrase" or "time"
    phrase: _Phrase | None = None


@dataclass
class _Scan:
    """Everything found in one string; raises nothing, so rewrites can be scanned too."""

    working: str
    phrases: list[_Phrase] = field(default_factory=list)
    exclusions: list[tuple[int, str]] = field(default_factory=list)
    scope: list[str] = field(default_factory=list)
    operators: list[tuple[str, str, str]] = field(default_factory=list)  # key, value, surface
    negated_operators: list[str] = field(default_factory=list)
    time_matches: list[re.Match[str]] = field(default_factory=list)
    removed: list[tuple[int, int]] = field(default_factory=list)

    @property
    def text(self) -> str:
        # Positive phrases go through _tidy as opaque placeholders: its punctuation
        # clean-up must not alter a phrase that has to stay verbatim.
        kept = [p for p in self.phrases if p.text and not p.negated]
        cuts = [(a, b, " ") for a, b in self.removed]
        cuts += [(p.start, p.end, f"\x00{n}\x00") for n, p in enumerate(kept)]
        pieces: list[str] = []
        pos = 0
        for start, end, replacement in sorted(cuts):
            if start > pos:
                pieces.append(self.working[pos:start])
            pieces.append(f" {replacement} ")
            pos = max(pos, end)
        pieces.append(self.working[pos:])
        text = _tidy("".join(pieces))
        return re.sub(r"\x00(\d+)\x00", lambda m: f'"{kept[int(m.group(1))].text}"', text)

    def positive_words(self) -> list[re.Match[str]]:
        """Word tokens of ``working`` that are not inside an operator or a negation."""
        spans = sorted(self.removed)
        return [
            m for m in _WORD_ONLY_RE.finditer(self.working) if not any(a < m.end() and m.start() < b for a, b in spans)
        ]


def _scan(normalised: str) -> _Scan:
    scan = _Scan(working=normalised.translate(_OPEN_CLOSE_QUOTES))
    s = scan.working
    barriers: list[_Item] = []

    for m in _FIRST_PASS_RE.finditer(s):
        if m.group("op"):
            key = m.group("key").lower()
            if m.group("qval") is not None:
                value, end = m.group("qval").strip(), m.end()
            else:
                value = m.group("val").rstrip(_TRAILING_PUNCT)
                end = m.start("val") + len(value)
            if m.group("opneg"):
                scan.negated_operators.append(s[m.start() : end])
            elif value:
                scan.operators.append((key, value, s[m.start() : end]))
            scan.removed.append((m.start(), end))
            barriers.append(_Item("barrier", s[m.start() : end], m.start(), end, barrier="op"))
        elif m.group("phrase"):
            phrase_text = re.sub(r"\s+", " ", m.group("ptext")).strip()
            phrase = _Phrase(m.start(), m.end(), phrase_text, negated=bool(m.group("pneg")))
            if not phrase_text:
                scan.removed.append((m.start(), m.end()))  # `""` carries no constraint
            else:
                scan.phrases.append(phrase)
                if phrase.negated:
                    scan.exclusions.append((m.start(), phrase_text))
                    scan.removed.append((m.start(), m.end()))
            barriers.append(_Item("barrier", m.group(), m.start(), m.end(), barrier="phrase", phrase=phrase))
        else:
            scan.exclusions.append((m.start(), m.group("nterm")))
            scan.removed.append((m.start(), m.end()))
            barriers.append(_Item("barrier", m.group(), m.start(), m.end(), barrier="neg"))

    # A quote left unpaired is a literal character, not an error; it is cut from the
    # text because a later parser (or a re-parse of ``text``) could pair it with a
    # quote that only became adjacent once operators were removed.
    for pos, char in enumerate(s):
        if char == '"' and not any(b.start <= pos < b.end for b in barriers):
            scan.removed.append((pos, pos + 1))

    for m in _TIME_RE.finditer(s):
        if any(b.start < m.end() and m.start() < b.end for b in barriers):
            continue  # e.g. "in 2023" inside a quoted phrase is text, not a time filter
        scan.time_matches.append(m)
    barriers.extend(_Item("barrier", m.group(), m.start(), m.end(), barrier="time") for m in scan.time_matches)
    barriers.sort(key=lambda b: b.start)

    items: list[_Item] = []
    pos = 0
    for barrier in [*barriers, None]:
        segment_end = barrier.start if barrier else len(s)
        for m in _ITEM_RE.finditer(s, pos, segment_end):
            kind = "word" if m.group("word") else "punct"
            items.append(_Item(kind, m.group(), m.start(), m.end()))
        if barrier:
            items.append(barrier)
            pos = barrier.end
    _find_natural_exclusions(scan, items)
    return scan


def _match_cue(items: list[_Item], i: int) -> tuple[int, bool] | None:
    """(cue length, contrastive) when a natural-language exclusion cue starts at ``i``."""
    for cues, contrastive in ((_CONTRASTIVE_CUES, True), (_PLAIN_CUES, False)):
        for cue in cues:
            window = items[i : i + len(cue)]
            if len(window) == len(cue) and all(
                it.kind == "word" and it.text.casefold() == w for it, w in zip(window, cue, strict=True)
            ):
                # "whether or not to upgrade" is not an exclusion.
                if cue == ("or", "not") and i > 0 and items[i - 1].text.casefold() == "whether":
                    continue
                if cue == ("without",) and _asks_about_without(items, i):
                    continue
                return len(cue), contrastive
    here = [it.text.casefold() if it.kind == "word" else "" for it in items[i : i + 5]]
    if here[:1] in (["leaving"], ["setting"], ["putting"]) and "aside" in here[2:5]:
        return 1, False  # "Leaving Azure aside, how did server products do?"
    words = [it.text.casefold() if it.kind == "word" else "" for it in items[max(0, i - 1) : i + 3]]
    if i > 0 and words[0] in _FIRST_PERSON and words[1:3] == ["not", "using"]:
        return 2, False  # "I'm not using a password manager like KeePassXC": what they do not use
    if i > 0 and words[0] in _FIRST_PERSON and words[1:4] == ["do", "not", "use"]:
        return 3, False
    if i > 0 and words[0] in _FIRST_PERSON and words[1:3] in (["don't", "use"], ["don’t", "use"]):
        return 2, False
    # "I don't want to use Docker", "we do not want to use X": what they will not use.
    around = [it.text.casefold() if it.kind == "word" else "" for it in items[i : i + 6]]
    if i > 0 and items[i - 1].text.casefold() in _FIRST_PERSON:
        for words_ in _NOT_WANTING_TO_USE:
            # "I don't want to use up my leave", "... to use it": a phrasal verb or a pronoun, nothing named.
            n = len(words_)
            if around[:n] == words_ and (around + [""])[n] not in {"up", "it", "this", "that", "them"}:
                return n, False
    if items[i].kind == "word" and items[i].text.casefold() == "not":
        # A bare "not" only excludes at a clause start ("subscribers, not publishers",
        # "Not publishers: ..."); "replication is not ..." is ordinary negation.
        prev = items[i - 1] if i > 0 else None
        if prev is None or prev.kind == "punct" or prev.barrier in ("op", "neg"):
            return 1, prev is not None and prev.kind == "punct" and prev.text in _CONTRAST_PUNCT
        if _contrasts_two_nouns(items, i):
            return 1, True
    return None


def _plural_noun(word: str) -> bool:
    w = word.casefold()
    return len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is", "'s")) and w not in _TERMINATORS


def _contrasts_two_nouns(items: list[_Item], i: int) -> bool:
    """ "employees not contractors", "vacation leave not annual leave": a contrast without a comma.

    Only between two words of one kind (both plural nouns, or the same head noun), so that
    ordinary negation ("the build does not start", "users not notified") stays text.
    """
    prev, nxt = items[i - 1], items[i + 1] if i + 1 < len(items) else None
    if prev.kind != "word" or nxt is None or nxt.kind != "word":
        return False
    if prev.text.casefold() in _TERMINATORS | _CUE_WORDS or nxt.text.casefold() in _NOT_FOLLOWERS_TO_IGNORE:
        return False
    following = [t for t in items[i + 1 : i + 4] if t.kind == "word"]
    run: list[_Item] = []
    for t in following:
        if t.text.casefold() in _TERMINATORS | _CUE_WORDS:
            break
        run.append(t)
    if not run:
        return False
    head = run[-1].text
    return (_plural_noun(prev.text) and _plural_noun(head)) or (len(run) > 1 and _fold(prev.text) == _fold(head))


def _short_phrase(items: list[_Item], k: int) -> list[_Item]:
    """Up to three words from ``k`` that a terminator or a cue does not end: one more excluded noun phrase."""
    out: list[_Item] = []
    while (
        k < len(items)
        and len(out) < 3
        and items[k].kind == "word"
        and items[k].text.casefold() not in _TERMINATORS | _CUE_WORDS
    ):
        out.append(items[k])
        k += 1
    return out


def _find_natural_exclusions(scan: _Scan, items: list[_Item]) -> None:
    i = 0
    while i < len(items):
        cue = _match_cue(items, i)
        if cue is None:
            i += 1
            continue
        cue_len, contrastive = cue
        j = i + cue_len
        if (
            j < len(items)
            and items[j].kind == "word"
            and items[j - 1].text.casefold() == "not"
            and items[j].text.casefold() in _NOT_FOLLOWERS_TO_IGNORE
        ):
            i += 1
            continue
        while j < len(items) and items[j].kind == "word" and items[j].text.casefold() in _LEADING_FILLERS:
            j += 1
        if j < len(items) and items[j].barrier == "op":
            # "excluding source:slack" asks for a negated operator; report it rather
            # than apply the operator the wrong way round.
            scan.negated_operators.append(items[j].text)
            i = j + 1
            continue
        if j < len(items) and items[j].barrier == "time":
            # "excluding last year" cannot be expressed as one TimeScope window; applying
            # "last year" would invert the request, so the words stay text, not a filter.
            scan.time_matches = [m for m in scan.time_matches if m.start() != items[j].start]
            i = j + 1
            continue
        target: list[_Item] = []
        candidate = items[j].phrase if j < len(items) else None
        if candidate is not None and candidate.text and not candidate.negated:
            target = [items[j]]
            j += 1
        else:
            while (
                j < len(items)
                # An article is not one of the three words: "creating a public repo" is one phrase.
                and len([t for t in target if t.text.casefold() not in ("a", "an", "the")]) < 3
                and items[j].kind == "word"
                and items[j].text.casefold() not in _TERMINATORS
                and items[j].text.casefold() not in _CUE_WORDS
            ):
                target.append(items[j])
                j += 1
            while target and target[-1].text.casefold() in _LEADING_FILLERS | {"of"}:
                target.pop()
            while len(target) > 1 and target[-1].text.casefold() == "like":
                target.pop()  # "a password manager like KeePassXC": the example is excluded on its own, below
                j -= 1
        if not target:
            # A cue with nothing to exclude carries no positive meaning, and left in
            # ``text`` it could bind to whatever becomes adjacent once operators and
            # line breaks are gone ("except -foo pg" must not turn into "except pg").
            scan.removed.append((items[i].start, items[i + cue_len - 1].end))
            i += cue_len
            continue

        phrase = target[0].phrase
        if phrase is not None:
            phrase.negated = True
            excluded_words = phrase.text.split()
            scan.exclusions.append((phrase.start, phrase.text))
        else:
            excluded_words = [t.text for t in target]
            scan.exclusions.append((target[0].start, " ".join(excluded_words)))
        end = target[-1].end
        # Coordinated exclusions ("not interns or contractors", "excluding travel and meals"):
        # every conjunct is excluded; leaving "or contractors" in the positive text would turn
        # half of the user's exclusion into a search term.
        while j + 1 < len(items) and items[j].kind == "word" and items[j].text.casefold() in ("or", "and", "nor"):
            k = j + 1
            # "besides paid parental leave and the VLTP": an article opens the next conjunct.
            if k + 1 < len(items) and items[k].kind == "word" and items[k].text.casefold() in ("the", "a", "an"):
                k += 1
            if items[k].kind != "word" or items[k].text.casefold() in _TERMINATORS | _LEADING_FILLERS | _CUE_WORDS:
                break
            more = _short_phrase(items, k)
            k += len(more)
            scan.exclusions.append((more[0].start, " ".join(t.text for t in more)))
            end = more[-1].end
            j = k
        if j < len(items) and items[j].kind == "word" and items[j].text.casefold() == "aside":
            end, j = items[j].end, j + 1  # "leaving Azure aside": the closing word goes with the cue
        if j + 1 < len(items) and items[j].kind == "word" and items[j].text.casefold() == "like":
            # "not using a password manager like KeePassXC": the example named is excluded too.
            example = _short_phrase(items, j + 1)
            if example:
                scan.exclusions.append((example[0].start, " ".join(t.text for t in example)))
                end = example[-1].end
                j += 1 + len(example)
        if not contrastive and _clause_opener(items, i) == items[i].text.casefold():
            # "Other than running npm deprecate for npm packages, how should I ...": the rest of the fronted
            # clause is the set-aside case too, not words of the question.
            comma = next((k for k in range(j, min(j + 8, len(items))) if items[k].text == ","), None)
            if comma is not None and all(items[k].kind == "word" for k in range(j, comma)):
                end, j = items[comma - 1].end if comma > j else end, comma
        scan.removed.append((items[i].start, end))
        if contrastive:
            _add_scope(scan, items, i, excluded_words)
        i = j  # resume after the excluded words


def _add_scope(scan: _Scan, items: list[_Item], cue_index: int, excluded_words: list[str]) -> None:
    """The positive term an exclusion contrasts with: "subscribers" in "subscribers, not publishers".

    One word by default; as many words as the exclusion when both share a head noun,
    so "EU region, not US region" scopes to "EU region" rather than "region".
    """
    k = cue_index - 1
    if k >= 0 and items[k].kind == "punct" and items[k].text in _CONTRAST_PUNCT:
        k -= 1
    if k < 0 or items[k].kind != "word":
        return
    if _fold(items[k].text) != _fold(excluded_words[-1]):
        # "how much vacation leave do I get, not annual leave": the contrasted term is the
        # clause's noun phrase with the same head, not the verb just before the comma.
        back = k
        while back >= 0 and items[back].kind == "word":
            if _fold(items[back].text) == _fold(excluded_words[-1]):
                k = back
                break
            back -= 1
    same_head = _fold(items[k].text) == _fold(excluded_words[-1])
    wanted = min(len(excluded_words), 3) if same_head else 1
    words: list[str] = []
    stop = _TERMINATORS | _LEADING_FILLERS | _CUE_WORDS
    while k >= 0 and len(words) < wanted and items[k].kind == "word" and items[k].text.casefold() not in stop:
        words.insert(0, items[k].text)
        k -= 1
    if words and [_fold(w) for w in words] != [_fold(w) for w in excluded_words]:
        scan.scope.append(" ".join(words))


# --------------------------------------------------------------------------- time


def _parse_operator_date(value: str, label: str) -> date:
    m = re.fullmatch(r"(\d{4})(?:-(\d{1,2})(?:-(\d{1,2}))?)?", value)
    if m is None:
        raise QueryError("invalid_date", f"{label!r}: use YYYY-MM-DD, YYYY-MM or YYYY")
    year, month, day = int(m.group(1)), int(m.group(2) or 1), int(m.group(3) or 1)
    try:
        return date(year, month, day)
    except ValueError:
        raise QueryError("invalid_date", f"{label!r} is not a calendar date") from None


def _add_months(d: date, months: int) -> date:
    total = d.year * 12 + d.month - 1 + months
    year, month0 = divmod(total, 12)
    return date(year, month0 + 1, min(d.day, calendar.monthrange(year, month0 + 1)[1]))


def _quarter_start(d: date) -> date:
    return date(d.year, 3 * ((d.month - 1) // 3) + 1, 1)


def _resolve_time(m: re.Match[str], today: date) -> tuple[date | None, date | None]:
    tomorrow = today + timedelta(days=1)
    if m.group("rolling"):
        raw_n = m.group("rn").lower()
        n = _NUMBER_WORDS.get(raw_n) or int(raw_n)
        unit = m.group("ru").lower().rstrip("s")
        if unit == "day":
            return today - timedelta(days=n), tomorrow
        if unit == "week":
            return today - timedelta(weeks=n), tomorrow
        months: int | None  # the "past <unit>" branch below reuses the name for an optional lookup
        months = {"month": 1, "quarter": 3, "year": 12}[unit] * n
        return _add_months(today, -months), tomorrow
    if m.group("quarter"):
        q = int(m.group("q1") or m.group("q2"))
        start = date(int(m.group("qy1") or m.group("qy2")), 3 * (q - 1) + 1, 1)
        return start, _add_months(start, 3)
    if m.group("cal"):
        which, unit = m.group("cw").lower(), m.group("cu").lower()
        if which == "past":  # "past month" is a rolling window, "last month" a calendar one
            months = {"month": 1, "quarter": 3, "year": 12}.get(unit)
            after = today - timedelta(weeks=1) if months is None else _add_months(today, -months)
            return after, tomorrow
        if unit == "week":
            start, length = today - timedelta(days=today.weekday()), timedelta(weeks=1)
            return (start, start + length) if which in ("this", "current") else (start - length, start)
        start = {
            "month": today.replace(day=1),
            "quarter": _quarter_start(today),
            "year": date(today.year, 1, 1),
        }[unit]
        step = {"month": 1, "quarter": 3, "year": 12}[unit]
        if which in ("this", "current"):
            return start, _add_months(start, step)
        return _add_months(start, -step), start
    if m.group("since_iso"):
        return _parse_operator_date(m.group("sd"), m.group()), None
    if m.group("since"):
        month = _MONTHS[m.group("sm").lower()] if m.group("sm") else 1
        return date(int(m.group("sy")), month, 1), None
    if m.group("within"):
        year = int(m.group("iy"))
        if m.group("im"):
            start = date(year, _MONTHS[m.group("im").lower()], 1)
            return start, _add_months(start, 1)
        return date(year, 1, 1), date(year + 1, 1, 1)
    if m.group().lower() == "today":
        return today, tomorrow
    return today - timedelta(days=1), today


def _operator_time_scope(scan: _Scan) -> TimeScope | None:
    """The updated-date window of the after:/before: operators alone (the only explicit request)."""
    afters: list[date] = []
    befores: list[date] = []
    labels: list[str] = []
    for key, value, surface in scan.operators:
        if key in ("after", "before"):
            (afters if key == "after" else befores).append(_parse_operator_date(value, surface))
            labels.append(surface)
    if not labels:
        return None
    return TimeScope(after=max(afters, default=None), before=min(befores, default=None), label=", ".join(labels))


_ORDINALS = {"first": 1, "1st": 1, "second": 2, "2nd": 2, "third": 3, "3rd": 3, "fourth": 4, "4th": 4}
_FY = r"(?:fy\s*'?|fiscal\s+(?:year\s+)?)"
_YEAR4 = r"(?:19|20)\d{2}"
# Periods the content describes.  Each alternative yields one PeriodRequest; ordered so the
# most specific form wins at a position ("Q3 fiscal 2023" before "fiscal 2023").
_PERIOD_RE = re.compile(
    rf"""
    (?P<fq>\b(?P<fq_fiscal1>fiscal\s+)?q(?P<fq_q>[1-4])\s*(?:of\s+)?(?P<fq_fiscal2>{_FY})?
        (?P<fq_y>{_YEAR4}|'\d{{2}}|(?<=fy)\d{{2}}|(?<=fy\s)\d{{2}})\b)
    | (?P<yq>\b(?P<yq_fiscal>{_FY})?(?P<yq_y>{_YEAR4})\s+q(?P<yq_q>[1-4])\b)
    | (?P<yoq>\b(?P<yoq_fiscal>{_FY})?(?P<yoq_y>{_YEAR4})\s+(?P<yoq_o>first|1st|second|2nd|third|3rd|fourth|4th)\s+
        (?:fiscal\s+)?quarter\b)
    | (?P<oq>\b(?P<oq_o>first|1st|second|2nd|third|3rd|fourth|4th)\s+(?:fiscal\s+)?quarter\s+
        (?:of\s+|in\s+)?(?P<oq_fiscal>{_FY})?(?P<oq_y>{_YEAR4})\b)
    | (?P<ytd>\b(?:first\s+)?(?P<ytd_n>six|nine)\s+months\s+(?:of\s+)?(?P<ytd_fiscal>{_FY})?(?P<ytd_y>{_YEAR4})\b
        |\bfirst\s+half\s+of\s+(?P<h1_fiscal>{_FY})?(?P<h1_y>{_YEAR4})\b)
    | (?P<ended>(?:\b(?:quarter|(?:three|six|nine)\s+months|quarterly\s+period|period|the\s+one)\s+(?:that\s+)?
        |(?<=['’]s\s))(?:ended|ending)\s+(?P<ended_m>{_MONTH_ALT})\.?\s+
        (?P<ended_d>\d{{1,2}}),?\s+(?P<ended_y>{_YEAR4})\b)
    | (?P<fy>\b{_FY}(?P<fy_y>{_YEAR4}|(?<=fy)\d{{2}})\b)
    | (?P<latest>\b(?:latest|most\s+recent|newest|current|last|recent|last\s+reported)\s+
        (?:(?:fiscal|financial|reported)\s+)?(?P<latest_u>quarter|10-q|quarterly\s+report|filing|report)s?\b)
    | (?P<prev>\b(?:previous|prior|preceding|earlier|last)\s+(?P<prev_u>quarter|year|fiscal\s+year)\b
        |\bquarter\s+before\b|\ba\s+year\s+(?:earlier|before|ago)\b)
    | (?P<year>\b(?:in|during|for)\s+(?P<year_y>{_YEAR4})\b(?!\s+q[1-4]\b))
    """,
    re.IGNORECASE | re.VERBOSE,
)


def _full_year(raw: str) -> int:
    digits = raw.lstrip("'")
    return int(digits) if len(digits) == 4 else 2000 + int(digits)


def _periods(text: str) -> tuple[PeriodRequest, ...]:
    """Reporting periods named in the question ("Q2 2023", "fiscal 2023", "the latest quarter").

    A resolved follow-up ("How much did that boost operating income in the quarter ended September 30, 2022:
    I heard Microsoft changed ... starting fiscal 2023. ...", answers/followups.py) that names a period of its
    own asks about that period; the earlier question's periods said when the thing it refers to began.  A
    relative period of its own ("the previous quarter") is counted from the earlier question's, which stay.
    """
    head, sep, _earlier = text.partition(": ")
    if sep and starts_as_question(head):
        own = _named_periods(head)
        if any(p.relation == "absolute" for p in own):
            return own
    return _named_periods(text)


def _named_periods(text: str) -> tuple[PeriodRequest, ...]:
    out: list[PeriodRequest] = []
    for m in _PERIOD_RE.finditer(text):
        label = re.sub(r"\s+", " ", m.group()).strip()
        if m.group("fq"):
            fiscal = bool(m.group("fq_fiscal1") or m.group("fq_fiscal2") or re.search(r"fy", label, re.I)) or None
            out.append(PeriodRequest("absolute", "quarter", _full_year(m.group("fq_y")), int(m.group("fq_q")),
                                     fiscal, label))  # fmt: skip
        elif m.group("yq"):
            out.append(PeriodRequest("absolute", "quarter", int(m.group("yq_y")), int(m.group("yq_q")),
                                     True if m.group("yq_fiscal") else None, label))  # fmt: skip
        elif m.group("yoq"):
            # "its fiscal 2024 second quarter": the year before the quarter.
            out.append(PeriodRequest("absolute", "quarter", int(m.group("yoq_y")), _ORDINALS[m.group("yoq_o").lower()],
                                     True if m.group("yoq_fiscal") else None, label))  # fmt: skip
        elif m.group("oq"):
            fiscal = True if (m.group("oq_fiscal") or "fiscal" in label.lower()) else None
            out.append(PeriodRequest("absolute", "quarter", int(m.group("oq_y")), _ORDINALS[m.group("oq_o").lower()],
                                     fiscal, label))  # fmt: skip
        elif m.group("ytd"):
            # "the first nine months of fiscal 2023" is reported in that year's third-quarter filing (the
            # nine-month column), "the first half" in the second-quarter one.
            year = m.group("ytd_y") or m.group("h1_y")
            quarter = 3 if (m.group("ytd_n") or "").lower() == "nine" else 2
            fiscal = True if (m.group("ytd_fiscal") or m.group("h1_fiscal")) else None
            out.append(PeriodRequest("absolute", "quarter", int(year), quarter, fiscal, label))
        elif m.group("ended"):
            try:
                end = date(int(m.group("ended_y")), _MONTHS[m.group("ended_m").lower()], int(m.group("ended_d")))
            except ValueError:
                continue
            out.append(PeriodRequest("absolute", "quarter", end.year, None, None, label, end=end.isoformat()))
        elif m.group("fy"):
            out.append(PeriodRequest("absolute", "year", _full_year(m.group("fy_y")), None, True, label))
        elif m.group("latest"):
            out.append(PeriodRequest("latest", "quarter", label=label))
        elif m.group("prev"):
            unit = (m.group("prev_u") or "").lower()
            if "year" in unit or "year" in label.lower():
                out.append(PeriodRequest("previous_year", "year", label=label))
            else:
                out.append(PeriodRequest("previous", "quarter", label=label))
        elif m.group("year"):
            out.append(PeriodRequest("absolute", "year", int(m.group("year_y")), None, None, label))
    return tuple(out)


def _time_scope(scan: _Scan, as_of: datetime) -> TimeScope | None:
    """Intersect every time constraint found; an empty intersection is ``invalid_range``."""
    today = as_of.date()
    afters: list[date] = []
    befores: list[date] = []
    labels: list[tuple[int, str]] = []
    for key, value, surface in scan.operators:
        if key in ("after", "before"):
            parsed = _parse_operator_date(value, surface)
            (afters if key == "after" else befores).append(parsed)
            labels.append((scan.working.find(surface), surface))
    op_afters, op_befores = list(afters), list(befores)
    named_afters: list[date] = []
    named_befores: list[date] = []
    relative: list[tuple[date | None, date | None]] = []
    whole: list[tuple[date, date]] = []
    for m in scan.time_matches:
        try:
            after, before = _resolve_time(m, today)
        except QueryError:
            raise
        except (ValueError, OverflowError):
            raise QueryError("invalid_date", f"{m.group()!r} does not resolve to a date") from None
        if m.group("rolling") or m.group("cal") or m.group("day"):
            relative.append((after, before))
        elif after and before:
            whole.append((after, before))
        else:
            if after:
                named_afters.append(after)
            if before:
                named_befores.append(before)
        labels.append((m.start(), re.sub(r"\s+", " ", m.group())))
    if not labels:
        return None
    if whole:
        # Two whole periods ("in Q2 2023, and how much was it down from Q2 2022") are a comparison, not a
        # contradiction: their span.  One whole period still meets one-sided words ("in 2023 since 2024").
        named_afters.append(min(a for a, _ in whole))
        named_befores.append(max(b for _, b in whole))
    label = ", ".join(text for _, text in sorted(labels))

    def empty(a: list[date], b: list[date]) -> bool:
        return bool(a and b and max(a) >= min(b))

    if empty(op_afters, op_befores) or empty(named_afters, named_befores):
        # Contradictory operators ("after:2025 before:2024") or named periods ("in 2023 since 2024").
        raise QueryError("invalid_range", f"{label!r}: the start must be before the end")
    # This window only describes the time words; nothing filters on it (``time_filter`` holds
    # the operators).  Where the pieces contradict each other they are on different axes (an
    # updated-date operator against a content period, or "the previous quarter" anchored on a
    # named period, answers.scoping), so the widest consistent combination is kept.
    afters, befores = op_afters, op_befores
    for extra_a, extra_b in ((named_afters, named_befores),
                             ([a for a, _ in relative if a], [b for _, b in relative if b])):  # fmt: skip
        if not empty(afters + extra_a, befores + extra_b):
            afters, befores = afters + extra_a, befores + extra_b
        elif not afters and not befores:
            afters, befores = list(extra_a), list(extra_b)
    return TimeScope(after=max(afters, default=None), before=min(befores, default=None), label=label)


# --------------------------------------------------------------------------- entities


def _entities(text: str, aliases: Mapping[str, str] | None) -> tuple[tuple[str, str], ...]:
    # The tenant's own aliases first (they win a clash), then the built-in catalogue of public
    # entities (companies and their product lines: "AAPL" -> Apple, "iPhone").
    merged: dict[str, str] = dict(aliases or {})
    for key, canonical in catalogue_aliases().items():
        merged.setdefault(key, canonical)
    aliases = merged
    table: dict[str, str] = {}
    for key, canonical in aliases.items():
        if key and key.strip():
            table.setdefault(unicodedata.normalize("NFC", key.strip()).casefold(), canonical)
    # A canonical name typed as-is ("PostgreSQL") is the same entity as its aliases.
    for canonical in aliases.values():
        if canonical and canonical.strip():
            table.setdefault(unicodedata.normalize("NFC", canonical.strip()).casefold(), canonical)
    if not table:
        return ()
    # Longest key first: at a given position a regex alternation takes the first
    # alternative that matches, so "logical replication" beats "logical".
    keys = sorted(table, key=len, reverse=True)
    pattern = re.compile(
        r"(?<!\w)(?:" + "|".join(r"\s+".join(map(re.escape, k.split())) for k in keys) + r")(?!\w)",
        re.IGNORECASE,
    )
    found: list[tuple[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for m in pattern.finditer(text):
        surface = m.group()
        canonical = table[re.sub(r"\s+", " ", surface).casefold()]
        if (surface.casefold(), canonical) not in seen:
            seen.add((surface.casefold(), canonical))
            found.append((surface, canonical))
    return tuple(found)


# --------------------------------------------------------------------------- public API


def _unique(values: list[str]) -> tuple[str, ...]:
    seen: set[str] = set()
    out: list[str] = []
    for value in values:
        if value.casefold() not in seen:
            seen.add(value.casefold())
            out.append(value)
    return tuple(out)


def parse_query(raw: str, as_of: datetime, aliases: Mapping[str, str] | None = None) -> ParsedQuery:
    """Parse operators and constraints out of ``raw`` deterministically.

    ``as_of`` is the request clock every relative date resolves against (its own
    calendar date, calendar quarters).  ``aliases`` maps a tenant's surface forms to
    canonical entity names; canonical names found verbatim are recognised too.
    Raises ``QueryError`` (codes: empty_query, query_too_long, control_characters,
    invalid_date, unknown_source, invalid_range, unsupported_operator).
    """
    if not isinstance(raw, str):
        raise QueryError("empty_query", "the query must be a string")
    normalised = _normalise(raw)
    if _CONTROL_RE.search(normalised):
        raise QueryError("control_characters", "the query contains control characters")
    if not normalised.strip():
        raise QueryError("empty_query", "the query is empty")
    if len(normalised) > MAX_QUERY_CHARS:
        raise QueryError("query_too_long", f"the query is longer than {MAX_QUERY_CHARS} characters")

    scan = _scan(normalised)
    if scan.negated_operators:
        # No field can carry "not in this source"; dropping it silently is the failure
        # this module exists to prevent, so the user is told instead.
        raise QueryError("unsupported_operator", f"{scan.negated_operators[0]!r}: negated operators are not supported")

    sources: list[str] = []
    containers: list[str] = []
    for key, value, _surface in scan.operators:
        if key == "source":
            for name in filter(None, (v.strip().lower() for v in value.split(","))):
                if name not in KNOWN_SOURCES:
                    known = ", ".join(sorted(KNOWN_SOURCES))
                    raise QueryError("unknown_source", f"unknown source {name!r}; use one of {known}")
                sources.append(name)
        elif key == "channel":
            # Slack channel names are lowercase and users type them with "#".
            name = value.lstrip("#").lower()
            if name:
                containers.append(f"channel:{name}")
        elif key in ("space", "site"):
            containers.append(f"{key}:{value}")
    time = _time_scope(scan, as_of)

    text = scan.text
    if not _WORD_ONLY_RE.search(text):
        raise QueryError("empty_query", "the query has operators or exclusions but nothing to search for")

    return ParsedQuery(
        original=raw,
        text=text,
        phrases=_unique([p.text for p in scan.phrases if not p.negated]),
        exclude=_unique([term for _, term in sorted(scan.exclusions)]),
        sources=_unique(sources),
        containers=_unique(containers),
        time=time,
        wants_latest=bool(_LATEST_RE.search(text)),
        scope_terms=_unique(scan.scope),
        entities=_entities(text, aliases),
        time_filter=_operator_time_scope(scan),
        periods=_periods(text),
    )


def _violations(parsed: ParsedQuery, scan: _Scan) -> list[str]:
    positive = [_fold(m.group()) for m in scan.positive_words()]
    positive_text = re.sub(r"\s+", " ", scan.text).casefold()
    found: list[str] = []
    if not positive:
        found.append("empty_rewrite")
    for term in parsed.exclude:
        if _contains_run(positive, _folded_words(term)):
            found.append(f"excluded:{term}")
    for phrase in parsed.phrases:
        pattern = r"(?<!\w)" + r"\s+".join(map(re.escape, phrase.casefold().split())) + r"(?!\w)"
        if not re.search(pattern, positive_text):
            found.append(f"missing_phrase:{phrase}")
    for term in parsed.scope_terms:
        if not _contains_run(positive, _folded_words(term)):
            found.append(f"missing_scope:{term}")
    for surface, canonical in parsed.entities:
        if not (_contains_run(positive, _folded_words(surface)) or _contains_run(positive, _folded_words(canonical))):
            found.append(f"missing_entity:{canonical}")
    return found


def _prepare_rewrite(rewrite: str) -> str:
    # A rewrite comes from a model, not a user: control characters are noise to
    # strip rather than input to reject.
    return _CONTROL_RE.sub(" ", _normalise(rewrite))


def validate_rewrite(parsed: ParsedQuery, rewrite: str) -> RewriteCheck:
    """Check a rewritten search query against the constraints parsed from the original.

    Violations (strings, for the trace): ``excluded:<term>`` when an excluded term
    appears positively (word match, case-insensitive, simple plural folding;
    "-publisher" or "not publishers" in the rewrite is negative and fine),
    ``missing_phrase:<p>``, ``missing_scope:<t>``, ``missing_entity:<canonical>``
    (surface or canonical form both count) and ``empty_rewrite``.

    Repair removes positive occurrences of excluded terms and appends missing
    phrases (quoted), scope terms and entities (as the user typed them); an empty
    rewrite is replaced by ``parsed.text``.  The repair is re-checked and rejected
    (``repaired=None``) if it still violates, e.g. when a required phrase itself
    contains an excluded word.  Time, sources and containers are not checked here:
    they never travel in the query string (see ``constraints_enforced_as_filters``).
    """
    scan = _scan(_prepare_rewrite(rewrite))
    violations = _violations(parsed, scan)
    if not violations:
        return RewriteCheck(ok=True, repaired=None, violations=())

    if "empty_rewrite" in violations:
        repaired = parsed.text
    else:
        positive = scan.positive_words()
        folded = [_fold(m.group()) for m in positive]
        cut: list[tuple[int, int]] = []
        for term in parsed.exclude:
            needle = _folded_words(term)
            for i in range(len(folded) - len(needle) + 1):
                if needle and folded[i : i + len(needle)] == needle:
                    cut.append((positive[i].start(), positive[i + len(needle) - 1].end()))
        repaired = _Scan(working=scan.working, removed=cut).text
        additions: list[str] = []
        for v in violations:
            kind, _, value = v.partition(":")
            if kind == "missing_phrase":
                additions.append(f'"{value}"')
            elif kind == "missing_scope":
                additions.append(value)
        for surface, canonical in parsed.entities:
            if f"missing_entity:{canonical}" in violations and surface not in additions:
                additions.append(surface)
        repaired = _tidy(" ".join([repaired, *additions]))

    if _violations(parsed, _scan(repaired)):
        return RewriteCheck(ok=False, repaired=None, violations=tuple(violations))
    return RewriteCheck(ok=False, repaired=repaired, violations=tuple(violations))


def constraints_enforced_as_filters(parsed: ParsedQuery) -> tuple[str, ...]:
    """Constraints the retrieval layer must apply as filters, not leave to the query string.

    Returns a subset of ("exclusions", "phrases", "sources", "containers", "time", "periods"),
    in that order.  Enforcing these as filters or post-retrieval checks is what makes
    them safe regardless of rewriting: even if a rewrite drops "not publishers" or
    the quotes around a phrase, a passage that mentions an excluded term, lacks a
    required phrase, or lies outside the sources/containers/time window is removed
    after retrieval.  ``validate_rewrite`` is the second line of defence that keeps
    ranking honest; scope terms and entities are only enforced there.
    """
    present = (
        ("exclusions", parsed.exclude),
        ("phrases", parsed.phrases),
        ("sources", parsed.sources),
        ("containers", parsed.containers),
        (
            "time",
            parsed.time_filter is not None
            and (parsed.time_filter.after is not None or parsed.time_filter.before is not None),
        ),
        ("periods", parsed.periods),
    )
    return tuple(name for name, value in present if value)

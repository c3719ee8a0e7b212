"""Words as the checks compare them: normalisation, tokens, stems, numbers, version labels.

Split out of ``answers.verification``, which combines them into a verdict per claim.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache

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
        # Prepositions and a filler that ask about nothing: "choose between cash and time off", "how long until I
        # get an actual decision", "do I actually need to".
        "between",
        "among",
        "until",
        # Conjunctions that join the asker's reason to the question ("anything extra I need to do because it's
        # international official travel?"): the reason's words are the content, not the joint.
        "because",
        "although",
        "though",
        "whether",
        "whereas",
        "actually",
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
        # Contractions of a question word or a demonstrative with a verb ("What's the deadline ...?", "a conference
        # that's going to cost more than $2,500"): question form, not content.  A person's ("I'm on a term
        # appointment") stays: on the dev probes its removal made a question no page answers ("Is there a limit
        # on how many hours I'm allowed to give her?") look covered by a sentence about another limit.
        "what's",
        "that's",
        "there's",
        "here's",
        "who's",
        "where's",
        "when's",
        "how's",
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


# The values of number words: the one table the parser, the writer and the content terms read.
NUMBER_WORD_VALUES: dict[str, int] = {
    w: i
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
        "seventeen eighteen nineteen twenty".split()
    )
}
# Content terms write two to twelve as numbers; "one" stays a word ("a public one").
_NUMBER_WORDS = {w: str(n) for w, n in NUMBER_WORD_VALUES.items() if 2 <= n <= 12}


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


# A stem left as one short syllable ending in a consonant lost a silent "e" ("vot", "mak", "us"), as in Porter's
# step 1b; "w", "x" and "y" end no such syllable ("fix", "play").
_SHORT_SYLLABLE_RE = re.compile(r"[^aeiou][aeiou][^aeiouwxy]|[aeiou][^aeiouwxy]")
_IRREGULAR_PLURALS = {
    "lives": "life",
    "wives": "wife",
    "knives": "knife",
    "halves": "half",
    "shelves": "shelf",
    "children": "child",
    "women": "woman",
}


# Every sentence of every passage is stemmed for each stage that scores it (evidence selection, the writer, the
# checks), and pages repeat their words: stems are kept by word.
@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """Lowercase and strip common English suffixes ("subscriptions" -> "subscription")."""
    w = word.lower().replace("\u2019", "'")
    w = w.removesuffix("'s")
    if len(w) <= 3 or not w.isalpha():
        return w
    if w in _IRREGULAR_PLURALS:
        w = _IRREGULAR_PLURALS[w]  # "useful lives" is the plural of "useful life"
    w = _verb_of_compound(w)
    word = w
    for suffix, repl in _SUFFIXES:
        if not w.endswith(suffix):
            continue
        if suffix == "ly" and (w in _NOT_ADVERBS or len(w) < 6):
            break  # "apply", "early", "supply", "family": no adverb to undo
        if suffix == "ly" and w.endswith("ily"):
            w = w[:-3] + "y"  # "temporarily" -> "temporary", "easily" -> "easy"
            break
        # "process", "status", "analysis" are not plurals.
        if suffix == "s" and w.endswith(("ss", "us", "is")):
            break
        if suffix == "ed" and w.endswith("eed"):
            break  # "need", "speed" are not past tenses
        if suffix == "es" and not w.endswith(("sses", "xes", "zes", "ches", "shes")):
            continue  # "fares", "notes", "names" lose only their "s", as "fare", "note", "name" keep theirs
        cand = w[: -len(suffix)] + repl
        if suffix in ("ing", "ings", "ed") and not re.search(r"[aeiouy]", cand):
            continue  # "spring", "string" and "shred" are not "spr", "str" and "shr" doing something
        if suffix in ("ing", "ed") and _SHORT_SYLLABLE_RE.fullmatch(cand):
            cand += "e"  # "voting" -> "vote", "using" -> "use": the base "vote" keeps its "e" (four letters)
        if len(cand) >= 3:
            w = cand
            break
    if len(w) > 4 and w.endswith("e"):
        w = w[:-1]
    if len(w) >= 4 and w[-1] == w[-2] and w[-1] not in "lsz" and w[-1] not in "aeiou":
        w = w[:-1]  # "running" -> "runn" -> "run"
    return _base_of_derivation(w, word)


# A noun made of a verb and its particle names the act the verb with the particle does, and the particle is a
# stopword: "Is there a cleanout I should know about?" / "The fridge is cleaned out on Fridays", "setup" / "set up",
# "kickoff" / "kick off".  Words that only end like one are listed ("group", "without").  "login" stays a word: "log
# in" meeting "your login ID and password" cost two answers on the probe sets (docs/evaluation.md, twenty-ninth
# round).
_PARTICLE_COMPOUND_RE = re.compile(r"(?P<verb>[a-z]{3,})(?:out|up|off)")
_NOT_COMPOUNDS = frozenset(
    {"group", "without", "throughout", "devout", "syrup", "hiccup", "scout", "sprout", "stout", "timeout"}
)


def _verb_of_compound(w: str) -> str:
    single = w[:-1] if w.endswith(("ups", "outs", "offs")) and len(w) > 5 else w
    m = _PARTICLE_COMPOUND_RE.fullmatch(single)
    return m.group("verb") if m and single not in _NOT_COMPOUNDS else w


# A derived noun or adjective names the act or quality of its base word, and a question often says one where the page
# says the other: "Do I have to start recusing myself?" / "recusal is not triggered", "Who signs my approval?" /
# "approved by your supervisor", "cancellation" / "cancel", "eligibility" / "eligible", "deletion" / "delete".
# Only endings whose base is plain are undone: "-ation" and "-ate" after a consonant ("estimation", "estimated" ->
# "estim"; "evaluation" keeps its "at", as "evaluate" does), "-al" after v, s or w ("approval", "refusal",
# "renewal", not "personal" or "signal"), "-tion" after c, p, a vowel or "es" ("deletion", "exemption",
# "suggestion", not "question" or "mention"), "-ibility"/"-ability" ("eligibility"), "-ification" and
# "-plication" ("notification" -> "notify", "application" -> "apply"), and a final "ll" ("cancelled",
# "enrollment", "travelling" meet "cancel", "enrol", "travel").
_NOT_ADVERBS = frozenset({"supply", "comply", "family", "multiply", "assembly", "anomaly", "monopoly"})
_ATE_ENDINGS = ("ation", "ations", "ational", "ate", "ated", "ates", "ating", "ately")


def _base_of_derivation(w: str, word: str) -> str:
    if w.endswith("ificat") and word.endswith(("ification", "ifications", "ificate", "ificates")):
        return w[:-6] + "ify"
    if w.endswith("plicat") and word.endswith(("plication", "plications")):
        return w[:-6] + "ply"
    if w.endswith("at") and word.endswith(_ATE_ENDINGS) and len(w) >= 6 and w[-3] not in "aeiou":
        w = w[:-2]
        if w.endswith("istr"):
            w = w[:-1] + "er"  # "registration", "administration": "register", "administer"
    elif word.endswith(("al", "als")) and w.endswith(("val", "sal", "wal", "rral")) and len(w) >= 6:
        w = w[:-3] if w.endswith("rral") else w[:-2]
    elif (
        word.endswith(("tion", "tions"))
        and w.endswith("tion")
        and len(w) >= 8
        and (w[-5] in "cpeuio" or w.endswith("estion"))
        and not w.endswith("uestion")
    ):
        w = w[:-3]
    elif w.endswith("bility") and w[-7] in "ai" and len(w) >= 9:
        w = w[:-6] + "bl"
    if w.endswith("ll") and len(w) >= 6:
        w = w[:-1]
    return w


def tokens(text: str) -> list[str]:
    """Word tokens of normalised text, original case kept (entities need it)."""
    return _TOKEN_RE.findall(normalise_ws(text))


_QUESTION_LEAD_RE = re.compile(
    r"\s*(?:how|what|when|where|which|who|whom|whose|why|can|could|do|does|did|is|are|was|were|should|would|"
    r"will|may|must|have|has)\b",
    re.I,
)


# In a resolved follow-up the earlier question only says what "that" is: where a question's words are weighed
# (the extractive writer, the weak-evidence rule), its words together count at most this share of what the
# last question's own words count.
EARLIER_TURN_WEIGHT = 0.4


def earlier_turn_scale(latest: Sequence[float], earlier: Sequence[float]) -> float:
    """The factor for the earlier question's word weights (see EARLIER_TURN_WEIGHT); 1.0 when the last question
    has no words of its own to weigh."""
    own, before = sum(latest), sum(earlier)
    if own <= 0 or before <= 0:
        return 1.0
    return min(1.0, EARLIER_TURN_WEIGHT * own / before)


def weigh_earlier_turns(question: str, idf: dict[str, float]) -> dict[str, float]:
    """``idf`` (a question's term -> weight) with the words only a resolved follow-up's earlier question uses
    scaled down by ``earlier_turn_scale``; unchanged for a question that is not a resolved follow-up. The
    extractive writer and evidence selection weigh a question's terms this way."""
    last = asked_clause(question)
    if last == question:
        # Not the asker's situation before the question: it often names the topic ("If I've already gotten this
        # month's subsidy, do I have to pay any of it back?"), and weighed down it let sentences about paying
        # anything back answer (docs/evaluation.md, twentieth round).
        return idf
    latest = set(content_stems(last))
    scale = earlier_turn_scale(
        [w for t, w in idf.items() if t in latest], [w for t, w in idf.items() if t not in latest]
    )
    return {t: w if t in latest else w * scale for t, w in idf.items()}


def starts_as_question(text: str) -> bool:
    """True when ``text`` opens with a question word ("how", "what", "can", "should" ...)."""
    return _QUESTION_LEAD_RE.match(text) is not None


# "And if I need to change it after the pay period has closed": a follow-up asked as a condition.
_LED_CONDITION_RE = re.compile(r"\s*(?:(?:and|but|so|also)\s*,?\s+)?(?:what\s+)?if\b", re.I)


# The longest follow-up read as the question asked before a resolved follow-up's earlier question: "How much did
# that boost operating income in the quarter ended September 30, 2022: I heard Microsoft changed ...?" (14).
_ASKED_HEAD_MAX_WORDS = 24


def asked_before(asked: str, earlier: str) -> str:
    """``asked`` followed by the ``earlier`` question it leans on, the form ``asked_clause`` takes apart ("Can I take
    it intermittently: How much paid parental leave do I get?"): a resolved follow-up, a follow-up read in its
    conversation's context, a compound part read with its whole question."""
    return f"{asked.rstrip('?.! ')}: {earlier.rstrip('?.! ')}?"


def asked_clause(question: str) -> str:
    """The question the user asked last in a resolved follow-up ("Can I take it intermittently: How much
    paid parental leave do I get?", answers/followups.py): its kind of answer (a yes/no, not an amount)
    comes from the first question; the second only supplies what "it" is. Anything else is returned whole.
    """
    head, sep, tail = question.partition(": ")
    if not sep or not (_QUESTION_LEAD_RE.match(head) or _LED_CONDITION_RE.match(head)):
        return question
    # The earlier question may open with a statement ("I'm flying into SFO ... What's the easiest way ...?");
    # a head that poses a case ("What if I just want people to see the name I go by, like Mike ...") is the
    # follow-up however long it is.
    if (
        _LED_CONDITION_RE.match(head)
        or _QUESTION_LEAD_RE.match(tail)
        or (len(head.split()) <= _ASKED_HEAD_MAX_WORDS and tail.rstrip().endswith("?"))
    ):
        return head
    return question


# A question word after a sentence's end starts the next one in lower case too: the parser takes an exclusion out
# ("I'm leaving federal service. Apart from my annual leave, do any ...?" reads "... service., do any ...?").
_SENTENCE_END_RE = re.compile(
    r"(?<=[.?!])[,;]?\s+(?=[A-Z\"'(]|(?:how|what|when|where|which|who|why|can|could|do|does|did|is|are|should|will|would|"
    r"may|must|am)\b)"
)
# "After I update it in HR Links, how long ...": a leading clause that says when, not what is asked.
_LEADING_CONDITION_RE = re.compile(
    r"^(?:after|before|once|when|whenever|if|since|because|now\s+that|while)\b[^,?]{3,100},\s*(?=\w)", re.I
)


# The words that make "which ... the most ..." a ranking; "most recent" names a period, not a ranking.
_SUPERLATIVES = "most|highest|largest|biggest|greatest|lowest|smallest|least|fewest"
_LOWEST_WORDS = frozenset({"lowest", "smallest", "least", "fewest"})
_SUPERLATIVE_RE = re.compile(rf"\b(?:which|what)\b[^?.]*?\b(?P<word>{_SUPERLATIVES})\b(?!\s+recent)", re.I)
# "Which of Amazon's revenue categories brought in the most money …?": the set ranked ("categories"), the verb
# and the superlative say how the answer is chosen among a table's rows, not what a claim must state.
_RANKED_SET_RE = re.compile(
    r"\bwhich\s+(?:of\s+(?:the|its|their|our|[\w.&-]+['\u2019]s)\s+)?(?:[\w-]+\s+){0,3}?(?P<set>[\w-]+)\s+"
    r"(?P<verb>had|has|have|brought|brings|bring|made|makes|earned|earns|generated|generates|grew|saw|posted|"
    r"reported|contributed|contributes|accounted|was|were|is|are)\b"
    rf"(?:\s+in)?[^?]*?\b(?P<sup>{_SUPERLATIVES})\b",
    re.I,
)


def asks_superlative(question: str) -> str | None:
    """ "max" or "min" when the question asks which of several things ranks first, else None."""
    m = _SUPERLATIVE_RE.search(question)
    if not m:
        return None
    return "min" if m.group("word").lower() in _LOWEST_WORDS else "max"


def ranking_words(question: str) -> frozenset[str]:
    """Stems of the ranked set's head noun, its verb and the superlative of a "which ... the most ..."
    question; empty for any other question."""
    m = _RANKED_SET_RE.search(question)
    if not m:
        return frozenset()
    return frozenset(content_stems(" ".join(m.group("set", "verb", "sup"))))


# A word that points back to what an earlier sentence named.
_REFERS_BACK_RE = re.compile(r"\b(?:it|that|this|them|those|these|one)\b(?!\s+(?:is|are|was|were)\b)", re.I)
_REFERRING_QUESTION_MAX_STEMS = 3


def asked_sentence(question: str) -> str:
    """What a question asks once the asker's situation is set aside: its last sentence that ends with "?"
    without a leading condition ("My legal name changed. After I update it in HR Links, how long until the
    change takes effect?" asks "how long until the change takes effect?"). The question itself when that
    leaves too little."""
    sentences = [x for x in _SENTENCE_END_RE.split(question.strip()) if x]
    asked = [x for x in sentences if x.rstrip().endswith("?")]
    last = asked[-1] if asked else (sentences[-1] if sentences else question)
    core = _LEADING_CONDITION_RE.sub("", last, count=1)
    if (
        len(sentences) >= 2
        and sentences[-1] == last
        and sentences[-2].rstrip().endswith("?")
        and _REFERS_BACK_RE.search(core)
        and len([t for t in content_stems(core) if t not in LIGHT_STEMS]) <= _REFERRING_QUESTION_MAX_STEMS
    ):
        # "I don't need to buy the collision damage waiver they push at the counter, right? Would I even get paid
        # back for it?": a short question about "it" asks about what the question before it names.
        return f"{sentences[-2].strip()} {core}"
    return core if len(content_stems(core)) >= 2 else question


def asked_part(question: str) -> str:
    """What a question asks, with both what comes before set aside: a resolved follow-up's earlier question
    (``asked_clause``) and a first question's situation (``asked_sentence``)."""
    return asked_sentence(asked_clause(question))


# Parts of everyday hyphenated words ("mid-year", "full-time", "follow-up", "end-of-year"): a word made of
# them is English, not the name of a service or a setting.
_COMPOUND_PARTS = frozenset(
    "a all an and anti at auto back based by calendar check co cross day de down e end ex face first five follow four "
    "free front full half hand high in inter level like log long low make making mid month multi new non of off "
    "old on one opt or out over part per post pre quarter re real related self semi set short side sign sub term "
    "the three time to two un up user vice week well wide world x year".split()
)
_IDENTIFIER_RE = re.compile(r"(?<![\w-])[a-z][a-z0-9]*(?:[-_][a-z0-9]+)+(?![\w-])")


def identifier_spans(text: str) -> list[tuple[int, str]]:
    """(offset, name) of lower-case names joined by hyphens or underscores: "orders-api",
    "lr_example_parallel_apply"; not everyday compounds ("mid-year", "full-time", "follow-up")."""
    out = []
    for m in _IDENTIFIER_RE.finditer(text):
        word = m.group()
        parts = re.split(r"[-_]", word)
        # "note-taking", "decision-making", "record-keeping": a noun and a gerund are an English compound.
        gerund = "-" in word and len(parts) == 2 and parts[1].endswith("ing") and len(parts[1]) > 5
        if "_" in word or not (gerund or any(p in _COMPOUND_PARTS or p.isdigit() for p in parts)):
            out.append((m.start(), word))
    return out


def token_spans(text: str) -> list[tuple[int, int, str]]:
    """``tokens(text)`` with each token's (start, end) offsets in ``normalise_ws(text)``."""
    return [(m.start(), m.end(), m.group()) for m in _TOKEN_RE.finditer(normalise_ws(text))]


def _norm_number(tok: str) -> str:
    tok = tok.lower()
    if tok in _NUMBER_WORDS:
        return _NUMBER_WORDS[tok]
    # Thousands separators only ("1,000" == "1000"); keep decimal points and date separators.
    return re.sub(r",(?=\d{3}(?!\d))", "", tok)


def is_number(tok: str) -> bool:
    return bool(_NUMERIC_RE.match(tok)) or tok.lower() in _NUMBER_WORDS


# Abbreviations people type for lines a filing spells out ("R&D" for "Research and development"): expanded on both
# sides, so a question's "R&D" and a statement row's words are the same stems.
# "1:1" is how the handbook writes a one-on-one meeting (97 times, against 9 "one-on-one"), and not a number.
_SPELLED_OUT = {"r&d": "research and development", "sg&a": "selling, general and administrative",
                "mg&a": "marketing, general and administrative", "1:1": "one-on-one", "1:1s": "one-on-ones",
                "1-on-1": "one-on-one", "1-on-1s": "one-on-ones"}  # fmt: skip
_ABBREVIATION_RE = re.compile(r"(?<![\w&:-])(?:R&D|SG&A|MG&A|1:1s?|1-on-1s?)(?![\w&:-])", re.I)


def spelled_out(text: str) -> str:
    """``text`` with the abbreviations above written out."""
    if "&" not in text and "1" not in text:
        return text
    return _ABBREVIATION_RE.sub(lambda m: _SPELLED_OUT[m.group().lower()], text)


def content_stems(text: str) -> list[str]:
    """Stemmed non-stopword tokens in order; numbers normalised, not stemmed."""
    out: list[str] = []
    for tok in tokens(spelled_out(text)):
        low = tok.lower()
        if low in STOPWORDS or low.endswith("n't"):
            continue
        out.append(_norm_number(tok) if is_number(tok) else stem(tok))
    return out


# "Employee Assistance Program (EAP)", "non-disclosure agreements (NDAs)": a source defines an abbreviation by the
# words before it in brackets, whose initials (a hyphenated word's parts each give one) spell it.
_ABBREVIATION_DEFINED_RE = re.compile(r"\(([A-Z][A-Z&]{1,5})s?\)")
_DEFINITION_JOINS = frozenset({"of", "and", "for", "the", "to", "&", "on", "in"})
_WORD_RE = re.compile(r"[A-Za-z][\w'’-]*|&")
_CAPITALS_RE = re.compile(r"\b[A-Z]{2,6}s?\b")


def _initials(word: str) -> list[str]:
    return [p[0].upper() for p in re.split(r"[-/]", word) if p]


def abbreviations_defined(
    texts: Iterable[str], asked: Iterable[str], titles: Iterable[str] = ()
) -> dict[str, frozenset[str]]:
    """Each abbreviation the texts define (its stem) and the stems of the words it stands for, of those the question
    (its stems ``asked``) names either way: "services" alone does not make every sentence that says "TTS" about it.
    A page titled with the words ("Individual Development Plan") defines the abbreviation its text uses ("An IDP is
    no longer required for requests")."""
    asked = frozenset(asked)
    texts = list(texts)
    found: list[tuple[str, list[str]]] = []
    for text in texts:
        for m in _ABBREVIATION_DEFINED_RE.finditer(text):
            found.append((m.group(1), _WORD_RE.findall(text[max(0, m.start() - 120) : m.start()])))
    capitals: set[str] | None = None
    for title in dict.fromkeys(titles):
        words = _WORD_RE.findall(title)
        short = "".join(c for w in words if w.lower() not in _DEFINITION_JOINS for c in _initials(w))
        if not 2 <= len(short) <= 6 or not (stem(short) in asked or set(content_stems(title)) <= asked):
            continue
        if capitals is None:  # the capitalised words the texts use, read once and only for a title the question names
            capitals = {m.rstrip("s") for text in texts for m in _CAPITALS_RE.findall(text)}
        if short in capitals:
            found.append((short, words))
    out: dict[str, frozenset[str]] = {}
    for abbreviation, words in found:
        letters = [c for c in abbreviation if c != "&"]
        used: list[str] = []
        need = len(letters)
        while words and need:
            word = words.pop()
            initials = _initials(word)
            if word.lower() in _DEFINITION_JOINS and used and letters[need - 1] != initials[0]:
                continue  # "Research and Development (R&D)"; "Memoranda of Understanding (MOU)" spells the "of"
            if need < len(initials) or letters[need - len(initials) : need] != initials:
                break
            need -= len(initials)
            used.append(word)
        if need == 0 and len(used) >= 2:
            expanded = frozenset(content_stems(" ".join(used)))
            short = stem(abbreviation.replace("&", ""))
            if len(expanded) >= 2 and (short in asked or expanded <= asked):
                out.setdefault(short, expanded)
    return out


def with_abbreviations(terms: frozenset[str], defined: Mapping[str, frozenset[str]]) -> frozenset[str]:
    """``terms`` with what each defined abbreviation among them stands for, and the abbreviation of each defined
    phrase they hold whole: "To access the EAP, you can call them 24/7" is about the Employee Assistance Program."""
    if not defined:
        return terms
    more: set[str] = set()
    for short, words in defined.items():
        if short in terms:
            more |= words
        elif words <= terms:
            more.add(short)
    return terms | more if more else terms


# Verbs and adverbs that name no act or thing of their own ("go back", "right away", "still have"): what is asked
# is in the other words (answers/abstention.rules_on_the_asked_act).
LIGHT_STEMS = frozenset(
    content_stems(
        "go goes going went back get gets got take takes took make makes made use uses used using work works need "
        "needs come comes put have has do does just still also even ever right away now soon today tomorrow"
    )
)


def content_stems_with_parts(text: str) -> list[str]:
    """``content_stems`` plus the parts of hyphenated words: a sentence that says "type
    ~/.ssh/git-signing-key" is about the git signing key (the whole word stays a term too, for names such
    as "orders-api")."""
    out = content_stems(text)
    for tok in [t for t in out if "-" in t and not is_number(t)]:
        out.extend(content_stems(tok.replace("-", " ")))
    return out


_VERSION_PART_RE = re.compile(r"\d+|[a-z]+")


def version_key(label: str) -> tuple[tuple[int, int | str], ...]:
    """Sortable key for version labels: "3.10" > "3.9", "v16" == "16", "2023-Q3" > "2023-Q1"."""
    parts = _VERSION_PART_RE.findall(label.lower().removeprefix("v"))
    return tuple((0, int(p)) if p.isdigit() else (1, p) for p in parts)


_SENT_SPLIT_RE = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(\[])")


# "Sales and marketing", "sales tax": a cost line or a levy, not the revenue "sales" stands for alone.
_SALES_MODIFIER_RE = re.compile(
    r"\bsales\s+(?:and|&)\s+marketing\b|\bsales\s+(?:tax|taxes|team|teams|force|people)\b", re.I
)


def without_sales_modifiers(text: str) -> str:
    """``text`` without the phrases in which "sales" names something other than revenue."""
    return _SALES_MODIFIER_RE.sub(" ", text)


def says_sales(text: str) -> bool:
    """Whether ``text`` says "sales" meaning revenue ("net sales", "AWS sales"), not "sales and marketing"."""
    return re.search(r"\bsales\b", without_sales_modifiers(text), re.I) is not None


# An attribute and the words sources use for it (filings say "net sales", people say "revenue").
_ATTRIBUTE_SYNONYMS: dict[str, frozenset[str]] = {
    stem(k): frozenset(content_stems(v))
    for k, v in {
        # Not "net": it would make "Net income" a revenue sentence; "net sales" is matched by "sales".
        "revenue": "revenue revenues sales",
        "sales": "sales revenue revenues",
        # "How much did Apple sell in Greater China?": a filing states the region's net sales.
        "sell": "sell sold sales revenue revenues",
        "sold": "sold sell sales revenue revenues",
        "profit": "profit income earnings",
        "earnings": "earnings income profit",
        "income": "income earnings profit",
        # "Did that segment make money?", "make or lose money at the operating level": a filing states an
        # operating income or loss.
        "money": "money income loss losses profit earnings",
        "lose": "lose lost loss losses",
        # People ask what was spent; a statement names the line's expenses or costs.
        "spend": "spend spent spending expenses expense costs",
        "spent": "spent spend spending expenses expense costs",
        "headcount": "headcount employees",
        "vacation": "vacation leave annual",
        # "Who owns orders-api?" is answered by a catalogue's "owner payments-platform".
        "own": "own owner owners ownership",  # "owns" and "owned" stem to "own"
        # "Amazon's Rivian stake": a filing says "our equity investment in Rivian".
        "stake": "stake investment investments holding",
        # "How many shares did Apple buy back?": a filing says it "repurchased" them.
        "buy": "buy bought repurchase repurchased repurchases buyback",
        "bought": "bought buy repurchase repurchased repurchases buyback",
        "buyback": "buyback repurchase repurchased repurchases",
        # People's words for what a filing calls equipment, an increase or a decrease.
        "gear": "gear equipment hardware",
        "boost": "boost boosted increase increased",
        "grow": "grow grew growth increase increased",
        "growth": "growth grow grew increase increased",
        "drop": "drop dropped decrease decreased decline declined",
        # "How do I get access to Airtable?": a tool's page says how to obtain a license, an account or a seat.
        "access": "access license licenses account accounts seat seats",
        # Workplace shorthand: an "org code" is the page's "organizational code"; hours "banked" are "accrued".
        "org": "org organization organizational",
        "repo": "repo repos repository repositories",
        # Everyday verbs and the words a policy page uses for them: "should I restart the laptop?" / "DO NOT
        # REBOOT", "can I just remove the message?" / "prohibited from deleting messages", "how soon should someone
        # confirm they got my request?" / "will acknowledge all RA requests", "anyone's sign-off" / "approval".
        # Not "tell": "tell git to sign your commits" is an instruction, not a notification.
        "restart": "restart reboot",
        "reboot": "reboot restart",
        "remove": "remove delete deleting",
        "delete": "delete remove",
        "notify": "notify notification tell inform",
        "confirm": "confirm acknowledge",
        "sign-off": "sign-off approval approve",
        "banked": "banked accrued accrue accumulated carry",
        # "choose between cash and time off" is "make a selection" on the page.
        "choose": "choose chose select selection elect election pick",
        "pick": "pick choose select selection",
        # "Can TTS ship the office supplies to me?" / "most office supplies are not able to be sent to teleworkers".
        "ship": "ship shipped send sent mail mailed deliver delivered",
    }.items()
}


def is_longer_form(have: str, want: str) -> bool:
    """Whether the stem ``have`` is a longer form of the stem ``want`` ("reservist" of "reserv"); from five letters
    on, so that a short stem ("repo", "pay") is not read into other words ("report", "payroll")."""
    return len(want) >= 5 and have.startswith(want)


def attribute_synonyms(term_stem: str) -> frozenset[str]:
    """The stems sources use for an asked attribute ("revenue" -> "sales", "net")."""
    return _ATTRIBUTE_SYNONYMS.get(term_stem, frozenset())


# "When am I not allowed to join ...?", "When don't I need an SF-182 ...?", "When is a GSA computer required?": asks
# in which case, and the answer is a condition ("... UNLESS they are required to accept ...", "If they can complete
# their work using VDI, ..."), not a date.
_WHEN_CASE_RE = re.compile(
    r"^\s*when\b(?=[^?]*(?:\bnot\b|n[’']t\b|\bnever\b|\b(?:allowed|permitted|required|necessary|needed|eligible|exempt|"
    r"ok|okay|fine|appropriate|acceptable|prohibited|forbidden)\b|\bneeds?\b(?!\s+to\b)))",
    re.I,
)


# "What's the deadline to choose ...?": asks for a date, and its "deadline" is the question's form.
# "Is that OK …?", "Is a holiday not allowed as the last day?", "Am I allowed to …?": asks whether a rule permits
# it, and a rule answers ("Your last day at TTS cannot be a federal holiday"), rarely with the word asked.
ASKS_PERMISSION_RE = re.compile(
    r"\b(?:is|are|am|be|isn['’]t|aren['’]t)\b(?:\s+[\w'’]+){0,3}?\s+(ok|okay|fine|acceptable|allowed|permitted)\b"
    r"(?=\s*(?:[,.;?!]|$|(?:to|as|for|if|when|in|on|or|during|while|before|after)\b))",
    re.I,
)
ASKS_DEADLINE_RE = re.compile(r"\bwhat(?:['’]s|\s+is|\s+was|\s+are)\s+the\s+(deadlines?|due\s+dates?)\b", re.I)


def asks_for_a_case(question: str) -> bool:
    """Whether a when-question asks in which case something holds, not at what time."""
    return bool(_WHEN_CASE_RE.match(question))


_QUESTION_RE = re.compile(
    r"^\s*(?:how|what|which|who|whom|whose|when|where|why|can|do|does|did|is|are|should)\b|\?\s*$", re.I
)
_PLACEHOLDERS = frozenset(
    content_stems(
        "someone somebody anyone anybody everyone something anything thing things stuff "
        # The asker's words: "how long until I get an actual decision", "if I ask for a workplace accommodation".
        "actual ask asks asked asking"
    )
)


_TO_KNOW_RE = re.compile(r"\b(?:should|need\s+to|have\s+to|ought\s+to|must)\s+(?:be\s+)?(know|aware)\b", re.I)


def question_form_stems(text: str) -> frozenset[str]:
    """Words of a question's form, not its content: the word after "how" ("how long", "how often": the
    answer states a duration, not the word "long") and placeholders ("someone").  A statement (a SciFact
    claim, which the threshold was tuned on) has none."""
    if not _QUESTION_RE.search(text):
        return frozenset()
    after_how = re.findall(r"\bhow\s+([a-z]+)", text, re.I)
    # "How much (paid) time off …?" asks how long, and a duration answers it ("up to 4 hours").
    after_how += re.findall(r"\bhow\s+much\s+(?:[a-z]+\s+)?(time)\b", text, re.I)
    # "How far in advance must I email …?", "how far ahead": a lead time answers it ("at least 12 hours prior").
    after_how += re.findall(r"\bhow\s+far\s+(?:in\s+)?(advance|ahead)\b", text, re.I)
    # "What's the deadline to choose ...?" is answered by a date ("no later than November 15th"), not the word.
    asked_date = ASKS_DEADLINE_RE.findall(text)
    asked_permission = ASKS_PERMISSION_RE.findall(text)
    # "Is there a cleanout I should know about?", "anything I need to be aware of": asks what there is to know.
    to_know = _TO_KNOW_RE.findall(text)
    return frozenset(content_stems(" ".join(after_how + asked_date + asked_permission + to_know))) | _PLACEHOLDERS


def asking_stems(text: str, form: frozenset[str] | None = None) -> frozenset[str]:
    """The content stems that say what a question asks about: not its form (``question_form_stems``, of ``text``
    unless ``form`` is given) and not light verbs ("get", "take", "need"). "Who would I even ask?" has none."""
    form = question_form_stems(text) if form is None else form
    return frozenset(content_stems(text)) - form - LIGHT_STEMS


# "Which of my leave balances won't be paid out?", "What can't I do …?", "Who isn't eligible …?": the predicate asked
# about is negated.  "subscribers, not publishers" sets a term aside (query_parser's exclusion), it negates nothing.
_NEGATED_ASK_RE = re.compile(
    r"\b(?:can|could|do|does|did|is|are|was|were|will|would|should|must|may|have|has|wo|ca)n[’']t\b|\bcannot\b"
    r"|\b(?:not|never)\b(?!\s+(?:only|just|sure)\b)"
    # "what can I do without asking for approval?", "which software is exempt from review?": what is not needed.
    r"|\bwithout\b|\bexempt(?:ed|ion|s)?\b",
    re.I,
)
# A sentence that says what is not so, or only so under a condition: "Your Sick Leave will not be paid out",
# "No approval is needed to archive …", "… UNLESS they are required to accept …", "May only be reimbursable if …",
# "open source development libraries are exempt from IT Standards review".
_NEGATIVE_STATEMENT_RE = re.compile(
    r"\b(?:not|no|never|cannot|unless|only|except|prohibited|forbidden|nor|exempt(?:ed|ion|s)?|waived?)\b|n[’']t\b",
    re.I,
)
# "<what the asker knows>, so which schedule types do?": the question starts after "so" or "but".
_SO_ASKED_RE = re.compile(
    r"[,;]\s*(?:so|but|and\s+so)\s+(?=(?:what|which|who|where|when|how|why|can|could|do|does|is|are|should)\b)", re.I
)


def asks_negated(question: str, exclude: Sequence[str] = ()) -> bool:
    """Whether the asked clause negates its predicate (an exclusion's "not <term>" does not count).  The asker's
    situation is not asked: "Standard and compressed schedules don't allow credit hours, so which schedule types
    do?" asks which ones do."""
    clause = _SO_ASKED_RE.split(asked_part(question))[-1]
    for term in exclude:
        clause = re.sub(rf"\bnot\s+(?:the\s+)?{re.escape(term)}", " ", clause, flags=re.I)
    return bool(_NEGATED_ASK_RE.search(clause))


def states_negation(sentence: str) -> bool:
    """Whether the sentence says what is not so, or only so under a condition."""
    return bool(_NEGATIVE_STATEMENT_RE.search(sentence))

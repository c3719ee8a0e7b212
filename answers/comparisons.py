"""Questions that compare two figures: split into two lookups, compared in code.

"Which was larger in the quarter ended April 30, 2023 for NVIDIA: research and development or net
income?" is two questions the single-question pipeline answers well ("What was research and
development in the quarter ended April 30, 2023 for NVIDIA?" and the same for net income), plus an
arithmetic step that no retrieved sentence states.  ``split_comparison`` finds the two parts
deterministically (the phrasings below); the engine answers each part with its own retrieval,
scoping, evidence and verification (``answers.engine.compare_stage``), and ``conclude`` compares
(for a share: divides) the amounts the two verified lead claims state.  The conclusion is computed, like the multi-hop
date comparison (``answers.multihop``): it cites nothing itself, and both figures it uses are
shown as cited claims.  A part that finds no supported figure makes the whole answer abstain.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Literal

from answers.contracts import ParsedQuery
from retrieval.entities import Entity, entity_by_name

Kind = Literal["larger", "smaller", "grew", "share", "sum"]

_BIGGER = r"larger|higher|bigger|greater|more"
_SMALLER = r"smaller|lower|less"
_DIR = rf"(?P<dir>{_BIGGER}|{_SMALLER})"
_PERIOD_TAIL = r"(?:in|for|during)\s+(?:the\s+)?(?:(?:latest|most\s+recent|first|second|third|fourth|fiscal)\b|quarter|q[1-4]\b|three|six|nine)"

# "Which was larger in the quarter ended April 30, 2023 for NVIDIA: research and development or net income?"
_WHICH = re.compile(
    rf"^which\s+(?:was|is|were|are)\s+{_DIR}\b(?P<ctx>[^:?]*):\s*(?P<a>.+?)\s+or\s+(?P<b>[^?]+?)\s*\??$", re.I
)
# "Whose quarterly revenue was larger: NVIDIA's for the quarter ended ... or Intel's for the quarter ended ...?"
_WHOSE = re.compile(
    rf"^whose\s+(?P<measure>.+?)\s+(?:was|is|were|are)\s+{_DIR}\s*:\s*(?P<a>.+?)\s+or\s+(?P<b>[^?]+?)\s*\??$", re.I
)
# "How much larger were Amazon's AWS net sales than Microsoft's Intelligent Cloud revenue in the quarter ended ...?"
# "How many percentage points higher was Apple's Services gross margin percentage than its Products gross margin
# percentage in the quarter ended June 25, 2022?": the same, for two percentages.
_HOW_MUCH = re.compile(
    rf"^how\s+(?:much|many\s+(?P<points>percentage\s+points|points))\s+{_DIR}\s+(?:was|is|were|are)\s+(?P<a>.+?)"
    rf"\s+than\s+(?P<b>.+?)"
    rf"(?P<ctx>\s+{_PERIOD_TAIL}[^?]*)?\s*\??$",
    re.I,
)
# "Did Apple's total net sales grow between the quarter ended June 25, 2022 and the quarter ended July 1, 2023?"
_GREW = re.compile(
    r"^(?:did|has|have|do|does)\s+(?P<a>.+?)\s+(?P<dir>grow|increase|rise|go\s+up|decline|decrease|fall|drop|shrink)"
    r"\s+(?:between|from)\s+(?P<p1>.+?)\s+(?:and|to)\s+(?P<p2>[^?]+?)\s*\??$",
    re.I,
)
# "By how much did AWS net sales grow from the September 2022 quarter to the September 2023 quarter?",
# "How much did NVIDIA's quarterly revenue rise from the quarter ended July 30, 2023 to the quarter ended ...?"
# "How did Microsoft's Intelligent Cloud revenue change from the December 2022 quarter to the March 2023 quarter?"
_GREW_BY = re.compile(
    r"^(?:by\s+)?how\s+(?:much\s+)?(?:did|has|have|do|does)\s+(?P<a>.+?)\s+"
    r"(?P<dir>grow|increase|rise|go\s+up|decline|decrease|fall|drop|shrink|change)"
    r"\s+(?:between|from)\s+(?P<p1>.+?)\s+(?:and|to)\s+(?P<p2>[^?]+?)\s*\??$",
    re.I,
)
# "Which company earned more net income: Apple in its quarter ended April 1, 2023, or Microsoft in its
# quarter ended March 31, 2023?"
_WHICH_COMPANY = re.compile(
    rf"^which\s+(?:company|firm|one)\s+(?:earned|had|made|reported|posted|generated|booked)\s+(?:the\s+)?{_DIR}\s+"
    r"(?P<measure>[^:?]+?)\s*:\s*(?P<a>.+?),?\s+or\s+(?P<b>[^?]+?)\s*\??$",
    re.I,
)
# "What was Microsoft's operating margin (operating income as a percentage of revenue) for the quarter
# ended September 30, 2023?" and the same without the name: "What was X's A as a percentage of B in ...?"
# "What was AWS's operating margin in Q3 2023 (segment operating income as a percent of AWS net sales)?": the
# period before the brackets; "Intel R&D as a % of revenue for Q3 2023?": no "what was", no possessive.
_SHARE_OF = re.compile(
    r"^(?:what\s+(?:was|is|were|are)\s+(?P<who>[^?]+?)(?:'s|’s)|(?P<bare>[A-Z][\w.&-]*)(?:'s|’s)?)\s+"
    r"(?:(?P<pre>[^(?]*?)\(\s*)?(?P<a>[^()?]+?)\s+as\s+an?\s+"
    r"(?:percentage|percent|%|share|proportion|fraction)\s+of\s+(?P<b>[^()?]+?)\s*\)?"
    r"(?P<ctx>\s+(?:in|for|during)\s+[^?]+?)?\s*\??$",
    re.I,
)
_PRE_PERIOD = re.compile(r"\b(?:in|for|during)\s+.+$", re.I)
# "What share of NVIDIA's revenue came from Data Center in the quarter ended April 30, 2023?"
_SHARE_CAME = re.compile(
    r"^what\s+(?:share|percentage|percent|portion|proportion|fraction)\s+of\s+(?P<who>[^?]+?)(?:'s|’s)\s+"
    r"(?P<b>[^?]+?)\s+(?:came|come|comes|was|were)\s+(?:from|in)\s+(?P<a>[^?]+?)"
    rf"(?P<ctx>\s+{_PERIOD_TAIL}[^?]*)?\s*\??$",
    re.I,
)
# "What was the combined operating income of Amazon's North America and International segments in Q1 2023?",
# "What was the total net sales of Apple's iPhone and Mac in the quarter ended July 1, 2023?"
# "Combined revenue of Microsoft's Productivity and Business Processes and Intelligent Cloud segments in …?"
_COMBINED = re.compile(
    r"^(?:what\s+(?:was|were)\s+the\s+(?:combined|total)|(?:the\s+)?combined)\s+(?P<measure>.+?)\s+(?:of|for|from)\s+(?P<a>.+?)\s+and\s+"
    rf"(?P<b>.+?)(?P<ctx>\s+{_PERIOD_TAIL}[^?]*)?\s*\??$",
    re.I,
)
# "Taken together, did Amazon's North America and International segments make or lose money at the operating level
# in Q1 2023, and what was the combined figure?": a sum whose sign is the yes or no.
_TOGETHER = re.compile(
    r"^(?:taken\s+together,?\s*|together,?\s*)?did\s+(?P<a>.+?)\s+and\s+(?P<b>.+?)\s+(?:together\s+)?"
    r"(?:make|earn)\s+or\s+lose\s+money(?:\s+at\s+the\s+(?P<level>operating|net|pre-?tax)\s+level)?"
    rf"(?P<ctx>\s+{_PERIOD_TAIL}[^?,]*)?,?\s+and\s+what\s+was\s+the\s+(?:combined|total)\s+"
    r"(?:figure|amount|total|result)\s*\??$",
    re.I,
)
# "What did NVIDIA's Data Center and Gaming platforms bring in together in the quarter ended July 30, 2023?"
_BRING_IN = re.compile(
    r"^what\s+did\s+(?P<a>.+?)\s+and\s+(?P<b>.+?)\s+(?:bring\s+in|generate|pull\s+in|take\s+in|rake\s+in)\s+"
    rf"(?:together|combined|in\s+total)(?P<ctx>\s+{_PERIOD_TAIL}[^?]*)?\s*\??$",
    re.I,
)
# "By how much did Amazon's North America segment net sales exceed its International segment net sales in Q2 2023?"
_EXCEED = re.compile(
    r"^(?:by\s+)?how\s+much\s+(?:did|does|do|has|have)\s+(?P<a>.+?)\s+(?:exceed|beat|top|outpace|surpass|outstrip)"
    rf"\s+(?P<b>.+?)(?P<ctx>\s+{_PERIOD_TAIL}[^?]*)?\s*\??$",
    re.I,
)
_LEVEL_MEASURE = {"operating": "operating income", "net": "net income", "pretax": "income before income taxes",
                  "pre-tax": "income before income taxes", None: "net income"}  # fmt: skip
_SEGMENT_WORD = re.compile(r"\s+(?:segments?|businesses|units?|platforms?)$", re.I)
# "Which company had the higher net income: ... or ...? By how much?": the second question asks for the gap,
# which the conclusion states anyway.
_BY_HOW_MUCH_TAIL = re.compile(r"\?\s*(?:and\s+)?by\s+how\s+much\s*\??$", re.I)
_POSSESSOR = re.compile(r"^(?P<who>.+?)(?:'s|’s|s')(?P<rest>(?:\s.*)?)$")
_AMOUNT = re.compile(
    r"(?P<neg>-)?\$\s?(?P<num>\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?)(?:\s*(?P<unit>thousand|million|billion))?",
    re.I,
)
_TO_MILLIONS = {"thousand": Decimal("0.001"), "million": Decimal(1), "billion": Decimal(1000)}


@dataclass(frozen=True)
class Part:
    question: str  # a standalone question the single-question pipeline answers
    label: str  # how the conclusion names it ("net income", "Intel's quarterly revenue")


@dataclass(frozen=True)
class FigureComparison:
    kind: Kind
    parts: tuple[Part, Part]
    surface: str
    # "How much larger was A than B": the answer is about A, whichever is larger.
    subject_first: bool = False
    # "By how much did it grow": the answer is the change, not a yes or no.
    how_much: bool = False
    # "How many percentage points higher": two percentages, and their difference in points.
    points: bool = False
    # "Did A and B make or lose money …, and what was the combined figure?": the sum's sign is the answer too.
    verdict: bool = False
    # "Was A's revenue bigger than B's?": the answer starts with yes or no.
    yes_no: bool = False


@dataclass(frozen=True)
class Amount:
    text: str  # as the claim states it: "$2,043 million", or "71.5%"
    millions: Decimal  # the amount in millions of dollars; for a percentage, the percentage itself
    percent: bool = False


def _clean(s: str) -> str:
    return " ".join(s.split()).strip(" ,;")


def split_comparison(question: str, parsed: ParsedQuery | None = None) -> FigureComparison | None:
    """The two figures a comparison question asks about, or None when it is none of the forms below.

    With the parsed question, a comparison of one figure between the two companies it names is recognised in
    any wording (``_between_companies``)."""
    q = _BY_HOW_MUCH_TAIL.sub("?", _clean(question))
    found = _compared_back(q) or _by_form(q)
    if found is None and parsed is not None:
        found = _between_companies(q, parsed)
    return found


# A comparative, or a word that asks for a comparison: "Who made more money …", "Compare A and B on …".
_COMPARATIVE = re.compile(
    rf"\b(?:{_BIGGER}|{_SMALLER}|fewer|compare[sd]?|comparing|versus|vs\.?|difference|gap|outearn(?:ed)?)\b", re.I
)
# A change over time compared between companies ("whose revenue grew faster") is not one figure per company.
_CHANGE = re.compile(
    r"\b(?:grow|grew|growth|grown|increase[sd]?|decrease[sd]?|decline[sd]?|change[sd]?|rise|rose"
    r"|fell|fall|drop(?:ped)?|faster|slower|year[- ]over[- ]year|sequential(?:ly)?)\b",
    re.I,
)
# The words around a comparison that are not its measure.
_SCAFFOLD = frozenset(
    "which who whose what company companies firm firms one ones of the two them these those had has have did does do "
    "was were is are report reported reports post posted earn earned earns make made makes generate generated book "
    "booked bring brought in its their more higher larger bigger greater less lower smaller fewer than or and vs "
    "versus compare compared compares comparing with between difference gap how much by a an for during on to at "
    "terms outearn outearned quarter quarters period periods mid early late ended ending january february march "
    "april may june july august september sept october november december".split()
)
# "Who made more money": the asker means profit.
_MEASURE_WORDS = {"money": "net income", "profit": "net income", "profits": "net income", "earnings": "net income",
                  "sales": "net sales"}  # fmt: skip
_YES_NO = re.compile(r"^(?:was|were|is|are|did|does|do|has|have)\b", re.I)


def _between_companies(q: str, parsed: ParsedQuery) -> FigureComparison | None:
    """ "Which company had more revenue in its quarter ended September 30, 2023: Amazon or Microsoft?", "Did MSFT
    or Apple report higher net income last quarter?", "Was Apple's revenue bigger than Microsoft's in Q2 2023?":
    one figure, looked up for each of the two companies named.

    The measure is what is left of the question without the companies, the periods and the words that only
    make it a comparison; each company's part asks for that measure in the period named after it
    (``_periods_of``)."""
    named: list[tuple[str, str]] = []
    for surface, canonical in parsed.entities:
        e = _company(canonical)
        if e is not None and e.name not in (n for _s, n in named):
            named.append((surface, e.name))
    if len(named) != 2 or not _COMPARATIVE.search(q) or _CHANGE.search(q):
        return None
    labels = [p.label for p in parsed.periods if p.label]
    if len(labels) > 2:
        return None
    rest = q
    for surface, _n in named:
        rest = re.sub(rf"\b{re.escape(surface)}(?:'s|’s|s'|’)?(?!\w)", " ", rest, flags=re.I)
    for label in labels:
        rest = rest.replace(label, " ")
    rest = re.sub(r"['’]s\b", " ", rest)  # "What's the gap …"
    # "Was Apple's revenue bigger than Microsoft's revenue?" names the measure twice.
    # A year or a date the period parser left ("their mid-2023 quarters") is no part of the measure.
    words = list(
        {
            w.lower(): w
            for w in re.findall(r"\w[\w&-]*", rest)
            if w.lower() not in _SCAFFOLD and not re.search(r"\d", w)
        }.values()
    )
    if not words:
        return None
    measure = " ".join(words)
    measure = _MEASURE_WORDS.get(measure.lower(), measure)
    periods = _periods_of(q, [s for s, _n in named], labels)
    parts = tuple(
        Part(_clean(f"What was {name}'s {measure} {period}") + "?", f"{name}'s {measure}")
        for (_s, name), period in zip(named, periods, strict=True)
    )
    kind: Kind = (
        "smaller"
        if re.search(rf"\b(?:{_SMALLER}|fewer)\b", q, re.I) and not re.search(rf"\b(?:{_BIGGER})\b", q, re.I)
        else "larger"
    )
    yes_no = bool(_YES_NO.match(q)) and re.search(r"\bthan\b", q, re.I) is not None
    subject = yes_no or bool(re.match(r"^how\s+much\b", q, re.I))
    return FigureComparison(kind, (parts[0], parts[1]), q, subject_first=subject, yes_no=yes_no)


# "How does that compare …": a follow-up about the last answer, however much it names of its own.
_COMPARES_BACK = (
    r"^(?:so\s+|and\s+)?how\s+(?:does|did|do|would)\s+(?:that|this|it|they|those|these)(?:\s+figures?)?\s+compare"
)
# Resolved with the question before it (answers/followups.py): "How does that compare with the previous quarter: What
# was Apple's net income in the quarter ended July 1, 2023?"
_COMPARE_BACK = re.compile(
    rf"{_COMPARES_BACK}\s+(?:with|to|against)\s+(?P<other>[^:?]+?)\s*\??\s*:\s*(?P<prev>.+)$",
    re.I,
)


def compares_back(text: str) -> bool:
    """Whether a turn asks how the last answer compares with something ("How does that compare with …?")."""
    return re.match(rf"{_COMPARES_BACK}\b", text.strip(), re.I) is not None


# The earlier question, a lookup of one company's figure in one period.
_LOOKUP = re.compile(
    r"^what\s+(?:was|were|is|are)\s+(?P<who>[^?]+?)(?:'s|’s)\s+(?P<measure>[^?]+?)\s+(?:in|for|during)\s+"
    r"(?P<period>[^?]+?)\s*\??$",
    re.I,
)
_PREVIOUS_QUARTER = re.compile(r"^(?:the\s+)?(?:(?:previous|prior|preceding|last)\s+quarter|quarter\s+before)$", re.I)
_OTHER_COMPANY = re.compile(r"^(?P<who>[A-Za-z][\w.&-]*)(?:'s|’s|s')?(?:\s+(?P<rest>(?:in|for|during)\s+.+))?$", re.I)


def _compared_back(q: str) -> FigureComparison | None:
    """ "How does that compare with the previous quarter?" or "… with NVIDIA's?" after "What was Apple's net income in
    the quarter ended July 1, 2023?": the earlier figure and the same figure for the quarter before it or for the
    other company (in its own period when the follow-up names one)."""
    m = _COMPARE_BACK.match(q)
    earlier = _LOOKUP.match(_clean(m.group("prev"))) if m else None
    if m is None or earlier is None:
        return None
    who, measure, period = (_clean(earlier.group(x)) for x in ("who", "measure", "period"))
    asked = f"What was {who}'s {measure} in {period}?"
    other = _clean(m.group("other"))
    if _PREVIOUS_QUARTER.match(other):
        before = Part(f"What was {who}'s {measure} in the previous quarter, before {period}?", "the previous quarter")
        return FigureComparison("grew", (before, Part(asked, period)), q, how_much=True)
    named = _OTHER_COMPANY.match(other)
    company = _company(named.group("who")) if named else None
    if named is None or company is None:
        return None
    mine = entity_by_name(who)
    if mine is not None and mine.name == company.name:
        return None
    rest = named.group("rest")
    theirs = re.sub(r"^(in|for|during)\s+(?:its|their)\b", r"\1 the", _clean(rest), flags=re.I) if rest else ""
    parts = (
        Part(asked, f"{who}'s {measure}"),
        Part(
            _clean(f"What was {company.name}'s {measure} {theirs or 'in ' + period}") + "?",
            f"{company.name}'s {measure}",
        ),
    )
    return FigureComparison("larger", parts, q)


def _periods_of(q: str, surfaces: list[str], labels: list[str]) -> list[str]:
    """The period each company's figure is asked for: the one label for both; of two, each label goes to the
    company named last before it ("Apple's quarter ended July 1, 2023; NVIDIA's ended July 30, 2023"), and a
    company no label follows gets the label left over."""
    if not labels:
        return ["" for _s in surfaces]
    chosen: dict[int, str] = {}
    if len(labels) == 1:
        chosen = dict.fromkeys(range(len(surfaces)), labels[0])
    else:
        folded = q.casefold()
        for label in sorted(labels, key=lambda x: q.find(x)):
            at = q.find(label)
            before = [(folded.rfind(s.casefold(), 0, at), i) for i, s in enumerate(surfaces)]
            named = [(pos, i) for pos, i in before if pos >= 0 and i not in chosen]
            if named:
                chosen[max(named)[1]] = label
        left = [x for x in labels if x not in chosen.values()]
        for i in range(len(surfaces)):
            if i not in chosen:
                chosen[i] = left.pop(0) if left else labels[-1]
    out = []
    for i in range(len(surfaces)):
        label = chosen[i]
        if re.match(r"end(?:ed|ing)\b", label, re.I):
            label = f"quarter {label}"  # "NVIDIA's ended July 30, 2023"
        lead = "" if re.match(r"(?:the|its|their|a|an|q[1-4]|fy|fiscal|\d)\b", label, re.I) else "the "
        out.append(f"in {lead}{label}")
    return out


def _company(name: str) -> Entity | None:
    """The catalogued company a name or alias stands for, or None (a product or an unknown name)."""
    found = entity_by_name(name)
    return found if found is not None and found.kind == "company" else None


def _by_form(q: str) -> FigureComparison | None:
    if m := _WHICH.match(q):
        ctx = _clean(m.group("ctx"))
        a, b = _clean(m.group("a")), _clean(m.group("b"))
        kind: Kind = "smaller" if re.fullmatch(_SMALLER, m.group("dir"), re.I) else "larger"
        parts = (Part(_clean(f"What was {a} {ctx}") + "?", a), Part(_clean(f"What was {b} {ctx}") + "?", b))
        return FigureComparison(kind, parts, q)
    if m := _WHOSE.match(q):
        measure = _clean(m.group("measure"))
        whose: list[Part] = []
        for side in (m.group("a"), m.group("b")):
            p = _POSSESSOR.match(_clean(side))
            if p is None:
                return None
            who, rest = _clean(p.group("who")), _clean(p.group("rest"))
            whose.append(Part(_clean(f"What was {who}'s {measure} {rest}") + "?", f"{who}'s {measure}"))
        kind = "smaller" if re.fullmatch(_SMALLER, m.group("dir"), re.I) else "larger"
        return FigureComparison(kind, (whose[0], whose[1]), q)
    if m := _HOW_MUCH.match(q) or _EXCEED.match(q):
        ctx = _clean(m.group("ctx") or "")
        a, b = _clean(m.group("a")), _clean(m.group("b"))
        owner = _POSSESSOR.match(a)
        if owner is not None and re.match(r"(?:its|their)\s", b, re.I):
            b = re.sub(r"^(?:its|their)\b", f"{_clean(owner.group('who'))}'s", b, flags=re.I)  # "its Products ..."
        exceed = m.re is _EXCEED
        kind = "smaller" if not exceed and re.fullmatch(_SMALLER, m.group("dir"), re.I) else "larger"
        parts2 = (Part(_clean(f"What was {a} {ctx}") + "?", a), Part(_clean(f"What was {b} {ctx}") + "?", b))
        points = not exceed and bool(m.group("points"))
        return FigureComparison(kind, parts2, q, subject_first=True, points=points)
    if m := _WHICH_COMPANY.match(q):
        measure = _clean(m.group("measure"))
        sides: list[Part] = []
        for side in (m.group("a"), m.group("b")):
            w = re.match(r"^(?P<who>.+?)\s+(?P<rest>(?:in|for|during)\s.+)$", _clean(side), re.I)
            if w is None:
                return None
            who = _clean(w.group("who"))
            rest = re.sub(r"^(in|for|during)\s+(?:its|their)\b", r"\1 the", _clean(w.group("rest")), flags=re.I)
            sides.append(Part(_clean(f"What was {who}'s {measure} {rest}") + "?", f"{who}'s {measure}"))
        kind = "smaller" if re.fullmatch(_SMALLER, m.group("dir"), re.I) else "larger"
        return FigureComparison(kind, (sides[0], sides[1]), q)
    if (m := _SHARE_OF.match(q)) and (m.group("who") or _company(m.group("bare"))):
        who, ctx = _clean(m.group("who") or m.group("bare")), _clean(m.group("ctx") or "")
        if not ctx and (pre := _PRE_PERIOD.search(m.group("pre") or "")):
            ctx = _clean(pre.group(0))  # "operating margin in Q3 2023 (…)"
        # "AWS's … as a percent of AWS net sales": the owner once.
        a, b = (re.sub(rf"^{re.escape(who)}(?:'s|’s)?\s+", "", _clean(m.group(x)), flags=re.I) for x in ("a", "b"))
        share = (
            Part(_clean(f"What was {who}'s {a} {ctx}") + "?", a),
            Part(_clean(f"What was {who}'s {b} {ctx}") + "?", b),
        )
        return FigureComparison("share", share, q)
    if m := _SHARE_CAME.match(q):
        who, ctx = _clean(m.group("who")), _clean(m.group("ctx") or "")
        a, b = _clean(m.group("a")), _clean(m.group("b"))
        measure = re.sub(r"^total\s+", "", b, flags=re.I)  # "Client Computing net revenue", not "... total ..."
        came = (
            Part(_clean(f"What was {who}'s {a} {measure} {ctx}") + "?", f"{a} {measure}"),
            Part(_clean(f"What was {who}'s {b} {ctx}") + "?", b),
        )
        return FigureComparison("share", came, q)
    if m := _COMBINED.match(q) or _TOGETHER.match(q) or _BRING_IN.match(q):
        ctx = _clean(m.group("ctx") or "")
        a, b = _clean(m.group("a")), _SEGMENT_WORD.sub("", _clean(m.group("b")))
        if m.re is _COMBINED:
            measure = _clean(m.group("measure"))
        elif m.re is _BRING_IN:
            measure = "revenue"
        else:
            measure = _LEVEL_MEASURE[m.group("level") and m.group("level").lower()]
        owner = _POSSESSOR.match(a)
        if owner is not None and _POSSESSOR.match(b) is None:
            b = f"{_clean(owner.group('who'))}'s {b}"  # "Amazon's North America and International": both Amazon's
        summed = (Part(_clean(f"What was {a} {measure} {ctx}") + "?", f"{a} {measure}"),
                  Part(_clean(f"What was {b} {measure} {ctx}") + "?", f"{b} {measure}"))  # fmt: skip
        return FigureComparison("sum", summed, q, verdict=m.re is _TOGETHER)
    if m := _GREW_BY.match(q) or _GREW.match(q):
        a = _clean(m.group("a"))
        p1, p2 = _clean(m.group("p1")), _clean(m.group("p2"))
        periods = (Part(f"What was {a} in {p1}?", p1), Part(f"What was {a} in {p2}?", p2))
        # "How did Intel's gross margin percentage change …": two percentages, the change in points.
        points = re.search(r"percent|%", a, re.I) is not None
        return FigureComparison("grew", periods, q, how_much=m.re is _GREW_BY, points=points)
    return None


def first_amount(text: str) -> Amount | None:
    """The first dollar amount a claim states, in millions (a statement row without a unit is in millions,
    the unit every 10-Q statement of operations uses)."""
    m = _AMOUNT.search(text)
    if m is None:
        return None
    try:
        number = Decimal(m.group("num").replace(",", ""))
    except InvalidOperation:
        return None
    unit = (m.group("unit") or "million").lower()
    value = number * _TO_MILLIONS[unit]
    return Amount(m.group(0).strip(), -value if m.group("neg") else value)


_PERCENT = re.compile(r"(?P<neg>-)?(?<![\d.,])(?P<num>\d+(?:\.\d+)?)\s?%")


def first_percent(text: str) -> Amount | None:
    """The first percentage a claim states ("71.5%")."""
    m = _PERCENT.search(text)
    if m is None:
        return None
    value = Decimal(m.group("num"))
    return Amount(m.group(0).strip(), -value if m.group("neg") else value, percent=True)


# A cost is compared by its size: a segment reconciliation prints "Research and development expense: -$7,709 million".
_COST_RE = re.compile(r"expens|\bcosts?\b|\bspend|\bspent\b|research|r&d|sg&a|mg&a|capital\s+expenditure", re.I)


def part_figure(
    comparison: FigureComparison, text: str, period_ends: tuple[str, ...], label: str, *, cell_only: bool = False
) -> Amount | None:
    """The figure a part's lead claim gives: the resolved quarter's cell of a statement row, else (unless
    ``cell_only``) the first amount it states (a percentage, for a comparison in percentage points)."""
    first = first_percent if comparison.points else first_amount
    found = amount_for_period(text, period_ends, label, percent=comparison.points)
    if found is None and not cell_only:
        found = first(text)
    if found is not None and found.millions < 0 and _COST_RE.search(label):
        return Amount(found.text.lstrip("-"), -found.millions, found.percent)
    return found


_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
# One cell of a statement row (retrieval/extract/tables.py): "$20,538 million, three months ended September 30, 2022".
_CELL = re.compile(
    r"(?P<amount>-?\$[\d,]+(?:\.\d+)?(?: (?:thousand|million|billion))?), (?P<span>three|six|nine|twelve) months "
    r"ended (?P<date>[A-Z][a-z]+ \d{1,2}, \d{4})"
)
# A percentage cell: "71.5%, three months ended June 25, 2022".
_PERCENT_CELL = re.compile(
    r"(?<![\w.,$-])(?P<amount>-?\d+(?:\.\d+)?%), (?P<span>three|six|nine|twelve) months ended "
    r"(?P<date>[A-Z][a-z]+ \d{1,2}, \d{4})"
)


def amount_for_period(text: str, period_ends: tuple[str, ...], label: str = "", percent: bool = False) -> Amount | None:
    """The amount of a statement row's column for the resolved quarter (an ISO period end), preferring the
    three-month column; None when the text has no such cell.  "Net sales (AWS): $16,110 million, three
    months ended September 30, 2021; $20,538 million, three months ended September 30, 2022" for the
    quarter that ended 2022-09-30 is $20,538 million, not the first amount it states."""
    wanted = set()
    for end in period_ends:
        try:
            year, month, day = (int(x) for x in end.split("-"))
        except ValueError:
            continue
        wanted.add(f"{_MONTHS[month - 1]} {day}, {year}")
    cell_re = _PERCENT_CELL if percent else _CELL
    cells = [m for m in cell_re.finditer(text) if m.group("date") in wanted]
    named = re.search(rf"\b({'|'.join(_MONTHS)})\s+(?:\d{{1,2}},\s+)?((?:19|20)\d{{2}})\b", label)
    if not cells and named:
        # No resolved period end: the part's own words ("the September 2022 quarter") name month and year.
        name, number = named.group(1), named.group(2)
        cells = [
            m for m in cell_re.finditer(text) if m.group("date").startswith(name) and m.group("date").endswith(number)
        ]
    cells.sort(key=lambda m: m.group("span") != "three")
    if not cells:
        return None
    return first_percent(cells[0].group("amount")) if percent else first_amount(cells[0].group("amount"))


def _money(millions: Decimal) -> str:
    if abs(millions) >= 1000:
        # Both forms: the filings' tables print millions, their prose billions.
        billions = f"${abs(millions) / 1000:,.2f} billion".replace(".00 billion", " billion")
        return f"${abs(millions):,.0f} million ({billions})"
    return f"${abs(millions):,.0f} million"


def conclude(comparison: FigureComparison, a: Amount, b: Amount) -> str:
    """The computed answer, naming both figures as the cited claims state them."""
    pa, pb = comparison.parts
    diff = _money(a.millions - b.millions)
    if comparison.kind == "share":
        if b.millions == 0:
            return f"{_cap(pa.label)} ({a.text}) cannot be a share of {pb.label}: it was {b.text}."
        pct = (a.millions / b.millions * 100).quantize(Decimal("0.1"))
        return f"{_cap(pa.label)} ({a.text}) was {pct}% of {pb.label} ({b.text})."
    if comparison.kind == "sum":
        total = a.millions + b.millions
        stated = f"-{_money(total)}" if total < 0 else _money(total)
        both = f"{_cap(pa.label)} ({a.text}) and {pb.label} ({b.text})"
        if comparison.verdict:
            verdict = "lost money" if total < 0 else "made money" if total > 0 else "broke even"
            return f"Together they {verdict}: {both} add up to {stated}."
        return f"Combined: {both} add up to {stated}."
    if comparison.kind == "grew":
        if comparison.points:
            diff = f"{abs(b.millions - a.millions)} percentage points"
        if b.millions == a.millions:
            return f"No. It was unchanged: {a.text} ({pa.label}) and {b.text} ({pb.label})."
        verdict, verb = ("Yes", "increased") if b.millions > a.millions else ("No", "decreased")
        if comparison.how_much:
            return f"It {verb} by {diff}, from {a.text} ({pa.label}) to {b.text} ({pb.label})."
        return f"{verdict}. It {verb} from {a.text} ({pa.label}) to {b.text} ({pb.label}), by {diff}."
    if a.millions == b.millions:
        return f"Neither: {pa.label} and {pb.label} were equal ({a.text})."
    if comparison.points:
        rel = "higher" if a.millions > b.millions else "lower"
        gap = abs(a.millions - b.millions)
        return f"{_cap(pa.label)} ({a.text}) was {gap} percentage points {rel} than {pb.label} ({b.text})."
    if comparison.subject_first:
        rel = "larger" if a.millions > b.millions else "smaller"
        stated = f"{_cap(pa.label)} ({a.text}) was {rel} than {pb.label} ({b.text}), by {diff}."
        if comparison.yes_no:
            asked_larger = comparison.kind == "larger"
            return f"{'Yes' if (a.millions > b.millions) == asked_larger else 'No'}. {stated}"
        return stated
    big, small = ((pa, a), (pb, b)) if a.millions > b.millions else ((pb, b), (pa, a))
    if comparison.kind == "smaller":
        return f"{_cap(small[0].label)} ({small[1].text}) was smaller than {big[0].label} ({big[1].text}), by {diff}."
    return f"{_cap(big[0].label)} ({big[1].text}) was larger than {small[0].label} ({small[1].text}), by {diff}."


def _cap(label: str) -> str:
    return label[:1].upper() + label[1:]


__all__ = [
    "Amount",
    "FigureComparison",
    "Part",
    "amount_for_period",
    "compares_back",
    "conclude",
    "first_amount",
    "first_percent",
    "part_figure",
    "split_comparison",
]

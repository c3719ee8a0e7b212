"""Financial-statement table rows (SEC 10-Q PDFs) as readable statements, rendered once at ingestion.

A PDF has no table markup: a statement of operations reaches us as one paragraph per line, e.g.::

    Three Months Ended Nine Months Ended
    July 1, | 2023 | June 25, | 2022 | July 1, | 2023 | June 25, | 2022     (one paragraph each)
    Total net sales 81,797 82,959 293,787 304,182

A row like the last one answers nothing on its own: the reader (and the writer) cannot tell which
number belongs to which period.  ``table_statements`` tracks the column header and the unit line
of the page ("(In millions, except ...)") and rewrites each row whose value count matches the
columns into a statement that carries its row and column labels::

    Total net sales: $81,797 million, three months ended July 1, 2023; $82,959 million, three months
    ended June 25, 2022; ...

Rows it cannot label with certainty (no header seen on the page, value count differs from the
column count, merged lines) are left exactly as they were.  Pure: no Django, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import date, datetime

_MONTH = (
    r"(?:January|February|March|April|May|June|July|August|September|October|November|December"
    r"|Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec)"  # Intel's headers abbreviate: "Sep 30, 2023"
)
_FULL_MONTH = {m[:3]: m for m in ("January", "February", "March", "April", "May", "June", "July", "August",
                                  "September", "October", "November", "December")}  # fmt: skip
_MONTH_DAY = re.compile(rf"\b({_MONTH})\s+(\d{{1,2}}),?")
_YEAR = re.compile(r"\b((?:19|20)\d{2})\b")
_GROUP = re.compile(r"\b(Three|Six|Nine|Twelve)\s+Months\s+Ended\b", re.IGNORECASE)
# A header paragraph holds nothing but period words, month names, days, years and commas.
# MD&A tables add change columns after each group's dates: Apple "2022 Change", Microsoft "Percentage Change",
# NVIDIA "$ Change % Change" and "Quarter-over-Quarter Change Year-over-Year Change".
_CHANGE = re.compile(r"(?:(?P<kind>Quarter-over-Quarter|Year-over-Year|Percentage|\$|%)\s+)?Change\b")
_CHANGE_WORD = r"Change|Percentage|Quarter-over-Quarter|Year-over-Year|\$|%"
_HEADER_TOKEN = re.compile(
    rf"^(?:(?:Three|Six|Nine|Twelve)\s+Months\s+Ended|{_MONTH}|\d{{1,2}},?|(?:19|20)\d{{2}}|,|{_CHANGE_WORD})$"
)
# "(In millions)", and the MD&A's "(dollars in millions)" (Apple) and "($ in millions)" (NVIDIA).
_UNIT = re.compile(r"\(\s*(?:dollars\s+|\$\s*)?in\s+(millions|thousands|billions)\b([^)]*)", re.IGNORECASE)
_VALUE = re.compile(r"^(?:\(?\$?\(?[\d,]*\d(?:\.\d+)?\)?%?|—|–|-)$")
# A short title line inside a table, without the colon: "Revenue", "Operating Income", "Client Computing",
# "Operating Income (Loss)" (Amazon's segment table; its rows would otherwise read "International: -$911").
_SECTION_TITLE = re.compile(r"^[A-Z][A-Za-z&'’-]*(?: \(?[A-Za-z&'’-]+\)?){0,3}$")
# "5 %" in Apple's and NVIDIA's change columns: one value, as "(6)%" is.
_SPACED_PERCENT = re.compile(r"(?<=\s)(\(?\d[\d,.]*\)?) %(?=\s|$)")
# A section title ending its line: "Greater China:", "Operating expenses:" (no figures, a few words).
_SECTION_LINE = re.compile(r"^[A-Z][A-Za-z&'’ -]{0,60}:$")
_UNIT_WORD = {"millions": "million", "thousands": "thousand", "billions": "billion"}
# The sentence that introduces a notes table: "Stock-based compensation expense is as follows (in millions):",
# "The components of inventories were as follows:", "... consisted of the following:". Its subject qualifies
# the rows below, which otherwise read like the statement of operations' rows ("Sales and marketing: $1,111").
_CAPTION = re.compile(
    r"^(?P<subject>.+?),?\s+(?:(?:is|are|was|were)(?:\s+\w+)?\s+as\s+follows|consisted\s+of\s+the\s+following)\b",
    re.IGNORECASE,
)
# NVIDIA: "Our Condensed Consolidated Statements of Income include stock-based compensation expense, net of
# amounts allocated to inventory, as follows:".
_CAPTION_INCLUDE = re.compile(r"\binclude[sd]?\s+(?P<subject>[^,:]+),[^:]*\bas\s+follows:$", re.I)
_CAPTION_LEAD = re.compile(
    r"^(?:the|our)\s+(?:(?:components|details|summary)\s+of\s+(?:the\s+|our\s+)?)?|^information\s+about\s+", re.I
)
_CAPTION_CUT = re.compile(
    r",|\s+(?:recognized|recorded|included|during|for\s+the|as\s+of|in\s+our|by\s+each|disaggregated)\b"
    r"|\s+information$",
    re.I,
)
# "... the specialized markets we serve: Three Months Ended Nine Months Ended": the header starts in the prose.
_GLUED_GROUPS = re.compile(r":\s+((?:(?:Three|Six|Nine|Twelve)\s+Months\s+Ended\s*)+)$")


def _caption(paragraph: str) -> str:
    """The subject of a table's introducing sentence, lower-cased first ("stock-based compensation expense"),
    or "" when the paragraph does not introduce a table or the subject is not a short noun phrase."""
    text = _GLUED_GROUPS.sub(":", paragraph.strip())
    if not text.endswith(":"):
        return ""
    last = re.split(r"(?<=[.;])\s+", text)[-1]
    match = _CAPTION.match(last) or _CAPTION_INCLUDE.search(last)
    if not match:
        return ""
    subject = _CAPTION_LEAD.sub("", match.group("subject").strip())
    subject = _CAPTION_CUT.split(subject, maxsplit=1)[0].strip()
    if not subject or len(subject.split()) > 8 or re.search(r"\d", subject):
        return ""
    return _lower_first(subject)


def _is_header(paragraph: str) -> bool:
    words = re.findall(r"(?:Three|Six|Nine|Twelve)\s+Months\s+Ended|\S+", paragraph, flags=re.IGNORECASE)
    return bool(words) and all(_HEADER_TOKEN.match(w) for w in words)


def _columns(header: Sequence[str]) -> list[str]:
    joined = " ".join(header)
    changes = [m.group("kind") or "" for m in _CHANGE.finditer(joined)]
    joined = re.sub(rf"(?:{_CHANGE_WORD})(?=\s|$)", " ", _CHANGE.sub(" ", joined))
    groups = [g.lower() + " months ended" for g in _GROUP.findall(joined)]
    rest = _GROUP.sub(" ", joined)
    days = _MONTH_DAY.findall(rest)
    years = _YEAR.findall(_MONTH_DAY.sub(" ", rest))
    days = [(_FULL_MONTH[month[:3]], day) for month, day in days]
    if len(days) >= 2 and len(days) == len(years):
        dates = [f"{month} {day}, {year}" for (month, day), year in zip(days, years, strict=True)]
    elif days and len(years) >= 2 and len(years) % len(days) == 0 and (not groups or len(days) in (1, len(groups))):
        # One date per group with the years after it (Amazon, Microsoft): "Three Months Ended March 31,
        # 2022 2023" or "Three Months Ended June 30, Six Months Ended June 30, 2022 2023 2022 2023".
        per_day = len(years) // len(days)
        dates = [f"{days[i // per_day][0]} {days[i // per_day][1]}, {y}" for i, y in enumerate(years)]
    else:
        return []
    if groups:
        if len(dates) % len(groups):
            return []
        per = len(dates) // len(groups)
        dates = [f"{groups[i // per]} {d}" for i, d in enumerate(dates)]
    # Two columns with one label: the header's spans were not found ("June 25, 2022" for the quarter
    # and for the nine months); labelling would misstate one of them.
    if len(set(dates)) != len(dates):
        return []
    return _with_changes(dates, max(1, len(groups)), changes) if changes else dates


def _ended(column: str) -> date | None:
    found = re.search(r"([A-Z][a-z]+) (\d{1,2}), (\d{4})$", column)
    try:
        return datetime.strptime(" ".join(found.groups()), "%B %d %Y").date() if found else None
    except ValueError:
        return None


def _with_changes(dates: list[str], groups: int, changes: list[str]) -> list[str]:
    """Each group's dates followed by its change columns, labelled with the two periods they compare; [] when
    that is not certain (the changes do not divide among the groups, a plain change between other than two
    periods, dates that do not parse)."""
    if len(changes) % groups or len(dates) % groups:
        return []
    per_dates, per_changes = len(dates) // groups, len(changes) // groups
    columns: list[str] = []
    for g in range(groups):
        own = dates[g * per_dates : (g + 1) * per_dates]
        ends = [e for e in (_ended(d) for d in own) if e is not None]
        if len(ends) != len(own):
            return []
        by_age = sorted(range(len(own)), key=lambda i: ends[i], reverse=True)  # newest first
        columns.extend(own)
        for kind in changes[g * per_changes : (g + 1) * per_changes]:
            if kind in ("Quarter-over-Quarter", "Year-over-Year") and len(own) == 3:
                # NVIDIA: this quarter, the quarter before, the same quarter a year before.
                older = by_age[1] if kind == "Quarter-over-Quarter" else by_age[2]
            elif len(own) == 2:
                older = by_age[1]
            else:
                return []
            what = {"$": "change in dollars", "%": "percentage change", "Percentage": "percentage change"}.get(
                kind, "change"
            )
            # The column follows the period it is the change of: naming the earlier period is enough.
            columns.append(f"{what} from the {own[older]}")
    return columns


_FOOTNOTE = re.compile(r"^\(\d\)$")
_LABEL_NUMBER = re.compile(r"^\d{1,3}$")


def _is_value(word: str) -> bool:
    return word == "$" or bool(_VALUE.match(word))


def _split_glued(paragraph: str, columns: int) -> list[str] | None:
    """Several rows the PDF reflow joined into one paragraph, one paragraph per row.

    ``"Net product sales $ 59,340 $ 63,171 Net service sales 67,761 79,912 Operating expenses:"`` with two
    columns -> the two rows, then ``"Operating expenses:"``.  A run of fewer numbers than columns stays in
    the label only as one small number ("Level 1 securities"); a longer run may only add footnote markers
    ("Online stores (1) $ 53,489 ...").  Anything else, or fewer than two rows, gives None: the paragraph
    stays as it was.
    """
    words = paragraph.split()
    out: list[str] = []
    label: list[str] = []
    i = 0
    while i < len(words):
        if not _is_value(words[i]):
            label.append(words[i])
            i += 1
            continue
        j = i
        while j < len(words) and _is_value(words[j]):
            j += 1
        run = words[i:j]
        numbers = [k for k, w in enumerate(run) if w != "$"]
        if len(numbers) < columns:
            if len(run) != 1 or not _LABEL_NUMBER.match(run[0]):
                return None  # not a row of this table: leave the paragraph as it was
            label.extend(run)  # "Level 1 securities"
        else:
            extra = [run[k] for k in numbers[: len(numbers) - columns]]
            if not label or not re.match(r"[A-Za-z\"“]", label[0]) or not all(_FOOTNOTE.match(w) for w in extra):
                return None
            out.append(" ".join([*label, *run]))
            label = []
        i = j
    tail = " ".join(label)
    if len(out) == 1 and not _SECTION_LINE.match(tail):
        # One row alone is split off only when what follows it is the next section's title: Apple's segment
        # note prints "Operating income $ 7,995 $ 7,124 $ 27,380 $ 27,174 Greater China:" as one line, and
        # without the split the next rows would still read as Europe's.
        return None
    if not out:
        return None
    if tail:
        out.append(tail)
    return out


def _split_row(paragraph: str, columns: int = 0) -> tuple[str, list[str]] | None:
    """``"Total net sales 81,797 82,959"`` -> ``("Total net sales", ["81,797", "82,959"])``.

    With ``columns``, a footnote marker before the last ``columns`` numbers stays in the label: "Online
    stores (1) $ 53,489 $ 57,267" is the row "Online stores" (the marker dropped)."""
    words = paragraph.split()
    values: list[str] = []
    i = len(words)
    while i > 0 and (words[i - 1] == "$" or _VALUE.match(words[i - 1])):
        i -= 1
    if columns:
        while i < len(words) and sum(1 for w in words[i:] if w != "$") > columns and _FOOTNOTE.match(words[i]):
            i += 1
    label = re.sub(r"\s*\(\d\)$", "", " ".join(words[:i]).strip())
    tail = words[i:]
    pending_dollar = False
    for w in tail:
        if w == "$":
            pending_dollar = True
            continue
        values.append(("$" if pending_dollar and not w.startswith("$") else "") + w)
        pending_dollar = False
    if not label or not re.search(r"[A-Za-z]", label) or label.endswith("$") or not values:
        return None
    return label, values


def _render_value(raw: str, unit: str, shares: bool, per_share: bool) -> str | None:
    if raw in ("—", "–", "-"):
        return None  # a dash is "none" in these statements; saying "$— million" helps no one
    negative = raw.startswith("(") or raw.endswith(")") or raw.endswith(")%")
    percent = raw.endswith("%")
    number = raw.rstrip("%").strip("()$")
    if number.startswith("$"):
        number = number[1:]
    if percent:
        return ("-" if negative else "") + number + "%"  # "(6)%" -> "-6%"
    has_dollar = "$" in raw
    decimal = "." in number
    sign = "-" if negative else ""
    if shares:
        return f"{sign}{number} {unit} shares" if unit else f"{sign}{number} shares"
    if per_share or (decimal and has_dollar):
        return f"{sign}${number}"
    return f"{sign}${number} {unit}" if unit else f"{sign}${number}"


def _header_prefix(text: str) -> tuple[str, str]:
    """``"Sep 30, 2023 Oct 1, 2022 Net revenue $ 14,158 ..."`` -> (the header words, the rest)."""
    words = text.split()
    i = 0
    while i < len(words) and _HEADER_TOKEN.match(words[i]):
        i += 1
    return " ".join(words[:i]), " ".join(words[i:])


_PERCENT_TABLE = re.compile(
    r"\b(?:expressed\s+)?as\s+a\s+percent(?:age)?\s+of\s+(?:total\s+)?(?P<of>(?:net\s+)?(?:revenue|sales|net\s+sales))\b",
    re.I,
)


def _lower_first(words: str) -> str:
    """``"Net revenue"`` -> ``"net revenue"``; a name in title case keeps its capitals ("Client Computing",
    "Operating Income"), a single word does not ("Revenue" -> "revenue")."""
    parts = words.split()
    if words.isupper():
        # Amazon's "FINANCING ACTIVITIES:" reads as words; a single capitalised word is a name ("AWS").
        return words.lower() if len(parts) > 1 else words
    if len(parts) > 1 and all(p.lstrip("(")[:1].isupper() for p in parts):
        return words
    return words[:1].lower() + words[1:]


def _unlabelled_values(paragraph: str, columns: int) -> list[str] | None:
    """``"6,780 7,678 12,547 17,000"`` with four columns -> its values; anything else -> None."""
    words = [w for w in paragraph.split() if w != "$"]
    if len(words) != columns or not all(_VALUE.match(w) and re.search(r"\d", w) for w in words):
        return None
    return words


def table_statements(paragraphs: Sequence[str]) -> list[str]:
    """The page's paragraphs with labelled table rows rewritten as statements (see module doc)."""
    out: list[str] = []
    columns: list[str] = []
    header: list[str] = []
    unit = ""
    unit_note = ""
    section = ""  # what the rows below are qualified with
    measure = ""  # the "Net revenue:" line a segment title sits under
    title = ""  # a segment title under a measure ("Client Computing")
    caption = ""  # the subject of the sentence that introduced the table, for rows without a section
    fresh = False  # columns were just found and no row has used them yet
    # "... items in our Condensed Consolidated Statements of Income expressed as a percentage of revenue":
    # the table below prints percentages without the sign, so "$26.1" would misstate them.
    percent_of = ""  # what a percentages table's cells are a share of ("revenue"), else ""
    last_label = ""  # the row above, which a "Percentage of total net sales" row is about
    pending = list(paragraphs)
    pending.reverse()
    while pending:
        para = pending.pop()
        # A long paragraph can still end with a table's unit: "... Stock-based compensation expense is as
        # follows (in millions):".
        tail_start = 0 if len(para) < 200 else len(para) - 200 if para.endswith(":") else -1
        unit_match = _UNIT.search(para, tail_start) if tail_start >= 0 else None
        if unit_match:
            unit, unit_note = _UNIT_WORD[unit_match.group(1).lower()], unit_match.group(2).lower()
            # A unit line starts a table of amounts: the percentages table above it has ended (NVIDIA prints its
            # segment table, "($ in millions)", right after the one "expressed as a percentage of revenue").
            percent_of = ""
            # Intel prints the groups first, then one paragraph holding the unit line, the dates and the
            # first row: "(In Millions, ...; Unaudited) Sep 30, 2023 Oct 1, 2022 ... Net revenue $ 14,158 ...".
            groups_before = header if header and not _MONTH_DAY.search(" ".join(header)) else []
            # NVIDIA prints "(In millions)" below the dates: the header just read still labels the rows.
            kept = columns if fresh else []
            columns, header, section, measure, title = [], [], "", "", ""
            caption = _caption(para) or (caption if len(para) < 80 else "")
            close = para.find(")", unit_match.end() - 1)
            dates, rest = _header_prefix(para[close + 1 :]) if close != -1 else ("", "")
            found = _columns([*groups_before, dates]) if dates and _MONTH_DAY.search(dates) else []
            if found:
                columns = found
                out.append(para[: close + 1] + " " + dates)
                if rest:
                    pending.append(rest)
                continue
            if not found and close != -1:
                # "... is as follows (in millions): Three Months Ended": the header starts in the sentence.
                lead = para[close + 1 :].lstrip(" :")
                if dates and not rest and _MONTH_DAY.search(dates):
                    # Apple's balance sheet: "(In millions, ...) April 1," and the rest of the header on the
                    # lines below ("2023", "September 24,", "2022"); without this first date the header
                    # would read as one date with two years.
                    header = [*groups_before, dates]
                elif lead and _is_header(lead) and _GROUP.search(lead):
                    header = [lead]
            if kept and not header:
                columns = kept
            out.append(para)
            continue
        if _is_header(para):
            header.append(para)
            found = _columns(header)
            if found:
                columns, fresh = found, True
            out.append(para)
            continue
        if header:
            # Apple's product note: the header's last year and the first row are one line ("2022 iPhone $ 51,334
            # $ 50,570 ..."); the year completes the header, the rest is the first row.
            dates, rest = _header_prefix(para)
            found = _columns([*header, dates]) if dates and rest else []
            if found:
                header, columns, fresh = [], found, True
                out.append(dates)
                pending.append(rest)
                continue
        header = []
        if columns and pending and re.search(r"(?:&|\band)$", para) and len(para) < 60 and not re.search(r"\d", para):
            # NVIDIA breaks "Compute & Networking $ 3,816 ..." after the ampersand: one row label, not a section.
            pending[-1] = f"{para} {pending[-1]}"
            continue
        glued_groups = _GLUED_GROUPS.search(para)
        if glued_groups:
            columns, section, measure, title, fresh = [], "", "", "", False
            caption = _caption(para)
            header = [glued_groups.group(1).strip()]
            out.append(para)
            continue
        if len(para) > 150 and para.endswith(".") or para.startswith("See accompanying"):
            columns, section, measure, title, caption, fresh = [], "", "", "", "", False  # prose: the table ended
            percent_match = _PERCENT_TABLE.search(para)
            percent_of = percent_match.group("of").lower() if percent_match else ""
        elif para.isupper() and not para.endswith(":"):
            caption = ""  # a statement's title ("CONDENSED CONSOLIDATED STATEMENTS OF INCOME")
        elif para.endswith(":") and (introduced := _caption(para)):
            caption = introduced
        # Apple's and NVIDIA's change columns print "5 %": one value, as the other rows' "(6)%" is.
        cells = _SPACED_PERCENT.sub(r"\1%", para) if columns else para
        glued = _split_glued(cells, len(columns)) if columns else None
        if glued:
            pending.extend(reversed(glued))  # each row goes through the rules below on its own
            continue
        row = _split_row(cells, len(columns)) if columns else None
        if row is None and columns and title and _unlabelled_values(cells, len(columns)):
            # Intel's segment table: "Client Computing", its rows, then the segment's total printed without
            # a label ("6,780 7,678 12,547 17,000"); the rows after it belong to the measure again.
            row = (f"Total {title}", _unlabelled_values(cells, len(columns)) or [])
        if row is None or len(row[1]) != len(columns):
            if columns and para.endswith(":") and not re.search(r"\d", para) and len(para) < 80:
                section, measure, title = para[:-1].strip(), para[:-1].strip(), ""
            elif columns and _SECTION_TITLE.match(para):
                # Microsoft's segment table: "Revenue" on its own line above the segments' rows; Intel's:
                # "Client Computing" above its product lines, inside "Net revenue:".
                if measure:
                    title = para.strip()
                else:
                    section = para.strip()
            out.append(para)
            continue
        label, values = row
        fresh = False
        titled = re.match(r"^(?P<title>[A-Z][A-Za-z ,&'’()-]{2,60}):\s+(?P<row>[A-Za-z].*)$", label)
        if titled and not title and len(titled.group("title").split()) >= 2:  # "Less: Net income ..." is no title
            # Apple's MD&A: "Net sales by category: iPhone $ 40,665 ...": the section's title and its first row on
            # one line; "Mac" and "iPad" below are the section's rows too.
            section, measure, label = titled.group("title"), titled.group("title"), titled.group("row")
        context = f"{section or caption} {label}".lower()
        per_share = "per share" in context and "shares used" not in context and "average shares" not in context
        # NVIDIA's "Dilutive impact of outstanding equity awards" sits under "Denominator:" (shares).
        shares = not per_share and ("shares" in context or "share count" in context or "denominator" in context)
        # "Year-over-year Percentage Growth (Decline):" and "Net Sales Mix:" rows hold percentages
        # printed without the sign; "$27" would misstate them.
        percent = (
            not per_share
            and not shares
            and (bool(percent_of) or bool(re.search(r"percent|\bmix\b|\bgrowth\b", context)))
        )
        share_unit = ""
        if shares:
            # "(In millions, except number of shares which are reflected in thousands ...)"
            note = re.search(r"shares[^,)]*?in\s+(millions|thousands)", unit_note)
            share_unit = _UNIT_WORD[note.group(1)] if note else unit
        parts = []
        for raw, column in zip(values, columns, strict=True):
            rendered = _render_value(raw, share_unit if shares else unit, shares, per_share)
            if percent and rendered is not None and not rendered.endswith("%"):
                rendered = rendered.replace("$", "").split(" ")[0] + "%"
            if rendered is not None:
                parts.append(f"{rendered}, {column}")
        if not parts:
            out.append(para)
            continue
        name = label
        if re.match(r"(?:percentage|percent|%) of\b", label, re.I) and last_label:
            # Apple prints each expense's share of net sales on the line below it: "Percentage of total net sales".
            name = label = f"{last_label}, {_lower_first(label)}"
        last_label = label
        # "Net cash used in financing activities" closes its section as a total does: the rows after it
        # ("Change in cash and cash equivalents") are not financing activities.
        is_total = label.lower().startswith(("total", "net cash"))
        if title and not is_total:
            name = f"{label} ({title}, {_lower_first(measure)})"  # "Desktop (Client Computing, net revenue)"
        elif title:
            name = f"{label} ({_lower_first(measure)})"  # "Total Client Computing (net revenue)"
        elif section and not is_total and section.lower() != label.lower():
            name = f"{label} ({_lower_first(section)})"
        elif caption and not section and caption.split()[-1].lower() not in label.lower():
            name = f"{label} ({caption})"  # "Sales and marketing (stock-based compensation expense)"
        if percent_of:
            # "Net income, as a percentage of revenue: 11.5%": not the amount a "how much" question asks for.
            name = f"{name}, as a percentage of {percent_of}"
        if is_total and title:
            title = ""  # a segment's total closes the segment; the measure's rows go on
        elif is_total:
            section = measure = ""
        out.append(f"{name}: " + "; ".join(parts) + ".")
    return out


__all__ = ["table_statements"]

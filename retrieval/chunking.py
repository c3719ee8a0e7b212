"""Chunking extracted text into retrieval units that keep exact offsets into the source text.

Every chunk is an exact slice of the text it came from (``text == original[start:end]``), so a
citation can always be mapped back to the stored document.  Breaks are chosen, in order of
preference, at heading boundaries, paragraph breaks (blank lines), sentence ends and, only for
a sentence longer than ``max_words``, between words.  Nothing here ever splits inside a word.

Sentence splitting is a regex scan rather than pysbd: pysbd is far too slow on the
multi-megabyte documents the pipeline sees (it is roughly quadratic on long inputs), and the
chunker only needs boundaries that are good enough to avoid cutting a sentence in half.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass

from retrieval.extract import Heading

# Pieces under this many words are not worth a chunk of their own (see chunk_text).
SMALL_PIECE_WORDS = 40

# Overlong sentences are cut into word runs of this size, so the packer can still stop close
# to target_words instead of jumping in large steps.
_WORD_RUN = 20

_WORD = re.compile(r"\S+")
_PARAGRAPH_GAP = re.compile(r"\n[^\S\n]*\n")
_BLANK_LINES = re.compile(r"\n[^\S\n]*\n\s*")
# Candidate sentence ends: terminal punctuation plus closing quotes/brackets, before whitespace;
# CJK full stops end a sentence without any following space.
_SENTENCE_END = re.compile(r"[.!?\u2026]+[\"'\u2019\u201d\u00bb)\]]*(?=\s)|[\u3002\uff01\uff1f]+")
_NEXT_CHAR = re.compile(r"\s+(\S)")
_DOTTED_ACRONYM = re.compile(r"[A-Za-z](?:\.[A-Za-z])+")
# A period after these never ends a sentence in practice (titles, Latin, references, months).
_ABBREVIATIONS = frozenset(
    {
        "mr", "mrs", "ms", "mx", "dr", "prof", "sr", "jr", "st", "rev", "gen", "gov", "sen", "rep",
        "hon", "capt", "lt", "col", "sgt", "cpl", "maj", "adm", "e.g", "eg", "i.e", "ie", "cf", "vs",
        "viz", "al", "approx", "dept", "est", "fig", "figs", "no", "nos", "vol", "vols", "pp", "ch",
        "sec", "art", "para", "inc", "ltd", "corp", "co", "bros", "llc", "plc", "jan", "feb", "mar",
        "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "mt", "ft", "ave", "blvd",
        "rd", "ref", "refs", "ed", "eds",
    }
)  # fmt: skip


@dataclass(frozen=True)
class ChunkSpan:
    start: int
    end: int
    text: str  # always original_text[start:end]
    heading: str  # title of the nearest heading at or before start, "" if none


@dataclass(frozen=True)
class _Unit:
    start: int
    end: int
    words: int
    strength: int  # strength of the break *before* this unit


# Break strengths, weakest to strongest.
_WORD_BREAK, _SENTENCE_BREAK, _PARAGRAPH_BREAK, _SECTION_BREAK = 0, 1, 2, 3


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Sentence offsets ``(start, end)`` in ``text``: exact slices with surrounding whitespace removed.

    Blank lines always end a sentence.  A period does not end one after an abbreviation
    ("e.g.", "Dr."), a dotted acronym ("U.S."), a single initial ("J. Smith"), inside a number
    ("3.14") or when the next word starts in lower case.
    """
    spans: list[tuple[int, int]] = []
    _sentence_spans(text, 0, len(text), spans)
    return spans


def _sentence_spans(text: str, start: int, end: int, out: list[tuple[int, int]]) -> None:
    block_start = start
    for gap in _BLANK_LINES.finditer(text, start, end):
        _block_sentences(text, block_start, gap.start(), out)
        block_start = gap.end()
    _block_sentences(text, block_start, end, out)


def _block_sentences(text: str, start: int, end: int, out: list[tuple[int, int]]) -> None:
    pos = start
    for m in _SENTENCE_END.finditer(text, start, end):
        if _ends_sentence(text, m, end):
            _append_stripped(text, pos, m.end(), out)
            pos = m.end()
    _append_stripped(text, pos, end, out)


def _ends_sentence(text: str, m: re.Match[str], end: int) -> bool:
    if m.group(0)[0] in "\u3002\uff01\uff1f":
        return True
    nxt = _NEXT_CHAR.match(text, m.end(), end)
    if nxt is None:
        return False  # end of block: the block end closes the sentence anyway
    if nxt.group(1).islower():
        return False
    if m.group(0).startswith(".") and not m.group(0).startswith(".."):
        # Look at the token the period is attached to.
        token_start = m.start()
        while token_start > 0 and not text[token_start - 1].isspace():
            token_start -= 1
        token = text[token_start : m.start()].lstrip("\"'([{\u2018\u201c")
        if token.lower() in _ABBREVIATIONS:
            return False
        if _DOTTED_ACRONYM.fullmatch(token):
            return False
        if len(token) == 1 and token.isupper():
            return False  # an initial, as in "J. Smith"
    return True


def _append_stripped(text: str, start: int, end: int, out: list[tuple[int, int]]) -> None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    if start < end:
        out.append((start, end))


def _count_words(text: str, start: int, end: int) -> int:
    return sum(1 for _ in _WORD.finditer(text, start, end))


def chunk_text(
    text: str,
    headings: Sequence[Heading] = (),
    target_words: int = 180,
    max_words: int = 260,
) -> list[ChunkSpan]:
    """Split ``text`` into chunks of about ``target_words`` and never more than ``max_words`` words.

    Words are whitespace-separated tokens, so a chunk is cut only at whitespace.  Small pieces
    (< 40 words, or < target_words when that is lower) are merged: a short section start
    (typically a heading with little under it) carries on into what follows, and a short tail
    joins the chunk before it when the result stays within ``max_words``.  Raises ValueError
    unless ``1 <= target_words <= max_words``.
    """
    if target_words < 1 or max_words < target_words:
        raise ValueError("need 1 <= target_words <= max_words")
    if not text or text.isspace():
        return []
    small = min(SMALL_PIECE_WORDS, target_words)
    offsets, titles = _heading_index(text, headings)
    units = _units(text, offsets, max_words)
    ranges = _pack(units, target_words, max_words, small)
    chunks: list[ChunkSpan] = []
    for start, end in ranges:
        i = bisect.bisect_right(offsets, start) - 1
        chunks.append(ChunkSpan(start, end, text[start:end], titles[i] if i >= 0 else ""))
    return chunks


def _heading_index(text: str, headings: Sequence[Heading]) -> tuple[list[int], list[str]]:
    """Sorted heading offsets (snapped to word starts, so a bad offset cannot split a word)."""
    by_offset: dict[int, str] = {}
    for heading in sorted(headings, key=lambda h: h.offset):
        offset = heading.offset
        if not 0 <= offset < len(text):
            continue
        while offset > 0 and not text[offset - 1].isspace():
            offset -= 1
        by_offset[offset] = heading.title  # a later heading at the same spot wins
    offsets = sorted(by_offset)
    return offsets, [by_offset[o] for o in offsets]


def _units(text: str, heading_offsets: list[int], max_words: int) -> list[_Unit]:
    bounds = [o for o in heading_offsets if o > 0] + [len(text)]
    units: list[_Unit] = []
    section_start = 0
    for section_end in bounds:
        sentences: list[tuple[int, int]] = []
        _sentence_spans(text, section_start, section_end, sentences)
        for k, (s, e) in enumerate(sentences):
            if k == 0:
                strength = _SECTION_BREAK
            elif _PARAGRAPH_GAP.search(text, sentences[k - 1][1], s):
                strength = _PARAGRAPH_BREAK
            else:
                strength = _SENTENCE_BREAK
            words = [(m.start(), m.end()) for m in _WORD.finditer(text, s, e)]
            if len(words) <= max_words:
                units.append(_Unit(s, e, len(words), strength))
                continue
            # An overlong sentence: cut between words so no chunk exceeds max_words.
            for j in range(0, len(words), _WORD_RUN):
                run = words[j : j + _WORD_RUN]
                units.append(_Unit(run[0][0], run[-1][1], len(run), strength if j == 0 else _WORD_BREAK))
        section_start = section_end
    return units


def _pack(units: list[_Unit], target: int, maximum: int, small: int) -> list[tuple[int, int]]:
    """Greedy packing of units into (start, end) ranges; see chunk_text for the policy."""
    ranges: list[tuple[int, int]] = []
    range_words: list[int] = []
    range_opens_section: list[bool] = []

    cur_start = cur_end = -1
    cur_words = 0
    cur_opens_section = False

    def close() -> None:
        nonlocal cur_start, cur_words
        # A short tail joins the previous chunk of the same section if that stays in budget.
        if ranges and cur_words < small and not cur_opens_section and range_words[-1] + cur_words <= maximum:
            ranges[-1] = (ranges[-1][0], cur_end)
            range_words[-1] += cur_words
        else:
            ranges.append((cur_start, cur_end))
            range_words.append(cur_words)
            range_opens_section.append(cur_opens_section)
        cur_start, cur_words = -1, 0

    for i, unit in enumerate(units):
        if cur_start >= 0 and _should_break(units, i, cur_words, cur_opens_section, target, maximum, small):
            close()
        if cur_start < 0:
            cur_start = unit.start
            cur_opens_section = unit.strength == _SECTION_BREAK
        cur_end = unit.end
        cur_words += unit.words
    if cur_start >= 0:
        # At the very end even a chunk that opened a section may merge back: a heading with
        # (almost) nothing under it is not worth a chunk of its own.
        if ranges and cur_words < small and range_words[-1] + cur_words <= maximum:
            ranges[-1] = (ranges[-1][0], cur_end)
        else:
            ranges.append((cur_start, cur_end))
    return ranges


def _should_break(
    units: list[_Unit], i: int, words: int, opens_section: bool, target: int, maximum: int, small: int
) -> bool:
    unit = units[i]
    if words + unit.words > maximum:
        return True
    if unit.strength == _SECTION_BREAK:
        # A heading with little under it belongs with what follows, not alone.
        return not (opens_section and words < small)
    if words < target:
        if unit.strength == _PARAGRAPH_BREAK and words >= target // 2:
            # Rather than cut the next paragraph in two, end here if it cannot fit whole.
            return words + _words_until(units, i, _PARAGRAPH_BREAK, maximum) > maximum
        return False
    if unit.strength == _PARAGRAPH_BREAK:
        return True
    # Past target at a weak break: keep going only if a stronger break is reachable in budget.
    return words + _words_until(units, i, unit.strength + 1, maximum) > maximum


def _words_until(units: list[_Unit], i: int, strength: int, maximum: int) -> int:
    """Words from unit i up to the next break of at least ``strength`` (stops past ``maximum``)."""
    total = units[i].words
    for j in range(i + 1, len(units)):
        if units[j].strength >= strength or total > maximum:
            break
        total += units[j].words
    return total

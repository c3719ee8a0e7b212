from __future__ import annotations

import re

import pytest

from retrieval.chunking import ChunkSpan, chunk_text, split_sentences
from retrieval.extract import Heading, extract_text


def _words(text: str) -> int:
    return len(text.split())


def _sentence(i: int, length: int = 12) -> str:
    return " ".join(["Word"] + [f"w{i}x{k}" for k in range(length - 1)]) + "."


def _paragraph(start: int, sentences: int, length: int = 12) -> str:
    return " ".join(_sentence(start + k, length) for k in range(sentences))


def _assert_exact_slices(text: str, chunks: list[ChunkSpan]) -> None:
    assert chunks, "expected at least one chunk"
    previous_end = 0
    for chunk in chunks:
        assert chunk.text == text[chunk.start : chunk.end]
        assert chunk.text == chunk.text.strip()
        assert chunk.start >= previous_end  # ordered and non-overlapping
        previous_end = chunk.end
    # No word is lost between chunks: only whitespace lies outside them.
    covered = " ".join(c.text for c in chunks)
    assert covered.split() == text.split()


def test_sentence_splitter_keeps_abbreviations_acronyms_and_decimals_together() -> None:
    text = (
        "Dr. Smith moved to the U.S. last year. The fee is 3.5 percent, e.g. for wires. "
        'J. Doe approved it! Was it filed? "Yes." Then it shipped.\n\nA new paragraph'
    )
    sentences = [text[s:e] for s, e in split_sentences(text)]
    assert sentences == [
        "Dr. Smith moved to the U.S. last year.",
        "The fee is 3.5 percent, e.g. for wires.",
        "J. Doe approved it!",
        "Was it filed?",
        '"Yes."',
        "Then it shipped.",
        "A new paragraph",
    ]


def test_sentence_offsets_are_exact_stripped_slices() -> None:
    text = "  First one.   Second one?\n\n\tThird one!  "
    spans = split_sentences(text)
    assert [text[s:e] for s, e in spans] == ["First one.", "Second one?", "Third one!"]
    assert split_sentences("   \n\n ") == []


def test_it_does_not_split_before_a_lower_case_word() -> None:
    text = "Revenue rose approx. ten percent vs. last year. Costs fell."
    assert [text[s:e] for s, e in split_sentences(text)] == [
        "Revenue rose approx. ten percent vs. last year.",
        "Costs fell.",
    ]


def test_empty_or_whitespace_text_gives_no_chunks() -> None:
    assert chunk_text("") == []
    assert chunk_text(" \n\n\t ") == []


def test_short_text_is_one_chunk_with_no_heading() -> None:
    text = "  A short note. Nothing else.  "
    assert chunk_text(text) == [ChunkSpan(2, 29, "A short note. Nothing else.", "")]


def test_chunks_prefer_paragraph_breaks_and_respect_max_words() -> None:
    # Eleven paragraphs of 36 words: chunks hold whole paragraphs (5 x 36 = 180 words).
    paragraphs = [_paragraph(p * 10, 3) for p in range(11)]
    text = "\n\n".join(paragraphs)
    chunks = chunk_text(text, target_words=180, max_words=260)
    _assert_exact_slices(text, chunks)
    for chunk in chunks:
        assert _words(chunk.text) <= 260
        # Every chunk starts and ends on a paragraph boundary.
        assert chunk.start == 0 or text[chunk.start - 2 : chunk.start] == "\n\n"
        assert chunk.end == len(text) or text[chunk.end : chunk.end + 2] == "\n\n"
    assert [_words(c.text) for c in chunks] == [180, 216]  # the 36-word tail merged back


def test_long_paragraphs_break_at_sentence_ends() -> None:
    text = _paragraph(0, 60)  # one paragraph of 720 words, sentences of 12 words
    chunks = chunk_text(text, target_words=180, max_words=260)
    _assert_exact_slices(text, chunks)
    for chunk in chunks:
        assert chunk.text.endswith(".")
        assert _words(chunk.text) <= 260
    assert all(_words(c.text) >= 180 for c in chunks[:-1])


def test_an_overlong_sentence_is_split_between_words() -> None:
    text = " ".join(f"token{k}" for k in range(1000)) + "."
    chunks = chunk_text(text, target_words=180, max_words=260)
    _assert_exact_slices(text, chunks)
    assert len(chunks) >= 4
    for chunk in chunks:
        assert _words(chunk.text) <= 260
        assert re.fullmatch(r"token\d+\.?", chunk.text.split()[-1])  # never a partial word
        assert re.fullmatch(r"token\d+", chunk.text.split()[0])


def test_chunks_break_at_headings_and_carry_the_nearest_heading() -> None:
    intro = _paragraph(0, 4)
    setup = _paragraph(100, 10)
    usage = _paragraph(200, 4)
    text = f"{intro}\n\nSetup\n\n{setup}\n\nUsage\n\n{usage}"
    headings = [Heading(text.index("Setup"), 1, "Setup"), Heading(text.index("Usage"), 1, "Usage")]
    chunks = chunk_text(text, headings)
    _assert_exact_slices(text, chunks)
    assert [c.heading for c in chunks] == ["", "Setup", "Usage"]
    assert chunks[0].text == intro
    assert chunks[1].text.startswith("Setup\n\n") and chunks[1].end < text.index("Usage")
    assert chunks[2].text.startswith("Usage")


def test_a_heading_with_nothing_under_it_joins_the_next_section() -> None:
    body = _paragraph(0, 8)
    text = f"Part I\n\nItem 1. Financial Statements\n\n{body}"
    headings = [Heading(0, 1, "Part I"), Heading(text.index("Item 1."), 2, "Item 1. Financial Statements")]
    chunks = chunk_text(text, headings)
    _assert_exact_slices(text, chunks)
    assert len(chunks) == 1
    assert chunks[0].heading == "Part I"


def test_a_small_trailing_piece_merges_into_the_previous_chunk() -> None:
    text = _paragraph(0, 15) + "\n\n" + "A tiny closing remark."
    chunks = chunk_text(text, target_words=180, max_words=260)
    _assert_exact_slices(text, chunks)
    assert len(chunks) == 1
    assert chunks[0].text.endswith("A tiny closing remark.")


def test_a_small_trailing_piece_stays_separate_when_merging_would_exceed_max() -> None:
    text = _paragraph(0, 21) + "\n\n" + "A tiny closing remark."  # 252 + 4 words > 255
    chunks = chunk_text(text, target_words=200, max_words=255)
    _assert_exact_slices(text, chunks)
    assert all(_words(c.text) <= 255 for c in chunks)
    assert len(chunks) == 2


def test_chunking_real_extracted_html_keeps_offsets_and_headings() -> None:
    sections = "".join(
        f"<h2>Section {s}</h2>" + "".join(f"<p>{_paragraph(s * 100 + p * 10, 4)}</p>" for p in range(5))
        for s in range(4)
    )
    extracted = extract_text(f"<html><body><h1>Guide</h1>{sections}</body></html>".encode(), "text/html")
    chunks = chunk_text(extracted.text, extracted.headings)
    _assert_exact_slices(extracted.text, chunks)
    for chunk in chunks:
        expected = max((h for h in extracted.headings if h.offset <= chunk.start), key=lambda h: h.offset)
        assert chunk.heading == expected.title
        assert _words(chunk.text) <= 260
    assert {c.heading for c in chunks} >= {"Section 0", "Section 1", "Section 2", "Section 3"}


def test_chunking_is_deterministic() -> None:
    text = "\n\n".join(_paragraph(p * 7, 3 + p % 5) for p in range(30))
    assert chunk_text(text) == chunk_text(text)


def test_heading_offsets_inside_a_word_do_not_split_the_word() -> None:
    text = _paragraph(0, 20) + "\n\nSecondheading " + _paragraph(500, 20)
    bad = Heading(text.index("Secondheading") + 3, 1, "Second")
    chunks = chunk_text(text, [bad])
    _assert_exact_slices(text, chunks)
    assert any(c.text.startswith("Secondheading") and c.heading == "Second" for c in chunks)


def test_it_rejects_a_max_below_the_target() -> None:
    with pytest.raises(ValueError):
        chunk_text("some text", target_words=200, max_words=100)

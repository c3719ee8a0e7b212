"""PDF to paragraphs with pypdf: running headers dropped, soft hyphens joined, statement tables labelled."""

from __future__ import annotations

import io
import re
from collections import Counter

from retrieval.extract.base import MAX_TEXT_CHARS, ExtractionError, _Block, logger
from retrieval.extract.tables import table_statements

_SOFT_BREAK_HYPHEN = re.compile(r"(?<=[a-z])-$")


# pypdf 7 refuses arrays of more than 100,000 elements by default; real filings exceed it (two of
# the demo's Microsoft 10-Qs carry one such array), and the document would never be indexed.  Ten
# times the default still bounds a hostile file; MAX_TEXT_CHARS bounds the text.
PDF_MAX_ARRAY_ELEMENTS = 1_000_000


def _pdf_blocks(content: bytes) -> list[_Block]:
    import contextlib

    import pypdf

    configure = getattr(pypdf, "apply_configuration", None)
    limits = configure(array_maximum_element_count=PDF_MAX_ARRAY_ELEMENTS) if configure else contextlib.nullcontext()
    with limits:
        return _pdf_blocks_within_limits(content)


def _pdf_blocks_within_limits(content: bytes) -> list[_Block]:
    from pypdf import PdfReader
    from pypdf.errors import PyPdfError

    try:
        reader = PdfReader(io.BytesIO(content), strict=False)
        if reader.is_encrypted and not reader.decrypt(""):
            raise ExtractionError("PDF is encrypted")
        pages = list(reader.pages)
    except ExtractionError:
        raise
    except (PyPdfError, ValueError, KeyError, TypeError, OSError, AssertionError) as exc:
        raise ExtractionError(f"unreadable PDF: {exc}") from exc

    page_lines: list[list[str]] = []
    total = 0
    failures = 0
    for number, page in enumerate(pages, start=1):
        if total > MAX_TEXT_CHARS:
            break  # the rest would be truncated anyway; skip the expensive extraction
        try:
            raw = page.extract_text() or ""
        except Exception:  # pypdf raises a zoo of types on a single bad page
            logger.warning("pdf page %d could not be extracted; skipping it", number, exc_info=True)
            failures += 1
            raw = ""
        total += len(raw)
        page_lines.append([line.strip() for line in raw.split("\n") if line.strip()])
    if pages and failures == len(pages):
        raise ExtractionError("no page of the PDF could be extracted")

    _drop_running_headers(page_lines)
    blocks: list[_Block] = []
    for lines in page_lines:
        # Financial-statement rows gain their row and column labels (retrieval/extract/tables.py).
        blocks.extend(_Block(p) for p in table_statements(_pdf_paragraphs(lines)))
    return blocks


def _drop_running_headers(page_lines: list[list[str]]) -> None:
    """Remove header/footer lines repeated on most pages ("Apple Inc. | Q2 2023 Form 10-Q | 12")."""
    if len(page_lines) < 3:
        return

    def key(line: str) -> str:
        return re.sub(r"\d+", "#", line.lower())

    counts: Counter[str] = Counter()
    for lines in page_lines:
        counts.update({key(line) for line in lines[:2] + lines[-2:]})
    threshold = max(3, len(page_lines) // 2)
    repeated = {k for k, n in counts.items() if n >= threshold}
    if not repeated:
        return
    for lines in page_lines:
        while lines and key(lines[0]) in repeated:
            lines.pop(0)
        while lines and key(lines[-1]) in repeated:
            lines.pop()


def _pdf_paragraphs(lines: list[str]) -> list[str]:
    """Re-flow a page's lines into paragraphs.

    PDF text has no paragraph markup, only lines.  A line that runs (nearly) to the page's
    usual full width, or is followed by a line starting in lower case, continues into the next
    line; anything shorter (table rows, headings, last lines of paragraphs) ends a paragraph.
    """
    if not lines:
        return []
    lengths = sorted(len(line) for line in lines)
    full_width = lengths[int(0.9 * (len(lengths) - 1))]
    paragraphs: list[str] = []
    current = ""
    for i, line in enumerate(lines):
        if current:
            if current.endswith("-") and _SOFT_BREAK_HYPHEN.search(current) and line[:1].islower():
                # Keep the hyphen but drop the space: never deletes a character, so real
                # compounds ("well-known") stay right and split words stay one token.
                current += line
            else:
                current += " " + line
        else:
            current = line
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        continues = bool(nxt) and ((full_width >= 60 and len(line) >= 0.75 * full_width) or nxt[:1].islower())
        if not continues:
            paragraphs.append(current)
            current = ""
    if current:
        paragraphs.append(current)
    return paragraphs

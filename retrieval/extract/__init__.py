"""Text extraction: raw source bytes -> plain paragraphs plus heading positions.

Every supported media type is reduced to the same shape so that chunking, fingerprinting and
the answer writer never need to know where a document came from:

* paragraphs separated by exactly ``"\\n\\n"``, whitespace inside a paragraph collapsed to
  single spaces, no leading/trailing whitespace, Unicode NFC;
* each heading is its own paragraph, and ``headings`` records where it starts in ``text``.

The package is pure (no Django, no I/O beyond the bytes it is given) so it can run in a worker
or a test without setup. One module per format: ``base`` (types, decoding, cleaning), ``markdown``
(with Liquid tags and titles), ``html`` (HTML and Confluence storage), ``pdf`` (with ``tables`` for
financial-statement rows), ``docx``, ``office`` (XLSX, PPTX, CSV); this module dispatches.
"""

from __future__ import annotations

from collections.abc import Iterable

from retrieval.extract.base import (
    MAX_TEXT_CHARS,
    MEDIA_CONFLUENCE,
    MEDIA_CSV,
    MEDIA_DOCX,
    MEDIA_HTML,
    MEDIA_MARKDOWN,
    MEDIA_PDF,
    MEDIA_PLAIN,
    MEDIA_PPTX,
    MEDIA_XLSX,
    SUPPORTED_MEDIA_TYPES,
    ExtractedText,
    ExtractionError,
    Heading,
    UnsupportedMediaType,
    _assemble,
    _Block,
    _decode,
    _parse_media_type,
    _plain_blocks,
)
from retrieval.extract.docx import _docx_blocks
from retrieval.extract.html import _confluence_blocks, _html_blocks
from retrieval.extract.markdown import (
    _markdown_blocks,
    clean_title,
    render_markdown,
    strip_liquid,
    tidy_markdown_residue,
)
from retrieval.extract.office import _csv_blocks, _pptx_blocks, _xlsx_blocks
from retrieval.extract.pdf import _pdf_blocks

__all__ = [
    "MAX_TEXT_CHARS",
    "MEDIA_CONFLUENCE",
    "MEDIA_CSV",
    "MEDIA_DOCX",
    "MEDIA_HTML",
    "MEDIA_MARKDOWN",
    "MEDIA_PDF",
    "MEDIA_PLAIN",
    "MEDIA_PPTX",
    "MEDIA_XLSX",
    "SUPPORTED_MEDIA_TYPES",
    "ExtractedText",
    "ExtractionError",
    "Heading",
    "UnsupportedMediaType",
    "clean_title",
    "extract_text",
    "has_extractor",
    "metadata_text",
    "render_markdown",
    "strip_liquid",
    "tidy_markdown_residue",
]


def extract_text(content: bytes, media_type: str) -> ExtractedText:
    """Extract normalised text and headings from ``content`` of the given media type.

    ``media_type`` may carry parameters (``text/html; charset=iso-8859-1``); a declared charset is
    honoured for the textual types.  Raises UnsupportedMediaType or ExtractionError.
    """
    base, params = _parse_media_type(media_type)
    if base not in SUPPORTED_MEDIA_TYPES:
        raise UnsupportedMediaType(f"no extractor for media type {base!r}")
    if not content:
        return ExtractedText("")
    if base == MEDIA_PDF:
        blocks: Iterable[_Block] = _pdf_blocks(content)
    elif base == MEDIA_DOCX:
        blocks = _docx_blocks(content)
    elif base in _OFFICE_EXTRACTORS:
        blocks = _OFFICE_EXTRACTORS[base](content, params)
    else:
        decoded = _decode(content, params.get("charset"))
        if base == MEDIA_PLAIN:
            blocks = _plain_blocks(decoded)
        elif base == MEDIA_MARKDOWN:
            blocks = _markdown_blocks(decoded)
        elif base == MEDIA_HTML:
            blocks = _html_blocks(decoded)
        else:
            blocks = _confluence_blocks(decoded)
    return _assemble(blocks)


_OFFICE_EXTRACTORS = {MEDIA_XLSX: _xlsx_blocks, MEDIA_PPTX: _pptx_blocks, MEDIA_CSV: _csv_blocks}


def has_extractor(media_type: str) -> bool:
    return _parse_media_type(media_type)[0] in SUPPORTED_MEDIA_TYPES


def metadata_text(
    *,
    title: str,
    media_type: str,
    path: str = "",
    author: str = "",
    created: str = "",
    updated: str = "",
) -> ExtractedText:
    """What a reader can search for in a file without text: its name, place, type, author and dates.

    The result has the same shape as any extraction (one paragraph per field), so the file is
    chunked, embedded and ACL-filtered like any other document; a non-reader finds nothing.
    """
    base = _parse_media_type(media_type)[0] or "application/octet-stream"
    fields = [
        ("File", title),
        ("Location", path),
        ("Type", base),
        ("Author", author),
        ("Created", created),
        ("Modified", updated),
    ]
    return _assemble(_Block(f"{label}: {value}") for label, value in fields if value and value.strip())

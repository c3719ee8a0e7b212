"""Shared pieces of text extraction: media types, the result types, decoding, cleaning, block assembly."""

from __future__ import annotations

import io
import logging
import re
import unicodedata
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

logger = logging.getLogger(__name__)


MAX_TEXT_CHARS = 2_000_000


# A DOCX is a zip; refuse ones that would inflate to something absurd (zip bombs) before
# python-docx reads them fully into memory.
MAX_DOCX_UNCOMPRESSED_BYTES = 512 * 1024 * 1024


MEDIA_PLAIN = "text/plain"


MEDIA_MARKDOWN = "text/markdown"


MEDIA_HTML = "text/html"


MEDIA_CONFLUENCE = "application/vnd.atlassian.storage+xml"


MEDIA_PDF = "application/pdf"


MEDIA_DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


MEDIA_XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


MEDIA_PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"


MEDIA_CSV = "text/csv"


SUPPORTED_MEDIA_TYPES = frozenset(
    {
        MEDIA_PLAIN,
        MEDIA_MARKDOWN,
        MEDIA_HTML,
        MEDIA_CONFLUENCE,
        MEDIA_PDF,
        MEDIA_DOCX,
        MEDIA_XLSX,
        MEDIA_PPTX,
        MEDIA_CSV,
    }
)


class UnsupportedMediaType(ValueError):
    """The pipeline has no extractor for this media type."""


class ExtractionError(ValueError):
    """The bytes claim a supported type but cannot be read (corrupt, encrypted, undecodable)."""


@dataclass(frozen=True)
class Heading:
    offset: int  # index in ExtractedText.text where the heading's own paragraph starts
    level: int  # 1 = top level
    title: str


@dataclass(frozen=True)
class ExtractedText:
    text: str
    headings: tuple[Heading, ...] = ()


@dataclass(frozen=True)
class _Block:
    text: str
    level: int = 0  # 0 = ordinary paragraph, >0 = heading level


def _parse_media_type(media_type: str) -> tuple[str, dict[str, str]]:
    base, _, rest = (media_type or "").partition(";")
    params: dict[str, str] = {}
    for part in rest.split(";"):
        key, sep, value = part.partition("=")
        if sep:
            params[key.strip().lower()] = value.strip().strip('"').strip()
    return base.strip().lower(), params


def _decode(content: bytes, charset: str | None) -> str:
    # A declared charset wins; a wrong declaration is a corrupt input rather than something
    # to guess around, because silently mis-decoded text would be indexed as garbage.
    if charset:
        try:
            return content.decode(charset)
        except LookupError:
            pass  # unknown codec name: fall through to sniffing
        except UnicodeDecodeError as exc:
            raise ExtractionError(f"content is not valid {charset}") from exc
    if content.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return content.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise ExtractionError("content is not valid UTF-16") from exc
    try:
        text = content.decode("utf-8-sig")
    except UnicodeDecodeError:
        # Legacy Windows exports are common in enterprise shares; cp1252 rejects the few bytes
        # it leaves undefined, so binary junk still tends to fail below.
        try:
            text = content.decode("cp1252")
        except UnicodeDecodeError as exc:
            raise ExtractionError("content is neither UTF-8 nor Windows-1252 text") from exc
    if "\x00" in text[:65536]:
        raise ExtractionError("content looks binary (NUL bytes), not text")
    return text


# Characters that are invisible or illegal downstream: C0/C1 controls (Postgres rejects NUL),
# zero-width spaces/BOM/soft hyphen (they split words for the tokenizer), lone surrogates.
# Tab/newline/CR/FF/VT are whitespace and handled by the collapse instead.
_INVISIBLE = re.compile("[\x00-\x08\x0e-\x1f\x7f-\x9f\u00ad\u200b\u2060\ufeff\ud800-\udfff]")


def _clean(text: str) -> str:
    text = _INVISIBLE.sub("", text)
    text = unicodedata.normalize("NFC", text)
    return " ".join(text.split())


def _assemble(blocks: Iterable[_Block]) -> ExtractedText:
    parts: list[str] = []
    headings: list[Heading] = []
    length = 0  # length of "\n\n".join(parts) so far
    for block in blocks:
        cleaned = _clean(block.text)
        if not cleaned:
            continue
        offset = length + 2 if parts else 0
        if offset >= MAX_TEXT_CHARS:
            break
        if offset + len(cleaned) > MAX_TEXT_CHARS:
            cleaned = _truncate_at_word(cleaned, MAX_TEXT_CHARS - offset)
            if not cleaned:
                break
        if block.level > 0:
            headings.append(Heading(offset, block.level, cleaned))
        parts.append(cleaned)
        length = offset + len(cleaned)
        if length >= MAX_TEXT_CHARS:
            break
    return ExtractedText("\n\n".join(parts), tuple(headings))


def _truncate_at_word(text: str, limit: int) -> str:
    cut = text[:limit]
    # Prefer not to leave half a word at the very end of a capped document.
    if limit < len(text) and not text[limit].isspace() and " " in cut:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip()


def _split_blank_lines(text: str) -> Iterator[str]:
    yield from re.split(r"\n[ \t\r\f\v]*\n", text.replace("\r\n", "\n").replace("\r", "\n"))


def _plain_blocks(text: str) -> Iterator[_Block]:
    for para in _split_blank_lines(text):
        yield _Block(para)


def table_row_text(header: list[str] | None, cells: list[str]) -> str:
    """One table row as a readable line: ``"Region: EU; Limit: 500 EUR."`` (header labels each
    cell), or the cells joined with ``"; "`` when the table has no header row.  Never pipes."""
    parts: list[str] = []
    for i, cell in enumerate(cells):
        cell = " ".join(cell.split())
        if not cell:
            continue
        label = " ".join(header[i].split()).rstrip(":") if header and i < len(header) else ""
        parts.append(f"{label}: {cell}" if label and label.lower() != cell.lower() else cell)
    line = "; ".join(parts)
    if line and not line.endswith((".", "!", "?", ":", ";")):
        line += "."
    return line


def _table_lines(rows: list[list[tuple[str, bool]]]) -> list[str]:
    """A finished table's rows; a first row made only of <th> cells labels the rows below it."""
    if not rows:
        return []
    first = rows[0]
    if len(rows) > 1 and all(is_head for text, is_head in first if text) and any(h for _, h in first):
        header = [text for text, _ in first]
        return [line for row in rows[1:] if (line := table_row_text(header, [text for text, _ in row]))]
    return [line for row in rows if (line := table_row_text(None, [text for text, _ in row]))]


def _zip_guard(content: bytes, kind: str) -> None:
    try:
        with zipfile.ZipFile(io.BytesIO(content)) as archive:
            if sum(info.file_size for info in archive.infolist()) > MAX_DOCX_UNCOMPRESSED_BYTES:
                raise ExtractionError(f"{kind} inflates beyond the size limit")
    except zipfile.BadZipFile as exc:
        raise ExtractionError(f"unreadable {kind}: {exc}") from exc

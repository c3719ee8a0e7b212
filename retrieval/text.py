"""Text extraction: raw source bytes -> plain paragraphs plus heading positions.

Every supported media type is reduced to the same shape so that chunking, fingerprinting and
the answer writer never need to know where a document came from:

* paragraphs separated by exactly ``"\\n\\n"``, whitespace inside a paragraph collapsed to
  single spaces, no leading/trailing whitespace, Unicode NFC;
* each heading is its own paragraph, and ``headings`` records where it starts in ``text``.

The module is pure (no Django, no I/O beyond the bytes it is given) so it can run in a worker
or a test without setup.
"""

from __future__ import annotations

import html
import html.entities
import io
import logging
import re
import unicodedata
import zipfile
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from lxml import etree

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

SUPPORTED_MEDIA_TYPES = frozenset({MEDIA_PLAIN, MEDIA_MARKDOWN, MEDIA_HTML, MEDIA_CONFLUENCE, MEDIA_PDF, MEDIA_DOCX})


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


# --------------------------------------------------------------------------------------------
# Shared helpers


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


# --------------------------------------------------------------------------------------------
# Plain text and Markdown


def _plain_blocks(text: str) -> Iterator[_Block]:
    for para in _split_blank_lines(text):
        yield _Block(para)


_MD_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_MD_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_MD_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_MD_HRULE = re.compile(r"^ {0,3}([-*_])(?:[ \t]*\1){2,}[ \t]*$")
_MD_LIST = re.compile(r"^[ \t]*(?:[-*+]|\d{1,9}[.)])[ \t]+")
_MD_QUOTE = re.compile(r"^[ \t]*(?:>[ \t]?)+")
_MD_TABLE_SEP = re.compile(r"^[ \t]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*$")
_MD_REF_DEF = re.compile(r"^ {0,3}\[[^\]]+\]:[ \t]*\S+.*$")
_MD_COMMENT = re.compile(r"<!--.*?-->", re.DOTALL)
_MD_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)|!\[([^\]]*)\]\[[^\]]*\]")
_MD_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)|\[([^\]]*)\]\[[^\]]*\]")
_MD_AUTOLINK = re.compile(r"<((?:https?|mailto|ftp):[^>\s]+)>")
_MD_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>")
_MD_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
_MD_EMPHASIS = (
    re.compile(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1"),
    re.compile(r"~~(?=\S)(.+?)(?<=\S)~~"),
    # Single * or _ only at word edges, so snake_case_names and 2*3*4 survive.
    re.compile(r"(?<![\w*])\*(?=\S)([^*\n]+?)(?<=\S)\*(?![\w*])"),
    re.compile(r"(?<![\w_])_(?=\S)([^_\n]+?)(?<=\S)_(?![\w_])"),
)
_MD_ESCAPE = re.compile(r"\\([\\`*_{}\[\]()#+\-.!|>~])")


def _markdown_inline(line: str) -> str:
    # Code spans are kept verbatim: emphasis stripping inside them would corrupt code.
    out: list[str] = []
    pos = 0
    for m in _MD_CODE_SPAN.finditer(line):
        out.append(_markdown_prose(line[pos : m.start()]))
        out.append(m.group(2).strip())
        pos = m.end()
    out.append(_markdown_prose(line[pos:]))
    return "".join(out)


def _markdown_prose(text: str) -> str:
    text = _MD_IMAGE.sub(lambda m: m.group(1) or m.group(2) or "", text)
    text = _MD_LINK.sub(lambda m: m.group(1) or m.group(2) or "", text)
    text = _MD_AUTOLINK.sub(r"\1", text)
    text = _MD_TAG.sub("", text)
    for pattern in _MD_EMPHASIS:
        text = pattern.sub(lambda m: m.group(m.lastindex or 0), text)
    text = _MD_ESCAPE.sub(r"\1", text)
    return html.unescape(text)


def _markdown_blocks(text: str) -> Iterator[_Block]:
    # HTML comments never render, so their text must not reach the index (injection vector).
    text = _MD_COMMENT.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    para: list[str] = []
    fence: str | None = None
    code: list[str] = []

    def flush() -> Iterator[_Block]:
        if para:
            yield _Block(" ".join(para))
            para.clear()

    for raw in text.split("\n"):
        if fence is not None:
            if raw.strip().startswith(fence) and raw.strip().strip(fence[0]) == "":
                for piece in _split_blank_lines("\n".join(code)):
                    yield _Block(piece)
                code.clear()
                fence = None
            else:
                code.append(raw)
            continue
        fence_match = _MD_FENCE.match(raw)
        if fence_match:
            yield from flush()
            fence = fence_match.group(1)
            continue
        if not raw.strip():
            yield from flush()
            continue
        setext = _MD_SETEXT.match(raw)
        if setext and len(para) == 1:
            yield _Block(para.pop(), 1 if setext.group(1)[0] == "=" else 2)
            continue
        if _MD_HRULE.match(raw) or _MD_REF_DEF.match(raw) or _MD_TABLE_SEP.match(raw) and "-" in raw:
            yield from flush()
            continue
        atx = _MD_ATX.match(raw)
        if atx:
            yield from flush()
            yield _Block(_markdown_inline(atx.group(2) or ""), len(atx.group(1)))
            continue
        line = _MD_QUOTE.sub("", raw)
        if _MD_LIST.match(line):
            # Each list item is its own paragraph, as <li> is for HTML.
            yield from flush()
            line = _MD_LIST.sub("", line, count=1)
        stripped = line.strip()
        if stripped.startswith("|") or (stripped.endswith("|") and "|" in stripped[:-1]):
            yield from flush()
            cells = [_markdown_inline(c).strip() for c in stripped.strip("|").split("|")]
            yield _Block(" | ".join(cells))
            continue
        para.append(_markdown_inline(line))
    if fence is not None:  # unterminated fence: keep the code rather than lose it
        for piece in _split_blank_lines("\n".join(code)):
            yield _Block(piece)
    yield from flush()


# --------------------------------------------------------------------------------------------
# HTML and Confluence storage format: one tree walker over lxml elements

_DROP_HTML = frozenset(
    {
        "script", "style", "noscript", "template", "head", "title", "nav", "footer", "svg",
        "iframe", "object", "embed", "canvas", "select", "datalist", "button", "meta", "link",
    }
)  # fmt: skip
_DROP_CONFLUENCE = frozenset(
    {
        "ac:parameter", "ac:image", "ac:emoticon", "ac:placeholder", "ac:task-id", "ac:task-uuid",
        "ac:task-status", "ac:adf-attribute", "ac:adf-fallback", "ac:caption",
    }
)  # fmt: skip
_BLOCK = frozenset(
    {
        "html", "body", "p", "div", "section", "article", "main", "header", "aside", "blockquote",
        "ul", "ol", "li", "dl", "dt", "dd", "hr", "figure", "figcaption", "address", "details",
        "summary", "fieldset", "legend", "form", "center", "caption", "hgroup", "search",
        "ac:structured-macro", "ac:macro", "ac:rich-text-body", "ac:task-list", "ac:task",
        "ac:layout", "ac:layout-section", "ac:layout-cell", "ac:adf-node", "ac:adf-content",
        "ac:adf-extension",
    }
)  # fmt: skip
_PREFORMATTED = frozenset({"pre", "ac:plain-text-body"})
_HEADINGS = {f"h{i}": i for i in range(1, 7)}

_NAMESPACES = {
    "ac": "http://atlassian.com/content",
    "ri": "http://atlassian.com/resource/identifier",
    "at": "http://atlassian.com/template",
}
_NS_PREFIX = {uri: prefix for prefix, uri in _NAMESPACES.items()}
_NS_PREFIX["http://www.w3.org/1999/xhtml"] = ""

# Inline styles that make an element invisible.  Hidden text is dropped because readers cannot
# see it and because it is the classic place to plant prompt-injection instructions.
_HIDDEN_STYLE = re.compile(
    r"(?:^|;)\s*(?:display\s*:\s*none|visibility\s*:\s*hidden|opacity\s*:\s*0(?:\.0*)?\s*(?:!important)?\s*(?:;|$)"
    r"|font-size\s*:\s*0(?:\.0*)?(?:px|pt|em|rem|%)?\s*(?:!important)?\s*(?:;|$))",
    re.IGNORECASE,
)


def _tag(el: etree._Element) -> str | None:
    tag = el.tag
    if not isinstance(tag, str):  # comments, processing instructions, entities
        return None
    if tag.startswith("{"):
        uri, _, local = tag[1:].partition("}")
        prefix = _NS_PREFIX.get(uri)
        if prefix is None:
            return local.lower()
        return f"{prefix}:{local}".lower() if prefix else local.lower()
    return tag.lower()


def _attr(el: etree._Element, name: str) -> str | None:
    """Attribute lookup accepting both ``ri:foo`` as parsed by XML (namespaced) and by HTML."""
    if ":" in name:
        prefix, local = name.split(":", 1)
        value = el.get(f"{{{_NAMESPACES[prefix]}}}{local}")
        if value is not None:
            return value
    return el.get(name)


def _is_hidden(el: etree._Element) -> bool:
    if el.get("hidden") is not None:
        return True
    if (el.get("aria-hidden") or "").strip().lower() == "true":
        return True
    style = el.get("style")
    return bool(style and _HIDDEN_STYLE.search(style))


class _Builder:
    """Collects inline text into paragraphs; nested sinks capture heading and cell text."""

    def __init__(self) -> None:
        self.blocks: list[_Block] = []
        self.sinks: list[list[str]] = [[]]
        self.rows: list[list[str]] = []  # one entry per open <tr>, holding finished cells
        self.pre_depth = 0

    def text(self, value: str | None) -> None:
        if value:
            self.sinks[-1].append(value)

    def brk(self) -> None:
        if len(self.sinks) == 1:
            self.flush()
        else:
            self.sinks[-1].append(" ")

    def flush(self, split_blank_lines: bool = False) -> None:
        joined = "".join(self.sinks[0])
        self.sinks[0].clear()
        pieces = _split_blank_lines(joined) if split_blank_lines else (joined,)
        for piece in pieces:
            if piece.strip():
                self.blocks.append(_Block(piece))

    def push(self) -> None:
        if len(self.sinks) == 1:
            self.flush()
        self.sinks.append([])

    def pop(self) -> str:
        return " ".join("".join(self.sinks.pop()).split())

    def emit(self, text: str, level: int = 0) -> None:
        """A finished paragraph/heading, or plain text when nested inside a cell or heading."""
        if len(self.sinks) == 1:
            self.flush()
            if text.strip():
                self.blocks.append(_Block(text, level))
        else:
            self.sinks[-1].append(f" {text} ")


def _walk(root: etree._Element, confluence: bool) -> list[_Block]:
    """Iterative pre/post-order walk (deeply nested markup must not hit the recursion limit)."""
    b = _Builder()
    # (element, opening?, tag to close or None when the element was skipped)
    stack: list[tuple[etree._Element, bool, str | None]] = [(root, True, None)]
    while stack:
        el, opening, active = stack.pop()
        if opening:
            active = _open(el, b, confluence)
            stack.append((el, False, active))
            if active is not None:
                stack.extend((child, True, None) for child in reversed(el))
        else:
            if active is not None:
                _close(active, b)
            if el is not root:
                b.text(el.tail)  # the tail belongs to the parent, even for skipped elements
    b.flush()
    return b.blocks


def _open(el: etree._Element, b: _Builder, confluence: bool) -> str | None:
    """Handle an opening tag; return the tag if its children and close handler should run."""
    tag = _tag(el)
    if tag is None or tag in _DROP_HTML or _is_hidden(el):
        return None
    if tag.startswith("ri:") or (confluence and tag in _DROP_CONFLUENCE):
        return None
    if tag in ("input", "img"):
        return None
    if tag in _HEADINGS or tag in ("tr", "td", "th"):
        b.push()
    elif tag == "table":
        b.brk()
    elif tag in _PREFORMATTED:
        b.brk()
        b.pre_depth += 1
    elif tag in _BLOCK:
        b.brk()
    elif tag == "br":
        b.text("\n" if b.pre_depth else " ")
    elif tag == "time" and not (el.text or "").strip() and len(el) == 0:
        b.text(el.get("datetime"))
    elif tag == "ac:link":
        body = [c for c in el if _tag(c) in ("ac:link-body", "ac:plain-text-link-body")]
        if not any("".join(c.itertext()).strip() for c in body):
            # No visible body: Confluence renders the target's title (or file name) instead.
            b.text(_link_target_title(el))
            return None
    if tag == "tr":
        b.rows.append([])
    b.text(el.text)
    return tag


def _close(tag: str, b: _Builder) -> None:
    if tag in _HEADINGS:
        b.emit(b.pop(), _HEADINGS[tag])
    elif tag in ("td", "th"):
        cell = b.pop()
        if b.rows:
            b.rows[-1].append(cell)
        else:  # stray cell outside a row: keep its text
            b.emit(cell)
    elif tag == "tr":
        b.pop()  # text directly inside <tr> but outside cells is whitespace
        cells = b.rows.pop()
        if any(cells):
            b.emit(" | ".join(cells))
    elif tag in _PREFORMATTED:
        b.pre_depth -= 1
        if len(b.sinks) == 1:
            b.flush(split_blank_lines=True)
        else:
            b.brk()
    elif tag in _BLOCK or tag == "table":
        b.brk()


def _link_target_title(link: etree._Element) -> str:
    for child in link:
        tag = _tag(child)
        if tag in ("ri:page", "ri:blog-post"):
            return _attr(child, "ri:content-title") or ""
        if tag == "ri:attachment":
            return _attr(child, "ri:filename") or ""
        if tag == "ri:space":
            return _attr(child, "ri:space-key") or ""
        if tag == "ri:url":
            return _attr(child, "ri:value") or ""
    return ""


_XML_DECL = re.compile(r"^\s*<\?xml[^>]*\?>", re.IGNORECASE)


def _html_blocks(text: str) -> list[_Block]:
    # lxml refuses str input that carries an XML encoding declaration (XHTML documents).
    text = _XML_DECL.sub("", text, count=1)
    if not text.strip():
        return []
    # huge_tree lifts libxml2's nesting limit (256), past which it silently drops the rest of
    # the page; the HTML parser never expands entities, so this opens no expansion attack.
    parser = etree.HTMLParser(remove_comments=True, remove_pis=True, no_network=True, huge_tree=True)
    try:
        root = etree.fromstring(text, parser)
    except (etree.LxmlError, ValueError) as exc:
        raise ExtractionError(f"unparseable HTML: {exc}") from exc
    _raise_on_resource_limit(parser)
    if root is None:
        return []
    return _walk(root, confluence=False)


def _raise_on_resource_limit(parser: etree._FeedParser) -> None:
    # Past libxml2's hard limits (e.g. nesting deeper than 2048) the parser silently drops the
    # rest of the document; indexing a silently truncated page is worse than failing loudly.
    for error in parser.error_log:
        if error.type_name == "ERR_RESOURCE_LIMIT":
            raise ExtractionError(f"document exceeds parser limits: {error.message}")


_CDATA = re.compile(r"(<!\[CDATA\[.*?\]\]>)", re.DOTALL)
_ENTITY = re.compile(r"&([A-Za-z][A-Za-z0-9]*);")
_XML_ENTITIES = frozenset({"amp", "lt", "gt", "quot", "apos"})


def _html_entities_to_numeric(fragment: str) -> str:
    def repl(m: re.Match[str]) -> str:
        name = m.group(1)
        if name in _XML_ENTITIES:
            return m.group(0)
        value = html.entities.html5.get(name + ";")
        if value is None:
            return "&amp;" + name + ";"  # unknown entity: keep it as literal text
        return "".join(f"&#{ord(ch)};" for ch in value)

    return _ENTITY.sub(repl, fragment)


def _confluence_blocks(text: str) -> list[_Block]:
    text = _XML_DECL.sub("", text, count=1)
    if not text.strip():
        return []
    # Storage format is an XHTML *fragment*: several roots, undeclared ac:/ri: prefixes and
    # HTML named entities (&nbsp;) that XML does not know.  Wrap it in a root that declares the
    # prefixes and turn named entities into numeric ones, leaving CDATA bodies (code) alone.
    pieces = _CDATA.split(text)
    body = "".join(p if i % 2 else _html_entities_to_numeric(p) for i, p in enumerate(pieces))
    decls = " ".join(f'xmlns:{prefix}="{uri}"' for prefix, uri in _NAMESPACES.items())
    wrapped = f"<cairn-root {decls}>{body}</cairn-root>"
    root = None
    for recover in (False, True):
        parser = etree.XMLParser(
            # Entities are never resolved and no DTD is loaded, so lifting the nesting/size
            # limits (huge_tree) cannot enable entity-expansion attacks.
            recover=recover,
            resolve_entities=False,
            no_network=True,
            load_dtd=False,
            huge_tree=True,
        )
        try:
            root = etree.fromstring(wrapped.encode("utf-8"), parser)
        except etree.XMLSyntaxError:
            continue
        _raise_on_resource_limit(parser)
        if root is not None:
            break
    if root is None:
        raise ExtractionError("unparseable Confluence storage format")
    return _walk(root, confluence=True)


# --------------------------------------------------------------------------------------------
# PDF

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
        blocks.extend(_Block(p) for p in _pdf_paragraphs(lines))
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


# --------------------------------------------------------------------------------------------
# DOCX

_W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_HEADING_STYLE = re.compile(r"^heading\s*([1-9])$", re.IGNORECASE)


def _docx_blocks(content: bytes) -> list[_Block]:
    import docx
    from docx.table import Table
    from docx.text.paragraph import Paragraph

    try:
        with zipfile.ZipFile(io.BytesIO(content)) as archive:
            if sum(info.file_size for info in archive.infolist()) > MAX_DOCX_UNCOMPRESSED_BYTES:
                raise ExtractionError("DOCX inflates beyond the size limit")
        document = docx.Document(io.BytesIO(content))
    except ExtractionError:
        raise
    except Exception as exc:  # zipfile/lxml/python-docx raise many unrelated types
        raise ExtractionError(f"unreadable DOCX: {exc}") from exc

    blocks: list[_Block] = []
    body = document.element.body

    def visit(container: Iterable[etree._Element], parent: object) -> None:
        for child in container:
            if child.tag == f"{{{_W_NS}}}p":
                paragraph = Paragraph(child, parent)  # type: ignore[arg-type]
                blocks.append(_Block(_docx_paragraph_text(paragraph), _docx_heading_level(paragraph)))
            elif child.tag == f"{{{_W_NS}}}tbl":
                table = Table(child, parent)  # type: ignore[arg-type]
                blocks.extend(_Block(row) for row in _docx_table_rows(table))
            elif child.tag == f"{{{_W_NS}}}sdt":
                # Content controls (cover pages, templates) wrap ordinary paragraphs and tables.
                content_el = child.find(f"{{{_W_NS}}}sdtContent")
                if content_el is not None:
                    visit(content_el, parent)

    try:
        visit(body, document._body)
    except Exception as exc:  # malformed parts surface as arbitrary errors
        raise ExtractionError(f"unreadable DOCX body: {exc}") from exc
    return blocks


def _docx_heading_level(paragraph: object) -> int:
    style = getattr(paragraph, "style", None)
    name = (getattr(style, "name", None) or "").strip()
    if name.lower() == "title":
        return 1
    m = _HEADING_STYLE.match(name)
    return int(m.group(1)) if m else 0


def _docx_paragraph_text(paragraph: object) -> str:
    from docx.text.hyperlink import Hyperlink
    from docx.text.run import Run

    def visible(run: Run) -> str:
        # Hidden ("vanish") runs are invisible in Word; like hidden HTML they are dropped.
        if run.font.hidden or (run.style is not None and run.style.font.hidden):
            return ""
        return run.text

    parts: list[str] = []
    for item in paragraph.iter_inner_content():  # type: ignore[attr-defined]
        if isinstance(item, Run):
            parts.append(visible(item))
        elif isinstance(item, Hyperlink):
            parts.extend(visible(run) for run in item.runs)
    return "".join(parts)


def _docx_table_rows(table: object) -> list[str]:
    rows: list[str] = []
    for row in table.rows:  # type: ignore[attr-defined]
        cells: list[str] = []
        previous = None
        for cell in row.cells:
            # Merged cells are repeated once per grid column; keep each physical cell once.
            if previous is not None and cell._tc is previous:
                continue
            previous = cell._tc
            texts = [_docx_paragraph_text(p) for p in cell.paragraphs]
            texts.extend(r for t in cell.tables for r in _docx_table_rows(t))
            cells.append(" ".join(" ".join(texts).split()))
        if any(cells):
            rows.append(" | ".join(cells))
    return rows


__all__ = [
    "MAX_TEXT_CHARS",
    "ExtractedText",
    "ExtractionError",
    "Heading",
    "UnsupportedMediaType",
    "extract_text",
]

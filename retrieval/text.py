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

import functools
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
from typing import Any

from lxml import etree

from retrieval.tables import table_statements

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


# Jekyll front matter ("---\ntitle: ...\n---") is page metadata, never page text.
_FRONT_MATTER = re.compile(r"\A\ufeff?---[ \t]*\n.*?\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
# Liquid (Jekyll) template tags are instructions to the site generator, not text a reader sees.
# {% comment %} bodies never render; a Slack channel tag renders as the channel's name.
_LIQUID_COMMENT = re.compile(r"\{%-?\s*comment\s*-?%\}.*?\{%-?\s*endcomment\s*-?%\}", re.DOTALL)
_LIQUID_SLACK = re.compile(r"\{%-?\s*slack_channel\s+[\"']([^\"']+)[\"'][^%]*?-?%\}")
_LIQUID_TAG = re.compile(r"\{%.*?%\}", re.DOTALL)
_LIQUID_OUTPUT = re.compile(r"\{\{.*?\}\}", re.DOTALL)


def strip_liquid(text: str) -> str:
    """Remove Liquid/Jekyll tags (``{% page "…" %}``, ``{% include … %}``, ``{{ var }}``).

    ``[text]({% page "/x/" %})`` keeps its link text (the target becomes empty), a
    ``{% slack_channel "name" %}`` becomes ``#name``, ``{% comment %}…{% endcomment %}`` goes entirely.
    """
    text = _LIQUID_COMMENT.sub("", text)
    text = _LIQUID_SLACK.sub(lambda m: "#" + m.group(1).lstrip("#"), text)
    text = _LIQUID_TAG.sub("", text)
    return _LIQUID_OUTPUT.sub("", text)


@functools.cache
def _markdown_parser() -> Any:
    from markdown_it import MarkdownIt

    # CommonMark plus the GitHub table and strikethrough extensions; raw HTML is passed through
    # and then goes through the same HTML walker (hidden elements, scripts dropped) as any page.
    return MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])


def render_markdown(text: str) -> str:
    """Markdown (front matter and Liquid tags removed) to HTML, with a maintained CommonMark parser."""
    text = _FRONT_MATTER.sub("", text.replace("\r\n", "\n").replace("\r", "\n"), count=1)
    return str(_markdown_parser().render(strip_liquid(text)))


def _markdown_blocks(text: str) -> list[_Block]:
    # Rendered to HTML once, then read like any HTML page: emphasis, links (their text kept),
    # entities, tables and inline HTML all follow one set of rules.  HTML comments are dropped
    # by the HTML parser, so their text never reaches the index (injection vector).
    rendered = render_markdown(text)
    root = _html_root(rendered)
    if root is None:
        return []
    tidy_markdown_residue(root)
    return _walk(root, confluence=False)


# What a CommonMark parser leaves of source typos ("\\[label]({% page %})", an unpaired "**"): a
# browser shows it verbatim, but it is markup noise, not content.  Code keeps it.
_MD_EMPTY_LINK = re.compile(r"\[([^\[\]]*)\]\(\s*\)")
_MD_STRAY_STRONG = re.compile(r"\*\*")
_MD_STRAY_TAG = re.compile(
    r"</?(?:div|span|p|br|strong|em|b|i|a|td|tr|th|table|tbody|thead|li|ul|ol|h[1-6]|sup|sub|details|summary|img)"
    r"\b[^<>]*>",
    re.IGNORECASE,
)
# A table the parser could not read (kramdown's header-less "|---|---|" form, rows run together):
# its separator rows go and its cell pipes become "; ".
_MD_TABLE_RULE = re.compile(r"\|?(?:[ \t]*:?-{3,}:?[ \t]*\|)+")
_MD_CELL_PIPES = re.compile(r"\s*\|(?:\s*\|)*\s*")


def tidy_markdown_residue(root: etree._Element) -> None:
    """Remove leftover Markdown markup from the text of a rendered page (outside pre/code)."""

    def in_code(el: etree._Element | None) -> bool:
        while el is not None:
            if isinstance(el.tag, str) and el.tag.lower() in ("pre", "code"):
                return True
            el = el.getparent()
        return False

    def tidy(value: str, table: bool) -> str:
        value = _MD_STRAY_TAG.sub("", _MD_STRAY_STRONG.sub("", _MD_EMPTY_LINK.sub(r"\1", value)))
        if table:
            value = _MD_CELL_PIPES.sub("; ", _MD_TABLE_RULE.sub(" ", value))
        return value

    # Paragraphs holding an unparsed table; their pipes may sit in any text node (bold cells, <br>).
    tables: set[etree._Element] = set()
    for el in root.iter("p", "li"):
        if _MD_TABLE_RULE.search("".join(el.itertext())):
            tables.update(el.iter())
    for el in root.iter():
        if not isinstance(el.tag, str):
            continue
        if el.text and not in_code(el):
            el.text = tidy(el.text, el in tables)
        if el.tail and not in_code(el.getparent()):
            el.tail = tidy(el.tail, el.getparent() in tables)


_TITLE_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9:-]*(?:\s[^<>]*)?/?>")
_TITLE_EMPHASIS = (
    re.compile(r"(\*\*|__|~~|`)(?=\S)(.+?)(?<=\S)\1"),
    # Single * or _ only at word edges, so snake_case_names survive.
    re.compile(r"(?<![\w*])(\*)(?=\S)([^*]+?)(?<=\S)\*(?![\w*])"),
    re.compile(r"(?<![\w_])(_)(?=\S)([^_]+?)(?<=\S)_(?![\w_])"),
)


def clean_title(title: str) -> str:
    """A document title as a reader sees it: no tags (``<em>``), entities (``&amp;``), Markdown
    emphasis (``**``) or Liquid tags; whitespace collapsed."""
    text = strip_liquid(title or "")
    text = _TITLE_TAG.sub("", text)
    text = html.unescape(text)
    for pattern in _TITLE_EMPHASIS:  # outer markers first: "**_not_**"
        text = pattern.sub(lambda m: m.group(2), text)
    return _clean(text)


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
        self.rows: list[list[tuple[str, bool]]] = []  # one entry per open <tr>: finished (cell, is <th>)
        self.tables: list[list[list[tuple[str, bool]]]] = []  # one entry per open <table>: its rows
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
        b.tables.append([])
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
            b.rows[-1].append((cell, tag == "th"))
        else:  # stray cell outside a row: keep its text
            b.emit(cell)
    elif tag == "tr":
        b.pop()  # text directly inside <tr> but outside cells is whitespace
        cells = b.rows.pop()
        if any(text for text, _ in cells):
            if b.tables:
                b.tables[-1].append(cells)
            else:  # a row outside any table: no header to label it with
                b.emit(table_row_text(None, [text for text, _ in cells]))
    elif tag == "table":
        for line in _table_lines(b.tables.pop() if b.tables else []):
            b.emit(line)
        b.brk()
    elif tag in _PREFORMATTED:
        b.pre_depth -= 1
        if len(b.sinks) == 1:
            b.flush(split_blank_lines=True)
        else:
            b.brk()
    elif tag in _BLOCK:
        b.brk()


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
    root = _html_root(text)
    if root is None:
        return []
    return _walk(root, confluence=False)


def _html_root(text: str) -> etree._Element | None:
    # lxml refuses str input that carries an XML encoding declaration (XHTML documents).
    text = _XML_DECL.sub("", text, count=1)
    if not text.strip():
        return None
    # huge_tree lifts libxml2's nesting limit (256), past which it silently drops the rest of
    # the page; the HTML parser never expands entities, so this opens no expansion attack.
    parser = etree.HTMLParser(remove_comments=True, remove_pis=True, no_network=True, huge_tree=True)
    try:
        root = etree.fromstring(text, parser)
    except (etree.LxmlError, ValueError) as exc:
        raise ExtractionError(f"unparseable HTML: {exc}") from exc
    _raise_on_resource_limit(parser)
    return root


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
        # Financial-statement rows gain their row and column labels (retrieval/tables.py).
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


# --------------------------------------------------------------------------------------------
# Spreadsheets, presentations, CSV (issue 15: attachments of every readable office format)

# One row becomes one paragraph ("cell | cell | cell"), like DOCX tables; a sheet or slide title
# becomes a heading so chunks keep their context.  Both OOXML formats are zips, guarded like DOCX.
MAX_ROWS_PER_SHEET = 50_000


def _zip_guard(content: bytes, kind: str) -> None:
    try:
        with zipfile.ZipFile(io.BytesIO(content)) as archive:
            if sum(info.file_size for info in archive.infolist()) > MAX_DOCX_UNCOMPRESSED_BYTES:
                raise ExtractionError(f"{kind} inflates beyond the size limit")
    except zipfile.BadZipFile as exc:
        raise ExtractionError(f"unreadable {kind}: {exc}") from exc


def _cell_text(value: object) -> str:
    if value is None:
        return ""
    return " ".join(str(value).split())


def _xlsx_blocks(content: bytes, params: dict[str, str]) -> list[_Block]:
    import openpyxl

    _zip_guard(content, "XLSX")
    try:
        # read_only streams rows; data_only takes the cached value of a formula, not its source.
        book = openpyxl.load_workbook(io.BytesIO(content), read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises many unrelated types on a bad file
        raise ExtractionError(f"unreadable XLSX: {exc}") from exc
    blocks: list[_Block] = []
    total = 0
    try:
        for sheet in book.worksheets:
            if getattr(sheet, "sheet_state", "visible") != "visible":
                continue  # hidden sheets are invisible in Excel, like hidden HTML
            blocks.append(_Block(sheet.title, 2))
            for n, row in enumerate(sheet.iter_rows(values_only=True)):
                if n >= MAX_ROWS_PER_SHEET or total > MAX_TEXT_CHARS:
                    break
                cells = [_cell_text(v) for v in row]
                while cells and not cells[-1]:
                    cells.pop()
                if any(cells):
                    line = " | ".join(cells)
                    total += len(line)
                    blocks.append(_Block(line))
    except Exception as exc:
        raise ExtractionError(f"unreadable XLSX sheet: {exc}") from exc
    finally:
        book.close()
    return blocks


def _pptx_blocks(content: bytes, params: dict[str, str]) -> list[_Block]:
    import pptx

    _zip_guard(content, "PPTX")
    try:
        deck = pptx.Presentation(io.BytesIO(content))
    except Exception as exc:
        raise ExtractionError(f"unreadable PPTX: {exc}") from exc
    blocks: list[_Block] = []

    def shape_blocks(shapes: Iterable[object]) -> Iterator[_Block]:
        for shape in shapes:
            if getattr(shape, "has_text_frame", False):
                for paragraph in shape.text_frame.paragraphs:  # type: ignore[attr-defined]
                    yield _Block(paragraph.text)
            if getattr(shape, "has_table", False):
                for row in shape.table.rows:  # type: ignore[attr-defined]
                    cells = [_cell_text(cell.text) for cell in row.cells]
                    if any(cells):
                        yield _Block(" | ".join(cells))
            if hasattr(shape, "shapes"):  # group shapes nest others
                yield from shape_blocks(shape.shapes)  # type: ignore[attr-defined]

    try:
        for number, slide in enumerate(deck.slides, start=1):
            title_shape = slide.shapes.title
            title = _cell_text(title_shape.text) if title_shape is not None and title_shape.has_text_frame else ""
            blocks.append(_Block(title or f"Slide {number}", 2))
            others = [s for s in slide.shapes if title_shape is None or s.shape_id != title_shape.shape_id]
            blocks.extend(shape_blocks(others))
            if slide.has_notes_slide:
                notes = slide.notes_slide.notes_text_frame
                if notes is not None and notes.text.strip():
                    blocks.append(_Block(notes.text))
    except Exception as exc:
        raise ExtractionError(f"unreadable PPTX slide: {exc}") from exc
    return blocks


def _csv_blocks(content: bytes, params: dict[str, str]) -> list[_Block]:
    import csv

    decoded = _decode(content, params.get("charset"))
    try:
        dialect: type[csv.Dialect] | csv.Dialect = csv.Sniffer().sniff(decoded[:4096], delimiters=",;\t|")
    except csv.Error:
        dialect = csv.excel
    blocks: list[_Block] = []
    try:
        for n, row in enumerate(csv.reader(io.StringIO(decoded), dialect)):
            if n >= MAX_ROWS_PER_SHEET:
                break
            cells = [_cell_text(v) for v in row]
            if any(cells):
                blocks.append(_Block(" | ".join(cells)))
    except csv.Error as exc:
        raise ExtractionError(f"unreadable CSV: {exc}") from exc
    return blocks


_OFFICE_EXTRACTORS = {MEDIA_XLSX: _xlsx_blocks, MEDIA_PPTX: _pptx_blocks, MEDIA_CSV: _csv_blocks}


# --------------------------------------------------------------------------------------------
# Files that carry no text (issue 15): images, archives, formats without an extractor


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


__all__ = [
    "MAX_TEXT_CHARS",
    "ExtractedText",
    "ExtractionError",
    "Heading",
    "UnsupportedMediaType",
    "extract_text",
    "has_extractor",
    "metadata_text",
]

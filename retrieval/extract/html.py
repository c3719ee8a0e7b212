"""HTML and Confluence storage format to blocks (headings, paragraphs, table rows with their labels)."""

from __future__ import annotations

import html
import html.entities
import re

from lxml import etree

from retrieval.extract.base import ExtractionError, _Block, _split_blank_lines, _table_lines, table_row_text

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


# A parent list item this short is a label for the items nested in it, not a statement of its own.
_INTRODUCING_ITEM_MAX_WORDS = 6


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

    def introduce(self) -> None:
        """A short list item's text before the list nested in it introduces that list: "Ten days to two weeks"
        over "Conference events that cost less than $2500" reads "Ten days to two weeks:" once the items are
        paragraphs of their own, as a list's introduction does (answers/writers/extractive.group_list_blocks).
        An item that is an instruction of its own ("Go to otp.gsa.gov and enter your ENT info to get the
        Tokencode", with a note nested under it) stays as it is."""
        if len(self.sinks) != 1:
            return
        text = "".join(self.sinks[0]).rstrip()
        if len(text.split()) > _INTRODUCING_ITEM_MAX_WORDS:
            return
        if text and (text[-1].isalnum() or text.endswith((")", "*", "_", '"', "'"))):
            self.sinks[0][:] = [text, ":"]

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
        parent = el.getparent()
        if tag in ("ul", "ol") and parent is not None and _tag(parent) == "li":
            b.introduce()
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

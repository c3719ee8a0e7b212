"""Markdown to clean text: front matter and Liquid/Jekyll tags removed, CommonMark rendered, then walked as HTML."""

from __future__ import annotations

import functools
import html
import html.entities
import re
from typing import Any

from lxml import etree

from retrieval.extract.base import _Block, _clean
from retrieval.extract.html import _html_root, _walk

# Jekyll front matter ("---\ntitle: ...\n---") is page metadata, never page text.
_FRONT_MATTER = re.compile(r"\A\ufeff?---[ \t]*\n.*?\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)


# Liquid (Jekyll) template tags are instructions to the site generator, not text a reader sees.
# {% comment %} bodies never render; a Slack channel tag renders as the channel's name.
_LIQUID_COMMENT = re.compile(r"\{%-?\s*comment\s*-?%\}.*?\{%-?\s*endcomment\s*-?%\}", re.DOTALL)


_LIQUID_SLACK = re.compile(r"\{%-?\s*slack_channel\s+[\"']([^\"']+)[\"'][^%]*?-?%\}")


_LIQUID_TAG = re.compile(r"\{%.*?%\}", re.DOTALL)


# "[travel-guide-3]: {% page "/travel-and-leave/…/" %}": a reference definition whose target is a Liquid tag.  Its
# target must stay a destination ("<>", empty), or the definition is no longer one and every "[text][travel-guide-3]"
# that uses it stays literal brackets in the text.
_LIQUID_REFERENCE = re.compile(r"(?m)^( {0,3}\[[^\]\n]+\]:)[ \t]*\{%.*?%\}[ \t]*$")


_LIQUID_OUTPUT = re.compile(r"\{\{.*?\}\}", re.DOTALL)


def strip_liquid(text: str) -> str:
    """Remove Liquid/Jekyll tags (``{% page "…" %}``, ``{% include … %}``, ``{{ var }}``).

    ``[text]({% page "/x/" %})`` and ``[text][ref]`` with ``[ref]: {% page "/x/" %}`` keep their link text (the
    target becomes empty), a
    ``{% slack_channel "name" %}`` becomes ``#name``, ``{% comment %}…{% endcomment %}`` goes entirely.
    """
    text = _LIQUID_COMMENT.sub("", text)
    text = _LIQUID_SLACK.sub(lambda m: "#" + m.group(1).lstrip("#"), text)
    text = _LIQUID_REFERENCE.sub(r"\1 <>", text)
    text = _LIQUID_TAG.sub("", text)
    return _LIQUID_OUTPUT.sub("", text)


@functools.cache
def _markdown_parser() -> Any:
    from markdown_it import MarkdownIt

    # CommonMark plus the GitHub table and strikethrough extensions; raw HTML is passed through
    # and then goes through the same HTML walker (hidden elements, scripts dropped) as any page.
    return MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])


# kramdown's header IDs and attribute lists ("## Set up {#set-up-phase-of-engagements}", "{: .usa-button}"): Jekyll
# reads them as attributes, CommonMark leaves them in the text (and in the heading a sentence is cited under).
_KRAMDOWN_ATTRIBUTES = re.compile(r"(?m)[ \t]*\{(?:#{1,2}[^\s{}]+|:[^{}\n]*)\}[ \t]*$")


def render_markdown(text: str) -> str:
    """Markdown (front matter, Liquid tags and kramdown attributes removed) to HTML, with a maintained CommonMark
    parser."""
    text = _FRONT_MATTER.sub("", text.replace("\r\n", "\n").replace("\r", "\n"), count=1)
    return str(_markdown_parser().render(_KRAMDOWN_ATTRIBUTES.sub("", strip_liquid(text))))


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

"""Raw source markup never reaches indexed text.

Here: every handbook page through the demo's Confluence exporter and the storage-format extractor.
The ingested corpus (handbook pages through the Confluence connector, a 10-Q through the SharePoint
connector, chunks and titles) is checked with ``markup_in`` at the end of
``test_demo_sources.py``, which already pays for that sync."""

from __future__ import annotations

import json
import re
from pathlib import Path

import lxml.html
from django.conf import settings as django_settings

from connectors.demo.exports import markdown_to_storage, validate_storage
from retrieval.extract import MEDIA_CONFLUENCE, extract_text

DATA = Path(django_settings.CAIRN["DEMO_DATA_DIR"])
HTML_TAG = re.compile(
    r"</?(?:a|b|i|u|em|strong|p|div|span|br|td|tr|th|table|tbody|li|ul|ol|h[1-6]|img|sup|details|summary)\b[^<>]*>",
    re.IGNORECASE,
)
MARKUP = {
    # Opening Markdown emphasis; a filing's footnote markers ("32.1**", "** Furnished herewith") are text.
    "emphasis": re.compile(r"(?:^|[\s(\[])\*\*[^\s*]"),
    "liquid": re.compile(r"\{%|%\}"),
    "markdown link": re.compile(r"\]\("),
    "reference link": re.compile(r"\]\[[^\]\n]+\]"),
    "kramdown attribute": re.compile(r"\{#{1,2}[\w(-]|\{:"),
    "table pipe": re.compile(r"(?m)^\s*\||\|\s*$|\|\s*-{3}"),
    "html tag": HTML_TAG,
    "entity": re.compile(r"&(?:amp|lt|gt|quot|nbsp|#\d+);"),
}


def markup_in(text: str) -> list[str]:
    return [name for name, pattern in MARKUP.items() if pattern.search(text)]


def test_every_handbook_page_exports_as_well_formed_storage_without_markup_outside_code() -> None:
    pages = [json.loads(line) for line in (DATA / "18f_handbook" / "pages_current.jsonl").read_text().splitlines()]
    assert len(pages) == 246
    dirty = {}
    for page in pages:
        body = markdown_to_storage(page["text"])
        validate_storage(body)  # raises on anything that is not well-formed XHTML
        # Code blocks quote markup on purpose (the handbook documents its own shortcodes); the rest may not.
        root = lxml.html.fragment_fromstring(body or "<p></p>", create_parent="div")
        for code in root.xpath(".//pre|.//code"):
            code.drop_tree()
        prose = "".join(lxml.html.tostring(child, encoding="unicode") for child in root)
        found = markup_in(extract_text(prose.encode(), MEDIA_CONFLUENCE).text)
        if found:
            dirty[page["id"]] = found
    assert dirty == {}

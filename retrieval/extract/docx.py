"""DOCX to paragraphs, headings and table rows with python-docx (zip-bomb bounded)."""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Iterable

from lxml import etree

from retrieval.extract.base import MAX_DOCX_UNCOMPRESSED_BYTES, ExtractionError, _Block

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

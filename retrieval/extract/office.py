"""Spreadsheets and slides: XLSX (openpyxl), PPTX (python-pptx) and CSV to readable rows."""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator

from retrieval.extract.base import MAX_TEXT_CHARS, ExtractionError, _Block, _decode, _zip_guard

# One row becomes one paragraph ("cell | cell | cell"), like DOCX tables; a sheet or slide title
# becomes a heading so chunks keep their context.  Both OOXML formats are zips, guarded like DOCX.
MAX_ROWS_PER_SHEET = 50_000


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

"""What a document is about: its entity and the reporting period it describes.

A question about "Apple's revenue in Q2 2023" is about a company and a fiscal period, not
about documents *updated* in April-June 2023.  This module gives ingestion the facts it needs
to record that, deterministically and without a model:

* ``ENTITIES``: a small built-in catalogue of named entities (companies with their ticker
  and registrant names, products with the company that makes them) and each company's fiscal
  calendar.  Tenants add their own surface forms through ``EntityAlias`` (answers app); this
  catalogue only covers entities whose identity is public (listed companies and their product
  lines), so it is the same for every tenant.
* ``describe_document``: reads a filing's cover page ("FORM 10-Q", "For the quarterly period
  ended July 1, 2023", the registrant's exact name) into ``Document.about``:
  ``{"entity": "Apple", "kind": "company", "form": "10-Q", "period_end": "2023-07-01",
  "fiscal_year": 2023, "fiscal_quarter": 3, "calendar_year": 2023, "calendar_quarter": 2}``.

Fiscal quarters come from the company's fiscal-year end month (Apple: September, Microsoft:
June, NVIDIA: January); the fiscal year is the calendar year in which that fiscal year ends
(NVIDIA's quarter ended October 29, 2023 is Q3 of fiscal 2024).  Period ends within a few days
of a month end (Apple's July 1, NVIDIA's October 29) are counted in the month they close.

This lives in ``retrieval`` because ingestion needs it; ``answers`` imports it, never the
other way round (import-linter layers).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

__all__ = [
    "ENTITIES",
    "Entity",
    "about_period_key",
    "catalogue_aliases",
    "describe_document",
    "entity_by_name",
    "fiscal_quarter_of",
]


@dataclass(frozen=True)
class Entity:
    name: str  # canonical
    kind: str  # "company" | "product"
    aliases: tuple[str, ...] = ()
    parent: str = ""  # a product's company
    fiscal_year_end_month: int = 12  # companies only


ENTITIES: tuple[Entity, ...] = (
    Entity("Apple", "company", ("Apple Inc.", "Apple Inc", "AAPL"), fiscal_year_end_month=9),
    Entity("Microsoft", "company", ("Microsoft Corporation", "MSFT"), fiscal_year_end_month=6),
    Entity("NVIDIA", "company", ("NVIDIA Corporation", "Nvidia", "NVDA"), fiscal_year_end_month=1),
    Entity(
        "Amazon", "company", ("Amazon.com", "Amazon.com, Inc.", "AMAZON.COM, INC.", "AMZN"), fiscal_year_end_month=12
    ),  # fmt: skip
    Entity("Intel", "company", ("Intel Corporation", "INTC"), fiscal_year_end_month=12),
    Entity("iPhone", "product", ("iPhones",), parent="Apple"),
    Entity("iPad", "product", ("iPads",), parent="Apple"),
    Entity("AWS", "product", ("Amazon Web Services",), parent="Amazon"),
    Entity("Azure", "product", ("Microsoft Azure",), parent="Microsoft"),
    Entity("Xbox", "product", (), parent="Microsoft"),
    Entity("GeForce", "product", (), parent="NVIDIA"),
)
_BY_NAME = {e.name.casefold(): e for e in ENTITIES}
_SURFACES = {s.casefold(): e for e in ENTITIES for s in (e.name, *e.aliases)}


def entity_by_name(name: str) -> Entity | None:
    """The catalogue entry for a canonical name or any of its aliases (case-insensitive)."""
    key = name.strip().casefold()
    return _BY_NAME.get(key) or _SURFACES.get(key)


def catalogue_aliases() -> dict[str, str]:
    """Surface form -> canonical name, for the query parser (a tenant's own aliases win)."""
    return {s: e.name for e in ENTITIES for s in (e.name, *e.aliases)}


# --------------------------------------------------------------------------- periods


def _month_closing(d: date) -> tuple[int, int]:
    """(year, month) a period end belongs to: 52/53-week calendars end a few days off a month end."""
    if d.day <= 7:
        prev = d.replace(day=1) - timedelta(days=1)
        return prev.year, prev.month
    return d.year, d.month


def fiscal_quarter_of(period_end: date, fiscal_year_end_month: int) -> tuple[int, int]:
    """(fiscal year, fiscal quarter) of a quarter ending on ``period_end``."""
    year, month = _month_closing(period_end)
    months_after_fy_end = (month - fiscal_year_end_month) % 12 or 12
    quarter = min(4, max(1, round(months_after_fy_end / 3)))
    fiscal_year = year if month <= fiscal_year_end_month else year + 1
    return fiscal_year, quarter


def about_period_key(about: dict[str, Any]) -> str:
    """A sortable key for the period a document describes ("" when it has none)."""
    return str(about.get("period_end") or "")


_MONTHS = {m: i for i, m in enumerate(
    ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
     "november", "december"], start=1)}  # fmt: skip
_FORM_RE = re.compile(r"\bFORM\s+(10-Q|10-K)\b")
_PERIOD_RE = re.compile(
    r"for\s+the\s+(?:quarterly\s+period|fiscal\s+year|fiscal\s+quarter|quarter)\s+ended\s+"
    r"(?P<mon>[A-Za-z]+)\s+(?P<day>\d{1,2}),?\s*(?P<year>(?:19|20)\d{2})",
    re.IGNORECASE,
)
_REGISTRANT_RE = re.compile(r"([^\n]{2,80})\n\s*\(\s*exact\s+name\s+of\s+registrant", re.IGNORECASE)
_COVER_CHARS = 6000


def describe_document(text: str, title: str = "") -> dict[str, Any]:
    """``Document.about`` from a filing's cover page; ``{}`` for anything that is not a filing.

    Only the first few thousand characters are read: the cover page is where the registrant
    states its name and the period, and later pages quote other periods (comparatives).
    """
    head = text[:_COVER_CHARS]
    form = _FORM_RE.search(head)
    period = _PERIOD_RE.search(head)
    if form is None or period is None:
        return {}
    month = _MONTHS.get(period.group("mon").casefold())
    if month is None:
        return {}
    try:
        end = date(int(period.group("year")), month, int(period.group("day")))
    except ValueError:
        return {}
    entity: Entity | None = None
    registrant = _REGISTRANT_RE.search(head)
    if registrant is not None:
        entity = entity_by_name(registrant.group(1).strip())
    if entity is None:
        # A cover whose registrant line did not extract: the ticker on the cover ("Trading
        # symbol(s) ... MSFT") or the title still names the company.
        for e in ENTITIES:
            if e.kind != "company":
                continue
            forms = [re.escape(s) for s in (e.name, *e.aliases)]
            if re.search(r"(?<![\w.])(?:" + "|".join(forms) + r")(?![\w])", f"{title}\n{head}"):
                entity = e
                break
    about: dict[str, Any] = {"form": form.group(1), "period_end": end.isoformat()}
    cal_year, cal_month = _month_closing(end)
    about["calendar_year"], about["calendar_quarter"] = cal_year, (cal_month - 1) // 3 + 1
    if entity is not None:
        fy, fq = fiscal_quarter_of(end, entity.fiscal_year_end_month)
        about |= {"entity": entity.name, "kind": entity.kind, "fiscal_year": fy, "fiscal_quarter": fq}
    return about

"""Console template filters: times always carry their zone, values of a detail table read as text."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django import template
from django.utils.html import format_html

register = template.Library()


@register.filter
def utc(value: Any) -> str:
    """A timestamp as an IT admin reads it across offices: ISO 8601 in UTC, the zone named."""
    if not isinstance(value, datetime):
        return "" if value is None else str(value)
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


@register.filter
def when(value: Any) -> str:
    """``<time datetime="ISO 8601 with offset">… UTC</time>``: readable, and exact for a machine."""
    if not isinstance(value, datetime):
        return "never" if value is None else str(value)
    return format_html('<time datetime="{}">{}</time>', value.astimezone(UTC).isoformat(timespec="seconds"),
                       utc(value))  # fmt: skip

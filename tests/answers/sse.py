"""Parse a ``text/event-stream`` body into (event, data) pairs (tests only)."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any


def parse_sse(chunks: Iterable[bytes]) -> list[tuple[str, Any]]:
    text = b"".join(chunks).decode()
    events: list[tuple[str, Any]] = []
    for block in text.split("\n\n"):
        name, data = "message", []
        for line in block.splitlines():
            if line.startswith(":"):
                continue  # comment (keep-alive / stream open)
            field, _, value = line.partition(": ")
            if field == "event":
                name = value
            elif field == "data":
                data.append(value)
        if data:
            events.append((name, json.loads("\n".join(data))))
    return events

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


def clear_cairn_cache() -> None:
    """Drop Cairn's cache entries (not the Celery broker's keys in the same Redis).

    ``bin/cairn test`` recreates the database but keeps the embedded Redis, so
    ids and version counters restart while entries of an earlier run survive
    under the same keys (``perm:<tenant>:<user>:<acl_version>``): a test that
    checks who sees what must start from an empty cache.
    """
    from django.core.cache import cache

    client = cache._cache.get_client()  # noqa: SLF001 - the raw client, to scan only our prefix
    keys = list(client.scan_iter("cairn:*", count=1000))
    if keys:
        client.delete(*keys)

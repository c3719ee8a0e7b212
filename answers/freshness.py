"""Stage 2b, freshness: which version is "latest", and is the index behind the world?

* ``newest_indexed`` finds the newest version the *index* knows among the readable
  documents retrieval returned (version labels first, update dates second), which is how
  "latest" is resolved: from metadata, never from a model's memory.
* ``check_freshness`` compares that with the tenant's authoritative feed for the entity
  (``FreshnessFeed``: a release list or status page).  A feed older than
  ``FRESHNESS_FEED_MAX_AGE_SECONDS`` is re-fetched through ``core.http.SafeFetcher``:
  only URLs under ``CAIRN["FRESHNESS_ALLOWED_URL_PREFIXES"]``, every hop's resolved
  address checked (private, loopback, link-local, metadata, IPv6 ULA refused), size and
  time capped.  A fetch failure never fails the answer: the section says the feed could
  not be checked.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.conf import settings

from answers.contracts import QueryPlan
from answers.lexicon import version_key
from answers.models import FreshnessFeed
from core.http import OutboundHTTPError, SafeFetcher, redact

if TYPE_CHECKING:
    from answers.models import FreshnessFeed
    from retrieval.search import RankedChunk

_VERSION_RE = re.compile(r"\b(?:version|release|v)\s*[:=]?\s*(\d+(?:\.\d+)*)\b", re.IGNORECASE)
_DATE_RE = re.compile(r"\b(\d{4}-\d{2}-\d{2})\b")


@dataclass(frozen=True)
class IndexedVersion:
    version: str
    updated: date | None
    document_id: int
    title: str


def _mentions(chunk: RankedChunk, names: list[str]) -> bool:
    hay = f"{chunk.title} {chunk.text}".casefold()
    return not names or any(n.casefold() in hay for n in names)


def newest_indexed(plan: QueryPlan, chunks: list[RankedChunk]) -> IndexedVersion | None:
    names = [c for _s, c in plan.parsed.entities] + [s for s, _c in plan.parsed.entities]
    pool = [c for c in chunks if _mentions(c, names)] or list(chunks)
    labelled = [c for c in pool if c.version_label]
    if labelled:
        best = max(
            labelled, key=lambda c: (version_key(c.version_label), c.updated_at or datetime.min.replace(tzinfo=UTC))
        )
    elif pool:
        dated = [c for c in pool if c.updated_at]
        if not dated:
            return None
        best = max(dated, key=lambda c: c.updated_at)
    else:
        return None
    return IndexedVersion(
        version=best.version_label,
        updated=best.updated_at.date() if best.updated_at else None,
        document_id=best.document_id,
        title=best.title,
    )


def build_fetcher() -> SafeFetcher:
    return SafeFetcher(
        settings.CAIRN.get("FRESHNESS_ALLOWED_URL_PREFIXES", ()),
        max_bytes=500_000,
        timeout=(2.0, 5.0),
        allow_loopback_for_tests=bool(settings.CAIRN.get("FRESHNESS_ALLOW_LOOPBACK", False)),
    )


def parse_feed(body: bytes, content_type: str) -> tuple[str, date | None]:
    """Newest (version, date) from a JSON release list or a plain-text/HTML page."""
    text = body.decode("utf-8", "replace")
    if "json" in content_type:
        data = json.loads(text)
        items = data.get("releases", [data]) if isinstance(data, dict) else data
        best: tuple[str, date | None] = ("", None)
        for item in items if isinstance(items, list) else []:
            if not isinstance(item, dict):
                continue
            v = str(item.get("version") or item.get("latest") or "")
            d_raw = str(item.get("date") or item.get("released") or "")
            d = date.fromisoformat(d_raw[:10]) if _DATE_RE.match(d_raw[:10]) else None
            if v and (not best[0] or version_key(v) > version_key(best[0])):
                best = (v, d)
        return best
    versions = _VERSION_RE.findall(text)
    if not versions:
        return "", None
    newest = max(versions, key=version_key)
    m = _DATE_RE.search(text[text.find(newest) :])
    return newest, date.fromisoformat(m.group(1)) if m else None


def do_refresh_feed(feed: FreshnessFeed, fetcher: SafeFetcher | None = None) -> FreshnessFeed:
    """Fetch the feed through the SSRF-safe fetcher and store what it says (or why it failed)."""
    fetcher = fetcher or build_fetcher()
    feed.fetched_at = datetime.now(UTC)
    try:
        result = fetcher.fetch(feed.url)
        if result.status != 200:
            raise OutboundHTTPError(f"feed answered HTTP {result.status}")
        version, released = parse_feed(result.body, result.content_type)
        if not version:
            raise ValueError("no version found in the feed")
        feed.latest_version, feed.latest_date, feed.last_error = version, released, ""
    except (OutboundHTTPError, ValueError, OSError) as exc:
        feed.last_error = f"{type(exc).__name__}: {redact(str(exc))}"[:300]
    except Exception as exc:  # requests' connection errors: recorded, never raised into an answer
        feed.last_error = f"{type(exc).__name__}"[:300]
    feed.save()
    return feed


def check_freshness(
    plan: QueryPlan, newest: IndexedVersion | None, *, fetcher: SafeFetcher | None = None
) -> dict[str, Any]:
    """The answer's freshness section; call inside tenant_context."""

    section: dict[str, Any] = {
        "needs_current_version": plan.needs_current_version,
        "newest_indexed": None,
        "feed": None,
        "stale": False,
        "message": "",
    }
    if newest is not None:
        section["newest_indexed"] = {
            "version": newest.version, "date": newest.updated.isoformat() if newest.updated else None,
            "document_id": newest.document_id, "title": newest.title,
        }  # fmt: skip
    if not plan.needs_current_version:
        return section
    names = {c.casefold() for _s, c in plan.parsed.entities} | {s.casefold() for s, _c in plan.parsed.entities}
    feeds = [f for f in FreshnessFeed.objects.all() if f.entity.casefold() in names] if names else []
    if not feeds:
        return section
    feed = feeds[0]
    max_age = timedelta(seconds=int(settings.CAIRN.get("FRESHNESS_FEED_MAX_AGE_SECONDS", 3600)))
    if feed.fetched_at is None or datetime.now(UTC) - feed.fetched_at > max_age:
        feed = do_refresh_feed(feed, fetcher)
    section["feed"] = {
        "name": feed.name, "latest_version": feed.latest_version,
        "latest_date": feed.latest_date.isoformat() if feed.latest_date else None,
        "fetched_at": feed.fetched_at.isoformat() if feed.fetched_at else None, "error": feed.last_error or None,
    }  # fmt: skip
    if feed.last_error or not feed.latest_version:
        section["message"] = (
            f"The authoritative feed \u201c{feed.name}\u201d could not be checked; freshness is unknown."
        )
        return section
    behind = newest is None or (
        (newest.version and version_key(feed.latest_version) > version_key(newest.version))
        or (not newest.version and feed.latest_date and newest.updated and feed.latest_date > newest.updated)
    )
    if behind:
        section["stale"] = True
        have = f"version {newest.version}" if newest and newest.version else "no versioned source"
        when = f" ({newest.updated.isoformat()})" if newest and newest.updated else ""
        released = f", released {feed.latest_date.isoformat()}" if feed.latest_date else ""
        section["message"] = (
            f"The newest indexed source documents {have}{when}, but \u201c{feed.name}\u201d lists version "
            f"{feed.latest_version}{released}: this answer may describe an older release."
        )
    return section


__all__ = ["IndexedVersion", "build_fetcher", "check_freshness", "do_refresh_feed", "newest_indexed", "parse_feed"]

"""Confluence Cloud webhooks: pure functions, no I/O.

Confluence Cloud webhook bodies carry no event name (only ``userAccountId``,
``accountType``, ``timestamp`` and a ``page`` / ``blog`` object with ``id``,
``spaceKey``, ``version``, ``modificationDate`` ...), so each event is
registered on its own URL and we route by the LAST path segment, e.g.::

    https://cairn.example/hooks/confluence/<connector>/page_updated?secret=<shared secret>

Authentication, strongest first:

1. ``X-Hub-Signature``: where Confluence signs webhooks (a webhook defined with a
   *secret*: "each request is signed via a Hash-based Message Authentication Code
   (HMAC) ... HMACSha256. The header X-Hub-Signature is defined and contains the
   HMAC", https://confluence.atlassian.com/doc/managing-webhooks-1021225606.html),
   the body's HMAC-SHA256 under the shared secret, ``sha256=<hex>`` (a bare hex
   digest is accepted too).  The secret itself never travels.  When the header is
   present it alone decides: a wrong signature is refused even if a secret is
   also in the URL.
2. ``X-Cairn-Webhook-Secret`` header (a proxy in front of Cairn may add it).
3. ``?secret=`` query parameter, for Cloud admin webhooks that can neither sign nor
   add headers.  Cairn's own access log redacts it (tests/test_secret_canary.py);
   a proxy's log may not, which is why every event is only a hint confirmed at the
   REST API (``ConfluenceConnector.webhook_ops``): a leaked URL lets someone ask
   Cairn to re-read a page, never hide, delete or roll one back.

Comparison is constant-time; an empty configured secret rejects everything
(fail closed).

Delivery is best effort (no retries, no ordering guarantee), so webhooks only
shorten the delay: incremental sync, permission sync and the slim listing
stay the source of truth.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

SECRET_HEADER = "X-Cairn-Webhook-Secret"
SIGNATURE_HEADER = "X-Hub-Signature"
SECRET_QUERY_PARAM = "secret"

Action = Literal["upsert", "delete", "refresh_tree"]

# event name (last path segment) -> (content kind, payload key, what to run)
ROUTES: dict[str, tuple[str, str, Action]] = {
    "page_created": ("page", "page", "upsert"),
    "page_updated": ("page", "page", "upsert"),
    "page_restored": ("page", "page", "upsert"),
    "page_trashed": ("page", "page", "delete"),
    "page_removed": ("page", "page", "delete"),
    # A move changes the ancestor path, hence the ACL of the page AND its descendants.
    "page_moved": ("page", "page", "refresh_tree"),
    "blog_created": ("blogpost", "blog", "upsert"),
    "blog_updated": ("blogpost", "blog", "upsert"),
    "blog_restored": ("blogpost", "blog", "upsert"),
    "blog_trashed": ("blogpost", "blog", "delete"),
    "blog_removed": ("blogpost", "blog", "delete"),
}


class WebhookRejected(ValueError):
    """The request is not a webhook we act on (unknown route, malformed body)."""


@dataclass(frozen=True)
class WebhookEvent:
    event: str  # e.g. "page_trashed"
    kind: str  # "page" | "blogpost"
    content_id: str
    action: Action
    version: int | None
    timestamp: int | None  # ms since epoch, from the body
    space_key: str
    event_id: str  # stable across redeliveries of the same event: use it to dedupe


def sign_body(secret: str, body: bytes) -> str:
    """The ``X-Hub-Signature`` value Confluence sends for ``body`` under ``secret``."""
    return "sha256=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


def verify_secret(
    expected: str, *, headers: Mapping[str, str], query: Mapping[str, str], body: bytes | None = None
) -> bool:
    """True iff the request is signed with, or carries, the shared secret (see the module doc)."""
    if not expected:
        return False
    signature = _header(headers, SIGNATURE_HEADER)
    if signature is not None:
        if body is None:
            return False
        digest = signature.strip()
        digest = digest[len("sha256=") :] if digest.lower().startswith("sha256=") else digest
        wanted = sign_body(expected, body)[len("sha256=") :]
        return hmac.compare_digest(digest.lower().encode("ascii", "replace"), wanted.encode("ascii"))
    provided = _header(headers, SECRET_HEADER)
    if provided is None:
        provided = query.get(SECRET_QUERY_PARAM)
    if not isinstance(provided, str) or not provided:
        return False
    return hmac.compare_digest(provided.encode("utf-8"), expected.encode("utf-8"))


def event_id(event: str, content_id: str, version: int | None, timestamp: int | None) -> str:
    """sha256 of (route, content id, version, timestamp): a trash and the restore of the same
    version differ by route, two trashes of the same version by timestamp."""
    raw = json.dumps([event, content_id, version, timestamp], separators=(",", ":"))
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def parse_event(path: str, body: bytes | str | Mapping[str, Any]) -> WebhookEvent:
    """Route by URL path and pull what the sync needs out of the body."""
    name = next((seg for seg in reversed(path.split("?")[0].split("/")) if seg), "")
    route = ROUTES.get(name)
    if route is None:
        raise WebhookRejected(f"unsupported Confluence webhook route: {name[:40]!r}")
    kind, key, action = route
    if isinstance(body, (bytes, str)):
        try:
            payload = json.loads(body)
        except ValueError:
            raise WebhookRejected("webhook body is not JSON") from None
    else:
        payload = body
    content = payload.get(key) if isinstance(payload, Mapping) else None
    if not isinstance(content, Mapping) or content.get("id") in (None, ""):
        raise WebhookRejected(f"webhook body has no {key}.id")
    content_id = str(content["id"])
    # Confluence content ids are ASCII digits; str.isdigit alone would also take "²" or "١٢٣".
    if not (content_id.isascii() and content_id.isdigit()):
        raise WebhookRejected("webhook content id is not numeric")
    version = _int_or_none(content.get("version"))
    timestamp = _int_or_none(payload.get("timestamp")) or _int_or_none(content.get("modificationDate"))
    return WebhookEvent(
        event=name,
        kind=kind,
        content_id=content_id,
        action=action,
        version=version,
        timestamp=timestamp,
        space_key=str(content.get("spaceKey") or ""),
        event_id=event_id(name, content_id, version, timestamp),
    )


def _header(headers: Mapping[str, str], name: str) -> str | None:
    lowered = name.lower()
    for key, value in headers.items():
        if key.lower() == lowered:
            return value
    return None


def _int_or_none(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    try:
        return int(value)  # type: ignore[call-overload]  # any object on purpose: int() failures mean "not an int"
    except (TypeError, ValueError, OverflowError):  # OverflowError: int(float("inf"))
        return None

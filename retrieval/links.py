"""Links inside retrieved text, made inert.

A passage or a snippet is a third party's text: a phishing URL in a document was stripped from the
answer's claims but still shown in the cited passage and the result snippet, where the portal's
users (and Slack, which auto-links URLs) could follow it. Every URL in such text is rewritten to a
defanged form (``hxxps://evil[.]example/login``) that no renderer links, except the source's own
URL: a page linking to itself is what the citation already offers.
"""

from __future__ import annotations

import re
from collections.abc import Collection

# Anything that renderers auto-link: a scheme URL, or a bare www. host. Stops at the characters that
# close the markup around a link (markdown parens, Slack's "|", HTML quotes and angle brackets).
_URL_RE = re.compile(r"(?i)\b(?:(?:https?|ftp)://|www\.)[^\s<>\"'`\[\]()|]+")
_TRAILING = ".,;:!?'\")]}"


def _key(url: str) -> str:
    return url.strip().rstrip("/").lower()


def defang(url: str) -> str:
    """``https://evil.example/x`` -> ``hxxps://evil[.]example/x`` (readable, never a link)."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        scheme, rest = "", url
    host, slash, path = rest.partition("/")
    host = host.replace(".", "[.]")
    fanged = {"http": "hxxp", "https": "hxxps", "ftp": "fxp"}.get(scheme.lower(), scheme)
    return f"{fanged}{sep}{host}{slash}{path}"


def inert_links(text: str, own_urls: Collection[str] = ()) -> str:
    """``text`` with every URL but ``own_urls`` defanged (sentence punctuation after a URL is kept)."""
    allowed = {_key(u) for u in own_urls if u}

    def replace(m: re.Match[str]) -> str:
        url, trail = m.group(0), ""
        while url and url[-1] in _TRAILING:
            trail = url[-1] + trail
            url = url[:-1]
        if _key(url) in allowed:
            return url + trail
        return defang(url) + trail

    return _URL_RE.sub(replace, text) if text else text

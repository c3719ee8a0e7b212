"""Canonical URLs, exact content fingerprints and SimHash near-duplicate detection.

The same page reaches us under many URLs (tracking parameters, trailing slashes, upper-case
hosts) and the same text under many formattings; these functions give each a stable identity
so the pipeline can skip re-embedding unchanged content and collapse near-identical copies.
"""

from __future__ import annotations

import hashlib
import re
import string
import unicodedata
from urllib.parse import SplitResult, unquote, urlsplit

import numpy as np

_DEFAULT_PORTS = {"http": 80, "https": 443, "ftp": 21, "ws": 80, "wss": 443}
_TRACKING_PARAMS = frozenset({"gclid", "fbclid", "mc_cid", "mc_eid", "ref", "ref_src", "_hsenc", "_hsmi", "spm"})
_UNRESERVED = frozenset(string.ascii_letters + string.digits + "-._~")
_SUB_DELIMS = "!$&'()*+,;="
# Characters that may stay literal in each component; anything else gets percent-encoded.
_PATH_SAFE = frozenset(_UNRESERVED | set(_SUB_DELIMS) | set(":@/"))
_QUERY_PART_SAFE = frozenset((_UNRESERVED | set(_SUB_DELIMS) | set(":@/?")) - set("&="))
_USERINFO_SAFE = frozenset(_UNRESERVED | set(_SUB_DELIMS) | {":"})
_PCT = re.compile(r"%([0-9A-Fa-f]{2})")

_MASK64 = (1 << 64) - 1
_WORDS = re.compile(r"\w+")


def canonical_url(url: str) -> str:
    """A canonical form of an absolute URL, for de-duplicating the same page seen via many links.

    Never raises: anything that does not parse as ``scheme://host...`` comes back stripped.
    """
    stripped = url.strip() if isinstance(url, str) else ""
    try:
        parts = urlsplit(stripped)
        if not parts.scheme or not parts.netloc or parts.hostname is None:
            return stripped
        return _canonical(parts)
    except ValueError:  # bad port, bad IPv6 literal, IDNA failure (UnicodeError is a ValueError)
        return stripped


def _canonical(parts: SplitResult) -> str:
    scheme = parts.scheme.lower()
    host = _canonical_host(parts.hostname or "")
    port = parts.port  # raises ValueError for a non-numeric port
    if port is not None and not 0 < port <= 65535:
        raise ValueError("port out of range")
    netloc = host
    if port is not None and _DEFAULT_PORTS.get(scheme) != port:
        netloc = f"{host}:{port}"
    if parts.username is not None:
        userinfo = _normalise_pct(parts.username, _USERINFO_SAFE)
        if parts.password is not None:
            userinfo += ":" + _normalise_pct(parts.password, _USERINFO_SAFE)
        netloc = f"{userinfo}@{netloc}"

    path = _remove_dot_segments(_normalise_pct(parts.path, _PATH_SAFE))
    if path != "/" and path.endswith("/"):
        path = path.rstrip("/") or "/"

    query = _canonical_query(parts.query)
    return f"{scheme}://{netloc}{path}" + (f"?{query}" if query else "")


def _canonical_host(host: str) -> str:
    host = host.lower().rstrip(".")
    if ":" in host:  # IPv6 literal; urlsplit strips the brackets
        return f"[{host}]"
    if not host.isascii():
        # Internationalised names have one canonical ASCII (punycode) spelling.
        host = host.encode("idna").decode("ascii")
    return host


def _normalise_pct(component: str, safe: frozenset[str]) -> str:
    """RFC 3986 6.2.2: upper-case escapes, decode escaped unreserved characters, escape the rest."""
    out: list[str] = []
    i = 0
    n = len(component)
    while i < n:
        ch = component[i]
        if ch == "%":
            m = _PCT.match(component, i)
            if m:
                decoded = chr(int(m.group(1), 16))
                out.append(decoded if decoded in _UNRESERVED else "%" + m.group(1).upper())
                i += 3
                continue
            out.append("%25")  # a stray percent sign is data, not an escape
        elif ch in safe:
            out.append(ch)
        else:
            out.extend(f"%{byte:02X}" for byte in ch.encode("utf-8", "surrogatepass"))
        i += 1
    return "".join(out)


def _remove_dot_segments(path: str) -> str:
    if not path:
        return "/"
    segments = path.split("/")
    output: list[str] = []
    for k, segment in enumerate(segments[1:] if path.startswith("/") else segments):
        is_last = k == len(segments) - (2 if path.startswith("/") else 1)
        if segment == ".":
            if is_last:
                output.append("")
        elif segment == "..":
            if output:
                output.pop()
            if is_last:
                output.append("")
        else:
            output.append(segment)
    return "/" + "/".join(output)


def _canonical_query(query: str) -> str:
    params: list[tuple[str, str]] = []
    for piece in query.split("&"):
        if not piece:
            continue
        key, sep, value = piece.partition("=")
        name = unquote(key.replace("+", " ")).strip().lower()
        if name.startswith("utm_") or name in _TRACKING_PARAMS:
            continue
        norm_key = _normalise_pct(key, _QUERY_PART_SAFE)
        params.append((norm_key, f"{norm_key}={_normalise_pct(value, _QUERY_PART_SAFE)}" if sep else norm_key))
    # Stable sort on the key only: the relative order of repeated keys (a=2&a=1) can matter.
    params.sort(key=lambda kv: kv[0])
    return "&".join(p for _, p in params)


def _normalise_for_hash(text: str) -> str:
    # NFKC folds compatibility forms (ligatures, full-width letters, NBSP); casefold can
    # un-normalise a few characters, so normalise once more afterwards.
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())


def content_fingerprint(text: str) -> str:
    """sha256 hex of the text with case, Unicode compatibility forms and whitespace folded away."""
    canonical = " ".join(_normalise_for_hash(text).split())
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def simhash64(text: str) -> int:
    """64-bit SimHash over word 3-shingles, as a signed 64-bit int (fits a Postgres bigint).

    Texts with fewer than three words use their words (or nothing) as shingles; an empty text
    hashes to 0.  The shingle hash is blake2b, so values are stable across processes and
    machines (unlike Python's salted ``hash``).
    """
    words = _WORDS.findall(_normalise_for_hash(text))
    if not words:
        return 0
    if len(words) < 3:
        shingles = [" ".join(words)]
    else:
        shingles = [" ".join(words[i : i + 3]) for i in range(len(words) - 2)]
    digests = b"".join(hashlib.blake2b(s.encode("utf-8", "surrogatepass"), digest_size=8).digest() for s in shingles)
    # One row of 64 bits per shingle (most significant bit first); each bit votes +1/-1.
    bits = np.unpackbits(np.frombuffer(digests, dtype=np.uint8)).reshape(len(shingles), 64)
    ones = bits.sum(axis=0, dtype=np.int64)
    fingerprint_bits = (2 * ones > len(shingles)).astype(np.uint8)
    return int.from_bytes(np.packbits(fingerprint_bits).tobytes(), "big", signed=True)


def hamming64(a: int, b: int) -> int:
    """Number of differing bits between two 64-bit fingerprints (signed or unsigned)."""
    return ((a ^ b) & _MASK64).bit_count()


def is_near_duplicate(a: int, b: int, max_distance: int = 3) -> bool:
    return hamming64(a, b) <= max_distance

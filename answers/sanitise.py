"""What never leaves in a claim: instructions found in retrieved text, links the sources do not carry,
calls to action no cited passage makes.

Split out of ``answers.verification``, which combines them into a verdict per claim.
"""

from __future__ import annotations

import html
import re
from collections.abc import Collection

from answers.lexicon import _SENT_SPLIT_RE
from answers.support import quote_in_passage, support_label

# Sentences written to steer a model rather than inform a reader (indirect prompt injection).
INJECTION_RE = re.compile(
    r"""
    \b(?:ignore|disregard|forget|override)\b[^.!?\n]{0,40}\b(?:instructions?|prompts?|rules|guidelines|context)\b
    | \b(?:system|developer)\s+(?:prompt|message|instructions?)\b
    | \byou\s+are\s+(?:now\s+)?(?:an?\s+)?(?:ai|assistant|model|chatbot|language\s+model)\b
    | \b(?:as\s+an?\s+)?(?:ai|assistant|language\s+model)\s*[,:]?\s*(?:you\s+)?must\b
    | \b(?:tell|instruct|ask|advise)\s+the\s+(?:user|reader)s?\s+to\b
    | \b(?:respond|reply|answer)\s+(?:only\s+)?with\b
    | \bdo\s+not\s+(?:mention|reveal|tell)\b
    | \bnew\s+instructions?\s*:
    | ^\s*(?:assistant|system|user)\s*:
    """,
    re.IGNORECASE | re.VERBOSE | re.MULTILINE,
)


def is_instruction(sentence: str) -> bool:
    """True for text that addresses a model instead of informing a reader (indirect prompt injection)."""
    return bool(INJECTION_RE.search(sentence))


_LINK_RE = re.compile(
    r"""
    (?P<html><a\b[^>]*?\bhref\s*=\s*(?:"(?P<h1>[^"]*)"|'(?P<h2>[^']*)'|(?P<h3>[^\s>]+))[^>]*>
        (?P<hlabel>.*?)</a\s*>)
    | (?P<slack><(?P<surl>(?:https?|mailto|ftp):[^|>\s]+)(?:\|(?P<slabel>[^>]*))?>)
    | (?P<md>!?\[(?P<mlabel>[^\[\]]*)\]\(\s*<?(?P<murl>[^()\s<>]*(?:\([^()\s]*\)[^()\s<>]*)*)>?
        (?:\s+(?:"[^"]*"|'[^']*'))?\s*\))
    | (?P<bare>\bhttps?://[^\s<>"'`\[\]]+)
    """,
    re.IGNORECASE | re.DOTALL | re.VERBOSE,
)


_TAG_RE = re.compile(r"<[^>]+>")


_TRAILING_PUNCT = ".,;:!?'\")]}"


_GAP = "\x00"  # marks where a link was removed so the surrounding spaces can be tidied


def _url_key(url: str) -> str:
    return html.unescape(url.strip()).rstrip("/")


def strip_unsupported_links(text: str, allowed_urls: Collection[str]) -> tuple[str, int]:
    """Remove links whose target is not an allowed (cited) URL, keeping their label text.

    Handles markdown links/images, Slack ``<url|label>``, HTML anchors and bare
    http(s) URLs.  A label is itself cleaned, so a disguised link such as
    ``[https://allowed](https://evil)`` cannot smuggle an unapproved URL out as text.
    Returns the cleaned text and the number of links removed.
    """
    allowed = {_url_key(u) for u in allowed_urls}
    removed = 0

    def clean(fragment: str) -> str:
        return _LINK_RE.sub(replace, fragment)

    def replace(m: re.Match[str]) -> str:
        nonlocal removed
        if m.group("bare"):
            url = m.group("bare")
            # Sentence punctuation after a URL is not part of it; give it back to the text.
            trail = ""
            while url and url[-1] in _TRAILING_PUNCT:
                if url[-1] == ")" and url.count("(") >= url.count(")"):
                    break
                trail = url[-1] + trail
                url = url[:-1]
            if _url_key(url) in allowed:
                return url + trail
            removed += 1
            return _GAP + trail
        if m.group("html"):
            url = m.group("h1") or m.group("h2") or m.group("h3") or ""
            label = _TAG_RE.sub("", m.group("hlabel"))
        elif m.group("slack"):
            url, label = m.group("surl"), m.group("slabel") or ""
        else:
            url, label = m.group("murl") or "", m.group("mlabel") or ""
        clean_label = clean(label)
        if _url_key(url) in allowed:
            if clean_label == label:
                return m.group(0)
            # Allowed target, but the label shows some other URL: keep the link honest.
            return m.group(0).replace(label, clean_label, 1)
        removed += 1
        return clean_label if clean_label.strip() else _GAP

    out = clean(text.replace(_GAP, ""))
    out = re.sub(
        rf"([ \t]*){_GAP}+([ \t]*)",
        lambda g: " " if g.group(1) and g.group(2) else "",
        out,
    )
    return out, removed


# Imperative openings that ask the reader to *do* something: a claim may only carry one
# when a cited passage says the same thing.
_CTA_RE = re.compile(
    r"^\W*(?:please\s+)?(?:click|tap|download|install|visit|go\s+to|open|call|phone|e-?mail|contact|send|"
    r"share|sign\s+(?:in|up)|log\s*in|login|register|enter|paste|run|execute|buy|pay|transfer|reply|forward|"
    r"reset|disable|enable|upload|scan)\b"
    r"|\byou\s+(?:should|must|need\s+to|have\s+to)\s+(?:click|download|install|visit|call|contact|send|"
    r"share|sign|log|enter|run|pay|transfer|upload|reset|disable)\b",
    re.IGNORECASE,
)


def strip_unsupported_calls_to_action(text: str, cited_passages: Collection[str]) -> tuple[str, int]:
    """Remove sentences that tell the reader to act unless a cited passage supports them."""
    kept: list[str] = []
    removed = 0
    for sentence in _SENT_SPLIT_RE.split(text.strip()):
        if sentence and (_CTA_RE.search(sentence) or is_instruction(sentence)):
            supported = not is_instruction(sentence) and any(
                quote_in_passage(sentence, p) or support_label(sentence, p)[0] == "supported" for p in cited_passages
            )
            if not supported:
                removed += 1
                continue
        kept.append(sentence)
    return " ".join(kept), removed

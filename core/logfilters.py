"""A logging filter that keeps secrets out of every log line, whichever library wrote it.

Our own code never logs a credential, but the HTTP libraries underneath do log at DEBUG: slack_sdk writes
every response's headers and body, so a source or proxy that reflects the request (``Authorization:
Bearer xoxb-…``) puts the token into the log.  The filter runs on the configured handlers
(``cairn/settings.py``) and removes

* every connector secret this process has decrypted or encrypted (``remember_secrets``, called by
  ``core.crypto``), whatever its shape, and
* everything ``core.http.redact`` recognises (bearer tokens, Authorization values, Slack tokens,
  ``secret=`` / ``"token":`` parameters, URL userinfo),

from the message and from the exception text.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable
from typing import Any

from core.http import redact

_MIN_LENGTH = 8  # shorter values would blank out ordinary words
_MAX_REMEMBERED = 10_000
_lock = threading.Lock()
_secrets: set[str] = set()
REDACTED = "[REDACTED]"


def remember_secrets(values: Iterable[Any]) -> None:
    """Register secret values (strings; nested dicts/lists are walked) for redaction in this process."""
    found: list[str] = []
    stack = list(values)
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            if len(value) >= _MIN_LENGTH:
                found.append(value)
        elif isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, list | tuple):
            stack.extend(value)
    if found:
        with _lock:
            if len(_secrets) + len(found) > _MAX_REMEMBERED:
                _secrets.clear()  # a bound on memory; the regex rules still apply
            _secrets.update(found)


def scrub(text: str) -> str:

    with _lock:
        known = sorted(_secrets, key=len, reverse=True)  # longest first: a secret may contain another
    for value in known:
        if value in text:
            text = text.replace(value, REDACTED)
    return redact(text)


class RedactSecrets(logging.Filter):
    """Rewrites the record in place (message, arguments, exception text); never drops it."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a broken format string: leave it to the handler's own error path
            return True
        record.msg, record.args = scrub(message), None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = scrub(record.exc_text)  # formatters print exc_text once it is set
        if record.stack_info:
            record.stack_info = scrub(record.stack_info)
        return True

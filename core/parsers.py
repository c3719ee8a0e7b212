"""The REST API's JSON parser, with a nesting cap.

About 1,000 levels of nesting (a 2 KB body) parsed fine and then overflowed the recursion of
whatever walked the value next (serializers, jsonb adaptation), answering 500 on every endpoint.
The depth is measured on the raw bytes before ``json.loads`` runs, iteratively, so neither the
parser nor anything after it ever sees a deeper document; the refusal is a coded 400
(``json_too_deep``), as the webhooks' parser (connectors/hooks.py) already answers.
"""

from __future__ import annotations

from typing import IO, Any

from django.conf import settings
from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser


class JsonTooDeep(ParseError):
    """A 400 whose code (``json_too_deep``) core.errors's handler reports (not core.errors.ApiError: DRF
    imports this parser while core.errors is still importing DRF)."""

    default_code = "json_too_deep"


_OPEN = frozenset(b"[{")
_CLOSE = frozenset(b"]}")
_QUOTE = ord('"')
_BACKSLASH = ord("\\")


def json_depth_exceeds(raw: bytes, limit: int) -> bool:
    """True if brackets outside strings nest deeper than ``limit`` (malformed input is json.loads' job)."""
    if raw.count(b"[") + raw.count(b"{") <= limit:
        return False  # the common case, decided in C: not enough brackets to nest that deep
    depth = 0
    in_string = False
    escaped = False
    for byte in raw:
        if in_string:
            if escaped:
                escaped = False
            elif byte == _BACKSLASH:
                escaped = True
            elif byte == _QUOTE:
                in_string = False
        elif byte == _QUOTE:
            in_string = True
        elif byte in _OPEN:
            depth += 1
            if depth > limit:
                return True
        elif byte in _CLOSE:
            depth -= 1
    return False


class _Replay:
    """A stream that hands DRF's JSONParser the bytes already read for the depth check."""

    def __init__(self, data: bytes) -> None:
        self._data = data

    def read(self, *_: Any) -> bytes:
        data, self._data = self._data, b""
        return data


class DepthLimitedJSONParser(JSONParser):
    def parse(
        self, stream: IO[Any], media_type: str | None = None, parser_context: dict[str, Any] | None = None
    ) -> Any:
        raw = stream.read() if stream is not None else b""
        limit = int(settings.CAIRN.get("API_MAX_JSON_DEPTH", 32))
        if json_depth_exceeds(raw, limit):
            raise JsonTooDeep(f"The JSON body nests deeper than {limit} levels.")
        return super().parse(_Replay(raw), media_type, parser_context)  # type: ignore[arg-type]

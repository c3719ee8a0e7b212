"""A small fake of the Slack Web API on 127.0.0.1, serving a fixture workspace.

The one fake of Slack's Web API in the suite: the connector reads the workspace through it and the
Slack bot posts its answers to it (``chat.postMessage``, ``chat.postEphemeral``, read back with
``posted`` / ``wait_for``).

It speaks the real wire format (form-encoded POST to ``/api/<method>``, Bearer
token, ``ok``/``error`` JSON, cursor pagination via ``response_metadata``,
HTTP 429 + ``Retry-After``) so ``slack_sdk.WebClient`` and the connector run
unmodified against it.  Tests mutate the workspace between syncs and inject
failures and rate limits.
"""

from __future__ import annotations

import base64
import copy
import json
import ssl
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self
from urllib.parse import parse_qs, urlparse

from tests.security.secret_canary import secret

FIXTURE = Path(__file__).resolve().parents[3] / "connectors" / "slack" / "fixtures" / "workspace.json"
TOKEN = secret("xoxb-test-token")  # carries the run's secret canary (tests/security/secret_canary.py)


@dataclass
class Injected:
    method: str
    status: int
    headers: dict[str, str]
    body: dict[str, Any]
    on_call: int  # fire on the n-th call of ``method`` counted from injection (1 = next call)


@dataclass
class FakeSlack:
    data: dict[str, Any] = field(default_factory=lambda: json.loads(FIXTURE.read_text()))
    calls: list[tuple[float, str, dict[str, str], int]] = field(default_factory=list)
    injected: list[Injected] = field(default_factory=list)
    _counts: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    # Bot token scopes granted at install; a method needing one it lacks answers missing_scope.
    scopes: set[str] = field(
        default_factory=lambda: {
            "channels:read", "channels:history", "channels:join", "groups:read", "groups:history",
            "users:read", "users:read.email", "chat:write",
        }
    )  # fmt: skip
    # Slack Connect members from other organisations: they appear in conversations.members of the
    # shared channel and users.info answers them with their own org's team_id ("be on the lookout
    # for minor differences in channel, message, user, team ... objects",
    # https://docs.slack.dev/apis/slack-connect); users.list lists this workspace's users only.
    external_users: list[dict[str, Any]] = field(default_factory=list)

    # -- test controls --------------------------------------------------------------------------

    def rate_limit_next(self, method: str, retry_after: str, nth: int = 1) -> None:
        self._inject(method, 429, {"Retry-After": retry_after}, {"ok": False, "error": "ratelimited"}, nth)

    def fail_call(self, method: str, nth: int, status: int = 500) -> None:
        self._inject(method, status, {}, {"ok": False, "error": "internal_error"}, nth)

    def _inject(self, method: str, status: int, headers: dict[str, str], body: dict[str, Any], nth: int) -> None:
        with self.lock:
            self.injected.append(Injected(method, status, headers, body, self._counts.get(method, 0) + nth))

    def posted(self, method: str, **match: str) -> list[dict[str, Any]]:
        """The answered calls of ``method`` whose parameters include ``match`` (``blocks`` decoded)."""
        out = []
        with self.lock:
            calls = list(self.calls)
        for _, m, params, status in calls:
            if m == method and status == 200 and all(params.get(k) == v for k, v in match.items()):
                item: dict[str, Any] = dict(params)
                if "blocks" in item:
                    item["blocks"] = json.loads(item["blocks"])
                out.append(item)
        return out

    def wait_for(self, method: str, timeout: float = 60.0, **match: str) -> list[dict[str, Any]]:
        deadline = time.time() + timeout
        while time.time() < deadline:
            found = self.posted(method, **match)
            if found:
                return found
            time.sleep(0.2)
        raise AssertionError(f"no {method} call matching {match} within {timeout}s; calls: {self.calls}")

    def calls_to(self, method: str) -> list[tuple[float, dict[str, str], int]]:
        return [(t, p, s) for t, m, p, s in self.calls if m == method]

    def channel(self, channel_id: str) -> dict[str, Any]:
        return next(c for c in self.data["channels"] if c["id"] == channel_id)

    def remove_member(self, channel_id: str, user_id: str) -> None:
        self.channel(channel_id)["members"].remove(user_id)

    def add_member(self, channel_id: str, user_id: str) -> None:
        self.channel(channel_id)["members"].append(user_id)

    def post(self, channel_id: str, message: dict[str, Any]) -> None:
        self.data["messages"].setdefault(channel_id, []).append(message)

    def edit(self, channel_id: str, ts: str, text: str, edited_ts: str) -> None:
        for message in self.data["messages"][channel_id]:
            if message["ts"] == ts:
                message["text"] = text
                message["edited"] = {"user": message.get("user"), "ts": edited_ts}

    def delete(self, channel_id: str, ts: str) -> None:
        self.data["messages"][channel_id] = [m for m in self.data["messages"][channel_id] if m["ts"] != ts]

    # -- API ----------------------------------------------------------------------------------

    def handle(self, method: str, params: dict[str, str], token: str | None) -> tuple[int, dict[str, str], dict]:
        with self.lock:
            count = self._counts[method] = self._counts.get(method, 0) + 1
            for injected in list(self.injected):
                if injected.method == method and injected.on_call == count:
                    self.injected.remove(injected)
                    self.calls.append((time.monotonic(), method, params, injected.status))
                    return injected.status, injected.headers, injected.body
        status, body = 200, self._dispatch(method, params, token)
        with self.lock:
            self.calls.append((time.monotonic(), method, params, status))
        return status, {}, body

    def _dispatch(self, method: str, params: dict[str, str], token: str | None) -> dict[str, Any]:
        if token != TOKEN:
            return {"ok": False, "error": "invalid_auth"}
        needed = self._needed_scope(method, params)
        if needed is not None and needed not in self.scopes:
            # "missing_scope": the response names the scope it needed and those the token has
            # (https://api.slack.com/methods/conversations.join, Errors; https://api.slack.com/scopes).
            return {"ok": False, "error": "missing_scope", "needed": needed, "provided": ",".join(sorted(self.scopes))}
        team = self.data["team"]
        limit = int(params.get("limit") or 100)
        if method == "auth.test":
            return {
                "ok": True,
                "url": f"https://{team['domain']}.slack.com/",
                "team": team["name"],
                "team_id": team["id"],
                "user_id": self.data["bot_user_id"],
            }
        if method == "users.list":
            return _offset_page("members", self.data["users"], params.get("cursor"), limit)
        if method == "users.info":
            known = self.data["users"] + self.external_users
            user = next((u for u in known if u["id"] == params.get("user")), None)
            return {"ok": True, "user": user} if user else {"ok": False, "error": "user_not_found"}
        bot = self.data["bot_user_id"]
        if method == "conversations.list":
            wanted = set((params.get("types") or "public_channel").split(","))
            channels = [
                self._channel_view(c)
                for c in self.data["channels"]
                if ("private_channel" if c["is_private"] else "public_channel") in wanted
                # Private channels are listed only to members ("private channels ... the calling
                # user ... is a member of", https://api.slack.com/methods/conversations.list).
                and (not c["is_private"] or bot in c["members"])
            ]
            return _offset_page("channels", channels, params.get("cursor"), limit)
        if method == "chat.postMessage":
            # https://api.slack.com/methods/chat.postMessage: channel plus text or blocks; answers the
            # channel and the new message's ts (a DM channel id works as any other).
            if not params.get("channel") or not (params.get("text") or params.get("blocks")):
                return {"ok": False, "error": "invalid_arguments" if params.get("channel") else "channel_not_found"}
            return {"ok": True, "channel": params["channel"], "ts": f"{time.time():.6f}"}
        if method == "chat.postEphemeral":
            # https://api.slack.com/methods/chat.postEphemeral: needs channel and user; answers message_ts.
            if not params.get("channel") or not params.get("user"):
                return {"ok": False, "error": "invalid_arguments"}
            return {"ok": True, "message_ts": f"{time.time():.6f}"}
        channel_id = params.get("channel", "")
        channel = next((c for c in self.data["channels"] if c["id"] == channel_id), None)
        if channel is None:
            return {"ok": False, "error": "channel_not_found"}
        if method == "conversations.info":
            return {"ok": True, "channel": self._channel_view(channel)}
        if method == "conversations.join":
            # https://api.slack.com/methods/conversations.join: public channels only
            # (method_not_supported_for_channel_type), never an archived one (is_archived).
            if channel["is_private"]:
                return {"ok": False, "error": "method_not_supported_for_channel_type"}
            if channel.get("is_archived"):
                return {"ok": False, "error": "is_archived"}
            if bot not in channel["members"]:
                channel["members"].append(bot)
            return {"ok": True, "channel": self._channel_view(channel)}
        if method == "conversations.members":
            return _offset_page("members", channel["members"], params.get("cursor"), limit)
        if method in ("conversations.history", "conversations.replies") and bot not in channel["members"]:
            # A bot token reads only channels the app is in: "not_in_channel"
            # (https://api.slack.com/methods/conversations.history, Errors).
            return {"ok": False, "error": "not_in_channel"}
        messages = self.data["messages"].get(channel_id, [])
        if method == "conversations.history":
            return self._history(messages, params, limit)
        if method == "conversations.replies":
            return self._replies(messages, params, limit)
        return {"ok": False, "error": "unknown_method"}

    def _history(self, messages: list[dict[str, Any]], params: dict[str, str], limit: int) -> dict[str, Any]:
        top = [self._with_thread_fields(m, messages) for m in messages if _in_history(m)]
        top.sort(key=lambda m: _micros(m["ts"]), reverse=True)  # newest first, like Slack
        upper = _decode_cursor(params.get("cursor")) or params.get("latest")
        lower = params.get("oldest")
        if upper:
            top = [m for m in top if _micros(m["ts"]) < _micros(upper)]
        if lower:
            top = [m for m in top if _micros(m["ts"]) > _micros(lower)]
        page, rest = top[:limit], top[limit:]
        return {
            "ok": True,
            "messages": page,
            "has_more": bool(rest),
            "response_metadata": {"next_cursor": _encode_cursor(page[-1]["ts"]) if rest else ""},
        }

    def _replies(self, messages: list[dict[str, Any]], params: dict[str, str], limit: int) -> dict[str, Any]:
        parent = next((m for m in messages if m["ts"] == params.get("ts")), None)
        if parent is None:
            return {"ok": False, "error": "thread_not_found"}
        replies = sorted(
            (m for m in messages if m.get("thread_ts") == parent["ts"] and m["ts"] != parent["ts"]),
            key=lambda m: _micros(m["ts"]),
        )
        after = _decode_cursor(params.get("cursor"))
        if after:
            replies = [m for m in replies if _micros(m["ts"]) >= _micros(after)]
        # Slack repeats the parent at the top of every page; the limit counts it too.
        room = max(1, limit - 1)
        page, rest = replies[:room], replies[room:]
        return {
            "ok": True,
            "messages": [self._with_thread_fields(parent, messages), *page],
            "has_more": bool(rest),
            "response_metadata": {"next_cursor": _encode_cursor(rest[0]["ts"]) if rest else ""},
        }

    def _channel_view(self, channel: dict[str, Any]) -> dict[str, Any]:
        # ``is_member``: whether the calling bot is in the channel (conversation object,
        # https://api.slack.com/types/conversation).
        return _public_channel(channel) | {"is_member": self.data["bot_user_id"] in channel["members"]}

    def _needed_scope(self, method: str, params: dict[str, str]) -> str | None:
        """The bot scope each method needs (https://api.slack.com/methods/<method>, "Required scopes")."""
        channel = next((c for c in self.data["channels"] if c["id"] == params.get("channel")), None)
        private = bool(channel and channel["is_private"])
        return {
            "conversations.join": "channels:join",
            "conversations.history": "groups:history" if private else "channels:history",
            "conversations.replies": "groups:history" if private else "channels:history",
            "conversations.info": "groups:read" if private else "channels:read",
            "conversations.members": "groups:read" if private else "channels:read",
            "conversations.list": "channels:read",
            "users.list": "users:read",
            "users.info": "users:read",
            "chat.postMessage": "chat:write",
            "chat.postEphemeral": "chat:write",
        }.get(method)

    @staticmethod
    def _with_thread_fields(message: dict[str, Any], messages: list[dict[str, Any]]) -> dict[str, Any]:
        out = copy.deepcopy(message)
        if message.get("thread_ts") == message["ts"]:
            replies = [m for m in messages if m.get("thread_ts") == message["ts"] and m["ts"] != message["ts"]]
            out["reply_count"] = len(replies)
            if replies:
                out["latest_reply"] = max(replies, key=lambda m: _micros(m["ts"]))["ts"]
        return out


def _in_history(message: dict[str, Any]) -> bool:
    thread_ts = message.get("thread_ts")
    return not thread_ts or thread_ts == message["ts"] or message.get("subtype") == "thread_broadcast"


def _public_channel(channel: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in channel.items() if k != "members"} | {"num_members": len(channel["members"])}


def _micros(ts: str) -> int:
    seconds, _, fraction = ts.partition(".")
    return int(seconds) * 1_000_000 + int((fraction + "000000")[:6])


def _encode_cursor(ts: str) -> str:
    return base64.b64encode(f"next_ts:{ts}".encode()).decode()


def _decode_cursor(cursor: str | None) -> str | None:
    if not cursor:
        return None
    return base64.b64decode(cursor).decode().removeprefix("next_ts:")


def _offset_page(key: str, items: list[Any], cursor: str | None, limit: int) -> dict[str, Any]:
    start = int(base64.b64decode(cursor).decode().removeprefix("offset:")) if cursor else 0
    end = start + limit
    next_cursor = base64.b64encode(f"offset:{end}".encode()).decode() if end < len(items) else ""
    return {
        "ok": True,
        key: copy.deepcopy(items[start:end]),
        "response_metadata": {"next_cursor": next_cursor},
    }


class _Handler(BaseHTTPRequestHandler):
    fake: FakeSlack  # set on the per-server subclass

    def do_POST(self) -> None:  # http.server's naming
        self._serve()

    def do_GET(self) -> None:
        self._serve()

    def _serve(self) -> None:
        url = urlparse(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length).decode() if length else ""
        params = {k: v[0] for k, v in parse_qs(url.query).items()}
        if "json" in self.headers.get("Content-Type", ""):
            # slack_sdk sends chat.* arguments as a JSON body (https://api.slack.com/web#posting_json).
            body = json.loads(raw or "{}")
            params.update({k: v if isinstance(v, str) else json.dumps(v) for k, v in body.items()})
        else:
            params.update({k: v[0] for k, v in parse_qs(raw).items()})
        auth = self.headers.get("Authorization", "")
        token = auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else params.get("token")
        method = url.path.removeprefix("/api/")
        status, headers, body = self.fake.handle(method, params, token)
        payload = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(payload)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep pytest output clean


class FakeSlackServer:
    """Context manager: ``with FakeSlackServer() as server: server.base_url, server.fake``."""

    def __init__(self, fake: FakeSlack | None = None, *, tls: tuple[Path, Path] | None = None) -> None:
        self.fake = fake or FakeSlack()
        handler = type("BoundHandler", (_Handler,), {"fake": self.fake})
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._scheme = "http"
        if tls is not None:  # (certificate, key): serve HTTPS with a throwaway certificate
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(*tls)
            self._httpd.socket = context.wrap_socket(self._httpd.socket, server_side=True)
            self._scheme = "https"
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"{self._scheme}://{host}:{port}/api/"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def iter_fixture_ids() -> Iterator[str]:
    """Every content message id in the fixture, by hand, for cross-checking the connector."""
    yield from (
        "msg:C0GENERAL:1717000100.000200",
        "msg:C0GENERAL:1717000200.000300",
        "msg:C0GENERAL:1717000250.000400",
        "msg:C0GENERAL:1717000260.000500",
        "msg:C0GENERAL:1717000400.000700",
        "msg:C0PROJ:1717000600.000900",
        "msg:C0PROJ:1717000700.001000",
        "msg:C0SECRET:1717000800.001100",
    )
